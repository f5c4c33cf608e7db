"""A program started again by the same parent after its earlier run had ended: where no launch is
known, a restart by the script that runs it (a supervisor loop the listing alone shows), not by
an interactive shell (the operator typing the command again)."""

from __future__ import annotations

from pathlib import Path

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
