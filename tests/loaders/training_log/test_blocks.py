"""What spans lines in a training log (blocks.py): tracebacks and torchrun's ChildFailedError tables."""

from __future__ import annotations

import warnings

import pandas as pd
from support.captures import only_report

import dflash_postmortem as pm


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_process_log(path, **kw)


def test_torchrun_exit_and_whole_traceback(fixtures_dir):
    ev = _load(fixtures_dir / "train-log" / "torchrun-childfailed-exitcode-9-llama.log").events
    ex = ev[ev["kind"] == "exit"].iloc[0]
    assert (ex["exit_code"], ex["pid"], ex["local_rank"], ex["signal"]) == (-9, 333202, 0, "SIGKILL")
    assert pd.isna(ex["rank"])  # the global rank is not on this line
    tb = ev[ev["kind"] == "traceback"].iloc[0]
    assert tb["lines"] == 14 and tb["pattern"] == "ChildFailedError"
    assert tb["message"].startswith("Traceback") and "ChildFailedError" in tb["message"].splitlines()[-1]


# -- the seed reconstruction's train_opt.log: thread tracebacks, every warning, runs from tags ---
def test_thread_exception_header_is_part_of_the_traceback(seed_dir):
    inc = _load(seed_dir / "logs" / "train_opt.log")
    tb = inc.events[inc.events["kind"] == "traceback"]
    assert len(tb) == 1
    tb = tb.iloc[0]
    lines = tb["message"].splitlines()
    assert lines[0] == "Exception in thread drafter-2:" and lines[1] == "Traceback (most recent call last):"
    assert tb["lines"] == 9 and tb["thread"] == "drafter-2" and tb["ref"].endswith("train_opt.log:21")
    assert tb["pattern"] == "InternalTorchDynamoError"
    assert tb["time"] == pd.Timestamp("2026-05-09 20:24:31", tz="UTC")  # borrowed from line 20
    rep = only_report(inc)
    assert rep.n_skipped == 0  # every line of this log is a metric, stage, warning or the traceback


def test_childfailed_table_entry_is_an_exit_with_its_own_time_host_rank(fixtures_dir):
    ev = _load(fixtures_dir / "train-log" / "torchrun-childfailed-table-accelerate-grpo.log").events
    ex = ev[ev["kind"] == "exit"]
    assert len(ex) == 1
    e = ex.iloc[0]
    assert e["pattern"] == "elastic_root_cause" and e["ref"].endswith(":18")
    assert (e["rank"], e["local_rank"], e["exit_code"], e["pid"], e["signal"]) == (0, 0, -9, 14750, "SIGKILL")
    assert e["time"] == pd.Timestamp("2025-05-21 15:43:03", tz="UTC")
    assert e["host"] == "gpunode000000000000000-00000000000000-000000-000000-worker"
    assert e["lines"] == 7 and "Signal 9 (SIGKILL) received by PID 14750" in e["message"]
