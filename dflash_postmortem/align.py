"""The one place that knows about clocks: time zones, offsets between sources, dates.

Loaders parse wall-clock text into naive datetimes and hand them here; everything leaving this
module is UTC.
"""

from __future__ import annotations

import pandas as pd

from .schema import TIME


def localize(times: pd.Series | pd.DatetimeIndex, timezone: str = "UTC") -> pd.Series:
    """Read naive wall-clock times in `timezone` and return them as UTC.

    Times that are already zone-aware are converted, not re-read. Wall-clock times that do not
    exist or are ambiguous (DST changes) become NaT rather than a guess.
    """
    s = pd.Series(times)
    if not pd.api.types.is_datetime64_any_dtype(s.dtype):
        s = pd.to_datetime(s, errors="coerce")
    if isinstance(s.dtype, pd.DatetimeTZDtype):
        return s.dt.tz_convert("UTC").astype(TIME)
    if timezone in ("UTC", "utc", "Z"):
        return s.dt.tz_localize("UTC").astype(TIME)
    return (
        s.dt.tz_localize(timezone, ambiguous="NaT", nonexistent="NaT")
        .dt.tz_convert("UTC")
        .astype(TIME)
    )


def zone_assumption(timezone: str) -> str:
    """The load-report wording for a source whose times carry no zone."""
    return f"no time zone in file, read as {timezone}"


def shift(df: pd.DataFrame, seconds: float, columns=("time",)) -> pd.DataFrame:
    """Add a clock offset to the time columns of a frame."""
    if not seconds:
        return df
    out = df.copy()
    delta = pd.Timedelta(seconds=seconds)
    for c in columns:
        if c in out.columns:
            out[c] = out[c] + delta
    return out
