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
import functools
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...clock import align
from ...units import count

# How far the clock must run backwards between two stamped lines to mean "the next day": lines
# of several ranks interleave a few seconds out of order, a midnight goes back ~24 h.
ROLLOVER_BACKWARDS_S = 3600

MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}

ISO_STAMP = (
    r"(?P<date>\d{4}[-/]\d{2}[-/]\d{2})[T _](?P<time>\d{2}:\d{2}(?::\d{2})?)(?:[.,](?P<frac>\d{1,9}))?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2}\b|\s?UTC)?"
)
# (name, regex). The first that matches near the start of a line wins; `iso` and `mdy` may
# follow a prefix (`[`, a level, a logger name), the others start the line.
TIMESTAMPS: tuple[tuple[str, re.Pattern], ...] = (
    ("iso", re.compile(ISO_STAMP)),
    # nanotron `01/17/2024 13:47:27`, rich's `[03/17/23 20:03:12]`: month first (en_US %x)
    # (and en_US's 12-hour clock after it, `%I:%M:%S %p`: `08/11/2018 03:14:46 PM`)
    ("mdy", re.compile(r"(?<![\d/])(?P<a>\d{2})/(?P<b>\d{2})/(?P<year>\d{4}|\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?"
                       r"(?: (?P<ampm>[AP]M)\b)?")),
    # glog / absl / c10: I0912 11:40:27.956218, [E626 06:24:44.9...] (month and day, no year;
    # c10 drops the month's leading zero)
    # BasicSR / mmsr's logger before 2020: `19-08-09 08:23:24.709 - INFO:` (%y-%m-%d), at the line's start
    ("ymd2", re.compile(r"^(?P<year>\d{2})-(?P<month>\d{2})-(?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))? - ")),
    ("glog", re.compile(r"^\[?[IWEF](?P<month>\d{1,2})(?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:\.(?P<frac>\d{1,9}))?")),
    # vLLM's and SkyPilot's loggers: `INFO 12-08 19:50:16 llm_engine.py:72]`, `I 03-25 07:19:29
    # controller.py:152]` (a level, then month-day, no year)
    ("lmd", re.compile(r"^(?:[IWEFD]|INFO|WARNING|ERROR|DEBUG|CRITICAL) (?P<month>\d{2})-(?P<day>\d{2}) "
                       r"(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?")),
    # detectron2's logger: `[04/17 09:42:26 d2.utils.events]:` on the console, `[11/16 04:35:50]
    # d2.utils.events INFO:` in its log.txt (%m/%d, no year); tensorpack's `[0424 16:24:46
    # @base.py:285]` (%m%d)
    ("md", re.compile(r"^\[(?P<month>\d{2})/?(?P<day>\d{2}) (?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?[ \]]")),
    # ctime, as `date` and Horovod's --timestamp-output print it: `Tue Apr 21 18:22:57 2020`,
    # `Tue Apr 21 18:22:57 UTC 2020` (a zone other than UTC or GMT is read as the incident's)
    # (`dmesg -T` prints it in brackets: `[Mon Jul 20 04:51:42 2022] Out of memory: ...`)
    ("ctime", re.compile(r"^\[?(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +"
                         r"(?P<day>\d{1,2}) (?P<time>\d{2}:\d{2}:\d{2})(?: (?P<zone>[A-Z]{2,5}))? (?P<year>\d{4})")),
    ("syslog", re.compile(r"^(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) (?P<time>\d{2}:\d{2}:\d{2})")),
    ("clock", re.compile(r"^\[?(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?\]?(?:\s|$)")),
)
SEARCHED = {"iso", "mdy"}  # found anywhere in a line's head; the others start it


@dataclass
class Stamp:
    """A timestamp as found. `form`: iso (full date), monthday (no year), clock (time of day
    only). A clock stamp carries the reading of the file's clock it is dated with (`reading`,
    an index into its Calendar; -1: the file's start, before any reading). `borrowed`: a line
    without a time of its own took it from a line before it (it was written then or later)."""

    form: str
    text: str
    aware: bool = False
    reading: int = -1
    borrowed: bool = False

    @property
    def seconds_of_day(self) -> int:
        t = self.text.split("T")[-1]
        return int(t[0:2]) * 3600 + int(t[3:5]) * 60 + int(t[6:8])


def find_stamp(text: str) -> tuple[Stamp | None, int]:
    """The timestamp near the start of a line, and where the text after it begins."""
    head = text[:64]
    for form, rx in TIMESTAMPS:
        m = rx.search(head) if form in SEARCHED else rx.match(head)
        if m:
            return stamp_of(form, m.groupdict()), m.end() - END_BACK.get(form, 0)
    return None, 0


# ymd2's regex takes the ` - ` after the time, which is the text after it
END_BACK = {"ymd2": 3}


def stamp_of(form: str, g: dict) -> Stamp:
    """The stamp a form of TIMESTAMPS gives from its regex's groups (one that did not take part
    None or empty)."""
    frac = (g.get("frac") or "0")[:6].ljust(6, "0")
    clock = g["time"] if len(g["time"]) == 8 else g["time"] + ":00"
    if form == "iso":
        return iso_stamp(g["date"], g["time"], g["frac"], g["zone"])
    if form == "mdy":
        month, day = int(g["a"]), int(g["b"])
        if month > 12 >= day:  # day first after all (en_GB %x)
            month, day = day, month
        year = g["year"] if len(g["year"]) == 4 else "20" + g["year"]
        if g.get("ampm"):  # 12 AM is midnight's hour, 12 PM noon's
            clock = f"{int(clock[:2]) % 12 + (12 if g['ampm'] == 'PM' else 0):02d}{clock[2:]}"
        return Stamp("iso", f"{year}-{month:02d}-{day:02d}T{clock}.{frac}")
    if form == "ymd2":
        return Stamp("iso", f"20{g['year']}-{g['month']}-{g['day']}T{clock}.{frac}")
    if form in ("glog", "md", "lmd"):
        return Stamp("monthday", f"{int(g['month']):02d}-{g['day']}T{clock}.{frac}")
    if form == "ctime":
        iso = f"{g['year']}-{MONTHS[g['mon']]:02d}-{int(g['day']):02d}T{clock}.{frac}"
        if g["zone"] in ("UTC", "GMT"):
            return Stamp("iso", iso + "+00:00", aware=True)
        return Stamp("iso", iso)
    if form == "syslog":
        return Stamp("monthday", f"{MONTHS[g['mon']]:02d}-{int(g['day']):02d}T{clock}.000000")
    return Stamp("clock", f"{clock}.{frac}")


def iso_stamp(date: str, time: str, frac: str | None, zone: str | None) -> Stamp:
    """The stamp of a full date and time as ISO_STAMP's groups read it (a group that did not
    take part None or empty)."""
    clock = time if len(time) == 8 else time + ":00"
    iso = f"{date.replace('/', '-')}T{clock}.{(frac or '0')[:6].ljust(6, '0')}"
    zone = (zone or "").strip()
    if zone in ("Z", "UTC"):
        return Stamp("iso", iso + "+00:00", aware=True)
    if zone:
        return Stamp("iso", iso + (zone if ":" in zone else zone[:3] + ":" + zone[3:]), aware=True)
    return Stamp("iso", iso)


class Calendar:
    """Follows a file's clock line by line: its readings in order (the time of day of each
    stamped line, and the date it states, if any), which `align.date_times_of_day` turns into
    the dates of the time-of-day stamps once the file is read.

    Of a run of stamps with full dates only the first and the last are kept: a time of day is
    dated from the last full date before it (and stamps before the file's first full date from
    that one), and such readings pass no midnight of their own.
    """

    def __init__(self):
        self.seconds: list[int] = []
        self.dates: list[str | bytes | None] = []  # the date a reading states (ISO text), None: a time of day
        self._dated_run = False  # the last reading states its date
        self._pending: tuple[int, str | bytes] | None = None  # the last of a run of dated readings, not kept yet

    def see(self, stamp: Stamp) -> None:
        if stamp.form == "monthday":
            return  # another clock (glog is often UTC while the logger is local): no roll-over
        try:
            seconds = stamp.seconds_of_day
        except ValueError:
            return
        if stamp.form == "iso":
            self._dated(seconds, stamp.text[:10])
        elif stamp.form == "clock":
            self._flush()
            self.seconds.append(seconds)
            self.dates.append(None)
            self._dated_run = False
            stamp.reading = len(self.seconds) - 1

    def see_fast(self, stamp: bytes) -> None:
        """A DFlash fast-path stamp (`YYYY-mm-dd HH:MM:SS` bytes): a full date."""
        try:
            seconds = int(stamp[11:13]) * 3600 + int(stamp[14:16]) * 60 + int(stamp[17:19])
        except ValueError:
            return
        self._dated(seconds, stamp[:10])

    def now(self) -> int:
        """The reading a stamp found a few lines back is dated with: the latest so far."""
        self._flush()
        return len(self.seconds) - 1

    def _dated(self, seconds: int, date: str | bytes) -> None:
        if self._dated_run:
            self._pending = (seconds, date)
            return
        self.seconds.append(seconds)
        self.dates.append(date)
        self._dated_run = True

    def _flush(self) -> None:
        if self._pending is not None:
            self.seconds.append(self._pending[0])
            self.dates.append(self._pending[1])
            self._pending = None

    def dates_of_readings(self, incident_date: dt.date | None) -> tuple[list[str | None], str]:
        """The date (ISO text) of each reading, the file's start first (reading -1), and where
        the dates of the time-of-day stamps came from."""
        self._flush()
        texts = [d.decode("ascii", "replace") if isinstance(d, bytes) else d for d in self.dates]
        known = [_iso_date(t) for t in texts]
        stated = [t is not None for t in texts]
        # The file's start: no time of day, so it passes no midnight.
        days = align.date_times_of_day([np.nan, *self.seconds], [None, *known], stated=[False, *stated],
                                       slack_s=ROLLOVER_BACKWARDS_S, start=incident_date)
        if any(stated):
            source = "the nearest full date in the file"
        elif incident_date is not None:
            source = "the incident date"
        else:
            return [None] * len(days), ""
        out = [str(d) if not np.isnat(d) and _MIN_DAY <= d <= _MAX_DAY else None for d in days]
        return out, source


# The dates Python's datetime can hold: a date past them is as impossible as month 13.
_MIN_DAY, _MAX_DAY = np.datetime64("0001-01-01", "D"), np.datetime64("9999-12-31", "D")


def _iso_date(text: str | None):
    try:
        return dt.date.fromisoformat(text) if text is not None else None
    except ValueError:
        return None


def resolve_times(stamps: list | np.ndarray, rep, ctx, first_date: str | None, calendar: Calendar) -> pd.Series:
    """Turn found stamps into UTC times; borrowed and partial (no year/date) ones say so.

    `first_date` gives month-day stamps their year; `calendar` (the file's clock as it was read)
    dates time-of-day stamps.
    """
    # UTC instants as naive datetime64[us], filled per form: a tz-aware Series' to_numpy() would
    # give one Timestamp object per row.
    out = np.full(len(stamps), np.datetime64("NaT"), dtype="datetime64[us]")
    if not len(stamps):
        return align.localize(pd.Series(out), "UTC")
    kind = stamps.dtype.kind if isinstance(stamps, np.ndarray) else "O"
    if kind == "M":  # the DFlash lines' times, read from their text in bulk (process_log._FastLines)
        rep.assume(align.zone_assumption(ctx.timezone))
        return align.localize(pd.Series(stamps.astype("datetime64[us]")), ctx.timezone)
    by_form: dict[tuple, list[int]] = {}
    fast: list[int] | slice = []
    missing = 0
    if kind == "S" or set(map(type, stamps)) == {bytes}:  # all from the DFlash fast path: one vectorised parse
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
        rep.assume(f"{count(missing, 'row')} without a time: no timestamp on or before {'its' if missing == 1 else 'their'} line")
    if fast:
        found = stamps if isinstance(fast, slice) else [stamps[i] for i in fast]
        out[fast] = _utc_naive(align.localize(_naive_seconds(found), ctx.timezone))
        rep.assume(align.zone_assumption(ctx.timezone))
    year_from = ctx.date.isoformat() if ctx.date else first_date
    for (form, aware), idx in by_form.items():
        if form == "clock":
            keep, texts, sources = [], [], set()
            dates, dated_from = calendar.dates_of_readings(ctx.date)
            for i in idx:
                date = dates[stamps[i].reading + 1]
                if date is not None:
                    keep.append(i)
                    texts.append(f"{date}T{stamps[i].text}")
                    sources.add(dated_from)
                elif dated_from == "the nearest full date in the file":
                    sources.add("an impossible date in the file")
            if len(keep) < len(idx):
                rep.needs_date = not dated_from
                rep.assume(f"{len(idx) - len(keep)} time-of-day timestamps have no date in the file or the incident: rows have no time")
            for source in sorted(s for s in sources if s):
                rep.assume(f"time-of-day timestamps dated from {source} (a midnight counted where the clock goes back)")
            idx = keep
        else:
            texts = [stamps[i].text for i in idx]
        if form == "monthday":
            if year_from is None:
                rep.needs_date = True
                rep.assume("timestamps carry month and day but no year, and nothing gives the year: rows have no time")
                continue
            near = dt.date.fromisoformat(year_from[:10])
            texts = [f"{_year_nearest(t[:5], near)}-{t}" for t in texts]
            years = ", ".join(sorted({t[:4] for t in texts}))
            rep.assume(f"year {years} taken from {f'the incident date {near}' if ctx.date else 'the file'} for "
                       "month-day timestamps (the year that puts each nearest that date)")
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


@functools.lru_cache(maxsize=1024)
def _year_nearest(month_day: str, near: dt.date) -> int:
    """The year that puts `MM-DD` nearest `near` (a log of 31 December read with an incident
    dated 2 January belongs to the year before)."""
    month, day = int(month_day[:2]), int(month_day[3:5])
    gaps = []
    for year in (near.year, near.year - 1, near.year + 1):
        try:
            gaps.append((abs((dt.date(year, month, day) - near).days), year))
        except ValueError:  # 29 February of a common year, month 13: no such day
            continue
    return min(gaps)[1] if gaps else near.year


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
