"""The launcher job and attempt of every row of a training log, read from the launchers' own
lines in file order, and the events those lines imply beyond their own.

- torchrun's agent names its job (`run_id : ...` in its launch configs, the rendezvous it
  joined, the log folder it set), starts an attempt (`Starting worker group`, its restart count from the rendezvous
  result just before), and ends it: the first of a worker's failure (`failed (exitcode: 1)
  local_rank: 0 (pid: 123)`), `Worker group FAILED. 3/3 attempts left; will restart worker
  group`, the death signal the agent received, a ChildFailedError table's root cause, or
  `worker group successfully finished` is the attempt's `attempt_end` (a worker's failure and a
  table's root cause are also that process's `exit`); the agent's restart line after an
  attempt already ended is `elastic_restart`.
- Slurm lines name their job (`*** JOB 123 ON node CANCELLED AT ... ***`, `Detected 1 oom_kill
  event in StepId=123.batch`); srun's task lines name none and take the latest one named, or the
  job of the file's own name (`slurm-123.out`), or the one job the whole file names. A cancellation `DUE TO TIME LIMIT` is also the
  job's `timeout` (its `AT` time is its time: process_log).
- A file in torchrun's `--log-dir` folder is one job, attempt and local rank throughout; an
  error file's path in that folder names the job and attempt the same way (the agent's `Setting
  worker0 reply file to: <log dir>/<run id>_x/attempt_1/0/error.json` of torch 1.9-1.x, a
  ChildFailedError table's `error_file:`).
- Two torchrun launches in one file (a terminal's output through `tee -a`, a relaunch appended to
  the same log): each agent's own lines name its process (`E1204 23:54:27.932000 29310
  .../api.py:1002] failed ...`), and the agent that wrote a ChildFailedError table has given up.
  A worker's failure from another agent's process, or after the table, is a new launch, not a
  restart: its rows carry no attempt number (the new agent's count is not the old one's) until
  its own lines give one.

Rows take the job and attempt in force at their line: torchrun's run id where the file gave one
(else Slurm's job), and the torchrun attempt; Slurm's own events keep their Slurm job.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import PurePath

import numpy as np

from ..launchers.torchrun import LogDirPlace, job_of_run_folder, log_dir_place

# The agent's lines, by pattern name (patterns.EVENT_PATTERNS).
_RUN_ID = ("elastic_run_id", "elastic_rendezvous_joined", "elastic_log_dir")
_LOG_DIR = "elastic_log_dir"
_RESTART_COUNT = "elastic_rendezvous"
_START = "elastic_start_workers"
_WILL_RESTART = ("elastic_will_restart", "elastic_restarting")
_SUCCEEDED = "elastic_succeeded"
_WORKER_FAILED = ("elastic_child_failed", "elastic_child_failed_no_error_file")
_DEATH_SIGNAL = "elastic_death_signal"
_CLOSING_SIGNAL = "elastic_closing_signal"
_ROOT_CAUSE = "elastic_root_cause"
_CHILD_FAILED_TRACEBACK = "ChildFailedError"  # torchrun's own traceback as it gives up
_SLURM_CANCELLED = "slurm_job_cancelled"
# slurmstepd's line for a job, or for one of its steps: where the batch step is already ending when
# the signal reaches it (srun's step died first), the step's line is the only one in the output
_SLURM_CANCELLATIONS = (_SLURM_CANCELLED, "slurm_step_cancelled")
_WRAPPED_REASON = "slurm_cancel_reason_wrapped"
_TIME_LIMIT = "TIME LIMIT"
_TIME_LIMIT_PATTERN = "slurm_time_limit"
_REQUEUE = "REQUEUE"
# The agent's own log lines (torch's Python logger): level, date, time, the agent's process id,
# the Python file (`W1204 23:53:40.529000 29125 .../elastic/multiprocessing/api.py:1028] ...`);
# c10's C++ lines put a thread id there and name a `.cpp` file.
_AGENT_LINE = re.compile(r"^\[?[IWEF]\d{3,4} \d\d:\d\d:\d\d(?:\.\d+)? (?P<pid>\d{1,10}) \S+\.py:\d+\]")


@dataclass
class _Agent:
    """torchrun's agent as its lines show it so far."""

    job: str | None = None
    attempt: int | None = None
    started: bool = False
    ended: bool = False
    next_attempt: int | None = None  # the restart count of the rendezvous just completed

    def see(self, ev: dict, added: list[dict]) -> None:
        pattern = ev.get("pattern")
        place = log_dir_place(ev["error_file"]) if ev.get("error_file") else None
        if place is not None:  # a reply file, a failure's error file: `.../<run id>_x/attempt_1/0/error.json`
            self.job, self.attempt = place.job, place.attempt
        if pattern == _LOG_DIR and ev.get("log_dir"):
            ev["job"] = job_of_run_folder(PurePath(ev["log_dir"]).name)  # `log directory set to: /log/none_ghgeo4qi`
        if pattern in _RUN_ID and ev.get("job"):
            if ev["job"] != self.job:  # another run in the same file
                self.attempt, self.started, self.ended = None, False, False
            self.job = ev["job"]
        elif pattern == _RESTART_COUNT:
            self.next_attempt = ev.get("attempt")
        elif pattern == _START:
            if self.next_attempt is not None:
                self.attempt = self.next_attempt
            else:
                self.attempt = self.attempt + 1 if self.started and self.attempt is not None else (self.attempt or 0)
            self.started, self.ended, self.next_attempt = True, False, None
        elif pattern in _WILL_RESTART:
            left, most = ev.get("restarts_left"), ev.get("max_restarts")
            if left is not None and most is not None and most >= left:
                self.attempt = most - left  # `2/3 attempts left`: this was restart 1
            self._end(ev, reason=ev.get("reason") or ("new nodes" if ev.get("count") else "restart"),
                      instead="elastic_restart")
        elif pattern == _SUCCEEDED:
            self._end(ev, reason="SUCCEEDED", instead="stage")
        elif pattern in _WORKER_FAILED or pattern == _ROOT_CAUSE:
            self._end_with(ev, added, reason="worker failed")
        elif pattern == _DEATH_SIGNAL:
            self._end_with(ev, added, reason=f"agent received {ev.get('signal') or 'a signal'}")

    def restart_unseen(self) -> None:
        """A restart the agent did not log (its INFO lines are off by default): the next attempt."""
        self.attempt = (self.attempt if self.attempt is not None else 0) + 1
        self.started, self.ended, self.next_attempt = True, False, None

    def launched_again(self) -> None:
        """Another torchrun's lines from here on (_unseen_restarts): its job and attempt unknown
        until its own lines name them."""
        self.job, self.attempt, self.started, self.ended, self.next_attempt = None, None, False, False, None

    def _end(self, ev: dict, *, reason: str, instead: str) -> None:
        """This line itself ends the attempt, unless an earlier one did: then it is `instead`."""
        if self.ended:
            ev["kind"] = instead
            return
        ev["reason"] = reason
        self.ended = True

    def _end_with(self, ev: dict, added: list[dict], *, reason: str) -> None:
        """This line (a process's exit, a signal) also means the attempt ended, once per attempt."""
        if self.ended:
            return
        end = {k: v for k, v in ev.items() if k not in ("pattern", "kind")}
        end.update(kind="attempt_end", pattern=f"{ev.get('pattern')}_attempt_end", reason=reason, by="torchrun")
        added.append(end)
        self.ended = True


@dataclass
class Segments:
    """Where each state of the file holds: torchrun's (job, attempt) from a line on, and the lines
    where each Slurm run after a requeue begins."""

    lines: list[int]
    states: list[tuple]
    runs: list[int] | None  # None: the file shows no requeue, so it says nothing of Slurm's attempts

    def at(self, line: int) -> tuple:
        job, attempt = self.states[bisect_right(self.lines, line) - 1]
        return job, (attempt if attempt is not None else self.slurm_attempt(line))

    def slurm_attempt(self, line: int) -> int | None:
        return None if self.runs is None else bisect_right(self.runs, line)

    def of_lines(self, lines: list[int]) -> tuple[list, list]:
        """(jobs, attempts): `at` of every line at once, a metric row each (millions in a long
        log, where a call per row was a quarter of its load)."""
        at = np.asarray(lines, dtype=np.int64)
        k = np.searchsorted(np.asarray(self.lines, dtype=np.int64), at, side="right") - 1
        jobs = np.array([job for job, _ in self.states], dtype=object)[k]
        attempts = np.array([attempt for _, attempt in self.states], dtype=object)[k]
        if self.runs is not None:
            unset = np.array([a is None for a in attempts], dtype=bool)
            slurm = np.empty(len(at), dtype=object)
            slurm[:] = np.searchsorted(np.asarray(self.runs, dtype=np.int64), at, side="right").tolist()
            attempts[unset] = slurm[unset]
        return jobs.tolist(), attempts.tolist()


def annotate(events: list[dict], metric_lines: list[int], place: LogDirPlace | None,
             file_job: str | None) -> Segments:
    """Give each event its job and attempt (and add the events its line implies); returns where
    each state holds, for the metric rows (`assign`)."""
    events[:] = _wrapped_reasons(events)
    agent = _Agent()
    if place is not None:
        agent.job, agent.attempt, agent.started = place.job, place.attempt, True
    named = {ev["job"] for ev in events if ev.get("by") == "slurm" and ev.get("job")}
    # A job's output file holds one job: one the file's Slurm lines name is the whole file's job,
    # lines before that one included; the file's own name (`slurm-123.out`) says the same
    slurm_job = file_job or (next(iter(named)) if len(named) == 1 else None)
    restarts = _unseen_restarts(events)
    if any(same for _, same in restarts) and agent.attempt is None:
        agent.attempt = 0  # the file shows restarts: the attempt before the first is the first
    segments = Segments([0], [(agent.job or slurm_job, agent.attempt)], _slurm_runs(events, metric_lines))
    added: list[dict] = []
    for ev in sorted(events, key=lambda e: e["line"]):
        while restarts and restarts[0][0] <= ev["line"]:
            line, same = restarts.pop(0)
            agent.restart_unseen() if same else agent.launched_again()
            segments.lines.append(line)
            segments.states.append((agent.job or slurm_job, agent.attempt))
        new: list[dict] = []
        if ev.get("by") == "slurm":
            slurm_job = ev.get("job") or slurm_job
            _slurm(ev, slurm_job, new, added)
            for row in (ev, *new):
                row.setdefault("attempt", segments.slurm_attempt(ev["line"]))
        else:
            agent.see(ev, new)
        state = (agent.job or slurm_job, agent.attempt)
        for row in (ev, *new):
            row.setdefault("job", state[0])
            row.setdefault("attempt", segments.at(ev["line"])[1] if state[1] is None else state[1])
            if place is not None and row.get("rank") is None:
                row["rank"] = place.local_rank
        added.extend(new)
        if state != segments.states[-1]:
            segments.lines.append(ev["line"] + 1)
            segments.states.append(state)
    events.extend(added)
    return segments


def _unseen_restarts(events: list[dict]) -> list[tuple[int, bool]]:
    """Lines where an attempt of torchrun's the agent did not log begins, each with whether the
    same agent started it (a restart) or another torchrun did (a new launch in the same file).

    At its default level the agent writes no `Starting worker group`, only each attempt's end
    (`Sending process 534 closing signal SIGTERM`, `failed (exitcode: 1) local_rank: 1 (pid: 535)`).
    A worker failure or signal after an attempt ended that names a process of none of its workers
    is a later attempt's (the agent starts new workers on a restart), and that attempt began on
    the line after the end: its workers' output comes next. Where that line comes from another
    agent's process, or the agent had given up (its ChildFailedError table), another torchrun
    wrote it: its workers' output begins after the last line of the one before (its table and
    its own traceback)."""
    starts, ended, current, end_line = [], None, set(), None
    agent, gave_up, last_own = None, False, None  # the agent's process, whether it gave up, its last line
    for ev in sorted(events, key=lambda e: e["line"]):
        pattern = ev.get("pattern")
        pid = _agent_pid(ev)
        if pattern == _START or pattern in _WILL_RESTART:
            ended, current = None, set()  # the agent says it itself
            agent = pid or agent
            continue
        if ev.get("by") == "torchrun" or pattern == _CHILD_FAILED_TRACEBACK:
            if (pid is None or pid == agent) and not (gave_up and pattern in (*_WORKER_FAILED, _CLOSING_SIGNAL)):
                last_own = ev["line"] + ev.get("lines", 1) - 1
            gave_up |= pattern in (_ROOT_CAUSE, _CHILD_FAILED_TRACEBACK)
        if pattern not in (*_WORKER_FAILED, _CLOSING_SIGNAL) or ev.get("pid") is None:
            continue
        other = agent is not None and pid is not None and pid != agent
        if ended is not None and (other or gave_up):
            starts.append(((last_own if last_own is not None else end_line) + 1, False))
            ended, current, gave_up = None, set(), False
        elif ended is not None and ev["pid"] not in ended:
            starts.append((end_line + 1, True))
            ended, current = None, set()
        agent = pid or agent
        last_own = ev["line"] + ev.get("lines", 1) - 1
        current.add(ev["pid"])
        if pattern in _WORKER_FAILED and ended is None:
            ended, end_line = set(current), ev["line"] + ev.get("lines", 1) - 1
        elif ended is not None:
            ended.add(ev["pid"])
    return starts


def _agent_pid(ev: dict) -> int | None:
    """The process of the torchrun agent that wrote this line, where the line says it."""
    if ev.get("by") != "torchrun":
        return None
    m = _AGENT_LINE.match(ev.get("message") or "")
    return int(m.group("pid")) if m else None


def _slurm_runs(events: list[dict], metric_lines: list[int]) -> list[int] | None:
    """A job's output appended across requeues (`--open-mode=append`) holds each of its runs, the
    one before ended by `CANCELLED ... DUE TO JOB REQUEUE` and the lines slurmstepd and srun
    write as it dies; the next run begins with the first line of the job's own after that. The
    file's runs count from 0; without a requeue in it, the file says nothing of them."""
    requeues = sorted(ev["line"] for ev in events if _requeued(ev))
    if not requeues:
        return None
    own = sorted({*metric_lines, *(ev["line"] for ev in events if ev.get("by") != "slurm")})
    runs = []
    for k, line in enumerate(requeues):
        after = own[bisect_right(own, line):][:1]
        runs.append(min([*after, *requeues[k + 1:k + 2]] or [line + 1]))
    return runs


def _requeued(ev: dict) -> bool:
    return ev.get("pattern") == _SLURM_CANCELLED and _REQUEUE in (ev.get("reason") or "")


def _slurm(ev: dict, job: str | None, added: list[dict], before: list[dict]) -> None:
    """Complete a Slurm line's event; the events its line implies go to `added` (`before`: those
    the file's earlier lines implied)."""
    ev.setdefault("job", job)
    if ev.get("pattern") in _SLURM_CANCELLATIONS:
        reason = ev.get("reason")
        ev["reason"] = reason or "CANCELLED"
        # one time limit per job and moment, whether the job's line, its step's or both say it
        said = any(a.get("pattern") == _TIME_LIMIT_PATTERN and (a.get("job"), a.get("at")) == (ev["job"], ev.get("at"))
                   for a in before)
        if reason and _TIME_LIMIT in reason and not said:
            timeout = {k: v for k, v in ev.items() if k not in ("pattern", "kind", "reason", "step")}
            added.append(dict(timeout, kind="timeout", pattern=_TIME_LIMIT_PATTERN, what="slurm time limit"))


def _wrapped_reasons(events: list[dict]) -> list[dict]:
    """A cancellation line a paste wrapped before its `DUE TO TIME LIMIT ***` takes its reason
    from the next line, which is no event of its own."""
    by_line = {ev["line"]: ev for ev in events if ev.get("pattern") in _SLURM_CANCELLATIONS and not ev.get("reason")}
    kept = []
    for ev in events:
        if ev.get("pattern") == _WRAPPED_REASON and (cancelled := by_line.get(ev["line"] - 1)) is not None:
            cancelled["reason"] = ev.get("reason")
            cancelled["message"] += "\n" + ev["message"]
            cancelled["lines"] = 2
        else:
            if ev.get("pattern") == _WRAPPED_REASON:
                ev["kind"] = "error"  # no cancellation before it: Slurm's words alone
            kept.append(ev)
    return kept


def assign(cols: dict[str, list], segments: Segments, place: LogDirPlace | None) -> None:
    """Give each metric row the job and attempt in force at its line (and its log folder's rank)."""
    cols["job"], cols["attempt"] = segments.of_lines(cols["line"])
    if place is not None:
        cols["rank"] = [place.local_rank if r is None else r for r in cols["rank"]]
