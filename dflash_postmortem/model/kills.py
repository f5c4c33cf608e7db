"""Which processes a kill aimed at: literal PIDs, `$(cat run/x.pid)` through the PID files in
the incident, `pkill -f PATTERN` through the processes alive at that time, and a process group
(`kill -- -PGID`) through the listings' PGID; and which scheduler jobs (`scancel 1234`). Read by the
attempt model (an attempt the operator killed ended by that kill) and the failed-kill detector.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

import pandas as pd

from ..incident import Incident
from ..schema import column
from ..shell_words import kill_targets

# How long after a listing last showed a process it may still have been alive (snapshots a few
# seconds apart), and how long before one first showed it it may already have been.
LISTED_SLACK = pd.Timedelta(seconds=5)
_CAT_PID_FILE = re.compile(r"\$\(\s*cat\s+([^\s)]+)\s*\)|`\s*cat\s+([^\s`]+)\s*`")


# A launch's own record of its PID: the trainer's `--pid-file F`, or the shell's `echo $! > F`.
_WRITES_PID_FILE = re.compile(r"--pid[-_]?file[= ](?P<flag>[^\s;&|]+)|\becho\s+\$!\s*>>?\s*(?P<echo>[^\s;&|]+)")


def pid_files_read(expr) -> set[str]:
    """The names of the PID files a kill's target reads (`$(cat run/x.pid)`: `x.pid`)."""
    return {PurePosixPath(m.group(1) or m.group(2)).name for m in _CAT_PID_FILE.finditer(expr)} \
        if isinstance(expr, str) else set()


def pid_file_written(command) -> str | None:
    """The name of the PID file a launch writes its PID to (`--pid-file run/x.pid`: `x.pid`), else None."""
    m = _WRITES_PID_FILE.search(command) if isinstance(command, str) else None
    return PurePosixPath((m["flag"] or m["echo"]).strip("'\"")).name if m else None


def pid_files(inc: Incident) -> dict[str, int]:
    """PID file name -> the PID it held (the pid-file loader's events)."""
    ev = inc.events
    files = ev[(ev["kind"] == "pid_file") & ev["pid"].notna()]
    return {PurePosixPath(str(s)).name: int(p) for s, p in zip(files["source"], files["pid"], strict=True)}


def with_pids(inc: Incident, words: str, pids) -> str:
    """A kill's words with each `$(cat run/x.pid)` it read told as the PID that file held, where the
    incident holds the file and that PID is one of `pids`, the processes the kill ended (`PID $(cat
    run/x.pid)` -> `PID 882 (run/x.pid)`); a file a later run wrote again holds another's PID."""
    files = pid_files(inc)

    def held(m: re.Match) -> str:
        path = m.group(1) or m.group(2)
        pid = files.get(PurePosixPath(path).name)
        return f"{pid} ({path})" if pid is not None and pid in pids else m.group(0)
    return _CAT_PID_FILE.sub(held, words) if "cat" in words else words


def failed_targets(failed: pd.DataFrame) -> pd.Series:
    """The PID each `kill_failed` row says a kill could not stop: the one it was aimed at
    (`kill: (789) - No such process`), else the PID its line names."""
    return column(failed, "target_pid").fillna(column(failed, "pid"))


def kill_pids(inc: Incident, command: str, when, within: float = 0.0) -> set[int]:
    """The PIDs a kill command line aimed at: literal PIDs, `$(cat run/x.pid)` through the PID
    files in the incident, and `pkill -f PATTERN` through the processes alive at that time.
    `within`: how much later than `when` it may have run (a transcript dated only by its `date`s
    places a line at the one before it): a process that appeared meanwhile and was gone before
    that window closed was alive when it ran too (one still alive after it was not reached)."""
    pids: set[int] = set()
    targets = kill_targets(command)
    pids |= {t.pid for t in targets if t.pid is not None}
    procs = inc.processes
    alive = (procs["first_seen"] <= when) & (procs["last_seen"] >= when - LISTED_SLACK) if len(procs) else None
    if alive is not None and within > 0:
        closes = when + pd.Timedelta(seconds=within)
        alive |= ((procs["first_seen"] <= closes) & (procs["last_seen"] >= when - LISTED_SLACK)
                  & (procs["last_seen"] <= closes + LISTED_SLACK))
    alive = procs[alive] if alive is not None else procs
    if re.search(r"\bkill\b", command):
        files = pid_files(inc)
        for m in _CAT_PID_FILE.finditer(command):
            name = PurePosixPath(m.group(1) or m.group(2)).name
            if name in files and not _started_after(inc, files[name], when):
                pids.add(files[name])
            elif name in files:
                # the file holds the PID of a later run that wrote it again (`--pid-file` reused):
                # when the kill read it, it held the PID of the process then alive that writes it
                pids |= {int(p) for p in alive.loc[alive["command"].fillna("").str.contains(
                    rf"(?:^|[\s=/]){re.escape(name)}(?:\s|$)"), "pid"]}
    patterns = [t.pattern for t in targets if t.pattern]
    if patterns and len(procs):
        for pat in patterns:
            rx = pattern_regex(pat)
            hit = alive[alive["command"].fillna("").map(lambda c, rx=rx: bool(rx.search(c))).astype(bool)]
            pids |= {int(p) for p in hit["pid"]}
    return pids


def _started_after(inc: Incident, pid: int, when) -> bool:
    """Whether the evidence shows `pid` only after `when` (first seen more than a sampling
    interval later, in a listing, else in the per-process GPU samples): then it was not the PID a
    file named at `when`. Nothing shows it: no."""
    procs, gp = inc.processes, inc.gpu_processes
    rows = procs[procs["pid"] == pid] if len(procs) else procs
    if len(rows):
        return bool((rows["first_seen"] > when + LISTED_SLACK).all())
    sampled = gp.loc[gp["pid"] == pid, "time"].dropna() if len(gp) else gp.iloc[:0]["time"]
    return bool(len(sampled)) and sampled.min() > when + LISTED_SLACK


def pattern_regex(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)  # pkill patterns are extended regular expressions
    except re.error:
        return re.compile(re.escape(pattern))


def kill_window(kill: pd.Series) -> float:
    """How much later than its time a kill may have run: a transcript dated only by its `date`s
    places a line at the one before it (`time_within_s`); 0 where its time is exact."""
    late, approx = kill.get("time_within_s"), kill.get("time_approx")
    return float(late) if pd.notna(late) and pd.notna(approx) and bool(approx) else 0.0


def listing_at(inc: Incident, kill: pd.Series) -> bool:
    """Whether a process listing was taken while the kill ran (within its window): then the
    listing, not the typed commands, says what its pattern matched."""
    procs = inc.processes
    if procs.empty or pd.isna(kill["time"]):
        return False
    until = kill["time"] + pd.Timedelta(seconds=kill_window(kill))
    return bool(((procs["first_seen"] <= until) & (procs["last_seen"] >= kill["time"] - LISTED_SLACK)).any())


def aimed_at(inc: Incident, kill: pd.Series) -> set[int]:
    """The PIDs one `kill_sent` event aimed at: its resolved target, else its command's."""
    pids = {int(kill["target_pid"])} if pd.notna(kill.get("target_pid")) else set()
    expr, pattern = kill.get("target_expr"), kill.get("target_pattern")
    within = kill_window(kill)
    if isinstance(expr, str) and expr:
        pids |= kill_pids(inc, f"kill {expr}", kill["time"], within)
    if isinstance(pattern, str) and pattern:
        # quoted as typed: a pattern with a space (`pkill -f '[-]-layers 64'`) is one pattern, not
        # two (the second, `64`, matching any command line with a 64 in it)
        pids |= kill_pids(inc, f"pkill -f {shlex.quote(pattern)}", kill["time"], within)
    if is_group_kill(kill) and pids:
        pids |= group_members(inc, pids, kill["time"])
    return pids


def is_group_kill(kill: pd.Series) -> bool:
    """A kill of a whole process group (`kill -- -924`, `pkill -g 924`); the column is a nullable
    boolean, whose row values are numpy's or Python's depending on how the row was taken."""
    value = kill.get("target_is_group")
    return bool(pd.notna(value) and value)


def group_members(inc: Incident, groups: set[int], when) -> set[int]:
    """The processes of these process groups alive at `when` (a listing's PGID column): what
    `kill -- -PGID` reaches, a restart loop's trainer with its loop."""
    procs = inc.processes
    if procs.empty or "pgid" not in procs.columns or pd.isna(when):
        return set()
    alive = procs[(procs["first_seen"] <= when) & (procs["last_seen"] >= when - LISTED_SLACK)]
    return {int(p) for p in alive.loc[alive["pgid"].isin(list(groups)), "pid"]}


def job_reached(target, job) -> bool:
    """Whether a scheduler kill of `target` (`scancel 1234`, `1234_5`, `1234.0`) reaches the job
    an attempt belongs to: the job itself, every task of its array and component of its
    heterogeneous job; a step's cancel (`1234.0`) ends the training its job runs in that step."""
    if not isinstance(target, str) or not target or not isinstance(job, str) or not job:
        return False
    base = target.split(".", 1)[0]
    return job == base or job.startswith((base + "_", base + "+"))
