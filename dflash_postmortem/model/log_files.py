"""Each attempt's own log as a file: the one its command redirected into, found in the incident
folder by the tail of its path (the launch wrote `/workspace/logs/run.log`, the folder holds
`logs/run.log`), and what the evidence says of it.

A reader settles it the way the operator did: the attempt's lines in it (written), the folder's
copy with no line in it or a listing of 0 bytes (empty), a check that found no such file or a
shell that could not open it (never created), else nothing in the incident shows the file. The
loaders only read: this is where the sources meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

import pandas as pd

from ..incident import Incident
from ..units import clock
from . import computed, gpu_state
from .attempts import attempts
from .launches import verdicts

WRITTEN, EMPTY, NEVER_CREATED, NOT_IN_INCIDENT = "written", "empty", "never created", "not in the incident"
# GPU samples at work while an attempt held its GPU, and how long they span, that show it working
# where its log is not there to say whether it trained (loading weights or compiling leaves a GPU
# near idle).
UNSEEN_BUSY_SAMPLES = 5
UNSEEN_BUSY_S = 10.0
# What a session's output says of a path: it does not exist, or its size.
_MISSING = ("log_missing", "file_missing", "redirect_failed")
_SIZE = "file_check"


@dataclass(frozen=True)
class LogFile:
    """The log an attempt's command named: `path` as typed, `file` the incident file it is
    (None where the folder has none), its `state`, `first` line's time where written, and the
    lines that show the state (`refs`), each said in `said`."""

    path: str
    file: str | None
    state: str
    first: pd.Timestamp | None
    refs: tuple[str, ...]
    said: str


def log_files(inc: Incident) -> dict[str, LogFile]:
    """Attempt id -> its log, for each attempt whose command names one."""
    return computed.cached(inc, "log files", ("events", "metrics"), lambda: _all(inc))


def _all(inc: Incident) -> dict[str, LogFile]:
    att = attempts(inc)
    if att.empty:
        return {}
    named = att[att["log_path"].map(lambda p: isinstance(p, str) and bool(p))]
    files = [f.path for f in inc.load_report.files]
    empty = {f.path for f in inc.load_report.files if f.read == 0 and not f.error}
    owner = _owners(files, named["log_path"].tolist())
    out = {}
    for _, a in named.iterrows():
        file = next((f for f, paths in owner.items() if a["log_path"] in paths), None)
        out[a["attempt"]] = _state(inc, a, file, file in empty)
    return out


def _owners(files: list[str], paths: list[str]) -> dict[str, set[str]]:
    """Each incident file -> the launch paths it is: those sharing the longest tail with it (a
    later launch into `/tmp/run/logs/x.log` is `logs/x.log`, not one into `/workspace/x.log`)."""
    out = {}
    for f in files:
        tails = {p: _tail(p, f) for p in set(paths)}
        best = max(tails.values(), default=0)
        if best:
            out[f] = {p for p, n in tails.items() if n == best}
    return out


def _tail(path: str, rel: str) -> int:
    """How many trailing path components two paths share (0: different file names)."""
    n = 0
    for x, y in zip(PurePosixPath(path).parts[::-1], PurePosixPath(rel).parts[::-1], strict=False):
        if x != y:
            break
        n += 1
    return n


def _state(inc: Incident, a: pd.Series, file: str | None, empty: bool) -> LogFile:
    path = a["log_path"]
    mine = [s for s in a["sources"] if s == file or PurePosixPath(s).name == PurePosixPath(path).name]
    if mine:
        first = _first_line(inc, mine[0], a["start"])
        return LogFile(path, mine[0], WRITTEN, first, (), f"its log {mine[0]} begins {clock(first)}")
    checks = _checks(inc, a, path)
    gone = checks[checks["kind"].isin(_MISSING)]
    if len(gone):
        r = gone.iloc[0]
        return LogFile(path, None, NEVER_CREATED, None, tuple(gone["ref"].dropna()),
                       f"its log {path} was never created ({clock(r['time'])}: {_first(r['message'])})")
    zero = checks[(checks["kind"] == _SIZE) & (checks["size_bytes"] == 0)] if "size_bytes" in checks else checks.iloc[:0]
    if len(zero) or empty:
        seen = [f"{clock(r['time'])}: {path} listed with 0 bytes" for _, r in zero.iterrows()]
        seen += [f"{file} in the incident folder is empty"] if empty else []
        return LogFile(path, file, EMPTY, None, tuple(zero["ref"].dropna()), f"its log stayed empty ({'; '.join(seen)})")
    return LogFile(path, file, NOT_IN_INCIDENT, None, (), f"its log ({path}) is not in the incident")


def _checks(inc: Incident, a: pd.Series, path: str) -> pd.DataFrame:
    """What the sessions' outputs say of `path` from the attempt's launch on."""
    ev = inc.events
    if "path" not in ev.columns:
        return ev.iloc[:0]
    hit = ev[(ev["path"] == path) & ev["kind"].isin((*_MISSING, _SIZE))]
    since = a["launched"] if pd.notna(a["launched"]) else a["start"]
    return hit[hit["time"].isna() | (hit["time"] >= since)].sort_values("time", kind="stable")


def _first_line(inc: Incident, source: str, since) -> pd.Timestamp | None:
    times = [df.loc[(df["source"] == source) & (df["time"] >= since), "time"] for df in (inc.metrics, inc.events)]
    times = [t.min() for t in times if len(t)]
    return min(times) if times else None


def _first(message) -> str:
    return str(message).strip().splitlines()[0][:160] if isinstance(message, str) else ""


def unseen(inc: Incident, a: pd.Series) -> str | None:
    """Why nothing can show whether an attempt trained, where nothing can: no file of its own
    gave a line (its PID file names it only), and either its GPU was busy while its PIDs held
    memory on it (at work, and no line says what it did) where its log is not in the incident or
    stayed empty, or no GPU sample, per-process GPU sample or process listing covers its time
    where its log is not in the incident (a shell session alone: its launch, and maybe how it
    ended). None where any of that is missing: a start with its log, one whose log stayed empty
    while its GPU did nothing (the "not starting?" start: 0 MiB, no line), or one the GPUs and
    listings saw never get its GPU working (a crash loop's processes that live for seconds), is
    judged by its steps."""
    log = log_files(inc).get(a["attempt"])
    if log is None or log.state not in (NOT_IN_INCIDENT, EMPTY):
        return None
    ev = inc.events
    if (len(inc.metrics) and inc.metrics["source"].isin(a["sources"]).any()) or \
            (len(ev) and (ev["source"].isin(a["sources"]) & (ev["kind"] != "pid_file")).any()):
        return None
    # a log that stayed empty says nothing, however briefly the GPU was seen at work; one not in
    # the incident may say it, and a moment of work is what loading or compiling shows
    worked = _worked(inc, a, *((1, 0.0) if log.state == EMPTY else (UNSEEN_BUSY_SAMPLES, UNSEEN_BUSY_S)))
    if worked is not None:
        # an empty log is what a program that prints without flushing leaves when it is killed:
        # its output to a file waits in its buffer until the buffer fills or the program exits
        held = (" (output to a file waits in the program's buffer, 8 KiB for Python's print, until it fills or the "
                "program exits: `python -u` or PYTHONUNBUFFERED=1 writes each line)") if log.state == EMPTY else ""
        return f"{log.said}, and {worked}; whether it trained, no line says{held}"
    if log.state == NOT_IN_INCIDENT and not _covered(inc, a):
        return f"{log.said}, and no GPU sample or process listing covers its time: whether it trained, nothing shows"
    return None


def _worked(inc: Incident, a: pd.Series, samples: int, span_s: float) -> str | None:
    """Its GPU at work while its PIDs held memory on it, in words, where `samples` samples over
    `span_s` seconds at least show it; None where none do."""
    gp, g = inc.gpu_processes, inc.gpus
    if gp.empty or g.empty or not a["pids"]:
        return None
    mine = gp[gp["pid"].isin(a["pids"]) & gp["time"].notna() & gp["gpu"].notna()].sort_values("time", kind="stable")
    util = g[g["time"].notna() & g["gpu"].notna() & g["util_gpu_pct"].notna()].sort_values("time", kind="stable")
    if mine.empty or util.empty:
        return None
    # each sample of its memory, with its GPU's utilization at the nearest sample within 2 s
    at = pd.merge_asof(mine[["time", "gpu", "pid"]].astype({"gpu": "int64"}),
                       util[["time", "gpu", "util_gpu_pct"]].astype({"gpu": "int64"}),
                       on="time", by="gpu", direction="nearest", tolerance=pd.Timedelta(seconds=2))
    busy = at[at["util_gpu_pct"].notna() & ~gpu_state.idle(at["util_gpu_pct"])]
    if len(busy) < samples or (busy["time"].max() - busy["time"].min()).total_seconds() < span_s:
        return None
    pids = ", ".join(str(int(p)) for p in sorted(busy["pid"].unique()))
    when = (f"at {clock(busy['time'].min())}" if busy["time"].nunique() == 1
            else f"from {clock(busy['time'].min())} to {clock(busy['time'].max())}")
    return f"its GPU was at work while PID {pids} held it: {busy['util_gpu_pct'].median():.0f} % utilization {when}"


def _covered(inc: Incident, a: pd.Series) -> bool:
    """Whether anything that checks a start falls in the attempt's time (from its start to its
    end, else to the next start; a bound nothing dates is open): a GPU sample, a per-process GPU
    sample, a process listing, a count of processes (`ps aux | grep train | wc -l`), or the
    verifying launcher's own checks of it."""
    if len(verdicts(inc, a["launch_ref"])):
        return True
    ev = inc.events
    lo, hi = a["start"], a["end"]
    # (what is seen from a kill someone sent to it on, a count of processes typed with the kill,
    # says what the kill did, not whether it had come up)
    killed = a["end_kind"] == "kill_sent" and pd.notna(hi)
    if pd.isna(hi) and pd.notna(lo):  # nothing shows its end: until the next start, the one that followed it
        later = attempts(inc)["start"]
        later = later[later > lo]
        hi = later.min() if len(later) else hi
    procs = inc.processes
    if len(procs):  # a listing ran while it was there to be listed
        listed = pd.Series(True, index=procs.index)
        if pd.notna(lo):
            listed &= procs["last_seen"] >= lo
        if pd.notna(hi):
            listed &= procs["first_seen"] < hi if killed else procs["first_seen"] <= hi
        if listed.fillna(False).any():
            return True
    counts = ev[ev["kind"] == "process_count"] if len(ev) else ev
    for df, col in ((inc.gpus, "time"), (inc.gpu_processes, "time"), (counts, "time")):
        t = df[col].dropna() if col in df.columns else df.iloc[:0]
        if pd.notna(lo):
            t = t[t >= lo]
        if pd.notna(hi):
            t = t[t < hi] if killed else t[t <= hi]
        if len(t):
            return True
    return False
