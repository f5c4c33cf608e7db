"""Training stdout/stderr logs -> `metrics` (throughput, loss, step) and `events` (stages,
warnings, tracebacks, NCCL timeouts, elastic restarts, exits).

One streaming pass over binary blocks: memory holds one block and the rows found, never the
file. Candidate lines are found with one RE2 alternation of the patterns' keywords over the
block's lines (pyarrow); the DFlash trainer line, the common case, is read by one bytes regex
with its timestamp kept as bytes for a vectorised conversion per batch; other candidates are
decoded and matched (see log_patterns for the table and the event vocabulary). Lines that
carry neither a metric nor an event are counted as skipped with that reason, so
parsed + skipped == read holds for every file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .. import align
from ..incident import from_frames
from ..load_report import FileReport
from . import log_patterns as lp
from .registry import Format, LoadContext, register

BLOCK_BYTES = 4 << 20  # per-block costs (arrow, numpy, pandas) amortised; memory stays flat
MAX_LINE_BYTES = 1 << 20  # longer lines are counted and skipped, not held in memory
MAX_EVENT_CHARS = 4000
MAX_TRACEBACK_LINES = 400
_NEIGHBOUR_LINES = 50  # how far back a line without a timestamp looks for one
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
NO_MATCH = "log text without a metric or event"
# What loggers put between the timestamp and the message: [run], [INFO], " - root - INFO - ".
_LEADING_TAGS = re.compile(r"^(?:[\s\-:|,\d\]]*(?:\[[\w.@ -]*\]|(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b:?|[\w.]+ - ))*[\s\-:|]*")


@dataclass
class Rows:
    """Rows found in one block; times still as found until `resolve_times`. Metrics are kept as
    columns (the hot path extends them; transposing ~1 M row tuples cost more than the parse),
    events, which are few, as one tuple per row."""

    metric_cols: tuple[list, ...] = field(default_factory=lambda: tuple([] for _ in _METRIC_COLS))
    event_rows: list[tuple] = field(default_factory=list)

    def metric(self, stamp, line, run, step, metric, value, rank, pattern):
        for col, v in zip(self.metric_cols, (stamp, line, run, step, metric, value, rank, pattern), strict=True):
            col.append(v)

    def event(self, **kw):
        self.event_rows.append(tuple(kw.get(k) for k in _EVENT_COLS))

    @property
    def metrics(self) -> dict[str, list]:
        return dict(zip(_METRIC_COLS, self.metric_cols, strict=True))

    @property
    def events(self) -> dict[str, list]:
        return _columns(self.event_rows, _EVENT_COLS)


def _columns(rows: list[tuple], names: tuple[str, ...]) -> dict[str, list]:
    cols = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    return {k: list(v) for k, v in zip(names, cols, strict=True)}


# Keywords as text, decoded once: the hot path tests them on every candidate line.
_METRIC_KW = tuple((p, p.keyword.decode()) for p in lp.METRIC_PATTERNS)
# (pattern, its keywords or () when the keyword is case-insensitive: then only the regex decides)
_EVENT_KW = tuple((p, () if p.case_insensitive_keyword else p.keywords) for p in lp.EVENT_PATTERNS)
_TRACEBACK = lp.TRACEBACK_KEYWORD.decode()
_THREAD_EXCEPTION = lp.THREAD_EXCEPTION_KEYWORD.decode()

_METRIC_COLS = ("stamp", "line", "run", "step", "metric", "value", "rank", "pattern")
_EVENT_COLS = ("stamp", "line", "run", "pid", "kind", "message", "rank", "pattern", "exit_code", "signal", "lines",
               "thread")

# The DFlash trainer line, read whole by one regex: `YYYY-mm-dd HH:MM:SS [run] step N loss X
# tok/s Y [queue Q]`. Anything else (nan, commas, a level tag, trailing text) takes the general path.
_FLOAT = rb"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_DFLASH_LINE = re.compile(
    rb"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \[([\w.@-]+)\] step (\d+) loss (" + _FLOAT + rb") tok/s ("
    + _FLOAT + rb")(?: queue (\d+))?\r?"
)
_DFLASH_KEYS = tuple(lp.METRIC_PATTERNS[0].metrics.values())  # tok/s, loss, queue: the general path's order
_NONES, _DFLASH_PATTERN = (None,) * 3, ("dflash",) * 3
assert lp.METRIC_PATTERNS[0].name == "dflash" and list(lp.METRIC_PATTERNS[0].metrics) == ["tok", "loss", "queue"]


@dataclass
class _Stamp:
    """A timestamp as found: its form and normalised text. The DFlash fast path keeps its
    `YYYY-mm-dd HH:MM:SS` as the 19 bytes of the line instead (naive ISO, converted in bulk)."""

    form: str
    text: str
    aware: bool = False


def _blocks(f, size: int) -> Iterator[tuple[str, bytes | int]]:
    """("lines", bytes ending at a newline or EOF) or ("overlong", n_bytes) in file order."""
    carry = b""
    dropping = 0  # bytes of an overlong line being discarded
    while True:
        chunk = f.read(size)
        if not chunk:
            if dropping:
                yield "overlong", dropping
            elif carry:
                yield "lines", carry
            return
        if dropping:
            cut = chunk.find(b"\n")
            if cut == -1:
                dropping += len(chunk)
                continue
            yield "overlong", dropping + cut
            dropping, chunk = 0, chunk[cut + 1:]
        buf = carry + chunk if carry else chunk
        cut = buf.rfind(b"\n")
        if cut == -1:
            if len(buf) > MAX_LINE_BYTES:
                dropping, carry = len(buf), b""
            else:
                carry = buf
            continue
        yield "lines", buf[: cut + 1]
        carry = buf[cut + 1:]


def strip_prefixes(text: str) -> tuple[str, dict]:
    """Remove launcher and viewer prefixes ([rank3]:, [80746], stderr:, ray actor tags)."""
    found: dict = {}
    if not (text[:1] == "[" or text.startswith(("stderr: ", "stdout: ")) or " pid=" in text[:48]):
        return text, found
    changed = True
    while changed:
        changed = False
        for _, rx in lp.PREFIXES:
            m = rx.match(text)
            if m:
                found.update({k: v for k, v in m.groupdict().items() if v is not None})
                text = text[m.end():]
                changed = True
    return text, found


def find_stamp(text: str) -> tuple[_Stamp | None, int]:
    """The timestamp near the start of a line, and where the text after it begins."""
    head = text[:64]
    for form, rx in lp.TIMESTAMPS:
        m = rx.search(head) if form == "iso" else rx.match(head)
        if not m:
            continue
        g = m.groupdict()
        frac = (g.get("frac") or "0")[:6].ljust(6, "0")
        if form == "iso":
            zone = (g.get("zone") or "").strip()
            date = g["date"].replace("/", "-")
            iso = f"{date}T{g['time']}.{frac}"
            if zone == "Z" or zone == "UTC":
                return _Stamp("iso", iso + "+00:00", aware=True), m.end()
            if zone:
                z = zone if ":" in zone else zone[:3] + ":" + zone[3:]
                return _Stamp("iso", iso + z, aware=True), m.end()
            return _Stamp("iso", iso), m.end()
        if form == "glog":
            return _Stamp("monthday", f"{int(g['month']):02d}-{g['day']}T{g['time']}.{frac}"), m.end()
        if form == "syslog":
            return _Stamp("monthday", f"{lp.MONTHS[g['mon']]:02d}-{int(g['day']):02d}T{g['time']}.000000"), m.end()
        return _Stamp("clock", f"{g['time']}.{frac}"), m.end()
    return None, 0


def _run_tag(body: str) -> str | None:
    """`[name]` right after a timestamp names the run, unless it is a level (`[INFO]`)."""
    m = lp.RUN_TAG.match(body)
    return m.group("run") if m and m.group("run") not in lp.LEVELS else None


def candidate_regex(user=()) -> str:
    """One RE2 alternation of every pattern's keywords: a line without any of them has no row."""
    parts = [p.keyword for p in lp.METRIC_PATTERNS]
    parts += [lp.HF_DICT_KEYWORD, lp.TRACEBACK_KEYWORD, lp.THREAD_EXCEPTION_KEYWORD, *lp.BAR_KEYWORDS]
    parts += [p.keyword for p in user if p.keyword]
    alts = [_re2_literal(k.decode()) for k in dict.fromkeys(parts)]
    for p in lp.EVENT_PATTERNS:
        alts += [f"(?i:{_re2_literal(k)})" if p.case_insensitive_keyword else _re2_literal(k) for k in p.keywords]
    return "|".join(dict.fromkeys(alts))


def _re2_literal(text: str) -> str:
    # RE2 rejects some of Python's escapes (`\ `); hex escapes mean the same to both.
    return "".join(c if c.isalnum() and c.isascii() else f"\\x{{{ord(c):x}}}" for c in text)


class LogScanner:
    """The single streaming pass over one log file. Iterate `scan()` for row batches."""

    def __init__(self, path: Path, rep: FileReport, *, patterns=(), default_run: str | None = None,
                 block_bytes: int = BLOCK_BYTES):
        self.path = Path(path)
        self.rep = rep
        self.user = tuple(patterns)
        self.default_run = default_run
        self.block_bytes = block_bytes
        self.prefilter = candidate_regex(self.user)
        # A user regex with no safe literal is tried on every line: correct, and slow.
        self.every_line = any(p.keyword is None for p in self.user)
        self.lineno = 0  # lines read so far
        self.parsed = 0
        self.last_stamp: _Stamp | bytes | None = None
        self.borrowed = 0
        self.last_run: str | None = None  # the run tag of the latest tagged line
        self.first_run: str | None = None
        self.run_from_neighbour = 0
        self._run_names: dict[bytes, str] = {}
        self.traceback: dict | None = None
        self.bars: dict[tuple, dict] = {}
        self.redraws = 0
        self.nul_bytes = 0
        self.bad_utf8_lines = 0
        self.first_date: str | None = None

    # -- the pass -----------------------------------------------------------------------------
    def scan(self) -> Iterator[Rows]:
        with open(self.path, "rb") as f:
            for what, item in _blocks(f, self.block_bytes):
                rows = Rows()
                if what == "overlong":
                    self.lineno += 1
                    self.rep.skip(self.lineno, f"line longer than {MAX_LINE_BYTES // (1 << 20)} MiB, not read")
                    self.rep.notes.append(f"line {self.lineno}: {item} bytes without a newline, skipped")
                else:
                    self._block(item, rows)
                yield rows
        if self.traceback is not None:
            self._close_traceback(rows := Rows(), truncated=True)
            yield rows
        rows = Rows()
        for bar in self.bars.values():
            rows.event(**bar)
            # the bar's last-state line was counted when first seen; the event is extra, not a line
        yield rows
        self._finish_report()

    def _block(self, block: bytes, rows: Rows) -> None:
        if b"\x00" in block:
            n = block.count(b"\x00")
            self.nul_bytes += n
            block = block.replace(b"\x00", b"")
        if not block.isascii():
            try:
                block.decode("utf-8")
            except UnicodeDecodeError:
                self.bad_utf8_lines += sum(1 for ln in block.split(b"\n") if not _utf8(ln))
        ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
        if not block.endswith(b"\n") and block:
            ends = np.append(ends, len(block))
        n_lines = len(ends)
        starts = np.empty(n_lines, np.int64)
        starts[:1] = 0
        starts[1:] = ends[:-1] + 1
        handled = 0
        consumed_to = 0
        if self.traceback is not None:  # a traceback left open by the previous block
            consumed_to, handled = self._follow_traceback(block, 0, rows)
        idx = self._candidates(block, starts, ends)
        base = self.lineno + 1
        fast = _DFLASH_LINE.fullmatch
        c_stamp, c_line, c_run, c_step, c_metric, c_value, c_rank, c_pattern = rows.metric_cols
        runs = self._run_names
        last = None  # (stamp, run) of the latest fast line, written back before the general path
        n_fast = 0
        for i, ls, le in zip(idx.tolist(), starts[idx].tolist(), ends[idx].tolist(), strict=True):
            if ls < consumed_to:
                continue
            m = fast(block, ls, le)
            if m is not None:
                stamp, tag, step, loss, tok, queue = m.groups()
                run = runs.get(tag) or self._tag_run(tag)
                if run is not None:  # None: a level tag ([INFO]), not a run: the general path decides
                    if queue is None:
                        k, keys, values = 2, _DFLASH_KEYS[:2], (float(tok), float(loss))
                    else:
                        k, keys, values = 3, _DFLASH_KEYS, (float(tok), float(loss), float(queue))
                    c_stamp.extend((stamp,) * k)
                    c_line.extend((base + i,) * k)
                    c_run.extend((run,) * k)
                    c_step.extend((int(step),) * k)
                    c_metric.extend(keys)
                    c_value.extend(values)
                    c_rank.extend(_NONES[:k])
                    c_pattern.extend(_DFLASH_PATTERN[:k])
                    last = stamp, run
                    n_fast += 1
                    continue
            if last is not None:
                self._after_fast(*last)
                last = None
            if self._line(block, ls, le, base + i, rows):
                handled += 1
                if self.traceback is not None:  # its header: the following lines belong to it
                    consumed_to, taken = self._follow_traceback(block, le + 1, rows)
                    handled += taken
        if last is not None:
            self._after_fast(*last)
        handled += n_fast
        self.lineno += n_lines
        # Lines that matched nothing are counted in bulk in _finish_report: no per-line work.
        self.parsed += handled

    def _after_fast(self, stamp: bytes, run: str) -> None:
        self.last_stamp, self.last_run = stamp, run
        if self.first_date is None:
            self.first_date = stamp[:10].decode()

    def _tag_run(self, tag: bytes) -> str | None:
        run = tag.decode()
        if run in lp.LEVELS:
            return None
        self._run_names[tag] = run
        self.first_run = self.first_run or run
        return run

    def _candidates(self, block: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Indices of the lines that hold a keyword (all lines when a user pattern has none)."""
        if self.every_line or not len(ends):
            return np.arange(len(ends))
        offsets = np.empty(len(ends) + 1, np.int32)
        offsets[0] = 0
        offsets[1:] = ends
        lines = pa.BinaryArray.from_buffers(pa.binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(block)])
        hit = pc.match_substring_regex(lines, self.prefilter)
        return np.flatnonzero(hit.to_numpy(zero_copy_only=False))

    # -- one line ------------------------------------------------------------------------------
    def _line(self, block: bytes, ls: int, le: int, lineno: int, rows: Rows) -> int:
        """Classify one candidate line; returns 1 when it gave a row (it is then 'parsed')."""
        raw = block[ls:le].rstrip(b"\r")
        text = raw.decode("utf-8", "replace")
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        text, pre = strip_prefixes(text)
        rank = _int(pre.get("rank"))
        pid = _int(pre.get("pid"))
        # \r-separated redraws: each segment is a state; bars are collected, the rest is text
        segments = [s for s in text.split("\r") if s.strip()] if "\r" in text else [text]
        residual = []
        got = 0
        for seg in segments:
            bars = list(lp.BAR.finditer(seg)) if ("it/s" in seg or "s/it" in seg) else []
            if bars:
                got += self._bars(bars, lineno, rows, rank)
                rest = seg[bars[-1].end():] + " ".join(seg[a.end():b.start()] for a, b in zip(bars, bars[1:], strict=False))
                if rest.strip():
                    residual.append(rest.strip())
            else:
                residual.append(seg)
        if len(segments) > 1:
            self.redraws += len(segments) - 1
        for seg in residual:
            got |= self._text(seg, lineno, rows, rank, pid, block, ls)
        return 1 if got else 0

    def _stamp_for(self, text: str, block: bytes, ls: int) -> tuple[_Stamp | bytes | None, str, str | None, bool]:
        """(the line's time, the text after it, the run tag of the line that gave the time,
        whether the time is the line's own).

        A line without its own timestamp borrows the nearest earlier stamped line's, and that
        line's tag."""
        stamp, end = find_stamp(text)
        if stamp is not None:
            if stamp.form == "iso" and self.first_date is None:
                self.first_date = stamp.text[:10]
            self.last_stamp = stamp
            body = text[end:]
            return stamp, body, _run_tag(body), True
        near, tag = self._look_back(block, ls)
        if near is None:
            near, tag = self.last_stamp, None
        if near is not None:
            self.borrowed += 1
        return near, text, tag, False

    def _look_back(self, block: bytes, ls: int) -> tuple[_Stamp | None, str | None]:
        end = ls - 1
        for _ in range(_NEIGHBOUR_LINES):
            if end <= 0:
                return None, None
            start = block.rfind(b"\n", 0, end) + 1
            prev, _ = strip_prefixes(block[start:end].decode("utf-8", "replace"))
            stamp, at = find_stamp(prev)
            if stamp is not None:
                return stamp, _run_tag(prev[at:])
            end = start - 1
        return None, None

    def _run_for(self, own_tag: str | None, own_stamp: bool, neighbour_tag: str | None) -> str | None:
        """The line's own [run] tag; else the run given for the file; else the nearest tagged
        line's (a borrowed timestamp's line, else the latest tagged line); else None, settled
        when the file ends (`settle_runs`)."""
        if own_stamp and own_tag is not None:
            self.last_run = own_tag
            self.first_run = self.first_run or own_tag
            return own_tag
        if self.default_run is not None:
            return self.default_run
        run = neighbour_tag or self.last_run
        if run is not None:
            self.run_from_neighbour += 1
        return run

    def _text(self, text: str, lineno: int, rows: Rows, rank, pid, block: bytes, ls: int) -> int:
        stamp, body, tag, own = self._stamp_for(text, block, ls)
        run = self._run_for(tag if own else None, own, None if own else tag)
        header = lp.THREAD_EXCEPTION.match(body.lstrip()) if _THREAD_EXCEPTION in text else None
        if header is not None or _TRACEBACK in text:
            self.traceback = dict(stamp=stamp, line=lineno, run=run, pid=pid, rank=rank, lines=[text.strip()],
                                  thread=header.group("thread") if header else None, heads=1,
                                  awaiting=header is not None)
            return 1
        found = self._metrics(text, stamp, lineno, run, rank, rows)
        if found:
            return 1
        body = _LEADING_TAGS.sub("", body)
        for p, kws in _EVENT_KW:
            if kws and not any(kw in text for kw in kws):
                continue
            target = body if p.regex.pattern.startswith(("^", "(?i)^")) else text
            em = p.regex.search(target)
            if not em:
                continue
            g = em.groupdict()
            rows.event(
                stamp=stamp, line=lineno, run=run, pid=_int(g.get("pid")) or pid, kind=p.kind,
                message=text.strip()[:MAX_EVENT_CHARS], rank=_int(g.get("rank")) if g.get("rank") else rank,
                pattern=p.name, exit_code=_int(g.get("code")),
                signal=g.get("signal") or ("SIGKILL" if p.name == "killed" else "SIGTERM" if p.name == "terminated" else None),
                lines=1,
            )
            return 1
        return 0

    def _metrics(self, text: str, stamp, lineno: int, run, rank, rows: Rows) -> int:
        for p, kw in _METRIC_KW:
            if kw not in text:
                continue
            m = p.regex.search(text)
            if not m:
                continue
            g = m.groupdict()
            step = _int(g.get("step"))
            n = 0
            for group, key in p.metrics.items():
                if g.get(group) is None:
                    continue
                v = lp.number(g[group])
                if p.sentinel.get(group) == v:
                    v = float("nan")
                rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric=key, value=v, rank=rank, pattern=p.name)
                n += 1
            return n
        if lp.HF_DICT_KEYWORD.decode() in text:
            m = lp.HF_DICT.search(text)
            if m:
                try:
                    d = ast.literal_eval(m.group(0))
                except (ValueError, SyntaxError):
                    d = {}
                if not isinstance(d, dict) or not lp.HF_DICT_KEYS & set(d):
                    d = {}
                nums = {k: v for k, v in d.items() if isinstance(v, int | float) and not isinstance(v, bool)}
                step = _int(d.get("step")) if "step" in d else None
                for k, v in nums.items():
                    key = k if "/" in k else f"train/{k}"
                    rows.metric(stamp=stamp, line=lineno, run=run, step=step, metric=key, value=float(v), rank=rank, pattern="hf_trainer")
                if nums:
                    return len(nums)
        for p in self.user:
            if p.keyword is not None and p.keyword.decode() not in text:
                continue
            m = p.regex.search(text)
            if m:
                g = m.groupdict()
                rows.metric(stamp=stamp, line=lineno, run=g.get("run") or run, step=_int(g.get("step")),
                            metric=p.metric, value=lp.number(g["value"]), rank=rank, pattern=p.name)
                return 1
        return 0

    def _bars(self, bars, lineno: int, rows: Rows, rank) -> int:
        run = self._run_for(None, False, None)
        for m in bars:
            g = m.groupdict()
            desc = g["desc"].strip().rstrip(":").strip()
            key = (desc, g["total"], rank)
            prev = self.bars.get(key)
            n = int(g["n"])
            state = dict(stamp=self.last_stamp, line=lineno, run=run, kind="progress",
                         message=f"{desc + ': ' if desc else ''}{m.group(0)[len(g['desc']):].strip()}",
                         rank=rank, pattern="tqdm", lines=1)
            new_step = prev is None or prev["_n"] != n
            state["_n"] = n
            self.bars[key] = state
            if prev is not None:
                self.redraws += 1
            if not new_step or lp.NOT_TRAINING_BAR.search(desc) or g["rate"] == "?":
                continue
            rate = float(g["rate"])
            per_s = rate if g["unit"].endswith("/s") else (1.0 / rate if rate else float("nan"))
            rows.metric(stamp=self.last_stamp, line=lineno, run=run, step=n, metric="train/it_per_s",
                        value=per_s, rank=rank, pattern="tqdm")
            for kv in g["postfix"].split(","):
                k, _, v = kv.strip().partition("=")
                if k in lp.BAR_POSTFIX and v:
                    rows.metric(stamp=self.last_stamp, line=lineno, run=run, step=n,
                                metric=lp.BAR_POSTFIX[k], value=lp.number(v), rank=rank, pattern="tqdm")
        return 1

    # -- tracebacks ----------------------------------------------------------------------------
    def _follow_traceback(self, block: bytes, pos: int, rows: Rows) -> tuple[int, int]:
        """Take the traceback's lines from `pos`; returns (position after it, lines taken)."""
        taken = 0
        while self.traceback is not None and pos < len(block):
            le = block.find(b"\n", pos)
            le = len(block) if le == -1 else le
            text, _ = strip_prefixes(_ANSI.sub("", block[pos:le].rstrip(b"\r").decode("utf-8", "replace")))
            tb = self.traceback
            if tb["awaiting"]:  # `Exception in thread X:` was read: its traceback comes next
                if _TRACEBACK not in text:
                    self._close_traceback(rows)  # a header alone; this line is not part of it
                    break
                tb["lines"].append(text.strip())
                tb["awaiting"] = False
                tb["heads"] += 1
            elif text[:1] in (" ", "\t") or (not text.strip() and len(tb["lines"]) == tb["heads"]):
                tb["lines"].append(text)
            else:
                tb["lines"].append(text)
                self._close_traceback(rows)
            taken += 1
            pos = le + 1
        return pos, taken

    def _close_traceback(self, rows: Rows, truncated: bool = False) -> None:
        tb, self.traceback = self.traceback, None
        lines = tb["lines"]
        text = "\n".join(lines[:MAX_TRACEBACK_LINES])
        if truncated:
            text += "\n[traceback cut off: the file ends here]"
        last = lines[-1].strip()
        exc = re.match(r"([\w.]+(?:Error|Exception|Interrupt|Exit|Failure|Failed\w*))\b", last)
        kind, pattern = "traceback", exc.group(1).rsplit(".", 1)[-1] if exc else "traceback"
        if tb["awaiting"]:
            kind, pattern = "error", "thread_exception"
        rows.event(stamp=tb["stamp"], line=tb["line"], run=tb["run"], pid=tb["pid"], kind=kind,
                   message=text[: MAX_EVENT_CHARS * 4], rank=tb["rank"], pattern=pattern, lines=len(lines),
                   thread=tb["thread"])

    def _finish_report(self) -> None:
        rep = self.rep
        rep.read = self.lineno
        rep.parsed = self.parsed
        rest = rep.read - rep.parsed - rep.n_skipped
        if rest > 0:
            rep.skip(None, NO_MATCH, rest)
        if self.redraws:
            rep.notes.append(f"{self.redraws} progress-bar redraws collapsed to each bar's last state")
        if self.nul_bytes:
            rep.notes.append(f"{self.nul_bytes} NUL bytes removed (a file preallocated or cut by a crash?)")
        if self.bad_utf8_lines:
            rep.notes.append(f"{self.bad_utf8_lines} lines hold bytes that are not UTF-8 (read as U+FFFD)")
        if self.borrowed:
            rep.assume(f"{self.borrowed} rows without their own timestamp took the nearest earlier line's time")
        if self.run_from_neighbour:
            rep.assume(f"{self.run_from_neighbour} lines without a [run] tag took the run of the nearest tagged line")


def _utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _int(v) -> int | None:
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def resolve_times(stamps: list, rep: FileReport, ctx: LoadContext, first_date: str | None) -> pd.Series:
    """Turn found timestamps into UTC times; borrowed and partial (no year/date) ones say so."""
    # UTC instants as naive datetime64[us], filled per form: a tz-aware Series' to_numpy() would
    # give one Timestamp object per row.
    out = np.full(len(stamps), np.datetime64("NaT"), dtype="datetime64[us]")
    if not stamps:
        return align.localize(pd.Series(out), "UTC")
    by_form: dict[tuple, list[int]] = {}
    fast: list[int] | slice = []
    missing = 0
    if set(map(type, stamps)) == {bytes}:  # all from the DFlash fast path: one vectorised parse
        fast = slice(None)
    else:
        for i, s in enumerate(stamps):
            if type(s) is bytes:
                fast.append(i)
            elif s is None:
                missing += 1
            else:
                by_form.setdefault((s.form, s.aware), []).append(i)
    if missing:
        rep.assume(f"{missing} rows have no time: no timestamp on or before their line")
    if fast:
        found = stamps if isinstance(fast, slice) else [stamps[i] for i in fast]
        out[fast] = _utc_naive(align.localize(_naive_seconds(found), ctx.timezone))
        rep.assume(align.zone_assumption(ctx.timezone))
    date = ctx.date.isoformat() if ctx.date else first_date
    for (form, aware), idx in by_form.items():
        texts = [stamps[i].text for i in idx]
        if form == "monthday":
            if date is None:
                rep.assume("timestamps carry month and day but no year, and nothing gives the year: rows have no time")
                continue
            texts = [f"{date[:4]}-{t}" for t in texts]
            rep.assume(f"year {date[:4]} taken from {'incident date' if ctx.date else 'the file'} for month-day timestamps")
        elif form == "clock":
            if date is None:
                rep.assume("timestamps carry only time of day and nothing gives the date: rows have no time")
                continue
            texts = [f"{date}T{t}" for t in texts]
            rep.assume(f"date {date} taken from {'incident date' if ctx.date else 'the file'} for time-of-day timestamps")
        if aware:
            t = pd.to_datetime(pd.Series(texts), format="ISO8601", errors="coerce", utc=True).astype("datetime64[us, UTC]")
        else:
            naive = pd.to_datetime(pd.Series(texts), format="%Y-%m-%dT%H:%M:%S.%f", errors="coerce")
            t = align.localize(naive, ctx.timezone)
            rep.assume(align.zone_assumption(ctx.timezone))
        out[idx] = _utc_naive(t)
    return align.localize(pd.Series(out), "UTC")


def _utc_naive(t: pd.Series) -> np.ndarray:
    """UTC instants of a UTC series as datetime64[us] (its int64 storage, no zone arithmetic)."""
    return t.astype("datetime64[us, UTC]").array.asi8.view("datetime64[us]")


def _naive_seconds(stamps: list[bytes]) -> pd.Series:
    """`YYYY-mm-dd HH:MM:SS` bytes -> naive datetime64[us], parsed by numpy in one call; an
    impossible date (month 13) sends the batch through pandas, which makes that one NaT."""
    raw = np.array(stamps, dtype="S19")
    try:
        t = raw.astype("datetime64[s]")
    except ValueError:
        t = pd.to_datetime(pd.Series(raw.astype(str)), format="%Y-%m-%d %H:%M:%S", errors="coerce").to_numpy()
    return pd.Series(t.astype("datetime64[us]"))


def _frame(cols: dict[str, list], rep: FileReport, ctx: LoadContext, first_date) -> pd.DataFrame:
    df = pd.DataFrame({k: v for k, v in cols.items() if k != "stamp"})
    df.insert(0, "time", resolve_times(cols["stamp"], rep, ctx, first_date))
    df["source"] = rep.path
    df["ref"] = [f"{rep.path}:{n}" for n in cols["line"]]
    df["host"] = ctx.host
    return df.drop(columns=["line"])


def _merge(into: Rows, part: Rows) -> None:
    for col, more in zip(into.metric_cols, part.metric_cols, strict=True):
        col.extend(more)
    into.event_rows.extend(part.event_rows)


def default_run(path: Path, ctx: LoadContext) -> tuple[str, bool]:
    """The run name for lines that do not name one: the [[sources]] `run`, else the file stem."""
    if ctx.options.get("run"):
        return str(ctx.options["run"]), False
    return Path(path).stem, True


def settle_runs(cols: dict[str, list], scanner: LogScanner, stem: str, rep: FileReport) -> None:
    """Rows read before any tagged line take the first tag that follows; no tag at all: the stem."""
    if None not in cols["run"]:
        return
    run = scanner.first_run or stem
    cols["run"] = [r if r is not None else run for r in cols["run"]]
    if scanner.first_run is None:
        rep.assume(f"lines that name no run are given run {run!r} (the file's name)")
    else:
        rep.assume(f"rows before the first [run] tag are given the first tag that follows, {run!r}")


def load_log(path: Path, ctx: LoadContext):
    """Format loader: one training log -> Incident with metrics and events."""
    path = Path(path)
    rep = ctx.report(path, "training-log")
    run, from_name = default_run(path, ctx)
    patterns = lp.user_patterns(ctx.config.patterns, str(ctx.config.path or "incident.toml")) if ctx.config else ()
    scanner = LogScanner(path, rep, patterns=patterns, default_run=None if from_name else run)
    rows = Rows()
    for part in scanner.scan():
        _merge(rows, part)
    metric_cols, event_cols = rows.metrics, rows.events
    settle_runs(metric_cols, scanner, run, rep)
    settle_runs(event_cols, scanner, run, rep)
    metrics = _frame(metric_cols, rep, ctx, scanner.first_date)
    events = _frame(event_cols, rep, ctx, scanner.first_date)
    metrics = metrics.drop(columns=["ref", "host"]).assign(ref=metrics["ref"])
    events = events.astype({"pid": "Int64", "exit_code": "Int64", "rank": "Int64", "lines": "Int64"})
    metrics = metrics.astype({"step": "Int64", "rank": "Int64"})
    return from_frames(rep, metrics=metrics, events=events)


def load_process_log(path, *, timezone: str = "UTC", host: str | None = None, run: str | None = None,
                     date=None, patterns: list[dict] | None = None, on_bad_line: str = "warn"):
    """Read a training log (stdout/stderr of a trainer) into metrics and events.

    `run` names lines that carry no run tag (default: the file's stem); `date` completes
    time-of-day or month-day timestamps; `patterns` adds throughput patterns in the
    incident.toml `[[patterns]]` form.
    """
    from ..config import IncidentConfig

    cfg = IncidentConfig(patterns=list(patterns or []))
    if isinstance(date, str):
        import datetime as dt

        date = dt.date.fromisoformat(date)
    ctx = LoadContext(timezone=timezone, host=host, on_bad_line=on_bad_line, config=cfg, date=date)
    if run:
        ctx.options = {"run": run}
    return load_log(Path(path), ctx)


# -- sniffing ---------------------------------------------------------------------------------
_STRONG = (lp.TRACEBACK_KEYWORD.decode(), "Watchdog caught", "nohup: ignoring input", "torch.distributed.elastic",
           "torch.distributed.run", "elastic_operator", "ProcessGroupNCCL")


def sniff_log(path: Path, head: bytes) -> float:
    if not head or b"\x00" in head[:4096]:
        return 0.0
    text = head.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines()[:400] if ln.strip()]
    if not lines:
        return 0.0
    if lines[0].startswith("# ") and any(ln.startswith("| ---") or ln.startswith("|---") for ln in lines):
        return 0.0  # markdown
    metric_lines = 0
    stamped = 0
    for ln in lines:
        body, _ = strip_prefixes(ln)
        if find_stamp(body)[0] is not None:
            stamped += 1
        for p in lp.METRIC_PATTERNS:
            if p.keyword.decode() in body and p.regex.search(body):
                metric_lines += 1
                break
        else:
            if ("it/s" in body or "s/it" in body) and lp.BAR.search(body):
                metric_lines += 1
    score = 0.0
    if metric_lines:
        score = 0.6
    elif any(s in text for s in _STRONG):
        score = 0.55
    elif stamped / len(lines) >= 0.5:
        score = 0.3
    return score


register(Format(
    name="training-log",
    sniff=sniff_log,
    load=load_log,
    doc="a trainer's stdout/stderr: throughput/loss lines, stages, warnings, tracebacks, NCCL and torchrun errors",
))
