"""Stalls: the job looks alive (processes running, GPU memory held) but nothing moves (GPU
utilization near zero and no training step) for longer than a threshold.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from ..model import computed as memo
from ..schema import TOK_PER_S
from ..units import clock, duration
from . import findings, gpu_state
from .per_host import judged

THRESHOLD_S = 300.0


def stall_intervals(inc: Incident, threshold_s: float | None = None) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """(start, end) of each stretch longer than the threshold with memory held, ~0 % utilization,
    no training step and a process alive: what a stall is, for this detector and for those that
    must not read a stall and the relaunch after it as a configuration regression."""
    return memo.cached(inc, f"stalls:{threshold_s}", ("gpus", "metrics", "processes"),
                       lambda: _stall_intervals(inc, threshold_s))


def _stall_intervals(inc: Incident, threshold_s: float | None) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    threshold = pd.Timedelta(seconds=threshold_s if threshold_s is not None
                             else float(inc.config.detect.get("stall_s", THRESHOLD_S)))
    g = inc.gpus.dropna(subset=["memory_used_mib", "util_gpu_pct"])
    if g.empty:
        return []
    per = g.assign(t=g["time"].dt.floor("s")).groupby("t").agg(
        held=("memory_used_mib", "max"), util=("util_gpu_pct", "max")).sort_index()
    quiet = gpu_state.held(per["held"]) & gpu_state.idle(per["util"])
    steps = inc.metrics.loc[inc.metrics["metric"] == TOK_PER_S, "time"].sort_values()
    procs = inc.processes
    out = []
    # consecutive quiet samples: a new stretch starts wherever quiet flips
    stretch = (quiet != quiet.shift()).cumsum()
    for _, part_q in per[quiet].groupby(stretch[quiet]):
        start_, end = part_q.index[0], part_q.index[-1]
        if end - start_ < threshold:
            continue
        if len(steps[(steps >= start_) & (steps <= end)]):
            continue
        alive = procs[(procs["first_seen"] <= end) & (procs["last_seen"] >= start_)] if len(procs) else procs
        if len(procs) and alive.empty:
            continue  # memory held by nobody we can see alive: a leak or a dead job, not a stall
        out.append((start_, end))
    return out


@judged
def detect_stalls(inc: Incident, threshold_s: float | None = None) -> pd.DataFrame:
    """Stretches longer than the threshold with memory held, ~0 % utilization and no step."""
    g = inc.gpus.dropna(subset=["memory_used_mib", "util_gpu_pct"])
    procs = inc.processes
    rows = []
    for start_, end in stall_intervals(inc, threshold_s):
        alive = procs[(procs["first_seen"] <= end) & (procs["last_seen"] >= start_)] if len(procs) else procs
        part = g[(g["time"] >= start_) & (g["time"] <= end)]
        # Who holds the memory (per-process samples), and the last step before the silence.
        gp = inc.gpu_processes[(inc.gpu_processes["time"] >= start_) & (inc.gpu_processes["time"] <= end)]
        holders, holder_refs = findings.memory_by_pid(gp)
        last = inc.metrics[(inc.metrics["metric"] == TOK_PER_S) & (inc.metrics["time"] < start_)]
        last = last.sort_values("time", kind="stable").tail(1)
        # A thread that died right before the silence (a loop without a guard runs on without it).
        since = last["time"].iloc[0] if len(last) else start_ - pd.Timedelta(seconds=60)
        ev = inc.events
        died = ev[(ev["kind"] == "traceback") & (ev["time"] >= since) & (ev["time"] <= end)]
        tb = str(died["message"].iloc[0]).strip().splitlines() if len(died) else []
        cause = (f"; likely cause: {tb[0].rstrip(':')} ({tb[-1].strip()}) at {clock(died['time'].iloc[0])}"
                 if tb else "")
        held_by = ("; held by " + ", ".join(f"PID {int(p)} ({m:.0f} MiB)" for p, m in holders.items())
                   if len(holders) else "")
        last_text = (f"; the last step was logged at {clock(last['time'].iloc[0])} (run {last['run'].iloc[0]})"
                     if len(last) else "")
        rows.append(findings.finding(
            "stall", start_, end, "critical",
            f"stall: GPUs hold memory at ~0 % utilization with no step for {duration((end - start_).total_seconds())}",
            f"From {clock(start_)} to {clock(end)} GPU memory stayed allocated (up to "
            f"{part['memory_used_mib'].max():.0f} MiB{held_by}) with utilization at most "
            f"{part['util_gpu_pct'].max():.0f} % and no training step logged{last_text}; "
            f"{len(alive)} process(es) listed alive{cause}.",
            findings.refs(last) + findings.refs(died, 1) + findings.refs(part, 3) + holder_refs,
            {"seconds": (end - start_).total_seconds(), "processes_alive": int(len(alive)),
             "gpus": sorted(int(x) for x in part.loc[gpu_state.held(part["memory_used_mib"]), "gpu"].dropna().unique()),
             "holders": [int(p) for p in holders.index],
             "last_step_time": last["time"].iloc[0] if len(last) else None,
             "traceback": tb[-1].strip() if tb else None},
            caused_by=[findings.cause(findings.event_id(r), f"a thread died right before the silence: {tb[-1].strip()}",
                                      [r]) for r in findings.refs(died, 1)]))
    return findings.frame(rows)


