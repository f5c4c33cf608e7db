"""`nvidia-smi -q -x` XML reports (DTD v10 to v13): GPU identity, memory, utilization, power,
temperature, clocks and processes, through `smi_fields.XML_FIELDS`.

A report cut off mid-write (the recorder was killed) keeps every complete `<gpu>` element; the
lines after the last one are counted as skipped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from .. import align
from ..errors import SourceFormatError
from ..incident import from_frames
from .registry import LoadContext
from .smi_fields import (
    QUERY_FIELDS,
    XML_FIELDS,
    XML_PROCESS_FIELDS,
    parse_ctime,
    snapshot_frame,
    typed_value,
)

FORMAT = "nvidia-smi-xml"


def sniff(path: Path, head: bytes) -> float:
    return 0.95 if b"<nvidia_smi_log" in head[:4096] else 0.0


def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    text = path.read_text(encoding="utf-8", errors="replace")
    n_lines = len(text.splitlines())
    rep.read = n_lines
    try:
        root = ET.fromstring(text)
        rep.parsed = n_lines
    except ET.ParseError as e:
        cut = text.rfind("</gpu>")
        if cut < 0:
            line = e.position[0] if e.position else None
            raise SourceFormatError(path, line, "a complete nvidia-smi -q -x <gpu> element", str(e), fmt=FORMAT) from e
        cut += len("</gpu>")
        kept = text[:cut]
        root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", kept) + "\n</nvidia_smi_log>")
        rep.parsed = len(kept.splitlines())
        rep.skip(rep.parsed + 1, "truncated XML after the last complete <gpu> element", n_lines - rep.parsed)
    time = parse_ctime(root.findtext("timestamp") or "")
    driver = root.findtext("driver_version")
    gpus, procs = [], []
    for ordinal, g in enumerate(root.findall("gpu")):
        row = {"time": time, "gpu": ordinal, "pci_bus_id": g.get("id"), "driver_version": driver}
        for path_, name in XML_FIELDS.items():
            el = g.find(path_)
            if el is not None:
                f = QUERY_FIELDS[name]
                row[f.column] = typed_value(el.text, f)
        gpus.append(row)
        for p in g.findall("processes/process_info"):
            prow = {"time": time, "gpu": ordinal, "uuid": row.get("uuid")}
            for tag, name in XML_PROCESS_FIELDS.items():
                f = QUERY_FIELDS[name]
                prow[f.column] = typed_value(p.findtext(tag), f)
            procs.append(prow)
    if gpus:
        rep.assume("GPU index taken from the order of the <gpu> elements (nvidia-smi writes them by index)")
        if time is None:
            rep.assume("no <timestamp> in the report: rows carry no time")
        else:
            rep.assume(align.zone_assumption(ctx.timezone))
    return from_frames(rep, gpus=snapshot_frame(gpus, ctx, rep), gpu_processes=snapshot_frame(procs, ctx, rep))
