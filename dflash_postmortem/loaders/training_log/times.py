"""Timestamps of training-log lines: the forms found near a line's start, the day a time-of-day
stamp belongs to (midnight roll-over), and the conversion of a file's stamps to UTC.

A stamp is kept as found (`Stamp`) while the file is scanned and converted once per batch:
naive ones are read in the incident's time zone (`align` owns zones), aware ones converted.
Time-of-day stamps (`[12:34:56]`, `12:13:46 INFO`) take their date from the nearest full date
in the same file, counting a midnight each time the clock runs backwards by more than an hour;
with no full date in the file, from the incident date; else they have no time.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ... import align

# How far the clock must run backwards between two stamped lines to mean "the next day": lines
# of several ranks interleave a few seconds out of order, a midnight goes back ~24 h.
ROLLOVER_BACKWARDS_S = 3600

MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}

_ISO = (
    r"(?P<date>\d{4}[-/]\d{2}[-/]\d{2})[T _](?P<time>\d{2}:\d{2}(?::\d{2})?)(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2}\b|\s?UTC)?"
)
# (name, regex). The first that matches near the start of a line wins; `iso` and `mdy` may
# follow a prefix (`[`, a level, a logger name), the others start the line.
TIMESTAMPS: tuple[tuple[str, re.Pattern], ...] = (
    ("iso", re.compile(_ISO)),
    # nanotron `01/17/2024 13:47:27`, rich's `[03/17/23 20:03:12]`: month first (en_US %x)
    ("mdy", re.compile(r"(?<![\d/])(?P<a>\d{2})/(?P<b>\d{2})/(?P<year>\d{4}|\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?")),
    # glog / absl / c10: I0912 11:40:27.956218, [E626 06:24:44.9...] (month and day, no year;
    # c10 drops the month's leading zero)
    ("glog", re.compile(r"^\[?[IWEF](?P<month>\d{1,2})(?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,9}))?")),
    ("syslog", re.compile(r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) (?P<time>\d{2}:\d{2}:\d{2})")),
    ("clock", re.compile(r"^\[?(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?\]?(?:\s|$)")),
)
_SEARCHED = {"iso", "mdy"}


@dataclass
class Stamp:
    """A timestamp as found. `form`: iso (full date), monthday (no year), clock (time of day
    only). A clock stamp carries how many midnights the file had passed when it was read
    (`day`) and the latest full date before it with that count (`anchor`)."""

    form: str
    text: str
    aware: bool = False
    day: int = 0
    anchor: tuple[str, int] | None = None

    @property
    def seconds_of_day(self) -> int:
        t = self.text.split("T")[-1]
        return int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])


def find_stamp(text: str) -> tuple[Stamp | None, int]:
    """The timestamp near the start of a line, and where the text after it begins."""
    head = text[:64]
    for form, rx in TIMESTAMPS:
        m = rx.search(head) if form in _SEARCHED else rx.match(head)
        if not m:
            continue
        g = m.groupdict()
        frac = (g.get("frac") or "0")[:6].ljust(6, "0")
        clock = g["time"] if len(g["time"]) == 8 else g["time"] + ":00"
        if form == "iso":
            date = g["date"].replace("/", "-")
            iso = f"{date}T{clock}.{frac}"
            zone = (g.get("zone") or "").strip()
            if zone in ("Z", "UTC"):
                return Stamp("iso", iso + "+00:00", aware=True), m.end()
            if zone:
                z = zone if ":" in zone else zone[:3] + ":" + zone[3:]
                return Stamp("iso", iso + z, aware=True), m.end()
            return Stamp("iso", iso), m.end()
        if form == "mdy":
            month, day = int(g["a"]), int(g["b"])
            if month > 12 >= day:  # day first after all (en_GB %x)
                month, day = day, month
            year = g["year"] if len(g["year"]) == 4 else "20" + g["year"]
            return Stamp("iso", f"{year}-{month:02d}-{day:02d}T{clock}.{frac}"), m.end()
        if form == "glog":
            return Stamp("monthday", f"{int(g['month']):02d}-{g['day']}T{clock}.{frac}"), m.end()
        if form == "syslog":
            return Stamp("monthday", f"{MONTHS[g['mon']]:02d}-{int(g['day']):02d}T{clock}.000000"), m.end()
        return Stamp("clock", f"{clock}.{frac}"), m.end()
    return None, 0


class Calendar:
    """Follows a file's clock line by line: the full dates seen and the midnights passed, so
    that a time-of-day stamp can be dated from its nearest full date."""

    def __init__(self):
        self.rollovers = 0
        self.last_seconds: int | None = None
        self.anchor: tuple[str, int] | None = None  # (latest full date, rollovers when seen)
        self.first_anchor: tuple[str, int] | None = None

    def see(self, stamp: Stamp) -> None:
        if stamp.form == "monthday":
            return  # another clock (glog is often UTC while the logger is local): no roll-over
        try:
            seconds = stamp.seconds_of_day
        except ValueError:
            return
        if stamp.form == "iso":
            self.anchor = (stamp.text[:10], self.rollovers)
            self.first_anchor = self.first_anchor or self.anchor
        elif self.last_seconds is not None and seconds < self.last_seconds - ROLLOVER_BACKWARDS_S:
            self.rollovers += 1
        self.last_seconds = seconds
        if stamp.form == "clock":
            stamp.day, stamp.anchor = self.rollovers, self.anchor

    def see_fast(self, stamp: bytes) -> None:
        """A DFlash fast-path stamp (`YYYY-mm-dd HH:MM:SS` bytes): a full date."""
        try:
            seconds = int(stamp[11:13]) * 3600 + int(stamp[14:16]) * 60 + int(stamp[17:19])
        except ValueError:
            return
        self.anchor = (stamp[:10].decode("ascii", "replace"), self.rollovers)
        self.first_anchor = self.first_anchor or self.anchor
        self.last_seconds = seconds


def _clock_date(stamp: Stamp, first_anchor: tuple[str, int] | None, incident_date: dt.date | None) -> tuple[str | None, str]:
    """The date of a time-of-day stamp and where it came from."""
    anchor = stamp.anchor or first_anchor
    try:
        if anchor is not None:
            base = dt.date.fromisoformat(anchor[0])
            return (base + dt.timedelta(days=stamp.day - anchor[1])).isoformat(), "the nearest full date in the file"
        if incident_date is not None:
            return (incident_date + dt.timedelta(days=stamp.day)).isoformat(), "the incident date"
    except (ValueError, OverflowError):
        return None, "an impossible date in the file"
    return None, ""


def resolve_times(stamps: list, rep, ctx, first_date: str | None, first_anchor: tuple[str, int] | None = None) -> pd.Series:
    """Turn found stamps into UTC times; borrowed and partial (no year/date) ones say so.

    `first_date` gives month-day stamps their year; `first_anchor` (the file's first full date
    and the midnights passed before it) dates time-of-day stamps read before any full date.
    """
    # UTC instants as naive datetime64[us], filled per form: a tz-aware Series' to_numpy() would
    # give one Timestamp object per row.
    out = np.full(len(stamps), np.datetime64("NaT"), dtype="datetime64[us]")
    if not stamps:
        return align.localize(pd.Series(out), "UTC")
    by_form: dict[tuple, list[int]] = {}
    fast: list[int] | slice = []
    missing = 0
    if set(map(type, stamps)) == {bytes}:  # all from the DFlash fast path: one vectorised parse
        fast = slice(None)
    else:
        for i, s in enumerate(stamps):
            if type(s) is bytes:
                fast.append(i)
            elif s is None:
                missing += 1
            else:
                by_form.setdefault((s.form, s.aware), []).append(i)
    if missing:
        rep.assume(f"{missing} rows have no time: no timestamp on or before their line")
    if fast:
        found = stamps if isinstance(fast, slice) else [stamps[i] for i in fast]
        out[fast] = _utc_naive(align.localize(_naive_seconds(found), ctx.timezone))
        rep.assume(align.zone_assumption(ctx.timezone))
    year_from = ctx.date.isoformat() if ctx.date else first_date
    for (form, aware), idx in by_form.items():
        if form == "clock":
            keep, texts, sources = [], [], set()
            for i in idx:
                date, source = _clock_date(stamps[i], first_anchor, ctx.date)
                if date is not None:
                    keep.append(i)
                    texts.append(f"{date}T{stamps[i].text}")
                    sources.add(source)
                elif source:
                    sources.add(source)
            if len(keep) < len(idx):
                rep.assume(f"{len(idx) - len(keep)} time-of-day timestamps have no date in the file or the incident: rows have no time")
            for source in sorted(s for s in sources if s):
                rep.assume(f"time-of-day timestamps dated from {source} (a midnight counted where the clock goes back)")
            idx = keep
        else:
            texts = [stamps[i].text for i in idx]
        if form == "monthday":
            if year_from is None:
                rep.assume("timestamps carry month and day but no year, and nothing gives the year: rows have no time")
                continue
            texts = [f"{year_from[:4]}-{t}" for t in texts]
            rep.assume(f"year {year_from[:4]} taken from {'incident date' if ctx.date else 'the file'} for month-day timestamps")
        if not idx:
            continue
        if aware:
            t = pd.to_datetime(pd.Series(texts), format="ISO8601", errors="coerce", utc=True).astype("datetime64[us, UTC]")
        else:
            naive = pd.to_datetime(pd.Series(texts), format="%Y-%m-%dT%H:%M:%S.%f", errors="coerce")
            t = align.localize(naive, ctx.timezone)
            rep.assume(align.zone_assumption(ctx.timezone))
        out[idx] = _utc_naive(t)
    return align.localize(pd.Series(out), "UTC")


def _utc_naive(t: pd.Series) -> np.ndarray:
    """UTC instants of a UTC series as datetime64[us] (its int64 storage, no zone arithmetic)."""
    return t.astype("datetime64[us, UTC]").array.asi8.view("datetime64[us]")


def _naive_seconds(stamps: list[bytes]) -> pd.Series:
    """`YYYY-mm-dd HH:MM:SS` bytes -> naive datetime64[us], parsed by numpy in one call; an
    impossible date (month 13) sends the batch through pandas, which makes that one NaT."""
    raw = np.array(stamps, dtype="S19")
    try:
        t = raw.astype("datetime64[s]")
    except ValueError:
        t = pd.to_datetime(pd.Series(raw.astype(str)), format="%Y-%m-%d %H:%M:%S", errors="coerce").to_numpy()
    return pd.Series(t.astype("datetime64[us]"))
