"""The `metrics` rows of one metric file, gathered unit by unit (a log entry, a CSV row, a
record, a line) as every format here reads them."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ...load_report import FileReport
from ...schema import TIME


@dataclass
class MetricRows:
    steps: list = field(default_factory=list)
    metrics: list = field(default_factory=list)
    values: list = field(default_factory=list)
    refs: list = field(default_factory=list)  # the line (or record) each row came from
    times: list = field(default_factory=list)  # as the file gives them, when it does
    _closed: int = 0  # rows up to here belong to units already counted

    def add(self, step, metric: str, value: float, ref: int, time=None) -> None:
        self.steps.append(step)
        self.metrics.append(metric)
        self.values.append(value)
        self.refs.append(ref)
        self.times.append(time)

    def close(self, rep: FileReport, unit: int, reason: str) -> None:
        """Count unit `unit` parsed if it gave a row since the last one, else skipped for `reason`."""
        if len(self.values) > self._closed:
            rep.parsed += 1
        else:
            rep.skip(unit, reason)
        self._closed = len(self.values)

    def frame(self, source: str, run: str, times: pd.Series | None = None) -> pd.DataFrame:
        """The rows, `ref` = file:line (or record); without `times` they have no time (NaT): the
        file did not say when."""
        return pd.DataFrame({
            "time": times if times is not None else pd.Series(pd.NaT, index=range(len(self.values)), dtype=TIME),
            "run": run, "step": pd.array(self.steps, dtype="Int64"), "metric": self.metrics, "value": self.values,
            "source": source, "ref": [f"{source}:{k}" for k in self.refs],
        })
