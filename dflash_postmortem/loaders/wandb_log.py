"""The block format of a wandb `.wandb` transaction log, read without the SDK's server.

Layout (verified against wandb 0.31's writer and the real files in the bundled incident):

- a 7-byte file header: ident ``:W&B``, magic 0xBEE1 (little-endian u16), version 0;
- then LevelDB-log style 32 KiB blocks (the header counts towards the first block). Each block
  holds chunks with a 7-byte chunk header: CRC-32 (u32 LE), payload length (u16 LE), chunk type
  (FULL=1, FIRST=2, MIDDLE=3, LAST=4). A record that does not fit in a block is split into
  FIRST, MIDDLE..., LAST chunks; fewer than 7 bytes left at a block's end are zero padding;
- the CRC is the plain IEEE CRC-32 (zlib.crc32) of the type byte followed by the payload. It is
  *not* LevelDB's masked CRC-32C: wandb's writer chose the IEEE polynomial and no masking, which
  the bundled files confirm record by record.

Each record payload is one serialized `wandb.proto.wandb_internal_pb2.Record`; this module only
frames them. A file cut short (a run killed mid-write, a copy taken while the run was live) is
normal input: every complete record before the cut is kept and `LogScan.stop` says where and why
reading ended. A damaged chunk (CRC mismatch) loses only its own record when the chunk's length
field still leads to a valid chunk; otherwise the reader resynchronises on the next chunk header
whose CRC checks out, in the same block or the next one.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

IDENT = b":W&B"
MAGIC = 0xBEE1
VERSION = 0
FILE_HEADER = struct.Struct("<4sHB")
MAGIC_BYTES = FILE_HEADER.pack(IDENT, MAGIC, VERSION)

BLOCK = 32 * 1024
CHUNK_HEADER = 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_CHUNK = struct.Struct("<IHB")
# CRC of each type byte alone: the payload's CRC continues from it (as the writer computes it).
_TYPE_CRC = {t: zlib.crc32(bytes([t])) for t in (FULL, FIRST, MIDDLE, LAST)}


class NotAWandbLog(ValueError):
    """The bytes do not start with the W&B file header (the caller turns this into a
    SourceFormatError naming the file)."""

    def __init__(self, found: bytes):
        self.found = found
        super().__init__(f"expected the W&B log header {MAGIC_BYTES!r}, found {found!r}")


@dataclass
class LogScan:
    """The records framed out of one `.wandb` file, and an account of what could not be."""

    records: list[bytes] = field(default_factory=list)  # payloads, complete and CRC-valid
    offsets: list[int] = field(default_factory=list)  # file offset of each record's first chunk
    damaged: list[tuple[int, str]] = field(default_factory=list)  # (offset, why) per lost record
    dropped_bytes: list[tuple[int, int]] = field(default_factory=list)  # (offset, n) unreadable
    stop: tuple[int, str] | None = None  # (offset, why) when the file ends mid-record
    torn: bool = False  # the file ends inside a record (its start is there, its end is not)
    size: int = 0
    version: int | None = None

    @property
    def seen(self) -> int:
        """Records whose existence the file shows: complete, damaged, and a torn last one."""
        return len(self.records) + len(self.damaged) + int(self.torn)


def is_wandb_log(head: bytes) -> bool:
    return head[:6] == MAGIC_BYTES[:6]


def _valid_chunk_at(data: bytes, pos: int, end: int) -> bool:
    """Whether a chunk header at `pos` is followed by a payload whose CRC checks out."""
    if pos + CHUNK_HEADER > end:
        return False
    crc, length, kind = _CHUNK.unpack_from(data, pos)
    start = pos + CHUNK_HEADER
    if kind not in _TYPE_CRC or start + length > end:
        return False
    return zlib.crc32(data[start : start + length], _TYPE_CRC[kind]) == crc


def _resync(data: bytes, pos: int, size: int) -> int:
    """The next offset after `pos` holding a CRC-valid chunk, or the file's end.

    A false positive needs a 32-bit CRC to match by chance; scanning byte by byte costs one
    cheap header check per position and a CRC only where type and length are plausible.
    """
    p = pos + 1
    while p < size:
        block_end = min((p // BLOCK + 1) * BLOCK, size)
        if block_end - p >= CHUNK_HEADER and _valid_chunk_at(data, p, block_end):
            return p
        p += 1
    return size


def scan(data: bytes) -> LogScan:
    """Frame every record of a `.wandb` file held in memory.

    Raises NotAWandbLog when the header is not W&B's; never raises on damage past it.
    """
    out = LogScan(size=len(data))
    size = len(data)
    if size < FILE_HEADER.size:
        if data != MAGIC_BYTES[:size]:
            raise NotAWandbLog(data)
        if size:
            out.stop = (0, "file ends inside the W&B file header")
        return out
    ident, magic, version = FILE_HEADER.unpack_from(data, 0)
    if ident != IDENT or magic != MAGIC:
        raise NotAWandbLog(data[: FILE_HEADER.size])
    out.version = version

    records, offsets, damaged = out.records, out.offsets, out.damaged
    unpack, crc32, type_crc = _CHUNK.unpack_from, zlib.crc32, _TYPE_CRC
    pos = FILE_HEADER.size
    parts: list[bytes] = []  # chunks of a record split across blocks
    first_at = -1
    # After damage, MIDDLE/LAST chunks may follow whose record is already counted as damaged.
    lost_open = False

    def torn(at: int, why: str) -> None:
        out.stop, out.torn = (at, why), True

    while pos < size:
        left = BLOCK - pos % BLOCK
        if left < CHUNK_HEADER:
            pos += left  # zero padding at the end of a block
            continue
        if size - pos < CHUNK_HEADER:
            if data[pos:].strip(b"\0"):
                torn(first_at if parts else pos, "file ends inside a chunk header")
            elif parts:
                torn(first_at, "file ends before the record's last chunk")
            parts = []
            break
        crc, length, kind = unpack(data, pos)
        start = pos + CHUNK_HEADER
        end = start + length
        fits = kind in type_crc and length <= left - CHUNK_HEADER
        if fits and end > size:
            # The chunk header is sound but its payload runs past the end: a torn tail.
            torn(first_at if parts else pos, "file ends inside a record's payload")
            parts = []
            break
        payload = data[start:end]
        if fits and crc32(payload, type_crc[kind]) == crc:
            if kind == FULL:
                if parts:
                    damaged.append((first_at, "record's last chunk missing"))
                    parts = []
                records.append(payload)
                offsets.append(pos)
                lost_open = False
            elif kind == FIRST:
                if parts:
                    damaged.append((first_at, "record's last chunk missing"))
                parts = [payload]
                first_at = pos
                lost_open = False
            elif not parts:
                if not lost_open:
                    damaged.append((pos, "chunk without the start of its record"))
                    lost_open = True
            elif kind == MIDDLE:
                parts.append(payload)
            else:
                parts.append(payload)
                records.append(b"".join(parts))
                offsets.append(first_at)
                parts = []
            pos = end
            continue
        if kind == 0 and length == 0 and crc == 0 and not data[pos : pos + left].strip(b"\0"):
            # Zero-filled rest of a block (preallocated or padded by the writer).
            pos += left
            continue
        why = "CRC mismatch" if fits else f"impossible chunk header (type {kind}, length {length})"
        if parts:
            damaged.append((first_at, f"{why} in a later chunk of the record"))
            parts = []
        elif not (lost_open and kind in (MIDDLE, LAST)):
            damaged.append((pos, why))
        lost_open = True
        # Trust the length when it leads to a valid chunk (or to the block's or file's end):
        # then this record alone is lost. Otherwise look for the next valid chunk.
        nxt_left = BLOCK - end % BLOCK
        if fits and (
            end == size
            or nxt_left < CHUNK_HEADER
            or _valid_chunk_at(data, end, min(end + nxt_left, size))
        ):
            pos = end
        else:
            nxt = _resync(data, pos, size)
            out.dropped_bytes.append((pos, nxt - pos))
            pos = nxt
    if parts:
        torn(first_at, "file ends before the record's last chunk")
    return out
