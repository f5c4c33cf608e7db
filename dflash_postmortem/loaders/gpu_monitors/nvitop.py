"""nvitop's printed screen (`nvitop -1` / `--once`, or the monitor copied from a terminal).

    Thu Apr 21 01:03:14 2022
    ╒═════════════════════════════════════════════════════════════════════════════╕
    │ NVITOP 1.4.2       Driver Version: 550.90.12      CUDA Driver Version: 12.4 │  (`NVIDIA-SMI ...` before 1.0)
    ├───────────────────────────────┬──────────────────────┬──────────────────────┤
    │ GPU  Name        Persistence-M│ Bus-Id        Disp.A │ MIG M.   Uncorr. ECC │
    │ Fan  Temp  Perf  Pwr:Usage/Cap│         Memory-Usage │ GPU-Util  Compute M. │
    ╞═══════════════════════════════╪══════════════════════╪══════════════════════╪════════════════════╕
    │   0  Tesla P40           On   │ 00000000:3B:00.0 Off │                    0 │ MEM: ▏ 0.0%        │
    │ MAX   20C    P8     9W / 250W │        0B / 22.38GiB │      0%      Default │ UTL: ▏ 0%          │
    ...
    │ Processes:                                                                       user@node15 │
    │ GPU     PID      USER  GPU-MEM %SM  %CPU  %MEM  TIME  COMMAND                                    │
    │   0  205220 C ikissa+   497MiB   0   0.0   0.3  0:42  python3 ex4.py                             │

Each GPU is two rows (one in the compact layout: `│   0 30%  35C  P8   14W / 300W │ ...`) and
becomes a `gpus` row at the screen's time (local, read in the incident's zone); each process a
`gpu_processes` row; the host is the one the Processes header names. Memory is printed with its
own unit (`0B`, `3.50MiB`, `22.38GiB`); `MAX` fan speed, `N/A` are no numbers. Borders, headings
and the host's CPU/memory bars are counted, not read. `-U` (ASCII) draws `|` for `│`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ...clock import align
from ...incident import from_frames
from ...schema import TIME
from .. import registry
from ..nvidia_smi.fields import find_ctime
from ..nvidia_smi.paste import read_paste, unwrap_head
from ..registry import LoadContext
from ..training_log.patterns import integer

FORMAT = "nvitop"
_CELL = re.compile(r"\s*[│|]\s*")
_BORDER = re.compile(r"^\s*[╒╞├╘╤╪┼╧═─━+=\-]{3}")
_VERSION = re.compile(r"(?:NVITOP|NVIDIA-SMI)\s+\S+\s+Driver Version:\s*(?P<driver>\S+)")
_MEM = r"(?:\d+(?:\.\d+)?[KMGT]?i?B|N/A)"
_NAME = re.compile(r"^(?P<gpu>\d+)\s+(?P<name>.+?)\s+(?P<pm>On|Off|N/A)$")
_POWER = re.compile(
    r"^(?:(?P<gpu>\d+)\s+)?(?P<fan>\d+%|N/A|MAX)\s+(?P<temp>\d+C|N/A)\s+(?P<perf>P\d+|N/A)\s+"
    r"(?P<power>\d+(?:\.\d+)?W|N/A)\s*/\s*(?P<cap>\d+(?:\.\d+)?W|N/A)$"
)
_MEMORY = re.compile(rf"^(?P<used>{_MEM})\s*/\s*(?P<total>{_MEM})$")
_UTIL = re.compile(r"^(?P<util>\d+%|N/A)\s+(?P<mode>.+)$")
_PROCESS = re.compile(
    rf"^(?P<gpu>\d+)\s+(?P<pid>\d+)\s+(?P<type>C\+G|C|G|X)\s+(?P<user>\S+)\s+(?P<mem>{_MEM})\s+(?P<sm>\d+|N/A)\s+"
    r"(?P<cpu>[\d.]+|N/A)\s+(?P<hostmem>[\d.]+|N/A)\s+(?P<elapsed>\S+)\s+(?P<command>.*)$"
)
_PROCESSES = re.compile(r"^Processes:\s*(?:(?P<user>[\w.-]+)@(?P<host>[\w.-]+))?$")
_HEADINGS = ("GPU  Name", "Fan  Temp", "GPU Fan Temp", "GPU     PID")
_UNITS = {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 2**20, "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0}


def sniff(path: Path, head: bytes) -> float:
    lines = [s for _, s in unwrap_head(head).content()[:60]]
    boxed = any("╒═" in s or "╞═" in s for s in lines)
    version = any(_VERSION.search(s) for s in lines)
    rows = sum(1 for s in lines if _POWER.match(_cells(s)[0] if _cells(s) else ""))
    if boxed and rows and (version or any("Processes:" in s for s in lines)):
        return 0.9
    return 0.0


def _cells(line: str) -> list[str]:
    return [c for c in _CELL.split(line.strip()) if c]


def _mib(text: str) -> float:
    m = re.match(r"^(\d+(?:\.\d+)?)([KMGT]?i?B)$", text)
    return float(m.group(1)) * _UNITS[m.group(2)] if m and m.group(2) in _UNITS else float("nan")


def _number(text: str | None, suffix: str) -> float:
    return float(text[: -len(suffix)]) if text and text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit() \
        else float("nan")


@registry.format(FORMAT, sniff=sniff, doc="nvitop -1 / --once screen: GPUs (two-line or compact rows) and processes")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    paste = read_paste(path)
    rep.read = len(paste.lines)
    stamp, host, driver = None, None, None
    gpus, procs = [], []
    current: dict | None = None  # the GPU whose second row comes next
    for n, line in paste.lines_to_read(rep):
        text = line.strip()
        if _BORDER.match(text):
            rep.skip(n, "table border")
            continue
        when = find_ctime(text)
        if when is not None and "│" not in text and "|" not in text:
            stamp = pd.Timestamp(when)
            rep.parsed += 1
            continue
        cells = _cells(text)
        if not cells:
            rep.skip(n, "text around the nvitop screen")
            continue
        if (v := _VERSION.search(text)) is not None:
            driver = v.group("driver")
            rep.parsed += 1
            continue
        if (p := _PROCESSES.match(cells[0])) is not None:
            host = p.group("host") or host
            rep.parsed += 1
            continue
        if any(text.lstrip("│| ").startswith(h) for h in _HEADINGS):
            rep.skip(n, "column headings")
            continue
        if (m := _NAME.match(cells[0])) is not None and len(cells) >= 2:
            current = {"time": stamp, "gpu": int(m.group("gpu")), "name": m.group("name"), "persistence_mode": m.group("pm"),
                       "pci_bus_id": cells[1].split()[0], "line": n}
            gpus.append(current)
            rep.parsed += 1
            continue
        if (m := _POWER.match(cells[0])) is not None:
            if m.group("gpu") is not None:  # compact: one row per GPU
                current = {"time": stamp, "gpu": int(m.group("gpu")), "line": n}
                gpus.append(current)
            if current is None:
                rep.bad(n, "a GPU's first row before its readings", text)
                continue
            _readings(current, m, cells)
            current = None
            rep.parsed += 1
            continue
        if (m := _PROCESS.match(cells[0])) is not None:
            procs.append({"time": stamp, "gpu": int(m.group("gpu")), "pid": integer(m.group("pid")), "type": m.group("type"),
                          "user": m.group("user"), "used_memory_mib": _mib(m.group("mem")),
                          "sm_pct": _number(m.group("sm") + "%", "%"), "process_name": m.group("command").strip() or None,
                          "line": n})
            rep.parsed += 1
            continue
        if "No running processes found" in text:
            rep.skip(n, "no running processes")
            continue
        rep.skip(n, "host CPU and memory bars" if text.startswith("[") else "text around the nvitop screen")
    paste.note(rep)
    if driver:
        rep.notes.append(f"driver {driver}")
    frames = {}
    for name, rows in (("gpus", gpus), ("gpu_processes", procs)):
        if rows:
            df = pd.DataFrame(rows)
            df["ref"] = [f"{rep.path}:{k}" for k in df.pop("line")]
            df["time"] = align.localize(pd.to_datetime(df["time"]), ctx.timezone) if df["time"].notna().any() \
                else pd.Series(pd.NaT, index=df.index, dtype=TIME)
            df["host"] = ctx.host or host
            df["source"] = rep.path
            frames[name] = df
    if gpus:
        rep.assume(f"nvitop prints local time without a zone: read in {ctx.timezone}" if stamp is not None
                   else "no time above the screen: rows have no time")
    return from_frames(rep, **frames)


def _readings(row: dict, m: re.Match, cells: list[str]) -> None:
    row.update(fan_pct=_number(m.group("fan"), "%"), temp_c=_number(m.group("temp"), "C"), pstate=m.group("perf"),
               power_w=_number(m.group("power"), "W"), power_limit_w=_number(m.group("cap"), "W"))
    if len(cells) > 1 and (mem := _MEMORY.match(cells[1])) is not None:
        row.update(memory_used_mib=_mib(mem.group("used")), memory_total_mib=_mib(mem.group("total")))
    if len(cells) > 2 and (util := _UTIL.match(cells[2])) is not None:
        row.update(util_gpu_pct=_number(util.group("util"), "%"), compute_mode=util.group("mode").strip())
