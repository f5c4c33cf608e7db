"""`ps` and `top` listings -> the `processes` frame: who ran, from when to when.

Reads `ps aux`, `ps -eo <any columns>`, `ps --forest` (tree glyphs give the parent), `top -b`,
header-less `ps aux | grep` pastes, and files of repeated snapshots each headed by a time
(`# 2026-11-30T05:20:20Z`, `date` output, `top - 05:20:20 up ...`). One row per process
(pid + command): first and last snapshot that show it, the start time from ELAPSED/ETIME/ETIMES,
LSTART or START (+ the snapshot's date), and the last state in an extra `state` column
(`Z` for zombies and `<defunct>`).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pandas as pd

from .. import align
from ..incident import from_frames
from .registry import Format, LoadContext, register
from .shell_transcript import is_prompt

# ps/top header names -> our column. Only the last column and LSTART may contain spaces.
COLUMNS = {
    "PID": "pid", "PPID": "ppid", "PGID": "pgid", "PGRP": "pgid", "SID": "sid", "SESS": "sid",
    "USER": "user", "UID": "user", "RUSER": "user", "EUSER": "user",
    "COMMAND": "command", "CMD": "command", "ARGS": "command", "COMM": "command",
    "ELAPSED": "etime", "ETIME": "etime", "ETIMES": "etimes", "STAT": "state", "S": "state",
    "STATE": "state", "START": "start", "STIME": "start", "LSTART": "lstart", "STARTED": "start",
    "%CPU": "cpu_pct", "%MEM": "mem_pct", "RSS": "rss_kib", "RES": "rss_kib", "VSZ": "vsz_kib",
    "VIRT": "vsz_kib", "TTY": "tty", "TT": "tty", "TIME": "cpu_time", "TIME+": "cpu_time",
    "PR": "priority", "NI": "nice", "SHR": "shr_kib", "NLWP": "threads", "C": "cpu_util",
    "PSR": "psr", "F": "flags", "SZ": "size", "WCHAN": "wchan", "ADDR": "addr", "LWP": "lwp",
}
# `ps aux` without its header (ps aux | grep python): these columns, if the row fits them.
AUX = ["USER", "PID", "%CPU", "%MEM", "VSZ", "RSS", "TTY", "STAT", "START", "TIME", "COMMAND"]
_AUX_ROW = re.compile(r"^\S+\s+\d+\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+\s+[\d:.]+\s+\S")
_SNAP_ISO = re.compile(r"^#*\s*(?:=+\s*)?(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s*(?:=+)?\s*$")
_SNAP_DATE = re.compile(r"^#*\s*(?:\w{3} )?(?P<mon>\w{3}) +(?P<day>\d{1,2}) (?P<time>\d{2}:\d{2}:\d{2}) (?:(?P<tz>[A-Z]{2,5}) )?(?P<year>\d{4})\s*$")
_TOP = re.compile(r"^top - (?P<time>\d{2}:\d{2}:\d{2}) ")
_TOP_SUMMARY = re.compile(r"^(Tasks|Threads|%?Cpu|MiB|KiB|GiB|Mem|Swap|Load)\b")
_ETIME = re.compile(r"^(?:(?:(?P<d>\d+)-)?(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)$")
MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}


def _header(line: str) -> list[str] | None:
    cells = line.split()
    if "PID" not in cells or len(cells) < 2:
        return None
    known = sum(1 for c in cells if c in COLUMNS)
    return cells if known >= max(2, len(cells) - 1) else None


def _split_row(line: str, header: list[str]) -> list[str] | None:
    """Cells of a row: whitespace split, LSTART takes 5 words, the last column takes the rest."""
    words = line.split()
    cells, i = [], 0
    for k, name in enumerate(header):
        if k == len(header) - 1:
            if i >= len(words):
                return None
            cells.append(line.split(None, i)[i] if i else line.strip())
            return cells
        n = 5 if name == "LSTART" else 1
        if i + n > len(words):
            return None
        cells.append(" ".join(words[i:i + n]))
        i += n
    return cells


def parse_etime(text: str) -> float | None:
    m = _ETIME.match(text.strip())
    if not m:
        return None
    g = {k: int(v) if v else 0 for k, v in m.groupdict().items()}
    return ((g["d"] * 24 + g["h"]) * 60 + g["m"]) * 60 + g["s"]


def parse_start(text: str, snap: pd.Timestamp | None, tz: str) -> tuple[pd.Timestamp | None, str | None]:
    """ps START: `05:20` (today), `Sep03` / `7月24` (this year), `2024` (a year only).

    Returns (UTC time or None, a report note when the form is not understood or too coarse).
    """
    text = text.strip()
    local = snap.tz_convert(tz) if snap is not None else None
    m = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", text)
    if m:
        if local is None:
            return None, "START is a time of day and the snapshot has no date"
        t = local.replace(hour=int(m[1]), minute=int(m[2]), second=int(m[3] or 0), microsecond=0)
        if t > local:
            t -= pd.Timedelta(days=1)
        return t.tz_convert("UTC"), None
    m = re.fullmatch(r"([A-Z][a-z]{2})\s?(\d{1,2})", text) or re.fullmatch(r"(\d{1,2})月(\d{1,2})日?", text)
    if m:
        month = MONTHS.get(m[1]) if not m[1].isdigit() else int(m[1])
        if local is None or month is None:
            return None, f"START {text!r} has no year and the snapshot has no date"
        t = local.replace(month=month, day=int(m[2]), hour=0, minute=0, second=0, microsecond=0)
        if t > local:
            t = t.replace(year=t.year - 1)
        return t.tz_convert("UTC"), "START gives only a day for processes older than a day: started is that day's midnight"
    if re.fullmatch(r"\d{4}", text):
        return None, "START gives only a year: started left empty"
    return None, f"START form {text!r} not understood: started left empty"


def load_ps(path: Path, ctx: LoadContext):
    path = Path(path)
    rep = ctx.report(path, "ps-snapshots")
    lines = path.read_bytes().decode("utf-8", "replace").splitlines()
    rep.read = len(lines)
    header: list[str] | None = None
    snap: pd.Timestamp | None = None
    top_clock: str | None = None
    rows: list[dict] = []
    tree: list[tuple[int, int]] = []  # (depth, pid) of the current --forest branch
    n_snaps = 0
    for i, line in enumerate(lines, 1):
        s = line.strip()
        if not s:
            rep.skip(i, "blank line")
            continue
        m = _SNAP_ISO.match(s)
        if m:
            ts = pd.Timestamp(m["ts"])
            snap = (ts.tz_convert("UTC") if ts.tzinfo else align.localize(pd.Series([ts]), ctx.timezone).iloc[0])
            if ts.tzinfo is None:
                rep.assume(align.zone_assumption(ctx.timezone))
            n_snaps += 1
            tree = []
            rep.parsed += 1
            continue
        m = _SNAP_DATE.match(s)
        if m and m["mon"] in MONTHS:
            naive = pd.Timestamp(f"{m['year']}-{MONTHS[m['mon']]:02d}-{int(m['day']):02d} {m['time']}")
            zone = "UTC" if m["tz"] in ("UTC", "GMT") else ctx.timezone
            snap = align.localize(pd.Series([naive]), zone).iloc[0]
            n_snaps += 1
            rep.parsed += 1
            continue
        m = _TOP.match(s)
        if m:
            top_clock = m["time"]
            date = ctx.date or (snap.tz_convert(ctx.timezone).date() if snap is not None else None)
            if date is not None:
                snap = align.localize(pd.Series([pd.Timestamp(f"{date} {top_clock}")]), ctx.timezone).iloc[0]
                rep.assume(f"top gives only time of day: date {date} taken from {'the incident' if ctx.date else 'an earlier snapshot'}")
            else:
                snap = None
                rep.assume("top gives only time of day and no date is known: snapshot has no time")
            n_snaps += 1
            rep.parsed += 1
            continue
        if _TOP_SUMMARY.match(s):
            rep.skip(i, "top summary line")
            continue
        h = _header(line)
        if h:
            header = h
            rep.skip(i, "header line")
            tree = []
            continue
        if is_prompt(line):
            rep.skip(i, "shell prompt line")
            continue
        use = header
        if use is None:
            if _AUX_ROW.match(line):
                use = AUX
                rep.assume("no header line: `ps aux` columns assumed")
            else:
                rep.bad(i, "a ps/top row under a header line", line)
                continue
        cells = _split_row(line, use)
        if cells is None:
            rep.bad(i, f"{len(use)} columns ({' '.join(use)})", line)
            continue
        row = {COLUMNS.get(name, name.lower()): v for name, v in zip(use, cells, strict=True)}
        pid = _int(row.get("pid"))
        if pid is None:
            rep.bad(i, "a numeric PID", line)
            continue
        row["pid"] = pid
        cmd = row.get("command", "")
        # --forest: the column of the `\_` glyph is the depth; the parent is the nearest row above
        # with a smaller depth. A root has no glyph (depth 0).
        glyph = line.find("\\_ ")
        depth = glyph if glyph >= 0 else 0
        if glyph >= 0:
            cmd = line[glyph + 3:].strip()
        if "ppid" not in row:
            while tree and tree[-1][0] >= depth:
                tree.pop()
            row["ppid"] = tree[-1][1] if tree and depth else None
            tree.append((depth, pid))
        defunct = "<defunct>" in cmd
        cmd = cmd.replace("<defunct>", "").strip()
        state = row.get("state")
        if defunct and not (state or "").startswith("Z"):
            state = "Z" + (state or "")[1:] if state else "Z"
        started, note = None, None
        if row.get("etimes") and row["etimes"].isdigit() and snap is not None:
            started = snap - pd.Timedelta(seconds=int(row["etimes"]))
        elif row.get("etime") and snap is not None and parse_etime(row["etime"]) is not None:
            started = snap - pd.Timedelta(seconds=parse_etime(row["etime"]))
        elif row.get("lstart"):
            t = pd.to_datetime(row["lstart"], format="%a %b %d %H:%M:%S %Y", errors="coerce")
            started = align.localize(pd.Series([t]), ctx.timezone).iloc[0] if t is not pd.NaT else None
            note = None if started is not None else f"LSTART {row['lstart']!r} not understood"
        elif row.get("start"):
            started, note = parse_start(row["start"], snap, ctx.timezone)
        if note:
            rep.assume(note)
        rows.append(dict(
            pid=pid, ppid=_int(row.get("ppid")), pgid=_int(row.get("pgid")), sid=_int(row.get("sid")),
            user=row.get("user"), command=cmd, snap=snap, started=started, state=state,
            cpu_pct=_float(row.get("cpu_pct")), rss_kib=_float(row.get("rss_kib")), line=i,
        ))
        rep.parsed += 1
    if n_snaps == 0:
        rep.assume("no snapshot time in file: first_seen and last_seen are empty")
    return from_frames(rep, processes=_lifetimes(rows, rep.path, ctx, rep))


# Programs that exec the command after them, keeping the PID: `setsid nohup python train.py`
# is listed as that for a moment, then as `python train.py`. (`timeout` and `time` fork: their
# command is another PID, and stays a process of its own.)
_EXEC_WRAPPERS = {"setsid", "nohup", "env", "stdbuf", "nice", "ionice", "taskset", "numactl", "chrt"}


def _exec_chain(earlier: str, later: str) -> bool:
    """`earlier` is `later` behind exec wrappers and their options (the same process after exec)."""
    if not later or earlier == later or not earlier.endswith(" " + later):
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
        rep.assume(f"{execs} process(es) listed first as an exec wrapper (setsid, nohup, env, ...) and then "
                   "as the command it ran are one process each (exec keeps the PID)")
    if exits:
        rep.assume(f"{exits} process(es) listed as [name] while exiting are kept under their full command")


def _lifetimes(rows: list[dict], source: str, ctx: LoadContext, rep) -> pd.DataFrame:
    """One row per process (pid + command): first and last snapshot, last state, max CPU."""
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    df["snap"] = pd.Series(df["snap"], dtype="datetime64[us, UTC]")
    df["started"] = pd.Series(df["started"], dtype="datetime64[us, UTC]")
    df["command"] = df["command"].fillna("")
    _fold_exec_chains(df, rep)
    g = df.groupby(["pid", "command"], sort=False, dropna=False)
    out = g.agg(
        ppid=("ppid", "last"), pgid=("pgid", "last"), sid=("sid", "last"), user=("user", "last"),
        first_seen=("snap", "min"), last_seen=("snap", "max"), started=("started", "min"),
        state=("state", "last"), snapshots=("line", "size"), cpu_pct_max=("cpu_pct", "max"),
        rss_kib_max=("rss_kib", "max"), line=("line", "first"),
    ).reset_index()
    out["run"] = out["command"].str.extract(r"--run[-_]name[= ]([\w.@-]+)", expand=False)
    out["source"] = source
    out["host"] = ctx.host
    out["ref"] = [f"{source}:{n}" for n in out.pop("line")]
    return out.sort_values(["first_seen", "pid"], na_position="first", kind="stable").reset_index(drop=True)


def _int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def load_ps_snapshots(path, *, timezone: str = "UTC", host: str | None = None, date=None, on_bad_line: str = "warn"):
    """Read ps/top listings (one or many timestamped snapshots) into the processes frame."""
    if isinstance(date, str):
        date = dt.date.fromisoformat(date)
    ctx = LoadContext(timezone=timezone, host=host, date=date, on_bad_line=on_bad_line)
    return load_ps(Path(path), ctx)


def sniff_ps(path: Path, head: bytes) -> float:
    text = head.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines()[:300] if ln.strip()]
    if not lines:
        return 0.0
    headers = sum(1 for ln in lines if _header(ln))
    aux_rows = sum(1 for ln in lines if _AUX_ROW.match(ln))
    if headers and len(lines) > headers:
        return 0.9
    if aux_rows and aux_rows / len(lines) >= 0.5:
        return 0.8
    return 0.0


register(Format(
    name="ps-snapshots",
    sniff=sniff_ps,
    load=load_ps,
    doc="ps aux / ps -eo ... / ps --forest / top -b listings, single or repeated with snapshot times",
))
