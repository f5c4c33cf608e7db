"""What a GPU's numbers mean: the one home of the thresholds every detector (and every table)
judges GPU samples by.

An idle GPU shows a few MiB of driver memory; a loaded model holds gigabytes. Between them,
`HELD_MIB` is the line above which memory counts as held by a job; utilization under
`IDLE_UTIL_PCT` while memory is held is a GPU that waits (a stall, an idle-but-allocated GPU).
`DRIVER_MIB` is what a GPU with no process at all may still show: above it, something started.
Utilization at or above `BUSY_UTIL_PCT` is a GPU at work: a trainer's steps keep it there, and
loading a model (copying memory) does not.
"""

from __future__ import annotations

import pandas as pd

from ..clock.untimed import BUSY_PCT

HELD_MIB = 1024.0
IDLE_UTIL_PCT = 5.0
DRIVER_MIB = 100.0
# (the clock dates a log with no time by where a GPU went busy, below this floor: one line for both)
BUSY_UTIL_PCT = BUSY_PCT


def held(memory_mib: pd.Series) -> pd.Series:
    """Memory held by a job (not the driver's own)."""
    return memory_mib >= HELD_MIB


def idle(util_pct: pd.Series) -> pd.Series:
    """Utilization that does no work."""
    return util_pct < IDLE_UTIL_PCT


def started(memory_mib: float) -> bool:
    """More memory than an empty GPU shows: some process allocated on it."""
    return bool(memory_mib > DRIVER_MIB)


def busy(util_pct: pd.Series) -> pd.Series:
    """Utilization of a GPU at work (a trainer's steps, not a model being copied in)."""
    return util_pct >= BUSY_UTIL_PCT


def held_by(gpu_processes: pd.DataFrame, pids) -> set[int]:
    """The GPUs on which any of `pids` held memory (per-process samples)."""
    gp = gpu_processes
    if gp.empty or not pids or "gpu" not in gp.columns:
        return set()
    return set(gp.loc[gp["pid"].isin(list(pids)), "gpu"].dropna().astype(int))
