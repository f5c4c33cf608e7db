"""How numbers read, in one place for every sentence the kit writes: finding titles in
`detect/`, the pages' texts in `present/sentences.py`, the terminal view. A leaf module (it imports nothing
of the package), so the detectors and the presentation can both use it.
"""

from __future__ import annotations

import pandas as pd


def is_missing(value) -> bool:
    """Whether a value is absent however a frame or a parser marks it: None, NaN, NaT, pd.NA (a
    list or a dict, present, is not)."""
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def clock(t, *, date: bool = False, utc: bool = False, missing: str = "") -> str:
    """A time on the incident's one clock: `05:22:17`, with `date` `2026-11-30 05:22:17`, with
    `utc` the zone named after it; `missing` where there is no time."""
    if is_missing(t):
        return missing
    return pd.Timestamp(t).strftime(("%Y-%m-%d " if date else "") + "%H:%M:%S" + (" UTC" if utc else ""))


def start_known_to(t, within_s) -> str | None:
    """How precisely a start given to within `within_s` seconds is known: "day" (ps's START
    `Sep03`), "minute" (START `05:20`: a whole minute, 60 s), "range" (the seconds between two
    listings), None (to the second, or no start)."""
    if is_missing(t) or is_missing(within_s) or float(within_s) <= 1:
        return None
    t, w = pd.Timestamp(t), float(within_s)
    if w >= 86400:
        return "day"
    return "minute" if w == 60 and t.second == 0 and t.microsecond == 0 else "range"


def start_clock(t, within_s) -> str:
    """A start known only to its day or minute as `2026-09-03 (to the day)`, `05:20 (to the
    minute)`, and one known to the seconds between two listings as `05:20:10-05:20:20`, so that
    none reads as a moment before a launch at 05:20:16; else `clock(t)` (`start_known_to`)."""
    known = start_known_to(t, within_s)
    if known == "day":
        return pd.Timestamp(t).strftime("%Y-%m-%d") + " (to the day)"
    if known == "minute":
        return pd.Timestamp(t).strftime("%H:%M") + " (to the minute)"
    if known == "range":
        return f"{clock(t)}-{clock(pd.Timestamp(t) + pd.Timedelta(seconds=float(within_s)))}"
    return clock(t)


def clock_within(t, within_s, **kw) -> str:
    """A time its source gives only to within `within_s` seconds, the true moment being up to
    that much later (ps's START gives the minute; a command in a transcript dated only by its
    `date`s carries the latest clock before it): `05:23:01 (up to 60 s later)`; else `clock(t)`
    (also for a time given to its second, whose within is 1 s: the clock already says as much)."""
    if not is_missing(t) and not is_missing(within_s) and float(within_s) > 1:
        return f"{clock(t, **kw)} (up to {float(within_s):,.0f} s later)"
    return clock(t, **kw)


def duration(seconds) -> str:
    """A length of time in whole seconds: `91 s`, `4,786 s` (the findings measure in seconds)."""
    return "n/a" if is_missing(seconds) else f"{seconds:,.0f} s"


def share(seconds: float, total: float) -> str:
    """A part of a length of time, with its fraction of the whole: `64 s (85%)`."""
    if is_missing(seconds) or is_missing(total) or not total > 0:
        return duration(seconds)
    return f"{duration(seconds)} ({seconds / total:.0%})"


# Every number below reads `n/a` where there is none (a missing level, a run with no tokens),
# never `nanK`.
def count(n: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the number it takes: `1 line`, `3 lines`, `2 processes`."""
    if n == 1:
        return f"1 {noun}"
    return f"{n:,} {plural or (noun + 'es' if noun.endswith(('s', 'sh', 'ch', 'x')) else noun + 's')}"


def tok_s(value: float) -> str:
    """Throughput in thousands of tokens per second: `146.8K` (the unit is the sentence's to say)."""
    return "n/a" if is_missing(value) else f"{value / 1e3:.1f}K"


def rate(value: float, unit: str) -> str:
    """A pace with its unit (model/pace.py): `146.8K tok/s`, `8.41 steps/s`."""
    return f"{tok_s(value)} tok/s" if unit == "tok/s" else f"{figure(value, unit)} {unit}"


def figure(value: float, unit: str) -> str:
    """A pace's number in the digits its unit takes, for lists of levels: `146812`, `8.41`."""
    if is_missing(value):
        return "n/a"
    return f"{value:.0f}" if unit == "tok/s" else f"{value:.3g}"


def gpu_hours(value: float) -> str:
    """GPU-hours to the hundredth: `0.03`, `5.05`."""
    return "n/a" if is_missing(value) else f"{value:,.2f}"


def tokens(value: float) -> str:
    """A token count estimated from rates, to the three digits a rate supports: `8.97M`, `412K`."""
    if is_missing(value):
        return "n/a"
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def percent(fraction: float) -> str:
    """A fraction 0..1 as a whole percentage: `97 %` (a goodput, a share of GPU time)."""
    return "n/a" if is_missing(fraction) else f"{fraction * 100:.0f} %"
