"""Compacts (store/compact.py): a fleet's rank logs all write to one `metrics` partition a day;
after ingest that partition is one file sorted by time, and every query gives the rows it gave
from the parts, once each."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dflash_postmortem as pm
from dflash_postmortem import schema
from dflash_postmortem.config import read_config
from dflash_postmortem.store import compact, layout, views, window
from dflash_postmortem.store.ingest import ingest
from dflash_postmortem.store.manifest import Manifest

from .conftest import assert_same_frames
from .test_fleet import generate

# The generator's fleet: 4 hosts x 8 ranks, 40 minutes from 2026-11-28 00:00 UTC; its 32 rank
# logs write their rows to one metrics partition (day=2026-11-28).
PARTITION = "metrics/day=2026-11-28"
RANK_LOG = "node002/train_rank11.log"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    out = tmp_path_factory.mktemp("compact") / "fleet"
    generate(out, "--hosts", "4", "--hours", "0.6667", "--seed", "7", "--no-prometheus")
    return out


@pytest.fixture(scope="module")
def fleet_store(fleet, tmp_path_factory):
    store = tmp_path_factory.mktemp("compact-store") / "store"
    ingest(fleet, str(store), workers=1)
    return store


@pytest.fixture(scope="module")
def direct(fleet):
    return pm.load_incident(fleet)


def _manifest(store) -> Manifest:
    return Manifest.read(*layout.filesystem(str(store)))


def _window(folder, store, start=None, end=None, **kw):
    span = None if start is None else (start, end)
    return window.load_window(str(store), window=span, root=folder, config=read_config(folder / "incident.toml"), **kw)


def test_a_partition_of_many_sources_is_one_file_sorted_by_time(fleet_store, direct):
    manifest = _manifest(fleet_store)
    [(name, held)] = manifest.compacts.items()
    assert name.startswith(PARTITION + "/compact-") and (fleet_store / name).is_file()
    # it holds every rank log's part of the partition, and they stay on disk for the next build
    ranks = [rel for rel, e in manifest.sources.items() if any(p.startswith(PARTITION) for p in e.parts)]
    assert len(ranks) == 32 and len(held.members) == 32
    assert all((fleet_store / m).is_file() for m in held.members)
    table = pq.read_table(fleet_store / name)
    assert table.num_rows == len(direct.metrics)
    times = table.column("time").cast(pa.int64()).to_numpy()  # µs since the epoch
    assert (np.diff(times) >= 0).all()
    meta = pq.ParquetFile(fleet_store / name).metadata
    assert meta.num_row_groups == -(-table.num_rows // compact.ROW_GROUP_ROWS)
    # what a query reads: the compact in place of its 32 parts; the GPU streams' parts as they were
    read = manifest.parts("metrics")
    assert [p.path for p in read] == [name]
    assert read[0].span == [int(times.min()), int(times.max())]
    assert len(manifest.parts("gpus")) == sum(len([p for p in e.parts if p.startswith("gpus/")])
                                              for e in manifest.sources.values())


def test_every_query_reads_each_row_once(fleet, fleet_store, direct):
    whole = _window(fleet, fleet_store)
    for frame in schema.FRAME_NAMES:
        assert_same_frames(direct.frames()[frame], whole.frames()[frame], frame)
    start, end = direct.metrics["time"].min() + np.timedelta64(10, "m"), direct.metrics["time"].min() + np.timedelta64(12, "m")
    part = _window(fleet, fleet_store, start, end)
    keep = (direct.metrics["time"] >= start) & (direct.metrics["time"] < end)
    assert 0 < len(part.metrics) == keep.sum()
    assert_same_frames(direct.metrics[keep].reset_index(drop=True), part.metrics, "metrics")
    con = views.connect(str(fleet_store))
    assert con.execute("SELECT count(*) FROM metrics").fetchone()[0] == len(direct.metrics)


def test_a_changed_rank_log_gets_a_new_compact_and_the_old_one_goes(fleet, fleet_store, tmp_path):
    folder = shutil.copytree(fleet, tmp_path / "fleet")
    store = shutil.copytree(fleet_store, tmp_path / "store")
    [old] = _manifest(store).compacts
    stamp = (folder / RANK_LOG).read_text().splitlines()[-1][:19]
    with open(folder / RANK_LOG, "a") as f:
        f.write(f"{stamp} [node002-rank11] step 99999 loss 2.0000 tok/s 20000 queue 2\n")
    done = ingest(folder, str(store), workers=1)
    assert RANK_LOG in done.converted
    manifest = _manifest(store)
    [new] = manifest.compacts
    assert new != old and not (store / old).exists() and (store / new).is_file()
    assert set(manifest.compacts[new].members) >= set(p for p in manifest.sources[RANK_LOG].parts if p.startswith(PARTITION))
    again = _window(folder, store).metrics
    assert again["step"].max() == 99999
    assert_same_frames(pm.load_incident(folder).metrics, again, "metrics")


def test_a_compact_whose_parts_changed_is_never_read(fleet, fleet_store, direct, tmp_path):
    # An ingest stopped between converting a source and building its compact again leaves a
    # manifest whose compact holds a part that is gone: the parts are read, not the compact.
    store = shutil.copytree(fleet_store, tmp_path / "store")
    fs, root = layout.filesystem(str(store))
    manifest = Manifest.read(fs, root)
    [name] = manifest.compacts
    entry = manifest.sources[RANK_LOG]
    gone = next(p for p in entry.parts if p.startswith(PARTITION))
    entry.parts = [p for p in entry.parts if p != gone]
    manifest.write(fs, root)
    assert name not in {p.path for p in Manifest.read(fs, root).parts()}
    without = direct.metrics[direct.metrics["source"] != RANK_LOG].reset_index(drop=True)
    assert_same_frames(without, _window(fleet, store).metrics, "metrics")


def test_below_the_threshold_the_compact_is_removed(fleet, fleet_store, direct, tmp_path, monkeypatch):
    store = shutil.copytree(fleet_store, tmp_path / "store")
    [name] = _manifest(store).compacts
    monkeypatch.setattr(compact, "COMPACT_SOURCES", 33)  # one more source than write the partition
    assert ingest(fleet, str(store), workers=1).converted == []  # the folder is as it was
    assert _manifest(store).compacts == {} and not (store / name).exists()
    assert_same_frames(direct.metrics, _window(fleet, store).metrics, "metrics")


def test_a_store_from_before_compacts_gets_them_on_the_next_ingest(fleet, fleet_store, direct, tmp_path):
    store = shutil.copytree(fleet_store, tmp_path / "store")
    fs, root = layout.filesystem(str(store))
    manifest = Manifest.read(fs, root)
    [name] = manifest.compacts
    (store / name).unlink()
    manifest.compacts = {}
    manifest.write(fs, root)
    assert_same_frames(direct.metrics, _window(fleet, store).metrics, "metrics")  # read from the parts
    assert ingest(fleet, str(store), workers=1).converted == []
    assert list(_manifest(store).compacts) == [name] and (store / name).is_file()
