"""The default `nvidia-smi` table, every generation seen in the wild: the 2014 56-column box with
`MB`, the 79-column pre-R525 layout, the 89-column R525+ layout, Windows `Driver-Model`/WDDM,
MIG device tables, truncated GPU and process names, and the processes block (with or without the
GI/CI columns). Several tables in one file (a `watch` log) each take the time on their first line;
lines around a table (a training log it was pasted into) are counted, not parsed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .. import align
from ..incident import from_frames
from .registry import LoadContext
from .smi_fields import QUERY_FIELDS, parse_ctime, snapshot_frame, typed_value

FORMAT = "nvidia-smi-table"
_BORDER = re.compile(r"^\s*[+|][-=+| ]*[+|]\s*$")
_VERSION = re.compile(r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s+(?P<driver>\S+)(?:\s+CUDA Version:\s+(?P<cuda>\S+))?")
_GPU_LINE1 = re.compile(r"^\s*(?P<gpu>\d+)\s+(?P<name>.*?)\s+(?P<mode>On|Off|WDDM|TCC|MCDM|N/A)\s*$")
_GPU_LINE2 = re.compile(r"^\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)\s*$")
_MEMORY = re.compile(r"^\s*(?P<used>\S+)\s*/\s*(?P<total>\S+)\s*$")
_PROC_GI_CI = re.compile(
    r"^(?P<gpu>\d+)\s+(?P<gi>\S+)\s+(?P<ci>\S+)\s+(?P<pid>\d+)\s+(?P<type>[CGM+]+)\s+(?P<name>.*?)\s+(?P<mem>\S+)$"
)
_PROC_OLD = re.compile(r"^(?P<gpu>\d+)\s+(?P<pid>\d+)\s+(?P<type>[CGM+]+)\s+(?P<name>.*?)\s+(?P<mem>\S+)$")
_HEADINGS = ("GPU  Name", "Fan  Temp", "MIG M.", "Processes:", "Process name", "ID   ID", "Usage",
             "MIG devices:", "GPU  GI  CI", "ID  ID  Dev", "ECC|", "Memory-Usage")

F = QUERY_FIELDS


def sniff(path: Path, head: bytes) -> float:
    text = head.decode("utf-8", "replace")
    lines = text.splitlines()
    if not lines:
        return 0.0
    has_table = bool(_VERSION.search(text)) or "| Processes:" in text
    if not has_table:
        return 0.0
    inside = sum(1 for ln in lines if ln.strip().startswith(("|", "+")) or not ln.strip() or parse_ctime(ln))
    return 0.9 if inside >= 0.8 * len(lines) else 0.4


def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    gpus, procs = parse_table_lines(lines, rep, ctx)
    return from_frames(rep, gpus=gpus, gpu_processes=procs)


def parse_table_lines(lines: list[str], rep, ctx: LoadContext) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read every table in `lines`, accounting each line in `rep`. Returns (gpus, gpu_processes)."""
    rep.read = len(lines)
    section = None  # "gpus", "mig", "procs" or None (outside a table)
    proc_pattern = _PROC_GI_CI
    time = None
    driver = None
    gpu_rows: list[dict] = []
    proc_rows: list[dict] = []
    current: dict | None = None
    truncated_names = False
    for i, line in enumerate(lines, start=1):
        s = line.strip()
        if not s:
            rep.skip(i, "blank line")
            if section != "gpus":
                section = None
            continue
        stamp = parse_ctime(s)
        if stamp is not None:
            time, section, current = stamp, None, None
            rep.parsed += 1
            continue
        m = _VERSION.search(s)
        if m:
            driver = m.group("driver")
            rep.parsed += 1
            continue
        if _BORDER.match(s):
            rep.skip(i, "table border")
            if section == "gpus" and current is not None:
                current = None
            continue
        if s.startswith("|") and any(h in s for h in _HEADINGS):
            rep.skip(i, "table heading")
            if "GPU  Name" in s:
                section = "gpus"
            elif "MIG devices:" in s:
                section = "mig"
            elif "Processes:" in s:
                section = "procs"
            elif "Process name" in s:
                proc_pattern = _PROC_GI_CI if " GI " in s else _PROC_OLD
            continue
        if not s.startswith("|"):
            if s.startswith("+") or section is None:
                rep.skip(i, "line outside the nvidia-smi table")
                section = None
                continue
            rep.bad(i, "a table line starting with '|'", line)
            continue
        cells = s.split("|")[1:-1] if s.endswith("|") else s.split("|")[1:]
        if section == "gpus":
            row = _gpu_line(cells, current, gpu_rows, time, driver)
            if row is None:
                rep.bad(i, "a GPU row of the table", line)
                continue
            row.setdefault("line", i)  # a GPU's block of lines is cited by its first
            current = row
            truncated_names |= str(current.get("name") or "").endswith("...")
            rep.parsed += 1
        elif section == "mig":
            rep.skip(i, "MIG device row (per-instance memory is not kept)")
        elif section == "procs":
            body = "|".join(cells).strip()
            if body.startswith("No running processes found"):
                rep.skip(i, "no running processes")
                continue
            pm = proc_pattern.match(body)
            if not pm:
                rep.bad(i, "a process row (GPU, PID, type, name, memory)", line)
                continue
            proc_rows.append(_proc_row(pm, time) | {"line": i})
            rep.parsed += 1
        else:
            rep.bad(i, "a line inside an nvidia-smi table", line)
    if truncated_names:
        rep.assume("GPU names ending in '...' were truncated by nvidia-smi and are kept as printed")
    if any([r.pop("_mb") for r in gpu_rows]):
        rep.assume("memory printed as 'MB' by old nvidia-smi is read as MiB (what it measured)")
    if time is None and (gpu_rows or proc_rows):
        rep.assume("no timestamp line above the table: rows carry no time")
    else:
        rep.assume(align.zone_assumption(ctx.timezone))
    return (snapshot_frame(gpu_rows, ctx, rep), snapshot_frame(proc_rows, ctx, rep))


def _gpu_line(cells, current, rows, time, driver) -> dict | None:
    """Fold one data line of a GPU block into its row; returns the row, or None if unreadable."""
    if len(cells) < 3:
        return None
    m1 = _GPU_LINE1.match(cells[0])
    if m1 and (current is None or "memory_used_mib" in current):
        row = {
            "time": time, "gpu": int(m1.group("gpu")), "name": m1.group("name").strip(),
            "driver_mode": m1.group("mode"), "pci_bus_id": cells[1].split()[0] if cells[1].split() else None,
            "driver_version": driver, "_mb": False,
        }
        rows.append(row)
        return row
    if current is None:
        return None
    m2 = _GPU_LINE2.match(cells[0])
    mm = _MEMORY.match(cells[1])
    if m2 and mm:
        current["fan_pct"] = typed_value(m2.group("fan"), F["fan.speed"])
        current["temp_c"] = typed_value(m2.group("temp"), F["temperature.gpu"])
        current["pstate"] = typed_value(m2.group("perf"), F["pstate"])
        current["power_w"] = typed_value(m2.group("pwr"), F["power.draw"])
        current["power_limit_w"] = typed_value(m2.group("cap"), F["power.limit"])
        current["memory_used_mib"] = typed_value(mm.group("used"), F["memory.used"])
        current["memory_total_mib"] = typed_value(mm.group("total"), F["memory.total"])
        current["_mb"] = mm.group("total").endswith("MB")
        util = cells[2].split()
        current["util_gpu_pct"] = typed_value(util[0], F["utilization.gpu"]) if util else None
        current["compute_mode"] = util[1] if len(util) > 1 else None
        return current
    if not cells[0].strip():
        # The third line (MIG M.) carries no measurement.
        current["mig_mode"] = cells[2].strip() or None
        return current
    return None


def _proc_row(m: re.Match, time) -> dict:
    g = m.groupdict()
    return {
        "time": time, "gpu": int(g["gpu"]), "pid": int(g["pid"]), "type": g["type"],
        "process_name": g["name"].strip() or None,
        "used_memory_mib": typed_value(g["mem"], F["used_memory"]),
        "gpu_instance_id": typed_value(g.get("gi"), F["gpu_instance_id"]),
        "compute_instance_id": typed_value(g.get("ci"), F["compute_instance_id"]),
    }

