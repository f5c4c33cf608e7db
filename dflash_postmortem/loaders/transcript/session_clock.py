"""When each command of a session ran. A prompt has no time: a command is dated by the nearest
clock before it (`date` output in any locale, `script`'s header, an nvidia-smi table's date line,
the kit's own stamps), marked `time_approx` where that clock came before it, and the load report
says so."""

from __future__ import annotations

import re

import pandas as pd

from ...clock import align
from ...shell_words import (
    command_name,
)
from ..clock_text import WallClock, parse_wall_clock
from ..registry import LoadContext
from ..training_log.times import find_stamp
from .session import Command, Session

_EPOCH = re.compile(r"^\d{9,10}(?:\.\d+)?$")


# -- the session's clock ----------------------------------------------------------------------
class Clock:
    """The latest time the session stated (UTC) and the zone it was stated in, for reading a
    prompt's time of day."""

    def __init__(self, ctx: LoadContext, rep):
        self.ctx, self.rep = ctx, rep
        self.now = pd.NaT
        self.offset_min: int | None = None
        self.source: str | None = None

    def utc(self, wall: WallClock) -> pd.Timestamp:
        if wall.offset_min is not None:
            return wall.utc()
        self.rep.assume(align.zone_assumption(self.ctx.timezone))
        t = align.localize(pd.Series([wall.naive]), self.ctx.timezone).iloc[0]
        return t

    def set(self, t, offset_min: int | None, source: str) -> None:
        if not pd.isna(t):
            self.now, self.offset_min, self.source = t, offset_min, source

    def at_time_of_day(self, tod: str) -> pd.Timestamp:
        """A prompt's `HH:MM:SS` on the date of the latest clock (the next day when it is earlier)."""
        if pd.isna(self.now):
            return pd.NaT
        if self.offset_min is not None:
            local = self.now.tz_localize(None) + pd.Timedelta(minutes=self.offset_min)
        else:
            local = self.now.tz_convert(self.ctx.timezone).tz_localize(None)
        h, m, s = (int(x) for x in tod.split(":"))
        if h > 23 or m > 59 or s > 59:
            return pd.NaT
        # On the clock's date, or the next day when more than an hour earlier than the clock.
        seconds = h * 3600 + m * 60 + s
        since = (local - local.normalize()).total_seconds()
        day = align.date_times_of_day([since, seconds], [local.date(), None], slack_s=3600)[1]
        cand = pd.Timestamp(day) + pd.Timedelta(seconds=seconds)
        if self.offset_min is not None:
            return (cand - pd.Timedelta(minutes=self.offset_min)).tz_localize("UTC")
        return align.localize(pd.Series([cand]), self.ctx.timezone).iloc[0]


def _stamp_time(stamp: str, clock: Clock) -> pd.Timestamp:
    wall = parse_wall_clock(stamp)
    return clock.utc(wall) if wall is not None else pd.NaT


def _stated_time(c: Command, clock: Clock) -> tuple[pd.Timestamp, int | None] | None:
    """The time a command's own output states: `date` (any locale, `+%s`), or the date line an
    nvidia-smi table starts with. None when it states none."""
    first = next((s.strip() for _, s in c.output if s.strip()), "")
    if not first:
        return None
    name = command_name(c.words) if c.words else ""
    if name == "date":
        if _EPOCH.match(first):
            return pd.Timestamp(float(first), unit="s", tz="UTC"), 0
    elif name not in ("nvidia-smi", "watch"):
        return None
    wall = parse_wall_clock(first)
    if wall is None and name == "date":
        # `date '+DATE: %d-%m-%Y%nTIME: %H:%M:%S%nZONE: %z'`: a custom format over several lines
        wall = parse_wall_clock(" ".join(s.strip() for _, s in c.output[:4]))
    if wall is None:
        return None
    return clock.utc(wall), wall.offset_min


# Commands that print what a file holds when they run and return: their newest line was written
# before they were typed. (A program in the foreground, `tail -f`, `watch`, prints lines as they
# are written, after it was typed: its stamps say nothing of when.)
_SNAPSHOT_READERS = {"tail", "head", "cat", "grep", "egrep", "fgrep", "zgrep", "rg", "awk", "sed", "less", "more"}


def _printed(c: Command, clock: Clock) -> pd.Timestamp:
    """The latest full date and time the output of a command that reads files starts a line with
    (the lines of a log it printed: `tail -n 2 train.log`), else NaT."""
    out = pd.NaT
    if not c.words or command_name(c.words) not in _SNAPSHOT_READERS or \
            any(w in ("-f", "-F", "--follow") or w.startswith("--follow=") for w in c.words):
        return out
    for _, text in c.output:
        stamp, _ = find_stamp(text.strip())
        if stamp is None or stamp.form != "iso":
            continue
        t = pd.Timestamp(stamp.text)
        t = t.tz_convert("UTC") if stamp.aware else align.localize(pd.Series([t]), clock.ctx.timezone).iloc[0]
        if not pd.isna(t) and (pd.isna(out) or t > out):
            out = t
    return out


def _by_printed_times(ses: Session, clock: Clock) -> None:
    """A command dated by the clock before it that prints lines stamped later (a `tail` of the
    log a run is writing) ran no earlier than the latest of them: it, and the commands after it
    up to the next clock, are dated by that. Only a stamp inside the gap to the next clock
    counts: a log written in another zone, or one the command did not just read, says nothing
    of when the command ran."""
    moved = pd.NaT
    for c in ses.commands:
        if not c.approx or pd.isna(c.time) or c.within_s is None:
            moved = pd.NaT  # a clock of its own starts a new gap
            continue
        gap_end = c.time + pd.Timedelta(seconds=c.within_s)
        printed = _printed(c, clock)
        later = max((t for t in (moved, printed) if not pd.isna(t) and c.time < t <= gap_end), default=None)
        if later is not None:
            c.within_s = (gap_end - later).total_seconds()
            c.time = moved = later


def date_commands(ses: Session, ctx: LoadContext, rep) -> None:
    """Give each command its time: its stamp, the time of day in its prompt, the time its own
    output states (`date`), else the latest clock before it (approximate)."""
    clock = Clock(ctx, rep)
    marks = iter(sorted(ses.marks, key=lambda m: m[0]))
    nxt = next(marks, None)
    approx = 0
    for c in ses.commands:
        while nxt is not None and nxt[0] <= c.line:
            wall = parse_wall_clock(nxt[1].when)
            if wall is not None and nxt[1].started:
                clock.set(clock.utc(wall), wall.offset_min, f"script header (line {nxt[0]})")
            nxt = next(marks, None)
        p = c.prompt
        if p is not None and p.stamp:
            c.time = _stamp_time(p.stamp, clock)
            clock.set(c.time, 0, "stamp")
        elif p is not None and p.time_of_day and not pd.isna(t := clock.at_time_of_day(p.time_of_day)):
            c.time = t
            clock.set(t, clock.offset_min, "prompt")
        elif not pd.isna(clock.now):
            c.time, c.approx = clock.now, True
            approx += 1
        stated = _stated_time(c, clock)
        if stated is not None and not pd.isna(stated[0]):
            c.time, c.approx = stated[0], False
            clock.set(stated[0], stated[1], f"line {c.line}")
    # A command dated by the latest clock before it ran between that clock and the next one
    # the session gives: how much later it may be is the gap to that next clock.
    following = pd.NaT
    for c in reversed(ses.commands):
        if c.approx and not pd.isna(c.time):
            c.within_s = (following - c.time).total_seconds() if not pd.isna(following) else None
        elif not pd.isna(c.time):
            following = c.time
    _by_printed_times(ses, clock)
    if approx:
        rep.assume(f"{approx} command(s) carry no time of their own: each is dated by the latest clock "
                   "before it (`date` output, script header, nvidia-smi date line), and may be as late as "
                   "the next clock; time_approx is True, time_within_s the gap to that next clock")
    if ses.commands and all(pd.isna(c.time) for c in ses.commands):
        rep.assume("no clock in the session (no stamp, date output or script header): commands have no time")
