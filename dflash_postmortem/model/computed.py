"""What is computed once per incident and shared within one `detect()` call: the attempts, the
throughput series, its episodes, the stalls.

Detectors stay functions of an Incident; within one `detect()` call they share these results
instead of recomputing them (a launch looked up once per regression recomputed every launch's
outcome, which made detection grow faster than the evidence). The memo is keyed by the identity
of the frames a result reads, so replacing a frame recomputes it, and it lives only for the
`scope` it was made in: nothing is left on the Incident afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TypeVar

from ..incident import Incident

T = TypeVar("T")
_ATTR = "_detect_memo"


@contextlib.contextmanager
def scope(inc: Incident):
    """Share results between the detectors run inside the block."""
    owner = _ATTR not in inc.__dict__
    if owner:
        inc.__dict__[_ATTR] = {}
    try:
        yield
    finally:
        if owner:
            inc.__dict__.pop(_ATTR, None)


def cached(inc: Incident, name: str, frames: tuple[str, ...], compute: Callable[[], T]) -> T:
    """`compute()` once per scope and per identity of the named frames. Outside a scope, a
    scope of its own for the call: what it computes on the way (states need progress, both need
    the attempts) is shared within it, and nothing stays on the Incident after."""
    store = inc.__dict__.get(_ATTR)
    if store is None:
        with scope(inc):
            return cached(inc, name, frames, compute)
    key = (name, *(id(getattr(inc, f)) for f in frames), *(id(inc.config),))
    if key not in store:
        store[key] = compute()
    return store[key]


def between(inc: Incident, df, col: str, start, end, *, inclusive: bool = False):
    """Rows of `df` with start <= df[col] < end (<= end with `inclusive`), by binary search on a
    time index built once
    per scope (a detector that looks at every launch's window would otherwise scan the whole
    frame once per launch)."""
    import numpy as np
    import pandas as pd

    def build():
        t = df[col].to_numpy(dtype="datetime64[us]").view("i8")
        order = np.argsort(t, kind="stable")
        # The frame itself is kept with its index: while it is cached, its id cannot be reused
        # by another frame.
        return df, t[order], order

    _, times, order = cached(inc, f"index:{id(df)}:{col}", (), build)
    def micros(t) -> int:
        t = pd.Timestamp(t)
        t = t.tz_convert("UTC").tz_localize(None) if t.tzinfo is not None else t
        return int(t.to_datetime64().astype("datetime64[us]").astype("i8"))

    lo = np.searchsorted(times, micros(start), side="left")
    hi = np.searchsorted(times, micros(end), side="right" if inclusive else "left")
    return df.iloc[np.sort(order[lo:hi])]


def rows_where(inc: Incident, frame: str, col: str, value):
    """Rows of one of the incident's frames whose `col` equals `value`, through a grouping made
    once per scope (a lookup per launch or per episode must not scan the whole frame)."""
    df = getattr(inc, frame)

    def build():
        return df, {k: idx for k, idx in df.groupby(col, sort=False, dropna=True).indices.items()}

    _, groups = cached(inc, f"rows:{frame}:{col}", (frame,), build)
    idx = groups.get(value)
    return df.iloc[idx] if idx is not None else df.iloc[:0]


def of_kinds(inc: Incident, kinds: tuple[str, ...]):
    """The incident's events of these kinds, filtered once per scope."""
    return cached(inc, f"kinds:{','.join(kinds)}", ("events",),
                  lambda: inc.events[inc.events["kind"].isin(kinds)])


def first_seen_on_gpus(inc: Incident):
    """Each PID's first per-process GPU sample."""
    return cached(inc, "first on gpus", ("gpu_processes",),
                  lambda: inc.gpu_processes.dropna(subset=["pid"]).groupby("pid")["time"].min())
