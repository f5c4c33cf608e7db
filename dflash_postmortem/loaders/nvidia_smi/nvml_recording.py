"""Recordings written by `dflash-postmortem record-gpus` (dflash_postmortem/recorder.py): JSON
Lines with a `start` line, then `gpu`, `proc` and `error` lines, times in UTC with a `Z`.

A recorder killed mid-write leaves a truncated last line; it is counted, not fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

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
    data = path.read_bytes()
    read = _columnar(data, rep) or _by_line(data, rep)
    host = ctx.host or read.host
    frames = {}
    for name, df in read.kinds.items():
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


@dataclass
class _Read:
    """A recording's records: one raw frame per frame they go to (each sample with its `line`,
    each error with its `ref`), and the host the first start record names."""

    kinds: dict[str, pd.DataFrame]
    host: str | None


def _by_line(data: bytes, rep) -> _Read:
    """One json.loads per line: any file, whatever is in it, each line parsed or named."""
    lines = data.decode("utf-8", errors="replace").splitlines()
    rep.read = len(lines)
    host = None
    rows: dict[str, list[dict]] = {"gpus": [], "gpu_processes": [], "events": []}
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            rep.skip(i, "blank line")
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            rep.bad(i, "one JSON record per line", _TRUNCATED + line if i == len(lines) else line)
            continue
        kind = rec.pop(RECORD_KEY, None) if isinstance(rec, dict) else None
        if kind == "start":
            host = host or rec.get("host")
            rep.notes.append(_start_note(rec))
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
    return _Read({name: pd.DataFrame(recs) for name, recs in rows.items()}, host)


_TRUNCATED = "truncated last line (recorder stopped mid-write): "


def _start_note(rec: dict) -> str:
    return f"recorded with driver {rec.get('driver')}, every {rec.get('interval_s')} s"


def _columnar(data: bytes, rep) -> _Read | None:
    """The recorder's own files in one pass of Arrow's JSON reader: the same raw frames as
    _by_line gives, or None (and `rep` untouched) when the file is not that regular: text that is
    not ASCII or holds a line break other than LF (Python's splitlines would number its lines
    otherwise), a line that is not one object, a field whose type changes, a record of no known
    kind, a record with a field the first of its kind lacks. A last line cut mid-write is named
    as the line path names it; a whole last line without its newline goes to the line path.

    A record's fields are those of the first record of its kind: the recorder writes every field
    of a kind on every record (null where NVML gave nothing), and a field absent from one record
    reads as null in the line path's frame too."""

    if not data.isascii() or any(sep in data for sep in _OTHER_BREAKS):
        return None
    whole = data[: data.rfind(b"\n") + 1]
    tail = data[len(whole):]
    if tail.strip() and _is_json(tail):
        return None
    raw = np.frombuffer(whole, np.uint8)
    ends = np.flatnonzero(raw == 10)
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)[:len(ends)]
    filled = ends > starts
    if not (raw[starts[filled]] == ord("{")).all():
        return None  # a line of spaces, or one that is not an object: the line path names it
    try:
        table = pj.read_json(pa.BufferReader(whole)) if filled.any() else None
    except pa.ArrowInvalid:
        return None
    lineno = np.flatnonzero(filled) + 1
    if table is not None and (table.num_rows != len(lineno) or RECORD_KEY not in table.column_names):
        return None
    if table is None:
        kinds = pa.chunked_array([], pa.string())
    else:
        kinds = table.column(RECORD_KEY)
        if not pa.types.is_string(kinds.type) or kinds.null_count or not pc.all(
                pc.is_in(kinds, value_set=pa.array(["start", *_FRAME_OF]))).as_py():
            return None  # a record of no known kind: the line path names its line
    host, notes = None, []
    frames: dict[str, pd.DataFrame] = {name: pd.DataFrame() for name in _FRAME_OF.values()}
    for kind in ("start", *_FRAME_OF):
        of_kind = pc.equal(kinds, kind)
        rows = np.flatnonzero(of_kind.to_numpy(zero_copy_only=False)) if len(kinds) else []
        if not len(rows):
            continue
        first = json.loads(whole[starts[lineno[rows[0]] - 1]:ends[lineno[rows[0]] - 1]])
        fields = [k for k in first if k != RECORD_KEY]
        if any(pc.any(pc.and_(of_kind, pc.is_valid(table.column(c)))).as_py()
               for c in table.column_names if c not in first):
            return None  # a field the first record of its kind did not have
        if kind == "start":  # a few lines: their notes as the line path writes them
            for r in rows:
                rec = json.loads(whole[starts[lineno[r] - 1]:ends[lineno[r] - 1]])
                host = host or rec.get("host")
                notes.append(_start_note(rec))
            continue
        df = table.select(fields).take(pa.array(rows)).to_pandas()
        if _FRAME_OF[kind] == "events":
            df["ref"] = [f"{rep.path}:{i}" for i in lineno[rows]]
        else:
            df["line"] = lineno[rows]
        frames[_FRAME_OF[kind]] = df
    n_lines = len(ends) + (1 if tail else 0)
    rep.read = n_lines
    rep.skip_lines(np.flatnonzero(~filled) + 1, "blank line")
    if tail.strip():
        rep.bad(n_lines, "one JSON record per line", _TRUNCATED + tail.decode("ascii"))
    elif tail:
        rep.skip(n_lines, "blank line")
    rep.parsed += len(lineno)
    rep.notes.extend(notes)
    return _Read(frames, host)


# Line breaks of Python's str.splitlines other than LF that ASCII holds.
_OTHER_BREAKS = (b"\r", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e")


def _is_json(text: bytes) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


# Recorded fields that are text; every other field of a gpu or proc record is a number.
_TEXT_COLUMNS = {"time", "host", "source", "uuid", "name", "process_name", "pstate", "line", "gpu", "pid",
                 "clocks_event_reasons"}
