"""PID files (`run/<name>.pid`): which process a run says it is.

The file holds one number; its name names the run. Loaded in phase 1: the event's time is the
first snapshot in which `ps` saw that PID (the file itself carries no time), and the load report
says so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..errors import SourceFormatError
from ..incident import Incident, from_frames
from . import registry
from .registry import LoadContext

_PID = re.compile(rb"^\s*(\d{1,10})\s*$")
MAX_PID = 2**31 - 1  # Linux pid_max is at most 2**22: a larger number is not a process id


def sniff_pid_file(path: Path, head: bytes) -> float:
    return 0.6 if len(head) <= 24 and _PID.match(head) else 0.0


PID_FILE_FORMAT = "pid-file"


@registry.format(PID_FILE_FORMAT, sniff=sniff_pid_file, phase=1, doc="a PID file: one process id; the file name names the run")
def load_pid_file(path: Path, ctx: LoadContext) -> Incident:
    path = Path(path)
    rep = ctx.report(path, PID_FILE_FORMAT)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise SourceFormatError(path, None, "a readable file", f"{type(e).__name__}: {e.strerror or e}", fmt=PID_FILE_FORMAT) from e
    rep.read = max(1, len(raw.splitlines()))
    m = _PID.match(raw)
    pid = int(m.group(1)) if m else None
    if pid is None or pid > MAX_PID:
        rep.bad(1, f"one process id (a number up to {MAX_PID})", raw[:80].decode("utf-8", "replace"))
        rep.skip(None, "rest of a file that is not a PID file", rep.read - 1)
        return from_frames(rep)
    run = path.stem
    rep.assume(f"run name {run!r} taken from the file name")
    time = pd.NaT
    known = ctx.known if isinstance(ctx.known, Incident) else None
    if known is not None and not known.processes.empty:
        seen = known.processes.loc[known.processes["pid"] == pid, "first_seen"].dropna()
        if len(seen):
            time = seen.min()
            rep.assume("time is when ps first saw the PID: the file carries no time")
    rep.parsed = rep.read
    events = pd.DataFrame([dict(pid=pid, run=run, kind="pid_file",
                                message=f"{rep.path} names PID {pid} (run {run})", source=rep.path,
                                ref=f"{rep.path}:1", host=ctx.host)])
    # A NaT in an object column cannot be cast to a zoned dtype: build the column typed.
    events.insert(0, "time", pd.Series([time], dtype="datetime64[us, UTC]"))
    return from_frames(rep, events=events)
