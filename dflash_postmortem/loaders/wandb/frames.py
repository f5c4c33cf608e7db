"""wandb values -> canonical frames: the pieces every wandb source shares.

A `.wandb` log, an old run's `wandb-history.jsonl` / `wandb-events.jsonl`, the API and the CSV
exports all hand over the same things: history rows of `key -> value`, system-stats samples of
`gpu.{i}.<field> -> value`, JSON values. This module turns them into `metrics` and `gpus` rows,
once, with one table mapping wandb's GPU fields to the kit's columns.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ...load_report import FileReport
from ...schema import TIME
from .keys import HISTORY_SPECIAL, canonical_metric

# wandb `stats` keys gpu.{i}.<field> -> gpus column and scale (one table, no code per field).
GPU_FIELDS: dict[str, tuple[str, float]] = {
    "memoryAllocatedBytes": ("memory_used_mib", 1 / 2**20),
    "gpu": ("util_gpu_pct", 1.0),
    "memory": ("util_mem_pct", 1.0),
    "powerWatts": ("power_w", 1.0),
    "temp": ("temp_c", 1.0),
    "smClock": ("sm_clock_mhz", 1.0),
    "memoryClock": ("mem_clock_mhz", 1.0),
    "enforcedPowerLimitWatts": ("power_limit_w", 1.0),
    "energyJoules": ("energy_j", 1.0),
    "memoryAllocated": ("memory_used_pct", 1.0),
}
_GPU_KEY = re.compile(r"gpu\.(\d+)\.(\w+)$")


# Epoch seconds a wandb timestamp can hold (1970 .. 2242): a value past them is damage, not a time.
_EPOCH_RANGE = (0.0, 2.0**33)
_STEP_LIMIT = 2.0**62


def epoch_times(seconds) -> pd.Series:
    """Seconds since the epoch (float, wandb's `_timestamp`) -> UTC, to the nearest µs; NaN,
    infinities and values out of any plausible range are NaT, never an overflow."""
    s = np.asarray(seconds, dtype=float)
    ok = np.isfinite(s) & (s > _EPOCH_RANGE[0]) & (s < _EPOCH_RANGE[1])
    us = np.where(ok, np.round(np.where(ok, s, 0.0) * 1e6), np.nan)
    return pd.Series(pd.to_datetime(us, unit="us", utc=True)).astype(TIME)


def int_steps(values) -> pd.arrays.IntegerArray:
    """Step numbers as Int64: a step that is not a whole number (damage, a typo) is <NA>."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v) & (np.abs(v) < _STEP_LIMIT) & (np.floor(v) == v)
    return pd.arrays.IntegerArray(np.where(ok, v, 0).astype(np.int64), ~ok)


def to_time(us) -> pd.Series:
    return pd.Series(pd.to_datetime(np.asarray(us, dtype="int64"), unit="us", utc=True)).astype(TIME)


def numeric_values(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(float values, mask of the ones that are numbers): text, media and bools are not metrics."""
    if set(map(type, values)) <= {float, int}:  # the usual case, checked in one pass
        return np.array(values, dtype=float), np.ones(len(values), dtype=bool)
    mask = np.fromiter(
        ((type(v) is float or type(v) is int) for v in values), dtype=bool, count=len(values)
    )
    out = np.full(len(values), np.nan)
    if mask.any():
        out[mask] = [v for v, m in zip(values, mask, strict=True) if m]
    return out, mask


def history_frame(row, key: list[str], value: list, stepnum, run: str, source: str, rep: FileReport,
                  n_rows: int | None = None) -> pd.DataFrame:
    """History rows in long form: one row per (history row, numeric metric).

    `row`, `key`, `value` are flat, one entry per logged value; `stepnum` gives each history row
    the step to use when it carries no `_step` value: a list, or (with `n_rows`) a function of
    the rows that need it.
    """
    if n_rows is None:
        n_rows = len(stepnum)
    if not n_rows:
        return pd.DataFrame()
    codes, uniques = pd.factorize(np.asarray(key, dtype=object))
    uniques = np.asarray(uniques, dtype=object)
    rows = np.asarray(row, dtype=np.int64)
    values, numeric = numeric_values(value)

    def per_row(name: str) -> np.ndarray:
        col = np.full(n_rows, np.nan)
        hit = np.flatnonzero(uniques == name)
        if len(hit):
            hit = codes == hit[0]
            col[rows[hit]] = values[hit]
        return col

    steps = per_row("_step")
    no_step = np.flatnonzero(np.isnan(steps))
    if len(no_step):
        given = stepnum(no_step) if callable(stepnum) else np.asarray(stepnum)[no_step]
        steps[no_step] = pd.to_numeric(pd.Series(list(given), dtype=object), errors="coerce").to_numpy(dtype=float)
    stamps = per_row("_timestamp")
    runtime = per_row("_runtime")
    keep = numeric & ~np.isin(uniques, HISTORY_SPECIAL)[codes]
    n_other = int((~numeric).sum())
    if n_other:
        rep.notes.append(f"{n_other} history values are not numbers (text, media, tables): not in metrics")
    if np.isnan(stamps).any():
        rep.notes.append(f"{int(np.isnan(stamps).sum())} history rows have no _timestamp: time left empty")
    r = rows[keep]
    kept_codes = codes[keep]
    raw_keys = pd.Categorical.from_codes(kept_codes, categories=pd.Index(uniques, dtype="string"))
    # Aliases may map two keys to one metric: categories must stay unique.
    metric_codes, metric_names = pd.factorize(np.asarray([canonical_metric(k) for k in uniques], dtype=object))
    metric = pd.Categorical.from_codes(metric_codes[kept_codes], categories=pd.Index(metric_names, dtype="string"))
    times = epoch_times(stamps)
    out = pd.DataFrame(
        {
            "time": times.take(r).reset_index(drop=True),
            "run": run,
            "step": int_steps(steps[r]),
            "metric": pd.Series(metric).astype("string"),
            "value": values[keep],
            "source": source,
            "key": pd.Series(raw_keys).astype("string"),
            "runtime_s": runtime[r],
        }
    )
    return out


def stats_frames(row: list[int], key: list[str], value: list, time: pd.Series, run: str, host, source: str,
                 gpus: dict[int, dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """System-stats samples -> (`system/<key>` metrics, per-GPU `gpus` rows).

    `row`, `key`, `value` are flat, one entry per value (decoded JSON); `time` has one UTC time
    per sample (`row` indexes it).
    """
    if not row:
        return pd.DataFrame(), pd.DataFrame()
    rows = np.asarray(row, dtype=np.int64)
    keys = np.asarray(key, dtype=object)
    values, numeric = numeric_values(value)
    times = time.reset_index(drop=True)
    metrics = pd.DataFrame(
        {
            "time": times.take(rows[numeric]).reset_index(drop=True),
            "run": run,
            "metric": pd.Series("system/" + keys[numeric].astype(str)).astype("string"),
            "value": values[numeric],
            "source": source,
            "key": pd.Series(keys[numeric].astype(str)).astype("string"),
        }
    )
    # Per-GPU keys pivot into the gpus frame: one row per stats record and GPU.
    parsed = pd.Series(keys).str.extract(_GPU_KEY)
    is_gpu = parsed[0].notna().to_numpy() & numeric
    parsed = parsed[is_gpu]
    fields = parsed[1].map(lambda f: GPU_FIELDS.get(f, (None, 1.0)))
    col = fields.map(lambda f: f[0])
    scale = fields.map(lambda f: f[1]).to_numpy(dtype=float)
    long = pd.DataFrame(
        {
            "row": rows[is_gpu],
            "gpu": parsed[0].astype(int).to_numpy(),
            "col": col.to_numpy(),
            "value": values[is_gpu] * scale,
        }
    ).dropna(subset=["col"])
    if long.empty:
        return metrics, pd.DataFrame()
    wide = long.pivot_table(index=["row", "gpu"], columns="col", values="value", aggfunc="last")
    wide = wide.reset_index()
    wide["time"] = times.take(wide["row"].to_numpy()).to_numpy()
    wide["time"] = wide["time"].astype(TIME)
    wide["host"] = host
    wide["source"] = source
    wide["run"] = run
    info = pd.DataFrame.from_dict(gpus, orient="index")
    if not info.empty:
        wide = wide.merge(info, left_on="gpu", right_index=True, how="left")
    if "memory_total_mib" not in wide and "memory_used_pct" in wide:
        pass  # neither bytes nor a total: leave the total unknown rather than guess
    return metrics, wide.drop(columns=["row"])


def gpu_info(environment: dict, metadata: dict) -> dict[int, dict]:
    """GPU index -> uuid, total memory and name, from the environment record or metadata.json."""
    gpus = environment.get("gpu_nvidia") or metadata.get("gpu_nvidia") or []
    info = {}
    for i, g in enumerate(gpus):
        total = g.get("memory_total") or g.get("memoryTotal")
        info[i] = {
            "uuid": g.get("uuid"),
            "memory_total_mib": float(total) / 2**20 if total else np.nan,
            "name": g.get("name"),
        }
    return info
