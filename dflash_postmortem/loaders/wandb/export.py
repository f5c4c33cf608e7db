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

from ...errors import SourceFormatError
from ...incident import Incident, RunInfo, from_frames
from ...schema import TIME
from .. import registry
from ..registry import LoadContext
from .frames import epoch_times, int_steps
from .keys import HISTORY_SPECIAL, canonical_metric

_CHART_COL = re.compile(r"^(?P<run>.+?) - (?P<metric>.+?)(?P<agg>__MIN|__MAX)?$")
# The runs table's own columns (the rest are config keys, then summary keys, each sorted).
_TABLE_COLUMNS = {"State", "Notes", "User", "Tags", "Created", "Runtime", "Sweep", "End Time", "ID", "Updated",
                  "Hostname", "Group", "Job Type", "Commit", "GitHub", "Description", "Heartbeat", "Run Path"}
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
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
    if len(cols) < 2 or not cols[0] or not all(_CHART_COL.match(c) for c in cols[1:]):
        return 0.0
    if cols[0] == "Step":
        return 0.95
    # The x axis is another key when the chart plotted against one: then the header must look
    # like the UI writes it (every name quoted) and the rows like a table of numbers.
    return 0.85 if head.lstrip().startswith(b'"') and _numeric_rows(head, len(cols)) else 0.0


def _numeric_rows(head: bytes, width: int) -> bool:
    lines = head.decode("utf-8", "replace").splitlines()[1:6]
    try:
        rows = [r for r in csv.reader(lines[:-1] if len(lines) > 1 else lines) if r]
    except csv.Error:
        return False
    return bool(rows) and all(len(r) == width and _NUMBER.match(r[0]) for r in rows)


def sniff_runs_table(path: Path, head: bytes) -> float:
    cols = _header(head)
    if cols and cols[0] == "Name" and len(_TABLE_COLUMNS.intersection(cols)) >= 2:
        return 0.9
    return 0.0


def sniff_history(path: Path, head: bytes) -> float:
    cols = _header(head)
    if len(cols) < 2 or len(set(cols)) != len(cols):
        return 0.0
    if "_wandb" in cols or {"name", "id"} <= set(cols):
        return 0.0  # one run a row (an Api().runs() dump of summaries), not one step a row
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
    if len(set(names)) != len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise SourceFormatError(path, 1, "a CSV header of distinct column names", ", ".join(repeated)[:100],
                                fmt=rep.format)
    return pd.DataFrame(rows, columns=pd.Index(names, dtype=object), dtype=object)


def _numbers(col: pd.Series) -> pd.Series:
    # wandb writes empty cells where a row did not log the metric: missing, never zero.
    return pd.to_numeric(col.replace({"": np.nan, "NaN": np.nan}), errors="coerce")


WANDB_CHART_CSV_FORMAT = "wandb-chart-csv"


@registry.format(
    WANDB_CHART_CSV_FORMAT, sniff=sniff_chart,
    doc="wandb web UI chart export (Step or an x-axis key, '<run> - <metric>', __MIN, __MAX)",
)
def load_chart_csv(path: Path, ctx: LoadContext) -> Incident:
    rep = ctx.report(path, WANDB_CHART_CSV_FORMAT)
    df = _read_csv(path, rep)
    if len(df.columns) < 2 or not all(_CHART_COL.match(str(c)) for c in df.columns[1:]):
        raise SourceFormatError(path, 1, "a chart export header ('Step' or an x-axis key, '<run> - <metric>', ...)",
                                ",".join(map(str, df.columns[:4])) or "no header", fmt=rep.format)
    x_name = str(df.columns[0])
    x = _numbers(df[x_name])
    series: dict[tuple[str, str], dict[str, str]] = {}
    for c in df.columns[1:]:
        m = _CHART_COL.match(str(c))
        series.setdefault((m["run"], m["metric"]), {})[m["agg"] or "value"] = c
    parts = []
    for (run, key), cols in series.items():
        if "value" not in cols or (key == "_step" and x_name != "Step"):
            continue
        v = _numbers(df[cols["value"]])
        has = v.notna()
        if x_name == "Step":
            steps = x[has]
        elif (run, "_step") in series and "value" in series[(run, "_step")]:
            # Plotted against another key, the chart still exports each run's own _step.
            steps = _numbers(df[series[(run, "_step")]["value"]])[has]
        else:
            steps = pd.Series(np.nan, index=v.index)[has]
        part = pd.DataFrame({"step": int_steps(steps), "run": run, "metric": canonical_metric(key),
                             "value": v[has].to_numpy(), "key": key})
        if x_name != "Step":
            part["x_axis"], part["x"] = x_name, x[has].to_numpy()
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
    if x_name != "Step":
        rep.notes.append(f"x axis {x_name!r}: steps from each run's own _step series where exported")
    rep.notes.append("no time column: rows have a step but no time")
    return from_frames(rep, metrics=metrics)


def _cell(text: str):
    """A runs-table cell as the value it shows: numbers, booleans, text; empty and '-' are None."""
    if text in ("", "-"):
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        number = float(text)
    except ValueError:
        return text
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


def _config_then_summary(keys: list[str]) -> int:
    """Where the summary keys start: the table lists config keys, then summary keys, each in
    alphabetical order, so the summary starts where that order starts again."""
    for i in range(1, len(keys)):
        if keys[i].lower() < keys[i - 1].lower():
            return i
    return 0  # one sorted run of keys: which kind they are cannot be told, call them summary


WANDB_RUNS_TABLE_FORMAT = "wandb-runs-table"


@registry.format(
    WANDB_RUNS_TABLE_FORMAT, sniff=sniff_runs_table,
    doc="wandb project runs table exported as CSV (Name, State, Created, Runtime, config, summary)",
)
def load_runs_table(path: Path, ctx: LoadContext) -> Incident:
    """The project page's runs table exported as CSV: one run a row, its state, times, host."""
    rep = ctx.report(path, WANDB_RUNS_TABLE_FORMAT)
    df = _read_csv(path, rep)
    if not len(df.columns) or df.columns[0] != "Name":
        raise SourceFormatError(path, 1, "a runs table header starting with 'Name'",
                                ",".join(map(str, df.columns[:4])) or "no header", fmt=rep.format)
    keys = [c for c in df.columns if c not in _TABLE_COLUMNS and c != "Name"]
    cut = _config_then_summary(keys)
    config_keys, summary_keys = keys[:cut], keys[cut:]
    if keys:
        rep.notes.append(f"{len(config_keys)} config and {len(summary_keys)} summary columns, told apart by where "
                         "their alphabetical order starts again")
    runs: dict[str, RunInfo] = {}
    names = df["Name"].tolist() if "Name" in df else []
    repeated = {n for n in names if names.count(n) > 1}
    rows = []
    for i, rec in enumerate(df.to_dict("records")):
        name = rec.get("Name") or f"row {i + 2}"
        created = _utc(rec.get("Created"))
        runtime = _cell(rec.get("Runtime", ""))
        runtime = float(runtime) if isinstance(runtime, (int, float)) and not isinstance(runtime, bool) else None
        ended = _utc(rec.get("End Time"))
        if ended is None and created is not None and runtime is not None:
            ended = created + pd.Timedelta(seconds=runtime)
        started = created if created is not None else (ended - pd.Timedelta(seconds=runtime)
                                                       if ended is not None and runtime is not None else None)
        run = name if name not in repeated else f"{name} ({rec.get('ID') or rec.get('Created') or i + 2})"
        state = rec.get("State") or None
        host = rec.get("Hostname") or ctx.host
        runs[run] = RunInfo(
            run=run, id=rec.get("ID") or None, name=name, host=host, started=started, ended=ended,
            config={k: v for k in config_keys if (v := _cell(rec[k])) is not None},
            summary={k: v for k in summary_keys if (v := _cell(rec[k])) is not None}, source=rep.path,
        )
        ref = f"{rep.path}:{i + 2}"
        if started is not None:
            rows.append((started, host, run, "run_start", f"wandb run {name} created", ref, state))
        if ended is not None and state != "running":
            what = f"state {state}" if state else "end"
            rows.append((ended, host, run, "run_end", f"wandb run {name}: {what} after {runtime or 0:.0f} s", ref, state))
    events = pd.DataFrame()
    if rows:
        t, host, run, kind, message, ref, state = zip(*rows, strict=True)
        events = pd.DataFrame({"time": pd.Series(t, dtype=object).astype(TIME), "host": host, "run": run,
                               "kind": kind, "message": message, "source": rep.path, "ref": ref, "state": state})
    inc = from_frames(rep, events=events)
    inc.runs.update(runs)
    return inc


def _utc(text) -> pd.Timestamp | None:
    """The table's times are UTC ('2026-05-25T14:08:33.000Z')."""
    if not text:
        return None
    t = pd.to_datetime(pd.Series([text]), errors="coerce", utc=True, format="ISO8601").iloc[0]
    return None if pd.isna(t) else t


WANDB_HISTORY_CSV_FORMAT = "wandb-history-csv"


@registry.format(
    WANDB_HISTORY_CSV_FORMAT, sniff=sniff_history, doc="wandb history export CSV (_step, _timestamp, one column per metric)",
)
def load_history_csv(path: Path, ctx: LoadContext) -> Incident:
    rep = ctx.report(path, WANDB_HISTORY_CSV_FORMAT)
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
                   if c not in (*HISTORY_SPECIAL, step_col) and not str(c).startswith("Unnamed: ")]
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
