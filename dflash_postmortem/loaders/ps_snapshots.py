"""`ps` and `top` listings -> the `processes` frame: who ran, from when to when.

Reads `ps aux`, `ps -ef`, `ps -eLf`, `ps -eo <any columns>` (LSTART's five words, ETIME/ETIMES),
`ps --forest` (tree glyphs give the parent), BusyBox and macOS `ps`, `top -b` (one or several
iterations; wide, with columns after COMMAND), `fuser -v` (the processes that hold a file such as
`/dev/nvidia0`: a `files` column), `lsof /dev/nvidia*` (the same, read off its NAME column: one row
per PID whatever the number of descriptors), header-less `ps aux | grep` / `ps -ef | grep`
pastes, and files of repeated snapshots separated by anything: a time (`# 2026-11-30T05:20:20Z`,
`date` output in any locale, `top - 05:20:20 up ...`, `--- 05:20:20 ---`, an epoch), a rule
(`=====`), a repeated header. One row per process (pid + command): first and last snapshot that
show it, the start time from ELAPSED/ETIME/ETIMES, LSTART or START (+ the snapshot's date), and
the last state in an extra `state` column (`Z` for zombies and `<defunct>`).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..clock import align
from ..errors import SourceFormatError
from ..incident import from_frames
from ..shell_words import is_prompt, match_prompt
from . import registry
from .clock_text import parse_date_line, parse_wall_clock
from .registry import LoadContext
from .terminal import screen_text

# ps/top header names -> our column. Only the command column and LSTART may contain spaces.
COLUMNS = {
    "PID": "pid", "PPID": "ppid", "PGID": "pgid", "PGRP": "pgid", "SID": "sid", "SESS": "sid",
    "USER": "user", "UID": "user", "RUSER": "user", "EUSER": "user", "UNAME": "user",
    "COMMAND": "command", "CMD": "command", "ARGS": "command", "COMM": "command",
    "ELAPSED": "etime", "ETIME": "etime", "ETIMES": "etimes", "STAT": "state", "S": "state",
    "STATE": "state", "START": "start", "STIME": "start", "LSTART": "lstart", "STARTED": "start",
    "%CPU": "cpu_pct", "%MEM": "mem_pct", "RSS": "rss_kib", "RES": "rss_kib", "VSZ": "vsz_kib",
    "VIRT": "vsz_kib", "TTY": "tty", "TT": "tty", "TIME": "cpu_time", "TIME+": "cpu_time",
    "PR": "priority", "NI": "nice", "SHR": "shr_kib", "NLWP": "threads", "C": "cpu_util",
    "PSR": "psr", "F": "flags", "SZ": "size", "WCHAN": "wchan", "ADDR": "addr", "LWP": "lwp",
    "PRI": "priority", "TID": "lwp", "SPID": "lwp", "THCNT": "threads", "NTH": "threads", "GID": "gid",
    "GROUP": "group", "RGID": "gid", "TPGID": "tpgid", "CLS": "sched", "RTPRIO": "rtprio",
    "%C": "cpu_pct", "CP": "cpu_util", "MAJFL": "majflt", "MINFL": "minflt", "CPUID": "psr",
    "ACCESS": "access", "%VSZ": "vsz_pct", "CPU": "psr",  # BusyBox top: VSZ share, the core it ran on
}
# top's wide view: more names, each one word, none of them a command.
_TOP_EXTRA = {"RUID", "SUID", "SUSER", "P", "SWAP", "CODE", "DATA", "nMaj", "nMin", "nDRT", "Flags",
              "CGROUPS", "SUPGIDS", "SUPGRPS", "TGID", "ENVIRON", "vMj", "vMn", "USED", "nsIPC", "nsMNT",
              "nsNET", "nsPID", "nsUSER", "nsUTS", "LXC", "RSan", "RSfd", "RSlk", "RSsh", "CGNAME", "NU",
              "OOMa", "OOMs", "nTH", "AGID", "AGNI", "STARTED", "ELAPSED", "%CUU", "%CUC", "nsCGROUP", "nsTIME"}
_COMMANDS = {"COMMAND", "CMD", "ARGS", "COMM"}
# `ps aux` / `ps -ef` without their header (ps aux | grep python): these columns, if the row fits.
AUX = ["USER", "PID", "%CPU", "%MEM", "VSZ", "RSS", "TTY", "STAT", "START", "TIME", "COMMAND"]
EF = ["UID", "PID", "PPID", "C", "STIME", "TTY", "TIME", "CMD"]
_AUX_ROW = re.compile(r"^\S+\s+\d+\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+[\d:.]+\s+\S")
_EF_ROW = re.compile(r"^\S+\s+\d+\s+\d+\s+\d+\s+\S+\s+\S+\s+(?:\d+-)?\d+:\d{2}(?::\d{2})?(?:\.\d+)?\s+\S")
# `ps -o stat,pid,comm` / `ps -eo pid=,etime=,args=` / `ps axo pid,pcpu,comm` name their columns on
# the command line: rows printed without a header (`=`, or the header cut by `| grep`) are read with
# them. Format names that are not their header's name:
_FORMAT_OPTION = re.compile(r"(?:^|\s)(?:-[a-zA-Z]*o\s*|--format[= ]|[aAxeuwfjlTr]+o\s+)(?P<spec>[\w%,=+:-]+)")
_FORMAT_HEADERS = {
    "pcpu": "%CPU", "pmem": "%MEM", "cputime": "TIME", "rsz": "RSS", "vsize": "VSZ", "start_time": "START",
    "bsdstart": "START", "thcount": "NLWP", "ucmd": "COMM", "ucomm": "COMM", "fname": "COMM", "tname": "TTY",
    "session": "SID", "pgrp": "PGID", "spid": "LWP", "etimes": "ETIMES", "s": "S",
}
_SNAP_ISO = re.compile(r"^[#=*\s-]*(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\s?(?:Z|[+-]\d{2}:?\d{2})?)[\s#=*-]*$")
_SNAP_EPOCH = re.compile(r"^[#=*\s-]*(?P<s>1\d{9})(?:\.\d+)?[\s#=*-]*$")
_SNAP_TOD = re.compile(r"^[#=*\s-]*(?P<time>\d{2}:\d{2}:\d{2})[\s#=*-]*$")
_FENCE = re.compile(r"^(?:```|~~~)")
# fuser -v names the file once, left of its first process (`/dev/nvidia0:   bob  869108 F...m python`);
# the kernel's own use of it has no PID (`root  kernel mount /mnt`); a process it could not read
# is a warning on stderr.
_FUSER_FILE = re.compile(r"^(?P<file>\S+):(?=\s)")
_FUSER_KERNEL = re.compile(r"^\S+\s+kernel\s+(?:mount|swap|root|exe|mmap)\b")
_FUSER_WARNING = re.compile(r"^(?:Cannot stat file|Cannot open /proc|Specified filename .* does not exist)")
_ECHOED = re.compile(r"^(?:sudo\s+)?(?:ps|top|htop|pgrep|busybox\s+ps|lsof)(?:\s+[-\w,=+%:/.^()\\|\"'* ]*)?$")
# lsof: `COMMAND PID USER FD TYPE DEVICE SIZE/OFF NODE NAME`; a `mem` row has no SIZE/OFF. A
# process is listed once per descriptor (and per mapping): the rows of one PID are one process.
_LSOF_HEADER = re.compile(r"^\s*COMMAND\s+PID\s+USER\s+FD\s+TYPE\s+DEVICE\s+(?:SIZE/OFF|SIZE|OFFSET)\s+NODE\s+NAME\s*$")
_LSOF_ROW = re.compile(
    r"^(?P<command>\S+)\s+(?P<pid>\d+)\s+(?P<user>\S+)\s+(?P<fd>\S+)\s+(?P<type>\S+)\s+(?P<device>\S+)\s+"
    r"(?:(?P<size>\S+)\s+)?(?P<node>\d+)\s+(?P<name>\S.*)$")
_LSOF_WARNING = re.compile(r"^(?:lsof: WARNING: |Output information may be incomplete\.)")
_RULE = re.compile(r"^\s*(?:[=*#~_-]\s?){3,}\s*$")
_TOP = re.compile(r"^top - (?P<time>\d{2}:\d{2}:\d{2}) ")
_TOP_SUMMARY = re.compile(r"^(?:(?:Tasks|Threads|%?Cpu|MiB|KiB|GiB|TiB|Mem|Swap|Load|Processes|PhysMem|VM|Networks|Disks|SharedLibs|MemRegions)\b|CPU:)")
_ETIME = re.compile(r"^(?:(?:(?P<d>\d+)-)?(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)$")
_SIZE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>[kmgtpe]?)$", re.I)
MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}


def _header(line: str) -> list[str] | None:
    cells = line.split()
    if "PID" not in cells or len(cells) < 2:
        return None
    known = sum(1 for c in cells if c in COLUMNS or c in _TOP_EXTRA)
    return cells if known >= max(2, len(cells) - 1) else None


def format_columns(command: str) -> list[str] | None:
    """The header names of the columns a `ps -o ...` command line asks for (several -o add up);
    None when it names none, or one we would not know under a header either."""
    specs = [m["spec"] for m in _FORMAT_OPTION.finditer(command)]
    names = [
        _FORMAT_HEADERS.get(name.lower(), name.upper())
        for spec in specs for name in (re.split(r"[=:]", f, maxsplit=1)[0] for f in spec.split(",")) if name
    ]
    if "PID" not in names or not all(n in COLUMNS or n in _TOP_EXTRA for n in names):
        return None
    return names


class Listing:
    """The rows under one header: the header's column names and where each starts on the line
    (a command column that is not last is cut where the next column begins), and the current
    `--forest` branch (the depth of the `\\_` glyph gives the parent)."""

    def __init__(self, header: list[str] | None = None, line: str = ""):
        self.header = header
        self.guessed = False  # columns assumed (ps aux / ps -ef), not read from a header
        self.named = False  # columns the ps command names (-o), not read from a header
        self.tree: list[tuple[int, int]] = []
        self.starts: list[int] = []
        self.fuser = bool(header) and "ACCESS" in header
        self.lsof = False  # lsof: rows read by _LSOF_ROW, the file in NAME
        self.file: str | None = None  # fuser -v: the file the rows below hold
        self.held: dict[int, dict] = {}  # fuser -v: pid -> its row (one row, all its files)
        # every column a word but the last, the command (`ps aux`, `ps -eo pid,etimes,args`)
        self.one_word_cells = bool(header) and header[-1] in _COMMANDS and not set(header[:-1]) & _WIDE
        if header and line:
            pos = 0
            for name in header:
                at = line.index(name, pos)
                self.starts.append(at)
                pos = at + len(name)

    def cells(self, line: str) -> list[str] | None:
        """Cells of a row: one word per column, LSTART's five words, and the command: the rest of
        the line when it is the last column, else up to where the next column's header begins
        (`ps -o etime,pid,comm,args`, top's wide view). None when the row is too short."""
        header = self.header or []
        if self.one_word_cells:
            # the usual header (`ps aux`, `ps -eo pid,ppid,etimes,args`): a word a column and
            # the rest of the line the command, as split() cuts it (the rows of a long capture)
            cells = line.split(None, len(header) - 1)
            if len(cells) == len(header):
                cells[-1] = cells[-1].strip()
                return cells
        words = [(m.start(), m.end()) for m in re.finditer(r"\S+", line)]
        cells: list[str] = []
        i = 0
        after_command = False
        for k, name in enumerate(header):
            if i >= len(words):
                if not after_command:
                    return None
                cells.append("")  # a field missing after the command: the row still counts
                continue
            if name in _COMMANDS and k == len(header) - 1:
                cells.append(line[words[i][0]:].strip())
                return cells
            if name in _COMMANDS and len(self.starts) == len(header):
                # a right-aligned value of the next column may begin left of its header: only
                # words that end before the next header begins belong to the command
                j = i + 1
                while j < len(words) and words[j][1] <= self.starts[k + 1]:
                    j += 1
                cells.append(line[words[i][0]:words[j - 1][1]])
                i = j
                after_command = True
                continue
            n = 5 if name in ("LSTART", "STARTED") and _lstart_at([line[a:b] for a, b in words], i) else 1
            if i + n > len(words):
                return None if not after_command else [*cells, *[""] * (len(header) - len(cells))]
            cells.append(" ".join(line[a:b] for a, b in words[i:i + n]))
            i += n
        return cells


# Columns whose cell may be more than one word: the command, and LSTART's date
_WIDE = set(_COMMANDS) | {"LSTART", "STARTED"}


def _lstart_at(words: list[str], i: int) -> bool:
    """LSTART's five words (`Tue Dec  1 03:04:05 2026`) start at word i: procps heads it STARTED."""
    w = words[i:i + 5]
    return len(w) == 5 and w[0].isalpha() and bool(re.fullmatch(r"\d{1,2}:\d{2}:\d{2}", w[3])) and bool(re.fullmatch(r"\d{4}", w[4]))


def parse_etime(text: str) -> float | None:
    m = _ETIME.match(text.strip())
    if not m:
        return None
    g = {k: int(v) if v else 0 for k, v in m.groupdict().items()}
    return ((g["d"] * 24 + g["h"]) * 60 + g["m"]) * 60 + g["s"]


def parse_start(text: str, snap: pd.Timestamp | None, tz: str) -> tuple[pd.Timestamp | None, str | None]:
    """ps START: `05:20` / `10:11AM` (today), `Sep03` / `7月24` / `8Dec20` (a day), `2024` (a year only).

    Returns (UTC time or None, a report note when the form is not understood or too coarse).
    """
    text = text.strip()
    local = snap.tz_convert(tz) if snap is not None else None
    m = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s?([AaPp][Mm])?", text)
    if m:
        if local is None:
            return None, "START is a time of day and the snapshot has no date"
        hour = int(m[1])
        if m[4]:
            hour = hour % 12 + (12 if m[4].lower() == "pm" else 0)
        if hour > 23 or int(m[2]) > 59 or int(m[3] or 0) > 59:
            return None, f"START form {text!r} not understood: started left empty"
        t = local.replace(hour=hour, minute=int(m[2]), second=int(m[3] or 0), microsecond=0)
        if t > local:
            t -= pd.Timedelta(days=1)
        return t.tz_convert("UTC"), None
    m = re.fullmatch(r"([A-Z][a-z]{2})\s?(\d{1,2})", text) or re.fullmatch(r"(\d{1,2})月(\d{1,2})日?", text)
    year = None
    if not m:
        m = re.fullmatch(r"(\d{1,2})([A-Z][a-z]{2})(\d{2})", text)  # macOS: 8Dec20
        if m:
            m, year = re.fullmatch(r"(\d{1,2})([A-Z][a-z]{2})", text[:-2]), 2000 + int(text[-2:])
            m = (None, m[2], m[1]) if m else None
    if m:
        month = MONTHS.get(m[1]) if not m[1].isdigit() else int(m[1])
        if month is None or not 1 <= month <= 12 or not 1 <= int(m[2]) <= 31:
            return None, f"START form {text!r} not understood: started left empty"
        if local is None and year is None:
            return None, f"START {text!r} has no year and the snapshot has no date"
        try:
            if local is None:
                t = align.localize(pd.Series([pd.Timestamp(year=year, month=month, day=int(m[2]))]), tz).iloc[0]
                return t, "START gives only a day for processes older than a day: started is that day's midnight"
            t = local.replace(month=month, day=int(m[2]), hour=0, minute=0, second=0, microsecond=0)
            if year is not None:
                t = t.replace(year=year)
            elif t > local:
                t = t.replace(year=t.year - 1)
        except ValueError:
            return None, f"START form {text!r} not understood: started left empty"
        return t.tz_convert("UTC"), "START gives only a day for processes older than a day: started is that day's midnight"
    if re.fullmatch(r"\d{4}", text):
        return None, "START gives only a year: started left empty"
    return None, f"START form {text!r} not understood: started left empty"


@functools.lru_cache(maxsize=4096)  # a process is listed with the same LSTART in every snapshot
def parse_lstart(text: str, tz: str) -> pd.Timestamp | None:
    """LSTART (`Tue Dec  1 03:04:05 2026`, in the host's locale): local time, read in `tz`."""
    wall = parse_wall_clock(text)
    if wall is None:
        return None
    if wall.offset_min is not None:
        return wall.utc()
    t = align.localize(pd.Series([wall.naive]), tz).iloc[0]
    return None if pd.isna(t) else t


def _kib(v) -> float:
    """A size in KiB: `6684`, or top's scaled `6.5m` / `1.2g` (MiB, GiB...)."""
    m = _SIZE.match(str(v or "").strip())
    if not m:
        return float("nan")
    return float(m["n"]) * 1024 ** "kmgtpe".index(m["unit"].lower()) if m["unit"] else float(m["n"])


def listing_row(listing: Listing, line: str, snap, ctx: LoadContext, rep) -> dict | str:
    """One row of a listing -> the process it shows, or (a string) what was expected instead."""
    use = listing.header
    if use is None:
        return "a ps/top row under a header line"
    cells = listing.cells(line)
    if cells is None and listing.named:
        return f"{len(use)} columns ({' '.join(use)}, as the ps command names them)"
    if cells is None:
        # A row cut short (a paste that stops, a listing killed mid-write): kept with the fields
        # it has when they reach its PID.
        words = line.split()
        if "PID" not in use or use.index("PID") >= len(words) or not words[use.index("PID")].isdigit():
            return f"{len(use)} columns ({' '.join(use)})"
        cells = words[: len(use)] + [""] * (len(use) - len(words))
        rep.assume("a row cut short is kept with the fields it has (the others are empty)")
    row: dict = {}
    for name, v in zip(use, cells, strict=False):
        key = "lstart" if name == "STARTED" and len(v.split()) == 5 else COLUMNS.get(name, name.lower())
        if key not in row or key == "command" and name in ("ARGS", "COMMAND", "CMD"):
            row[key] = v
    pid = _int(row.get("pid"))
    if pid is None:
        return "a numeric PID"
    cmd = row.get("command", "")
    # --forest: the column of the `\_` glyph is the depth; the parent is the nearest row above
    # with a smaller depth. A root has no glyph (depth 0).
    glyph = line.find("\\_ ")
    depth = glyph if glyph >= 0 else 0
    if glyph >= 0 and "command" in row:
        cmd = line[glyph + 3:].strip() if use[-1] in _COMMANDS else cmd.split("\\_ ", 1)[-1].strip()
    ppid = _int(row.get("ppid"))
    if "ppid" not in row:
        while listing.tree and listing.tree[-1][0] >= depth:
            listing.tree.pop()
        ppid = listing.tree[-1][1] if listing.tree and depth else None
        listing.tree.append((depth, pid))
    defunct = "<defunct>" in cmd
    cmd = cmd.replace("<defunct>", "").strip()
    state = row.get("state") or None
    if defunct and not (state or "").startswith("Z"):
        state = "Z" + (state or "")[1:] if state else "Z"
    started, note, within = None, None, None
    etime = parse_etime(row["etime"]) if row.get("etime") else None
    if row.get("etimes") and row["etimes"].isdigit() and snap is not None:
        started, within = snap - pd.Timedelta(seconds=int(row["etimes"])), 1.0
    elif etime is not None and snap is not None:
        started, within = snap - pd.Timedelta(seconds=etime), 1.0
    elif row.get("lstart"):
        started = parse_lstart(row["lstart"], ctx.timezone)
        note = None if started is not None else f"LSTART {row['lstart']!r} not understood"
        within = 1.0
    elif row.get("start"):
        started, note = parse_start(row["start"], snap, ctx.timezone)
        # `05:20` is to the minute; a day (`Sep03`) to the day
        within = 60.0 if ":" in row["start"] else 86400.0
    within = within if started is not None else None
    if note:
        rep.assume(note)
    return dict(
        pid=pid, ppid=ppid, pgid=_int(row.get("pgid")), sid=_int(row.get("sid")),
        user=row.get("user"), command=cmd, snap=snap, started=started, started_within_s=within, state=state,
        cpu_pct=_float(row.get("cpu_pct")), rss_kib=_kib(row.get("rss_kib")), threads=_int(row.get("threads")),
    )


def _snapshot_mark(s: str) -> tuple[str, object] | None:
    """What makes `s` a line between snapshots: ("wall", WallClock) for an ISO stamp or a `date`
    line, ("epoch", seconds), ("clock", "HH:MM:SS") for top's header or a bare time of day;
    None for any other line."""
    m = _SNAP_ISO.match(s)
    if m:
        wall = parse_wall_clock(m["ts"])
        return None if wall is None else ("wall", wall)
    m = _SNAP_EPOCH.match(s)
    if m:
        return "epoch", int(m["s"])
    m = _TOP.match(s) or _SNAP_TOD.match(s)
    if m:
        return "clock", m["time"]
    if len(s) < 80:
        wall = parse_date_line(s.lstrip("#=*- ").rstrip("#=*- "))
        if wall is not None:
            return "wall", wall
    return None


def _snapshot_time(s: str, snap, ctx: LoadContext, rep) -> tuple[bool, object]:
    """(is this line a snapshot marker, the snapshot's time: UTC, or None when unknown)."""
    mark = _snapshot_mark(s)
    if mark is None:
        return False, snap
    kind, value = mark
    if kind == "epoch":
        return True, pd.Timestamp(value, unit="s", tz="UTC")
    if kind == "wall":
        if value.offset_min is not None:
            return True, value.utc()
        rep.assume(align.zone_assumption(ctx.timezone))
        return True, _local(value.naive, ctx.timezone)
    if snap is not None:
        date, source = snap.tz_convert(ctx.timezone).date(), "an earlier snapshot"
    else:
        date, source = _day_of(value, ctx)
    if date is None:
        rep.assume("snapshot gives only a time of day and no date is known: snapshot has no time")
        return True, None
    rep.assume(f"snapshot gives only time of day: date {date} taken from {source}")
    t = _local(pd.Timestamp(f"{date} {value}"), ctx.timezone)
    if snap is not None and t is not None and t < snap - pd.Timedelta(hours=1):
        t += pd.Timedelta(days=1)  # past midnight since the snapshot the date came from
    return True, t


def _day_of(time_of_day: str, ctx: LoadContext) -> tuple[dt.date | None, str]:
    """The date of a listing's first time of day (top's header): the incident's date where
    incident.toml gives it; else, when other sources are loaded (phase 1), the day of their span
    on which that time falls within it (their first day if on none); else the date given."""
    if ctx.config is not None and ctx.config.date is not None:
        return ctx.config.date, "the incident's date (incident.toml)"
    first, last = ctx.known.span() if ctx.known is not None else (None, None)
    if first is None:
        return ctx.date, "the incident's date"
    lo, hi = first.tz_convert(ctx.timezone), last.tz_convert(ctx.timezone)
    day = lo.date()
    while day <= hi.date() and (day - lo.date()).days < 31:
        t = _local(pd.Timestamp(f"{day} {time_of_day}"), ctx.timezone)
        if t is not None and first - pd.Timedelta(hours=1) <= t <= last + pd.Timedelta(hours=1):
            return day, f"the other sources' times ({first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC)"
        day += dt.timedelta(days=1)
    return lo.date(), f"the other sources' first day (their times, {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC, " \
                      "do not include this time of day)"


def _local(naive: pd.Timestamp, tz: str):
    t = align.localize(pd.Series([naive]), tz).iloc[0]
    return None if pd.isna(t) else t


def read_listing(lines: list[str], first_line: int, snap, ctx: LoadContext, rep, *, counted: bool = True,
                 command: str = "") -> tuple[list[dict], list]:
    """Read ps/top output (one file, or one command's output inside a transcript) into process
    rows. Every line is counted in `rep` (parsed or skipped with its reason) unless `counted` is
    False (a transcript counts its own lines). `command` is the command that printed them, when
    known: its `-o` columns read rows that come without a header. Returns (rows, the time of each
    snapshot marker, None where it gives none)."""
    listing = _listing_of_command(command, rep) or Listing()
    rows: list[dict] = []
    snaps = []

    def skip(i, reason):
        if counted:
            rep.skip(i, reason)

    def bad(i, expected, found):
        if counted:
            rep.bad(i, expected, found)

    for i, raw in enumerate(lines, first_line):
        line = screen_text(raw)
        s = line.strip()
        if not s:
            skip(i, "blank line")
            continue
        is_snap, when = _snapshot_time(s, snap, ctx, rep)
        if is_snap:
            snap = when
            snaps.append(when)
            listing.tree = []
            if counted:
                rep.parsed += 1
            continue
        if _FENCE.match(s):
            skip(i, "markdown fence")
            listing.tree = []
            continue
        if s.startswith("#") and not is_prompt(s):
            skip(i, "comment line")
            continue
        if _RULE.match(s):
            skip(i, "separator line")
            listing.tree = []
            continue
        if _TOP_SUMMARY.match(s):
            skip(i, "top summary line")
            continue
        if _FUSER_WARNING.match(s):
            skip(i, "fuser warning (a process it could not read)")
            continue
        if _LSOF_WARNING.match(s):
            skip(i, "lsof warning (a file system it could not read)")
            continue
        if _LSOF_HEADER.match(line):
            listing = Listing(line.split())
            listing.lsof = True
            skip(i, "header line")
            continue
        h = _header(line)
        if h:
            listing = Listing(h, line)
            skip(i, "header line")
            continue
        prompt = match_prompt(line)
        if prompt is not None:
            listing = _listing_of_command(prompt.command or "", rep) or listing
            skip(i, "shell prompt line")
            continue
        if _ECHOED.match(s):
            listing = _listing_of_command(s, rep) or listing
            skip(i, "command line")  # the command echoed above its answer (a capture without prompts)
            continue
        if listing.header is None or listing.guessed:
            # Without a header, every row must have the shape of the listing it is taken for.
            guess = AUX if _AUX_ROW.match(line) else EF if _EF_ROW.match(line) else None
            if guess is None:
                bad(i, "a ps/top row under a header line", line)
                continue
            if listing.header is not guess:
                rep.assume(f"no header line: `ps {'aux' if guess is AUX else '-ef'}` columns assumed")
                listing = Listing(guess)
                listing.guessed = True
        if listing.fuser:
            line = _fuser_line(listing, line)
            if _FUSER_KERNEL.match(line.strip()):
                skip(i, "fuser: used by the kernel (no process)")
                continue
        if listing.lsof:
            got = _lsof_row(listing, s, snap) or "an lsof row (COMMAND PID USER FD TYPE DEVICE SIZE/OFF NODE NAME)"
        else:
            got = listing_row(listing, line, snap, ctx, rep)
        if isinstance(got, str):
            bad(i, got, line)
            continue
        got["line"] = i
        if counted:
            rep.parsed += 1
        if (listing.fuser or listing.lsof) and _fuser_held(listing, got):
            continue  # one more file of a process already listed
        rows.append(got)
    return rows, snaps


def _ps_columns(command: str) -> list[str] | None:
    """The -o columns of a `ps` command line (not of another program's -o option)."""
    return format_columns(command) if re.match(r"^(?:sudo\s+)?(?:busybox\s+)?ps\b", command.strip()) else None


def _listing_of_command(command: str, rep) -> Listing | None:
    """The listing a command's rows belong to before any header: its `ps -o` columns (None when
    it names none: the listing read so far goes on)."""
    cols = _ps_columns(command)
    if cols is None:
        return None
    rep.assume(f"rows without a header read with the columns the ps command names ({' '.join(cols)})")
    listing = Listing(cols)
    listing.named = True
    return listing


def _fuser_line(listing: Listing, line: str) -> str:
    """A fuser -v row with the file it names blanked out (kept in `listing.file` for the rows
    under it, which leave it empty): the columns stay where the header put them."""
    m = _FUSER_FILE.match(line)
    if m is None or (listing.starts and m.end() > listing.starts[0]):
        return line
    listing.file = m["file"]
    return " " * m.end() + line[m.end():]


def _lsof_row(listing: Listing, s: str, snap) -> dict | None:
    """An lsof row -> its process (the file it names kept in `listing.file`); None when the line
    has not the shape of one."""
    m = _LSOF_ROW.match(s)
    pid = _int(m["pid"]) if m else None
    if pid is None:
        return None
    listing.file = m["name"].strip()
    return dict(pid=pid, ppid=None, pgid=None, sid=None, user=m["user"], command=m["command"], snap=snap,
                started=None, state=None, cpu_pct=float("nan"), rss_kib=float("nan"), threads=None)


def _fuser_held(listing: Listing, row: dict) -> bool:
    """Record the file a fuser -v row holds; True when the PID already has its row in this
    listing (fuser lists a process once per file: /dev/nvidia0, /dev/nvidiactl, /dev/nvidia-uvm)."""
    earlier = listing.held.get(row["pid"])
    if earlier is not None and earlier["command"] == row["command"]:
        if listing.file and listing.file not in earlier["files"]:
            earlier["files"].append(listing.file)
        return True
    row["files"] = [listing.file] if listing.file else []
    listing.held[row["pid"]] = row
    return False


def sniff_ps(path: Path, head: bytes) -> float:
    text = head.decode("utf-8", "replace")
    lines = [screen_text(ln) for ln in text.splitlines()[:300]]
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        return 0.0
    headers = sum(1 for ln in lines if _header(ln) or _LSOF_HEADER.match(ln))
    rows = sum(1 for ln in lines if _AUX_ROW.match(ln) or _EF_ROW.match(ln))
    # A terminal session that runs other commands too (kill, nvidia-smi) is a transcript: it
    # reads the listings inside it as well.
    prompts = [ln for ln in lines if is_prompt(ln)]
    if len(prompts) >= 2 and any(not re.search(r"\b(?:ps|top|pgrep|fuser|lsof)\b", p) for p in prompts):
        return 0.3
    if headers and len(lines) > headers:
        return 0.9
    if rows and rows / len(lines) >= 0.5:
        return 0.8
    fitting = _rows_for_command_columns(lines)
    stamps = sum(1 for ln in lines if _snapshot_mark(ln.strip()) is not None)
    if fitting >= 2 and (fitting + stamps) / len(lines) >= 0.5:
        return 0.8  # `date; ps -o ... | grep` in a loop: rows under the columns the command names
    if rows and rows / len(lines) >= 0.15:
        # a `ps aux | grep` row quoted among a few lines of prose (an issue's "State:"): the
        # row's shape is strict enough to read it, weakly, over plain console text
        return 0.25
    return 0.0


def _rows_for_command_columns(lines: list[str]) -> int:
    """Header-less rows that fit the columns an echoed `ps -o ...` command above them names."""
    cols, n = None, 0
    for ln in lines:
        s = ln.strip()
        prompt = match_prompt(ln)
        command = prompt.command if prompt is not None else s if _ECHOED.match(s) else None
        if command:
            cols = _ps_columns(command)
            continue
        words = s.split()
        if cols and len(words) >= len(cols) and words[cols.index("PID")].isdigit():
            n += 1
    return n


def sniff_top(path: Path, head: bytes) -> float:
    """`top -b` whose snapshots state only a time of day (its header): dated from the other sources,
    so read after them (phase 1). A listing with dated snapshots is read as any other."""
    lines = [screen_text(ln).strip() for ln in head.decode("utf-8", "replace").splitlines()[:300]]
    marks = [m for m in (_snapshot_mark(ln) for ln in lines if ln) if m is not None]
    if not any(_TOP.match(ln) for ln in lines) or any(kind != "clock" for kind, _ in marks):
        return 0.0
    score = sniff_ps(path, head)
    return score + 0.02 if score >= 0.8 else 0.0


@registry.format(
    "ps-snapshots", sniff=sniff_ps,
    doc="ps aux / -ef / -eo ... / --forest / BusyBox / macOS, top -b: single or repeated snapshots",
)
def load_ps(path: Path, ctx: LoadContext, fmt: str = "ps-snapshots"):
    path = Path(path)
    rep = ctx.report(path, fmt)
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as e:
        raise SourceFormatError(path, None, "a readable file", str(e), fmt=fmt) from e
    lines = text.splitlines()
    rep.read = len(lines)
    rows, snaps = read_listing(lines, 1, None, ctx, rep)
    if not snaps:
        rep.assume("no snapshot time in file: first_seen and last_seen are empty")
    # one file of repeated listings is one command's (a loop's): a process missing from one and
    # shown by the next started between them
    return from_frames(rep, processes=lifetimes(rows, rep.path, ctx, rep, listings=snaps))


@registry.format(
    "top-batch", sniff=sniff_top, phase=1,
    doc="top -b whose snapshots give only a time of day: dated from the incident's date or the other sources' times",
)
def load_top(path: Path, ctx: LoadContext):
    return load_ps(path, ctx, fmt="top-batch")


# Programs that exec the command after them, keeping the PID: `setsid nohup python train.py`
# is listed as that for a moment, then as `python train.py`. (`timeout` and `time` fork: their
# command is another PID, and stays a process of its own.)
_EXEC_WRAPPERS = {"setsid", "nohup", "env", "stdbuf", "nice", "ionice", "taskset", "numactl", "chrt"}


# A shell running one command string (`bash -c 'cd /w && setsid nohup python t.py > log'`) execs
# its last command in place: the same PID is listed next as that command, without the shell's
# part (the `cd`, the redirections).
_SHELL_C = re.compile(r"^(?:\S*/)?(?:ba|da|z|k)?sh -c ")


def _exec_chain(earlier: str, later: str) -> bool:
    """`earlier` is `later` behind exec wrappers and their options, or a shell's `-c` string that
    holds it (the same process after exec)."""
    if not later or earlier == later:
        return False
    if _SHELL_C.match(earlier) and " " in later and later in earlier:
        return True
    if not earlier.endswith(" " + later):
        return False
    words = earlier[: -len(later)].split()
    return bool(words) and words[0] in _EXEC_WRAPPERS and all(
        w in _EXEC_WRAPPERS or w.startswith("-") or "=" in w or w.replace(".", "").replace(",", "").isdigit()
        for w in words)


def _exiting(earlier: str, later: str) -> bool:
    """`[python]`: a process whose command line is already gone (exiting) shows its short name."""
    m = re.fullmatch(r"\[([^\]]+)\]", later)
    first = earlier.split()[0] if earlier.split() else ""
    return bool(m) and not earlier.startswith("[") and first.rsplit("/", 1)[-1][:15] == m.group(1)


def _fold_exec_chains(df: pd.DataFrame, rep) -> None:
    """One process stays one row while its listed command changes: a wrapper's rows take the
    command it exec'd into, and the `[name]` rows of its exit take its full command."""
    execs = exits = 0
    # Only PIDs listed under more than one command (a handful): long listings stay one pass.
    changed = df.groupby("pid", sort=False)["command"].transform("nunique") > 1
    for _, one in df[changed].sort_values("snap", kind="stable").groupby("pid", sort=False):
        cmd = one["command"].copy()
        seq = cmd.drop_duplicates().tolist()
        for a, b in zip(seq, seq[1:], strict=False):
            if _exec_chain(a, b):
                cmd[cmd == a] = b
                execs += 1
        seq = cmd.drop_duplicates().tolist()
        for before, c in zip(seq, seq[1:], strict=False):
            if _exiting(before, c):
                cmd[cmd == c] = before
                exits += 1
        df.loc[cmd.index, "command"] = cmd
    if execs:
        rep.assume(f"{execs} process(es) listed first as an exec wrapper (setsid, nohup, env, ...) or a shell's "
                   "-c string and then as the command it ran are one process each (exec keeps the PID)")
    if exits:
        rep.assume(f"{exits} process(es) listed as [name] while exiting are kept under their full command")


_ROW_FIELDS = ("pid", "ppid", "pgid", "sid", "user", "command", "snap", "started", "started_within_s", "state",
               "cpu_pct", "rss_kib", "line")


def lifetimes(rows: list[dict], source: str, ctx: LoadContext, rep, listings: list | None = None) -> pd.DataFrame:
    """One row per process (pid + command): first and last snapshot, last state, max CPU.
    `listings`: the times of the snapshots of one repeated listing, those that show nothing
    included, where each is the same command's (they bound the starts, `_bound_by_listing_before`)."""
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    for col in _ROW_FIELDS:  # a pgrep answer gives PIDs and commands only
        if col not in df.columns:
            df[col] = float("nan") if col in ("cpu_pct", "rss_kib", "started_within_s") else None
    df["snap"] = pd.Series(df["snap"], dtype="datetime64[us, UTC]")
    df["started"] = pd.Series(df["started"], dtype="datetime64[us, UTC]")
    df["started_within_s"] = pd.to_numeric(df["started_within_s"], errors="coerce")
    df["command"] = df["command"].fillna("")
    # `pgrep`/`pidof` answers show only PIDs: the listing that shows the same PID's command
    # names that process.
    bare = df["command"] == ""
    if bare.any() and (~bare).any():
        named = df.loc[~bare].drop_duplicates("pid").set_index("pid")["command"]
        df.loc[bare, "command"] = df.loc[bare, "pid"].map(named).fillna("")
    _fold_exec_chains(df, rep)
    # A zombie (state Z, `<defunct>`) has ended: it is listed until its parent reaps it.
    # (a listing with no STAT column reads its states as all missing: numbers, not text)
    state = df["state"].astype(object).where(df["state"].notna(), "").astype(str)
    df["running"] = df["snap"].where(~state.str.startswith("Z"))
    # T: stopped by job control (Ctrl-Z, SIGSTOP), alive and doing nothing until SIGCONT
    stopped = state.str.startswith("T")
    df["stopped"], df["stopped_line"] = df["snap"].where(stopped), df["line"].where(stopped)
    g = df.groupby(["pid", "command"], sort=False, dropna=False)
    out = g.agg(
        # the parent that started it: once that parent ends, ps lists it under init (1) or a
        # subreaper, which did not start it (a supervisor loop killed while its trainer runs on)
        ppid=("ppid", "first"), pgid=("pgid", "last"), sid=("sid", "last"), user=("user", "last"),
        first_seen=("snap", "min"), last_seen=("snap", "max"), started=("started", "min"),
        # how far `started` may be from the true start: 1 s (ELAPSED, LSTART), 60 s (START 05:20)
        started_within_s=("started_within_s", "min"),
        state=("state", "last"), last_running=("running", "max"), snapshots=("line", "size"),
        cpu_pct_max=("cpu_pct", "max"),
        rss_kib_max=("rss_kib", "max"), line=("line", "first"), last_line=("line", "last"),
        stopped_from=("stopped", "min"), stopped_until=("stopped", "max"), stopped_line=("stopped_line", "min"),
    ).reset_index()
    if listings:
        _bound_by_listing_before(out, df, listings, rep)
    if "files" in df:  # fuser -v: the files each process held (its GPU device nodes)
        out["files"] = g["files"].agg(_joined_files).to_numpy()
    out["command"] = out["command"].replace("", pd.NA)  # a row cut before its command: missing, not empty
    out["run"] = out["command"].str.extract(r"--run[-_]name[= ]([\w.@-]+)", expand=False)
    out["source"] = source
    out["host"] = ctx.host
    out["ref"] = [f"{source}:{n}" for n in out.pop("line")]
    # the line of its last sighting: where a reader sees it listed for the last time
    out["last_ref"] = [f"{source}:{n}" for n in out.pop("last_line")]
    out["stopped_ref"] = [f"{source}:{int(n)}" if pd.notna(n) else None for n in out.pop("stopped_line")]
    return out.sort_values(["first_seen", "pid"], na_position="first", kind="stable").reset_index(drop=True)


def _bound_by_listing_before(out: pd.DataFrame, df: pd.DataFrame, listings: list, rep) -> None:
    """A process that a listing does not show and the next one does started between the two:
    where START gives only the minute (`05:20`: up to 60 s later) and that minute reaches past the
    listing before, the listing before is the start's earlier bound (in a listing taken every
    second it dates the start to the second). Only a START is narrowed, never a start made up
    where ps gave none: a filtered listing leaves out a process that runs (`ps | grep ^Z` shows a
    process once it is a zombie); a start to the second (LSTART, ELAPSED) stays as read. (Only a
    PID's first listing under any command: one listed first under another command was running.)"""
    snaps = pd.Series(pd.to_datetime([t for t in listings if t is not None], utc=True)).astype("datetime64[us, UTC]")
    snaps = snaps.drop_duplicates().sort_values().array.asi8
    if len(snaps) < 2:
        return
    first = out["pid"].map(df.groupby("pid")["snap"].min())
    at = np.searchsorted(snaps, out["first_seen"].array.asi8, side="left")
    new = out["first_seen"].notna() & (out["first_seen"] == first) & (at > 0) & out["started"].notna()
    if not new.any():
        return
    prev = pd.Series(pd.NaT, index=out.index, dtype="datetime64[us, UTC]")
    prev[new] = pd.to_datetime(snaps[at[new.to_numpy()] - 1], unit="us", utc=True)
    started = out["started"]
    latest = started + pd.to_timedelta(out["started_within_s"].fillna(0.0), unit="s")
    latest = latest.where(latest <= out["first_seen"], out["first_seen"])
    bound = new & (started < prev) & (latest > prev)
    if not bound.any():
        return
    out.loc[bound, "started"] = prev[bound]
    out.loc[bound, "started_within_s"] = (latest[bound] - prev[bound]).dt.total_seconds()
    rep.assume(f"{int(bound.sum())} process(es) not in the listing before their first started after it: "
               "their start is bounded by the two listings")


def _joined_files(lists: pd.Series):
    files = sorted({f for x in lists if isinstance(x, list) for f in x})
    return ",".join(files) if files else None


def _int(v):
    """A process, group, session id or thread count: a non-negative number below 2**31."""
    try:
        n = int(v)
    except (TypeError, ValueError):
        return None
    return n if 0 <= n < 2**31 else None


def _float(v):
    """A percentage: `47.3`, or BusyBox top's `1%`."""
    try:
        return float(str(v).removesuffix("%"))
    except (TypeError, ValueError):
        return float("nan")


def load_ps_snapshots(path, *, timezone: str = "UTC", host: str | None = None, date=None, on_bad_line: str = "warn"):
    """Read ps/top listings (one or many timestamped snapshots) into the processes frame."""
    if isinstance(date, str):
        date = dt.date.fromisoformat(date)
    ctx = LoadContext(timezone=timezone, host=host, date=date, on_bad_line=on_bad_line)
    return load_ps(Path(path), ctx)
