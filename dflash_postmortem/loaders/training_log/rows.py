"""The rows one pass over a training log finds, before their times are resolved: metrics as
columns, events as one dict each (process_log.py fills them, line_metrics.py and bars.py add to
them)."""

from __future__ import annotations

from dataclasses import dataclass, field

METRIC_COLS = ("stamp", "line", "run", "step", "metric", "value", "rank", "pattern")
EVENT_COLS = ("stamp", "line", "run", "pid", "kind", "message", "rank", "pattern", "exit_code", "signal", "lines",
              "thread")


@dataclass
class Rows:
    """Rows found in one block; times still as found until `resolve_times`. Metrics are kept as
    columns (the hot path extends them; transposing ~1 M row tuples cost more than the parse),
    events, which are few, as one dict per row (they carry different extra columns)."""

    metric_cols: tuple[list, ...] = field(default_factory=lambda: tuple([] for _ in METRIC_COLS))
    event_rows: list[dict] = field(default_factory=list)

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
    def metrics(self) -> dict[str, list]:
        return dict(zip(METRIC_COLS, self.metric_cols, strict=True))

    @property
    def events(self) -> dict[str, list]:
        extra = sorted({k for r in self.event_rows for k in r} - set(EVENT_COLS))
        return {k: [r.get(k) for r in self.event_rows] for k in (*EVENT_COLS, *extra)}
