"""`nvidia-smi dmon` (per-GPU) and `nvidia-smi pmon` (per-process) captures.

Any `-s` selection (the column set is read from the `#` header; a later header with other columns
starts a new segment, as when two captures were appended to one file), with `-o D`, `-o T`,
`-o DT` or no time at all. A time-of-day-only file takes its date from the incident (`ctx.date`:
the other sources or incident.toml), never from today, and rolls over midnight when the clock goes
back. What nvidia-smi prints instead of a number (`-`, `ERR!`) is missing and named in `state`.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...clock import align
from ...incident import from_frames
from .. import registry
from ..registry import LoadContext
from .fields import (
    DMON_COLUMNS,
    MISSING,
    PMON_COLUMNS,
    QUERY_FIELDS,
    integers,
    join_states,
    parse_numbers,
)
from .gpu_errors import ErrorLines, events_frame, state_events
from .paste import unwrap, unwrap_head

DMON = "nvidia-smi-dmon"
PMON = "nvidia-smi-pmon"
_TIME_COLS = ("date", "time")
_VALUE = re.compile(r"-?\d+(?:\.\d+)?|-|\d{8}|\d{2}:\d{2}:\d{2}")


def _columns(text: str) -> list[str] | None:
    """The column names of a `# gpu pwr ...` header line, or None when the line is not one."""
    s = text.strip().removeprefix("\\")  # a markdown paste escapes the hash: "\# gpu pwr"
    if not s.startswith("#"):
        return None
    cols = s.lstrip("#").lower().split()
    if "gpu" not in cols or not any(c in DMON_COLUMNS or c in PMON_COLUMNS for c in cols if c != "gpu"):
        return None
    return cols


def _header(content: list[tuple[int, str]]) -> list[str] | None:
    """The first header among a capture's first lines (prose or a prompt may come before it)."""
    for _, s in content[:20]:
        cols = _columns(s)
        if cols is not None:
            return cols
    return None


def sniff_dmon(path: Path, head: bytes) -> float:
    content = unwrap_head(head).content()
    cols = _header(content)
    if not cols or "pid" in cols:
        return 0.0
    return 0.9 if _columns(content[0][1]) else 0.85


def sniff_pmon(path: Path, head: bytes) -> float:
    content = unwrap_head(head).content()
    cols = _header(content)
    if not cols or "pid" not in cols or "command" not in cols:
        return 0.0
    return 0.9 if _columns(content[0][1]) else 0.85


# dmon/pmon may carry only a time of day: phase 1 borrows the date from the other sources. (The
# decorator next to the function registers first: dmon, then pmon.)
@registry.format(PMON, sniff=sniff_pmon, phase=1, doc="nvidia-smi pmon (per-process utilization and framebuffer memory)")
@registry.format(DMON, sniff=sniff_dmon, phase=1, doc="nvidia-smi dmon (any -s selection, -o D/T/DT or none)")
def load(path: Path, ctx: LoadContext):
    data = path.read_bytes()
    fast = _columnar(data)
    if fast is not None:
        names, raw, row_lines, skips = fast
        per_process = "pid" in names
        rep = ctx.report(path, PMON if per_process else DMON)
        rep.read = data.count(b"\n")  # (a plain stream ends every line with one)
        for reason, lines in sorted(skips.items(), key=lambda kv: kv[1][0]):
            rep.skip_lines(lines, reason)
        return _frames([_frame(names, raw, row_lines, per_process, ctx, rep, {})], per_process, ctx, rep,
                       ErrorLines(), [])
    paste = unwrap(data.decode("utf-8", "replace"))  # what read_paste would read, not read again
    cols = _header(paste.content()) or []
    per_process = "pid" in cols
    rep = ctx.report(path, PMON if per_process else DMON)
    rep.read = len(paste.lines)
    segments: list[tuple[list[str], list[list[str]], list[int]]] = []
    found = ErrorLines()
    header_reason = "header line"
    units_next = False
    previous = 0  # the line of the last sample: an error line gets its time
    content = paste.content()
    last = content[-1][0] if content else 0
    cut: dict[int, str] = {}  # line -> the column a cut-off line ends in
    for i, (line, wrap) in enumerate(zip(paste.lines, paste.wrapping, strict=True), start=1):
        s = line.strip()
        if wrap is not None or not s:
            rep.skip(i, wrap or "blank line")
            found.end()
            continue
        if s.removeprefix("\\").startswith("#"):
            names = _columns(s)
            if names is not None:
                new = not segments or names != segments[-1][0]
                if new:
                    segments.append((names, [], []))
                header_reason = "header line" if new else "repeated header line"
                rep.skip(i, header_reason)
                units_next = True
            elif units_next:
                rep.skip(i, header_reason)  # the units line under a header
                units_next = False
            else:
                rep.skip(i, "comment line")
            continue
        units_next = False
        if not segments:
            rep.skip(i, "text before the dmon/pmon header")
            continue
        names, rows, row_lines = segments[-1]
        cells = s.split(None, len(names) - 1) if per_process else s.split()
        if len(cells) == len(names):
            # (a header cut or garbled on its way may name no pid column)
            if per_process and "pid" in names and cells[names.index("pid")] == "-":
                rep.skip(i, "pmon row with no process on the GPU")
                continue
            rows.append(cells)
            row_lines.append(i)
            previous = i
            found.end()
            continue
        if found.feed(s, i, after=previous):
            rep.parsed += 1
            continue
        written = _written(cells) if i == last and not per_process else []
        if 1 < len(written) < len(names):
            # A capture killed mid-line: the columns written are kept, the rest are missing.
            rows.append(written + ["-"] * (len(names) - len(written)))
            row_lines.append(i)
            cut[i] = names[len(written) - 1]
            rep.assume("the last line was cut off mid-write: its row keeps the columns written before the cut")
            continue
        what = "truncated last line: " if i == last else ""
        rep.bad(i, f"{len(names)} whitespace-separated columns ({' '.join(names)})", what + line)
    parts = [_frame(names, _text_frame(names, rows), row_lines, per_process, ctx, rep, cut)
             for names, rows, row_lines in segments]
    return _frames(parts, per_process, ctx, rep, found, paste.quirks)


def _frames(parts: list[pd.DataFrame], per_process: bool, ctx: LoadContext, rep, found: ErrorLines,
            quirks: list[str]):
    """The Incident of a capture's typed segments and the error lines found among them."""
    parts = [p for p in parts if len(p)]
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    for q in quirks:
        rep.assume(q)
    if not out.empty:
        out["host"] = ctx.host
        out["source"] = rep.path
    frame = "gpu_processes" if per_process else "gpus"
    frames = {frame: out}
    events = []
    if found.errors:
        time_at = dict(zip(out["line"], out["time"], strict=True)) if len(out) else {}
        events.append(events_frame(found.errors, ctx, rep.path, [time_at.get(e.after, pd.NaT) for e in found.errors]))
        rep.assume("error lines carry no time: each gets the time of the sample before it")
    if not per_process and not out.empty:
        events.append(state_events(out, rep.path))
    events = [e for e in events if e is not None]
    if events:
        frames["events"] = pd.concat(events, ignore_index=True)
    return from_frames(rep, **frames)


def _text_frame(cols: list[str], rows: list[list[str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=cols, dtype="string") if rows else pd.DataFrame(
        {c: pd.Series(dtype="string") for c in cols}
    )


_PLAIN = bytes(range(0x20, 0x7F)) + b"\n"


def _columnar(data: bytes) -> tuple[list[str], pd.DataFrame, list[int], dict[str, np.ndarray]] | None:
    """A plain dmon/pmon stream (`nvidia-smi dmon -o DT > gpu.log`: its two header lines, then
    samples of as many columns, the header pair perhaps repeated) cut into columns by Arrow in one
    pass: (column names, the samples' text per column, their line numbers, the skipped lines by
    reason), or None for anything else (a paste, an error line, a blank or cut line, a prompt,
    text that is not printable ASCII), which the line path reads and names. (Python's str.split
    and Arrow's split on whitespace disagree on \x0b, \x0c and \x1c-\x1f; CR, ESC and tabs
    are a terminal's or an editor's, which the paste reader cleans line by line.)"""

    if not data or data.translate(None, _PLAIN):  # what is left once every plain byte is deleted
        return None
    raw = np.frombuffer(data, np.uint8)
    ends = np.flatnonzero(raw == 10)
    if len(ends) == 0 or ends[-1] != len(data) - 1:
        return None  # a last line without its newline may be cut mid-write
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
    if (ends == starts).any():
        return None  # a blank line: the line path counts it
    offsets = np.concatenate(([0], ends + 1)).astype(np.int32 if len(data) < 2**31 else np.int64)
    kind = pa.string() if offsets.dtype == np.int32 else pa.large_string()
    lines = pa.Array.from_buffers(kind, len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    lines = pc.utf8_trim_whitespace(lines)
    hashed = raw[starts] == ord("#")
    heads = np.flatnonzero(hashed)
    if len(heads) < 2 or heads[0] != 0 or heads[1] != 1 or len(heads) % 2 or 2 * len(heads) > len(ends):
        return None  # (a file mostly of '#' lines is a commented-out paste to the line path)
    names = _columns(lines[0].as_py())
    if names is None or _columns(lines[1].as_py()) is not None:
        return None
    if (heads[1::2] != heads[0::2] + 1).any() or not all(
            pc.all(pc.equal(pc.take(lines, pa.array(heads[k::2])), lines[k])).as_py() for k in (0, 1)):
        return None  # header lines that are not the first pair again
    per_process = "pid" in names
    samples = np.flatnonzero(~hashed)
    cells = pc.utf8_split_whitespace(pc.take(lines, pa.array(samples)),
                                     max_splits=len(names) - 1 if per_process else None)
    if not pc.all(pc.equal(pc.list_value_length(cells), len(names))).as_py():
        return None
    columns = {c: pc.list_element(cells, j) for j, c in enumerate(names)}
    if not pc.all(pc.match_substring_regex(columns[names[0]], r"^[0-9:]+$")).as_py():
        return None  # a line led by a word (a command line, a prompt) that has as many words as a sample
    row_lines = samples + 1
    skips = {"header line": heads[:2] + 1, "repeated header line": heads[2:] + 1}
    if per_process:
        idle = pc.equal(columns["pid"], "-").to_numpy(zero_copy_only=False)
        skips["pmon row with no process on the GPU"] = row_lines[idle]
        keep = pa.array(~idle)
        columns = {c: pc.filter(v, keep) for c, v in columns.items()}
        row_lines = row_lines[~idle]
    raw_text = pd.DataFrame({c: pd.array(v, dtype="string") for c, v in columns.items()})
    return names, raw_text, row_lines.tolist(), {k: v for k, v in skips.items() if len(v)}


def _written(cells: list[str]) -> list[str]:
    """The values a cut-off line holds before the cut (and whatever text was glued after it)."""
    out = []
    for c in cells:
        if _VALUE.fullmatch(c):
            out.append(c)
            continue
        m = _VALUE.match(c)
        if m:
            out.append(m.group())
        break
    return out


def _frame(cols: list[str], raw: pd.DataFrame, row_lines: list[int], per_process: bool,
           ctx: LoadContext, rep, cut: dict[int, str]) -> pd.DataFrame:
    """One segment's samples (one header's columns, as text) -> typed columns; a row whose GPU
    index is not a number is a bad line, any other field that is not a number is missing and
    named in `state`."""
    table = PMON_COLUMNS if per_process else DMON_COLUMNS
    out = pd.DataFrame(index=raw.index)
    odd: dict[str, pd.Series] = {}
    for c in cols:
        if c in _TIME_COLS:
            continue
        field = QUERY_FIELDS[table[c]] if c in table else None
        if field is not None and field.kind == "str":
            out[field.column] = raw[c].where(~raw[c].isin(MISSING)).str.strip()
            continue
        name = _column_of(c, table, per_process)
        out[name], odd[name] = parse_numbers(raw[c], None, 1.0)
    out["time"], bad_time = _times(raw, ctx, rep)
    if bad_time.any():
        odd["time"] = raw["date"].str.cat(raw["time"], sep=" ") if "date" in raw.columns else raw.get("time")
        odd["time"] = odd["time"].where(bad_time)
    out["line"] = pd.array(row_lines, dtype="Int64")
    key = "gpu" if "gpu" in out.columns else None
    bad = odd.pop(key).notna() if key else pd.Series(False, index=raw.index)
    if per_process and "pid" in out.columns:
        bad |= odd.pop("pid").notna()
    for c in ("gpu", "pid"):
        if c in out.columns:
            out[c], broken = integers(out[c])
            bad |= broken
    for j in np.flatnonzero(bad.to_numpy()):
        rep.bad(row_lines[j], "a GPU index (and a PID) in the first columns", " ".join(raw.iloc[j].tolist()))
    for j, n in enumerate(row_lines):
        if n in cut:
            name = _column_of(cut[n], table, per_process)
            note = pd.Series(pd.NA, index=raw.index, dtype="string")
            note.iloc[j] = f"{raw[cut[n]].iloc[j]} (cut off)"
            odd[name] = note if name not in odd else odd[name].mask(note.notna(), note)
    odd = {k: v for k, v in odd.items() if v.notna().any()}
    if odd:
        out["state"] = join_states(odd, raw.index)
    out = out[~bad.to_numpy()].reset_index(drop=True)
    rep.parsed += len(out)
    return out


_CLOCK_DIGITS = [0, 1, 3, 4, 6, 7]


def _times_of_day(text: pd.Series) -> pd.Series:
    """`pd.to_timedelta(text, errors="coerce")`: dmon's `HH:MM:SS`, every value exactly that, read
    from the column's bytes in one pass (to_timedelta parses each text alone: 0.3 s a day of
    8 GPUs); any other column through to_timedelta itself."""
    arr = pa.array(text.array).cast(pa.large_string())
    n = len(arr)
    if n and not arr.null_count:
        offsets = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset:arr.offset + n + 1]
        if offsets[-1] - offsets[0] == 8 * n and (np.diff(offsets) == 8).all():
            clock = np.frombuffer(arr.buffers()[2], np.uint8)[offsets[0]:offsets[-1]].reshape(n, 8)
            d = (clock[:, _CLOCK_DIGITS] - ord("0")).astype(np.int64)
            h, m, sec = d[:, 0] * 10 + d[:, 1], d[:, 2] * 10 + d[:, 3], d[:, 4] * 10 + d[:, 5]
            if ((d < 10).all() and (clock[:, [2, 5]] == ord(":")).all() and (m < 60).all() and (sec < 60).all()):
                return pd.Series(pd.to_timedelta(h * 3600 + m * 60 + sec, unit="s"), index=text.index)
    return pd.to_timedelta(text, errors="coerce")


def _column_of(heading: str, table: dict, per_process: bool) -> str:
    """The frame column of a dmon/pmon heading: its query field's, or `dmon_<heading>`."""
    return QUERY_FIELDS[table[heading]].column if heading in table else f"{'pmon' if per_process else 'dmon'}_{heading}"


def _times(raw: pd.DataFrame, ctx: LoadContext, rep) -> tuple[pd.Series, pd.Series]:
    """(UTC times, rows whose date/time text is unreadable)."""
    n = len(raw)
    none = pd.Series(pd.NaT, index=raw.index, dtype="datetime64[us, UTC]")
    if "time" not in raw.columns:
        rep.assume("captured without -o T: rows carry no time")
        return none, pd.Series(False, index=raw.index)
    tod = _times_of_day(raw["time"])
    if "date" in raw.columns:
        day = pd.to_datetime(raw["date"], format="%Y%m%d", errors="coerce")
    else:
        if ctx.date is None:
            rep.assume("time of day only and no date known (set date in incident.toml): rows carry no time")
            return none, tod.isna()
        # The clock going back by more than 12 h between rows is midnight, not a jump. An
        # unreadable time counts as 00:00 here (its row is dropped as bad).
        secs = np.nan_to_num(tod.dt.total_seconds().to_numpy(), nan=0.0)
        days = align.date_times_of_day(secs, slack_s=12 * 3600, start=ctx.date)
        day = pd.Series(days.astype("datetime64[us]"), index=raw.index)
        rep.assume(f"time of day only: date {ctx.date.isoformat() if isinstance(ctx.date, dt.date) else ctx.date} "
                   "taken from the incident (other sources or incident.toml)")
        if n and days[-1] != days[0]:
            rep.assume("clock went back past midnight: later rows are on the next day")
    rep.assume(align.zone_assumption(ctx.timezone))
    stamp = day + tod
    return align.localize(stamp, ctx.timezone), stamp.isna()
