"""Hugging Face Trainer's `trainer_state.json` (beside every checkpoint and the final model).

Its `log_history` is every dict the Trainer logged: training entries (`loss`, `learning_rate`,
`grad_norm`, `epoch`, `step`, TRL's `rewards/...`), evaluation entries (`eval_*`) and the closing
summary (`train_runtime`, `train_samples_per_second`, `train_tokens_per_second`, `train_loss`).
Each number becomes a `metrics` row at its entry's step, under the key the Trainer's console
dicts get (training_log.patterns.hf_metric_key). No entry carries a time, and neither the
file's modification time nor its `train_runtime` says when any step happened: every row's time
is NaT, and the load report says so. The state's own fields (global_step, max_steps, the best
checkpoint and its metric) go to the run's summary.

Every entry is accounted for: parsed (it gave a row) or skipped with its reason; the state's
top level counts as one more record. A file above the document limit is not parsed (wandb.files).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from ...incident import RunInfo, from_frames
from .. import registry
from ..registry import LoadContext
from ..training_log.patterns import hf_metric_key, integer
from ..wandb.files import read_json_doc
from .metric_rows import MetricRows
from .naming import run_of

FORMAT = "hf-trainer-state"
_HEAD = re.compile(rb'^\s*\{[^{}]*?"(?:log_history|global_step|best_model_checkpoint)"\s*:')
# Scalars of the state itself that a post-mortem asks about (where the run got to, what was best).
_STATE_FIELDS = ("global_step", "max_steps", "num_train_epochs", "epoch", "best_metric", "best_global_step",
                 "best_model_checkpoint", "logging_steps", "eval_steps", "save_steps", "train_batch_size",
                 "num_input_tokens_seen", "total_flos", "trial_name", "is_world_process_zero")


def sniff(path: Path, head: bytes) -> float:
    if not _HEAD.match(head):
        return 0.0
    return 0.95 if b'"log_history"' in head and (b'"global_step"' in head or b'"max_steps"' in head) else 0.0


def _number(value) -> float | None:
    """A log value as a float: None for what is not a number (text, lists, booleans)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)  # OverflowError for an integer beyond any float: the caller skips it


@registry.format(FORMAT, sniff=sniff, doc="Hugging Face Trainer trainer_state.json: log_history (loss, lr, eval_*), best checkpoint")
def load(path: Path, ctx: LoadContext):
    doc, rep = read_json_doc(path, ctx, FORMAT)
    rep.unit = "record"
    run = run_of(path, ctx)
    history = doc.get("log_history")
    if not rep.parsed:
        return from_frames(rep)
    if not isinstance(history, list):
        rep.notes.append("no log_history list: the state says where the run got to, not what it logged")
        history = []
    rows = MetricRows()
    too_large = 0
    for n, entry in enumerate(history, start=1):
        rep.read += 1
        if not isinstance(entry, dict):
            rep.bad(n, "a log_history entry (a JSON object)", type(entry).__name__)
            continue
        step = integer(entry.get("step")) if isinstance(entry.get("step"), int) else None
        for key, value in entry.items():
            if key == "step" or not isinstance(key, str):
                continue
            try:
                v = _number(value)
            except OverflowError:
                too_large += 1
                continue
            if v is None:
                continue
            rows.add(step, hf_metric_key(key), v, n)
        rows.close(rep, n, "log_history entry without a number")
    if too_large:
        rep.notes.append(f"{too_large} values larger than any float (an integer of hundreds of digits): not read")
    lines = _entry_lines(path, len(history))
    rows.refs = [lines[n - 1] for n in rows.refs]  # entry numbers -> the lines they open on
    metrics = rows.frame(rep.path, run)
    if len(metrics):
        rep.assume("trainer_state.json carries no time per log entry: its rows have no time, placed by "
                   "step only (the file's mtime and train_runtime do not say when a step happened)")
    summary = {k: doc[k] for k in _STATE_FIELDS if k in doc and _plain(doc[k])}
    _note_progress(summary, rep)
    info = RunInfo(run=run, summary=summary, source=rep.path)
    return from_frames(rep, metrics=metrics, runs={run: info})


def _entry_lines(path: Path, n: int) -> list[int]:
    """The line each log_history entry opens on, for evidence refs: the Trainer writes the state
    indented, one `{` line per entry; a file written otherwise cites the log_history line."""
    starts, history, indent = [], 1, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for k, line in enumerate(f, start=1):
            if history == 1 and '"log_history"' in line:
                history = k
            elif history > 1 and line.strip() == "{":
                width = len(line) - len(line.lstrip())
                indent = width if indent is None else indent
                if width == indent:
                    starts.append(k)
    return starts if len(starts) == n else [history] * n


def _plain(value) -> bool:
    """A scalar worth keeping in the run's summary (not a list, dict, or a float that is not one)."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int | bool) or value is None


def _note_progress(summary: dict, rep) -> None:
    step, last = summary.get("global_step"), summary.get("max_steps")
    if isinstance(step, int) and not isinstance(step, bool):
        of = f" of max_steps {last}" if isinstance(last, int) and last > 0 else ""
        rep.notes.append(f"global_step {step}{of}")
    best = summary.get("best_model_checkpoint")
    if isinstance(best, str) and best:
        metric = summary.get("best_metric")
        rep.notes.append(f"best checkpoint {best}" + (f" (best_metric {metric})" if metric is not None else ""))
