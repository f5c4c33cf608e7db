"""A program started again by the same parent after its earlier run had ended: where no launch is
known, a restart by the script that runs it (a supervisor loop the listing alone shows), not by
an interactive shell (the operator typing the command again)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.model import attempts

HEADER = "  PID  PPID  PGID   SID USER                      STARTED ELAPSED STAT COMMAND"


def _listing(at: int, rows: list[tuple[int, int, int, str]]) -> str:
    """One `ps` snapshot at 10:00:`at` (the kit's recorder form): (PID, PPID, started second, command)."""
    out = [f"# 2026-12-06T10:00:{at:02d}Z", HEADER]
    out += [f"{pid:5d} {ppid:5d} {pid:5d}     0 user     Sun Dec  6 10:00:{begun:02d} 2026 {at - begun:7d} S    {cmd}"
            for pid, ppid, begun, cmd in rows]
    return "\n".join(out)


def _folder(tmp_path: Path, parent: str) -> Path:
    """`parent` (PID 500) runs `python3 train.py` as PID 600 (10:00:01-10:00:14, steps 10-100), then
    as PID 700 from 10:00:20 (its steps counting from 10 again); the first died of an error. No
    session, no launch line."""
    run1, run2 = (600, 500, 1, "python3 train.py --lr 3e-4"), (700, 500, 20, "python3 train.py --lr 3e-4")
    shell = (500, 1, 0, parent)
    snaps = [_listing(t, [shell, run1]) for t in (2, 6, 10, 14)] + [_listing(t, [shell, run2]) for t in (22, 26, 30)]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "ps.txt").write_text("\n".join(snaps) + "\n")
    lines = [f"2026-12-06 10:00:{3 + s:02d},000 INFO step {10 * (s + 1)} loss 4.2 tok/s 81234" for s in range(10)]
    lines += ["Traceback (most recent call last):", '  File "train.py", line 40, in <module>',
              "RuntimeError: CUDA error: an illegal memory access was encountered"]
    lines += [f"2026-12-06 10:00:{22 + s:02d},000 INFO step {10 * (s + 1)} loss 4.2 tok/s 81234" for s in range(8)]
    (tmp_path / "logs" / "train.log").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.parametrize(("parent", "by"), [("/bin/bash ./loop.sh", "supervisor"), ("-bash", "unknown")])
def test_a_program_run_again_by_its_parent_is_a_restart_only_under_a_script(tmp_path, parent, by):
    att = attempts(pm.load_incident(_folder(tmp_path, parent)))
    assert att["pids"].tolist() == [[600], [700]]
    assert att["by"].tolist() == ["unknown", by]
    assert str(att["start"].iloc[1]) == "2026-12-06 10:00:20+00:00"


def test_the_starts_supervisord_says_it_spawned_are_restarts_by_a_supervisor(tmp_path):
    """supervisord's log (its own words: `spawned: 'train' with pid N`, `exited: train (exit status
    1; not expected)`) beside the program's stdout log, no listing, no session: each `spawned:` is
    a start with its PID, the later ones the supervisor's restarts of the one before. The log
    alone dated each restart by its first line, 8 s late, "by a new start"."""
    sv = ["2026-12-06 09:00:00,100 INFO supervisord started with pid 50"]
    log = []
    for k, pid in enumerate((101, 202)):
        sv.append(f"2026-12-06 09:0{5 * k}:01,200 INFO spawned: 'train' with pid {pid}")
        sv.append(f"2026-12-06 09:0{5 * k}:02,300 INFO success: train entered RUNNING state, process has stayed up "
                  "for > than 1 seconds (startsecs)")
        log += [f"2026-12-06 09:0{5 * k}:09 INFO loading model"]
        log += [f"2026-12-06 09:0{5 * k}:{10 + 5 * j} INFO step {5 * j} loss 2.9 tok/s 21500" for j in range(1, 9)]
        if k == 0:
            log += ["Traceback (most recent call last):", '  File "train.py", line 88, in <module>',
                    "RuntimeError: CUDA error: an illegal memory access was encountered"]
            sv.append("2026-12-06 09:00:56,500 INFO exited: train (exit status 1; not expected)")
    (tmp_path / "supervisord.log").write_text("\n".join(sv) + "\n")
    (tmp_path / "train.log").write_text("\n".join(log) + "\n")
    inc = pm.load_incident(tmp_path)
    att = attempts(inc)
    assert att["pids"].tolist() == [[101], [202]] and att["by"].tolist() == ["supervisor", "supervisor"]
    assert [f"{t:%H:%M:%S.%f}"[:12] for t in att["start"]] == ["09:00:01.200", "09:05:01.200"]
    said = pm.what_happened(inc, pm.detect(inc))
    assert said[0].endswith("It was started again at 09:05:01 UTC by its supervisor."), said


def test_a_supervisord_crash_loop_is_told_from_its_own_log(fixtures_dir, tmp_path):
    """supervisord's log pasted in Supervisor/supervisor#1387 (the corpus sample): worker_0 and
    worker_1, each `spawned:` and then `exited: ... (exit status 1; not expected)` within a second,
    over and over. Each spawned process is a start with its PID, ended by the supervisor's word
    on its program until it spawned that program again: the crash loop is told as starts that
    never came up, each with its status (it was "Nothing went wrong" but for one line)."""
    sample = fixtures_dir / "supervisord" / "supervisor-1387-two-workers-crash-loop-cut.log"
    (tmp_path / "supervisord.log").write_bytes(sample.read_bytes())
    inc = pm.load_incident(tmp_path)
    att = attempts(inc)
    assert att["pids"].tolist() == [[22270], [22271], [22272], [22273], [22274]]
    # worker_1's first start ends at its next exit, 15:59:21.217, after worker_0's start and end between
    assert [f"{t:%S.%f}"[:6] if pd.notna(t) else None for t in att["end"]] == ["21.217", "20.894", None, "21.516", None]
    assert att["exit_code"].tolist()[:2] == [1, 1]
    said = pm.what_happened(inc, pm.detect(inc))
    assert said[-1].startswith("The start at 15:59:20 UTC never came up: exited with status 1 during start-up "
                               "(`2020-11-09 15:59:21,217 INFO exited: worker_1 (exit status 1; not expected)`)"), said


def test_supervisords_giving_up_on_each_program_is_told_with_the_starts_that_never_came_up(fixtures_dir, tmp_path):
    """supervisord's log pasted in eve-seat/seat#33 (the corpus sample): four programs spawned at
    13:51:33.183-.188 exit with status 0 within 0.3 s; supervisord says `gave up: seat3 entered
    FATAL state, too many start retries too quickly` at 13:51:33,469, seat4 at ,472, seat1 and seat2
    at 13:51:34,488. Each start never came up, and nothing restarted them: supervisord's own word
    on why is its giving up, each naming the program it had spawned as that start."""
    sample = fixtures_dir / "supervisord" / "seat-33-four-programs-exit-0-gave-up.log"
    (tmp_path / "supervisord.log").write_bytes(sample.read_bytes())
    inc = pm.load_incident(tmp_path)
    assert attempts(inc)["program"].tolist() == ["seat4", "seat1", "seat2", "seat3"]
    found = pm.detect(inc)
    failed = found[found["kind"] == "failed_restart"]
    quits = {f["numbers"]["attempt"]: f"{f['numbers']['gave_up_at']:%H:%M:%S.%f}"[:12] for _, f in failed.iterrows()}
    # (A1-A4: seat4, seat1, seat2, seat3 in the order spawned)
    assert quits == {"A1": "13:51:33.472", "A2": "13:51:34.488", "A3": "13:51:34.488", "A4": "13:51:33.469"}
    assert all("supervisord.log:" in " ".join(f["evidence"]) for _, f in failed.iterrows())
    said = pm.what_happened(inc, found)[0]
    assert said.endswith("its supervisor then gave up at 13:51:33 UTC (`gave up: seat4 entered FATAL state, too many "
                         "start retries too quickly`), and on 3 others by 13:51:34 UTC."), said


def test_systemds_start_limit_is_its_giving_up_on_the_unit(fixtures_dir, tmp_path):
    """`systemctl status` pasted in Askannz/optimus-manager#1 (the corpus sample): the daemon (PID
    832) exits with status 1, systemd schedules restart 6, then `Start request repeated too
    quickly.` and `Failed with result 'exit-code'` at 22:09:12 +07: its start limit hit, systemd
    stops restarting the unit. That was a warning no sentence told."""
    sample = fixtures_dir / "systemd" / "optimus-manager-status-offset-07-python-exit1-counter-6.txt"
    (tmp_path / "status.txt").write_bytes(sample.read_bytes())
    inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    failed = found[found["kind"] == "failed_restart"].iloc[0]
    assert failed["numbers"]["gave_up_at"] == pd.Timestamp("2018-11-17 15:09:12", tz="UTC")
    assert "status.txt:11" in failed["evidence"]
    assert pm.what_happened(inc, found)[0].endswith(
        "; its supervisor then gave up at 15:09:12 UTC (`optimus-manager.service: Start request repeated too quickly.`).")
