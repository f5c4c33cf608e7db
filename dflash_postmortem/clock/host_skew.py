"""Clock skew between hosts, estimated from moments every host saw at once.

Each host stamps its files with its own clock. Ranks of one synchronous job pass the same
training step within milliseconds of each other (every step ends in a collective), initialise
NCCL together, and a fan-out launch starts the same command on every host at once: the same
moment, stamped by two clocks, is a paired difference. A host's skew is the median of its
differences with the reference host (robust to a line that straddles a second boundary, or a
rank that logged late), with an uncertainty from their spread (1.4826 x MAD is a standard
deviation, x 1.2533 / sqrt(n) the standard error of a median) that is never below half the
stamps' resolution: whole-second stamps cannot say more than +-0.5 s.

The reference is the first of incident.toml's `hosts` that shares moments, else the host with
the most of them. A host that shares fewer than `MIN_PAIRS` moments with the reference gets no
estimate. Estimating does not shift anything: `align.align_host_clocks` decides and applies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from .hosts import metric_hosts

MIN_PAIRS = 5
COLUMNS = ("host", "reference", "seconds", "uncertainty_s", "pairs", "methods")
# Moments of one kind on one host closer than this are one burst (all ranks' NCCL init lines).
_BURST = pd.Timedelta(seconds=60)


def shared_moments(inc: Incident) -> pd.DataFrame:
    """Moments each host stamped that other hosts may have stamped too: host, key, time, method.

    - a training step: (run, step), the first time the host logged it;
    - an NCCL communicator init: the k-th burst of `Init COMPLETE` lines on the host;
    - a launch: the k-th launch of the same command line on the host.
    A key seen twice on one host (a relaunch that reuses its run name and counts steps from 0
    again) says nothing about which of the two the other hosts saw, and is left out.
    """
    parts = []
    # The trainer's own step numbers, as its log lines print them (wandb's `_step` counts its
    # own records, not the trainer's steps).
    logs = {f.path for f in inc.load_report.files if f.format == "training-log"}
    m = inc.metrics[inc.metrics["source"].isin(logs)] if len(inc.metrics) and logs else inc.metrics.iloc[:0]
    steps = m.assign(host=metric_hosts(inc).loc[m.index]).dropna(subset=["host", "step", "time"])
    if len(steps):
        per_log = steps.groupby(["host", "source", "run", "step"], observed=True)["time"].agg(["min", "max"])
        # A step that one log prints twice, apart (a relaunch counting from 0 again), is no moment.
        per_log = per_log[per_log["max"] - per_log["min"] < _BURST]
        # The ranks of one host that log the same step: one moment, their median.
        one = per_log.groupby(level=["host", "run", "step"], observed=True)["min"].median().reset_index()
        one["key"] = "step " + one["run"].astype(str) + " " + one["step"].astype(str)
        parts.append(one.rename(columns={"min": "time"}).assign(method="training step")[["host", "key", "time", "method"]])
    ev = inc.events.dropna(subset=["host", "time"])
    if len(ev):
        nccl = ev[(ev["kind"] == "stage") & ev["message"].fillna("").str.contains("Init COMPLETE", regex=False)]
        parts.append(_bursts(nccl, "nccl init", "NCCL init"))
        launches = ev[ev["kind"] == "launch"]
        if len(launches):
            cmd = launches["message"].fillna("").astype(str).str.strip()
            k = launches.assign(cmd=cmd).groupby(["host", "cmd"], observed=True).cumcount()
            parts.append(pd.DataFrame({"host": launches["host"], "key": "launch " + cmd + " #" + k.astype(str),
                                       "time": launches["time"], "method": "launch"}))
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=["host", "key", "time", "method"])
    out = pd.concat(parts, ignore_index=True)
    return out[~out.duplicated(subset=["host", "key"], keep=False)].reset_index(drop=True)


def _bursts(ev: pd.DataFrame, key: str, method: str) -> pd.DataFrame:
    """The k-th burst of these events on each host, at its first event."""
    rows = []
    for host, one in ev.sort_values("time", kind="stable").groupby("host", observed=True):
        starts = one["time"][one["time"].diff().fillna(_BURST) >= _BURST]
        rows += [{"host": host, "key": f"{key} #{k}", "time": t, "method": method} for k, t in enumerate(starts)]
    return pd.DataFrame(rows, columns=["host", "key", "time", "method"])


def estimate(inc: Incident, moments: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per host but the reference: `seconds` to add to its clock to put it on the reference's,
    its uncertainty, and how many moments (`pairs`, by which `methods`) it rests on. Hosts that
    share too few moments with the reference are left out."""
    moments = shared_moments(inc) if moments is None else moments
    if moments.empty or moments["host"].nunique() < 2:
        return pd.DataFrame(columns=list(COLUMNS))
    counts = moments.groupby("host", observed=True)["key"].size()
    named = [h for h in inc.config.hosts if h in counts.index]
    ref = named[0] if named else sorted(counts.index, key=lambda h: (-counts[h], str(h)))[0]
    base = moments[moments["host"] == ref][["key", "time"]]
    rows = []
    for host, one in moments[moments["host"] != ref].groupby("host", observed=True):
        pairs = one.merge(base, on="key", suffixes=("", "_ref"))
        if len(pairs) < MIN_PAIRS:
            continue
        diffs = (pairs["time_ref"] - pairs["time"]).dt.total_seconds().to_numpy(dtype=float)
        med = float(np.median(diffs))
        mad = float(np.median(np.abs(diffs - med)))
        stamps = pd.concat([pairs["time"], pairs["time_ref"]])
        # Mostly whole-second stamps (a log's `2026-11-30 09:28:12`): they say no more than +-0.5 s.
        resolution = 1.0 if (stamps.dt.microsecond == 0).mean() > 0.5 else 0.001
        spread = 1.2533 * 1.4826 * mad / np.sqrt(len(diffs))
        rows.append({"host": str(host), "reference": str(ref), "seconds": med,
                     "uncertainty_s": max(spread, resolution / 2), "pairs": int(len(diffs)),
                     "methods": sorted(pairs["method"].unique().tolist())})
    return pd.DataFrame(rows, columns=list(COLUMNS))
