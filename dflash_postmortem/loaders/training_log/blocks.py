"""Multi-line records in training logs, followed line by line once their first line is seen:
a Python traceback (one event, all its lines) and torchelastic's ChildFailedError table (one
`exit` event per failure it lists). The scanner feeds each following line to the open record
until the record says it is complete; a file that ends inside one closes it as cut off.
"""

from __future__ import annotations

import re

from ...said import FAILURE_ENTRY, FAILURE_FIELD
from . import patterns as lp
from .times import Stamp, find_stamp

MAX_EVENT_CHARS = 4000
MAX_TRACEBACK_LINES = 400
MAX_MESSAGE_LINES = 20  # an exception's message after its first line

# What `feed` answers: the line belongs to the record (more may follow), it is the record's
# last line, or it is not part of the record (which is then complete without it).
TAKE, TAKE_LAST, NOT_MINE = "take", "take_last", "not_mine"

_TRACEBACK = lp.TRACEBACK_KEYWORD.decode()
# (and Python's own `Exception`, raised bare)
_EXCEPTION = re.compile(r"([\w.]+(?:Error|Exception|Interrupt|Exit|Failure|Failed\w*)|Exception(?=:))\b")


# Rich's boxed traceback (accelerate, typer, `rich.traceback.install()`): its header in the box's
# top rule, then box lines `│ ... │`: each frame's `path/file.py:261 in main` (a long one wrapped
# onto the next box line), its code around the line it ran, that one pointed at (`❱ 261 │ code`),
# a panel of its locals inside; `╰───╯` closes the box, and the exception line comes under it.
_BOX_TOP = re.compile(r"[─╭━]")
_RICH_FRAME = re.compile(r"^(?P<file>\S.*?):(?P<line>\d+) in (?P<func>\S*)$")
_RICH_RAN = re.compile(r"^❱\s*\d+\s*│\s?(?P<code>.*)$")
_RICH_CODE = re.compile(r"^\d+\s*│")


def _box_inner(line: str) -> str:
    """A box line's text, without the box's sides."""
    return line.strip().removeprefix("│").removesuffix("│").strip()


def boxed_frame(line: str) -> bool:
    """Whether a line of Rich's box names a frame (`│ path/file.py:261 in main │`) or the line a
    frame ran (`│ ❱ 66 │   _error_if_any_worker_fails() │`)."""
    inner = _box_inner(line)
    return line.lstrip().startswith("│") and (_RICH_FRAME.match(inner) or _RICH_RAN.match(inner)) is not None


def rich_as_python(lines: list[str]) -> list[str]:
    """A Rich boxed traceback's lines (its header, where the file holds it; box lines, its closing
    rule, the exception line and what follows it) as Python prints a traceback: each frame's
    `File "...", line N, in func` and the code it ran, so that one reading serves both (said.py:
    the exception, where it waited)."""
    inner = [_box_inner(ln) for ln in lines if ln.strip().startswith("│")]
    after = [ln for ln in lines if not ln.strip().startswith(("│", "╰")) and _TRACEBACK not in ln]
    out = ["Traceback (most recent call last):"]
    i = 0
    while i < len(inner):
        text, nxt = inner[i], inner[i + 1] if i + 1 < len(inner) else ""
        m = _RICH_FRAME.match(text)
        joined = None if m or not nxt else _RICH_FRAME.match(text + nxt)
        if m is None and joined is not None:  # (a path wrapped onto the next box line)
            m, i = joined, i + 1
        if m is not None:
            func = m["func"]
            if not func and nxt and " " not in nxt and not _RICH_CODE.match(nxt):  # (its function wrapped)
                func, i = nxt, i + 1
            out.append(f'  File "{m["file"]}", line {m["line"]}, in {func or "?"}')
        elif (ran := _RICH_RAN.match(text)) is not None:
            out.append("    " + ran["code"].lstrip(" │").strip())  # (without Rich's indent guides)
        i += 1
    return out + [ln.strip() for ln in after if ln.strip()]


class TracebackBlock:
    """`Traceback (most recent call last):` (or Python's `Exception in thread NAME:` just before
    one) and its indented lines, up to the exception line; or Rich's box of one and the exception
    line under it."""

    def __init__(self, first: str, *, thread: str | None, cut: int = 0, keyed: bool = False, **where):
        self.where = where  # stamp, line, run, pid, rank of the first line
        self.cut = cut  # width of a per-line `[time] tag || ` prefix before the traceback's text
        self.keyed = keyed  # Ctrl-C's echo (`^C`) came just before it: a KeyboardInterrupt's
        self.lines = [first]
        self.thread = thread
        self.heads = 1
        self.awaiting = thread is not None  # the header was read: its traceback comes next
        # Rich's box (None: Python's own form; False: inside the box; True: the box closed)
        self.boxed = False if _BOX_TOP.search(first.replace(_TRACEBACK, "")) else None

    def _feed_boxed(self, text: str) -> str:
        stripped = text.strip()
        if self.boxed is False:
            if not stripped.startswith(("│", "╰")):
                return NOT_MINE
            self.lines.append(text)
            self.boxed = stripped.startswith("╰")
            return TAKE
        if not stripped:
            return TAKE if len(self.lines) and self.lines[-1].strip().startswith("╰") else NOT_MINE
        self.lines.append(text)
        return TAKE_LAST

    def feed(self, text: str, lineno: int) -> str:
        if self.cut and find_stamp(text[: self.cut])[0] is not None:
            text = text[self.cut:]
        if self.boxed is not None:
            return self._feed_boxed(text)
        if self.awaiting:
            if _TRACEBACK not in text:
                return NOT_MINE  # a header alone; this line is not part of it
            self.lines.append(text.strip())
            self.awaiting = False
            self.heads += 1
            return TAKE
        self.lines.append(text)
        if text[:1] in (" ", "\t") or (not text.strip() and len(self.lines) == self.heads + 1):
            return TAKE
        return TAKE_LAST

    def events(self, truncated: bool) -> list[dict]:
        # (a box whose top the file lacks: read from its lines before the exception, process_log.py)
        boxed = self.boxed is not None or self.lines[0].lstrip().startswith("│")
        said = rich_as_python(self.lines) if boxed else self.lines
        text = "\n".join(said[:MAX_TRACEBACK_LINES])
        if truncated:
            text += "\n[traceback cut off: the file ends here]"
        exc = _EXCEPTION.match(self.lines[-1].strip())
        # (one cut off before its exception line after a `^C`: the interrupt's, as a reader takes it)
        kind, pattern = "traceback", exc.group(1).rsplit(".", 1)[-1] if exc else "KeyboardInterrupt" if self.keyed else "traceback"
        if self.awaiting:
            kind, pattern = "error", "thread_exception"
        return [dict(self.where, kind=kind, message=text[: MAX_EVENT_CHARS * 4], pattern=pattern,
                     lines=len(self.lines), thread=self.thread)]


class MessageTail:
    """The lines after a traceback's exception line that go on with its message, added to the
    traceback's event (`message`, `lines`): an exception's text may hold newlines (NCCL's
    `ncclInvalidUsage: ...`, `Last error:`, `Duplicate GPU detected : rank 1 and rank 0 ...`; a
    state_dict's missing keys). It ends at a blank line, a line with a time of its own, a line
    of another rank, a new traceback, a rule (torchrun's ChildFailedError goes on with its
    failure table, read as a record of its own), or a line that gives a row of its own: the
    scanner asks that of each line that holds a keyword before it is offered here."""

    def __init__(self, event: dict, rank):
        self.event = event  # the traceback's row, as emitted
        self.rank = rank
        self.taken = 0

    def feed(self, text: str, lineno: int, rank=None) -> str:
        if (self.taken >= MAX_MESSAGE_LINES or rank != self.rank or not text.strip() or _TRACEBACK in text
                or lp.TABLE_RULE.match(text) or find_stamp(text.lstrip())[0] is not None):
            return NOT_MINE
        self.taken += 1
        if len(self.event["message"]) < MAX_EVENT_CHARS * 4:
            self.event["message"] += "\n" + text.strip()
        self.event["lines"] = self.event.get("lines", 1) + 1
        return TAKE

    def events(self, truncated: bool) -> list[dict]:
        return []  # its lines went into the traceback's event


class FailureTable:
    """torchelastic's ChildFailedError table after its `Root Cause (first observed failure):`
    (torch 1.10: `Root Cause:`) or `Failures:` header: `[N]:` entries of `time`, `host`, `rank`,
    `exitcode`, `error_file`, `traceback` (torch 1.10: `msg`) fields, up to a `----` / `====` rule."""

    def __init__(self, root: bool, **where):
        self.root = root
        self.where = where  # stamp, line, run of the header
        self.entries: list[dict] = []
        self.entry: dict | None = None

    def feed(self, text: str, lineno: int) -> str:
        stripped = text.strip()
        m = FAILURE_ENTRY.match(text)
        if m:
            self.entry = {"line": lineno, "fields": {}, "lines": [stripped]}
            self.entries.append(self.entry)
            return TAKE
        if stripped == "<NO_OTHER_FAILURES>":
            return TAKE
        if lp.TABLE_RULE.match(text):
            return TAKE_LAST
        if self.entry is None or not stripped:
            return NOT_MINE
        field = FAILURE_FIELD.match(text)
        if field:
            self.entry["fields"][field.group("key")] = field.group("value").strip()
        elif text[:1] in (" ", "\t") and (last := self._multiline()) is not None:
            self.entry["fields"][last] += "\n" + stripped  # an error_file's traceback or message, indented
        else:
            return NOT_MINE
        self.entry["lines"].append(stripped)
        return TAKE

    def _multiline(self) -> str | None:
        """The entry's field whose text goes on over indented lines, if it has begun one."""
        return next((k for k in reversed(self.entry["fields"]) if k in lp.FAILURE_MULTILINE_FIELDS), None)

    def events(self, truncated: bool) -> list[dict]:
        return [self._event(e) for e in self.entries]

    def _event(self, entry: dict) -> dict:
        f = entry["fields"]
        ev = dict(self.where, line=entry["line"], kind="exit", by="torchrun",
                  pattern="elastic_root_cause" if self.root else "elastic_failure",
                  message="\n".join(entry["lines"])[:MAX_EVENT_CHARS], lines=len(entry["lines"]))
        stamp, _ = find_stamp(f.get("time", ""))
        if isinstance(stamp, Stamp) and stamp.form == "iso":
            ev["stamp"] = stamp
        if f.get("host"):
            ev["host"] = f["host"]
        if m := lp.FAILURE_RANK.search(f.get("rank", "")):
            ev["rank"], ev["local_rank"] = lp.integer(m.group("rank")), lp.integer(m.group("local_rank"))
        if m := lp.FAILURE_EXIT.search(f.get("exitcode", "")):
            ev["exit_code"], ev["pid"] = lp.integer(m.group("code")), lp.integer(m.group("pid"))
        if f.get("error_file") and f["error_file"] != "<N/A>":
            ev["error_file"] = f["error_file"]
        if m := lp.FAILURE_SIGNAL.search(f.get("traceback", "")):
            ev["signal"] = m.group("signal")
        elif ev.get("exit_code") is not None and ev["exit_code"] < 0:
            ev["signal"] = lp.EVENT_GROUPS["signo"][1](str(ev["exit_code"]))
        return ev


class PySpyBlock:
    """py-spy's dump of a live process (patterns.PYSPY_HEAD): one `stack_dump` event naming the
    process (`pid`, `command`), its threads, and its main thread's frames in the traceback's
    form (`File "file", line N, in func`, outermost first) so that said.waiting_in reads where it
    waited."""

    def __init__(self, first: str, head: re.Match, **where):
        self.where = where
        self.lines = [first]
        self.pid, self.command = int(head["pid"]), head["command"].strip()
        self.stacks: list[tuple[str, str, list[str]]] = []  # (thread name, state, frames innermost first)

    def feed(self, text: str, lineno: int) -> str:
        stripped = text.strip()
        m = lp.PYSPY_THREAD.match(stripped)
        f = lp.PYSPY_FRAME.match(text) if m is None else None
        if m is not None:
            self.stacks.append((m["name"] or m["tid"], m["state"], []))
        elif f is not None and self.stacks:
            self.stacks[-1][2].append(f'  File "{f["file"]}", line {f["line"]}, in {f["func"]}')
        elif stripped and not lp.PYSPY_OTHER.match(text):
            return NOT_MINE
        self.lines.append(text.rstrip())
        return TAKE

    def events(self, truncated: bool) -> list[dict]:
        while self.lines and not self.lines[-1]:
            self.lines.pop()
        main = next((st for st in self.stacks if st[0] == "MainThread"), self.stacks[0] if self.stacks else None)
        frames = "\n".join(reversed(main[2])) if main else ""
        text = "\n".join(self.lines) + ("\n[dump cut off: the file ends here]" if truncated else "")
        return [dict(self.where, kind="stack_dump", pattern="py_spy_dump", pid=self.pid, command=self.command,
                     message=text[: MAX_EVENT_CHARS * 4], lines=len(self.lines), threads=len(self.stacks),
                     frames=f"{main[0]} ({main[1]}):\n{frames}" if main else None)]


class FaulthandlerBlock:
    """faulthandler's dump (`Fatal Python error: Segmentation fault`, a `Timeout (0:05:00)!`, or
    a dump on a registered signal): its thread headers and frames, Python 3.12's extension modules.
    One event: `killed` naming the fatal signal (faulthandler then lets the signal end the
    process, as a shell's `Segmentation fault` reports), else `traceback`; `threads` counts the
    stacks and `frames` keeps each thread's most recent frame."""

    def __init__(self, first: str, head: re.Match, **where):
        self.where = where
        self.lines = [first]
        self.fatal = head["fatal"]
        self.timeout = head["timeout"]
        self.stacks: list[tuple[str, bool, list[str]]] = []  # (thread id, current, frames)
        if head["tid"] or first.startswith("Stack "):
            self.stacks.append((head["tid"] or "", bool(head["current"]), []))

    def feed(self, text: str, lineno: int) -> str:
        if not text.strip():
            self.lines.append("")
            return TAKE
        m = lp.FAULTHANDLER_THREAD.match(text.strip())
        if m:
            self.stacks.append((m["tid"] or "", bool(m["current"]), []))
        elif lp.FAULTHANDLER_FRAME.match(text) and self.stacks:
            f = lp.FAULTHANDLER_FRAME.match(text)
            if f["file"]:
                self.stacks[-1][2].append(f"{f['file']}:{f['line']} in {f['func']}")
        elif not lp.FAULTHANDLER_TAIL.match(text.strip()):
            return NOT_MINE
        self.lines.append(text.rstrip())
        return TAKE

    def events(self, truncated: bool) -> list[dict]:
        while self.lines and not self.lines[-1]:
            self.lines.pop()  # blank lines after the dump belong to nobody
        signal = lp.FAULTHANDLER_SIGNALS.get((self.fatal or "").strip())
        top = [f"{'current ' if cur else ''}thread {tid}: {frames[0]}".replace("thread : ", "stack: ")
               for tid, cur, frames in self.stacks if frames]
        text = "\n".join(self.lines)
        if truncated:
            text += "\n[dump cut off: the file ends here]"
        return [dict(self.where, kind="killed" if signal else "traceback", pattern="faulthandler",
                     message=text[: MAX_EVENT_CHARS * 4], lines=len(self.lines), signal=signal,
                     fatal_error=self.fatal, timeout=self.timeout, threads=len(self.stacks),
                     frames="; ".join(top) or None)]
