"""`nvidia-smi dmon` (per-GPU) and `nvidia-smi pmon` (per-process) captures.

Any `-s` selection (the column set is read from the `#` header), with `-o D`, `-o T`, `-o DT` or
no time at all. A time-of-day-only file takes its date from the incident (`ctx.date`: the other
sources or incident.toml), never from today, and rolls over midnight when the clock goes back.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd

from .. import align
from ..incident import from_frames
from .registry import LoadContext
from .smi_fields import DMON_COLUMNS, MISSING, PMON_COLUMNS, QUERY_FIELDS, parse_numbers

DMON = "nvidia-smi-dmon"
PMON = "nvidia-smi-pmon"
_TIME_COLS = ("date", "time")


def _header(head_text: str) -> list[str] | None:
    for line in head_text.splitlines():
        if line.strip():
            s = line.strip()
            if not s.startswith("#"):
                return None
            cols = s.lstrip("#").lower().split()
            return cols if "gpu" in cols else None
    return None


def sniff_dmon(path: Path, head: bytes) -> float:
    cols = _header(head.decode("utf-8", "replace"))
    if not cols or "pid" in cols:
        return 0.0
    return 0.9 if any(c in DMON_COLUMNS for c in cols if c != "gpu") else 0.0


def sniff_pmon(path: Path, head: bytes) -> float:
    cols = _header(head.decode("utf-8", "replace"))
    return 0.9 if cols and "pid" in cols and "command" in cols else 0.0


def load(path: Path, ctx: LoadContext):
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    cols = _header(text) or []
    per_process = "pid" in cols
    rep = ctx.report(path, PMON if per_process else DMON)
    rep.read = len(lines)
    rows, row_lines = [], []
    for i, line in enumerate(lines, start=1):
        s = line.strip()
        if not s:
            rep.skip(i, "blank line")
            continue
        if s.startswith("#"):
            reason = "header line" if i <= 2 else "repeated header line"
            names = s.lstrip("#").lower().split()
            if "gpu" not in names and "idx" not in names:
                rep.bad(i, "a dmon/pmon header", line)
                continue
            if "gpu" in names and names != cols:
                rep.bad(i, f"the same columns as the first header ({' '.join(cols)})", line)
                continue
            rep.skip(i, reason)
            continue
        cells = s.split(None, len(cols) - 1) if per_process else s.split()
        if len(cells) != len(cols):
            what = "truncated last line: " if i == len(lines) else ""
            rep.bad(i, f"{len(cols)} whitespace-separated columns ({' '.join(cols)})", what + line)
            continue
        if per_process and cells[cols.index("pid")] == "-":
            rep.skip(i, "pmon row with no process on the GPU")
            continue
        rows.append(cells)
        row_lines.append(i)
    raw = pd.DataFrame(rows, columns=cols, dtype="string") if rows else pd.DataFrame(
        {c: pd.Series(dtype="string") for c in cols}
    )
    table = PMON_COLUMNS if per_process else DMON_COLUMNS
    out = pd.DataFrame(index=raw.index)
    bad = pd.Series(False, index=raw.index)
    for c in cols:
        if c in _TIME_COLS:
            continue
        field = QUERY_FIELDS[table[c]] if c in table else None
        if field is not None and field.kind == "str":
            out[field.column] = raw[c].where(~raw[c].isin(MISSING)).str.strip()
            continue
        nums, b = parse_numbers(raw[c], None, 1.0)
        bad |= b
        out[field.column if field else f"{'pmon' if per_process else 'dmon'}_{c}"] = nums
    out["time"], bad_time = _times(raw, ctx, rep)
    out["line"] = pd.array(row_lines, dtype="Int64")
    bad |= bad_time
    for j in np.flatnonzero(bad.to_numpy()):
        rep.bad(row_lines[j], "numbers or '-' in every column, and a valid date/time", " ".join(rows[j]))
    out = out[~bad.to_numpy()].reset_index(drop=True)
    rep.parsed = len(out)
    for c in ("gpu", "pid"):
        if c in out.columns:
            out[c] = out[c].astype("Int64")
    out["host"] = ctx.host
    out["source"] = rep.path
    frame = "gpu_processes" if per_process else "gpus"
    return from_frames(rep, **{frame: out})


def _times(raw: pd.DataFrame, ctx: LoadContext, rep) -> tuple[pd.Series, pd.Series]:
    """(UTC times, rows whose date/time text is unreadable)."""
    n = len(raw)
    none = pd.Series(pd.NaT, index=raw.index, dtype="datetime64[us, UTC]")
    if "time" not in raw.columns:
        rep.assume("captured without -o T: rows carry no time")
        return none, pd.Series(False, index=raw.index)
    tod = pd.to_timedelta(raw["time"], errors="coerce")
    if "date" in raw.columns:
        day = pd.to_datetime(raw["date"], format="%Y%m%d", errors="coerce")
    else:
        if ctx.date is None:
            rep.assume("time of day only and no date known (set date in incident.toml): rows carry no time")
            return none, tod.isna()
        # The clock going back by more than 12 h between rows is midnight, not a jump.
        secs = tod.dt.total_seconds().to_numpy()
        back = np.zeros(n, dtype=np.int64)
        if n > 1:
            back[1:] = np.cumsum(np.diff(np.nan_to_num(secs, nan=0.0)) < -12 * 3600)
        day = pd.Series(pd.Timestamp(ctx.date), index=raw.index) + pd.to_timedelta(back, unit="D")
        rep.assume(f"time of day only: date {ctx.date.isoformat() if isinstance(ctx.date, dt.date) else ctx.date} "
                   "taken from the incident (other sources or incident.toml)")
        if back.any():
            rep.assume("clock went back past midnight: later rows are on the next day")
    rep.assume(align.zone_assumption(ctx.timezone))
    stamp = day + tod
    return align.localize(stamp, ctx.timezone), stamp.isna()
