"""model/kills.py: which PID file a kill reads its target from, and which one a launch writes."""

from __future__ import annotations

import pytest

from dflash_postmortem.model.kills import pid_file_written, pid_files_read


@pytest.mark.parametrize(("expr", "names"), [
    ("$(cat /tmp/capture2/run/regressed.pid)", {"regressed.pid"}),  # h200-2gpu's operator.log:5
    ("`cat run/a.pid` $(cat run/b.pid)", {"a.pid", "b.pid"}),
    ("-- -$(cat run/regressed.pid)", {"regressed.pid"}),
    ("1234", set()),
    (None, set()),
])
def test_the_pid_files_a_kill_reads(expr, names):
    assert pid_files_read(expr) == names


@pytest.mark.parametrize(("command", "name"), [
    ("cd /tmp/capture2 && setsid nohup python3 trainer.py --run-name regressed --pid-file /tmp/capture2/run/regressed.pid "
     "> /tmp/capture2/logs/train_opt.log 2>&1 &", "regressed.pid"),
    ("python -m dflash_postmortem.replay.train --pid_file=run/x.pid", "x.pid"),
    ("nohup python train.py > train.log 2>&1 & echo $! > run/train.pid", "train.pid"),
    ("python train.py --pid-files-dir run", None),
    ("python train.py > train.log", None),
])
def test_the_pid_file_a_launch_writes(command, name):
    assert pid_file_written(command) == name


def test_a_kills_words_tell_the_pid_its_file_held():
    """h200-1gpu-lingering: `kill $(cat run/sweep-a.pid)`, and run/sweep-a.pid in the folder holds
    882, the PID the kill ended: the story names PID 882, not the shell's expression; a file the
    incident lacks, or one that holds a PID the kill did not end, stays as typed."""
    import warnings
    from pathlib import Path

    import dflash_postmortem as pm
    from dflash_postmortem.model.kills import with_pids

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-1gpu-lingering")
    assert with_pids(inc, "kill sent SIGTERM to PID $(cat run/sweep-a.pid)", [882]) == \
        "kill sent SIGTERM to PID 882 (run/sweep-a.pid)"
    assert with_pids(inc, "kill sent SIGTERM to PID $(cat run/other.pid)", [882]) == \
        "kill sent SIGTERM to PID $(cat run/other.pid)"
    # (a file that holds a PID the kill did not end: another run wrote it again since)
    assert with_pids(inc, "kill sent SIGTERM to PID $(cat run/sweep-a.pid)", [1234]) == \
        "kill sent SIGTERM to PID $(cat run/sweep-a.pid)"
