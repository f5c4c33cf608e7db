"""The metrics in one record of a training log: the known line formats (patterns.py), `key: value`
fields, Hugging Face's dicts, the user's own patterns, rates named by their unit (`1.2k tok/s`)."""

from __future__ import annotations

import ast
import re

from . import patterns as lp
from .rows import Rows

# Keywords as text, decoded once: the hot path tests them on every candidate line.
METRIC_KW = tuple((p, p.keyword.decode()) for p in lp.METRIC_PATTERNS)
FIELD_KW = tuple((f, f.keyword.decode()) for f in lp.FIELD_FORMATS)
GENERIC_KW = tuple(k.decode() for k in lp.GENERIC_KEYWORDS)
HF_DICT_KW = lp.HF_DICT_KEYWORD.decode()
_NON_FINITE = re.compile(r"(?<=: )(-?(?:nan|inf))(?=[,}])")  # a float's repr as a dict value
MAX_FIELD_CHARS = 200  # a `key: value` field is short; prose is not searched for one
_int = lp.integer


def read_metrics(text: str, stamp, lineno: int, run, rank, rows: Rows, user: tuple, bar_step: dict,
                 headed: dict, epochs: dict) -> int:
    """The metrics one record of a log gives (the number of rows it added): the known line formats
    first, then Keras's lines, `key: value` fields, Hugging Face's dicts, the user's patterns
    (incident.toml), a field of a metric block, rates named by their unit, and a generic `loss`.
    `headed` holds the step of each rank's last metric-block header (patterns.STEP_HEADER),
    `epochs` the epoch of its last Keras `Epoch N/M` line, kept from line to line."""
    if any(k in text for k in lp.STEP_HEADER_KEYWORDS) and (h := lp.STEP_HEADER.search(text)) is not None:
        headed[rank] = _int(h.group("step"))
    if lp.KERAS_EPOCH_KEYWORD in text and (e := lp.KERAS_EPOCH.search(text)) is not None:
        epochs[rank] = _int(e.group("epoch"))
        return 0
    for p, kw in METRIC_KW:
        if kw not in text:
            continue
        m = p.regex.search(text)
        if not m:
            continue
        step, values = pattern_values(p, m.groupdict())
        for key, v in values:
            rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric=key, value=v, rank=rank, pattern=p.name)
        return len(values)
    for f, kw in FIELD_KW:
        if kw in text:
            n = _field_metrics(f, text, stamp, lineno, run, rank, rows)
            if n:
                return n
    if lp.KERAS_KEYWORD in text and (k := lp.KERAS_LINE.search(text)) is not None:
        n = _keras(k, stamp, lineno, run, rank, rows, epochs.get(rank))
        if n:
            return n
    if HF_DICT_KW in text:
        n = _hf_dict(text, stamp, lineno, run, rank, rows, bar_step)
        if n:
            return n
    for p in user:
        if p.keyword is not None and p.keyword.decode() not in text:
            continue
        m = p.regex.search(text)
        if m:
            g = m.groupdict()
            rows.metric(stamp=stamp, line=lineno, run=g.get("run") or run, step=_int(g.get("step")),
                        metric=p.metric, value=lp.number(g["value"]), rank=rank, pattern=p.name)
            return 1
    if text[:1] in " \t" and any(k in text for k in lp.BLOCK_FIELD_KEYWORDS):
        n = _block_field(text, stamp, lineno, run, rank, rows, headed)
        if n:
            return n
    n = _unit_metrics(text, stamp, lineno, run, rank, rows) if any(k in text for k in lp.UNIT_KEYWORDS) else 0
    if any(k in text for k in GENERIC_KW):
        n += _field_metrics(lp.GENERIC_LOSS, text, stamp, lineno, run, rank, rows)
    return n


def pattern_values(p: lp.MetricPattern, g: dict) -> tuple[int | None, list[tuple[str, float]]]:
    """The step and the (metric, value) pairs of a line a known format matched, from its regex's
    groups (None where a group did not take part); the bulk reader (bulk_lines.py) reads the same."""
    values = []
    for group, key in p.metrics.items():
        if g.get(group) is None:
            continue
        v = lp.number(g[group]) * p.scale.get(group, 1.0)
        if p.sentinel.get(group) == v:
            v = float("nan")
        values.append((key, v))
    return _step(g), values


def _keras(m: re.Match, stamp, lineno: int, run, rank, rows: Rows, epoch: int | None) -> int:
    """A Keras progress line (patterns.KERAS_LINE): its known fields, and the seconds a step took
    where it says them (`345ms/step`; an epoch's whole time over its batches once it is done)."""
    i, per_epoch = _int(m.group("i")), _int(m.group("per_epoch"))
    step = i if epoch is None else (epoch - 1) * per_epoch + i
    values = []
    for part in m.group("fields").split(" - "):
        f = lp.KERAS_FIELD.match(part)
        if f is not None and (metric := lp.KERAS_FIELDS.get(f.group("key"))) is not None:
            values.append((metric, lp.number(f.group("value"))))
    if not values:
        return 0
    if m.group("of") == "step":
        values.append(("train/step_time_s", float(m.group("per")) * lp.KERAS_STEP_UNITS[m.group("unit")]))
    elif m.group("of") is None and m.group("took") is not None and i == per_epoch and per_epoch:
        # (a count of samples, `60000/60000 ... 55us/sample`, is no count of steps)
        values.append(("train/step_time_s", int(m.group("took")) / per_epoch))
    for metric, value in values:
        rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric=metric, value=value, rank=rank, pattern="keras")
    return len(values)


def _block_field(text: str, stamp, lineno: int, run, rank, rows: Rows, headed: dict) -> int:
    """One indented `key=value` line of a metric block (patterns.BLOCK_FIELD): a known key as its
    metric, any other under its own name (an `Eval` one under eval/) where a header came before."""
    m = lp.BLOCK_FIELD.match(text)
    if m is None:
        return 0
    key = _key_of(m)
    metric = lp.BLOCK_FIELDS.get(key.lower())
    if metric is None:
        if rank not in headed:
            return 0
        metric = f"eval/{key}" if m.group("phase") == "Eval" and not key.lower().startswith("eval") else key
    rows.metric(stamp=stamp, line=lineno, run=run, step=headed.get(rank), metric=metric,
                value=lp.number(m.group("value")), rank=rank, pattern="metric_block")
    return 1


def known_block_field(text: str) -> bool:
    """Whether `text` is a metric block's field of a key BLOCK_FIELDS knows (a loss, a throughput)."""
    m = lp.BLOCK_FIELD.match(text)
    return m is not None and _key_of(m).lower() in lp.BLOCK_FIELDS


def _key_of(m) -> str:
    """A field's key as a regex found it, its blank runs one blank (`train/CE  loss`)."""
    return " ".join(m.group("key").split())


def _unit_metrics(text: str, stamp, lineno: int, run, rank, rows: Rows) -> int:
    """Rates named by their unit (`1.2k tok/s`, `85 ms/step`): the step, if the line has one,
    from a step-like counter."""
    found = list(lp.UNIT_VALUE.finditer(text))
    if not found:
        return 0
    sm = lp.GENERIC_LOSS.steps[0].search(text)
    step = _int(sm.group("step")) if sm else None
    for m in found:
        metric, scale = lp.UNIT_METRICS[m.group("unit")[:3].lower()]
        value = lp.number(m.group("value") + (m.group("mult") or "").upper()) * scale
        rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric=metric, value=value, rank=rank, pattern="unit")
    return len(found)


def _step(g: dict, first_epoch: int = 0) -> int | None:
    """A line's step from its regex's groups: `step`, else (epoch - first_epoch) * per_epoch + i
    for loggers that count iterations within an epoch, else `i` alone."""
    if g.get("step") is not None:
        return _int(g["step"].replace(",", ""))  # BasicSR prints `iter:   1,000`
    if g.get("per_epoch") is not None:
        epoch, per_epoch, i = _int(g["epoch"]), _int(g["per_epoch"]), _int(g["i"])
        return _int((epoch - first_epoch) * per_epoch + i) if None not in (epoch, per_epoch, i) else None
    return _int(g.get("i"))


def _field_metrics(f: lp.FieldFormat, text: str, stamp, lineno: int, run, rank, rows: Rows) -> int:
    """A `key: value | key: value` line: every known key gives its metric."""
    sm = next((m for m in (rx.search(text) for rx in f.steps) if m is not None), None)
    if sm is None:
        return 0
    step = _step(sm.groupdict(), f.first_epoch)
    n = 0
    seen = set()
    for part in f.separator.split(text):
        m = lp.FIELD.search(part) if len(part) <= MAX_FIELD_CHARS else None
        if m is None:
            continue
        key = re.sub(lp.NON_FINITE_KEY_WORD, "", _key_of(m).lower())
        target = f.fields.get(key)
        if target is None or target[0] in seen:
            continue
        seen.add(target[0])
        rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric=target[0],
                    value=lp.number(m.group("value")) * lp.field_scale(target[0], target[1], m.group("unit")),
                    rank=rank, pattern=f.name)
        n += 1
    return n

def _hf_dict(text: str, stamp, lineno: int, run, rank, rows: Rows, bar_step: dict) -> int:
    """HF Trainer's log dict; without a `step` key it takes the step of the training bar
    drawn before it. A diverged run prints `'grad_norm': nan` (Python's repr of a float NaN,
    no literal): read as a NaN value, the rest of the dict with it."""
    n = 0
    for m in lp.HF_DICT.finditer(text):
        try:
            d = ast.literal_eval(_NON_FINITE.sub(r"'\1'", m.group(0)))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not isinstance(d, dict):
            continue
        nums = {k: n for k, v in d.items() if isinstance(k, str) and (n := _dict_number(v)) is not None}
        if not lp.HF_DICT_KEYS & set(nums):
            continue  # a config printed as a dict (`'loss': 'mse'`, `'epoch': None`): no metric holds a number
        step = _int(d.get("step")) if "step" in d else bar_step.get(rank)
        for k, v in nums.items():
            rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric=lp.hf_metric_key(k), value=v, rank=rank, pattern="hf_trainer")
            n += 1
    return n


def _dict_number(v) -> float | None:
    """A number of a Hugging Face log dict: a Python number, or a number the Trainer wrote as a
    string (transformers 5 prints `{'loss': '10.96', 'grad_norm': '0.3973', ...}`)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str) and len(v) <= 40:
        try:
            return float(v)
        except ValueError:
            return None
    return None
