"""Events a post-mortem needs from real training logs, as the patterns (patterns.py) read them: c10d
watchdog and heartbeat timeouts with their global and group ranks, NCCL WARN traces, DeepSpeed and
torchrun failures with exit codes and signals, OOM sizes, records glued on one line; and what the
sniffer claims. (ChildFailedError tables span lines: test_blocks.py.)"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.training_log import patterns as lp
from dflash_postmortem.loaders.training_log.process_log import sniff_log

TRAIN = "train-log"


def _events(fixtures_dir, name, **kw) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_process_log(fixtures_dir / TRAIN / name, **kw).events


def _events_of(tmp_path, text: str) -> pd.DataFrame:
    """The events of a log holding `text`."""
    (tmp_path / "sup.log").write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_process_log(tmp_path / "sup.log").events


def test_watchdog_timeout_columns_and_global_vs_group_rank(fixtures_dir):
    ev = _events(fixtures_dir, "nccl-watchdog-global-vs-group-rank-nccl1610.log")
    wd = ev[ev["pattern"] == "nccl_watchdog"]
    # `[rank13]:` is the global rank; `[Rank 1]` the rank inside the all-to-all's group
    assert wd[["rank", "group_rank", "seq", "op", "timeout_ms", "ran_ms"]].values.tolist() == [
        [13, 1, 216, "ALLTOALL_BASE", 600000, 600045], [15, 1, 57, "ALLREDUCE", 600000, 600045]]
    exc = ev[ev["pattern"] == "nccl_watchdog_exception"]
    assert exc["pg"].tolist() == ["11", "11"] and exc["rank"].tolist() == [13, 15]


def test_group_rank_is_the_rank_only_in_the_default_group(fixtures_dir):
    ev = _events(fixtures_dir, "heartbeat-monitor-pg5-wrapped-xdit.log")
    hb = ev[ev["pattern"] == "nccl_heartbeat_timeout"]
    assert hb["rank"].tolist() == [0, 4] and hb["group_rank"].tolist() == [0, 0] and set(hb["pg"]) == {"5"}
    ev = _events(fixtures_dir, "nccl-watchdog-old-format-ofa-8xv100.log")  # 1.x: `[Rank N]` alone
    assert ev["rank"].tolist() == [1, 3, 2, 6, 7]


def test_stuck_watchdog_and_heartbeat_monitor(fixtures_dir):
    ev = _events(fixtures_dir, "heartbeat-monitor-glog-dated-sglang.log")
    stuck = ev[ev["pattern"] == "nccl_watchdog_stuck"].iloc[0]
    assert (stuck["kind"], stuck["rank"], stuck["ran_ms"], stuck["pg"]) == ("nccl_timeout", 2, 600_000, "3")
    assert ev[ev["pattern"] == "nccl_heartbeat_timeout"]["rank"].tolist() == [0, 1, 6, 7]


def test_nccl_warn_and_its_return_trace_are_one_error_per_thread(fixtures_dir):
    ev = _events(fixtures_dir, "nccl-warn-ibv-create-qp-async-tf.log")
    err = ev[ev["kind"] == "nccl_error"]
    assert err[["gpu", "lines"]].values.tolist() == [[4, 9], [5, 3], [6, 1]]
    first = err.iloc[0]
    assert first["message"].splitlines()[0].endswith("NCCL WARN Call to ibv_create_qp failed")
    assert first["message"].splitlines()[-1].endswith("group.cc:72 -> 2 [Async thread]")
    assert (first["nccl_code"], first["pid"], first["host"]) == (2, 3778851, "gpu-a100-3")
    assert ev[ev["kind"] == "stage"]["message"].tolist() == ["NCCL version 2.8.3+cudaCUDA_MAJOR.CUDA_MINOR"]


def test_nccl_info_lines_are_counted_with_their_own_reason(fixtures_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_process_log(fixtures_dir / TRAIN / "nccl-info-two-hosts-interleaved-channels.log")
    rep = inc.load_report.files[0]
    assert inc.events.empty and rep.skipped["NCCL INFO line (set-up, topology, channels)"] == 13


def test_deepspeed_launcher_kills_and_exit(fixtures_dir):
    ev = _events(fixtures_dir, "deepspeed-typed-text-glued-return-code-11.log")
    assert ev[ev["kind"] == "signal"]["pid"].tolist() == [94984, 94985]
    ex = ev[ev["kind"] == "exit"].iloc[0]
    assert (ex["exit_code"], ex["signal"], ex["local_rank"]) == (-11, "SIGSEGV", 1)
    assert ex["time"] == pd.Timestamp("2023-07-10 04:26:35.999", tz="UTC")


def test_elastic_signals_by_number_and_name(fixtures_dir):
    ev = _events(fixtures_dir, "elastic-sighup-cjk-glued-signal-exception.log")
    assert ev[ev["kind"] == "signal"][["pattern", "signal"]].values.tolist() == [
        ["elastic_death_signal", "SIGHUP"], ["elastic_closing_signal", "SIGHUP"], ["elastic_signal_exception", "SIGHUP"]]
    # the agent's death signal ends the attempt it was running
    end = ev[ev["kind"] == "attempt_end"]
    assert end[["reason", "by"]].values.tolist() == [["agent received SIGHUP", "torchrun"]]
    ev = _events(fixtures_dir, "elastic-glog-closing-via-signal-multi-agent.log")
    signals = ev[ev["kind"] == "signal"]
    assert (signals["signal"] == "SIGTERM").all() and len(signals) == 9


def test_records_glued_on_one_line_are_read_apart(fixtures_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_process_log(fixtures_dir / TRAIN / "torchrun-records-joined-one-line-firefly.log")
    ev, rep = inc.events, inc.load_report.files[0]
    assert rep.read == rep.parsed == 1 and set(ev["ref"].str.rsplit(":", n=1).str[1]) == {"1"}
    assert ev[ev["kind"] == "signal"]["pid"].tolist() == [899505, 899506, 899507, 899508, 899510]
    assert ev[ev["kind"] == "exit"][["pid", "exit_code", "local_rank"]].values.tolist() == [[899509, -9, 4]]
    assert any("glued" in n for n in rep.notes)


def test_progress_bar_glued_before_an_error(fixtures_dir):
    ev = _events(fixtures_dir, "torchrun-colab-bar-glued-error-cjk-chatglm2.log")
    assert ev[ev["kind"] == "exit"]["pid"].tolist() == [31631]
    bar = ev[ev["kind"] == "progress"].iloc[0]
    assert "4/7" in bar["message"]


@pytest.mark.parametrize(("name", "gpu", "requested", "capacity", "free"), [
    ("oom-torch22-fenced-23gib.log", 0, 22.0, 23.65 * 1024, 11.06),
    ("oom-torch21-capacty-spelling-zero-bytes.log", 0, 1.70 * 1024, 6.00 * 1024, 0.0),
    ("oom-absurd-in-use-unindented-traceback-cut.log", 1, 28.0, 8.00 * 1024, 0.0),
])
def test_oom_sizes_in_mib(fixtures_dir, name, gpu, requested, capacity, free):
    oom = _events(fixtures_dir, name).query("kind == 'oom'").iloc[0]
    assert oom["gpu"] == gpu
    assert oom[["requested_mib", "capacity_mib", "free_mib"]].tolist() == pytest.approx([requested, capacity, free])


def test_old_oom_message_glued_to_a_cleared_bar(fixtures_dir):
    ev = _events(fixtures_dir, "oom-warning-root-glued-batch-bar-cut.log")
    oom = ev[ev["kind"] == "oom"]
    assert len(oom) == 7 and oom["free_mib"].iloc[0] == 356.0 and pd.isna(oom["free_mib"].iloc[6])  # the cut one


def test_hf_dict_takes_the_step_of_the_bar_before_it(fixtures_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pm.load_process_log(fixtures_dir / TRAIN / "hf-trainer-caret-m-bars-dicts-h2ogpt.log").metrics
    loss = m[m["metric"] == "train/loss"]
    assert loss[["step", "value"]].values.tolist() == [[1318, 1.5545], [1319, 1.3465], [1320, 1.3056], [1321, 1.0685], [1322, 1.0574]]


def test_human_suffixes_and_field_order_free_readers(fixtures_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pm.load_process_log(fixtures_dir / TRAIN / "nanotron-k-suffix-values-aws-host.log").metrics
    tps = m[m["metric"] == "train/tok_per_s"]
    assert tps[["step", "value"]].values.tolist() == [[991, 14200.0], [992, 15500.0], [993, 16200.0]]


def test_sniffer_claims_logs_with_nul_runs_but_not_wandb_debug_logs(fixtures_dir):
    nul = fixtures_dir / TRAIN / "nanogpt-killed-writer-nul-run-then-restart-derived.log"
    assert sniff_log(nul, nul.read_bytes()[:65536]) >= 0.5
    for debug in sorted((fixtures_dir / "wandb").rglob("debug*.log")):
        assert sniff_log(debug, debug.read_bytes()[:65536]) < 0.95, debug  # the wandb format's own confidence


def test_bar_postfix_repeated_by_a_glued_record_is_read_once(fixtures_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pm.load_process_log(fixtures_dir / TRAIN / "automodel-eagle3-tqdm-step-per-s-glued-log.log").metrics
    loss = m[m["metric"] == "train/loss"]
    assert loss["step"].tolist() == [38, 39, 40, 41, 42]  # the bar's rounded copy is dropped
    assert loss["value"].iloc[0] == 8.284101 and loss["time"].notna().all()
    assert m[m["metric"] == "train/it_per_s"]["value"].tolist() == [3.07, 3.07, 3.06, 3.01, 3.02]


@pytest.mark.parametrize(("unit", "metric", "scale", "want"), [
    ("ms", "train/iter_time_ms", 1.0, 1.0), ("s", "train/iter_time_ms", 1.0, 1000.0),
    ("s", "train/step_time_s", 1.0, 1.0), ("ms", "train/step_time_s", 1.0, 1e-3),
    (None, "train/iter_time_ms", 1000.0, 1000.0), ("s", "train/tok_per_s", 1.0, 1.0),  # no unit, not a time
])
def test_a_time_fields_own_unit_wins(unit, metric, scale, want):
    from dflash_postmortem.loaders.training_log.patterns import field_scale
    assert field_scale(metric, scale, unit) == pytest.approx(want)


@pytest.mark.parametrize(("line", "metric", "step", "value"), [
    ("Step 7 | loss:0.94 lr:2e-05 tokens_per_second_per_gpu:408.6", "train/tok_per_s_per_gpu", 7, 408.6),
    ("Epoch 1 | iter 8 step 2 | loss train: 1.761, val: n/a | iter time: 121.17 ms (step)", "train/iter_time_ms", 2, 121.17),
    ("iter 0 step 1: loss 10.9, iter time: 1565.57ms (optimizer.step)", "train/iter_time_ms", 1, 1565.57),  # lit-gpt 2023
    ("iter: 12/300 4% | loss: 6.5 | iter time: 0.250s | lr: 1.0E-04", "train/iter_time_ms", 12, 250.0),
    ("completed step: 3, seconds: 5.402, TFLOP/s/device: 141.542, Tokens/s/device: 9098.189, loss: 11.379",
     "train/tok_per_s_per_gpu", 3, 9098.189),
    ("DLL 2022-04-05 05:10:36.324733 - Training Epoch: 0 Training Iteration: 651  step_loss : 2.05", "train/loss", 651, 2.05),
    ("DLL 2021-01-01 00:00:00.000001 - (1, 20)  train.loss : 2.3  train.total_ips : 1234.5 img/s",
     "train/samples_per_s", 20, 1234.5),
    # MMEngine counts epochs from 1: epoch 2, iteration 50 of 938 is step 988
    ("07/14 13:56:24 - mmengine - INFO - Epoch(train) [2][ 50/938]  lr: 1.0000e-02  eta: 0:06:54  time: 0.0366"
     "  data_time: 0.0076  memory: 1234  loss: 0.6617", "train/loss", 988, 0.6617),
    ("`Iter [100/2000]\tlr: 1.0e-04, eta: 1:00:00, time: 0.905, data_time: 0.037, memory: 18408, loss: 0.5`",
     "train/loss", 100, 0.5),  # inline code: its closing backtick goes with the opening one
    ("Iter 20: Train loss 8.931, Learning Rate 1.000e-04, It/sec 1.043, Tokens/sec 121.980, Peak mem 4.974 GB",
     "train/tok_per_s", 20, 121.98),
    # a trainer's own print-out of single blanks: each field where a number ends and a word or a number begins
    ("2026-12-07 07:03:31,920 step 10 loss 0.200 12.4 it/s", "train/loss", 10, 0.2),
    ("step 20 train loss: 0.125 lr 3e-4", "train/learning_rate", 20, 3e-4),
    ("step 30 loss=0.100 it/s=12.4", "train/loss", 30, 0.1),
    # pytorch/examples' ProgressMeter (epochs from 0: step = epoch x per-epoch + i), and CGCNN's
    # copy of it with single blanks between its fields
    ("Epoch: [1][  10/5005]\tTime  0.222 ( 0.512)\tData  0.001 ( 0.283)\tLoss 6.9062e+00 (6.9315e+00)", "train/loss",
     5015, 6.9062),
    ("Epoch: [0][511/1736]\t Loss 0.5117 MAE 0.6075 RMSE 0.7153", "train/loss", 511, 0.5117),
])
def test_field_formats_of_more_trainers(tmp_path, line, metric, step, value):
    p = tmp_path / "train.log"
    p.write_text(line + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pm.load_process_log(p).metrics
    row = m[m["metric"] == metric]
    assert row[["step", "value"]].values.tolist() == [[step, pytest.approx(value)]]


def test_rank_prefix_after_a_collectors_time_names_no_run(fixtures_dir):
    ev = _events(fixtures_dir, "ms-swift-bar-glued-watchdog-then-dated-rank-glog.log")
    assert set(ev["run"]) == {"ms-swift-bar-glued-watchdog-then-dated-rank-glog"}
    new = ev[ev["pattern"] == "nccl_watchdog_exception"]  # torch 2.6+: `failure detected by watchdog`
    assert new["seq"].tolist() == [7219, 7219] and (new["kind"] == "nccl_timeout").all()


def test_triton_out_of_resource_is_an_error_not_an_oom(fixtures_dir):
    ev = _events(fixtures_dir, "specforge-rank-prefixed-joined-inductor-out-of-resource.log")
    assert ev["kind"].tolist() == ["error"] and ev["pattern"].iloc[0] == "triton_out_of_resource"


def test_loguru_record_glued_after_a_bar_keeps_its_own_time(tmp_path):
    p = tmp_path / "train.log"
    p.write_text("Train:  10%|#  | 1/10 [00:01<00:09,  1.00it/s, loss=2.01]2024-01-01 12:00:00.123 | INFO     | "
                 "__main__:train:42 - step=1 loss=2.0123 tps=1500\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pm.load_process_log(p).metrics
    loss = m[m["metric"] == "train/loss"]
    assert loss[["step", "value", "pattern"]].values.tolist() == [[1, 2.0123, "key_value"]]
    assert str(loss["time"].iloc[0]) == "2024-01-01 12:00:00.123000+00:00"
    assert m[m["metric"] == "train/tok_per_s"]["value"].tolist() == [1500.0]


METRIC_LINES = """\
[2023-03-01 10:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=2, lr=[5.9e-05, 5.9e-05], mom=[(0.9, 0.95)]
[2023-03-01 10:00:00,124] [INFO] [timer.py:215:stop] epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=24.5, CurrSamplesPerSec=25.0, MemAllocated=5.5GB, MaxMemAllocated=9.0GB
[2023-03-01 10:00:01,000] [INFO] [engine.py:100:_exec] steps: 20 loss: 10.6001 iter time (s): 2.900 samples/sec: 44.138
 iteration      100/  500000 | consumed samples:        51200 | elapsed time per iteration (ms): 1234.5 | learning rate: 5.999E-05 | global batch size:   512 | lm loss: 2.345E+00 | loss scale: 65536.0 | number of skipped iterations:   0 | number of nan iterations:   0 |
Epoch 3:  45%|████▌     | 450/1000 [01:23<01:42,  5.42it/s, v_num=0, train_loss_step=1.230]
2021-05-03 13:20:18,512 INFO: [train..][epoch:  0, iter:   1,000, lr:(1.000e-04,2.000e-05,)] [eta: 1 day, 2:41:39, time (data): 0.123 (0.001)] l_pix: 1.2345e-02 l_percep: 3.1e+00
"""


def test_deepspeed_megatron_lightning_and_basicsr_metric_lines(tmp_path):
    """The iteration lines issue #24 found giving no metrics: rates, times with their unit, steps."""
    p = tmp_path / "train.log"
    p.write_text(METRIC_LINES, encoding="utf-8")
    m = pm.load_process_log(p).metrics
    got = {(r.pattern, r.metric, r.step): r.value for r in m.itertuples()}
    assert got[("deepspeed_step", "train/skipped_steps", 10)] == 2.0
    assert got[("deepspeed_step", "train/learning_rate", 10)] == 5.9e-05
    assert got[("deepspeed_throughput", "train/samples_per_s", 10)] == 25.0
    assert got[("deepspeed_throughput", "train/max_memory_mib", 10)] == 9.0 * 1024
    assert got[("deepspeed_pipe", "train/loss", 20)] == 10.6001
    assert got[("deepspeed_pipe", "train/step_time_s", 20)] == 2.9
    assert got[("deepspeed_pipe", "train/samples_per_s", 20)] == 44.138
    assert got[("megatron", "train/iter_time_ms", 100)] == 1234.5
    assert got[("megatron", "train/global_batch_size", 100)] == 512.0
    assert got[("megatron", "train/loss_scale", 100)] == 65536.0
    assert got[("tqdm", "train/loss", 3450)] == 1.23  # (450 of Lightning's `Epoch 3`, epochs from 0: 3 x 1000 + 450)
    assert got[("basicsr", "train/learning_rate", 1000)] == 1.0e-04  # the first optimizer's
    assert got[("basicsr", "train/step_time_s", 1000)] == 0.123
    assert got[("basicsr", "train/l_percep", 1000)] == 3.1
    assert not any(k[1] == "train/loss" and k[0] == "basicsr" for k in got)  # no l_* is the loss


def test_every_line_the_record_head_cuts_holds_one_of_its_hints():
    """patterns.may_glue_records spares most lines the record-head regex: it must never say no to
    a line the regex would cut. Every line of the corpus's training logs and of the bundled
    incidents' logs, and the glued records the regex exists for."""
    root = Path(__file__).resolve().parents[3]
    files = [*(root / "tests" / "fixtures" / "real-world" / "train-log").glob("*.log"),
             *(root / "data" / "incidents").glob("*/logs/*.log")]
    glued = ["step 10 loss 2.0WARNING:root:slow", "tqdm 5/10 [rank0]:[W1201 12:00:00 x.cpp:1]",
             "abc[E1201 22:44:03.1 ProcessGroupNCCL.cpp:1] x", "typed[2026-01-01 00:00:00,123] INFO",
             "x 2026-01-01 00:00:00.1 | INFO     | m", "oopsTraceback (most recent call last):",
             "x torch.OutOfMemoryError: CUDA out of memory"]
    cut = 0
    lines = glued + [ln for f in files for ln in f.read_text(errors="replace").replace("\r", "\n").splitlines()]
    ungated = re.compile(lp.RECORD_HEADS)  # the alternatives alone, without the first-character gate
    for line in lines:
        parts = lp.RECORD_HEAD.split(line)
        assert parts == ungated.split(line), line
        if len(parts) > 1:
            cut += 1
            assert lp.may_glue_records(line), line
    assert cut >= len(glued) + 20, cut  # the corpus has glued lines of its own
    assert not lp.may_glue_records("iter 100: loss 4.0313, time 131.19ms, mfu 38.76%")


def test_lightnings_stop_on_a_limit_is_its_runs_stop_line(repo_dir):
    """h200-1gpu-pl-contention's logs/pl_train.log: Lightning's `Time limit reached. Elapsed time
    is 0:04:00. Signaling Trainer to stop.`, glued to its bar's redraw on line 25, is the run's
    stop; the bar's states on that line still count."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_process_log(repo_dir / "data" / "incidents" / "h200-1gpu-pl-contention" / "logs" / "pl_train.log")
    ev = inc.events
    stop = ev[ev["kind"] == "training_stop"]
    assert stop["pattern"].tolist() == ["lightning_stop"] and stop["ref"].iloc[0].endswith("pl_train.log:25")
    assert stop["message"].iloc[0] == "Time limit reached. Elapsed time is 0:04:00. Signaling Trainer to stop."
    bar = ev[(ev["kind"] == "progress") & ev["bar_total"].notna()]
    assert (bar["bar_n"].iloc[-1], bar["bar_total"].iloc[-1]) == (3800, 65536)


def test_a_supervisors_status_lines_give_the_pid_code_and_signal_and_a_resume_its_path(tmp_path):
    """A Python supervisor's own log (h100-1gpu-segv-supervisor's supervise.py), a bash loop's, and
    a trainer's own resume line naming its checkpoint by path."""
    ev = _events_of(tmp_path,
        "2026-12-06 10:14:16,286 ERROR train.py (pid 660) exited with returncode -11 (SIGSEGV)\n"
        "2026-12-06T08:15:31Z train.py exited with code 137, restarting in 5s\n"
        "2026-12-06 10:20:00,000 INFO supervisor: exited: train (exit status 1; not expected)\n"
        "2026-12-06 10:20:01,000 INFO resuming from ckpt/last.pt at step 400\n"
        "2026-12-06 10:20:02,000 INFO not resuming from ckpt/last.pt: it does not exist\n")
    exits = ev[ev["kind"] == "exit"]
    assert exits["exit_code"].tolist() == [-11, 137, 1]
    assert exits["pid"].tolist()[0] == 660 and pd.isna(exits["pid"].iloc[1])
    assert exits["signal"].iloc[0] == "SIGSEGV"
    assert ev.loc[ev["kind"] == "resumed", "message"].str.endswith("at step 400").tolist() == [True]


def test_a_supervisors_word_that_it_started_its_program_gives_the_program_and_its_pid(tmp_path):
    """supervisord's `spawned:` line (its own wording, as its docs and logs have it) and a Python
    supervisor's (h100-1gpu-segv-supervisor's supervise.py): a start by a supervisor, with the
    program and the PID. A process that says it started a helper of its own names no program a
    supervisor runs (wandb's debug log), nor does supervisord's word on itself."""
    ev = _events_of(tmp_path,
        "2026-12-06 09:00:00,100 INFO supervisord started with pid 50\n"
        "2026-12-06 09:00:01,200 INFO spawned: 'train' with pid 101\n"
        "2026-12-06 10:13:38,183 INFO started train.py (attempt 1/3, pid 660)\n"
        "2026-12-06 10:13:39,000 INFO launched():137] started backend process with pid: 5944\n")
    starts = ev[ev["kind"] == "attempt_start"]
    assert starts["program"].tolist() == ["train", "train.py"]
    assert starts["pid"].tolist() == [101, 660] and set(starts["by"]) == {"supervisor"}
    assert [r.rsplit("/", 1)[-1] for r in starts["ref"]] == ["sup.log:2", "sup.log:3"]


def test_a_supervisors_word_that_it_stops_restarting_names_its_program_where_it_does(tmp_path):
    """supervisord's `gave up:` (Supervisor/supervisor's process.py wording, as in the seat#33 log
    of the corpus) names its program; a Python loop's `giving up after 3 attempts`
    (h100-1gpu-segv-supervisor's supervise.py) does not. A library's own giving up on something
    else, with no count of tries, is no supervisor's word."""
    ev = _events_of(tmp_path,
        "2014-04-22 13:51:33,472 INFO gave up: seat4 entered FATAL state, too many start retries too quickly\n"
        "2026-12-06 10:15:07,566 ERROR giving up after 3 attempts\n"
        "2026-12-06 10:15:08,000 WARNING Giving up on the fast tokenizer; using the slow one\n"
        "2026-12-06 10:15:09,000 systemd[1]: train.service: Start request repeated too quickly.\n")
    quit = ev[ev["kind"] == "gave_up"]
    assert [r.rsplit(":", 1)[-1] for r in quit["ref"]] == ["1", "2", "4"]
    assert quit["program"].tolist()[0] == "seat4" and pd.isna(quit["program"].tolist()[1])
    assert set(quit["by"]) == {"supervisor"}


def test_an_early_stopping_rules_last_word_stops_the_training_and_its_counter_does_not(tmp_path):
    ev = _events_of(tmp_path,
        "2026-12-06 10:14:19,000 EarlyStopping counter: 3 out of 3\n"
        "2026-12-06 10:14:19,000 Early stopping\n"  # pytorchtools
        "Epoch 00012: early stopping\n"  # Keras
        "[12:00:01] INFO No improvement since epoch 2: early stopping\n")  # fastai
    assert ev["kind"].tolist() == ["training_stop"] * 3
    assert not ev["message"].str.contains("counter").any()


def test_a_signal_sent_and_received_and_a_wrappers_status_are_read_where_a_log_says_them(tmp_path):
    """h100-1gpu-preempt-requeue's lines: the preemption watcher's `sent SIGTERM to pid 669`, the
    trainer's own `received SIGTERM (preemption notice)`, the requeue wrapper's `attempt 1 ended
    with status 0`; a stall watchdog's `sending SIGTERM to 26117`. A signal named in other words
    (`SIGTERM handler installed`) is neither."""
    ev = _events_of(tmp_path,
        "2026-12-06T18:40:21Z sent SIGTERM to pid 669 (python3 train.py)\n"
        "2026-12-06 18:40:21,443 [WARNING] received SIGTERM (preemption notice), saving checkpoint at step 466\n"
        "2026-12-06T18:40:24Z requeue: attempt 1 ended with status 0, requeueing in 20s\n"
        "2026-12-06 17:55:02 watchdog: train.log not written for 64s (limit 60s), sending SIGTERM to 26117\n"
        "2026-12-06 18:40:25,000 [INFO] SIGTERM handler installed\n")
    sent = ev[ev["kind"] == "kill_sent"]
    assert sent["target_pid"].tolist() == [669, 26117] and sent["signal"].tolist() == ["SIGTERM", "SIGTERM"]
    assert ev.loc[ev["kind"] == "signal", "signal"].tolist() == ["SIGTERM"]
    assert ev.loc[ev["kind"] == "exit", "exit_code"].tolist() == [0]
    assert not ev["message"].str.contains("handler installed").any()


def test_a_watchdogs_escalation_its_exit_statuses_and_its_starts_name_their_process(tmp_path):
    """A stall watchdog's own lines (tests/model/fixtures/stall-watchdog-cpu): the escalation that
    names its process first (`26117 still alive after 15s, sending SIGKILL`) is a kill sent to it;
    `26117 exited (status 137)` and `train.py finished (status 0)` are statuses, the first of that
    PID; `started train.py pid 27740 (--resume)` a supervisor's start. A date's numbers before
    them are no PID, nor is a count in other words (`3 workers still running`)."""
    ev = _events_of(tmp_path,
        "2026-12-06 17:52:42 watchdog: started train.py pid 26117 (--fault-at-step 820)\n"
        "2026-12-06 17:55:17 watchdog: 26117 still alive after 15s, sending SIGKILL\n"
        "2026-12-06 17:55:17 watchdog: 26117 exited (status 137)\n"
        "2026-12-06 17:55:17 watchdog: started train.py pid 27740 (--resume)\n"
        "2026-12-06 17:56:37 watchdog: train.py finished (status 0), exiting\n"
        "2026-12-06 17:56:38 pool: 3 workers still running\n")
    sent = ev[ev["kind"] == "kill_sent"]
    assert (sent["target_pid"].tolist(), sent["signal"].tolist()) == ([26117], ["SIGKILL"])
    exits = ev[ev["kind"] == "exit"]
    assert exits["exit_code"].tolist() == [137, 0] and exits["pid"].iloc[0] == 26117 and pd.isna(exits["pid"].iloc[1])
    starts = ev[ev["kind"] == "attempt_start"]
    assert (starts["pid"].tolist(), starts["program"].tolist()) == ([26117, 27740], ["train.py", "train.py"])
    assert len(ev) == 5


def test_an_interrupt_the_trainer_took_is_its_own_kind_and_no_error(tmp_path):
    """Ctrl-C as trainers tell it: Python's KeyboardInterrupt (a traceback's last line: the
    traceback is one event, the interrupt it states another), Lightning's graceful shutdown, a
    loop's own `interrupted at step N` (tests/model/fixtures/ctrlc-sweep-cpu). `Training
    interrupted` stays the run's stop line; an interrupted system call is neither."""
    ev = _events_of(tmp_path,
        "Traceback (most recent call last):\n"
        '  File "train.py", line 80, in <module>\n'
        "    loss.backward()\n"
        "KeyboardInterrupt\n"
        "2026-12-06 23:24:26,434 INFO interrupted at step 1376, saving checkpoint\n"
        "Detected KeyboardInterrupt, attempting graceful shutdown...\n"
        "2026-12-06 23:25:00,000 INFO Training interrupted\n"
        "OSError: [Errno 4] Interrupted system call\n")
    told = ev[ev["kind"] == "interrupt"]
    assert told["pattern"].tolist() == ["keyboard_interrupt", "interrupted_at", "keyboard_interrupt"]
    assert told["signal"].tolist()[0] == "SIGINT" and told["signal"].tolist()[2] == "SIGINT"
    assert ev.loc[ev["kind"] == "traceback", "pattern"].tolist() == ["KeyboardInterrupt"]
    assert ev.loc[ev["kind"] == "training_stop", "message"].str.contains("Training interrupted").all()
    assert not told["message"].str.contains("system call").any()


def test_a_rank_tag_after_the_time_is_the_rank_not_a_run(tmp_path):
    """A DDP trainer's logging format puts its rank after the time (`[rank1]`, no colon, as
    torchrun's prefix has one): both ranks' rows are the file's run, each with its rank."""
    p = tmp_path / "ddp.log"
    p.write_text("2026-12-07 07:03:31,920 [rank1] step 10 loss 0.200 12.4 it/s\n"
                 "2026-12-07 07:03:31,922 [rank0] step 10 loss 0.200 12.4 it/s\n"
                 "[rank0] step 20 loss 0.100\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pm.load_process_log(p).metrics
    loss = m[m["metric"] == "train/loss"]
    assert loss[["rank", "step"]].values.tolist() == [[1, 10], [0, 10], [0, 20]]
    assert set(loss["run"]) == {"ddp"}


def test_torch_multiprocessing_spawn_names_the_process_it_lost_and_those_it_stopped(tmp_path):
    """torch.multiprocessing.spawn's teardown, as torch 2.13 printed it on this machine (a
    process that raised, then one killed by SIGKILL; torch 1.x's wording for the second): the
    peer it stopped by PID, the failed process by its index (its rank), the traceback that
    follows `-- Process 1 terminated ...` as that rank's, the signal or status of its end."""
    ev = _events_of(tmp_path,
        "W1207 07:03:33.256000 26076 torch/multiprocessing/spawn.py:165] Terminating process 26079 via signal SIGTERM\n"
        "Traceback (most recent call last):\n"
        '  File "/tmp/spawn/sp.py", line 18, in <module>\n'
        "    mp.spawn(main, args=(sys.argv[1],), nprocs=2)\n"
        "torch.multiprocessing.spawn.ProcessRaisedException: \n"
        "\n"
        "-- Process 1 terminated with the following error:\n"
        "Traceback (most recent call last):\n"
        '  File "/tmp/spawn/sp.py", line 12, in main\n'
        "    raise torch.OutOfMemoryError(\"CUDA out of memory.\")\n"
        "torch.OutOfMemoryError: CUDA out of memory.\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL\n"
        "Exception: process 1 terminated with exit code 1\n")
    stopped = ev[ev["pattern"] == "spawn_terminating"]
    assert stopped[["kind", "pid", "signal", "by"]].values.tolist() == [["signal", 26079, "SIGTERM", "spawn"]]
    raised = ev[ev["pattern"] == "spawn_raised"]
    assert raised[["kind", "rank"]].values.tolist() == [["exit", 1]]
    child = ev[(ev["kind"] == "traceback") & (ev["pattern"] == "OutOfMemoryError")]
    assert child["rank"].tolist() == [1] and ev.loc[ev["kind"] == "oom", "rank"].tolist() == [1]
    parent = ev[ev["pattern"] == "ProcessRaisedException"]
    assert parent["rank"].isna().all()
    killed = ev[ev["pattern"] == "spawn_signalled"]
    assert killed[["kind", "rank", "signal"]].values.tolist() == [["killed", 0, "SIGKILL"]]
    exited = ev[ev["pattern"] == "spawn_exit"]
    assert exited[["kind", "rank", "exit_code"]].values.tolist() == [["exit", 1, 1]]


def test_mpirun_names_the_rank_that_ended_the_job(tmp_path):
    """Open MPI's words at a job's end (horovod #469, UNITER #31): the rank and its signal, that
    a status aborted the job, the first failed process's rank; `PID 0` is no PID."""
    ev = _events_of(tmp_path,
        "Primary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code. Per user-direction, the job has been aborted.\n"
        "mpirun noticed that process rank 7 with PID 0 on node n17 exited on signal 9 (Killed).\n"
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n"
        "\n"
        "  Process name: [[50371,1],0]\n"
        "  Exit code:    1\n")
    killed = ev[ev["pattern"] == "mpirun_signal"]
    assert killed[["kind", "rank", "signal", "host"]].values.tolist() == [["killed", 7, "SIGKILL", "n17"]]
    assert killed["pid"].isna().all()
    assert ev.loc[ev["pattern"] == "mpirun_nonzero", "kind"].tolist() == ["exit", "exit"]
    assert ev.loc[ev["pattern"] == "mpirun_first_failed", "rank"].tolist() == [0]


def test_docker_compose_labels_name_the_container_and_a_data_bar_is_no_training(tmp_path):
    """`docker compose up` puts each container's name before its lines (`train_2_1  | `, padded):
    the label is taken off and names the row's host; a bar that extracts a data set before
    training (DeepQA #72) gives no training step."""
    p = tmp_path / "compose.log"
    p.write_text("Attaching to docker_train_2_1\n"
                 "train_2_1  | Welcome to DeepQA v0.1 !\n"
                 "train_2_1  | Loaded cornell: 34991 words, 139979 QA\n"
                 "train_2_1  | Model creation...\n"
                 "train_2_1  | 2026-12-07 07:03:31 step 10 loss 0.200\n"
                 "train_2_1  |\n"
                 "train_2_1  | 2026-12-07 07:03:32 step 20 loss 0.100\n"
                 "train_2_1  | Traceback (most recent call last):\n"
                 "train_2_1  |   File \"main.py\", line 3, in <module>\n"
                 "train_2_1  | RuntimeError: boom\n"
                 "Extract conversations: 100%|##########| 83097/83097 [03:52<00:00, 357.28it/s]\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_process_log(p)
    loss = inc.metrics[inc.metrics["metric"] == "train/loss"]
    assert loss[["step", "value"]].values.tolist() == [[10, 0.2], [20, 0.1]]
    assert inc.metrics["step"].max() == 20  # the bar's 83097 is no step
    tb = inc.events[inc.events["kind"] == "traceback"]
    assert tb["pattern"].tolist() == ["RuntimeError"] and tb["host"].tolist() == ["train_2_1"]


def test_kubectl_logs_prefix_names_the_pod(tmp_path):
    """`kubectl logs --prefix` puts `[pod/NAME/CONTAINER] ` before each line: taken off, the pod
    is the row's host, and the traceback behind it is read whole."""
    ev = _events_of(tmp_path,
        "[pod/train-worker-0/pytorch] 2026-12-07 07:03:31 step 10 loss 0.200\n"
        "[pod/train-worker-0/pytorch] Traceback (most recent call last):\n"
        '[pod/train-worker-0/pytorch]   File "train.py", line 1, in <module>\n'
        "[pod/train-worker-0/pytorch] RuntimeError: CUDA error: an illegal memory access was encountered\n")
    tb = ev[ev["kind"] == "traceback"]
    assert tb[["pattern", "host"]].values.tolist() == [["RuntimeError", "train-worker-0"]]
    assert (ev["host"] == "train-worker-0").all()


def test_srun_task_lists_are_ranks():
    """srun's `tasks 0-1,4: Exited with exit code 1` names tasks 0, 1 and 4, its ranks; a span
    that runs backwards or names more tasks than a job has is none."""
    assert lp.task_ranks("0-1,4") == [0, 1, 4] and lp.task_ranks("3") == [3]
    assert lp.task_ranks("5-2") == [] and lp.task_ranks("0-99999") == []


def test_rays_word_that_a_worker_died_names_its_pid_and_exit_type(tmp_path):
    """The raylet's death of a worker under a task (ray release tests' TorchTrainer), an actor's
    (verl's WorkerDict), and Ray Train's `Worker 0 has failed.` (its rank)."""
    ev = _events_of(tmp_path,
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
        "the problem, check the logs for the dead worker. RayTask ID: ffff Worker ID: fead Node ID: 201f Worker IP "
        "address: 10.0.0.7 Worker port: 10046 Worker PID: 89513 Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Worker unexpectedly exits with a connection error code 2. End of file.\n"
        "(TorchTrainer pid=89392) Worker 0 has failed.\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: x\n")
    died = ev[ev["pattern"] == "ray_worker_died"]
    assert died[["kind", "pid", "reason", "by"]].values.tolist()[0] == ["exit", 89513, "SYSTEM_ERROR", "ray"]
    assert len(died) == 2 and died["reason"].tolist()[1] == "SYSTEM_ERROR"
    failed = ev[ev["pattern"] == "ray_train_worker_failed"]
    assert failed[["rank", "pid"]].values.tolist() == [[0, 89392]]
