"""An incident folder read again and again as its files grow (the live watch): each file is read
once, and a stream that only grew is read on from where the last read stopped.

`GrowingFolder` is a source reader for `read_folder(..., reader=, sniffed=)`. A file that has not changed
(size and modification time) since it was last read is not read again. A stream of a format read
in chunks (chunks.CHUNKED: nvidia-smi query CSV, training logs) that only grew, its bytes up to
the last cut still those read, is read from that cut: the new whole lines are one more chunk,
through the same loader, on the file's own line numbers, and its account is added to the file's.
A line still being written (no newline yet) is read again at each look until it ends. New lines
of a log that carry no date of their own continue the record read last (a traceback after its
error line): no chunk may start inside a record, so that log is read from its start again; so
is a log whose new lines take their run, job or attempt from lines read before (a chunk whose
first lines name no run, a torchrun agent's or Slurm's lines: process_log.reads_on).
A loader may keep what lets it read on in the reader's `kept` (LoadContext.kept): a `.wandb`
log that grew is decoded on from the record its last read stopped at (wandb/decoding.py).
Everything else that changed is read whole, and so is every source read after the others
(phase 1: what it borrows from them changes as they grow). The incident is the one a
fresh read of the folder gives (tests/loaders/test_following.py).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from .. import schema
from ..incident import Incident
from ..load_report import FileReport
from . import chunks
from .folder import folder_digest, load_source
from .registry import LoadContext

# `_take`'s answer for a chunk that read on its own would not give the rows a whole read gives.
_FROM_START = object()

# How much of a stream's bytes before its cut must read as they did: a file rewritten from the
# start (a capture restarted with `>`) is read whole again.
_SEAL_BYTES = 4096


@dataclass
class _Stream:
    """What has been read of one growing stream for good, and the look it last gave."""

    offset: int = 0  # bytes read for good (whole lines, closed records)
    next_line: int = 1  # the file's line number at `offset`
    header: bytes = b""  # a CSV's header line, put in front of each later chunk
    seal: str = ""  # digest of the bytes just before `offset`
    part: Incident | None = None  # the frames of the bytes up to `offset`
    report: FileReport | None = None  # their account
    notes: list[str] = field(default_factory=list)
    stat: tuple = ()
    look: Incident | None = None  # the part and what follows `offset`, as last read


class GrowingFolder:
    """A source reader that keeps what it read (see the module's docstring). One per folder
    followed; `reads` counts how sources were read, over all its looks (kept, resumed, whole)."""

    def __init__(self):
        self._whole: dict[tuple, tuple[tuple, Incident]] = {}
        self._streams: dict[tuple, _Stream] = {}
        self.sniffed: dict = {}  # the formats decided so far (read_folder's `sniffed`)
        self.kept: dict = {}  # what loaders keep to read on (LoadContext.kept)
        self.reads = {"kept": 0, "resumed": 0, "whole": 0}

    def __call__(self, p, ctx: LoadContext, scratch: Path) -> Incident:
        ctx = dataclasses.replace(ctx, kept=self.kept)
        key = (str(p.path), p.fmt.name, ctx.date)
        folder = p.path.is_dir()
        try:
            # a folder (a wandb run) changes with the files in it, not with its own entry
            if folder:
                state = folder_digest(p.path, ())
            else:
                st = p.path.stat()
                state = (st.st_size, st.st_mtime_ns)
        except OSError:
            state = None
        if p.fmt.phase == 0 and state is not None and not folder and chunks.chunkable(p):
            return _own(self._stream(key, p, ctx, scratch, state))
        kept = self._whole.get(key)
        if p.fmt.phase == 0 and state is not None and kept is not None and kept[0] == state:
            self.reads["kept"] += 1
            return _own(kept[1])
        self.reads["whole"] += 1
        inc = load_source(p, ctx, scratch)
        if p.fmt.phase == 0 and state is not None:
            self._whole[key] = (state, inc)
        return _own(inc)

    def _stream(self, key: tuple, p, ctx: LoadContext, scratch: Path, state: tuple) -> Incident:
        s = self._streams.get(key)
        if s is not None and s.stat == state:
            self.reads["kept"] += 1
            return s.look
        if s is None or state[0] < s.offset or _seal(p.path, s.offset) != s.seal:
            s = self._streams[key] = _Stream()
        csv = chunks.CHUNKED[p.fmt.name]
        with open(p.path, "rb") as f:
            if csv and not s.header:
                s.header = f.readline()
            f.seek(s.offset)
            tail = f.read(state[0] - s.offset)
            if not csv and s.offset and tail and not chunks.DATED.match(tail):
                # lines with no date of their own continue the record read last (a traceback
                # after its error line): no chunk may start inside a record, so the log is
                # read from its start again (chunks.py's cut rule)
                s = self._streams[key] = _Stream()
                f.seek(0)
                tail = f.read(state[0])
        cut = tail.rfind(b"\n") + 1  # whole lines; a line still being written stays open
        scratch.mkdir(parents=True, exist_ok=True)
        self.reads["resumed" if s.part is not None else "whole"] += 1
        if cut:
            taken = self._take(s, p, ctx, scratch, tail[:cut], csv)
            if taken is _FROM_START:  # read on its own, the chunk's rows would be named otherwise
                self._streams[key] = _Stream()
                return self._stream(key, p, ctx, scratch, state)
            s = taken
            if s is None:  # the loader refused a chunk: the file as a whole read gives it
                self._streams.pop(key, None)
                return load_source(p, ctx, scratch / "whole")
            self._streams[key] = s
            s.seal = _seal(p.path, s.offset)
        rest = tail[cut:]
        s.look = self._with_rest(s, p, ctx, scratch, rest, csv) if rest.strip() else _joined(s, None)
        if s.look is None:  # the loader refused the open rest: the file as a whole read gives it
            self._streams.pop(key, None)
            return load_source(p, ctx, scratch / "whole")
        s.stat = state
        return s.look

    def _take(self, s: _Stream, p, ctx, scratch: Path, text: bytes, csv: bool) -> _Stream | None:
        """`s` with the closed lines `text` (which follow its offset) read for good."""
        inc, rep = _read(s, p, ctx, scratch, text, csv, "closed")
        if rep.error:
            return None
        if s.part is not None and not chunks.reads_on(p, s.part, s.report, inc, rep):
            return _FROM_START
        if s.report is None:
            s.report, s.notes = rep, list(inc.load_report.notes)
        else:
            chunks.merge_reports(s.report, rep)
            s.notes.extend(n for n in inc.load_report.notes if n not in s.notes)
        inc.load_report.files, inc.load_report.notes = [], []
        s.part = inc if s.part is None else _combined([s.part, inc])
        s.offset += len(text)
        s.next_line += text.count(b"\n")
        return s

    def _with_rest(self, s: _Stream, p, ctx, scratch: Path, text: bytes, csv: bool) -> Incident | None:
        """The stream as it stands: what was read for good and the open rest read once more
        (None where the loader refuses the rest: its error is the file's, as a whole read says)."""
        inc, rep = _read(s, p, ctx, scratch, text, csv, "open")
        if rep.error or (s.part is not None and not chunks.reads_on(p, s.part, s.report, inc, rep)):
            return None  # read whole by the caller
        return _joined(s, (inc, rep))


def _read(s: _Stream, p, ctx, scratch: Path, text: bytes, csv: bool, name: str):
    later = csv and s.offset > 0  # a CSV chunk after the first takes the header in front
    chunk = chunks.Chunk(s.next_line, s.header + text if later else text, 1 if later else 0)
    return chunks.read_chunk(p, ctx, chunk, scratch, name)


def _joined(s: _Stream, rest) -> Incident:
    """One Incident of the stream: its part read for good, the open rest, one report."""
    report = copy.deepcopy(s.report) if s.report is not None else None
    parts = [s.part] if s.part is not None else []
    notes = list(s.notes)
    if rest is not None:
        inc, rep = rest
        if report is None:
            report = rep
        else:
            chunks.merge_reports(report, rep)
        notes.extend(n for n in inc.load_report.notes if n not in notes)
        inc.load_report.files, inc.load_report.notes = [], []
        parts.append(inc)
    # one part is the look as it stands (no second copy of the stream's frames)
    out = _own(parts[0]) if len(parts) == 1 else _combined([_own(x) for x in parts]) if parts else Incident()
    out.load_report.files = [report] if report is not None else []
    out.load_report.notes = notes
    return out


def _combined(parts: list[Incident]) -> Incident:
    """The parts of one file as one Incident, each column of the type the file's rows give it:
    a column that some chunks have no value in (a `thread` field seen from line 40 on) would
    otherwise come out of the concatenation as Python objects, not the text a whole read makes."""
    out = Incident.combine(parts)
    for name in schema.FRAME_NAMES:
        df = getattr(out, name)
        # only a column the concatenation left as objects can be wrong (and only those are
        # looked at: the parts grow with the file, and this runs at every look)
        for col in df.columns[[dt == "object" for dt in df.dtypes]]:
            kinds = {str(c.dtype): c.dtype for p in parts if col in getattr(p, name).columns
                     for c in [getattr(p, name)[col]] if c.notna().any()}
            if len(kinds) == 1 and str(df[col].dtype) not in kinds:
                df[col] = df[col].astype(next(iter(kinds.values())))
    return out


def _seal(path: Path, offset: int) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, offset - _SEAL_BYTES))
        return hashlib.sha1(f.read(min(offset, _SEAL_BYTES))).hexdigest()


def _own(inc: Incident) -> Incident:
    """A copy the folder's read may change (it renames runs, sorts reports) without changing
    what is kept: frames shared until written (pandas copy-on-write), reports and runs copied."""
    out = copy.copy(inc)
    for name in schema.FRAME_NAMES:
        setattr(out, name, getattr(inc, name).copy(deep=False))
    out.load_report = copy.deepcopy(inc.load_report)
    out.runs = copy.deepcopy(inc.runs)
    return out
