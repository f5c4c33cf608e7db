"""wandb CSV exports: a run's history (one column per metric) and the web UI's chart export.

A history export holds every logged row (`_step`, `_timestamp`, one column per metric; or the
minimal `step,<metric>` some projects commit). A chart export (`Step`, `<run> - <metric>`,
`<run> - <metric>__MIN`, `__MAX`) holds what a chart plotted: when the UI buckets points, each
row is a bucket and __MIN/__MAX its range, so the load report calls it sampled. Neither form
carries a time for chart exports; their rows have step and no time.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import SourceFormatError
from ..incident import Incident, from_frames
from ..schema import TIME
from .registry import Format, LoadContext, register
from .wandb_frames import canonical_metric, epoch_times, int_steps

_CHART_COL = re.compile(r"^(?P<run>.+?) - (?P<metric>.+?)(?P<agg>__MIN|__MAX)?$")
_METRICISH = re.compile(r"^[\w.-]+(/[\w./-]+)+$|^_\w+$")


def _header(head: bytes) -> list[str]:
    text = head.decode("utf-8-sig", "replace")
    first = text.split("\n", 1)[0].rstrip("\r")
    try:
        return next(csv.reader([first]))
    except (csv.Error, StopIteration):
        return []


def sniff_chart(path: Path, head: bytes) -> float:
    cols = _header(head)
    if len(cols) >= 2 and cols[0] == "Step" and all(_CHART_COL.match(c) for c in cols[1:]):
        return 0.95
    return 0.0


def sniff_history(path: Path, head: bytes) -> float:
    cols = _header(head)
    if len(cols) < 2 or len(set(cols)) != len(cols):
        return 0.0
    if "_step" in cols and ("_timestamp" in cols or "_runtime" in cols):
        return 0.9
    # The minimal form: a step column and metric keys shaped group/name.
    if cols[0] in ("step", "_step") and all(_METRICISH.match(c) for c in cols[1:]):
        return 0.6
    return 0.0


def _read_csv(path: Path, rep) -> pd.DataFrame:
    """Every row with as many cells as the header; other lines counted with their reason.

    Read row by row with the csv module: a cut or ragged line (a download interrupted, a paste)
    costs that line only, never the file.
    """
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    lines = text.splitlines()
    rep.read = len(lines)
    if not lines:
        return pd.DataFrame()
    try:
        header = next(csv.reader([lines[0]]))
    except (csv.Error, StopIteration):
        header = []
    rep.skip(1, "header line")
    rows, width = [], len(header)
    for i, line in enumerate(lines[1:], 2):
        if not line.strip():
            rep.skip(i, "blank line")
            continue
        try:
            cells = next(csv.reader([line]))
        except (csv.Error, StopIteration) as e:
            rep.bad(i, f"a CSV row of {width} cells", f"{line[:60]} ({e})")
            continue
        if len(cells) != width:
            last = i == len(lines)
            if last and len(cells) < width:
                rep.skip(i, "incomplete last row (the file ends inside it)")
            else:
                rep.bad(i, f"a CSV row of {width} cells", f"{len(cells)} cells")
            continue
        rows.append(cells)
        rep.parsed += 1
    # pandas names an unnamed index column ""; duplicate names would merge columns.
    names = [h if h else f"Unnamed: {j}" for j, h in enumerate(header)]
    return pd.DataFrame(rows, columns=pd.Index(names, dtype=object), dtype=object) if len(set(names)) == len(names) \
        else pd.DataFrame(rows, dtype=object)


def _numbers(col: pd.Series) -> pd.Series:
    # wandb writes empty cells where a row did not log the metric: missing, never zero.
    return pd.to_numeric(col.replace({"": np.nan, "NaN": np.nan}), errors="coerce")


def load_history_csv(path: Path, ctx: LoadContext) -> Incident:
    rep = ctx.report(path, "wandb-history-csv")
    df = _read_csv(path, rep)
    if df.empty or not len(df.columns):
        return from_frames(rep)
    step_col = "_step" if "_step" in df else df.columns[0]
    steps = _numbers(df[step_col])
    if "_timestamp" in df:
        times = epoch_times(_numbers(df["_timestamp"])).set_axis(df.index)
    else:
        times = pd.Series(pd.NaT, index=df.index, dtype=TIME)
        rep.notes.append("no _timestamp column: rows have a step but no time")
    run = ctx.options.get("run") or path.stem
    metric_cols = [c for c in df.columns
                   if c not in ("_step", "_timestamp", "_runtime", step_col) and not str(c).startswith("Unnamed: ")]
    parts = []
    for c in metric_cols:
        v = _numbers(df[c])
        has = v.notna() | (df[c] == "NaN")
        parts.append(pd.DataFrame({"time": times[has].reset_index(drop=True), "step": int_steps(steps[has]),
                                   "metric": canonical_metric(c), "value": v[has].to_numpy(), "key": c}))
    metrics = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(metrics):
        metrics["time"] = metrics["time"].astype(TIME)
        metrics["run"] = run
        metrics["source"] = rep.path
    rep.assume(f"run named {run!r} after the file (a history export does not name its run)")
    return from_frames(rep, metrics=metrics)


def load_chart_csv(path: Path, ctx: LoadContext) -> Incident:
    rep = ctx.report(path, "wandb-chart-csv")
    df = _read_csv(path, rep)
    if not len(df.columns) or df.columns[0] != "Step":
        raise SourceFormatError(path, 1, "a chart export header ('Step', '<run> - <metric>', ...)",
                                ",".join(map(str, df.columns[:4])) or "no header", fmt=rep.format)
    steps = _numbers(df["Step"])
    parts = []
    series: dict[tuple[str, str], dict[str, str]] = {}
    for c in df.columns[1:]:
        m = _CHART_COL.match(str(c))
        if m is None:
            raise SourceFormatError(path, 1, "'<run> - <metric>' chart columns", c, fmt=rep.format)
        series.setdefault((m["run"], m["metric"]), {})[m["agg"] or "value"] = c
    for (run, key), cols in series.items():
        if "value" not in cols:
            continue
        v = _numbers(df[cols["value"]])
        has = v.notna()
        part = pd.DataFrame({"step": int_steps(steps[has]), "run": run, "metric": canonical_metric(key),
                             "value": v[has].to_numpy(), "key": key})
        for agg, name in (("__MIN", "value_min"), ("__MAX", "value_max")):
            if agg in cols:
                part[name] = _numbers(df[cols[agg]])[has].to_numpy()
        parts.append(part)
    metrics = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(metrics):
        metrics["time"] = pd.Series(pd.NaT, index=metrics.index, dtype=TIME)
        metrics["source"] = rep.path
    rep.notes.append("sampled: a web UI chart export holds the points the chart drew "
                     "(bucketed when __MIN/__MAX columns are present), not every logged row")
    rep.notes.append("no time column: rows have a step but no time")
    return from_frames(rep, metrics=metrics)


FORMATS = (
    register(Format("wandb-chart-csv", sniff_chart, load_chart_csv,
                    "wandb web UI chart export (Step, '<run> - <metric>', __MIN, __MAX)")),
    register(Format("wandb-history-csv", sniff_history, load_history_csv,
                    "wandb history export CSV (_step, _timestamp, one column per metric)")),
)
