"""PID files (`run/<name>.pid`): which process a run says it is.

The file holds one number; its name names the run. Loaded in phase 1: the event's time is the
first snapshot in which `ps` saw that PID (the file itself carries no time), and the load report
says so.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..incident import Incident, from_frames
from .registry import Format, LoadContext, register

_PID = re.compile(rb"^\s*(\d{1,10})\s*$")


def sniff_pid_file(path: Path, head: bytes) -> float:
    return 0.6 if len(head) <= 24 and _PID.match(head) else 0.0


def load_pid_file(path: Path, ctx: LoadContext) -> Incident:
    path = Path(path)
    rep = ctx.report(path, "pid-file")
    raw = path.read_bytes()
    rep.read = 1
    m = _PID.match(raw)
    if not m:
        rep.bad(1, "one process id", raw[:80].decode("utf-8", "replace"))
        return from_frames(rep)
    pid = int(m.group(1))
    run = path.stem
    rep.assume(f"run name {run!r} taken from the file name")
    time = pd.NaT
    known = ctx.known if isinstance(ctx.known, Incident) else None
    if known is not None and not known.processes.empty:
        seen = known.processes.loc[known.processes["pid"] == pid, "first_seen"].dropna()
        if len(seen):
            time = seen.min()
            rep.assume("time is when ps first saw the PID: the file carries no time")
    rep.parsed = 1
    events = pd.DataFrame([dict(time=time, pid=pid, run=run, kind="pid_file",
                                message=f"{rep.path} names PID {pid} (run {run})", source=rep.path,
                                ref=f"{rep.path}:1", host=ctx.host)])
    events["time"] = pd.Series(events["time"], dtype="datetime64[us, UTC]")
    return from_frames(rep, events=events)


register(Format(
    name="pid-file",
    sniff=sniff_pid_file,
    load=load_pid_file,
    doc="a PID file: one process id; the file name names the run",
    phase=1,
))
