"""Hostile bytes in a training log: what a killed writer, a paste or a fuzzer leaves. Every file
loads, every line is accounted for, nothing raises; numbers too large for a column are NaN."""

from __future__ import annotations

import warnings

import pytest

import dflash_postmortem as pm


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_process_log(path, **kw)


def _balanced(inc):
    rep = inc.load_report.files[0]
    assert rep.parsed + rep.n_skipped == rep.read, rep.summary()
    return rep


# Each keyword followed by a long run a backtracking regex would get lost in (the loader once
# took minutes on some of these; now each is one linear pass).
KEYWORDS = ["Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=A", "step: 1 loss: 1 ", "tok/s ",
            "ms/batch", "s/it", "step=", "{'loss': ", "Exception in thread ", "wps", "h:1:2 [0] NCCL INFO a:1 -> "]
FILLS = ["9", " ", "a", "1,", ": 1 ", "[", "%|"]


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_long_runs_after_keywords(tmp_path, keyword):
    p = tmp_path / "long.log"
    p.write_text("".join(keyword + (fill * 40_000)[:40_000] + keyword + "\n" for fill in FILLS))
    inc = _load(p)
    assert _balanced(inc).read == len(FILLS)


def test_numbers_too_large_for_a_column_are_nan(tmp_path):
    p = tmp_path / "big.log"
    big = "9" * 30
    p.write_text(f"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -{big}) local_rank: 0 (pid: {big}) of binary: x\n"
                 f"iter {big}: loss 1.0, time {big}.5ms, mfu 1.00%\n"
                 f"2026-01-01 00:00:00 [r] step {big} loss 1.0 tok/s 5\n")
    inc = _load(p)
    _balanced(inc)
    ex = inc.events.iloc[0]
    assert ex["kind"] == "exit" and ex.isna()[["pid", "exit_code"]].all() and ex["local_rank"] == 0
    m = inc.metrics
    assert m["step"].isna().all() and m.loc[m["metric"] == "train/iter_time_ms", "value"].iloc[0] == float(big + ".5")


@pytest.mark.parametrize("data", [b"\x00" * 5000, b"\r" * 100 + b"\n", b"\n" * 10, b"\xff\xfe\x00\x00" * 100, b"[rank3]:" * 1000,
                                  b"Traceback (most recent call last):\n" * 3, b"Root Cause (first observed failure):\n[0]:\n  time :",
                                  "  4%|▎ | 1317/36234 [11:37<5:10:26,  1.87it/s]^M{'loss': 1e999999, 'epoch': 0.2}\n".encode()])
def test_odd_files_load_balanced(tmp_path, data):
    p = tmp_path / "odd.log"
    p.write_bytes(data)
    _balanced(_load(p))
