"""Text encodings as files really arrive: a UTF-8 BOM (Notepad, PowerShell 7's `utf8BOM`),
UTF-16 (Windows PowerShell 5's `>` and `Out-File`), UTF-32, NUL bytes in a log whose writer was
killed mid-block. Every loader reads UTF-8 bytes; this module decides, from the first bytes of a
file, whether it must be transcoded first, and does it as a stream (the file is never held).

Line numbers survive transcoding (a line break stays a line break), so evidence refs still open
the original file at the right line.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
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
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Encoding:
    """How a file's bytes must be read: `codec` to decode, `bom` bytes to drop, and whether NUL
    bytes are to be removed (text with NULs, never binary)."""

    codec: str = "utf-8"
    bom: int = 0
    strip_nul: bool = False

    @property
    def needs_transcoding(self) -> bool:
        return self.codec != "utf-8" or self.bom > 0 or self.strip_nul

    def describe(self) -> str:
        if self.codec != "utf-8":
            return f"read as {self.codec.upper()}" + (" (byte order mark)" if self.bom else " (no byte order mark)")
        if self.bom:
            return "UTF-8 byte order mark dropped"
        return "NUL bytes removed"


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


def sniff_head(head: bytes, enc: Encoding) -> bytes:
    """The head as sniffers should see it: UTF-8, no BOM, no NULs."""
    if not enc.needs_transcoding:
        return head
    out = head[enc.bom:]
    if enc.codec != "utf-8":
        text = codecs.getincrementaldecoder(enc.codec)("replace").decode(out, final=False)
        out = text.encode("utf-8", "surrogatepass")
    return out.replace(b"\x00", b"")


@dataclass
class Transcoded:
    path: Path
    nul_bytes: int = 0
    replaced: int = 0  # characters that were not valid in the codec, written as U+FFFD


def transcode(src: Path, dest: Path, enc: Encoding) -> Transcoded:
    """Write `src` to `dest` as UTF-8 without BOM or NULs, one chunk at a time.

    UTF-8 files are copied as bytes (a Latin-1 byte in a log stays what it was); other codecs
    are decoded, with characters invalid in them written as U+FFFD and counted.
    """
    decoder = None if enc.codec == "utf-8" else codecs.getincrementaldecoder(enc.codec)("replace")
    result = Transcoded(dest)
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
            fout.write(data)
            if not chunk:
                break
    return result
