"""The goodput ledger: every GPU-second of the incident window, for every GPU a job used, in one
class, so that the cost of an incident is a sum that can be checked.

    productive    an attempt trained on the GPU at its job's level (a degraded second counts its
                  level / baseline here, the rest as degraded)
    degraded      the share of a degraded second lost to the drop
    starting      an attempt held the GPU before its first step (program start-up, checkpoint restore)
    stalled       an attempt held the GPU and made no progress
    restarting    between an attempt's end and the next attempt's start on the GPU
    down          the job's GPU held by nothing, with no attempt starting
    redone        training that repeated steps already done before a resume from a checkpoint
                  (Google's ML Goodput: wasted progress)

A GPU held by two attempts at once splits its seconds between them by their memory on it where
per-process samples say, else evenly. Each GPU's classes sum exactly to the window.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from . import computed
from .attempts import attempts
from .progress import progress
from .states import states

CLASSES = ("productive", "degraded", "starting", "stalled", "restarting", "down", "redone")


def ledger(inc: Incident) -> pd.DataFrame:
    """One row per GPU (host, gpu) with seconds per class (CLASSES) and `total`, over the
    incident window (the first attempt's start to the last sign of any); empty where no GPU or
    progress evidence exists."""
    return computed.cached(inc, "ledger", ("metrics", "events", "processes", "gpu_processes", "gpus"),
                           lambda: _ledger(inc))


def _gpus_of_job(inc: Incident, att: pd.DataFrame) -> list[tuple]:
    used = {(a["host"], g) for _, a in att.iterrows() for g in a["gpus"]}
    if used:
        return sorted(used, key=lambda x: (str(x[0]), x[1]))
    g = inc.gpus.dropna(subset=["gpu"])
    return sorted({(h if isinstance(h, str) else None, int(x)) for h, x in zip(g["host"], g["gpu"], strict=True)},
                  key=lambda x: (str(x[0]), x[1]))


def _ledger(inc: Incident) -> pd.DataFrame:
    att = attempts(inc)
    if att.empty:
        return pd.DataFrame(columns=["host", "gpu", *CLASSES, "total"])
    start = att["start"].min()
    end = max(att["last_alive"].max(), att["end"].max() if att["end"].notna().any() else start)
    secs = int(max(0, (end - start).total_seconds()))
    if secs == 0:
        return pd.DataFrame(columns=["host", "gpu", *CLASSES, "total"])
    grid = start + pd.to_timedelta(np.arange(secs), unit="s")
    st = states(inc)
    prog = progress(inc)
    baseline = _baseline(prog)
    rows = []
    for host, gpu in _gpus_of_job(inc, att):
        cls = {c: 0.0 for c in CLASSES}
        users = att[att["gpus"].map(lambda gs, g=gpu: g in gs or not gs)]
        for t in grid:
            share = _shares(users, t)
            if not share:
                cls["down" if not _restarting(att, t) else "restarting"] += 1.0
                continue
            for attempt, part in share.items():
                _classify(cls, st[st["attempt"] == attempt], prog[prog["attempt"] == attempt], baseline, t, part)
        rows.append({"host": host, "gpu": gpu, **cls, "total": float(secs)})
    return pd.DataFrame(rows)


def _baseline(prog: pd.DataFrame) -> float:
    return float(prog["level"].quantile(0.9)) if len(prog) else np.nan


def _shares(users: pd.DataFrame, t) -> dict[str, float]:
    alive = users[(users["start"] <= t) & (users["last_alive"].fillna(users["start"]) >= t)]
    if alive.empty:
        return {}
    return {a: 1.0 / len(alive) for a in alive["attempt"]}


def _restarting(att: pd.DataFrame, t) -> bool:
    ended = att[att["last_alive"] < t]
    later = att[att["start"] > t]
    return bool(len(ended) and len(later))


def _classify(cls: dict, st: pd.DataFrame, prog: pd.DataFrame, baseline: float, t, part: float) -> None:
    here = st[(st["start"] <= t) & (st["end"].fillna(st["start"]) > t)]
    kinds = set(here["state"])
    if "stalled" in kinds:
        cls["stalled"] += part
    elif "starting" in kinds:
        cls["starting"] += part
    else:
        w = prog[(prog["start"] <= t) & (prog["end"] > t)]
        if w.empty or not np.isfinite(baseline) or baseline <= 0:
            cls["productive"] += part
            return
        ratio = float(np.clip(w["level"].iloc[0] / baseline, 0.0, 1.0))
        cls["productive"] += part * ratio
        cls["degraded"] += part * (1 - ratio)
