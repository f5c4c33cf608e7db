"""`nvidia-smi --query-gpu=... / --query-compute-apps=... --format=csv[,noheader][,nounits]`,
single snapshots or `-l` / `-lms` streams.

Two paths read the same files: a pyarrow fast path for clean files (the multi-day 1 Hz streams),
and a line-by-line path that accounts for every odd line (blank, repeated header, a second header
with other fields when captures were appended to one file, truncated last line, an error
nvidia-smi printed mid-stream, a `pdsh` host prefix, the prompt and fence of a paste). The fast
path hands over to the line path whenever the file is not regular, so the load report is exact
either way. What nvidia-smi prints instead of a number (`[N/A]`, `ERR!`, `[Unknown Error]`, ...)
is missing and named, by column, in `state`; a GPU in an error state is also an `events` row.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import csv

from ... import schema
from ...clock import align
from ...errors import SourceFormatError
from ...incident import from_frames
from .. import registry
from ..registry import LoadContext
from .fields import (
    APPS_FIELDS,
    GPU_ERRORS,
    MISSING,
    QUERY_FIELDS,
    Field,
    extra_column,
    field_for,
    field_key,
    find_ctime,
    integers,
    is_gpu_error,
    is_marker,
    join_states,
    looks_like_field,
    parse_numbers,
    unit_spellings,
)
from .gpu_errors import ErrorLines, events_frame, match_error, state_events
from .paste import COMMAND, Paste, read_paste, unwrap_head
from .table_lines import VERSION_MARK, parse_table_lines
from .timestamp_column import parse_times

FORMAT = "nvidia-smi-query-csv"
TIME_FORMAT = "%Y/%m/%d %H:%M:%S.%f"
_STAMP = re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$")
_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F-]{8,}$")
_WITH_UNIT = re.compile(r"^-?\d+(\.\d+)? (MiB|MB|%|W|MHz)$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
_INTEGER = re.compile(r"^-?\d+$")
# `pdsh -w node[1-4] nvidia-smi ...` puts "host: " before every line; a message's own first word
# (`Error: Final attempt failed. Timeout of 600000ms hit`, what a wrapper prints in place of the
# answer of an nvidia-smi that hung) is no host.
_PDSH = re.compile(r"^(?!(?:error|warning|fatal|failed|failure|exception|note|info|debug)\b)"
                   r"(?P<host>[A-Za-z][\w.-]*): (?P<rest>.*)$", re.I)
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
    # `[Unknown Error]` stands where a GPU that did not answer would have put its value.
    return bool(_STAMP.match(cell) or _UUID.match(cell) or _WITH_UNIT.match(cell) or cell in MISSING
                or is_gpu_error(cell))


def sniff(path: Path, head: bytes) -> float:
    paste = unwrap_head(head)
    content = paste.content()
    if not content:
        return 0.0
    # A paste may say what it is before the header (an issue's prose, a comment line).
    for k, (_, line) in enumerate(content[:20]):
        if header_fields(line) or header_fields(_without_host(line)):
            return 0.95 if k == 0 else 0.8
    first = _without_host(content[0][1])
    cells = _cells(first)
    if _STAMP.match(cells[0]) and len(cells) >= 2:
        return 0.8
    if len(cells) >= 2 and _fields_of_command(paste, content[0][0]):
        return 0.85  # a noheader answer under the command line that asked for its fields
    if len(cells) >= 2 and any(_looks_like_value(c) for c in cells) and all(
        _looks_like_value(c) or _NUMBER.match(c) or re.match(r"^[\w .()/+-]+$", c) for c in cells
    ):
        return 0.5
    return 0.0


def _without_host(line: str) -> str:
    """A line without the `host: ` that pdsh/clush put before it (nvidia-smi's own timestamp and
    an error message's `GPU 0000:..:` are not host prefixes)."""
    m = _PDSH.match(line)
    if m and not _STAMP.match(line[:23]) and match_error(line, 0) is None:
        return m.group("rest")
    return line


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


@registry.format(
    FORMAT, sniff=sniff,
    doc="nvidia-smi --query-gpu=... / --query-compute-apps=... --format=csv[,noheader][,nounits], "
        "snapshots and -l/-lms streams",
)
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
    if header is not None and not _PDSH.match(first) and b"\x1b" not in head:
        fast = read_fast(path, header, ctx, rep, head)
        if fast is not None:
            return fast
    return read_lines(path, read_paste(path), ctx, rep)


def _kind_of(fields: list[Field]) -> str:
    per_process = {QUERY_FIELDS[k].column for k in APPS_FIELDS}
    return "gpu_processes" if any(f.column in per_process for f in fields) else "gpus"


def _finish(rep, ctx: LoadContext, parts: list[tuple[pd.DataFrame, list[Field], bool]], events=None,
            tables: dict[str, pd.DataFrame] | None = None):
    """One Incident from a file's samples: (frame, fields, times carry their zone) per header,
    and the frames of tables printed in the same capture."""
    frames: dict[str, pd.DataFrame] = {k: v for k, v in (tables or {}).items() if len(v)}
    for out, fields, zoned in parts:
        if not any(f.kind == "time" for f in fields):
            out["time"] = pd.Series(pd.NaT, index=out.index, dtype="datetime64[us, UTC]")
            rep.assume("no timestamp field: rows carry no time")
        elif not zoned:
            rep.assume(align.zone_assumption(ctx.timezone))
        if "host" not in out.columns:
            out["host"] = ctx.host
        if "source" not in out.columns:
            out["source"] = rep.path
        if "state" in out.columns and out["state"].notna().any():
            rep.assume("values that are not numbers ([N/A], ERR!, ...) are missing; `state` names each one")
        kind = _kind_of(fields)
        frames[kind] = pd.concat([frames[kind], out], ignore_index=True) if kind in frames else out
    found = [events, state_events(frames["gpus"], rep.path) if "gpus" in frames else None]
    found = [e for e in found if e is not None and len(e)]
    if found:
        frames["events"] = pd.concat(found, ignore_index=True)
    return from_frames(rep, **frames)


def read_fast(path: Path, header: list[str], ctx: LoadContext, rep, head: bytes = b""):
    """pyarrow read of a clean file: explicit column types, fixed-format times, vectorised unit
    stripping, and each column built once in its final dtype (the multi-day streams are millions
    of rows, so every extra copy shows in time and peak memory). Returns None, leaving `rep`
    untouched, when a line is not a sample of the header's fields."""

    fields, notes = resolve_fields(header)
    names = [f"c{i}" for i in range(len(header))]
    texts = {n: pa.string() for n in names}
    # A number column printed bare (the index; every field under `nounits`) is typed by the
    # reader itself, in its own threads, with no text column made; the head says which are.
    # Anything else in it further down ([N/A], a unit, an empty cell) fails that read, and the
    # file is read again as text: such a file pays once more, a clean one never.
    typed = {**texts, **_bare_numbers(head, fields, names)}
    for types in ([typed, texts] if typed != texts else [texts]):
        try:
            table = csv.read_csv(
                path,
                read_options=csv.ReadOptions(skip_rows=1, column_names=names, block_size=1 << 22),
                # A blank line becomes a short row, which fails the read and sends the file to the
                # line path; so every line here is one row and the line count needs no second pass.
                parse_options=csv.ParseOptions(quote_char=False, ignore_empty_lines=False),
                convert_options=csv.ConvertOptions(
                    column_types=types, strings_can_be_null=False, null_values=[],
                ),
            )
            break
        except pa.ArrowInvalid:
            table = None
    if table is None:
        return None
    n = table.num_rows
    raw = [table.column(name) for name in names]
    del table
    if n and pa.types.is_string(raw[0].type) and _any_empty(raw[0]):
        return None  # a blank line (a short row at the end): the line path counts it
    # Columns are independent and pyarrow/numpy release the GIL: parse them side by side; the
    # times, the costliest, in two halves, so that a stream of few fields keeps both cores busy.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        stamps = {i: [pool.submit(_stamp_parts, half) for half in _halves(raw[i])]
                  for i, f in enumerate(fields) if f.kind == "time"}
        rest = {i: pool.submit(_parse_column, raw, i, f, ctx) for i, f in enumerate(fields) if f.kind != "time"}
        done = {i: _times(raw, i, fields[i], ctx, [h.result() for h in halves]) for i, halves in stamps.items()}
        done |= {i: r.result() for i, r in rest.items()}
    if any(v is None for v in done.values()):
        return None
    cols = {fields[i].column: done[i][0] for i in range(len(fields))}
    odd = {fields[i].column: done[i][1] for i in range(len(fields)) if done[i][1] is not None}
    measured = [fields[i].column for i in range(len(fields)) if fields[i].kind != "str"]
    if odd and measured:
        sample = pd.DataFrame({c: cols[c] for c in measured}, copy=False).notna()
        for c in measured:
            if c in odd:
                sample[c] |= is_marker(odd[c]).to_numpy()
        if not sample.any(axis=1).all():
            return None  # a line in which nothing is a value (a repeated header, garbage): the line path names it
    forms = [done[i][2] for i in range(len(fields)) if done[i][2] is not None]
    zoned = any(t.zoned for t in forms)
    for t in forms:
        rep.assume(f"timestamps read as {t.form}")
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
    # Only a file with values that are not numbers pays for its state texts (a stream of plain
    # numbers has no state column at all: millions of empty texts would cost time and memory).
    if odd:
        cols["state"] = join_states(odd, pd.RangeIndex(n)).array
    # copy=False: one block per column, no consolidation copy (schema.conform makes the frame).
    return _finish(rep, ctx, [(pd.DataFrame(cols, copy=False), fields, zoned)])


def _bare_numbers(head: bytes, fields: list[Field], names: list[str]) -> dict[str, pa.DataType]:
    """The number columns whose every value in the file's head is a bare number ("3", "87012",
    "41.5"), as reader types: int64 for an int field, float64 for a float one."""

    lines = head.split(b"\n")[1:-1]  # the header, and a last line the head may have cut
    rows = [line.decode("utf-8", "replace").split(",") for line in lines[:200]]
    if not rows or any(len(r) != len(names) for r in rows):
        return {}
    out = {}
    for i, f in enumerate(fields):
        bare = _INTEGER if f.kind == "int" else _NUMBER if f.kind == "float" else None
        if bare is not None and all(bare.match(r[i].strip()) for r in rows):
            out[names[i]] = pa.int64() if f.kind == "int" else pa.float64()
    return out


def _halves(col: pa.ChunkedArray) -> list[list[pa.Array]]:
    k = col.num_chunks // 2
    return [col.chunks[:k], col.chunks[k:]] if k else [col.chunks]


def _times(raw: list, i: int, f: Field, ctx: LoadContext, parts: list):
    """The time column from its halves read in nvidia-smi's fixed form; when a half was not in
    that form, the column read whole as _parse_column reads it."""

    if any(p is None for p in parts):
        return _parse_column(raw, i, f, ctx)
    raw[i] = None
    t = pa.chunked_array([a for p in parts for a in p], pa.timestamp("us")).to_numpy()
    return align.localize(pd.DatetimeIndex(t), ctx.timezone).array, None, None


def _parse_column(raw: list, i: int, f: Field, ctx: LoadContext):
    """Column `i` of the raw text -> (values in their final dtype, the printed text where a value
    was not one (or None when all were), the form times were read in when not nvidia-smi's); None
    when the column cannot be read this way (the line path then names the lines). Drops the raw
    text as soon as it is parsed (peak memory)."""

    col, raw[i] = raw[i], None
    try:
        if f.kind == "time":
            t = fixed_times(col)
            if t is None:
                t = fixed_times(pc.utf8_trim_whitespace(col))
            if t is not None:
                return align.localize(pd.DatetimeIndex(t), ctx.timezone).array, None, None
            other = parse_times(pd.Series(pc.utf8_trim_whitespace(col).to_pandas(), dtype="string"))
            if other.unreadable.any():
                return None
            return align.localize(other.values, ctx.timezone).array, None, other
        if pa.types.is_int64(col.type):  # typed by the reader (see read_fast)
            return pd.arrays.IntegerArray(col.to_numpy(), np.zeros(len(col), dtype=bool)), None, None
        if pa.types.is_float64(col.type):
            nums = pc.multiply(col, f.scale) if f.scale != 1.0 else col
            return nums.to_numpy(), None, None
        if f.kind in ("int", "float"):
            nums, odd = _numbers(col, f)
            if f.kind == "int":
                ints = pc.cast(nums, pa.int64()).to_numpy(zero_copy_only=False) if nums.null_count == 0 else None
                if ints is not None:
                    return pd.arrays.IntegerArray(ints, np.zeros(len(ints), dtype=bool)), odd, None
                return pd.array(pc.cast(pc.floor(nums), pa.int64()), dtype="Int64"), odd, None
            return nums.to_numpy(zero_copy_only=False), odd, None
        col = pc.utf8_trim_whitespace(col)
        errors = pc.is_in(col, value_set=_error_texts())
        odd = None
        if pc.any(errors).as_py():
            odd = pd.Series(pd.array(pc.if_else(errors, col, pa.scalar(None, pa.string())), dtype="string"))
        blank = pc.or_(pc.is_in(col, value_set=pa.array(sorted(MISSING))), errors)
        col = pc.if_else(blank, pa.scalar(None, pa.string()), col)
        return pd.array(pc.cast(col, pa.large_string()), dtype="string"), odd, None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _numbers(col, f: Field):
    """Text of a number column (" 87012 MiB", " 0", " [N/A]") -> (float64 array, the printed text
    where a value was not a number or None when all were); int columns are cast on from there."""

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
    odd = None
    if nums is None:
        col = pc.utf8_trim_whitespace(col)
        text = pc.replace_substring(col, " " + f.unit, "") if f.unit else col
        try:
            nums = pc.cast(text, pa.float64())
        except pa.ArrowInvalid:
            # Only columns that hold [N/A], ERR! and friends pay for naming them.
            nums, odd = parse_numbers(pd.Series(col.to_pandas(), dtype="string"), f.unit, 1.0)
            nums = pa.array(nums.to_numpy(), type=pa.float64(), from_pandas=True)
            odd = odd.reset_index(drop=True)
    if f.scale != 1.0:
        nums = pc.multiply(nums, f.scale)
    return nums, odd


@lru_cache(maxsize=1)
def _error_texts():
    """What a GPU that did not answer prints, bare or in brackets, as an Arrow value set."""

    return pa.array(sorted(GPU_ERRORS | {f"[{t}]" for t in GPU_ERRORS}))


def _any_empty(col: pa.ChunkedArray) -> bool:
    """Whether any value of a text column is empty: two equal offsets in a row, read from the
    offsets themselves (a length per value computed and compared was 0.08 s of a week of 8 GPUs)."""
    for chunk in col.chunks:
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset:chunk.offset + len(chunk) + 1]
        if (offsets[1:] == offsets[:-1]).any():
            return True
    return False


def _all_missing(dtype: str, n: int):
    """A column of `n` missing values in its canonical dtype, without an n-long Python list."""

    if dtype == schema.FLOAT:
        return np.full(n, np.nan)
    if dtype == schema.STR:
        return pd.array(pa.nulls(n, pa.large_string()), dtype="string")
    if dtype == schema.INT:
        return pd.arrays.IntegerArray(np.zeros(n, dtype="int64"), np.ones(n, dtype=bool))
    return pd.array(np.full(n, np.datetime64("NaT", "us")), dtype="datetime64[us]").tz_localize("UTC")


_STAMP_WIDTH = len("2026/11/23 00:00:00.701")
# Byte positions and values of the separators in nvidia-smi's timestamp.
_STAMP_SEPARATORS = {4: b"/", 7: b"/", 10: b" ", 13: b":", 16: b":", 19: b"."}


def fixed_times(col) -> np.ndarray | None:
    """`YYYY/MM/DD HH:MM:SS.mmm` strings -> datetime64[us], or None when any value is not in
    exactly that form (the caller then takes the line-by-line path, which names the line)."""

    parts = _stamp_parts(pa.chunked_array(col).chunks)
    if parts is None:
        return None
    return pa.chunked_array(parts, pa.timestamp("us")).to_numpy()


def _stamp_parts(chunks: list[pa.Array]) -> list[pa.Array] | None:
    """fixed_times of each chunk, as Arrow timestamps; None when one is not in that form.

    nvidia-smi always writes this fixed width, so each chunk's Arrow data buffer is an (n, 23)
    byte matrix: the separators are checked column by column, the two slashes become dashes, and
    Arrow's ISO-8601 cast (which checks digits and ranges, Feb 30 included) parses the rest in C.
    """

    parts = []
    for arr in chunks:
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
    return parts


@dataclass
class _Segment:
    """The samples under one header (a file may hold several, appended with other fields)."""

    header: list[str]
    fields: list[Field]
    rows: list[list[str]]
    lines: list[int]
    hosts: list[str | None]
    cut: int | None = None  # the last row was cut off mid-write in this column


def read_lines(path: Path, paste, ctx: LoadContext, rep):
    """Line-by-line read: every line is a header, a sample, an error message, or a counted skip."""
    lines = paste.lines
    rep.read = len(lines)
    segments: list[_Segment] = []
    content = [(i, _without_host(s)) for i, s in paste.content()]
    # Without a header line the field list comes from the caller or incident.toml, else from
    # the command line a paste shows above the output, else (compute apps only) the content.
    fields = ctx.options.get("fields")
    how = "no header line: field list taken from incident.toml or the caller"
    if fields:
        _check_names(path, fields)
    elif not any(header_fields(s) for _, s in content[:200]):
        fields = _fields_of_command(paste, content[0][0] if content else len(paste.lines))
        how = "no header line (noheader): field list taken from the nvidia-smi command line above the output"
        if not fields:
            sample = [_cells(s) for _, s in content[:200] if match_error(s, 0) is None and not s.startswith("#")]
            fields = infer_apps_fields(sample)
            how = ("no header line: fields inferred from content as " + ", ".join(fields or [])
                   + f" (values above {_MAX_GPU_INDEX} in the third column cannot be GPU indices)")
        if not fields:
            raise SourceFormatError(
                path, content[0][0] if content else 1,
                "a header line of nvidia-smi query fields, or the field list of this noheader "
                "capture (load_nvidia_smi(..., fields=[...]) or [[sources]] path=..., "
                "fields=[...] in incident.toml)",
                content[0][1] if content else "", fmt=FORMAT,
            )
    if fields:
        segments.append(_segment(fields, rep))
        rep.assume(how)
    last = content[-1][0] if content else 0
    table = _table_lines(paste)
    tables = _read_tables(paste, table, ctx, rep) if table else None
    found = ErrorLines()
    previous = 0  # the line of the last sample: an error line gets its time
    prefixed = False
    for i, (line, wrap) in enumerate(zip(lines, paste.wrapping, strict=True), start=1):
        if i in table:
            continue  # accounted for by the table reader
        if wrap is not None or not line.strip():
            rep.skip(i, wrap or "blank line")
            found.end()
            continue
        host, body = None, line
        header = header_fields(line)
        if header is None:
            body = _without_host(line)
            if body is not line:
                host = line[: len(line) - len(body) - 2]
                header = header_fields(body)
        if header is not None:
            if segments and [field_key(h) for h in header] == [field_key(h) for h in segments[-1].header]:
                rep.skip(i, "repeated header line")
            else:
                segments.append(_segment(header, rep))
                rep.skip(i, "header line")
            continue
        seg = segments[-1] if segments else None
        cells = _cells(body)
        # (an error message in place of an answer is no row, though it has as many fields as one)
        if seg is not None and len(cells) == len(seg.fields) and not (body[:1].isalpha() and match_error(body, i)):
            seg.rows.append(cells)
            seg.lines.append(i)
            seg.hosts.append(host)
            prefixed |= host is not None
            previous = i
            found.end()
            continue
        if found.feed(line, i, after=previous):
            rep.parsed += 1
        elif line.lstrip().startswith("#"):
            rep.skip(i, "comment line")
        elif seg is None:
            rep.skip(i, "text before the CSV header")
        elif _looks_like_table(line):
            rep.skip(i, "not a CSV line (an nvidia-smi table or other output pasted into the capture)")
        elif i == last and 1 < len(cells) < len(seg.fields):
            # A stream cut mid-write (the capture was killed): the fields written are kept.
            seg.rows.append(cells + [None] * (len(seg.fields) - len(cells)))
            seg.lines.append(i)
            seg.hosts.append(host)
            seg.cut = len(cells) - 1
            rep.assume("the last line was cut off mid-write: its row keeps the fields written before the cut")
        else:
            what = "truncated last line: " if i == last else ""
            rep.bad(i, f"{len(seg.fields)} comma-separated fields", what + line)
    paste.note(rep)
    if prefixed:
        rep.assume("each line starts with 'host: ' (pdsh/clush fan-out): host taken from it")
    parts = [_typed(seg, ctx, rep) for seg in segments]
    events = None
    if found.errors:
        time_at = {}
        for (out, _, _) in parts:
            if len(out) and "time" in out.columns:
                time_at.update(zip(out["line"].to_numpy(), out["time"], strict=True))
        events = events_frame(found.errors, ctx, rep.path, [time_at.get(e.after, pd.NaT) for e in found.errors])
        rep.assume("error lines carry no time: each gets the time of the sample before it")
    return _finish(rep, ctx, parts, events, tables)


def _table_lines(paste) -> set[int]:
    """Lines of default nvidia-smi tables in a capture that is mostly CSV (a job's stdout: the
    table, then a query stream): its `|`/`+` lines and the timestamp line above each table."""
    if not any(VERSION_MARK in s for s in paste.lines):
        return set()
    found: set[int] = set()
    above = None
    for i, s in enumerate(paste.lines, start=1):
        t = s.strip()
        if not t:
            continue
        if t.startswith(("|", "+")):
            found.add(i)
            if above is not None:
                found.add(above)
            above = None
        else:
            above = i if find_ctime(t) else None
    return found


def _read_tables(paste, table: set[int], ctx: LoadContext, rep) -> dict[str, pd.DataFrame]:
    """The tables among a CSV capture's lines, read by the table reader; their lines are accounted
    for here, so the CSV reader passes over them."""
    other = "another form's line"
    view = Paste(paste.lines, [None if i in table else other for i in range(1, len(paste.lines) + 1)])
    scratch = ctx.report(Path(rep.abs_path or rep.path), FORMAT)
    gpus, procs, _ = parse_table_lines(view, scratch, ctx)
    rep.parsed += scratch.parsed
    for reason, n in scratch.skipped.items():
        if reason != other:
            rep.skip(None, reason, n)
    for a in scratch.assumptions:
        rep.assume(a)
    rep.assume("the nvidia-smi table(s) in this capture are read as tables")
    return {"gpus": gpus, "gpu_processes": procs}


_QUERY_OPTION = re.compile(
    r"--query-(?:gpu|compute-apps|accounted-apps)[= ]+(?P<fields>\"?[\w.]+\"?(?:,\"?[\w.]+\"?)*)"
)


def _fields_of_command(paste, before: int) -> list[str] | None:
    """The field list of the `nvidia-smi --query-...=a,b,c --format=csv,noheader` command line a
    paste shows above a header-less output (the last such line before line `before`)."""
    for i in range(min(before, len(paste.lines)) - 1, -1, -1):
        if paste.wrapping[i] != COMMAND:
            continue
        m = _QUERY_OPTION.search(paste.lines[i])
        if m and "noheader" in paste.lines[i]:
            return [f.strip('"') for f in m.group("fields").split(",")]
        return None
    return None


def _segment(header: list[str], rep) -> _Segment:
    fields, notes = resolve_fields(header)
    rep.notes.extend(n for n in notes if n not in rep.notes)
    return _Segment(header, fields, [], [], [])


def _check_names(path: Path, header: list[str]) -> None:
    bad_names = [h for h in header if not looks_like_field(h)]
    if bad_names:
        raise SourceFormatError(path, None, "nvidia-smi query field names", ", ".join(bad_names), fmt=FORMAT)


def _typed(seg: _Segment, ctx: LoadContext, rep) -> tuple[pd.DataFrame, list[Field], bool]:
    """One segment's sample lines -> typed columns. A field that is not a value of its kind is
    missing and named in `state`; only a line in which nothing is a value is a bad line."""
    cols = [f.column for f in seg.fields]
    df = pd.DataFrame(seg.rows, columns=cols, dtype="string") if seg.rows else pd.DataFrame(
        {c: pd.Series(dtype="string") for c in cols}
    )
    out = pd.DataFrame(index=df.index)
    odd: dict[str, pd.Series] = {}
    readable = pd.Series(False, index=df.index)
    zoned = False
    measured = any(f.kind != "str" for f in seg.fields)
    for f in seg.fields:
        col = df[f.column]
        if f.kind == "time":
            t = parse_times(col)
            out["time"] = align.localize(t.values, ctx.timezone).array
            readable |= t.values.notna().to_numpy()
            if t.unreadable.any():
                odd["time"] = col.where(t.unreadable)
            zoned = t.zoned
            if t.form != "nvidia-smi's form":
                rep.assume(f"timestamps read as {t.form}")
        elif f.kind in ("int", "float"):
            nums, o = parse_numbers(col, f.unit, f.scale)
            if f.kind == "int":
                nums, broken = integers(nums)
                o = o.mask(broken, col)
            out[f.column] = nums
            readable |= (nums.notna() | is_marker(o)).to_numpy()
            if o.notna().any():
                odd[f.column] = o
        else:
            err = col.str.strip("[]").isin(GPU_ERRORS)
            out[f.column] = col.where(~(col.isin(MISSING) | err))
            if err.any():
                odd[f.column] = col.where(err)
            if not measured:
                readable |= out[f.column].notna().to_numpy()
    if seg.cut is not None:
        _cut_cell(seg, df, out, odd)
    out["line"] = pd.array(seg.lines, dtype="Int64")
    if any(h is not None for h in seg.hosts):
        out["host"] = pd.array(seg.hosts, dtype="string")
    if odd:
        out["state"] = join_states(odd, df.index)
    bad = ~readable.to_numpy()
    for j in np.flatnonzero(bad):
        rep.bad(seg.lines[j], "values of the header's fields", ", ".join(c for c in seg.rows[j] if c is not None))
    out = out[~bad].reset_index(drop=True)
    rep.parsed += len(out)
    return out, seg.fields, zoned


def _cut_cell(seg: _Segment, df: pd.DataFrame, out: pd.DataFrame, odd: dict[str, pd.Series]) -> None:
    """The last cell of a line cut mid-write may be cut too: text (a UUID, a name) and a number
    that lacks the unit the column's other values carry ("19" of "1936 MHz") are missing; `state`
    says the cell was cut either way."""
    f = seg.fields[seg.cut]
    text = df[f.column].iloc[-1]
    complete = f.kind != "str" and (not f.unit or not df[f.column].iloc[:-1].str.endswith(f.unit).any()
                                    or str(text).endswith(unit_spellings(f.unit)))
    if not complete and f.column in out.columns:
        out.loc[out.index[-1], f.column] = pd.NA if f.kind != "float" else np.nan
    note = pd.Series(pd.NA, index=df.index, dtype="string")
    note.iloc[-1] = f"{text} (cut off)"
    odd[f.column] = note if f.column not in odd else odd[f.column].fillna(note).mask(note.notna(), note)


def _looks_like_table(line: str) -> bool:
    s = line.strip()
    return s.startswith(("|", "+-", "+=")) or s.endswith("|")
