"""`nvidia-smi topo -m`: how each pair of GPUs (and NICs) is connected, and which CPUs and NUMA
node each GPU is near. It is the host's configuration, not a measurement: no time, no events.

            GPU0    GPU1    NIC0    CPU Affinity    NUMA Affinity   GPU NUMA ID
    GPU0     X      NV18    PIX     0-23,96-119     0               N/A
    GPU1    NV18     X      NODE    0-23,96-119     0               N/A
    NIC0    PIX     NODE     X

    Legend: X = Self, SYS (PCIe + the SMP interconnect between NUMA nodes), NODE (PCIe + the
    interconnect between host bridges in a node), PHB (a PCIe host bridge), PXB (several PCIe
    bridges), PIX (one PCIe bridge), NV# (a bonded set of # NVLinks)
    NIC Legend: NIC0: mlx5_0

Each GPU row becomes a `gpus` row without a time (like `-L`): `topo_links` (`GPU1:NV18 NIC0:PIX`),
`cpu_affinity`, `numa_affinity`, `gpu_numa_id`. The load report sums the links up (how many GPU
pairs are NV18, SYS, ...), names which NUMA node each GPU is near and which device each NIC is.
Cells are read by whitespace, so the raw tab-separated output and a space-aligned paste (a cut
matrix, a wrapped legend) read alike. A second matrix in the same paste (`topo -p2p`) is counted,
not read.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pandas as pd

from ...incident import from_frames
from ...schema import TIME
from .. import registry
from ..registry import LoadContext
from .paste import read_paste, unwrap_head

FORMAT = "nvidia-smi-topo"
_DEVICE = re.compile(r"^(?:GPU\d+|NIC\d+|mlx\d+_\d+|[a-z]+\d+(?:_\d+)?)$")
_EXTRA = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_LINK = re.compile(r"^(?:X|SYS|NODE|PHB|PXB|PIX|PSB|NV\d+|SOC|N/A)$")
_LEGEND = re.compile(r"^\s*(?:(?:NIC )?Legend:|X\s+=|[A-Z#]{2,4}\s+=|\S.*\b(?:bridges?|NUMA nodes|the CPU)\b)")
_NIC_NAME = re.compile(r"^\s*(?P<nic>NIC\d+):\s*(?P<device>\S+)\s*$")


def _header(line: str) -> tuple[list[str], list[str]] | None:
    """(device columns, affinity columns) of a matrix header line, or None."""
    tokens = line.split()
    devices = []
    for t in tokens:
        if not _DEVICE.match(t):
            break
        devices.append(t)
    if not devices or devices[0] != "GPU0":
        return None
    rest = " ".join(tokens[len(devices):])
    extra = [c for c in _EXTRA if c in rest]
    if rest and not extra:
        return None
    return devices, extra


def sniff(path: Path, head: bytes) -> float:
    lines = [s for _, s in unwrap_head(head).content()[:40]]
    for k, s in enumerate(lines):
        h = _header(s)
        if h is not None and k + 1 < len(lines):
            row = lines[k + 1].split()
            if row[:1] == ["GPU0"] and len(row) > 1 and row[1] == "X":
                return 0.95
    return 0.0


@registry.format(FORMAT, sniff=sniff, doc="nvidia-smi topo -m: GPU/NIC link matrix, CPU and NUMA affinity (configuration)")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    paste = read_paste(path)
    rep.read = len(paste.lines)
    devices: list[str] | None = None
    extra: list[str] = []
    rows, nics, other_matrix = [], {}, False
    links = Counter()
    for n, line in paste.lines_to_read(rep):
        h = _header(line)
        if h is not None:
            if devices is None:
                devices, extra = h
                rep.parsed += 1
            else:
                other_matrix = True
                rep.skip(n, "another matrix (topo -p2p) after the link matrix")
            continue
        if (nic := _NIC_NAME.match(line)) is not None:
            nics[nic.group("nic")] = nic.group("device")
            rep.parsed += 1
            continue
        if _LEGEND.match(line):
            rep.skip(n, "legend")
            continue
        cells = line.split()
        if devices is None or other_matrix or cells[0] not in devices:
            rep.skip(n, "text around the matrix" if devices is None else "row of another matrix")
            continue
        links_of = cells[1:1 + len(devices)]
        if len(links_of) < len(devices) or not all(_LINK.match(c) for c in links_of):
            rep.bad(n, f"{cells[0]}'s link to each of {len(devices)} devices", line.strip())
            continue
        rep.parsed += 1
        if not cells[0].startswith("GPU"):
            continue  # a NIC's row repeats its column
        gpu = int(cells[0][3:])
        tail = cells[1 + len(devices):]
        row = {"time": None, "gpu": gpu, "line": n,
               "topo_links": " ".join(f"{d}:{c}" for d, c in zip(devices, links_of, strict=True) if c != "X")}
        for col, value in zip(extra, tail, strict=False):
            row[col.lower().replace(" ", "_")] = None if value == "N/A" else value
        rows.append(row)
        for d, c in zip(devices, links_of, strict=True):
            if d.startswith("GPU") and int(d[3:]) > gpu:
                links[c] += 1
    paste.note(rep)
    _summarise(rows, links, nics, rep)
    frames = {}
    if rows:
        df = pd.DataFrame(rows)
        df["time"] = pd.Series(pd.NaT, index=df.index, dtype=TIME)
        df["ref"] = [f"{rep.path}:{k}" for k in df.pop("line")]
        df["host"], df["source"] = ctx.host, rep.path
        frames["gpus"] = df
        rep.assume("nvidia-smi topo -m carries no time: its rows are the host's configuration")
    return from_frames(rep, **frames)


def _summarise(rows: list[dict], links: Counter, nics: dict, rep) -> None:
    if links:
        rep.notes.append("GPU pairs: " + ", ".join(f"{k} {v}" for k, v in links.most_common()))
    near: dict[str, list[int]] = {}
    for r in rows:
        if r.get("numa_affinity") is not None:
            near.setdefault(r["numa_affinity"], []).append(r["gpu"])
    if near:
        rep.notes.append("NUMA affinity: " + "; ".join(f"node {k}: GPU {', '.join(map(str, v))}" for k, v in near.items()))
    if nics:
        rep.notes.append("NICs: " + ", ".join(f"{k}={v}" for k, v in nics.items()))
