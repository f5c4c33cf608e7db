"""The job's pace: how fast it trained, in the one measure its evidence gives.

Tokens per second where a trainer logs them (its lines' rates; progress.py counts them over
windows). Where no source of the incident logs tokens (a Hugging Face or Lightning run: a bar of
steps, a loss every N steps), steps per second from the step counter: the steps between two step
lines of one series over the time between them, the lines at least PACE_S apart. A bar's own
`it/s` is not read for this: Lightning's tqdm bar draws the mean since its start (smoothing 0),
which hides a slowdown for minutes; and a bar dated by its elapsed time has whole seconds, so a
rate per update would be noise.

One measure per incident, so that levels, regressions and the cost compare like with like.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..incident import Incident
from ..schema import STEPS_PER_S, TOK_PER_S
from ..shell_words import flag_key
from . import computed
from .step_lines import placed, step_lines

UNITS = {TOK_PER_S: "tok/s", STEPS_PER_S: "steps/s"}
# Step lines closer than this are merged into one interval of the step counter.
PACE_S = 5.0
# Settings that size a training step, by their usual names (a batch, the batches a step
# accumulates; LightningCLI's dotted `--data.batch_size`): where two starts differ in them, a
# step a second is another amount of work. An evaluation's batch (`--per_device_eval_batch_size`,
# `eval_accumulation_steps`) sizes no training step.
STEP_SIZE = re.compile(r"^(?![\w.]*eval)(?:[\w.]*[_.])?(?:batch(?:_size)?|bs|gradient_accumulation(?:_steps)?|"
                       r"grad_accum\w*|accumulate_grad_batches)$")


# Settings that size the model itself, by their usual names (nanoGPT's `n_embd`, `n_layer`,
# `n_head`; Hugging Face's `hidden_size`, `num_hidden_layers`, `num_attention_heads`; `d_model`;
# a drafter's `draft_layers`; the model or checkpoint a start loads): where two starts differ in
# them, a token a second is another amount of work (a token through a wider model costs more),
# not the same work done slower. A setting about how a layer runs (`draft_layer_ckpt`) is none.
MODEL_SIZE = re.compile(r"^(?:[\w.]*[_.])?(?:n_embd|n_layers?|n_heads?|hidden(?:_size|_dim)?|d_model|"
                        r"(?:num_)?(?:hidden_)?layers|num_(?:attention_)?heads|heads|intermediate_size|ffn_dim|"
                        r"model(?:_name(?:_or_path)?|_size)?)$")


def model_changed(before: dict | None, after: dict | None) -> bool:
    """Whether starts launched with the flags `before` and `after` differ in a setting that
    sizes the model (MODEL_SIZE): their tokens a second compare unlike work."""
    return bool(before and after) and _settings(before, MODEL_SIZE) != _settings(after, MODEL_SIZE)


def _settings(flags: dict, names: re.Pattern) -> dict[str, str]:
    """The flags whose names `names` matches, by their one key (`flag_key`: `--batch-size` and
    `--batch_size` are one setting)."""
    return {flag_key(k): v for k, v in flags.items() if names.match(flag_key(k))}


def pace_metric(inc: Incident) -> str:
    """TOK_PER_S where any source logs tokens per second, else STEPS_PER_S."""
    return computed.cached(inc, "pace metric", ("metrics",), lambda: _metric(inc.metrics))


def step_grew(before: dict | None, after: dict | None) -> float | None:
    """How many times larger a step of a start launched with the flags `after` is than one of a
    start launched with `before`, by the settings that size it (STEP_SIZE): 1 where none differs
    or a launch is not known; None where one start names a size the other leaves to the
    program's default, which no file says. Steps a second compare the same work only where 1."""
    if not before or not after:
        return 1.0
    b, a = _settings(before, STEP_SIZE), _settings(after, STEP_SIZE)
    grew = 1.0
    for k in b.keys() | a.keys():
        if b.get(k) != a.get(k):
            try:
                grew *= float(a[k]) / float(b[k])
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                return None
    return grew


def unit(inc: Incident) -> str:
    """The pace's unit as a sentence says it: `tok/s` or `steps/s`."""
    return UNITS[pace_metric(inc)]


def pace_rows(inc: Incident) -> pd.DataFrame:
    """Rows shaped like the metrics frame's, one measure (pace_metric): the tokens-per-second lines
    as logged (each for the time since the line before it), or one steps-per-second row per
    interval of each series' step counter, at the interval's beginning with the line and step
    that close it: a change of pace found at a row began within its interval, no earlier."""
    return computed.cached(inc, "pace rows", ("metrics", "events"), lambda: _rows(inc))


def _metric(m: pd.DataFrame) -> str:
    return TOK_PER_S if ((m["metric"] == TOK_PER_S) & m["value"].notna()).any() else STEPS_PER_S


def _rows(inc: Incident) -> pd.DataFrame:
    m = inc.metrics
    if _metric(m) == TOK_PER_S:
        # (a pace is of a time: a rate line nothing dates says how fast, not when, nor does one
        # placed with the rest of its log at the start that wrote it)
        is_rate = (m["metric"] == TOK_PER_S) & m["value"].notna() & m["time"].notna() & ~placed(m)
        lines = step_lines(inc)
        # where the step lines are these same rows in the same order, they are shared, not copied
        # again (a long run's rates are most of what the model holds; the rows are compared by
        # their labels, without a copy of them to compare)
        same = len(lines) == int(is_rate.sum()) and lines.index.equals(m.index[is_rate.to_numpy(dtype=bool, na_value=False)])
        return lines if same else m[is_rate]
    lines = step_lines(inc)
    lines = lines[~placed(lines)]
    if lines.empty:
        return m.iloc[:0]
    keys = [lines["source"].fillna(""), lines["run"].fillna(""), lines["rank"].fillna(-1)]
    parts = [_counted(g) for _, g in lines.groupby(keys, sort=False)]
    parts = [p for p in parts if len(p)]
    if not parts:
        return m.iloc[:0]
    return pd.concat(parts).sort_values("time", kind="stable")


def _counted(g: pd.DataFrame) -> pd.DataFrame:
    """One series' steps-per-second rows: between lines at least PACE_S apart; a counter that goes
    back (a resume from a checkpoint, a new run in the same file) begins a new interval."""
    g = g.sort_values("time", kind="stable")
    t = g["time"].to_numpy(dtype="datetime64[us]").astype("i8") / 1e6
    step = g["step"].to_numpy(dtype="float64", na_value=np.nan)
    keep, values, begins = [], [], []
    i0 = 0
    for i in range(1, len(g)):
        if step[i] < step[i0]:
            i0 = i
            continue
        if t[i] - t[i0] >= PACE_S:
            keep.append(i)
            begins.append(i0)
            values.append((step[i] - step[i0]) / (t[i] - t[i0]))
            i0 = i
    out = g.iloc[keep].copy()
    out["closed_at"] = out["time"]  # when the line that closes it was written: the step it reached, then
    out["time"] = g["time"].iloc[begins].to_numpy()
    out["metric"] = STEPS_PER_S
    out["value"] = np.asarray(values, dtype=float)
    return out
