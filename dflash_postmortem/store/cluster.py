"""The store on a dask.distributed cluster: conversions as tasks (`client.map`), and a window's
rows selected by one DuckDB task per group of Parquet parts, so that the workers read the store
(shared or object storage, any fsspec URL) and only the selected rows travel.

dask is the `cluster` extra; nothing here is imported unless a scheduler is given.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import MissingDependencyError
from . import layout
from .manifest import Manifest
from .views import connect, frame_files, listed_files, reader, scan

# Parts per selection task: enough that a task's start-up is small beside its scan.
PARTS_PER_TASK = 64


def client_for(scheduler: str):
    """A dask client of the scheduler at `scheduler` (an address, or a dask Client/LocalCluster)."""
    try:
        # The optional `cluster` extra: the one place dask is imported.
        from distributed import Client
    except ImportError as e:
        raise MissingDependencyError("dask[distributed]", "a dask scheduler (--scheduler)", extra="cluster") from e
    if isinstance(scheduler, Client):
        return scheduler, False
    return Client(scheduler), True


def map_on_cluster(func, items: list, scheduler) -> list:
    """`func` over `items` as dask tasks, results in the order of `items`."""
    client, own = client_for(scheduler)
    try:
        futures = client.map(func, items, pure=False)
        return client.gather(futures)
    finally:
        if own:
            client.close()


def select_on_cluster(store: str, frame: str, where: str, scheduler, files: list[str] | None = None):
    """The rows of `frame` that `where` selects, read by tasks on the cluster, as one Arrow table."""
    return query_on_cluster(store, frame, f"SELECT * FROM rows WHERE {where}", scheduler, files)


def query_on_cluster(store: str, frame: str, query: str, scheduler, files: list[str] | None = None):
    """`query` (SQL over a relation named `rows`) run by one task per group of `frame`'s Parquet
    files (`files` as DuckDB names them; default: every file the manifest lists); the tasks'
    results concatenated, as one Arrow table. A query whose result is merged afterwards
    (partial aggregates) must not assume one task sees all of a group's rows."""
    if files is None:
        manifest = Manifest.read(*layout.filesystem(store))
        files = list(listed_files(store, frame, manifest.parts(frame))) if manifest.sources else frame_files(store, frame)
    if not files:
        return connect(store).execute(f"WITH rows AS (SELECT * FROM {frame} WHERE false) {query}").to_arrow_table()
    groups = [(store, frame, files[k:k + PARTS_PER_TASK], query) for k in range(0, len(files), PARTS_PER_TASK)]
    tables = map_on_cluster(query_parts, groups, scheduler)
    return pa.concat_tables(tables, promote_options="permissive")


def query_parts(job) -> object:
    """One task: the query over some parts of a frame (run on a worker)."""
    # Run on a worker: duckdb loads in the worker process.
    import duckdb

    store, frame, files, query = job
    con = reader(store, con=duckdb.connect())
    return con.sql(f"WITH rows AS ({scan(frame, files)}) {query}").to_arrow_table()
