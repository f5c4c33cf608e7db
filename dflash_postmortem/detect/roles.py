"""GPU roles: the split incident.toml expects (target on these GPUs, drafter on those) against
the memory footprint each GPU actually shows, and GPUs that hold memory while doing nothing.

Each GPU sample is classed heavy (>= HEAVY_FRACTION x the busiest GPU at that time), light
(holding memory, below that) or empty. The expected split maps the role named in `heavy_roles`
(default: "target") to heavy and every other role to light. A split that differs from the
expected one and holds for at least `min_minutes` is a mismatch; short differences are loading.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from ..model.gpu_state import HELD_MIB, IDLE_UTIL_PCT
from . import findings
from .per_host import judged

HEAVY_FRACTION = 0.4
MIN_MINUTES = 5.0
HEAVY_ROLES = ("target",)  # the roles expected heavy unless `[detect] heavy_roles` names others


def heavy_roles(config) -> set[str]:
    """The roles incident.toml expects to hold the heavy share of memory (`[detect] heavy_roles`)."""
    return set(config.detect.get("heavy_roles", list(HEAVY_ROLES)))


def heavy_sql(mem: str, peak: str) -> str:
    """The heavy rule of `_classes` as SQL (the fleet's DuckDB queries judge roles by it)."""
    return f"({mem} >= {HEAVY_FRACTION} * {peak} AND {mem} >= {HELD_MIB})"


# The columns of the GPU samples the rules read. The rows a finding cites are taken again from the
# samples by position (`row`): a copy of their text columns (uuid, source, ref) for an hour of
# samples was most of a live watch's peak memory (benchmarks/bench_watch.py hour).
_READ = ("time", "gpu", "memory_used_mib", "util_gpu_pct")


_CLASSES = ("empty", "light", "heavy")  # a sample's class by its code


def _classes(g: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """Per sample time: each GPU's class (`cls`, its code in _CLASSES), of the samples at positions
    `rows` of `g`; `row` is each one's position there."""
    g = g[[c for c in _READ if c in g.columns]].iloc[rows].assign(row=rows)
    g = g.dropna(subset=["gpu", "memory_used_mib"])
    g["t"] = g["time"].dt.floor("s")
    peak = g.groupby("t")["memory_used_mib"].transform("max").to_numpy(dtype="float64")
    mem = g["memory_used_mib"].to_numpy(dtype="float64")
    held = mem >= HELD_MIB
    # the class as its code (an index of _CLASSES): text on every sample was an hour's copy
    g["cls"] = np.where(held & (mem >= HEAVY_FRACTION * peak), 2, held).astype("int8")
    return g


def _cited(inc: Incident, g: pd.DataFrame, limit: int | None = None) -> list[str]:
    """The evidence lines of classed samples: their rows of the GPU samples."""
    return findings.refs(inc.gpus.iloc[g["row"].to_numpy()], limit)


def _stretches(keys: pd.Series) -> list[tuple[int, int]]:
    """Index ranges [a, b) of consecutive equal values."""
    vals = pd.factorize(keys, use_na_sentinel=False)[0]  # one code per value, missing included
    if not len(vals):
        return []
    cuts = [0, *(np.flatnonzero(vals[1:] != vals[:-1]) + 1).tolist(), len(vals)]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


@judged
def detect_role_mismatch(inc: Incident, min_minutes: float | None = None) -> pd.DataFrame:
    """Sustained GPU splits that differ from the expected roles; GPUs allocated but idle. Each
    host is judged on its own GPUs against its own split (`[roles.HOST]`, else `[roles]`)."""
    opts = inc.config.detect
    min_dur = pd.Timedelta(minutes=min_minutes if min_minutes is not None
                           else float(opts.get("roles_min_minutes", MIN_MINUTES)))
    g = inc.gpus
    if g.empty or g["memory_used_mib"].isna().all():
        return findings.empty()
    keys = g["host"].fillna("").to_numpy()
    names = list(dict.fromkeys(keys))
    rows = []
    for key in names:
        one = _classes(g, np.flatnonzero(keys == key))
        host = key or None
        named = len(names) > 1 and bool(host)  # the title names the host where there are several
        roles = inc.config.roles_for(host)
        if roles:
            rows += _mismatches(inc, one, roles, min_dur, named, host)
        rows += _idle_allocated(inc, one, min_dur, named, host)
    return findings.frame(rows)


def _mismatches(inc: Incident, g: pd.DataFrame, roles: dict[str, list[int]], min_dur: pd.Timedelta,
                named: bool, host) -> list[dict]:
    heavy = heavy_roles(inc.config)
    expected = {gpu: ("heavy" if role in heavy else "light")
                for role, gpus in roles.items() for gpu in gpus}
    wide = g.pivot_table(index="t", columns="gpu", values="cls", aggfunc="first")
    wide = wide.reindex(columns=sorted(expected)).dropna()
    # each second's split as one number (a digit per GPU, its class), compared over arrays: a
    # tuple per row built by `apply` was most of a fleet's detection (64 hosts x 6 h: 103 of 167 s)
    digits = wide.to_numpy(dtype="int64")
    key = pd.Series(digits @ (len(_CLASSES) ** np.arange(digits.shape[1], dtype="int64")), index=wide.index)
    rows = []
    for a, b in _stretches(key):
        if b - a < 2:
            continue
        split = tuple(_CLASSES[c] for c in digits[a])
        t0, t1 = wide.index[a], wide.index[b - 1]
        if "heavy" not in split or t1 - t0 < min_dur:
            continue  # nothing loaded (idle, or between runs) or too short to be more than loading
        observed = dict(zip(wide.columns, split, strict=True))
        wrong = {gpu: c for gpu, c in observed.items() if c != expected[gpu]}
        if not wrong:
            continue
        during = g[(g["t"] >= t0) & (g["t"] <= t1)]
        mem = during.groupby("gpu")["memory_used_mib"].median().round(0)
        mem = {int(k): float(v) for k, v in mem.items()}
        ev = inc.events
        seen = ev[(ev["kind"] == "gpu_query") & (ev["time"] >= t0) & (ev["time"] <= t1 + pd.Timedelta(seconds=1))]
        if host is not None and "host" in seen.columns:
            seen = seen[seen["host"].isna() | (seen["host"] == host)]
        held, held_refs = _placement(inc, host, list(wrong), t0, t1)
        rows.append(findings.finding(
            "role_mismatch", t0, t1, "warning",
            _query_refs(inc, seen) + _cited(inc, during[during["t"] == t0]) + held_refs,
            {"host": host, "host_named": named, "expected_roles": roles,
             "observed_heavy": [int(gpu) for gpu, c in observed.items() if c == "heavy"],
             "observed_light": [int(gpu) for gpu, c in observed.items() if c != "heavy"],
             "observed_classes": {int(gpu): c for gpu, c in observed.items()},
             "expected_heavy": sorted(int(gpu) for gpu, c in expected.items() if c == "heavy"),
             "expected_light": sorted(int(gpu) for gpu, c in expected.items() if c != "heavy"),
             "gpus_out_of_place": [int(x) for x in wrong], "memory_mib": mem, "holders_by_gpu": held,
             "processes": {gpu: [pid for pid, _, _ in procs] for gpu, procs in held.items()}}))
    return rows


def _placement(inc: Incident, host, gpus: list[int], t0, t1) -> tuple[dict[int, list], list[str]]:
    """Per out-of-place GPU, the processes per-process samples show on it during the stretch:
    which process sits where is what tells a wrong placement from a leftover one."""
    gp = inc.gpu_processes.dropna(subset=["gpu", "pid"])
    gp = gp[(gp["time"] >= t0) & (gp["time"] <= t1 + pd.Timedelta(seconds=1)) & gp["gpu"].isin(gpus)]
    if host is not None:
        gp = gp[gp["host"].isna() | (gp["host"] == host)]
    held, refs = {}, []
    for (gpu, pid), rows in gp.groupby(["gpu", "pid"]):
        name = rows["process_name"].dropna()
        held.setdefault(int(gpu), []).append(
            (int(pid), str(name.iloc[0]) if len(name) else "?", float(rows["used_memory_mib"].median())))
        refs += findings.refs(rows, 1)
    return held, refs


def _query_refs(inc: Incident, queries: pd.DataFrame) -> list[str]:
    """An nvidia-smi answer in a transcript: its prompt line and the output lines after it."""
    out = []
    cmds = inc.events[inc.events["kind"] == "command"]
    for _, q in queries.iterrows():
        if not isinstance(q.get("ref"), str):
            continue
        out.append(q["ref"])
        same = cmds[cmds["ref"] == q["ref"]]
        text = same["output"].iloc[0] if len(same) and "output" in same.columns else None
        if isinstance(text, str):
            out += [findings.shifted(q["ref"], k) for k in range(1, len(text.splitlines()) + 1)]
    return out


def _idle_allocated(inc: Incident, g: pd.DataFrame, min_dur: pd.Timedelta, named: bool = False, host=None) -> list[dict]:
    """A GPU that holds memory at ~0 % utilization for min_dur while other GPUs are busy."""
    if g["util_gpu_pct"].isna().all():
        return []
    util = g["util_gpu_pct"].to_numpy(dtype="float64")
    busy_any = g.groupby("t")["util_gpu_pct"].transform("max").to_numpy(dtype="float64") >= 20
    idle = (g["cls"].to_numpy() != 0) & (util < IDLE_UTIL_PCT) & busy_any
    # each GPU's samples in time order, as positions (a sorted copy of the samples, then one per
    # GPU, was an hour's samples copied twice)
    gpus = g["gpu"].to_numpy(dtype="int64")
    order = np.lexsort((g["t"].to_numpy(), gpus))
    out = []
    for one in np.split(order, np.flatnonzero(np.diff(gpus[order])) + 1):
        for a, b in _stretches(pd.Series(idle[one])):
            if not idle[one[a]]:
                continue
            t0, t1 = g["t"].iloc[one[a]], g["t"].iloc[one[b - 1]]
            if t1 - t0 < min_dur:
                continue
            gpu = gpus[one[a]]
            part = g.iloc[one[a:b]]
            out.append(findings.finding(
                "idle_allocated_gpu", t0, t1, "warning", _cited(inc, part, 3),
                {"host": host, "host_named": named, "beside_busy": True, "gpu": int(gpu),
                 "memory_mib": float(part["memory_used_mib"].median()),
                 "max_util_pct": float(part["util_gpu_pct"].max()),
                 "minutes": (t1 - t0).total_seconds() / 60}))
    return out
