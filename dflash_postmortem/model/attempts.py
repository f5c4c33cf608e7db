"""Attempts: every start of training the evidence shows, whatever showed it, as one frame.

A start shows itself in many ways, and an incident holds some of them: a command typed or traced
(`launch` events: a transcript, a `bash -x` log, shell history), a launcher's, scheduler's or
container runtime's start of an attempt of a job (`attempt_start`), a trainer process in a listing
(ps, top, nvidia-smi's process list, a PID file), a log whose lines begin, a run that begins. The
signals that agree are one attempt:

- a process joins the launch whose program it runs and that came first (within a minute of its
  start, the resolution of ps's START), else the launcher's attempt it was started in (a child of
  the agent, or a row that names the job and attempt);
- a start no listing ties to a process takes the one shown only by its program's name where no
  other start fits: the PID nvidia-smi's process list first shows while it started up (before its
  first step), or a PID a listing names `python` alone while its log was being written;
- a log joins the launch that redirected into it, else the attempt whose process wrote it (a PID
  its lines name) or was alive when its first line was written; a log a restart loop appends to
  holds one start per start-up sequence;
- logs begun together on one host and named alike but for their last number (`train_rank16.log`,
  `train_rank17.log`: one launch starts every rank) are one attempt's, each rank's own;
- a run joins the attempt that logged it (where no process is known, the attempt whose log naming
  the same run was being written when the run's records began: one process writes both);
- an error line starts nothing (a rank's timeout in a log whose earlier lines named no rank), nor
  does what the machine says of its GPUs (an Xid, `[GPU is lost]`): that is a cause of the
  attempts running there;
- what joins nothing is an attempt of its own (a `nohup` start with no transcript is its process,
  or its log).

Each attempt knows who started it (operator, script, agent, scheduler, container, supervisor or
unknown), its job (a launcher's job id; a relaunch by hand is a job of its own unless a run name,
a checkpoint or a log ties it to an earlier one), its processes, ranks, GPUs, logs and runs, its
first training step, its last sign of life, and how it ended, with the lines that show each.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from ..incident import Incident
from ..said import error_text, signal_said
from ..schema import column, ref_line
from ..shell_words import (
    AGENT_RUN,
    PYTHON_RUN,
    SWITCH,
    command_name,
    foreground_log,
    hangup_exposed,
    invocation,
    is_detached,
    is_wrapper_process,
    log_target,
    loop_passes,
    multiplexer_session,
    runs_a_script,
    runs_launcher,
    runs_script,
    shell_words,
    simple_commands,
    without_redirections,
)
from . import carried, computed, gpu_state
from .kills import (
    aimed_at,
    is_group_kill,
    job_reached,
    kill_window,
    listing_at,
    pattern_regex,
    pid_file_written,
    pid_files_read,
)
from .rotation import rotated_from
from .step_lines import step_lines

# ps START has minute resolution: a process started in the minute of a launch may be its own.
STARTUP_SLACK = pd.Timedelta(seconds=60)
# How far a line of a transcript dated only by the `date`s typed may be from its true time.
APPROX_S = 60.0
# How much later than its loop was typed a later pass of a foreground loop may have begun: as
# late as the passes before it ran (its own log's first line or a listing dates it).
LATER_PASS_S = 7 * 86400.0
# A launch through a wrapper (a script, `timeout`, `nohup`) starts its trainer within seconds.
WRAPPER_DELAY = pd.Timedelta(seconds=30)
# A log's first line follows its process's start by the interpreter's start-up and imports.
LOG_SLACK = pd.Timedelta(seconds=120)
# Two sources' times of one start: listings print it to the second.
SAME_START = pd.Timedelta(seconds=2)
# The last sign of life and a terminal line this far apart still belong together (a traceback
# printed after the last listing of a process that then exits).
END_SLACK = pd.Timedelta(seconds=30)
# One rank's first lines in two logs (a launcher's copy and its own file) are written together.
RANK_SLACK = pd.Timedelta(seconds=5)
# A rank's own file or run says which rank it is (`train_rank16.log`, `node003-rank16`).
_NAMED_RANK = re.compile(r"(?i)(?<![a-z])rank[_-]?(\d+)(?!\d)")
# What the machine says of its GPUs (the kernel's Xid, nvidia-smi's `[GPU is lost]`): never a
# start of training, and a cause for every attempt running on that machine.
MACHINE_FAULTS = ("xid", "gpu_error", "gpu_lost")
# Where two ranks' logs differ: the last number in their paths (`train_rank16.log`, torchrun's
# `attempt_0/1/stdout.log`); two jobs' differ before it too (`slurm-1234-0.out`, `slurm-1235-0.out`).
_RANK_NUMBER = re.compile(r"\d+(?=\D*$)")

COLUMNS = ("attempt", "start", "start_within_s", "start_ref", "launched", "by", "launcher", "program", "job", "job_attempt",
           "host", "command", "script", "flags", "log_path", "launch_ref", "run", "runs", "pids", "ranks", "gpus", "sources",
           "first_step", "first_step_ref", "last_alive", "last_alive_ref", "end", "end_kind", "end_ref",
           "end_message", "exit_code", "signal", "cause_time", "cause_kind", "cause_ref", "cause_message", "cause_rank")
# How long after an attempt's end a supervisor's word that it stops restarting is still about
# that attempt where nothing started it again (supervisord gives up at once: its `startretries`
# are seconds apart)
_GAVE_UP_NEAR = pd.Timedelta(minutes=5)
# Kinds that end an attempt, strongest first: what ended it when several lines say something (a
# kill someone sent before it was gone, then a shell's `Terminated`: the report is the kill's result;
# the trainer's word that an interrupt stops it, then its status 0 or a KeyboardInterrupt's traceback:
# the interrupt is why it ended).
_ENDS = ("redirect_failed", "oom_kill", "oom", "kill_sent", "killed", "attempt_end", "timeout", "nccl_timeout",
         "interrupt", "exit", "traceback", "training_stop", "run_end")
# A start-up after a log's steps, then steps from below them, begins a new process's part of the
# log where the log was quiet this long before it (a process's exit, a relaunch, loading: seconds;
# two ranks writing one log without rank tags interleave their start-ups and steps within one).
RESTART_QUIET = pd.Timedelta(seconds=5)
# Kinds that, after an end in the same log, begin a new start there (a restart appending to it):
# a start-up stage, training beginning, a resume from a checkpoint.
_STARTS = ("stage", "training_start", "resumed")
# A stage that is no start-up: a checkpoint saved is the running trainer's doing (its last words
# after an interrupt: `interrupted at step 709, saving checkpoint`, `saved checkpoint step 709`).
_NOT_START_UP = ("checkpoint_save",)
# An end no line tells (`_gone`), and the cause a shell's own end gives it (`_hung_up`).
GONE = "gone"
HANGUP = "hangup"
# Kinds that say what went wrong: the first of them after the last step is the cause a reader
# names (rank 0's collective timeout, not the agent's "failed" line a second later).
# Who starts an attempt, by the launcher, scheduler or runtime that wrote its start: torchrun's
# agent restarts a worker group, Slurm requeues a job, a container runtime restarts a container.
ROLES = {"torchrun": "agent", "deepspeed": "agent", "accelerate": "agent", "slurm": "scheduler",
         "kubernetes": "container", "docker": "container", "systemd": "supervisor"}
CAUSES = ("oom_kill", "oom", "timeout", "nccl_timeout", "nccl_error", "gpu_error", "gpu_lost", "xid",
           "traceback", "thread_crash", "exception", "killed")
# What a tracking library writes from inside the trainer's process (not a log a launch redirects into).
RECORD_FORMATS = ("tensorboard-events", "wandb-log", "wandb-run", "wandb-events-jsonl", "wandb-history-jsonl",
                  "hf-trainer-state", "lightning-csv", "mlflow-run")
# The frames an attempt is read from (the memo of computed.py is keyed by them).
READS = ("events", "processes", "metrics", "gpu_processes")
# Flags that name where a run keeps its checkpoints (`--output_dir`, `--save-dir`, `--ckpt_dir`, `--out`).
_SAVE_DIR = re.compile(r"--(?:output|out|save|ckpt|checkpoint|checkpoints)(?:[-_](?:dir|path|root))?")
# Flags that name the checkpoint a start resumes from (`--resume ckpt/last.pt`, `--resume_from_checkpoint`,
# `--resume-from`, `--load`, `--init-from`, `--restore`).
_RESUME_FROM = re.compile(r"--(?:resume|resume[-_]from(?:[-_]checkpoint)?|load|init[-_]from|restore(?:[-_]from)?)")


def attempts(inc: Incident) -> pd.DataFrame:
    """One row per attempt, in start order (COLUMNS)."""
    return computed.cached(inc, "attempts", READS,
                           lambda: _Assembly(inc).build())


# The ends of an attempt that stopped by itself: its stop line, its run's end (a status of 0 too)
CLEAN_ENDS = ("training_stop", "run_end")


def finished(a: pd.Series) -> bool:
    """Whether an attempt stopped by itself, cleanly: its stop line, its run's end, a status of 0."""
    if a["end_kind"] in CLEAN_ENDS:
        return not ended_badly(a) and not open_ended(a)
    return a["end_kind"] == "exit" and a["exit_code"] == 0


# A run's record that stops with no last word (loaders/wandb: "ended without exit record", "the
# wandb log stops here without a finish line"): killed, crashed hard, or copied while it ran.
_NO_LAST_WORD = re.compile(r"\bwithout (?:an? )?(?:exit record|finish line)\b")


def open_ended(a: pd.Series) -> bool:
    """Whether a run's end is only where its record stops (no exit record, no finish line): no
    clean stop, nor a death its record tells; as an end no line tells (GONE), what else the
    evidence says of it decides."""
    return a["end_kind"] == "run_end" and bool(_NO_LAST_WORD.search(str(a["end_message"] or "")))


# What a run's record says of an end that was no success: MLflow's FAILED and KILLED, a runs
# table's `crashed`, `failed`, `killed`.
_BAD_STATE = re.compile(r"\b(?:FAILED|KILLED|crashed|failed|killed|did not finish)\b")


def ended_badly(a: pd.Series) -> bool:
    """Whether a run's end (its record's end, `run_end`) says it did not succeed: a status other
    than 0 (wandb's exit record of a run whose trainer raised says `exit_code: 1`), else the state
    its record gives."""
    code = a["exit_code"]
    if code is not None and not pd.isna(code):
        return code != 0
    return bool(_BAD_STATE.search(str(a["end_message"] or "")))


def stopped_cleanly_near(inc: Incident, when) -> pd.Timestamp | None:
    """The end of an attempt that stopped by itself, cleanly, within END_SLACK of `when` (where a
    stall ended: the silence was the run's last, not a wait to recover from), else None."""
    att = attempts(inc)
    ended = att[(att["end"] - when).abs() <= END_SLACK]
    clean = ended[ended.apply(finished, axis=1)] if len(ended) else ended
    return clean["end"].iloc[0] if len(clean) else None


def came_up_after(inc: Incident, after) -> pd.Series | None:
    """The first attempt started after `after` that reached a training step, else None."""
    att = attempts(inc)
    later = att[(att["start"] > after) & att["first_step"].notna()]
    return later.iloc[0] if len(later) else None


def trainer_pids(inc: Incident, attempt: pd.Series) -> list[int]:
    """The attempt's PIDs that ran the trainer itself: those holding GPU memory, else those a
    listing shows running no launcher's agent or wrapper (accelerate, torchrun's agent, a shell
    -c), else every one."""
    pids = list(attempt["pids"])
    gp = inc.gpu_processes
    held = [p for p in pids if len(gp) and (gp["pid"] == p).any()]
    if held:
        return held
    procs = inc.processes[inc.processes["pid"].isin(pids)] if len(inc.processes) else inc.processes
    agents = set(procs["pid"][~_runs_trainer(procs)].astype(int)) if len(procs) else set()
    return [p for p in pids if p not in agents] or pids


def supervisor_gave_up(inc: Incident, attempt: pd.Series) -> dict | None:
    """A supervisor's word, once the attempt ended and before the next start of its program (of
    any, where no supervisor named it), that it stops restarting it: supervisord's `gave up:
    train entered FATAL state` naming the program it said it started as the attempt, systemd's
    `Start request repeated too quickly.`, a loop's `giving up after 3 attempts` where the
    attempt's own words are. Why the run stayed down, or why the operator started it by hand:
    its time, its words as quoted, its line."""
    ev = inc.events
    if pd.isna(attempt["end"]) or "kind" not in ev.columns:
        return None
    att = attempts(inc)
    later = att[att["start"] > attempt["start"]]
    if isinstance(attempt["program"], str):
        later = later[later["program"] == attempt["program"]]
    until = later["start"].min() if len(later) else attempt["end"] + _GAVE_UP_NEAR
    said = ev[ev["kind"] == "gave_up"]
    said = said[(said["time"] >= attempt["end"] - END_SLACK) & (said["time"] <= until)]
    program = column(said, "program")
    named = (program == attempt["program"]).fillna(False).astype(bool) if isinstance(attempt["program"], str) else False
    # (an unnamed word is about the start where it is written where the start's own words are: its
    # logs, or where its supervisor said it started it or how its PID ended)
    spoke = ev.loc[column(ev, "pid").isin(list(attempt["pids"] or [])).fillna(False).astype(bool), "source"]
    start = ref_line(attempt["start_ref"]) if isinstance(attempt["start_ref"], str) else None
    places = set(attempt["sources"] or []) | set(spoke.dropna()) | ({start[0]} if start else set())
    said = said[named | (program.isna() & said["source"].isin(places))]
    if said.empty:
        return None
    first = said.iloc[0]
    return {"time": first["time"], "said": error_text(first["message"], "gave_up"), "ref": first["ref"]}


def _runs_trainer(procs: pd.DataFrame) -> pd.Series:
    """The listed processes that run no launcher's agent or wrapper (accelerate, torchrun's
    agent, a shell -c): those that may be the trainer."""
    return procs["command"].map(lambda c: not (isinstance(c, str) and (AGENT_RUN.search(c) or is_wrapper_process(c))),
                                na_action=None).astype(bool)


def kill_reach(inc: Incident) -> dict[int, set[int]]:
    """Each `kill_sent` event (by its row in `inc.events`) -> the PIDs it reached: what it aimed at
    (kills.aimed_at), and the processes of the attempts its group or session held."""
    def build() -> dict[int, set[int]]:
        att = attempts(inc)
        started = [_Started(c, frozenset(p), s, r) for c, p, s, r in
                   zip(att["command"], att["pids"], att["start"], att["launch_ref"], strict=True)]
        sent = inc.events[inc.events["kind"] == "kill_sent"]
        # a `scancel` reaches the processes of the attempts of the job it names
        jobs = [(j, set(p)) for j, p in zip(att["job"], att["pids"], strict=True)]
        return {i: (aimed := aimed_at(inc, r)) | reached(r, aimed, started, listing_at(inc, r))
                | {p for j, ps in jobs if job_reached(r.get("target_job"), j) for p in ps}
                for i, r in sent.iterrows()}
    return computed.cached(inc, "kill reach", READS, build)


@dataclass(frozen=True)
class _Started:
    """What a kill's reach is judged on, of one attempt: its command, PIDs, start, launch line."""

    command: str | None
    pids: frozenset[int]
    start: pd.Timestamp | None
    launch_ref: str | None


def reached(kill: pd.Series, aimed: set[int], started: list[_Started], listed: bool = False) -> set[int]:
    """The attempts' processes a kill reached beyond the PIDs it named. A kill of a process group
    (`kill -- -PGID`, `pkill -g`) reaches the processes started in that group. A pattern where
    no listing was taken while it ran (`listed` false: `pkill -f PATTERN`) reaches the starts
    whose command it matches. Where no listing
    gives PGIDs to say which those are, a launch typed in a shell and not detached from it (no
    setsid, disown, tmux...) started its processes in the shell's group, whose leader came first:
    its PIDs above the group's number, started before the kill, are aimed at (`_end` takes the
    kill as its end only if they were gone after it). A kill of a tmux or screen session reaches
    what was started in that session."""
    session = kill.get("target_session")
    before = [a for a in started if a.pids and a.start is not None and pd.notna(a.start) and a.start <= kill["time"]]
    pattern = kill.get("target_pattern")
    if isinstance(pattern, str) and pattern and not aimed and not listed:
        # `pkill -f PATTERN` matches command lines: with no listing taken while it ran to resolve
        # it, the starts whose typed command (its redirections are the shell's, not the
        # process's) it matches, started by the time it ran (its window, where a transcript dates
        # it only by the `date` before it), are what it reached
        until = kill["time"] + pd.Timedelta(seconds=kill_window(kill))
        rx = pattern_regex(pattern)
        return {p for a in started if a.pids and a.start is not None and pd.notna(a.start) and a.start <= until
                and rx.search(without_redirections(a.command or "")) for p in a.pids}
    if isinstance(session, str) and session:
        return {p for a in before if (into := multiplexer_session(a.command or "")) is not None
                and session in ("*", into) for p in a.pids}
    group = kill.get("target_pid")
    if not is_group_kill(kill) or pd.isna(group) or aimed - {int(group)}:
        return set()
    return {p for a in before if a.launch_ref and not is_detached(a.command or "") and min(a.pids) > int(group)
            for p in a.pids}


def _num(v) -> int | None:
    return None if v is None or (not isinstance(v, str) and pd.isna(v)) else int(v)


def _text(v) -> str | None:
    return v if isinstance(v, str) and v else None


# How far a process's start in a listing may fall before the `date` its launch was typed after
# and still be that launch's moment (consider_start).
_START_CLOCK_SLACK = pd.Timedelta(seconds=2)


class _Attempt:
    """One attempt while it is assembled: the signals that joined it."""

    def __init__(self, start, by: str, within: float = 0.0, ref: str | None = None):
        self.start, self.by, self.within, self.start_ref = start, by, within, ref
        self.job = self.job_attempt = self.command = self.script = self.log_path = self.launch_ref = None
        self.host = None
        self.flags: dict = {}
        self.pids: set[int] = set()
        self.ranks: set[int] = set()
        self.sources: dict[str, pd.Timestamp] = {}  # log source -> where this attempt's part of it begins
        self.runs: list[str] = []
        self.until: pd.Timestamp | None = None
        self.floor: pd.Timestamp | None = None  # no start before it (see consider_start)
        self.rank_starts: dict[int, pd.Timestamp] = {}  # each rank's first line
        self.launcher: str | None = None  # the launcher, scheduler or runtime that started it
        self.launched: pd.Timestamp | None = None  # when its launch was typed or traced  # a later start of the same log ends this attempt's part
        # the processes a listing shows running the script it launched (`nohup ./run.sh`: the
        # shell that runs run.sh), whose children are its trainers
        self.wrappers: set[int] = set()
        self.restart_of: _Attempt | None = None  # the attempt it started again (_restarted)
        self.supervised: str | None = None  # the program a supervisor said it started as this (_supervised)
        self.supervised_until: pd.Timestamp | None = None  # when it said it started that program again
        # (script, flags) of its launch and of each of its processes' command lines (_jobs)
        self.invocations: list[tuple] = []
        self.undated_end: str | None = None  # the undated error line that ended it (_undated_end_of)

    def earliest(self) -> pd.Timestamp:
        """The earliest its processes can have begun: its start, or the `date` a command typed
        after it was dated by (`floor`) where its start is a later sign of it (its log's first
        line: the model loaded before it, on the GPU)."""
        return self.floor if self.floor is not None and self.floor < self.start else self.start

    def consider_start(self, when, within: float, ref: str | None) -> None:
        """A signal that shows the start more precisely than what the attempt has (a log's first
        line against ps's minute). Never before `floor`: a command dated by the last `date`
        printed before it ran no earlier than that (a listing dated by an older clock says so);
        a start within `_START_CLOCK_SLACK` before it is that moment (ps's start times count from
        the boot time, which the kernel keeps in whole seconds and which drifts from the wall
        clock: a process typed 0.56 s after a `date` was listed as started 1 s before it)."""
        if when is None or pd.isna(when):
            return
        if self.floor is not None and when < self.floor:
            if self.floor - when > _START_CLOCK_SLACK:
                return
            when = self.floor  # (the same moment, by a clock a little behind: it was no earlier)
        if self.start is None or within < self.within and when <= self.start + pd.Timedelta(seconds=self.within):
            self.start, self.within, self.start_ref = when, within, ref or self.start_ref


def _supervisor_told(ev: pd.DataFrame, a: _Attempt) -> pd.Series:
    """The rows of `ev` that are a supervisor's word on the end of the program it said it started
    as attempt `a` (supervisord's `exited: train (exit status 1; not expected)` names the program,
    not the PID), from its start until the supervisor started that program again."""
    if a.supervised is None or "program" not in ev.columns:
        return pd.Series(False, index=ev.index)
    told = ev["kind"].isin(("exit", "killed")) & (ev["program"] == a.supervised).fillna(False).astype(bool)
    told &= (ev["time"] >= a.start).fillna(False).astype(bool)
    if a.supervised_until is not None:
        told &= (ev["time"] <= a.supervised_until).fillna(False).astype(bool)
    return told


def _merge(record: _Attempt, into: _Attempt) -> None:
    """A record file's attempt joins the start whose process wrote it: its sources, runs and PIDs."""
    for source, begin in record.sources.items():
        into.sources.setdefault(source, begin)
    into.runs += [r for r in record.runs if r not in into.runs]
    into.pids |= record.pids


class _Assembly:
    def __init__(self, inc: Incident):
        self.inc = inc
        self.found: list[_Attempt] = []
        # Processes that joined no start: an attempt of their own once a log shows they trained
        # or tried to (a python process that writes none is not a start of training).
        self.orphans: list[_Attempt] = []
        self._holders: tuple[set[int], dict] | None | bool = False  # (`_gpu_holders`: False until asked)
        self.firsts: dict[str, _Attempt] = {}  # each log's first attempt
        # the attempts a parent process started again after an attempt's own had ended, by
        # (that attempt, the parent's PID): see _restarted
        self.restarts: dict[tuple[int, int], list[_Attempt]] = {}
        ev = inc.events
        self.ev = ev
        self.evidence_end = inc.span()[1]  # the last time anything in the folder was observed
        self.procs = _trainer_processes(inc.processes)
        # each listed process's parent (host, PID -> PID), where a listing names one other than
        # init: the tree a launch's processes grow in
        listed = inc.processes
        self.parent = ({(_text(h), int(pid)): int(pp) for h, pid, pp in zip(column(listed, "host"), listed["pid"], listed["ppid"],
                                                                       strict=True) if pd.notna(pp) and pp > 1}
                       if len(listed) and "ppid" in listed.columns else {})
        # each listed process's command line: whether a parent runs a script (a loop's restarts)
        self.commands = ({(_text(h), int(pid)): str(c) for h, pid, c in zip(column(listed, "host"), listed["pid"],
                                                                          listed["command"], strict=True) if pd.notna(c)}
                         if len(listed) else {})
        # each source's host, where incident.toml or the source names one
        self.hosts = {src: h for df in (inc.metrics, inc.events) if "host" in df.columns and len(df)
                      for src, h in df.dropna(subset=["source", "host"]).drop_duplicates("source")[["source", "host"]]
                      .itertuples(index=False)}
        # each operator's kill with the PIDs it aimed at (PID files, patterns resolved), and the
        # scheduler jobs it cancelled (`scancel 1234`: the job, not a PID, is what it names)
        sent = ev[ev["kind"] == "kill_sent"]
        self.kills = [(i, aimed_at(inc, r)) for i, r in sent.iterrows()]
        self.job_kills = {i: j for i, j in column(sent, "target_job").items() if isinstance(j, str) and j}
        # the PID files each kill read its target from (`kill $(cat run/x.pid)`)
        self.file_kills = [(i, names) for i, e in column(sent, "target_expr").items() if (names := pid_files_read(e))]
        listed = ev[ev["source"].isin(job_listings(inc))] if "job" in ev.columns else ev.iloc[:0]
        self.listed = listed.dropna(subset=["job"])
        # PID files: a start's record of its process, not a log it writes
        self.pid_records = set(ev.loc[ev["kind"] == "pid_file", "source"].dropna())
        self.writers: dict[str, int] = {}  # the sources that name their writer's PID (_logs), and that PID
        self.launcher_ends = _launcher_ends(ev)  # (job, attempt) -> when its launcher said it ended
        # the logs a launcher's agent writes itself (torchrun's own lines: its output, not a rank's)
        self.agent_logs = set(ev.loc[column(ev, "by").isin(["torchrun", "deepspeed", "accelerate"]), "source"].dropna())
        # the files a tracked run's records were read from (a `.wandb` log), not a log of its own
        self.run_records = {info.source for info in inc.runs.values() if info.source}
        # the files a tracking library writes from inside the trainer (TensorBoard's events, a
        # wandb run, a Trainer's state), as the load report read them
        self.record_files = {rep.path for rep in inc.load_report.files if rep.format in RECORD_FORMATS}
        self.machine = ev[ev["kind"].isin(MACHINE_FAULTS)]
        # the launch lines whose redirection the shell could not open (`bash: logs/x.log: No such
        # file or directory`): bash did not run the command; no process and no log of the name it
        # redirected to are its
        self.unopened = set(column(ev[ev["kind"] == "redirect_failed"], "command_ref").dropna())
        # each process listing's last snapshot that listed anything
        self.listed_until = inc.processes.groupby("source")["last_seen"].max().to_dict() if len(inc.processes) else {}
        # each source's first and last line (the times of its first and last rows)
        spans = pd.concat([df.groupby("source")["time"].agg(["min", "max"]) for df in (inc.metrics, ev) if len(df)]
                          or [pd.DataFrame(columns=["min", "max"])]).groupby(level=0)
        self.first_line, self.last_line = spans["min"].min().to_dict(), spans["max"].max().to_dict()

    # ------------------------------------------------------------------ the signals, in turn
    def build(self) -> pd.DataFrame:
        self._launches()
        self._launcher_attempts()
        # A launcher's own logs name their job and attempt (torchrun's --log-dir): the surest
        # sign of each attempt, taken before processes and other logs are matched to them.
        starts = _log_starts(self.inc)
        self._logs(starts, named=True)
        self._launcher_workers()
        self._processes()
        self._logs(starts, named=False)
        self._unstarted_logs(starts)
        self._appended_logs()
        self._rotated_logs()
        self._restarts_logs()
        # A process that wrote no log is not a start of training: a leftover job holding a GPU,
        # a driver script, a tool. It stays in the evidence (the findings cite GPU holders).
        # A launcher's agent under which no worker ever started is a start that never came up
        # (one waiting at rendezvous for nodes that never come), whatever it wrote.
        self.found += [a for a in self.orphans if a.sources or self._lone_agent(a)]
        self._runs()
        return self._frame()

    def _launches(self) -> None:
        """Each command that starts a trainer: in the background or under a launcher (parse_launch),
        in the foreground into a log, or traced by `bash -x` inside a log."""
        ev = self.ev
        rows = ev[ev["kind"] == "launch"]
        cmds = ev[(ev["kind"] == "command") & ev["ref"].notna()]
        typed = cmds.drop_duplicates("ref")
        # (what a recipe runner, `make train`, printed it runs is the command)
        echoed = typed["echoed"] if "echoed" in typed.columns else [None] * len(typed)
        by_ref = {ref: _text(e) or m for ref, e, m in zip(typed["ref"], echoed, typed["message"], strict=True)}
        for _, r in rows.sort_values("time", kind="stable").iterrows():
            command = _text(r.get("loop_pass")) or (by_ref.get(r["ref"], r["message"]) if isinstance(r.get("ref"), str)
                                                    else r["message"])
            traced = pd.notna(r.get("traced")) if "traced" in rows.columns else False
            # a transcript dated only by the `date`s typed places its lines between them: a
            # process's own start time (ps LSTART) may then be the more precise one
            approx = bool(r.get("time_approx")) if pd.notna(r.get("time_approx")) else False
            # how much later it may be: the gap to the transcript's next clock, where it has one
            gap = r.get("time_within_s")
            within = (float(gap) if pd.notna(gap) else APPROX_S) if approx else 0.0
            a = _Attempt(r["time"], "script" if traced else "operator", within, _text(r.get("ref")))
            self._describe(a, str(command), _text(r.get("log_path")))
            a.launch_ref, a.host = _text(r.get("ref")), _text(r.get("host"))
            a.launched, a.floor = r["time"], (r["time"] if approx else None)
            if _num(r.get("pid")) is not None:
                a.pids.add(_num(r.get("pid")))
            self.found.append(a)
        # Foreground commands that run a trainer into a log (`python train.py > run.log`): a start
        # when the log they name is in the incident. Each pass of a foreground loop (`for lr in
        # 1e-4 3e-4; do python train.py --lr $lr > logs/lr-$lr.log; done`) is one, begun when the
        # pass before it ended: no sooner than the loop was typed, dated by its own log or listing.
        launched = {a.launch_ref for a in self.found}
        logs = self._log_names()
        for _, r in cmds.sort_values("time", kind="stable").iterrows():
            if r["ref"] in launched:
                continue
            # (what a recipe runner, `make train`, printed it runs is the command)
            command = _text(r.get("echoed")) or str(r["message"])
            for k, one in enumerate(loop_passes(command) or [command]):
                target = foreground_log(one)
                if not target or PurePosixPath(target).name not in logs:
                    continue
                a = _Attempt(r["time"], "operator", LATER_PASS_S if k else 0.0, r["ref"])
                self._describe(a, one, target)
                a.launch_ref, a.host, a.launched = r["ref"], _text(r.get("host")), r["time"]
                a.floor = r["time"] if k else None
                self.found.append(a)

    def _describe(self, a: _Attempt, command: str, log_path: str | None) -> None:
        script, flags = invocation(command)
        script = script or _script_run(command)
        a.command, a.script, a.flags = command, script, flags
        a.log_path = (log_path or "").strip("'\"") or log_target(command)
        run = flags.get("--run-name") or flags.get("--run_name")
        if run:
            a.runs.append(run)

    def _launcher_attempts(self) -> None:
        """A launcher's own starts (torchrun's worker groups, a scheduler's requeue, a container
        restart): a new attempt of its job, unless it is the launch typed just before it."""
        rows = self.ev[self.ev["kind"] == "attempt_start"].sort_values("time", kind="stable")
        for _, r in rows.iterrows():
            if _text(r.get("by")) == "supervisor" and _num(r.get("pid")) is not None:
                self._supervised(r)
                continue
            job, n = _text(r.get("job")), _num(r.get("attempt"))
            # the same start as another source lists it (scontrol numbers the attempt, sacct does
            # not, both give its second): one attempt; a start of the same job later is a restart
            same = next((a for a in self.found if a.job is not None and a.job == job and (
                (n is not None and a.job_attempt == n) or (None in (a.job_attempt, n)
                                                           and abs(a.start - r["time"]) <= SAME_START))), None)
            if same is not None:
                same.job_attempt = same.job_attempt if same.job_attempt is not None else n
                continue
            typed = next((a for a in reversed(self.found) if a.launch_ref and a.job is None
                          and a.start <= r["time"] <= a.start + LOG_SLACK), None)
            if typed is not None and (n in (None, 0)):
                typed.job, typed.job_attempt = job, n
                continue
            launcher = _text(r.get("by"))
            a = _Attempt(r["time"], ROLES.get(launcher or "", "agent"), 0.0, _text(r.get("ref")))
            a.job, a.job_attempt, a.host, a.launcher = job, n, _text(r.get("host")), launcher
            if typed is not None:
                a.command, a.script, a.flags, a.runs = typed.command, typed.script, typed.flags, list(typed.runs)
            self.found.append(a)

    def _supervised(self, r: pd.Series) -> None:
        """A supervisor's word that it started its program as process N (`started train.py
        (attempt 2/3, pid 812)`, supervisord's `spawned: 'train' with pid 812`): a start whose
        PID is known. The first, just after a launch typed with no trainer of its own yet, is
        that launch's (the operator started the supervisor, which started it); each later one
        is the supervisor's restart of the one before: the same program, writing where it wrote."""
        pid, host, when = _num(r["pid"]), _text(r.get("host")), r["time"]
        if pd.isna(when) or any(pid in a.pids and _same_host(a, host) for a in self.found):
            return  # (the same start in a second copy of its log: the supervisor's stdout and its file)
        program = _text(r.get("program"))
        before = [a for a in self.found if a.supervised == program and _same_host(a, host) and a.start <= when]
        if not before:
            # (a supervisor's log may give only the second its launch was typed in)
            typed = [a for a in self.found if a.launch_ref and a.start - SAME_START <= when <= a.start + LOG_SLACK
                     and not a.pids and _same_host(a, host)]
            if typed:
                first = max(typed, key=lambda a: a.start)
                first.pids.add(pid)
                first.supervised = program
                return
        a = _Attempt(when, "supervisor", 0.0, _text(r.get("ref")))
        if before:
            prev = max(before, key=lambda b: b.start)
            prev.supervised_until = when
            a.command, a.script, a.flags, a.runs = prev.command, prev.script, dict(prev.flags), list(prev.runs)
            a.log_path, a.job, a.restart_of = prev.log_path, prev.job, prev.restart_of or prev
        else:
            a.script = program
        a.host, a.supervised, a.launched = host, program, when
        a.pids.add(pid)
        self.found.append(a)

    def _launcher_workers(self) -> None:
        """A launcher's line that names a worker of an attempt (torchrun's `failed (exitcode: 1)
        local_rank: 1 (pid: 535)`, the signal it sends the others) gives that attempt its PID:
        surer than a listing's parent, which is the same agent for every attempt."""
        ev = self.ev
        if "by" not in ev.columns:
            return
        named = ev[ev["by"].isin(list(ROLES)) & ev["pid"].notna() & ev["attempt"].notna()
                   & ev["kind"].isin(["signal", "exit", "attempt_end"])]
        for _, r in named.iterrows():
            job, n = _text(r.get("job")), _num(r.get("attempt"))
            hit = [a for a in self.found if a.job_attempt == n and (a.job == job or job is None)
                   and (r["source"] in a.sources or a.launcher is not None)]
            if len(hit) == 1:
                hit[0].pids.add(int(r["pid"]))

    def _launch_processes(self) -> None:
        """Each launch of a script (`nohup ./run.sh`, `bash -x train.sh`): the processes a
        listing shows running that script from the launch on (ps may date a start up to a second
        early), its own. What runs under them is the launch's; what a listing shows elsewhere in
        the tree is not, whenever it started (_start_of)."""
        procs = self.inc.processes
        if procs.empty or "ppid" not in procs.columns:
            return
        started = procs["started"].fillna(procs["first_seen"])
        for a in self.found:
            if not (a.launch_ref and a.script):
                continue
            name = PurePosixPath(a.script).name
            python = name.endswith(".py")
            since = a.start - pd.Timedelta(seconds=a.within) - _START_CLOCK_SLACK
            # (as objects: an Arrow string column maps to strings, and a missing command is no bool)
            runs = procs["command"].astype(object).map(lambda c, name=name, python=python: invocation(c)[0] == name
                                                        if python else runs_script(c, name),
                                                        na_action="ignore").fillna(False).astype(bool)
            mine = procs[runs & (started >= since) & (started <= a.start + WRAPPER_DELAY)]
            pids = {int(pid) for h, pid in zip(column(mine, "host"), mine["pid"], strict=True) if _same_host(a, _text(h))}
            if python and not self._starts_programs(pids, name):
                continue  # (a Python script's own process is its trainer)
            a.wrappers |= pids

    def _starts_programs(self, pids: set[int], name: str) -> bool:
        """Whether a listing shows one of `pids` (a launched Python script's processes) as the
        parent of a Python program other than that script: a supervisor written in Python
        (`subprocess.Popen([sys.executable, "train.py", ...])`), not a trainer; its data loader
        workers run its own script (or none, forked)."""
        listed = self.inc.processes
        kids = listed[listed["ppid"].isin(pids)]["command"].dropna().astype(str)
        return any(PYTHON_RUN.search(c + " ") and invocation(c)[0] not in (None, name) for c in kids)

    def _under(self, a: _Attempt, ppid: int | None, host: str | None) -> bool | None:
        """Whether a process whose parent is `ppid` runs under one of the attempt's launch
        processes; None where that cannot be told (no launch process listed, no parent)."""
        if not a.wrappers or ppid is None:
            return None
        for _ in range(16):  # (a shell, a launcher's agent, a wrapper: a few levels at most)
            if ppid in a.wrappers:
                return True
            ppid = self.parent.get((host, ppid))
            if ppid is None:
                return False
        return False

    def _processes(self) -> None:
        """Each trainer process joins the start that made it, else is a start of its own."""
        self._launch_processes()
        procs = self.procs.sort_values("start", kind="stable")
        wrappers = {pid for a in self.found for pid in a.wrappers}
        for _, p in procs.iterrows():
            pid, host = int(p["pid"]), _text(p.get("host"))
            if pid in wrappers:
                continue  # a launch's own process that runs its trainers (a supervisor in Python)
            owner = next((a for a in self.found if pid in a.pids and _same_host(a, host)), None) or self._start_of(p)
            if owner is not None and pid not in owner.pids:
                owner = self._restarted(owner, p) or owner
            if owner is None:
                owner = self._looped(p)
            if owner is None and self._no_gpu_while_watched(p):
                continue  # (a Python program beside the training: a driver script, a notebook, TensorBoard)
            if owner is None:
                owner = _Attempt(p["start"], "unknown", float(p["within"]), _text(p.get("ref")))
                script, flags = invocation(str(p["command"]))
                owner.command, owner.script, owner.flags = str(p["command"]), script, flags
                owner.host = _text(p.get("host"))
                run = flags.get("--run-name") or flags.get("--run_name") or _text(p.get("run"))
                owner.runs += [run] if run else []
                self.orphans.append(owner)
            owner.pids.add(pid)
            if owner.launch_ref is None or owner.within > 0:
                owner.consider_start(p["start"], float(p["within"]), _text(p.get("ref")))
            seen = p.get("first_seen")
            if owner.launch_ref is None and pd.notna(seen) and seen < owner.start:
                # listed before the first line its attempt wrote: it had started by then
                owner.start, owner.start_ref = seen, _text(p.get("ref")) or owner.start_ref

    def _no_gpu_while_watched(self, p: pd.Series) -> bool:
        """Whether a listed process held no GPU memory in any of the per-process GPU samples taken
        while it lived (two or more), where those samples name processes by the PIDs the listings
        use (a container's listing and the host's nvidia-smi number them apart): no trainer."""
        held = self._gpu_holders()
        if held is None or pd.isna(p.get("first_seen")) or runs_launcher(str(p["command"])):
            return False  # (a launcher's agent holds none itself: its workers do)
        pids, times = held
        host, pid = _text(p.get("host")), int(p["pid"])
        if pid in pids or any(self.parent.get((host, q)) == pid for q in pids):
            return False  # (it, or a child of it, held GPU memory: a wrapper, a launcher)
        # (the samples of its own machine, where both name one: another host's say nothing of it)
        mine = times.get(host) if host is not None and host in times else times.get(None, pd.Series(dtype=object))
        sampled = mine[(mine >= p["first_seen"]) & (mine <= p["alive_until"])]
        return sampled.nunique() >= 2

    def _gpu_holders(self) -> tuple[set[int], dict] | None:
        """(the PIDs the per-process GPU samples show, the times they were taken by host: None for
        samples that name none, and for all of them), once; None where there are none or their
        PIDs are none of the listings' (another PID namespace)."""
        if self._holders is False:
            gp = self.inc.gpu_processes
            pids = set(gp["pid"].dropna().astype(int)) if len(gp) else set()
            listed = set(self.procs["pid"].astype(int)) if len(self.procs) else set()
            self._holders = None
            if pids & listed:
                hosts = column(gp, "host").astype(object).where(column(gp, "host").notna(), None)
                times = {h: pd.Series(g["time"].dropna().unique()) for h, g in gp.groupby(hosts, dropna=False)}
                times[None] = pd.Series(gp["time"].dropna().unique())
                self._holders = (pids, times)
        return self._holders

    def _restarted(self, a: _Attempt, p: pd.Series, into: list[_Attempt] | None = None) -> _Attempt | None:
        """A new attempt where the process was started by the parent of one of the attempt's own
        after that one had ended: what the launch ran (a restart loop, a supervisor script) ran
        the trainer again. It writes where the first one wrote, and joins `into` (the starts found,
        else the orphans, where the first one is an orphan: _looped)."""
        ppid = _num(p.get("ppid"))
        mine = self.procs[self.procs["pid"].isin(a.pids)]
        # (a child of the attempt's own process that runs its very command line is its worker, a
        # fork: a trainer starts its data loader's workers again each epoch, and that is no restart
        # of it; a launcher's agent restarting its ranks runs another command than theirs)
        forked = ppid in a.pids and self.commands.get((_text(p.get("host")), ppid)) == str(p["command"])
        if ppid is None or forked or mine.empty or not (mine["ppid"] == ppid).any():
            return None
        before = mine[mine["ppid"] == ppid]
        if not (before["alive_until"] < p["start"]).all():
            return None
        # The processes one restart started together (a launcher's ranks, before its own line
        # about the restart is written) are one attempt: a sibling's, where one began within
        # the time its start is known to.
        slack = pd.Timedelta(seconds=float(p["within"]) + 1)
        together = [r for r in self.restarts.get((id(a), ppid), []) if abs(r.start - p["start"]) <= slack]
        if together:
            return together[0]
        # the restart its launcher's log told already (its workers' start-up lines, no PID yet)
        told = [r for r in self.found if r is not a and r.job == a.job and not r.pids and r.job_attempt is not None
                and a.job_attempt is not None and r.job_attempt > a.job_attempt
                and p["start"] - slack <= r.start <= p["start"] + LOG_SLACK]
        if told:
            r = min(told, key=lambda x: x.start)
            self.restarts.setdefault((id(a), ppid), []).append(r)
            return r
        r = _Attempt(p["start"], "supervisor", float(p["within"]), _text(p.get("ref")))
        r.command, r.script, r.flags, r.runs = a.command, a.script, dict(a.flags), list(a.runs)
        r.host, r.log_path, r.job, r.restart_of = a.host, a.log_path, a.job, a.restart_of or a
        (self.found if into is None else into).append(r)
        self.restarts.setdefault((id(a), ppid), []).append(r)
        return r

    def _looped(self, p: pd.Series) -> _Attempt | None:
        """Where no launch is known, a restart by the script that ran the process: the same
        program started again by the same parent after its earlier run had ended (a supervisor
        loop seen only in the listings). Not under an interactive shell: a command run again there
        is the operator's new start, not a restart. It stays unclaimed until its first run's log
        is known (a process that writes none is no start of training)."""
        host, ppid = _text(p.get("host")), _num(p.get("ppid"))
        parent = self.commands.get((host, ppid)) if ppid is not None else None
        if parent is None or not runs_a_script(parent):
            return None
        for o in reversed(self.orphans):
            if o.restart_of is None and _same_host(o, host) and _same_program(o, str(p["command"])):
                r = self._restarted(o, p, into=self.orphans)
                if r is not None:
                    return r
        return None

    def _start_of(self, p: pd.Series) -> _Attempt | None:
        """The start that made this process: the latest typed or launcher start of its program
        at most seconds before it (ps's START may give only its minute) that no listing had
        already shown it before, or the attempt its parent process belongs to."""
        start, within = p["start"], pd.Timedelta(seconds=float(p["within"]))
        seen = p["first_seen"] if pd.notna(p.get("first_seen")) else None
        # (an attempt known from its log's first line started before it: ps may list it first)
        host = _text(p.get("host"))
        ppid = _num(p.get("ppid"))
        # the process tree, where a listing shows it: under a launch's own process, that launch's
        tree = [a for a in self.found if self._under(a, ppid, host)]
        if tree:
            return max(tree, key=lambda a: a.start)
        made = [a for a in self.found if a.command and (a.launch_ref or a.job is not None) and _same_host(a, host)
                and self._ran(a) and self._under(a, ppid, host) is not False and _began_by(a, start, within)
                and (seen is None or a.start <= seen + (pd.Timedelta(seconds=1) if a.launch_ref else LOG_SLACK))
                and _same_program(a, str(p["command"]))]
        if made:
            # A wrapper's child takes the PID right after it (Linux hands PIDs out in order): where
            # listings lack parents and two starts fit the time, the nearer PID tells.
            pid = int(p["pid"])
            near = [(pid - q, a) for a in made for q in a.pids if 0 < pid - q <= 16]
            return min(near, key=lambda x: x[0])[1] if near else max(made, key=lambda a: a.start)
        # (its parent's start may be typed a moment after ps's clock dated the child's); a
        # launcher's agent no launch is known for (torchrun under a script the listing does not
        # show) is an attempt of its own, and the workers it starts are that attempt's
        agents = [o for o in self.orphans if o.command and runs_launcher(o.command)]
        parents = [a for a in self.found + agents if ppid is not None and ppid in a.pids
                   and a.start <= start + within + _START_CLOCK_SLACK and _same_host(a, host)]
        return max(parents, key=lambda a: a.start) if parents else None

    def _log_names(self) -> set[str]:
        names = set()
        for df in (self.inc.metrics, self.inc.events):
            names |= {PurePosixPath(str(s)).name for s in df["source"].dropna().unique()}
        return names

    def _logs(self, starts: dict[str, list[tuple]], named: bool) -> None:
        """Each log source's start-up sequences join the attempt that wrote them: those that name
        a launcher's job and attempt (`named`), else the others."""
        # in time order over every source: a log's first line bounds its trainer's start from
        # above, so the earliest one is the most precise (a wandb run's first record comes later)
        mine = sorted(((source,) + st for source, found in starts.items() for st in found
                       if (st[3] is not None or st[4] is not None) == named), key=lambda st: st[1])
        # each start's part of its log: up to the source's next start, else its last line
        nexts = {(source, st[0]): nxt[0] for source, found in starts.items() for st, nxt in zip(found, found[1:], strict=False)}
        for source, when, ref, rank, job, n, pid, run, within in mine:
            # A start-up after its attempt's end (its launcher said the attempt failed): the
            # launcher started it again. Its lines carry the number of the attempt before until
            # a later line of the launcher's tells the attempts apart (torchrun's agent logs no
            # restart at its default level: `launcher_lines._unseen_restarts`).
            while n is not None and when > self.launcher_ends.get((job, n), when) + SAME_START:
                n += 1
            first = self.firsts.get(source)
            until = nexts.get((source, when), self.last_line.get(source, when))
            owner = self._log_owner(source, when, within, until, rank, job, n, pid, run)
            if owner is None and not named and (ended := self._undated_end_of(ref, when)) is not None:
                # (its lines after the error are another process's: no part of the log is the one it ended)
                ended.undated_end = ref
                continue
            if owner is None and not named and source not in self.stepped and self._begins_with_error(ref):
                # (a log of no step whose first line is what went wrong, an OOM or a traceback, that
                # no start owns: a paste or a tail that begins as the run failed shows its end, not
                # a start; its error is a death no start is known for: detect/deaths.py)
                continue
            if owner is None:
                owner = _Attempt(when, "unknown", within, ref)
                owner.job, owner.job_attempt = job, n
                self.found.append(owner)
            if first is None:
                self.firsts[source] = owner
            elif owner is not first and owner.by == "unknown" and first.script and first.script.endswith(".sh"):
                # A later start in the log a wrapper script writes to: the script restarted it.
                owner.by = "supervisor"
            owner.consider_start(when, within, ref)
            owner.sources.setdefault(source, when)
            if rank is not None:
                owner.ranks.add(rank)
                owner.rank_starts.setdefault(rank, when)
            if pid is not None:
                owner.pids.add(pid)
                self.writers[source] = pid

    @functools.cached_property
    def stepped(self) -> set:
        """The sources that hold a metric row (a step, dated or not)."""
        return set(self.inc.metrics["source"].dropna().unique())

    def _begins_with_error(self, ref: str | None) -> bool:
        """Whether the row at `ref` says what went wrong (CAUSES), no start-up's line."""
        row = computed.rows_where(self.inc, "events", "ref", ref) if isinstance(ref, str) else self.ev.iloc[:0]
        return not row.empty and bool(row["kind"].isin(CAUSES).all())

    def _undated_end_of(self, ref: str | None, bound) -> _Attempt | None:
        """The attempt an undated error line ended, where a log begins with one (a traceback in
        `nohup.out`, placed at the first dated line after it: the latest it can have been written):
        the start whose processes the listings saw go last before that bound. An error ends a
        process; it starts none."""
        row = computed.rows_where(self.inc, "events", "ref", ref) if isinstance(ref, str) else self.ev.iloc[:0]
        if row.empty or not row["kind"].isin(CAUSES).any() or not _latest_only(row, ref):
            return None
        gone = [(g, a) for a in self.found + self.orphans if (g := self._gone_by(a)) is not None and g <= bound]
        return max(gone, key=lambda x: x[0])[1] if gone else None

    def _unstarted_logs(self, starts: dict[str, list[tuple]]) -> None:
        """A log of nothing but errors starts nothing (`_log_starts`), yet it is the log of the
        launch that redirected into it, the latest before its first line: a start that died
        before it wrote anything else (its traceback, kept where a `tail` printed it), or a
        script's own output beside the log its trainer writes (a supervisor loop's exit statuses)."""
        files = {f.path for f in self.inc.load_report.files} if self.inc.load_report else set()
        for source, first in self.first_line.items():
            if source in starts or pd.isna(first):
                continue
            name = PurePosixPath(str(source)).name
            # (one that has logs already takes it too where it is a file of the folder, its stderr
            # beside what its trainer logs itself, not lines a session printed of a file it lacks)
            owners = [a for a in self.found if a.log_path and PurePosixPath(a.log_path).name == name
                      and a.launch_ref and a.start <= first + SAME_START and self._ran(a)
                      and (not a.sources or a.wrappers or source in files)]
            if owners:
                max(owners, key=lambda a: a.start).sources.setdefault(source, first)

    def _appended_logs(self) -> None:
        """A launch that sends its output to a log an earlier start wrote to (`>>`, a second
        `nohup ... &` appending to `nohup.out`) writes its part of it from its start, where the
        log goes on past it."""
        for a in self.found:
            if not (a.launch_ref and a.log_path) or not self._ran(a):
                continue
            name = PurePosixPath(a.log_path).name
            for source, first in self.first_line.items():
                if PurePosixPath(str(source)).name != name or source in a.sources or pd.isna(first):
                    continue
                if first < a.start <= self.last_line.get(source, first) and any(source in b.sources for b in self.found):
                    a.sources[source] = a.start

    def _rotated_logs(self) -> None:
        """A rotated log's later part (model/rotation.py) is written first by the attempt that
        wrote the part before it last, from the part's first line."""
        sources = {s for s, t in self.first_line.items() if pd.notna(t)}
        for source in sorted(sources, key=lambda s: self.first_line[s]):
            older = rotated_from(source, sources)
            first = self.first_line[source]
            if older is None or any(source in a.sources and a.sources[source] <= first for a in self.found):
                continue
            writers = [a for a in self.found + self.orphans if older in a.sources and a.sources[older] <= first]
            if writers:
                max(writers, key=lambda a: a.sources[older]).sources.setdefault(source, first)

    def _restarts_logs(self) -> None:
        """A restart writes where the start it repeats wrote (a supervisor loop appends its
        trainer's output to one log, and prints each exit status to its own): its part of each
        of those logs begins at its start, where the log goes on past it."""
        for r in self.found + self.orphans:
            if r.restart_of is None:
                continue
            for source, begin in r.restart_of.sources.items():
                if source not in r.sources and source not in self.pid_records and begin < r.start \
                        and self.last_line.get(source, begin) >= r.start:
                    r.sources[source] = r.start

    def _log_owner(self, source: str, when, within: float, until, rank, job, n, pid, run) -> _Attempt | None:
        """The attempt whose start-up sequence of `source` begins at `when` (up to `within` s
        later, where its time is only the earliest it can be) and runs up to `until`."""
        name = PurePosixPath(source).name
        host = self.hosts.get(source)
        if job is not None or n is not None:
            return self._launcher_attempt(when, job, n)
        if pid is not None:
            hit = next((a for a in self.found + self.orphans if pid in a.pids and _same_host(a, host)), None)
            if hit is not None:
                return hit
        if rank is not None:
            # A rank starts once per attempt: its lines in a second log (torchrun's --tee beside
            # its --log-dir) that begin when they begin in the first are the same attempt's.
            hit = [a for a in self.found + self.orphans if rank in a.rank_starts and abs(a.rank_starts[rank] - when) <= RANK_SLACK]
            if hit:
                return min(hit, key=lambda a: abs(a.rank_starts[rank] - when))
            # a further rank of a launcher's log that an attempt already began
            own = [a for a in self.found + self.orphans if source in a.sources and a.sources[source] <= when
                   and rank not in a.ranks and when - a.sources[source] <= LOG_SLACK]
            if own:
                return max(own, key=lambda a: a.sources[source])
            # a rank writing a file of its own (torchrun on a wrapper that redirects each rank's
            # output): the attempt whose part of its launcher's own output began before it, by
            # at most LOG_SLACK, and that has no such rank yet
            launched = [a for a in self.found + self.orphans if rank not in a.ranks and _same_host(a, host)
                        and any(s in self.agent_logs and b <= when <= b + LOG_SLACK for s, b in a.sources.items())]
            if launched:
                return max(launched, key=lambda a: max(b for s, b in a.sources.items() if s in self.agent_logs))
        # the launch that redirected into this log, the latest before its first line
        named = [a for a in self.found if a.log_path and PurePosixPath(a.log_path).name == name
                 and a.start <= when + pd.Timedelta(seconds=a.within) and source not in a.sources and _same_host(a, host)
                 and self._ran(a)]
        if named:
            return max(named, key=lambda a: a.start)
        # a sibling: another rank's log of the same job, at the same path but for its last
        # number (`train_rank16.log`, `train_rank17.log`; torchrun's `attempt_0/0/stdout.log`,
        # `attempt_0/1/stdout.log`) and begun with it (one launch starts its ranks); a run it
        # names is the same but for its last number too (`runs/a/train.log` beside `runs/b/train.log`,
        # or runs `baseline` and `variant`, are two jobs)
        # (ranks write side by side: a log that had ended before this one began is a relaunch's)
        # (an attempt known only from its processes, a launcher's agent no launch is known for, too)
        siblings = [a for a in self.found + self.orphans if source not in a.sources and _same_host(a, host)
                    and (run is None or not a.runs or any(_but_rank(r) == _but_rank(run) for r in a.runs))
                    and any(abs(begin - when) <= RANK_SLACK and _but_rank(s) == _but_rank(source)
                            and self.last_line.get(s, begin) >= when for s, begin in a.sources.items())]
        if siblings:
            return min(siblings, key=lambda a: abs(a.start - when))
        # the attempt whose process was alive when the line was written, and started before it
        # (a process writes one log; a tracked run's records that name its run (wandb's, read
        # before or without the run's own logs, which name its PID) are its too, log or not; a
        # second log naming the run may be a restart's, and joins by the rules above)
        record = run is not None and source in self.run_records
        # a start typed just before with no log of its own yet, or one a supervisor said it made
        # (the log a launch of the supervisor names is the supervisor's, not its program's); a
        # tracking library's records are written by the trainer whatever its output's redirect
        recent = [a for a in self.found if (a.launch_ref and (not a.log_path or source in self.record_files)
                                            or a.supervised) and self._no_log(a) and self._ran(a)
                  and a.start <= when <= a.start + LOG_SLACK and _same_host(a, host)]
        # (a file that names its writer's PID, where no start has it yet, is not one whose own
        # files name another PID: TensorBoard's second events file, by the relaunch's process)
        alive = [a for a in self.found + self.orphans if a.pids and self._alive_at(a, when, until)
                 and (self._no_log(a) or (record and run in a.runs) or self._new_worker(a, when))
                 and _same_host(a, host) and not self._gone_before(a, recent) and not self._undated_beside(a, recent)
                 and not (pid is not None and any(self.writers.get(s, pid) != pid for s in a.sources))]
        if run is not None and len(alive) > 1:
            alive = [a for a in alive if run in a.runs] or alive
        if alive:
            # the one that started last before the log began: an older process alive beside it
            # (a watcher, a leftover) was not what started writing this log; one begun after the
            # line, by more than ps's clock may be off, only where none began before it; of two a
            # listing dates to the same second, the higher PID (Linux hands PIDs out in order)
            latest = when + pd.Timedelta(seconds=within) + _START_CLOCK_SLACK
            return max(alive, key=lambda a: (a.start <= latest, a.start, max(a.pids)))
        if record:
            # no process known: a tracked run's records begun while a log naming the same run
            # was being written are that log's trainer's (one process writes both)
            writing = [a for a in self.found if run in a.runs and a.start <= when and _same_host(a, host)
                       and any(b <= when <= self.last_line.get(s, b) for s, b in a.sources.items())]
            if writing:
                return max(writing, key=lambda a: a.start)
        return max(recent, key=lambda a: a.start) if recent else None

    def _undated_beside(self, a: _Attempt, starts: list[_Attempt]) -> bool:
        """Whether `a` is a process alone (no launch, no log), that no listing dates (an
        operator's `nvidia-smi` table names its PID mid-run), beside a start typed before the log
        with no process of its own: the log is that start's, and so is the process (the GPU
        samples give it to the start: _processes_by_name)."""
        if a.launch_ref is not None or a.sources or not any(not b.pids for b in starts):
            return False
        mine = self.procs[self.procs["pid"].isin(a.pids)]
        return not mine.empty and bool(mine["ageless"].all())

    def _gone_before(self, a: _Attempt, starts: list[_Attempt]) -> bool:
        """Whether every process of `a` was gone before one of `starts` began (a listing went on
        without them): a log begun after that is the later start's, though it began within the
        slack a log is allowed after its process was last seen (a relaunch typed after `kill -9`
        writes to the same run)."""
        mine = self.procs[self.procs["pid"].isin(a.pids)]
        if mine.empty or not starts:
            return False
        until = mine["alive_until"].max()
        return pd.notna(until) and any(b is not a and b.start > until for b in starts)

    def _lone_agent(self, a: _Attempt) -> bool:
        """Whether an attempt known only from its processes is a launcher's agent that a listing
        saw more than once and under which no worker started: no other trainer process on its
        host began while it was listed (its workers begin after it; a worker of it joins it)."""
        if not (a.command and runs_launcher(a.command)) or len(a.pids) != 1:
            return False
        mine = self.procs[self.procs["pid"].isin(a.pids)]
        if mine.empty or not (column(mine, "snapshots").fillna(0) > 1).any():
            return False
        begun, until = mine["start"].min(), mine["alive_until"].max()
        others = self.procs[~self.procs["pid"].isin(a.pids) & ~self.procs["ageless"]
                            & ~self.procs["command"].fillna("").astype(str).map(runs_launcher).astype(bool)]
        here = np.array([_same_host(a, _text(h)) for h in column(others, "host")], dtype=bool)
        return not (here & (others["start"] >= begun).to_numpy(dtype=bool) & (others["start"] <= until).to_numpy(dtype=bool)).any()

    def _ran(self, a: _Attempt) -> bool:
        """Whether the shell ran the attempt's command: not where it could not open its
        redirection (`unopened`), so that no process and no log is its."""
        return a.launch_ref not in self.unopened

    def _new_worker(self, a: _Attempt, when) -> bool:
        """Whether one of the attempt's processes started after every log it has began, and at
        most LOG_SLACK before `when`: a worker its launcher started (a rank writing its own file
        beside the launcher's output), whose log this is."""
        if not a.sources:
            return False
        mine = self.procs[self.procs["pid"].isin(a.pids)]
        since = max(a.sources.values())
        # (a listing gives its start to the second or coarser, `within` says how much later it may
        # be; a launcher's first line and its workers' start are the same moment told by two clocks)
        latest = mine["start"] + pd.to_timedelta(mine["within"], unit="s") + SAME_START
        # (a process of unknown age may be as old as anything: nothing shows it began after the logs)
        fresh = (latest >= since) & (mine["start"] <= when + pd.Timedelta(seconds=5)) & (when - mine["start"] <= LOG_SLACK) \
            & ~mine["ageless"]
        return bool(fresh.any())

    def _no_log(self, a: _Attempt) -> bool:
        """Whether no log has joined the attempt yet (its PID file, if any, is no log, nor are the
        records a tracking library writes from inside it, a TensorBoard events file named for
        its PID: a trainer that writes one writes its log too, which is still to come)."""
        return not (a.sources.keys() - self.pid_records - self.record_files)

    def _launcher_attempt(self, when, job, n) -> _Attempt:
        """The attempt `n` of a launcher's job: known already, else the launch typed just before
        (its first attempt), else a new attempt the launcher started (a restart)."""
        hit = next((a for a in self.found if a.job == job and a.job_attempt == n), None)
        if hit is None and n is None and job is not None:
            # lines that name the job and no attempt (a Slurm job's output file): the job's attempt
            # running then, the latest started by then (a requeue appends to the same file), else
            # its first (the trainer's clock is not the scheduler's)
            mine = sorted((a for a in self.found if a.job == job), key=lambda a: a.start)
            hit = next((a for a in reversed(mine) if a.start <= when + LOG_SLACK), mine[0] if mine else None)
        if hit is None:
            # The attempt of that number the launcher started about then, where one side names no
            # job: a launcher's lines before it names its job (torchrun's config, then its run id),
            # or the same attempt seen first in a copy that names none (torchrun's own output
            # beside its --log-dir), which is then this job's.
            near = [a for a in self.found if a.job_attempt == n and (job is None or a.job is None)
                    and abs(a.start - when) <= LOG_SLACK]
            hit = min(near, key=lambda a: abs(a.start - when)) if near else None
            if hit is not None and job is not None:
                hit.job = job
        if hit is not None:
            return hit
        typed = [a for a in self.found if a.launch_ref and a.job is None and a.start <= when <= a.start + LOG_SLACK]
        if typed and n in (None, 0):
            a = max(typed, key=lambda a: a.start)
            a.job, a.job_attempt = job, n
            return a
        # (a launcher's lines that name no job: the launcher attempt before it is its job's)
        before = [a for a in self.found if a.start <= when
                  and (a.job == job or (job is None and a.job_attempt is not None and n is not None and a.job_attempt < n))]
        a = _Attempt(when, "agent" if before else "unknown", 0.0, None)
        a.job, a.job_attempt = job, n
        if before:  # the launcher runs the same command again
            b = max(before, key=lambda x: x.start)
            a.command, a.script, a.flags, a.runs, a.host = b.command, b.script, b.flags, list(b.runs), b.host
            a.job = job if job is not None else b.job
        self.found.append(a)
        return a

    def _alive_at(self, a: _Attempt, when, until=None) -> bool:
        """Whether one of the attempt's processes was alive when a log began at `when`: begun by
        then and not yet gone; or, where no listing gives its start (a `pgrep` typed in a session),
        seen while that log's part (up to `until`) was being written, by a listing whose snapshot
        before did not show it before the log began (or that had none): it began between them."""
        mine = self.procs[self.procs["pid"].isin(a.pids)]
        if mine.empty:
            return False
        alive = (mine["start"] <= when + pd.Timedelta(seconds=5)) & (mine["alive_until"] >= when - LOG_SLACK)
        if until is not None:
            began = mine["begun_after"].isna() | (mine["begun_after"] <= when + pd.Timedelta(seconds=5))
            alive |= mine["started"].isna() & began & (mine["first_seen"] >= when) & (mine["first_seen"] <= until)
        return bool(alive.any())

    def _runs(self) -> None:
        """Each run the metrics name joins the attempt whose log wrote it, else a start of its own
        (a wandb run with no log beside it). A run whose rows carry no time (a checkpoint's
        trainer_state.json) says nothing of when anything started."""
        m = self.inc.metrics.dropna(subset=["run", "time"])
        if m.empty:
            return
        firsts = m.groupby(["source", "run"], sort=False)["time"].min().reset_index()
        for _, r in firsts.sort_values("time", kind="stable").iterrows():
            owner = self._source_owner(r["source"], r["time"])
            if owner is None:
                owner = next((a for a in self.found if r["run"] in a.runs and not a.sources), None)
            if owner is None:
                owner = _Attempt(r["time"], "unknown", 0.0, None)
                self.found.append(owner)
                owner.sources.setdefault(r["source"], r["time"])
            if r["run"] not in owner.runs:
                owner.runs.append(r["run"])

    def _source_owner(self, source: str, when) -> _Attempt | None:
        own = [a for a in self.found if source in a.sources and a.sources[source] <= when]
        return max(own, key=lambda a: a.sources[source]) if own else None

    # ------------------------------------------------------------------ the frame
    def _frame(self) -> pd.DataFrame:
        found = sorted(self.found, key=lambda a: (a.start is None, a.start))
        # A log's part for each attempt ends where the next attempt's part of it begins; a
        # restart's, too where a listing saw its processes gone (a later line is no longer its).
        begins = [(a, dict(a.sources)) for a in found]
        for a, mine in begins:
            gone = self._gone_by(a) if a.restart_of is not None else None
            a.sources = {source: (begin, min([other[source] for _, other in begins
                                              if source in other and other[source] > begin]
                                             + ([gone] if gone is not None and gone > begin else []), default=None))
                         for source, begin in mine.items()}
        self.owned = {s for a in found for s in a.sources}
        merged = self._processes_by_name(found)
        found = [a for a in found if id(a) not in merged]
        started = [_Started(a.command, frozenset(a.pids), a.start, a.launch_ref) for a in found]
        self.kills = [(i, pids | reached(self.ev.loc[i], pids, started, listing_at(self.inc, self.ev.loc[i])))
                      for i, pids in self.kills]
        for a in found:
            mine = self.procs.loc[self.procs["pid"].isin(a.pids), "command"].dropna().astype(str)
            a.invocations = [(a.script, a.flags)] + [invocation(c) for c in mine]
        _jobs(found)
        self.ordered = found
        rows = [self._row(i, a) for i, a in enumerate(found, 1)]
        # object columns: a missing text stays None (pandas would make it a NaN of a string column)
        df = pd.DataFrame(rows, columns=list(COLUMNS), dtype=object)
        for col in ("start", "launched", "first_step", "last_alive", "end", "cause_time"):
            df[col] = pd.to_datetime(df[col], utc=True).astype("datetime64[us, UTC]")
        return df

    def _gone_by(self, a: _Attempt) -> pd.Timestamp | None:
        """When the attempt's processes were all gone, as the listings that showed them saw it (a
        listing that went on past each one's last sighting), with END_SLACK for what it wrote as
        it ended (its log's last lines, its loop's word on its exit); None where not known."""
        mine = self.procs[self.procs["pid"].isin(a.pids)]
        if mine.empty or mine["alive_until"].isna().any():
            return None
        seen_after = mine["source"].map(self.listed_until) > mine["alive_until"]
        return mine["alive_until"].max() + END_SLACK if seen_after.all() else None

    def _processes_by_name(self, found: list[_Attempt]) -> set[int]:
        """A start that no listing ties to a process by its command (a `nohup` launch that did not
        print its PID, a log alone) takes the process that shows itself only by its program's
        name, where that can be no other start's:

        - in the per-process GPU samples (nvidia-smi's process list, NVML: the executable, not
          its arguments), a PID first shown between the start and its first step: the one new
          process that loaded the model is the start's; one that came later, mid-training (a
          contender), or was there before (the one holding the memory) is not;
        - in a listing that names a process by its program alone (`ps -p PID`, `top` without
          `-c`), a PID listed while the start's own log was still being written, the only one
          so named in that listing.

        Each PID goes to a start only where exactly one fits. Returns the ids of the record
        files' attempts merged into the start that took their PID."""
        if not any(not a.pids for a in found):
            return set()
        # A tracking library's record file that names its writer's PID and nothing else (TensorBoard's
        # `events.out.tfevents.<time>.<host>.<pid>.0`) is an attempt of its own only until a start
        # takes that PID by these rules: its process is then that start's, and the records too.
        recorders = {p: a for a in found if a.pids and a.launch_ref is None and a.sources
                     and set(a.sources) <= self.record_files for p in a.pids}
        owned = {p for a in found for p in a.pids} - set(recorders)
        claims: dict[int, list[_Attempt]] = {}
        started: dict[int, tuple] = {}  # each start's (end of start-up, whether it trained), found once

        def started_up(a: _Attempt) -> tuple:
            if id(a) not in started:
                started[id(a)] = self._first_step_or_next(a, found)
            return started[id(a)]

        gp = self.inc.gpu_processes.dropna(subset=["pid", "time"])
        firsts = gp.sort_values("time", kind="stable").drop_duplicates("pid")
        for r in firsts[~firsts["pid"].isin(owned)].itertuples(index=False):
            host, name = _text(getattr(r, "host", None)), _text(getattr(r, "process_name", None)) or ""
            for a in found:
                if not a.pids and a.start is not None and _same_host(a, host) \
                        and _runs_as(a, name, trains=started_up(a)[1]) and a.earliest() <= r.time < started_up(a)[0]:
                    claims.setdefault(int(r.pid), []).append(a)
        procs = self.inc.processes.dropna(subset=["pid", "first_seen"])
        named = procs[procs["command"].astype(str).str.fullmatch(r"\S+") & ~procs["pid"].isin(owned)]
        # a listing that shows two processes by the same name alone cannot tell which is whose
        named = named[~named.duplicated(["source", "first_seen", "command"], keep=False)]
        for r in named.itertuples(index=False):
            host = _text(getattr(r, "host", None))
            for a in found:
                writing = max((self.last_line.get(src) for src in a.sources if src in self.last_line), default=None)
                if not a.pids and a.start is not None and writing is not None and _same_host(a, host) \
                        and _runs_as(a, str(r.command)) and a.earliest() <= r.first_seen <= writing + END_SLACK:
                    claims.setdefault(int(r.pid), []).append(a)
        merged = set()
        for pid, who in claims.items():
            if len(set(map(id, who))) == 1:
                who[0].pids.add(pid)
                if pid in recorders and recorders[pid] is not who[0]:
                    merged.add(id(recorders[pid]))
                    _merge(recorders.pop(pid), into=who[0])
        return merged

    def _first_step_or_next(self, a: _Attempt, found: list[_Attempt]) -> tuple:
        """When the attempt's start-up was over: its first step line, else the next start on its
        host, else the end of the evidence; and whether it has a step line."""
        parts = [(s, b, e) for s, (b, e) in a.sources.items()]
        steps = _steps(self.inc, parts, a.runs, a.start, self.owned)
        if len(steps):
            return steps["time"].iloc[0], True
        later = [b.start for b in found if b.start is not None and b.start > a.start and _same_host(b, a.host)]
        return (min(later) if later else self.evidence_end), False

    def _job_rows_of(self, a: _Attempt) -> list:
        """The event rows that are the attempt's by its scheduler job: the kill_sent rows that
        cancelled it (`scancel`), and what the job listings say of it, from its start to the next
        attempt of the same job."""
        if a.job is None:
            return []
        rows = [i for i, j in self.job_kills.items() if job_reached(j, a.job)]
        later = [b.start for b in self.ordered if b.job == a.job and b.start is not None and b.start > a.start]
        listed = self.listed[(self.listed["job"] == a.job) & (self.listed["time"] >= a.start - LOG_SLACK)]
        if later:
            listed = listed[listed["time"] < min(later)]
        if a.job_attempt is not None and "attempt" in listed.columns:
            listed = listed[listed["attempt"].isna() | (listed["attempt"] == a.job_attempt)]
        return rows + list(listed.index)

    def _file_kills_of(self, a: _Attempt) -> list:
        """The kills that read the PID file an attempt with no PID in the evidence writes (its
        `--pid-file run/x.pid`, read by `kill $(cat run/x.pid)`), sent after it started and before
        the next start that writes the same file: whatever PID the file held, they were meant for
        it (a transcript alone, the file and the process listing not in the incident)."""
        mine = pid_file_written(a.command)
        if a.pids or mine is None or a.start is None or pd.isna(a.start):
            return []
        later = min((b.start for b in self.ordered if b is not a and b.start is not None and pd.notna(b.start)
                     and b.start > a.start and pid_file_written(b.command) == mine), default=None)
        when = self.ev["time"]
        return [i for i, names in self.file_kills if mine in names and when.loc[i] >= a.start
                and (later is None or when.loc[i] < later)]

    def _supervisor_rows_of(self, a: _Attempt) -> list:
        """The supervisor's words on the end of the program it started as this attempt, which
        name no PID of it (_supervisor_told)."""
        return list(self.ev.index[_supervisor_told(self.ev, a)])

    def _row(self, i: int, a: _Attempt) -> dict:
        """The attempt's row: taken from the last read of a growing folder where the attempt was
        over then and nothing it is made of has changed since (carried.py), else derived now."""
        got = self._inputs(a)
        if not self.inc.live or self.inc.carried is None:  # read once: nothing is kept for a next read
            return {**self._derive(a, *got), "attempt": f"A{i}"}
        steps, lines, rows, gp, procs, machine = got
        identity = _identity(a)

        @functools.cache
        def key() -> tuple:
            return (identity, *(carried.digest_in(self.inc, name, df) for name, df in (
                ("metrics", steps), ("metrics", lines), ("events", rows), ("gpu_processes", gp), ("events", machine))),
                carried.digest(procs))

        over = lambda row: self._over(row, rows)  # noqa: E731
        row = carried.take(self.inc, "attempt", key, lambda: self._derive(a, *got), over, first=identity)
        row = {**row, "attempt": f"A{i}"}
        if over(row):
            carried.settle(self.inc, row["attempt"], key())
        return row

    def _over(self, row: dict, events: pd.DataFrame) -> bool:
        """Whether nothing read later can change the row, its own rows (`events`: its event rows)
        staying as they are: the attempt has an end, and where the folder is still written and
        its rows hold a place where a run's records stop (`open_end`), the evidence goes on well
        past its last sign of life (within END_SLACK of the evidence's end such a place is no end
        yet: `_still_open`)."""
        if pd.isna(row["end"]):
            return False
        if not self.inc.live or "open_end" not in events.columns or not events["open_end"].fillna(False).astype(bool).any():
            return True
        return self.evidence_end is not None and self.evidence_end > row["last_alive"] + 2 * END_SLACK

    def _inputs(self, a: _Attempt) -> tuple[pd.DataFrame, ...]:
        """Every row the attempt's row is derived from: its step lines, its metric and event rows
        (`_rows_of`), its GPU processes and listed processes, and what its machine said of its GPUs."""
        inc = self.inc
        parts = [(s, b, e) for s, (b, e) in a.sources.items()]
        steps = _steps(inc, parts, a.runs, a.start, self.owned)
        lines, rows = _rows_of(inc, parts, a.pids, self.kills, a.launch_ref,
                               self._job_rows_of(a) + self._file_kills_of(a) + self._supervisor_rows_of(a))
        gp = inc.gpu_processes[inc.gpu_processes["pid"].isin(a.pids)] if a.pids else inc.gpu_processes.iloc[:0]
        procs = self.procs[self.procs["pid"].isin(a.pids)]
        gpus = set(gp["gpu"].dropna().astype(int))
        machine = self.machine[[_same_host(a, h) and (g is None or not gpus or g in gpus)
                                for h, g in zip(column(self.machine, "host"), column(self.machine, "gpu").map(_num), strict=True)]]
        return steps, lines, rows, gp, procs, machine

    def _undated_steps(self, a: _Attempt) -> pd.Series | None:
        """The first step line of the attempt's own logs that nothing dates (Megatron's
        `iteration 2/ 1000 | ...` carries no time; in a job's output only Slurm's lines do), where
        no other attempt writes to those logs: the attempt trained, though when is not known."""
        m = self.inc.metrics
        if not a.sources or m.empty or any(b is not a and set(b.sources) & set(a.sources) for b in self.found):
            return None
        undated = m[m["time"].isna() & m["step"].notna() & m["source"].isin(list(a.sources))]
        return undated.iloc[0] if len(undated) else None

    def _derive(self, a: _Attempt, steps, lines, rows, gp, procs, machine) -> dict:
        inc = self.inc
        first = steps.iloc[0] if len(steps) else None
        first_time = None if first is None else first["time"]
        if first is None and (undated := self._undated_steps(a)) is not None:
            # it trained, though nothing dates its steps: from its start, as far as anything shows
            first, first_time = undated, a.start
        if first is None and (met := _collectives_met(rows)) is not None:
            # it trained, though no line shows a step: its ranks had met in that many collectives
            first, first_time = met, a.start
        # a launcher's agent lives through every attempt of its job: an attempt lives as long as
        # its workers, where the listings show them
        workers = procs[~procs["command"].astype(str).str.contains(AGENT_RUN)]
        procs = workers if len(workers) else procs
        # bash reports a background job's end (`[1]+  Exit 1  ...`) at the next prompt, minutes
        # later maybe: no sign of life, and no time for its end (that is its last sign of life)
        alive_rows = rows[~_job_report(rows)]
        lives = [x for x in (_last(lines, "time"), _last(alive_rows, "time"), _last(gp, "time")) if x is not None]
        if len(procs) and procs["alive_until"].notna().any():
            p = procs.loc[procs["alive_until"].idxmax()]
            lives.append((p["alive_until"], _text(p.get("ref"))))
        last_alive, last_ref = max(lives, key=lambda x: x[0]) if lives else (a.start, a.start_ref)
        end = _end(rows, a, last_alive, self.evidence_end, inc.live, procs)
        if end["end"] is None and (first is not None or not inc.metrics.empty):
            # (where nothing could show a step, an end would make every start one that never trained)
            end.update(self._gone(procs, last_alive, gp) or self._left_gpu(gp, last_alive))
        # what the machine said of its GPUs meanwhile is a cause too (a GPU off the bus hangs
        # the job; its ranks' timeouts come later)
        causes = pd.concat([rows, machine]) if len(machine) else rows
        end.update(_cause(causes, steps["time"].max() if len(steps) else a.start, end["end"]))
        gone = self._gone_by(a)
        if end["end"] is not None and gone is not None and gone - END_SLACK < end["end"] and _latest_only(rows, end["end_ref"]):
            # the line that ended it has only the latest time it can have been written (an undated
            # traceback a session printed later: loaders/folder.py): it ended as the listings saw
            # its processes go
            end["end"] = gone - END_SLACK
            if end["cause_ref"] == end["end_ref"]:
                end["cause_time"] = end["end"]
        if end["end_kind"] == GONE and end["cause_kind"] is None and a.undated_end is not None:
            # the undated error a log begins with is what its processes died of (_undated_end_of)
            line = computed.rows_where(inc, "events", "ref", a.undated_end)
            said = _cause(line, line["time"].min(), line["time"].max())
            end.update(said, cause_time=end["end"], end_kind=said["cause_kind"], end_ref=said["cause_ref"])
        if end["end_kind"] == GONE and end["cause_kind"] is None:
            end.update(self._hung_up(a, end["end"]))
        # what the attempt's lines say of it, its metric lines first
        said = {c: [v for df in (lines, rows) for v in column(df, c).dropna()] for c in ("rank", "job", "attempt", "run")}
        ranks = set(a.ranks) | {int(x) for x in said["rank"]}
        job = a.job if a.job is not None else next(iter(said["job"]), None)
        n = a.job_attempt if a.job_attempt is not None else _num(next(iter(said["attempt"]), None))
        runs = list(dict.fromkeys(a.runs + said["run"]))
        return {
            "attempt": None, "start": a.start, "start_within_s": a.within, "start_ref": a.start_ref,
            "launched": a.launched, "by": a.by, "launcher": a.launcher, "program": a.supervised,
            "job": job, "job_attempt": n, "host": a.host, "command": a.command, "script": a.script,
            "flags": a.flags, "log_path": a.log_path, "launch_ref": a.launch_ref,
            "run": runs[0] if runs else None, "runs": runs, "pids": sorted(a.pids), "ranks": sorted(ranks),
            "gpus": sorted({int(g) for g in gp["gpu"].dropna().unique()}), "sources": list(a.sources),
            "first_step": first_time,
            "first_step_ref": None if first is None else _ref(first),
            "last_alive": last_alive, "last_alive_ref": last_ref, **end,
        }

    def _gone(self, procs: pd.DataFrame, last_alive, gp: pd.DataFrame) -> dict:
        """An end no line tells: the attempt's processes left a process listing (ps, top) that
        went on listing others for a while (END_SLACK) without them, its logs silent since. How
        it ended is not said (a signal from outside the evidence, a terminal that hung up): its
        end is its last sighting, of the processes that held its GPU memory where it has such,
        else of the one started first, which the others were forked from (helpers it forked,
        DataLoader workers, may outlive it by seconds), a sighting as a zombie (`Z`: exited, not
        yet reaped) being its end."""
        if procs.empty or procs["last_seen"].isna().any():
            return {}
        held = procs[procs["pid"].isin(gp["pid"].dropna())] if len(gp) else procs.iloc[:0]
        # where no GPU list names them, the trainer started first, which the others were forked
        # from (a worker orphaned by its trainer's death lists PID 1 as its parent); a wrapper
        # shell's or a launcher's agent's process is not the trainer
        trainers = procs[_runs_trainer(procs)]
        first = trainers["started"].fillna(trainers["first_seen"]) if "started" in trainers.columns else trainers["first_seen"]
        p = (held.sort_values("last_seen", kind="stable").iloc[-1] if len(held) else trainers.loc[first.idxmin()]
             if len(trainers) else procs.loc[procs["last_seen"].idxmax()])
        gone, went_on = p["last_seen"], self.listed_until.get(p["source"])
        if went_on is None or went_on - gone < END_SLACK or last_alive > gone + END_SLACK:
            return {}
        seen = "listed as a zombie (`Z`: it had exited)" if str(p.get("state")).startswith("Z") else "listed last"
        return {"end": gone, "end_kind": GONE, "end_ref": _text(p.get("last_ref")) or _text(p.get("ref")),
                "exit_code": None, "signal": None,
                "end_message": f"PID {int(p['pid'])} was {seen} at {gone:%H:%M:%S} in {p['source']}, which "
                               "went on without it; no error or stop line of its own"}

    def _left_gpu(self, gp: pd.DataFrame, last_alive) -> dict:
        """An end no line tells, where no process listing shows it: the attempt's PIDs left
        nvidia-smi's process list and a GPU they held shows its memory released soon after, in a
        stream that went on (a GPU another job also holds shows nothing either way)."""
        if gp.empty or gp["time"].isna().all():
            return {}
        last = gp.loc[gp["time"].idxmax()]
        gpus = set(gp["gpu"].dropna().astype(int))
        g = self.inc.gpus
        if not gpus or g.empty or last_alive > last["time"] + END_SLACK:
            return {}
        mine = g[g["gpu"].isin(gpus) & g["memory_used_mib"].notna()]
        after = mine[mine["time"] > last["time"]].sort_values("time", kind="stable")
        if after.empty or after["time"].max() - last["time"] < END_SLACK:
            return {}
        # a sample within the slack that shows the memory released (a sample taken as it exited
        # may still show it; a restart may take it again after)
        soon = after[(after["time"] <= last["time"] + END_SLACK) & ~gpu_state.held(after["memory_used_mib"])]
        if soon.empty:
            return {}
        freed = soon.iloc[0]
        return {"end": last["time"], "end_kind": GONE, "end_ref": _ref(last), "exit_code": None, "signal": None,
                "end_message": f"PID {int(last['pid'])} was on GPU {int(freed['gpu'])} last at {last['time']:%H:%M:%S} "
                               f"and its memory was released by {freed['time']:%H:%M:%S} ({_ref(freed)}); no error "
                               "or stop line of its own"}

    def _hung_up(self, a: _Attempt, end) -> dict:
        """Why an attempt that ended with no word of its own ended, where its shell says it: the
        shell it was started from (a job of it: `&` with no nohup, setsid or disown) ended on
        SIGHUP at that moment (`script`'s `exited with 129`, a connection that dropped), and bash
        hangs up its jobs as it exits; where nohup guarded the trainer but not the rest of its
        pipeline (`nohup python3 train.py | tee train.log &`), the pipe's reader died with it and
        the trainer's next write failed."""
        exposed = hangup_exposed(a.command or "")
        if a.launch_ref is None or exposed is None:
            return {}
        ev = self.ev
        shell = a.launch_ref.rsplit(":", 1)[0]
        own = ev["command_ref"].isna() if "command_ref" in ev.columns else True
        ended = ev[(ev["source"] == shell) & (ev["kind"] == "exit") & (column(ev, "signal") == "SIGHUP").fillna(False)
                   & own & ((ev["time"] - end).abs() <= END_SLACK)]
        if ended.empty:
            return {}
        r = ended.iloc[0]
        said = (str(r["message"]).strip().splitlines() or [""])[0]
        how = ("it ran as a job of that shell, not under nohup or setsid"
               if not re.search(r"\bnohup\b", a.command) else
               f"nohup guarded the trainer, not the `{exposed}` its output was piped to: that died with the "
               "terminal, and the trainer's next write to the pipe failed")
        return {"cause_time": r["time"], "cause_kind": HANGUP, "cause_ref": _ref(r), "cause_rank": None,
                "cause_message": f"the terminal it was started from hung up ({said}: SIGHUP); {how}"}


def _launcher_ends(ev: pd.DataFrame) -> dict[tuple, pd.Timestamp]:
    """The time each launcher's attempt ended, by (job, attempt), where its launcher says so."""
    if "attempt" not in ev.columns or "job" not in ev.columns:
        return {}
    end = ev[(ev["kind"] == "attempt_end") & ev["attempt"].notna() & ev["time"].notna()]
    out: dict[tuple, pd.Timestamp] = {}
    for job, n, t in zip(end["job"], end["attempt"], end["time"], strict=True):
        key = (None if pd.isna(job) else job, int(n))
        out[key] = min(t, out.get(key, t))
    return out


def _identity(a: _Attempt) -> tuple:
    """The attempt as assembled, as a key (carried.py): every field its row is derived from
    besides the rows themselves."""
    return (a.start, a.within, a.start_ref, a.launched, a.by, a.launcher, a.job, a.job_attempt, a.host,
            a.command, a.script, tuple(sorted(a.flags.items(), key=str)), a.log_path, a.launch_ref,
            tuple(sorted(a.pids)), tuple(sorted(a.ranks)), tuple(a.sources.items()), tuple(a.runs))


def _jobs(found: list[_Attempt]) -> None:
    """Attempts of one job: a launcher's job id where the evidence gives one; else attempts tied
    by a run name, a log they both write, or the checkpoints one resumes from another's (a relaunch
    by hand with nothing in common is a job of its own). Such a job is named for its first attempt."""
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    seen: dict[tuple, int] = {}
    for i, a in enumerate(found):
        keys = [("run", r) for r in a.runs] + [("log", src) for src in a.sources]
        # the same script writing its checkpoints where an earlier start wrote them
        keys += [("ckpt", a.script, v) for k, v in a.flags.items() if _SAVE_DIR.fullmatch(k) and v and v != SWITCH]
        # the same script resuming from the checkpoint an earlier start resumed from (its
        # processes' own command lines where a wrapper launched them)
        keys += [("resume", script, v) for script, flags in a.invocations
                 for k, v in flags.items() if _RESUME_FROM.fullmatch(k) and v and v != SWITCH]
        keys += [("job", a.job)] if a.job is not None else []
        for k in keys:
            if k in seen:
                parent[root(i)] = root(seen[k])
            else:
                seen[k] = i
    for i, a in enumerate(found):
        if a.job is None:
            head = found[root(i)]
            a.job = head.job if head.job is not None else f"job {found.index(head) + 1}"


# A collective's number in its group (c10d's `SeqNum=1132079`) counts the collectives before it.
# Start-up's own are a handful (DDP's parameter check and broadcasts, a barrier); hundreds are
# training steps' all-reduces.
TRAINED_COLLECTIVES = 100


def _collectives_met(rows: pd.DataFrame) -> pd.Series | None:
    """The first of the attempt's event rows numbering a collective that came after training
    had run (TRAINED_COLLECTIVES), None where none does."""
    if rows.empty or "seq" not in rows.columns:
        return None
    seq = pd.to_numeric(rows["seq"], errors="coerce")
    met = rows[(seq.fillna(0) >= TRAINED_COLLECTIVES).to_numpy(dtype=bool)]
    return met.iloc[0] if len(met) else None


def _last(df: pd.DataFrame, col: str):
    t = df[col].dropna() if len(df) else pd.Series(dtype=object)
    if t.empty:
        return None
    i = t.idxmax()
    return t[i], _ref(df.loc[i])


def _ref(row: pd.Series) -> str | None:
    if isinstance(row.get("ref"), str):
        return row["ref"]
    if pd.notna(row.get("line")) and isinstance(row.get("source"), str):
        return f"{row['source']}:{int(row['line'])}"
    return None


def _script_run(command: str) -> str | None:
    """The script a shell command runs (`bash -x ./launch.sh x > log`: launch.sh), where it runs one."""
    for words, _ in simple_commands(shell_words(command)):
        name = command_name(words)
        if name in ("bash", "sh", "zsh", "dash"):
            rest = [w for w in words[words.index(next(w for w in words if w.rsplit("/", 1)[-1] == name)) + 1:]
                    if not w.startswith("-")]
            name = rest[0].rsplit("/", 1)[-1] if rest else name
        if name.endswith((".sh", ".py")):
            return name
    return None


def _but_rank(name: str) -> str:
    """A log's path or run name with its last number blanked: what two ranks' have in common."""
    return _RANK_NUMBER.sub("#", name, count=1)


def _same_host(a: _Attempt, host: str | None) -> bool:
    """Whether a process or log on `host` can be the attempt's: the same machine, where both
    name one (a fleet's copies of one script start on every host at once)."""
    return a.host is None or host is None or a.host == host


def _began_by(a: _Attempt, start, within: pd.Timedelta) -> bool:
    """Whether attempt `a` can have started a process that began at `start` (give or take
    `within`): its start at most WRAPPER_DELAY before it (a wrapper's own start-up) and no later.
    A later pass of a foreground loop began after its floor (the loop typed), when the pass before
    it ended: until its log or a listing tells it, any time in its span (`a.within` from its
    start); once its log's first line dates it, that line came after its process's start-up."""
    late = start + within + pd.Timedelta(seconds=1)
    if start - WRAPPER_DELAY <= a.start <= late:
        return True
    if a.floor is None or a.floor > late:
        return False
    return a.start <= late <= a.start + pd.Timedelta(seconds=a.within) + WRAPPER_DELAY or start <= a.start <= start + LOG_SLACK


def _same_program(a: _Attempt, command: str) -> bool:
    """Whether a process running `command` is what attempt `a` started: the run it names (where
    both name one), else its script or module, a worker of the launcher it started (torchrun runs
    `-m module` or the script it was given), or for a wrapper script the flags it passed on."""
    if not a.command:
        return False
    script, flags = invocation(command)
    # an option the start gave and the process shows with another value: another start's process
    # (two launches of one run, `--seconds 20` under `timeout` and `--seconds 80` by a script)
    if any(k.startswith("--") and k in flags and flags[k] != v for k, v in a.flags.items()):
        return False
    run = flags.get("--run-name") or flags.get("--run_name")
    if a.runs:
        return run in a.runs
    if a.script and a.script.endswith(".sh"):
        # A wrapper script starts the trainer its way: what it passed on must not contradict it.
        given = {k: v for k, v in a.flags.items() if k.startswith("--")}
        return script is not None and sum(flags.get(k) == v for k, v in given.items()) * 2 >= len(given)
    wanted = {a.script} | ({a.flags.get("-m")} if a.flags.get("-m") else set())
    tail = re.findall(r"(?:-m\s+|\s)([\w./-]+\.py|[\w]+(?:\.[\w]+)+)\b", a.command)
    wanted |= {PurePosixPath(t).name for t in tail}
    return script is not None and PurePosixPath(script).name in wanted


def _runs_as(a: _Attempt, name: str, trains: bool = False) -> bool:
    """Whether a process named `name` in a GPU's process list (nvidia-smi gives the executable,
    `python3` or its path; NVML the same) can be what attempt `a` runs: an interpreter where it
    runs Python (or, launched by nothing the evidence shows, where it `trains`: its log has
    steps), else its script's or program's own name."""
    base = PurePosixPath(name.strip()).name
    if not base or base.startswith("["):  # `[No data]`, `[Not Found]`: a process of another namespace
        return False
    if re.fullmatch(r"python[\d.]*", base):
        if not a.command:
            # a start read from its log alone (nothing shows how it was launched): a log of
            # training steps is a trainer's, and trainers run in Python (the caller gives it the
            # one such process that came onto the GPUs while it started, and only that one)
            return trains
        return bool(PYTHON_RUN.search(a.command + " ") or AGENT_RUN.search(a.command))
    return bool(a.script) and PurePosixPath(a.script).name == base


def _trainer_processes(procs: pd.DataFrame) -> pd.DataFrame:
    """Processes that run a trainer (a python script or module, or a launcher's agent) rather
    than a shell, wrapper or tool around one; with their best start time and its precision."""
    if procs.empty:
        return procs.assign(start=pd.Series(dtype="datetime64[us, UTC]"), within=pd.Series(dtype=float),
                            begun_after=pd.Series(dtype="datetime64[us, UTC]"), ageless=pd.Series(dtype=bool))
    cmd = procs["command"].fillna("").astype(str)
    keep = cmd.map(lambda c: bool(PYTHON_RUN.search(c) or AGENT_RUN.search(c)) and not is_wrapper_process(c)).astype(bool)
    # helper processes of a trainer (inductor's compile workers, data loader workers) are its own business
    keep &= ~cmd.str.contains(r"--pickler|compile_worker|multiprocessing\.(?:spawn|forkserver|resource_tracker)", regex=True)
    out = procs[keep].copy()
    started = out["started"]
    within = column(out, "started_within_s").astype(float)
    # No start time: the first listing that shows it, as late as the listing's interval allows;
    # it began after the listing's snapshot before that one (`begun_after`), and is of unknown age
    # (`ageless`) where that first one is its listing's first (a `pgrep` typed once, the first
    # screen of `top`): nothing shows when it began.
    out["start"] = started.fillna(out["first_seen"])
    out["begun_after"] = _snapshot_before(procs).loc[out.index].where(started.isna())
    out["ageless"] = (started.isna() & out["begun_after"].isna()).astype(bool)
    out["within"] = np.where(started.notna(), within.fillna(60.0), 60.0)
    # until when it ran: a zombie (`<defunct>`) is listed after its end, until it is reaped
    out["alive_until"] = column(out, "last_running").fillna(out["last_seen"]) if "last_running" in out else out["last_seen"]
    return out.dropna(subset=["start"])


def _snapshot_before(procs: pd.DataFrame) -> pd.Series:
    """For each listed process, the latest time its listing was seen to list anything before it
    first listed this process (NaT: it was in the listing's first snapshot)."""
    out = pd.Series(pd.NaT, index=procs.index, dtype=procs["first_seen"].dtype)
    for _, g in procs.groupby(column(procs, "source").fillna(""), sort=False):
        times = np.unique(pd.concat([g["first_seen"], g["last_seen"]]).dropna().to_numpy())
        first = g["first_seen"].to_numpy()
        at = np.searchsorted(times, first, side="left") - 1
        known = g["first_seen"].notna().to_numpy() & (at >= 0)
        out.loc[g.index[known]] = times[at[known]]
    return out


def job_listings(inc: Incident) -> set[str]:
    """Sources that list the starts of several jobs (`sacct`, `scontrol show job`, a job-completion
    log, a runtime's events of several containers): what they say of each job is that job's, none
    of them is one trainer's log. (A file whose rows name several jobs but start none, such as one
    OOM kill that systemd reports for each slice above the process, is not such a listing.)"""
    def find() -> set[str]:
        ev = inc.events
        if ev.empty or "job" not in ev.columns:
            return set()
        starts = ev[(ev["kind"] == "attempt_start")].dropna(subset=["job"])
        jobs = starts.groupby("source")["job"].nunique()
        return set(jobs[jobs > 1].index) - set(inc.metrics["source"].dropna().unique())
    return computed.cached(inc, "job listings", ("events", "metrics"), find)


def _log_starts(inc: Incident) -> dict[str, list[tuple]]:
    """Each log source's starts: its first row, and each start-up sequence that begins after the
    source said its trainer ended (a restart loop appending to one log). (time, ref, rank, job,
    attempt, pid, run, within: how much later it may be) each, per rank where rows carry one."""
    ev, m = inc.events, inc.metrics
    # every metric row's step, read once where a step line after an end is weighed (_counts_again)
    step_of = functools.cache(lambda: column(m, "step").to_numpy(dtype=float, na_value=np.nan))
    frames = (m, ev)
    parts = []
    for k, df in enumerate(frames):
        if df.empty:
            continue
        at = _may_start(m, ev) if df is m else np.arange(len(df))
        df = df.iloc[at]
        cols = ["source", "time", "rank", "job", "attempt", "run", "time_approx", "time_within_s", "step", "time_placed"]
        part = df[[c for c in cols if c in df.columns]].copy()
        part["kind"] = df["kind"] if "kind" in df.columns else "metric"
        part["pid"] = column(df, "pid")
        part["pattern"] = column(df, "pattern") if "kind" in df.columns else None
        # where the row is, for the ref of the few rows that start something (every row's ref
        # as text would be the largest thing a watch's look holds: an hour of 1 Hz rank logs)
        part["frame"], part["at"] = k, at
        parts.append(part)
    if not parts:
        return {}
    rows = pd.concat(parts, ignore_index=True).dropna(subset=["source", "time"])
    # a transcript, a listing or a supervisor's log (where it says it started its program as a
    # process) is not a log of one trainer, and what the machine says of its GPUs (a kernel
    # log's Xid, a GPU capture's `[GPU is lost]`) starts nothing
    transcripts = set(ev.loc[ev["kind"].isin(("command", "launch", "gpu_query", "process_count")), "source"].dropna())
    supervisors = set(ev.loc[(ev["kind"] == "attempt_start") & (column(ev, "by") == "supervisor").fillna(False).astype(bool),
                             "source"].dropna())
    rows = rows[~rows["source"].isin(transcripts | supervisors | job_listings(inc)) & ~rows["kind"].isin(MACHINE_FAULTS)]
    rows = rows.assign(rank=_named_ranks(rows))
    first_row = rows.groupby("source")["time"].min()
    # a log whose lines name their ranks (a DDP trainer's `[rank1]`) holds its launcher's words
    # too, named for no rank: `torch.multiprocessing.spawn`'s teardown, the traceback it raises.
    # Those that come after the ranks' first lines start nothing of their own where they hold no
    # step: they are about the ranks' start (a launcher's lines before them, torchrun's agent's, are its start)
    ranked = rows[column(rows, "rank").notna()].groupby("source")["time"].min()
    # the logs of nothing but errors, dated or not (a log's steps without a time are its steps too)
    errors = set(_ENDS + CAUSES) | {"error", "signal"}
    all_errors = (set(rows["source"].unique()) - set(m["source"].dropna().unique())
                  - set(ev.loc[~ev["kind"].isin(errors), "source"].dropna().unique()))
    out: dict[str, list[tuple]] = {}
    for (source, rank), g in rows.groupby(["source", column(rows, "rank").fillna(-1)], sort=False, dropna=False):
        g = g.sort_values("time", kind="stable")
        kinds = g["kind"].to_numpy()
        # an error line is no start: a rank first named by its timeout (`[Rank 16] Watchdog
        # caught ...`) in a log whose earlier lines name no rank is the attempt writing that log
        # and a log of nothing but errors and signals (an error pasted alone, a log's tail kept
        # after a crash, a launcher's teardown: `Killing subprocess 3698707`) shows no start: what
        # ended a process, not that it began (detect/deaths `process_died`);
        # unless a launcher's files place it in an attempt (torchrun's attempt_1/0/stderr.log of a
        # rank that died in its start-up), or a scheduler's job its errors name in a log that
        # shows more of that job (in a log of nothing but errors, slurmstepd's `STEP 3495064.0
        # ... CANCELLED` places them in no start)
        named = any(c in g.columns and g[c].notna().any() for c in ("attempt", "job"))
        in_attempt = "attempt" in g.columns and g["attempt"].notna().any()
        errors_only = not in_attempt and (not named or source in all_errors) and set(kinds) <= errors
        errors_only |= (rank == -1 and source in ranked.index and g["time"].iloc[0] > ranked[source]
                        and "metric" not in set(kinds) and not named)
        starts = [] if errors_only or (kinds[0] in _ENDS + CAUSES and g["time"].iloc[0] > first_row[source]) else [0]
        if starts == [0] and kinds[0] not in _STARTS and rotated_from(source, set(first_row.index)) is not None:
            starts = []  # (a rotated log's later part goes on from the part before it: `_rotated_logs`)
        ended = None
        steps = column(g, "step").to_numpy(dtype=float, na_value=np.nan)
        saves = column(g, "pattern").isin(_NOT_START_UP).fillna(False).to_numpy(dtype=bool)
        # a log with no time of day placed start-up by start-up at the starts that wrote it
        # (clock/untimed.py): each new place is a start
        placed = column(g, "time_placed").astype("boolean").fillna(False).to_numpy(dtype=bool)
        moved = placed & np.r_[False, placed[:-1]] & (g["time"].diff() > pd.Timedelta(0)).to_numpy(dtype=bool)
        startup = None  # the first start-up line since the last step line
        quiet_before = None  # the time of that step line (or end)
        for i, k in enumerate(kinds):
            if moved[i] and i not in starts:
                starts.append(i)
                ended = None
            elif k in _ENDS:
                ended = g["time"].iloc[i] if ended is None else ended
            elif ended is not None and ((k in _STARTS and not saves[i])
                                        or (k == "metric" and _counts_again(inc, source, steps[i], ended, step_of))):
                starts.append(i)
                ended = None
            elif k == "metric" and startup is not None and startup > 0 and startup not in starts \
                    and quiet_before is not None and g["time"].iloc[startup] - quiet_before >= RESTART_QUIET \
                    and _counts_again(inc, source, steps[i], g["time"].iloc[startup], step_of):
                # a start-up, then steps from below those the log had reached: a new process
                # resumed there, though the log kept no word of the old one's end (it died
                # elsewhere: its traceback in nohup.out, a kill)
                starts.append(startup)
            if k == "metric" or k in _ENDS:
                startup = None
                quiet_before = g["time"].iloc[i]
            elif i in starts:
                startup = -1  # (a start begins here: the start-up lines after it are its own)
            elif k in _STARTS and not saves[i] and startup is None:
                startup = i
        # a launcher's log: every new (job, attempt) is a start of its own; its lines before the
        # first attempt it names (torchrun's configuration) belong to that attempt
        if g["attempt"].notna().any() if "attempt" in g.columns else False:
            change = g["attempt"].ne(g["attempt"].shift()) & g["attempt"].notna()
            starts = sorted(set(starts) | set(np.flatnonzero(change.to_numpy(dtype=bool, na_value=False))))
            # (and its lines after the last it names, the agent's own, to that last attempt: a log
            # read while torchrun writes it may end on them)
            g = g.assign(attempt=g["attempt"].bfill().ffill(), job=column(g, "job").bfill().ffill())
            starts = [i for i in starts if i == 0 or g["attempt"].iloc[i] != g["attempt"].iloc[i - 1]
                      or g["kind"].iloc[i] in _STARTS]
        for i in starts:
            r = g.iloc[i]
            # (a time that is only the earliest the line can have been written bounds no start)
            approx = r.get("time_approx")
            within = float(r["time_within_s"]) if pd.notna(approx) and approx and pd.notna(r.get("time_within_s")) else 0.0
            out.setdefault(source, []).append((
                r["time"], _ref(frames[r["frame"]].iloc[r["at"]]), None if rank == -1 else int(rank), _text(r.get("job")),
                _num(r.get("attempt")), _num(r.get("pid")), _text(r.get("run")), within))
    for source in out:
        out[source].sort(key=lambda x: x[0])
    return out


def _counts_again(inc: Incident, source: str, step: float, ended, step_of) -> bool:
    """Whether a step line after a log said its trainer ended counts from below the steps the
    log reached before that end: a new process writes it (a restart loop appending to one log,
    from scratch or from a checkpoint), not the one that logged an error and trained on.
    `step_of()`: every metric row's step, as floats."""
    if np.isnan(step):
        return False
    before = step_of()[computed.positions(inc, inc.metrics, "source", source, until=ended)]
    return bool(len(before)) and step < np.nanmax(before, initial=-np.inf)


def _named_ranks(rows: pd.DataFrame) -> pd.Series:
    """Each row's rank: its own, else the rank its log's file or run is named for
    (`train_rank16.log`, run `node003-rank16`)."""
    rank = column(rows, "rank").astype("Int64")
    by_name = rows["source"].map(lambda s: _rank_in(PurePosixPath(str(s)).name)).astype("Int64")
    if "run" in rows.columns:
        by_run = rows["run"].map(lambda r: _rank_in(r) if isinstance(r, str) else None).astype("Int64")
        by_name = by_name.fillna(by_run.groupby(rows["source"]).transform("first"))
    return rank.fillna(by_name)


def _rank_in(name: str) -> int | None:
    m = _NAMED_RANK.search(name)
    return int(m.group(1)) if m else None


def _may_start(m: pd.DataFrame, ev: pd.DataFrame) -> np.ndarray:
    """Positions of the metric rows of `_log_starts` that can start something, in order: of a
    log's metric rows (per rank, in time order) the first, and one that follows one of the log's
    event rows or names another job or attempt than the metric row before it. The others change
    nothing there (a metric row is neither an end nor a start), and they are most of an hour's
    rows: they are never copied out."""
    valid = np.flatnonzero((m["source"].notna() & m["time"].notna()).to_numpy(dtype=bool))
    if not len(valid):
        return valid
    m = m[[c for c in ("source", "time", "rank", "job", "attempt") if c in m.columns]]
    m = m if len(valid) == len(m) else m.iloc[valid]
    src, logs = pd.factorize(m["source"])
    ev_src = pd.Index(logs).get_indexer(ev["source"])  # a log with no metric row: -1
    rank = column(m, "rank").fillna(-1).to_numpy(dtype="int64")
    time = m["time"].to_numpy(dtype="datetime64[us]").view("i8")
    order = np.lexsort((np.arange(len(m)), time, rank, src))  # by log, rank, time, then as read
    src, rank, time = src[order], rank[order], time[order]
    same = np.zeros(len(m), dtype=bool)
    same[1:] = (src[1:] == src[:-1]) & (rank[1:] == rank[:-1])
    for col in ("job", "attempt"):
        if col in m.columns:
            v = pd.factorize(m[col])[0][order]  # missing: -1, as one value
            same[1:] &= v[1:] == v[:-1]
    if len(ev):
        # an event of the log between a metric row and the one before it (at or after the one
        # before: a log's event sorts after its metric rows of the same time)
        ev_rank = column(ev, "rank").fillna(-1).to_numpy(dtype="int64")
        ev_time = ev["time"].to_numpy(dtype="datetime64[us]").view("i8")
        for s_code, r in set(zip(ev_src.tolist(), ev_rank.tolist(), strict=True)):
            here = np.flatnonzero((src == s_code) & (rank == r))
            if len(here) < 2:
                continue
            t = np.sort(ev_time[(ev_src == s_code) & (ev_rank == r)])
            before = np.searchsorted(t, time[here], side="left")  # events earlier than each row
            same[here[1:]] &= before[1:] == np.searchsorted(t, time[here[:-1]], side="left")
    return np.sort(valid[order[~same]])


def _steps(inc: Incident, parts: list[tuple], runs: list[str], start, owned: set[str]) -> pd.DataFrame:
    """The attempt's step lines (step_lines.py): from its own log parts, else from its runs after
    its start in sources no attempt owns (a run with no log of its own: wandb)."""
    m = step_lines(inc)
    if parts:
        mine = _taken(m, _in_parts(inc, m, parts))
    elif runs:
        mine = m[m["run"].isin(runs) & (m["time"] >= start) & ~m["source"].isin(owned)]
    else:
        mine = m.iloc[:0]
    return mine if mine["time"].is_monotonic_increasing else mine.sort_values("time", kind="stable")


def _taken(df: pd.DataFrame, at: np.ndarray) -> pd.DataFrame:
    """The rows of `df` at the sorted, distinct positions `at`: `df` itself where they are all of
    its rows (an attempt that owns every log of a live folder would copy the whole of them, then
    a sorted copy, at every read)."""
    return df if len(at) == len(df) else df.iloc[at]


def _in_parts(inc: Incident, df: pd.DataFrame, parts: list[tuple]) -> np.ndarray:
    """Positions of `df`'s rows in the attempt's log parts ((source, begin, end): a source from
    `begin` up to the next attempt's part of it), in the frame's order."""
    picked = [computed.positions(inc, df, "source", source, since=begin, until=end) for source, begin, end in parts]
    return np.unique(np.concatenate(picked)) if picked else np.empty(0, dtype=np.intp)


def _rows_of(inc: Incident, parts: list[tuple], pids: set[int], kills: list | None = None,
             launch_ref: str | None = None, job_rows: list | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every metric row and every event row of the attempt's log parts, the events naming its
    PIDs, the operator's kills aimed at them (`kills`: (row index, PIDs) of each kill_sent event),
    the event rows that are its by its scheduler job or the PID file it writes (`job_rows`: row
    indexes, `_job_rows_of`, `_file_kills_of`),
    and what the shell said of the command that launched it (`Killed`, `exit=137` under a
    foreground launch): (metric rows, event rows), each in its frame's order."""
    out = []
    for df in (inc.metrics, inc.events):
        picked = [_in_parts(inc, df, parts)] if len(df) else []
        if len(df) and pids and "pid" in df.columns:
            picked += [computed.positions(inc, df, "pid", pid) for pid in pids]
        if len(df) and pids and df is inc.events and kills:
            picked.append(df.index.get_indexer([i for i, aimed in kills if aimed & pids]))
        if len(df) and df is inc.events and job_rows:
            picked.append(df.index.get_indexer(job_rows))
        if len(df) and launch_ref and "command_ref" in df.columns:
            said = computed.positions(inc, df, "command_ref", launch_ref)
            # The launch's output read as a log (a foreground torchrun `| tee`d) is its attempts'
            # log, divided among them by their parts as any log is (a launcher's restarts): of a
            # source the attempt has a part of, its rows are those of its part, taken above.
            own = [s for s, _, _ in parts]
            if own and len(said) and "source" in df.columns:
                said = said[~np.isin(df["source"].to_numpy(dtype=object)[said], own)]
            picked.append(said)
        at = np.unique(np.concatenate(picked)) if picked else np.empty(0, dtype=np.intp)
        out.append(_taken(df, at[at >= 0]))
    return out[0], out[1]


def _still_open(rows: pd.DataFrame, evidence_end, live: bool) -> pd.Series:
    """The rows that are no end yet: in a folder still being written, an end read from where a
    run's records stop with no exit record (killed, crashed, or still running) ends the attempt
    only where the evidence goes on after it; at the end of what the folder holds so far, the run
    is still writing as far as anything shows (a post-mortem reads it as the end it was)."""
    if not live or "open_end" not in rows.columns or evidence_end is None:
        return pd.Series(False, index=rows.index)
    return rows["open_end"].fillna(False).astype(bool) & (rows["time"] >= evidence_end - END_SLACK)


def says_no_error(rows: pd.DataFrame) -> pd.Series:
    """The tracebacks that end before their exception line (a paste or a file cut inside one):
    what went wrong is not in them, so they name no cause (the line that ended the process
    does: a launcher's `failed (exitcode: 1) local_rank: 2`); and those of a KeyboardInterrupt."""
    if "pattern" not in rows.columns:
        return pd.Series(False, index=rows.index)
    # (nor does one that ends on a KeyboardInterrupt: an interrupt, which its fact tells, is no error)
    return ((rows["kind"] == "traceback") & rows["pattern"].isin(("traceback", "KeyboardInterrupt"))).fillna(False).astype(bool)


# NCCL's return-code traces (`NCCL INFO init.cc:1014 -> 3`) say where an error code passed on its
# way up, not what went wrong: the line that says it (the exception raised with it, NCCL's WARN)
# names the cause where the log has one. So do torch.multiprocessing.spawn's traceback as it
# raises what ended one of its processes and its `-- Process 1 terminated with the following
# error:` (followed by that process's own traceback; `ProcessExitedException: process 1
# terminated with signal SIGKILL`, whose words are an event of their own): the launcher passing
# on its worker's end; mpirun's word that a process's status aborted the job and which rank did
# first, before the line that names the rank and its signal; and srun's word that it aborts or
# force-terminates a step, before slurmstepd's line that says why (`DUE TO TIME LIMIT`).
_PASSED_ON = ("nccl_error_trace", "spawn_raised", "ProcessRaisedException", "ProcessExitedException", "mpirun_nonzero",
              "mpirun_first_failed", "slurm_step_aborted", "slurm_force_terminated")


def said_first(rows: pd.DataFrame) -> pd.DataFrame:
    """Error rows in the order a reader names the cause by: the lines that say what went wrong,
    then the traces of where an error passed (_PASSED_ON), each in the order given."""
    if "pattern" not in rows.columns or rows.empty:
        return rows
    passed = rows["pattern"].isin(_PASSED_ON).fillna(False).astype(bool)
    return pd.concat([rows[~passed], rows[passed]]) if passed.any() else rows


def _latest_only(rows: pd.DataFrame, ref) -> bool:
    """Whether the row `ref` names has only the latest time it can have been written (`time_latest`:
    an undated line placed at what came after it)."""
    if not isinstance(ref, str) or "time_latest" not in rows.columns:
        return False
    return bool(rows.loc[rows["ref"] == ref, "time_latest"].fillna(False).astype(bool).any())


def _cause(rows: pd.DataFrame, since, end) -> dict:
    """What went wrong: the first error line from the last step to the end that says it
    (said_first; none where it ended without one, or is alive)."""
    none = {"cause_time": None, "cause_kind": None, "cause_ref": None, "cause_message": None, "cause_rank": None}
    if end is None or pd.isna(end) or "kind" not in rows.columns:
        return none
    ev = rows[rows["kind"].isin(CAUSES) & (rows["time"] >= since) & (rows["time"] <= end) & ~says_no_error(rows)]
    if ev.empty:
        return none
    r = said_first(ev.sort_values("time", kind="stable")).iloc[0]
    return {"cause_time": r["time"], "cause_kind": r["kind"], "cause_ref": _ref(r),
            "cause_message": signal_said(error_text(r["message"], r["kind"])) or None, "cause_rank": _num(r.get("rank"))}


def _own_status(ev: pd.DataFrame, a: _Attempt) -> pd.Series:
    """The rows of `ev` that are the status of attempt `a`'s process as what ran it reported it:
    the shell's status of the command that launched it, a line naming one of its PIDs (a
    script's bash: `./run.sh: line 10:   646 Killed   python3 train.py ...`), or its supervisor's
    word on the program it started as it (_supervisor_told). Each was written
    when the process had ended, whatever time its file gives it (a line without a time of its own
    takes the one before it)."""
    status = ev["kind"].isin(("exit", "killed"))
    launched = ((ev["command_ref"] == a.launch_ref).fillna(False).astype(bool)
                if a.launch_ref is not None and "command_ref" in ev.columns else False)
    named = ev["pid"].isin(a.pids).fillna(False).astype(bool) if a.pids and "pid" in ev.columns else False
    return status & (launched | named | _supervisor_told(ev, a))


def _unsettled(ev: pd.DataFrame, procs: pd.DataFrame | None, evidence_end, live: bool) -> pd.Series:
    """The tracebacks of a thread (`Exception in thread drafter-0:`) after which, in a folder
    still being written, the process listing has not yet said whether the process outlived the
    thread: it listed the process in the listing before the traceback or after it, and no
    listing since has had time to leave it out (the loop waits on the dead thread: the process
    lives on; the thread's error ends the run: the next listing has it gone). A post-mortem reads
    them against the whole listing (`_end`'s slack); a main thread's traceback ends its process."""
    if (not live or evidence_end is None or procs is None or "snapshots" not in procs.columns
            or "thread" not in ev.columns):
        return pd.Series(False, index=ev.index)
    listed = procs[procs["alive_until"].notna() & (procs["snapshots"].fillna(0) > 1)]
    if listed.empty:
        return pd.Series(False, index=ev.index)
    alive = listed["alive_until"].max()
    # the listing's interval, as its own rows show it (first to last sighting over the sightings)
    every = ((listed["last_seen"] - listed["first_seen"]) / (listed["snapshots"] - 1)).median()
    every = min(max(every, pd.Timedelta(seconds=1)), END_SLACK)
    due = ev["time"].clip(lower=alive) + every + pd.Timedelta(seconds=1)
    return (ev["kind"] == "traceback") & ev["thread"].notna() & (ev["time"] <= alive + every) & (evidence_end < due)


def _job_report(rows: pd.DataFrame) -> pd.Series:
    """The rows that are an interactive shell's report of a job it ran in the background
    (`[1]+  Exit 1  nohup python ...`, `[2]-  Killed ...`: the loader's `shell_job`)."""
    return rows["shell_job"].notna() if "shell_job" in rows.columns else pd.Series(False, index=rows.index)


def _end(rows: pd.DataFrame, a: _Attempt, last_alive, evidence_end, live: bool = False,
         procs: pd.DataFrame | None = None) -> dict:
    """How the attempt ended: the strongest terminal line of its own rows (`_rows_of`: its logs,
    the events naming its PIDs), up to a little after its last sign of life; None where it was
    alive when the evidence ends. The shell's report of a job it ran in the background is no
    time of its end (bash prints it at the next prompt): that end is its last sign of life."""
    none = {"end": None, "end_kind": None, "end_ref": None, "end_message": None, "exit_code": None, "signal": None}
    if "kind" not in rows.columns:
        return none  # only metric rows: nothing says how it ended
    ev = rows[rows["kind"].isin(_ENDS)]
    if "pattern" in ev.columns:
        # a traceback that ends on a KeyboardInterrupt is the interrupt that stopped it (a reader
        # that made no event of what its last line states: a run's console in its wandb file)
        interrupted = ((ev["kind"] == "traceback") & (ev["pattern"] == "KeyboardInterrupt")).fillna(False).astype(bool)
        if interrupted.any():
            ev = ev.assign(kind=ev["kind"].where(~interrupted, "interrupt"))
    ev = ev[~_still_open(ev, evidence_end, live) & ~_unsettled(ev, procs, evidence_end, live)]
    # an end is at the end: a traceback an hour before the last step (a thread that died while the
    # rest trained on) did not end the attempt
    # (a transcript dated only by its `date`s places its lines up to APPROX_S early: the shell's
    # `Killed` after a foreground command may be dated before the command's own first log line)
    # (a start nothing dates, a launch typed before the transcript's first `date`: its end is read
    # from its last sign of life alone)
    lo = last_alive - END_SLACK if pd.isna(a.start) else max(a.start, last_alive - END_SLACK)
    approx = ev["time_approx"].fillna(False).astype(bool) if "time_approx" in ev.columns else False
    # the shell's status of the command that launched it (`...; echo exit=$?`, `Killed`) is printed
    # when that command ended, whatever time the transcript gives its output (a prompt's time
    # dates the lines under it: the status of an hour's run is dated by its command)
    own = _own_status(ev, a)
    # (a shell's report of a background job comes at the next prompt, whenever the job ended)
    ev = ev[(((ev["time"] >= lo) | (approx & (ev["time"] >= lo - pd.Timedelta(seconds=APPROX_S))))
             & (ev["time"] <= last_alive + END_SLACK)) | own | (_job_report(ev) & (ev["time"] >= lo))]
    # a kill is its end only if it was gone soon after (a kill that failed is another story)
    ev = ev[(ev["kind"] != "kill_sent") | (last_alive <= ev["time"] + END_SLACK)]
    if ev.empty:
        return none
    rank = {k: i for i, k in enumerate(_ENDS)}
    # of the kills sent to it, the last is the one that ended it: it lived on after the earlier
    # ones (a SIGINT a background job ignores, then the SIGTERM it did not)
    at = ev["time"].array.asi8
    order = np.where(ev["kind"].to_numpy(dtype=object) == "kill_sent", -at, at)
    r = ev.assign(_r=ev["kind"].map(rank), _o=order).sort_values(["_r", "_o"], kind="stable").iloc[0]
    message = str(r["message"]).strip().splitlines()
    # (its own status is not before its last sign of life: it was printed after the job ended)
    late = own.loc[r.name] and not r["time"] >= last_alive or _job_report(ev).loc[r.name] and r["time"] >= last_alive
    # (a time that is only the earliest the line can have been written, before its process was
    # last seen alive: it ended after that sighting)
    approx_at = r.get("time_approx")
    late = late or bool(pd.notna(approx_at) and approx_at and r["time"] < last_alive)
    when = last_alive if late else r["time"]
    return {"end": when if pd.isna(a.start) else max(when, a.start), "end_kind": r["kind"], "end_ref": _ref(r),
            "end_message": message[-1][:300] if message else None,
            "exit_code": _num(r.get("exit_code")), "signal": _text(r.get("signal"))}
