"""A window of a store as an Incident: the canonical frames of the rows asked for (a time
window, some hosts, some GPUs), in the order and with the load report a direct load gives.

Rows are selected by SQL over the store's Parquet parts (DuckDB here, or DuckDB in dask tasks,
cluster.py) and put in a direct load's order afterwards: by time (missing first), ties in the
folder's load order of their sources, then in each source's own order. What a folder load does
across sources is done here too: runs of two sources that share a name are told apart
(Incident.combine), manual clock offsets are recorded, process rows that only name a GPU UUID get
its index.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import plain_data as plain
from .. import schema
from ..config import IncidentConfig, incident_config
from ..errors import PostmortemError, UsageError
from ..incident import Incident
from ..loaders.pages import ordinary_pages
from . import layout
from .ingest import SCHEDULER_ENV, clear, combined, ingest
from .manifest import Manifest
from .views import as_frame, connect, listed_files, reader, scan


def load_from_store(path: str | os.PathLike, *, window=None, hosts=None, gpus=None, timezone=None,
                    on_bad_line: str = "warn", host=None, store: str | None = None,
                    scheduler: str | None = None) -> Incident:
    """`load_incident` through the store: `path` is an incident folder (converted first, only
    what changed) or a store itself."""
    root = Path(path)
    parse_window(window)  # a bad window is refused before anything is converted
    scheduler = scheduler or os.environ.get(SCHEDULER_ENV) or None
    if (root / layout.MANIFEST).is_file() and store is None:
        return load_window(str(root), window=window, hosts=hosts, gpus=gpus, scheduler=scheduler)
    done = ingest(root, store, timezone=timezone, host=host, on_bad_line=on_bad_line, scheduler=scheduler)
    cfg = incident_config(root, timezone)
    notes = done.notes  # what this ingest could not trust and rebuilt
    try:
        inc = load_window(done.store, window=window, hosts=hosts, gpus=gpus, config=cfg, root=root,
                          scheduler=scheduler)
    except (duckdb.Error, pa.ArrowException, OSError, ValueError, KeyError) as e:
        # A part the store names cannot be read back as the kit wrote it (damaged, or replaced
        # by someone else): the store is converted afresh from the evidence, once.
        clear(*layout.filesystem(done.store))
        again = ingest(root, store, timezone=timezone, host=host, on_bad_line=on_bad_line, scheduler=scheduler)
        notes = [*notes, f"the store could not be read back ({type(e).__name__}: {str(e)[:160]}): "
                         "converted again from the evidence", *again.notes]
        inc = load_window(again.store, window=window, hosts=hosts, gpus=gpus, config=cfg, root=root,
                          scheduler=scheduler)
    inc.load_report.notes[:0] = notes
    return inc


def parse_window(window) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """(start, end) as UTC timestamps; a time without a zone is UTC."""
    if window is None:
        return None
    try:
        start, end = (pd.Timestamp(t) for t in window)
    except (TypeError, ValueError) as e:
        raise UsageError(f"window must be (start, end) times, got {window!r}: {e}") from e
    start, end = (t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC") for t in (start, end))
    if end <= start:
        raise UsageError(f"window ends ({end}) before it starts ({start})")
    return start, end


def where_clause(frame: str, window, hosts, gpus) -> str:
    """The SQL predicate that selects a frame's rows of the window (start inclusive, end
    exclusive; a process is in when the time it was seen overlaps the window), hosts and GPUs.
    `gpu_processes` is filtered by GPU after its missing indices are filled, in pandas."""
    cond = []
    if window is not None:
        start, end = (f"TIMESTAMPTZ '{t.isoformat()}'" for t in window)
        first, last = (f"DATE '{t.date().isoformat()}'" for t in window)
        if frame == "processes":
            cond.append(f"first_seen < {end} AND last_seen >= {start} AND (day IS NULL OR day <= {last})")
        else:
            cond.append(f"time >= {start} AND time < {end} AND day BETWEEN {first} AND {last}")
    if hosts is not None and "host" in schema.columns(frame):
        cond.append("host IN (" + ", ".join(_text(h) for h in hosts) + ")")
    if gpus is not None and frame == "gpus":
        cond.append("gpu IN (" + ", ".join(str(int(g)) for g in gpus) + ")")
    return " AND ".join(cond) or "true"


def window_parts(frame: str, files: list[str], window, hosts) -> list[str]:
    """The parts of `files` whose `host=` and `day=` folders can hold rows that `where_clause`
    selects (a process first seen before the window may still be in it)."""
    if window is None and hosts is None:
        return files
    wanted = None if hosts is None or "host" not in layout.partition_keys(frame) else {
        f"host={quote(str(h), safe='')}" for h in hosts}
    first, last = (f"day={t.date().isoformat()}" for t in window) if window is not None else (None, None)
    null_day = f"day={layout.NULL}"
    kept = []
    for f in files:
        parts = f.split("/")
        day = next(p for p in reversed(parts) if p.startswith("day="))
        if wanted is not None and not any(p in wanted for p in parts):
            continue
        if window is not None:
            if frame == "processes":
                if day != null_day and day > last:
                    continue
            elif day == null_day or not first <= day <= last:
                continue
        kept.append(f)
    return kept


def _overlaps(part_span, window) -> bool:
    """Whether a part whose rows' times lie in `part_span` ([earliest, latest] µs; () when the
    store does not know it) can hold rows of `window`."""
    if part_span is None:
        return False  # no row has a time: where_clause selects none of them
    if not part_span:
        return True
    start, end = (int(t.value // 1000) for t in window)
    return part_span[0] < end and part_span[1] >= start


def _text(value) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def select_rows(source: str, where: str, con: duckdb.DuckDBPyConnection | None = None) -> pa.Table:
    """The rows of `source` (a view, or a read_parquet over some parts) that `where` selects."""
    con = con or duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    # A relation's Arrow result, not a cursor's: the cursor's makes one more copy of every row.
    return con.sql(f"SELECT * FROM {source} WHERE {where}").to_arrow_table()


def load_window(store: str, *, window=None, hosts=None, gpus=None, config: IncidentConfig | None = None,
                root: Path | None = None, scheduler: str | None = None) -> Incident:
    """The Incident of a store's rows in `window` = (start, end), on `hosts`, of `gpus` (None:
    all). With `scheduler`, the rows are selected by dask tasks on that cluster."""
    # A window is a load as a folder's read is (loaders/pages.py): an hour of 512 GPUs made its
    # frames in 0.81-1.09 s by the default pages, 0.94-1.03 s by ordinary ones (six runs each).
    with ordinary_pages():
        return _window(store, window, hosts, gpus, config, root, scheduler)


def _window(store: str, window, hosts, gpus, config: IncidentConfig | None, root: Path | None,
            scheduler: str | None) -> Incident:
    span = parse_window(window)
    fs, top = layout.filesystem(store)
    if not fs.exists(f"{top}/{layout.MANIFEST}"):
        raise PostmortemError(f"{store}: not a store (no {layout.MANIFEST}); run `dflash-postmortem ingest` first")
    try:
        manifest = Manifest.read(fs, top)
    except plain.Untrusted as e:
        raise PostmortemError(f"{store}: {e}; load the incident folder instead, which converts it again") from e
    cfg = config or IncidentConfig()
    order = {rel: k for k, rel in enumerate(manifest.order)}
    report, runs, renamed = combined(fs, top, manifest)
    report.offsets = dict(cfg.offsets)
    con = None if scheduler else reader(store)
    parts = [p for p in manifest.parts() if span is None or _overlaps(p.span, span)]
    frames = {}
    for frame in schema.FRAME_NAMES:
        where = where_clause(frame, span, hosts, gpus)
        # Only the parts whose partition folders can hold the window's rows: DuckDB reads the
        # schema of every part it is given (half a second for a fleet's thousands).
        known = listed_files(store, frame, parts)
        files = window_parts(frame, list(known), span, hosts)
        if scheduler:
            # Dask is the `cluster` extra: imported only when a scheduler is asked for.
            from .cluster import select_on_cluster

            table = select_on_cluster(store, frame, where, scheduler, files)
        else:
            table = select_rows(f"({scan(frame, files, {f: known[f] for f in files if known[f]})})", where, con)
        columns: dict[str, str] = {}
        for rel in manifest.order:
            for c, t in manifest.sources[rel].columns.get(frame, {}).items():
                columns.setdefault(c, t)
        frames[frame] = _in_load_order(frame, table, order, renamed, columns)
    if len(frames["gpu_processes"]):
        frames["gpu_processes"] = _fill_gpu_index(frames["gpu_processes"], store, None, gpus)
    # Made with its frames: an Incident() first would build five empty frames only to drop them.
    return Incident(**frames, load_report=report, runs=runs, config=cfg, root=root)


def _in_load_order(frame: str, table: pa.Table, order: dict[str, int], renamed: dict,
                   columns: dict[str, str]) -> pd.DataFrame:
    permutation = _load_order(table, layout.time_column(frame), order)
    if renamed and "run" in table.column_names:
        run = table.column("run").to_pylist()
        src = table.column(layout.FILE_COLUMN).to_pylist()
        table = table.set_column(table.column_names.index("run"), "run",
                                 pa.array([renamed.get((s, r), r) for s, r in zip(src, run, strict=True)], pa.string()))
    # The store's own columns go before the take, not after it (as_frame would drop them).
    table = table.drop_columns([c for c in (layout.DAY, layout.FILE_COLUMN, layout.ROW_COLUMN)
                                if c in table.column_names and c not in schema.columns(frame)])
    return as_frame(frame, table if permutation is None else _take(table, pa.array(permutation)), columns)


def _load_order(table: pa.Table, time: str, order: dict[str, int]) -> np.ndarray | None:
    """The permutation that puts `table`'s rows in a direct load's order: by time (missing
    first, as its stable sort puts them), then by source in load order, then by row; None when
    they already are (one source's rows, one host's stream: no take at all). The sort keys in
    numpy, then one take: Arrow's sort_by on the whole table costs twice as much for a window of
    millions. Source and row are one key (a source's rank above its row number); rows that come
    already in that order (one file group's parts, in load order) need one stable sort by time
    instead of two."""
    files = table.column(layout.FILE_COLUMN)
    rank = pc.fill_null(pc.index_in(files, value_set=pa.array(list(order), files.type)), -1)
    times = table.column(time).cast(pa.int64())
    times = (pc.fill_null(times, np.iinfo(np.int64).min) if times.null_count else times).to_numpy()
    within = ((rank.to_numpy().astype(np.int64) + 1) << _ROW_BITS) | table.column(layout.ROW_COLUMN).to_numpy()
    later, same = times[1:] > times[:-1], times[1:] == times[:-1]  # not a difference: missing is int64's least
    if (later | (same & (within[1:] >= within[:-1]))).all():
        return None
    if (within[1:] >= within[:-1]).all():
        return np.argsort(times, kind="stable")
    return np.lexsort((within, times))


_ROW_BITS = 40  # a source's rows are numbered below 2**40 (a trillion), its rank above


def _take(table: pa.Table, indices: pa.Array) -> pa.Table:
    """`table.take(indices)`, a column per thread: Arrow's take runs on one core and releases
    the GIL, and a window's string columns (GPU UUIDs, sources) are most of its cost."""
    if table.num_rows < _PARALLEL_TAKE_ROWS:
        return pa.Table.from_arrays([_take_column(c, indices) for c in table.columns], schema=table.schema)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        columns = list(pool.map(lambda c: _take_column(c, indices), table.columns))
    return pa.Table.from_arrays(columns, schema=table.schema)


def _take_column(column: pa.ChunkedArray, indices: pa.Array):
    """One column's take. A text column is made one chunk first: DuckDB hands a window over in
    ~130 chunks, and a take that resolves every index's chunk among them cost 3-5x more (GPU
    UUIDs of 1.8 M rows: 0.23-0.43 s, against 0.02 s to join the chunks and 0.07 s to take from
    one). Fixed-width columns take as fast from chunks, and joining them is a copy of each."""
    if pa.types.is_primitive(column.type):
        return column.take(indices)
    return column.combine_chunks().take(indices)


_PARALLEL_TAKE_ROWS = 100_000  # below this, starting threads costs more than it saves


def _fill_gpu_index(gp: pd.DataFrame, store: str, con, gpus) -> pd.DataFrame:
    """Per-process rows that only name a GPU UUID get the index the first GPU sample of that UUID
    gives (a folder load's rule), then the GPU filter applies."""
    missing = gp["gpu"].isna() & gp["uuid"].notna()
    if missing.any():
        con = con or connect(store)
        uuids = ", ".join(_text(u) for u in gp.loc[missing, "uuid"].unique())
        known = con.execute(
            f"SELECT uuid, first(gpu ORDER BY time NULLS FIRST, {layout.FILE_COLUMN}, {layout.ROW_COLUMN}) AS gpu "
            f"FROM gpus WHERE gpu IS NOT NULL AND uuid IN ({uuids}) GROUP BY uuid").df()
        if len(known):
            gp.loc[missing, "gpu"] = gp.loc[missing, "uuid"].map(known.set_index("uuid")["gpu"]).astype("Int64")
    if gpus is not None:
        gp = gp[gp["gpu"].isin([int(g) for g in gpus])].reset_index(drop=True)
    return gp
