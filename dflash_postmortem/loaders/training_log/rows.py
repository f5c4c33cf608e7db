"""The rows one pass over a training log finds, before their times are resolved: metrics as
columns, events as one dict each (process_log.py fills them, line_metrics.py and bars.py add to
them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain

import numpy as np

METRIC_COLS = ("stamp", "line", "run", "step", "metric", "value", "rank", "pattern")
EVENT_COLS = ("stamp", "line", "run", "pid", "kind", "message", "rank", "pattern", "exit_code", "signal", "lines",
              "thread")


@dataclass
class Rows:
    """Rows found in one block; times still as found until `resolve_times`. Metrics are kept as
    columns (transposing ~1 M row tuples cost more than the parse): those read one by one as
    lists (`metric_cols`, the rows since the last part read in bulk), those read in bulk (the
    DFlash lines) as numpy arrays, each a part in the order of the lines. Events, which are few,
    are one dict per row (they carry different extra columns)."""

    metric_cols: tuple[list, ...] = field(default_factory=lambda: tuple([] for _ in METRIC_COLS))
    event_rows: list[dict] = field(default_factory=list)
    parts: list[tuple] = field(default_factory=list)  # metric rows before `metric_cols`'s, a column each

    def bulk(self, cols: tuple[np.ndarray, ...]) -> None:
        """Metric rows read in bulk (an array per column of METRIC_COLS), after those so far."""
        self._seal()
        self.parts.append(cols)

    def extend(self, other: Rows) -> None:
        """`other`'s rows after these."""
        self._seal()
        other._seal()
        self.parts.extend(other.parts)
        self.event_rows.extend(other.event_rows)

    def _seal(self) -> None:
        if self.metric_cols[0]:
            self.parts.append(self.metric_cols)
            self.metric_cols = tuple([] for _ in METRIC_COLS)

    def metric(self, stamp, line, run, step, metric, value, rank, pattern):
        # one append per column, written out: the general path adds a row per value it reads
        c_stamp, c_line, c_run, c_step, c_metric, c_value, c_rank, c_pattern = self.metric_cols
        c_stamp.append(stamp)
        c_line.append(line)
        c_run.append(run)
        c_step.append(step)
        c_metric.append(metric)
        c_value.append(value)
        c_rank.append(rank)
        c_pattern.append(pattern)

    def many(self, stamp, lines: list, run, step: list, metric: list, value: list, rank, pattern: list) -> None:
        """Rows of several lines, appended as `metric` appends one: `stamp`, `run` and `rank` the
        same for each."""
        n = len(lines)
        for col, part in zip(self.metric_cols, (stamp, lines, run, step, metric, value, rank, pattern), strict=True):
            col.extend(part if isinstance(part, list) else [part] * n)

    def drop_bar_echoes(self, since: int) -> None:
        """Rows from `since` on are one line's. A bar's postfix value that a record glued on the
        same line logs again (`loss=8.2841` in the bar, `train_loss=8.284101` after it) is dropped:
        the record's has its own time and every digit."""
        step, metric, rank, pattern = (self.metric_cols[METRIC_COLS.index(c)] for c in ("step", "metric", "rank", "pattern"))
        logged = {(step[i], metric[i], rank[i]) for i in range(since, len(step)) if pattern[i] != "tqdm"}
        keep = [i for i in range(since, len(step)) if pattern[i] != "tqdm" or (step[i], metric[i], rank[i]) not in logged]
        if len(keep) < len(step) - since:
            for col in self.metric_cols:
                col[since:] = [col[i] for i in keep]

    def event(self, **kw) -> dict:
        row = {k: v for k, v in kw.items() if v is not None}
        self.event_rows.append(row)
        return row

    @property
    def metrics(self) -> dict[str, list | np.ndarray]:
        """The metric rows, a column each: lists where every row was read one by one, else
        arrays (of objects where the parts' types differ; `line` int, `value` float)."""
        parts = [*self.parts, self.metric_cols] if self.metric_cols[0] or not self.parts else self.parts
        if all(isinstance(p[0], list) for p in parts):
            return {c: list(chain.from_iterable(p[i] for p in parts)) if len(parts) > 1 else parts[0][i]
                    for i, c in enumerate(METRIC_COLS)}
        return {c: _joined([p[i] for p in parts], c) for i, c in enumerate(METRIC_COLS)}

    @property
    def events(self) -> dict[str, list]:
        extra = sorted({k for r in self.event_rows for k in r} - set(EVENT_COLS))
        return {k: [r.get(k) for r in self.event_rows] for k in (*EVENT_COLS, *extra)}


_TYPED = {"line": np.int64, "value": np.float64}


def _joined(parts: list, column: str) -> np.ndarray:
    """One column's parts (lists and arrays) as one array: typed where its rows all are (a bulk
    part's stamps as datetime64 or bytes, its steps as int64), else objects."""
    if len(parts) == 1 and isinstance(parts[0], np.ndarray):
        return parts[0]
    dtype = _TYPED.get(column)
    if dtype is None and all(isinstance(p, np.ndarray) for p in parts) and len({p.dtype for p in parts}) == 1:
        dtype = parts[0].dtype
    if dtype is not None:
        return np.concatenate([np.asarray(p, dtype=dtype) for p in parts])
    out = np.empty(sum(len(p) for p in parts), dtype=object)
    at = 0
    for p in parts:
        if isinstance(p, np.ndarray) and p.dtype.kind == "M":  # a time among other stamps: its text again
            p = np.char.replace(np.datetime_as_string(p, unit="s"), "T", " ").astype("S19")
        out[at:at + len(p)] = p.astype(object) if isinstance(p, np.ndarray) else p
        at += len(p)
    return out
