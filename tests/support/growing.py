"""A recorded incident grown again into a folder: each file as it stood at a moment of its own
clock, for what reads a folder while it is written (the live watch)."""

from __future__ import annotations

import re
from pathlib import Path

# A line's own time: `2026-12-02 04:37:48`, `2026/12/02 04:37:00.706`, `[2026-12-02T04:37:31.296Z]`.
STAMP = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[ T](\d\d):(\d\d):(\d\d)")


def grow(src: Path, dest: Path, until: str | None) -> None:
    """Write into `dest` every file of `src` as it stood at `until` (the files' own clock): each
    text file up to its first line stamped later; lines with no stamp go with the line before."""
    cut = None if until is None else tuple(int(x) for x in STAMP.search(until).groups())
    for f in sorted(src.rglob("*")):
        if not f.is_file() or f.name == "README.md":  # dangling links (wandb's) stay behind
            continue
        out = dest / f.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        data = f.read_bytes()
        if cut is not None and b"\0" not in data[:4096]:
            kept = []
            for line in data.decode("utf-8", "replace").splitlines(keepends=True):
                m = STAMP.search(line)
                if m and tuple(map(int, m.groups())) > cut:
                    break
                kept.append(line)
            data = "".join(kept).encode()
        elif cut is not None and f.stat().st_mtime and ".wandb" in f.name:
            continue  # a binary run file comes whole at the end
        if not out.exists() or out.read_bytes() != data:
            out.write_bytes(data)


def moments(src: Path, n: int) -> list[str]:
    """`n` moments spread over the incident's own clock (its files' first to last stamp)."""
    stamps = sorted({tuple(map(int, m.groups())) for f in src.rglob("*") if f.is_file() and f.name != "README.md"
                     and b"\0" not in f.read_bytes()[:4096]
                     for m in STAMP.finditer(f.read_text(errors="replace"))})
    picked = [stamps[round(k * (len(stamps) - 1) / (n - 1))] for k in range(n)]
    return ["{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}".format(*t) for t in picked]
