"""A recorded incident grown again into a folder: each file as it stood at a moment of its own
clock, for what reads a folder while it is written (the live watch)."""

from __future__ import annotations

import functools
import os
import re
import struct
from datetime import UTC, datetime
from pathlib import Path

# A line's own time: `2026-12-02 04:37:48`, `2026/12/02 04:37:00.706`, `[2026-12-02T04:37:31.296Z]`.
STAMP = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[ T](\d\d):(\d\d):(\d\d)")
# nvidia-smi's own date (its table's header, its XML's <timestamp>): `Mon Nov 30 05:24:18 2026`;
# `date`'s, typed in a terminal a `script` recording holds: `Tue Dec  1 10:31:06 AM UTC 2026`
_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
_SMI_DATE = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (" + "|".join(_MONTHS) + r") +(\d{1,2}) (\d\d):(\d\d):(\d\d)"
                       r"(?: ([AP]M))?(?: [A-Z]{2,5})? (\d{4})\b")
# a line that starts with a time of day alone (dmon's and pmon's #Time column): of the moment's day
_TIME_OF_DAY = re.compile(r"^\s*(\d\d):(\d\d):(\d\d)\s")
# glog's prefix (PyTorch's C++ logs, torchrun's workers): `[E1202 02:33:56.339274231 ...`, no year
# a shell history's time (HISTTIMEFORMAT): `#1796233058` above each command
_EPOCH = re.compile(r"^#(\d{9,11})\s*$")
_GLOG = re.compile(r"^\[?[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)")


def _stamp(line: str, day: tuple) -> tuple | None:
    """The line's own time as (year, month, day, hour, minute, second), where it shows one."""
    m = STAMP.search(line)
    if m:
        return tuple(map(int, m.groups()))
    m = _SMI_DATE.search(line)
    if m:
        hour = int(m[3]) % 12 + (12 if m[6] == "PM" else 0) if m[6] else int(m[3])
        return (int(m[7]), _MONTHS[m[1]], int(m[2]), hour, int(m[4]), int(m[5]))
    m = _EPOCH.match(line)
    if m:
        t = datetime.fromtimestamp(int(m[1]), tz=UTC)
        return (t.year, t.month, t.day, t.hour, t.minute, t.second)
    m = _GLOG.match(line)
    if m:
        return (day[0],) + tuple(map(int, m.groups()))
    m = _TIME_OF_DAY.match(line)
    return day + tuple(map(int, m.groups())) if m else None


def grow(src: Path, dest: Path, until: str | None) -> None:
    """Write into `dest` every file of `src` as it stood at `until` (the files' own clock): each
    text file up to its first line stamped later (a date and time, nvidia-smi's or `date`'s own date, glog's
    month, day and time, a shell history's `#epoch`, or a time of day alone at the start of a
    line, as dmon writes it); lines with no stamp go with the line before, those above a file's
    first stamp with it (a file whose first stamp is later is not there yet). A symbolic link is
    made again as the link it is (wandb's `debug.log` and `latest-run` point into the newest run),
    not as a copy of what it points to."""
    cut = None if until is None else tuple(int(x) for x in STAMP.search(until).groups())
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        if any((src / up).is_symlink() for up in rel.parents):
            continue  # inside a linked folder: its files are written where the link points
        out = dest / rel
        if f.is_symlink():
            if not out.is_symlink():
                out.parent.mkdir(parents=True, exist_ok=True)
                out.symlink_to(os.readlink(f))
            continue
        if not f.is_file() or f.name == "README.md":
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        data = f.read_bytes()
        if cut is not None and b"\0" not in data[:4096]:
            kept, stamped = [], False
            for line in data.decode("utf-8", "replace").splitlines(keepends=True):
                when = _stamp(line, cut[:3])
                if when is not None and when > cut:
                    break
                kept.append(line)
                stamped = stamped or when is not None
            else:
                stamped = True  # nothing in it is later than the moment
            if not stamped:
                # its first stamp is later: the lines above it (`nohup: ignoring input`, a
                # header) were written with it, and the file did not exist yet
                continue
            data = "".join(kept).encode()
        elif cut is not None and ".tfevents." in f.name:
            data = _records_until(data, datetime(*cut, tzinfo=UTC).timestamp() + 1)
            if not data:
                continue  # its first event is later: the writer had not made it yet
        elif cut is not None and f.suffix == ".wandb":
            data = _wandb_until(data, _wandb_times(str(f), f.stat().st_mtime_ns),
                                datetime(*cut, tzinfo=UTC).timestamp() + 1)
            if not data:
                continue  # its run had not started yet
        if not out.exists() or out.read_bytes() != data:
            out.write_bytes(data)


def _records_until(data: bytes, before: float) -> bytes:
    """A TensorBoard event file (TFRecords: length, its CRC, an `Event`, its CRC) up to its first
    event written at `before` or later: each event's `wall_time` is its first field (a double)."""
    at = 0
    while at + 12 <= len(data):
        (size,) = struct.unpack_from("<Q", data, at)
        event = data[at + 12:at + 12 + size]
        if event[:1] == b"\x09" and struct.unpack_from("<d", event, 1)[0] >= before:
            break
        at += 12 + size + 4
    return data[:at]


def _wandb_until(data: bytes, times: list[tuple[int, float, bool]], before: float) -> bytes:
    """A wandb run's `.wandb` log up to its first record written at `before` or later, cut where
    that record's first chunk begins (the file as the SDK had written it then); nothing where the
    run starts later. `times`: `_wandb_times`."""
    for at, when, run in times:
        if when >= before:
            return b"" if run else data[:at]
    return data


@functools.cache
def _wandb_times(path: str, mtime_ns: int) -> list[tuple[int, float, bool]]:
    """Each record of a `.wandb` log: where it begins, when it was written, whether it is the run's
    start. A record's time is its run's start, a history row's `_timestamp`, a stats sample's or a
    console line's own; a record with none goes with the one before. Read once per file: a test
    grows the same folder at many moments."""
    # the SDK's own messages, imported as the kit imports them: without the SDK (a second of CPU
    # in every test process that grows a folder)
    from dflash_postmortem.loaders.wandb import log
    from dflash_postmortem.loaders.wandb.decoding import protobuf_messages

    scan = log.scan(Path(path).read_bytes())
    out = []
    for payload, at in zip(scan.records, scan.offsets, strict=True):
        record = protobuf_messages().Record()
        record.ParseFromString(payload)
        out.append((at, _record_time(record), record.WhichOneof("record_type") == "run"))
    return out


def _record_time(record) -> float:
    """When a `.wandb` record was written, where it says (0 where it does not)."""
    kind = record.WhichOneof("record_type")
    if kind == "run":
        return record.run.start_time.seconds
    if kind in ("stats", "output_raw"):
        return getattr(record, kind).timestamp.seconds
    if kind == "history":
        return next((float(i.value_json) for i in record.history.item if i.key == "_timestamp"), 0)
    return 0


def moments(src: Path, n: int) -> list[str]:
    """`n` moments spread over the incident's own clock (its files' first to last stamp)."""
    stamps = sorted({tuple(map(int, m.groups())) for f in src.rglob("*") if f.is_file() and f.name != "README.md"
                     and b"\0" not in f.read_bytes()[:4096]
                     for m in STAMP.finditer(f.read_text(errors="replace"))})
    picked = [stamps[round(k * (len(stamps) - 1) / (n - 1))] for k in range(n)]
    return ["{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}".format(*t) for t in picked]
