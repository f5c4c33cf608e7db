"""A small incident folder for the store's tests, built from the bundled h200-2gpu captures: two
hosts (each with its own nvidia-smi stream and per-process stream), training logs, `ps`
snapshots and a dmon capture (a phase-1 source, which borrows the incident's date)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from dflash_postmortem import schema

LOGS = Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-2gpu" / "logs"
# Small enough that every CSV stream and log here is read in several chunks.
SMALL_CHUNKS = 8192


@pytest.fixture
def fleet_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "incident"
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
