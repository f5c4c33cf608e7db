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

What is kept between reads is kept out of memory (`_Part`): each source's frames in Arrow IPC
files of the reader's own scratch folder, mapped by the read that needs them. A watch holds one
incident, not that incident and the rows it was built from.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import itertools
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa

from .. import schema
from ..incident import Incident
from ..load_report import FileReport
from . import chunks
from .folder import folder_digest, load_source
from .registry import LoadContext

# `_take`'s answer for a chunk that read on its own would not give the rows a whole read gives.
_FROM_START = object()
# `_rest`'s answer for an open rest the loader refuses.
_REFUSED = object()

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
    part: _Part | None = None  # the frames of the bytes up to `offset`
    report: FileReport | None = None  # their account
    notes: list[str] = field(default_factory=list)
    stat: tuple = ()
    rest: tuple | None = None  # what follows `offset`, as last read: (frames, account, notes), or None


class GrowingFolder:
    """A source reader that keeps what it read (see the module's docstring). One per folder
    followed; `reads` counts how sources were read, over all its looks (kept, resumed, whole)."""

    def __init__(self):
        self._whole: dict[tuple, tuple[tuple, Incident]] = {}
        self._streams: dict[tuple, _Stream] = {}
        self.sniffed: dict = {}  # the formats decided so far (read_folder's `sniffed`)
        self.kept: dict = {}  # what loaders keep to read on (LoadContext.kept)
        self.reads = {"kept": 0, "resumed": 0, "whole": 0}
        try:
            self._scratch: Path | None = Path(tempfile.mkdtemp(prefix="dflash-watch-", dir=_scratch_root()))
            weakref.finalize(self, shutil.rmtree, self._scratch, ignore_errors=True)
        except OSError:
            self._scratch = None  # no temporary folder: what is kept stays in memory
        self._made = itertools.count()

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
            return kept[1].incident()
        self.reads["whole"] += 1
        inc = load_source(p, ctx, scratch)
        if p.fmt.phase == 0 and state is not None:
            self._replace(kept[1] if kept else None)
            self._whole[key] = (state, self._part(inc))
        return _own(inc)

    def _part(self, inc: Incident) -> _Part:
        return _Part(inc, self._scratch / str(next(self._made)) if self._scratch is not None else None)

    @staticmethod
    def _replace(old: _Part | None) -> None:
        """Let go of a part's files: a read that still maps them keeps reading them."""
        if old is not None:
            old.drop()

    def _stream(self, key: tuple, p, ctx: LoadContext, scratch: Path, state: tuple) -> Incident:
        s = self._streams.get(key)
        if s is not None and s.stat == state:
            self.reads["kept"] += 1
            return _joined(s, s.rest)
        if s is None or state[0] < s.offset or _seal(p.path, s.offset) != s.seal:
            s = self._new_stream(key)
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
                s = self._new_stream(key)
                f.seek(0)
                tail = f.read(state[0])
        cut = tail.rfind(b"\n") + 1  # whole lines; a line still being written stays open
        scratch.mkdir(parents=True, exist_ok=True)
        self.reads["resumed" if s.part is not None else "whole"] += 1
        if cut:
            taken = self._take(s, p, ctx, scratch, tail[:cut], csv)
            if taken is _FROM_START:  # read on its own, the chunk's rows would be named otherwise
                self._new_stream(key)
                return self._stream(key, p, ctx, scratch, state)
            if taken is None:  # the loader refused a chunk: the file as a whole read gives it
                self._drop_stream(key)
                return load_source(p, ctx, scratch / "whole")
            s.seal = _seal(p.path, s.offset)
        rest = tail[cut:]
        part = s.part.incident() if s.part is not None else None  # mapped once for this read
        s.rest = self._rest(s, part, p, ctx, scratch, rest, csv) if rest.strip() else None
        if s.rest is _REFUSED:  # the loader refused the open rest: the file as a whole read gives it
            self._drop_stream(key)
            return load_source(p, ctx, scratch / "whole")
        s.stat = state
        return _joined(s, s.rest, part)

    def _new_stream(self, key: tuple) -> _Stream:
        self._drop_stream(key)
        s = self._streams[key] = _Stream()
        return s

    def _drop_stream(self, key: tuple) -> None:
        old = self._streams.pop(key, None)
        if old is not None:
            self._replace(old.part)

    def _take(self, s: _Stream, p, ctx, scratch: Path, text: bytes, csv: bool) -> _Stream | None:
        """`s` with the closed lines `text` (which follow its offset) read for good."""
        inc, rep = _read(s, p, ctx, scratch, text, csv, "closed")
        if rep.error:
            return None
        before = s.part.incident() if s.part is not None else None
        if before is not None and not chunks.reads_on(p, before, s.report, inc, rep):
            return _FROM_START
        if s.report is None:
            s.report, s.notes = rep, list(inc.load_report.notes)
        else:
            chunks.merge_reports(s.report, rep)
            s.notes.extend(n for n in inc.load_report.notes if n not in s.notes)
        inc.load_report.files, inc.load_report.notes = [], []
        self._replace(s.part)
        s.part = self._part(inc if before is None else _combined([before, inc]))
        s.offset += len(text)
        s.next_line += text.count(b"\n")
        return s

    def _rest(self, s: _Stream, part: Incident | None, p, ctx, scratch: Path, text: bytes, csv: bool):
        """The open rest after `part` (the stream read for good) read once more: (its frames, its
        account, its notes), or _REFUSED where the loader refuses it (its error is the file's, as
        a whole read says)."""
        inc, rep = _read(s, p, ctx, scratch, text, csv, "open")
        if rep.error or (part is not None and not chunks.reads_on(p, part, s.report, inc, rep)):
            return _REFUSED  # read whole by the caller
        notes = list(inc.load_report.notes)
        inc.load_report.files, inc.load_report.notes = [], []
        return inc, rep, notes


def _read(s: _Stream, p, ctx, scratch: Path, text: bytes, csv: bool, name: str):
    later = csv and s.offset > 0  # a CSV chunk after the first takes the header in front
    chunk = chunks.Chunk(s.next_line, s.header + text if later else text, 1 if later else 0)
    return chunks.read_chunk(p, ctx, chunk, scratch, name)


def _joined(s: _Stream, rest, part: Incident | None = None) -> Incident:
    """One Incident of the stream: its part read for good (`part` where the caller mapped it
    already), the open rest, one report."""
    report = copy.deepcopy(s.report) if s.report is not None else None
    if part is None and s.part is not None:
        part = s.part.incident()
    parts = [part] if part is not None else []
    notes = list(s.notes)
    if rest is not None:
        inc, rep, rest_notes = rest
        if report is None:
            report = copy.deepcopy(rep)
        else:
            chunks.merge_reports(report, rep)
        notes.extend(n for n in rest_notes if n not in notes)
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


def _scratch_root() -> str | None:
    """Where the _Parts' files go: the user's TMPDIR where set; else /var/tmp where it can be
    written, which systems keep on disk (a /tmp in memory, tmpfs, would hold the rows in memory
    under another name); else the platform's temporary folder."""
    if os.environ.get("TMPDIR"):
        return None  # tempfile's own choice is TMPDIR
    var_tmp = Path("/var/tmp")
    return str(var_tmp) if var_tmp.is_dir() and os.access(var_tmp, os.W_OK) else None


class _Part:
    """One source's frames kept between reads out of memory: each frame an Arrow IPC file in
    `folder`, mapped by `incident()`. Its texts are read from the mapping as they are (no copy),
    so a read combines them straight from the page cache, and between reads, while the model and
    the detectors run, the rows a watch keeps take no memory (benchmarks/bench_watch.py hour: the
    last read of an hour of 8 ranks began at 161 MiB, now at 145-147). A frame Arrow does not hold
    as pandas has it (a column of Python objects, an index of labels) stays in memory."""

    def __init__(self, inc: Incident, folder: Path | None):
        self.folder = folder
        self.shell = copy.copy(inc)  # its account and runs; its frames are set by incident()
        self.files: dict[str, tuple[Path, pd.Series]] = {}  # frame -> (its file, its dtypes)
        self.frames: dict[str, pd.DataFrame] = {}  # the frames kept in memory
        for name in schema.FRAME_NAMES:
            df = getattr(inc, name)
            path = folder / f"{name}.arrow" if folder is not None else None
            if path is not None and _written(df, path):
                self.files[name] = (path, df.dtypes)
            else:
                self.frames[name] = df
            setattr(self.shell, name, None)

    def incident(self) -> Incident:
        """The part as an Incident of its own: frames mapped anew, account and runs copied."""
        out = copy.copy(self.shell)
        for name in schema.FRAME_NAMES:
            if name in self.frames:
                setattr(out, name, self.frames[name].copy(deep=False))
            else:
                path, dtypes = self.files[name]
                setattr(out, name, _mapped(path, dtypes))
        out.load_report = copy.deepcopy(self.shell.load_report)
        out.runs = copy.deepcopy(self.shell.runs)
        return out

    def drop(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def _written(df: pd.DataFrame, path: Path) -> bool:
    """Write `df` to `path` as an Arrow IPC file, where Arrow holds it as pandas does: rows
    numbered from 0, no column of Python objects (lists would come back as arrays)."""
    if not len(df) or not df.index.equals(pd.RangeIndex(len(df))) or (df.dtypes == "object").any():
        return False
    try:
        table = pa.Table.from_pandas(df, preserve_index=False)
        path.parent.mkdir(parents=True, exist_ok=True)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    except (pa.ArrowException, TypeError, ValueError, OSError):
        # kept in memory: a full or read-only scratch disk costs memory, never the read
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return False
    return True


def _mapped(path: Path, dtypes: pd.Series) -> pd.DataFrame:
    """The frame written to `path`, its texts read from the mapped file, in the dtypes it had
    (pandas' own metadata in the file gives them back; a column it gives otherwise is cast)."""
    df = pa.ipc.open_file(pa.memory_map(str(path))).read_all().to_pandas()
    for col in df.columns[df.dtypes != dtypes.reindex(df.columns)]:
        df[col] = df[col].astype(dtypes[col])
    return df
