"""What is computed once per incident and shared by every question asked of it: the attempts,
their progress and states, the ledger, the throughput series, time indexes of the frames.

Detectors, tables and figures stay functions of an Incident; they share these results instead of
recomputing them (a launch looked up once per regression recomputed every launch's outcome, which
made detection grow faster than the evidence; a notebook page that asks ten questions built the
attempts ten times). The memo lives on the Incident and is keyed by the identity and length of
the frames a result reads and by the config's identity: replacing a frame or the config (as
redaction, a window or a reload does) recomputes what read it. Frames are not changed in place
once an incident is loaded; code that must change one replaces it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..incident import Incident

T = TypeVar("T")
_ATTR = "_computed"


def cached(inc: Incident, name: str, frames: tuple[str, ...], compute: Callable[[], T]) -> T:
    """`compute()` once per incident and per identity of the named frames."""
    store = inc.__dict__.setdefault(_ATTR, {})
    read = tuple(getattr(inc, f) for f in frames)
    key = _key(inc, name, read)
    if key not in store:
        # the frames are kept with the result: while it is cached, their ids cannot be reused
        store[key] = (read, inc.config, compute())
    return store[key][2]


def known(inc: Incident, name: str, frames: tuple[str, ...]):
    """What `cached` holds for `name` on the named frames as they are now, else None (nothing
    is computed)."""
    hit = inc.__dict__.get(_ATTR, {}).get(_key(inc, name, tuple(getattr(inc, f) for f in frames)))
    return None if hit is None else hit[2]


def _key(inc: Incident, name: str, read: tuple) -> tuple:
    return (name, *((id(df), len(df)) for df in read), id(inc.config))


def between(inc: Incident, df, col: str, start, end, *, inclusive: bool = False):
    """Rows of `df` with start <= df[col] < end (<= end with `inclusive`), by binary search on a
    time index built once per frame (a detector that looks at every launch's window would
    otherwise scan the whole frame once per launch)."""
    import numpy as np

    def build():
        t = _micros_of(df[col])
        order = np.argsort(t, kind="stable")
        # The frame itself is kept with its index: while it is cached, its id cannot be reused
        # by another frame.
        return df, t[order], order

    _, times, order = cached(inc, f"index:{id(df)}:{col}", (), build)
    lo = np.searchsorted(times, micros(start), side="left")
    hi = np.searchsorted(times, micros(end), side="right" if inclusive else "left")
    return df.iloc[np.sort(order[lo:hi])]


def rows_where(inc: Incident, frame: str, col: str, value):
    """Rows of one of the incident's frames whose `col` equals `value`, through a grouping made
    once per frame (a lookup per launch or per episode must not scan the whole frame)."""
    df = getattr(inc, frame)
    return df.iloc[positions(inc, df, col, value)]


def positions(inc: Incident, df, col: str, value, since=None, until=None):
    """Positions (sorted) of the rows of `df` whose `col` equals `value`, and with `since` or
    `until`, whose time is in [since, until): through a grouping and a time column made once per
    frame, so that picking one attempt's or one source's rows costs its rows, not the frame's."""
    import numpy as np

    def build():
        groups = {k: idx for k, idx in df.groupby(col, sort=False, dropna=True).indices.items()}
        return df, groups

    _, groups = cached(inc, f"groups:{id(df)}:{col}", (), build)
    idx = groups.get(value)
    if idx is None:
        return np.empty(0, dtype=np.intp)
    if since is None and until is None:
        return idx
    t = times_of(inc, df)[idx]
    keep = np.ones(len(idx), dtype=bool)
    if since is not None:
        keep &= t >= micros(since)
    if until is not None:
        keep &= t < micros(until)
    return idx[keep]


def times_of(inc: Incident, df):
    """`df`'s time column as microseconds since the epoch (UTC), made once per frame."""
    return cached(inc, f"times:{id(df)}", (), lambda: (df, _micros_of(df["time"])))[1]


def micros(t) -> int:
    """A time (naive is UTC) as microseconds since the epoch."""
    import pandas as pd

    t = pd.Timestamp(t)
    t = t.tz_convert("UTC").tz_localize(None) if t.tzinfo is not None else t
    return int(t.to_datetime64().astype("datetime64[us]").astype("i8"))


def _micros_of(s):
    import pandas as pd

    if isinstance(s.dtype, pd.DatetimeTZDtype):
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    return s.to_numpy(dtype="datetime64[us]").view("i8")


def of_kinds(inc: Incident, kinds: tuple[str, ...]):
    """The incident's events of these kinds, filtered once per frame."""
    return cached(inc, f"kinds:{','.join(kinds)}", ("events",),
                  lambda: inc.events[inc.events["kind"].isin(kinds)])


def first_seen_on_gpus(inc: Incident):
    """Each PID's first per-process GPU sample."""
    return cached(inc, "first on gpus", ("gpu_processes",),
                  lambda: inc.gpu_processes.dropna(subset=["pid"]).groupby("pid")["time"].min())

