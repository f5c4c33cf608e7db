"""`nvidia-smi -q -x` XML reports (DTD v10 to v13): GPU identity, memory, utilization, power,
temperature, clocks and processes, through `fields.XML_FIELDS`.

A file may hold several reports (`-q -x -l N` appends one per interval) and text around them (the
prompt and fence of a paste); each report is read, the lines outside them are counted as skipped.
A report cut off mid-write (the recorder was killed) keeps every complete `<gpu>` element; the
lines after the last one are counted as skipped. Values that are not numbers (`N/A`, `Unknown
Error`, `Not available in WDDM driver model`) are missing and named in `state`.
"""

from __future__ import annotations

import bisect
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ...clock import align
from ...errors import SourceFormatError
from ...incident import from_frames
from .. import registry
from ..registry import LoadContext
from .fields import (
    QUERY_FIELDS,
    XML_FIELDS,
    XML_PROCESS_FIELDS,
    parse_ctime,
    put,
    snapshot_frame,
)
from .gpu_errors import state_events
from .paste import split_lines

FORMAT = "nvidia-smi-xml"
_END = "</nvidia_smi_log>"
# A report that went through GitHub's e-mail replies comes back with each tag's ">" written as
# "&gt;" and its indentation as "&nbsp; " (the "<" survives): `<timestamp&gt;Tue ...</timestamp&gt;`.
_ESCAPED_TAG = re.compile(r"<[/!?]?[A-Za-z_][\w.-]*(?:\s[^<>]*?)?&gt;")


def sniff(path: Path, head: bytes) -> float:
    at = head.find(b"<nvidia_smi_log")
    if at < 0:
        return 0.0
    return 0.95 if at < 4096 else 0.8


@registry.format(FORMAT, sniff=sniff, doc="nvidia-smi -q -x XML report")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    if _ESCAPED_TAG.search(text):
        text = _unescape_tags(text)
        rep.assume("tags written with '&gt;' and '&nbsp;' (an e-mail reply's rendering) read as '>' and spaces")
    lines = split_lines(text)
    rep.read = len(lines)
    line_starts = _line_starts(text)
    gpus, procs = [], []
    consumed = 0  # lines accounted for so far
    reports = 0
    for root_at, end in _reports(text):
        start = _prolog(text, root_at, line_starts[consumed] if consumed < len(line_starts) else len(text))
        first = _line_of(line_starts, start)
        if first > consumed + 1:
            rep.skip(consumed + 1, "text outside the XML report", first - 1 - consumed)
        root, kept_to = _parse(text, root_at, end, path, _line_of(line_starts, root_at))
        last = _line_of(line_starts, kept_to - 1) if kept_to > root_at else first
        rep.parsed += last - first + 1
        if end is None or kept_to < end:
            rest = _line_of(line_starts, len(text) - 1) if end is None else _line_of(line_starts, end - 1)
            if rest > last:
                rep.skip(last + 1, "XML cut off mid-write (the elements before the cut are kept)", rest - last)
                last = rest
        consumed = last
        reports += 1
        _read_report(root, gpus, procs, first)
        if end is None:
            break
    if reports == 0:
        raise SourceFormatError(path, 1, "an nvidia-smi -q -x report (<nvidia_smi_log>)", lines[0] if lines else "", fmt=FORMAT)
    if consumed < len(lines):
        rep.skip(consumed + 1, "text outside the XML report", len(lines) - consumed)
    if gpus:
        rep.assume("GPU index taken from the order of the <gpu> elements (nvidia-smi writes them by index)")
        if all(g["time"] is None for g in gpus):
            rep.assume("no <timestamp> in the report: rows carry no time")
        else:
            rep.assume(align.zone_assumption(ctx.timezone))
    gpu_frame = snapshot_frame(gpus, ctx, rep)
    frames = {"gpus": gpu_frame, "gpu_processes": snapshot_frame(procs, ctx, rep)}
    events = state_events(gpu_frame, rep.path)
    if events is not None:
        frames["events"] = events
    return from_frames(rep, **frames)


def _unescape_tags(text: str) -> str:
    """Undo the e-mail rendering of a report: only "&gt;" and "&nbsp;" were written for it, so
    only they are replaced ("&lt;" and "&amp;" keep their XML meaning)."""
    return text.replace("&gt;", ">").replace("&nbsp;", " ")


def _reports(text: str):
    """(start, end) offsets of each report's root element; end is None for one cut off
    mid-write. The declaration and DOCTYPE above a root are not parsed (a paste may repeat or
    mangle them): their lines are counted with the report."""
    pos = 0
    while True:
        at = text.find("<nvidia_smi_log", pos)
        if at < 0:
            return
        end = text.find(_END, at)
        if end < 0:
            yield at, None
            return
        end += len(_END)
        yield at, end
        pos = end


def _prolog(text: str, at: int, floor: int) -> int:
    """Where the declaration/DOCTYPE lines right above a root element start (or `at`)."""
    start = at
    while True:
        line_start = max(floor, text.rfind("\n", floor, start - 1) + 1) if start > floor else floor
        above = text[line_start:start].strip()
        if line_start < start and above.startswith(("<?xml", "<!DOCTYPE")) and above.endswith(">"):
            start = line_start
        else:
            return start


def _parse(text: str, start: int, end: int | None, path, first_line: int):
    """Parse one report. A report cut off mid-write keeps every element written before the cut
    (a GPU cut half-way keeps its first fields). Returns (root, offset of the end of what was
    read)."""
    body = text[start:end] if end is not None else text[start:]
    parser = ET.XMLPullParser(events=("start",))
    try:
        parser.feed(body)
        parser.close()
        return next(el for _, el in parser.read_events()), start + len(body)
    except ET.ParseError as e:
        started = []
        try:
            started.extend(el for _, el in parser.read_events())
        except ET.ParseError:
            pass  # the error itself is queued after the elements read before it
        if not started or not any(el.tag == "gpu" for el in started):
            line = (e.position[0] + first_line - 1) if e.position else first_line
            raise SourceFormatError(path, line, "an nvidia-smi -q -x report with a <gpu> element", str(e), fmt=FORMAT) from e
        # The tree built so far holds every element that was opened before the error.
        row, _ = e.position
        # Expat may place an unclosed token at the end of the text: never past it.
        kept = min(len(body), sum(len(ln) + 1 for ln in body.split("\n")[: row - 1]))
        return started[0], start + kept


def _read_report(root, gpus: list, procs: list, first_line: int) -> None:
    time = parse_ctime(root.findtext("timestamp") or "")
    driver = root.findtext("driver_version") or root.findtext("kmd_version")
    for ordinal, g in enumerate(root.findall("gpu")):
        row = {"time": time, "gpu": ordinal, "pci_bus_id": g.get("id"), "line": first_line}
        if driver:
            row["driver_version"] = driver.split(" [", 1)[0].strip()
        for path_, name in XML_FIELDS.items():
            el = g.find(path_)
            if el is not None:
                put(row, QUERY_FIELDS[name], el.text)
        gpus.append(row)
        for p in g.findall("processes/process_info"):
            prow = {"time": time, "gpu": ordinal, "uuid": row.get("uuid")}
            for tag, name in XML_PROCESS_FIELDS.items():
                put(prow, QUERY_FIELDS[name], p.findtext(tag))
            procs.append(prow)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    """1-based line number of a character offset."""
    return bisect.bisect_right(starts, offset)
