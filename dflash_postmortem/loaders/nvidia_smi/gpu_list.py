"""`nvidia-smi -L`: which index, name and UUID each GPU has (and its MIG devices).

Its rows carry no time and no measurement: they are in the `gpus` frame so that any source that
names GPUs only by UUID (compute-apps captures) can be given their indices. Old drivers print a
serial number instead of the UUID; a paste keeps its prompt and fence around the list. Other
subcommands (`nvlink -s`, `nvlink -info`) head each GPU's lines with the same `GPU N: name (UUID: ...)`
line: the GPUs are read once, the lines below them are text after the list.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...incident import from_frames
from .. import registry
from ..registry import LoadContext
from .fields import QUERY_FIELDS, put, snapshot_frame
from .gpu_errors import ErrorLines, events_frame
from .paste import read_paste, unwrap_head
from .table_lines import VERSION, list_line

FORMAT = "nvidia-smi-list"
_MIG = re.compile(r"^\s+MIG (?P<profile>.+?)\s+Device\s+(?P<dev>\d+): \(UUID: (?P<uuid>MIG-[\w/-]+)\)\s*$")


def sniff(path: Path, head: bytes) -> float:
    content = unwrap_head(head).content()
    if not content:
        return 0.0
    listed = [k for k, (i, s) in enumerate(content[:10]) if list_line(s, i) and "(" in s]
    if not listed:
        return 0.0
    if any(VERSION.search(s) for _, s in content):
        # `nvidia-smi -L; nvidia-smi` in one paste: the table is the measurement, and its loader
        # takes the list's UUIDs as well.
        return 0.2
    return 0.95 if listed[0] == 0 else 0.8


def _identity(row: dict) -> tuple:
    return row["gpu"], row["uuid"], row["name"]


@registry.format(FORMAT, sniff=sniff, doc="nvidia-smi -L: GPU index, name and UUID (and MIG devices)")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    paste = read_paste(path)
    rep.read = len(paste.lines)
    rows = []
    current = None  # the GPU the indented lines below belong to
    found = ErrorLines()
    for i, (line, wrap) in enumerate(zip(paste.lines, paste.wrapping, strict=True), start=1):
        if wrap is not None:
            rep.skip(i, wrap)
            continue
        if not line.strip():
            rep.skip(i, "blank line")
            continue
        m = list_line(line, i)
        if m:
            uuid = m.group("uuid")
            row = {"time": None, "name": m.group("name"), "uuid": uuid if uuid and uuid.startswith("GPU-") else None,
                   "serial": m.group("serial"), "mig_uuids": "", "line": i}
            put(row, QUERY_FIELDS["index"], m.group("gpu"))
            same = next((r for r in rows if row["uuid"] and _identity(r) == _identity(row)), None)
            if same is not None:
                # A list pasted twice, or the per-GPU headers of `nvidia-smi nvlink -s` and
                # `nvlink -info` one after the other: the same GPU says nothing new.
                current = same
                rep.skip(i, "GPU listed again (same index and UUID)")
                continue
            rows.append(row)
            current = row
            rep.parsed += 1
            continue
        m = _MIG.match(line)
        if m and current is not None:
            # MIG instances are not GPUs of the gpus frame; their UUIDs stay with their parent.
            known = current["mig_uuids"].split(",")
            if m.group("uuid") not in known:
                current["mig_uuids"] = ",".join(filter(None, [*known, m.group("uuid")]))
            rep.parsed += 1
            continue
        if found.feed(line, i):
            rep.parsed += 1
        elif not rows:
            rep.skip(i, "text before the GPU list")
        elif line.lstrip().startswith(("GPU ", "MIG ")):
            rep.bad(i, "'GPU N: name (UUID: GPU-...)' or an indented MIG device line", line)
        else:
            rep.skip(i, "text after the GPU list")
    paste.note(rep)
    if rows:
        rep.assume("nvidia-smi -L carries no time: rows map index, name and UUID only")
    frames = {"gpus": snapshot_frame(rows, ctx, rep)}
    if found.errors:
        frames["events"] = events_frame(found.errors, ctx, rep.path)
    return from_frames(rep, **frames)
