"""Training stdout/stderr logs -> `metrics` (throughput, loss, step) and `events` (stages,
warnings, tracebacks, NCCL timeouts and errors, elastic and DeepSpeed launcher failures,
signals, exits, OOMs).

One streaming pass over binary blocks: memory holds a few blocks and the rows found, never the
file. Candidate lines are those that hold one of the patterns' keywords (keywords.py); the
DFlash trainer line, the common case, is read in bulk for the whole block in a thread (told by
RE2's DFA, cut at its blanks, its time parsed once, its rows numpy arrays); so are the other
known formats' plain lines (bulk_lines.py: which lines, their fields, their own full dates),
whose times and runs the scan then gives a run of lines at once; other candidates are decoded
and matched (see patterns.py for the tables and the event vocabulary, line_metrics.py for
the metrics a record gives, bars.py for progress bars, times.py for timestamps, blocks.py for
tracebacks and ChildFailedError tables, rows.py for the rows found). Lines that carry neither a
metric nor an event are counted as skipped with that reason, so parsed + skipped == read holds
for every file. Nothing in a file makes this module raise: bad bytes, NUL runs, lines cut by a
crash, records glued on one line are all read as far as they go.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import html
import os
import re
import tempfile
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...config import IncidentConfig
from ...incident import from_frames
from ...load_report import FileReport
from ...schema import BAR_ELAPSED_S
from ...units import count
from .. import encoding, registry
from ..launchers.slurm import job_of_output_name
from ..launchers.torchrun import LogDirPlace, log_dir_place
from ..registry import LoadContext, read_head
from ..terminal import ESCAPES
from . import launcher_lines as attempts
from . import patterns as lp
from .bars import Bars
from .blocks import (
    MAX_EVENT_CHARS,
    MAX_TRACEBACK_LINES,
    NOT_MINE,
    TAKE_LAST,
    FailureTable,
    FaulthandlerBlock,
    MessageTail,
    PySpyBlock,
    TracebackBlock,
    boxed_frame,
)
from .bulk_lines import BulkLines
from .keywords import SPARSE_BYTES, Keywords, PatternKeywords
from .line_metrics import (
    FIELD_KW,
    GENERIC_KW,
    HF_DICT_KW,
    MAX_FIELD_CHARS,
    known_block_field,
    read_metrics,
)
from .rows import Rows
from .times import Calendar, Stamp, find_stamp, resolve_times

__all__ = ["LogScanner", "load_process_log", "resolve_times", "sniff_log"]

BLOCK_BYTES = 8 << 20  # per-block costs (arrow, numpy, pandas) amortised; memory stays flat
MAX_LINE_BYTES = 1 << 20  # longer lines are counted and skipped, not held in memory
PEEK_BYTES = 4096  # how far before a block's end its last newline is looked for
BULK = True  # the known formats' plain lines read in bulk (bulk_lines.py); the general path reads the same
AHEAD = 2  # blocks whose lines are found in threads while the scan makes one block's rows
_NEIGHBOUR_LINES = 50  # how far back a line without a timestamp looks for one
_HTML = re.compile(r"&(?:lt|gt|amp|quot|#\d+);|</?pre>")
NO_MATCH = "log text without a metric or event"
_TAGS_WITHIN = 200  # leading tags ([INFO], logger names, container ids) end within this many characters
# What loggers put between the timestamp and the message: [run], [INFO], " - root - INFO - ",
# a platform's `fa88a9df || ` container tag, Metaflow's `[177/train/578 (pid 28936)]`.
# (the tags a logger writes after its time: `[rank0]`, a level, `name - `, Hugging Face's `>>`, and
# where the line was written: glog's `22488 net.cpp:100]`, Horovod's `: W horovod/x.cc:105]`, vLLM's
# `llm_engine.py:72]`, tensorpack's `@base.py:285]`)
_LEADING_TAGS = re.compile(
    r"^(?:[\s\-:|,\d\]>]*(?:\[[\w.@ /()-]*\]|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b:?|[\w.]+ - |[0-9a-f]{6,16} \|\||"
    r"(?:[IWEFD] |@)?[\w./-]+\.\w+:\d+\]))*[\s\-:|>\]]*"
)


# A launcher's line that says whose traceback follows it
_REPORTS_TRACEBACK = "spawn_raised"
_CTRL_C_ECHO = re.compile(r"^\s*(?:\^C)+\s*$")
# Keywords as text, decoded once: the hot path tests them on every candidate line.
# (pattern, its keywords or () when the keyword is case-insensitive: then only the regex decides)
_EVENT_KW = tuple((p, () if p.case_insensitive_keyword else p.keywords) for p in lp.EVENT_PATTERNS)
_EVENT_KEYWORDS = PatternKeywords(tuple((p.keywords, p.case_insensitive_keyword) for p in lp.EVENT_PATTERNS))
# (what a traceback's exception line states: an OOM, a CUDA error, the wait that ran out)
_EXCEPTION_KW = tuple((p, kws) for p, kws in _EVENT_KW
                      if p.name in lp.EXCEPTION_FACTS or p.kind in ("timeout", "nccl_timeout"))
_SUMMARY_EVENTS = tuple((p, kws) for p, kws in _EVENT_KW if p.name == "hf_summary")
_SUMMARY_KW = "train_runtime"
_TRACEBACK = lp.TRACEBACK_KEYWORD.decode()
_THREAD_EXCEPTION = lp.THREAD_EXCEPTION_KEYWORD.decode()
_FAULTHANDLER_KW = lp.FAULTHANDLER_KEYWORDS
_BAR_KW = tuple(k.decode() for k in lp.BAR_KEYWORDS)


# The DFlash trainer line, read whole: `YYYY-mm-dd HH:MM:SS [run] step N loss X tok/s Y [queue Q]`.
# Anything else (nan, commas, a level tag, trailing text) takes the general path.
_FLOAT = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
# Read by Arrow's regex kernel (RE2) from a whole block's candidates at once; each line of the
# block's array ends with its newline.
_DFLASH_BODY = (
    r"(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \[(?P<tag>[\w.@-]+)\] step (?P<step>\d+) loss (?P<loss>"
    + _FLOAT + r") tok/s (?P<tok>" + _FLOAT + r")(?: queue (?P<queue>\d+))?\r?\n?$"
)
# The line behind the prefix that names its rank, as the general path reads it: torchrun's
# `[rank3]:` / `[default3]:`; in a file srun labelled, the task id (`3: `); in one pdsh or docker
# compose labelled, the host or container (which a metric row does not keep) and maybe torchrun's
# prefix after it.
_TORCHRUN_RANK = r"(?:\[(?:rank|default)(?P<rank>\d{1,9})\]: ?)?"
_DFLASH_LINES = {
    None: "^" + _TORCHRUN_RANK + _DFLASH_BODY,
    lp.SRUN_LABEL: r"^(?P<rank>\d{1,5}): " + _DFLASH_BODY,
    lp.PDSH_LABEL: r"^[A-Za-z0-9][\w.-]{0,62}: " + _TORCHRUN_RANK + _DFLASH_BODY,
    lp.COMPOSE_LABEL: r"^[A-Za-z0-9][\w.-]{0,62}?[-_]\d+ *\| " + _TORCHRUN_RANK + _DFLASH_BODY,
}


def _uncaptured(regex: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", regex)


# The same lines told by RE2's DFA alone, no fields captured (a capture costs RE2 about twice the
# match): a line with no prefix is then cut at its blanks, one with a prefix read with captures.
_DFLASH_PLAIN = "^" + _uncaptured(_DFLASH_BODY)
_DFLASH_MATCH = {label: _uncaptured(regex) for label, regex in _DFLASH_LINES.items()}
_DFLASH_KEYS = tuple(lp.METRIC_PATTERNS[0].metrics.values())  # tok/s, loss, queue: the general path's order
_DFLASH_KEYS_ARRAY = np.array(_DFLASH_KEYS, dtype=object)
_DFLASH_NAME = np.array(["dflash"], dtype=object)  # repeated: np.full fills objects one by one, 8x slower
assert lp.METRIC_PATTERNS[0].name == "dflash" and list(lp.METRIC_PATTERNS[0].metrics) == ["tok", "loss", "queue"]
# Tags that are a level ([INFO]) or a rank, not a run: such a line takes the general path.
_LEVEL_TAGS = pa.array(sorted(lp.LEVELS), pa.string()).cast(pa.binary())


@dataclass
class _FastLines:
    """A block's candidate lines read as the DFlash trainer's line, all at once: per candidate,
    whether it is one (`ok`), and the rows of those that are, made beside the scan (in a thread)."""

    ok: np.ndarray
    starts: np.ndarray  # each candidate's first byte in the block
    stamp: np.ndarray  # its 19 bytes of time (S19; filler where not ok)
    tags: list  # the run tags of the block's DFlash lines, in the order they first come
    tag_code: np.ndarray  # each candidate's tag, an index of `tags`
    first_row: np.ndarray  # each candidate's first row in `rows` (one more entry: the rows' count)
    # The rows of the ok candidates, a column each as METRIC_COLS, but for `line` the line's index
    # in the block and for `run` its tag's code (the scan names the runs and numbers the lines),
    # and `stamp` the naive time its text says (datetime64[s]; its 19 bytes if one is impossible).
    rows: tuple[np.ndarray, ...]

    @classmethod
    def of(cls, lines: pa.Array, idx: np.ndarray, starts: np.ndarray, label: re.Pattern | None) -> _FastLines | None:
        sub = lines.take(pa.array(idx))
        n = len(idx)
        parts = []  # (the candidates it holds, their fields), a part per way of reading them
        rest = np.arange(n)
        if label is None:
            plain = pc.match_substring_regex(sub, pattern=_DFLASH_PLAIN).to_numpy(zero_copy_only=False)
            if plain.any():
                parts.append((np.flatnonzero(plain), _split_fields(sub.filter(pa.array(plain)))))
                rest = np.flatnonzero(~plain)
        if len(rest):
            others = sub.take(pa.array(rest)) if len(rest) < n else sub
            hit = pc.match_substring_regex(others, pattern=_DFLASH_MATCH[label]).to_numpy(zero_copy_only=False)
            if hit.any():
                parts.append((rest[hit], _captured_fields(others.filter(pa.array(hit)), label)))
        if not parts:
            return None
        at, f = parts[0]
        if len(parts) > 1:  # in the order of the lines
            at = np.concatenate([p for p, _ in parts])
            order = np.argsort(at, kind="stable")
            at = at[order]
            f = {k: (pa.concat_arrays([fields[k] for _, fields in parts]).take(pa.array(order)) if k == "tag"
                     else np.concatenate([fields[k] for _, fields in parts])[order]) for k in f}
        level = pc.or_(pc.is_in(f["tag"], value_set=_LEVEL_TAGS),
                       pc.match_substring_regex(f["tag"], lp.RANK_TAG.pattern)).to_numpy(zero_copy_only=False)
        codes = f["tag"].dictionary_encode()
        tag_code = codes.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        at, good = at[~level], ~level
        # tok/s, loss[, queue] a line: the general path's order
        per_line = np.where(f["has_queue"][good], 3, 2)
        keep = np.ones((len(at), 3), dtype=bool)
        keep[:, 2] = f["has_queue"][good]
        first_row = np.zeros(n + 1, np.int64)
        first_row[1:][at] = per_line
        np.cumsum(first_row, out=first_row)
        ok = np.zeros(n, dtype=bool)
        ok[at] = True
        stamp = np.zeros(n, "S19")
        stamp[at] = f["stamp"][good]
        code = np.zeros(n, np.int64)
        code[at] = tag_code[good]
        try:  # each line's time read once for its two or three rows (numpy's parse holds the GIL)
            when = f["stamp"][good].astype("datetime64[s]")
        except ValueError:  # an impossible date (month 13): resolve_times sends them through pandas
            when = f["stamp"][good]
        rows = (np.repeat(when, per_line), np.repeat(idx[at].astype(np.int64), per_line),
                np.repeat(tag_code[good], per_line), np.repeat(f["step"][good], per_line),
                np.broadcast_to(_DFLASH_KEYS_ARRAY, keep.shape)[keep],
                np.stack([f["tok"][good], f["loss"][good], f["queue"][good]], axis=1)[keep],
                np.repeat(f["rank"][good], per_line), _DFLASH_NAME.repeat(int(per_line.sum())))
        return cls(ok=ok, starts=starts[idx], stamp=stamp, tags=codes.dictionary.to_pylist(), tag_code=code,
                   first_row=first_row, rows=rows)


def _split_fields(found: pa.Array) -> dict:
    """The fields of DFlash lines without a prefix (each matched _DFLASH_PLAIN: ASCII, one blank
    between fields), cut at the blanks: 9 fields, 11 with the queue."""
    text = pc.utf8_rtrim(found.view(pa.string()), characters="\r\n")
    cut = pc.split_pattern(text, " ")
    has_queue = pc.list_value_length(cut).to_numpy(zero_copy_only=False) == 11
    queue = np.full(len(found), np.nan)
    if has_queue.any():
        queue[has_queue] = _numbers(pc.list_element(cut.filter(pa.array(has_queue)), 10))
    return dict(stamp=_stamps(pc.utf8_slice_codeunits(text, 0, 19)),
                tag=pc.utf8_slice_codeunits(pc.list_element(cut, 2), 1, -1).cast(pa.binary()),
                step=_steps(pc.list_element(cut, 4)), loss=_numbers(pc.list_element(cut, 6)),
                tok=_numbers(pc.list_element(cut, 8)), queue=queue, has_queue=has_queue,
                rank=np.empty(len(found), dtype=object))  # None: no prefix names a rank


def _captured_fields(found: pa.Array, label: re.Pattern | None) -> dict:
    """The fields of DFlash lines behind a prefix (a rank, a task id, a host), by RE2's captures."""
    f = pc.extract_regex(found, pattern=_DFLASH_LINES[label])
    queue, rank = f.field("queue"), f.field("rank")
    has_queue = pc.binary_length(queue).to_numpy(zero_copy_only=False) > 0
    has_rank = pc.binary_length(rank).to_numpy(zero_copy_only=False) > 0
    ranks = np.empty(len(found), dtype=object)  # None where no prefix names one
    if has_rank.any():
        ranks[has_rank] = _numbers(rank.filter(pa.array(has_rank)), pa.int64()).tolist()
    return dict(stamp=_stamps(f.field("stamp")), tag=f.field("tag"), step=_steps(f.field("step")),
                loss=_numbers(f.field("loss")), tok=_numbers(f.field("tok")),
                queue=_numbers(pc.if_else(pa.array(has_queue), queue, b"0")), has_queue=has_queue, rank=ranks)


def _steps(digits: pa.Array) -> np.ndarray:
    """Steps as int64; where 19 digits or more fit no column, as objects, None for those."""
    digits = digits.cast(pa.string())
    fits = pc.binary_length(digits).to_numpy(zero_copy_only=False) < 19
    if fits.all():
        return _numbers(digits, pa.int64())
    steps = np.asarray(_numbers(pc.if_else(pa.array(fits), digits, "0"), pa.int64()), dtype=object)
    steps[~fits] = None
    return steps


def _stamps(stamps: pa.Array) -> np.ndarray:
    """`YYYY-mm-dd HH:MM:SS` strings (19 bytes each, as the regexes matched them) as numpy S19,
    read from Arrow's buffer: no object per line."""
    b = stamps.cast(pa.binary())
    first = int(np.frombuffer(b.buffers()[1], np.int32, count=1, offset=4 * b.offset)[0])
    return np.frombuffer(b.buffers()[2], "S19", count=len(b), offset=first)


@dataclass
class _Found:
    """What a block's bytes alone tell, found apart from the scan's state (in a thread beside the
    block before): its lines, the candidates among them (the lines that hold a keyword: all where
    a user pattern has none) and its DFlash lines."""

    block: bytes  # NUL bytes removed
    nul_bytes: int
    bad_utf8_lines: int
    starts: np.ndarray
    ends: np.ndarray
    idx: np.ndarray
    fast: _FastLines | None
    plain: BulkLines | None  # the other known formats' plain lines

    @classmethod
    def of(cls, block: bytes, keywords: Keywords | None, sparse: bool, label: re.Pattern | None) -> _Found:
        """`keywords` None: every line is a candidate; `sparse`: few are (keywords.py); `label`:
        the launcher's label the file's lines carry (line_label)."""
        # the block's lowest and highest byte in one pass that lets go of the GIL (bytes.isascii
        # and a search for NUL hold it, while the threads beside this one want it)
        low, high = _byte_range(block)
        nul = block.count(b"\x00") if low == 0 else 0
        if nul:  # a writer killed mid-file leaves NUL runs: removed, counted
            block = block.replace(b"\x00", b"")
        bad = 0
        if high >= 0x80:
            try:
                block.decode("utf-8")
            except UnicodeDecodeError:
                bad = sum(1 for ln in block.split(b"\n") if not _utf8(ln))
        ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
        if not block.endswith(b"\n") and block:
            ends = np.append(ends, len(block))
        starts = np.empty(len(ends), np.int64)
        starts[:1] = 0
        starts[1:] = ends[:-1] + 1
        # the block's lines as one Arrow array, each with its newline (no copy of the block)
        offsets = np.empty(len(ends) + 1, np.int32)
        offsets[0] = 0
        offsets[1:] = np.minimum(ends + 1, len(block))
        lines = pa.BinaryArray.from_buffers(pa.binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(block)])
        idx = np.arange(len(ends)) if keywords is None else keywords.lines(block, ends, lines, sparse)
        fast = _FastLines.of(lines, idx, starts, label) if len(idx) else None
        plain = BulkLines.of(block, lines, idx, ~fast.ok if fast is not None else np.ones(len(idx), bool),
                             _NEIGHBOUR_LINES + 1, label) if len(idx) and BULK else None
        return cls(block, nul, bad, starts, ends, idx, fast, plain)


def _label(path: Path) -> re.Pattern | None:
    """line_label of the file's first 64 KiB."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    return line_label(head.decode("utf-8", "replace").splitlines())


def _done(value) -> Future:
    done: Future = Future()
    done.set_result(value)
    return done


def _numbers(digits: pa.Array, to: pa.DataType | None = None) -> np.ndarray:
    """ASCII numbers as Arrow parses them (the same values as Python's float and int), as
    floats unless `to` says otherwise."""
    return pc.cast(digits.cast(pa.string()), to or pa.float64()).to_numpy(zero_copy_only=False)


def _byte_range(block: bytes) -> tuple[int, int]:
    """The lowest and the highest byte of `block` (a newline's for an empty one)."""
    if not block:
        return 0x0A, 0x0A
    m = pc.min_max(pa.Array.from_buffers(pa.uint8(), len(block), [None, pa.py_buffer(block)]))
    return m["min"].as_py(), m["max"].as_py()


def _blocks(f, size: int) -> Iterator[tuple[str, bytes | int]]:
    """("lines", bytes ending at a newline or EOF) or ("overlong", n_bytes) in file order."""
    carry = b""
    dropping = 0  # bytes of an overlong line being discarded
    while True:
        chunk = f.read(size if carry or dropping else _to_newline(f, size))
        if not chunk:
            if dropping or len(carry) > MAX_LINE_BYTES:
                yield "overlong", dropping or len(carry)
            elif carry:
                yield "lines", carry
            return
        first = chunk.find(b"\n")
        if carry and len(carry) + (first if first != -1 else len(chunk)) > MAX_LINE_BYTES:
            dropping, carry = len(carry), b""  # the line carried over from the block before is too long
        if dropping:
            if first == -1:
                dropping += len(chunk)
                continue
            yield "overlong", dropping + first
            dropping, chunk = 0, chunk[first + 1:]
        cut = chunk.rfind(b"\n")
        if cut == -1:
            buf = carry + chunk
            if len(buf) > MAX_LINE_BYTES:
                dropping, carry = len(buf), b""
            else:
                carry = buf
            continue
        # one copy of the block's bytes, none where the read ends at a newline with nothing carried
        yield "lines", chunk if not carry and cut == len(chunk) - 1 else b"".join((carry, memoryview(chunk)[: cut + 1]))
        carry = chunk[cut + 1:]


def _to_newline(f, size: int) -> int:
    """How many bytes to read next so that the block ends at a newline: up to the last one in the
    PEEK_BYTES before `size`, read at their offset without moving the file's position (the block is
    then used as read, where cutting it or joining its tail to the next cost a copy of 8 MiB each);
    `size` where those bytes hold none (a long line), the file ends sooner, or it cannot be read at
    an offset (a pipe)."""
    peek = min(PEEK_BYTES, size)
    try:
        window = os.pread(f.fileno(), peek, f.tell() + size - peek)
    except (OSError, ValueError):
        return size
    cut = window.rfind(b"\n")
    return size - peek + cut + 1 if len(window) == peek and cut != -1 else size


def strip_prefixes(text: str) -> tuple[str, dict]:
    """Remove launcher and viewer prefixes ([rank3]:, [80746], stderr:, ray actor tags, a
    markdown fence or backtick a paste left on the line)."""
    found: dict = {}
    if not (text[:1] in "[`<" or text.startswith(("stderr: ", "stdout: ")) or "pid=" in text[:48]):
        return text, found
    changed = True
    while changed:
        changed = False
        for name, rx in lp.PREFIXES:
            m = rx.match(text)
            if m and m.end():
                found.update({k: v for k, v in m.groupdict().items() if v is not None})
                text = text[m.end():]
                if name == "backtick" and text.rstrip().endswith("`"):  # the inline code's closing one
                    text = text.rstrip()[:-1]
                changed = True
    return text, found


def line_label(lines: list[str]) -> re.Pattern | None:
    """The launcher's label (patterns.LINE_LABELS) that most of a file's first lines carry (the
    launcher's own lines come first, unlabelled), if one does. Decided for the file, not the
    line: a line cut by `tail -c` can begin with `0: ` by chance (`Epoch 0: 6%|...` cut in its
    word). A host label names a handful of machines, each name with a digit (`worker-1`,
    `gpu003`, `10.0.0.7`): a bar's or a logger's word before a colon (`Train: 2%|`, `INFO:`) is none."""
    lines = [ln for ln in lines[:200] if ln.strip()]
    if len(lines) < 3:
        return None
    for label in lp.LINE_LABELS:
        carried = [m.group(1) for ln in lines if (m := label.match(ln))]
        names = set(carried)
        if len(carried) >= 0.8 * len(lines) and len(names) <= 64 and all(any(c.isdigit() for c in v) for v in names):
            return label
    return None


def unlabel(text: str, label: re.Pattern | None) -> tuple[str, dict]:
    """strip_prefixes, after the launcher's label where the file carries one: srun's task id is
    the rank (unless a `[rankN]:` after it says otherwise), pdsh's the host."""
    m = label.match(text) if label is not None else None
    if m is None:
        return strip_prefixes(text)
    text, found = strip_prefixes(text[m.end():])
    for key, value in m.groupdict().items():
        found.setdefault(key, value)
    return text, found


def _run_tag(body: str) -> str | None:
    """`[name]` right after a timestamp names the run, unless it is a level (`[INFO]`)."""
    m = lp.RUN_TAG.match(body)
    return m.group("run") if m and lp.names_run(m.group("run")) else None


class LogScanner:
    """The single streaming pass over one log file. Iterate `scan()` for row batches."""

    def __init__(self, path: Path, rep: FileReport, *, patterns=(), default_run: str | None = None,
                 block_bytes: int | None = None):
        self.path = Path(path)
        self.rep = rep
        self.user = tuple(patterns)
        self.default_run = default_run
        self.block_bytes = block_bytes or BLOCK_BYTES
        self.keywords = Keywords.of(self.user)
        self.label = _label(self.path)  # a launcher's label before every line (line_label)
        self.sparse = True  # whether the block read last had few candidates (keywords.py)
        # A user regex with no safe literal is tried on every line: correct, and slow.
        self.every_line = any(p.keyword is None for p in self.user)
        self.lineno = 0  # lines read so far
        self.parsed = 0
        self.last_stamp: Stamp | bytes | None = None
        self.said_at: tuple[int, Stamp] | None = None  # (line, time) of the latest line that said its time in its text
        self.calendar = Calendar()
        self.borrowed = 0
        self.last_run: str | None = None  # the run tag of the latest tagged line
        self.first_run: str | None = None
        self.run_from_neighbour = 0
        self._run_names: dict[bytes, str] = {}
        self.block: TracebackBlock | FailureTable | FaulthandlerBlock | PySpyBlock | MessageTail | None = None  # the multi-line record open
        self.bars = Bars()
        self.headed: dict = {}  # rank -> the step of its last metric-block header (line_metrics.read_metrics)
        self.epochs: dict = {}  # rank -> the epoch of its last Keras `Epoch N/M` line (line_metrics.read_metrics)
        self.nccl_errors: dict[tuple, dict] = {}  # (host, pid, tid) -> its latest nccl_error event
        self.glued = 0
        self.keyed = False  # the line being read has a terminal's `^C` echo glued before its records
        # the rank a launcher's line just named as the writer of the traceback that follows it
        # (torch.multiprocessing.spawn's `-- Process 1 terminated with the following error:`)
        self.reported_rank: int | None = None
        self.nul_bytes = 0
        self.bad_utf8_lines = 0
        self.first_date: str | None = None
        self._stamps_of: tuple = (None, {})  # (block, a line's end -> _nearest's answer from it)

    # -- the pass -----------------------------------------------------------------------------
    def scan(self) -> Iterator[Rows]:
        # The next blocks' keyword search and DFlash lines (Arrow's kernels and numpy, which let
        # go of the GIL) are found in threads while this block's rows are made; a file of one
        # block (a live watch's chunk) in place, without threads to start.
        with open(self.path, "rb") as f, contextlib.ExitStack() as stack:
            many = os.fstat(f.fileno()).st_size > self.block_bytes
            ahead = stack.enter_context(ThreadPoolExecutor(AHEAD, thread_name_prefix="log-scan")) if many else None
            waiting: deque = deque()
            for what, item in _blocks(f, self.block_bytes):
                if what == "lines":
                    search = (None if self.every_line else self.keywords), self.sparse, self.label
                    item = ahead.submit(_Found.of, item, *search) if ahead else _done(_Found.of(item, *search))
                waiting.append((what, item))
                if len(waiting) > AHEAD:
                    yield self._rows(*waiting.popleft())
            while waiting:
                yield self._rows(*waiting.popleft())
        if self.block is not None:
            self._close_block(rows := Rows(), truncated=True)
            yield rows
        rows = Rows()
        for bar in self.bars.states.values():
            bar.pop("_n", None)
            rows.event(**bar)
            # the bar's last-state line was counted when first seen; the event is extra, not a line
        yield rows
        self._finish_report()

    def _rows(self, what: str, item) -> Rows:
        rows = Rows()
        if what == "overlong":
            self.lineno += 1
            self.rep.skip(self.lineno, f"line longer than {MAX_LINE_BYTES // (1 << 20)} MiB, not read")
            self.rep.notes.append(f"line {self.lineno}: {item} bytes without a newline, skipped")
        else:
            self._block(item.result(), rows)
        return rows

    def _block(self, found: _Found, rows: Rows) -> None:
        self.nul_bytes += found.nul_bytes
        self.bad_utf8_lines += found.bad_utf8_lines
        block, starts, ends, idx, fast, plain = found.block, found.starts, found.ends, found.idx, found.fast, found.plain
        self.sparse = len(idx) * SPARSE_BYTES <= len(block)
        n_lines = len(ends)
        handled = 0
        consumed_to = 0
        base = self.lineno + 1

        def candidate(lineno: int) -> bool:  # the line holds a keyword: it may give a row of its own
            k = int(np.searchsorted(idx, lineno - base))
            return k < len(idx) and int(idx[k]) == lineno - base

        if self.block is not None:  # a record left open by the previous block
            consumed_to, handled = self._follow(block, 0, base, rows, candidate)
        last = None  # (stamp, run) of the latest fast line, written back before the general path
        n_fast = 0
        done = 0  # the candidates before this one are read
        general = np.flatnonzero(~fast.ok).tolist() if fast is not None else range(len(idx))
        # a run of plain lines (bulk_lines.py) that borrow one time, or that each say their own,
        # read when it ends: its first candidate and its kind
        run_from, run_kind = None, None
        kinds = plain.alone + 2 * plain.told if plain is not None else None
        for g in [*general, len(idx)]:
            kind = int(kinds[g]) if kinds is not None and g < len(idx) else 0
            if run_from is not None and (g > done or kind != run_kind):
                handled += self._plain_run(plain, run_kind == 1, run_from, done, base, idx, block, ends, rows)
                run_from = None
            if g > done:  # the DFlash lines between two others, in bulk
                took = self._fast_run(fast, done, g, consumed_to, base, rows)
                if took is not None:
                    if isinstance(self.block, MessageTail):
                        self.block = None  # a row of its own ends an exception's message
                    n, last = took
                    n_fast += n
            done = g + 1
            if g == len(idx):
                break
            i, ls, le = int(idx[g]), int(starts[idx[g]]), int(ends[idx[g]])
            if ls < consumed_to:
                continue
            if last is not None:
                self._after_fast(*last)
                last = None
            tail, self.block = (self.block, None) if isinstance(self.block, MessageTail) else (None, self.block)
            skipped = self.rep.n_skipped if tail is not None else 0
            if kind:
                if run_from is None:  # a row of its own ends an exception's message
                    run_from, run_kind = g, kind
            elif plain is not None and plain.ok[g]:
                stamp, _, tag, own = self._stamp_for(unlabel(_clean(block[ls:le]), self.label)[0], block, ls, base + i)
                self._plain(plain, g, g + 1, stamp, self._run_for(tag if own else None, own, None if own else tag),
                            base, idx, rows)
                handled += 1
            elif self._line(block, ls, le, base + i, rows):
                handled += 1
            elif (tail is not None and self.block is None and self.rep.n_skipped == skipped
                  and self._goes_on(tail, block[ls:le], base + i)):
                handled += 1  # a line that says nothing of its own goes on with the exception's message
                self.block = tail
            if self.block is not None:  # a record started here: its following lines belong to it
                consumed_to, taken = self._follow(block, le + 1, base + i + 1, rows, candidate)
                handled += taken
        if last is not None:
            self._after_fast(*last)
        if isinstance(self.block, MessageTail):
            self.block = None  # a message is followed within one block (its event is emitted with it)
        handled += n_fast
        self.lineno += n_lines
        # Lines that matched nothing are counted in bulk in _finish_report: no per-line work.
        self.parsed += handled

    def _fast_run(self, fast: _FastLines, a: int, b: int, consumed_to: int, base: int,
                  rows: Rows) -> tuple[int, tuple[bytes, str]] | None:
        """The rows of the DFlash lines that are candidates a to b, those a record before did not
        take; (how many lines, (stamp, run) of the last), or None where there were none."""
        a += int(np.searchsorted(fast.starts[a:b], consumed_to))
        if a >= b:
            return None
        # each tag named a run in the order its lines come (the file's first run is the first tag)
        names = np.array([self._run_names.get(t) or self._tag_run(t) for t in fast.tags], dtype=object)
        s, e = fast.first_row[a], fast.first_row[b]
        stamp, line, tag, step, metric, value, rank, pattern = (col[s:e] for col in fast.rows)
        rows.bulk((stamp, base + line, names[tag], step, metric, value, rank, pattern))
        return b - a, (bytes(fast.stamp[b - 1]), names[fast.tag_code[b - 1]])

    def _after_fast(self, stamp: bytes, run: str) -> None:
        self.last_stamp, self.last_run = stamp, run
        self.calendar.see_fast(stamp)
        if self.first_date is None:
            self.first_date = stamp[:10].decode("ascii", "replace")

    def _tag_run(self, tag: bytes) -> str | None:
        run = tag.decode()
        if not lp.names_run(run):
            return None
        self._run_names[tag] = run
        self.first_run = self.first_run or run
        return run

    # -- one line ------------------------------------------------------------------------------
    def _line(self, block: bytes, ls: int, le: int, lineno: int, rows: Rows) -> int:
        """Classify one candidate line; returns 1 when it gave a row (it is then 'parsed'); a
        line read for nothing but a known reason is counted skipped with that reason."""
        text = _clean(block[ls:le])
        text, pre = unlabel(text, self.label)
        host = pre.get("host")
        rank = _int(pre.get("rank"))
        pid = _int(pre.get("pid"))
        # \r-separated redraws: each segment is a state; each may hold several glued records
        segments = [s for s in text.split("\r") if s.strip()] if "\r" in text else [text]
        if len(segments) > 1:
            self.bars.redraws += len(segments) - 1
        got, skipped, since, barred = 0, None, len(rows.metric_cols[0]), False
        self.keyed = False
        for seg in segments:
            for record, own in self._records(seg):
                rec_rank, rec_pid = _int(own.get("rank")) if "rank" in own else rank, _int(own.get("pid")) or pid
                bars = lp.find_bars(record) if any(k in record for k in _BAR_KW) else []
                pieces = [record]
                if bars:
                    # (dated by the last line that said its time: lent, unless the bar's own line says one)
                    # (a DFlash line's time, read in bulk, is its bytes: lent as they are, as `_borrow` lends them)
                    lent = self.last_stamp if not isinstance(self.last_stamp, Stamp) or find_stamp(record)[0] is not None \
                        else dataclasses.replace(self.last_stamp, borrowed=True)
                    got |= self.bars.read(bars, record, lineno, rows, rec_rank, self._run_for(None, False, None), lent)
                    barred = True
                    pieces = [record[:bars[0].start], *(record[a.end:b.start] for a, b in zip(bars, bars[1:], strict=False)),
                              record[bars[-1].end:]]
                for piece in pieces:
                    if not piece.strip():
                        continue
                    found = self._text(piece, lineno, rows, rec_rank, rec_pid, block, ls, host)
                    if found == 1:
                        got = 1
                    elif found:
                        skipped = found
        if not got and skipped:
            self.rep.skip(lineno, skipped)
        if got and barred:
            rows.drop_bar_echoes(since)
        return 1 if got else 0

    def _plain(self, plain: BulkLines, a: int, b: int, stamp, run, base: int, idx: np.ndarray, rows: Rows) -> None:
        """The rows of plain lines of the known formats (bulk_lines.py), candidates a to b: their
        fields read in bulk, their time (or a list, a row's each) and run as `_record` gives them."""
        s, e = plain.first_row[a], plain.first_row[b]
        rows.many(stamp, (base + idx[plain.line[s:e]]).tolist(), run, plain.step[s:e], plain.metric[s:e],
                  plain.value[s:e], plain.rank[s:e], plain.pattern[s:e])

    def _plain_run(self, plain: BulkLines, alone: bool, a: int, b: int, base: int, idx: np.ndarray, block: bytes,
                   ends: np.ndarray, rows: Rows) -> int:
        """Plain lines a to b that say no time and find none before them in their block (`alone`),
        or that each say their own: their rows, their times and runs as `_record` gives each
        line's, the scan's state as they leave it. The number of lines."""
        n = b - a
        if alone:
            stamp, _ = self._borrow(None, None, _NEIGHBOUR_LINES, base + int(idx[a]), lines=n)
            self._timeless(block, int(ends[idx[b - 1]]))
        else:  # each its own time, or the nearest earlier line's (`_stamp_for`)
            told = []
            for c in range(a, b):
                own = plain.stamps[c]
                if own is not None:
                    self._saw(own)
                else:
                    own, _ = self._borrow(plain.stamps[plain.lender[c]], None, int(plain.back[c]), base + int(idx[c]))
                told.append(own)
            stamp = np.repeat(np.array(told + [None], dtype=object)[:-1], np.diff(plain.first_row[a:b + 1])).tolist()
        self._plain(plain, a, b, stamp, self._run_for(None, not alone, None, lines=n), base, idx, rows)
        return n

    def _records(self, seg: str) -> list[tuple[str, dict]]:
        """The log records of one line segment, each with the prefixes it starts with: records
        glued by a bar, by typed text or by a paste that lost its newlines are read apart. A
        timestamp (and tags) alone before a record, a viewer's or platform's prefix, stays with it."""
        parts = lp.RECORD_HEAD.split(seg) if len(seg) > 40 and lp.may_glue_records(seg) else [seg]
        if len(parts) > 1:
            stamp, end = find_stamp(parts[0].lstrip())
            if stamp is not None and not _strip_tags(parts[0].lstrip()[end:]).strip():
                parts[:2] = [parts[0] + parts[1]]
        self.glued += len(parts) - 1
        if len(parts) == 1:
            return [(seg, {})]
        if _CTRL_C_ECHO.match(parts[0]):
            # Ctrl-C's echo on a pasted terminal, then the record the key's effect printed
            # (DeepSpeed's `^C[...] Killing subprocess 22523`): no record of its own
            self.keyed, parts = True, parts[1:]
        return [strip_prefixes(part) for part in parts]

    def _stamp_for(self, text: str, block: bytes, ls: int, lineno: int) -> tuple[Stamp | bytes | None, str, str | None, bool]:
        """(the line's time, the text after it, the run tag of the line that gave the time,
        whether the time is the line's own).

        A line without its own timestamp borrows the nearest earlier stamped line's, and that
        line's tag."""
        stamp, end = find_stamp(text)
        if stamp is not None:
            self._saw(stamp)
            body = text[end:]
            return stamp, body, _run_tag(body), True
        near, tag = self._borrow(*self._look_back(block, ls), lineno)
        return near, text, tag, False

    def _saw(self, stamp: Stamp) -> None:
        """A line's own time: the file's first date, its calendar, the latest time."""
        if stamp.form == "iso" and self.first_date is None:
            self.first_date = stamp.text[:10]
        self.calendar.see(stamp)
        self.last_stamp = stamp

    def _borrow(self, near: Stamp | bytes | None, tag: str | None, back: int, lineno: int,
                lines: int = 1) -> tuple[Stamp | bytes | None, str | None]:
        """The time (and run tag) a line without its own takes, from what `_look_back` found (the
        same for `lines` such lines in a row)."""
        if self.said_at is not None and (near is None or self.said_at[0] > lineno - back):
            near, tag = self.said_at[1], None  # a nearer line said its time in the text (`CANCELLED AT ...`)
        if near is None:
            near, tag = self.last_stamp, None
        if near is not None:
            self.borrowed += lines
        if isinstance(near, Stamp):
            near = dataclasses.replace(near, borrowed=True)
        return near, tag

    def _look_back(self, block: bytes, ls: int) -> tuple[Stamp | bytes | None, str | None, int]:
        """The nearest of the _NEIGHBOUR_LINES lines before the one at `ls` that says its time:
        (its stamp, its run tag, how many lines back), or (None, None, how many lines were
        looked at + 1, at most _NEIGHBOUR_LINES)."""
        stamp, tag, back = self._nearest(block, ls - 1)
        if back > _NEIGHBOUR_LINES:
            return None, None, _NEIGHBOUR_LINES
        if stamp is not None:
            stamp = dataclasses.replace(stamp)  # this line's: a clock stamp takes the clock's reading now
            if stamp.form == "clock":
                stamp.reading = self.calendar.now()
        return stamp, tag, back

    def _nearest(self, block: bytes, end: int) -> tuple[Stamp | None, str | None, int]:
        """`_look_back`'s answer from the line that ends at `end`, without its bound (past it, one
        more than the bound), remembered for the block: in a log whose lines carry no time
        (nanoGPT's `iter N: loss ...`) each line would look back over the same 50 lines."""
        if self._stamps_of[0] is not block:
            self._stamps_of = block, {}
        known = self._stamps_of[1]
        path = []  # the lines looked at, nearest first, that say no time
        while True:
            found = known.get(end)
            if found is not None:
                break
            if end <= 0:
                found = None, None, 1
                break
            start = block.rfind(b"\n", 0, end) + 1
            prev, _ = unlabel(_clean(block[start:end]), self.label)
            stamp, at = find_stamp(prev)
            if stamp is not None:
                found = known[end] = stamp, _run_tag(prev[at:]), 1
                break
            path.append(end)
            end = start - 1
            if len(path) > _NEIGHBOUR_LINES:  # past the bound: only the first line's answer is known
                known[path[0]] = None, None, _NEIGHBOUR_LINES + 1
                return None, None, _NEIGHBOUR_LINES + 1
        stamp, tag, back = found
        for k, at_end in enumerate(reversed(path), start=1):
            known[at_end] = stamp, tag, min(back + k, _NEIGHBOUR_LINES + 1)
        return (stamp, tag, min(back + len(path), _NEIGHBOUR_LINES + 1)) if path else found

    def _timeless(self, block: bytes, end: int) -> None:
        """Note that no line says a time within `_look_back`'s reach of the line that ends at `end`
        (bulk_lines.BulkLines.alone): the lines after it look back no further."""
        if self._stamps_of[0] is not block:
            self._stamps_of = block, {}
        self._stamps_of[1][end] = None, None, _NEIGHBOUR_LINES + 1

    def _run_for(self, own_tag: str | None, own_stamp: bool, neighbour_tag: str | None, lines: int = 1) -> str | None:
        """The line's own [run] tag; else the run given for the file; else the nearest tagged
        line's (a borrowed timestamp's line, else the latest tagged line); else None, settled
        when the file ends (`settle_runs`). `lines`: of so many such lines in a row."""
        if own_stamp and own_tag is not None:
            self.last_run = own_tag
            self.first_run = self.first_run or own_tag
            return own_tag
        if self.default_run is not None:
            return self.default_run
        run = neighbour_tag or self.last_run
        if run is not None:
            self.run_from_neighbour += lines
        return run

    def _text(self, text: str, lineno: int, rows: Rows, rank, pid, block: bytes, ls: int, host) -> int | str:
        """One record: 1 when it gave a row, a skip reason when it is known to carry none."""
        counted = self.borrowed, self.run_from_neighbour
        got = self._record(text, lineno, rows, rank, pid, block, ls, host)
        if got != 1:  # the report's counts of borrowed times and runs are of rows: a line of none is out
            self.borrowed, self.run_from_neighbour = counted
        return got

    def _record(self, text: str, lineno: int, rows: Rows, rank, pid, block: bytes, ls: int, host) -> int | str:
        reported, self.reported_rank = self.reported_rank, None
        stamp, body, tag, own = self._stamp_for(text, block, ls, lineno)
        # a prefix that follows the time: `2025-02-18 12:54 [rank13]:[E218 ...`, horovodrun's
        # `Tue Apr 21 18:22:57 2020[1]<stdout>:`
        if own and ("[rank" in body[:12] or "]<std" in body[:32]):
            inner, pre = strip_prefixes(body.lstrip())
            if "rank" in pre:
                rank, text, tag = _int(pre["rank"]), inner, None
        run = self._run_for(tag if own else None, own, None if own else tag)
        where = dict(stamp=stamp, line=lineno, run=run, pid=pid, rank=rank, host=host)
        header = lp.THREAD_EXCEPTION.match(body.lstrip()) if _THREAD_EXCEPTION in text else None
        if header is not None or _TRACEBACK in text:
            at = text.find("Traceback") if header is None else 0
            if rank is None and reported is not None:
                where["rank"] = reported
            # `[time] tag || Traceback ...`: the following lines carry the same prefix, cut as wide
            cut = at if at and find_stamp(text[:at])[0] is not None else 0
            # (`^CTraceback`: the terminal's echo of Ctrl-C just before it, on a pasted terminal)
            self.block = TracebackBlock(text[at:].strip(), thread=header.group("thread") if header else None,
                                        cut=cut, keyed=self.keyed or text[:at].rstrip().endswith("^C"), **where)
            return 1
        frames = self._frames_before(block, ls) if stamp is None and lp.EXCEPTION_LINE.match(text) else []
        if frames:
            # the end of a traceback whose header the file does not hold (a paste, or a window that
            # begins inside one): its frames and its exception line are read as the traceback
            self.block = TracebackBlock(frames[0].strip(), thread=None, **dict(where, line=lineno - len(frames)))
            self.block.lines += [*frames[1:], text]
            self._close_block(rows)
            return 1
        dump = lp.FAULTHANDLER_HEAD.match(_strip_tags(body).strip()) if any(k in text for k in _FAULTHANDLER_KW) else None
        if dump is not None:
            self.block = FaulthandlerBlock(_strip_tags(body).strip(), dump, **where)
            return 1
        spy = lp.PYSPY_HEAD.match(_strip_tags(body).strip()) if text.lstrip().startswith("Process ") else None
        if spy is not None:
            self.block = PySpyBlock(_strip_tags(body).strip(), spy, **where)
            return 1
        table = lp.FAILURE_TABLE_HEADER.match(text) if ":" in text else None
        if table is not None:
            self.block = FailureTable(table.group("root") != "Failures", stamp=stamp, line=lineno, run=run)
            return 1
        if read_metrics(text, stamp, lineno, run, rank, rows, self.user, self.bars.step, self.headed,
                        self.epochs):
            # numbers that are also a fact: Hugging Face's closing summary is the run's averages
            # and the end of its training (whether it prints them as numbers or as strings)
            if _SUMMARY_KW in text:
                self._event(text, _strip_tags(body), where, rows, among=_SUMMARY_EVENTS)
            return 1
        return self._event(text, _strip_tags(body), where, rows)

    def _event(self, text: str, body: str, where: dict, rows: Rows, among=_EVENT_KW) -> int | str:
        present = _EVENT_KEYWORDS.present(text) if among is _EVENT_KW else None  # one search for all
        for i, (p, kws) in enumerate(among):
            if present is not None:
                if i not in present:
                    continue
            elif kws and not any(kw in text for kw in kws):
                continue
            em = p.regex.search(body if p.regex.pattern.startswith(("^", "(?i)^")) else text)
            if not em:
                continue
            cols = _event_columns(em)
            if p.name == "nccl_error_trace":
                key = (cols.get("host"), cols.get("pid"), em.group("tid"))
                if self._fold_nccl_trace(key, text.strip(), cols):
                    return 1
            ev = dict(where, kind=p.kind, message=text.strip()[:MAX_EVENT_CHARS], pattern=p.name, lines=1)
            ev.update(cols)
            if where["rank"] is not None:
                ev["rank"] = where["rank"]  # torchrun's prefix names the global rank
            if ev.get("exit_code") is not None and ev["exit_code"] < 0 and "signal" not in ev:
                ev["signal"] = lp.EVENT_GROUPS["signo"][1](str(ev["exit_code"]))  # -9: killed by SIGKILL
            ev["signal"] = ev.get("signal") or p.signal
            ev["by"], ev["what"] = p.by, p.what
            if (at := find_stamp(ev.pop("at", None) or "")[0]) is not None:
                # slurmstepd's `CANCELLED AT 2024-05-01T12:00:00`: the line's own time, and the
                # time of the lines after it (srun's word on each task)
                ev["stamp"] = self.last_stamp = at
                self.said_at = (where["line"], at)
                self.calendar.see(at)
            if p.kind == "oom":
                ev["holders"] = lp.oom_holders(text)
                ev["holder_mib"] = lp.oom_holder_mib(text)
                own = lp.OOM_THIS_PROCESS.search(text) or lp.OOM_RESERVED.search(text)
                ev["this_process_mib"] = lp.mib(own["size"]) if own else None
            _c10d_ranks(text, ev)
            if self.keyed:
                ev["keyed"] = True  # Ctrl-C was pressed just before it (`^C` glued before the line)
            tasks = lp.task_ranks(ev.pop("tasks")) if ev.get("tasks") and ev.get("rank") is None else []
            for rank in tasks[:-1]:  # srun's `tasks 0-1: Exited with exit code 1`: an end of each
                rows.event(**dict(ev, rank=rank))
            row = rows.event(**(dict(ev, rank=tasks[-1]) if tasks else ev))
            if p.name == _REPORTS_TRACEBACK:
                self.reported_rank = ev.get("rank")
            if p.kind == "nccl_error":
                self.nccl_errors[(cols.get("host"), cols.get("pid"), em.group("tid"))] = row
            return 1
        if lp.NCCL_INFO_KEYWORD in text:
            return lp.NCCL_INFO_SKIPPED
        return 0

    def _fold_nccl_trace(self, key: tuple, line: str, cols: dict) -> bool:
        """An NCCL `-> N` return-trace line joins the error its thread reported last."""
        ev = self.nccl_errors.get(key)
        if ev is None:
            return False
        ev["lines"] = ev.get("lines", 1) + 1
        if len(ev["message"]) < MAX_EVENT_CHARS:
            ev["message"] += "\n" + line
        ev.setdefault("nccl_code", cols.get("nccl_code"))
        return True

    # -- multi-line records --------------------------------------------------------------------
    def _follow(self, block: bytes, pos: int, lineno: int, rows: Rows, candidate) -> tuple[int, int]:
        """Feed the open record the lines from `pos`; returns (position after it, lines taken).
        An exception's message is not offered a line that holds a keyword (`candidate`): the
        line is read first, and goes on with the message only where it gives no row."""
        taken = 0
        while self.block is not None and pos < len(block):
            le = block.find(b"\n", pos)
            le = len(block) if le == -1 else le
            if isinstance(self.block, MessageTail):
                if candidate(lineno + taken):
                    break
                if not self._goes_on(self.block, block[pos:le], lineno + taken):
                    self.block = None
                    break
                taken += 1
                pos = le + 1
                continue
            text, _ = unlabel(_clean(block[pos:le]), self.label)
            answer = self.block.feed(text, lineno + taken)
            if answer == NOT_MINE:
                self._close_block(rows)
                break
            taken += 1
            pos = le + 1
            if answer == TAKE_LAST:
                self._close_block(rows)
        return pos, taken

    def _frames_before(self, block: bytes, ls: int) -> list[str]:
        """The indented lines just before the line that starts at `ls` (a traceback's frames,
        their code and carets), where one of them names a file (`File "train.py", line 3`); or
        the lines of Rich's box of one just before it, closed by `╰───╯` (blocks.py), where one
        of them names a frame."""
        frames: list[str] = []
        end = ls - 1  # the newline before the line
        boxed = None  # (whether the lines before it are a box's: known at the first of them)
        while end > 0 and len(frames) < MAX_TRACEBACK_LINES:
            start = block.rfind(b"\n", 0, end) + 1
            text, _ = unlabel(_clean(block[start:end]), self.label)
            stripped = text.lstrip()
            boxed = stripped.startswith("╰") if boxed is None else boxed
            if boxed:  # (up to the box's top or a line of no box; one closing rule, the first)
                ends = not stripped.startswith(("│", "╰")) or (bool(frames) and stripped.startswith("╰"))
            else:
                ends = text[:1] not in (" ", "\t") or not stripped
            if ends:
                break
            frames.append(text)
            end = start - 1
        if boxed:
            return frames[::-1] if any(boxed_frame(f) for f in frames) else []
        return frames[::-1] if any(f.lstrip().startswith('File "') for f in frames) else []

    def _goes_on(self, tail: MessageTail, line: bytes, lineno: int) -> bool:
        """Whether `line` goes on with the exception's message `tail` (it is then taken)."""
        text, pre = unlabel(_clean(line), self.label)
        return tail.feed(text, lineno, _int(pre.get("rank"))) != NOT_MINE

    def _close_block(self, rows: Rows, truncated: bool = False) -> None:
        record, self.block = self.block, None
        emitted = [rows.event(**ev) for ev in record.events(truncated)]
        if isinstance(record, TracebackBlock) and not record.awaiting:
            if not truncated:
                self.block = MessageTail(emitted[0], record.where.get("rank"))
            # What the exception line states (a CUDA OOM and its holders, a CUDA error, a wait
            # that timed out) is an event of its own, at the traceback's first line.
            last = record.lines[-1].strip()
            self._event(last, last, {k: record.where.get(k) for k in ("stamp", "line", "run", "pid", "rank", "host")}, rows,
                        among=_EXCEPTION_KW)

    def _finish_report(self) -> None:
        rep = self.rep
        rep.read = self.lineno
        rep.parsed = self.parsed
        rest = rep.read - rep.parsed - rep.n_skipped
        if rest > 0:
            rep.skip(None, NO_MATCH, rest)
        if self.bars.redraws:
            rep.notes.append(f"{self.bars.redraws} progress-bar redraws collapsed to each bar's last state")
        if self.glued:
            rep.notes.append(f"{self.glued} log records glued to the end of another line were read apart")
        if self.nul_bytes:
            rep.notes.append(f"{self.nul_bytes} NUL bytes removed (a file preallocated or cut by a crash?)")
        if self.bad_utf8_lines:
            rep.notes.append(f"{self.bad_utf8_lines} lines hold bytes that are not UTF-8 (read as U+FFFD)")
        if self.borrowed:
            rows = "1 row without its own timestamp" if self.borrowed == 1 else f"{self.borrowed} rows without their own timestamp"
            rep.assume(f"{rows} took the nearest earlier line's time")
        if self.run_from_neighbour:
            rep.assume(f"{count(self.run_from_neighbour, 'line')} without a [run] tag took the run of the nearest tagged line")


def _clean(raw: bytes) -> str:
    """A line's text: CR at the end, ANSI colour, a pager's `^M` for CR and HTML escapes of a
    page the log was copied from taken off."""
    text = raw.rstrip(b"\r").decode("utf-8", "replace")
    if "\x1b" in text:
        text = ESCAPES.sub("", text)
    if "^M" in text:
        text = text.replace("^M", "\r")
    if "&" in text or "<pre>" in text:
        text = _HTML.sub(lambda m: "" if m.group(0).startswith("<") else html.unescape(m.group(0)), text)
    return text


def _strip_tags(body: str) -> str:
    """The text after a timestamp without its leading tags; the tags are near the start, and
    the regex, run over a long line of digits, would backtrack quadratically."""
    return _LEADING_TAGS.sub("", body[:_TAGS_WITHIN]) + body[_TAGS_WITHIN:]


def _event_columns(m: re.Match) -> dict:
    """The columns an event regex's named groups give (patterns.EVENT_GROUPS)."""
    out = {}
    for group, value in m.groupdict().items():
        if value is None:
            continue
        column, convert = lp.EVENT_GROUPS.get(lp.OOM_OLD_GROUPS.get(group, group), (None, None))
        if column is None:
            continue
        try:
            out[column] = convert(value)
        except (TypeError, ValueError, OverflowError):
            continue
    return out


def _c10d_ranks(text: str, ev: dict) -> None:
    """c10d's `[PG x Rank N]` tag: the group and the rank in it; N is the global rank when the
    group is the default one and no `[rankN]:` prefix said otherwise."""
    if "Rank " not in text:
        return
    m = lp.C10D_TAG.search(text)
    if m is None:
        return
    ev["group_rank"] = int(m.group("group_rank"))
    pg = m.group("pg")
    if pg is not None:
        ev["pg"] = pg if not m.group("pg_name") else f"{pg} ({m.group('pg_name')})"
    if ev.get("rank") is None and (pg in (None, "0") or m.group("pg_name") == "default_pg"):
        ev["rank"] = ev["group_rank"]


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


_int = lp.integer


def _frame(cols: dict[str, list], rep: FileReport, ctx: LoadContext, scanner: LogScanner) -> pd.DataFrame:
    df = pd.DataFrame({k: v for k, v in cols.items() if k != "stamp"})
    df.insert(0, "time", resolve_times(cols["stamp"], rep, ctx, scanner.first_date, scanner.calendar))
    # rows whose time a line before them lent (a Trainer's undated dicts after its dated banner):
    # written then or later, up to the next line that says its time (model/states.py: no silence
    # can be measured from them)
    earliest = [True if getattr(s, "borrowed", False) else pd.NA for s in cols["stamp"]]
    if any(x is True for x in earliest):
        df["time_earliest"] = pd.array(earliest, dtype="boolean")
    df["source"] = rep.path
    df["ref"] = rep.path + ":" + df["line"].astype("str")
    if "host" in df.columns:  # a line that names its host (NCCL, a ChildFailedError table) keeps it
        df["host"] = df["host"].where(df["host"].notna(), ctx.host)
    else:
        df["host"] = ctx.host
    return df.drop(columns=["line"])


def default_run(path: Path, ctx: LoadContext, place: LogDirPlace | None = None) -> tuple[str, bool]:
    """The run name for lines that do not name one: the [[sources]] `run`, else (when no line
    names one either) the job attempt of a torchrun log folder, else the file stem."""
    if ctx.options.get("run"):
        return str(ctx.options["run"]), False
    return (place.run if place is not None else Path(path).stem), True


# What settle_runs says of a file's rows (reads_on reads a chunk's account for them).
_NO_TAG = "lines that name no run are given run"
_BEFORE_TAG = "rows before the first [run] tag are given the first tag that follows"


def settle_runs(cols: dict[str, list], scanner: LogScanner, stem: str, rep: FileReport,
                named_by: str = "the file's name") -> None:
    """Rows read before any tagged line take the first tag that follows; no tag at all: the stem."""
    if None not in cols["run"]:
        return
    run = scanner.first_run or stem
    cols["run"] = [r if r is not None else run for r in cols["run"]]
    if scanner.first_run is None:
        rep.assume(f"{_NO_TAG} {run!r} ({named_by})")
    else:
        rep.assume(f"{_BEFORE_TAG}, {run!r}")


def reads_on(before, before_report: FileReport, chunk, chunk_report: FileReport) -> bool:
    """Whether a chunk of a growing log, read on its own after the lines read before (`before`,
    and their account), gives its rows the runs, jobs, attempts and times a read of the whole file
    gives them. Not where it holds a progress bar's states (each dated from where the bar's run
    began, lines before it: clock/untimed.py), where its first rows name no run (the whole file
    gives them the run the lines before named), where the lines before named none and its rows do
    (the whole file names those lines after its first tag), or where a launcher's lines say whose
    job and attempt rows are (a torchrun agent's restarts, a Slurm job: the whole file's count and
    names). Such a log is read from its start again (loaders/following.py)."""
    said = chunk_report.assumptions
    if any(a.startswith(_BEFORE_TAG) for a in said):
        return False
    # a progress bar's rows are dated from where its run began (its first state, maybe lines
    # before the chunk: clock/untimed.py), which a chunk read alone does not see
    if (chunk.metrics["metric"] == BAR_ELAPSED_S).any():
        return False
    untagged_before = any(a.startswith(_NO_TAG) for a in before_report.assumptions)
    rows = len(chunk.metrics) + len(chunk.events)
    if rows and untagged_before != any(a.startswith(_NO_TAG) for a in said):
        return False
    # a worker's file in torchrun's --log-dir folder takes its job and attempt from its path
    if log_dir_place(Path(chunk_report.path)) is not None:
        return True
    return not any(col in df.columns and df[col].notna().any()
                   for inc in (before, chunk) for df in (inc.events, inc.metrics) for col in ("job", "attempt"))


# -- sniffing ---------------------------------------------------------------------------------
# The shell's own word that the process whose output this is died of a signal, alone on its line
# (`Killed`, `Terminated`, `./run.sh: line 10:   646 Killed   python3 train.py`)
_SHELL_REPORTS = tuple(p for p in lp.EVENT_PATTERNS if p.name in ("shell_killed", "shell_terminated", "script_status", "pid_status",
                                                                  "job_status",
                                                                  "shell_killed_zh", "shell_status", "shell_signal_report"))
# Lines only a training run's output holds: one of them makes a file a training log.
_STRONG = (lp.TRACEBACK_KEYWORD.decode(), "Watchdog caught", "nohup: ignoring input", "torch.distributed.elastic",
           "torch.distributed.run", "elastic_operator", "ProcessGroupNCCL", "NCCL INFO", "NCCL WARN", "NCCL version",
           "sigkill_handler", "ChildFailedError", "OutOfMemoryError", "CUDA out of memory", "death signal",
           "closing signal", "{'loss':", "{'eval_loss':", "{'train_runtime':", "ProcessGroupGloo",
           "connectFullMesh", "DistStoreError", "DistNetworkError", "RendezvousTimeoutError", "Starting worker group",
           "slurmstepd", "srun: error:", "srun: Job step aborted", "third_party/gloo", "Root Cause", "error_file:",
           "Fatal Python error", "CUDA error: ", "torch.multiprocessing.spawn", "terminated with the following error",
           "noticed that process rank", "Per user-direction, the job has been aborted",
           "exited with non-zero status, thus causing", "A worker died or was killed while executing a task",
           "store based barrier", "waiting for remainder of ranks", "Lock file exists in build directory",
           "The actor died unexpectedly", "worker process has died", "[c10d]", "DistBackendError", "ncclRemoteError",
           "OOM when allocating tensor", "KeyboardInterrupt", "THCudaCheck FAIL", "reserved in total by PyTorch",
           "killed due to memory pressure")


def sniff_log(path: Path, head: bytes) -> float:
    if not head:
        return 0.0
    text = head.replace(b"\x00", b"").decode("utf-8", "replace")  # a killed writer's NUL runs
    if not text or text.count("\ufffd") > len(text) // 10:
        return 0.0  # binary
    lines = [ln for ln in text.splitlines()[:400] if ln.strip()]
    if not lines:
        return 0.0
    if lines[0].startswith("# ") and any(ln.startswith("| ---") or ln.startswith("|---") for ln in lines):
        return 0.0  # markdown
    metric_lines = loss_lines = stamped = 0
    label = line_label(lines)
    for ln in lines:
        body, _ = unlabel(_clean(ln.encode("utf-8", "replace")), label)
        if find_stamp(body)[0] is not None:
            stamped += 1
        if _sniff_metric(body):
            metric_lines += 1
        elif (any(k in body for k in GENERIC_KW) and _generic_loss(body)) or (
                any(k in body for k in lp.UNIT_KEYWORDS) and lp.UNIT_VALUE.search(body)):
            loss_lines += 1
    if metric_lines:
        return 0.6
    if any(s in text for s in _STRONG) or _closed_box(lines) or (any(lp.PYSPY_HEAD.match(ln.strip()) for ln in lines)
                                                                 and any(lp.PYSPY_THREAD.match(ln.strip()) for ln in lines)):
        return 0.55  # (and py-spy's dump of a process's stacks, Rich's box of a traceback)
    if loss_lines >= min(3, len(lines)):  # a trainer's own print-out: `step N ... loss X`, `1.2k tok/s`
        return 0.45
    if any(p.regex.match(unlabel(_clean(ln.encode("utf-8", "replace")), label)[0].strip())
           for p in _SHELL_REPORTS for ln in lines[-50:]):
        # a program's output that ends in the shell's word on its death (`Killed`): below a session's
        # reports read as one (shell_transcript), above console text
        return 0.4
    if stamped / len(lines) >= 0.5:
        return 0.3
    return 0.0


def _closed_box(lines: list[str]) -> bool:
    """Whether the (non-blank) lines hold the end of Rich's box of a traceback whose top they may
    lack: its frames' lines, its closing rule, the exception under it (blocks.py)."""
    return any(ln.lstrip().startswith("╰") and lp.EXCEPTION_LINE.match(nxt.strip())
               and any(boxed_frame(x) for x in lines[max(0, i - 40):i])
               for i, (ln, nxt) in enumerate(zip(lines, lines[1:], strict=False)))


def _generic_loss(body: str) -> bool:
    f = lp.GENERIC_LOSS
    if f.steps[0].search(body) is None:
        return False
    return any(len(part) <= MAX_FIELD_CHARS and (m := lp.FIELD.search(part)) and m.group("key").lower() in f.fields
               for part in f.separator.split(body))


def _sniff_metric(body: str) -> bool:
    for p in lp.METRIC_PATTERNS:
        if p.keyword.decode() in body and p.regex.search(body):
            return True
    for f, kw in FIELD_KW:
        if kw in body and any(rx.search(body) for rx in f.steps):
            return True
    if HF_DICT_KW in body and any(f"'{k}':" in body for k in lp.HF_DICT_KEYS) and lp.HF_DICT.search(body):
        return True  # a Trainer log dict, not any dict (a config, wandb's settings)
    if known_block_field(body):
        return True  # a metric block's loss or throughput (OLMo, Composer)
    if lp.KERAS_KEYWORD in body and (k := lp.KERAS_LINE.search(body)) is not None and any(
            (f := lp.KERAS_FIELD.match(part)) and f.group("key") in lp.KERAS_FIELDS for part in k.group("fields").split(" - ")):
        return True
    return any(k in body for k in _BAR_KW) and lp.BAR.search(body) is not None


TRAINING_LOG_FORMAT = "training-log"


# -- loading ----------------------------------------------------------------------------------
@registry.format(
    TRAINING_LOG_FORMAT, sniff=sniff_log,
    doc="a trainer's stdout/stderr: throughput/loss lines, stages, warnings, tracebacks, NCCL and torchrun errors",
)
def load_log(path: Path, ctx: LoadContext):
    """Format loader: one training log -> Incident with metrics and events."""
    path = Path(path)
    rep = ctx.report(path, TRAINING_LOG_FORMAT)
    original = ctx.aliases.get(path, path)
    place = log_dir_place(original)  # a worker's file in torchrun's --log-dir folder
    run, from_name = default_run(path, ctx, place)
    patterns = lp.user_patterns(ctx.config.patterns, str(ctx.config.path or "incident.toml")) if ctx.config else ()
    scanner = LogScanner(path, rep, patterns=patterns, default_run=None if from_name else run)
    rows = Rows()
    for part in scanner.scan():
        rows.extend(part)
    metric_cols = rows.metrics
    segments = attempts.annotate(rows.event_rows, metric_cols["line"], place, job_of_output_name(original.name))
    event_cols = rows.events
    attempts.assign(metric_cols, segments, place)
    named_by = "its torchrun log folder: run id and attempt" if place is not None else "the file's name"
    settle_runs(metric_cols, scanner, run, rep, named_by)
    settle_runs(event_cols, scanner, run, rep, named_by)
    if place is not None:
        rep.assume(f"job {place.job!r}, attempt {place.attempt} and rank {place.local_rank} from the file's "
                   "torchrun log folder (<run id>/attempt_<n>/<local rank>/)")
    metrics = _frame(metric_cols, rep, ctx, scanner)
    events = _frame(event_cols, rep, ctx, scanner)
    metrics = metrics.drop(columns=["ref", "host"]).assign(ref=metrics["ref"])
    events = events.astype({c: "Int64" for c in lp.EVENT_INT_COLUMNS if c in events.columns})
    metrics = metrics.astype({"step": "Int64", "rank": "Int64", "attempt": "Int64"})
    return from_frames(rep, metrics=metrics, events=events)


def load_process_log(path, *, timezone: str = "UTC", host: str | None = None, run: str | None = None,
                     date=None, patterns: list[dict] | None = None, on_bad_line: str = "warn"):
    """Read a training log (stdout/stderr of a trainer) into metrics and events.

    `run` names lines that carry no run tag (default: the file's stem); `date` completes
    time-of-day or month-day timestamps; `patterns` adds throughput patterns in the
    incident.toml `[[patterns]]` form.
    """
    cfg = IncidentConfig(patterns=list(patterns or []))
    if isinstance(date, str):
        date = dt.date.fromisoformat(date)
    ctx = LoadContext(timezone=timezone, host=host, on_bad_line=on_bad_line, config=cfg, date=date)
    if run:
        ctx.options = {"run": run}
    path = Path(path)
    enc = encoding.plan(path, read_head(path))
    if enc.codec == "utf-8" and not enc.bom and not enc.cut_long_lines:
        return load_log(path, ctx)  # NUL runs are removed and counted by the scanner itself
    # UTF-16 from PowerShell, a BOM, a line too long to hold: read a UTF-8 copy, as load_incident
    # does, named as the original
    with tempfile.TemporaryDirectory(prefix="dflash-transcoded-") as scratch:
        copy = encoding.transcode(path, Path(scratch) / path.name, enc)
        ctx.aliases = {copy.path: path}
        inc = load_log(copy.path, ctx)
    encoding.annotate(inc.load_report.files[0], enc, copy)
    return inc
