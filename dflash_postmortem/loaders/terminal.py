"""Terminal text as it reaches us: what a line says once the terminal has drawn it, and the marks
`script` leaves around a recording. (Whether a line is a prompt with a command is shell
knowledge: `commands.match_prompt`.)

`script` recordings and tmux/screen logs keep the raw bytes a terminal interprets: colour and
cursor sequences, window titles (OSC), carriage returns that redraw a progress bar, backspaces of
typed corrections. `screen_text` replays one line the way the terminal would have shown it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import SourceFormatError

_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
# Every escape sequence a terminal acts on, for readers that want a line's text and nothing of
# how it was drawn (colours, titles): CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \,
# or cut off by the end of the line) and the two-byte ESC sequences. The only such pattern in
# the kit; `screen_text` interprets them instead, for a recording of a whole terminal.
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|" + _OSC.pattern + r"|\x1b[@-Z\\-_=>]")
_CSI = re.compile(r"\x1b\[(?P<args>[0-?]*)[ -/]*(?P<final>[@-~])")
_ESC_OTHER = re.compile(r"\x1b[()*+][0-9A-Za-z]|\x1b[@-Z\\^_=>78]|\x1b")
_C1_CSI = re.compile(r"\x9b[0-?]*[ -/]*[@-~]")
# What a terminal acts on rather than shows: a line with none of these is its own text (one scan;
# every sniffer that reads terminal text asks this of every line).
_DRAWN = re.compile("[\x1b\r\b\x9b\x00\x07\x7f]")


@functools.lru_cache(maxsize=2)
def screen_lines(head: bytes, limit: int = 400) -> tuple[str, ...]:
    """The first `limit` lines of a file's head as the terminal showed them (`screen_text`), a
    byte-order mark dropped: the shell transcript's and the kernel log's sniffers both read them,
    so they are drawn once per head."""
    text = head.decode("utf-8", "replace").removeprefix("\ufeff")
    return tuple(screen_text(ln) for ln in text.split("\n")[:limit])


def screen_text(line: str) -> str:
    """What a terminal shows for one line of raw output: escape sequences interpreted (cursor
    moves and erasures applied, colours and titles dropped), `\\r` returning to the start of the
    line, `\\b` stepping back. Plain text comes back unchanged (trailing whitespace trimmed)."""
    if _DRAWN.search(line) is None:
        return line.rstrip()
    line = _OSC.sub("", line)
    line = _C1_CSI.sub("", line)
    cells: list[str] = []
    cur = 0
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if c == "\x1b":
            m = _CSI.match(line, i)
            if m:
                cur = _csi(cells, cur, m["args"], m["final"])
                i = m.end()
                continue
            m = _ESC_OTHER.match(line, i)
            i = m.end() if m else i + 1
            continue
        if c == "\r":
            cur = 0
        elif c in "\b\x7f":
            cur = max(0, cur - 1)
        elif c == "\t":
            stop = (cur // 8 + 1) * 8
            while len(cells) < stop:
                cells.append(" ")
            cur = stop
        elif c >= " ":
            if cur < len(cells):
                cells[cur] = c
            else:
                cells.extend(" " * (cur - len(cells)))
                cells.append(c)
            cur += 1
        i += 1
    return "".join(cells).rstrip()


def _csi(cells: list[str], cur: int, args: str, final: str) -> int:
    """Apply one CSI sequence to the line buffer; returns the new cursor column."""
    nums = [int(a) if a.isdigit() else 0 for a in args.lstrip("?<=>").split(";")] if args else []
    k = nums[0] if nums and nums[0] else 1
    if final == "K":  # erase in line: 0 right of the cursor, 1 left of it, 2 all
        mode = nums[0] if nums else 0
        if mode == 0:
            del cells[cur:]
        elif mode == 1:
            for j in range(min(cur + 1, len(cells))):
                cells[j] = " "
        else:
            cells.clear()
    elif final == "C":
        cur += k
    elif final == "D":
        cur = max(0, cur - k)
    elif final == "G":
        cur = max(0, k - 1)
    elif final == "P":
        del cells[cur:cur + k]
    elif final == "@":
        cells[cur:cur] = [" "] * k
    elif final == "X":
        for j in range(cur, min(cur + k, len(cells))):
            cells[j] = " "
    return cur


_SCRIPT = re.compile(r"^Script (?P<what>started|done) on (?P<when>.+?)(?: \[(?P<info>.*)\])?\s*$")
_SCRIPT_EXIT = re.compile(r'COMMAND_EXIT_CODE="(?P<code>-?\d+)"')
_SCRIPT_COMMAND = re.compile(r'COMMAND="(?P<cmd>(?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ScriptMark:
    """`script`'s first or last line: when, and (util-linux >= 2.35) the command and exit code."""

    started: bool
    when: str
    command: str | None
    exit_code: int | None


def match_script_mark(line: str) -> ScriptMark | None:
    m = _SCRIPT.match(line)
    if not m:
        return None
    info = m["info"] or ""
    code = _SCRIPT_EXIT.search(info)
    cmd = _SCRIPT_COMMAND.search(info)
    return ScriptMark(m["what"] == "started", m["when"], cmd["cmd"] if cmd else None,
                      int(code["code"]) if code else None)


def read_lines(path: Path, fmt: str) -> list[str]:
    """The file's lines (LF, CRLF, or CR alone), a UTF-8 BOM dropped; unreadable -> SourceFormatError."""
    return decode_lines(read_bytes(path, fmt))


def read_bytes(path: Path, fmt: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise SourceFormatError(path, None, "a readable file", f"{type(e).__name__}: {e.strerror or e}", fmt=fmt) from e


def decode_lines(raw: bytes) -> list[str]:
    """Bytes as lines (LF, CRLF, or CR alone), a UTF-8 BOM dropped."""
    text = raw.decode("utf-8", "replace").removeprefix("\ufeff")
    if "\n" not in text and "\r" in text:
        text = text.replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
