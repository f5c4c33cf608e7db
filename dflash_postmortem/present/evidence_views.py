"""Evidence a reader can open: every `file:line` the kit cites, as a link to the line itself.

Detectors and loaders cite evidence as `path:line`, the path relative to the incident folder
(`logs/operator.log:9`; for a wandb `.wandb` file the number is the record's). This module
finds those refs in text, reads the cited lines (in the file's own encoding, secrets masked),
and writes the report's file views: one HTML page per cited file, line-numbered, scrolled to and
highlighting the cited line (a window around each cited line for a large file).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from ..loaders.encoding import KEEP, LONG_LINE
from ..loaders.encoding import detect as detect_encoding
from ..loaders.terminal import ESCAPES
from .redact import redact

# A ref: a relative path (no spaces, no `:`), a colon, a line number. Times such as 05:22:17
# match the shape too; a ref counts only where its file exists in the incident folder.
REF = re.compile(r"(?<![\w/.:-])((?:[\w.+@~-]+/)*[\w.+@~-]+):(\d+)\b")
# Files up to this many lines are shown whole; longer ones as windows around the cited lines.
WHOLE_FILE_LINES = 5000
WINDOW = 40  # lines shown before and after a cited line of a long file
VIEWS = "evidence"  # the report's folder of file views
_TEXT_CONTROLS = frozenset("\t\x0b\x0c\x08\x07")


@dataclass(frozen=True)
class Ref:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def parse_ref(text: str) -> Ref | None:
    m = REF.fullmatch(text.strip())
    return Ref(m.group(1), int(m.group(2))) if m else None


def view_href(ref: Ref) -> str:
    """Where the report's view of `ref` is, relative to the report's pages."""
    return f"{VIEWS}/{ref.path}.html#L{ref.line}"


def link_refs(escaped: str, root: Path, href) -> str:
    """Wrap every ref in already HTML-escaped text whose file exists under `root` in a link;
    `href(ref)` says where it points. Anything else is left as it was."""

    def wrap(m: re.Match) -> str:
        ref = Ref(html.unescape(m.group(1)), int(m.group(2)))
        if not _exists(str(root), ref.path):
            return m.group(0)
        return (f'<a class="pm-ref" data-ref="{html.escape(str(ref))}" href="{html.escape(href(ref))}">'
                f"{m.group(0)}</a>")

    return REF.sub(wrap, escaped)


@lru_cache(maxsize=4096)
def _exists(root: str, rel: str) -> bool:
    p = Path(root) / rel
    try:
        return p.is_file() and Path(root).resolve() in p.resolve().parents
    except OSError:
        return False


# --- reading the cited lines ----------------------------------------------------------------------

@lru_cache(maxsize=64)
def _lines(path: str, mtime_ns: int) -> tuple[str, ...] | _LargeText | None:
    """The file's lines as the loaders numbered them (one per `\\n`), decoded in its own
    encoding, terminal escapes removed; None for a binary file. A file above LARGE_FILE is read
    a line at a time where asked (`_LargeText`), never whole."""
    size = Path(path).stat().st_size
    with open(path, "rb") as f:
        head = f.read(4096)
    enc = detect_encoding(head)
    if size > LARGE_FILE:
        return _LargeText(path, enc) if enc.codec == "utf-8" and _is_text(_decoded(head, enc)) else None
    text = _decoded(Path(path).read_bytes(), enc)
    if not _is_text(text[:4096]):
        return None
    return tuple(_shown(line) for line in text.split("\n"))


def _decoded(raw: bytes, enc) -> str:
    text = raw[enc.bom:].decode(enc.codec, errors="replace")
    return text.replace("\x00", "") if enc.strip_nul else text


def _is_text(sample: str) -> bool:
    return "\x00" not in sample and sum(ch < " " and ch not in "\n\r\x1b" and ch not in _TEXT_CONTROLS
                                          for ch in sample[:4096]) <= 8


def _shown(line: str) -> str:
    """A line as a reader sees it: no terminal escapes, no carriage return, no more than
    LONG_LINE characters (the loaders read no further either)."""
    if len(line) > LONG_LINE:
        line = line[:KEEP] + f" … ({len(line) - KEEP:,} more characters not shown)"
    return ESCAPES.sub("", line).rstrip("\r")


# Above this size a cited file is not read whole (a report cites lines of a 2 GB log too).
LARGE_FILE = 64 << 20
_STRIDE = 4096  # a large file's index keeps where every 4096th line starts


class _LargeText:
    """The lines of a large UTF-8 file, read where asked: one pass keeps the offset of every
    _STRIDE-th line (a few KiB of index for millions of lines); a line is read from the nearest.
    Holds one line at a time, cut as `_shown` cuts it."""

    def __init__(self, path: str, enc):
        self.path, self.enc = path, enc
        self.starts = [enc.bom]
        count, at = 0, 0
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                pos = block.find(b"\n")
                while pos >= 0:
                    count += 1
                    if count % _STRIDE == 0:
                        self.starts.append(at + pos + 1)
                    pos = block.find(b"\n", pos + 1)
                at += len(block)
        self.n = count + 1  # the text after the last line break is a line too, as split() gives

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        if not 0 <= i < self.n:
            raise IndexError(i)
        with open(self.path, "rb") as f:
            f.seek(self.starts[i // _STRIDE])
            for _ in range(i % _STRIDE):
                _skip_line(f)
            line = f.readline(LONG_LINE + 1)
        return _shown(_decoded(line.rstrip(b"\n"), replace(self.enc, bom=0)))


def _skip_line(f) -> None:
    while (chunk := f.readline(1 << 20)) and not chunk.endswith(b"\n"):
        pass


def read_lines(root: Path, rel: str) -> tuple[str, ...] | _LargeText | None:
    p = Path(root) / rel
    try:
        return _lines(str(p), p.stat().st_mtime_ns)
    except OSError:
        return None


def cited_line(root: Path, ref: str | Ref, redacted: bool = True) -> str | None:
    """The text of the line a ref cites (masked unless `redacted=False`), or None where the file
    is gone, binary or shorter."""
    r = parse_ref(ref) if isinstance(ref, str) else ref
    if r is None:
        return None
    lines = read_lines(root, r.path)
    if lines is None or not 1 <= r.line <= len(lines):
        return None
    return redact(lines[r.line - 1]) if redacted else lines[r.line - 1]


# --- the report's file views ----------------------------------------------------------------------

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 0; }}
header {{ position: sticky; top: 0; background: #fafafa; border-bottom: 1px solid #ddd; padding: 8px 16px; }}
table {{ border-collapse: collapse; font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; width: 100%; }}
td.n {{ color: #999; text-align: right; padding: 0 10px; user-select: none; vertical-align: top; width: 1%; }}
td.n a {{ color: inherit; text-decoration: none; }}
td.t {{ white-space: pre-wrap; word-break: break-all; padding-right: 16px; }}
tr.cited {{ background: #fff3b0; }}
tr:target {{ background: #ffd54f; outline: 2px solid #f0a500; }}
tr {{ scroll-margin-top: 4em; }}  /* a cited line opens below the sticky header, not under it */
tr.gap td {{ color: #999; font-style: italic; padding: 4px 10px; }}
</style></head>
<body><header><a href="{back}">&larr; report index</a> · <strong>{title}</strong> · {what}</header>
<table>
{rows}
</table></body></html>
"""


def write_file_views(root: Path, refs: Iterable[Ref], out: Path, redacted: bool = True) -> dict[str, Path]:
    """One view per cited file under `out/evidence/`, named after the file; returns the views
    written by relative path. Lines are masked (unless `redacted=False`) before they are escaped."""
    by_file: dict[str, set[int]] = {}
    for r in refs:
        by_file.setdefault(r.path, set()).add(r.line)
    written = {}
    for rel, cited in sorted(by_file.items()):
        if not _exists(str(root), rel):
            continue
        dest = out / VIEWS / f"{rel}.html"
        dest.parent.mkdir(parents=True, exist_ok=True)
        back = "../" * (rel.count("/") + 1) + "index.html"
        lines = read_lines(root, rel)
        if lines is None:
            body, what = _binary_rows(cited), "a binary file: the cited record numbers are listed"
        else:
            body, what = _text_rows(lines, cited, redacted)
        dest.write_text(_PAGE.format(title=html.escape(rel), back=back, what=html.escape(what), rows=body),
                        encoding="utf-8")
        written[rel] = dest
    return written


def _text_rows(lines: tuple[str, ...], cited: set[int], redacted: bool) -> tuple[str, str]:
    n = len(lines)
    if n <= WHOLE_FILE_LINES:
        shown = range(1, n + 1)
        what = f"{n:,} lines"
    else:
        keep = sorted({i for c in cited for i in range(max(1, c - WINDOW), min(n, c + WINDOW) + 1)})
        shown = keep
        what = f"{n:,} lines; {WINDOW} lines around each cited line"
    rows, last = [], 0
    for i in shown:
        if i > last + 1:
            rows.append(f'<tr class="gap"><td class="n">…</td><td>lines {last + 1:,}–{i - 1:,} not shown</td></tr>')
        text = redact(lines[i - 1]) if redacted else lines[i - 1]
        mark = ' class="cited"' if i in cited else ""
        rows.append(f'<tr id="L{i}"{mark}><td class="n"><a href="#L{i}">{i}</a></td>'
                    f'<td class="t">{html.escape(text)}</td></tr>')
        last = i
    return "\n".join(rows), what


def _binary_rows(cited: set[int]) -> str:
    rows = [f'<tr id="L{i}" class="cited"><td class="n">{i}</td><td class="t">record {i} (read with the wandb '
            f'loader; `wandb leet inspect` shows it)</td></tr>' for i in sorted(cited)]
    return "\n".join(rows)
