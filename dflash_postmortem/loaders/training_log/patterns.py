"""The named pattern table for training logs: what a line means, and the literal that finds it.

Every pattern carries keywords: literals one of which every matching line contains (matched
without regard to case for a case-insensitive pattern). The scanner finds candidate lines with
one RE2 alternation of all keywords over a block's lines (pyarrow, ~250 MB/s; Python's `re` runs
the same alternation at ~10 MB/s, and one `bytes.find` pass per keyword at ~1.4 GB/s each caps
40 keywords near 35 MB/s) and runs the patterns' regexes only on those lines.

Three kinds of metric readers (docs/training-logs.md lists every form with an example line):
- `METRIC_PATTERNS`: one regex per format whose fields sit in a fixed order (dflash, torchtitan,
  nanoGPT, modded-nanogpt, TF per-step time);
- `FIELD_FORMATS`: formats printed as `key: value` fields between `|`, `,` or wide gaps
  (Megatron, nanotron, NeMo, fairseq, Transformer-XL, PaddleSeg, the torchvision/DeiT
  MetricLogger): the line is cut into fields and each known key maps to a metric, so a field
  added, moved or renamed by a new version costs nothing;
- HF Trainer dicts and tqdm bars (postfix keys in `BAR_POSTFIX`).
Values may carry thousands commas and the K/M/G/T suffixes of human-readable loggers (`14.2K`).

Event kinds (the `kind` column of events from logs, transcripts and process listings):

| kind | meaning |
| --- | --- |
| stage | a start-up stage: dataset / model loading, compile, checkpoint save, NCCL version and init |
| training_start / training_stop | the trainer says training started / stopped |
| warning | a warning line (`pattern` names known ones, e.g. fast_path_unavailable) |
| traceback | a whole Python traceback, one event, message = all its lines |
| nccl_timeout | the c10d watchdog caught a collective timeout, its follow-up exception, a heartbeat-monitor timeout or a stuck watchdog (`seq`, `op`, `timeout_ms`, `ran_ms`, `pg`, `group_rank`) |
| nccl_error | an `NCCL WARN` line and the `-> N` return trace that follows it on the same thread (`host`, `gpu`, `nccl_code`) |
| elastic_restart | torchelastic restarts or rendezvous-restarts the worker group |
| exit | a process exit with a code (`exit_code`): torchrun child failure and its ChildFailedError table entries, DeepSpeed launcher exit, exit=137 |
| killed | the shell that ran the trainer reporting it killed (`signal`): `Killed` or `Terminated` alone on a line |
| signal | a signal sent or received (`signal`, `pid`): elastic closing/death signals, DeepSpeed killing a subprocess |
| interrupt | the trainer says an interrupt stops it (`signal` where it names one): a `KeyboardInterrupt` (a traceback's last line, Lightning's `Detected KeyboardInterrupt, attempting graceful shutdown`), `interrupted at step 1376`, `interrupted by user` |
| interrupt_key | the terminal echoed Ctrl-C (`^C`) under a foreground command: the operator interrupted it (`presses`) |
| oom | CUDA or host out-of-memory (`gpu`, `requested_mib`, `capacity_mib`, `free_mib` where the message says them) |
| nohup | `nohup: ignoring input` (a detached launch wrote this log) |
| error | another ERROR-level line (glog `E`/`F` lines included) |
| progress | last state of a progress bar (redraws counted in the load report) |
| command | a shell command from a transcript (`output` column holds its output) |
| launch | a command that starts a trainer (`launcher`, `log_path`, `args`, `run`, `background`) |
| redirect_failed | the shell could not open a launch's redirect target |
| log_missing / file_missing | a check (cat, ls, tail) says the log / another file does not exist |
| process_count | `ps ... | grep ... | wc -l` answered a number (`count` column) |
| gpu_query | nvidia-smi answered inside a transcript (rows also land in `gpus`) |
| file_check | `ls -l` of a file: its size (`size_bytes` column) |
| disk_full | `df` (any form: `-h`, `-i`, `-T`, `-P`) showed a file system full (`path`: its mount point) |
| pid_file | a run's PID file names a process |
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ...errors import IncidentConfigError
from ...schema import LOSS, TOK_PER_S
from ...shell_words import SCRIPT_LINE, SCRIPT_LINE_KEYWORDS, STATUS_SIGNALS

# Thousands commas come in threes and the fraction needs its `.`: a looser `\d[\d,]*\.?\d*` could
# read a long digit (or `1,1,1`) run many ways and backtrack quadratically over it.
_NUM = r"[-+]?(?:\d+(?:,\d{3})*(?:\.\d*)?(?:[eE][-+]?\d+)?|nan|inf)"
_SUFFIX = {"k": 3, "K": 3, "M": 6, "G": 9, "T": 12, "P": 15, "B": 9}  # human-readable loggers' powers of ten


@dataclass(frozen=True)
class MetricPattern:
    name: str
    keyword: bytes
    regex: re.Pattern
    metrics: dict[str, str]  # named group -> metric key
    scale: dict[str, float] = field(default_factory=dict)
    sentinel: dict[str, float] = field(default_factory=dict)  # value that means "not measured"


def _metric(name, keyword, regex, metrics, **kw) -> MetricPattern:
    return MetricPattern(name, keyword.encode(), re.compile(regex), metrics, **kw)


METRIC_PATTERNS: tuple[MetricPattern, ...] = (
    _metric(
        "dflash", "tok/s",
        rf"\bstep (?P<step>\d+) loss (?P<loss>{_NUM}) tok/s (?P<tok>{_NUM})(?: queue (?P<queue>\d+))?",
        {"tok": TOK_PER_S, "loss": LOSS, "queue": "train/queue_depth"},
    ),
    _metric(
        "torchtitan", "tps:",
        rf"step:\s*(?P<step>\d+)\s+loss:\s*(?P<loss>{_NUM})(?:.*?grad_norm:\s*(?P<grad_norm>{_NUM}))?"
        rf".*?tps:\s*(?P<tps>{_NUM})(?:\s+tflops:\s*(?P<tflops>{_NUM}))?(?:\s+mfu:\s*(?P<mfu>{_NUM})%)?",
        {"tps": TOK_PER_S, "loss": LOSS, "tflops": "train/tflops",
         "mfu": "train/mfu_pct", "grad_norm": "train/grad_norm"},
    ),
    _metric(
        "nanogpt", "iter ",
        rf"\biter (?P<step>\d+): loss (?P<loss>{_NUM}), time (?P<ms>{_NUM})ms(?:, mfu (?P<mfu>{_NUM})%)?",
        {"loss": LOSS, "ms": "train/iter_time_ms", "mfu": "train/mfu_pct"},
        sentinel={"mfu": -100.0},
    ),
    _metric(
        "nanogpt_eval", "val loss",
        rf"\bstep (?P<step>\d+): train loss (?P<train>{_NUM})(?: [A-Za-z]+)?, val loss (?P<val>{_NUM})",  # ` BPC`
        {"train": "eval/train_loss", "val": "eval/val_loss"},
    ),
    _metric(
        "modded_nanogpt", "step_avg:",
        rf"\bstep:(?P<step>\d+)/\d+(?: val_loss:(?P<val>{_NUM}))? train_time:(?P<tt>{_NUM})ms step_avg:(?P<avg>{_NUM})ms",
        {"avg": "train/step_avg_ms", "tt": "train/train_time_ms", "val": "eval/val_loss"},
    ),
    # DeepSpeed's engine (`log_dist`), its ThroughputTimer (the `epoch=0/micro_step=10/` prefix
    # since 0.8, `0/20,` before), and its pipeline engine: fixed f-strings, one field order each.
    # The lr list holds one rate per parameter group: the first is the run's.
    _metric(
        "deepspeed_step", "skipped=",
        rf"\bstep=(?P<step>\d+), skipped=(?P<skipped>\d+), lr=\[(?P<lr>{_NUM})",
        {"skipped": "train/skipped_steps", "lr": "train/learning_rate"},
    ),
    _metric(
        "deepspeed_throughput", "SamplesPerSec=",
        rf"(?:global_step=|\b\d+/)(?P<step>\d+), (?:RunningAvgSamplesPerSec=(?P<avg>{_NUM}), )?"
        rf"(?:Curr)?SamplesPerSec=(?P<cur>{_NUM})(?:, MemAllocated=(?P<mem>{_NUM})GB, MaxMemAllocated=(?P<max>{_NUM})GB)?",
        {"cur": "train/samples_per_s", "avg": "train/samples_per_s_avg", "mem": "train/memory_allocated_mib",
         "max": "train/max_memory_mib"},
        scale={"mem": 1024.0, "max": 1024.0},  # DeepSpeed divides by 1024**3: GiB
    ),
    _metric(
        "deepspeed_pipe", "samples/sec:",
        rf"\bsteps: (?P<step>\d+) loss: (?P<loss>{_NUM})(?: .*?)? iter time \(s\): (?P<t>{_NUM}) samples/sec: (?P<sps>{_NUM})",
        {"loss": LOSS, "t": "train/step_time_s", "sps": "train/samples_per_s"},
    ),
    # timm's train.py: `Train: 0 [  50/10009 (  0%)]  Loss:  6.973588 (6.9921)  Time: 0.316s,  405.65/s
    # (0.344s,  371.84/s)  LR: 5.000e-07  Data: 0.006 (0.033)`: the value, then the running average
    # in brackets; the rate is samples a second over every rank; epochs count from 0
    _metric(
        "timm", "Train: ",
        rf"\bTrain: (?P<epoch>\d+) \[\s*(?P<i>\d+)/(?P<per_epoch>\d+) \(\s*\d+%\)\]\s+Loss:\s+(?P<loss>{_NUM}) \({_NUM}\)"
        rf"\s+Time:\s+(?P<t>{_NUM})s,\s+(?P<rate>{_NUM})/s(?:.*?LR:\s+(?P<lr>{_NUM}))?",
        {"loss": LOSS, "t": "train/step_time_s", "rate": "train/samples_per_s", "lr": "train/learning_rate"},
    ),
    # pytorch/examples (MNIST and its many copies, Horovod's): `Train Epoch: 1 [640/60000 (1%)]\tLoss:
    # 0.453241`: the count is of samples seen, no step
    _metric(
        "pytorch_examples", "Train Epoch:",
        rf"\bTrain Epoch: \d+ \[\s*\d+/\d+ \(\s*\d+%\)\]\s+Loss: (?P<loss>{_NUM})",
        {"loss": LOSS},
    ),
    # TensorFlow's models (cifar10_train.py, inception's distributed trainer): `step 2340, loss =
    # 11.22 (2.0 examples/sec; 15.788 sec/batch)`, behind `INFO:tensorflow:Worker 0: <time>: ` in
    # the distributed one
    _metric(
        "tf_examples_per_sec", "examples/sec",
        rf"\bstep (?P<step>\d+), loss = (?P<loss>{_NUM})\s*\((?P<eps>{_NUM}) examples/sec; (?P<spb>{_NUM})\s+sec/batch\)",
        {"loss": LOSS, "eps": "train/samples_per_s", "spb": "train/step_time_s"},
    ),
    _metric(
        "tf_step_time", "per-step time",
        rf"\bStep (?P<step>\d+) per-step time (?P<t>{_NUM})s(?: loss=(?P<loss>{_NUM}))?",
        {"t": "train/step_time_s", "loss": LOSS},
    ),
)


@dataclass(frozen=True)
class FieldFormat:
    """A format printed as separate `key: value` / `key=value` / `key value` fields.

    `steps` find the step, the first that matches wins (group `step`, or `epoch`, `i` and
    `per_epoch` for loggers that count iterations within an epoch: step = (epoch - first_epoch)
    * per_epoch + i; `i` alone: the iteration within the epoch); `fields` maps a field's key
    (lower case, single spaces) to (metric, scale)."""

    name: str
    keyword: bytes
    steps: tuple[re.Pattern, ...]
    fields: dict[str, tuple[str, float]]
    separator: re.Pattern
    first_epoch: int = 0  # the number the logger gives its first epoch


_PIPES = re.compile(r"[|,]")
_GAPS = re.compile(r"\s{2,}")
_LOSS = (LOSS, 1.0)
_LR = ("train/learning_rate", 1.0)
_GRAD_NORM = ("train/grad_norm", 1.0)
_ITER_MS = ("train/iter_time_ms", 1.0)
# A time field's own unit wins over its format's scale: litgpt prints `iter time: 112.20 ms`,
# ArcticTraining `iter time: 1.038s` (and `0:01:03` past a minute, which is no number).
TIME_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0}  # seconds per unit
TIME_METRICS = {"train/iter_time_ms": 1e-3, "train/step_time_s": 1.0}  # seconds per metric unit


def field_scale(metric: str, scale: float, unit: str | None) -> float:
    """The factor from a field's printed value to its metric: the unit's, for a time in a known unit."""
    per_unit, per_metric = TIME_UNITS.get(unit or ""), TIME_METRICS.get(metric)
    return scale if per_unit is None or per_metric is None else per_unit / per_metric


def _fields(name, keyword, steps, fields, separator=_PIPES, first_epoch=0) -> FieldFormat:
    steps = (steps,) if isinstance(steps, str) else steps
    return FieldFormat(name, keyword.encode(), tuple(re.compile(s) for s in steps), fields, separator, first_epoch)


# A print-out of single blanks (`step 10 loss 0.200 12.4 it/s`) cut where a number ends and another
# field begins: a word with its number, or a number
_NUMBER_ENDS = r"(?<=\d)\s(?=(?:[A-Za-z_][\w./]*(?:\s*[:=]\s*|\s))?[-+]?(?:\.?\d|nan\b|inf\b))"

FIELD_FORMATS: tuple[FieldFormat, ...] = (
    _fields("megatron", "elapsed time per iteration", r"iteration\s+(?P<step>\d+)\s*/\s*\d+", {
        "elapsed time per iteration (ms)": _ITER_MS,
        "elapsed time per iteration (s)": ("train/iter_time_ms", 1000.0),
        "throughput per gpu (tflop/s/gpu)": ("train/tflops_per_gpu", 1.0),
        "tflops": ("train/tflops_per_gpu", 1.0),
        "samples per second": ("train/samples_per_s", 1.0),
        "tokens per second": (TOK_PER_S, 1.0),
        "lm loss": _LOSS, "lm_loss": _LOSS, "learning rate": _LR, "grad norm": _GRAD_NORM,
        "samples/sec": ("train/samples_per_s", 1.0), "approx flops per gpu": ("train/tflops_per_gpu", 1e-12),  # Megatron-DeepSpeed: `112.9TFLOPS`, the T read as 1e12
        "consumed samples": ("train/consumed_samples", 1.0), "consumed tokens": ("train/consumed_tokens", 1.0),
        "global batch size": ("train/global_batch_size", 1.0), "loss scale": ("train/loss_scale", 1.0),
        "number of skipped iterations": ("train/skipped_steps", 1.0),
        "number of nan iterations": ("train/nan_iterations", 1.0),
    }),
    _fields("nanotron", "tokens_per_sec", r"iteration: (?P<step>\d+) / \d+", {
        "tokens_per_sec": (TOK_PER_S, 1.0),
        "tokens_per_sec_per_gpu": ("train/tok_per_s_per_gpu", 1.0),
        "elapsed_time_per_iteration_ms": _ITER_MS,
        "model_tflops_per_gpu": ("train/tflops_per_gpu", 1.0),
        "lm_loss": _LOSS, "lr": _LR, "grad_norm": _GRAD_NORM,
    }),
    _fields("nemo", "train_step_timing", r"global_step: (?P<step>\d+)", {
        "train_step_timing in s": ("train/step_time_s", 1.0),
        "reduced_train_loss": _LOSS, "lr": _LR,
    }),
    _fields("transformer_xl", "ms/batch", r"\bstep\s+(?P<step>\d+)", {
        "ms/batch": _ITER_MS, "loss": _LOSS, "lr": _LR,
        "ppl": ("train/ppl", 1.0), "bpc": ("train/bpc", 1.0),
    }),
    # its evaluation between them: `| Eval  22 at step    88000 | time: 1994.60s | valid loss  3.58 | valid ppl    35.821`
    _fields("transformer_xl_eval", "valid loss", r"^\|\s*Eval\s+\d+ at step\s+(?P<step>\d+)", {
        "valid loss": ("eval/val_loss", 1.0), "valid ppl": ("eval/val_ppl", 1.0), "valid bpc": ("eval/val_bpc", 1.0),
    }),
    # fairseq: `| epoch 009:   1000 / 2737 loss=6.220, ..., wps=12800, num_updates=22897`, its
    # epoch summary `| epoch 008 | loss 6.326 | ... | wps 12876 | num_updates 21896`, and the
    # 2018 form `| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962`
    _fields("fairseq", "wps", (r"num_updates[= ](?P<step>\d+)", r"epoch \d+:?\s+(?P<i>\d+) / \d+"), {
        "wps": ("train/words_per_s", 1.0), "loss": _LOSS, "lr": _LR, "gnorm": _GRAD_NORM,
    }),
    _fields("paddle", "ips:", r"iter:\s*(?P<step>\d+)/\d+", {
        "ips": ("train/samples_per_s", 1.0), "loss": _LOSS, "lr": _LR,
        "batch_cost": ("train/step_time_s", 1.0),
    }),
    # verl (volcengine/verl): a step's metrics on one line behind Ray's actor tag, `step:60 -
    # actor/pg_loss:-0.0036 - ... - timing_s/step:45.21 - perf/throughput:620.62` (tokens a second
    # per GPU), its SFT trainer `step:2 - train/loss:1.0065 - train/lr(1e-3):0.00054`; numpy values
    # printed as `np.float64(0.3165)` are no number to the field regex and are left out
    _fields("verl", "step:", r"^step:(?P<step>\d+) - ", {
        "perf/throughput": ("train/tok_per_s_per_gpu", 1.0), "timing_s/step": ("train/step_time_s", 1.0),
        "perf/time_per_step": ("train/step_time_s", 1.0), "perf/total_num_tokens": ("train/step_tokens", 1.0),
        "perf/max_memory_allocated_gb": ("train/max_memory_mib", 1024.0),
        "train/loss": _LOSS, "val/loss": ("eval/val_loss", 1.0),
        **{k: (k, 1.0) for k in ("actor/pg_loss", "actor/entropy", "actor/grad_norm", "actor/ppo_kl", "critic/vf_loss",
                                  "critic/score/mean", "critic/rewards/mean", "response_length/mean")},
    }, separator=re.compile(r" - ")),
    # `key=value` print-outs: EAGLE/DFlash drafter trainers (acceptance), accelerate and custom
    # loops: `epoch=0 step=94 train_loss=6.39 train_acc=0.08 train_tau_sim=1.15 lr=4.6e-05`
    _fields("key_value", "step=", r"\bstep=(?P<step>\d+)", {
        "loss": _LOSS, "train_loss": _LOSS, "acc": ("train/acc", 1.0), "train_acc": ("train/acc", 1.0),
        "tau": ("train/accept_len", 1.0), "train_tau_sim": ("train/accept_len", 1.0),
        "accept_len": ("train/accept_len", 1.0), "lr": _LR, "grad_norm": _GRAD_NORM,
        "tokens_per_sec": (TOK_PER_S, 1.0), "tok_per_s": (TOK_PER_S, 1.0),
        "tps": (TOK_PER_S, 1.0),
    }, separator=re.compile(r"\s*\|\s*|(?<![\s,]),?\s++(?=[A-Za-z_][\w./]*=)")),  # a blank run tried once
    # torchtune's StdoutLogger / DiskLogger: `Step 1 | loss:2.0853 lr:2e-05 tokens_per_second_per_gpu:57.8`
    _fields("torchtune", "Step ", r"^Step (?P<step>\d+) \|", {
        "loss": _LOSS, "lr": _LR, "grad_norm": _GRAD_NORM,
        "tokens_per_second_per_gpu": ("train/tok_per_s_per_gpu", 1.0),
    }, separator=re.compile(r"\s*\|\s*|\s+(?=[A-Za-z_][\w./]*:)")),
    # litgpt: `Epoch 34 | iter 3050700 step 610140 | loss train: 2.846, val: 2.861 | iter time:
    # 112.20 ms (step) remaining time: 0:01:54` (lit-gpt 2023: `iter 0 step 1: loss 10.9, iter
    # time: 1565.57ms (optimizer.step)`); `step` counts optimizer steps, `iter` micro-batches
    _fields("litgpt", "iter time:", r"(?i)\bstep (?P<step>\d+)", {
        "loss train": _LOSS, "loss train (curr)": _LOSS, "loss": _LOSS, "val": ("eval/val_loss", 1.0),
        "iter time": _ITER_MS,
    }, separator=re.compile(r"[|,]|\s(?=remaining time:)")),
    # YOLOX's trainer (loguru): `yolox.core.trainer:259 - epoch: 1/100, iter: 240/983, mem: 7746Mb,
    # iter_time: 8.711s, data_time: 8.409s, total_loss: 5.8, iou_loss: 2.9, ..., lr: 2.384e-05,
    # size: 512, ETA: 5 days, 2:29:49`; epochs and iterations count from 1, the times are the
    # averages over the lines' interval, `mem` the peak MiB allocated (tried before ArcticTraining's and
    # detectron2's, whose `iter:` it holds)
    _fields("yolox", "iter_time:", r"\bepoch: (?P<epoch>\d+)/\d+, iter: (?P<i>\d+)/(?P<per_epoch>\d+)", {
        "iter_time": ("train/step_time_s", 1.0), "data_time": ("train/data_time_s", 1.0),
        "total_loss": _LOSS, "lr": _LR, "mem": ("train/max_memory_mib", 1e-6),  # `7746Mb`: the M read as 1e6
    }, separator=re.compile(r",\s*"), first_epoch=1),
    # ArcticTraining (speculator / SwiftKV trainers), every rank printing its own line: `iter:  130/3000
    # 4% | loss: 16.5469 | iter time: 1.038s | iter tflops: 909.8 | lr: 8.667E-04 | seqlen: 16.38K |
    # step time: 0.996s | step tflops: 947.4 | epoch: 0 | MA 2.84 GB | Max_MA 28.95 GB | NV 51.92 GB`
    _fields("arctic_training", "iter:", r"(?<![\w/])iter:\s*(?P<step>\d+)/\d+", {
        "loss": _LOSS, "iter time": _ITER_MS, "iter tflops": ("train/tflops", 1.0), "lr": _LR,
        "step time": ("train/step_time_s", 1.0),
    }),
    # MaxText: `completed step: 9, seconds: 1.341, TFLOP/s/device: 257.929, Tokens/s/device: 36653.244, loss: 0.000`
    _fields("maxtext", "completed step:", r"completed step: (?P<step>\d+)", {
        "seconds": ("train/step_time_s", 1.0), "tflop/s/device": ("train/tflops_per_gpu", 1.0),
        "tokens/s/device": ("train/tok_per_s_per_gpu", 1.0), "loss": _LOSS,
    }),
    # NVIDIA DLLogger's stdout backend (DeepLearningExamples): `DLL 2022-04-05 05:10:36.324733 -
    # Training Epoch: 0 Training Iteration: 651  step_loss : 2.05  learning_rate : 2.9e-05`, or
    # a `(epoch, iteration)` step: `DLL ... - (1, 20) train.loss : 2.3  train.total_ips : 1234.5 img/s`
    _fields("dllogger", "DLL ", (r"Training Iteration: (?P<step>\d+)", r"^DLL [\d: .-]+ - \(\d+, (?P<i>\d+)\)"), {
        "step_loss": _LOSS, "loss": _LOSS, "train.loss": _LOSS, "learning_rate": _LR, "lr": _LR,
        "train.total_ips": ("train/samples_per_s", 1.0),
        "training_sequences_per_second": ("train/samples_per_s", 1.0),
    }, separator=_GAPS),
    # OpenMMLab (mmcv's TextLoggerHook, MMEngine): `Epoch [1][25/612]\tlr: 0.00000, eta: 0:20:40,
    # time: 1.515, data_time: 0.671, memory: 8436, loss: 0.9603`, `Iter [15750/87900]\tlr: ...`,
    # MMEngine `Epoch(train) [1][ 50/938]  lr: 1.0000e-02  eta: 0:06:54  time: 0.0366 ...`;
    # epochs count from 1, `time` is seconds per iteration, `memory` the peak MiB allocated
    _fields("mmcv", "eta:", (r"\bIter(?:\(train\))? \[\s*(?P<step>\d+)/\d+\]",
                            r"\bEpoch(?:\(train\))? \[(?P<epoch>\d+)\]\[\s*(?P<i>\d+)/(?P<per_epoch>\d+)\]"), {
        "lr": _LR, "time": ("train/step_time_s", 1.0), "data_time": ("train/data_time_s", 1.0),
        "memory": ("train/max_memory_mib", 1.0), "loss": _LOSS, "grad_norm": _GRAD_NORM,
    }, separator=re.compile(r"[,\t]|\s{2,}"), first_epoch=1),
    # BasicSR (and its forks: Real-ESRGAN, GFPGAN, HAT, ...) MessageLogger: `[train..][epoch:  0,
    # iter:   1,000, lr:(1.000e-04,)] [eta: 1 day, 2:41:39, time (data): 0.123 (0.001)] l_pix:
    # 1.2345e-02 l_percep: 3.1e+00`, before 2020 `<epoch: 86, iter: 107,200, lr:2.500e-05> l_g_pix: ...`;
    # the iteration is printed with thousands commas, one learning rate per optimizer (the first is
    # the generator's), `time` in seconds per iteration, and every loss under its own `l_*` name (a
    # GAN logs several: none of them is the loss)
    _fields("basicsr", ", iter:", r"[\[<]epoch:\s*\d+,\s*iter:\s*(?P<step>\d{1,3}(?:,\d{3})*)\b", {
        "lr": _LR, "time (data)": ("train/step_time_s", 1.0), "l_total": (LOSS, 1.0), "l_all": (LOSS, 1.0),
        # its validation line, the run's evaluation: `<epoch: 16, iter:   4,000> psnr: 3.2174e+01. ssim: 8.1106e-01.`
        "psnr": ("eval/psnr", 1.0), "ssim": ("eval/ssim", 1.0),
        **{k: (f"train/{k}", 1.0) for k in (
            "l_pix", "l_percep", "l_style", "l_fft", "l_g_pix", "l_g_fea", "l_g_percep", "l_g_gan", "l_g_total",
            "l_d_real", "l_d_fake", "l_d", "l_identity")},
    }, separator=re.compile(r"\]\s*\[|[\]>]\s*|,\s+(?=[a-z])|\s+(?=[A-Za-z_]\w*:\s)|,\)|(?<=\d),(?=[\d.])")),
    # mlx-lm / mlx-vlm LoRA and full fine-tuning, the unit before the value: `Iter 18: Train loss
    # 10.059, Learning Rate 1.000e-04, It/sec 0.468, Tokens/sec 213.130, Trained Tokens 3778.0,
    # Peak mem 4.974 GB` (GB of 10^9 bytes)
    _fields("mlx_lm", "Tokens/sec", r"^Iter (?P<step>\d+): Train loss", {
        "train loss": _LOSS, "learning rate": _LR, "it/sec": ("train/it_per_s", 1.0),
        "tokens/sec": (TOK_PER_S, 1.0), "peak mem": ("train/max_memory_mib", 1e9 / 2**20),
    }),
    # detectron2's CommonMetricPrinter: `[04/17 09:42:26 d2.utils.events]:  eta: 0:10:00  iter: 19
    # total_loss: 1.234  loss_cls: 0.5  ...  time: 0.5012  last_time: 0.4998  data_time: 0.0123
    # last_data_time: 0.0101  lr: 0.00039962  max_mem: 2345M` (seconds an iteration; MiB printed as M)
    _fields("detectron2", "data_time:", r"\biter: (?P<step>\d+)\b", {
        "total_loss": _LOSS, "time": ("train/step_time_s", 1.0), "data_time": ("train/data_time_s", 1.0),
        "lr": _LR, "max_mem": ("train/max_memory_mib", 1e-6),
        **{k: (f"train/{k}", 1.0) for k in ("loss_cls", "loss_box_reg", "loss_mask", "loss_rpn_cls", "loss_rpn_loc")},
    }, separator=_GAPS),
    # torchvision / DeiT / MAE MetricLogger: `Epoch: [2]  [1480/1504]  ...  time: 4.3713  max mem: 51710`
    _fields("metric_logger", "max mem:", r"Epoch: \[(?P<epoch>\d+)\]\s+\[\s*(?P<i>\d+)/(?P<per_epoch>\d+)\]", {
        "time": ("train/step_time_s", 1.0), "loss": _LOSS, "closs": _LOSS, "lr": _LR,
        "grad_norm": _GRAD_NORM, "max mem": ("train/max_memory_mib", 1.0),
    }, separator=_GAPS),
    # CenterNet's progress bar (the `progress` package's Bar, its suffix fields joined by `|`):
    # `ctdet/coco_dla |####   | train: [54][4784/14785]|Tot: 1:20:53 |ETA: 6:14:23 |loss 1.7448 |hm_loss
    # 1.3093 |... |Data 3.556s(0.517s) |Net 1.014s`; epochs count from 1, `Data` a batch's loading
    # seconds (its running average after it), `Tot` the epoch's elapsed time
    _fields("centernet", "|Tot:", r"\b(?:train|val): \[(?P<epoch>\d+)\]\[(?P<i>\d+)/(?P<per_epoch>\d+)\]", {
        "loss": _LOSS, "data": ("train/data_time_s", 1.0),
    }, separator=re.compile(r"\|"), first_epoch=1),
    # pytorch/examples' ProgressMeter (the ImageNet example and the trainers copied from it: MoCo,
    # HRNet, ...), its entries joined by tabs, each value with its running average: `Epoch:
    # [0][  10/5005]\tTime  0.222 ( 0.512)\tData  0.001 ( 0.283)\tLoss 6.9062e+00 (6.9315e+00)`,
    # `Epoch: [19][300/7922]\tTime: 0.630s (0.682s)\tSpeed: 12.7 samples/s`; or by blanks before
    # a key (`[Train] Epoch: [1][371/4899]  Loss:0.380 (Avg 0.412)`). `Time` is the batch's seconds.
    _fields("progress_meter", "Epoch: [", r"\bEpoch: \[(?P<epoch>\d+)\]\[\s*(?P<i>\d+)/(?P<per_epoch>\d+)\]", {
        "time": ("train/step_time_s", 1.0), "data": ("train/data_time_s", 1.0), "loss": _LOSS, "lr": _LR,
        "speed": ("train/samples_per_s", 1.0),  # HRNet's: `Speed: 12.7 samples/s`
    }, separator=re.compile(r"\t|\s{2,}(?=[A-Za-z])|" + _NUMBER_ENDS)),  # (CGCNN's `\t Loss 0.5117 MAE 0.6075`)
)

# The last resort for a trainer's own print-out (`ep: 0, batch: 20, time: 9.17, loss: 10.98`):
# a step-like counter and a `loss` field give train/loss; tried after every named format and the
# incident's own patterns, and never for throughput (a unit-less number is not guessed at).
GENERIC_LOSS = _fields(
    "generic_loss", "loss",
    # (`Steps: 95` too: Coqui STT's `Epoch 0 | Training | Elapsed Time: 0:00:15 | Steps: 95 | Loss: 24.19`)
    # (not `words/batch 906`; not a count rounded to thousands, `Step: 423k`)
    # (and in brackets, as a fraction: `Step [1/5]`)
    r"(?<![/\w])(?:global_step|[Ss]teps?|iter|iteration|batch|it)(?:\s*[:=#]\s*|\s*\[\s*|\s*)(?P<step>\d+)(?![\dkKM])",
    # (`losses` and `total_loss`: the sum a trainer of several losses prints beside them)
    {"loss": _LOSS, "train_loss": _LOSS, "train loss": _LOSS, "losses": _LOSS, "total_loss": _LOSS,
     "lr": _LR, "learning_rate": _LR, "learning rate": _LR},
    separator=re.compile(r"[,|\t]|\s{2,}|" + _NUMBER_ENDS),
)
# Its keywords: `loss` and a capital's `Loss: 24.19` (a field's key is read in any case)
GENERIC_KEYWORDS = (GENERIC_LOSS.keyword, b"Loss")

# Loggers that print a step's metrics as a block: a header that names the step (OLMo's `[step=2/739328]`,
# Composer's `[batch=20/20]:`), then one field per indented line, its key a path as wandb's are
# (`    train/CrossEntropyLoss=10.73`, `\t Train throughput/tokens_per_sec: 222.2194`, OLMo-core's
# `    throughput/device/TPS=258,163`). A field takes the step of the last header of its rank; with
# no header before it, only a key of BLOCK_FIELDS is read (a configuration printed as indented
# `key: value` lines is no metric).
STEP_HEADER = re.compile(r"\[(?:step|batch)=(?P<step>\d+)(?:/\d+)?[,\]]")
STEP_HEADER_KEYWORDS = ("[step=", "[batch=")
BLOCK_FIELD = re.compile(
    r"^\s+(?:(?P<phase>Train|Eval) )?(?P<key>[A-Za-z][\w.()@-]*(?: [\w.()@-]+)*(?:/[\w.()@-]+(?: [\w.()@-]+)*)+)"
    rf"\s*[=:]\s*(?P<value>{_NUM}[kKMGTPB]?)\s*$"
)
BLOCK_FIELD_KEYWORDS = ("train/", "throughput/", "optim/", "System/", "Train ", "eval/", "Eval ")
BLOCK_FIELDS = {
    "train/crossentropyloss": LOSS, "train/ce loss": LOSS, "loss/train/total": LOSS,
    "throughput/tokens_per_sec": TOK_PER_S,
    "throughput/device/tokens_per_second": "train/tok_per_s_per_gpu",
    "throughput/device/tokens_per_sec": "train/tok_per_s_per_gpu", "throughput/device/tps": "train/tok_per_s_per_gpu",
}

# Keras's progress lines: `Epoch 3/50` on its own line, then the epoch's bar, `1464/1464
# [==============================] - 239s - loss: 3.31 - acc: 0.15` (Keras 2), with the time a step
# took since 2.1 (`- 252s 345ms/step -`, `- 3s 55us/step -`), without the bar at `verbose=2`
# (`3198/3198 - 2287s - loss: ...`), mid-epoch with what is left (`39/100 [=====>....] - ETA: 29s -
# loss: ...`), and Keras 3's `1875/1875 ━━━━━━━━━━━━━━━━━━━━ 3s 1ms/step - accuracy: 0.88 - loss: 0.43`
# (its time the ETA until the epoch ends). The count is the batch within the epoch: a step is
# (epoch - 1) * batches + batch where the epoch's line came before it.
KERAS_EPOCH = re.compile(r"(?<!\S)Epoch (?P<epoch>\d+)/\d+\s*$")
KERAS_EPOCH_KEYWORD = "Epoch "
KERAS_LINE = re.compile(
    # (each run of blanks has one place in it: a blank run split two ways backtracks quadratically)
    r"(?<![\w/.:])(?P<i>\d+)/(?P<per_epoch>\d+) +(?:\[[=>.]*\] +|[\u2501\u2500]+ +)?(?:- )?"
    r"(?:ETA: [\d:]+s? +|(?P<took>\d+)s +)?(?:(?P<per>\d+(?:\.\d+)?)(?P<unit>us|ms|s)/(?P<of>step|sample) +)?"
    r"- (?P<fields>[A-Za-z_]\w*: .*)$"
)
KERAS_KEYWORD = " - "
KERAS_FIELDS = {"loss": LOSS, "val_loss": "eval/val_loss", "acc": "train/acc", "accuracy": "train/acc",
                "val_acc": "eval/val_acc", "val_accuracy": "eval/val_acc", "lr": "train/learning_rate",
                "learning_rate": "train/learning_rate"}
KERAS_FIELD = re.compile(rf"^(?P<key>[A-Za-z_]\w*): (?P<value>{_NUM})\s*$")
KERAS_STEP_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}  # seconds per unit

# Rates and times that say what they are by their unit (`1.2k tok/s`, `85 ms/step`), whatever else
# the line holds: read with the last resort, a throughput only where a unit names it. (A unit
# after a loss, `12.65 BPC`, is read by the field readers as the loss's unit.)
UNIT_KEYWORDS = ("tok/s", "tokens/s", "token/s", "tokens/sec", "samples/s", "samples/sec", "sample/s",
                 "ms/it", "ms/step", "ms/iter", "steps/s")
UNIT_VALUE = re.compile(
    rf"(?<![\w.])(?P<value>{_NUM})\s?(?P<mult>[kKM](?![a-zA-Z]))?\s?"
    r"(?P<unit>tok(?:en)?s?/s(?:ec)?|samples?/s(?:ec)?|ms/(?:it|step|iter)|steps/s(?:ec)?)\b"
)
# (a trainer's own `Speed: 15.53 steps/sec` is kept as it said it, not as the pace the kit measures
# from the steps' times: model/pace.py)
UNIT_METRICS = {"tok": (TOK_PER_S, 1.0), "sam": ("train/samples_per_s", 1.0), "ms/": ("train/iter_time_ms", 1.0),
                "ste": ("train/said_steps_per_s", 1.0)}

# One field: a key (words), `:`/`=`/spaces, a number with an optional unit, an optional
# `(running average)`, at the end of the field. A tuple's first value counts (BasicSR's
# `lr:(1.000e-04,)`, cut at its commas by that format's separator).
FIELD = re.compile(
    rf"(?P<key>[A-Za-z_][\w./()%-]*(?: [A-Za-z_(][\w./()%-]*)*)(?:\s*[:=]\s*\(?|\s+)"
    rf"(?P<value>{_NUM}[kKMGTB]?)\s*(?P<unit>%|[A-Za-z/]+)?\s*(?:\([^()]*\))?\.?\s*$"  # (a sentence's `.`: `psnr: 3.2174e+01.`)
)

# A field's key as FIELD finds it where the field before holds no number but `nan` or `inf`
# (`loss_mse: nan losses: nan`): that value, a word to the key's regex, is no part of the key.
# (Taken off after the match: RE2, which reads the fields in bulk, has no lookahead to keep it out.)
NON_FINITE_KEY_WORD = r"^(?:nan|inf) "

# HF Trainer prints its log dict with Python repr: parsed with ast.literal_eval, numbers kept.
HF_DICT_KEYWORD = b"{'"
HF_DICT = re.compile(r"\{'[\w./-]+': [^{}]*\}")
# A dict is a Trainer log only if it holds one of these keys (every Trainer and TRL log dict has
# `epoch`): a config dict printed in a log (`learning_rate`, `vocab_size`) is not a metric.
HF_DICT_KEYS = {"loss", "eval_loss", "train_loss", "epoch", "train_runtime"}


def hf_metric_key(key: str) -> str:
    """A Trainer log key as a metric key: `eval_loss` is `eval/loss`, a key with a `/` (TRL's
    `rewards/chosen`) is kept, any other is under `train/` (`loss`, `learning_rate`, and the run's
    closing averages as `train/train_loss`, `train/train_runtime`: never mixed into the per-step
    series). Read alike from logs and from `trainer_state.json`'s log_history. A `/` in a unit is
    no path: ms-swift's `train_speed(iter/s)` is `train/train_speed(iter/s)`."""
    path = "/" in _UNIT_IN_KEY.sub("", key)
    return key if path else f"eval/{key[5:]}" if key.startswith("eval_") else f"train/{key}"


_UNIT_IN_KEY = re.compile(r"\([^()]*\)")

# A tqdm bar: `desc: 3%|▎  | 4/157 [00:59<37:27, 14.69s/it, k=v, ...]`. Colab drops the bar
# (`57% 4/7 [...]`) and a bar cleared to make room for a message keeps only `| 1/2538 [...]`.
# The regex finds the bar from its percentage on; its description is the text before it, back
# to a `(`, `)`, `;`, brace or 120 characters (text before that is a message, not the bar's).
# Matching the description in the regex made a long digit run cost cubic backtracking; every run
# of blanks has one place in the pattern for the same reason.
BAR_KEYWORDS = (b"it/s", b"s/it", b"batch/s", b"s/batch", b"step/s", b"s/step", b"s/epoch")
BAR = re.compile(
    r"(?:(?P<pct>\d{1,3})%[ \t]*)?(?:\|[^|\r\n]*\|[ \t]*|\|[ \t]*)?(?<![\d.])(?P<n>\d+)/(?P<total>\d+|\?)[ \t]*"
    r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+),\s*(?P<rate>[\d.]+|\?)(?P<unit>[a-zA-Z]*/s|s/[a-zA-Z]+)"
    r"(?P<postfix>(?:,[^\]\r\n]*)?)(?:\]|$)"  # a bar cut at the end of its line (wrapped, killed) still counts
)
_NOT_DESC = frozenset("|\r\n]();{}")


def bar_seconds(text: str) -> float | None:
    """A bar's elapsed time (`33`, `01:02`, `1:02:03`, as tqdm formats it) in seconds."""
    parts = text.split(":")
    if not all(p.isdigit() for p in parts) or len(parts) > 3:
        return None
    seconds = 0
    for p in parts:
        seconds = seconds * 60 + int(p)
    return float(seconds)
MAX_BAR_DESC = 120


@dataclass(frozen=True)
class Bar:
    """One tqdm bar state in a line: where it starts (its description) and ends, and its fields."""

    start: int
    bar_start: int  # where the percentage (or the count) starts
    end: int
    desc: str
    fields: dict


def find_bars(text: str) -> list[Bar]:
    out, since = [], 0
    for m in BAR.finditer(text):
        i = m.start()
        while i > since and m.start() - i < MAX_BAR_DESC and text[i - 1] not in _NOT_DESC:
            i -= 1
        out.append(Bar(i, m.start(), m.end(), text[i:m.start()], m.groupdict()))
        since = m.end()
    return out


# Postfix keys that carry a metric, and the bars that are not training (loading shards, maps).
# Lightning's bar shows what `self.log(..., prog_bar=True)` names (`train_loss`, `train_loss_step`
# when logged on step and epoch, `v_num` the logger's version, not a metric).
# Of two keys for one metric on one bar the first here is read: what the user logged for the step
# (`train_loss_step`, `train_loss`) before Lightning's own `loss`, its running mean over the last 20
# steps in versions before 1.5 (`loss=6.617, v_num=16, train_loss=5.91`: one loss at that step).
BAR_POSTFIX = {"tokens_per_sec": TOK_PER_S, "tok_per_s": TOK_PER_S, "train_loss_step": LOSS, "train_loss": LOSS,
               "loss_step": LOSS, "loss": LOSS, "lr": "train/learning_rate"}
NOT_TRAINING_BAR = re.compile(r"(?i)loading|download|map|token|shard|generat|fetch|process|eval|valid|chunk"
                              r"|\btest|\bprepar|\bpredict|\binfer"  # (Lightning's `Testing`, `Predicting DataLoader 0`)
                              # a data set made or written before training (`Extract conversations: 100%|...| 83097/83097`)
                              # (verbs, not nouns a message glued before a bar may hold: `cached`, `samples/s`)
                              r"|\bextract|\bconvert|\bbuild|\bfilter|\bparsing|\bencoding|\bresiz"
                              # (ms-swift's `Val:`, SRGAN's `[saving training results]`)
                              r"|\bval\b|\bsav(?:e|ing)\b")
# A bar over epochs (`231.64s/epoch`) is progress, not a per-iteration rate.
NOT_ITERATION_UNIT = re.compile(r"(?i)epoch")
# A bar that names its epoch (`Epoch 3/6:`, Lightning's `Epoch 0:`, `Training (epoch 0 / 20):`)
# counts its batches from 0 again each epoch (bars.py: its step in the run).
BAR_EPOCH = re.compile(r"(?i)\bepoch\s*(?P<epoch>\d+)(?:\s*/\s*(?P<epochs>\d+))?\b")


# -- events ---------------------------------------------------------------------------------------
def _signal_name(number: str) -> str | None:
    names = {"1": "SIGHUP", "2": "SIGINT", "3": "SIGQUIT", "6": "SIGABRT", "7": "SIGBUS", "9": "SIGKILL",
             "11": "SIGSEGV", "13": "SIGPIPE", "15": "SIGTERM"}
    number = number.lstrip("-")
    if number.startswith("SIG"):
        return number  # (named already: `received SIGTERM`)
    return names.get(number, f"signal {number}")


_INT64 = 2**63


def integer(text) -> int | None:
    """An integer a log prints (PID, step, exit code) if it fits a 64-bit column, else None."""
    if text is None:  # a group that did not match: most calls, and an exception costs more
        return None
    try:
        v = int(text)
    except (TypeError, ValueError):  # not a number, or more than 4300 digits
        return None
    return v if -_INT64 <= v < _INT64 else None


def _seconds_as_ms(text: str) -> int | None:
    v = integer(text)
    return integer(v * 1000) if v is not None else None


def mib(text: str | None) -> float | None:
    """`1.72 GiB`, `356.00 MiB`, `0 bytes` -> MiB."""
    if not text:
        return None
    value, _, unit = text.strip().partition(" ")
    scale = {"bytes": 1 / 2**20, "B": 1 / 2**20, "KiB": 1 / 1024, "KB": 1 / 1024, "MiB": 1.0, "MB": 1.0,
             "GiB": 1024.0, "GB": 1024.0, "TiB": 2**20, "TB": 2**20}.get(unit.strip())
    v = number(value)
    return None if scale is None or v != v else v * scale


# Named groups of event regexes -> (events column, conversion). One table: a group means the
# same column in every pattern.
EVENT_GROUPS: dict[str, tuple[str, Callable]] = {
    "code": ("exit_code", integer), "pid": ("pid", integer), "rank": ("rank", integer),
    "local_rank": ("local_rank", integer), "signal": ("signal", str), "signo": ("signal", _signal_name),
    "seq": ("seq", integer), "op": ("op", str), "timeout_ms": ("timeout_ms", integer), "ran_ms": ("ran_ms", integer),
    "stuck_s": ("ran_ms", _seconds_as_ms), "gpu": ("gpu", integer), "host": ("host", str),
    "nranks": ("nranks", integer), "nccl_code": ("nccl_code", integer),
    "req": ("requested_mib", mib), "cap": ("capacity_mib", mib), "free": ("free_mib", mib),
    "timeout_s": ("timeout_ms", _seconds_as_ms), "joined": ("clients_joined", integer),
    "world": ("world_size", integer), "addr": ("address", str), "reason": ("reason", str),
    "job": ("job", str), "granted": ("job", str), "step": ("step", str),
    "stepd_host": ("host", str), "attempt": ("attempt", integer), "task": ("rank", integer),
    "tasks": ("tasks", str), "ray_exit": ("reason", str), "at": ("at", str), "error_file": ("error_file", str), "log_dir": ("log_dir", str),
    "left": ("restarts_left", integer),
    "max_restarts": ("max_restarts", integer), "count": ("count", integer),
    "task_signal": ("signal", lambda text: STATUS_SIGNALS.get(text.lower())),
    "success": ("exit_code", lambda _text: 0),  # a launcher's word for a clean exit
    "program": ("program", str), "target": ("target_pid", integer), "outlived": ("target_pid", integer),
    "escalated": ("signal", str), "exited": ("pid", integer),
    "cuda_error": ("cuda_error", str), "signal_word": ("signal", lambda w: FAULTHANDLER_SIGNALS.get(w)),
}
# Columns some events carry beyond the canonical ones; integers are kept as nullable Int64.
EVENT_INT_COLUMNS = ("pid", "exit_code", "rank", "lines", "local_rank", "group_rank", "seq", "timeout_ms",
                     "ran_ms", "gpu", "nranks", "nccl_code", "attempt", "clients_joined", "world_size",
                     "restarts_left", "max_restarts", "count", "threads", "target_pid")


@dataclass(frozen=True)
class EventPattern:
    kind: str
    name: str
    keywords: tuple[str, ...]
    regex: re.Pattern
    case_insensitive_keyword: bool = False
    signal: str | None = None  # the signal the line means without naming it (`Killed`)
    what: str | None = None  # what waited, for a timeout (`gloo`, `store connect`, `slurm time limit`)
    by: str | None = None  # the launcher or scheduler that wrote the line (`torchrun`, `slurm`)


def _event(kind, name, keywords, regex, signal=None, what=None, by=None) -> EventPattern:
    kws = (keywords,) if isinstance(keywords, str) else tuple(keywords)
    return EventPattern(kind, name, kws, re.compile(regex), case_insensitive_keyword=regex.startswith("(?i)"),
                        signal=signal, what=what, by=by)


def _elastic(kind, name, keywords, regex, **kw) -> EventPattern:
    return _event(kind, name, keywords, regex, by="torchrun", **kw)


def _slurm(kind, name, keywords, regex, **kw) -> EventPattern:
    return _event(kind, name, keywords, regex, by="slurm", **kw)


_SIZE = r"[\d.]+ (?:[KMGT]i?B|bytes)"
# Every glog / c10 line names its source file (`ProcessGroupNCCL.cpp:607]`, `api.py:869]`): the
# literal that finds `E`/`W`/`F` lines, whose level letter alone is no usable keyword.
_GLOG_SOURCE = (".cpp:", ".py:", ".cc:")

# srun's word for how a task died: strsignal's text, as the shell prints it
_STATUS_WORDS = "|".join(sorted((re.escape(w) for w in STATUS_SIGNALS if w != "killed by signal"),
                                key=len, reverse=True))

# A shell's report alone on a line of how its child died, but those with patterns of their own
# (`Killed`, `Terminated`, `Segmentation fault`, ...) and the words no shell prints alone (`Interrupt`)
_SHELL_ALONE_WORDS = tuple(w for w, sig in STATUS_SIGNALS.items()
                           if sig and w not in ("killed", "terminated", "已杀死", "已终止", "interrupt", "broken pipe", "abort",
                                                "segmentation fault", "aborted", "bus error", "floating point exception",
                                                "illegal instruction"))
_SHELL_ALONE = "|".join(sorted((re.escape(w) for w in _SHELL_ALONE_WORDS), key=len, reverse=True))

# srun's word on a task (its Slurm task id is its rank) or a range of them
_SRUN_TASKS = r"^srun: error: (?P<host>[\w.-]+): (?:task (?P<task>\d+)|tasks (?P<tasks>[\d,-]+)): "
_TASK_SPAN = re.compile(r"(\d+)(?:-(\d+))?")
MAX_TASKS = 4096  # a task list longer than a job has ranks is no list of ranks


def task_ranks(tasks: str) -> list[int]:
    """The ranks srun's `tasks 0-1,4` names (its task ids are the ranks), in order."""
    ranks: list[int] = []
    for m in _TASK_SPAN.finditer(tasks):
        low, high = int(m.group(1)), int(m.group(2) or m.group(1))
        if high < low or len(ranks) + high - low >= MAX_TASKS:
            return []
        ranks += range(low, high + 1)
    return ranks

# -- process deaths: CUDA errors, faulthandler dumps (kept apart: other families add patterns above) --
# `CUDA error: an illegal memory access was encountered`, `... device-side assert triggered`, in a
# traceback's exception line, c10's glog line or a watchdog's message (`CUDA error: out of memory`
# is an OOM: the oom patterns come first); the shell's report of a death by signal written into a
# redirected log (`Segmentation fault (core dumped)`).
PROCESS_DEATH_PATTERNS: tuple[EventPattern, ...] = (
    _event("signal", "shell_signal_report", ("Segmentation fault", "Aborted", "Bus error", "Floating point", "Illegal instr"),
           r"^(?P<signal_word>Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction)"
           r"(?: \(core dumped\))?\s*$"),
    _event("error", "cuda_error", "CUDA error:", r"CUDA error: (?P<cuda_error>[A-Za-z][^.(\n]{0,200}?)\s*(?:[.(]|$)"),
    # the same error as PyTorch's THC said it before 1.x: `THCudaCheck FAIL file=... line=25 error=46 : all
    # CUDA-capable devices are busy or unavailable`
    _event("error", "cuda_error", "THCudaCheck FAIL", r"THCudaCheck FAIL\b.*?error=\d+ : (?P<cuda_error>[A-Za-z][^.(\n]{0,200}?)\s*(?:[.(]|$)"),
)
# The CUDA OOM message names the processes holding the GPU's memory (PyTorch >= 2.1): `Process 1234
# has 40.00 GiB memory in use.`, and this process's own share.
OOM_HOLDER = re.compile(rf"Process (?P<pid>\d{{1,10}}) has (?P<size>{_SIZE}) memory in use")
OOM_THIS_PROCESS = re.compile(rf"this process has (?P<size>{_SIZE}) memory in use")
# and, before PyTorch 2.1, what its caching allocator had reserved (`86.00 MiB reserved in total by PyTorch`)
OOM_RESERVED = re.compile(rf"(?P<size>{_SIZE}) reserved in total by PyTorch")
# Event patterns whose statement a traceback's exception line makes too (`torch.OutOfMemoryError:
# CUDA out of memory ...`, `RuntimeError: CUDA error: ...`): the traceback is one event, and what
# its last line states is another.
EXCEPTION_FACTS = ("triton_out_of_resource", "cuda_oom", "oom", "oom_error", "cuda_error", "keyboard_interrupt",
                   "spawn_signalled", "spawn_exit", "host_out_of_memory", "shared_memory_full", "tf_oom")

# faulthandler's dump of every thread's stack when Python dies of a signal (or on a timeout, or a
# registered signal): `Fatal Python error: Segmentation fault`, then `Current thread 0x... (most recent
# call first):` / `Thread 0x...`, each with `  File "x.py", line 12 in f`, Python 3.12's `Extension
# modules: ... (total: N)`. One event per dump.
FAULTHANDLER_KEYWORDS = ("Fatal Python error", "(most recent call first)", "Timeout (")
FAULTHANDLER_HEAD = re.compile(
    r"^(?:Fatal Python error: (?P<fatal>.+?)|Timeout \((?P<timeout>\d+:\d{2}:\d{2}(?:\.\d+)?)\)!|"
    r"(?P<current>Current )?[Tt]hread (?P<tid>0x[0-9a-fA-F]+) \(most recent call first\):|Stack \(most recent call first\):)\s*$")
FAULTHANDLER_THREAD = re.compile(r"^(?P<current>Current )?[Tt]hread (?P<tid>0x[0-9a-fA-F]+) \(most recent call first\):\s*$"
                                 r"|^Stack \(most recent call first\):\s*$")
FAULTHANDLER_FRAME = re.compile(r"^\s+(?:File \"(?P<file>[^\"]*)\", line (?P<line>\d+) in (?P<func>\S+)|<no Python frame>|\.\.\.|"
                                r"Garbage-collecting)\s*$")
FAULTHANDLER_TAIL = re.compile(r"^(?:Extension modules: .*|Python runtime state: .*)$")
# py-spy's `dump` of a live process (`py-spy dump --pid 46930`): `Process 46930: python main.py`,
# `Python v3.11.2 (...)`, then each thread, `Thread 46930 (idle): "MainThread"`, and its frames
# innermost first, `    wait (torch/utils/file_baton.py:42)`. One event per dump: where a process
# that was alive waited (a hang's place), no death.
PYSPY_KEYWORDS = ("Process ",)
PYSPY_HEAD = re.compile(r"^Process (?P<pid>\d+): (?P<command>\S.*)$")
PYSPY_THREAD = re.compile(r"^Thread (?P<tid>0x[0-9a-fA-F]+|\d+) \((?P<state>[\w+]+)\)(?:: \"(?P<name>[^\"]*)\")?\s*$")
PYSPY_FRAME = re.compile(r"^\s+(?P<func>\S+) \((?P<file>[^()]+?):(?P<line>\d+)\)\s*$")
PYSPY_OTHER = re.compile(r"^Python v\d[\d.]* \(.*\)\s*$|^\s+(?:Arguments|Locals)::?\s*$|^\s{8,}\w+: .*$")
# The fatal errors that are signals, in faulthandler's words.
FAULTHANDLER_SIGNALS = {"Segmentation fault": "SIGSEGV", "Aborted": "SIGABRT", "Bus error": "SIGBUS",
                        "Floating point exception": "SIGFPE", "Illegal instruction": "SIGILL"}


def oom_holders(text: str) -> str | None:
    """`1234: 40.00 GiB, 5678: 37.00 GiB`: the processes a CUDA OOM message says hold the GPU's memory."""
    found = [f"{m['pid']}: {m['size']}" for m in OOM_HOLDER.finditer(text)]
    return ", ".join(found) if found else None


def oom_holder_mib(text: str) -> float | None:
    """The most any one process a CUDA OOM message names holds, in MiB."""
    sizes = [v for m in OOM_HOLDER.finditer(text) if (v := mib(m["size"])) is not None]
    return max(sizes) if sizes else None


# Order matters: the first pattern matching a line names its event.
EVENT_PATTERNS: tuple[EventPattern, ...] = (
    _event("nohup", "nohup_ignoring_input", "nohup:", r"^nohup: (ignoring input|appending output)"),
    # c10d ProcessGroupNCCL watchdog, its follow-up, and the heartbeat monitor (PyTorch 1.x-2.x forms)
    _event("nccl_timeout", "nccl_watchdog", "Watchdog caught",
           r"Watchdog caught collective operation timeout(?:: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w++)"
           r"[^)]*?Timeout\(ms\)=(?P<timeout_ms>\d+)\)(?: ran for (?P<ran_ms>\d+) milliseconds)?)?"),
    _event("nccl_timeout", "nccl_watchdog_exception", "detected by watchdog",
           r"(?:Exception \(either an error or timeout\)|failure) detected by watchdog(?: at work(?: sequence id)?: (?P<seq>\d+))?"),
    _event("nccl_timeout", "nccl_heartbeat_timeout", "Heartbeat monitor timed out", r"Heartbeat monitor timed out"),
    _event("nccl_timeout", "nccl_watchdog_stuck", "watchdog got stuck",
           r"watchdog got stuck for (?P<stuck_s>\d+) seconds"),
    _event("nccl_timeout", "nccl_operations_failed", "Some NCCL operations have failed",
           r"Some NCCL operations have failed or timed out"),
    _event("nccl_timeout", "nccl_timeout_at_work", "Timeout at NCCL work",
           r"Timeout at NCCL work: (?P<seq>\d+)"),
    # gloo collectives and connections, the c10d store and torchelastic's rendezvous
    _event("timeout", "gloo_op_timeout", "Timed out waiting",
           r"Timed out waiting (?P<timeout_ms>\d+)ms for (?P<op>\w+) operation to complete", what="gloo"),
    _event("timeout", "gloo_connect_failed", "connectFullMesh failed",
           r"Gloo connectFullMesh failed with \[[^\]]*\] ?(?P<reason>[^\r\n]{0,200})", what="gloo connectFullMesh"),
    _event("timeout", "store_clients_timeout", ("clients joined", "workers joined"),
           r"Timed out after (?P<timeout_s>\d+) seconds waiting for (?:clients|workers)\. (?P<joined>\d+)/(?P<world>\d+)",
           what="store clients"),
    # a port another process holds (c10d's store, a rendezvous, a server the trainer opens)
    # (and a server's own words on its port: `The parameter \`port\`:52321 is already in use.`)
    _event("error", "port_in_use", ("already in use", "EADDRINUSE"),
           r"EADDRINUSE|[Aa]ddress already in use|\b[Pp]ort\b[^\n]{0,40}?\bis already in use"),
    _event("timeout", "store_connect_timeout", "has timed out after",
           r"socket has timed out after (?:(?P<timeout_ms>\d+)ms|(?P<timeout_s>\d+)s) while trying to connect to "
           r"\((?P<addr>[^()]{1,300})\)", what="store connect"),
    _event("timeout", "store_connect_retry_timeout", "timed out (try=",
           r"to connect/validate to host (?P<addr>\S+) - timed out \(try=\d+, timeout=(?P<timeout_ms>\d+)ms\)",
           what="store connect"),
    _event("timeout", "store_wait_timeout", "ait timeout after", r"[Ww]ait timeout after (?P<timeout_ms>\d+)ms",
           what="store wait"),
    _event("timeout", "store_barrier_timeout", "barrier timeout after", r"barrier timeout after (?P<timeout_ms>\d+)ms",
           what="store barrier"),
    _event("timeout", "store_based_barrier_timeout", "store based barrier",
           r"Timed out initializing process group in store based barrier", what="store based barrier"),
    _event("timeout", "store_socket_timeout", "Socket Timeout", r"\bSocket Timeout\b", what="store socket"),
    # Horovod's stall inspector: ranks that submitted a collective wait for the others (`Stalled
    # ranks:` follows, each with the tensors it lacks); a warning, repeated while they wait: no death
    _event("warning", "horovod_stall", "remainder of ranks",
           r"waiting for remainder of ranks for more than \d+ seconds", what="Horovod collective"),
    # torch's extension builder finding a build's lock file (a build killed while it compiled left
    # it): it waits on that lock for ever
    _event("error", "extension_lock", "Lock file exists", r"Lock file exists in build directory"),
    _event("timeout", "monitored_barrier_timeout", "monitoredBarrier",
           r"(?:timed out in|failed to pass) monitoredBarrier (?:in|after) (?P<timeout_ms>\d+) ms", what="monitored barrier"),
    _elastic("timeout", "rendezvous_timeout", "RendezvousTimeoutError", r"RendezvousTimeoutError", what="rendezvous"),
    # NCCL's own log: `host:pid:tid [cudaDev] [file:line] NCCL WARN|INFO ...`
    _event("nccl_error", "nccl_warn", "NCCL WARN",
           r"^(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<gpu>\d+)\] .*?NCCL WARN "),
    _event("nccl_error", "nccl_error_trace", "NCCL INFO",
           r"^(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<gpu>\d+)\] NCCL INFO (?:[\w.-]+/)*[\w.-]+:\d+ -> (?P<nccl_code>[1-9]\d*)\b"),
    # c10d's report of an NCCL call that failed (`DistBackendError: NCCL error in: ...`, ending in
    # the NCCL version its message names): a peer gone (`ncclRemoteError`), a CUDA or system error
    _event("error", "nccl_error_in", "NCCL error in:", r"NCCL error in: "),
    _event("error", "nccl_remote_error", "ncclRemoteError", r"\bncclRemoteError\b"),
    _event("stage", "nccl_version", "NCCL version", r"NCCL version \d+\.\d+"),
    _event("stage", "nccl_init", "Init COMPLETE",  # the host and PID of NCCL's `host:pid:tid [dev]` where it leads
           r"(?:^(?P<host>[\w.-]+):(?P<pid>\d+):\d+ \[\d+\] .*?)?\brank (?P<rank>\d+) nranks (?P<nranks>\d+) "
           r"cudaDev (?P<gpu>\d+).*Init COMPLETE"),
    # Inductor wraps Triton's shared-memory limit as `OutOfMemoryError: out of resource: ...
    # Required: 107008 Hardware limit:101376`: a kernel config too big, not GPU memory running out
    _event("error", "triton_out_of_resource", "out of resource", r"OutOfMemoryError: out of resource"),
    # the host's memory, not a device's: TensorFlow's CPU allocator, C++'s and Python's failed
    # allocations, the kernel refusing one; a worker's shared memory (/dev/shm) full
    # Ray's memory monitor killing workers as the node's RAM runs out (`1 Workers (tasks / actors)
    # killed due to memory pressure (OOM)`), and the advice it prints after (which says "out of
    # memory" too, and is no second kill)
    _event("oom_kill", "ray_memory_monitor", "killed due to memory pressure",
           r"\bWorkers \(tasks / actors\) killed due to memory pressure", by="ray"),
    _event("error", "ray_oom_advice", "ray-oom-prevention", r"ray-oom-prevention"),
    _event("error", "host_out_of_memory", ("by allocator cpu", "std::bad_alloc", "MemoryError", "Cannot allocate memory"),
           r"OOM when allocating tensor.*\bby allocator cpu\b|std::bad_alloc|(?<![\w.])MemoryError\b|Cannot allocate memory"),
    _event("error", "shared_memory_full", ("insufficient shared memory", "unable to write to file </torch_"),
           r"insufficient shared memory|unable to write to file </torch_"),
    _event("oom", "tf_oom", "OOM when allocating", r"OOM when allocating tensor"),
    # (a paste cut before its first words begins at `Tried to allocate 216.00 MiB (GPU 0; ...`)
    _event("oom", "cuda_oom", ("out of memory", "Tried to allocate"),
           rf"(?:out of memory\. |^)Tried to allocate (?P<req>{_SIZE})(?:\. GPU (?P<gpu>\d+) has a total capac\w* of "
           rf"(?P<cap>{_SIZE}) of which (?P<free>{_SIZE}) is free| \(GPU (?P<gpu_old>\d+); (?P<cap_old>{_SIZE}) total "
           rf"capacity;(?: {_SIZE} already allocated; (?P<free_old>{_SIZE}) free)?)?"),
    _event("oom", "oom", "out of memory", r"(?i)(CUDA|HIP)? ?out of memory"),
    _event("oom", "oom_error", "OutOfMemoryError", r"OutOfMemoryError"),
    *PROCESS_DEATH_PATTERNS,
    # torchelastic's agent (torchrun, torch.distributed.run/launch): the job's run id, each
    # attempt's start (its restart count from the rendezvous) and end. Which line ends an attempt
    # and which attempt a line belongs to is the file's order: training_log/launcher_lines.py.
    _elastic("stage", "elastic_launch_config", "Starting elastic_operator", r"Starting elastic_operator with launch configs"),
    _elastic("stage", "elastic_run_id", "run_id", r"\brun_id\s+:\s*(?P<job>\S+)"),
    _elastic("stage", "elastic_log_dir", "log directory set to", r"log directory set to: (?P<log_dir>\S+)"),
    _elastic("stage", "elastic_rendezvous_joined", "has joined round",
             r"has joined round \d+ of the rendezvous '(?P<job>[^']+)' as rank \d+ in a world of size (?P<world>\d+)"),
    _elastic("stage", "elastic_rendezvous", "restart_count=", r"\brestart_count=(?P<attempt>\d+)"),
    _elastic("attempt_start", "elastic_start_workers", "Starting worker group", r"\bStarting worker group"),
    _elastic("stage", "elastic_stop_workers", "Stopping worker group", r"\bStopping worker group"),
    _elastic("stage", "elastic_reply_file", "reply file to",
             r"Setting worker(?P<local_rank>\d+) reply file to: (?P<error_file>\S+)"),
    _elastic("attempt_end", "elastic_will_restart", "will restart worker group",
             r"(?:Worker group (?P<reason>\w+)\. (?P<left>\d+)/(?P<max_restarts>\d+) attempts left; |"
             r"Detected (?P<count>\d+) new nodes .{0,80})?will restart worker group"),
    # nvidia-resiliency-ext's and other forks of the agent: `2/3 restart attempts left; restarting worker group...`
    _elastic("attempt_end", "elastic_restarting", "estarting worker group",
             r"(?:(?P<left>\d+)/(?P<max_restarts>\d+) restart attempts left; )?[Rr]estarting worker group"),
    _elastic("attempt_end", "elastic_succeeded", "successfully finished", r"worker group successfully finished"),
    # (its PID may be cut off: a paste wrapped at the terminal's width goes on with `: 541332)`)
    _elastic("exit", "elastic_child_failed", "failed (exitcode:",
             # (a later wording: `failed (exitcode: -9) for binary located at PATH with local_rank: 0
             # (process ID: 71)`)
             r"failed \(exitcode: (?P<code>-?\d+)\)(?: for binary located at .*? with)? local_rank: (?P<local_rank>\d+)"
             r"(?: \((?:pid|process ID): (?P<pid>\d+)\))?"),
    # torch 1.9-1.10's box when a child wrote no error file
    _elastic("exit", "elastic_child_failed_no_error_file", "FAILED (exitcode",
             r"Child process (?P<pid>\d+) \(local_rank (?P<local_rank>\d+)\) FAILED \(exitcode (?P<code>-?\d+)\)"),
    _elastic("signal", "elastic_closing_signal", ("closing signal", "via signal"),
             r"(?:Sending|Closing) process (?P<pid>\d+) (?:the )?(?:closing|via) signal (?P<signal>SIG\w+)"),
    _elastic("signal", "elastic_death_signal", "death signal", r"Received (?P<signo>\d+) death signal"),
    _event("signal", "elastic_signal_exception", "SignalException",
           r"SignalException: Process (?P<pid>\d+) got signal: (?P<signo>\d+)"),
    # DeepSpeed's launcher (launch.py sigkill_handler)
    _event("signal", "deepspeed_killing_subprocess", "Killing subprocess", r"Killing subprocess (?P<pid>\d+)"),
    _event("exit", "deepspeed_exit", "exits with return code",
           r"(?:--local_rank=(?P<local_rank>\d+).*)?exits with return code = (?P<code>-?\d+)"),
    _event("exit", "deepspeed_exit_ok", "exits successfully", r"\bProcess (?P<pid>\d+) exits (?P<success>successfully)"),
    # the same ERROR line cut before its return code (a paste, a log cut mid-line): the launcher's
    # handler logs at ERROR only that a worker ended badly, so the line says it whole enough
    _event("exit", "deepspeed_exit_cut", "sigkill_handler] [",
           r"\[ERROR\] \[launch\.py:\d+:sigkill_handler\] \[(?:.*--local_rank=(?P<local_rank>\d+))?"),
    # torch.multiprocessing.spawn, a DDP trainer's own launcher (no agent): when one of its
    # processes fails, the parent stops the others (torch >= 2.2: `Terminating process 26079 via
    # signal SIGTERM`) and raises what ended the first, naming it by its index (the rank it was
    # given): `ProcessRaisedException:`, a blank line, `-- Process 1 terminated with the following
    # error:` and that process's own traceback; or `ProcessExitedException: process 1 terminated
    # with signal SIGKILL` (`... with exit code 1`)
    _event("signal", "spawn_terminating", "Terminating process",
           r"\bTerminating process (?P<pid>\d+) via signal (?P<signal>SIG[A-Z0-9]+)", by="spawn"),
    _event("exit", "spawn_raised", "terminated with the following error",
           r"\bProcess (?P<rank>\d+) terminated with the following error:", by="spawn"),
    _event("killed", "spawn_signalled", "terminated with signal",
           r"\bprocess (?P<rank>\d+) terminated with signal (?P<signal>SIG[A-Z0-9]+)", by="spawn"),
    _event("exit", "spawn_exit", "terminated with exit code",
           r"\bprocess (?P<rank>\d+) terminated with exit code (?P<code>-?\d+)", by="spawn"),
    # Ray's word that a worker process died under a task or an actor (verl, OpenRLHF, Ray Train run
    # their ranks as Ray actors): the raylet's `A worker died or was killed while executing a task
    # by an unexpected system error. ... Worker PID: 89513 Worker exit type: SYSTEM_ERROR ...`, an
    # actor's `The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR`,
    # Ray Train's `Worker 0 has failed.` (the rank)
    _event("exit", "ray_worker_died", ("A worker died or was killed", "worker process has died"),
           r"\b(?:A worker died or was killed while executing a task|The actor is dead because its worker process "
           r"has died)\b(?:[^\n]*?\bWorker PID: (?P<pid>\d+))?(?:[^\n]*?\bWorker exit type: (?P<ray_exit>[A-Z_]+))?",
           by="ray"),
    _event("exit", "ray_train_worker_failed", "has failed.", r"\bWorker (?P<rank>\d+) has failed\.", by="ray"),
    # Open MPI's launcher (mpirun; prterun in Open MPI 5), which Horovod's and MPI jobs run under:
    # its word on the rank that ended the job, `PID 0` where it does not know the process's PID
    # (`mpirun noticed that process rank 7 with PID 0 on node n1 exited on signal 9 (Killed).`);
    # that a rank's non-zero status aborted the job (`Primary job  terminated normally, but 1
    # process returned`, `mpirun detected that one or more processes exited with non-zero status`)
    # and which rank it was, on a line of its own (`Process name: [[50371,1],0]`)
    _event("killed", "mpirun_signal", "noticed that process rank",
           r"\b(?:mpirun|prterun|orterun) noticed that process rank (?P<rank>\d+) with PID (?:0\b|(?P<pid>\d+))"
           r"(?: on node (?P<host>[\w.-]+))? exited on signal (?P<signo>\d+)", by="mpirun"),
    _event("exit", "mpirun_nonzero", ("process returned", "exited with non-zero status"),
           r"\bPrimary job\s+terminated normally, but \d+ process(?:es)? returned|"
           r"\b(?:mpirun|prterun|orterun) detected that one or more processes exited with non-zero status", by="mpirun"),
    _event("exit", "mpirun_first_failed", "Process name: [[",
           r"^Process name:\s+\[\[\d+,\d+\],(?P<rank>\d+)\]", by="mpirun"),
    # Slurm in a job's output (`slurm-<job>.out`): slurmstepd's cancellations (their own time in
    # `at`), srun's word on each task, cgroup OOM kills, allocations
    _slurm("attempt_end", "slurm_job_cancelled", "*** JOB ",
           r"\*\*\* JOB (?P<job>\d+) (?:ON (?P<host>\S+) CANCELLED|CANCELLED|STEPD TERMINATED ON (?P<stepd_host>\S+))"
           r"(?: AT (?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d))?(?: DUE TO (?P<reason>[^*]{1,120}?))?\s*(?:\*\*\*|$)"),
    _slurm("killed", "slurm_step_cancelled", "*** STEP ",
           r"\*\*\* STEP (?P<job>\d+)(?:\.(?P<step>\w+))? (?:ON (?P<host>\S+) )?CANCELLED"
           r"(?: AT (?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d))?(?: DUE TO (?P<reason>[^*]{1,120}?))?\s*(?:\*\*\*|$)"),
    _slurm("attempt_end", "slurm_cancel_reason_wrapped", "DUE TO ", r"^DUE TO (?P<reason>[^*]{1,120}?)\s*\*\*\*\s*$"),
    _slurm("oom_kill", "slurm_oom_kill", ("oom_kill event", "oom-kill event"),
           r"Detected (?P<count>\d+) oom[-_]kill events?(?:\(s\))? in (?:StepId=|step )(?P<job>\d+)(?:\.(?P<step>\w+))?"),
    # slurmstepd's own memory enforcement (its accounting poll, where no cgroup limits the job):
    # `Job 7518 exceeded memory limit (626359956 > 512000000), being killed` (bytes)
    _slurm("oom_kill", "slurm_memory_limit", "exceeded memory limit",
           r"\bJob (?P<job>\d+) exceeded memory limit \((?P<used>\d+) > (?P<limit>\d+)\), being killed"),
    _slurm("exit", "slurm_task_exited", ": Exited with exit code",
           _SRUN_TASKS + r"Exited with exit code (?P<code>\d+)"),
    _slurm("oom_kill", "slurm_task_oom", ": Out Of Memory",
           _SRUN_TASKS + "Out Of Memory"),
    _slurm("killed", "slurm_task_signal", "srun: error: ",
           _SRUN_TASKS + rf"(?P<task_signal>(?i:{_STATUS_WORDS}))(?: \(core dumped\))?\s*$"),
    _slurm("killed", "slurm_step_aborted", "Job step aborted", r"^srun: Job step aborted"),
    _slurm("killed", "slurm_force_terminated", "Force Terminated",
           r"^srun: Force Terminated (?:job |StepId=)(?P<job>\d+)(?:\.(?P<step>\w+))?"),
    _slurm("attempt_start", "slurm_job_allocated", ("has been allocated resources", "Granted job allocation"),
           r"^(?:srun|salloc): (?:job (?P<job>\d+) has been allocated resources|Granted job allocation (?P<granted>\d+))"),
    _slurm("stage", "slurm_job_queued", "queued and waiting", r"^(?:srun|salloc): job (?P<job>\d+) queued and waiting"),
    _slurm("stage", "slurm_job_submitted", "Submitted batch job", r"^Submitted batch job (?P<job>\d+)"),
    _slurm("attempt_end", "slurm_allocation_revoked", "has been revoked",
           r"^(?:srun|salloc): Job allocation (?P<job>\d+) has been revoked"),
    _slurm("error", "slurm_error", ": error: ", r"^(?:srun|slurmstepd(?:-[\w.-]+)?|sbatch|salloc)(?:\[\d+\])?: error: "),
    # a process's own word that a signal reached it: `received signal 15`, a handler's `received
    # SIGTERM (preemption notice), saving checkpoint`, `caught SIGINT`, Slurm's `--signal=USR1@60`
    # notice; not a signal that stops nothing (srun's `got SIGCONT`)
    _event("signal", "received_signal", ("ignal", "SIG"),
           r"(?i)\b(?:received|got|caught)\s+(?:signal\s+(?P<signal>\w+)|"
           r"(?-i:(?P<signo>SIG(?:TERM|INT|KILL|HUP|QUIT|ABRT|SEGV|BUS|USR1|USR2|XCPU|ALRM))\b))"),
    # a watcher's, scheduler's or supervisor's word that it signalled a process, naming it: a spot
    # VM's preemption handler's `sent SIGTERM to pid 669 (python3 train.py)`, a stall watchdog's
    # `sending SIGKILL to 26117`,
    # `sending SIGTERM to process 4242`: a kill sent, as the operator's `kill 669` is one; and the
    # escalation that names its process first (a watchdog's `26117 still alive after 15s, sending
    # SIGKILL`, `process 4242 did not exit, sending SIGKILL`)
    _event("kill_sent", "signal_sent", ("sent SIG", "sending SIG", "Sent SIG", "Sending SIG"),
           r"(?i)\b(?:sent|sending)\s+(?-i:(?P<signal>SIG[A-Z0-9]+))\s+to\s+(?:pid\s+|process\s+)?(?P<target>\d+)\b|"
           r"(?<![\w:.-])(?:(?:pid|process)\s+)?(?P<outlived>\d+)\s+(?:is\s+)?(?:still\s+(?:alive|running)|did\s+not\s+(?:exit|stop))"
           r"\b[^\n]{0,40}?\b(?:sent|sending)\s+(?-i:(?P<escalated>SIG[A-Z0-9]+))\b(?!\s+to\b)"),
    # the shell that ran the trainer reporting how it died, alone on a line in the file its output
    # went to (dash, and a script's bash, write the report where the command's output goes): the
    # process itself was killed, as the same words on a terminal say
    # a script's bash reporting the child it ran and lost (`./run.sh: line 10:   646 Killed   python3
    # train.py ...`): its PID and how it died, in the file the script's stderr went to
    _event("killed", "script_status", SCRIPT_LINE_KEYWORDS,
           rf"^(?P<script>\S+): {SCRIPT_LINE}\s+(?P<pid>\d+) (?P<task_signal>(?i:{_STATUS_WORDS}))(?: \(core dumped\))?(?:\s+\S.*)?$"),
    # zsh's word on each process of a job it reports without the job's number (a pipeline's, or
    # pasted without it, or that number read as a viewer's line number), lower case: `14957
    # segmentation fault (core dumped)  python train.py`, `+ 2843557 killed`
    _event("killed", "pid_status", tuple(f" {w}" for w in STATUS_SIGNALS if w.isascii() and w != "killed by signal"),
           rf"^(?:[+-]\s+)?(?P<pid>\d{{3,}}) (?P<task_signal>{_STATUS_WORDS})(?: \(core dumped\))?(?:\s{{2,}}\S.*)?\s*$"),
    # an interactive shell's report on a background job it lost, by job number (bash's `[1]+  Killed
    # python train.py`, zsh's `[1]    2843557 killed     python train.py`; the number is the
    # shell's, no scheduler's)
    _event("killed", "job_status", tuple(f" {w}" for w in STATUS_SIGNALS if w.isascii() and w != "killed by signal")
           + tuple(f" {w.capitalize()}" for w in STATUS_SIGNALS if w.isascii() and w != "killed by signal"),
           rf"^\[\d{{1,4}}\]\s*[+-]?\s+(?:(?P<pid>\d+)\s+)?(?P<task_signal>(?i:{_STATUS_WORDS}))(?: \(core dumped\))?(?:\s+\S.*)?$"),
    _event("killed", "shell_killed", "Killed", r"^Killed\s*$", signal="SIGKILL"),
    # the same reports where the shell speaks Chinese (`已杀死`: Killed), and of the signals the
    # report patterns above do not name (`段错误 (核心已转储)`, `Hangup`)
    _event("killed", "shell_killed_zh", ("已杀死", "已终止"), r"^(?P<task_signal>已杀死|已终止)\s*$"),
    _event("signal", "shell_status", _SHELL_ALONE_WORDS,
           rf"(?i)^(?P<task_signal>{_SHELL_ALONE})(?: \((?:core dumped|核心已转储)\))?\s*$"),
    _event("killed", "shell_terminated", "Terminated", r"^Terminated\s*$", signal="SIGTERM"),
    _event("signal", "killed", "Killed", r"^Killed\b", signal="SIGKILL"),
    _event("signal", "terminated", "Terminated", r"^Terminated\b", signal="SIGTERM"),
    # a supervisor's word that it started its program, and as which process: supervisord's
    # `spawned: 'train' with pid 660`, a loop's `started train.py (attempt 1/3, pid 660)`. The
    # program is named (quoted, or a script): `started backend process with pid: 5944` is a
    # library's own helper, no program a supervisor runs
    _event("attempt_start", "supervisor_start", ("started", "spawned", "Started", "Spawned"),
           r"(?i)\b(?:started|spawned:?)\s+'?(?P<program>(?<=')[^'\s]{1,80}(?=')|(?<!')[\w./-]{1,120}\.py)'?\s*"
           r"(?:\(|with\b|,?\s*(?=pid\b))[^)\n]{0,60}?\bpid[\s:=]*(?P<pid>\d+)", by="supervisor"),
    # a wandb sweep agent's word that it starts a run of its sweep, its program as a child
    # (`wandb.wandb_agent - INFO - About to run command: /usr/bin/env python train.py`)
    _event("attempt_start", "wandb_agent_run", "About to run command",
           r"\bAbout to run command: [^\n]*?(?P<program>[\w./-]{1,120}\.py)\b", by="wandb"),
    # supervisord's word on its program's end, naming the program it said it spawned: `exited:
    # train (exit status 1; not expected)`, `exited: train (terminated by SIGKILL; not
    # expected)`, `stopped: train (terminated by SIGTERM)` (a stop asked of it)
    _event("killed", "supervisor_killed", ("exited: ", "stopped: "),
           r"\b(?:exited|stopped): (?P<program>\S{1,80}) \(terminated by (?P<signal>SIG[A-Z0-9]+)", by="supervisor"),
    _event("exit", "supervisor_exit", ("exited: ", "stopped: "),
           r"\b(?:exited|stopped): (?P<program>\S{1,80}) \(exit status (?P<code>-?\d+)", by="supervisor"),
    # a supervisor's word that it stops restarting: supervisord's `gave up: train entered FATAL
    # state, too many start retries too quickly` (naming its program), systemd's `train.service:
    # Start request repeated too quickly.` (its start limit hit), a loop's `giving up after 3
    # attempts`. A count of tries is asked of the loop's form: a bare `giving up` is any
    # library's word on anything
    _event("gave_up", "supervisor_gave_up", ("gave up", "giving up", "repeated too quickly"),
           r"(?i)\bgave up: (?P<program>\S{1,80}) entered FATAL state|\bStart request repeated too quickly\b|"
           r"\b(?:giving|gave) up\b[^\n]{0,60}?\bafter \d+ (?:failed )?(?:attempts|restarts|retries|tries)\b",
           by="supervisor"),
    # a status as a supervisor or a tool prints it: `exited with code 1`, `exit=137`, `exit status
    # 1`, Popen's `returncode -11` (a signal: SIGSEGV), with the PID where it names one first
    # (`train.py (pid 660) exited with returncode -11`)
    _event("exit", "exit_code", ("xit", "eturn code", "eturncode", "with status", "with code"),
           r"(?i)(?:\bpid[\s:=]*(?P<pid>\d+)\b.{0,40}?|(?<![\w:.-])(?P<exited>\d+)\s+(?=exited\b))?"
           r"(?:\bexit(?:ed)?(?: with)?(?: exit)?(?: code| status|=|:| \((?:exit )?(?:code|status))|\breturn ?code"
           r"|\b(?:ended|finished|terminated) (?:with|\() ?(?:exit )?(?:code|status))"
           r"[\s:=]*(?P<code>-?\d+)"),
    _event("warning", "fast_path_unavailable", "fast path is not available", r"[Tt]he fast path is not available"),
    _event("warning", "torch_fallback", "falling back to", r"(?i)falling back to (torch|its reference|the) "),
    _event("training_start", "training_start", "raining", r"(?i)\b(start(ing|ed)? training|training (start(ed|ing)?|begins?)|running training)\b"),
    # The trainer's word that an interrupt stops it, before its own stop line would say "training
    # interrupted" (a stop: training_stop): Python's KeyboardInterrupt (a traceback's last line:
    # EXCEPTION_FACTS), Lightning's `Detected KeyboardInterrupt, attempting graceful shutdown...`,
    # a loop's own `interrupted at step 1376, saving checkpoint` (a handler's `received SIGINT` is
    # the signal it names: received_signal)
    _event("interrupt", "keyboard_interrupt", "KeyboardInterrupt",
           r"^(?:[\w.]+\.)?KeyboardInterrupt\b|\bDetected KeyboardInterrupt\b", signal="SIGINT"),
    _event("interrupt", "interrupted_at", "nterrupted ",
           r"(?i)\binterrupted (?:at (?:step|iteration|iter|epoch|batch)\b|by (?:the )?(?:user|keyboard|ctrl[- ]?c)\b)"),
    # PyTorch's word_language_model example and the trainers copied from it (Transformer-XL):
    # `except KeyboardInterrupt: print('Exiting from training early')`
    _event("interrupt", "exiting_early", "xiting from training early", r"(?i)^\W*exiting from training early\b"),
    # (the same example's last line: `| End of training | test loss  3.62 | test ppl    37.262`)
    _event("training_stop", "training_stop", ("raining",),
           r"(?i)\b(training (stopped|finished|complete[d]?|done|ended|interrupted)|finished training|end of training)\b"),
    # an early-stopping rule ending the training loop: pytorchtools' `Early stopping`, Keras'
    # `Epoch 00012: early stopping`, fastai's `No improvement since epoch 2: early stopping` (not
    # the rule's `EarlyStopping counter: 1 out of 3`)
    _event("training_stop", "early_stopping", ("arly stopping",), r"(?i)^(?:.{0,80}:\s*)?early stopping\.?\s*$"),
    # PyTorch Lightning's words as fit() stops on a limit: `Time limit reached. Elapsed time is 0:00:45.
    # Signaling Trainer to stop.`, `` `Trainer.fit` stopped: `max_epochs=3` reached.``
    _event("training_stop", "lightning_stop", ("Signaling Trainer to stop", "Trainer.fit` stopped"),
           # (its opening backtick may be taken for a paste's inline code: PREFIXES' `backtick`)
           r"Signaling Trainer to stop|`?Trainer\.fit` stopped"),
    # Hugging Face's Trainer prints its closing summary (`{'train_runtime': 26.92, ...}`) once, when train() returns
    _event("training_stop", "hf_summary", "train_runtime", r"""['"]train_runtime['"]\s*:"""),
    _event("stage", "loading", "oading", r"(?i)^(loading|loaded) "),
    _event("stage", "ready", " ready", r"(?i)^\w+ ready\b"),
    # (not the CUDA error's advice `Compile with \`TORCH_USE_CUDA_DSA\` to enable device-side assertions.`)
    _event("stage", "compile", "ompil", r"(?i)^(compiling|compiled|torch\.compile|compile (?!with .TORCH_USE_CUDA_DSA))"),
    # a checkpoint written, in a trainer's words: `saving checkpoint ...`, Hugging Face's `Saving
    # model checkpoint to out/checkpoint-500`, torchtitan's `Saving the checkpoint` and `Finished
    # saving the checkpoint ... in 393.86 seconds`, `checkpoint saved: ckpt/step_100.pt`
    _event("stage", "checkpoint_save", ("aving checkpoint", "aved checkpoint", "aving model checkpoint",
                                        "aving the checkpoint", "heckpoint saved"),
           r"(?i)^(?:finished )?sav(?:ing|ed)(?: the| model)? checkpoint|^checkpoint saved\b"),
    # A start that goes on from a checkpoint, with the step it resumes at where the line says it
    # (our loop; HF Trainer's `Continuing training from global step N`; Megatron's `loaded
    # checkpoint ... at iteration N`; Lightning's `Restoring states from the checkpoint path`; a
    # script's own `resuming from ckpt/last.pt at step 400`, not `not resuming from ...`).
    _event("resumed", "resumed", ("esum", "ontinuing training", "estoring states", "oaded checkpoint"),
           r"(?i)\bresum(?:ed|ing)\b.*\bcheckpoint|\bcontinuing training from\b|\brestoring states from the checkpoint"
           r"|\bloaded checkpoint\b.*\biteration\b|(?<!not )\bresum(?:ed|ing)(?: training)? from \S"),
    _event("error", "fatal", _GLOG_SOURCE, r"^\[?F\d{3,4} |^\[F "),
    _event("warning", "warning", ("arn", "WARN", *_GLOG_SOURCE), r"(?:^|[\s:\[\]])(?:WARNING|WARN|Warning|\w{1,60}Warning)\b|^\[?W\d{3,4} |^\[W "),
    _event("error", "error", ("rror", "ERROR", *_GLOG_SOURCE), r"(?:^|[\s:\[\]])(?:ERROR|Error)\b|^\[?E\d{3,4} |^\[E "),
)
# The OOM message of older PyTorch names the same values in other places.
OOM_OLD_GROUPS = {"gpu_old": "gpu", "cap_old": "cap", "free_old": "free"}

# NCCL INFO lines without an event (topology, channels, set-up): counted with this reason.
NCCL_INFO_KEYWORD = "NCCL INFO"
NCCL_INFO_SKIPPED = "NCCL INFO line (set-up, topology, channels)"

# c10d's process-group tag: `[Rank 3]` (1.x), `[PG 1 Rank 0]`, `[PG 0 (default_pg) Rank 4]`,
# `[PG ID 0 PG GUID 0(default_pg) Rank 2]`. The rank is the rank in that group; the global one
# is the `[rankN]:` prefix torchrun adds, or the group rank in the default group.
C10D_TAG = re.compile(
    r"\[(?:PG (?:ID )?(?P<pg>\d+)(?: PG GUID \d+)?\s*(?:\((?P<pg_name>\w+)\))? )?Rank (?P<group_rank>\d+)\]"
)

TRACEBACK_KEYWORD = b"Traceback (most recent call last)"
# A traceback's exception line: the exception's (dotted) class, then its message or nothing.
# (Python's own `Exception`, raised bare: `Exception: The parameter port:52321 is already in use.`)
EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)|Exception)\b(?::|\s*$)")
# Python's threading.excepthook prints this line just before a thread's traceback.
THREAD_EXCEPTION_KEYWORD = b"Exception in thread "
THREAD_EXCEPTION = re.compile(r"^Exception in thread (?P<thread>.{1,200}?)(?: \(\S+\))?:\s*$")

# torchelastic's ChildFailedError table: a header, then `[N]:` entries of `key : value` fields.
# (torch 1.10 wrote `Root Cause:`, its fields unpadded, and the worker's error file under `msg:`)
FAILURE_TABLE_KEYWORDS = ("Root Cause", "Failures:")
FAILURE_TABLE_HEADER = re.compile(r"^\s*(?P<root>Root Cause(?: \(first observed failure\))?|Failures)\s*:\s*$")
# (its `[N]:` entries and their fields: said.py's FAILURE_ENTRY and FAILURE_FIELD, which quote an
# entry as an error too)
FAILURE_MULTILINE_FIELDS = ("traceback", "msg")  # their text goes on over indented lines
FAILURE_RANK = re.compile(r"(?P<rank>\d+) \(local_rank: (?P<local_rank>\d+)\)")
FAILURE_EXIT = re.compile(r"(?P<code>-?\d+) \(pid: (?P<pid>\d+)\)")
FAILURE_SIGNAL = re.compile(r"Signal (?P<signo>\d+) \((?P<signal>SIG\w+)\)")
TABLE_RULE = re.compile(r"^\s*(?:={5,}|-{5,})\s*$")

# Where one log record starts in the middle of a line: records glued by a `\r` bar, by text
# typed before them, or by a paste that lost its newlines. A line is cut at each.
RECORD_HEADS = (
    r"(?<=.)(?="
    r"(?:WARNING|ERROR|INFO|CRITICAL|DEBUG):[\w.]+:"  # python logging's default format
    r"|\[rank\d+\]:\[[IWEF]"  # c10 glog behind torchrun's rank prefix
    r"|(?<!\]:)\[[IWEF](?:\d{3,4} \d\d:| [\w.]+\.cpp:\d+\])"  # c10 glog, unless behind a `[rankN]:`
    r"|\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+\]"  # DeepSpeed / logging with a bracketed time
    r"|(?<![\d:-])\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[,.]\d+)? [|-] (?:INFO|WARNING|ERROR|DEBUG|CRITICAL|SUCCESS) *[|-] "  # loguru `time | LEVEL    |`
    r"|Traceback \(most recent call last\):"
    r"|(?<![\w.])(?:torch\.(?:cuda\.)?)?OutOfMemoryError:"
    r")"
)
# The first characters of every alternative, tested first: the regex is tried at every position
# of a line, and Python's re finds no literal to skip by (half the time; the same cuts).
RECORD_HEAD = re.compile(r"(?=[WEICD\[TtO]|\d{4}-\d\d-\d\d )" + RECORD_HEADS)

# Text that every one of RECORD_HEAD's alternatives holds (a level word, a bracket, a traceback's
# or an OOM's first words): a line with none of it is one record, and the regex (tried at every
# position of the line) need not run.
RECORD_HEAD_HINTS = ("[", "INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "SUCCESS", "Traceback", "OutOfMemoryError:")


def may_glue_records(line: str) -> bool:
    """Whether RECORD_HEAD may cut `line`: False where it certainly cannot."""
    return any(h in line for h in RECORD_HEAD_HINTS)


# Labels a launcher puts before each line of every process, read as a prefix only in a file whose
# lines mostly carry one (process_log.line_label): `srun --label`'s task id (`0: `, `13: `:
# the rank), and the host name of DeepSpeed's multi-node launcher through pdsh (`worker-1: `,
# `10.0.0.7: `: the host), and docker compose's container name, padded to the widest
# (`train_2_1  | `, compose v2's `train-1  | `: the container, each the trainer's machine).
# Tried in this order: a task id is also a host name to the second.
SRUN_LABEL = re.compile(r"^(?P<rank>\d{1,5}): ")
PDSH_LABEL = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]{0,62}): ")
COMPOSE_LABEL = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]{0,62}?[-_]\d+) *\|(?: |$)")
LINE_LABELS = (SRUN_LABEL, PDSH_LABEL, COMPOSE_LABEL)

# Prefixes added by launchers and log viewers, stripped before anything else is read.
# Each captures what it knows (rank, pid); `lineno` prefixes are log-viewer line numbers.
PREFIXES: tuple[tuple[str, re.Pattern], ...] = (
    ("lineno", re.compile(r"^\[(?P<lineno>\d+)\](?: |$)")),  # not `[0]:` of a failure table
    # (torchrun's `[rank3]:`, and a trainer's own `[rank3] ` or `[rank-6]:` that its logging format puts there)
    ("rank", re.compile(r"^\[rank-?(?P<rank>\d+)\](?::|(?= )) ?")),
    ("rank", re.compile(r"^\[default(?P<rank>\d+)\]: ?")),
    ("stream", re.compile(r"^(?:stderr|stdout): ")),
    # Open MPI's `mpirun --tag-output` (`[1,0]<stdout>:`, SageMaker's `[1,mpirank:3,algo-1]<stdout>:`),
    # horovodrun's `[0]<stderr>:`: the rank
    ("mpi", re.compile(r"^\[(?:\d+,)?(?:mpirank:)?(?P<rank>\d+)(?:,[\w.-]+)?\]<(?:stdout|stderr|stddiag)>: ?")),
    ("ray", re.compile(r"^[\w-]+/\d+ \(\w+ pid=(?P<pid>\d+)\) ?")),
    ("ray", re.compile(r"^\((?:\w+ )?pid=(?P<pid>\d+)(?:, ip=[\d.]+)?\) ?")),  # `(pid=3769) `, Ray's actor tag alone: `(RayWorkerVllm pid=7046) `
    # `kubectl logs --prefix`: `[pod/train-worker-0/pytorch] ` (the pod: the trainer's machine)
    ("kubectl", re.compile(r"^\[pod/(?P<host>[\w.-]+)/[\w.-]+\] ")),
    ("fence", re.compile(r"^```[\w-]*(?=\[)")),  # a markdown fence glued to the first line
    ("backtick", re.compile(r"^`(?!`)")),  # inline code opened before a pasted line
    ("html", re.compile(r"^<pre>")),
)

# Right after a timestamp, `[name]` names the run unless it is a level, a logger tag or a
# launcher's rank prefix (`2026-09-18 19:29:24 [rank3]:[E918 ...`, a collector's time before it).
RUN_TAG = re.compile(r"^[\s\]]*\[(?P<run>[\w.@-]+)\](?!:)")
LEVELS = {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL", "TRACE", "FATAL", "NOTICE", "TRAIN", "EVAL"}
# A tag that names the process's rank (`2026-12-07 07:03:31,920 [rank1] step 10 ...`, a DDP
# trainer's logging format): the row's rank, no run (PREFIXES reads it)
RANK_TAG = re.compile(r"^rank\d+$")


def names_run(tag: str) -> bool:
    """Whether a `[tag]` after a line's time names its run (RUN_TAG): not a level, not a rank."""
    return tag not in LEVELS and RANK_TAG.match(tag) is None


@dataclass(frozen=True)
class UserPattern:
    name: str
    keyword: bytes | None
    regex: re.Pattern
    metric: str


def user_patterns(patterns: list[dict], where: str = "incident.toml") -> tuple[UserPattern, ...]:
    """Compile the `[[patterns]]` tables of incident.toml; errors name the pattern."""
    out = []
    for i, p in enumerate(patterns):
        name = str(p.get("name", f"pattern{i}"))
        if "regex" not in p or "metric" not in p:
            raise IncidentConfigError(f"{where}: patterns[{name}]: needs regex and metric")
        try:
            rx = re.compile(str(p["regex"]))
        except re.error as e:
            raise IncidentConfigError(f"{where}: patterns[{name}].regex: {e}") from e
        if "value" not in rx.groupindex:
            raise IncidentConfigError(f"{where}: patterns[{name}].regex: needs a (?P<value>...) group")
        kw = p.get("keyword") or _longest_literal(str(p["regex"]))  # None: every line is tried
        out.append(UserPattern(name, kw.encode() if kw else None, rx, str(p["metric"])))
    return tuple(out)


def _longest_literal(regex: str) -> str | None:
    """The longest run of plain characters in a regex: a safe prefilter for it, if 3+ long.

    Alternations and inline flags make any single literal unsafe, so those get none.
    """
    if re.search(r"(?<!\\)\||\(\?[aiLmsux]", regex):
        return None
    # Optional characters (x?, x*, x{0,n}), classes, escapes and groups all break a literal run.
    plain = re.sub(r"\\?.[?*]|\\?.\{0,\d*\}|\(\?P<\w+>|\[[^\]]*\]|\\[dswDSWb]|[+(){}^$]", "\0", regex)
    runs = re.findall(r"(?:[A-Za-z0-9 _:/=-]|\\[./|\[\]])+", plain)
    best = max((r.replace("\\", "") for r in runs), key=len, default="")
    return best if len(best) >= 3 else None


def number(text: str | None) -> float:
    """A number as logs print it: thousands commas, nan, inf, a K/M/G/T suffix (`14.2K`)."""
    if text is None:
        return float("nan")
    try:  # most are plain: Python's float reads them as the rest of this does (no comma, no suffix)
        return float(text)
    except ValueError:
        pass
    text = text.replace(",", "")
    exponent = _SUFFIX.get(text[-1:]) if text[-3:].lower() not in ("nan", "inf") else None
    factor = 1
    if exponent is not None:  # as an exponent: 2.03K is 2030.0, not 2029.9999999999998
        text = text[:-1]
        if "e" in text.lower():
            factor = 10**exponent
        else:
            text += f"e{exponent}"
    try:
        return float(text) * factor
    except ValueError:
        return float("nan")
