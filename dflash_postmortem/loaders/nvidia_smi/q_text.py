"""`nvidia-smi -q` text reports (whole, or `-d MEMORY,UTILIZATION,...` parts; one or many, as
`-q -l N` writes them): GPU identity, memory, utilization, power, temperature, clocks, processes.

The report is an indented tree of `Label : value` lines; a label's meaning is its path
("FB Memory Usage/Used"), looked up in `fields.Q_TEXT_FIELDS`. Depth is read relative to the
report's own margin, so a report pasted indented (a markdown list, a quote) reads the same.
What nvidia-smi prints instead of a value (`N/A`, `Not available in WDDM driver model`,
`Requested functionality has been deprecated`, `Unknown Error`) is missing and named in `state`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ...clock import align
from ...incident import from_frames
from .. import registry
from ..registry import LoadContext
from .fields import (
    Q_TEXT_FIELDS,
    Q_TEXT_PROCESS_FIELDS,
    QUERY_FIELDS,
    parse_ctime,
    put,
    snapshot_frame,
)
from .gpu_errors import ErrorLines, events_frame, state_events
from .paste import read_paste, unwrap_head

FORMAT = "nvidia-smi-q"
_BANNER = re.compile(r"^\s*=+\s*NVSMI LOG\s*=+\s*$")
_GPU = re.compile(r"^(?P<indent>\s*)GPU (?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)\s*$")
_KEY_VALUE = re.compile(r"^(?P<indent> *)(?P<key>[^:]+?)\s+:(?: (?P<value>.*))?$")
_SECTION = re.compile(r"^(?P<indent> *)(?P<key>\S.*?)\s*$")
# "Product Name    : NVIDIA H100": -q pads every label to a column before its colon.
_LABELLED = re.compile(r"^\s*[A-Z][\w ./()-]*?\s{2,}: ")
# Report-wide lines above the GPUs; R610 marks the old names "[Deprecated; ...]".
_HEADER_FIELDS = {"driver version": "driver_version", "kmd version": "driver_version",
                  "cuda version": "cuda_version", "cuda umd version": "cuda_version"}


def sniff(path: Path, head: bytes) -> float:
    content = unwrap_head(head).content()
    for k, (_, s) in enumerate(content[:40]):
        if _BANNER.match(s):
            return 0.95 if k < 5 else 0.8
    # An excerpt pasted without the banner: report lines and a GPU's bus-id line.
    if any(_GPU.match(s) for _, s in content[:60]):
        labelled = sum(1 for _, s in content[:60] if _LABELLED.match(s))
        if labelled >= 3 and labelled >= 0.5 * min(len(content), 60):
            return 0.85
    return 0.0


@registry.format(FORMAT, sniff=sniff, doc="nvidia-smi -q [-d ...] text report")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    paste = read_paste(path)
    lines = [ln.replace("\t", "    ").rstrip() for ln in paste.lines]
    rep.read = len(lines)
    margin = _margin(lines)
    time = None
    header: dict = {}
    gpus: list[dict] = []
    procs: list[dict] = []
    found = ErrorLines()
    error_times = []
    gpu: dict | None = None
    proc: dict | None = None
    ordinal = -1
    in_report = False
    stack: list[str] = []
    for i, (line, wrap) in enumerate(zip(lines, paste.wrapping, strict=True), start=1):
        if wrap is not None or not line.strip():
            rep.skip(i, wrap or "blank line")
            found.end()
            continue
        if _BANNER.match(line):
            rep.skip(i, "report banner")
            gpu, ordinal, in_report, header = None, -1, True, {}
            continue
        # Error messages start at the report's margin; indented lines are the report's own.
        at_margin = len(line) - len(line.lstrip(" ")) <= margin
        if at_margin and not _KEY_VALUE.match(line.strip()) and found.feed(line.strip(), i):
            error_times += [time] * (len(found.errors) - len(error_times))
            rep.parsed += 1
            continue
        found.end()
        if not in_report and (_GPU.match(line) or line.strip().startswith(("Timestamp ", "Driver Version "))):
            in_report = True  # an excerpt pasted without the banner
            rep.assume("no '==NVSMI LOG==' banner: the report starts at its first report line")
        if not in_report:
            rep.skip(i, "text before the -q report")
            continue
        expanded = line[margin:] if line[:margin].strip() == "" else line.lstrip()
        gm = _GPU.match(expanded)
        if gm and not gm.group("indent"):
            ordinal += 1
            gpu = {"time": time, "gpu": ordinal, "pci_bus_id": gm.group("bus"), **header, "line": i}
            gpus.append(gpu)
            stack, proc = [], None
            rep.parsed += 1
            continue
        kv = _KEY_VALUE.match(expanded)
        m = kv or _SECTION.match(expanded)
        if m is None:  # only odd whitespace (a non-breaking space from a web page)
            rep.skip(i, "line outside the -q report")
            continue
        level = len(m.group("indent")) // 4
        key = m.group("key").strip().lower()
        stack = stack[: max(level - 1, 0)] + [key]
        rep.parsed += 1
        if kv is None:
            continue
        value = kv.group("value")
        if gpu is None:
            if key == "timestamp":
                time = parse_ctime(value or "")
            elif key in _HEADER_FIELDS and value:
                header.setdefault(_HEADER_FIELDS[key], value.split(" [", 1)[0].strip())
            continue
        if stack[0] == "processes" and level >= 2:
            name = Q_TEXT_PROCESS_FIELDS.get(key)
            if name is None:
                continue
            if proc is None or (name in ("gpu_instance_id", "pid") and "pid" in proc):
                proc = {"time": time, "gpu": gpu["gpu"], "uuid": gpu.get("uuid")}
                procs.append(proc)
            put(proc, QUERY_FIELDS[name], value)
            continue
        name = Q_TEXT_FIELDS.get("/".join(stack))
        if name is not None:
            put(gpu, QUERY_FIELDS[name], value)
    for p in procs:
        p["uuid"] = next((g.get("uuid") for g in gpus if g["gpu"] == p["gpu"]), None)
    paste.note(rep)
    if margin:
        rep.assume(f"report indented by {margin} columns (pasted into a list or quote): depth read from there")
    if gpus:
        rep.assume("GPU index taken from the order of the GPUs in the report (nvidia-smi lists them by index)")
        rep.assume(align.zone_assumption(ctx.timezone))
    gpu_frame = snapshot_frame(gpus, ctx, rep)
    frames = {"gpus": gpu_frame, "gpu_processes": snapshot_frame(procs, ctx, rep)}
    events = [state_events(gpu_frame, rep.path)]
    if found.errors:
        when = align.localize(pd.Series(error_times, dtype="datetime64[us]"), ctx.timezone)
        events.append(events_frame(found.errors, ctx, rep.path, list(when)))
    events = [e for e in events if e is not None]
    if events:
        frames["events"] = pd.concat(events, ignore_index=True)
    return from_frames(rep, **frames)


def _margin(lines: list[str]) -> int:
    """How far the report's own left edge is indented: the banner's or the first GPU line's
    indentation (a report pasted under a list item or in an indented code block)."""
    for ln in lines:
        if _BANNER.match(ln) or _GPU.match(ln) or ln.strip().startswith("Timestamp"):
            return len(ln) - len(ln.lstrip(" "))
    return 0
