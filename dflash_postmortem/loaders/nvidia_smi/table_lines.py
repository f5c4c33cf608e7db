"""The default `nvidia-smi` table, line by line (the `nvidia-smi-table` form's loader is table.py;
query CSV pastes hold tables too), every generation seen in the wild: the 2014 56-column box with
`MB`, two-line GPU blocks before R450, the 79-column pre-R525 layout, the 89-column R525+ layout,
R610's `KMD Version` / `CUDA UMD Version` header, Windows `Driver-Model`/WDDM/TCC, MIG device
tables, truncated GPU and process names, and the processes block (with or without the GI/CI
columns). Several tables in one file (a `watch` log) each take the time on their first line;
lines around a table (a training log or an issue it was pasted into) are counted, not parsed.

A GPU that nvidia-smi could not read prints `ERR!` (or `[GPU is lost]`) in its cells: those values
are missing, the row keeps what was readable, its `state` names what was printed, and the GPU's
error state becomes an `events` row. A table cut mid-GPU keeps the cells that were written.
"""

from __future__ import annotations

import re

from ...clock import align
from ..registry import LoadContext
from .fields import (
    MISSING,
    QUERY_FIELDS,
    find_ctime,
    put,
    read_value,
    snapshot_frame,
    unit_spellings,
)
from .gpu_errors import ErrorLines, match_error

VERSION_MARK = "NVIDIA-SMI "  # starts the table's version line (and the driver-unreachable error)
_BORDER = re.compile(r"^\s*[+|][-=+| ]*[+|]?\s*$")
VERSION = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+(?:Driver|KMD) Version:\s+(?P<driver>\S+)"
    r"(?:\s+CUDA(?: UMD)? Version:\s+(?P<cuda>\S+))?"
)
# A Jetson (integrated GPU) prints N/A where a PCI bus id would be.
_BUS_ID = re.compile(r"^\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]|N/A)(?:\s|$)")
_GPU_LINE1 = re.compile(r"^\s*(?P<gpu>\d+)\s+(?P<name>.*?)\s*(?P<mode>\b(?:On|Off|WDDM|TCC|MCDM|N/A|ERR!))?\s*$")
# A value of the Fan/Temp/Perf/Pwr cell: "38%", "N/A", "ERR!", "97W" (the "/" between usage and
# cap is not one, but the one inside "N/A" is).
_TOKEN = re.compile(r"\[?N/A\]?|[^\s/]+")
_SLASH = re.compile(r"\s*(?<!\bN)/(?!A\b)\s*")
_PROC_GI_CI = re.compile(
    r"^(?P<gpu>\d+)\s+(?P<gi>\S+)\s+(?P<ci>\S+)\s+(?P<pid>\d+)\s+(?P<type>[CGM+]+)\s+(?P<name>.*?)\s+(?P<mem>\S+)$"
)
_PROC_OLD = re.compile(r"^(?P<gpu>\d+)\s+(?P<pid>\d+)\s+(?P<type>[CGM+]+)\s+(?P<name>.*?)\s+(?P<mem>\S+)$")
# "PID   Type" also names a processes heading that a paste cut before "Process name".
_HEADINGS = ("GPU  Name", "Fan  Temp", "MIG M.", "Processes:", "Process name", "PID   Type", "ID   ID", "Usage",
             "MIG devices:", "GPU  GI  CI", "ID  ID  Dev", "ECC|", "Memory-Usage")
OUTSIDE = "line outside the nvidia-smi table"
# An `nvidia-smi -L` line (also pasted above a table, `nvidia-smi -L; nvidia-smi`). The UUID may be
# cut (a paste lost the closing parenthesis, or everything after "UUID:") or blanked by the poster
# ("[removed]").
_LIST_LINE = re.compile(
    r"^\s*GPU (?P<gpu>\d+): (?P<name>.+?)"
    r"(?: \((?:UUID:(?: (?P<uuid>[^)\s]+))?|S/N: (?P<serial>[^)]+))\)?)?\s*$"
)

F = QUERY_FIELDS


def is_gpu_line1(cells: list[str]) -> bool:
    """`|   0  NVIDIA A40   On   | 00000000:03:00.0 Off |   0 |`: a GPU block's first line."""
    return len(cells) >= 2 and bool(_GPU_LINE1.match(cells[0])) and bool(_BUS_ID.match(cells[1]))


def list_line(line: str, i: int) -> re.Match | None:
    """`GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)`, a line of `nvidia-smi -L`."""
    # "GPU 00000000:00:07.0: GPU is lost" has the shape of a list line: it is an error.
    return _LIST_LINE.match(line) if match_error(line, i) is None else None


def table_cells(s: str) -> list[str]:
    body = s[1:] if s.startswith("|") else s
    return body[:-1].split("|") if body.endswith("|") else body.split("|")


def parse_table_lines(paste, rep, ctx: LoadContext):
    """Read every table in a capture, accounting each line in `rep`. Returns (gpus,
    gpu_processes, error lines nvidia-smi printed around the tables)."""
    rep.read = len(paste.lines)
    section = None  # "gpus", "mig", "procs" or None (outside a table)
    proc_pattern = _PROC_GI_CI
    time = None
    header: dict = {}
    gpu_rows: list[dict] = []
    proc_rows: list[dict] = []
    found = ErrorLines()
    uuids: dict[int, str] = {}  # from `nvidia-smi -L` lines pasted with the table
    current: dict | None = None
    content = paste.content()
    last = content[-1][0] if content else 0
    for i, (line, wrap) in enumerate(zip(paste.lines, paste.wrapping, strict=True), start=1):
        s = line.strip()
        if wrap is not None or not s:
            rep.skip(i, wrap or "blank line")
            if section != "gpus":
                section = None
            found.end()
            continue
        if not s.startswith(("|", "+")):
            stamp = find_ctime(s)
            if stamp is not None:
                time, section, current = stamp, None, None
                rep.parsed += 1
                continue
            if found.feed(s, i):
                rep.parsed += 1
                continue
            listed = list_line(s, i)
            if listed and (listed.group("uuid") or "").startswith("GPU-"):
                uuids[int(listed.group("gpu"))] = listed.group("uuid")
                rep.parsed += 1
                continue
            rep.skip(i, OUTSIDE)
            section, current = None, None
            continue
        m = VERSION.search(s)
        if m:
            # A vGPU host (and a driver without CUDA) prints "CUDA Version: N/A": missing, not a version.
            cuda = m.group("cuda")
            header = {"driver_version": m.group("driver"), "cuda_version": None if cuda in MISSING else cuda}
            rep.parsed += 1
            continue
        if _BORDER.match(s):
            rep.skip(i, "table border")
            if section == "gpus":
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
            elif "Process name" in s or "PID   Type" in s:
                proc_pattern = _PROC_GI_CI if " GI " in s else _PROC_OLD
            continue
        if not s.startswith("|"):
            rep.skip(i, OUTSIDE)
            continue
        cells = table_cells(s)
        if section is None and is_gpu_line1(cells):
            # A table pasted without its headings (a fragment in docs or an issue).
            section = "gpus"
        if section == "gpus":
            row = _gpu_line(cells, current, gpu_rows, time, header, cut=i == last)
            if row is None:
                rep.bad(i, "a GPU row of the table", line)
                continue
            row.setdefault("line", i)  # a GPU's block of lines is cited by its first
            current = row
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
            rep.skip(i, OUTSIDE)
    if uuids:
        _add_listed_uuids(gpu_rows, uuids)
        rep.assume("UUIDs taken from the `nvidia-smi -L` lines pasted with the table, by GPU index")
    if any(str(r.get("name") or "").endswith("...") for r in gpu_rows):
        rep.assume("GPU names ending in '...' were truncated by nvidia-smi and are kept as printed")
    if any([r.pop("_mb", False) for r in gpu_rows]):
        rep.assume("memory printed as 'MB' by old nvidia-smi is read as MiB (what it measured)")
    if any([r.get("_cut") or "_line2" not in r for r in gpu_rows]):
        rep.assume("a GPU block cut short (the capture ends mid-table): its row keeps the cells written")
    if time is None and (gpu_rows or proc_rows):
        rep.assume("no timestamp line above the table: rows carry no time")
    else:
        rep.assume(align.zone_assumption(ctx.timezone))
    return snapshot_frame(gpu_rows, ctx, rep), snapshot_frame(proc_rows, ctx, rep), found.errors


def _gpu_line(cells, current, rows, time, header, cut: bool) -> dict | None:
    """Fold one data line of a GPU block into its row; returns the row, or None if unreadable.

    Each cell is read on its own, so the last line of a capture cut mid-write keeps what was
    written before the cut; elsewhere a line must have all three cells.
    """
    if len(cells) < 3 and not cut:
        return None
    m1 = _GPU_LINE1.match(cells[0])
    if m1 and (len(cells) < 2 or _BUS_ID.match(cells[1])):
        row = {"time": time, **header, "_mb": False}
        put(row, F["index"], m1.group("gpu"))
        put(row, F["name"], m1.group("name"))
        row["driver_mode"] = m1.group("mode")
        if row["driver_mode"] == "ERR!":
            row.setdefault("_odd", {})["driver_mode"] = "ERR!"
        if len(cells) > 1:
            bus = _BUS_ID.match(cells[1])
            row["pci_bus_id"] = bus.group("bus") if bus and bus.group("bus") != "N/A" else None
        if len(cells) > 2:
            put(row, F["ecc.errors.uncorrected.volatile.total"], cells[2])
        row["_cut"] = len(cells) < 3
        rows.append(row)
        return row
    if current is None:
        return None
    if "_line2" not in current:
        # Fan, Temp, Perf, Pwr:Usage/Cap | Memory-Usage | GPU-Util, Compute M.
        tokens = _TOKEN.findall(cells[0])
        if not tokens and not cells[1:]:
            return None
        current["_line2"] = True
        pairs = list(zip((F["fan.speed"], F["temperature.gpu"], F["pstate"], F["power.draw"], F["power.limit"]),
                         tokens, strict=False))
        if len(cells) > 1:
            used, *total = _SLASH.split(cells[1].strip(), maxsplit=1)
            pairs.append((F["memory.used"], used or None))
            if total and total[0]:
                pairs.append((F["memory.total"], total[0]))
                current["_mb"] = total[0].endswith("MB")
        if len(cells) > 2:
            util = cells[2].split()
            if util:
                pairs.append((F["utilization.gpu"], util[0]))
            if len(util) > 1:
                pairs.append((F["compute_mode"], " ".join(util[1:])))
        for field, text in pairs:
            put(current, field, text)
        current["_cut"] = len(cells) < 3 or len(tokens) < 5
        if cut and pairs:
            _check_cut(current, *pairs[-1])
        return current
    if not cells[0].strip() and len(cells) >= 3:
        # The third line carries the MIG mode (or ERR! for a GPU that did not answer).
        put(current, F["mig.mode.current"], cells[2].strip() or None)
        return current
    return None


def _add_listed_uuids(rows: list[dict], uuids: dict[int, str]) -> None:
    # The table prints no UUID; a list from the same paste names each index's GPU.
    for row in rows:
        if not row.get("uuid") and row.get("gpu") in uuids:
            row["uuid"] = uuids[row["gpu"]]


def _check_cut(row: dict, field, text: str | None) -> None:
    """The last value of a line cut mid-write: a number whose unit was not written yet ("40" of
    "4095MB") may be cut too, so it is missing and `state` says so."""
    if text is None or field.kind == "str" or not field.unit:
        return
    if read_value(text, field)[1] is None and not text.rstrip().endswith(unit_spellings(field.unit)):
        row[field.column] = None
        row.setdefault("_odd", {})[field.column] = f"{text.strip()} (cut off)"


def _proc_row(m: re.Match, time) -> dict:
    g = m.groupdict()
    row = {"time": time, "type": g["type"], "process_name": g["name"].strip() or None}
    put(row, F["index"], g["gpu"])
    put(row, F["pid"], g["pid"])
    put(row, F["used_memory"], g["mem"])
    put(row, F["gpu_instance_id"], g.get("gi"))
    put(row, F["compute_instance_id"], g.get("ci"))
    return row
