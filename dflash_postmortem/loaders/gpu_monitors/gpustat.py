"""gpustat (wookayin/gpustat): its text output.

Text: a header `host  Mon Aug 22 15:23:57 2022  515.65.01` (host, local time as `%c`, driver),
then one line per GPU:

    [0] NVIDIA A100-SXM4-80GB | 65°C,  30 %, 100 % (E:   0 %  D:   0 %),  250 / 400 W | 40000 / 81920 MB | alice:python/1234(39000M)

temperature (`'C` before 0.5), fan (`-F`), utilization, encoder/decoder (`-e`), power (`-P`),
memory used and total (MiB, printed `MB`), and the processes: `user(MiB)` by default, the
command for `-c` (`user:command` with `-u`), `/pid` with `-p`. gpustat prints `??` for a value the
driver did not give: missing, never 0. A watch (`gpustat -i`, `watch gpustat`) repeats the header
per sample: each header starts a snapshot at its time (read in the incident's zone).

`gpustat --json` is not read: no public capture of it was found to test a reader against.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ...clock import align
from ...incident import from_frames
from ...schema import TIME
from ...shell_words import ran
from .. import registry
from ..nvidia_smi.paste import read_paste, unwrap_head
from ..registry import LoadContext
from ..training_log.patterns import integer

TEXT_FORMAT = "gpustat"
_V = r"(?:\d+|\?\?|None)"  # gpustat's `??` (and a bare None from old versions) for a missing value
GPU_LINE = re.compile(
    rf"^\s*\[(?P<gpu>\d+)\]\s+(?P<name>[^|]*?)\s*\|\s*(?P<temp>{_V})\s*(?:°C|'C|C)\s*,"
    rf"(?:\s*(?P<fan>{_V})\s*%\s*,)?\s*(?P<util>{_V})\s*%(?:\s*\([^)]*\))?"
    rf"(?:\s*,\s*(?P<power>{_V})\s*(?:/\s*(?P<limit>{_V})\s*)?W)?"
    rf"\s*\|\s*(?P<used>{_V})\s*/\s*(?P<total>{_V})\s*MB\s*\|(?P<procs>.*)$"
)
PROCESS = re.compile(r"(?P<name>[^\s(]+?)?(?:/(?P<pid>\d+|--))?\((?P<mem>\d+|\?)M\)")
# `host  Mon Aug 22 15:23:57 2022  515.65.01`; the driver is missing before gpustat 0.5.
HEADER = re.compile(
    r"^(?P<host>\S+)\s+(?P<time>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})(?:\s+(?P<driver>[\d.]+))?\s*$"
)
_COMMAND = ran("gpustat")
_NOT_SUPPORTED = "(Not Supported)"


def sniff(path: Path, head: bytes) -> float:
    lines = [s for _, s in unwrap_head(head).content()[:50]]
    gpu_lines = sum(1 for s in lines if GPU_LINE.match(s))
    if not gpu_lines:
        return 0.0
    return 0.95 if any(HEADER.match(s) for s in lines) or gpu_lines >= 2 else 0.85


def _num(text: str | None) -> float:
    return float(text) if text is not None and text.isdigit() else float("nan")


@registry.format(TEXT_FORMAT, sniff=sniff, doc="gpustat output: one line per GPU (temperature, utilization, memory, processes)")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, TEXT_FORMAT)
    paste = read_paste(path)
    rep.read = len(paste.lines)
    gpus, procs = [], []
    stamp, host = None, None
    users_only = False
    for n, line in paste.lines_to_read(rep):
        h = HEADER.match(line)
        if h is not None:
            stamp, host = pd.Timestamp(h.group("time")), h.group("host")
            rep.parsed += 1
            continue
        m = GPU_LINE.match(line)
        if m is None:
            rep.skip(n, "command line that ran gpustat" if _COMMAND.match(line) else "text around the gpustat output")
            continue
        gpu = int(m.group("gpu"))
        row = {"time": stamp, "host": host, "gpu": gpu, "name": m.group("name"), "temp_c": _num(m.group("temp")),
               "fan_pct": _num(m.group("fan")), "util_gpu_pct": _num(m.group("util")),
               "power_w": _num(m.group("power")), "power_limit_w": _num(m.group("limit")),
               "memory_used_mib": _num(m.group("used")), "memory_total_mib": _num(m.group("total")),
               "line": n}
        gpus.append(row)
        shown = m.group("procs").strip()
        if shown == _NOT_SUPPORTED:
            row["processes"] = "not supported"
        for p in PROCESS.finditer(shown):
            user, _, command = (p.group("name") or "").partition(":")
            users_only |= not command
            procs.append({"time": stamp, "host": host, "gpu": gpu, "pid": integer(p.group("pid")),
                          "user": user if user not in ("", "--") else None,
                          "process_name": command or None, "used_memory_mib": _num(p.group("mem")), "line": n})
        rep.parsed += 1
    paste.note(rep)
    if users_only:
        rep.assume("a process shown by one name is read as its user (gpustat's default; with -c alone the name "
                   "is the command)")
    return from_frames(rep, **_frames(gpus, procs, ctx, rep))


def _frames(gpus: list[dict], procs: list[dict], ctx: LoadContext, rep) -> dict:
    out = {}
    for name, rows in (("gpus", gpus), ("gpu_processes", procs)):
        if not rows:
            continue
        df = pd.DataFrame(rows)
        if "line" in df.columns:
            df["ref"] = [f"{rep.path}:{n}" for n in df.pop("line")]
        df["time"] = align.localize(pd.to_datetime(df["time"]), ctx.timezone) if df["time"].notna().any() \
            else pd.Series(pd.NaT, index=df.index, dtype=TIME)
        df["host"] = ctx.host or df["host"]
        df["source"] = rep.path
        out[name] = df
    if any(r["time"] is None for r in gpus):
        rep.assume("no gpustat header (host and time) above some GPU lines: their rows have no time")
    elif gpus:
        rep.assume(f"gpustat prints local time without a zone: read in {ctx.timezone}")
    return out
