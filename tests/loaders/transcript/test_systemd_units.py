"""systemd units (transcript/systemd_units.py, read by the journal format and inside sessions): each
unit line's fact, the unit as the job, the restart counter as the attempt."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.transcript.systemd_units import Units, read_unit_line

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


@pytest.mark.parametrize("line, kind, extra", [
    ("Jan 02 03:04:05 gpu1 systemd[1]: train.service: Main process exited, code=killed, status=9/KILL",
     "killed", {"signal": "SIGKILL"}),
    ("Jan 02 03:04:05 gpu1 systemd[1]: train.service: Main process exited, code=dumped, status=11/SEGV",
     "killed", {"signal": "SIGSEGV", "core_dumped": True}),
    ("2024-01-02T03:04:05+0000 gpu1 systemd[1]: train.service: Main process exited, code=exited, status=1/FAILURE",
     "exit", {"exit_code": 1}),
    ("train.service: Failed with result 'oom-kill'.", "attempt_end", {"reason": "oom-kill"}),  # journalctl -o cat
    ("Jan 02 03:04:05 gpu1 systemd[1]: train.service: A process of this unit has been killed by the OOM killer.",
     "oom_kill", {}),
    ("Jan 02 03:04:05 gpu1 systemd[1]: train.service: Scheduled restart job, restart counter is at 3.",
     "restart_scheduled", {"restart_count": 3}),
    ("Jan 02 03:04:05 gpu1 systemd[1]: train.service: Killing process 4242 (python3) with signal SIGKILL.",
     "kill_sent", {"target_pid": 4242, "signal": "SIGKILL"}),
    ("Jan 02 03:04:05 gpu1 systemd[1]: train.service: State 'stop-sigterm' timed out. Killing.", "timeout", {}),
    ("Jan 02 03:04:05 gpu1 systemd[1]: train.service: main process exited, code=exited, status=2/INVALIDARGUMENT",
     "exit", {"exit_code": 2}),  # systemd before v236: lower case
    ("Jan 02 03:04:05 gpu1 systemd[1]: Unit train.service entered failed state.", "attempt_end", {"reason": "failed"}),
    ("Jan 02 03:04:05 gpu1 systemd-oomd[512]: Killed /system.slice/train.service due to memory pressure for x",
     "oom_kill", {"unit": "train.service", "killer": "systemd-oomd"}),
])
def test_unit_lines(line, kind, extra):
    fact = read_unit_line(line)
    assert fact is not None and fact["kind"] == kind, fact
    for k, v in extra.items():
        assert fact[k] == v, (k, fact)


def test_attempts_follow_the_restart_counter_and_a_manual_start_resets_it():
    lines = [
        "Jan 02 03:00:00 h systemd[1]: train.service: Main process exited, code=exited, status=1/FAILURE",
        "Jan 02 03:00:00 h systemd[1]: train.service: Scheduled restart job, restart counter is at 2.",
        "Jan 02 03:00:10 h systemd[1]: Started Train job.",
        "Jan 02 03:05:00 h systemd[1]: train.service: Failed with result 'signal'.",
        "Jan 02 03:05:01 h systemd[1]: Stopped Train job.",
        "Jan 02 03:06:00 h systemd[1]: Started Train job.",  # by hand: no scheduled restart before it
    ]
    units = Units(list(enumerate(lines, 1)))
    got = [(units.fact(n)["kind"], units.fact(n)["attempt"]) for n in range(1, 7)]
    assert got == [("exit", 1), ("restart_scheduled", 1), ("attempt_start", 2), ("attempt_end", 2),
                   ("stage", 2), ("attempt_start", 0)]
    assert {units.fact(n)["job"] for n in range(1, 7)} == {"train.service"}


def test_other_units_of_a_whole_journal_are_not_read():
    lines = ["Jan 02 03:00:00 h systemd[1]: Started Daily apt download activities.",
             "Jan 02 03:00:01 h systemd[1]: Started session-3.scope - Session 3 of User root.",
             "Jan 02 03:04:05 h systemd[1]: train.service: Main process exited, code=killed, status=9/KILL",
             "Jan 02 03:04:06 h systemd[1]: Started train.service - Train job."]
    units = Units(list(enumerate(lines, 1)))
    assert units.fact(1) is None and units.fact(2) is None
    assert units.fact(4)["kind"] == "attempt_start"


def test_status_block_gives_the_journal_its_year_and_zone_and_the_start_its_pid(tmp_path):
    text = """● train.service - Train job
     Loaded: loaded (/etc/systemd/system/train.service; enabled; vendor preset: enabled)
     Active: active (running) since Tue 2024-01-02 03:04:05 +0200; 5min ago
   Main PID: 4242 (python3)

Jan 02 03:04:05 gpu1 systemd[1]: Started Train job.
"""
    (tmp_path / "status.txt").write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    ev = inc.events
    assert inc.load_report.files[0].format == "systemd-journal"
    active = ev[ev["ref"] == "status.txt:3"].iloc[0]
    assert (active["kind"], active["pid"], active["time"]) == ("attempt_start", 4242, T("2024-01-02 01:04:05"))
    journal = ev[ev["ref"] == "status.txt:6"].iloc[0]
    assert journal["kind"] == "attempt_start" and journal["time"] == T("2024-01-02 01:04:05")
