"""Slurm as the kit reads it: its vocabulary (states, exit codes, job ids, durations), its lines
in a job's output, and its listings (sacct in all three forms, squeue -l, scontrol show job, the
job-completion log). The files are a real one-node Slurm's (fixtures/README.md): job 1 ran into
its one-minute limit, job 2 was cancelled, job 3 was requeued once and then cancelled."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.launchers import slurm

from .conftest import FIXTURES

ONE_NODE = FIXTURES / "slurm-one-node"
T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


@pytest.fixture(scope="module")
def listing():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(ONE_NODE)


def _events(inc, source, **match):
    ev = inc.events[inc.events["source"] == source]
    for col, want in match.items():
        ev = ev[ev[col] == want]
    return ev


@pytest.mark.parametrize("text, want", [
    ("TIMEOUT", ("TIMEOUT", None)), ("CANCELLED by 1000", ("CANCELLED", "1000")), ("TO", ("TIMEOUT", None)),
    ("OUT_OF_ME+", ("OUT_OF_MEMORY", None)), ("CANCELLED+", ("CANCELLED", None)), ("C+", (None, None)),
    ("banana", (None, None)),
])
def test_state(text, want):
    assert slurm.state(text) == want


@pytest.mark.parametrize("text, want", [("0:9", (0, "SIGKILL")), ("1:0", (1, None)), ("143:0", (143, None)), ("x", (None, None))])
def test_exit_code(text, want):
    assert slurm.exit_code(text) == want


@pytest.mark.parametrize("text, want", [
    ("123.batch", ("123", "batch")), ("123_4.0", ("123_4", "0")), ("123+1", ("123+1", None)),
    ("3007056.bat+", ("3007056", "bat+")), ("591970_[2-", ("591970_[2-", None)), ("JobID", (None, None)),
])
def test_job_and_step(text, want):
    assert slurm.job_and_step(text) == want


@pytest.mark.parametrize("text, ms", [("00:01:00", 60_000), ("1-02:03:04", 93_784_000), ("03:04", 184_000),
                                      ("UNLIMITED", None), ("Partition_Limit", None)])
def test_duration(text, ms):
    assert slurm.duration_ms(text) == ms


def test_output_name_and_minutes():
    assert slurm.job_of_output_name("slurm-42221.out") == "42221"
    assert slurm.job_of_output_name("slurm-591970_2.out") == "591970_2"
    assert slurm.job_of_output_name("train-42221.log") is None
    assert slurm.minutes_ms("1") == 60_000 and slurm.minutes_ms("UNLIMITED") is None


def test_every_file_is_read_whole(listing):
    formats = {f.path: f.format for f in listing.load_report.files}
    assert formats == {
        "jobcomp.txt": "slurm-job-records", "sacct-P.txt": "slurm-sacct", "sacct-p.txt": "slurm-sacct",
        "sacct.txt": "slurm-sacct", "scontrol-show-job.txt": "slurm-job-records", "slurm-1.out": "training-log",
        "slurm-2.out": "training-log", "slurm-3.out": "training-log", "squeue-l.txt": "slurm-squeue"}
    assert all(f.balanced and not f.error for f in listing.load_report.files)


def test_time_limit_agrees_everywhere(listing):
    end = T("2026-12-02 02:19:54")
    for source in ("slurm-1.out", "sacct-P.txt", "sacct-p.txt", "scontrol-show-job.txt", "jobcomp.txt"):
        timeout = _events(listing, source, kind="timeout", job="1")
        assert timeout["time"].tolist() == [end] and (timeout["what"] == "slurm time limit").all(), source
    assert _events(listing, "sacct-P.txt", kind="timeout")["timeout_ms"].tolist() == [60_000]
    assert _events(listing, "jobcomp.txt", kind="timeout")["timeout_ms"].tolist() == [60_000]  # TimeLimit=1
    record = _events(listing, "scontrol-show-job.txt", job="1", kind="attempt_end").iloc[0]
    assert (record["reason"], record["exit_code"], record["attempt"], record["host"]) == (
        "TIMEOUT (TimeLimit)", 143, 0, "dflashnode")
    steps = _events(listing, "sacct-P.txt", job="1")
    assert steps[steps["step"].notna()][["step", "kind", "exit_code", "signal"]].fillna("").values.tolist() == [
        ["batch", "exit", 15, ""], ["0", "killed", 0, "SIGTERM"]]
    log = _events(listing, "slurm-1.out", job="1")
    task = log[log["pattern"] == "slurm_task_signal"].iloc[0]  # srun: error: dflashnode: task 0: Terminated
    assert (task["kind"], task["rank"], task["signal"], task["host"], task["time"]) == ("killed", 0, "SIGTERM", "dflashnode", end)


def test_cancelled_by_whom(listing):
    ends = _events(listing, "sacct-P.txt", job="2", kind="attempt_end")
    assert ends[["reason", "time"]].values.tolist() == [["CANCELLED by 0", T("2026-12-02 02:18:31")]]
    assert _events(listing, "sacct.txt", job="2", kind="attempt_end")["reason"].tolist() == ["CANCELLED"]  # `CANCELLED+`
    log = _events(listing, "slurm-2.out", kind="attempt_end").iloc[0]
    assert (log["job"], log["reason"], log["time"]) == ("2", "CANCELLED", T("2026-12-02 02:18:31"))


def test_requeue_is_a_new_attempt(listing):
    starts = [T("2026-12-02 02:18:31"), T("2026-12-02 02:21:24")]
    for source in ("sacct-P.txt", "jobcomp.txt"):  # sacct -D and the completion log list each run
        runs = _events(listing, source, job="3", kind="attempt_start")
        assert runs[["attempt", "time"]].values.tolist() == [[0, starts[0]], [1, starts[1]]], source
        ends = _events(listing, source, job="3", kind="attempt_end")
        assert ends["reason"].tolist()[0] == "REQUEUED", source
    record = _events(listing, "scontrol-show-job.txt", job="3", kind="attempt_start").iloc[0]
    assert (record["attempt"], record["time"]) == (1, starts[1])  # Restarts=1
    without = _events(listing, "sacct-p.txt", job="3", kind="attempt_start")  # no -D: the last run only
    assert without["time"].tolist() == [starts[1]] and without["attempt"].isna().all()
    log = listing.metrics[listing.metrics["source"] == "slurm-3.out"]
    assert log[["attempt", "time"]].drop_duplicates().values.tolist() == [[0, starts[0]], [1, starts[1]]]
    requeue = _events(listing, "slurm-3.out", pattern="slurm_job_cancelled")
    assert requeue[["reason", "attempt"]].values.tolist() == [["JOB REQUEUE", 0], ["CANCELLED", 1]]


def test_squeue_states_when_it_ran(listing):
    ev = _events(listing, "squeue-l.txt")
    now = T("2026-12-02 02:18:31")
    states = ev[ev["kind"] == "job_state"].sort_values("job")
    assert states[["job", "state", "reason", "time"]].fillna("").values.tolist() == [
        ["1", "RUNNING", "", now], ["2", "RUNNING", "", now], ["3", "PENDING", "Resources", now]]
    started = ev[(ev["kind"] == "attempt_start") & (ev["job"] == "1")].iloc[0]
    assert started["time"] == now - pd.Timedelta(seconds=4) and started["time_approx"]  # TIME 0:04


def test_a_listing_after_a_prompt(tmp_path):
    # sacct pasted with the command that printed it (the listing of an HPC centre's guide)
    text = ("[user@login01 ~]$ sacct\n"
            "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n"
            "------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
            "944651       medium_up+ plgrid-gp+ plgllmeff+         16    TIMEOUT      0:0 \n"
            "944651.batch      batch            plgllmeff+         16  CANCELLED     0:15 \n")
    (tmp_path / "sacct.txt").write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    rep = inc.load_report.files[0]
    assert rep.format == "slurm-sacct" and dict(rep.skipped) == {"text before the listing": 1} and rep.balanced
    assert inc.events[["kind", "job", "step", "signal"]].fillna("").values.tolist() == [
        ["attempt_end", "944651", "", ""], ["timeout", "944651", "", ""], ["killed", "944651", "batch", "SIGTERM"]]


def test_an_output_without_slurmstepd_line(tmp_path):
    # srun, signalled by the scancel itself, may never relay slurmstepd's `*** STEP ... CANCELLED`
    # line (fixtures/README.md): its own lines are then what the output says of the job's end
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(FIXTURES / "slurm-srun-only")
    ev = inc.events
    assert ev[["kind", "pattern", "job", "signal"]].fillna("").values.tolist() == [
        ["killed", "slurm_step_aborted", "2", ""], ["killed", "slurm_task_signal", "2", "SIGTERM"]]
    assert ev["rank"].isna().tolist() == [True, False] and ev["rank"].iloc[1] == 0
    # srun's lines carry no time: they take the step line's, the last one before them
    assert set(ev["time"]) == {T("2026-12-04 16:42:03")} and ev["ref"].tolist() == ["slurm-2.out:2", "slurm-2.out:4"]
    assert dict(inc.load_report.files[0].skipped) == {"log text without a metric or event": 1}  # got SIGCONT
