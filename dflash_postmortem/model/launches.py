"""What each start led to, as the restart, throughput and recovery detectors read it: its
flags, its process, its log, its run, its first step (one row per attempt of model.attempts).

A start is only known to have trained when its process appears, its log fills and steps are
logged. A python process that was already there before it proves nothing.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from ..incident import Incident
from ..schema import column, ref_line
from ..shell_words import environment_changes, invocation, is_wrapper_process, log_target
from . import computed as memo
from .attempts import attempts
from .step_lines import step_lines

STARTUP_SLACK = pd.Timedelta(seconds=60)  # ps START has minute resolution


def launch_events(inc: Incident) -> pd.DataFrame:
    """Launch events with the command line, script, flags and log path each one names.

    The command line is the transcript's `command` event at the same reference when there is
    one (a launch event's message may be a summary); flags are parsed from it here.
    """
    ev = inc.events
    rows = ev[ev["kind"] == "launch"].copy()
    if rows.empty:
        return rows.assign(script=pd.Series(dtype=object), flags=pd.Series(dtype=object),
                           command=pd.Series(dtype=object))
    cmds = ev[(ev["kind"] == "command") & ev["ref"].notna()].drop_duplicates("ref").set_index("ref")["message"]
    # (one pass of a loop typed in one line ran its own command: the loop's variable filled in)
    rows["command"] = [p if isinstance(p, str) and p else cmds.get(r, m) if isinstance(r, str) else m
                       for p, r, m in zip(column(rows, "loop_pass"), rows["ref"], rows["message"], strict=True)]
    parsed = [invocation(str(c)) for c in rows["command"]]
    program = column(rows, "program")
    rows["script"] = [p[0] or (PurePosixPath(str(g)).name if isinstance(g, str) else None)
                      for p, g in zip(parsed, program, strict=True)]
    rows["flags"] = [p[1] for p in parsed]
    given = column(rows, "log_path")
    rows["log_path"] = [g.strip("'\"") if isinstance(g, str) and g else log_target(str(c))
                        for g, c in zip(given, rows["command"], strict=True)]
    return rows.sort_values("time", kind="stable").reset_index(drop=True)


def environment(inc: Incident, launch_ref) -> dict[str, tuple[str, str]]:
    """The environment variables the operator set for a launch, where the evidence shows them:
    `export`s typed earlier in the same transcript and not `unset` since, and the command's own
    `A=1 python ...`; name -> (value, the ref of the line that set it)."""
    envs = memo.cached(inc, "launch environments", ("events",), lambda: _environments(inc))
    return envs.get(launch_ref, {}) if isinstance(launch_ref, str) else {}


def _environments(inc: Incident) -> dict[str, dict[str, tuple[str, str]]]:
    """Each launch ref's environment (`environment`), walking each transcript's commands in the
    order its lines hold them."""
    ev = inc.events
    # (a launch is a background or launcher start, or a foreground command run into its log: any
    # command a start's ref can name)
    cmds = ev[(ev["kind"] == "command") & ev["ref"].notna()].drop_duplicates("ref")
    out: dict[str, dict[str, tuple[str, str]]] = {}
    if cmds.empty:
        return out
    for _, rows in cmds.groupby("source", sort=False):
        lines = [split[1] if (split := ref_line(r)) is not None else 0 for r in rows["ref"]]
        exported: dict[str, tuple[str, str]] = {}
        for i in sorted(range(len(rows)), key=lambda k: lines[k]):
            ref, message = rows["ref"].iloc[i], str(rows["message"].iloc[i])
            kept, given = environment_changes(message)
            if exported or given:
                out[ref] = {**exported, **{name: (value, ref) for name, value in given.items()}}
            for name, value in kept.items():
                if value is None:
                    exported.pop(name, None)
                else:
                    exported[name] = (value, ref)
    return out


def verdicts(inc: Incident, launch_ref) -> pd.DataFrame:
    """The `dflash-postmortem launch` verdict lines printed for one launch (empty for others)."""
    ev = inc.events
    if "launch_ref" not in ev.columns or not isinstance(launch_ref, str):
        return ev.iloc[:0]
    return ev[(ev["kind"] == "launch_check") & (ev["launch_ref"] == launch_ref)].sort_values("time", kind="stable")


def is_trainer(command: str, script: str | None) -> bool:
    """A process running the launched script itself, not a shell or session wrapping it."""
    if not command or not script or script not in command:
        return False
    return not is_wrapper_process(command)


def _log_sources(inc: Incident) -> pd.DataFrame:
    """Each log-like source: its file name and the first and last time it says anything."""
    parts = [df[["source", "time"]] for df in (inc.metrics, inc.events) if not df.empty]
    if not parts:
        return pd.DataFrame(columns=["source", "name", "first", "last"])
    both = pd.concat(parts).dropna()
    g = both.groupby("source")["time"].agg(["min", "max"]).reset_index()
    g.columns = ["source", "first", "last"]
    g["name"] = [PurePosixPath(str(s)).name for s in g["source"]]
    return g


def outcomes(inc: Incident) -> pd.DataFrame:
    """One row per attempt (model.attempts: every start, whatever showed it): its start as a
    launch row (time, within_s: how much later it may truly be, launched, ref, command, script,
    flags, log_path and what its launch event says), and
    what appeared after it: its process, its log, its run, its first step, the processes of its
    program that predate it (`stale`) and those of its own job (`job_pids`: a launcher's agent
    outlives the attempts it starts)."""
    return memo.cached(inc, "outcomes", ("events", "processes", "metrics"), lambda: _outcomes(inc))


def _outcomes(inc: Incident) -> pd.DataFrame:
    att = attempts(inc)
    if att.empty:
        return att
    ev = inc.events
    said = ev[ev["ref"].notna() & (ev["kind"] == "launch")].drop_duplicates("ref").set_index("ref")
    logs = _log_sources(inc)
    tok = step_lines(inc)
    procs = inc.processes
    commands = procs["command"].fillna("").astype(str)
    out = []
    for _, a in att.iterrows():
        launch = said.loc[a["launch_ref"]].to_dict() if a["launch_ref"] in said.index else {}
        # `time` is the attempt's start as the model places it; `launched`, when the launch
        # event itself was written (a transcript dated only by its `date`s places it roughly)
        row = {**launch, "launched": a["launched"], "time": a["start"], "ref": a["launch_ref"] or a["start_ref"], "attempt": a["attempt"],
               "by": a["by"], "command": a["command"] or launch.get("message"), "script": a["script"],
               "flags": a["flags"], "log_path": a["log_path"], "run": a["run"], "runs": a["runs"], "host": a["host"],
               "within_s": a["start_within_s"]}
        row.setdefault("pid", a["pids"][0] if len(a["pids"]) == 1 else None)
        mine = procs[procs["pid"].isin(a["pids"]) & commands.map(lambda c, s=a["script"]: is_trainer(c, s) or
                                                                  _runs_python(c)).astype(bool)]
        mine = _by_seen(mine)
        row["process"] = mine.iloc[0].drop(["seen", "start"]) if len(mine) else None
        same = _by_seen(procs[commands.map(lambda c, s=a["script"]: is_trainer(c, s)).astype(bool)]) \
            if a["script"] else procs.iloc[:0].assign(seen=None, start=None)
        # its own job's processes are not stale: the launcher's agent outlives each attempt it starts
        ours = {p for pids in att.loc[att["job"] == a["job"], "pids"] for p in pids} if a["job"] is not None else set()
        ours |= set(a["pids"])
        row["job_pids"] = sorted(ours)
        # when it was over: its last sign of life, where something said it ended
        row["ended"] = a["last_alive"] if pd.notna(a["end"]) else pd.NaT
        row["stale"] = same[(same["start"] < a["start"].floor("min")) & ~same["pid"].isin(ours)] if len(same) else same
        log = None
        if a["sources"]:
            # the log its command redirected into, where it names one, else the first it wrote
            named = [src for src in a["sources"] if isinstance(a["log_path"], str)
                     and PurePosixPath(src).name == PurePosixPath(a["log_path"]).name]
            known = logs[logs["source"] == (named or a["sources"])[0]]
            if len(known):
                log = known.iloc[0].copy()
                log["first"] = max(log["first"], a["start"])
        row["log"] = log
        first = tok[(tok["time"] == a["first_step"]) & (tok["source"].isin(a["sources"]) if a["sources"] else True)] \
            if pd.notna(a["first_step"]) else tok.iloc[:0]
        row["first_step"] = first.iloc[0] if len(first) else None
        if row["first_step"] is None and pd.notna(a["first_step"]):
            # a step line nothing dates (model/attempts.py `_undated_steps`): the attempt trained from its start
            row["first_step"] = pd.Series({"time": a["first_step"], "ref": a["first_step_ref"],
                                           "source": (a["first_step_ref"] or "").rpartition(":")[0] or None})
        out.append(row)
    return pd.DataFrame(out)


def _by_name(oc: pd.DataFrame) -> dict[str, np.ndarray]:
    """Each name a run is known by -> the positions of the launches of it: every name its
    attempt goes by (its --run-name, and the run its log's lines are read as where they name
    none: the log file's name), in launch order."""
    names: dict[str, list[int]] = {}
    for i, (run, runs) in enumerate(zip(oc["run"], column(oc, "runs"), strict=True)):
        for name in dict.fromkeys(([run] if isinstance(run, str) else []) + (list(runs) if isinstance(runs, list) else [])):
            names.setdefault(name, []).append(i)
    return {k: np.asarray(v) for k, v in names.items()}


def _runs_python(command: str) -> bool:
    return bool(re.search(r"(?:^|/)python[\d.]*\s|\s-m\s[\w.]+|\.py\b", command)) and not is_wrapper_process(command)


def _by_seen(procs: pd.DataFrame) -> pd.DataFrame:
    """Processes ordered by when they were first seen (`seen`), with `start` as the best start
    time known: what a launch's lookup searches."""
    seen = procs["first_seen"].fillna(procs["started"])
    start = procs["started"].fillna(procs["first_seen"])
    out = procs.assign(seen=seen, start=start).dropna(subset=["seen"])
    return out.sort_values("seen", kind="stable")


def launch_of(inc: Incident, run, before, *, trained: bool = False) -> pd.Series | None:
    """The last launch of `run` (by run name, log file, or --run-name) before `before`; with
    `trained`, the last one that reached a training step (a run name reused by a start that never
    trained is not the run whose pace was measured)."""
    oc = outcomes(inc)
    if oc.empty:
        return None
    # Each run's launches, grouped once per scope: a lookup per episode over every launch made
    # detection grow faster than the evidence.
    by_run = memo.cached(inc, "outcomes:by_run", ("events", "processes", "metrics"), lambda: _by_name(oc))
    idx = by_run.get(run)
    if idx is None:
        return None
    mine = oc.iloc[idx]
    hit = mine[mine["time"] <= before]
    if trained:
        hit = hit[hit["first_step"].notna()]
    return hit.iloc[-1] if len(hit) else None
