"""A log a rotating handler split is one log (model/rotation.py); a start-up then steps from below
the log's own begins a new process's part of it, though no line said the old one ended."""

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.model import attempts
from dflash_postmortem.model.rotation import rotated_from


def test_each_part_of_a_rotated_log_goes_on_from_the_one_before():
    sources = {"logs/train.log", "logs/train.log.1", "logs/train.log.2", "other/train.log.3"}
    assert rotated_from("logs/train.log", sources) == "logs/train.log.1"
    assert rotated_from("logs/train.log.1", sources) == "logs/train.log.2"
    assert rotated_from("logs/train.log.2", sources) is None  # (the oldest kept; .3 is another folder's)
    assert rotated_from("logs/eval.log", sources) is None


def _lines(t0: str, steps, start_up: bool = False) -> str:
    t = pd.Timestamp(t0)
    head = f"{t:%Y-%m-%d %H:%M:%S},000 INFO resuming from ckpt/step_100.pt\n" if start_up else ""
    return head + "".join(f"{t + pd.Timedelta(seconds=k + 1):%Y-%m-%d %H:%M:%S},000 INFO step {s} | loss 2.0 | 1,000 tok/s\n"
                          for k, s in enumerate(steps))


def test_a_rotated_log_of_a_run_and_its_resume_is_two_starts(tmp_path):
    """Steps 130-186, then (no word of an end) `resuming from` and steps from 102: two processes.
    The newer part (train.log) goes on from the older (train.log.1): no start of its own."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "train.log.1").write_text(_lines("2026-12-07 09:50:00", range(130, 188, 2))
                                                    + _lines("2026-12-07 09:51:00", range(102, 140, 2), start_up=True))
    (tmp_path / "logs" / "train.log").write_text(_lines("2026-12-07 09:52:00", range(140, 200, 2)))
    inc = pm.load_incident(tmp_path)
    att = attempts(inc)
    assert [f"{t:%H:%M:%S}" for t in att["start"]] == ["09:50:01", "09:51:00"]
    assert att["sources"].tolist() == [["logs/train.log.1"], ["logs/train.log.1", "logs/train.log"]]
