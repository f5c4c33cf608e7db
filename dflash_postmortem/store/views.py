"""DuckDB over a store: one view per canonical frame (`gpus`, `gpu_processes`, `metrics`,
`events`, `processes`) on its hive-partitioned Parquet parts.

The views carry the schema's columns (with the partition columns `host` and `day`), the extra
columns sources add, and where each row came from (`store_file`, `store_row`). Predicates on
`host` and `day` prune whole files before they are opened; predicates on `time` and `gpu` skip
row groups by their statistics. The fleet detectors (store/fleet.py) are SQL over these views.
"""

from __future__ import annotations

import functools

import duckdb
import pandas as pd
import pyarrow as pa

from .. import schema
from . import layout
from .manifest import Manifest, Part

_SQL_TYPES = {schema.TIME: "TIMESTAMPTZ", schema.STR: "VARCHAR", schema.INT: "BIGINT", schema.FLOAT: "DOUBLE"}


def connect(store: str, *, con: duckdb.DuckDBPyConnection | None = None,
            manifest: Manifest | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection (new, or `con`) with the store's five views; times are shown in UTC.
    A new one is a database of its own: views named for the frames, one store's each. The parts
    are those `manifest` lists (default: the store's), alike ones scanned together (`scan`): a
    union by name over a fleet's 1,500 rank-log parts held 600 MiB for a GROUP BY."""
    con = reader(store, con=con or duckdb.connect())
    if manifest is None:
        manifest = Manifest.read(*layout.filesystem(store))
    for frame in schema.FRAME_NAMES:
        if manifest.sources:
            known = listed_files(store, frame, manifest.parts(frame))
            sql = scan(frame, list(known), {f: k for f, k in known.items() if k is not None})
        else:
            sql = scan(frame, frame_files(store, frame))
        con.execute(f"CREATE OR REPLACE VIEW {frame} AS {sql}")
    return con


def listed_files(store: str, frame: str, parts: list[Part]) -> dict[str, str | None]:
    """The frame's files among `parts` (Manifest.parts), as DuckDB names them, each with its
    column fingerprint (None where not known)."""
    mine = [p for p in parts if p.path.startswith(frame + "/")]
    names = frame_files(store, frame, [p.path for p in mine])
    return {f: p.schema for f, p in zip(names, mine, strict=True)}


def reader(store: str, *, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection (new, or `con`) that can read the store's files, without views. For
    a store on this machine, a cursor of the process's one in-memory database (`_database`),
    whose cache of Parquet footers every later window shares."""
    fs, _ = layout.filesystem(store)
    protocol = _protocol(fs)
    local = protocol in ("file", "local")
    con = con or (_database().cursor() if local else duckdb.connect())
    con.execute("SET TimeZone = 'UTC'")
    # DuckDB draws a progress bar on the terminal for a query past two seconds (a compact, a
    # fleet scan): it would interleave with the CLI's own output and land in notebooks' cells.
    con.execute("SET enable_progress_bar = false")
    # Text as Arrow's large_string, which pandas' strings hold: with DuckDB's default (string,
    # 32-bit offsets) every text column of a window was converted once more (0.13 s for 1.8 M rows).
    con.execute("SET arrow_large_buffer_size = true")
    if not local:
        # A URL store (memory://, s3://...): DuckDB reads it through fsspec, on a connection of
        # its own (a filesystem is registered once per database).
        con.register_filesystem(fs)
    return con


@functools.cache
def _database() -> duckdb.DuckDBPyConnection:
    """The in-memory DuckDB database the windows of this process read through. Its Parquet
    metadata cache keeps each part's footer, checked against the file's modification time: the
    second window over 500 rank logs' parts opens them without parsing them again (0.7 -> 0.45 s).
    Each reader gets a cursor of it: its own connection, the database's cache."""
    db = duckdb.connect()
    db.execute("SET GLOBAL parquet_metadata_cache = true")
    return db


def frame_files(store: str, frame: str, listed: list[str] | None = None) -> list[str]:
    """Every part of a frame, as DuckDB names them (a URL store's with its protocol): those on
    disk, or those of `listed` (parts named from the store's root, as the manifest lists them:
    no listing of a fleet's thousands of folders)."""
    fs, root = layout.filesystem(store)
    protocol = _protocol(fs)
    prefix = "" if protocol in ("file", "local") else protocol + "://"
    if listed is not None:
        return [f"{prefix}{root}/{p}" for p in listed if p.startswith(frame + "/")]
    return [prefix + f for f in sorted(fs.glob(layout.frame_glob(root, frame)))]


def _protocol(fs) -> str:
    return fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]


def scan(frame: str, files: list[str], schemas: dict[str, str] | None = None) -> str:
    """SQL reading `files`, a frame's parts, with their partition columns. Parts whose columns
    differ are matched by name; with `schemas` (file -> layout.schema_key) each group of alike
    parts is one plain scan and the groups are put together by name: DuckDB's union by name over
    every part reads each part's schema first."""
    if not files:
        # No source gave this frame: an empty view with the schema's columns, never a missing one.
        cols = ", ".join(f"CAST(NULL AS {_SQL_TYPES[c.dtype]}) AS {c.name}" for c in schema.FRAMES[frame])
        keys = ", ".join(f"CAST(NULL AS {'DATE' if k == layout.DAY else 'VARCHAR'}) AS {k}"
                         for k in layout.partition_keys(frame) if k not in schema.columns(frame))
        return (f"SELECT {cols}{', ' + keys if keys else ''}, CAST(NULL AS VARCHAR) AS {layout.FILE_COLUMN}, "
                f"CAST(NULL AS BIGINT) AS {layout.ROW_COLUMN} WHERE false")
    types = ", ".join(f"'{k}': {'DATE' if k == layout.DAY else 'VARCHAR'}" for k in layout.partition_keys(frame))

    def read(group: list[str], by_name: bool) -> str:
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in group)
        return (f"SELECT * FROM read_parquet([{listed}], hive_partitioning = true, "
                f"union_by_name = {'true' if by_name else 'false'}, hive_types = {{{types}}})")

    if schemas is None or any(f not in schemas for f in files):
        return read(files, by_name=True)
    groups: dict[str, list[str]] = {}
    for f in files:
        groups.setdefault(schemas[f], []).append(f)
    return " UNION ALL BY NAME ".join(read(g, by_name=False) for g in groups.values())


def as_frame(frame: str, table: pa.Table, columns: dict[str, str] | None = None) -> pd.DataFrame:
    """Rows of a view as the canonical pandas frame (schema.conform's dtypes), extra columns
    after (in the order and dtypes of `columns` where given); the store's own columns
    (partition day, origin) dropped."""
    drop = [c for c in (layout.DAY, layout.FILE_COLUMN, layout.ROW_COLUMN) if c in table.column_names
            and c not in schema.columns(frame)]
    table = table.drop_columns(drop)
    # split_blocks: each column its own array, as the frame keeps them; pandas' default joins the
    # float columns into one 2-D block first, a copy of every value (0.1-0.3 s for 1.8 M rows).
    df = table.to_pandas(types_mapper=_pandas_type, self_destruct=True, split_blocks=True)
    df = schema.conform(frame, df)
    if columns:
        canonical = schema.columns(frame)
        for c in columns:
            if c not in df.columns:
                # a task that read only some parts does not see every source's extra columns
                df[c] = pd.Series(pd.NA, index=df.index, dtype=object)
        extra = [c for c in columns if c in df.columns and c not in canonical]
        df = df[canonical + extra + [c for c in df.columns if c not in canonical and c not in columns]]
        for c in extra:
            if str(df[c].dtype) != columns[c]:
                try:
                    df[c] = df[c].astype(columns[c])
                except (TypeError, ValueError):
                    pass  # values missing where other sources lack the column: kept nullable
    return df


def _pandas_type(t: pa.DataType):
    if pa.types.is_integer(t):
        return pd.Int64Dtype()
    if pa.types.is_boolean(t):
        return pd.BooleanDtype()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pd.StringDtype("pyarrow")  # schema.STR itself: pandas' default `str` is converted again
    return None
