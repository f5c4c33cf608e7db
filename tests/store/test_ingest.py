"""ingest: each source converted once into the Parquet store, re-runs convert only what changed,
and the store gives back what a direct load gives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dflash_postmortem import schema
from dflash_postmortem.config import read_config
from dflash_postmortem.loaders.folder import load_incident
from dflash_postmortem.store import layout
from dflash_postmortem.store.ingest import ingest
from dflash_postmortem.store.manifest import Manifest
from dflash_postmortem.store.window import load_window

from .conftest import SMALL_CHUNKS, assert_same_frames, assert_same_report


def _stored(folder: Path, store: str):
    return load_window(store, root=folder, config=read_config(folder / "incident.toml"))


@pytest.mark.parametrize("chunk_bytes", [64 << 20, SMALL_CHUNKS], ids=["whole", "chunked"])
def test_store_equals_direct_load(fleet_folder, tmp_path, chunk_bytes):
    store = str(tmp_path / "store")
    done = ingest(fleet_folder, store, workers=1, chunk_bytes=chunk_bytes)
    assert sorted(done.converted) == ["dmon_um.txt", "h01/smi_apps_stream.csv", "h01/smi_stream.csv",
                                      "h02/smi_apps_stream.csv", "h02/smi_stream.csv", "ps_aux_snapshots.txt",
                                      "train.log", "train_opt.log"]
    direct = load_incident(fleet_folder)
    stored = _stored(fleet_folder, store)
    for frame in schema.FRAME_NAMES:
        assert_same_frames(direct.frames()[frame], stored.frames()[frame], frame)
        schema.validate(frame, stored.frames()[frame])
    assert_same_report(direct, stored)
    assert set(direct.gpus["host"].dropna()) == {"h01", "h02"} and len(direct.gpus) > 1000


def test_parts_are_partitioned_by_frame_host_and_day(fleet_folder, tmp_path):
    store = tmp_path / "store"
    ingest(fleet_folder, str(store), workers=1)
    parts = sorted(p.relative_to(store).parent.as_posix() for p in store.rglob("*.parquet"))
    assert "gpus/host=h01/day=2026-11-30" in parts
    assert "gpus/host=h02/day=2026-11-30" in parts
    assert "metrics/day=2026-11-30" in parts  # metrics have no host column


def test_rerun_converts_only_what_changed(fleet_folder, tmp_path):
    store = str(tmp_path / "store")
    ingest(fleet_folder, store, workers=1)
    again = ingest(fleet_folder, store, workers=1)
    assert again.converted == [] and again.removed == []
    with open(fleet_folder / "train_opt.log", "a") as f:
        f.write("2026-11-30 05:40:00 [opt] step 9999 loss 1.5 tok/s 123456\n")
    changed = ingest(fleet_folder, store, workers=1)
    # the dmon capture borrows the incident's date from the others: converted again with them
    assert sorted(changed.converted) == ["dmon_um.txt", "train_opt.log"]
    assert "h01/smi_stream.csv" in changed.unchanged
    stored = _stored(fleet_folder, store)
    assert_same_frames(load_incident(fleet_folder).metrics, stored.metrics, "metrics")
    assert stored.metrics["step"].max() == 9999


def test_a_deleted_files_parts_vanish(fleet_folder, tmp_path):
    store = tmp_path / "store"
    ingest(fleet_folder, str(store), workers=1)
    stem = layout.part_stem("h02/smi_apps_stream.csv")
    assert list(store.rglob(f"{stem}-*.parquet"))
    (fleet_folder / "h02" / "smi_apps_stream.csv").unlink()
    done = ingest(fleet_folder, str(store), workers=1)
    assert done.removed == ["h02/smi_apps_stream.csv"]
    assert not list(store.rglob(f"{stem}-*.parquet"))
    assert "h02/smi_apps_stream.csv" not in Manifest.read(*layout.filesystem(str(store))).sources
    stored = _stored(fleet_folder, str(store))
    assert set(stored.gpu_processes["source"]) == {"h01/smi_apps_stream.csv"}


def test_a_truncated_or_unreadable_file_is_a_report_entry_and_the_rest_is_ingested(fleet_folder, tmp_path):
    text = (fleet_folder / "h01" / "smi_stream.csv").read_text().splitlines()
    (fleet_folder / "cut.csv").write_text("\n".join(text[:50]) + "\n" + text[50][:30])  # killed mid-write
    os.symlink(fleet_folder / "gone.csv", fleet_folder / "dangling.csv")
    store = str(tmp_path / "store")
    ingest(fleet_folder, store, workers=1, chunk_bytes=SMALL_CHUNKS)
    direct = load_incident(fleet_folder)
    stored = _stored(fleet_folder, store)
    assert_same_report(direct, stored)
    report = stored.load_report
    assert report["dangling.csv"].error.startswith("dangling symbolic link")
    cut = report["cut.csv"]
    assert cut.read == 51 and cut.parsed == 50 and cut.balanced
    assert (stored.gpus["source"] == "cut.csv").sum() == 50
    assert len(stored.gpus) == len(direct.gpus) > 1500
    assert_same_frames(direct.gpus, stored.gpus, "gpus")


def test_ingest_in_worker_processes(fleet_folder, tmp_path):
    store = str(tmp_path / "store")
    ingest(fleet_folder, store, workers=2)
    assert_same_frames(load_incident(fleet_folder).gpus, _stored(fleet_folder, store).gpus, "gpus")
