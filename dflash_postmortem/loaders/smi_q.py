"""`nvidia-smi -q` text reports (whole, or `-d MEMORY,UTILIZATION,...` parts; one or many, as
`-q -l N` writes them): GPU identity, memory, utilization, power, temperature, clocks, processes.

The report is an indented tree of `Label : value` lines; a label's meaning is its path
("FB Memory Usage/Used"), looked up in `smi_fields.Q_TEXT_FIELDS`.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import align
from ..incident import from_frames
from .registry import LoadContext
from .smi_fields import (
    Q_TEXT_FIELDS,
    Q_TEXT_PROCESS_FIELDS,
    QUERY_FIELDS,
    parse_ctime,
    snapshot_frame,
    typed_value,
)

FORMAT = "nvidia-smi-q"
_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+$")
_GPU = re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+)\s*$")
_KEY_VALUE = re.compile(r"^(?P<indent> *)(?P<key>[^:]+?)\s+:(?: (?P<value>.*))?$")
_SECTION = re.compile(r"^(?P<indent> *)(?P<key>\S.*?)\s*$")


def sniff(path: Path, head: bytes) -> float:
    text = head.decode("utf-8", "replace")
    if re.search(r"^=+NVSMI LOG=+\s*$", text, re.MULTILINE):
        return 0.95
    return 0.0


def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    rep.read = len(lines)
    time = None
    gpus: list[dict] = []
    procs: list[dict] = []
    gpu: dict | None = None
    proc: dict | None = None
    ordinal = -1
    stack: list[str] = []
    for i, line in enumerate(lines, start=1):
        expanded = line.replace("\t", "    ").rstrip()
        if not expanded.strip():
            rep.skip(i, "blank line")
            continue
        if _BANNER.match(expanded.strip()):
            rep.skip(i, "report banner")
            gpu, ordinal = None, -1
            continue
        gm = _GPU.match(expanded)
        if gm:
            ordinal += 1
            gpu = {"time": time, "gpu": ordinal, "pci_bus_id": gm.group("bus")}
            gpus.append(gpu)
            stack, proc = [], None
            rep.parsed += 1
            continue
        kv = _KEY_VALUE.match(expanded)
        m = kv or _SECTION.match(expanded)
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
            continue
        if stack[0] == "processes" and level >= 2:
            name = Q_TEXT_PROCESS_FIELDS.get(key)
            if name is None:
                continue
            if proc is None or (name in ("gpu_instance_id", "pid") and "pid" in proc):
                proc = {"time": time, "gpu": gpu["gpu"], "uuid": gpu.get("uuid")}
                procs.append(proc)
            f = QUERY_FIELDS[name]
            proc[f.column] = typed_value(value, f)
            continue
        name = Q_TEXT_FIELDS.get("/".join(stack))
        if name is not None:
            f = QUERY_FIELDS[name]
            gpu[f.column] = typed_value(value, f)
    for p in procs:
        p["uuid"] = next((g.get("uuid") for g in gpus if g["gpu"] == p["gpu"]), None)
    if gpus:
        rep.assume("GPU index taken from the order of the GPUs in the report (nvidia-smi lists them by index)")
        rep.assume(align.zone_assumption(ctx.timezone))
    return from_frames(rep, gpus=snapshot_frame(gpus, ctx, rep), gpu_processes=snapshot_frame(procs, ctx, rep))

