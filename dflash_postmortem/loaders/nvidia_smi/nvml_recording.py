"""Recordings written by `dflash-postmortem record-gpus` (dflash_postmortem/recorder.py): JSON
Lines with a `start` line, then `gpu`, `proc` and `error` lines, times in UTC with a `Z`.

A recorder killed mid-write leaves a truncated last line; it is counted, not fatal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...incident import from_frames
from .. import registry
from ..registry import LoadContext

FORMAT = "nvml-recording"
FORMAT_VERSION = 1
RECORD_KEY = "record"
_FRAME_OF = {"gpu": "gpus", "proc": "gpu_processes", "error": "events"}


def sniff(path: Path, head: bytes) -> float:
    first = head.split(b"\n", 1)[0]
    return 0.98 if first.startswith(b'{"record":"start"') and b'"driver"' in first else 0.0


@registry.format(
    FORMAT, sniff=sniff,
    doc="JSON Lines written by dflash-postmortem record-gpus (NVML samples and processes)",
)
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    rep.read = len(lines)
    host = ctx.host
    rows: dict[str, list[dict]] = {"gpus": [], "gpu_processes": [], "events": []}
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            rep.skip(i, "blank line")
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            last = "truncated last line (recorder stopped mid-write): " if i == len(lines) else ""
            rep.bad(i, "one JSON record per line", last + line)
            continue
        kind = rec.pop(RECORD_KEY, None) if isinstance(rec, dict) else None
        if kind == "start":
            host = host or rec.get("host")
            rep.notes.append(f"recorded with driver {rec.get('driver')}, every {rec.get('interval_s')} s")
        elif kind in _FRAME_OF:
            if _FRAME_OF[kind] == "events":
                rec["ref"] = f"{rep.path}:{i}"
            else:
                rec["line"] = i  # samples are millions of rows: a number, not a 'file:line' string
            rows[_FRAME_OF[kind]].append(rec)
        else:
            rep.bad(i, "a start, gpu, proc or error record", line)
            continue
        rep.parsed += 1
    frames = {}
    for name, recs in rows.items():
        df = pd.DataFrame(recs)
        if df.empty:
            continue
        # A damaged record (a hand-edited or half-synced file) keeps its row with what it has.
        stamps = df["time"] if "time" in df.columns else pd.Series(None, index=df.index)
        df["time"] = pd.to_datetime(stamps.astype("string"), utc=True, format="ISO8601", errors="coerce")
        df["host"] = host
        df["source"] = rep.path
        for col in ("pid", "gpu"):
            if col in df.columns:
                df[col] = pd.to_numeric(df[col], errors="coerce").astype("Float64").round().astype("Int64")
        if name == "events":
            texts = df["error"].astype("string").fillna("") if "error" in df.columns else pd.Series("", index=df.index)
            df["kind"] = ["gpu_lost" if "GpuIsLost" in e else "gpu_error" for e in texts]
            df["message"] = df["message"].astype("string").fillna(texts) if "message" in df.columns else texts
            df = df.rename(columns={"gpu": "gpu_index"})
        else:
            df["line"] = df["line"].astype("Int64")
            numbers = [c for c in df.columns if c not in _TEXT_COLUMNS]
            for col in numbers:
                df[col] = pd.to_numeric(df[col], errors="coerce")
        frames[name] = df
    return from_frames(rep, **frames)


# Recorded fields that are text; every other field of a gpu or proc record is a number.
_TEXT_COLUMNS = {"time", "host", "source", "uuid", "name", "process_name", "pstate", "line", "gpu", "pid",
                 "clocks_event_reasons"}
