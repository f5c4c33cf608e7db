"""Line-oriented sources read in chunks of lines, through their own loaders: the reader interface
of the Parquet store's ingest (a file of any size in one chunk's memory, store/convert.py) and of
the live watch (a growing file read from where the last look stopped, following.py).

The formats that dominate fleet and live data (CHUNKED: nvidia-smi query CSV streams, training
logs) are read by their registered loaders from chunk files of complete lines, each named as the
original file (`LoadContext.aliases`, the hook transcoding uses too). A CSV chunk after the first
gets the file's header line in front; a log is cut only before a line that carries its own full
date, so no multi-line record (a traceback) and no borrowed timestamp crosses a cut. Line numbers
are shifted back to the file's own, and the chunks' load reports become the one report of the
file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import schema
from ..incident import Incident
from ..load_report import FileReport
from .folder import load_source
from .nvidia_smi.query_csv import header_fields
from .registry import LoadContext
from .training_log.process_log import TRAINING_LOG_FORMAT
from .training_log.process_log import reads_on as log_reads_on

# Formats read in chunks: (format name, whether its chunks need the header line in front).
CHUNKED = {"nvidia-smi-query-csv": True, TRAINING_LOG_FORMAT: False}

# Read in pieces of this size while looking for chunk boundaries.
_READ_BYTES = 1 << 22
# A log line that dates itself: `2026-11-30 01:02:03` or `2026-11-30T01:02:03` at the start.
DATED = re.compile(rb"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d")
_HEADER_LINE = "header line"


@dataclass
class Chunk:
    first_line: int  # the file's line number of the chunk's first line of its own
    text: bytes  # what the chunk file holds (the header in front, for a CSV chunk after the first)
    synthetic_lines: int  # lines in front that are not the chunk's own (a copied header)


def split_lines(path, chunk_bytes: int, *, csv_header: bool) -> Iterator[Chunk]:
    """Chunks of about `chunk_bytes` of whole lines. With `csv_header`, the first line is the
    header and every later chunk starts with a copy of it; otherwise a chunk may only start at a
    line that carries its own date (a log)."""
    header = b""
    line_no = 1
    buf = b""
    with open(path, "rb") as f:
        if csv_header:
            header = f.readline()
            buf = header
        first = True
        while True:
            more = f.read(_READ_BYTES)
            buf += more
            while len(buf) >= chunk_bytes or (not more and buf):
                cut = _cut(buf, chunk_bytes, csv_header) if more else len(buf)
                if cut is None:
                    break  # no place to cut yet: read on
                own, buf = buf[:cut], buf[cut:]
                extra = 0 if first or not csv_header else 1
                text = own if extra == 0 else header + own
                yield Chunk(line_no, text, extra)
                line_no += own.count(b"\n")
                first = False
            if not more:
                return


def reads_on(p, before: Incident, before_report: FileReport, chunk: Incident, chunk_report: FileReport) -> bool:
    """Whether a chunk of a growing file, read on its own after what was read of it before, gives
    the rows a read of the whole file gives (a log whose lines name their runs, jobs and attempts
    from lines before them may not: process_log.reads_on); a CSV chunk always does."""
    if p.fmt.name == TRAINING_LOG_FORMAT:
        return log_reads_on(before, before_report, chunk, chunk_report)
    return True


def chunkable(p) -> bool:
    """Whether a planned source (`FolderPlan.sources`) can be read in chunks: a file of a CHUNKED
    format read as it is (not transcoded), and for a CSV one that starts with its header (a
    header-less one takes its fields from what a whole read sees: a command line above the
    output, the first rows)."""
    if not (p.fmt.name in CHUNKED and not p.enc.needs_transcoding and p.path.is_file()):
        return False
    if CHUNKED[p.fmt.name]:
        with open(p.path, "rb") as f:
            first = f.readline().decode("utf-8", "replace")
        return header_fields(first) is not None
    return True


def read_chunk(p, ctx: LoadContext, chunk: Chunk, scratch: Path, name: str) -> tuple[Incident, FileReport]:
    """One chunk of planned source `p`, read by its own loader from a file that stands for the
    original (in folder `name` of `scratch`, under the original's own name: a loader that names
    a run for its file sees that name): its frames on the file's own line numbers, and its
    account (`chunk_report`; its `error` set where the loader refused the chunk)."""
    (scratch / name).mkdir(parents=True, exist_ok=True)
    piece = scratch / name / p.path.name
    piece.write_bytes(chunk.text)
    try:
        ctx = dataclasses.replace(ctx, aliases={**ctx.aliases, piece: p.path})
        inc = load_source(dataclasses.replace(p, path=piece), ctx, scratch / f"{name}.scratch")
    finally:
        piece.unlink()
    shift = chunk.first_line - 1 - chunk.synthetic_lines
    for frame in schema.FRAME_NAMES:
        setattr(inc, frame, shift_lines(getattr(inc, frame), shift))
    return inc, chunk_report(inc.load_report.files[0], chunk, shift)


def _cut(buf: bytes, chunk_bytes: int, csv_header: bool) -> int | None:
    """Where the chunk in `buf` ends: after a newline at or past `chunk_bytes` (for a log, the
    first such newline followed by a dated line), or None when `buf` holds none yet."""
    at = buf.find(b"\n", chunk_bytes - 1)
    while at != -1:
        nxt = at + 1
        if nxt >= len(buf):
            return None
        if csv_header or DATED.match(buf, nxt):
            return nxt
        at = buf.find(b"\n", nxt)
    return None


def shift_lines(frame: pd.DataFrame, shift: int) -> pd.DataFrame:
    """A chunk's rows with the file's own line numbers (`line` column, `file:line` refs)."""
    if not shift or frame.empty:
        return frame
    frame = frame.copy()
    if "line" in frame.columns:
        frame["line"] = frame["line"] + shift
    if "ref" in frame.columns:
        ref = frame["ref"]
        parts = ref.str.rpartition(":")
        number = pd.to_numeric(parts[2], errors="coerce")
        ok = number.notna() & ref.notna()
        shifted = parts[0] + ":" + (number + shift).astype("Int64").astype("string")
        frame["ref"] = ref.where(~ok, shifted)
    return frame


def chunk_report(rep: FileReport, chunk: Chunk, shift: int) -> FileReport:
    """A chunk's report on the file's own lines: the copied header is not a line of the file."""
    if chunk.synthetic_lines:
        rep.read -= chunk.synthetic_lines
        rep.skipped[_HEADER_LINE] -= chunk.synthetic_lines
        if rep.skipped[_HEADER_LINE] <= 0:
            del rep.skipped[_HEADER_LINE]
        ex = rep.examples.get(_HEADER_LINE)
        if ex and ex[0] == 1:
            ex.pop(0)
            if not ex:
                del rep.examples[_HEADER_LINE]
    rep.examples = {r: [n + shift for n in lines] for r, lines in rep.examples.items()}
    return rep


def merge_reports(into: FileReport, more: FileReport, examples_per_reason: int = 5) -> None:
    """Add one chunk's account to the file's: counts summed, texts that only differ in their
    first number (\"12 rows took ...\") summed into one, times spanned."""
    into.read += more.read
    into.parsed += more.parsed
    into.skipped.update(more.skipped)
    for reason, lines in more.examples.items():
        ex = into.examples.setdefault(reason, [])
        ex.extend(lines[: max(0, examples_per_reason - len(ex))])
    into.rows.update(more.rows)
    into.assumptions = merge_texts(into.assumptions, more.assumptions)
    into.notes = merge_texts(into.notes, more.notes)
    for t in (more.start,):
        if t is not None:
            into.start = t if into.start is None else min(into.start, t)
    if more.end is not None:
        into.end = more.end if into.end is None else max(into.end, more.end)
    into.error = into.error or more.error


_NUMBER = re.compile(r"\d+")


def merge_texts(ours: list[str], theirs: list[str]) -> list[str]:
    out = list(ours)
    for text in theirs:
        if text in out:
            continue
        shape = _NUMBER.sub("#", text)
        for k, mine in enumerate(out):
            if _NUMBER.sub("#", mine) == shape and _NUMBER.findall(mine)[1:] == _NUMBER.findall(text)[1:]:
                total = int(_NUMBER.search(mine).group()) + int(_NUMBER.search(text).group())
                out[k] = _NUMBER.sub(str(total), mine, count=1)
                break
        else:
            out.append(text)
    return out
