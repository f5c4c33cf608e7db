"""`nvidia-smi -L`: which index, name and UUID each GPU has (and its MIG devices).

Its rows carry no time and no measurement: they are in the `gpus` frame so that any source that
names GPUs only by UUID (compute-apps captures) can be given their indices.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..incident import from_frames
from .registry import LoadContext
from .smi_fields import snapshot_frame

FORMAT = "nvidia-smi-list"
_GPU = re.compile(r"^GPU (?P<gpu>\d+): (?P<name>.+?) \(UUID: (?P<uuid>GPU-[0-9a-fA-F-]+)\)\s*$")
_MIG = re.compile(r"^\s+MIG (?P<profile>\S+)\s+Device\s+(?P<dev>\d+): \(UUID: (?P<uuid>MIG-[0-9a-fA-F-]+)\)\s*$")


def sniff(text: str) -> float:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return 0.95 if _GPU.match(first) else 0.0


def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    rep.read = len(lines)
    rows = []
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            rep.skip(i, "blank line")
            continue
        m = _GPU.match(line)
        if m:
            rows.append({"time": None, "gpu": int(m.group("gpu")), "name": m.group("name"), "uuid": m.group("uuid"), "mig_uuids": ""})
            rep.parsed += 1
            continue
        m = _MIG.match(line)
        if m and rows:
            # MIG instances are not GPUs of the gpus frame; their UUIDs stay with their parent.
            rows[-1]["mig_uuids"] = ",".join(filter(None, [rows[-1]["mig_uuids"], m.group("uuid")]))
            rep.parsed += 1
            continue
        rep.bad(i, "'GPU N: name (UUID: GPU-...)' or an indented MIG device line", line)
    if rows:
        rep.assume("nvidia-smi -L carries no time: rows map index, name and UUID only")
    return from_frames(rep, gpus=snapshot_frame(rows, ctx, rep))
