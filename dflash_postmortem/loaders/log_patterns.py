"""The named pattern table for training logs: what a line means, and the literal that finds it.

Every pattern carries keywords: literals one of which every matching line contains (matched
without regard to case for a case-insensitive pattern). The scanner finds candidate lines with
one RE2 alternation of all keywords over a block's lines (pyarrow, ~250 MB/s; Python's `re` runs
the same alternation at ~10 MB/s, and one `bytes.find` pass per keyword at ~1.4 GB/s each caps
40 keywords near 35 MB/s) and runs the patterns' regexes only on those lines.

Metric patterns (named groups -> canonical metric keys):

| name | example line | metrics |
| --- | --- | --- |
| dflash | `2026-11-30 05:20:58 [baseline] step 5 loss 11.9410 tok/s 11958 queue 4` | train/tok_per_s, train/loss, train/queue_depth |
| torchtitan | `step: 200  loss:  6.1384  memory: 49.66GiB(52.28%)  tps: 5,856  tflops: 339.16  mfu: 34.29%` | train/tok_per_s, train/loss, train/tflops, train/mfu_pct, train/grad_norm |
| megatron | `iteration 71/ 100 \\| ... elapsed time per iteration (ms): 5361.6 \\| throughput per GPU (TFLOP/s/GPU): 243.6 \\| ... lm loss: 1.8E+00` | train/iter_time_ms, train/tflops_per_gpu, train/loss |
| hf_trainer | `{'loss': 0.0, 'grad_norm': 1.41, 'learning_rate': 4.3e-06, 'epoch': 0.01}` | train/<key> for each number |
| nanogpt | `iter 5: loss 4.2082, time 1431.27ms, mfu 0.01%` | train/loss, train/iter_time_ms, train/mfu_pct (nanoGPT's -100 sentinel is NaN) |
| nanogpt_eval | `step 100: train loss 3.4633, val loss 3.4987` | eval/train_loss, eval/val_loss |
| modded_nanogpt | `step:1375/1385 val_loss:3.2811 train_time:177379ms step_avg:129.95ms` | train/step_avg_ms, train/train_time_ms, eval/val_loss |
| fairseq | `\\| epoch 010  2000 / 8223 loss=1.27 (1.50), wps=962, ...` | train/words_per_s, train/loss |
| paddle | `[TRAIN] epoch: 1, iter: 20/500, loss: 2.0859, ... ips: 3.7425 samples/sec` | train/samples_per_s, train/loss |
| nemo | `global_step: 120 \\| reduced_train_loss: 1.233 \\| train_step_timing in s: 0.03146` | train/step_time_s, train/loss |
| tf_step_time | `Step 100 per-step time 0.813s loss=1.396` | train/step_time_s, train/loss |
| tqdm bar | `  3%\\|▎  \\| 4/157 [00:59<37:27, 14.69s/it, loss=7.5, tokens_per_sec=347]` | train/it_per_s, train/tok_per_s, train/loss (postfix) |

Users add patterns in incident.toml (`[[patterns]]` name, regex with a `value` group and an
optional `step` group, metric, optional keyword).

Event kinds (the `kind` column of events from logs, transcripts and process listings):

| kind | meaning |
| --- | --- |
| stage | a start-up stage: dataset / model loading, compile, checkpoint save |
| training_start / training_stop | the trainer says training started / stopped |
| warning | a warning line (`pattern` names known ones, e.g. fast_path_unavailable) |
| traceback | a whole Python traceback, one event, message = all its lines |
| nccl_timeout | NCCL watchdog caught a collective timeout (or its follow-up exception) |
| elastic_restart | torchelastic restarts or rendezvous-restarts the worker group |
| exit | a process exit with a code (`exit_code` column): torchrun child failure, exit=137 |
| signal | SIGTERM/SIGKILL sent or received, `Killed`, `Terminated` |
| oom | CUDA or host out-of-memory |
| nohup | `nohup: ignoring input` (a detached launch wrote this log) |
| error | another ERROR-level line |
| progress | last state of a progress bar (redraws counted in the load report) |
| command | a shell command from a transcript (`output` column holds its output) |
| launch | a command that starts a trainer (`launcher`, `log_path`, `args`, `run`, `background`) |
| redirect_failed | the shell could not open a launch's redirect target |
| log_missing / file_missing | a check (cat, ls, tail) says the log / another file does not exist |
| log_never_created | conclusion: a launch's log never appeared |
| log_empty | conclusion: a launch's log stayed empty for 60 s or more |
| process_count | `ps ... | grep ... | wc -l` answered a number (`count` column) |
| gpu_query | nvidia-smi answered inside a transcript (rows also land in `gpus`) |
| file_check | `ls -l` of a file: its size (`size_bytes` column) |
| pid_file | a run's PID file names a process |
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import IncidentConfigError

_NUM = r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"


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
        {"tok": "train/tok_per_s", "loss": "train/loss", "queue": "train/queue_depth"},
    ),
    _metric(
        "torchtitan", "tps:",
        rf"step:\s*(?P<step>\d+)\s+loss:\s*(?P<loss>{_NUM})(?:.*?grad_norm:\s*(?P<grad_norm>{_NUM}))?"
        rf".*?tps:\s*(?P<tps>{_NUM})(?:\s+tflops:\s*(?P<tflops>{_NUM}))?(?:\s+mfu:\s*(?P<mfu>{_NUM})%)?",
        {"tps": "train/tok_per_s", "loss": "train/loss", "tflops": "train/tflops",
         "mfu": "train/mfu_pct", "grad_norm": "train/grad_norm"},
    ),
    _metric(
        "megatron", "elapsed time per iteration",
        rf"iteration\s+(?P<step>\d+)/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*(?P<ms>{_NUM})"
        rf"(?:.*?throughput per GPU \(TFLOP/s/GPU\):\s*(?P<tflops>{_NUM}))?(?:.*?lm loss:\s*(?P<loss>{_NUM}))?",
        {"ms": "train/iter_time_ms", "tflops": "train/tflops_per_gpu", "loss": "train/loss"},
    ),
    _metric(
        "nanogpt", "iter ",
        rf"\biter (?P<step>\d+): loss (?P<loss>{_NUM}), time (?P<ms>{_NUM})ms(?:, mfu (?P<mfu>{_NUM})%)?",
        {"loss": "train/loss", "ms": "train/iter_time_ms", "mfu": "train/mfu_pct"},
        sentinel={"mfu": -100.0},
    ),
    _metric(
        "nanogpt_eval", "val loss",
        rf"\bstep (?P<step>\d+): train loss (?P<train>{_NUM}), val loss (?P<val>{_NUM})",
        {"train": "eval/train_loss", "val": "eval/val_loss"},
    ),
    _metric(
        "modded_nanogpt", "step_avg:",
        rf"\bstep:(?P<step>\d+)/\d+(?: val_loss:(?P<val>{_NUM}))? train_time:(?P<tt>{_NUM})ms step_avg:(?P<avg>{_NUM})ms",
        {"avg": "train/step_avg_ms", "tt": "train/train_time_ms", "val": "eval/val_loss"},
    ),
    _metric(
        "fairseq", "wps=",
        rf"epoch (?P<epoch>\d+)\s+(?P<step>\d+) / \d+ loss=(?P<loss>{_NUM}).*?\bwps=(?P<wps>{_NUM})",
        {"wps": "train/words_per_s", "loss": "train/loss"},
    ),
    _metric(
        "paddle", "ips:",
        rf"iter:\s*(?P<step>\d+)/\d+, loss:\s*(?P<loss>{_NUM}).*?\bips:\s*(?P<ips>{_NUM}) samples/sec",
        {"ips": "train/samples_per_s", "loss": "train/loss"},
    ),
    _metric(
        "nemo", "train_step_timing",
        rf"global_step:\s*(?P<step>\d+)\s*\|\s*reduced_train_loss:\s*(?P<loss>{_NUM})\s*\|\s*train_step_timing in s:\s*(?P<t>{_NUM})",
        {"t": "train/step_time_s", "loss": "train/loss"},
    ),
    _metric(
        "tf_step_time", "per-step time",
        rf"\bStep (?P<step>\d+) per-step time (?P<t>{_NUM})s(?: loss=(?P<loss>{_NUM}))?",
        {"t": "train/step_time_s", "loss": "train/loss"},
    ),
)

# HF Trainer prints its log dict with Python repr: parsed with ast.literal_eval, numbers kept.
HF_DICT_KEYWORD = b"{'"
HF_DICT = re.compile(r"\{'[\w./-]+': [^{}]*\}")
# A dict is a Trainer log only if it holds one of these keys (not a config or a token map).
HF_DICT_KEYS = {"loss", "eval_loss", "train_loss", "epoch", "learning_rate", "grad_norm", "train_runtime",
                "train_samples_per_second", "train_steps_per_second"}

# A tqdm bar: `desc: 3%|▎  | 4/157 [00:59<37:27, 14.69s/it, k=v, ...]`
BAR_KEYWORDS = (b"it/s", b"s/it")
BAR = re.compile(
    r"(?P<desc>[^|\r\n\]]*?)\s*(?P<pct>\d{1,3})%\|[^|\r\n]*\|\s*(?P<n>\d+)/(?P<total>\d+|\?)\s*"
    r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+),\s*(?P<rate>[\d.]+|\?)(?P<unit>[a-zA-Z]*/s|s/[a-zA-Z]+)"
    r"(?P<postfix>(?:,[^\]\r\n]*)?)\]"
)
# Postfix keys that carry a metric, and the bars that are not training (loading shards, maps).
BAR_POSTFIX = {"tokens_per_sec": "train/tok_per_s", "tok_per_s": "train/tok_per_s", "loss": "train/loss"}
NOT_TRAINING_BAR = re.compile(r"(?i)loading|download|map|token|shard|generat|fetch|process|eval|valid")


@dataclass(frozen=True)
class EventPattern:
    kind: str
    name: str
    keywords: tuple[str, ...]
    regex: re.Pattern
    case_insensitive_keyword: bool = False


def _event(kind, name, keywords, regex) -> EventPattern:
    kws = (keywords,) if isinstance(keywords, str) else tuple(keywords)
    return EventPattern(kind, name, kws, re.compile(regex), case_insensitive_keyword=regex.startswith("(?i)"))


# Order matters: the first pattern matching a line names its event.
EVENT_PATTERNS: tuple[EventPattern, ...] = (
    _event("nohup", "nohup_ignoring_input", "nohup:", r"^nohup: (ignoring input|appending output)"),
    _event("nccl_timeout", "nccl_watchdog", "Watchdog caught", r"Watchdog caught collective operation timeout"),
    _event("nccl_timeout", "nccl_watchdog_exception", "detected by watchdog", r"Exception \(either an error or timeout\) detected by watchdog"),
    _event("oom", "cuda_oom", "out of memory", r"(?i)(CUDA|HIP)? ?out of memory"),
    _event("oom", "oom_error", "OutOfMemoryError", r"OutOfMemoryError"),
    _event("stage", "elastic_start_workers", "ing worker group", r"\b(Starting|Stopping) worker group"),
    _event("elastic_restart", "elastic_will_restart", "will restart worker group", r"will restart worker group"),
    _event("elastic_restart", "elastic_restart_count", "restart_count=", r"^\s*restart_count=[1-9]"),
    _event("exit", "elastic_child_failed", "failed (exitcode:", r"failed \(exitcode: (?P<code>-?\d+)\) local_rank: (?P<rank>\d+) \(pid: (?P<pid>\d+)\)"),
    _event("signal", "elastic_closing_signal", "closing signal", r"Sending process (?P<pid>\d+) closing signal (?P<signal>SIG\w+)"),
    _event("signal", "received_signal", "Signal", r"(?i)(received|got) signal (?P<signal>\w+)"),
    _event("signal", "killed", "Killed", r"^Killed\b"),
    _event("signal", "terminated", "Terminated", r"^Terminated\b"),
    _event("exit", "exit_code", "xit", r"(?i)\bexit(?:ed)?(?: with)?(?: code|=|:)\s*(?P<code>-?\d+)"),
    _event("warning", "fast_path_unavailable", "fast path is not available", r"[Tt]he fast path is not available"),
    _event("warning", "torch_fallback", "falling back to", r"(?i)falling back to (torch|its reference|the) "),
    _event("training_start", "training_start", "raining", r"(?i)\b(start(ing|ed)? training|training (start(ed|ing)?|begins?))\b"),
    _event("training_stop", "training_stop", "raining", r"(?i)\b(training (stopped|finished|complete[d]?|done|ended|interrupted)|finished training)\b"),
    _event("stage", "loading", "oading", r"(?i)^(loading|loaded) "),
    _event("stage", "ready", " ready", r"(?i)^\w+ ready\b"),
    _event("stage", "compile", "ompil", r"(?i)^(compiling|compiled|torch\.compile|compile )"),
    _event("stage", "checkpoint_save", "aving checkpoint", r"(?i)^saving checkpoint"),
    _event("warning", "warning", ("arn", "WARN"), r"(?:^|[\s:\]])(?:WARNING|WARN|Warning|warnings\.warn|\w+Warning)\b|^\[?W\d{4} "),
    _event("error", "error", ("rror", "ERROR"), r"(?:^|[\s:\]])(?:ERROR|Error)\b|^\[?E\d{4} |^\[E "),
)

TRACEBACK_KEYWORD = b"Traceback (most recent call last)"
# Python's threading.excepthook prints this line just before a thread's traceback.
THREAD_EXCEPTION_KEYWORD = b"Exception in thread "
THREAD_EXCEPTION = re.compile(r"^Exception in thread (?P<thread>.+?)(?: \(\S+\))?:\s*$")

# Prefixes added by launchers and log viewers, stripped before anything else is read.
# Each captures what it knows (rank, pid); `lineno` prefixes are log-viewer line numbers.
PREFIXES: tuple[tuple[str, re.Pattern], ...] = (
    ("lineno", re.compile(r"^\[(?P<lineno>\d+)\] ?")),
    ("rank", re.compile(r"^\[rank(?P<rank>\d+)\]: ?")),
    ("rank", re.compile(r"^\[default(?P<rank>\d+)\]: ?")),
    ("stream", re.compile(r"^(?:stderr|stdout): ")),
    ("ray", re.compile(r"^[\w-]+/\d+ \(\w+ pid=(?P<pid>\d+)\) ?")),
)

# Timestamp forms: (name, regex). The first that matches near the start of a line wins.
_ISO = (
    r"(?P<date>\d{4}[-/]\d{2}[-/]\d{2})[T ](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2}|\s?UTC)?"
)
TIMESTAMPS: tuple[tuple[str, re.Pattern], ...] = (
    ("iso", re.compile(_ISO)),
    # glog / absl / c10: I0912 11:40:27.956218, [E626 06:24:44.9...] (month and day, no year;
    # c10 drops the month's leading zero)
    ("glog", re.compile(r"^\[?[IWEF](?P<month>\d{1,2})(?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,9}))?")),
    ("syslog", re.compile(r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) (?P<time>\d{2}:\d{2}:\d{2})")),
    ("clock", re.compile(r"^\[?(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?\]?\s")),
)
MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}

# Right after a timestamp, `[name]` names the run unless it is a level or a logger tag.
RUN_TAG = re.compile(r"^[\s\]]*\[(?P<run>[\w.@-]+)\]")
LEVELS = {"INFO", "WARNING", "WARN", "ERROR", "DEBUG", "CRITICAL", "TRACE", "FATAL", "NOTICE", "TRAIN", "EVAL"}


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
    """A number as logs print it: thousands commas, nan, inf."""
    if text is None:
        return float("nan")
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return float("nan")
