"""A log a rotating handler split (Python's RotatingFileHandler, logrotate without compression):
`train.log.2`, `train.log.1` and `train.log` are one log, oldest first. A part's first line is
no start of its own: it goes on from the part before it, which the rotation closed."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_NUMBERED = re.compile(r"(?P<base>.+)\.(?P<n>\d{1,3})")


def rotated_from(source: str, sources: set[str]) -> str | None:
    """The part of `source`'s rotated log written just before it, where `sources` holds it (the
    same folder): `train.log.2` before `train.log.1`, `train.log.1` before `train.log`."""
    path = PurePosixPath(source)
    m = _NUMBERED.fullmatch(path.name)
    before = f"{m['base']}.{int(m['n']) + 1}" if m else f"{path.name}.1"
    older = str(path.with_name(before))
    return older if older in sources else None
