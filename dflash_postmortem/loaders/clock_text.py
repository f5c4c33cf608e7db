"""Wall-clock text as people's tools print it: `date` in its locale forms, `script`'s header,
`dmesg -T`, syslog/journalctl stamps. Returns the naive wall-clock time and the UTC offset the
text states (a numeric offset or an unambiguous zone abbreviation: `align.zone_offset`), never a guess: text without a
usable zone leaves the offset None and the caller reads it in the incident's zone through `align`.

    Tue Dec  1 03:04:05 UTC 2026          C locale `date`
    Tue Dec  1 03:04:05 AM UTC 2026       en_US `date` (coreutils >= 8.31)
    Di 1. Dez 03:04:05 CET 2026           de_DE
    mar. 01 déc. 2026 03:04:05 CET        fr_FR
    2026年 12月 01日 星期二 03:04:05 CST   zh_CN
    Tue, 01 Dec 2026 03:04:05 +0000       date -R
    2026-12-01T03:04:05+00:00             date -Is / --rfc-3339 / script(1) of util-linux >= 2.35
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from ..clock import align

# Month names and abbreviations of the locales `date` is seen in (lower case, no trailing dot).
_MONTH_WORDS = {
    1: "jan january januar janvier janv ene enero gen gennaio janeiro januari sty styczeń stycznia янв января январь",
    2: "feb february februar février févr fevr febrero febbraio fev fevereiro februari lut luty lutego фев февраля февраль",
    3: "mar march märz mär mrz mars marzo março mrt maart marca marzec мар марта март",
    4: "apr april avril avr abr abril aprile kwi kwiecień kwietnia апр апреля апрель",
    5: "may mai mayo mag maggio maio mei maj maja мая май",
    6: "jun june juni juin junio giu giugno junho cze czerwiec czerwca июн июня июнь",
    7: "jul july juli juillet juil julio lug luglio julho lip lipiec lipca июл июля июль",
    8: "aug august août aout ago agosto augustus sie sierpień sierpnia авг августа август",
    9: "sep sept september septembre septiembre set settembre setembro wrz wrzesień września сен сентября сентябрь",
    10: "oct october oktober octobre okt octubre ott ottobre out outubro paź październik października окт октября октябрь",
    11: "nov november novembre noviembre novembro lis listopad listopada ноя ноября ноябрь",
    12: "dec december dezember décembre déc dez dic diciembre dicembre dezembro gru grudzień grudnia дек декабря декабрь",
}
MONTHS = {w: n for n, words in _MONTH_WORDS.items() for w in words.split()}
# A month as `%b` writes it in a syslog/journalctl stamp (`May 15`, `kwi 15`, `févr. 15`, `4月 15`);
# `month_number` says whether the word is one.
SYSLOG_MONTH = r"(?:[^\W\d_]{3,5}\.?|\d{1,2}\s?[月월])"


def month_number(word: str) -> int | None:
    """The month a locale's name or abbreviation states (`Apr`, `kwi`, `avr.`, `апр`, `4月`), or None."""
    w = word.strip().rstrip(".").lower()
    m = re.fullmatch(r"(\d{1,2})\s?[月월]", w)
    if m:
        n = int(m[1])
        return n if 1 <= n <= 12 else None
    return MONTHS.get(w)
_TIME = re.compile(r"(?<![\d:])(?P<h>\d{1,2}):(?P<m>\d{2}):(?P<s>\d{2})(?:[.,](?P<frac>\d{1,9}))?(?![\d:])")
_ISO = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<frac>\d{1,9}))?"
                  r"\s?(?P<off>Z|[+-]\d{2}:?\d{2}|[+-]\d{2}(?!\d))?")
_CJK = re.compile(r"(?P<y>\d{4})\s*年\s*(?P<mo>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*日")
# 2026/12/01, 14-03-2018, 03/14/2018: read only when the order is certain (year first, or one
# of the two leading numbers above 12).
_NUMERIC_DATE = re.compile(r"(?<![\d:])(?:(?P<y1>\d{4})[-/.](?P<a1>\d{1,2})[-/.](?P<b1>\d{1,2})|(?P<a2>\d{1,2})[-/.](?P<b2>\d{1,2})[-/.](?P<y2>\d{4}))(?![\d:])")
_AMPM = {"am": 0, "a.m.": 0, "vorm.": 0, "上午": 0, "午前": 0, "pm": 12, "p.m.": 12, "nachm.": 12, "下午": 12, "午後": 12}


@dataclass(frozen=True)
class WallClock:
    """A wall-clock time read from text: naive local time, the UTC offset it states (minutes) or
    None, and the zone token as written ("" when none)."""

    naive: pd.Timestamp
    offset_min: int | None
    zone: str

    def utc(self) -> pd.Timestamp | None:
        """The UTC instant when the text stated its offset; None when the zone is unknown."""
        if self.offset_min is None:
            return None
        return (self.naive - pd.Timedelta(minutes=self.offset_min)).tz_localize("UTC")


def _make(year: int, month: int, day: int, h: int, mi: int, s: int, frac: str | None) -> pd.Timestamp | None:
    if not 1970 <= year <= 2200:
        return None  # not a clock any tool of ours printed (and out of the frames' range)
    try:
        t = pd.Timestamp(year=year, month=month, day=day, hour=h, minute=mi, second=s)
    except (ValueError, OverflowError):
        return None
    if frac:
        t += pd.Timedelta(microseconds=int(frac[:6].ljust(6, "0")))
    return t


def _numeric_date(m: re.Match) -> tuple[int, int, int] | None:
    if m["y1"]:
        return int(m["y1"]), int(m["a1"]), int(m["b1"])
    a, b = int(m["a2"]), int(m["b2"])
    if a > 12 >= b:
        return int(m["y2"]), b, a
    if b > 12 >= a:
        return int(m["y2"]), a, b
    return None


def parse_wall_clock(text: str) -> WallClock | None:
    """The date and time in one line of text (see the module docstring for the forms), or None
    when the line holds no full date with a time of day."""
    if not text or len(text) > 300:
        return None
    m = _ISO.search(text)
    if m:
        y, mo, d = (int(x) for x in m["date"].split("-"))
        h, mi, s = (int(x) for x in m["time"].split(":"))
        t = _make(y, mo, d, h, mi, s, m["frac"])
        if t is None:
            return None
        off = m["off"] or ""
        rest = text[m.end():].split()
        if not off and rest and align.zone_offset(rest[0]) is not None:
            off = rest[0]
        return WallClock(t, align.zone_offset(off) if off else None, off)
    tm = _TIME.search(text)
    if not tm:
        return None
    h, mi, s = int(tm["h"]), int(tm["m"]), int(tm["s"])
    cjk = _CJK.search(text)
    num = _NUMERIC_DATE.search(text)
    zone = ""
    if cjk:
        y, mo, d = int(cjk["y"]), int(cjk["mo"]), int(cjk["d"])
    elif num and (ymd := _numeric_date(num)) is not None:
        y, mo, d = ymd
    else:
        before, after = text[:tm.start()], text[tm.end():]
        words = re.findall(r"[^\W\d_]+\.?|\d+\.?|(?<!\S)[+-]\d{4}", before + " " + after)
        years = [w for w in words if re.fullmatch(r"\d{4}", w)]
        if not years:
            return None
        y = int(years[-1])
        months = [(i, MONTHS[w.rstrip(".").lower()]) for i, w in enumerate(words) if w.rstrip(".").lower() in MONTHS]
        if not months:
            return None
        # A weekday abbreviation can spell a month (fr `mar.` mardi, es `mar` martes): it comes
        # first, so with two candidates the later one is the month.
        mi_, mo = months[-1] if len(months) > 1 else months[0]
        days = [w for i, w in enumerate(words) if re.fullmatch(r"\d{1,2}\.?", w) and int(w.rstrip(".")) <= 31]
        if not days:
            return None
        d = int(days[0].rstrip("."))
    after_words = text[tm.end():].split()
    for k, w in enumerate(after_words):
        lw = w.lower()
        if lw in _AMPM:
            if h == 12:
                h = 0
            h += _AMPM[lw]
            continue
        if re.fullmatch(r"[A-Z]{1,5}|[+-]\d{2}:?\d{2}|(?:UTC|GMT)[+-]\d{1,2}(?::?\d{2})?", w) and not zone:
            zone = w
        if k >= 2:
            break
    if not zone:
        before_words = text[:tm.start()].split()
        for w in before_words[-1:]:
            if w.lower() in _AMPM and h < 12:
                h += _AMPM[w.lower()]
    t = _make(y, mo, d, h, mi, s, tm["frac"])
    if t is None:
        return None
    return WallClock(t, align.zone_offset(zone) if zone else None, zone)


_DATE_WORD = re.compile(
    r"^(?:[^\W\d_]{1,4}\.?,?|\d{1,2}\.?,?|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}|\d{4}(?:年)?|\d{1,2}[月日]|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?|[AaPp]\.?[Mm]\.?"
    r"|[A-Z]{1,5}|[+-]\d{2}:?\d{2}|(?:UTC|GMT)[+-]\d{1,2}(?::?\d{2})?|星期.|.曜日|上午|下午|午前|午後)$")


def parse_date_line(text: str) -> WallClock | None:
    """A line that is only a date, as `date` prints it in any locale (no other words): the
    separator between snapshots of a listing. A listing row that happens to hold a time and a
    four-digit number is not one."""
    words = text.split()
    if not 2 <= len(words) <= 8:
        return None
    if not all(_DATE_WORD.match(w) or w.rstrip(".,").lower() in MONTHS for w in words):
        return None
    return parse_wall_clock(text)


# -- relative ages ------------------------------------------------------------------------------
# How long ago something happened, as tools print it relative to the moment they ran:
#   kubectl   2m3s  5m  19h  2d3h  44s  3m (x4 over 10m)  <invalid>  <unknown>
#   docker    5 minutes ago  About an hour ago  Less than a second ago  Up 2 hours  3 weeks ago
#   systemd   5min ago  1h 2min ago  2 days ago  1 weeks 2 days ago  1min 3s ago  2 months 3 days ago
_AGE_UNITS = {
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60, "minute": 60,
    "minutes": 60, "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400,
    "days": 86400, "w": 604800, "week": 604800, "weeks": 604800, "month": 2629800, "months": 2629800,
    "y": 31557600, "year": 31557600, "years": 31557600, "ms": 0.001, "us": 1e-6, "µs": 1e-6,
}
# docker's words for an amount (go-units HumanDuration): `About an hour`, `Less than a second`.
_AGE_WORDS = {"less than a second": 0.5, "about a minute": 60, "about an hour": 3600, "a minute": 60, "an hour": 3600}
_AGE_PART = re.compile(r"(?P<n>\d+(?:\.\d+)?)\s?(?P<unit>[a-zµ]+)")
_AGE_WHOLE = re.compile(r"^(?:\d+(?:\.\d+)?\s?[a-zµ]+\s?)+$")


def parse_age(text: str) -> float | None:
    """Seconds in a relative age (see the forms above; a leading `Up ` and a trailing ` ago` are
    read too); None for `<invalid>`, `<unknown>` and anything else."""
    s = " ".join(text.strip().lower().split())
    s = s.removeprefix("up ").removesuffix(" ago").strip()
    if s in _AGE_WORDS:
        return float(_AGE_WORDS[s])
    if not s or not _AGE_WHOLE.match(s):
        return None
    total = 0.0
    for m in _AGE_PART.finditer(s):
        unit = _AGE_UNITS.get(m["unit"])
        if unit is None:
            return None
        total += float(m["n"]) * unit
    return total
