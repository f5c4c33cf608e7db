"""The known formats' plain lines read in bulk (bulk_lines.py) give what the general path gives
line by line: the same rows, times, runs, events and load report, on every training log of the
corpus and of the bundled incidents, at the scan's block size and at one that cuts them often,
and on logs made of real lines of every format mixed with what sends a line to the general path."""

from __future__ import annotations

import collections
import warnings
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dflash_postmortem as pm
from dflash_postmortem.loaders.training_log import bulk_lines, process_log

ROOT = Path(__file__).resolve().parents[3]
LOGS = sorted({*(ROOT / "tests/fixtures/real-world/train-log").glob("*.log"),
               *(ROOT / "data/incidents").rglob("*.log")} - {p for p in (ROOT / "data/incidents").rglob("*.log")
                                                           if "wandb" in p.parts})


def _read(path: Path, bulk: bool, monkeypatch) -> tuple:
    monkeypatch.setattr(process_log, "BULK", bulk)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_process_log(path)
    return inc.metrics, inc.events, repr(inc.load_report)


def _same(path: Path, monkeypatch, bulk: tuple | None = None) -> None:
    (m1, e1, r1), (m2, e2, r2) = bulk or _read(path, True, monkeypatch), _read(path, False, monkeypatch)
    pd.testing.assert_frame_equal(m1, m2, check_exact=True, obj=f"{path.name} metrics")
    pd.testing.assert_frame_equal(e1, e2, check_exact=True, obj=f"{path.name} events")
    assert r1 == r2, path.name


@pytest.fixture
def counted(monkeypatch):
    """The lines each format's bulk reading took, by format (so a test shows it ran)."""
    taken = collections.Counter()
    of = bulk_lines.BulkLines.of.__func__

    def counting(cls, *args):
        found = of(cls, *args)
        if found is not None:
            taken.update(found.pattern[i] for i in found.first_row[:-1][found.ok])
        return found

    monkeypatch.setattr(bulk_lines.BulkLines, "of", classmethod(counting))
    return taken


@pytest.mark.parametrize("block", [None, 4096], ids=["8MiB-blocks", "4KiB-blocks"])
def test_every_training_log_reads_the_same_in_bulk_as_line_by_line(block, monkeypatch, counted):
    if block:  # blocks that cut the logs often: a look back for a time, a run of lines, a record left open
        monkeypatch.setattr(process_log, "BLOCK_BYTES", block)
    logs = [p for p in LOGS if p.stat().st_size > (block or 0)]
    assert len(logs) > (40 if block else 150)
    for path in logs:
        before = sum(counted.values())
        bulk = _read(path, True, monkeypatch)
        if sum(counted.values()) > before:  # a log the bulk reading took no line of was read as before
            _same(path, monkeypatch, bulk)
    # the bulk reading ran, for most of the formats the corpus holds
    assert len(counted) >= (5 if block else 15), counted
    assert sum(counted.values()) > (150 if block else 400)


# Real lines of the formats (from the corpus), and what sends a line to the general path or
# changes what the lines after it borrow: a time of its own, another's run tag, colour, a CR,
# a launcher's prefix, a traceback, a bar, a line with no keyword.
_FORMAT_LINES = [
    "iter 1631: loss 4.0863, time 561.94ms",
    "iter 1700: loss 3.9121, time 560.02ms, mfu 41.55%",
    "step 500: train loss 3.1234, val loss 3.2345",
    "step:2/1385 train_time:18326ms step_avg:nanms",
    "step:40/1385 val_loss:4.1234 train_time:30000ms step_avg:750.00ms",
    "[titan] 2026-02-24 19:44:31,996 - root - INFO - step:  2  loss:  9.69482  grad_norm: 26.5000  memory: 175.54GiB(98.42%)  tps: 7,439  tflops: 232.94  mfu: 10.35%",
    "Train: 1 [5000/5004 (100%)]  Loss:  5.085654 (5.7736)  Time: 0.449s,  569.84/s  (0.474s,  540.03/s)  LR: 5.334e-03  Data: 0.015 (0.014)",
    "I0912 11:40:27.956218 139735407601536 model_lib_v2.py:652] Step 100 per-step time 0.813s loss=1.396",
    "INFO:tensorflow:Step 200 per-step time 0.831s loss=1.192",
    " iteration       10/  100 | consumed samples:          640 | elapsed time per iteration (ms): 1234.5 | learning rate: 1.000E-04 | lm loss: 9.876543E+00 | loss scale: 1.0 | grad norm: 3.210 |",
    "[09/02 02:37:24 d2.utils.events]:  eta: 0:05:22  iter: 19  total_loss: 1.986  loss_cls: 0.595  time: 1.1678  data_time: 0.0222  lr: 1.6068e-05  max_mem: 2725M",
    "2024-05-01 10:00:00,123 - mmengine - INFO - Iter(train) [  50/1000]  lr: 1.0000e-04  eta: 0:10:00  time: 0.5000  data_time: 0.0100  memory: 1234  loss: 2.3456",
    "2021-03-04 05:06:07 | INFO | train_inner | epoch 001:    100 / 1000 loss=9.876, ppl=940.5, wps=12345.6, ups=1.2, wpb=10240, bsz=32, num_updates=100, lr=1e-05, gnorm=1.234, train_wall=80, wall=100",
    "[default0]:01/17/2024 13:47:27 [INFO|DP=0|PP=0|TP=0]: iteration: 10 / 100 | consumed_tokens: 1.31M | elapsed_time_per_iteration_ms: 1.2K | tokens_per_sec: 1.09M | tokens_per_sec_per_gpu: 136K | global_batch_size: 64 | lm_loss: 10.8 | lr: 0.0003 | model_tflops_per_gpu: 63.5",
    "Epoch 0:  42%|████▏     | 42/100 [00:10<00:14,  4.01it/s, loss=2.34, v_num=0]",
    "01/17/2024 13:47:28 [INFO|DP=0|PP=0|TP=0]: iteration: 11 / 100 | consumed_tokens: 1.44M | elapsed_time_per_iteration_ms: 1.1K | tokens_per_sec: 1.1M | lm_loss: 10.7 | lr: 0.0003",
    "[12:00:08] iter 8: loss 4.2, time 103.0ms",
    "23:59:59 iter 9: loss 4.15, time 103.5ms",
    "Tue Apr 21 18:22:57 2020 iter 9: loss 4.1, time 104.0ms",
    "Apr 21 18:22:58 host train: iter 10: loss 4.0, time 105.0ms",
    "19-08-09 08:23:24.709 - INFO: <epoch:  1, iter:   1,000, lr:(1.000e-04,)> l_pix: 1.2345e-02",
    "E0912 11:40:28.000000 1 x.cpp:1] Step 300 per-step time 0.900s loss=1.000",
    "2024-06-01 12:00:00 [run-b] step 10 loss 2.5 tok/s 21500",
    "2024-06-01 12:00:01 [run-b] step 11 loss nan tok/s 21400",
]
_AROUND = [
    "2024-06-01 12:00:05 INFO starting epoch",
    "2024-06-01T12:00:06.500000Z [tag-a] checkpoint saved",
    "12:00:07 some text with a time of day",
    "Traceback (most recent call last):",
    '  File "train.py", line 10, in <module>',
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "[rank0]: iter 5: loss 4.5, time 100.0ms",
    "\x1b[32miter 6: loss 4.4, time 101.0ms\x1b[0m",
    "iter 7: loss 4.3, time 102.0ms\r",
    "CANCELLED AT 2024-06-01T12:30:00 DUE TO TIME LIMIT",
    "...",
    "",
    "nohup: ignoring input",
    "Exception in thread Thread-1:",
    "Root Cause (first observed failure):",
    "[step=12] eval",
    "{'loss': 1.25, 'learning_rate': 1e-05, 'epoch': 0.5}",
    "{'train_runtime': 12.5, 'train_loss': 1.1}",
    "2024-06-01 12:00:09,000 - INFO - x INFO:root: iter 11: loss 3.9, time 99.0ms",
]


@settings(max_examples=25, deadline=None)
@given(lines=st.lists(st.tuples(st.sampled_from(_FORMAT_LINES + _AROUND), st.integers(1, 70)), min_size=1, max_size=12),
       block=st.sampled_from([None, 256, 4096]), label=st.sampled_from(["", "3: ", "worker-1: "]))
def test_logs_of_real_lines_mixed_with_others_read_the_same_in_bulk(lines, block, label, tmp_path_factory):
    """Each line drawn is written a number of times in a row: runs longer than the 50 lines a line
    without a time looks back over; every line behind a launcher's label (srun's task id, pdsh's
    host) in some logs."""
    path = tmp_path_factory.mktemp("bulk") / "train.log"
    path.write_bytes("\n".join(label + line for line, times in lines for _ in range(times)).encode() + b"\n")
    with pytest.MonkeyPatch.context() as mp:
        if block:
            mp.setattr(process_log, "BLOCK_BYTES", block)
        _same(path, mp)


def test_a_looser_regex_drops_what_re2_cannot_read_and_keeps_what_it_matches():
    assert bulk_lines._looser(r"(?<=.)(?=(?:a|b\)))x(?<![\d:-])y(?!:)") == r"(?:(?:a|b\)))xy"
    assert bulk_lines._looser(r"[(?=]z(?=[)])") == r"[(?=]z(?:[)])"
