"""A small incident folder for the store's tests, built from the bundled h200-2gpu captures: two
hosts (each with its own nvidia-smi stream and per-process stream), training logs, `ps`
snapshots and a dmon capture (a phase-1 source, which borrows the incident's date): 8 sources,
about 200 KB, the smallest folder that has every kind of source the store treats apart."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from dflash_postmortem import schema
from dflash_postmortem.store.ingest import ingest
from dflash_postmortem.store.layout import DEFAULT_NAME
from dflash_postmortem.store.load import load_incident

LOGS = Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-2gpu" / "logs"
# Small enough that every CSV stream and log here is read in several chunks.
SMALL_CHUNKS = 8192


def _write_folder(folder: Path) -> Path:
    for host in ("h01", "h02"):
        (folder / host).mkdir(parents=True)
        shutil.copy(LOGS / "smi_stream.csv", folder / host / "smi_stream.csv")
        shutil.copy(LOGS / "smi_apps_stream.csv", folder / host / "smi_apps_stream.csv")
    for name in ("train.log", "train_opt.log", "ps_aux_snapshots.txt", "dmon_um.txt"):
        shutil.copy(LOGS / name, folder / name)
    (folder / "incident.toml").write_text("\n".join(
        f'[[sources]]\npath = "{host}/{name}"\nhost = "{host}"\n'
        for host in ("h01", "h02") for name in ("smi_stream.csv", "smi_apps_stream.csv")))
    return folder


# Ingesting and loading the folder cost about a second each: done once per test process and
# shared by every test that only reads them; a test that changes files works on copies.
@pytest.fixture(scope="session")
def shared_folder(tmp_path_factory) -> Path:
    """The folder, never changed (a window query adds its default `.dflash-store`, which the
    folder walk passes over)."""
    return _write_folder(tmp_path_factory.mktemp("shared") / "incident")


@pytest.fixture(scope="session")
def direct(shared_folder):
    """The folder loaded directly (no store): what every store query is compared with."""
    return _quietly(load_incident, shared_folder)


@pytest.fixture(scope="session")
def shared_store(shared_folder, tmp_path_factory):
    """The folder's store, converted in this process, whole files; (its path, what ingest did)."""
    store = tmp_path_factory.mktemp("shared-store") / "store"
    return store, _quietly(ingest, shared_folder, str(store), workers=1)


@pytest.fixture
def fleet_folder(shared_folder, tmp_path) -> Path:
    """A copy of the folder a test may change; copied with the files' times, so that a copy of
    `shared_store` is up to date for it (`copy_store`)."""
    return shutil.copytree(shared_folder, tmp_path / "incident", ignore=shutil.ignore_patterns(DEFAULT_NAME))


@pytest.fixture
def copy_store(shared_store, tmp_path) -> Path:
    """A copy of `shared_store` a test may change."""
    return shutil.copytree(shared_store[0], tmp_path / "store")


def _quietly(call, *args, **kwargs):
    # Session fixtures run outside `_quiet`; the loaders warn about every line they skip.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def assert_same_frames(direct: pd.DataFrame, stored: pd.DataFrame, frame: str) -> None:
    """Canonical columns equal with their dtypes; extra columns in the same order with equal
    values (an extra column of Python objects may come back with another missing marker)."""
    assert list(stored.columns) == list(direct.columns), frame
    canonical = schema.columns(frame)
    pd.testing.assert_frame_equal(stored[canonical], direct[canonical], check_dtype=True, obj=frame)
    for c in direct.columns[len(canonical):]:
        a, b = direct[c], stored[c]
        assert (a.isna().to_numpy() == b.isna().to_numpy()).all(), f"{frame}.{c}: missing values differ"
        assert a[a.notna()].astype(str).tolist() == b[b.notna()].astype(str).tolist(), f"{frame}.{c}"


def assert_same_report(direct, stored) -> None:
    pd.testing.assert_frame_equal(stored.load_report.to_frame(), direct.load_report.to_frame())
    assert stored.load_report.notes == direct.load_report.notes
    assert stored.load_report.offsets == direct.load_report.offsets
