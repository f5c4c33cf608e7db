import pandas as pd
import pytest

from dflash_postmortem import schema


@pytest.mark.parametrize("frame", schema.FRAME_NAMES)
def test_empty_frames_have_the_canonical_columns_and_dtypes(frame):
    df = schema.empty(frame)
    assert list(df.columns) == schema.columns(frame)
    schema.validate(frame, df)


def test_conform_orders_casts_and_keeps_extra_columns():
    raw = pd.DataFrame({
        "value": ["1.5", "2"],
        "time": pd.to_datetime(["2026-11-30 05:20:20", "2026-11-30 05:20:21"]).tz_localize("Europe/Berlin"),
        "metric": ["train/tok_per_s", "train/tok_per_s"],
        "extra": [1, 2],
    })
    df = schema.conform("metrics", raw)
    schema.validate("metrics", df)
    assert list(df.columns) == schema.columns("metrics") + ["extra"]
    # Berlin is UTC+1 in November: the same instant, shown in UTC.
    assert df["time"][0] == pd.Timestamp("2026-11-30 04:20:20", tz="UTC")
    assert df["value"].tolist() == [1.5, 2.0]
    assert df["step"].isna().all() and str(df["step"].dtype) == "Int64"


def test_conform_refuses_naive_times():
    raw = pd.DataFrame({"time": pd.to_datetime(["2026-11-30 05:20:20"])})
    with pytest.raises(AssertionError, match="tz-aware"):
        schema.conform("gpus", raw)


def test_missing_measurements_stay_missing_not_zero():
    df = schema.conform("gpus", pd.DataFrame({"memory_used_mib": [None, 5.0]}))
    assert pd.isna(df["memory_used_mib"][0]) and df["memory_used_mib"][1] == 5.0
