"""Deaths: an attempt that trained, then ended of an error (a traceback, CUDA or host out of
memory, the OOM killer, a collective's timeout, a launcher or scheduler saying it failed, a
non-zero exit, a signal nobody in the evidence sent), and what came after it: the next attempt of
the same job, who started it and how long after, and the steps it did again when it resumed from
a checkpoint (`Resumed from checkpoint ... at step N`).

An attempt whose process outlived the error is a stall (stall.py), not a death; one the operator
killed, or that stopped cleanly, is neither. One a limit on its time ended (`timeout`'s exit 124,
Slurm's time limit) is told as such (`time_limit`), with the same cost: the steps since its last
checkpoint, done again by the attempt that resumed it.

A death with no start in the evidence (`process_died`): a log that holds what ended a process (a
collective's timeout, an OOM, a main thread's traceback, a launcher's failure table, a fatal
signal) and no launch of its run or step it could place, as an error pasted into an issue is, or the
tail of a log kept after a crash. No attempt owns its lines, so `training_died` cannot tell it;
it is told per log, what went wrong first, how it ended and the ranks its lines name.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..incident import Incident
from ..model import computed as memo
from ..model.attempts import (
    CAUSES,
    END_SLACK,
    GONE,
    attempts,
    ended_badly,
    kill_reach,
    open_ended,
    said_first,
    says_no_error,
    supervisor_gave_up,
    trainer_pids,
)
from ..model.progress import lines_of, reached_at, resumed_from, resumes, steps_of
from ..model.states import states
from ..model.step_lines import counted, lent, named_step
from ..said import error_text
from ..schema import BAR_ELAPSED_S, column, ref_line, ref_lines
from ..shell_words import exit_meaning, only_helpers, under_timeout, windows_crash_said
from . import findings
from .finding_text import one_line
from .per_host import judged

_ERRORS = ("traceback", "oom", "oom_kill", "timeout", "nccl_timeout", "attempt_end", "exit", "run_end", "killed", GONE)
# A limit on the job's time that ended it (coreutils `timeout`'s status; Slurm's `DUE TO TIME
# LIMIT` and TIMEOUT state, which its loaders give as a timeout of `what` "slurm time limit"): a
# stop the job's own command or scheduler asked for, not an error, though what was trained since
# the last checkpoint is lost.
_TIME_LIMIT = "time limit"
# Ends that were asked of the run (a limit on its time, a signal sent from outside): warnings
_ASKED = ("time_limit", "stopped_by_signal")
# The pattern of a log line that says a signal was sent to a PID (loaders/training_log/patterns.py)
SIGNAL_SENT = "signal_sent"
# A ChildFailedError table's entry of a worker the agent stopped (launcher_lines: `elastic_failure`)
_STOPPED_BY_LAUNCHER = "elastic_failure"
_AFTER_END = pd.Timedelta(seconds=5)  # the table comes a moment after the attempt's end
# Kills by the OOM killer this close are one death of the log (one storm of memory pressure);
# farther apart, two (detect_unplaced_deaths)
_STORM_S = 60.0
# What says who killed a process that a bare `Killed` reports
_KILLERS = ("oom_kill",)
# More than a CUDA context or two takes (a few hundred MiB each): memory another program held
_CONTEXTS_MIB = 2048.0
# A launcher's reaction to a worker's failure, printed before the failure's own line: it stops
# the others (torchrun's `Sending process 812914 closing signal SIGTERM`, DeepSpeed's `Killing
# subprocess 3698707`, torch.multiprocessing.spawn's `Terminating process 26079 via signal
# SIGTERM`), then gives up (torchrun's ChildFailedError)
_STOPPERS = ("elastic_closing_signal", "deepspeed_killing_subprocess", "spawn_terminating")
_REACTIONS = (*_STOPPERS, "ChildFailedError")
# A launcher's word that a signal from outside told it to stop (it then stops its workers)
_LAUNCHER_SIGNALLED = ("elastic_death_signal", "elastic_signal_exception")
# how long before its report of a failure a launcher may stop the others (torchrun waits up to
# 30 s for them to exit, then kills them)
_REACTED_WITHIN = pd.Timedelta(seconds=60)
# The load report's formats whose lines tell a process's end: its own output, and what the kernel
# or systemd killed (`Out of memory: Killed process 25315 (python3)`)
_PROCESS_LOGS = ("training-log", "kernel-log", "systemd-journal")
# What ends a process, as a line says it (of a main thread's traceback, a non-zero exit, an end
# that was no success: `_fatal`).
_FATAL = ("oom_kill", "oom", "killed", "timeout", "nccl_timeout", "exit", "traceback", "attempt_end", "signal")
# A traceback's frame that saves (torch.save and its `_save`, a trainer's `save_checkpoint` or
# `_save_checkpoint`, `save_pretrained`, safetensors' `save_file`, accelerate's `save_state`,
# torch.distributed.checkpoint's `save`): the run died writing its state, not computing a step.
_SAVING = re.compile(r'^\s*File "[^"]*", line \d+, in (?:_*save\w*|\w*_save(?:_\w+)?)\s*$', re.M)
# A traceback's frame that evaluates (a trainer's `evaluate`, `validate`, `validation_step`,
# `eval_epoch`, Hugging Face's `evaluation_loop` and `prediction_step`, a `test_step`): the run
# died evaluating, not computing a training step (the loop #57: `in evaluate` as it ran out of memory).
# (by whole names: a model's `predict_proposals` or a `validate_args` runs in a training step too)
_EVALUATING = re.compile(r'^\s*File "[^"]*", line \d+, in _*(?:(?:evaluate|evaluation|eval|validate|validation|valid|val|test)'
                         r'(?:_(?:step|epoch|loop|one_epoch|model|batch|run|dataset))?|prediction_step)\s*$', re.M)
# A bar's label that evaluates (`Epoch 15 (validation) ...: 2%|`, `Evaluating: 40%|`, `Testing`)
_EVALUATING_BAR = re.compile(r"(?i)\b(?:eval|valid|test)")
# What a failed write says, where the error itself tells: the OS's words, torch.save's writer
_WRITE_FAILED = re.compile(r"No space left on device|Errno 28\b|ENOSPC|Disk quota exceeded|EDQUOT|"
                           r"file write failed|unexpected pos \d+ vs \d+|iostream error", re.I)
# A process's GPU memory "climbed" before it ran out where it ended at least this much above
# where training began (and 2 GiB more), rising between most samples that moved: memory kept
# step after step (a leak) reads so; one request far larger than the rest (a long batch) does not.
_CLIMB_RATIO, _CLIMB_MIB, _RISING = 1.5, 2048.0, 0.75
# A full file system in the operator's `df` (transcript/disk_usage.py) this near a death that
# wrote tells why the write failed: the operator looks after the crash, or saw it fill before.
_DF_NEAR = pd.Timedelta(minutes=30)


@judged
def detect_deaths(inc: Incident) -> pd.DataFrame:
    att = attempts(inc)
    st = states(inc)
    redo = resumes(inc)
    rows = []
    for _, a in att.iterrows():
        if pd.isna(a["first_step"]) or (a["end_kind"] not in _ERRORS and not _signalled(inc, a)):
            continue
        mine = st[st["attempt"] == a["attempt"]]
        if (mine["state"] == "stalled").any() or not (mine["state"].isin(("exited", "killed"))).any():
            continue
        # (what started again began after it ended: an attempt of the job that began while this
        # one still ran, a sibling the evidence could not tie to it, started nothing again)
        later = att[(att["start"] > a["start"]) & (att["start"] >= a["end"] - END_SLACK)]
        nxt = later[later["job"] == a["job"]].head(1)
        bar = _unfinished(inc, a)
        kind = _how_it_ended(inc, a, restarted=len(nxt) > 0, unfinished=bar is not None)
        if kind is None:
            continue
        ran = [name for name in (a["script"], a["program"]) if isinstance(name, str)]
        if nxt.empty and ran:
            # a death is started again by the next start of its script, a relaunch by hand that
            # shares nothing else with it (its own log, its own run name); of a start a
            # supervisor made, the script it said it started (`started train.py (attempt 3/3,
            # pid 913)`), whatever script the operator typed to start the supervisor
            nxt = later[later["script"].isin(ran)].head(1)
        lines = lines_of(inc, a)
        last = lines.tail(1)
        gave_up = supervisor_gave_up(inc, a)
        numbers = {"restarted_at": None, "restarted_by": None, "next_attempt": None, "resumed_step": None,
                   "redone_steps": 0, "reached_step": None,
                   "gave_up": None if gave_up is None else gave_up["said"],
                   "gave_up_at": None if gave_up is None else gave_up["time"],
                   "bar_stopped": None if bar is None or a["end_kind"] != GONE else bar}
        if len(nxt):
            b = nxt.iloc[0]
            # (the step a checkpoint its log names: a restart that began lower without saying so is
            # told where it came up, present/sentences.py)
            r = redo[(redo["attempt"] == b["attempt"]) & redo["said"]]
            numbers.update(restarted_at=b["start"], restarted_by=b["by"], next_attempt=b["attempt"])
            if len(r):
                numbers.update(resumed_step=int(r["resumed_step"].iloc[0]), redone_steps=int(r["redone_steps"].iloc[0]),
                               reached_step=int(r["reached_step"].iloc[0]))
            elif (told := resumed_from(inc, b)[0]) and pd.notna(reached := steps_of(inc, a)["step"].max()):
                at = told[0]
                # its resume line, where the job's steps do not say it (another job, a log of its
                # own); at or past this one's last step (a checkpoint saved as it stopped), nothing
                # was done again (no `reached_step`: the sentence says so)
                numbers.update(resumed_step=at)
                if at < reached:
                    numbers.update(reached_step=int(reached), redone_steps=int(reached) - at)
        # what went wrong (the first error after the last step) and how it ended (the line that
        # said it was over) may be apart: a rank's timeout, then the agent's "failed" line
        error = a["cause_message"] or (error_text(a["end_message"]) if kind == "stopped_by_signal" else _status_text(a))
        when = a["cause_time"] if pd.notna(a["cause_time"]) else a["end"]
        last_t = reached_at(last).iloc[0] if len(last) else None
        silent = (when - last_t).total_seconds() if last_t is not None else None
        on_rank = a["cause_rank"] is not None and not pd.isna(a["cause_rank"])
        refs = [r for r in dict.fromkeys((a["cause_ref"], a["end_ref"])) if isinstance(r, str)]
        hung = silent is not None and silent >= _hang_s(lines)
        saving = _saving(inc, a, when)
        evaluating = not saving and _evaluating(inc, a, when)
        full = _full_disk(inc, when) if saving or _WRITE_FAILED.search(str(error)) else None
        causes = [findings.cause(findings.event_id(refs[0]), f"what went wrong: {one_line(error)}", refs[:1])] \
            if refs else []
        if full is not None:
            causes.append(findings.cause(findings.event_id(full["ref"]), f"a full file system: {full['message']}",
                                         [full["ref"]]))
            refs.append(full["ref"])
        # (the loaders' `oom`: a device's memory, CUDA's or another accelerator's; the kernel's OOM killer is `oom_kill`)
        memory = _memory_before(inc, a, when) if "oom" in (a["cause_kind"], a["end_kind"]) else None
        rows.append(findings.finding(
            kind, when, a["end"], "warning" if kind in _ASKED else "critical",
            refs + findings.refs(last) + (memory["refs"] if memory else [])
            + ([gave_up["ref"]] if gave_up is not None else []),
            {"run": a["run"], "script": a["script"], "attempt": a["attempt"], "started": a["start"],
             "started_by": a["by"], "first_step_time": a["first_step"], "end_message": a["end_message"] or None,
             "pid": next(iter(trainer_pids(inc, a)), None), "last_step_time": last_t,
             "error": error, "error_rank": int(a["cause_rank"]) if on_rank else None, "ended": a["end"],
             "silent_s": silent, "hung": hung, "silent_logs": _silent_logs(inc, a, last_t) if hung else [],
             "stopped_ranks": _stopped_ranks(inc, a) if hung else [],
             "stopped_pids": _stopped_pids(_near_end(inc, a, nxt["start"].iloc[0] if len(nxt) else None)),
             "doing": "saving" if saving else "evaluating" if evaluating else "training", "thread": _thread_end(inc, a),
             "memory_before": memory,
             "disk_full": full["message"] if full is not None else None,
             "disk_full_at": full["time"] if full is not None else None,
             "saved": _saved_after(inc, a, when),
             **_cause_wait(inc, a), **numbers},
            caused_by=causes, within_s=_within(inc, a["cause_ref"])))
    return findings.frame(rows)


def _saving(inc: Incident, a: pd.Series, when) -> bool:
    """Whether a traceback of the attempt's logs as it died (a chained exception is two) has a
    frame that saves."""
    ev = inc.events
    if pd.isna(when) or "kind" not in ev.columns:
        return False
    tb = ev[(ev["kind"] == "traceback") & ev["source"].isin(a["sources"] or []) & ((ev["time"] - when).abs() <= END_SLACK)]
    return bool(tb["message"].astype(str).str.contains(_SAVING).any())


def _evaluating(inc: Incident, a: pd.Series, when) -> bool:
    """Whether the attempt died evaluating: a traceback of its logs as it died has a frame that
    evaluates, or the last bar its logs drew before it died was an evaluation's."""
    ev = inc.events
    if pd.isna(when) or "kind" not in ev.columns:
        return False
    mine = ev[ev["source"].isin(a["sources"] or [])]
    tb = mine[(mine["kind"] == "traceback") & ((mine["time"] - when).abs() <= END_SLACK)]
    return bool(tb["message"].astype(str).str.contains(_EVALUATING).any()) or _last_bar_evaluates(
        mine[mine["time"] <= when + END_SLACK].sort_values("time", kind="stable"))


def _last_bar_evaluates(lines: pd.DataFrame) -> bool:
    """Whether the last bar these lines drew (in their order) was an evaluation's (its label
    before the bar)."""
    bars = lines[lines["kind"] == "progress"]
    if bars.empty:
        return False
    label = str(bars["message"].iloc[-1]).split("%|")[0]
    return _EVALUATING_BAR.search(label) is not None


def _memory_before(inc: Incident, a: pd.Series, when) -> dict | None:
    """Of a death of CUDA out of memory: how the attempt's GPU memory went while it trained, from
    its first step to the error, as a reader of the GPU samples sees it: its processes' memory
    (nvidia-smi's process list), else the memory used on its GPUs. `climbed`: it grew steadily
    (`_CLIMB_RATIO`), else it was steady and one request asked for more than was free."""
    if pd.isna(a["first_step"]) or pd.isna(when):
        return None
    gp = inc.gpu_processes
    pids = trainer_pids(inc, a)
    rows = gp[gp["pid"].isin(pids) & (gp["time"] >= a["first_step"]) & (gp["time"] <= when)] if len(gp) else gp
    col = "used_memory_mib"
    if rows.empty:
        g = inc.gpus
        rows = g[g["gpu"].isin(a["gpus"]) & (g["time"] >= a["first_step"]) & (g["time"] <= when)] \
            if len(g) and a["gpus"] else g.iloc[:0]
        col = "memory_used_mib"
    held = rows.groupby("time", sort=True)[col].sum(min_count=1).dropna() if len(rows) else pd.Series(dtype=float)
    if len(held) < 4:
        return None
    moves = np.diff(held.to_numpy(dtype=float))
    moved = moves[moves != 0]
    first, last = float(held.iloc[0]), float(held.iloc[-1])
    climbed = (last >= _CLIMB_RATIO * first and last - first >= _CLIMB_MIB
               and len(moved) > 0 and float((moved > 0).mean()) >= _RISING)
    ends = rows[rows["time"].isin((held.index[0], held.index[-1]))]
    return {"climbed": bool(climbed), "from_mib": first, "from_time": held.index[0], "to_mib": last,
            "to_time": held.index[-1], "refs": findings.refs(ends)}


def _full_disk(inc: Incident, when) -> dict | None:
    """The `df` row nearest the death that showed a full file system, within _DF_NEAR of it."""
    ev = inc.events
    if pd.isna(when) or "kind" not in ev.columns:
        return None
    full = ev[(ev["kind"] == "disk_full") & ((ev["time"] - when).abs() <= _DF_NEAR)]
    if full.empty:
        return None
    return full.loc[(full["time"] - when).abs().idxmin()].to_dict()


def _within(inc: Incident, ref) -> float:
    """How much later than its time the line at `ref` may be (a log with no time of its own,
    placed at its launch: clock/untimed.py), else 0."""
    if not isinstance(ref, str) or not {"time_approx", "time_within_s"} <= set(inc.events.columns):
        return 0.0
    said = memo.rows_where(inc, "events", "ref", ref)
    within = said.loc[said["time_approx"].fillna(False).astype(bool), "time_within_s"].dropna()
    return float(within.max()) if len(within) else 0.0


def _silent_logs(inc: Incident, a: pd.Series, last_step) -> list[str]:
    """Of a hang that ended in an error: the attempt's logs with no line after its last step
    while another of its logs wrote one (each rank writing its own file: the rank the others
    waited for said nothing; theirs timed out)."""
    m = inc.metrics
    # the logs that logged steps (a launcher's own output logs none)
    logs = sorted(set(m.loc[m["source"].isin(a["sources"]), "source"].dropna()))
    if len(logs) < 2 or last_step is None:
        return []
    said = set()
    for frame in (m, inc.events):
        said |= set(frame.loc[frame["source"].isin(logs) & (frame["time"] > last_step), "source"].dropna())
    return [s for s in logs if s not in said] if said else []


def _near_end(inc: Incident, a: pd.Series, restarted=None) -> pd.DataFrame:
    """The attempt's own log lines from its start to a moment after its end (a launcher's lines
    on how it ended come then), and before the next attempt of its job started (`restarted`:
    a launcher that restarts at once writes the next round's lines in that moment)."""
    ev = inc.events
    if ev.empty or pd.isna(a["end"]):
        return ev.iloc[:0]
    mine = ev["source"].isin(a["sources"] or []) & (ev["time"] >= a["start"]) & (ev["time"] <= a["end"] + _AFTER_END)
    if restarted is not None and not pd.isna(restarted):
        mine &= ev["time"] < restarted
    return ev[mine]


def _stopped_ranks(inc: Incident, a: pd.Series) -> list[int]:
    """Of a hang that ended in an error: the ranks the launcher stopped with a signal (torchrun's
    table: `exitcode : -15`, `Signal 15 (SIGTERM) received`) that logged no error of their own
    in the attempt: in a job of two, the rank the other waited for."""
    if not {"rank", "signal", "pattern"} <= set(inc.events.columns):
        return []
    mine = _near_end(inc, a)
    stopped = mine[(mine["pattern"] == _STOPPED_BY_LAUNCHER) & mine["signal"].notna() & mine["rank"].notna()]
    said = mine[mine["kind"].isin(CAUSES) & mine["rank"].notna()]
    own = {int(r) for r in said["rank"]} | ({int(a["cause_rank"])} if pd.notna(a["cause_rank"]) else set())
    return sorted({int(r) for r in stopped["rank"]} - own)


def _stopped_pids(lines: pd.DataFrame) -> list[int]:
    """The processes a launcher stopped as it gave up, by the PIDs its own lines name (torchrun's
    `Sending process 60552 closing signal SIGTERM`, DeepSpeed's `Killing subprocess 3698707`):
    the others of a job whose one worker failed went down by its hand, not of their own error."""
    if "pattern" not in lines.columns or "pid" not in lines.columns:
        return []
    told = lines[lines["pattern"].isin(_STOPPERS).fillna(False).astype(bool) & lines["pid"].notna()]
    return sorted({int(p) for p in told["pid"]})


def _hang_s(lines: pd.DataFrame) -> float:
    """How long without a step line reads as a hang before the error rather than a crash in
    stride: five of the attempt's usual gaps between lines, and at least 10 s."""
    gaps = lines["time"].diff().dt.total_seconds().dropna()
    return max(10.0, 5 * float(gaps.median())) if len(gaps) else 10.0


def _thread_end(inc: Incident, a: pd.Series) -> str | None:
    """The thread whose traceback is all that ends the attempt (`Exception in thread drafter-0:`),
    where nothing else shows its process ended (no listing or GPU sample saw it go, no status):
    a thread's error need not end its process (the loop may wait on it for good), so what the
    evidence shows is that the run stopped training then, not that it died."""
    if a["end_kind"] != "traceback" or not isinstance(a["end_ref"], str) or trainer_pids(inc, a):
        return None
    ended = memo.rows_where(inc, "events", "ref", a["end_ref"])
    threads = ended["thread"].dropna() if "thread" in ended.columns else ()
    return str(threads.iloc[0]) if len(threads) else None


def _status_text(a: pd.Series) -> str | None:
    """The line that ended the attempt, an exit status with what it means (`exit=124 (timed out:
    timeout sent its signal)`, `exit=137 (killed by SIGKILL)`) where the line does not say it."""
    said = a["end_message"]
    if a["end_kind"] != "exit" or a["exit_code"] is None or pd.isna(a["exit_code"]) or not isinstance(said, str):
        return said
    _, meaning = exit_meaning(int(a["exit_code"]), after_timeout=under_timeout(a["command"] or ""))
    return said if meaning.lower() in said.lower() or int(a["exit_code"]) == 0 else f"{said} ({meaning})"


def _how_it_ended(inc: Incident, a: pd.Series, restarted: bool, unfinished: bool = False) -> str | None:
    """Of an attempt that trained, then ended: `time_limit` where a limit on its time ended it,
    `training_died` where an error or a signal did, None where it stopped by itself or someone
    stopped it. An end no line tells (its process gone from the listing) is a death where its
    cause is known (its terminal hung up), its job was started again (someone found it dead) or
    its training bar stopped short of its total; else a run that finished without a last word
    reads the same, and nothing is said."""
    if _time_limited(inc, a):
        return "time_limit"
    if _signalled(inc, a):
        return "stopped_by_signal"
    if a["end_kind"] == GONE or open_ended(a):
        return "training_died" if isinstance(a["cause_kind"], str) or restarted or unfinished else None
    return "training_died" if _an_error(a) else None


def _unfinished(inc: Incident, a: pd.Series) -> list[int] | None:
    """[count, total] of its training bar's last state where it is short of its total
    (`720/65536`): the run had not done what it set out to do when it went, whatever its last
    word; else None."""
    ev = inc.events
    if "bar_total" not in ev.columns or not a["sources"]:
        return None
    bars = ev[ev["source"].isin(a["sources"]) & (ev["kind"] == "progress") & ev["bar_total"].notna()]
    if "bar_elapsed_s" in bars.columns:
        bars = bars[bars["bar_elapsed_s"].isna()]  # a bar beside training (an evaluation's) is not its work
    if bars.empty:
        return None
    last = bars.sort_values("time", kind="stable").iloc[-1]  # (a log's rows are in line order)
    done = pd.notna(last["bar_n"]) and last["bar_n"] < last["bar_total"]
    return [int(last["bar_n"]), int(last["bar_total"])] if done else None


def _time_limited(inc: Incident, a: pd.Series) -> bool:
    """Its end was a time limit: `timeout`'s own status (124 with SIGTERM: shell_words.exit_meaning),
    or a scheduler's time limit for its job or in its logs as it ended."""
    if a["end_kind"] == "exit" and a["exit_code"] == 124 and a["signal"] == "SIGTERM":
        return True
    ev = inc.events
    if "what" not in ev.columns or pd.isna(a["end"]):
        return False
    limits = ev[ev["what"].astype(str).str.contains(_TIME_LIMIT) & ((ev["time"] - a["end"]).abs() <= END_SLACK)]
    mine = limits["source"].isin(a["sources"] or [])
    if "job" in limits.columns and isinstance(a["job"], str):
        mine |= (limits["job"] == a["job"]).fillna(False).astype(bool)
    return bool(mine.any())


def _saved_after(inc: Incident, a: pd.Series, when) -> list | None:
    """[step, time] of the last checkpoint its logs say it saved from `when` (what ended it) to
    its end: a trainer that handles its stop signal saves where it is, and a restart resumes
    there (what it trained is not lost)."""
    ev = inc.events
    if "pattern" not in ev.columns or not a["sources"] or pd.isna(when):
        return None
    until = max(a["end"], a["last_alive"]) + END_SLACK
    saved = ev[(ev["pattern"] == "checkpoint_save") & ev["source"].isin(a["sources"]) & (ev["time"] >= when)
               & (ev["time"] <= until)]
    steps = [(s, t) for m, t in zip(saved["message"], saved["time"], strict=True) if (s := named_step(m)) is not None]
    return [steps[-1][0], steps[-1][1]] if steps else None


def _signalled(inc: Incident, a: pd.Series) -> bool:
    """Its end was a signal something outside its shell said it sent it: a preemption handler's
    `sent SIGTERM to pid 669`, a scheduler's or a watchdog's (not the operator's own `kill`, whose
    stop is the operator's to tell): a stop asked of it, not an error, though the time until it
    came back, and what it trained since its last checkpoint, are lost."""
    if a["end_kind"] != "kill_sent" or not isinstance(a["end_ref"], str):
        return False
    said = memo.rows_where(inc, "events", "ref", a["end_ref"])
    return bool((said["pattern"] == SIGNAL_SENT).any()) if "pattern" in said.columns else False


def _an_error(a: pd.Series) -> bool:
    """The end is an error, not a clean stop or a kill someone sent: an exit status of 0 or a
    message saying the run stopped is not a death."""
    if a["end_kind"] == "exit":
        return a["exit_code"] not in (None, 0) and not pd.isna(a["exit_code"])
    if a["end_kind"] == "run_end":  # (a tracked run's record: its exit status, else its state)
        return ended_badly(a)
    text = str(a["end_message"] or "")
    return not re.search(r"\b(?:completed|succeeded|success)\b", text, re.I)


@judged
def detect_unplaced_deaths(inc: Incident) -> pd.DataFrame:
    """A death no attempt accounts for: per log of the evidence whose lines no attempt owns (none
    read its start or its steps), the first error of the lines that say a process ended, and the
    last of those."""
    ev = inc.events
    # a process's own output and the kernel's or systemd's kills: not a shell transcript (its
    # `Terminated` is the operator's own kill)
    logs = {f.path for f in inc.load_report.files if f.format in _PROCESS_LOGS} if inc.load_report else set()
    if ev.empty or "kind" not in ev.columns:
        return findings.frame([])
    att = attempts(inc)
    owned = {s for sources in att["sources"] for s in (sources or ())} if len(att) else set()
    pids = {p for ps in att["pids"] for p in (ps or ())} if len(att) else set()
    mine = ev[ev["source"].isin(logs - owned) & ev["kind"].isin(_FATAL + CAUSES)]
    mine = pd.concat([mine, _shell_reports(inc, ev[~ev["source"].isin(logs | owned)])])
    if "pid" in mine.columns:
        mine = mine[~mine["pid"].isin(pids)]
    mine = mine[~_reports_an_end(mine, att)]
    # (an error an attempt ended by, though no part of its log is the attempt's: an undated
    # traceback a log begins with, model/attempts `_undated_end_of`)
    if len(att) and len(mine):
        mine = mine[~mine["ref"].isin(set(att["cause_ref"].dropna()) | set(att["end_ref"].dropna()))]
    rows = []
    for source, whole_log in mine.groupby("source", sort=True):
        for lines in _victims(findings.in_file_order(whole_log)):
            rows += _unplaced(inc, source, lines)
    return findings.frame(rows)


def _shell_reports(inc: Incident, ev: pd.DataFrame) -> pd.DataFrame:
    """A shell's own report, in a transcript, of how a command it ran died of a signal (`line 6:
    3842 Killed  python train.py`, zsh's `14957 segmentation fault (core dumped)  python train.py`),
    where no kill in the evidence reached that process: a death of its own, as a process log's
    `Killed` is (a helper's, `tail -f`'s, is none)."""
    named = column(ev, "job_command").notna() | column(ev, "pid").notna()
    said = ev[(ev["kind"] == "killed") & named] if "kind" in ev.columns else ev.iloc[:0]
    said = said[~column(said, "job_command").map(lambda c: isinstance(c, str) and only_helpers(c)).astype(bool)]
    if said.empty:
        return said
    reached = set().union(*kill_reach(inc).values())
    said = said[~column(said, "pid").isin(reached).fillna(False).astype(bool)]
    # with what the session printed of why (the kernel's `Killed process 19417 (python)` a
    # `dmesg` typed after it showed, the command's own traceback)
    why = ev[ev["source"].isin(set(said["source"])) & ev["kind"].isin(_KILLERS + CAUSES)]
    return pd.concat([said, why]).sort_index()


def _reports_an_end(lines: pd.DataFrame, att: pd.DataFrame) -> pd.Series:
    """The status lines naming no process (`train.py exited with code 137, restarting in 5s`, a
    loop's own) written just after an attempt ended: what ran it telling that end, which the
    attempt accounts for."""
    status = lines["kind"].isin(("exit", "killed")) & column(lines, "pid").isna()
    ends = sorted(att["end"].dropna()) if len(att) and status.any() else []
    after_an_end = lines["time"].map(lambda t: pd.notna(t) and any(e <= t <= e + END_SLACK for e in ends))
    return status & after_an_end.astype(bool)


def _victims(lines: pd.DataFrame) -> list[pd.DataFrame]:
    """One log's lines per death: the OOM killer names each process it kills (`Killed process
    25635 (python)`); kills far apart in time (the kernel's own clock where the log has no
    date: its uptime) are deaths of their own (a run, then its relaunch killed again days
    later), kills together are one (an OOM storm that took four processes in a second). Each
    death takes the lines before its first kill, since the last death's. A log whose kills
    have no time, or name one process, is one death."""
    kills = lines["kind"].eq("oom_kill").to_numpy(dtype=bool) & column(lines, "pid").notna().to_numpy(dtype=bool)
    if len(set(column(lines, "pid")[kills])) < 2:
        return [lines]
    at = np.flatnonzero(kills)
    wall = lines["time"].iloc[at]
    clock = np.where(wall.notna(), wall.map(lambda t: t.timestamp() if pd.notna(t) else np.nan),
                     pd.to_numeric(column(lines, "uptime_s").iloc[at], errors="coerce")).astype(float)
    apart = np.r_[False, np.diff(clock) > _STORM_S]  # (a gap with no clock on either side is none)
    episode = np.cumsum(apart)
    # each line's death: that of the first kill at or after it (the lines after the last, the last's)
    owner = episode[np.minimum(np.searchsorted(at, np.arange(len(lines))), len(at) - 1)]
    return [lines[owner == e] for e in range(episode[-1] + 1)]


# c10d's tag of a process group other than the default one (`[PG 3 Rank 0]`, `[PG ID 2 PG GUID 5 Rank 1]`)
_OTHER_GROUP = re.compile(r"\[PG (?:ID )?(?!0\b)\d+")


def _collective_wait(first: pd.Series, ev: pd.DataFrame) -> dict:
    """Of a death a collective's watchdog reports: how long the collective had waited (`ran for
    600083 milliseconds`: the hang began that long before), which of its group's collectives
    it was (`SeqNum=1`: the first, so the ranks never met once), and whether the ranks' watchdogs
    name different collectives of one group (`out_of_step`)."""
    if first["kind"] != "nccl_timeout":
        return {"waited_s": None, "collective": None, "out_of_step": None}
    ran, seq = first.get("ran_ms"), first.get("seq")
    if _OTHER_GROUP.search(str(first["message"])):
        seq = None  # (a sub-group's first collective may come late in training)
    # (a watchdog's line without a time of its own took the last dated line's: it was written then or
    # later, and where the collective began after that line, the wait's length later still)
    borrowed = bool(lent(first.to_frame().T).iloc[0]) and pd.notna(first["time"])
    return {"waited_s": float(ran) / 1000 if ran is not None and pd.notna(ran) else None,
            "collective": findings.whole(seq) if seq is not None and pd.notna(seq) else None,
            "out_of_step": _out_of_step(ev, first),
            "lent_at": first["time"].isoformat() if borrowed else None}


def _out_of_step(ev: pd.DataFrame, first: pd.Series) -> list[list] | None:
    """[rank, collective, its number] of each rank whose watchdog, in the group of `first`'s,
    names a collective, where they are not all the same one: ranks that called different
    collectives (torchtune #1107: rank 1 in _ALLGATHER_BASE #313, rank 0 in ALLREDUCE #315 after a
    save only one of them ran) wait for each other until the timeout. None where they agree, where
    only one rank says, or where a rank names several (its lines are of several groups, or of
    several hosts' ranks of that number: no one place each rank waited)."""
    if "seq" not in ev.columns or "op" not in ev.columns:
        return None
    said = ev[(ev["kind"] == "nccl_timeout") & ev["seq"].notna() & ev["rank"].notna()]
    # (a rank named in a group that is not the default one, `[rank13]:... [Rank 1] Watchdog ...`,
    # waits in a group these lines may not share)
    in_group = column(said, "group_rank")
    said = said[in_group.isna() | (in_group.astype(object) == said["rank"].astype(object))]
    group = said["message"].astype(str).str.extract(_GROUP_TAG, expand=False).fillna("")
    tag = _GROUP_TAG_RX.search(str(first["message"]))
    said = said[group == (tag.group(1) if tag else "")]
    waits = said[["rank", "op", "seq"]].astype(str).drop_duplicates()
    if waits["rank"].nunique() < 2 or waits["rank"].duplicated().any() or len(waits[["op", "seq"]].drop_duplicates()) < 2:
        return None
    return sorted([int(float(r)), o, int(float(q))] for r, o, q in waits.itertuples(index=False))


# the process group a c10d line names (`[PG ID 11 PG GUID 119 Rank 1]`, `[PG 3 Rank 0]`): "" for the
# default group's lines, which name none
_GROUP_TAG = r"\[(PG [^\]]*?) Rank \d+\]"
_GROUP_TAG_RX = re.compile(_GROUP_TAG)


def _cause_wait(inc: Incident, a: pd.Series) -> dict:
    """`_collective_wait` of the line that says what went wrong in an attempt."""
    ev = inc.events
    said = ev[ev["ref"] == a["cause_ref"]] if isinstance(a["cause_ref"], str) and "ref" in ev.columns else ev.iloc[:0]
    return _collective_wait(said.iloc[0], ev) if len(said) else {"waited_s": None, "collective": None, "out_of_step": None,
                                                                  "lent_at": None}


def _unplaced_doing(inc: Incident, source: str, first: pd.Series) -> str | None:
    """What a process was doing as it died, where its log says: its traceback's frames (saving,
    evaluating), else the last bar the log drew up to its death's line (an evaluation's)."""
    said = str(first["message"]) if first["kind"] == "traceback" else ""
    if _SAVING.search(said):
        return "saving"
    if _EVALUATING.search(said):
        return "evaluating"
    at = ref_line(first["ref"]) if isinstance(first.get("ref"), str) else None
    if at is None:
        return None
    ev = inc.events
    bars = ev[(ev["source"] == source) & (ev["kind"] == "progress")]
    if bars.empty:
        return None
    return "evaluating" if _last_bar_evaluates(findings.in_file_order(bars[(ref_lines(bars["ref"]) <= at[1]).to_numpy()])) \
        else None


def _unplaced(inc: Incident, source: str, lines: pd.DataFrame) -> list[dict]:
    """The death one log's lines tell, if they tell one (detect_unplaced_deaths)."""
    fatal = _fatal(lines)
    ended = lines[fatal]
    if ended.empty:
        return []
    # the first line that says what went wrong or that a process ended; not a launcher's
    # reaction to it (it stops the other workers, then gives up)
    reaction = lines["pattern"].isin(_REACTIONS).fillna(False).astype(bool) if "pattern" in lines.columns \
        else pd.Series(False, index=lines.index)
    said = said_first(lines[(lines["kind"].isin(CAUSES).astype(bool) | fatal) & ~reaction & ~says_no_error(lines)])
    cause = said[said["kind"].isin(CAUSES)].head(1)
    first = said.iloc[0] if len(said) else ended.iloc[0]
    # a bare `Killed` (a shell's word for SIGKILL) is told by the line that says who killed
    # it, where the log has one (the kernel's `Out of memory: Killed process 7899 (python)`)
    killer = said[said["kind"].isin(_KILLERS)] if first["kind"] == "killed" else said.iloc[:0]
    # (what the kill's own line says beyond the word: `DataLoader worker (pid 629) is killed ...`)
    bare = error_text(first["message"], first["kind"]) if len(killer) else ""
    first = killer.iloc[0] if len(killer) else first
    last = ended.iloc[-1]
    error = error_text(first["message"], first["kind"]) or str(first["kind"])
    # the command a shell's report of the death says it ran (`line 6:  3842 Killed  python x.py`,
    # the line typed before a `Killed`)
    command = next((c for c in column(ended[ended["kind"] == "killed"], "job_command") if isinstance(c, str) and c), None)
    if command and command in error:  # (the story names the command once)
        error = " ".join(error.replace(command, " ").split())
    if bare and bare.rstrip(".") != "Killed":
        error = f"{bare.rstrip('.')}; {error}"
    signal = first.get("signal") if isinstance(first.get("signal"), str) else None
    code = first.get("exit_code")
    if signal is None and code is not None and pd.notna(code):
        # (a status past 128 is death by a signal, as a shell, docker, Kubernetes and Slurm report
        # it: `container failed with non-zero exit code: 132`, SIGILL)
        signal = exit_meaning(int(code))[0]
    if signal is None and first["kind"] == "traceback":
        # (what its exception line states is an event at the same line: `Exception: process 1
        # terminated with signal SIGKILL`)
        stated = column(lines[lines["ref"] == first["ref"]], "signal").dropna()
        signal = str(stated.iloc[0]) if len(stated) else None
    if signal and signal not in error:  # `failed (exitcode: -9)`: SIGKILL
        error = f"{error.rstrip('.')} ({signal})"
    elif (crash := windows_crash_said(error)) is not None:  # `exit status 3221225477`: a native crash
        error = f"{error.rstrip('.')} ({crash})"
    ranks = sorted({int(r) for r in ended["rank"].dropna()} | {int(r) for r in cause["rank"].dropna()}) \
        if "rank" in lines.columns else []
    refs = findings.unique([_ref_of(first), _ref_of(last)])
    start = first["time"] if pd.notna(first["time"]) else last["time"]
    # a launcher reacts to a worker's end before it reports it (torchrun stops the others, waits
    # for them, then logs the failure): a death its report tells was over by its first reaction
    # (of those just before the report, since a line that told another end)
    if first.get("pattern") not in _REACTIONS and first["kind"] not in CAUSES:
        near = reaction & (lines["time"] < start) & (lines["time"] >= start - _REACTED_WITHIN)
        told = lines.loc[fatal & ~reaction & (lines["time"] < start), "time"]
        if len(told):
            near &= lines["time"] > told.max()
        if near.any():
            start = lines.loc[near, "time"].min()
    own = inc.events[inc.events["source"] == source]  # every line of the log, not only its ends and causes
    return [findings.finding(
        "process_died", start, last["time"] if pd.notna(last["time"]) else start, "critical", refs,
        {"source": source, "error": error, "error_kind": str(first["kind"]), "pid": findings.whole(first.get("pid")),
         "process": first.get("process_name") if isinstance(first.get("process_name"), str) else None,
         "killed": _killed(lines),
         "command": command,
         "end_message": (error_text(last["message"], last["kind"]) or None) if last["ref"] != first["ref"] else None,
         "ended": last["time"] if pd.notna(last["time"]) else None, "ranks": ranks,
         "exit_code": findings.whole(last.get("exit_code")), "signal": last.get("signal") if isinstance(last.get("signal"), str) else None,
         "died_of": signal, "memory_said": _memory_said(own) if signal == "SIGKILL" else None,
         "started_again": _started_again(own, first),
         **_held_by_another(first),
         **_collective_wait(first, inc.events),
         "doing": _unplaced_doing(inc, source, first),
         "stopped_pids": _stopped_pids(lines), "why_unknown": said.empty and bool(_stopped_pids(ended)),
         "launcher_signalled": first.get("pattern") in _LAUNCHER_SIGNALLED,
         "ctrl_c": bool(column(lines, "keyed").fillna(False).astype(bool).any()),
         **_steps_in(inc.metrics, source)},
        caused_by=[findings.cause(findings.event_id(refs[0]), f"what went wrong: {one_line(error)}", refs[:1])],
        within_s=_within(inc, refs[0]))]


# A log's own word that the machine's memory ran out (loaders/training_log/patterns.py): what
# the kernel's OOM killer answers with SIGKILL.
_MEMORY_RAN_OUT = ("host_out_of_memory", "shared_memory_full")


def _memory_said(lines: pd.DataFrame) -> list | None:
    """[its words, its ref] of the first line of the log saying the machine's memory ran out."""
    said = lines[column(lines, "pattern").isin(_MEMORY_RAN_OUT).fillna(False).astype(bool)]
    if said.empty:
        return None
    return [error_text(said["message"].iloc[0], "error"), said["ref"].iloc[0]]


def _held_by_another(first: pd.Series) -> dict:
    """Of a CUDA OOM that names the processes holding the GPU's memory (PyTorch 2.1+): the one
    holding more than this process itself (`Process 118636 has 71.62 GiB memory in use ... this
    process has 21.24 GiB`): another program filled the GPU."""
    held, own = first.get("holder_mib"), first.get("this_process_mib")
    none = {"held_by": None, "own_mib": None, "others_mib": None}
    if first["kind"] != "oom" or own is None or pd.isna(own):
        return none
    if isinstance(first.get("holders"), str) and pd.notna(held) and held > own:
        return {**none, "held_by": first["holders"], "own_mib": float(own)}
    # where it names no holder: the GPU's capacity less what was free and what this process held
    # (`7.92 GiB total capacity; ... 24.56 MiB free; 86.00 MiB reserved in total by PyTorch`): what
    # others held, past a CUDA context's share
    cap, free = first.get("capacity_mib"), first.get("free_mib")
    if cap is None or free is None or pd.isna(cap) or pd.isna(free):
        return none
    others = float(cap) - float(free) - float(own)
    return {**none, "others_mib": others, "own_mib": float(own)} if others > max(2 * float(own), _CONTEXTS_MIB) else none


def _started_again(lines: pd.DataFrame, told: pd.Series) -> list | None:
    """[its words, its ref] of the first start its log says came after the line that told the
    death (a launcher's `Starting worker group` after `will restart worker group`, a supervisor's
    restart of the program that ended: not another program it runs)."""
    at = ref_line(told["ref"]) if isinstance(told.get("ref"), str) else None
    if at is None or "kind" not in lines.columns:
        return None
    starts = lines[lines["kind"].eq("attempt_start").fillna(False).astype(bool)]
    program = told.get("program")
    if isinstance(program, str):
        starts = starts[column(starts, "program").isna() | (column(starts, "program") == program)]
    starts = starts[(ref_lines(starts["ref"]) > at[1]).to_numpy(dtype=bool)]
    if starts.empty:
        return None
    first = findings.in_file_order(starts).iloc[0]
    return [error_text(first["message"], "attempt_start") or str(first["message"]), first["ref"]]


def _killed(lines: pd.DataFrame) -> list[str]:
    """The processes the OOM killer killed, as `PID 15784 (python3)`, in the order it did."""
    kills = lines[lines["kind"].eq("oom_kill") & column(lines, "pid").notna()]
    names = column(kills, "process_name")
    said = (f"PID {int(p)}" + (f" ({n})" if isinstance(n, str) and n else "") for p, n in zip(kills["pid"], names, strict=True))
    return list(dict.fromkeys(said))


def _steps_in(metrics: pd.DataFrame, source: str) -> dict:
    """The step lines a log holds (its training, though nothing placed it in an attempt: lines
    with no date or year) and the last step among them."""
    mine = metrics[metrics["source"] == source] if len(metrics) else metrics
    # (a bar drawn at 0 s shows the count it starts from, no step taken: model/step_lines.py)
    mine = mine[counted(mine)] if len(mine) else mine
    steps = mine["step"].dropna() if len(mine) else pd.Series(dtype=float)
    # a progress bar's elapsed time says how long it had trained, where nothing dates its start
    ran = mine.loc[mine["metric"] == BAR_ELAPSED_S, "value"] if len(mine) else mine
    return {"steps_logged": int(steps.nunique()), "last_step": int(steps.max()) if len(steps) else None,
            "bar_ran_s": float(ran.max()) if len(ran) and pd.notna(ran.max()) else None}


def _fatal(lines: pd.DataFrame) -> pd.Series:
    """The lines that say a process ended: not a thread's traceback (the process may live on) or
    one the file cut before its exception, not an exit of status 0, not an attempt that succeeded."""
    kind = lines["kind"]
    ok = kind.isin(_FATAL).fillna(False).astype(bool)
    if "thread" in lines.columns:
        ok &= ~((kind == "traceback") & lines["thread"].notna())
    ok &= ~says_no_error(lines)  # a traceback cut off before its exception line says nothing yet
    if "exit_code" in lines.columns:
        ok &= ~((kind == "exit") & (lines["exit_code"] == 0).fillna(False).astype(bool))
    if "reason" in lines.columns:
        ok &= ~((kind == "attempt_end") & (lines["reason"] == "SUCCEEDED").fillna(False).astype(bool))
    return ok


def _ref_of(row: pd.Series) -> str | None:
    return row["ref"] if isinstance(row.get("ref"), str) else None
