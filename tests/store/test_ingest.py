"""ingest: each source converted once into the Parquet store, re-runs convert only what changed,
and the store gives back what a direct load gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dflash_postmortem import schema
from dflash_postmortem.config import read_config
from dflash_postmortem.store import ingest as ingest_module
from dflash_postmortem.store import layout
from dflash_postmortem.store.ingest import ingest
from dflash_postmortem.store.load import load_incident
from dflash_postmortem.store.manifest import Manifest
from dflash_postmortem.store.window import load_window

from .conftest import SMALL_CHUNKS, assert_same_frames, assert_same_report

SOURCES = ["dmon_um.txt", "h01/smi_apps_stream.csv", "h01/smi_stream.csv", "h02/smi_apps_stream.csv",
           "h02/smi_stream.csv", "ps_aux_snapshots.txt", "train.log", "train_opt.log"]


def _stored(folder: Path, store: str):
    return load_window(store, root=folder, config=read_config(folder / "incident.toml"))


def _assert_equals_direct(direct, folder: Path, store) -> None:
    stored = _stored(folder, str(store))
    for frame in schema.FRAME_NAMES:
        assert_same_frames(direct.frames()[frame], stored.frames()[frame], frame)
        schema.validate(frame, stored.frames()[frame])
    assert_same_report(direct, stored)
    assert set(direct.gpus["host"].dropna()) == {"h01", "h02"} and len(direct.gpus) > 1000


def test_store_equals_direct_load(shared_folder, shared_store, direct):
    store, done = shared_store
    assert sorted(done.converted) == SOURCES
    _assert_equals_direct(direct, shared_folder, store)


def test_chunked_in_worker_processes_equals_direct_load(shared_folder, tmp_path, direct):
    # Every CSV stream and log in chunks, converted by a pool of two spawned processes: the
    # chunk-merging and the pool's round trip of reports and parts, in one ingest.
    store = tmp_path / "store"
    done = ingest(shared_folder, str(store), workers=2, chunk_bytes=SMALL_CHUNKS)
    assert sorted(done.converted) == SOURCES
    stem = layout.part_stem("h01/smi_stream.csv")
    assert len(list(store.rglob(f"{stem}-*.parquet"))) > 1  # it was read in chunks
    _assert_equals_direct(direct, shared_folder, store)


def test_worker_processes_start_from_a_script_read_on_standard_input(shared_folder, tmp_path, direct):
    """`python - <<EOF` (shell scripts, CI): spawned workers re-run `__main__` from its file, which
    is `<stdin>` here; the ingest's workers still start, convert, and give the same frames."""
    store = tmp_path / "store"
    script = ("import sys, warnings\nwarnings.simplefilter('ignore')\n"
              "from dflash_postmortem.store.ingest import ingest\n"
              f"done = ingest({str(shared_folder)!r}, {str(store)!r}, workers=2)\n"
              "print(len(done.converted))\nimport __main__\nprint(__main__.__file__)\n")
    ran = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300,
                         cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split() == [str(len(SOURCES)), "<stdin>"]  # and __main__ is left as it was
    _assert_equals_direct(direct, shared_folder, store)


@pytest.mark.parametrize("how", ["script", "module"])
def test_worker_processes_do_not_run_a_script_without_a_main_guard(shared_folder, tmp_path, direct, how):
    """`pm.ingest(...)` at the top of a script (no `if __name__ == "__main__":`), run as a file or
    with `python -m`: the spawned workers do not run the script again (each would ingest anew, and
    the pool died); the script runs once, and its `__main__` is left as it was."""
    store = tmp_path / "store"
    (tmp_path / "fleet_ingest.py").write_text(
        "import warnings\nwarnings.simplefilter('ignore')\n"
        "from dflash_postmortem.store.ingest import ingest\n"
        "print('script ran', flush=True)\n"
        f"done = ingest({str(shared_folder)!r}, {str(store)!r}, workers=2)\n"
        "print(len(done.converted))\nimport __main__\n"
        "print(__main__.__file__.endswith('fleet_ingest.py'), __main__.__spec__ is None)\n")
    args = ["fleet_ingest.py"] if how == "script" else ["-m", "fleet_ingest"]
    ran = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines() == ["script ran", str(len(SOURCES)), f"True {how == 'script'}"]
    _assert_equals_direct(direct, shared_folder, store)


def test_parts_are_partitioned_by_frame_host_and_day(shared_store):
    store = shared_store[0]
    parts = sorted(p.relative_to(store).parent.as_posix() for p in store.rglob("*.parquet"))
    assert "gpus/host=h01/day=2026-11-30" in parts
    assert "gpus/host=h02/day=2026-11-30" in parts
    assert "metrics/day=2026-11-30" in parts  # metrics have no host column


def test_rerun_converts_only_what_changed(fleet_folder, copy_store, monkeypatch):
    store = str(copy_store)
    with monkeypatch.context() as m:
        # every entry as the last ingest saw it: not even sniffed again
        m.setattr(ingest_module, "plan_incident", lambda *a, **k: pytest.fail("planned an unchanged folder"))
        again = ingest(fleet_folder, store, workers=1)
    assert again.converted == [] and again.removed == []
    assert sorted(again.unchanged) == SOURCES
    with open(fleet_folder / "train_opt.log", "a") as f:
        f.write("2026-11-30 05:40:00 [opt] step 9999 loss 1.5 tok/s 123456\n")
    changed = ingest(fleet_folder, store, workers=1)
    # the dmon capture borrows the incident's date from the others: converted again with them
    assert sorted(changed.converted) == ["dmon_um.txt", "train_opt.log"]
    assert "h01/smi_stream.csv" in changed.unchanged
    stored = _stored(fleet_folder, store)
    assert_same_frames(load_incident(fleet_folder).metrics, stored.metrics, "metrics")
    assert stored.metrics["step"].max() == 9999


def test_the_incident_wide_report_is_kept_once_and_made_for_a_store_without_it(fleet_folder, copy_store, direct):
    # A window reads one document of the combined load report and runs, not one per source.
    fs, root = layout.filesystem(str(copy_store))
    manifest = Manifest.read(fs, root)
    assert manifest.combined == "results/combined.json" and (copy_store / manifest.combined).is_file()
    stored = _stored(fleet_folder, str(copy_store))
    assert_same_report(direct, stored)
    # A store written before ingest kept it: the window combines the sources' reports itself,
    # and the next ingest (the folder unchanged) writes it
    (copy_store / manifest.combined).unlink()
    manifest.combined = ""
    manifest.write(fs, root)
    assert_same_report(direct, _stored(fleet_folder, str(copy_store)))
    again = ingest(fleet_folder, str(copy_store), workers=1)
    assert again.converted == [] and Manifest.read(fs, root).combined == "results/combined.json"
    assert (copy_store / "results" / "combined.json").is_file()
    assert_same_report(direct, _stored(fleet_folder, str(copy_store)))


def test_a_deleted_files_parts_vanish(fleet_folder, copy_store):
    stem = layout.part_stem("h02/smi_apps_stream.csv")
    assert list(copy_store.rglob(f"{stem}-*.parquet"))
    (fleet_folder / "h02" / "smi_apps_stream.csv").unlink()
    done = ingest(fleet_folder, str(copy_store), workers=1)
    assert done.removed == ["h02/smi_apps_stream.csv"]
    assert not list(copy_store.rglob(f"{stem}-*.parquet"))
    assert "h02/smi_apps_stream.csv" not in Manifest.read(*layout.filesystem(str(copy_store))).sources
    stored = _stored(fleet_folder, str(copy_store))
    assert set(stored.gpu_processes["source"]) == {"h01/smi_apps_stream.csv"}


def test_a_truncated_or_unreadable_file_is_a_report_entry_and_the_rest_is_ingested(fleet_folder, copy_store):
    text = (fleet_folder / "h01" / "smi_stream.csv").read_text().splitlines()
    (fleet_folder / "cut.csv").write_text("\n".join(text[:50]) + "\n" + text[50][:30])  # killed mid-write
    os.symlink(fleet_folder / "gone.csv", fleet_folder / "dangling.csv")
    store = str(copy_store)
    done = ingest(fleet_folder, store, workers=1, chunk_bytes=SMALL_CHUNKS)
    assert "cut.csv" in done.converted and "h01/smi_stream.csv" in done.unchanged
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
