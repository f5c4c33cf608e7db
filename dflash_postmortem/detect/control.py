"""Process control that did not do what it was meant to: a kill that stopped nothing, and the
process that survived it.

A `kill` that fails (`No such process`, `Operation not permitted`) is only an incident when what
it was meant to stop lived on: then the survivor keeps its GPUs and every relaunch shares them.
The survivor is the process the kill named (for `kill -- -N`, the process N whose group the
operator assumed), seen alive after the kill in `ps`, in per-process GPU samples, or still
logging training steps. A kill that raised no error fails the same way when what it reached
lives on: a trainer under `nohup` ignores the SIGHUP of `tmux kill-session`, one that handles
SIGTERM may never exit. The model says what each kill reached (attempts.kill_reach); a process
of it seen alive more than a minute later was not stopped by it.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from ..model import computed as memo
from ..model.attempts import attempts, kill_reach
from ..model.kills import failed_targets, is_group_kill, kill_pids
from ..model.progress import steps_of
from ..model.step_lines import step_lines
from ..schema import column
from . import findings
from .per_host import judged

# After a kill, a process seen this much later was not stopped by it (ps samples every few s).
_GRACE = pd.Timedelta(seconds=5)
# A kill that raised no error: a trainer that handles SIGTERM (a checkpoint, a clean stop) may take
# this long to exit; seen alive after it, the kill did not stop it.
STOP_WITHIN = pd.Timedelta(seconds=60)
# Signals sent to end a process (`kill -USR1` asks for a dump, `-0` only checks, `-STOP` pauses).
_ENDING = ("SIGTERM", "SIGKILL", "SIGINT", "SIGHUP", "SIGQUIT", "SIGABRT")


def _run_of(inc: Incident, pid: int) -> str | None:
    """The run a PID belongs to: its attempt's (model/attempts.py: its own lines name it), else
    a PID file's or a launch's that names the PID. (A supervisor's `started train.py pid 682`
    names the PID in the supervisor's log, whose run is that log's, not the trainer's.)"""
    att = attempts(inc)
    mine = att[att["pids"].map(lambda pids: pid in pids)] if len(att) else att
    if len(mine) and isinstance(mine["run"].iloc[0], str):
        return mine["run"].iloc[0]
    ev = inc.events
    named = ev[(ev["pid"] == pid) & ev["run"].notna()]
    return str(named["run"].iloc[0]) if len(named) else None


def _seen_after(inc: Incident, pid: int, run: str | None, after) -> dict:
    """How long `pid` was seen alive after `after`, and by what: ps, GPU samples, step lines."""
    seen: dict = {"until": None, "refs": [], "how": [], "memory": {}}

    def note(times: pd.Series, how: str, rows: pd.DataFrame) -> None:
        later = times[times > after + _GRACE]
        if later.empty:
            return
        last = later.max()
        seen["until"] = last if seen["until"] is None else max(seen["until"], last)
        seen["how"].append(how)
        seen["refs"] += findings.refs(rows.loc[later.index].tail(1))

    procs = inc.processes[inc.processes["pid"] == pid]
    if len(procs):
        note(procs["last_seen"], "listed by ps", procs)
    gp = inc.gpu_processes[(inc.gpu_processes["pid"] == pid) & (inc.gpu_processes["time"] > after)]
    if len(gp):
        note(gp["time"], "holding GPU memory", gp)
        per_gpu = gp.dropna(subset=["gpu"]).groupby("gpu")["used_memory_mib"].max()
        seen["memory"] = {int(g): float(m) for g, m in per_gpu.items()}
    if run is not None:
        lines = step_lines(inc)
        steps = lines[lines["run"] == run]
        # a relaunch that reuses the run's name writes steps of its own: the killed process's
        # are those before the next start of that run
        att = attempts(inc)
        nxt = att.loc[(att["start"] > after) & att["runs"].map(lambda runs: run in runs).astype(bool), "start"]
        if len(nxt):
            steps = steps[steps["time"] < nxt.min()]
        if len(steps):
            note(steps["time"], f"logging training steps (run {run})", steps)
    return seen


@judged
def detect_failed_kills(inc: Incident) -> pd.DataFrame:
    """A finding per failed kill whose target lived on, and one for the survivor it left."""
    ev = inc.events
    kills = ev[ev["kind"] == "kill_failed"].sort_values("time", kind="stable")
    rows = []
    targets = failed_targets(kills)
    for _, k in kills.iterrows():
        target = targets.get(k.name)
        if pd.isna(target):
            continue
        pid = abs(int(target))
        group = is_group_kill(k)
        run = _run_of(inc, pid)
        seen = _seen_after(inc, pid, run, k["time"])
        if seen["until"] is None:
            continue  # nothing it named lived on: a harmless error line
        command_ref = column(kills, "command_ref").get(k.name)
        kill_refs = [r for r in (command_ref, k["ref"]) if isinstance(r, str)]
        proc = inc.processes[inc.processes["pid"] == pid]
        pgid = proc["pgid"].dropna()
        why = str(k["message"]).strip()
        kill = findings.finding(
            "kill_failed", k["time"], k["time"], "warning", kill_refs,
            {"pid": pid, "group": group, "run": run, "message": why, "refused": True,
             "process_group": int(pgid.iloc[0]) if len(pgid) else None, "still": seen["how"],
             "until": seen["until"], "signal": k.get("signal") if isinstance(k.get("signal"), str) else None, "aimed_again_at": None})
        rows += [kill, _survivor(k, kill, pid, run, seen, kill_refs, why)]
    told = {r for r in column(kills, "command_ref") if isinstance(r, str)}
    rows += _unstopped(inc, told)
    return findings.frame(rows)


def _survivor(k: pd.Series, kill: dict, pid: int, run: str | None, seen: dict, kill_refs: list[str],
              why: str) -> dict:
    return findings.finding(
        "survivor", k["time"], seen["until"], "critical", kill_refs[-1:] + seen["refs"],
        {"pid": pid, "run": run, "until": seen["until"], "memory_mib_by_gpu": seen["memory"], "still": seen["how"]},
        caused_by=[findings.cause(kill["id"], f"the kill meant to stop PID {pid} failed: {why}", kill_refs)])


def _unstopped(inc: Incident, told: set[str]) -> list[dict]:
    """Kills that raised no error, whose processes lived on (`told`: the commands whose failure
    an error line already tells). What shows a process was not stopped, as a reader sees it: its
    attempt logged a training step after the kill (a process that is stopping trains no more), a
    later kill had to be aimed at it, or it was still alive STOP_WITHIN after."""
    rows = []
    ev = inc.events
    reach = kill_reach(inc)
    att = attempts(inc)
    for i, pids in sorted(reach.items(), key=lambda kv: ev.loc[kv[0], "time"]):
        k = ev.loc[i]
        ref = k.get("command_ref") if isinstance(k.get("command_ref"), str) else k.get("ref")
        if ref in told or k.get("signal") not in _ENDING or pd.isna(k["time"]):
            continue
        for pid in sorted(pids):
            run = _run_of(inc, pid)
            seen = _seen_after(inc, pid, run, k["time"])
            if seen["until"] is None:
                continue
            stepped = _stepped_after(inc, att, pid, k["time"] + _GRACE)
            again = [j for j, other in reach.items()
                     if pid in other and k["time"] + _GRACE < ev.loc[j, "time"] <= seen["until"] + _GRACE]
            if stepped is None and not again and seen["until"] - k["time"] < STOP_WITHIN:
                continue
            if stepped is not None and "logging training steps" not in " ".join(seen["how"]):
                seen["how"].append("logging training steps")
                seen["refs"] += findings.refs(stepped.tail(1))  # its last step after the kill
                seen["until"] = max(seen["until"], stepped["time"].max())
            why = _typed(inc, ref) or str(k["message"]).strip()  # the command as typed, where a shell shows it
            refs = [r for r in dict.fromkeys((ref, k.get("ref"))) if isinstance(r, str)]
            kill = findings.finding(
                "kill_failed", k["time"], k["time"], "warning", refs,
                {"pid": pid, "group": is_group_kill(k), "run": run, "message": why, "refused": False,
                 "process_group": None, "still": seen["how"], "until": seen["until"], "signal": k["signal"],
                 "aimed_again_at": ev.loc[again[0], "time"] if again else None})
            rows += [kill, _survivor(k, kill, pid, run, seen, refs, f"{k['signal']} did not end it")]
    return rows


def _typed(inc: Incident, ref) -> str | None:
    """The command line a shell shows at `ref`."""
    if not isinstance(ref, str):
        return None
    typed = memo.rows_where(inc, "events", "ref", ref)
    typed = typed[typed["kind"] == "command"]
    return str(typed["message"].iloc[0]).strip() if len(typed) else None


def _stepped_after(inc: Incident, att: pd.DataFrame, pid: int, after) -> pd.DataFrame | None:
    """The training steps the attempt holding `pid` logged after `after` (None: none)."""
    mine = att[att["pids"].map(lambda p: pid in p)]
    if mine.empty:
        return None
    lines = steps_of(inc, mine.iloc[0])
    lines = lines[lines["time"] > after]
    return lines if len(lines) else None


def stopped_by(inc: Incident, pids: list[int], start, end) -> pd.Series | None:
    """The operator's command, between start and end, that killed one of `pids`."""
    ev = inc.events
    cmds = ev[(ev["kind"] == "command") & (ev["time"] >= start) & (ev["time"] <= end)]
    cmds = cmds[cmds["message"].fillna("").str.contains(r"\b(?:kill|pkill|killall)\b")]
    for _, c in cmds.sort_values("time", kind="stable").iterrows():
        if kill_pids(inc, str(c["message"]), c["time"]) & set(pids):
            return c
    return None
