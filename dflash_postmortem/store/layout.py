"""Where things lie in a store: one hive-partitioned Parquet dataset per canonical frame
(`gpus/host=h01/day=2026-11-30/part-<file>-<chunk>.parquet`; `metrics`, which has no host, by
day only), the manifest, and each source's load report.

A store is any fsspec location: a local folder (the default, `.dflash-store` inside the incident
folder, which the folder walk passes over) or a URL (`s3://...`, `memory://...`).
"""

from __future__ import annotations

import hashlib
import os
from urllib.parse import quote

import fsspec
import numpy as np

from .. import schema

DEFAULT_NAME = ".dflash-store"
MANIFEST = "manifest.json"
RESULTS = "results"  # one JSON document per source: its load report and runs (plain_data)
# The name hive readers (DuckDB, pyarrow, Spark) take for a missing partition value.
NULL = "__HIVE_DEFAULT_PARTITION__"
# Bumped when what a part holds changes: a store of another version is converted again.
VERSION = 3  # 2: load reports and runs as JSON documents (plain_data), never pickles; 3: rank, job, attempt

# Rows keep where they came from, so a window comes back in the order a direct load gives:
# sorted by time, ties in source order, then in the source's own row order.
FILE_COLUMN = "store_file"
ROW_COLUMN = "store_row"
DAY = "day"


def partition_keys(frame: str) -> tuple[str, ...]:
    return ("host", DAY) if "host" in schema.columns(frame) else (DAY,)


def time_column(frame: str) -> str:
    return "first_seen" if frame == "processes" else "time"


def end_column(frame: str) -> str:
    """The column a row's time ends in: a process is seen until its `last_seen`."""
    return "last_seen" if frame == "processes" else "time"


def schema_key(columns) -> str:
    """A short fingerprint of a part's column names, order and types (an Arrow schema): parts
    with equal keys are read by one scan that needs no matching of columns by name."""
    text = ",".join(f"{f.name}:{f.type}" for f in columns)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def span(starts: np.ndarray, ends: np.ndarray) -> list[int] | None:
    """[earliest start, latest end] of a part's rows in µs since the epoch, from their start and
    end times (datetime64[us]); None when no row has a time. A window whose rows must overlap
    this span can skip the part unread (window.where_clause never selects a row without a time)."""
    starts, ends = starts[~np.isnat(starts)], ends[~np.isnat(ends)]
    if not len(starts) or not len(ends):
        return None
    return [int(starts.min().astype("int64")), int(ends.max().astype("int64"))]


def default_store(folder: str | os.PathLike) -> str:
    return os.path.join(os.path.abspath(folder), DEFAULT_NAME)


def filesystem(store: str) -> tuple[fsspec.AbstractFileSystem, str]:
    """(the fsspec filesystem, the store's path on it) for a local path or a URL."""
    fs, path = fsspec.core.url_to_fs(store)
    return fs, path.rstrip("/")


def part_stem(rel: str) -> str:
    """Parts of one source share a stem: its path's hash (names in any alphabet, any length)."""
    return "part-" + hashlib.blake2b(rel.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


def partition_dir(root: str, frame: str, values: dict[str, str | None]) -> str:
    keys = "/".join(f"{k}={NULL if values[k] is None else quote(str(values[k]), safe='')}" for k in partition_keys(frame))
    return f"{root}/{frame}/{keys}"


def frame_glob(root: str, frame: str) -> str:
    """Every part a source wrote of `frame` (not the compacts beside them, which hold the same rows)."""
    return f"{root}/{frame}/" + "/".join("*" for _ in partition_keys(frame)) + "/part-*.parquet"
