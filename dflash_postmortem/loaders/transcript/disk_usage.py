"""`df` in a session's output: the file systems it shows full (`disk_full` events). A checkpoint
that cannot be written kills a run with words that rarely say why (torch.save's `unexpected pos
52864 vs 52752`, `basic_ios::clear: iostream error`); the operator's `df` afterwards does.

Read wherever a command printed df's table (`df`, `df -h`, `-T`, `-i`, `-P`, `ssh host df`): from
its header to the first line that is no row of it. A row is full at 100 % use or nothing
available; never a read-only image df always shows at 100 % (a snap's squashfs mounted under
/snap, a CD's iso9660: by the mount point, or by the type `-T` prints; a loop device itself may be
a writable disk, as a Codespace's /workspaces is), nor a file system of no size (`proc`: `-`).
"""

from __future__ import annotations

import re

from .session import Command

# coreutils: `Filesystem Size Used Avail Use% Mounted on` (with Type, 1K-blocks, Inodes...);
# BSD and macOS: `Filesystem 512-blocks Used Available Capacity iused ifree %iused Mounted on`
_HEADER = re.compile(r"^Filesystem\s+(?P<cols>.*?\b(?:Use%|IUse%|Capacity)(?=\s).*?)\s+Mounted on\s*$")
_PERCENT = ("Use%", "IUse%", "Capacity")
_FREE = ("Avail", "Available", "IFree", "ifree")
_TOTAL = ("Size", "1K-blocks", "1024-blocks", "512-blocks", "Inodes")
_IMAGES = ("squashfs", "iso9660", "udf", "erofs")


def disk_full_events(c: Command, ref_of) -> list[dict]:
    """The full file systems of every df table in `c`'s output, one event each, at the
    command's time, citing the row's line."""
    rows: list[dict] = []
    cols: list[str] | None = None
    carried: str | None = None  # a device name df put on a line of its own
    for n, text in c.output:
        s = text.strip()
        head = _HEADER.match(s)
        if head:
            cols, carried = head.group("cols").split(), None
            continue
        if cols is None:
            continue
        words = s.split()
        if len(words) == 1 and carried is None:  # `/dev/mapper/vg-a-very-long-name` then its numbers
            carried = words[0]
            continue
        if carried is not None:
            words, carried = [carried, *words], None
        if len(words) < len(cols) + 2:  # the name, the columns, the mount point (which may hold blanks)
            cols = None
            continue
        row = dict(zip(cols, words[1:len(cols) + 1], strict=True))
        mount = " ".join(words[len(cols) + 1:])
        full = _full(words[0], row, mount)
        if full is not None:
            rows.append(dict(time=c.time, kind="disk_full", message=full, ref=ref_of(n), path=mount,
                             time_approx=c.approx, time_within_s=c.within_s))
    return rows


def _full(name: str, row: dict, mount: str) -> str | None:
    """What the row says, where it is a full file system that can be written; else None."""
    if row.get("Type") in _IMAGES or mount.startswith("/snap/"):
        return None
    pct = next((row[k] for k in _PERCENT if k in row), "")
    free = next((row[k] for k in _FREE if k in row), None)
    total = next((row[k] for k in _TOTAL if k in row), None)
    if not pct.endswith("%") or total in (None, "0", "-"):
        return None
    if pct != "100%" and free not in ("0", "0B", "0K"):
        return None
    what = "inodes" if "IUse%" in row or "Inodes" in row else "space"
    used = next((row[k] for k in ("Used", "IUsed") if k in row), "?")
    return (f"{name} mounted on {mount}: {pct} of its {what} used ({used} of {total}"
            + (f", {free} available)" if free is not None else ")"))
