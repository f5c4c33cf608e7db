"""Launches typed with the launcher's path, and a log whose file was emptied by the next launch:
read from a real session (tests/model/fixtures/rendezvous-wait-cpu, README there)."""

from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.analysis.timeline import impact
from dflash_postmortem.model import attempts
from dflash_postmortem.model.progress import resumes
from dflash_postmortem.shell_words import parse_launch

FIXTURE = Path(__file__).parent / "fixtures" / "rendezvous-wait-cpu"
INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"


def test_a_launcher_typed_by_its_path_is_that_launcher():
    """`nohup /opt/torch/.venv/bin/torchrun ...` (the torchrun-halt capture's first line) starts
    a trainer as `nohup torchrun ...` does: the program is known by its file's name, as Python's is."""
    line = (INCIDENTS / "h200-1gpu-torchrun-halt" / "logs" / "operator.log").read_text().splitlines()[0]
    launch = parse_launch(line.split("$ ", 1)[1])
    assert launch is not None and launch.program == "/opt/torch/.venv/bin/torchrun"
    assert (launch.launcher, launch.log_path, launch.run) == ("nohup", "logs/torchrun.log", "ddp-drafter")


def test_two_starts_waiting_at_rendezvous_are_told_as_starts_that_never_came_up():
    """The two `/home/user/.venv/bin/torchrun --nnodes 2 ...` launches never started a worker
    (the kit said "Nothing went wrong": it knew no launch typed with torchrun's path); the third,
    `--standalone`, trained."""
    inc = pm.load_incident(FIXTURE)
    found = pm.detect(inc)
    failed = found[found["kind"] == "failed_restart"]
    assert [f"{t:%H:%M:%S.%f}"[:12] for t in failed["start"]] == ["00:57:06.874", "00:58:17.990"]
    assert [n["run"] for n in failed["numbers"]] == ["rdzv-drafter", "rdzv-drafter"]
    said = pm.what_happened(inc, found)
    assert "The start at 00:58:57 UTC by the operator came up: its first step was logged at 00:59:03 UTC." in said


def test_a_printed_log_whose_file_was_emptied_is_the_evidence_left():
    """The operator's `tail -n 20 logs/train.log` (00:58:12.685) printed the end of the first
    start's traceback; the relaunch's `> logs/train.log` emptied the file before it was
    collected. The printed lines were dropped as a copy of the folder's file; they are kept, dated
    when printed (the latest they can have been written), and the session's account says so."""
    inc = pm.load_incident(FIXTURE)
    ev = inc.events[inc.events["source"] == "logs/train.log"]
    assert list(ev["kind"]) == ["timeout", "traceback", "timeout"]
    assert set(ev["time"]) == {pd.Timestamp("2026-12-06 00:58:12.685", tz="UTC")} and ev["time_approx"].all()
    last = ev[ev["kind"] == "traceback"].iloc[0]
    assert last["ref"] == "logs/operator.log:8"
    assert last["message"].endswith("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError")
    notes = next(f.notes for f in inc.load_report.files if f.path == "logs/operator.log")
    assert "3 events printed from logs/train.log, whose copy in the folder holds nothing: read from the session" in notes
    # a copy whose file holds its lines is still read from the file alone
    assert "6 metric rows printed from logs/train2.log: read from the folder's copy of it instead" in notes
    assert not inc.metrics["ref"].str.startswith("logs/operator.log").any()


def _session_only(tmp_path: Path, tee: bool) -> Path:
    """The torchrun crash loop's folder without torchrun's own log: the operator ran it in the
    foreground, so the session holds its whole output; without `| tee`, as typed without it."""
    import shutil

    folder = tmp_path / ("tee" if tee else "no-tee")
    shutil.copytree(INCIDENTS / "h200-1gpu-torchrun-crashloop", folder)
    (folder / "logs" / "torchrun.log").unlink()
    if not tee:
        session = folder / "logs" / "operator.log"
        first, rest = session.read_text().split("\n", 1)
        assert " 2>&1 | tee logs/torchrun.log" in first
        session.write_text(first.replace(" 2>&1 | tee logs/torchrun.log", "") + "\n" + rest)
    return folder


@pytest.mark.parametrize("tee", [True, False])
def test_a_foreground_launchers_output_is_divided_among_its_restarts(tmp_path, tee):
    """torchrun in the foreground restarts its workers twice (README: rank 1 raises at 04:36:32,
    the agent stops PID 534; the second group dies in start-up; the third raises at 04:36:57 and
    the agent stops PID 631). Read from the session alone, every line of the command's output was
    also the first start's (the shell's lines about the command are): the first start lived to
    the end of the whole output and its death read as a 28-s stall. Each start owns its part of
    the output, as it owns its part of torchrun.log."""
    inc = pm.load_incident(_session_only(tmp_path, tee))
    found = pm.detect(inc)
    assert "stall" not in set(found["kind"])
    died = found[found["kind"] == "training_died"]
    assert [f"{t:%H:%M:%S}" for t in died["start"]] == ["04:36:32", "04:36:57"]
    said = " ".join(pm.what_happened(inc, found))
    assert "The launcher then stopped PID 534. It was started again at 04:36:35 UTC by the launcher's agent." in said
    assert "The launcher then stopped PID 631. Nothing started it again." in said


WATCHDOG = Path(__file__).parent / "fixtures" / "stall-watchdog-cpu"


def test_a_watchdogs_kills_are_read_and_an_undated_log_raises_no_pace():
    """A stall watchdog (tests/model/fixtures/stall-watchdog-cpu, README there): its `sending
    SIGTERM to 26117` and `26117 still alive after 15s, sending SIGKILL` are kills sent to that
    PID, bash's `26117 Killed` and its `26117 exited (status 137)` the end. The trainer's log has
    no time of day: its 152 rate lines say how fast, not when, and make no pace (they made a
    "throughput regression" with no time, and `inspect` failed with "Neither `start` nor `end`
    can be NaT")."""
    inc = pm.load_incident(WATCHDOG)
    sent = inc.events[inc.events["kind"] == "kill_sent"]
    assert sent["target_pid"].tolist() == [26117, 26117] and sent["signal"].tolist() == ["SIGTERM", "SIGKILL"]
    assert sent["time"].tolist() == [pd.Timestamp("2026-12-06 17:55:02", tz="UTC"), pd.Timestamp("2026-12-06 17:55:17", tz="UTC")]
    exits = inc.events[inc.events["kind"] == "exit"]
    assert exits["exit_code"].tolist() == [137, 0] and exits["pid"].iloc[0] == 26117
    found = pm.detect(inc)
    assert found["start"].notna().all()
    assert "throughput_regression" not in set(found["kind"])
    # the watchdog's `train.log not written for 64s` at 17:55:02: silent since 17:53:58 (the
    # driver read run 1's last step line, `step 820/1500`, at 17:53:58.319)
    assert impact(inc, found)["first_sign"] == pd.Timestamp("2026-12-06 17:53:58", tz="UTC")
    stall = found[found["kind"] == "stall"].iloc[0]
    assert (stall["end"], stall["evidence"][0]) == (pd.Timestamp("2026-12-06 17:55:17", tz="UTC"), "logs/watchdog.log:3")


def test_a_watchdogs_starts_own_the_undated_log_its_script_appends_to():
    """The watchdog's script (`watchdog.sh`, in the folder) starts train.py `>> "$LOG" 2>&1` with
    `LOG=logs/train.log`, and its log says `started train.py pid 26117` (17:52:42), then `... pid
    27740 (--resume)` (17:55:17): train.log's two start-ups (from scratch; `resumed from
    ckpt/step_000800.pt`) are those two starts', though no line of it has a time. The kit had told
    the first "never came up" and placed the log's steps nowhere."""
    inc = pm.load_incident(WATCHDOG)
    att = attempts(inc)
    assert att["pids"].tolist() == [[26117], [27740]]
    assert att["start"].tolist() == [pd.Timestamp("2026-12-06 17:52:42.264", tz="UTC"),
                                     pd.Timestamp("2026-12-06 17:55:17", tz="UTC")]
    assert all("logs/train.log" in s for s in att["sources"])
    assert (att["end_kind"].tolist(), att["signal"].iloc[0]) == (["kill_sent", "exit"], "SIGKILL")
    assert att["end"].tolist() == [pd.Timestamp("2026-12-06 17:55:17", tz="UTC"), pd.Timestamp("2026-12-06 17:56:37", tz="UTC")]
    found = pm.detect(inc)
    said = " ".join(pm.what_happened(inc, found, impact(inc, found)))
    assert "never came up" not in said
    assert said.startswith("At 17:53:58 UTC training stalled: no step for 79 s while PID 26117 was alive, until a kill "
                           "stopped it at 17:55:17 UTC (watchdog: 26117 still alive after 15s, sending SIGKILL).")
    assert "It was started again at 17:55:17 UTC and trained past step 820 again, where it had stalled." in said
    redo = resumes(inc).iloc[0]
    assert (redo["attempt"], redo["resumed_step"], redo["reached_step"], redo["redone_steps"]) == ("A2", 800, 820, 20)

