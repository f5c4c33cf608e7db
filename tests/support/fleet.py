"""Fleets of hosts made from one real capture: each host a copy of the capture's files under a
folder of its own, named in incident.toml's [[sources]], optionally cut before a moment (a host
that only saw the healthy part) or written by a clock that runs ahead or behind."""

from __future__ import annotations

import datetime as dt
import random
import re
from pathlib import Path

# Every stamp the bundled captures write: 2026-11-30 09:28:12, 2026/11/30 09:28:55.438,
# [2026-11-30T09:29:48.735Z], "time":"2026-11-30T09:28:32.950384Z", # 2026-11-30T09:28:09Z.
STAMP = re.compile(r"(?P<y>20\d\d)(?P<s1>[-/])(?P<mo>\d\d)(?P=s1)(?P<d>\d\d)(?P<t>[ T])"
                   r"(?P<h>\d\d):(?P<mi>\d\d):(?P<se>\d\d)(?:\.(?P<f>\d{1,6}))?")
# ps aux's START: a time of day to the minute, as the host's own clock had it when it started
PS_START = re.compile(r"^(?P<head>\S+\s+\d+\s+[\d.]+\s+[\d.]+\s+\d+\s+\d+\s+\S+\s+\S+\s+)(?P<h>\d\d):(?P<mi>\d\d)(?=\s)")
_LEFT_OUT = ("README.md", "incident.toml")


def _when(m: re.Match) -> dt.datetime:
    frac = m["f"] or ""
    return dt.datetime(int(m["y"]), int(m["mo"]), int(m["d"]), int(m["h"]), int(m["mi"]), int(m["se"]),
                       int(frac.ljust(6, "0")) if frac else 0)


def _starts_shifted(text: str, seconds: float) -> str:
    """ps's START column as the clock `seconds` ahead would show it. ps gives the minute; the
    process started in it and no later than the listing that shows it (the last stamp above
    the row), so that is the moment taken."""
    out, listed = [], None
    for line in text.splitlines(keepends=True):
        if (stamp := STAMP.search(line)) is not None:
            listed = _when(stamp)
        if (m := PS_START.match(line)) is not None and listed is not None:
            t = dt.datetime.combine(listed.date(), dt.time(int(m["h"]), int(m["mi"]), 59))
            t = min(t, listed) + dt.timedelta(seconds=seconds)
            line = f"{m['head']}{t:%H:%M}{line[m.end():]}"
        out.append(line)
    return "".join(out)


def _shifted(m: re.Match, seconds: float, phase: random.Random) -> str:
    """The stamp as a clock `seconds` ahead would have written it, in the same form. A stamp of
    whole seconds was written at some moment within its second: which one is drawn from `phase`,
    so that the shifted clock's stamp falls in the next second as often as it would."""
    within = 0.0 if m["f"] else phase.random()
    t = _when(m) + dt.timedelta(seconds=seconds + within)
    s1 = m["s1"]
    text = f"{t:%Y}{s1}{t:%m}{s1}{t:%d}{m['t']}{t:%H:%M:%S}"
    if m["f"]:
        text += "." + f"{t.microsecond:06d}"[: len(m["f"])]
    return text


def copy_capture(src: Path, dest: Path, host: str, *, until: dt.datetime | None = None,
                 shift_s: float = 0.0, rename: dict[str, str] | None = None,
                 skip: tuple[str, ...] = ("wandb",)) -> list[str]:
    """Copy the capture's files to `dest/host/`; with `until`, each file stops before its first
    line stamped at or after it (files with no stamp, or nothing left, are left out); with
    `shift_s`, every stamp is rewritten as a clock that far ahead wrote it; `rename` replaces
    words (a run name: another job, not a rank of the same one). Returns the paths written,
    relative to `dest`."""
    out = []
    for path in sorted(p for p in src.rglob("*") if p.is_file()):
        rel = path.relative_to(src)
        if rel.parts[0] in skip or rel.name in _LEFT_OUT:
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if until is not None:
            kept, stamped = [], False
            for line in text.splitlines(keepends=True):
                m = STAMP.search(line)
                if m and _when(m) >= until:
                    break
                stamped |= m is not None
                kept.append(line)
            if not stamped:
                continue
            text = "".join(kept)
        if shift_s:
            phase = random.Random(f"{host}/{rel}")
            text = _starts_shifted(text, shift_s)
            text = STAMP.sub(lambda m, phase=phase: _shifted(m, shift_s, phase), text)
        for old, new in (rename or {}).items():
            text = text.replace(old, new)
        target = dest / host / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", errors="surrogateescape")
        out.append(f"{host}/{rel.as_posix()}")
    return out


def write_config(dest: Path, paths_by_host: dict[str, list[str]], extra: str = "") -> None:
    """incident.toml naming each file's host."""
    lines = ['title = "fleet made from a real capture"', 'timezone = "UTC"', extra]
    for host, paths in paths_by_host.items():
        for p in paths:
            lines += ["[[sources]]", f'path = "{p}"', f'host = "{host}"']
    (dest / "incident.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
