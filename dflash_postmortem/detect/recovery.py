"""Recovery: when throughput is back to a sustained fraction of the pre-incident baseline.

"Sustained" means `SUSTAIN` consecutive samples at or above `recovery_fraction` (incident.toml,
default 0.9) x the baseline level measured before the regression. Anything that comes back but
stays below that is a partial recovery, reported with its level and the likely reason the
evidence offers (another process still holding memory on the job's GPUs, GPUs allocated but idle).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from . import findings
from .throughput import episodes, segments

SUSTAIN = 5
_IDLE_UTIL = 5.0
_HELD_MIB = 1024.0


def _sustained(values: np.ndarray, floor: float, n: int) -> int | None:
    ok = values >= floor
    run = 0
    for i, good in enumerate(ok):
        run = run + 1 if good else 0
        if run >= n:
            return i - n + 1
    return None


def _partial_reasons(inc: Incident, start, end, run) -> tuple[list[str], list[str]]:
    """(reasons, the sample lines behind them)."""
    reasons, refs = [], []
    gp = inc.gpu_processes[(inc.gpu_processes["time"] >= start) & (inc.gpu_processes["time"] <= end)]
    pids, pid_refs = findings.memory_by_pid(gp)
    if len(pids) > 1:
        reasons.append("more than one process holds memory on the job's GPUs: PIDs "
                       + ", ".join(f"{int(p)} ({m:.0f} MiB)" for p, m in pids.items()))
        refs += pid_refs
    g = inc.gpus[(inc.gpus["time"] >= start) & (inc.gpus["time"] <= end)]
    if len(g) and g["util_gpu_pct"].notna().any():
        per = g.groupby("gpu").agg(mem=("memory_used_mib", "median"), util=("util_gpu_pct", "median"))
        idle = per[(per["mem"] > _HELD_MIB) & (per["util"] < _IDLE_UTIL)]
        if len(idle):
            reasons.append("GPU(s) " + ", ".join(str(int(i)) for i in idle.index)
                           + " hold memory but sit idle")
            refs += findings.refs(g[g["gpu"].isin(idle.index)], 4)
    return reasons, refs


def detect_recovery(inc: Incident, fraction: float | None = None) -> pd.DataFrame:
    """One finding per regression episode: recovered (when), partial (level, why), or not at all."""
    frac = fraction if fraction is not None else inc.config.recovery_fraction
    rows = []
    for ep in episodes(inc):
        after = ep["after"]
        floor = frac * ep["baseline"]
        nums = {"baseline_tok_per_s": ep["baseline"], "recovery_fraction": frac,
                "regression_start": ep["start"]}
        if after.empty:
            rows.append(findings.finding(
                "no_recovery", ep["end"], None, "critical", "throughput never recovered in the data",
                f"No throughput samples after the regression ending {ep['end']:%H:%M:%S}.",
                findings.refs(ep["during"].tail(1)), nums))
            continue
        i = _sustained(after["value"].to_numpy(dtype=float), floor, min(SUSTAIN, len(after)))
        if i is not None:
            window = after.iloc[i:]
            level = float(window["value"].iloc[:max(SUSTAIN, 20)].median())
            when = window["time"].iloc[0]
            ttr = (when - ep["start"]).total_seconds()
            rows.append(findings.finding(
                "recovery", when, window["time"].iloc[-1], "info",
                f"throughput recovered to {level / 1e3:.1f}K tok/s ({level / ep['baseline']:.2f} of baseline)",
                f"From {when:%H:%M:%S} run {window['run'].iloc[0]} sustained at least {frac:.0%} of the "
                f"{ep['baseline']:.0f} tok/s baseline ({SUSTAIN} consecutive samples), {ttr:.0f} s after "
                f"the regression began.",
                findings.refs(window.head(SUSTAIN)),
                dict(nums, level_tok_per_s=level, ratio=level / ep["baseline"], run=window["run"].iloc[0],
                     time_to_recover_s=ttr)))
            continue
        segs = segments(after)
        last = segs.iloc[-1]
        level = float(last["level"])
        if level > 1.1 * ep["degraded"]:
            reasons, reason_refs = _partial_reasons(inc, last["start"], last["end"], after["run"].iloc[-1])
            rows.append(findings.finding(
                "partial_recovery", last["start"], last["end"], "warning",
                f"partial recovery to {level / 1e3:.1f}K tok/s ({level / ep['baseline']:.2f} of baseline)",
                f"Throughput came back to {level:.0f} tok/s, below {frac:.0%} of the {ep['baseline']:.0f} "
                f"tok/s baseline. " + ("Likely reason: " + "; ".join(reasons) + "." if reasons
                                        else "No likely reason in the evidence."),
                findings.refs(after.iloc[int(last["i0"]):int(last["i0"]) + SUSTAIN]) + reason_refs,
                dict(nums, level_tok_per_s=level, ratio=level / ep["baseline"], reasons=reasons)))
    return findings.frame(rows)
