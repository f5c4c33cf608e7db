"""`nvidia-smi --query-gpu=... / --query-compute-apps=... --format=csv[,noheader][,nounits]`,
single snapshots or `-l` / `-lms` streams.

Two paths read the same files: a pyarrow fast path for clean files (the multi-day 1 Hz streams),
and a line-by-line path that accounts for every odd line (blank, repeated header, truncated last
line, an error nvidia-smi printed mid-stream, a `pdsh` host prefix). The fast path hands over to
the line path whenever the file is not perfectly regular, so the load report is exact either way.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from .. import align, schema
from ..errors import SourceFormatError
from ..incident import from_frames
from .registry import LoadContext
from .smi_errors import continues, events_frame, extend, match_error
from .smi_fields import (
    APPS_FIELDS,
    MISSING,
    QUERY_FIELDS,
    Field,
    extra_column,
    field_for,
    field_key,
    looks_like_field,
    parse_numbers,
)

FORMAT = "nvidia-smi-query-csv"
TIME_FORMAT = "%Y/%m/%d %H:%M:%S.%f"
_STAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")
_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]{8,}$")
_WITH_UNIT = re.compile(r"^-?\d+(\.\d+)? (MiB|MB|%|W|MHz)$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
# `pdsh -w node[1-4] nvidia-smi ...` puts "host: " before every line.
_PDSH = re.compile(r"^(?P<host>[A-Za-z][\w.-]*): (?P<rest>.*)$")
# An int column whose values exceed this cannot hold GPU indices, so it holds PIDs.
_MAX_GPU_INDEX = 64


def header_fields(line: str) -> list[str] | None:
    """The field names of a header line, or None when the line is not a query header."""
    cells = [c.strip() for c in line.split(",")]
    if not cells or not all(looks_like_field(c) for c in cells):
        return None
    if not any(field_for(c) is not None for c in cells):
        return None
    return cells


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.split(",")]


def _looks_like_value(cell: str) -> bool:
    return bool(_STAMP.match(cell) or _UUID.match(cell) or _WITH_UNIT.match(cell) or cell in MISSING)


def sniff(path: Path, head: bytes) -> float:
    lines = [ln for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()]
    if not lines:
        return 0.0
    if header_fields(lines[0]):
        return 0.95
    first = lines[0]
    m = _PDSH.match(first)
    if m and not _STAMP.match(first[:23]):
        first = m.group("rest")
    cells = _cells(first)
    if _STAMP.match(cells[0]) and len(cells) >= 2:
        return 0.8
    if len(cells) >= 2 and any(_looks_like_value(c) for c in cells) and all(
        _looks_like_value(c) or _NUMBER.match(c) or re.match(r"^[\w .()/+-]+$", c) for c in cells
    ):
        return 0.5
    return 0.0


def infer_apps_fields(rows: list[list[str]]) -> list[str] | None:
    """The field list of a header-less compute-apps capture, when its content says so unambiguously:
    [timestamp,] [gpu_uuid,] pid, process_name, used_gpu_memory.

    `--query-gpu=timestamp,uuid,index,name,memory.used` has the same shape; PIDs above the largest
    possible GPU index tell the two apart, and when they cannot, nothing is inferred.
    """
    if not rows:
        return None
    n = len(rows[0])
    if any(len(r) != n for r in rows) or n < 3:
        return None
    fields = []
    col = 0
    if all(_STAMP.match(r[0]) for r in rows):
        fields.append("timestamp")
        col += 1
    if col < n and all(_UUID.match(r[col]) for r in rows):
        fields.append("gpu_uuid")
        col += 1
    if n - col != 3:
        return None
    pids, names, mems = ([r[col + k] for r in rows] for k in range(3))
    if not all(p.isdigit() for p in pids) or max(int(p) for p in pids) <= _MAX_GPU_INDEX:
        return None
    if not all(_WITH_UNIT.match(m) and m.endswith("MiB") or m in MISSING or m.isdigit() for m in mems):
        return None
    if any(_NUMBER.match(x) for x in names):
        return None
    return fields + ["pid", "process_name", "used_gpu_memory"]


def resolve_fields(header: list[str]) -> tuple[list[Field], list[str]]:
    """One Field per header cell; unknown fields (and a second field for a column already taken)
    are kept as extra text/number columns under their own names. Returns (fields, notes)."""
    is_apps = any(field_key(h) in APPS_FIELDS for h in header)
    out, taken, unknown = [], set(), []
    for h in header:
        key = field_key(h)
        f = QUERY_FIELDS.get("process_name" if is_apps and key == "name" else key)
        if f is None:
            unknown.append(h)
            f = Field(extra_column(h), "str")
        elif f.column in taken:
            f = Field(extra_column(h), f.kind, f.unit, f.scale)
        taken.add(f.column)
        out.append(f)
    notes = [f"fields not in the field table, kept as text columns: {', '.join(unknown)}"] if unknown else []
    return out, notes


def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    if not head.strip() and path.stat().st_size == len(head):
        rep.read = head.count(b"\n")
        rep.skip(None, "blank line", rep.read)
        rep.notes.append("empty: a noheader compute-apps query prints nothing when no process runs")
        return from_frames(rep)
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    header = header_fields(first)
    if header is not None and not _PDSH.match(first):
        fast = read_fast(path, header, ctx, rep)
        if fast is not None:
            return fast
    return read_lines(path, path.read_text(encoding="utf-8", errors="replace"), header, ctx, rep)


def _kind_of(fields: list[Field]) -> str:
    per_process = {QUERY_FIELDS[k].column for k in APPS_FIELDS}
    return "gpu_processes" if any(f.column in per_process for f in fields) else "gpus"


def _finish(rep, ctx: LoadContext, out: pd.DataFrame, fields: list[Field], events=None):
    if not any(f.kind == "time" for f in fields):
        out["time"] = pd.Series(pd.NaT, index=out.index, dtype="datetime64[us, UTC]")
        rep.assume("no timestamp field: rows carry no time")
    else:
        rep.assume(align.zone_assumption(ctx.timezone))
    if "host" not in out.columns:
        out["host"] = ctx.host
    if "source" not in out.columns:
        out["source"] = rep.path
    frames = {_kind_of(fields): out}
    if events is not None and len(events):
        frames["events"] = events
    return from_frames(rep, **frames)


def read_fast(path: Path, header: list[str], ctx: LoadContext, rep):
    """pyarrow read of a clean file: explicit string columns, fixed-format times, vectorised unit
    stripping, and each column built once in its final dtype (the multi-day streams are millions
    of rows, so every extra copy shows in time and peak memory). Returns None, leaving `rep`
    untouched, when anything is irregular."""
    import pyarrow as pa
    from pyarrow import csv

    fields, notes = resolve_fields(header)
    names = [f"c{i}" for i in range(len(header))]
    try:
        table = csv.read_csv(
            path,
            read_options=csv.ReadOptions(skip_rows=1, column_names=names, block_size=1 << 22),
            # A blank line becomes a short row, which fails the read and sends the file to the
            # line path; so every line here is one row and the line count needs no second pass.
            parse_options=csv.ParseOptions(quote_char=False, ignore_empty_lines=False),
            convert_options=csv.ConvertOptions(
                column_types={n: pa.string() for n in names}, strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid:
        return None
    n = table.num_rows
    raw = [table.column(name) for name in names]
    del table
    # Columns are independent and pyarrow/numpy release the GIL: parse them side by side.
    order = sorted(range(len(fields)), key=lambda i: fields[i].kind != "time")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        done = dict(zip(order, pool.map(lambda i: _parse_column(raw, i, fields[i], ctx), order), strict=True))
    if any(v is None for v in done.values()):
        return None
    cols = {fields[i].column: done[i] for i in range(len(fields))}
    rep.read = n + 1
    rep.skip(1, "header line")
    rep.parsed = n
    rep.notes.extend(notes)
    if ctx.host:
        cols["host"] = pd.array(pa.repeat(pa.scalar(ctx.host, pa.large_string()), n), dtype="string")
    cols["source"] = pd.array(pa.repeat(pa.scalar(rep.path, pa.large_string()), n), dtype="string")
    frame = _kind_of(fields)
    blanks: dict[str, object] = {}  # one all-missing array per dtype, shared (copy-on-write)
    for c in schema.FRAMES[frame]:
        if c.name not in cols and c.name != "time":
            if c.dtype not in blanks:
                blanks[c.dtype] = _all_missing(c.dtype, n)
            cols[c.name] = blanks[c.dtype]
    # A clean file has one sample per line after the header: findings cite `source:line`. (Last:
    # an extra column ahead of the canonical ones would make conform reorder, copying them all.)
    cols["line"] = pd.arrays.IntegerArray(np.arange(2, n + 2, dtype="int64"), np.zeros(n, dtype=bool))
    # copy=False: one block per column, no consolidation copy (schema.conform makes the frame).
    return _finish(rep, ctx, pd.DataFrame(cols, copy=False), fields)


def _parse_column(raw: list, i: int, f: Field, ctx: LoadContext):
    """Column `i` of the raw text in its final dtype, or None when a value does not parse.
    Drops the raw text as soon as it is parsed (peak memory)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col, raw[i] = raw[i], None
    try:
        if f.kind == "time":
            t = fixed_times(col)
            if t is None:
                t = fixed_times(pc.utf8_trim_whitespace(col))
            return None if t is None else align.localize(pd.DatetimeIndex(t), ctx.timezone).array
        if f.kind in ("int", "float"):
            nums = _numbers(col, f)
            if f.kind == "int":
                ints = pc.cast(nums, pa.int64()).to_numpy(zero_copy_only=False) if nums.null_count == 0 else None
                if ints is not None:
                    return pd.arrays.IntegerArray(ints, np.zeros(len(ints), dtype=bool))
                return pd.array(pc.cast(nums, pa.int64()), dtype="Int64")
            return nums.to_numpy()
        col = pc.utf8_trim_whitespace(col)
        col = pc.if_else(pc.is_in(col, value_set=pa.array(sorted(MISSING))), pa.scalar(None, pa.string()), col)
        return pd.array(pc.cast(col, pa.large_string()), dtype="string")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _numbers(col, f: Field):
    """Text of a number column (" 87012 MiB", " 0", " [N/A]") -> float64 (int columns are cast on
    from there). Raises ArrowInvalid when a value is neither a number nor a missing marker."""
    import pyarrow as pa
    import pyarrow.compute as pc

    suffix = " " + f.unit if f.unit else ""
    # nvidia-smi writes ", " between fields and, without `nounits`, " unit" after each number:
    # when every value has exactly that framing, slicing it off is cheaper than trim + replace.
    nums = None
    if len(col) and pc.all(pc.starts_with(col, " ")).as_py():
        cut = suffix and pc.all(pc.ends_with(col, suffix)).as_py()
        try:
            nums = pc.cast(pc.utf8_slice_codeunits(col, 1, -len(suffix) if cut else None), pa.float64())
        except pa.ArrowInvalid:
            nums = None
    if nums is None:
        col = pc.utf8_trim_whitespace(col)
        if f.unit:
            col = pc.replace_substring(col, " " + f.unit, "")
        try:
            nums = pc.cast(col, pa.float64())
        except pa.ArrowInvalid:
            # Only columns that hold [N/A] and friends pay for the look-up.
            missing = pc.is_in(col, value_set=pa.array(sorted(MISSING)))
            nums = pc.cast(pc.if_else(missing, pa.scalar(None, pa.string()), col), pa.float64())
    if f.scale != 1.0:
        nums = pc.multiply(nums, f.scale)
    return nums


def _all_missing(dtype: str, n: int):
    """A column of `n` missing values in its canonical dtype, without an n-long Python list."""
    import pyarrow as pa

    if dtype == schema.FLOAT:
        return np.full(n, np.nan)
    if dtype == schema.STR:
        return pd.array(pa.nulls(n, pa.large_string()), dtype="string")
    if dtype == schema.INT:
        return pd.array(np.zeros(n, dtype="int64"), dtype="Int64") * pd.NA
    return pd.array(np.full(n, np.datetime64("NaT", "us")), dtype="datetime64[us]").tz_localize("UTC")


_STAMP_WIDTH = len("2026/11/23 00:00:00.701")
# Byte positions and values of the separators in nvidia-smi's timestamp.
_STAMP_SEPARATORS = {4: b"/", 7: b"/", 10: b" ", 13: b":", 16: b":", 19: b"."}


def fixed_times(col) -> np.ndarray | None:
    """`YYYY/MM/DD HH:MM:SS.mmm` strings -> datetime64[us], or None when any value is not in
    exactly that form (the caller then takes the line-by-line path, which names the line).

    nvidia-smi always writes this fixed width, so each chunk's Arrow data buffer is an (n, 23)
    byte matrix: the separators are checked column by column, the two slashes become dashes, and
    Arrow's ISO-8601 cast (which checks digits and ranges, Feb 30 included) parses the rest in C.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = []
    for arr in pa.chunked_array(col).chunks:
        n = len(arr)
        if arr.null_count:
            return None
        if n == 0:
            continue
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + n + 1]
        if offsets[-1] - offsets[0] != n * _STAMP_WIDTH or not (np.diff(offsets) == _STAMP_WIDTH).all():
            return None
        raw = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]].reshape(n, _STAMP_WIDTH)
        if not all((raw[:, k] == ord(c)).all() for k, c in _STAMP_SEPARATORS.items()):
            return None
        iso = raw.copy()
        iso[:, 4] = iso[:, 7] = ord("-")
        text = pa.StringArray.from_buffers(
            n, pa.py_buffer(np.arange(0, (n + 1) * _STAMP_WIDTH, _STAMP_WIDTH, dtype=np.int32)),
            pa.py_buffer(iso),
        )
        try:
            parts.append(pc.cast(text, pa.timestamp("us")))
        except pa.ArrowInvalid:
            return None
    if not parts:
        return np.array([], dtype="datetime64[us]")
    return pa.chunked_array(parts).to_numpy()


def read_lines(path: Path, text: str, header: list[str] | None, ctx: LoadContext, rep):
    """Line-by-line read: every line is a header, a sample, an error message, or a counted skip."""
    lines = text.splitlines()
    rep.read = len(lines)
    hosts: list[str | None] = []
    body: list[tuple[int, str]] = []
    for i, line in enumerate(lines, start=1):
        m = _PDSH.match(line)
        if m and not _STAMP.match(line[:23]) and not header_fields(line):
            hosts.append(m.group("host"))
            body.append((i, m.group("rest")))
        else:
            hosts.append(None)
            body.append((i, line))
    prefixed = any(hosts)
    if header is not None:
        start = 1
        rep.skip(1, "header line")
    else:
        start = 0
        header = ctx.options.get("fields")
        if header:
            rep.assume("no header line: field list taken from incident.toml or the caller")
        else:
            sample = [_cells(b) for _, b in body[:200] if b.strip() and match_error(b, 0) is None]
            header = infer_apps_fields(sample)
            if header is None:
                raise SourceFormatError(
                    path, 1,
                    "a header line of nvidia-smi query fields, or the field list of this noheader "
                    "capture (load_nvidia_smi(..., fields=[...]) or [[sources]] path=..., "
                    "fields=[...] in incident.toml)",
                    lines[0] if lines else "", fmt=FORMAT,
                )
            rep.assume(
                "no header line: fields inferred from content as " + ", ".join(header)
                + f" (values above {_MAX_GPU_INDEX} in the third column cannot be GPU indices)"
            )
        bad_names = [h for h in header if not looks_like_field(h)]
        if bad_names:
            raise SourceFormatError(path, None, "nvidia-smi query field names", ", ".join(bad_names), fmt=FORMAT)
    fields, notes = resolve_fields(header)
    rep.notes.extend(notes)
    ncol = len(fields)
    rows, row_lines, row_hosts, errors, error_prev = [], [], [], [], []
    current_error = None
    for k in range(start, len(body)):
        i, line = body[k]
        if not line.strip():
            rep.skip(i, "blank line")
            current_error = None
            continue
        if header_fields(line):
            rep.skip(i, "repeated header line")
            continue
        cells = _cells(line)
        if len(cells) == ncol:
            rows.append(cells)
            row_lines.append(i)
            row_hosts.append(hosts[k])
            current_error = None
            continue
        err = match_error(line, i)
        if err is not None:
            errors.append(err)
            error_prev.append(len(rows) - 1)
            current_error = err
            rep.parsed += 1
        elif continues(current_error, line):
            extend(current_error, line, i)
            rep.parsed += 1
        elif _looks_like_table(line):
            rep.skip(i, "not a CSV line (an nvidia-smi table or other output pasted into the capture)")
        else:
            what = "truncated last line" if i == len(lines) else "a line"
            rep.bad(i, f"{ncol} comma-separated fields", line if what == "a line" else f"{what}: {line}")
    cols = [f.column for f in fields]
    df = pd.DataFrame(rows, columns=cols, dtype="string") if rows else pd.DataFrame(
        {c: pd.Series(dtype="string") for c in cols}
    )
    bad = pd.Series(False, index=df.index)
    out = pd.DataFrame(index=df.index)
    for f in fields:
        col = df[f.column]
        if f.kind == "time":
            t = pd.to_datetime(col, format=TIME_FORMAT, errors="coerce")
            bad |= t.isna()
            out["time"] = align.localize(t, ctx.timezone).to_numpy()
        elif f.kind in ("int", "float"):
            nums, b = parse_numbers(col, f.unit, f.scale)
            bad |= b
            out[f.column] = nums
        else:
            out[f.column] = col.where(~col.isin(MISSING))
    out["line"] = pd.array(row_lines, dtype="Int64")
    for j in np.flatnonzero(bad.to_numpy()):
        rep.bad(row_lines[j], "values of the header's fields", ", ".join(rows[j]))
    if prefixed:
        out["host"] = pd.array(row_hosts, dtype="string")
        rep.assume("each line starts with 'host: ' (pdsh/clush fan-out): host taken from it")
    keep = ~bad.to_numpy()
    rep.parsed += int(keep.sum())
    events = None
    if errors:
        times = []
        for j in error_prev:
            times.append(out["time"].iloc[j] if j >= 0 and "time" in out.columns and keep[j] else pd.NaT)
        events = events_frame(errors, ctx, rep.path, times)
        rep.assume("error lines carry no time: each gets the time of the sample before it")
    return _finish(rep, ctx, out[keep].reset_index(drop=True), fields, events)


def _looks_like_table(line: str) -> bool:
    s = line.strip()
    return s.startswith(("|", "+-", "+=")) or s.endswith("|")
