"""How a metric file names its run and its metrics.

A trainer's metric file says little about its run: the run is where the file lies. Checkpoint
folders (`checkpoint-500/`) belong to the run folder above them; a file at the top of the incident
is its own run, named by the file. Keys are the user's (`self.log("train_loss")`, `mlflow.log_metric
("val_acc")`, `writer.add_scalar("Loss/train")`): a `group/name` key is kept, `train_`/`val_`/`test_`
prefixes become groups, anything else is a training metric.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...metric_keys import THROUGHPUT_ALIASES, TOK_PER_S
from ..registry import LoadContext

_CHECKPOINT = re.compile(r"^checkpoint[-_]\d+$")
# Prefixes users give metrics, and the group each means. `val`, `valid` and `eval` are one group.
_GROUPS = (("train_", "train"), ("training_", "train"), ("val_", "eval"), ("valid_", "eval"),
           ("validation_", "eval"), ("eval_", "eval"), ("test_", "test"))
# Lightning logs a metric logged on step and on epoch twice: `<name>_step` and `<name>_epoch`.
_STEP_SUFFIX = "_step"
_LR_MONITOR = re.compile(r"^lr-\w+(?:/(?P<group>pg\d+))?$")  # Lightning's LearningRateMonitor: `lr-AdamW`, `lr-Adam/pg1`


def run_of(path: Path, ctx: LoadContext) -> str:
    """The `[[sources]]` run, else the file's folder relative to the incident (past any
    `checkpoint-N`), else the file's stem when it lies at the top of the incident."""
    if ctx.options.get("run"):
        return str(ctx.options["run"])
    folder = Path(path).parent
    if _CHECKPOINT.match(folder.name):
        folder = folder.parent
    if ctx.root is not None:
        try:
            if Path(folder).resolve() == Path(ctx.root).resolve():
                return Path(ctx.name(path)).stem
        except OSError:
            pass
    name = ctx.name(folder)
    return name if name not in ("", ".") else Path(path).stem


def metric_key(name: str) -> str:
    """A user's metric name as a `group/name` key; throughput, by any of the names trainers give
    it (`writer.add_scalar("train/tokens_per_sec")`, `self.log("tokens_per_second")`), as the
    kit's own key: the pace the model reads, whatever logged it."""
    key = _group_key(name)
    return TOK_PER_S if name in THROUGHPUT_ALIASES or key in THROUGHPUT_ALIASES else key


def _group_key(name: str) -> str:
    lr = _LR_MONITOR.match(name)
    if lr is not None:
        return "train/learning_rate" + (f"_{lr.group('group')}" if lr.group("group") else "")
    if "/" in name:
        return name
    for prefix, group in _GROUPS:
        if name.startswith(prefix) and len(name) > len(prefix):
            return _keyed(group, name[len(prefix):])
    return _keyed("train", name)


def _keyed(group: str, name: str) -> str:
    if name.endswith(_STEP_SUFFIX) and len(name) > len(_STEP_SUFFIX):
        name = name[: -len(_STEP_SUFFIX)]  # the per-step value is the series; `_epoch` is its mean
    if group == "train" and name == "lr":
        name = "learning_rate"
    return f"{group}/{name}"
