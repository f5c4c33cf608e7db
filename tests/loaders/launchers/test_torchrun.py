"""torchrun's output as the kit reads it: the agent's lines in a console log (each attempt's start
and end, with the job's run id and the attempt), the workers' files in its `--log-dir` folder (job,
attempt and rank from the folders; one run per job attempt), gloo timeouts, and glog stamps dated
from the incident. The files are a real two-rank run on gloo (fixtures/README.md says how it was
made): rank 1 stalls, rank 0's all_reduce times out, the agent restarts the group once and the
restart fails to connect."""

from __future__ import annotations

import shutil
import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.launchers.torchrun import (
    LogDirPlace,
    job_of_run_folder,
    log_dir_place,
)

from .conftest import FIXTURES

RUN = "torchrun-gloo-hang-restart"
JOB = "7bd34a7d-8087-4609-b982-430e90fb0f4e"
FOLDER = f"{JOB}_kvhlellt"
T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(path, **kw)


@pytest.fixture(scope="module")
def restart():
    return _load(FIXTURES / RUN)


@pytest.mark.parametrize("path, place", [
    (f"/tmp/logs/{FOLDER}/attempt_1/0/stderr.log", LogDirPlace(JOB, 1, 0)),
    ("/log/none_ghgeo4qi/attempt_0/3/error.json", LogDirPlace("none", 0, 3)),
    ("x/9fe537d2-9f62-43a2-915a-6fed07f22ce9__g3w5nen/attempt_12/7/stdout.log",  # mkdtemp's suffix began with `_`
     LogDirPlace("9fe537d2-9f62-43a2-915a-6fed07f22ce9", 12, 7)),
    ("a/my_run/attempt_0/0/stdout.log", LogDirPlace("my_run", 0, 0)),  # no random suffix: the folder's name
    ("a/run_abcdefgh/attempt_0/0/train.log", None),  # the user's own file in a rank folder
    ("a/run_abcdefgh/attempt_x/0/stdout.log", None),
    ("attempt_0/0/stdout.log", None),
])
def test_log_dir_place(path, place):
    assert log_dir_place(path) == place


def test_run_folder_without_suffix_is_its_own_name():
    assert job_of_run_folder("none_12bm0xei") == "none" and job_of_run_folder("none") == "none"


def test_agent_lines_start_and_end_attempts(restart):
    ev = restart.events
    ev = ev[ev["source"] == "torchrun.out"]
    starts = ev[ev["kind"] == "attempt_start"]
    assert starts["attempt"].tolist() == [0, 1] and (starts["job"] == JOB).all() and (starts["by"] == "torchrun").all()
    assert starts["time"].tolist() == [T("2026-12-02 01:54:00.845"), T("2026-12-02 01:54:17.445")]
    ends = ev[ev["kind"] == "attempt_end"].sort_values("time")
    # each attempt ends once, at the agent's `failed (exitcode: 1) local_rank: R (pid: P)`
    assert ends[["attempt", "pid", "exit_code", "local_rank", "reason"]].values.tolist() == [
        [0, 30464, 1, 0, "worker failed"], [1, 30621, 1, 1, "worker failed"]]
    assert ends["time"].tolist() == [T("2026-12-02 01:54:17.321"), T("2026-12-02 01:55:01.144")]
    # `Worker group FAILED. 1/1 attempts left; will restart worker group` after the end: the restart
    again = ev[ev["kind"] == "elastic_restart"]
    assert again[["attempt", "reason", "restarts_left", "max_restarts"]].values.tolist() == [[0, "FAILED", 1, 1]]
    exits = ev[ev["kind"] == "exit"]
    assert set(exits["pid"]) == {30464, 30620, 30621} and (exits["job"] == JOB).all()
    root = exits[exits["pattern"] == "elastic_root_cause"].iloc[0]
    assert (root["rank"], root["pid"], root["attempt"], root["time"]) == (1, 30621, 1, T("2026-12-02 01:55:00"))


def test_gloo_timeouts_name_what_waited(restart):
    ev = restart.events
    t = ev[(ev["kind"] == "timeout") & (ev["source"] == "torchrun.out")]
    recv = t[t["what"] == "gloo"]
    assert recv[["timeout_ms", "op", "rank", "attempt"]].drop_duplicates().values.tolist() == [[8000, "recv", 0, 0]]
    mesh = t[t["what"] == "gloo connectFullMesh"]
    assert set(mesh["rank"]) == {0, 1} and (mesh["attempt"] == 1).all()
    assert mesh["reason"].iloc[0] == "Connect timeout [none]"


def test_console_metrics_carry_rank_job_and_attempt(restart):
    m = restart.metrics
    m = m[(m["source"] == "torchrun.out") & (m["metric"] == "train/tok_per_s")]
    assert set(m["rank"]) == {0, 1} and (m["job"] == JOB).all() and (m["attempt"] == 0).all()


def test_log_dir_files_are_one_run_per_job_attempt(restart):
    m = restart.metrics
    files = m[m["source"].str.startswith(FOLDER)]
    assert set(zip(files["rank"], files["attempt"], files["job"], files["run"], strict=True)) == {
        (0, 0, JOB, "ddp"), (1, 0, JOB, "ddp")}  # the lines name their run: [ddp]
    ev = restart.events
    stderr = ev[ev["source"] == f"{FOLDER}/attempt_1/1/stderr.log"]
    # no line names a run: the job attempt does, never the file's name ("stderr")
    assert set(stderr["run"]) == {f"{JOB} attempt 1"} and set(stderr["rank"]) == {1} and set(stderr["attempt"]) == {1}


def test_glog_stamps_take_their_year_from_the_incident(restart):
    rep = next(f for f in restart.load_report.files if f.path == f"{FOLDER}/attempt_1/0/stderr.log")
    assert any("year 2026 taken from the incident date 2026-12-02" in a for a in rep.assumptions)
    ev = restart.events
    mesh = ev[(ev["source"] == rep.path) & (ev["kind"] == "timeout")]
    assert mesh["time"].iloc[0] == T("2026-12-02 01:54:59.654541")


def test_a_glog_file_alone_has_no_year(tmp_path):
    src = FIXTURES / RUN / FOLDER / "attempt_1" / "0" / "stderr.log"
    dest = tmp_path / FOLDER / "attempt_1" / "0"
    dest.mkdir(parents=True)
    shutil.copy(src, dest)
    inc = _load(tmp_path)
    assert inc.events["time"].isna().all()
    assert any("nothing gives the year" in a for f in inc.load_report.files for a in f.assumptions)
    dated = pm.load_process_log(dest / "stderr.log", date="2027-01-01")  # 2 December: the year before
    assert dated.events["time"].iloc[0] == T("2026-12-02 01:54:59.654541")


def test_forks_of_the_agent_and_a_success(tmp_path):
    # nvidia-resiliency-ext's agent says its restarts its own way; torch's says when a group finished
    log = tmp_path / "agent.log"
    log.write_text(
        "[default] Starting worker group\n"
        "failed (exitcode: 1) local_rank: 0 (pid: 28382) of binary: python\n"
        "3/3 restart attempts left; restarting worker group...\n"
        "[default] Starting worker group\n"
        "[default] worker group successfully finished. Waiting 300 seconds for other agents to finish.\n")
    ev = pm.load_process_log(log).events
    assert ev[["kind", "attempt"]].values.tolist() == [
        ["attempt_start", 0], ["exit", 0], ["elastic_restart", 0], ["attempt_start", 1], ["attempt_end", 1],
        ["attempt_end", 0]]
    assert ev[ev["kind"] == "attempt_end"]["reason"].tolist() == ["SUCCEEDED", "worker failed"]


def test_a_second_torchrun_appended_to_the_log_is_a_new_launch_not_a_restart():
    """Two torchrun launches in one terminal, each through `tee -a logs/train.log` (--max-restarts
    0): the first agent (PID 29125) gives up with a ChildFailedError, the operator types the same
    command again, the second agent (PID 29310) reports its own worker's failure. Read before as
    the first agent restarting its group (a worker failure naming a new PID after the end): two
    restarts that "never came up" (the first agent's own traceback taken for a start-up's) and
    the relaunch told as the agent's."""
    inc = _load(FIXTURES / "torchrun-tee-append-relaunch")
    ev = inc.events[inc.events["source"] == "logs/train.log"]
    ev = ev.assign(line=ev["ref"].str.rsplit(":", n=1).str[-1].astype(int))
    first = ev[ev["line"] <= 135]  # the first launch's lines, to its ChildFailedError table
    second = ev[ev["line"] >= 137]
    assert first["attempt"].isna().all() and second["attempt"].isna().all()
    ends = ev[ev["kind"] == "attempt_end"].sort_values("line")
    assert ends[["line", "pid"]].values.tolist() == [[98, 29140], [1580, 29320]]
    # torchrun's own traceback, as it gives up, is the first launch's: no start of its own
    assert ev.loc[ev["pattern"] == "ChildFailedError", "line"].tolist() == [99, 1581]
    att = pm.model.attempts(inc)
    assert att[["start", "by", "start_ref"]].values.tolist() == [
        [T("2026-12-04 23:52:33.911"), "operator", "logs/operator.log:1"],
        [T("2026-12-04 23:53:41.897"), "operator", "logs/operator.log:142"]]
    assert att["first_step"].tolist() == [T("2026-12-04 23:52:38"), T("2026-12-04 23:53:46")]
    assert att[["end", "end_ref"]].values.tolist() == [[T("2026-12-04 23:53:40.562"), "logs/train.log:98"],
                                                      [T("2026-12-04 23:54:27.932"), "logs/train.log:1580"]]

    # the first launch's death: rank 0's recv timed out after 60 s of silence; rank 1 logged no
    # error of its own, torchrun's table has it stopped by SIGTERM (exitcode -15)
    died = pm.detect(inc)
    died = died[died["kind"] == "training_died"].iloc[0]
    assert died["numbers"]["stopped_ranks"] == [1] and died["numbers"]["silent_s"] == 60.0
    assert "Rank 1 logged no error of its own before the launcher stopped it." in pm.what_happened(inc, pm.detect(inc))[0]
