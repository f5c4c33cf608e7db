"""Logs of one job's ranks, each in a file of its own, read as one attempt: begun together and
named alike but for a number, whatever the names are; an error line that names a rank its log
never named before is that log's, not a start."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.model import attempts


def _worker_logs(folder: Path, names: list[str], stop_at: int) -> None:
    folder.mkdir()
    for k, name in enumerate(names):
        lines = ["2026-11-28 00:00:00 [job] Loading target on cuda:0 ..."]
        lines += [f"2026-11-28 00:00:{10 + 2 * s:02d} [job] step {s} loss 3.0 tok/s 21400 queue 2" for s in range(stop_at)]
        lines.append(f"2026-11-28 00:10:00 [job] [Rank {k}] Watchdog caught collective operation timeout: "
                     "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                     "600012 milliseconds before timing out.")
        (folder / name).write_text("\n".join(lines) + "\n")


def test_worker_logs_begun_together_are_one_attempt_and_its_timeouts_start_nothing(tmp_path):
    _worker_logs(tmp_path / "inc", ["worker0.log", "worker1.log", "worker2.log"], 20)
    att = attempts(pm.load_incident(tmp_path / "inc"))
    assert len(att) == 1
    a = att.iloc[0]
    assert sorted(a["sources"]) == ["worker0.log", "worker1.log", "worker2.log"]
    assert a["ranks"] == [0, 1, 2]  # named by the timeouts, the logs' only word on it
    assert a["first_step"] == pd.Timestamp("2026-11-28 00:00:10", tz="UTC")
    assert (a["end_kind"], a["end"]) == ("nccl_timeout", pd.Timestamp("2026-11-28 00:10:00", tz="UTC"))


def test_logs_named_apart_or_begun_apart_stay_apart(tmp_path):
    """Two jobs side by side (a baseline and a variant) are named differently; a second run of
    the same script begins minutes later: neither is a rank of the other."""
    _worker_logs(tmp_path / "a", ["baseline.log", "variant.log"], 5)
    assert len(attempts(pm.load_incident(tmp_path / "a"))) == 2
    _worker_logs(tmp_path / "b", ["worker0.log"], 5)
    later = (tmp_path / "b" / "worker0.log").read_text().replace("2026-11-28 00:", "2026-11-28 01:")
    (tmp_path / "b" / "worker1.log").write_text(later)
    assert len(attempts(pm.load_incident(tmp_path / "b"))) == 2


def test_logs_of_one_name_in_two_folders_are_two_jobs_and_torchruns_rank_folders_one(tmp_path):
    """The same file name in two run folders begun together (two jobs a script started side by
    side) is two attempts, as are two jobs' numbered outputs; torchrun's per-rank folders (`attempt_0/0/stdout.log`, `attempt_0/1/...`)
    differ in a number only: one."""
    folder = tmp_path / "inc"
    _worker_logs(folder, [], 0)
    for name in ("a", "b"):
        _worker_logs(folder / name, ["train.log"], 5)
    assert len(attempts(pm.load_incident(folder))) == 2
    # two jobs' outputs begun together, numbered by job then by task: two jobs
    folder = tmp_path / "slurm"
    _worker_logs(folder, ["out-1234-0.log", "out-1235-0.log"], 5)
    assert len(attempts(pm.load_incident(folder))) == 2
    folder = tmp_path / "torchrun"
    (folder / "attempt_0").mkdir(parents=True)
    for rank in (0, 1):
        _worker_logs(folder / "attempt_0" / str(rank), ["stdout.log"], 5)
    att = attempts(pm.load_incident(folder))
    assert len(att) == 1 and sorted(att["sources"].iloc[0]) == ["attempt_0/0/stdout.log", "attempt_0/1/stdout.log"]


def test_a_relaunch_seconds_after_a_start_that_died_is_not_its_rank(tmp_path):
    """train2.log ends (a bad flag) and train3.log begins 4 s later: no transcript says who
    started them, and the names differ only in their last number, but the first had ended before
    the second began: two starts, not two ranks."""
    folder = tmp_path / "inc"
    folder.mkdir()
    (folder / "train2.log").write_text(
        "2026-11-28 00:00:00 [job] Loading target on cuda:0 ...\n"
        "2026-11-28 00:00:01 [job] Traceback (most recent call last):\n"
        "ValueError: unknown --attn flash9\n")
    _worker_logs(folder / "later", ["train3.log"], 5)
    (folder / "train3.log").write_text((folder / "later" / "train3.log").read_text()
                                       .replace("00:00:00", "00:00:04").replace("00:10:00", "00:10:04"))
    for f in (folder / "later").iterdir():
        f.unlink()
    (folder / "later").rmdir()
    att = attempts(pm.load_incident(folder))
    assert [s for s in att["sources"]] == [["train2.log"], ["train3.log"]]
