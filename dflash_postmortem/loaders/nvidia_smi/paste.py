"""nvidia-smi output as people save it, not as nvidia-smi writes it: pasted into an issue inside a
markdown fence, under the shell prompt that ran it, quoted with `> `, kept as `# ` comments in a
script, indented under a numbered list, saved in a notebook's cell output, coloured by the
terminal, with Windows line ends or a `watch` header.

`unwrap` turns the text of a capture into one cleaned line per line of the file (line numbers
never move, so evidence refs still open the file at the right line) and names the lines that are
only wrapping. Every form's sniffer and loader reads the cleaned lines and counts the wrapping as
skipped lines with that name, so the forms themselves need to know nothing about pasting.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

from ...shell_words import is_bare_prompt, ran
from ..terminal import ESCAPES

# CSI sequences (colours, cursor moves), OSC sequences (window titles) and two-byte escapes.
# The same colour codes after a web page dropped the ESC byte: "[1m[37mGPU[0m".
_BARE_SGR = re.compile(r"\[(?:\d{1,3}(?:;\d{1,3})*)?m")
_QUOTE = re.compile(r"^ {0,3}(?:> ?)+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_COMMENT = re.compile(r"^\s*# ?")
# The line that ran nvidia-smi: a prompt then any command line naming it, the command itself, or
# the header `watch` draws above it.
_COMMAND = ran("nvidia-smi")

# Where the poster cut something out: "[...]", "...", "…", "<snip>".
_ELISION = re.compile(r"^\s*(?:\[\s*(?:\.\.\.|…|snip)\s*\]|\.\.\.+|…|<snip>|\(\.\.\.\))\s*$", re.IGNORECASE)

_JSON_LINE = re.compile(r'^\s*("(?:[^"\\]|\\.)*")\s*,?\s*$')

FENCE = "markdown code fence"
NOTEBOOK = "Jupyter notebook JSON around the output"
ELISION = "elision mark where the poster cut lines out"
COMMAND = "command line that ran nvidia-smi (prompt, watch header)"
PROMPT = "shell prompt with no command"


@dataclass
class Paste:
    """A capture's lines as the forms read them, and which lines are only wrapping."""

    lines: list[str]
    wrapping: list[str | None]  # per line: why it is only wrapping (a skip reason), or None
    quirks: list[str] = field(default_factory=list)  # what was removed, for the load report

    def content(self) -> list[tuple[int, str]]:
        """(1-based line number, text) of the lines that are neither wrapping nor blank."""
        return [(i, s) for i, (s, w) in enumerate(zip(self.lines, self.wrapping, strict=True), start=1)
                if w is None and s.strip()]

    def lines_to_read(self, rep):
        """(1-based line number, text) of each line a form reads; wrapping and blank lines are
        counted skipped in `rep` with their reason as they pass."""
        for i, (line, wrap) in enumerate(zip(self.lines, self.wrapping, strict=True), start=1):
            if wrap is not None:
                rep.skip(i, wrap)
            elif not line.strip():
                rep.skip(i, "blank line")
            else:
                yield i, line

    def note(self, rep) -> None:
        for q in self.quirks:
            rep.assume(q)


def split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them: only LF ends a line (CRLF's CR is dropped). A lone CR is
    a terminal redraw (`watch`, progress bars): what was drawn after the last one is what showed."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    for ln in lines:
        ln = ln.removesuffix("\r")
        if "\r" in ln:
            tail = ln.rsplit("\r", 1)[1]
            ln = tail if tail.strip() else ln.replace("\r", "")
        out.append(ln)
    return out


def unwrap(text: str) -> Paste:
    """Clean every line of a capture and name the wrapping lines."""
    lines = split_lines(text)
    quirks: list[str] = []
    json_lines: set[int] = set()
    if _is_notebook(text):
        decoded = [_notebook_line(ln) for ln in lines]
        json_lines = {k for k, ln in enumerate(decoded) if ln is None}
        lines = [ln or "" for ln in decoded]
        quirks.append("read from a Jupyter notebook's cell output (JSON strings decoded)")
    if "\x1b" in text:
        lines = [ESCAPES.sub("", ln) for ln in lines]
        quirks.append("ANSI colour/cursor codes removed")
    elif _BARE_SGR.search(text) and sum(1 for ln in lines if re.search(r"\[\d{1,3}(?:;\d{1,3})*m", ln)) >= 2:
        lines = [_BARE_SGR.sub("", ln) for ln in lines]
        quirks.append("terminal colour codes (their ESC byte lost in a paste) removed")
    if "\r\n" in text:
        quirks.append("Windows (CRLF) line ends")
    nonblank = sum(1 for ln in lines if ln.strip())
    quoted = sum(1 for ln in lines if _QUOTE.match(ln))
    if quoted and quoted >= 0.5 * nonblank:
        lines = [_QUOTE.sub("", ln) for ln in lines]
        quirks.append("'> ' quote markers removed")
    # Output kept as comments in a script or config ("# This should print:" and the table under
    # it). A dmon/pmon capture's own '#' headers are a few lines among its samples, never most.
    commented = sum(1 for ln in lines if _COMMENT.match(ln))
    if commented >= 3 and commented >= 0.6 * nonblank:
        lines = [_COMMENT.sub("", ln, count=1) for ln in lines]
        quirks.append("'# ' comment markers removed")
    wrapping = [NOTEBOOK if k in json_lines else _wrapping(ln) for k, ln in enumerate(lines)]
    if FENCE in wrapping:
        quirks.append("pasted inside a markdown code fence")
    if COMMAND in wrapping:
        quirks.append("pasted with the command line that ran nvidia-smi")
    return Paste(lines, wrapping, quirks)


def _is_notebook(text: str) -> bool:
    head = text[:4096]
    return head.lstrip().startswith("{") and '"cells"' in text and '"cell_type"' in text


def _notebook_line(line: str) -> str | None:
    """One line of an .ipynb file: a cell's source or output line is a JSON string on its own
    line ("| NVIDIA-SMI 535.104.05 ...\\n",); anything else is the notebook's JSON (None)."""
    m = _JSON_LINE.match(line)
    if not m:
        return None
    try:
        return json.loads(m.group(1)).removesuffix("\n")
    except ValueError:
        return None


def _wrapping(line: str) -> str | None:
    # Cheap tests first: a long stream is millions of sample lines that are none of these.
    if ("`" in line or "~~~" in line) and _FENCE.match(line):
        return FENCE
    if "nvidia-smi" in line and _COMMAND.match(line):
        return COMMAND
    if len(line) < 120 and line.strip() not in ("#", "%") and is_bare_prompt(line):
        return PROMPT
    if len(line) < 40 and _ELISION.match(line):
        return ELISION
    return None


@lru_cache(maxsize=4)
def unwrap_head(head: bytes) -> Paste:
    """`unwrap` of a file's first bytes, for sniffers: every form asks about the same head, so it
    is cleaned once. The last line may be cut where the head ends."""
    return unwrap(head.decode("utf-8", "replace"))


def read_paste(path) -> Paste:
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return unwrap(f.read())
