"""Each attempt's log file and the process that ran it, settled by the model from every source
(the transcript reader only reads the session): on the bundled captures, where the operator's
commands and checks show what happened to each launch's log, and on a folder made here."""

import warnings
from pathlib import Path

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.model import attempts, reading_notes
from dflash_postmortem.model.log_files import (
    EMPTY,
    NEVER_CREATED,
    NOT_IN_INCIDENT,
    WRITTEN,
    log_files,
)


def T(s):
    return pd.Timestamp(s, tz="UTC")


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(path)


def test_the_relaunch_into_a_missing_folder_never_created_its_log(bundled_incident):
    """05:23:01 `nohup ... > /workspace/train_opt2.log` (no /workspace on that machine: bash
    said so, line 9; `tail` said so again, line 16); 05:23:16 the same run into
    /tmp/capture2/logs/train_opt2.log, which the folder holds as logs/train_opt2.log."""
    att = attempts(bundled_incident).set_index("attempt")
    logs = log_files(bundled_incident)
    failed, ok = logs["A3"], logs["A4"]
    assert att.loc["A3", "launch_ref"] == "logs/operator.log:8" and att.loc["A3", "pids"] == []
    assert (failed.state, failed.file, failed.refs) == (NEVER_CREATED, None, ("logs/operator.log:9", "logs/operator.log:16"))
    assert att.loc["A4", "pids"] == [1391]  # the process ps saw running that command
    assert (ok.state, ok.file, ok.first) == (WRITTEN, "logs/train_opt2.log", T("2026-11-30 05:23:21"))
    assert att.loc["A2", "pids"] == [971] and logs["A2"].file == "logs/train_opt.log"


def test_a_log_the_folder_holds_empty_and_a_listing_shows_empty(tmp_path):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "slow.log").write_text("")
    (tmp_path / "ops.log").write_text(
        "[2026-11-30T05:00:00Z] $ setsid nohup python3 t.py --run-name slow > /x/logs/slow.log 2>&1 < /dev/null & disown\n"
        "[2026-11-30T05:02:00Z] $ ls -la /x/logs/slow.log\n-rw-r--r-- 1 root root 0 Nov 30 05:01 /x/logs/slow.log\n")
    inc = _load(tmp_path)
    log = log_files(inc)["A1"]
    assert (log.state, log.file, log.refs) == (EMPTY, "logs/slow.log", ("ops.log:3",))
    assert "05:02:00: /x/logs/slow.log listed with 0 bytes" in log.said
    f = pm.detect(inc).iloc[0]
    assert f["kind"] == "failed_restart" and f["evidence"] == ["ops.log:1", "ops.log:3"]
    assert "no log: its log stayed empty (05:02:00: /x/logs/slow.log listed with 0 bytes" in f["detail"]
    assert "not in the incident" not in f["detail"]  # the folder has it



def test_a_log_left_empty_while_its_gpu_worked_cannot_say_it_never_trained(tmp_path):
    """The vanished capture's first start (README: PID 816 trained from 03:45:16 and exited at
    03:46:12) with its log emptied, as a trainer that prints without flushing leaves it when it is
    killed: the folder holds logs/train.log with no line. Its GPU was at work while PID 816 held
    it; the kit said it "never came up". An empty log is no sign it did not train where its GPU
    worked: it cannot be judged, and the sentence says why a log stays empty."""
    import shutil

    folder = tmp_path / "vanished"
    shutil.copytree(Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-1gpu-vanished", folder)
    (folder / "logs" / "train.log").write_text("")
    inc = _load(folder)
    assert log_files(inc)["A1"].state == EMPTY
    found = pm.detect(inc)
    assert not ((found["kind"] == "failed_restart") & (found["start"] == T("2026-12-05 03:45:16.117"))).any()
    said = " ".join(pm.what_happened(inc, found))
    assert ("The start at 03:45:16 UTC cannot be judged: its log stayed empty (logs/train.log in the incident "
            "folder is empty), and its GPU was at work while PID 816 held it") in said
    assert "until it fills or the program exits" in said and "it ended at 03:46:12 UTC" in said


def test_an_empty_log_cannot_say_it_never_trained_from_one_look_at_a_gpu_at_work(tmp_path):
    """The buffered-log capture (README: PID 580, launched at 04:08:07, trained printing to
    logs/train.log without flushing, killed at 04:08:59 with every line in its buffer) without its 1 Hz GPU
    recordings: what is left of its GPU is the operator's one `nvidia-smi` at 04:08:37, PID 580
    at 16 GiB and the GPU at 100 %. The kit said it "never came up: killed during start-up" (one
    look is too few to show work where a log is missing, and loading shows a moment of it); a log
    that stayed empty says nothing either way, so the one look is told, and the start cannot be
    judged."""
    import shutil

    folder = tmp_path / "buffered"
    shutil.copytree(Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-1gpu-buffered-log", folder)
    for name in ("smi.csv", "smi_apps.csv"):
        (folder / "logs" / name).unlink()
    inc = _load(folder)
    assert log_files(inc)["A1"].state == EMPTY
    found = pm.detect(inc)
    assert not (found["kind"] == "failed_restart").any()
    said = " ".join(pm.what_happened(inc, found))
    assert ("The start at 04:08:07 UTC cannot be judged: its log stayed empty (04:08:37: logs/train.log listed "
            "with 0 bytes; 04:08:59: logs/train.log listed with 0 bytes), and its GPU was at work while PID 580 held "
            "it: 100 % utilization at 04:08:37; whether it trained, no line says") in said
    assert "never came up" not in said and "it ended at 04:08:59 UTC, killed by SIGKILL" in said

def test_a_log_the_folder_lacks_is_said_in_the_reading_notes(tmp_path):
    (tmp_path / "ops.log").write_text(
        "[2026-11-30T05:00:00Z] $ nohup python3 t.py --run-name a > /x/a.log 2>&1 &\n[1] 4242\n")
    inc = _load(tmp_path)
    assert log_files(inc)["A1"].state == NOT_IN_INCIDENT
    assert "attempt A1: its log /x/a.log is not in the incident folder, so its lines are not read" in reading_notes(inc)


def test_two_launches_of_one_run_each_get_their_own_process(bundled_dir):
    """The survivor capture: at 10:31:06 `timeout -s KILL 2 python ... --run-name fixed --seconds
    20` (its process 1022, killed after 2 s: `Killed`, `exit=137`), at 10:31:08 `nohup
    ./run_train.sh --run-name fixed --seconds 80` (1048, its trainer 1050): the options each
    process runs with tell which start made it."""
    inc = _load(bundled_dir.parent / "h200-1gpu-survivor")
    att = attempts(inc).set_index("attempt")
    assert att.loc["A3", "pids"] == [1022] and att.loc["A4", "pids"] == [1048, 1050]
    assert (att.loc["A3", "end_kind"], att.loc["A3", "end_ref"]) == ("killed", "logs/terminal.log:16")
    log = log_files(inc)["A3"]
    assert (log.state, log.refs) == (EMPTY, ("logs/terminal.log:23",))


def test_a_launch_whose_redirection_failed_owns_no_log_of_that_name(tmp_path):
    """h200-2gpu-replay-full without its last launch's lines (operator.log 27-33: the kit's
    `launch --log logs/train_opt2.log`, as a live watch sees the folder before that command
    returns and its line is written): the launch before it redirected to
    workspace/train_opt2.log and bash could not open it (line 25: `No such file or directory`).
    bash never ran that command: no process and no log are its (not PID 3626, started two
    seconds later with the same program, nor logs/train_opt2.log, a file of the same name), and
    it stays a start that never came up; the log is PID 3626's."""
    import shutil

    src = Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-2gpu-replay-full"
    folder = tmp_path / "replay-full"
    shutil.copytree(src, folder)
    log = folder / "logs" / "operator.log"
    lines = log.read_text().splitlines(keepends=True)
    assert " launch --log " in lines[26] and lines[32].startswith("launch: started")
    log.write_text("".join(lines[:26] + lines[33:]))
    # with its ps listing (the process joined by its command), and without it (by its name in
    # nvidia-smi's process list)
    for listed in (True, False):
        if not listed:
            (folder / "logs" / "ps_aux_snapshots.txt").unlink()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            att = attempts(pm.load_incident(folder))
        failed = att[att["start"].between(T("2026-11-30 07:08:11"), T("2026-11-30 07:08:12"))].iloc[0]
        assert pd.isna(failed["first_step"]) and failed["pids"] == [] and failed["sources"] == []
        owner = att[att["sources"].map(lambda s: "logs/train_opt2.log" in s)]
        assert len(owner) == 1 and 3626 in owner["pids"].iloc[0], att[["attempt", "start", "pids", "sources"]]
