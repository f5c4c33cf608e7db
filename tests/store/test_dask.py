"""The store's ingest and window query as dask tasks on a two-worker LocalCluster give what the
one-machine (DuckDB) path gives."""

from __future__ import annotations

import pytest
from support.extras import needs

from dflash_postmortem import schema
from dflash_postmortem.config import read_config
from dflash_postmortem.store.ingest import ingest
from dflash_postmortem.store.window import load_window

from .conftest import assert_same_frames, assert_same_report

needs("distributed", "dask[distributed] (the `cluster` extra) is not installed")


@pytest.fixture(scope="module")
def client():
    # Threads, not processes: starts in a moment, and the workers share the memory:// store.
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def test_cluster_ingest_and_window_equal_the_duckdb_path(shared_folder, shared_store, tmp_path, client):
    store = f"memory://dflash-{tmp_path.name}"  # an fsspec URL: DuckDB reads it through fsspec
    window = ("2026-11-30 05:21:00", "2026-11-30 05:23:30")
    cfg = read_config(shared_folder / "incident.toml")
    reference = str(shared_store[0])  # converted in-process, read by DuckDB here
    done = ingest(shared_folder, store, scheduler=client)
    assert sorted(done.converted) == sorted(shared_store[1].converted)
    for hosts in (None, ["h01"]):
        on_duckdb = load_window(reference, window=window, hosts=hosts, root=shared_folder, config=cfg)
        on_dask = load_window(store, window=window, hosts=hosts, root=shared_folder, config=cfg, scheduler=client)
        for frame in schema.FRAME_NAMES:
            assert_same_frames(on_duckdb.frames()[frame], on_dask.frames()[frame], frame)
        assert_same_report(on_duckdb, on_dask)
        if hosts is None:
            # dmon (no host) is a phase-1 source, converted after the others: its parts are there too
            assert set(on_dask.gpus["source"]) == {"h01/smi_stream.csv", "h02/smi_stream.csv", "dmon_um.txt"}
    assert len(on_dask.gpus) > 100 and set(on_dask.gpus["host"]) == {"h01"}


def test_the_fleet_detectors_on_the_cluster_equal_the_duckdb_path(tmp_path, client, monkeypatch):
    import pandas as pd

    from dflash_postmortem.detect.fleet import Fleet
    from dflash_postmortem.store import cluster, layout, views
    from dflash_postmortem.store.fleet import on_cluster

    from .test_fleet import KIND, generate

    out = tmp_path / "fleet"
    truth = generate(out, "--hosts", "4", "--hours", "0.6667", "--seed", "7", "--no-prometheus")
    store = str(tmp_path / "store")
    ingest(out, store)
    cfg = read_config(out / "incident.toml")
    # One task per Parquet part: every bucket of partial sums is merged from tasks that ran apart.
    monkeypatch.setattr(cluster, "PARTS_PER_TASK", 1)
    on_duckdb = Fleet(views.connect(store), config=cfg)
    on_dask = Fleet(views.connect(store), config=cfg, scan=on_cluster(store, client))
    found, found_on_dask = on_duckdb.detect(), on_dask.detect()
    # the planted faults, the same on both paths
    assert sorted(found["kind"]) == sorted(KIND[t["kind"]] for t in truth["faults"])
    pd.testing.assert_frame_equal(found, found_on_dask)
    pd.testing.assert_frame_equal(on_duckdb.gpu_levels(), on_dask.gpu_levels(), check_exact=False, rtol=1e-9)
    fs, root = layout.filesystem(store)
    assert len(fs.glob(layout.frame_glob(root, "gpus"))) >= 4  # as many tasks: one per host's part at least


def test_compacts_are_built_by_the_cluster_and_equal_the_local_ones(tmp_path, client):
    from dflash_postmortem.store import layout
    from dflash_postmortem.store.manifest import Manifest

    from .test_fleet import generate

    out = tmp_path / "fleet"
    generate(out, "--hosts", "4", "--hours", "0.34", "--seed", "3", "--no-prometheus")
    here, there = str(tmp_path / "store"), f"memory://dflash-{tmp_path.name}"
    ingest(out, here, workers=1)
    ingest(out, there, scheduler=client)
    compacts = [Manifest.read(*layout.filesystem(s)).compacts for s in (here, there)]
    # the 32 rank logs' metrics partition: the same compact, of the same parts, on both paths
    assert list(compacts[0]) == list(compacts[1]) and len(compacts[0]) == 1
    assert compacts[0] == compacts[1]
    cfg = read_config(out / "incident.toml")
    on_duckdb = load_window(here, root=out, config=cfg)
    on_dask = load_window(there, root=out, config=cfg, scheduler=client)
    for frame in schema.FRAME_NAMES:
        assert_same_frames(on_duckdb.frames()[frame], on_dask.frames()[frame], frame)
    assert len(on_dask.metrics) > 1000
