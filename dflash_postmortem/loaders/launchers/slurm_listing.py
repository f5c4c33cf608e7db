"""Slurm's listings of jobs: `sacct` (its fixed-width table or `-P`/`-p` with `|`), `squeue`
(also `-l` with the time it ran, and `-o` formats), and job records of `Key=Value` fields
(`scontrol show job`, and the job-completion log `jobcomp/filetxt` writes, one record a line,
where a requeued run's record is left PENDING with the run's end).

A job's rows become what happened to it: `attempt_start` at its start, `attempt_end` at its end
(the state, who cancelled it, the exit code and the signal of `ExitCode=0:15`), and a
`timeout` (TIMEOUT: its time limit) or an `oom_kill` (OUT_OF_MEMORY) at its end. A step's rows
(`123.batch`, `123.0`) are its processes ending: `exit`, `killed` (a signal, a cancellation) or
`oom_kill`; the `extern` step is Slurm's own and gives nothing. The attempt is the record's
`Restarts=`, or, where `sacct --duplicates` lists a requeued job more than once, its place in the
listing. `squeue` adds each job's state at the time it ran (`job_state`). Slurm prints local
times without a zone: they are read in the incident's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ...clock import align
from ...incident import Incident, from_frames
from ...load_report import FileReport
from .. import registry
from ..registry import LoadContext
from . import slurm

SACCT, SQUEUE, RECORDS = "slurm-sacct", "slurm-squeue", "slurm-job-records"
_LOOK = 12  # a listing starts within this many lines (a pasted prompt and command may come first)
_RULE = re.compile(r"^ *-+(?: +-+)* *$")
_SQUEUE_TIME = re.compile(r"^\w{3} \w{3} +\d{1,2} \d\d:\d\d:\d\d \d{4}$")  # `squeue -l`: Thu Dec 16 09:31:53 2021
_RECORD_START = re.compile(r"^\s*JobId=\d+\b")
_FIELD = re.compile(r"(?:^|(?<=\s))(?P<key>[A-Za-z][\w/:.]*)=")
_STEPS = ("batch", "extern", "interactive")
_SACCT_KEYS = {"state", "exitcode", "jobname", "start", "end", "elapsed", "nodelist", "partition", "alloccpus"}
_SQUEUE_KEYS = {"ST", "STATE"}
BEFORE = "text before the listing"
BLANK = "blank line"


@dataclass
class Job:
    """One row of a listing (a job or one of its steps), as Slurm named it."""

    line: int
    text: str
    job: str | None = None
    step: str | None = None
    state: str | None = None
    by: str | None = None  # who cancelled it (`CANCELLED by 1000`)
    exit_code: int | None = None
    signal: str | None = None
    start: str | None = None
    end: str | None = None
    host: str | None = None
    nodes: str | None = None
    attempt: int | None = None
    limit_ms: int | None = None
    reason: str | None = None  # scontrol's Reason=


def _listing(path: Path, ctx: LoadContext, fmt: str) -> tuple[FileReport, list[str]]:
    """The file's report and its lines (a last line without its newline is a line)."""
    rep = ctx.report(path, fmt)
    data = Path(path).read_bytes().decode("utf-8", "replace").replace("\r\n", "\n")
    lines = data.split("\n")
    lines = lines[:-1] if data.endswith("\n") else lines
    rep.read = len(lines)
    return rep, lines


def _head_lines(head: bytes) -> list[str]:
    return [ln for ln in head.decode("utf-8", "replace").splitlines()[:_LOOK * 4] if ln.strip()][:_LOOK]


# -- sacct -------------------------------------------------------------------------------------
def _sacct_names(line: str) -> list[str] | None:
    """The field names of a sacct header line, or None."""
    names = [n.strip() for n in (line.split("|") if "|" in line else line.split())]
    if names and names[-1] == "":
        names = names[:-1]  # `-p` ends every line with a `|`
    lower = {n.lower() for n in names}
    if not lower & {"jobid", "jobidraw"} or not lower & _SACCT_KEYS:
        return None
    return names


def sniff_sacct(path: Path, head: bytes) -> float:
    lines = _head_lines(head)
    for i, line in enumerate(lines):
        if _sacct_names(line) is not None and ("|" in line or (i + 1 < len(lines) and _RULE.match(lines[i + 1]))):
            return 0.9
    return 0.0


@registry.format(SACCT, sniff=sniff_sacct, doc="Slurm's sacct listing (fixed-width or -P/-p): jobs and steps, states, exit codes, times")
def load_sacct(path: Path, ctx: LoadContext) -> Incident:
    rep, lines = _listing(path, ctx, SACCT)
    jobs: list[Job] = []
    columns: list[tuple[str, int, int | None]] | None = None  # (name, start, end) of a fixed-width table
    names: list[str] | None = None  # of a `|` table
    i = 0
    while i < len(lines):
        n, line = i + 1, lines[i]
        header = _sacct_names(line)
        if header is not None and "|" in line:
            names, columns = header, None
            rep.parsed += 1
        elif header is not None and i + 1 < len(lines) and _RULE.match(lines[i + 1]):
            columns = _columns(line, lines[i + 1])
            names = None
            rep.parsed += 2
            i += 1
        elif not line.strip():
            rep.skip(n, BLANK)
        elif names is None and columns is None:
            rep.skip(n, BEFORE)
        else:
            fields = _pipe_fields(line, names) if names is not None else _fixed_fields(line, columns)
            job = _sacct_job(n, line, fields) if fields is not None else None
            if job is None:
                rep.skip(n, "not a sacct row (no job id in its JobID column)")
            else:
                jobs.append(job)
                rep.parsed += 1
        i += 1
    _number_requeues(jobs)
    return _frames(jobs, rep, ctx, "sacct")


def _columns(header: str, rule: str) -> list[tuple[str, int, int | None]]:
    """Each column's name and where its values lie: the rule's dashes (a value may run past them
    up to the next column's: a long state, a wide node list). The names are the header's words
    in order, whether or not a paste kept them above their dashes."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    names = header.split()
    if len(names) != len(spans):
        names = [header[a:b].strip() for a, b in spans]
    return [(name, a, spans[k + 1][0] if k + 1 < len(spans) else None) for k, (name, (a, _)) in enumerate(zip(names, spans, strict=True))]


def _pipe_fields(line: str, names: list[str]) -> dict[str, str] | None:
    values = line.split("|")
    if len(values) == len(names) + 1 and values[-1] == "":
        values = values[:-1]
    return dict(zip((n.lower() for n in names), values, strict=True)) if len(values) == len(names) else None


def _fixed_fields(line: str, columns) -> dict[str, str]:
    return {name.lower(): line[a:b].strip() for name, a, b in columns}


def _sacct_job(n: int, line: str, f: dict[str, str]) -> Job | None:
    job, step = slurm.job_and_step(f.get("jobid") or f.get("jobidraw") or "")
    if job is None:
        return None
    state, by = slurm.state(f.get("state", ""))
    code, signal = slurm.exit_code(f.get("exitcode", ""))
    nodes = f.get("nodelist", "").strip() or None
    return Job(line=n, text=line.strip(), job=job, step=_full_step(step), state=state, by=by, exit_code=code,
               signal=signal, start=slurm.time_text(f.get("start", "")), end=slurm.time_text(f.get("end", "")),
               host=slurm.single_host(nodes or ""), nodes=nodes, limit_ms=slurm.duration_ms(f.get("timelimit", "")))


def _full_step(step: str | None) -> str | None:
    """A step name a fixed-width listing cut (`bat+`) is the named step it begins."""
    if step is None or not step.endswith(slurm.TRUNCATED):
        return step
    found = [s for s in _STEPS if s.startswith(step[:-1])]
    return found[0] if len(found) == 1 else step


def _number_requeues(jobs: list[Job]) -> None:
    """`sacct --duplicates` (and the completion log) list each run of a requeued job: their order
    is the attempt."""
    seen: dict[str, int] = {}
    for job in jobs:
        if job.step is None:
            seen[job.job] = seen.get(job.job, -1) + 1
    twice = {j for j, n in seen.items() if n > 0}
    count: dict[str, int] = {}
    for job in jobs:
        if job.job in twice:
            if job.step is None:
                count[job.job] = count.get(job.job, -1) + 1
            job.attempt = count.get(job.job)


# -- squeue ------------------------------------------------------------------------------------
def _squeue_names(line: str) -> list[str] | None:
    names = line.split()
    return names if names and names[0] == "JOBID" and _SQUEUE_KEYS & set(names) and len(names) >= 3 else None


def sniff_squeue(path: Path, head: bytes) -> float:
    return 0.9 if any(_squeue_names(line) for line in _head_lines(head)) else 0.0


@registry.format(SQUEUE, sniff=sniff_squeue, doc="Slurm's squeue listing (default, -l, -o): each job's state when it ran")
def load_squeue(path: Path, ctx: LoadContext) -> Incident:
    rep, lines = _listing(path, ctx, SQUEUE)
    rows: list[dict] = []
    names: list[str] | None = None
    now: str | None = None  # `squeue -l` prints the time it ran first
    for n, line in enumerate(lines, 1):
        stamp = line.strip()
        if _SQUEUE_TIME.match(stamp):
            now = pd.to_datetime(stamp, format="%a %b %d %H:%M:%S %Y").isoformat()
            rep.parsed += 1
        elif (header := _squeue_names(line)) is not None:
            names = header
            rep.parsed += 1
        elif not stamp:
            rep.skip(n, BLANK)
        elif names is None:
            rep.skip(n, BEFORE)
        elif (found := _squeue_row(n, line, names, now)):
            rows.extend(found)
            rep.parsed += 1
        else:
            rep.skip(n, "not a squeue row")
    if now is None and rows:
        rep.assume("the listing does not say when it ran (squeue -l does): job states have no time")
    return _frame(rows, rep, ctx)


def _squeue_row(n: int, line: str, names: list[str], now: str | None) -> list[dict]:
    values = line.split(None, len(names) - 1)
    if len(values) != len(names):
        return []
    f = dict(zip(names, values, strict=True))
    job, step = slurm.job_and_step(f["JOBID"])
    state, _ = slurm.state(f.get("ST") or f.get("STATE") or "")
    if job is None or state is None:
        return []
    where = f.get("NODELIST(REASON)", "")
    reason = where[1:-1] if where.startswith("(") and where.endswith(")") else None
    elapsed = slurm.duration_ms(f.get("TIME", ""))
    base = dict(line=n, message=line.strip(), job=job, step=step, state=state, by="slurm", pattern="squeue",
                host=slurm.single_host(where) if reason is None else None)
    rows = [dict(base, time=now, kind="job_state", reason=reason, elapsed_ms=elapsed)]
    start = slurm.time_text(f.get("START_TIME", ""))
    if state in ("RUNNING", "COMPLETING") and start and not start.startswith("N/A"):
        rows.append(dict(base, time=start, kind="attempt_start"))
    elif state in ("RUNNING", "COMPLETING") and now is not None and elapsed is not None:
        began = (pd.Timestamp(now) - pd.Timedelta(milliseconds=elapsed)).isoformat()
        rows.append(dict(base, time=began, kind="attempt_start", time_approx=True))
    return rows


# -- scontrol show job, the job-completion log ----------------------------------------------------
def sniff_records(path: Path, head: bytes) -> float:
    lines = _head_lines(head)
    return 0.9 if any(_RECORD_START.match(line) for line in lines) and b"JobState=" in head else 0.0


@registry.format(RECORDS, sniff=sniff_records,
                 doc="Slurm job records of Key=Value fields: scontrol show job, the jobcomp/filetxt log")
def load_records(path: Path, ctx: LoadContext) -> Incident:
    rep, lines = _listing(path, ctx, RECORDS)
    jobs: list[Job] = []
    record: list[tuple[int, str]] = []

    def close() -> None:
        if record:
            job = _record_job(record)
            jobs.append(job)
            rep.parsed += len(record)
            record.clear()

    for n, line in enumerate(lines, 1):
        if _RECORD_START.match(line):
            close()
            record.append((n, line))
        elif not line.strip():
            close()
            rep.skip(n, BLANK)
        elif record and line[:1] in (" ", "\t") and _FIELD.search(line):
            record.append((n, line))
        else:
            close()
            rep.skip(n, BEFORE if not jobs else "not a field line of a job record")
    close()
    _number_requeues(jobs)  # the completion log has a record per run of a requeued job
    return _frames(jobs, rep, ctx, "scontrol")


def _fields(text: str) -> dict[str, str]:
    found = list(_FIELD.finditer(text))
    return {m.group("key"): text[m.end(): found[k + 1].start() if k + 1 < len(found) else len(text)].strip()
            for k, m in enumerate(found)}


def _record_job(record: list[tuple[int, str]]) -> Job:
    f = _fields(" ".join(line.strip() for _, line in record))
    job = f.get("JobId")
    if f.get("ArrayJobId") and f.get("ArrayTaskId", "").isdigit():
        job = f"{f['ArrayJobId']}_{f['ArrayTaskId']}"
    elif f.get("HetJobId") and f.get("HetJobOffset", "").isdigit():
        job = f"{f['HetJobId']}+{f['HetJobOffset']}"
    state, by = slurm.state(f.get("JobState", ""))
    if state == "PENDING" and "JobName" not in f and slurm.time_text(f.get("EndTime", "")):
        state = "REQUEUED"  # the completion log's record of a run that was requeued: pending again, with an end
    code, signal = slurm.exit_code(f.get("ExitCode", ""))
    restarts = f.get("Restarts", "")
    nodes = f.get("NodeList") or None
    reason = f.get("Reason")
    return Job(line=record[0][0], text="\n".join(line.rstrip() for _, line in record), job=job, state=state, by=by,
               exit_code=code, signal=signal, start=slurm.time_text(f.get("StartTime", "")),
               end=slurm.time_text(f.get("EndTime", "")), host=f.get("BatchHost") or slurm.single_host(nodes or ""),
               nodes=nodes, attempt=int(restarts) if restarts.isdigit() else None,
               limit_ms=slurm.minutes_ms(f.get("TimeLimit", "")),
               reason=reason if reason and reason != "None" else None)


# -- what the rows say -------------------------------------------------------------------------
def _outcome(job: Job, pattern: str) -> list[dict]:
    """A job's start and end, or a step's processes ending, as events (times as printed)."""
    base = dict(line=job.line, message=job.text, job=job.job, step=job.step, attempt=job.attempt, host=job.host,
                nodes=job.nodes, state=job.state, by="slurm", pattern=pattern)
    ended = job.state in slurm.ENDED
    end = dict(base, time=job.end, exit_code=job.exit_code, signal=job.signal)
    if job.step is None:
        rows = []
        if job.start and job.state != "PENDING":  # a pending job's StartTime is a forecast
            rows.append(dict(base, time=job.start, kind="attempt_start"))
        if ended:
            reason = " ".join(filter(None, (job.state, f"by {job.by}" if job.by else None,
                                            f"({job.reason})" if job.reason else None)))
            rows.append(dict(end, kind="attempt_end", reason=reason))
        if job.state == "TIMEOUT":
            rows.append(dict(end, kind="timeout", what="slurm time limit", timeout_ms=job.limit_ms))
        elif job.state == "OUT_OF_MEMORY":
            rows.append(dict(end, kind="oom_kill"))
        return rows
    if not ended or job.step == "extern":
        return []
    if job.state == "OUT_OF_MEMORY":
        return [dict(end, kind="oom_kill")]
    if job.signal or job.state == "CANCELLED":
        return [dict(end, kind="killed")]
    return [dict(end, kind="exit")]


def _frames(jobs: list[Job], rep: FileReport, ctx: LoadContext, pattern: str) -> Incident:
    rows: list[dict] = []
    quiet = 0
    for job in jobs:
        found = _outcome(job, pattern)
        rows.extend(found)
        quiet += not found
    if quiet:
        rep.notes.append(f"{quiet} rows say nothing happened yet or only Slurm's own step (pending, running, extern)")
    if rows and not any(r.get("time") for r in rows):
        rep.assume("the listing has no Start/End times: its events have no time")
    return _frame(rows, rep, ctx)


def _frame(rows: list[dict], rep: FileReport, ctx: LoadContext) -> Incident:
    if not rows:
        return from_frames(rep)
    events = pd.DataFrame(rows)
    naive = pd.to_datetime(events["time"], format="ISO8601", errors="coerce")
    if naive.notna().any():
        rep.assume(align.zone_assumption(ctx.timezone))
    events["time"] = align.localize(naive, ctx.timezone)
    events["host"] = events["host"].where(events["host"].notna(), ctx.host)
    events["source"] = rep.path
    events["ref"] = [f"{rep.path}:{n}" for n in events.pop("line")]
    for col in ("attempt", "exit_code", "timeout_ms", "elapsed_ms"):
        if col in events.columns:
            events[col] = events[col].astype("Int64")
    return from_frames(rep, events=events)
