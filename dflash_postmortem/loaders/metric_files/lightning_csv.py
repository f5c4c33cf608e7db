"""Lightning's CSVLogger `metrics.csv` (`<save_dir>/<name>/version_N/metrics.csv`).

One column per metric ever logged, plus `epoch` and `step`; each row holds only what was
logged together (training rows, validation rows, epoch-end rows), the other cells empty. Each
value becomes a `metrics` row at its row's step, under a canonical key (naming.metric_key:
`train_loss` is `train/loss`, `val_loss` `eval/loss`, `lr-AdamW` `train/learning_rate`); `epoch`
is `train/epoch`. The logger writes no time (only very old versions wrote `created_at`): rows
without one have no time (NaT), and the load report says so.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd

from ...clock import align
from ...incident import from_frames
from ...schema import TIME
from .. import registry
from ..registry import LoadContext
from ..training_log.patterns import integer
from .metric_rows import MetricRows
from .naming import metric_key, run_of

FORMAT = "lightning-csv"
_COLUMN = re.compile(r"^[A-Za-z_][\w./ -]{0,200}$")
_TIME_COLUMNS = ("created_at", "timestamp", "time", "wall_time")


def _header(head: bytes) -> list[str]:
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
    try:
        return next(csv.reader([first]), [])
    except csv.Error:
        return []


def sniff(path: Path, head: bytes) -> float:
    cols = _header(head)
    if "step" not in cols or len(set(cols)) != len(cols) or not all(_COLUMN.match(c) for c in cols):
        return 0.0
    if "_step" in cols or "_timestamp" in cols:
        return 0.0  # a wandb history export
    return 0.8 if "epoch" in cols else 0.4


@registry.format(FORMAT, sniff=sniff, doc="Lightning CSVLogger metrics.csv: one column per metric, sparse rows")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    run = run_of(path, ctx)
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        lines = f.read().lstrip("\ufeff").splitlines()
    rep.read = len(lines)
    if not lines:
        return from_frames(rep)
    header = next(csv.reader(lines[:1]), [])
    rep.skip(1, "header")
    step_at = header.index("step") if "step" in header else None
    time_at = next((header.index(c) for c in _TIME_COLUMNS if c in header), None)
    keys = [None if i in (step_at, time_at) else metric_key(c) if c != "epoch" else "train/epoch"
            for i, c in enumerate(header)]
    rows = MetricRows()
    not_numbers = 0
    reader = csv.reader(io.StringIO("\n".join(lines[1:])))
    consumed = 0  # the lines after the header the reader has read
    for row in reader:
        # (a quote left open, in a damaged file, runs a cell over the lines after it: each is
        # counted, the record is no row)
        n, span, consumed = consumed + 2, reader.line_num - consumed, reader.line_num
        if span > 1:
            rep.bad(n, "one line per row", f"a quoted cell running over {span} lines")
            for k in range(1, span):
                rep.skip(n + k, "inside a quoted cell of the line before")
            continue
        if not row:
            rep.skip(n, "blank line")
            continue
        if len(row) != len(header):
            rep.bad(n, f"{len(header)} comma-separated cells", f"{len(row)} cells")
            continue
        step = integer(row[step_at].strip()) if step_at is not None else None
        stamp = row[time_at].strip() if time_at is not None else ""
        for key, cell in zip(keys, row, strict=True):
            cell = cell.strip()
            if key is None or not cell:
                continue
            try:
                value = float(cell)
            except ValueError:
                not_numbers += 1
                continue
            rows.add(step, key, value, n, stamp)
        rows.close(rep, n, "row without a value")
    if not_numbers:
        rep.notes.append(f"{not_numbers} cells that are not numbers (text logged as a metric?): not read")
    frame = rows.frame(rep.path, run, _times(rows.times, ctx, rep) if time_at is not None else None)
    if time_at is None and len(frame):
        rep.assume("metrics.csv carries no time: its rows have no time, placed by step only")
    return from_frames(rep, metrics=frame)


def _times(stamps: list[str], ctx: LoadContext, rep) -> pd.Series:
    """Old loggers' `created_at`: epoch seconds (UTC), or a date and time in the incident's zone."""
    s = pd.Series(stamps, dtype="string")
    seconds = pd.to_numeric(s, errors="coerce")
    if seconds.notna().any():
        return pd.to_datetime(seconds, unit="s", utc=True).astype(TIME)
    rep.assume(f"times without a zone read in {ctx.timezone}")
    return align.localize(pd.to_datetime(s, errors="coerce", format="ISO8601"), ctx.timezone).astype(TIME)
