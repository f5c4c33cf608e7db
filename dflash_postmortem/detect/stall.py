"""Stalls: an attempt that trained, then made no progress while it was alive (model.states:
its process listed, its PIDs holding GPU memory, or its log still writing) for longer than its
threshold, or after a line saying a thread or rank of it died.

The finding names what shows it was alive and idle (GPU memory held at ~0 % utilization and by
which PIDs, where the GPU samples say), the last step line before the silence, and the error line
that began it where there is one.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from ..model import computed as memo
from ..model import gpu_state
from ..model.attempts import END_SLACK, MACHINE_FAULTS, attempts
from ..model.kills import with_pids
from ..model.progress import lines_of
from ..model.states import MIN_STALL_S, states
from ..model.step_lines import lent
from ..said import error_text, exception_line, waiting_in
from ..schema import column
from . import findings
from .per_host import judged

THRESHOLD_S = 300.0  # kept for the fleet rules: a host silent this long
IDLE_SHARE = 0.8  # a stall's GPUs are idle when this share of its samples is


def stall_intervals(inc: Incident, threshold_s: float | None = None) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """(start, end) of each stall of the incident: what the detectors that must not read a stall
    and the relaunch after it as a configuration regression look at."""
    return memo.cached(inc, "stall intervals", ("metrics", "events", "processes", "gpu_processes", "gpus"),
                       lambda: [(r["start"], r["end"]) for _, r in _stalled(inc).iterrows()])


def _stalled(inc: Incident) -> pd.DataFrame:
    """The stalled stretches of the attempts; where no attempt shows progress at all (GPU samples
    are the only evidence), the stretches GPU samples alone show (_gpu_stalls)."""
    st = states(inc)
    # a stall is a run that trained, then stopped: a start stalled before its first step never
    # trained (detect/restart.py tells it)
    att = attempts(inc)
    began = set(att.dropna(subset=["first_step"])["attempt"])
    stalled = st[(st["state"] == "stalled") & st["attempt"].isin(began)]
    unlogged = _unlogged_stalls(inc, st, att)
    stalled = pd.concat([stalled, unlogged]) if len(unlogged) else stalled
    stalled = stalled.sort_values("start", kind="stable")
    if len(stalled) or (st["state"] == "training").any():
        return stalled
    return pd.DataFrame([{"attempt": None, "state": "stalled", "start": a, "end": b, "ref": None, "detail": ""}
                         for a, b in _gpu_stalls(inc)], columns=st.columns)


def _unlogged_stalls(inc: Incident, st: pd.DataFrame, att: pd.DataFrame) -> pd.DataFrame:
    """Of an attempt training where the incident holds none of its step lines (its log is not in
    the folder, a tail printed a few of them), the stretches its GPUs held memory at ~0 %
    utilization for longer than `[detect] stall_s`: what a reader of the GPU samples sees of a
    stall its log would have shown (_gpu_stalls, on the GPUs its PIDs held)."""
    rows = []
    training = st[st["state"] == "training"]
    for _, s in training.iterrows():
        a = att[att["attempt"] == s["attempt"]].iloc[0]
        lines = lines_of(inc, a)
        if not a["pids"] or len(lines[(lines["time"] >= s["start"]) & (lines["time"] <= s["end"])]):
            continue
        gpus = gpu_state.held_by(inc.gpu_processes, a["pids"])
        if not gpus:
            continue
        g = inc.gpus[inc.gpus["gpu"].isin(gpus) & (inc.gpus["time"] >= s["start"]) & (inc.gpus["time"] <= s["end"])]
        # (as long as a stall of a run whose steps are seen: model/states.py's floor)
        rows += [{"attempt": s["attempt"], "state": "stalled", "start": a0, "end": b0, "ref": None, "detail": ""}
                 for a0, b0 in _gpu_stalls(inc, g, MIN_STALL_S)]
    return pd.DataFrame(rows, columns=st.columns)


def _gpu_stalls(inc: Incident, gpus: pd.DataFrame | None = None,
                floor_s: float = THRESHOLD_S) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """Stretches of GPU samples (of `gpus`, else every GPU's) longer than `[detect] stall_s`
    (default `floor_s`) with memory held at ~0 % utilization while a process was listed alive
    and no step was logged."""
    threshold = pd.Timedelta(seconds=float(inc.config.detect.get("stall_s", floor_s)))
    g = (inc.gpus if gpus is None else gpus).dropna(subset=["memory_used_mib", "util_gpu_pct"])
    if g.empty:
        return []
    per = g.assign(t=g["time"].dt.floor("s")).groupby("t").agg(
        held=("memory_used_mib", "max"), util=("util_gpu_pct", "max")).sort_index()
    quiet = gpu_state.held(per["held"]) & gpu_state.idle(per["util"])
    procs = inc.processes
    out = []
    stretch = (quiet != quiet.shift()).cumsum()  # a new stretch wherever quiet flips
    for _, part in per[quiet].groupby(stretch[quiet]):
        start_, end = part.index[0], part.index[-1]
        alive = procs[(procs["first_seen"] <= end) & (procs["last_seen"] >= start_)] if len(procs) else procs
        if end - start_ >= threshold and not (len(procs) and alive.empty):
            out.append((start_, end))
    return out


@judged
def detect_stalls(inc: Incident, threshold_s: float | None = None) -> pd.DataFrame:
    """One finding per stretch of an attempt's life without progress (model.states); with
    `threshold_s`, only those at least that long."""
    att = attempts(inc).set_index("attempt", drop=False)
    # the lines of a process listing that show a process stopped (state T)
    listed = set(inc.processes["stopped_ref"].dropna()) if "stopped_ref" in inc.processes.columns else set()
    rows = []
    for _, s in _stalled(inc).iterrows():
        if threshold_s is not None and (s["end"] - s["start"]).total_seconds() < threshold_s:
            continue
        a = att.loc[s["attempt"]] if s["attempt"] is not None else _NO_ATTEMPT
        start_, end = s["start"], s["end"]
        g = inc.gpus.dropna(subset=["memory_used_mib"])
        g = g[(g["time"] >= start_) & (g["time"] <= end)]
        gp = inc.gpu_processes[(inc.gpu_processes["time"] >= start_) & (inc.gpu_processes["time"] <= end)]
        mine = gp[gp["pid"].isin(a["pids"])] if a["pids"] else gp.iloc[:0]
        holders, holder_refs = findings.memory_by_pid(mine if len(mine) else gp)
        held = g[gpu_state.held(g["memory_used_mib"])]
        # A GPU drains the work queued before the last step for a few seconds: idle means most
        # samples of the stall, not every one of them.
        util = held["util_gpu_pct"].dropna()
        idle = len(util) > 0 and float(gpu_state.idle(util).mean()) >= IDLE_SHARE
        seconds = (end - start_).total_seconds()
        cause = s["detail"].split("likely cause: ", 1)[1] if "likely cause: " in s["detail"] else None
        lines = lines_of(inc, a) if s["attempt"] is not None else inc.metrics.iloc[:0]
        last = lines[lines["time"] <= start_].tail(1)
        died = [s["ref"]] if cause and isinstance(s["ref"], str) else []
        # what the line it cites is: a shell or a listing that shows the job stopped (Ctrl-Z), else an error
        cited = memo.rows_where(inc, "events", "ref", died[0]) if died else inc.events.iloc[:0]
        stopped = bool(died) and (cited["kind"].eq("job_stopped").any() or died[0] in listed)
        # a checkpoint save begun as the steps stopped, that never finished (model/states.py)
        saving = bool(died) and column(cited, "pattern").eq("checkpoint_save").fillna(False).astype(bool).any()
        why = ("the job was stopped" if stopped else "it was saving a checkpoint" if saving
               else "a thread or rank died before the silence")
        if not died and a.get("cause_kind") in MACHINE_FAULTS and start_ <= a["cause_time"] <= end:
            # the machine said a GPU of the attempt failed as it fell silent (an Xid, off the bus)
            cause = a["cause_message"] or a["cause_kind"]
            died = [a["cause_ref"]] if isinstance(a["cause_ref"], str) else []
            why = "a GPU failed as the steps stopped"
        caused_by = [findings.cause(findings.event_id(r), f"{why}: {cause}", [r]) for r in died]
        refs = findings.refs(last) + died
        # no step line dates the silence: the line that says it does (model/states.py `_said_silent`)
        said = memo.rows_where(inc, "events", "ref", s["ref"]) if last.empty and not died and isinstance(s["ref"], str) \
            else inc.events.iloc[:0]
        refs += said["ref"].head(1).tolist()
        tb = _last_line(inc, died[0]) if died and not stopped and not saving else None
        ended = _interrupted_at_end(inc, a, start_, end) if s["attempt"] is not None else None
        killed = _killed_at_end(inc, a, end) if s["attempt"] is not None and ended is None else None
        refs += [ended[0]] if ended else [killed[0]] if killed else []
        rows.append(findings.finding(
            "stall", start_, end, "critical",
            refs + findings.refs(held[gpu_state.idle(held["util_gpu_pct"]).fillna(False).astype(bool)], 3)
            + holder_refs,
            {"seconds": seconds, "processes_alive": len(a["pids"]),
             "gpus": sorted(int(x) for x in held["gpu"].dropna().unique()),
             "holders": [int(p) for p in holders.index], "last_step_time": None if len(said) else start_, "traceback": tb,
             "holder_mib": {int(p): float(m) for p, m in holders.items()}, "run": a["run"], "idle": idle,
             "alive": _alive_by(inc, a, holders, start_, end),
             "max_memory_mib": float(held["memory_used_mib"].max()) if len(util) else None,
             "util_pct_mostly": float(util.quantile(IDLE_SHARE)) if len(util) else None,
             "idle_share": IDLE_SHARE, "cause": cause, "stopped": stopped, "saving": saving,
             "said_silent": str(said["message"].iloc[0]) if len(said) else None,
             "interrupted": ended[1] if ended else None, "killed": killed[1] if killed else None},
            caused_by=caused_by))
    return findings.frame(rows)


# What a stall that GPU samples alone show knows of its attempt: nothing.
_NO_ATTEMPT = pd.Series({"pids": [], "run": None, "sources": [], "runs": [], "start": None})


def _killed_at_end(inc: Incident, a: pd.Series, end) -> tuple[str, str] | None:
    """(its ref, its words) of the kill sent to the attempt that ended a stall lasting to its end
    (the operator's `kill 537`, a watchdog's `sending SIGTERM to 26117`; `kill $(cat run/x.pid)`
    told with the PID the file held)."""
    if a["end_kind"] != "kill_sent" or pd.isna(a["end"]) or end < a["end"] - END_SLACK or not isinstance(a["end_ref"], str):
        return None
    return a["end_ref"], with_pids(inc, error_text(a["end_message"], "kill_sent", 160) or "a kill", a["pids"])


def _interrupted_at_end(inc: Incident, a: pd.Series, start_, end) -> tuple[str, str] | None:
    """(its ref, where it waited) of the interrupt that ended a stall that lasted to its attempt's
    end: a KeyboardInterrupt its own log printed after the silence began (the operator's Ctrl-C
    on a hung run: said.waiting_in tells where it hung; "" where its frames show no wait)."""
    if pd.isna(a["end"]) or end < a["end"] - END_SLACK or not a["sources"]:
        return None  # (the stall ends at its last sign of life, up to END_SLACK after the end a listing shows)
    ev = inc.events
    # (one whose time a line before it lent was written then or later: in the silence, as far as
    # anything shows)
    hit = ev[ev["source"].isin(a["sources"]) & (ev["kind"] == "traceback") & column(ev, "pattern").eq("KeyboardInterrupt")
             & ((ev["time"] >= start_) | lent(ev)) & (ev["time"] <= end)]
    if hit.empty or not isinstance(hit["ref"].iloc[0], str):
        return None
    return hit["ref"].iloc[0], waiting_in(hit["message"].iloc[0]) or ""


def _last_line(inc: Incident, ref: str) -> str | None:
    """The exception of the traceback a ref cites (the last line of another event)."""
    ev = memo.rows_where(inc, "events", "ref", ref)
    return (exception_line(ev["message"].iloc[0], ev["kind"].iloc[0]).strip() or None) if len(ev) else None


def _alive_by(inc: Incident, a: pd.Series, holders: pd.Series, start, end) -> str:
    """The attempt's PIDs that a listing shows alive during the stall (all of its PIDs where no
    listing covers it), else those holding its GPU memory."""
    procs = inc.processes
    seen = procs[procs["pid"].isin(a["pids"]) & (procs["first_seen"] <= end) & (procs["last_seen"] >= start)] \
        if a["pids"] and len(procs) else procs.iloc[:0]
    pids = sorted({int(p) for p in seen["pid"]}) or [int(p) for p in a["pids"]] or [int(p) for p in holders.index]
    return f"PID {', '.join(map(str, pids))}" if pids else "its process"
