"""Recovery: when throughput is back to a sustained fraction of the pre-incident baseline, and
every relaunch that came back short of it.

"Sustained" means `SUSTAIN` consecutive samples at or above `recovery_fraction` (incident.toml,
default 0.9) x the baseline level measured before the regression. A relaunch that trains but
stays below that is a partial recovery, reported with its level and the reasons the evidence
offers: another process still holding memory on its GPUs (named, with the GPUs), fewer GPUs than
the baseline run used, GPUs allocated but idle, a flag that differs from the baseline run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from ..model import computed as memo
from ..model import gpu_state
from ..model.attempts import attempts, stopped_cleanly_near
from ..model.launches import launch_of
from ..model.pace import unit
from . import findings
from .per_host import judged
from .stall import stall_intervals
from .throughput import config_differences, episodes, segments, series, stints

SUSTAIN = 5
# A recovered level is the median of this many samples from the recovery on.
LEVEL_SAMPLES = 20
# Without its launch in the evidence, a relaunch is taken to have started this long before its
# first step (model loading and compile).
_STARTUP = pd.Timedelta(minutes=2)


def _sustained(values: np.ndarray, floor: float, n: int) -> int | None:
    """The first sample at the floor from which the job stayed there: its first n samples all at
    the floor, or (a noisy series, a rate counted over whole seconds, dips below it now and then
    while the level is back) the level it is measured by, the median of its LEVEL_SAMPLES, at the
    floor over at least n samples."""
    for i in range(len(values) - n + 1):
        if values[i] < floor:
            continue
        if (values[i:i + n] >= floor).all() or np.median(values[i:i + LEVEL_SAMPLES]) >= floor:
            return i
    return None


def _pids_on_gpus(inc: Incident, start, end) -> pd.DataFrame:
    """PIDs holding memory between start and end: most memory, GPUs, first sample ever, a ref."""
    win = memo.between(inc, inc.gpu_processes, "time", start, end, inclusive=True).dropna(subset=["pid"])
    if win.empty:
        return pd.DataFrame(columns=["pid", "mib", "gpus", "first", "ref"])
    first = memo.first_seen_on_gpus(inc)
    rows = []
    for pid, one in win.groupby("pid"):
        rows.append({"pid": int(pid), "mib": float(one["used_memory_mib"].max()),
                     "gpus": sorted(int(g) for g in one["gpu"].dropna().unique()),
                     "first": first[pid], "ref": (findings.refs(one, 1) or [None])[0]})
    return pd.DataFrame(rows)


def _gpus_of(inc: Incident, pids: list[int], start, end) -> set[int]:
    gp = memo.between(inc, inc.gpu_processes, "time", start, end, inclusive=True)
    mine = gp[gp["pid"].isin(pids)]
    return {int(g) for g in mine["gpu"].dropna().unique()}


def _partial_reasons(inc: Incident, seg_start, seg_end, run, run_start, ep: dict) -> tuple[list[str], list[str], list[int]]:
    """(reasons, the sample lines behind them, PIDs of other processes on the run's GPUs)."""
    reasons, refs = [], []
    held = _pids_on_gpus(inc, seg_start, seg_end)
    # Processes already holding GPU memory before the relaunch was launched are not the relaunch.
    launch = launch_of(inc, run, run_start)
    since = launch["time"] if launch is not None else run_start - _STARTUP
    others = held[held["first"] < since] if len(held) else held
    own = held[held["first"] >= since] if len(held) else held
    other_pids = [int(p) for p in others["pid"]] if len(others) else []
    if len(others) and len(own):
        own_gpus = {g for gs in own["gpus"] for g in gs}
        shared = others[others["gpus"].map(lambda gs: bool(set(gs) & own_gpus) or not own_gpus)]
        if len(shared):
            reasons.append("another process holds memory on its GPUs: " + "; ".join(
                f"PID {r.pid} ({r.mib:.0f} MiB on GPU {', '.join(map(str, r.gpus)) or '?'})"
                for r in shared.itertuples()))
            refs += [r for r in shared["ref"] if isinstance(r, str)]
            other_pids = [int(p) for p in shared["pid"]]
    before_pids = _pids_on_gpus(inc, ep["before"]["time"].min(), ep["before"]["time"].max())
    if len(own) and len(before_pids):
        n_before = len({g for gs in before_pids["gpus"] for g in gs})
        n_now = len({g for gs in own["gpus"] for g in gs})
        if 0 < n_now < n_before:
            reasons.append(f"it uses {n_now} GPU(s), the baseline run used {n_before}")
    g = memo.between(inc, inc.gpus, "time", seg_start, seg_end, inclusive=True)
    if len(g) and g["util_gpu_pct"].notna().any():
        per = g.groupby("gpu").agg(mem=("memory_used_mib", "median"), util=("util_gpu_pct", "median"))
        idle = per[gpu_state.held(per["mem"]) & gpu_state.idle(per["util"])]
        if len(idle):
            reasons.append("GPU(s) " + ", ".join(str(int(i)) for i in idle.index) + " hold memory but sit idle")
            refs += findings.refs(g[g["gpu"].isin(idle.index)], 4)
    base_run = ep["before"]["run"].iloc[-1]
    # A setting the relaunch dropped (a fault injection, a debug flag) is no reason to be slow.
    flags = [d for d in config_differences(inc, base_run, run, seg_start, ep["before"]["time"].iloc[-1])
             if not d["bookkeeping"] and d["after"] is not None]
    if flags:
        reasons.append(f"its configuration differs from run {base_run}: " + " ".join(d["shown"] for d in flags))
        refs += [d["ref"] for d in flags if isinstance(d["ref"], str)]
    return reasons, refs, other_pids


def _relaunch_partials(inc: Incident, ep: dict, frac: float) -> list[dict]:
    """Runs launched after the regression began that trained below the recovery floor: one
    finding per run, over the samples it logged below the floor inside the episode."""
    s = ep["series"]
    floor = frac * ep["baseline"]
    u = unit(inc)
    # (each start apart: a relaunch under the run's own name is a run launched after it too)
    starts = pd.Series(stints(s), index=s.index)
    # unique() first: a set over the column walks every sample in Python, once per episode
    started_before = set(starts[s["time"] < ep["start"]].unique()) | {stints(ep["during"])[0]}
    window = s[(s["time"] >= ep["start"]) & (s["time"] <= ep["end"])]
    rows = []
    for stint, part in window.groupby(starts[window.index], sort=False):
        if stint in started_before:
            continue
        run = part["run"].iloc[0]
        low = part[part["value"] < floor]
        if len(low) < max(SUSTAIN, len(part) // 2):
            continue  # a dip or two of a run that otherwise made it: not a partial recovery
        level = float(low["value"].median())
        first, last = low["time"].iloc[0], low["time"].iloc[-1]
        run_start = part["time"].iloc[0]  # it has no sample before the episode began
        reasons, refs, others = _partial_reasons(inc, first, last, run, run_start, ep)
        rows.append(findings.finding(
            "partial_recovery", first, last, "warning", findings.refs(low.head(SUSTAIN)) + refs,
            {"baseline_tok_per_s": ep["baseline"], "recovery_fraction": frac, "regression_start": ep["start"],
             "level_tok_per_s": level, "ratio": level / ep["baseline"], "run": run,
             "reasons": reasons, "other_pids": others, "unit": u, "relaunch": True}))
    return rows


# The level a stalled run ran at: its last samples before the stall.
STALL_BASELINE_SAMPLES = 20


def stall_episodes(inc: Incident) -> list[dict]:
    """Each stall as an episode to recover from: the stalled run's level before it is the
    baseline, the silence is the degraded stretch, what trains after it is the recovery."""
    s = series(inc)
    out = []
    for start, end in stall_intervals(inc):
        before = s[s["time"] < start].tail(STALL_BASELINE_SAMPLES)
        if before.empty:
            continue
        before = before[stints(before) == stints(before)[-1]]
        out.append({"series": s, "baseline": float(before["value"].median()), "degraded": 0.0,
                    "start": start, "end": end, "before": before, "during": before.tail(1),
                    "after": s[s["time"] > end], "stall": True})
    return out


def _still_running(inc: Incident) -> bool:
    """Whether a start may still log pace samples: one has no end yet (model/attempts.py; a
    watched folder holds its end open until the evidence goes on past it)."""
    att = attempts(inc)
    return att.empty or bool(att["end"].isna().any())


@judged
def detect_recovery(inc: Incident, fraction: float | None = None) -> pd.DataFrame:
    """Per regression episode and per stall: each relaunch that came back short (partial), and
    the recovery (when) or its absence."""
    frac = fraction if fraction is not None else inc.config.recovery_fraction
    rows, u = [], unit(inc)
    for ep in episodes(inc) + stall_episodes(inc):
        rows += _relaunch_partials(inc, ep, frac)
        after = ep["after"]
        floor = frac * ep["baseline"]
        nums = {"baseline_tok_per_s": ep["baseline"], "recovery_fraction": frac,
                "regression_start": ep["start"], "episode": "stall" if ep.get("stall") else "regression", "unit": u}
        if after.empty:
            if ep.get("stall") and stopped_cleanly_near(inc, ep["end"]) is not None:
                continue  # the silence ended with the run's own clean stop: nothing was left to recover
            if not any(r["kind"] == "partial_recovery" for r in rows):
                rows.append(findings.finding(
                    "no_recovery", ep["end"], None, "critical", findings.refs(ep["during"].tail(1)), nums))
            continue
        # fewer samples than SUSTAIN after the episode are what a finished run left; in a folder
        # still being written, while a start is still running, the next are still to come, and the
        # first few tell nothing yet (a trainer's first step rates its warm-up: 128 G tok/s for a
        # step of a millisecond); once every start has ended, what is there is all there will be
        need = SUSTAIN if inc.live and _still_running(inc) else min(SUSTAIN, len(after))
        if len(after) < need:
            continue
        i = _sustained(after["value"].to_numpy(dtype=float), floor, need)
        if i is not None:
            window = after.iloc[i:]
            level = float(window["value"].iloc[:LEVEL_SAMPLES].median())
            when = window["time"].iloc[0]
            ttr = (when - ep["start"]).total_seconds()
            rows.append(findings.finding(
                "recovery", when, window["time"].iloc[-1], "info", findings.refs(window.head(SUSTAIN)),
                dict(nums, level_tok_per_s=level, ratio=level / ep["baseline"], run=window["run"].iloc[0],
                     time_to_recover_s=ttr, sustained_samples=SUSTAIN)))
            continue
        if len(after) < SUSTAIN:
            # fewer samples than a level needs, none of them back at the floor: a warm-up's first
            # lines, or a `tail` of the log the operator printed; what level it came back to
            # cannot be said from them (samples back at it say it recovered, above)
            continue
        segs = segments(after)
        last = segs.iloc[-1]
        level = float(last["level"])
        if level > 1.1 * ep["degraded"]:
            run = after["run"].iloc[-1]
            reasons, reason_refs, others = _partial_reasons(
                inc, last["start"], last["end"], run, after[stints(after) == stints(after)[-1]]["time"].iloc[0], ep)
            rows.append(findings.finding(
                "partial_recovery", last["start"], last["end"], "warning",
                findings.refs(after.iloc[int(last["i0"]):int(last["i0"]) + SUSTAIN]) + reason_refs,
                dict(nums, level_tok_per_s=level, ratio=level / ep["baseline"], run=run, reasons=reasons,
                     other_pids=others, relaunch=False)))
    return findings.frame(rows)
