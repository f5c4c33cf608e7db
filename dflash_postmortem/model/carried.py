"""What the model keeps of one read of a growing folder for the next (the live watch): the results
of the attempts that are over, so that a read recomputes only the attempts its new rows touch.

A folder followed live is read again every few seconds; most of what it holds belongs to
attempts that ended long ago (a crash loop's fifty starts before the one that runs now). Each
result of such an attempt (its row of the attempts, its states, its progress) is kept under a
key made of everything it was computed from: the attempt as assembled (its start, command,
processes, log parts, job) and a digest of the very rows it read. The next read assembles the
attempts again (cheap: which signals make which start), computes each key, and takes the kept
result where the key is the same; an attempt whose rows changed, or that is still going, is
computed again.

Only results that no later evidence can change are kept: an attempt's row once it has an end and
the evidence has gone on past it (`END_SLACK` twice, model/attempts.py: within that a run's last
records may still be read as its end or not), and what follows from such a row and its rows.
Results are taken only where the incident is read live (`Incident.live`, set by the watch): a
copy of an incident (redacted, windowed) is computed from its own rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import pandas as pd

from ..incident import Incident
from . import computed

T = TypeVar("T")
_ATTR = "_settled"


@dataclass
class Carry:
    """One read's share of what is carried from read to read (`Incident.carried`): what the last
    read kept, and what this one keeps for the next. An incident's views of its hosts (clock/hosts.py)
    hold the same Carry: what each computes is kept for the next read of the whole."""

    earlier: dict = field(default_factory=dict)  # (name, key) -> what the last read kept
    now: dict = field(default_factory=dict)  # (name, key) -> what this read keeps
    counts: Counter = field(default_factory=Counter)  # (name, "carried" | "computed") -> how many

    def next(self) -> Carry:
        """The Carry of the next read: what this one kept is what it takes from."""
        return Carry(earlier=self.now)

    def may_hold(self, name: str, first: Hashable) -> bool:
        """Whether the last read kept anything under `name` whose key begins with `first` (an
        attempt as assembled): where it did not, nothing can be taken, and the rest of the key
        (the digest of its rows) need not be made."""
        if "_firsts" not in self.__dict__:
            self._firsts = {(n, k[0]) for n, k in self.earlier if isinstance(k, tuple) and k}
        return (name, first) in self._firsts


def take(inc: Incident, name: str, key: Hashable | Callable[[], Hashable], compute: Callable[[], T],
         keep: Callable[[T], bool] = lambda _: True, first: Hashable | None = None) -> T:
    """`compute()`, or what the last read of the same folder computed under the same `name` and
    `key` (`inc.carried`). The result is kept for the next read where `keep(result)` says no
    later evidence can change it. `key` may be a function that makes it, with `first` the key's
    first part: it is made only where the last read kept something under that first part, or the
    result is to be kept (a going attempt's rows are not hashed at every read)."""
    carry = inc.carried
    if not inc.live or carry is None:
        return compute()  # read once: nothing to keep for a next read
    if callable(key):
        if first is not None and not carry.may_hold(name, first):
            carry.counts[name, "computed"] += 1
            value = compute()
            if keep(value):
                carry.now[name, key()] = value
            return value
        key = key()
    k = (name, key)
    if k in carry.now:
        return carry.now[k]
    if k in carry.earlier:
        carry.counts[name, "carried"] += 1
        value = carry.earlier[k]
    else:
        carry.counts[name, "computed"] += 1
        value = compute()
        if not keep(value):
            return value
    carry.now[k] = value
    return value


def settle(inc: Incident, attempt: str, key: Hashable) -> None:
    """Say that `attempt` (its label in this incident's attempts) is over and is what `key` names:
    what is computed of it from here on may be kept under that key (`settled`). Said only of an
    incident read live: one read once keeps nothing."""
    if inc.live and inc.carried is not None:
        inc.__dict__.setdefault(_ATTR, {})[attempt] = key


def settled(inc: Incident, attempt: str) -> Hashable | None:
    """The key of `attempt` where it is over (`settle`), else None."""
    return inc.__dict__.get(_ATTR, {}).get(attempt)


def of_attempt(inc: Incident, attempt: str, name: str, reads: Callable[[], tuple], compute: Callable[[], T]) -> T:
    """`compute()` of one attempt's part of the model (its states, its progress): where the
    attempt is over, taken from the last read under its key and `reads()`, the digests of what
    else that part reads (made only then)."""
    over = settled(inc, attempt)
    if over is None:
        return compute()
    return take(inc, name, (over, *reads()), compute)


# The columns that say of a row when it was, which line it is and what it says: rows equal in
# these are one line read the same way (a line still being written reads differently as it grows;
# a traceback's message grows with the lines that continue it).
_SAYS = ("time", "ref", "line", "source", "metric", "value", "step", "kind", "message", "pid", "gpu",
         "used_memory_mib", "exit_code", "signal", "first_seen", "last_seen", "alive_until")


def digest(*frames: pd.DataFrame) -> tuple[int, ...]:
    """The rows of these frames as numbers, equal for equal rows whatever their order or index
    (in the columns of _SAYS): the part of a key that says a result's rows are still the ones it
    was computed from."""
    out = []
    for df in frames:
        out += [len(df), int(_row_hashes(df).sum(dtype=np.uint64))] if len(df) else [0]
    return tuple(out)


def digest_in(inc: Incident, name: str, rows: pd.DataFrame) -> tuple[int, int]:
    """`digest` of `rows`, rows of the incident's frame `name` as they are there (selected, its
    index kept, no value changed), through the hashes of that frame's rows made once per read:
    an attempt's key costs its rows' positions, not a hashing of them (keys are made for every
    attempt at every read)."""
    if not len(rows):
        return (0, 0)
    df = getattr(inc, name)
    hashes = computed.cached(inc, f"row hashes of {name}", (name,), lambda: _row_hashes(df))
    at = df.index.get_indexer(rows.index)
    if (at < 0).any():  # not rows of that frame: hashed as they are
        return digest(rows)
    return (len(rows), int(hashes[at].sum(dtype=np.uint64)))


def _row_hashes(df: pd.DataFrame) -> np.ndarray:
    """One number per row of `df` from its columns of _SAYS, in order (a value moved to another
    row changes its row's number)."""
    rows = np.zeros(len(df), dtype=np.uint64)
    for c in [c for c in _SAYS if c in df.columns]:
        rows = rows * np.uint64(1_000_003) ^ pd.util.hash_array(_values(df[c]))
    return rows


def _values(s: pd.Series) -> np.ndarray:
    if isinstance(s.dtype, pd.DatetimeTZDtype) or s.dtype.kind == "M":
        return s.array.asi8
    if s.dtype.kind in "iufb":
        return s.to_numpy(dtype="float64", na_value=np.nan)
    # text, and a column of Python objects (a signal's name or number), as its text
    return s.astype(str).to_numpy(dtype=object)
