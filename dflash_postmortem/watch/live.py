"""Following an incident folder while its files grow: load what changed, read the model and the
findings again, and announce what is new since the last look.

What is announced is what the post-mortem would say, read off the same model (model/attempts.py,
model/states.py) and the same detectors, so the watch and a `report` afterwards cannot disagree:
an attempt that started, its first step, each new finding of the kinds in ANNOUNCED, and one thing
only a live reader can say: a start that has run past its start budget with no step and no sign
of failing ("not starting").

A look reads the folder again only when a file in it changed (its size, its time, or a new
name), and then only what changed: a file read before and unchanged is not read again, and a
stream that grew is read on from where the last look stopped (loaders/following.py). The model
and the detectors then run over the whole incident. Followed live (`follow`), a folder whose
files only grow steadily is read as often as the watch's share of a core allows, and at once
when a file appears, wakes or goes quiet (pacing.py).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..detect import detect
from ..incident import Incident
from ..loaders.folder import WATCH_LOG, read_folder, walked
from ..loaders.following import GrowingFolder
from ..model.attempts import attempts
from ..model.carried import Carry
from ..model.ledger import ledger_parts
from ..model.pace import pace_rows, unit
from ..model.states import MIN_STALL_S, states
from ..present.evidence_views import cited_line
from ..units import clock, duration
from .announcements import Announcement, JobStatus
from .memory import give_back
from .pacing import Pacer

# A start with no step after this long, where nothing in the folder or incident.toml says how long
# this job takes to start, is announced as not starting.
DEFAULT_START_BUDGET_S = 300.0
# How much longer than the longest earlier start of the same script a start may take.
BUDGET_FACTOR = 1.5

# The shortest time between two looks, however often file events wake the watch.
MIN_GAP_S = 0.5
# After a look that raised, the next waits this long, twice as long after each further one up to
# RETRY_MAX_S: a watch that runs for days outlives a bad read (a file caught mid-write, a reader's
# bug) without spinning a core on it.
RETRY_S = 10.0
RETRY_MAX_S = 300.0

# Finding kinds a detector makes once a run (detect/recovery.py: a relaunch that came back below
# the floor; a run that recovered may recover again after a second drop): told once a run,
# wherever their stretch moves as the run's samples arrive.
ONCE_A_RUN = {"partial_recovery"}
# Finding kinds of one attempt's end (detect/deaths.py: its `numbers["attempt"]`): told once an
# attempt, though the time of its error moves as the lines around an undated traceback arrive.
ONCE_AN_ATTEMPT = {"training_died", "time_limit", "stopped_by_signal"}
# Finding kinds of one start that never came up (detect/restart.py: its `numbers["attempt"]`):
# told once a start. Not known by their stretch of time: until a start's own end is read, it ends
# where the next start begins, so two failed restarts in a row touch, and the second would be
# taken for the first.
ONCE_A_START = {"failed_restart", "never_trained"}

# Finding kinds announced as they appear -> the announcement's kind.
ANNOUNCED = {
    "failed_restart": "failed_start", "never_trained": "failed_start", "throughput_regression": "throughput_fell",
    "stall": "stall", "kill_failed": "kill_failed", "partial_recovery": "partial_recovery",
    "recovery": "recovered", "training_died": "ended", "time_limit": "ended", "stopped_by_signal": "ended", "loss_not_finite": "loss_not_finite",
    # a folder of several hosts: what the fleet detectors see (detect/fleet.py)
    "straggler": "straggler", "gpu_error": "gpu_error",
}


def start_budget(att: pd.DataFrame, a: pd.Series, configured: float | None) -> tuple[float, str]:
    """How long attempt `a` may take to its first step before it is announced as not starting,
    and where that figure comes from: 1.5 × the longest earlier start of the same script in the
    folder, else incident.toml's `[detect] start_budget_s`, else 5 minutes."""
    same = att[(att["start"] < a["start"]) & att["first_step"].notna()]
    if isinstance(a["script"], str) and a["script"]:
        same = same[same["script"] == a["script"]]
    if len(same):
        longest = float((same["first_step"] - same["start"]).dt.total_seconds().max())
        return BUDGET_FACTOR * longest, f"{BUDGET_FACTOR} × the longest earlier start of {a['script'] or 'it'} ({longest:,.0f} s)"
    if configured is not None:
        return float(configured), "incident.toml [detect] start_budget_s"
    return DEFAULT_START_BUDGET_S, "the default"


@dataclass
class _Told:
    """An attempt the watch announced, and what it said of it."""

    job: str
    start: pd.Timestamp
    refs: set[str]  # the lines that started it (its start's, its launch's), as read so far
    pids: set[int]
    stepped: bool = False
    not_starting: bool = False
    told: set[str] = field(default_factory=set)  # "start", "end": a finding of ONCE_A_START, ONCE_AN_ATTEMPT told


@dataclass
class _Seen:
    """What has been announced already: findings by id, attempts by what was said of them."""

    findings: set[str] = field(default_factory=set)
    spans: list[tuple] = field(default_factory=list)  # (kind, run, start, end) of each one announced
    attempts: list[_Told] = field(default_factory=list)
    errors: set[str] = field(default_factory=set)  # the detectors' errors said


class Watch:
    """One folder followed: `look()` loads the incident as it is now and returns what changed.
    With `pacer`, a look reads the folder only when the pacer calls for it (pacing.py); without,
    whenever anything in it changed (`--once`, tests that replay a folder)."""

    def __init__(self, folder, *, clock_now=None, timezone: str | None = None, pacer: Pacer | None = None):
        self.folder = Path(folder)
        self.timezone = timezone
        # The wall clock, on the incident's UTC clock; tests pass their own.
        self.now = clock_now or (lambda: pd.Timestamp.now(tz="UTC"))
        self.seen = _Seen()
        self.incident: Incident | None = None
        self.findings: pd.DataFrame | None = None
        self._listed: dict | None = None  # the folder at the last look (without a pacer)
        self.reader = GrowingFolder()  # what was read, kept between looks
        self.carry = Carry()  # what the model keeps of the last read for the next (model/carried.py)
        self.failed: list[tuple[str, Exception]] = []  # the detectors that raised on the last read
        self.looks = 0  # looks done so far (a test waits on it)
        self.spent = {"read": 0.0, "judge": 0.0}  # CPU seconds of the last look that read the folder
        self.pacer = pacer
        self.why: str | None = None  # why the last look that read the folder read it
        self._status: tuple = (None, [])  # (the incident, its jobs' status)
        # the attempts of the last look by their names then: set by `_attempts`, which `look`
        # runs before `_findings` (a death is told once for its attempt)
        self._named: dict[str, _Told] = {}

    def listing(self) -> dict[str, tuple[int, int]]:
        """The folder as the loader walks it: each entry's path in it -> (size, modification time
        in ns), (-1, -1) for an entry the walk reports instead of reading (a dangling link); the
        watch's own record left out (listed, never read: what it appends changes nothing)."""
        return {path.relative_to(self.folder).as_posix(): (st.st_size, st.st_mtime_ns) if st else (-1, -1)
                for path, st in walked(self.folder) if path.name != WATCH_LOG}

    def due(self) -> str | None:
        """Why the folder should be read now, or None."""
        listing = self.listing()
        if self.pacer is not None:
            return self.pacer.why(listing, starting=self._starting()) \
                or (None if self.incident is not None else "the first look")
        changed, self._listed = listing != self._listed, listing
        return "a file changed" if changed or self.incident is None else None

    def _starting(self) -> set[str]:
        """The sources (files, run folders) of the attempts that, as last read, wait for their
        first step with nothing that ended them."""
        if self.incident is None:
            return set()
        att = attempts(self.incident)
        if att.empty:
            return set()
        waiting = att[att["first_step"].isna() & att["end"].isna()]
        return {s for sources in waiting["sources"] for s in sources}

    def look(self) -> list[Announcement]:
        """Load the folder where it is due, and return what is new since the last look, in time order."""
        c0 = time.process_time()
        why = self.due()
        if why is None and self.pacer is not None and self.pacer.pending and self._overdue():
            # "not starting" says that no step came: it is said of the folder as it is now, not
            # as the last read left it
            why = "a start past its budget"
        if why is not None:
            # what the last read built (its frames, the model's series, the findings) is let go
            # before the next is built: a watch's peak memory is one incident, not two
            self.incident, self.findings, self._status = None, None, (None, [])
            give_back()
            c1 = time.process_time()
            incident = read_folder(self.folder, timezone=self.timezone, reader=self.reader,
                                   sniffed=self.reader.sniffed)
            # the attempts that were over at the last read are taken as they were where their
            # rows are unchanged (model/carried.py): a read recomputes what its new rows touch
            incident.live, incident.carried = True, self.carry.next()
            c2 = time.process_time()
            failed: list[tuple[str, Exception]] = []
            # a detector that raises is told (below) and the others' findings are said
            findings = detect(incident, on_error=lambda name, e: failed.append((name, e)))
            self.failed = failed
            # kept only once both are whole: a look that raised leaves nothing read, and the
            # next reads again (follow's RETRY_S)
            self.incident, self.findings = incident, findings
            self.carry = incident.carried
            self.spent = {"read": c2 - c1, "judge": time.process_time() - c2}
            self.why = why
            if self.pacer is not None:
                # the earliest a stall can be told: the incident's own threshold where it sets one
                self.pacer.quiet_s = float(self.incident.config.detect.get("stall_s") or MIN_STALL_S)
        inc, found = self.incident, self.findings
        out = self._attempts(inc) + self._findings(found) + self._not_starting(inc) + self._failures()
        self.status()  # computed once per read (the status line and the metrics ask at every look)
        if self.pacer is not None:
            self.pacer.spent(time.process_time() - c0, read=why is not None)
        self.looks += 1
        return sorted(out, key=lambda a: a.time)

    def status(self) -> list[JobStatus]:
        """Each job's last attempt now: its state, pace and goodput (read off the incident as last
        read: the status line and the metrics endpoint ask at every look, the folder is read
        far less often)."""
        inc = self.incident
        if inc is None:
            return []
        if self._status[0] is not inc:
            self._status = (inc, self._status_of(inc))
        return self._status[1]

    def _status_of(self, inc: Incident) -> list[JobStatus]:
        att = attempts(inc)
        if att.empty:
            return []
        st, u = states(inc), unit(inc)
        pace = pace_rows(inc)
        parts = ledger_parts(inc)
        out = []
        for job, runs in att.groupby("job", sort=False):
            a = runs.iloc[-1]
            mine = st[st["attempt"] == a["attempt"]]
            state = str(mine["state"].iloc[-1]) if len(mine) else "starting"
            if state == "starting" and pd.notna(a["first_step"]):
                state = "training"  # its one step line so far: no stretch of training yet in the states
            recent = pace[pace["source"].isin(a["sources"])] if len(pace) and a["sources"] else pace.iloc[:0]
            level = float(recent["value"].tail(6).median()) if len(recent) else None
            out.append(JobStatus(job=_job_of(a), state=_live_state(state), pace=level, unit=u,
                                 goodput=_goodput(parts, job)))
        return out

    def _evidence(self, ref) -> str:
        if not isinstance(ref, str):
            return ""
        text = cited_line(self.folder, ref)
        return f"{ref}  {' '.join(text.split())}" if text else ref

    def _told_attempts(self, att: pd.DataFrame) -> list[_Told | None]:
        """For each attempt as the folder reads now, the one announced already that it is (None:
        not announced yet), one each: the one started by the same line (its start's or its
        launch's), else the one with a process of it, else the one of the same job in the same
        second; each then known by what is read now. Not by its name: attempts are numbered in
        start order, and a start read later (a log that names its attempts after its first lines,
        a process listed late) renumbers those after it; nor by its start alone, which a more
        precise signal read later moves (a log's first line after the launch)."""
        rows = [(_job_of(a), a["start"], _start_refs(a), set(a["pids"])) for _, a in att.iterrows()]
        same = (lambda r, t: bool(r[2] & t.refs), lambda r, t: bool(r[3] & t.pids),
                lambda r, t: t.job == r[0] and abs((r[1] - t.start).total_seconds()) < 1)
        found: list[_Told | None] = [None] * len(rows)
        free = list(self.seen.attempts)
        for rule in same:
            for i, r in enumerate(rows):
                if found[i] is None:
                    t = next((t for t in free if rule(r, t)), None)
                    if t is not None:
                        found[i] = t
                        free.remove(t)
        for r, t in zip(rows, found, strict=True):
            if t is not None:
                t.job, t.start, t.refs, t.pids = r
        return found

    def _attempts(self, inc: Incident) -> list[Announcement]:
        out = []
        att = attempts(inc)
        self._named = {}  # each attempt's name as read now -> the attempt as told
        for (_, a), told in zip(att.iterrows(), self._told_attempts(att), strict=True):
            name, job = str(a["attempt"]), _job_of(a)
            if told is None:
                told = _Told(job, a["start"], _start_refs(a), set(a["pids"]))
                self.seen.attempts.append(told)
                out.append(Announcement(a["start"], job, "attempt_started",
                                        f"attempt {name} started by {a['by']}"
                                        + (f": {a['command']}" if isinstance(a["command"], str) else ""),
                                        self._evidence(a["start_ref"])))
            self._named[name] = told
            if pd.notna(a["first_step"]) and not told.stepped:
                told.stepped = True
                out.append(Announcement(a["first_step"], job, "first_step",
                                        f"first step of attempt {name}, "
                                        f"{duration((a['first_step'] - a['start']).total_seconds())} after its start",
                                        self._evidence(a["first_step_ref"])))
        return out

    def _findings(self, found: pd.DataFrame) -> list[Announcement]:
        out = []
        for _, f in found.iterrows():
            if f["kind"] not in ANNOUNCED or f["id"] in self.seen.findings or pd.isna(f["start"]):
                continue  # (a finding nothing dates has no moment to be told at: inspect and report tell it)
            self.seen.findings.add(f["id"])
            run = f["numbers"].get("run") or f["numbers"].get("run_after")
            # a finding of no one run (a job's throughput over all its ranks) names the run it
            # was read on after, which may change as the ranks' lines arrive: it is still one
            # a finding of one attempt's start or end is that attempt's, told once; others are
            # known by their stretch of time
            once = "start" if f["kind"] in ONCE_A_START else "end" if f["kind"] in ONCE_AN_ATTEMPT else None
            attempt = self._named.get(str(f["numbers"].get("attempt"))) if once else None
            if attempt is not None:
                if once in attempt.told:
                    continue
                attempt.told.add(once)
            elif self._told(f["kind"], f["numbers"].get("run"), f["start"], f["end"]):
                continue
            self.seen.spans.append((f["kind"], f["numbers"].get("run"), f["start"], f["end"]))
            host = f["numbers"].get("host")  # a fleet finding of one host's GPU names no run
            out.append(Announcement(f["start"], str(run or (f"host {host}" if host else None)
                                                    or self._job_at(f["start"], f["within_s"])),
                                    ANNOUNCED[f["kind"]], str(f["title"]),
                                    self._evidence(f["evidence"][0] if f["evidence"] else None)))
        return out

    def _job_at(self, when, within_s: float) -> str:
        """What a finding of no named run is said of: the job of the attempt told as starting
        then (a restart with no run name is "job 3" in its start's line, so in this one too)."""
        slack = pd.Timedelta(seconds=float(within_s or 0) + 1)
        return next((t.job for t in self.seen.attempts if abs(t.start - when) <= slack), "?")

    def _failures(self) -> list[Announcement]:
        """A detector that raised on the last read, said once for each error (the next reads may
        raise it again: a bug in it, or evidence it cannot take)."""
        out = []
        for name, e in self.failed:
            why = f"{name} failed ({type(e).__name__}: {e}); the other detectors' findings are told"
            if why not in self.seen.errors:
                self.seen.errors.add(why)
                out.append(Announcement(self.now(), "watch", "watch_error", why))
        return out

    def _told(self, kind: str, run, start, end) -> bool:
        """Whether a finding of this kind and run over this time was announced already: as the
        files grow a finding's measure moves (a drop's first degraded sample, a stall's length)
        and with it its id; it is still the one the watch told. A relaunch's partial recovery is
        one a run: its samples below the floor are read again as each look brings more (the
        first may rise above it), and the stretch they span moves with them."""
        end = start if pd.isna(end) else end
        for k, r, s, e in self.seen.spans:
            e = s if pd.isna(e) else e
            if k == kind and r == run and (kind in ONCE_A_RUN or (start <= e and s <= end)):  # the same stretch of time
                return True
        return False

    def _overdue(self) -> list[tuple[pd.Series, float, str, float, _Told | None]]:
        """(attempt, budget, where the budget comes from, seconds waited, the attempt as told) of
        each attempt past its start budget with no step, nothing that ended it, and nothing said
        of it yet."""
        inc = self.incident
        if inc is None:
            return []
        att = attempts(inc)
        now = self.now()
        out = []
        for (_, a), told in zip(att.iterrows(), self._told_attempts(att), strict=True):
            if pd.notna(a["first_step"]) or pd.notna(a["end"]) or (told is not None and told.not_starting):
                continue
            budget, why = start_budget(att, a, inc.config.detect.get("start_budget_s"))
            waited = (now - a["start"]).total_seconds()
            if waited >= budget:
                out.append((a, budget, why, waited, told))
        return out

    def _not_starting(self, inc: Incident) -> list[Announcement]:
        """Attempts past their start budget with no step and nothing that ended them."""
        now = self.now()
        out = []
        for a, budget, why, waited, told in self._overdue():
            if told is not None:
                told.not_starting = True
            last = _last_line(inc, a)
            out.append(Announcement(
                now, _job_of(a), "not_starting",
                f"not starting: {_alive(inc, a)}, {_memory(inc, a)}, no step after {duration(waited)} "
                f"(budget {duration(budget)}: {why})" + (f"; last log line at {clock(last['time'])}" if last is not None else ""),
                self._evidence(last["ref"] if last is not None else a["start_ref"])))
        return out


def _goodput(parts: pd.DataFrame, job) -> float | None:
    """The share of the job's GPU time so far that trained at full pace (model/ledger.py)."""
    mine = parts[parts["job"] == job] if len(parts) else parts
    total = float(mine["seconds"].sum()) if len(mine) else 0.0
    return float(mine.loc[mine["class"] == "productive", "seconds"].sum()) / total if total > 0 else None


def _job_of(a: pd.Series) -> str:
    """What an attempt's announcements are said of: its run, else its job ("job 3")."""
    return str(a["run"] or a["job"])


def _start_refs(a: pd.Series) -> set[str]:
    return {r for r in (a["start_ref"], a["launch_ref"]) if isinstance(r, str)}


def _live_state(state: str) -> str:
    """The model's states as the watch's status line names them (a hang reads as a stall)."""
    state = state.replace(" ", "_")  # the model's "never trained"
    return {"hung": "stalled"}.get(state, state)


def _alive(inc: Incident, a: pd.Series) -> str:
    procs = inc.processes[inc.processes["pid"].isin(a["pids"])] if a["pids"] else inc.processes.iloc[:0]
    if procs.empty:
        return "no process of it listed"
    return f"PID {', '.join(str(int(p)) for p in sorted(set(procs['pid'])))} alive"


def _memory(inc: Incident, a: pd.Series) -> str:
    gp = inc.gpu_processes[inc.gpu_processes["pid"].isin(a["pids"])] if a["pids"] else inc.gpu_processes.iloc[:0]
    if len(gp):
        last = gp[gp["time"] == gp["time"].max()]
        return f"{last['used_memory_mib'].sum():,.0f} MiB on its GPUs"
    g = inc.gpus.dropna(subset=["memory_used_mib"])
    if isinstance(a["host"], str) and g["host"].notna().any():
        g = g[g["host"] == a["host"]]  # a folder of several hosts: the GPUs of its own
    if g.empty:
        return "no GPU samples"
    last = g[g["time"] == g["time"].max()]
    return f"{last['memory_used_mib'].sum():,.0f} MiB on the GPUs"


def _last_line(inc: Incident, a: pd.Series) -> pd.Series | None:
    """The attempt's latest line in its own sources (its log), with its ref."""
    if not a["sources"]:
        return None
    rows = pd.concat([df.loc[df["source"].isin(a["sources"]) & df["ref"].notna(), ["time", "ref"]]
                      for df in (inc.events, inc.metrics) if len(df)], ignore_index=True)
    rows = rows.dropna(subset=["time"])
    return None if rows.empty else rows.loc[rows["time"].idxmax()]


def follow(watch: Watch, sinks, *, poll_s: float = 2.0, stop: threading.Event | None = None,
           log=None) -> None:
    """Look at the folder whenever a file changes (file events where the platform gives them,
    else every `poll_s`), send what is new to `sinks`, until `stop` is set."""
    stop = stop or threading.Event()
    woken = threading.Event()
    observer = _file_events(watch.folder, woken)
    retry, told = RETRY_S, None
    try:
        while not stop.is_set():
            try:
                said, failed = watch.look(), False
                retry, told = RETRY_S, None
            except Exception as e:  # noqa: BLE001 - see RETRY_S; the error is said, not hidden
                why = f"{type(e).__name__}: {e}"
                said = [] if why == told else [Announcement(
                    pd.Timestamp.now(tz="UTC"), "watch", "watch_error",
                    f"reading the folder failed ({why}); trying again, first in {duration(retry)}")]
                failed, told = True, why
            for a in said:
                sinks.announce(a)
                if log is not None:
                    # when it was said, then what: the record tells each announcement's delay
                    log.write(f"{pd.Timestamp.now(tz='UTC'):%Y-%m-%dT%H:%M:%S.%fZ}  {a.redacted().line(None)}\n")
                    log.flush()
            sinks.status(watch.status())
            if failed:
                stop.wait(retry)  # file events do not cut it short
                retry = min(2 * retry, RETRY_MAX_S)
                continue
            began = time.monotonic()
            woken.wait(poll_s)  # a file event wakes it early; the poll catches the silent starts
            woken.clear()
            # a stream written many times a second wakes it at most this often
            stop.wait(max(0.0, began + MIN_GAP_S - time.monotonic()))
    finally:
        if observer is not None:
            observer.stop()


def _file_events(folder: Path, woken: threading.Event):
    """A watchdog observer that sets `woken` on any change under `folder`; None where watchdog
    is not installed or the platform refuses (inotify limits): polling alone then."""
    try:
        from watchdog.events import FileSystemEventHandler  # optional: polling works without it
        from watchdog.observers import Observer
    except ImportError:
        return None

    class _Wake(FileSystemEventHandler):
        def on_any_event(self, event):
            if not str(event.src_path).endswith(WATCH_LOG):
                woken.set()

    observer = Observer()
    try:
        observer.schedule(_Wake(), str(folder), recursive=True)
        observer.start()
    except OSError:
        return None
    return observer
