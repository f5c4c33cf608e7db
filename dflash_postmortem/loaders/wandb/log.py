"""The block format of a wandb `.wandb` transaction log, read without the SDK's server.

Layout (verified against wandb 0.31's writer, the 0.1x Python writer's files and the real files in
the bundled incident):

- a 7-byte file header: ident ``:W&B``, magic 0xBEE1 (little-endian u16), version 0;
- then LevelDB-log style 32 KiB blocks (the header counts towards the first block). Each block
  holds chunks with a 7-byte chunk header: CRC-32 (u32 LE), payload length (u16 LE), chunk type
  (FULL=1, FIRST=2, MIDDLE=3, LAST=4). A record that does not fit in a block is split into
  FIRST, MIDDLE..., LAST chunks; fewer than 7 bytes left at a block's end are zero padding, the
  only zeros either writer (Python's datastore.py, wandb-core's Go port) ever leaves;
- the CRC is the plain IEEE CRC-32 (zlib.crc32) of the type byte followed by the payload. It is
  *not* LevelDB's masked CRC-32C: wandb's writer chose the IEEE polynomial and no masking, which
  the bundled files confirm record by record.

Each record payload is one serialized `wandb.proto.wandb_internal_pb2.Record`; this module only
frames them. A file cut short (a run killed mid-write, a copy taken while the run was live) is
normal input: every complete record before the cut is kept and `LogScan.stop` says where and why
reading ended. Anything else that is not a valid chunk where one must be is *damage*, never
padding: a zeroed block (a disk or copy fault), a flipped CRC or length, garbage. Damage loses the
records whose bytes it holds; reading goes on at the next chunk whose CRC checks out, and a record
whose first and last chunks lie on both sides of damage is never glued together. How many records
each damaged range lost is read from the records' own numbers (`Record.num`, field 1, which both
writers count up from 1 for each record they write) on both sides of it, and estimated from the
size of the range when the writer left them unnumbered (0.1x online runs).
"""

from __future__ import annotations

import re
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
_NOT_ZERO = re.compile(rb"[^\x00]")
# A damaged header is still W&B's when most of it is and a valid first chunk follows it.
_HEADER_BYTES_THAT_MUST_MATCH = 4


class NotAWandbLog(ValueError):
    """The bytes do not start with the W&B file header (the caller turns this into a
    SourceFormatError naming the file)."""

    def __init__(self, found: bytes):
        self.found = found
        super().__init__(f"expected the W&B log header {MAGIC_BYTES!r}, found {found!r}")


@dataclass
class Damage:
    """A byte range that should have held chunks and did not, and the records lost with it."""

    start: int  # first damaged byte
    end: int  # one past the last: where reading went on (or the file's end)
    why: str
    after: int  # how many complete records come before it (its place among `records`)
    lost: int = 1  # records lost here: whole ones, and ones with a chunk on either side
    exact: bool = False  # `lost` read from the records' numbers, not estimated from the size

    def describe(self) -> str:
        how = "by the records' own numbers" if self.exact else "estimated from the damaged bytes"
        n = f"{self.lost} record{'s' if self.lost != 1 else ''}"
        return f"{n} lost in bytes {self.start}-{self.end} ({self.end - self.start} bytes): {self.why} [{how}]"


@dataclass
class LogScan:
    """The records framed out of one `.wandb` file, and an account of what could not be."""

    records: list[bytes] = field(default_factory=list)  # payloads, complete and CRC-valid
    offsets: list[int] = field(default_factory=list)  # file offset of each record's first chunk
    damage: list[Damage] = field(default_factory=list)  # ranges that lost records, in file order
    stop: tuple[int, str] | None = None  # (offset, why) when the file ends mid-record
    torn: bool = False  # the file ends inside a record (its start is there, its end is not)
    zero_tail: tuple[int, int] | None = None  # (offset, n): the file ends in n zero bytes
    header_damage: bytes | None = None  # the 7 header bytes found when they are not W&B's
    size: int = 0
    version: int | None = None

    @property
    def lost(self) -> int:
        return sum(d.lost for d in self.damage)

    @property
    def seen(self) -> int:
        """Records whose existence the file shows: complete, lost to damage, a torn last one."""
        return len(self.records) + self.lost + int(self.torn)


def record_num(payload: bytes) -> int | None:
    """`Record.num` (field 1, a varint, serialised first) of a record payload, or None."""
    if len(payload) < 2 or payload[0] != 0x08:
        return None
    n, shift = 0, 0
    for b in payload[1:11]:
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n
        shift += 7
    return None


def _valid_chunk_at(data: bytes, pos: int, end: int) -> bool:
    """Whether a chunk header at `pos` is followed by a payload whose CRC checks out."""
    if pos + CHUNK_HEADER > end:
        return False
    crc, length, kind = _CHUNK.unpack_from(data, pos)
    start = pos + CHUNK_HEADER
    if kind not in _TYPE_CRC or start + length > end:
        return False
    return zlib.crc32(data[start : start + length], _TYPE_CRC[kind]) == crc


def _first_chunk_valid(data: bytes) -> bool:
    """A record chunk that opens a record (FULL or FIRST) right after the 7-byte header."""
    if len(data) < FILE_HEADER.size + CHUNK_HEADER:
        return False
    kind = data[FILE_HEADER.size + 6]
    return kind in (FULL, FIRST) and _valid_chunk_at(data, FILE_HEADER.size, min(BLOCK, len(data)))


def _header_nearly_right(head: bytes) -> bool:
    same = sum(a == b for a, b in zip(head[: FILE_HEADER.size], MAGIC_BYTES, strict=False))
    return same >= _HEADER_BYTES_THAT_MUST_MATCH and _first_chunk_valid(head)


def is_wandb_log(head: bytes) -> bool:
    """The W&B header, or a damaged one followed by a CRC-valid first record."""
    return head[:6] == MAGIC_BYTES[:6] or _header_nearly_right(head)


def _resync(data: bytes, pos: int, size: int) -> int:
    """The next offset after `pos` holding a CRC-valid chunk, or the file's end.

    A false positive needs a 32-bit CRC to match by chance; scanning byte by byte costs one
    cheap header check per position and a CRC only where type and length are plausible. A valid
    chunk's type byte is not zero, so a run of zeros is skipped to within 6 bytes of its end.
    """
    p = pos + 1
    while p < size:
        if not data[p + CHUNK_HEADER - 1 : p + CHUNK_HEADER].strip(b"\0"):
            m = _NOT_ZERO.search(data, p + CHUNK_HEADER - 1)
            if m is None:
                return size
            p = max(p + 1, m.start() - (CHUNK_HEADER - 1))
            continue
        block_end = min((p // BLOCK + 1) * BLOCK, size)
        if block_end - p >= CHUNK_HEADER and _valid_chunk_at(data, p, block_end):
            return p
        p += 1
    return size


def scan(data: bytes) -> LogScan:
    """Frame every record of a `.wandb` file held in memory.

    Raises NotAWandbLog when the header is not W&B's (and no valid record follows a damaged
    one); never raises on damage past it.
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
        if not _header_nearly_right(data):
            raise NotAWandbLog(data[: FILE_HEADER.size])
        out.header_damage = data[: FILE_HEADER.size]
    elif version != VERSION:
        # Both writers only ever wrote version 0: another value is a damaged byte too.
        out.header_damage = data[: FILE_HEADER.size]
    out.version = version

    records, offsets, damage = out.records, out.offsets, out.damage
    unpack, crc32, type_crc = _CHUNK.unpack_from, zlib.crc32, _TYPE_CRC
    pos = FILE_HEADER.size
    parts: list[bytes] = []  # chunks of a record split across blocks
    first_at = -1
    # After damage, MIDDLE/LAST chunks may follow whose record is already counted as damaged.
    lost_open = False

    def torn(at: int, why: str) -> None:
        out.stop, out.torn = (at, why), True

    def damaged(start: int, end: int, why: str) -> None:
        # Damage with no complete record between it and the last one is the same gap.
        if damage and damage[-1].after == len(records):
            last = damage[-1]
            last.end = max(last.end, end)
            if why not in last.why:
                last.why += f"; {why}"
        else:
            damage.append(Damage(start, end, why, len(records)))

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
                    damaged(first_at, pos, "a record's last chunk is missing")
                    parts = []
                records.append(payload)
                offsets.append(pos)
                lost_open = False
            elif kind == FIRST:
                if parts:
                    damaged(first_at, pos, "a record's last chunk is missing")
                parts = [payload]
                first_at = pos
                lost_open = False
            elif not parts:
                if not lost_open:
                    damaged(pos, end, "a chunk without the start of its record")
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
        from_ = first_at if parts else pos
        if crc == 0 and length == 0 and kind == 0:
            m = _NOT_ZERO.search(data, pos)
            if m is None:
                # Zeros to the end: space the file system allocated and the writer never
                # filled (killed mid-write, or a crash before the data reached the disk).
                out.zero_tail = (pos, size - pos)
                if parts:
                    torn(first_at, "file ends in zeros before the record's last chunk")
                parts = []
                break
            nxt = _resync(data, pos, size)
            damaged(from_, nxt, f"{m.start() - pos} zero bytes where chunks belong")
            parts, lost_open, pos = [], True, nxt
            continue
        why = "CRC mismatch" if fits else f"impossible chunk header (type {kind}, length {length})"
        if parts:
            why += " in a later chunk of the record"
        # Trust the length when it leads to a valid chunk (or to the block's or file's end):
        # then this record alone is lost. Otherwise look for the next valid chunk.
        nxt_left = BLOCK - end % BLOCK
        if fits and (
            end == size
            or nxt_left < CHUNK_HEADER
            or _valid_chunk_at(data, end, min(end + nxt_left, size))
        ):
            nxt = end
        else:
            nxt = _resync(data, pos, size)
            why += ", unreadable up to the next valid chunk"
            zeros = size - len(data.rstrip(b"\0"))
            if nxt == size and zeros >= CHUNK_HEADER:
                # The record being written when the file's tail stayed unwritten (zeros).
                out.zero_tail = (size - zeros, zeros)
                torn(from_, "file ends in zeros inside a record")
                parts = []
                break
        if not (lost_open and not parts and kind in (MIDDLE, LAST)):
            damaged(from_, nxt, why)
        elif damage:
            damage[-1].end = max(damage[-1].end, nxt)
        parts, lost_open, pos = [], True, nxt
    if parts:
        torn(first_at, "file ends before the record's last chunk")
    _check_numbering(out)
    _count_lost(out)
    return out


def _check_numbering(out: LogScan) -> None:
    """A split record glued from two records: its number is followed by a jump.

    Whole blocks cut out of a file (a bad copy) leave every remaining chunk valid, and a record's
    FIRST chunk may then meet the LAST chunk of another one. The records' numbers show it: the
    one after the glued record is not the next number. Such a record is dropped, and the jump
    counts the records lost with it. A jump after a record held in one chunk proves nothing
    (numbers a writer skipped), so it is left alone.
    """
    nums = [record_num(r) for r in out.records]
    damaged_at = {d.after for d in out.damage}
    glued = []
    for i in range(1, len(nums)):
        a, b = nums[i - 1], nums[i]
        if a is None or b is None or b <= a + 1 or i in damaged_at or i - 1 in damaged_at:
            continue
        if not _is_split(out, i - 1):
            continue
        glued.append(i - 1)
        why = (f"record numbers jump from {a} to {b} right after a record split across blocks: "
               "its chunks belong to two records (bytes cut out of the file), so it is dropped")
        out.damage.append(Damage(out.offsets[i - 1], out.offsets[i], why, i))
    for i in reversed(glued):
        del out.records[i], out.offsets[i]
    for d in out.damage:
        d.after -= sum(g < d.after for g in glued)
    out.damage.sort(key=lambda d: (d.after, d.start))


def _is_split(out: LogScan, i: int) -> bool:
    """Whether record `i` was split across blocks (its chunks may belong to two records)."""
    start = out.offsets[i]
    return (start % BLOCK) + CHUNK_HEADER + len(out.records[i]) > BLOCK


def _count_lost(out: LogScan) -> None:
    """Records lost per damaged range, from the numbers of the records around it."""
    if not out.damage:
        return
    nums = [record_num(r) for r in out.records]
    total = sum(len(r) + CHUNK_HEADER for r in out.records)
    mean = total / len(out.records) if out.records else None
    for d in out.damage:
        i = d.after
        a = nums[i - 1] if i > 0 else 0  # both writers number a file's records from 1
        b = nums[i] if i < len(nums) else None
        if a is not None and b is not None and b > a + 1:
            d.lost, d.exact = b - a - 1, True
        else:
            d.lost = _estimate(d, mean)


def _estimate(d: Damage, mean: float | None) -> int:
    if not mean:
        return 1
    return max(1, round((d.end - d.start) / mean))
