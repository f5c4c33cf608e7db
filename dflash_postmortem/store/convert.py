"""One source of an incident -> Parquet parts of the canonical frames, and its load report.

Runs in a worker (a process of the pool, or a dask task): everything it needs travels in the
`ConvertTask`, everything it made comes back in the `Converted`, small either way. A large CSV
stream or training log is read chunk by chunk (chunks.py) and each chunk's frames are written as
they come, so memory holds one chunk whatever the file's size.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .. import schema
from ..clock import align
from ..incident import Incident, RunInfo
from ..load_report import LoadReport
from ..loaders import chunks
from ..loaders.folder import load_source
from ..loaders.registry import LoadContext
from . import layout

# A file larger than this is read in chunks of about this size. A chunk's loader peaks at ~15x
# its text (a 290 MB smi.csv: 966 MiB in 64 MiB chunks, 499 MiB in 16 MiB, and 20% less CPU),
# and the pool runs one per CPU: small chunks keep a fleet's ingest under 2 GB.
CHUNK_BYTES = 16 << 20
# Row groups hold one clock hour of a part's rows (`row_groups`), at most this many (an hour of a
# host's 8 GPUs at 1 Hz is 28,800): a window's time predicate skips whole row groups by their
# min/max instead of reading a day's part to the end (benchmarks/bench_store.py).
ROW_GROUP_ROWS = 32 * 1024


@dataclass
class ConvertTask:
    rel: str  # the source's name in the incident (its `source` column)
    planned: object  # the folder plan's entry: path, format, encoding
    context: LoadContext
    store: str  # fsspec location of the store
    chunk_bytes: int = CHUNK_BYTES
    # What tells this conversion's parts from an earlier one's of the same file (a digest of its
    # key): a rewritten part never reuses a path, so no cache of Parquet footers keyed by
    # path and modification time (DuckDB's: whole seconds) can hand a window an old one.
    tag: str = ""


@dataclass
class Converted:
    rel: str
    parts: list[str] = field(default_factory=list)  # relative to the store root
    spans: dict[str, list[int] | None] = field(default_factory=dict)  # part -> its rows' time span (layout.span)
    schemas: dict[str, str] = field(default_factory=dict)  # part -> its columns' fingerprint (layout.schema_key)
    load_report: LoadReport = field(default_factory=LoadReport)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    # frame -> {column: pandas dtype}: a window puts extra columns in a direct load's order and dtypes.
    columns: dict[str, dict[str, str]] = field(default_factory=dict)


def convert_source(task: ConvertTask) -> Converted:
    """Load one source with its registered loader and write its frames as Parquet parts."""
    fs, root = layout.filesystem(task.store)
    out = Converted(task.rel)
    p = task.planned
    with tempfile.TemporaryDirectory(prefix="dflash-ingest-") as scratch:
        if _chunked(p, task.chunk_bytes):
            _convert_chunks(task, fs, root, Path(scratch), out)
        else:
            inc = load_source(p, task.context, Path(scratch) / "whole")
            _keep(task, fs, root, inc, out, chunk=0, first_row={})
    return out


def _chunked(p, chunk_bytes: int) -> bool:
    return chunks.chunkable(p) and p.path.stat().st_size > chunk_bytes


def _convert_chunks(task: ConvertTask, fs, root: str, scratch: Path, out: Converted) -> None:
    p = task.planned
    first_row: dict[str, int] = {}
    report = None
    for k, chunk in enumerate(chunks.split_lines(p.path, task.chunk_bytes, csv_header=chunks.CHUNKED[p.fmt.name])):
        inc, rep = chunks.read_chunk(p, task.context, chunk, scratch, f"chunk-{k}")
        if rep.error:
            # One chunk the loader refuses is the file's error, as a direct load of it would be.
            _remove(fs, root, out.parts)
            out.parts, out.spans, out.schemas, rep.rows = [], {}, {}, type(rep.rows)()
            out.load_report = inc.load_report
            return
        if report is None:
            report = rep
            out.load_report = inc.load_report
        else:
            chunks.merge_reports(report, rep)
            out.load_report.notes.extend(n for n in inc.load_report.notes if n not in out.load_report.notes)
        inc.load_report = LoadReport()
        _keep(task, fs, root, inc, out, chunk=k, first_row=first_row)


def _keep(task: ConvertTask, fs, root: str, inc: Incident, out: Converted, *, chunk: int,
          first_row: dict[str, int]) -> None:
    """Apply the incident's clock offsets to this source's rows and write them."""
    offsets = task.context.config.offsets if task.context.config else {}
    if offsets:
        align.apply_offsets(inc, offsets)
        inc.load_report.offsets = {}  # the window query records them once, for the incident
    if inc.load_report.files or inc.load_report.notes:
        out.load_report.extend(inc.load_report)
    out.runs.update(inc.runs)
    for name in schema.FRAME_NAMES:
        df = getattr(inc, name)
        if df.empty:
            continue
        known = out.columns.setdefault(name, {})
        known.update({c: str(t) for c, t in df.dtypes.items() if c not in known})
        start = first_row.get(name, 0)
        first_row[name] = start + len(df)
        written = write_frame(fs, root, name, df, task.rel, chunk, start, task.tag)
        out.parts.extend(written)
        out.spans.update((part, span) for part, (span, _) in written.items())
        out.schemas.update((part, key) for part, (_, key) in written.items())


def write_frame(fs, root: str, frame: str, df: pd.DataFrame, rel: str, chunk: int, first_row: int,
                tag: str = "") -> dict:
    """One source's rows of one frame -> a part per partition (host, day); returns their paths
    relative to the store root, each with the time span of its rows (layout.span) and the
    fingerprint of its columns (layout.schema_key)."""
    df = df.assign(**{layout.FILE_COLUMN: rel,
                      layout.ROW_COLUMN: np.arange(first_row, first_row + len(df), dtype="int64")})
    times = df[layout.time_column(frame)]
    # Days as numbers (numpy), not text: formatting millions of times would cost more than the write.
    keys = {layout.DAY: pd.Series(times.dt.tz_localize(None).to_numpy().astype("datetime64[D]"), copy=False)}
    if "host" in layout.partition_keys(frame):
        keys["host"] = df["host"].reset_index(drop=True)
    groups = pd.DataFrame(keys).groupby(list(keys), sort=True, dropna=False).indices
    written = {}
    stem = layout.part_stem(rel) + (f"-{tag}" if tag else "")
    ends = [times.to_numpy(dtype="datetime64[us]"),
            df[layout.end_column(frame)].to_numpy(dtype="datetime64[us]")]
    for values, idx in groups.items():
        values = values if isinstance(values, tuple) else (values,)
        where = {k: (None if pd.isna(v) else (str(v)[:10] if k == layout.DAY else str(v)))
                 for k, v in zip(keys, values, strict=True)}
        folder = layout.partition_dir(root, frame, where)
        fs.makedirs(folder, exist_ok=True)
        path = f"{folder}/{stem}-{chunk:05d}.parquet"
        table = to_arrow(df.iloc[idx].drop(columns=[c for c in layout.partition_keys(frame) if c in df.columns]))
        with fs.open(path, "wb") as f, pq.ParquetWriter(f, table.schema, compression="zstd") as out:
            for a, b in row_groups(ends[0][idx]):
                out.write_table(table.slice(a, b - a), row_group_size=ROW_GROUP_ROWS)
        written[path[len(root) + 1:]] = (layout.span(ends[0][idx], ends[1][idx]), layout.schema_key(table.schema))
    return written


def row_groups(times: np.ndarray) -> list[tuple[int, int]]:
    """Row ranges [a, b) cut where the part's time first enters a new clock hour: the row
    groups' statistics then let a window's time predicate skip the other hours (one rank's log
    has ~1,000 rows an hour: a day's part in one row group made an hour's window decode the whole
    day of every rank). Rows stay in their order; one a little out of it (GPUs of one sample a
    millisecond apart, a row without a time) only widens its group's span. Each range is cut
    at ROW_GROUP_ROWS when written."""
    if len(times) < 2:
        return [(0, len(times))]
    hours = times.astype("datetime64[h]").view("int64").copy()
    hours[np.isnat(times)] = np.iinfo(np.int64).min
    reached = np.maximum.accumulate(hours)
    cuts = np.flatnonzero(reached[1:] > reached[:-1]) + 1
    edges = [0, *cuts.tolist(), len(times)]
    return list(zip(edges[:-1], edges[1:], strict=True))


def to_arrow(df: pd.DataFrame) -> pa.Table:
    """A frame as an Arrow table; an extra column of mixed Python objects (a source's own
    fields) is kept as text rather than refused."""
    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        pass
    cols = {}
    for c in df.columns:
        try:
            cols[c] = pa.array(df[c], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            cols[c] = pa.array(df[c].map(lambda v: None if v is None or v is pd.NA or v != v else str(v)),
                               type=pa.large_string())
    return pa.table(cols)


def remove_parts(store: str, parts: list[str]) -> None:
    fs, root = layout.filesystem(store)
    _remove(fs, root, parts)


def _remove(fs, root: str, parts: list[str]) -> None:
    for rel in parts:
        path = f"{root}/{rel}"
        if fs.exists(path):
            fs.rm(path)
