"""A store on object storage: `s3://` through fsspec (s3fs), against moto's S3 server on
loopback (a separate process speaking the S3 HTTP API): ingest writes the store into a bucket,
a re-run converts nothing, and a window read from the bucket, in this process (DuckDB through
fsspec) and as dask tasks, equals a direct load."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.extras import needs
from support.servers import free_port, wait_until_ready

from dflash_postmortem import schema
from dflash_postmortem.config import read_config
from dflash_postmortem.store.ingest import ingest
from dflash_postmortem.store.manifest import Manifest
from dflash_postmortem.store.window import load_window

from .conftest import assert_same_frames, assert_same_report

needs("s3fs", "s3fs is not installed (the `dev` extra has it)")
needs("moto", "moto's S3 server is not installed (the `dev` extra has it)")

BUCKET = "fleet-telemetry"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server, started for these tests and stopped after them; the credentials and
    endpoint every S3 client here (and the dask workers, which inherit the environment) uses."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}"
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           # where a MinIO or Ceph user points botocore (and so s3fs) at their own endpoint
           "AWS_ENDPOINT_URL": endpoint}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        wait_until_ready(f"{endpoint}/moto-api/", proc, "moto's S3 server", lambda: log.read_text(errors="replace"))
        import fsspec

        fsspec.filesystem("s3", skip_instance_cache=True).mkdir(BUCKET)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_a_store_in_a_bucket_gives_what_a_direct_load_gives(s3, shared_folder, direct):
    store = f"s3://{BUCKET}/incident-store"
    done = ingest(shared_folder, store, workers=1)
    assert len(done.converted) == 8
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    assert fs.exists(f"{BUCKET}/incident-store/manifest.json")
    assert fs.glob(f"{BUCKET}/incident-store/gpus/host=h01/day=2026-11-30/*.parquet")
    stored = load_window(store, root=shared_folder, config=read_config(shared_folder / "incident.toml"))
    for frame in schema.FRAME_NAMES:
        assert_same_frames(direct.frames()[frame], stored.frames()[frame], frame)
    assert_same_report(direct, stored)
    again = ingest(shared_folder, store, workers=1)
    assert again.converted == [] and len(again.unchanged) == 8
    manifest = Manifest.read(fs, f"{BUCKET}/incident-store")
    assert manifest.combined and fs.exists(f"{BUCKET}/incident-store/{manifest.combined}")


def test_dask_workers_ingest_into_and_read_from_the_bucket(s3, shared_folder, shared_store):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] (the `cluster` extra) is not installed")
    store = f"s3://{BUCKET}/cluster-store"
    window = ("2026-11-30 05:21:00", "2026-11-30 05:23:30")
    cfg = read_config(shared_folder / "incident.toml")
    # Worker processes: each opens the bucket itself, with the endpoint from the environment.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        done = ingest(shared_folder, store, scheduler=client)
        assert sorted(done.converted) == sorted(shared_store[1].converted)
        on_dask = load_window(store, window=window, root=shared_folder, config=cfg, scheduler=client)
    on_duckdb = load_window(str(shared_store[0]), window=window, root=shared_folder, config=cfg)
    for frame in schema.FRAME_NAMES:
        assert_same_frames(on_duckdb.frames()[frame], on_dask.frames()[frame], frame)
    assert_same_report(on_duckdb, on_dask)
    assert len(on_dask.gpus) > 100


def test_a_bucket_store_planted_with_pickles_is_rebuilt_never_run(s3, shared_folder, direct, tmp_path):
    """Anyone who can write to the bucket can replace the store's documents: a crafted pickle in
    each is never run; the next ingest converts those sources again and says so."""
    import pickle

    import fsspec

    from dflash_postmortem.store.window import load_from_store

    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    store = f"s3://{BUCKET}/planted-store"
    ingest(shared_folder, store, workers=1)
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    documents = fs.glob(f"{BUCKET}/planted-store/results/*.json")
    assert len(documents) == 10  # 8 sources, the folder walk, the combined report
    for doc in documents:
        with fs.open(doc, "wb") as f:
            f.write(pickle.dumps(Planted()))
    inc = load_from_store(shared_folder, store=store)
    assert not marker.exists()
    notes = "\n".join(inc.load_report.notes)
    assert "not trusted" in notes and "converted again" in notes
    for frame in schema.FRAME_NAMES:
        assert_same_frames(direct.frames()[frame], inc.frames()[frame], frame)
