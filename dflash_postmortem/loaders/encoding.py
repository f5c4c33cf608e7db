"""Text encodings as files really arrive: a UTF-8 BOM (Notepad, PowerShell 7's `utf8BOM`),
UTF-16 (Windows PowerShell 5's `>` and `Out-File`), UTF-32, NUL bytes in a log whose writer was
killed mid-block. Every loader reads UTF-8 bytes; this module decides, from the first bytes of a
file, whether it must be transcoded first, and does it as a stream (the file is never held).

Line numbers survive transcoding (a line break stays a line break), so evidence refs still open
the original file at the right line.

A paste quoted as a whole (an issue's or a mail's `> ` before every line) has its quote marks
taken off each line in the same pass: every reader would otherwise meet the mark first and read
nothing of what is behind it.

A line longer than LONG_LINE is cut in the same pass: its first KEEP bytes are read, the rest is
counted and left. Every reader holds at least a line at a time, and a file that is one line of
gigabytes (a binary dumped into a log, a runaway print) would otherwise be held whole.
"""

from __future__ import annotations

import codecs
import mmap
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

_BOMS = (
    # Longest first: a UTF-32-LE BOM starts with the UTF-16-LE one.
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# Control bytes that text files carry (tab, line breaks, form feed, backspace and escape from a
# terminal recording); any other C0 byte besides NUL marks the head as binary.
_TEXT_CONTROLS = frozenset(b"\t\n\r\x0b\x0c\x08\x1b\x07")
# A quote's marks before a line: markdown's (up to three spaces, `>`, a space), every level of a
# quote within a quote; a line of `>>>` (Python's prompt) is no quote.
_QUOTE_LINE = re.compile(rb"^(?: {0,3}>(?: |$))+", re.M)
_QUOTED_LINES = 3  # a paste of fewer lines is too little to say it was quoted as a whole
_CHUNK = 1 << 20
LONG_LINE = 1 << 20
KEEP = 64 << 10
_EXAMPLES = 5


@dataclass(frozen=True)
class Encoding:
    """How a file's bytes must be read: `codec` to decode, `bom` bytes to drop, and whether NUL
    bytes are to be removed (text with NULs, never binary)."""

    codec: str = "utf-8"
    bom: int = 0
    strip_nul: bool = False
    cut_long_lines: bool = False  # some line is longer than LONG_LINE (has_long_lines)
    unquote: bool = False  # every line of its head is quoted (`> `): the marks are taken off

    @property
    def needs_transcoding(self) -> bool:
        return self.codec != "utf-8" or self.bom > 0 or self.strip_nul or self.cut_long_lines or self.unquote

    def describe(self) -> str | None:
        """The assumptions transcoding makes about the file's bytes (None: only lines were cut)."""
        said = []
        if self.codec != "utf-8":
            said.append(f"read as {self.codec.upper()}" + (" (byte order mark)" if self.bom else " (no byte order mark)"))
        elif self.bom:
            said.append("UTF-8 byte order mark dropped")
        elif self.strip_nul:
            said.append("NUL bytes removed")
        if self.unquote:
            said.append("a quote's marks (`> `) taken off each line: a paste quoted as a whole")
        return "; ".join(said) or None


PLAIN = Encoding()


def _bom(head: bytes) -> tuple[str, int] | None:
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    return None


def _utf16_without_bom(head: bytes) -> str | None:
    """UTF-16 text of mostly ASCII characters has a NUL in every other byte."""
    sample = head[: 4096 - (min(len(head), 4096) % 2)]
    if len(sample) < 8:
        return None
    even, odd = sample[0::2], sample[1::2]
    half = len(sample) // 2
    if odd.count(0) >= 0.9 * half and even.count(0) <= 0.05 * half:
        return "utf-16-le"
    if even.count(0) >= 0.9 * half and odd.count(0) <= 0.05 * half:
        return "utf-16-be"
    return None


def is_text_with_nuls(head: bytes) -> bool:
    """NULs in what is otherwise text: a log cut by a crash, not a binary file."""
    if b"\x00" not in head:
        return False
    rest = head.replace(b"\x00", b"")
    if any(b < 0x20 and b not in _TEXT_CONTROLS for b in rest):
        return False
    # Cut at a character boundary: the head may end inside a multi-byte character.
    try:
        rest.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(rest) - 3 or e.reason != "unexpected end of data":
            return False
    return True


def detect(head: bytes) -> Encoding:
    """The encoding of a file from its first bytes."""
    found = _bom(head)
    if found is not None:
        codec, n = found
        return Encoding(codec=codec, bom=n)
    codec = _utf16_without_bom(head)
    if codec is not None:
        return Encoding(codec=codec)
    if is_text_with_nuls(head):
        return Encoding(strip_nul=True)
    return PLAIN


def _quoted(sample: bytes) -> bool:
    """Every whole line of the sample with text on it is quoted, and there are a few."""
    lines = [ln for ln in sample.split(b"\n")[:-1] if ln.strip()]
    return len(lines) >= _QUOTED_LINES and all(_QUOTE_LINE.match(ln) for ln in lines)


def sniff_head(head: bytes, enc: Encoding) -> bytes:
    """The head as sniffers should see it: UTF-8, no BOM, no NULs, no quote marks."""
    if not enc.needs_transcoding:
        return head
    out = head[enc.bom:]
    if enc.codec != "utf-8":
        text = codecs.getincrementaldecoder(enc.codec)("replace").decode(out, final=False)
        out = text.encode("utf-8", "surrogatepass")
    out = out.replace(b"\x00", b"")
    return _QUOTE_LINE.sub(b"", out) if enc.unquote else out


def plan(path: Path, head: bytes) -> Encoding:
    """How the file at `path`, which starts with `head`, must be read: its encoding, and whether
    it is text with a line too long to hold (binary formats keep their bytes)."""
    enc = detect(head)
    sample = sniff_head(head, enc)[:4096]
    text = not any(b < 0x20 and b not in _TEXT_CONTROLS for b in sample)
    if text and _quoted(sample):
        enc = replace(enc, unquote=True)
    if text and path.is_file() and has_long_lines(path):
        enc = replace(enc, cut_long_lines=True)
    return enc


def has_long_lines(path: Path) -> bool:
    """Whether `path` may hold a line longer than LONG_LINE: some LONG_LINE bytes without a line
    break (then a line of more than 2 x LONG_LINE surely exists, or one between the two). One
    look per LONG_LINE bytes through a memory map: only the pages looked at are read."""
    size = os.path.getsize(path)
    if size <= LONG_LINE:
        return False
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for at in range(0, size - LONG_LINE, LONG_LINE):
            if mm.find(b"\n", at, at + LONG_LINE) < 0:
                return True
    return False


@dataclass
class Transcoded:
    path: Path
    nul_bytes: int = 0
    replaced: int = 0  # characters that were not valid in the codec, written as U+FFFD
    cut: list[int] = field(default_factory=list)  # the first lines cut (1-based), up to _EXAMPLES
    n_cut: int = 0  # lines longer than LONG_LINE, cut to their first KEEP bytes
    bytes_left: int = 0  # what the cut lines held beyond KEEP, not read

    def cut_note(self) -> str | None:
        if not self.n_cut:
            return None
        lines = ", ".join(map(str, self.cut)) + (", ..." if self.n_cut > len(self.cut) else "")
        return (f"{self.n_cut} line{'s' if self.n_cut != 1 else ''} longer than {LONG_LINE >> 20} MiB cut to "
                f"{'their' if self.n_cut != 1 else 'its'} first {KEEP >> 10} KiB (line {lines}): "
                f"{self.bytes_left:,} bytes not read")


class _Unquoter:
    """Passes text through with each line's quote marks taken off (`_QUOTE_LINE`), whatever
    chunk a line starts in: the few bytes of a line's start that a chunk ends on wait for the next."""

    def __init__(self):
        self.at_start = True  # the next byte begins a line
        self.held = b""

    def feed(self, data: bytes, final: bool = False) -> bytes:
        data, self.held = self.held + data, b""
        out = bytearray()
        i = 0
        while i < len(data):
            nl = data.find(b"\n", i)
            if self.at_start:
                if nl < 0 and len(data) - i < 64 and not final:
                    self.held = data[i:]  # too little of the line yet to see all its marks
                    break
                m = _QUOTE_LINE.match(data, i, len(data) if nl < 0 else nl)
                i = m.end() if m else i
                self.at_start = False
            if nl < 0:
                out += data[i:]
                break
            out += data[i:nl + 1]
            i = nl + 1
            self.at_start = True
        return bytes(out)


class _LineCutter:
    """Passes text through, each line longer than LONG_LINE cut to its first KEEP bytes. Holds at
    most LONG_LINE bytes of the current line (a line is written once it is known to be short)."""

    def __init__(self, result: Transcoded):
        self.result = result
        self.line = 1
        self.pending = bytearray()  # the current line so far, while it may still be short
        self.seen = 0  # bytes of the current line so far
        self.cutting = False

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        start = 0
        while start < len(data):
            nl = data.find(b"\n", start)
            end = len(data) if nl < 0 else nl + 1
            self._piece(data[start:end] if nl < 0 else data[start:nl], out)
            if nl >= 0:
                self._end_line(out)
            start = end
        return bytes(out)

    def _piece(self, piece: bytes, out: bytearray) -> None:
        self.seen += len(piece)
        if self.cutting:
            self.result.bytes_left += len(piece)
            return
        self.pending += piece
        if self.seen > LONG_LINE:
            self.cutting = True
            self.result.n_cut += 1
            if len(self.result.cut) < _EXAMPLES:
                self.result.cut.append(self.line)
            self.result.bytes_left += len(self.pending) - KEEP
            out += self.pending[:KEEP]
            self.pending = bytearray()

    def _end_line(self, out: bytearray) -> None:
        out += self.pending
        out += b"\n"
        self.pending, self.seen, self.cutting = bytearray(), 0, False
        self.line += 1

    def close(self) -> bytes:
        rest, self.pending = bytes(self.pending), bytearray()
        return rest


def transcode(src: Path, dest: Path, enc: Encoding) -> Transcoded:
    """Write `src` to `dest` as UTF-8 without BOM or NULs, one chunk at a time.

    UTF-8 files are copied as bytes (a Latin-1 byte in a log stays what it was); other codecs
    are decoded, with characters invalid in them written as U+FFFD and counted.
    """
    decoder = None if enc.codec == "utf-8" else codecs.getincrementaldecoder(enc.codec)("replace")
    result = Transcoded(dest)
    cutter = _LineCutter(result) if enc.cut_long_lines else None
    unquoter = _Unquoter() if enc.unquote else None
    with open(src, "rb") as fin, open(dest, "wb") as fout:
        fin.seek(enc.bom)
        while True:
            chunk = fin.read(_CHUNK)
            if decoder is None:
                data = chunk
            else:
                text = decoder.decode(chunk, final=not chunk)
                result.replaced += text.count("\ufffd")
                data = text.encode("utf-8", "surrogatepass")
            n = data.count(b"\x00")
            if n:
                result.nul_bytes += n
                data = data.replace(b"\x00", b"")
            if unquoter is not None:
                data = unquoter.feed(data, final=not chunk)
            if cutter is not None:
                data = cutter.feed(data) + (b"" if chunk else cutter.close())
            fout.write(data)
            if not chunk:
                break
    return result


def annotate(rep, enc: Encoding, done: Transcoded) -> None:
    """Say in a file's load report what reading it through a transcoded copy assumed and changed."""
    described = enc.describe()
    if described:
        rep.assume(described)
    for note in (done.cut_note(),
                 done.nul_bytes and f"{done.nul_bytes} NUL bytes removed (a writer killed mid-block leaves them)",
                 done.replaced and f"{done.replaced} characters not valid {enc.codec.upper()} read as U+FFFD"):
        if note and note not in rep.notes:
            rep.notes.append(note)
