"""PyTorch's Flight Recorder dumps (c10d's ring buffer of the latest collectives, per rank), in
their JSON form (`torch._C._distributed_c10d._dump_nccl_trace_json()`, `_dump_fr_trace_json()`):

    {"version": "2.10", "pg_config": {...}, "pg_status": {"0": {"last_enqueued_collective": "5",
     "last_started_collective": "-1", "last_completed_collective": "4"}},
     "entries": [{"record_id": 4, "pg_id": 0, "process_group": ["0", "default_pg"],
                  "collective_seq_id": 5, "profiling_name": "gloo:all_reduce", "state": "scheduled",
                  "time_created_ns": 1796176600309339445, "timeout_ms": 5000, ...}]}

One `collective` event per entry, at the time it was created, with its sequence number, op,
state, process group and timeout; each group's last enqueued, started and completed sequence
numbers go to the load report. The dump names no rank: torch names the file after it
(`nccl_trace_rank_3`), and so does this loader.

The default dump is a pickle. A pickle is a program: loading one runs whatever it says, so one
found among the evidence is recognised and skipped with that reason, never opened.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from ...errors import SourceFormatError
from ...incident import Incident, from_frames
from .. import registry
from ..registry import LoadContext

FORMAT = "flight-recorder"
MAX_BYTES = 512 << 20
_JSON_HEAD = re.compile(rb"^\s*\{")
_PICKLE_HEAD = re.compile(rb"^\x80[\x02-\x05]")
_KEYS = (b'"entries"', b'"pg_config"', b'"pg_status"', b'"profiling_name"')
_PICKLED_KEYS = (b"entries", b"pg_config", b"pg_status", b"profiling_name")
_RANK_IN_NAME = re.compile(r"rank[_-]?(?P<rank>\d+)(?:\.\w+)?$")
PICKLE_SKIPPED = ("a Flight Recorder pickle: not read (unpickling runs code); dump it as JSON "
                  "(torch._C._distributed_c10d._dump_nccl_trace_json)")


def sniff_flight_recorder(path: Path, head: bytes) -> float:
    if _PICKLE_HEAD.match(head):
        return 0.9 if sum(k in head for k in _PICKLED_KEYS) >= 2 else 0.0
    if not _JSON_HEAD.match(head):
        return 0.0
    return 0.9 if b'"entries"' in head and sum(k in head for k in _KEYS) >= 3 else 0.0


@registry.format(FORMAT, sniff=sniff_flight_recorder,
                 doc="PyTorch Flight Recorder dumps (JSON): each rank's latest collectives; pickles are skipped unread")
def load_flight_recorder(path: Path, ctx: LoadContext) -> Incident:
    path = Path(path)
    if _PICKLE_HEAD.match(registry.read_head(path)):
        rep = ctx.report(path, FORMAT, unit="file")
        rep.read = 1
        rep.skip(None, PICKLE_SKIPPED)
        return from_frames(rep)
    rep = ctx.report(path, FORMAT, unit="record")
    if path.stat().st_size > MAX_BYTES:
        raise SourceFormatError(path, None, f"a dump under {MAX_BYTES >> 20} MiB", f"{path.stat().st_size} bytes", fmt=FORMAT)
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as e:  # cut by a crash, not UTF-8, nested too deep
        raise SourceFormatError(path, getattr(e, "lineno", None), "a complete JSON document", str(e)[:200], fmt=FORMAT) from e
    entries = doc.get("entries") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise SourceFormatError(path, None, 'an "entries" list', type(entries).__name__, fmt=FORMAT)
    rep.read = len(entries)
    rank = _rank(ctx.aliases.get(path, path), rep)
    rows = []
    for i, entry in enumerate(entries):
        row = _entry(entry)
        if row is None:
            rep.bad(None, "an entry with a profiling_name, a sequence number and time_created_ns", f"entries[{i}]")
            continue
        rows.append(dict(row, host=ctx.host, rank=rank, source=rep.path, ref=f"{rep.path}:entries[{i}]",
                         pattern="flight_recorder", by="c10d"))
        rep.parsed += 1
    status_by_group = doc.get("pg_status")
    for pg, status in status_by_group.items() if isinstance(status_by_group, dict) else ():
        if isinstance(status, dict):
            said = ", ".join(f"{k.removeprefix('last_').removesuffix('_collective')} {v}" for k, v in status.items())
            rep.notes.append(f"process group {pg}: last {said}")
    if isinstance(doc.get("version"), str):
        rep.notes.append(f"Flight Recorder dump version {doc['version']}")
    events = pd.DataFrame(rows)
    for col in ("time", "started", "completed"):
        events[col] = pd.to_datetime(events[col], unit="ns", utc=True) if len(events) else pd.Series(dtype="datetime64[ns, UTC]")
    return from_frames(rep, events=events)


def _rank(path: Path, rep) -> int | None:
    m = _RANK_IN_NAME.search(Path(path).name)
    if m is None:
        rep.assume("the dump names no rank, nor does its file name (torch's nccl_trace_rank_<N>): rows have no rank")
        return None
    rep.assume(f"rank {m.group('rank')} from the file name (the dump itself names no rank)")
    return int(m.group("rank"))


def _entry(entry) -> dict | None:
    if not isinstance(entry, dict):
        return None
    op, seq = entry.get("profiling_name"), entry.get("collective_seq_id")
    if entry.get("is_p2p"):
        seq = entry.get("p2p_seq_id")
    created = _ns(entry.get("time_created_ns"))
    if not isinstance(op, str) or not isinstance(seq, int) or isinstance(seq, bool) or created is None:
        return None
    group = entry.get("process_group")
    pg = " ".join(str(g) for g in group) if isinstance(group, list) else None
    state = entry.get("state") if isinstance(entry.get("state"), str) else None
    timeout = entry.get("timeout_ms") if isinstance(entry.get("timeout_ms"), int) else None
    return dict(
        time=created, started=_ns(entry.get("time_discovered_started_ns")) or None,
        completed=_ns(entry.get("time_discovered_completed_ns")) or None, kind="collective", seq=seq, op=op,
        state=state, pg=pg, timeout_ms=timeout, retired=entry.get("retired") if isinstance(entry.get("retired"), bool) else None,
        message=f"{op} #{seq} on process group {pg or '?'}: {state or 'state unknown'}"
                + (f" (timeout {timeout} ms)" if timeout else ""),
    )


def _ns(value) -> int | None:
    """Nanoseconds since the epoch as the dump writes them; 0 (not seen) and nonsense are None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        return None
    return value
