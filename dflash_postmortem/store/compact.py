"""Compacts: one Parquet file for a partition that many sources write to.

Training logs carry no host, so every rank's log of a fleet writes its rows to the same
`metrics/day=...` partition: 512 parts a day for 512 GPUs. A window opens every part it may need,
about a millisecond each before a row is read: an hour of a 512-GPU fleet's metrics took 0.5-0.9 s,
most of it opening 504 parts, against 0.15 s from one file holding the same rows.

After each ingest, the parts of one partition and one column fingerprint (layout.schema_key) that
come from COMPACT_SOURCES sources or more get a compact: their rows in one file sorted by time, so
that its row groups' statistics skip all but a window's hours. It is named for the parts it holds
(their names change whenever their source is converted again, ConvertTask.tag), so a compact is
never stale under its name: one whose parts changed is removed and another built. The parts stay
on disk, for the next build; the manifest says which parts a compact stands for (Manifest.parts).
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass

import duckdb
import pyarrow.parquet as pq

from . import layout
from .manifest import Compact, Manifest
from .views import frame_files, reader

# A partition with parts of this many sources is compacted; fewer parts cost less to open than
# a compact costs to write (the partition of one host's nvidia-smi stream is never compacted: its
# parts are one file's chunks, which the manifest's time spans already pass over unopened).
COMPACT_SOURCES = 16
ROW_GROUP_ROWS = 64 * 1024
# DuckDB's sort spills to disk past this: a day of 512 ranks' metrics (13 M rows) is sorted in
# ~0.75 GiB of RSS, and ingest stays under 2 GB (benchmarks/bench_store.py).
MEMORY_LIMIT = "512MB"


@dataclass
class CompactJob:
    store: str
    name: str  # the compact's path, relative to the store root
    members: list[str]
    spans: list  # the members' spans (layout.span; () where unknown)


def wanted(manifest: Manifest) -> dict[str, list[str]]:
    """compact name -> the parts it holds, for every partition and fingerprint that needs one."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for rel, entry in manifest.sources.items():
        for part in entry.parts:
            key = entry.schemas.get(part)
            if key is not None:  # a store from before fingerprints: its parts stay as they are
                groups.setdefault((part.rsplit("/", 1)[0], key), []).append((rel, part))
    out = {}
    for (folder, _), members in groups.items():
        if len({rel for rel, _ in members}) < COMPACT_SOURCES:
            continue
        parts = sorted(part for _, part in members)
        digest = hashlib.blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
        out[f"{folder}/compact-{digest}.parquet"] = parts
    return out


def compact(store: str, manifest: Manifest, scheduler=None) -> list[str]:
    """Bring `manifest`'s compacts up to date with its parts: build those missing (as dask tasks
    with `scheduler`), remove those no longer wanted. Returns the names built or removed."""
    fs, root = layout.filesystem(store)
    want = wanted(manifest)
    gone = sorted(set(manifest.compacts) - set(want))
    for name in gone:
        del manifest.compacts[name]
        if fs.exists(f"{root}/{name}"):
            fs.rm(f"{root}/{name}")
    spans = {part: entry.spans.get(part, ()) for entry in manifest.sources.values() for part in entry.parts}
    jobs = [CompactJob(store, name, members, [spans[m] for m in members])
            for name, members in sorted(want.items()) if name not in manifest.compacts]
    if scheduler and jobs:
        # Dask is the `cluster` extra: imported only when a scheduler is asked for.
        from .cluster import map_on_cluster

        built = map_on_cluster(build, jobs, scheduler)
    else:
        built = [build(job) for job in jobs]
    for job, done in zip(jobs, built, strict=True):
        manifest.compacts[job.name] = done
    return gone + [job.name for job in jobs]


def build(job: CompactJob) -> Compact:
    """Write one compact (in this process, or as a task on a worker that reads the store)."""
    fs, root = layout.filesystem(job.store)
    frame = job.name.split("/", 1)[0]
    files = frame_files(job.store, frame, job.members)
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    with tempfile.TemporaryDirectory(prefix="dflash-compact-") as spill:
        con = reader(job.store, con=duckdb.connect())
        con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        con.execute(f"SET temp_directory = '{spill}'")
        # Without the partition columns: they are the compact's folders, as they are the parts'.
        rows = con.sql(f"SELECT * FROM read_parquet([{listed}], hive_partitioning = false) "
                       f"ORDER BY {layout.time_column(frame)} NULLS FIRST").to_arrow_reader(ROW_GROUP_ROWS)
        tmp = f"{root}/{job.name}.tmp"
        with fs.open(tmp, "wb") as f, pq.ParquetWriter(f, rows.schema, compression="zstd") as out:
            for batch in rows:
                out.write_batch(batch, row_group_size=ROW_GROUP_ROWS)
        con.close()
    fs.mv(tmp, f"{root}/{job.name}")  # a reader never opens half a compact
    return Compact(job.members, _span(job.spans), layout.schema_key(rows.schema))


def _span(spans: list) -> list[int] | None:
    """The span of the members' rows together: [] (unknown) if one member's is not known."""
    if any(s == () or s == [] for s in spans):
        return []
    known = [s for s in spans if s is not None]
    if not known:
        return None
    return [min(s[0] for s in known), max(s[1] for s in known)]
