"""Prometheus series -> the canonical frames: DCGM per-GPU fields become `gpus` rows (one per
host, GPU and sample time, a column per field), each new nonzero Xid code a `gpu_error` event,
and every other series a `metrics` row. Files and the HTTP API both end here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ... import schema
from . import dcgm_fields as F


@dataclass
class Series:
    """One Prometheus series: its name, labels, and samples (times in seconds since the epoch,
    NaN where the source gave none; `lines`, where the samples came from a file)."""

    name: str
    labels: dict[str, str]
    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)


def _times(seconds: np.ndarray) -> pd.Series:
    # Seconds to microseconds as integers: float seconds -> datetime would round 1.373 to 1.372999.
    us = np.round(seconds * 1e6)
    out = pd.to_datetime(pd.Series(us, dtype="float64"), unit="us", utc=True)
    return out.astype(schema.TIME)


def _blank(values: np.ndarray, gauge: np.ndarray) -> np.ndarray:
    """DCGM's "no value" sentinels as NaN (missing is NaN, never a huge number)."""
    blank = (values >= F.INT64_BLANK) | ((values >= F.FP64_BLANK) & (values < F.FP64_BLANK + 16))
    blank |= gauge & (values >= F.INT32_BLANK) & (values <= F.INT32_MAX)
    return np.where(blank, np.nan, values)


def _ref(source: str, line: int | None, time: pd.Timestamp) -> str:
    if line is not None and line >= 0:
        return f"{source}:{line}"
    return f"{source}@{time.isoformat() if not pd.isna(time) else '?'}"


def build(series: list[Series], source: str, host: str | None = None) -> dict[str, pd.DataFrame]:
    """The gpus, events and metrics frames of `series` (self-instrumentation already left out)."""
    gpu = [s for s in series if F.role(s.name, s.labels) == "gpu" and s.labels[F.GPU_LABEL].strip().isdigit()]
    other = [s for s in series if F.role(s.name, s.labels) == "metric" or (
        F.role(s.name, s.labels) == "gpu" and not s.labels[F.GPU_LABEL].strip().isdigit())]
    out: dict[str, pd.DataFrame] = {}
    if gpu:
        out["gpus"], events = _gpus(gpu, source, host)
        if len(events):
            out["events"] = events
    if other:
        out["metrics"] = _metrics(other, source, host)
    return out


def _identity(s: Series, host: str | None) -> dict:
    labels = s.labels
    row = {
        "host": F.host_of(labels) or host,
        "gpu": int(labels[F.GPU_LABEL]),
        "uuid": labels.get(F.UUID_LABEL) or labels.get("uuid"),
    }
    for label, column in {**F.MIG_LABELS, **F.GPU_INFO_LABELS}.items():
        row[column] = labels.get(label)
    return row


def _gpus(series: list[Series], source: str, host: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = pd.DataFrame([_identity(s, host) for s in series])
    keys = ["host", "gpu", "uuid", "gpu_instance_id"]
    table["gid"] = table.groupby(keys, dropna=False, sort=False).ngroup()
    table["column"] = [F.column_of(s.name) for s in series]
    table["gauge"] = [F.DCGM_FIELDS[s.name].gauge if s.name in F.DCGM_FIELDS else False for s in series]
    counts = np.array([len(s.values) for s in series])
    sid = np.repeat(np.arange(len(series)), counts)
    times = np.concatenate([np.asarray(s.times, dtype="float64") for s in series])
    values = np.concatenate([np.asarray(s.values, dtype="float64") for s in series])
    lines = np.concatenate([np.asarray(s.lines if s.lines else [-1] * len(s.values), dtype="int64") for s in series])
    values = _blank(values, table["gauge"].to_numpy()[sid])
    counted = _counted_reasons(series, values, sid)
    gid = table["gid"].to_numpy()[sid]
    # One row per GPU (or MIG slice) and time: a sample without a time is its own row per field
    # set, which for a single scrape is one row per GPU.
    row_key = pd.MultiIndex.from_arrays([gid, np.nan_to_num(times, nan=-np.inf)])
    row, uniques = pd.factorize(row_key)
    long = pd.DataFrame({"row": row, "column": table["column"].to_numpy()[sid], "value": values,
                         "counted": counted})
    wide = (_one_per_row(long).drop(columns="counted")
            .pivot(index="row", columns="column", values="value").sort_index())
    wide.columns.name = None
    first = table.drop_duplicates("gid").set_index("gid")
    row_gid = np.array([u[0] for u in uniques])[wide.index.to_numpy()]
    row_time = np.array([u[1] for u in uniques], dtype="float64")[wide.index.to_numpy()]
    row_time[np.isinf(row_time)] = np.nan
    ident = first.loc[row_gid, ["host", "gpu", "uuid", "gpu_instance_id", "mig_profile", "name", "pci_bus_id",
                                "driver_version"]].reset_index(drop=True)
    # The GPU's model, bus and driver, and its MIG slice, where the exporter says them.
    ident = ident.drop(columns=[c for c in ident.columns[3:] if ident[c].isna().all()])
    frame = pd.concat([pd.DataFrame({"time": _times(row_time)}), ident, wide.reset_index(drop=True)], axis=1)
    if "gpu_instance_id" in frame.columns:
        frame["gpu_instance_id"] = pd.to_numeric(frame["gpu_instance_id"], errors="coerce").astype("Int64")
    frame = _memory_total(frame)
    if F.REASONS in frame.columns:  # as nvidia-smi writes the mask (0x0000000000000004)
        frame[F.REASONS] = pd.array([None if np.isnan(v) else f"0x{int(v):016x}" for v in frame[F.REASONS]],
                                    dtype="string")
    frame["source"] = source
    frame = frame.sort_values(["time", "host", "gpu"], kind="stable", na_position="first").reset_index(drop=True)
    is_xid = table["column"].to_numpy()[sid] == F.DCGM_FIELDS[F.XID].column
    events = _xid_events(table, series, sid[is_xid], times[is_xid], values[is_xid], lines[is_xid], source)
    return frame, events


def _counted_reasons(series: list[Series], values: np.ndarray, sid: np.ndarray) -> np.ndarray:
    """Which samples are the exporter's count of one clock event reason over its window
    (dcgm_fields.CLOCK_EVENT_COUNTS); their values become that reason's bit where it was counted,
    0 where it was not (`values` is changed in place)."""
    bit = np.array([F.CLOCK_EVENT_BITS.get(s.labels.get(F.CLOCK_EVENT_COUNTS[s.name], ""), np.nan)
                    if s.name in F.CLOCK_EVENT_COUNTS else np.nan for s in series])[sid]
    counted = np.array([s.name in F.CLOCK_EVENT_COUNTS for s in series], dtype=bool)[sid]
    if counted.any():
        # a reason the table does not name (a newer exporter's) is no bit: its count is dropped
        values[counted] = np.where(values[counted] > 0, bit[counted], np.where(np.isnan(bit[counted]), np.nan, 0.0))
    return counted


def _one_per_row(long: pd.DataFrame) -> pd.DataFrame:
    """One value per row and column: a field's last sample; for the clock event reasons, the
    bitmask field where it was scraped, else every reason the exporter counted (their bits OR'd)."""
    reasons = long["column"] == F.REASONS
    out = long[~reasons].drop_duplicates(["row", "column"], keep="last")
    if not reasons.any():
        return out
    r = long[reasons].dropna(subset=["value"])
    mask = r[~r["counted"]].drop_duplicates("row", keep="last")
    counts = r[r["counted"] & ~r["row"].isin(mask["row"])]
    ored = counts.assign(value=counts["value"].astype("int64")).groupby("row", sort=False)["value"].agg(np.bitwise_or.reduce)
    counted = pd.DataFrame({"row": ored.index, "column": F.REASONS, "value": ored.to_numpy(dtype="float64"),
                            "counted": True})
    return pd.concat([out, mask, counted], ignore_index=True)


def _memory_total(frame: pd.DataFrame) -> pd.DataFrame:
    """memory_total_mib = used + free (+ reserved, when the exporter reports it), unless a total
    was reported itself."""
    if {"memory_used_mib", "memory_free_mib"} <= set(frame.columns):
        total = frame["memory_used_mib"] + frame["memory_free_mib"]
        if "memory_reserved_mib" in frame.columns:
            total = total + frame["memory_reserved_mib"].fillna(0.0)
        frame["memory_total_mib"] = frame["memory_total_mib"].fillna(total) if "memory_total_mib" in frame.columns else total
    return frame


def _xid_events(table: pd.DataFrame, series: list[Series], sid: np.ndarray, times: np.ndarray,
                values: np.ndarray, lines: np.ndarray, source: str) -> pd.DataFrame:
    """One `gpu_error` event each time a GPU's last-Xid value becomes a new nonzero code (the
    gauge keeps its value, so a code repeated in every scrape is one event)."""
    if not len(sid):
        return schema.empty("events")
    x = pd.DataFrame({"gid": table["gid"].to_numpy()[sid], "sid": sid, "t": times, "value": values, "line": lines})
    x = x.dropna(subset=["value"]).sort_values(["gid", "t"], kind="stable")
    previous = x.groupby("gid")["value"].shift()
    new = x[(x["value"] != 0) & (x["value"] != previous)]
    rows = []
    when = _times(new["t"].to_numpy(dtype="float64"))
    for (_, r), time in zip(new.iterrows(), when, strict=True):
        ident = table.iloc[int(r["sid"])]
        labels = series[int(r["sid"])].labels
        code = int(r["value"])
        what = f": {labels['err_msg']}" if labels.get("err_msg") and labels.get("err_msg") != "No Error" else ""
        gpu = f"GPU {ident['gpu']}" + (f" ({ident['uuid']})" if ident["uuid"] else "")
        rows.append({
            "time": time, "host": ident["host"], "kind": "gpu_error",
            "message": f"Xid {code} on {gpu}{what} (DCGM_FI_DEV_XID_ERRORS)",
            "source": source, "ref": _ref(source, int(r["line"]), time),
            "gpu": ident["gpu"], "uuid": ident["uuid"], "xid": code,
        })
    events = pd.DataFrame(rows) if rows else schema.empty("events")
    for c, dtype in (("gpu", "Int64"), ("xid", "Int64")):
        if c in events.columns:
            events[c] = events[c].astype(dtype)
    return events


def metric_key(name: str, labels: dict[str, str]) -> str:
    """A series' `metric`: its name, with the labels that tell it apart from its siblings
    (`node_network_receive_bytes_total{device="eth0"}`); where it was scraped is the run."""
    where = {F.INSTANCE, "job", *F.HOST_LABELS}
    rest = [(k, v) for k, v in labels.items() if k not in where]
    if not rest:
        return name
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in rest) + "}"


def _metrics(series: list[Series], source: str, host: str | None) -> pd.DataFrame:
    counts = np.array([len(s.values) for s in series])
    runs = [F.host_of(s.labels) or s.labels.get("job") or host for s in series]
    keys = [metric_key(s.name, s.labels) for s in series]
    times = np.concatenate([np.asarray(s.times, dtype="float64") for s in series])
    return pd.DataFrame({
        "time": _times(times),
        "run": pd.array(np.repeat(np.array(runs, dtype=object), counts), dtype="string"),
        "metric": pd.array(np.repeat(np.array(keys, dtype=object), counts), dtype="string"),
        "value": np.concatenate([np.asarray(s.values, dtype="float64") for s in series]),
        "source": source,
    })
