"""Training logs (process_log.py): the bundled capture's tok/s lines, the real-world fixtures, bad input,
and hostile input (long runs after every keyword, numbers too large for a column, NUL/CR-only files)."""

from __future__ import annotations

import codecs
import os
import random
import re
import threading
import warnings

import pandas as pd
import pytest
from support.stack_dumps import PY_SPY_DUMP

import dflash_postmortem as pm
from dflash_postmortem.loaders.registry import LoadContext
from dflash_postmortem.loaders.training_log import process_log
from dflash_postmortem.loaders.training_log.process_log import sniff_log

TRAIN_LOGS = ("train.log", "train_opt.log", "train_opt2.log")


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_process_log(path, **kw)


@pytest.mark.parametrize("name", TRAIN_LOGS)
def test_tok_per_s_equals_the_lines_of_the_log(bundled_dir, name):
    path = bundled_dir / "logs" / name
    text = path.read_text()
    expected = [float(v) for v in re.findall(r"tok/s (\d+)", text)]
    inc = _load(path)
    tps = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    assert len(expected) > 50
    assert tps["value"].tolist() == expected
    assert tps["run"].nunique() == 1
    assert tps["time"].notna().all()
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.read == len(text.splitlines())


def test_dflash_line_values_run_step_time_ref(bundled_dir):
    inc = _load(bundled_dir / "logs" / "train.log")
    first = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"].iloc[0]
    assert (first["run"], first["step"], first["value"]) == ("baseline", 5, 11958.0)
    assert first["time"] == pd.Timestamp("2026-11-30 05:20:58", tz="UTC")
    assert first["ref"].endswith("train.log:8")
    loss = inc.metrics[inc.metrics["metric"] == "train/loss"].iloc[0]
    assert loss["value"] == pytest.approx(11.9410)


def test_stages_and_training_start_stop(bundled_dir):
    ev = _load(bundled_dir / "logs" / "train.log").events
    assert ev["kind"].tolist() == ["stage"] * 6 + ["training_start", "training_stop"]
    stop = ev[ev["kind"] == "training_stop"].iloc[0]
    assert stop["time"] == pd.Timestamp("2026-11-30 05:21:55", tz="UTC") and stop["ref"].endswith("train.log:211")
    # the regressed run was killed: it starts training and never says it stopped
    ev2 = _load(bundled_dir / "logs" / "train_opt.log").events
    assert "training_start" in set(ev2["kind"]) and "training_stop" not in set(ev2["kind"])


def test_incident_loads_train_logs_as_training_logs(bundled_dir):
    inc = pm.load_incident(bundled_dir)
    for name in TRAIN_LOGS:
        assert inc.load_report[f"logs/{name}"].format == "training-log"
    m = inc.metrics[inc.metrics["source"].isin([f"logs/{n}" for n in TRAIN_LOGS])]
    counts = m[m["metric"] == "train/tok_per_s"].groupby("run").size().to_dict()
    assert counts == {"baseline": 203, "regressed": 71, "fixed": 297}


# -- real-world fixtures: (file, metric, count, first value) -------------------------------------
FIXTURE_METRICS = [
    ("torchtitan-tps-mfu-gc-profiler.log", "train/tok_per_s", 6, 5856.0),
    ("torchtitan-multirank-duplicate-lines-grad-norm.log", "train/tok_per_s", 8, 10050.0),
    ("megatron-mixtral-16xh100-tflops.log", "train/tflops_per_gpu", 3, 243.6),
    ("megatron-llm-no-throughput-field.log", "train/iter_time_ms", 4, 86545.2),
    ("nanogpt-termux-mfu-sentinel-nan.log", "train/iter_time_ms", 91, 10268.08),
    ("modded-nanogpt-8xh100-tail.log", "train/step_avg_ms", 18, 129.82),
    ("fairseq-legacy-wps-words-per-sec.log", "train/words_per_s", 10, 962.0),
    ("paddleseg-ips-samples-per-sec.log", "train/samples_per_s", 7, 3.7425),
    ("bionemo-nemo2-train-step-timing.log", "train/step_time_s", 6, 0.03146),
    ("tf-od-api-absl-per-step-time.log", "train/step_time_s", 9, 0.813),
    ("tqdm-tokens-per-sec-nohup-excerpt.log", "train/tok_per_s", 5, 314.0),
    ("hf-trainer-tqdm-lineno-prefixed-llamafactory.log", "train/loss", 1, 0.0),
    ("lightning-bar-single-line-nnue.log", "train/it_per_s", 1, 13.47),
]


@pytest.mark.parametrize(("name", "metric", "count", "first"), FIXTURE_METRICS)
def test_fixture_metrics(fixtures_dir, name, metric, count, first):
    inc = _load(fixtures_dir / "train-log" / name)
    rows = inc.metrics[inc.metrics["metric"] == metric]
    assert len(rows) == count
    assert rows["value"].iloc[0] == pytest.approx(first)
    assert inc.load_report.files[0].balanced


FIXTURE_EVENTS = [
    ("nccl-watchdog-old-format-ofa-8xv100.log", "nccl_timeout", 5),
    ("nccl-watchdog-new-format-basicsr.log", "nccl_timeout", 5),
    ("nccl-watchdog-lineno-prefixed-llamafactory.log", "nccl_timeout", 4),
    ("tqdm-bar-glued-nccl-watchdog-lightning.log", "nccl_timeout", 5),
    ("torchelastic-worker-group-restart-attempt1.log", "attempt_end", 1),
    ("torchelastic-worker-group-restart-attempt1.log", "attempt_start", 1),
    ("torchrun-childfailed-exitcode-9-llama.log", "traceback", 1),
    ("torch-distributed-launch-py36-childfailed.log", "traceback", 1),
    ("accelerate-stderr-prefixed-sigterm-llamafactory.log", "signal", 3),
    ("nohup-accelerate-swanlab-hf-trainer-excerpt.log", "nohup", 1),
]


@pytest.mark.parametrize(("name", "kind", "count"), FIXTURE_EVENTS)
def test_fixture_events(fixtures_dir, name, kind, count):
    ev = _load(fixtures_dir / "train-log" / name).events
    assert (ev["kind"] == kind).sum() == count


def test_every_fixture_loads_balanced(fixtures_dir):
    for path in sorted((fixtures_dir / "train-log").iterdir()):
        inc = _load(path)
        rep = inc.load_report.files[0]
        assert rep.balanced, rep.summary()
        data = path.read_bytes()  # lines end at \n only: a \r is a bar's redraw, not a line
        if data.startswith(codecs.BOM_UTF16_LE):  # PowerShell's UTF-16: read as the text it holds
            data = data[2:].decode("utf-16-le").encode()
        assert rep.read == data.count(b"\n") + (not data.endswith(b"\n") and len(data) > 0)


def test_nanogpt_mfu_sentinel_is_nan_not_minus_100(fixtures_dir):
    m = _load(fixtures_dir / "train-log" / "nanogpt-termux-mfu-sentinel-nan.log").metrics
    mfu = m[m["metric"] == "train/mfu_pct"]
    assert pd.isna(mfu["value"].iloc[0]) and mfu["value"].iloc[1] == pytest.approx(0.01)
    loss = m[m["metric"] == "train/loss"]
    assert loss["value"].isna().sum() > 0  # 'loss nan' lines stay NaN, not dropped


def test_rank_prefix_and_comma_thousands(fixtures_dir):
    m = _load(fixtures_dir / "train-log" / "torchtitan-tps-mfu-gc-profiler.log").metrics
    tps = m[m["metric"] == "train/tok_per_s"]
    assert tps["rank"].tolist() == [0] * 6
    assert tps["step"].tolist() == [200, 210, 220, 230, 240, 250]
    assert tps["time"].iloc[0] == pd.Timestamp("2025-06-16 22:30:50.322", tz="UTC")


def test_custom_format_needs_a_user_pattern(fixtures_dir):
    path = fixtures_dir / "train-log" / "llm-pretrain-custom-ntokens.log"
    m = _load(path).metrics  # the loss is read; a number without a throughput unit is not guessed at
    assert set(m["metric"]) == {"train/loss"} and len(m) == 13 and m["step"].iloc[0] == 20
    pat = {"name": "ntokens", "regex": r"batch: (?P<step>\d+), time: [\d.]+, ntokens: (?P<value>[\d.]+)/", "metric": "train/tokens_per_batch"}
    m = _load(path, patterns=[pat]).metrics
    assert len(m) == 13 and m["value"].iloc[0] == pytest.approx(485.2) and m["step"].iloc[0] == 20
    assert set(m["metric"]) == {"train/tokens_per_batch"}  # the incident's own pattern comes first


def test_glog_times_need_a_year(fixtures_dir):
    path = fixtures_dir / "train-log" / "nccl-watchdog-new-format-basicsr.log"
    ev = _load(path).events
    assert ev["time"].isna().all()
    assert any("no year" in a for a in _load(path).load_report.files[0].assumptions)
    ev = _load(path, date="2025-06-26").events
    assert ev["time"].iloc[0] == pd.Timestamp("2025-06-26 06:24:44.903881", tz="UTC")


def test_sniffer_claims_logs_not_other_text(bundled_dir, fixtures_dir):
    head = (bundled_dir / "logs" / "train.log").read_bytes()[:65536]
    assert sniff_log(bundled_dir / "logs" / "train.log", head) >= 0.5
    readme = (bundled_dir / "README.md").read_bytes()
    assert sniff_log(bundled_dir / "README.md", readme) == 0.0


# -- bad input -----------------------------------------------------------------------------------
def _balanced(inc):
    rep = inc.load_report.files[0]
    assert rep.parsed + rep.n_skipped == rep.read, rep.summary()
    return rep


def test_non_utf8_and_nul_bytes(tmp_path):
    p = tmp_path / "bad.log"
    p.write_bytes(
        b"2026-11-30 05:20:58 [a] step 5 loss 1.0 tok/s 100 queue 1\n"
        b"\xff\xfe garbage \x80\n"
        b"2026-11-30 05:20:59 [a] step 10 loss 1.0 tok/s 200\x00\x00 queue 1\n"
        + b"\x00" * 100 + b"\n"
    )
    inc = _load(p)
    rep = _balanced(inc)
    assert rep.read == 4
    assert inc.metrics.query("metric == 'train/tok_per_s'")["value"].tolist() == [100.0, 200.0]
    notes = " ".join(rep.notes)
    assert "NUL bytes" in notes and "not UTF-8" in notes


@pytest.mark.parametrize("block", [1 << 16, 8 << 20])
def test_ten_megabyte_line_is_counted_not_held(tmp_path, monkeypatch, block):
    # blocks smaller than the line, and one that ends inside it with the line's end in the next
    monkeypatch.setattr(process_log, "BLOCK_BYTES", block)
    p = tmp_path / "long.log"
    with open(p, "wb") as f:
        f.write(b"2026-11-30 05:20:58 [a] step 5 loss 1.0 tok/s 100\n")
        f.write(b"x" * (10 << 20) + b"\n")
        f.write(b"2026-11-30 05:21:00 [a] step 10 loss 1.0 tok/s 300\n")
    inc = _load(p)
    rep = _balanced(inc)
    assert rep.read == 3
    # read through a copy with the line cut to its first 64 KiB (loaders.encoding), said in a note
    assert "1 line longer than 1 MiB cut to its first 64 KiB (line 2): 10,420,224 bytes not read" in rep.notes
    assert inc.metrics.query("metric == 'train/tok_per_s'")["value"].tolist() == [100.0, 300.0]
    # the scanner itself never holds a line longer than its limit either (a caller of load_log)
    inc = process_log.load_log(p, LoadContext())
    assert any("longer than" in r for r in _balanced(inc).skipped)


def test_interleaved_ranks_keep_every_row(tmp_path):
    lines = []
    for step in range(1, 6):
        for rank in (0, 1):
            lines.append(f"[rank{rank}]:[titan] 2025-06-16 22:30:{step:02d},000 - root - INFO - step: {step}  loss:  6.0  tps: {1000 + rank}  tflops: 1.0  mfu: 1.0%")
    lines.insert(3, "[rank1]:Traceback (most recent call last):")
    lines.insert(4, '[rank1]:  File "x.py", line 1, in <module>')
    lines.insert(5, "[rank1]:RuntimeError: boom")
    p = tmp_path / "ranks.log"
    p.write_text("\n".join(lines) + "\n")
    inc = _load(p)
    _balanced(inc)
    tps = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    assert tps.groupby("rank").size().to_dict() == {0: 5, 1: 5}
    tb = inc.events[inc.events["kind"] == "traceback"].iloc[0]
    assert tb["rank"] == 1 and tb["lines"] == 3 and tb["pattern"] == "RuntimeError"


def test_carriage_return_bars_keep_last_state(tmp_path):
    bar = "Training:  {p}%|##| {n}/100 [00:0{n}<00:10, {r}it/s, loss=0.{n}]"
    line = "\r".join(bar.format(p=n, n=n, r=2.0 + n) for n in range(1, 6))
    p = tmp_path / "bar.log"
    p.write_text("\x1b[32mstart\x1b[0m\n" + line + "\n")
    inc = _load(p)
    rep = _balanced(inc)
    prog = inc.events[inc.events["kind"] == "progress"]
    assert len(prog) == 1 and "5/100" in prog["message"].iloc[0]
    assert any("redraws" in n for n in rep.notes)
    assert inc.metrics[inc.metrics["metric"] == "train/it_per_s"]["value"].tolist() == [3.0, 4.0, 5.0, 6.0, 7.0]


def test_keras_progress_lines_are_steps_of_their_epoch(tmp_path):
    """Keras's forms (its docs' and issues' output): Keras 2's epoch line with a step's time, its
    mid-epoch line with what is left (no step time: an ETA is none), verbose=2's without a bar,
    Keras 3's drawn bar (its time the ETA until the epoch's end, its step time an average), a
    sample's time (no step's), behind a time of day. A step counts the epochs before it."""
    p = tmp_path / "keras.log"
    p.write_text(
        "Epoch 1/3\n"
        "1875/1875 [==============================] - 5s 3ms/step - loss: 0.2954 - accuracy: 0.9137\n"
        "Epoch 2/3\n"
        " 939/1875 [==============>...............] - ETA: 2s - loss: 0.1411 - accuracy: 0.9580\n"
        "1875/1875 - 4s - loss: 0.1402 - accuracy: 0.9582 - val_loss: 0.1101 - val_accuracy: 0.9660\n"
        "Epoch 3/3\n"
        " 500/1875 " + "\u2501" * 20 + " 3s 2ms/step - accuracy: 0.9700 - loss: 0.1000\n"
        "2024-06-01 12:00:00 60000/60000 [==============================] - 3s 55us/sample - loss: 0.0900\n")
    inc = _load(p)
    rep = _balanced(inc)
    m = inc.metrics
    got = {(int(r.step), r.metric): round(r.value, 6) for r in m.itertuples()}
    assert got == {
        (1875, "train/loss"): 0.2954, (1875, "train/acc"): 0.9137, (1875, "train/step_time_s"): 0.003,
        (2814, "train/loss"): 0.1411, (2814, "train/acc"): 0.958,
        (3750, "train/loss"): 0.1402, (3750, "train/acc"): 0.9582, (3750, "eval/val_loss"): 0.1101,
        (3750, "eval/val_acc"): 0.966, (3750, "train/step_time_s"): round(4 / 1875, 6),
        (4250, "train/acc"): 0.97, (4250, "train/loss"): 0.1, (4250, "train/step_time_s"): 0.002,
        (180000, "train/loss"): 0.09,
    }
    assert set(m["pattern"]) == {"keras"} and rep.format == "training-log"
    assert m.loc[m["step"] == 180000, "time"].tolist() == [pd.Timestamp("2024-06-01 12:00:00", tz="UTC")]


@pytest.mark.parametrize("bulk", [True, False])
def test_a_bar_after_a_dflash_line_takes_its_time(tmp_path, monkeypatch, bulk):
    """A bar that says no time of day takes the last line's; after a DFlash line, whose time the
    scan keeps as its bytes, the bar's rows were lost: the file failed to load (a hypothesis run
    of the bulk test found it)."""
    monkeypatch.setattr(process_log, "BULK", bulk)
    p = tmp_path / "train.log"
    p.write_text("2024-06-01 12:00:00 [run-b] step 10 loss 2.5 tok/s 21500\n"
                 "Epoch 0:  42%|████▏     | 42/100 [00:10<00:14,  4.01it/s, loss=2.34, v_num=0]\n")
    m = _load(p).metrics
    bar = m[m["metric"] == "train/bar_elapsed_s"]
    assert bar["step"].tolist() == [42] and bar["value"].tolist() == [10.0]
    assert bar["time"].tolist() == [pd.Timestamp("2024-06-01 12:00:00", tz="UTC")]
    assert m.loc[m["metric"] == "train/tok_per_s", "value"].tolist() == [21500.0]


def test_a_bar_faster_than_training_steps_can_be_counts_no_steps(tmp_path):
    """castorini/hedwig #70: a bar of 3,000,001 word vectors loaded at 14,061 a second before
    training began: no training step takes under a millisecond, so its states are no steps (its
    last state stays an event, with how long it ran); a bar at 2.66 it/s beside it still is one."""
    p = tmp_path / "bar.log"
    p.write_text("  0%|         | 0/3000001 [00:00<?, ?it/s]\n"
                 "100%|██████████| 3000001/3000001 [03:33<00:00, 14061.26it/s]\n"
                 "Training: 100%|██████████| 13/13 [00:04<00:00,  2.66it/s]\n")
    inc = _load(p)
    _balanced(inc)
    m = inc.metrics
    # (its first state, `0/3000001` at a rate not known yet, is the count it starts from: no step taken)
    assert set(m["step"].dropna()) == {0, 13} and m.loc[m["step"] == 0, "value"].tolist() == [0.0]
    last = inc.events[(inc.events["kind"] == "progress") & (inc.events["bar_total"] == 3000001)].iloc[-1]
    assert (last["bar_n"], last["bar_elapsed_s"]) == (3000001, 213.0)


def test_not_a_log(tmp_path):
    p = tmp_path / "blob.bin"
    p.write_bytes(bytes(range(256)) * 400)
    inc = _load(p)
    rep = _balanced(inc)
    assert inc.metrics.empty and rep.read > 0
    assert sniff_log(p, p.read_bytes()[:65536]) == 0.0


def test_empty_file(tmp_path):
    p = tmp_path / "empty.log"
    p.write_bytes(b"")
    inc = _load(p)
    rep = _balanced(inc)
    assert rep.read == 0 and inc.metrics.empty and inc.events.empty
    pm.Incident.validate(inc)


def test_every_warning_line_is_a_warning_event(seed_dir):
    path = seed_dir / "logs" / "train_opt.log"
    ev = _load(path).events
    warn = ev[ev["kind"] == "warning"]
    expected = [n for n, ln in enumerate(path.read_text().splitlines(), 1) if "] WARNING " in ln]
    assert expected == [5, 6, 7]
    assert [int(r.rsplit(":", 1)[1]) for r in warn["ref"]] == expected
    assert warn["pattern"].tolist() == ["fast_path_unavailable", "warning", "warning"]
    assert "48 of 64 target layers" in warn["message"].iloc[1]


def test_upper_case_levels_are_found(tmp_path):
    p = tmp_path / "levels.log"
    p.write_text("2026-01-01 00:00:00 [a] WARN disk almost full\n2026-01-01 00:00:01 [a] ERROR disk full\n")
    ev = _load(p).events
    assert ev["kind"].tolist() == ["warning", "error"]


def test_untagged_lines_take_the_nearest_tagged_run(seed_dir, tmp_path):
    inc = _load(seed_dir / "logs" / "train_opt.log")
    assert set(inc.events["run"]) == {"opt"} and set(inc.metrics["run"]) == {"opt"}
    rep = inc.load_report.files[0]
    assert not any("file's name" in a for a in rep.assumptions)
    assert any("nearest" in a and "run" in a for a in rep.assumptions)
    # before any tagged line: the first tag that follows; no tag anywhere: the file's stem
    p = tmp_path / "early.log"
    p.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: x\n"
                 "2026-01-01 00:00:00 [r1] step 5 loss 1.0 tok/s 10 queue 1\n")
    assert _load(p).events["run"].tolist() == ["r1"]
    q = tmp_path / "plain.log"
    q.write_text("Traceback (most recent call last):\n  File \"x.py\", line 1\nRuntimeError: x\n")
    inc = _load(q)
    assert inc.events["run"].tolist() == ["plain"]
    assert any("file's name" in a for a in inc.load_report.files[0].assumptions)


# Each keyword followed by a long run a backtracking regex would get lost in (the loader once
# took minutes on some of these; now each is one linear pass).
KEYWORDS = ["Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=A", "step: 1 loss: 1 ", "tok/s ",
            "ms/batch", "s/it", "step=", "{'loss': ", "Exception in thread ", "wps", "h:1:2 [0] NCCL INFO a:1 -> ",
            " - 1/1", "Epoch 1/1"]


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


def test_a_bar_that_leaps_from_zero_is_a_resume_only_past_the_pace_after_it(tmp_path):
    """Hugging Face's Trainer resuming draws `0/400`, then `201/400 [00:00<...]` (the checkpoint's
    steps counted at once with its first step done), then its real pace: a resume from the
    checkpoint of step 200 (the README's `checkpoint-200`). A fast first update (1 step in under a
    second), a short bar done at once (`196/196`) and a bar cut before its next second are not."""
    from pathlib import Path

    real = Path(__file__).resolve().parents[2] / "fixtures" / "real-world"
    bundled = Path(__file__).resolve().parents[3] / "data" / "incidents" / "h200-1gpu-hf-oom-resume" / "logs"

    def resumed(path) -> list[str]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ev = pm.load_process_log(path).events
        return list(ev.loc[ev["kind"] == "resumed", "message"])

    assert resumed(bundled / "hf_resume.log") == ["the training bar is at step 201 of 400 0 s after it began: resumed (at step 200)"]
    assert resumed(bundled / "hf_train.log") == []
    for name in ("train-log/oom-warning-root-glued-batch-bar-cut.log",  # 1/2538 at 00:00
                 "train-log/hydra-log-bar-death-signal-2-sigint.log",  # 3/3 at 00:00
                 "wandb/sparsegpt-0.13-jupyter-online-run/files/output.log"):  # 196/196 at 00:00
        assert resumed(real / name) == [], name
    fast = tmp_path / "fast.log"  # a thousand steps a second: its first update is no leap
    fast.write_text("\r".join(["  0%|          | 0/5000 [00:00<?, ?it/s]", " 2%|▏         | 100/5000 [00:00<00:04, 999.0it/s]",
                                 " 22%|██▏       | 1100/5000 [00:01<00:03, 999.0it/s]"]) + "\n")
    assert resumed(fast) == []
    initial = tmp_path / "initial.log"  # tqdm(initial=200): first drawn at the checkpoint's own count
    initial.write_text("".join(f"\r{n // 4}%|##| {n}/400 [00:{s:02d}<00:10, 5.00it/s]"
                               for n, s in ((200, 0), (205, 1), (210, 2), (215, 3))) + "\n")
    assert resumed(initial) == ["the training bar is at step 200 of 400 0 s after it began: resumed (at step 200)"]


def test_hugging_face_dicts_with_numbers_as_strings_give_metrics_and_the_summary_ends_training():
    """transformers 5 prints its log dicts with every number quoted (`{'loss': '10.96', 'grad_norm':
    '0.3973', ...}`, recorded on an H200 in data/incidents/h200-1gpu-hf-oom-resume): each is a
    metric at the step of the bar drawn before it, and the closing `{'train_runtime': '26.92',
    ...}` is both the run's averages and the end of its training."""
    from pathlib import Path

    logs = Path(__file__).resolve().parents[3] / "data" / "incidents" / "h200-1gpu-hf-oom-resume" / "logs"
    first = pm.load_process_log(logs / "hf_train.log").metrics
    loss = first[first["metric"] == "train/loss"]
    assert len(loss) == 24 and loss["value"].iloc[0] == pytest.approx(10.96)
    assert loss["step"].iloc[0] == 10  # the dict has no step: the bar's, drawn just before it
    resumed = pm.load_process_log(logs / "hf_resume.log")
    assert resumed.metrics.loc[resumed.metrics["metric"] == "train/train_runtime", "value"].tolist() == [pytest.approx(26.92)]
    stop = resumed.events[resumed.events["kind"] == "training_stop"]
    assert len(stop) == 1 and "train_runtime" in stop["message"].iloc[0]


def test_the_dflash_lines_read_in_bulk_give_the_rows_the_line_by_line_path_gives(tmp_path, monkeypatch):
    """A block's DFlash lines are read at once (process_log._FastLines); a space after each sends
    the same lines through the general path one by one. The rows must be the same, in the same
    order, among a traceback, a level tag, a step too long for a column and lines without queue."""
    lines = [
        "2026-11-30 05:20:01 [run-a] step 10 loss 9.5 tok/s 21500 queue 2",
        "2026-11-30 05:20:02 [run-a] loading shard 3 of 8",
        "2026-11-30 05:20:03 [run-a] step 20 loss 9.25 tok/s 21480.5",
        "2026-11-30 05:20:04 [INFO] step 30 loss 9.0 tok/s 21000 queue 1",
        "Traceback (most recent call last):",
        '  File "train.py", line 12, in <module>',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "2026-11-30 05:20:09 [run-b] step 12345678901234567890 loss -1.5e-3 tok/s +12 queue 0",
        "2026-11-30 05:20:10 [run-b] step 40 loss 8.75 tok/s 12400 queue 3",
        "2026-11-30 05:20:11 [run-a] step 50 loss 8.5 tok/s 12350\r",
        "[rank3]:2026-11-30 05:20:12 [run-a] step 60 loss 8.4 tok/s 12300",  # torchrun's prefixes
        "[default1]: 2026-11-30 05:20:13 [run-a] step 70 loss 8.3 tok/s 12250 queue 1",
    ]
    dflash = re.compile(r"^(?:\[\w+\]: ?)?\S+ \S+ \[[\w.@-]+\] step \d+ loss \S+ tok/s \S+( queue \d+)?\r?$")
    bulk, single = tmp_path / "bulk.log", tmp_path / "single.log"
    bulk.write_text("\n".join(lines) + "\n", newline="")
    single.write_text("\n".join(ln + " " if dflash.match(ln) else ln for ln in lines) + "\n", newline="")
    taken = []
    of = process_log._FastLines.of
    monkeypatch.setattr(process_log._FastLines, "of",
                        staticmethod(lambda *a: taken.append(found := of(*a)) or found))
    a, b = _load(bulk), _load(single)
    # the bulk path read the DFlash lines of the first file, and none of the second
    assert [int(t.ok.sum()) if t is not None else 0 for t in taken] == [7, 0]
    cols = ["time", "run", "step", "metric", "value", "rank", "pattern"]
    pd.testing.assert_frame_equal(a.metrics[cols].reset_index(drop=True), b.metrics[cols].reset_index(drop=True))
    assert a.metrics["ref"].str.replace("bulk.log", "single.log").tolist() == b.metrics["ref"].tolist()
    tok = a.metrics[a.metrics["metric"] == "train/tok_per_s"]
    assert tok["value"].tolist() == [21500.0, 21480.5, 21000.0, 12.0, 12400.0, 12350.0, 12300.0, 12250.0]
    assert [r.rsplit(":", 1)[1] for r in tok["ref"]] == ["1", "3", "4", "8", "9", "10", "11", "12"]
    assert tok["run"].tolist() == ["run-a", "run-a", "run-a", "run-b", "run-b", "run-a", "run-a", "run-a"]
    assert tok["rank"].fillna(-1).tolist() == [-1, -1, -1, -1, -1, -1, 3, 1]
    assert tok["step"].tolist()[3] is pd.NA  # 20 digits fit no column
    assert a.load_report.files[0].to_plain()["parsed"] == b.load_report.files[0].to_plain()["parsed"]


def _looked_back_plainly(scanner, block: bytes, ls: int):
    """process_log's look-back as it read before it remembered its answers: each line from the
    nearest back, at most _NEIGHBOUR_LINES of them."""
    end = ls - 1
    for back in range(1, process_log._NEIGHBOUR_LINES + 1):
        if end <= 0:
            return None, None, back
        start = block.rfind(b"\n", 0, end) + 1
        prev, _ = process_log.strip_prefixes(process_log._clean(block[start:end]))
        stamp, at = process_log.find_stamp(prev)
        if stamp is not None:
            if stamp.form == "clock":
                stamp.reading = scanner.calendar.now()
            return stamp, process_log._run_tag(prev[at:]), back
        end = start - 1
    return None, None, process_log._NEIGHBOUR_LINES


@pytest.mark.parametrize("first", ["", "iter 0: loss 9.0"])
def test_a_line_without_a_time_borrows_the_same_one_however_often_it_is_asked(tmp_path, first):
    """Each line's look back for a time is remembered for the block (a log without times made every
    line read the 50 before it): the answer of every line equals the plain look-back's, stamps of
    each form, lines past the bound, an empty first line."""
    lines = [first] + [f"iter {i}: loss {9 - i / 100:.2f}" for i in range(1, 70)]
    lines[5] = "2026-11-30 05:20:01 [run-a] starting"
    lines[9] = "[12:00:03] epoch 1"
    lines[12] = "Nov 30 05:21:00 host kernel: x"
    block = ("\n".join(lines) + "\n").encode()
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)
    from dflash_postmortem.load_report import FileReport
    scanner = process_log.LogScanner(tmp_path / "x.log", FileReport(path="x.log", format="training-log"))
    # asked in order, then again out of order: the same answers
    for ls in [*starts, *reversed(starts), starts[40], starts[3]]:
        got, want = scanner._look_back(block, ls), _looked_back_plainly(scanner, block, ls)
        assert (got[1], got[2]) == (want[1], want[2]), ls
        assert (got[0] is None) == (want[0] is None) and (got[0] is None or vars(got[0]) == vars(want[0])), ls
    assert scanner._look_back(block, starts[8])[2] == 3  # the ISO stamp three lines up
    assert scanner._look_back(block, starts[69])[0] is None  # 57 lines past the last stamp


def test_each_rows_job_and_attempt_found_at_once_as_line_by_line():
    """launcher_lines.Segments.of_lines (the metric rows' job and attempt in one pass) against
    `at` line by line: torchrun restarts, Slurm requeues, lines before the first state's line."""
    import numpy as np

    from dflash_postmortem.loaders.training_log.launcher_lines import Segments

    rng = np.random.default_rng(3)
    lines = sorted(rng.integers(0, 5000, 3000).tolist()) + [0, 4999, 5000, 7000]
    for segments in (
        Segments([0], [("job-a", None)], None),
        Segments([0, 1200, 3400], [("job-a", 0), ("job-a", 1), ("job-b", None)], [900, 2500]),
        Segments([0, 10], [(None, None), ("job-a", 2)], [5, 4000]),
    ):
        jobs, attempts = segments.of_lines(lines)
        want = [segments.at(n) for n in lines]
        assert jobs == [j for j, _ in want] and attempts == [a for _, a in want]
        assert all(type(a) is type(w) for a, (_, w) in zip(attempts, want, strict=True))


def test_a_metric_block_takes_its_headers_step_and_a_config_dump_is_no_metric(tmp_path):
    # OLMo's and Composer's block forms (the corpus holds real ones); before any header, an indented
    # `path/key: number` is read only for a known key: a configuration printed as YAML is no metric
    inc = _read(tmp_path,
        "config:\n"
        "  optimizer/lr: 0.001\n"
        "    train/CE loss=6.5\n"
        "[2024-04-17 09:42:26] INFO     [olmo.train:816, rank=0] [step=7/100]\n"
        "    train/CrossEntropyLoss=10.73\n"
        "    train/Perplexity=45,773\n"
        "    throughput/device/tokens_per_second=45,538\n"
        "[batch=8/20]:\n"
        "\t Train loss/train/total: 0.0051\n"
        "\t Eval metrics/LanguageCrossEntropy: 2.5\n"
        "\t Train throughput/tokens_per_sec: 222.2194\n"
        "\t Train time/batch: x\n")
    got = inc.metrics[["step", "metric", "value"]].fillna({"step": -1}).values.tolist()
    assert got == [[-1, "train/loss", 6.5], [7, "train/loss", 10.73], [7, "train/Perplexity", 45773.0],
                   [7, "train/tok_per_s_per_gpu", 45538.0], [8, "train/loss", 0.0051],
                   [8, "eval/metrics/LanguageCrossEntropy", 2.5], [8, "train/tok_per_s", 222.2194]]
    assert inc.metrics["time"].iloc[1] == pd.Timestamp("2024-04-17 09:42:26", tz="UTC")  # the header's
    assert [r.rsplit("/", 1)[-1] for r in inc.metrics["ref"].tolist()[:2]] == ["train.log:3", "train.log:5"]


def test_verl_step_lines_behind_rays_tag(tmp_path):
    inc = _read(tmp_path,
        "(TaskRunner pid=247607) step:1 - actor/entropy:0.0977 - actor/pg_loss:-0.0036 - "
        "critic/vf_loss:np.float64(0.3166) - timing_s/step:45.21 - perf/throughput:3283.32\n"
        "step:2 - train/loss:1.0065 - train/lr(1e-3):0.00054\n")
    # critic/vf_loss's numpy repr is no number to the field regex: left out
    assert inc.metrics[inc.metrics["step"] == 1][["metric", "value"]].values.tolist() == [
        ["actor/entropy", 0.0977], ["actor/pg_loss", -0.0036], ["train/step_time_s", 45.21],
        ["train/tok_per_s_per_gpu", 3283.32]]
    assert inc.metrics[inc.metrics["step"] == 2][["metric", "value"]].values.tolist() == [["train/loss", 1.0065]]


def test_a_unit_in_a_trainer_dicts_key_is_no_path():
    from dflash_postmortem.loaders.training_log.patterns import hf_metric_key

    assert hf_metric_key("train_speed(iter/s)") == "train/train_speed(iter/s)"
    assert hf_metric_key("rewards/chosen") == "rewards/chosen" and hf_metric_key("eval_loss") == "eval/loss"


def test_only_lines_that_gave_rows_are_counted_as_borrowing_a_time(tmp_path):
    # wandb's closing summary holds keywords (`train/`, `loss`) and gives no row: it borrowed nothing
    inc = _read(tmp_path, "2026-01-01 00:00:00 [run] step 1 loss 2.0 tok/s 100\n"
                   "step 2 loss 1.9 tok/s 110\n"
                   "wandb:      train/loss 11.9\n"
                   "wandb: train/tok_per_s 110.0\n")
    assert len(inc.metrics) == 4
    said = [a for a in inc.load_report.files[0].assumptions if "without" in a]
    assert said == ["1 row without its own timestamp took the nearest earlier line's time",
                    "1 line without a [run] tag took the run of the nearest tagged line"], said


def _read(tmp_path, text: str):
    """A training log of `text`, read as load_process_log reads it."""
    log = tmp_path / "train.log"
    log.write_text(text)
    return _load(log)


def test_srun_labels_name_the_rank_of_a_file_whose_lines_all_carry_them(tmp_path):
    # `srun -l`: every task's lines behind its task id; a `tail -c` cut that happens to begin
    # with `0: ` in a file of unlabelled lines is no label (a bundled capture has one)
    inc = _read(tmp_path, "0: 2026-01-01 00:00:00 [run] step 1 loss 2.0 tok/s 100\n"
                          "1: 2026-01-01 00:00:00 [run] step 1 loss 2.1 tok/s 90\n"
                          "1: Traceback (most recent call last):\n"
                          "1:   File \"train.py\", line 3, in <module>\n"
                          "1: RuntimeError: CUDA error: an illegal memory access was encountered\n"
                          "0: 2026-01-01 00:00:10 [run] step 2 loss 1.9 tok/s 101\n")
    tok = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    assert tok[["rank", "step", "value"]].values.tolist() == [[0, 1, 100.0], [1, 1, 90.0], [0, 2, 101.0]]
    tb = inc.events[inc.events["kind"] == "traceback"].iloc[0]
    assert (tb["rank"], tb["lines"]) == (1, 3) and tb["message"].startswith("Traceback")
    cut = _read(tmp_path, "0:   6%|▌  | 3800/65536 [03:59<1:04:43, 15.90it/s, loss=10.40]\n\n"
                          "Epoch 0:   6%|▌  | 3800/65536 [04:00<1:05:00, 15.83it/s, loss=10.40]\n"
                          "2026-01-01 00:00:00 [run] step 1 loss 2.0 tok/s 100\n")
    assert cut.metrics["rank"].isna().all()


def test_mpirun_tag_output_names_the_rank(tmp_path):
    inc = _read(tmp_path, "[1,0]<stdout>:2026-01-01 00:00:00 [run] step 1 loss 2.0 tok/s 100\n"
                          "[1,1]<stdout>:2026-01-01 00:00:00 [run] step 1 loss 2.1 tok/s 90\n"
                          "[1,1]<stderr>:RuntimeError: CUDA error: an illegal memory access was encountered\n")
    tok = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    assert tok[["rank", "value"]].values.tolist() == [[0, 100.0], [1, 90.0]]
    assert inc.events[["kind", "rank"]].values.tolist() == [["error", 1]]


def test_pdsh_hosts_name_the_host_of_a_multi_node_launch_and_a_bars_word_is_no_host(tmp_path):
    inc = _read(tmp_path, "[2022-09-08 12:07:09,336] [INFO] [runner.py:415:main] Using IP address of 192.168.0.17\n"
                          "worker-0: [2022-09-08 12:07:13,642] [INFO] [launch.py:350:main] Process 576484 exits successfully.\n"
                          "worker-1: [2022-09-08 12:07:13,642] [ERROR] [launch.py:184:sigkill_handler] ['python'] "
                          "exits with return code = -9\n"
                          "worker-1: [2022-09-08 12:07:14,000] [INFO] [launch.py:178:sigkill_handler] Killing subprocess 576485\n"
                          "worker-0: [2022-09-08 12:07:14,100] [INFO] [launch.py:178:sigkill_handler] Killing subprocess 576484\n")
    ev = inc.events[["kind", "host", "pid", "exit_code"]].fillna({"pid": -1, "exit_code": -1})
    assert ev.values.tolist() == [["exit", "worker-0", 576484, 0], ["exit", "worker-1", -1, -9],
                                  ["signal", "worker-1", 576485, -1], ["signal", "worker-0", 576484, -1]]
    bars = _read(tmp_path, "".join(f"Train: {p:3d}%|##   | {p}/100 [00:0{p % 10}<00:10,  2.00it/s, loss=1.{p}]\n"
                                   for p in range(1, 6)))
    assert bars.events["host"].isna().all() and len(bars.metrics)


def test_an_impossible_date_among_dflash_lines_read_in_bulk_is_that_rows_time_alone(tmp_path):
    # The bulk read parses a block's times at once (numpy), which fails as a whole on month 13:
    # that block's times then go to resolve_times as text, which gives that line no time and
    # the others theirs, as the line-by-line path does (a space after each line).
    lines = ["2026-11-30 05:20:01 [r] step 10 loss 9.5 tok/s 21500 queue 2",
             "2026-13-30 05:20:02 [r] step 20 loss 9.4 tok/s 21400 queue 2",
             "2026-11-30 05:20:03 [r] step 30 loss 9.3 tok/s 21300"]
    bulk, single = tmp_path / "bulk.log", tmp_path / "single.log"
    bulk.write_text("\n".join(lines) + "\n")
    single.write_text("\n".join(ln + " " for ln in lines) + "\n")
    a, b = _load(bulk), _load(single)
    tok = a.metrics[a.metrics["metric"] == "train/tok_per_s"]
    assert [str(t) for t in tok["time"]] == ["2026-11-30 05:20:01+00:00", "NaT", "2026-11-30 05:20:03+00:00"]
    assert tok["step"].tolist() == [10, 20, 30]
    cols = ["time", "run", "step", "metric", "value", "rank", "pattern"]
    pd.testing.assert_frame_equal(a.metrics[cols].reset_index(drop=True), b.metrics[cols].reset_index(drop=True))


def test_dflash_lines_behind_a_launchers_label_are_read_in_bulk_as_line_by_line(tmp_path, monkeypatch):
    # srun --label's task id and pdsh's host before every line: the bulk read takes them (a space
    # after each line sends the same lines one by one), the ranks and values the same
    taken = []
    of = process_log._FastLines.of
    monkeypatch.setattr(process_log._FastLines, "of", staticmethod(lambda *a: taken.append(found := of(*a)) or found))
    for label, ranks in ((lambda r: f"{r}: ", [0, 1, 0, 1]), (lambda r: f"gpu00{r}: [rank{r}]:", [0, 1, 0, 1])):
        lines = [f"{label(r)}2026-11-30 05:20:0{s} [run] step {s} loss {9 - s / 10} tok/s {21000 + 10 * s + r}"
                 for s, r in ((1, 0), (1, 1), (2, 0), (2, 1))]
        bulk, single = tmp_path / "bulk.log", tmp_path / "single.log"
        bulk.write_text("\n".join(lines) + "\n")
        single.write_text("\n".join(ln + " " for ln in lines) + "\n")
        taken.clear()
        a, b = _load(bulk), _load(single)
        assert [int(t.ok.sum()) if t is not None else 0 for t in taken] == [4, 0]
        cols = ["time", "run", "step", "metric", "value", "rank", "pattern"]
        pd.testing.assert_frame_equal(a.metrics[cols].reset_index(drop=True), b.metrics[cols].reset_index(drop=True))
        assert a.metrics[a.metrics["metric"] == "train/tok_per_s"]["rank"].tolist() == ranks


def test_a_shells_bare_report_in_the_log_is_the_trainers_death_by_that_signal(tmp_path):
    """dash (make's recipe shell) and a script's bash write `Killed` / `Terminated` into the file
    the trainer's output went to (data/incidents/h100-1gpu-make-launcher: train-...172915.log line
    81): the process was killed, by the signal the word means; `Killed process 12 (python)`, the
    OOM killer's line, is not that report."""
    log = tmp_path / "train.log"
    log.write_text("2026-12-05 17:30:23 [drafter] step 350 loss 10.4516 tok/s 55233 queue 0\nKilled\n"
                   "Terminated\nKilled process 12 (python) total-vm:1kB\n")
    ev = _load(log).events
    assert ev["kind"].tolist() == ["killed", "killed", "signal"]
    assert ev["signal"].tolist() == ["SIGKILL", "SIGTERM", "SIGKILL"]
    assert [r.rsplit("/", 1)[1] for r in ev["ref"]] == ["train.log:2", "train.log:3", "train.log:4"]


@pytest.mark.parametrize("size", [7, 64, 100, 4096, 5000])
def test_blocks_end_at_a_newline_and_lose_no_byte(tmp_path, size):
    # Each block is read up to the last newline before its end, found by a look ahead
    # (process_log._to_newline); a line longer than the look or the block, a last line with no
    # newline and a pipe (no look ahead there) are carried as before: the same bytes, in order.
    rng = random.Random(size)
    lines = [b"x" * rng.choice([0, 3, 40, 90, 6000]) + b"\n" for _ in range(300)]
    data = b"".join(lines) + b"tail without a newline"
    p = tmp_path / "lines.log"
    p.write_bytes(data)
    with open(p, "rb") as f:
        blocks = [b for what, b in process_log._blocks(f, size) if what == "lines"]
    assert b"".join(blocks) == data
    assert all(b.endswith(b"\n") for b in blocks[:-1]) and blocks[-1].endswith(b"newline")
    read, write = os.pipe()
    with open(read, "rb") as f:
        writer = threading.Thread(target=lambda: (os.write(write, data), os.close(write)))
        writer.start()
        piped = [b for what, b in process_log._blocks(f, size) if what == "lines"]
        writer.join()
    assert b"".join(piped) == data and all(b.endswith(b"\n") for b in piped[:-1])


@pytest.mark.parametrize("last, kind, signal", [
    ("Aborted (core dumped)", "signal", "SIGABRT"), ("Hangup", "signal", "SIGHUP"),
    # the shell's words where it speaks Chinese (danijar/dreamerv3 #203: `已杀死`, the OOM killer's SIGKILL)
    ("已杀死", "killed", "SIGKILL"), ("段错误 (核心已转储)", "signal", "SIGSEGV")])
def test_a_shells_report_of_any_signal_ends_the_programs_output(tmp_path, last, kind, signal):
    """The shell writes how its child died where the child's output went: the output is a
    training log that ends in a death, in whatever words and language the shell used."""
    log = tmp_path / "out.log"
    log.write_text(f"Writing metrics: logdir/metrics.jsonl\n{last}\n", encoding="utf-8")
    inc = pm.load_incident(log)
    assert inc.load_report.files[0].format == "training-log"
    ev = inc.events
    assert ev[["kind", "signal", "ref"]].values.tolist() == [[kind, signal, "out.log:2"]]


def test_a_py_spy_dump_is_one_stack_dump_of_a_live_process_with_its_main_threads_frames(tmp_path):
    """Its process and command, its two threads, the main thread's frames outermost first in a
    traceback's form (where said.waiting_in reads the wait); the line after the dump is its own."""
    log = tmp_path / "spy.txt"
    log.write_text(PY_SPY_DUMP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev = pm.load_process_log(log).events
    dump = ev[ev["kind"] == "stack_dump"]
    assert len(dump) == 1 and dump["ref"].iloc[0].endswith("spy.txt:1")
    d = dump.iloc[0]
    assert (d["pid"], d["command"], d["threads"]) == (46930, "/usr/bin/python -u main.py --local_rank=0", 2)
    assert d["frames"].splitlines()[0] == "MainThread (idle):"
    assert d["frames"].splitlines()[1] == '  File "main.py", line 328, in <module>'
    assert d["frames"].splitlines()[-1] == '  File "torch/utils/file_baton.py", line 42, in wait'
    assert d["lines"] == 12  # (up to its last frame: the blank line after it is nobody's)


def test_a_bar_that_names_its_epoch_counts_the_runs_steps(repo_dir, fixtures_dir):
    """`tqdm(loader, desc=f"Epoch {epoch}/{epochs}")` counts each epoch's batches from 0: the step
    in the run is the batches of the epochs before it and the count. h100-1gpu-bar-freeze's log
    (300 batches an epoch, `Epoch 1/6` first: epochs from 1) froze at `107/300` of `Epoch 4/6`,
    step 1007 of the run (its README: `STALL_AT = 3 * 300 + 107`); its resume's log starts again
    at `0/300` of `Epoch 4/6`, step 900. A bar whose epoch 0 shows (`Training (epoch 0 / 20)`)
    counts them from 0: its steps are its counts in its first epoch."""
    bars = pm.schema.BAR_ELAPSED_S
    log = _load(repo_dir / "data" / "incidents" / "h100-1gpu-bar-freeze" / "logs" / "train.log").metrics
    el = log[log["metric"] == bars]
    assert el["step"].max() == 1007 and el["step"].is_monotonic_increasing
    assert el.loc[el["ref"].str.endswith(":9"), "step"].min() == 900  # epoch 4's bar drawn at 0/300
    resumed = _load(repo_dir / "data" / "incidents" / "h100-1gpu-bar-freeze" / "logs" / "train2.log").metrics
    assert resumed.loc[resumed["metric"] == bars, "step"].agg(["min", "max"]).tolist() == [900, 1800]
    zero = _load(fixtures_dir / "train-log" / "tqdm-tokens-per-sec-nohup-excerpt.log").metrics
    assert zero.loc[zero["metric"] == bars, "step"].tolist() == [0, 1, 2, 3, 4, 5]
