"""Window queries on the store select exactly what a pandas mask selects on a direct load."""

from __future__ import annotations

import pandas as pd
import pytest

from dflash_postmortem import schema
from dflash_postmortem.errors import UsageError
from dflash_postmortem.loaders.folder import load_incident

from .conftest import assert_same_frames

START, END = pd.Timestamp("2026-11-30 05:21:00", tz="UTC"), pd.Timestamp("2026-11-30 05:23:30", tz="UTC")


def _mask(frame: str, df: pd.DataFrame, hosts, gpus) -> pd.DataFrame:
    if frame == "processes":
        keep = (df["first_seen"] < END) & (df["last_seen"] >= START)
    else:
        keep = (df["time"] >= START) & (df["time"] < END)
    if hosts is not None and "host" in df.columns:
        keep &= df["host"].isin(hosts)
    if gpus is not None and "gpu" in df.columns:
        keep &= df["gpu"].isin(gpus)
    return df[keep.fillna(False).astype(bool)].reset_index(drop=True)


@pytest.mark.parametrize(("hosts", "gpus"), [(None, None), (["h02"], [1])], ids=["all", "h02-gpu1"])
def test_window_selects_what_a_mask_selects(shared_folder, direct, hosts, gpus):
    # The first window converts the folder into its default store, the second finds it up to date.
    windowed = load_incident(shared_folder, window=(START, END), hosts=hosts, gpus=gpus)
    assert (shared_folder / ".dflash-store" / "manifest.json").is_file()
    for frame in schema.FRAME_NAMES:
        expected = _mask(frame, direct.frames()[frame], hosts, gpus)
        assert_same_frames(expected, windowed.frames()[frame], frame)
    assert len(windowed.gpus) > 100 and len(windowed.metrics) > 100
    if gpus is not None:
        assert set(windowed.gpus["gpu"]) == {1} and set(windowed.gpus["host"]) == {"h02"}
    # the load report is the whole folder's, as a direct load's
    pd.testing.assert_frame_equal(windowed.load_report.to_frame(), direct.load_report.to_frame())


def test_a_window_that_ends_before_it_starts_is_refused(fleet_folder):
    with pytest.raises(UsageError, match="ends"):
        load_incident(fleet_folder, window=(END, START))
    assert not (fleet_folder / ".dflash-store").exists()  # refused before anything is converted
