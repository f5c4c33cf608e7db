"""The .wandb block reader on the real capture and on cut, corrupted and foreign bytes."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders.wandb import log as wandb_log

RUNS = Path(__file__).resolve().parents[3] / "data/incidents/h200-2gpu/wandb/wandb"
BASELINE = RUNS / "offline-run-20261130_052027-3lsy4q7j/run-3lsy4q7j.wandb"
FIXED = RUNS / "offline-run-20261130_052320-kpqfxkj2/run-kpqfxkj2.wandb"


@pytest.fixture(scope="module")
def baseline_bytes() -> bytes:
    return BASELINE.read_bytes()


def test_header_and_crc_are_plain_ieee_crc32(baseline_bytes):
    ident, magic, version = struct.unpack_from("<4sHB", baseline_bytes)
    assert (ident, magic, version) == (b":W&B", 0xBEE1, 0)
    crc, length, kind = struct.unpack_from("<IHB", baseline_bytes, 7)
    payload = baseline_bytes[14 : 14 + length]
    assert kind == wandb_log.FULL
    assert crc == zlib.crc32(bytes([kind]) + payload)  # unmasked IEEE, not CRC-32C


def test_real_files_frame_every_record(baseline_bytes):
    scan = wandb_log.scan(baseline_bytes)
    # `wandb leet inspect --json` lists 1046 records for this run (the SDK's own reader).
    assert len(scan.records) == 1046 and scan.seen == 1046
    assert scan.damage == [] and scan.stop is None and not scan.torn
    # The fixed run was copied while live: its last record's FIRST chunk ends the file exactly
    # at a block boundary and its LAST chunk was never written.
    fixed = wandb_log.scan(FIXED.read_bytes())
    assert len(fixed.records) == 1411 and fixed.torn
    assert fixed.stop == (196488, "file ends before the record's last chunk")
    assert fixed.size == 6 * wandb_log.BLOCK


def _record_ends(scan_full: wandb_log.LogScan, data: bytes) -> list[int]:
    """Where each record's last chunk ends: a file cut at or after it must keep the record."""
    ends = []
    for off, rec in zip(scan_full.offsets, scan_full.records, strict=True):
        # walk the chunks of this record to find where its last chunk ends
        pos, left = off, len(rec)
        while True:
            _, length, _ = struct.unpack_from("<IHB", data, pos)
            left -= length
            pos += 7 + length
            if left == 0:
                break
            pos += (-pos) % wandb_log.BLOCK if wandb_log.BLOCK - pos % wandb_log.BLOCK < 7 else 0
        ends.append(pos)
    return ends


def test_cut_at_every_offset_across_a_block_boundary(baseline_bytes):
    full = wandb_log.scan(baseline_bytes)
    ends = _record_ends(full, baseline_bytes)
    # Every offset from 400 bytes before the first block boundary to 400 after it; the record
    # straddling the boundary is split into FIRST/LAST chunks there.
    for cut in range(wandb_log.BLOCK - 400, wandb_log.BLOCK + 400):
        data = baseline_bytes[:cut]
        scan = wandb_log.scan(data)
        want = sum(e <= cut for e in ends)
        assert len(scan.records) == want, cut
        assert scan.records == full.records[:want], cut
        assert scan.damage == []
        if scan.torn:
            at, why = scan.stop
            assert at < cut and why.startswith("file ends"), (cut, scan.stop)
        assert scan.seen == want + int(scan.torn)


def test_cut_files_load_with_balanced_reports(tmp_path, baseline_bytes):
    for cut in (wandb_log.BLOCK - 3, wandb_log.BLOCK + 5, wandb_log.BLOCK + 150, 100_000):
        path = tmp_path / f"cut-{cut}.wandb"
        path.write_bytes(baseline_bytes[:cut])
        inc = pm.load_wandb_run(path)
        rep = inc.load_report.files[0]
        assert rep.unit == "record" and rep.balanced
        if rep.n_skipped:
            assert any("reading stopped at byte" in n for n in rep.notes)
        run = inc.runs["baseline"]
        assert run.exit_record is False
        assert inc.events["message"].str.contains("ended without exit record").any()


def test_flipped_payload_byte_loses_only_that_record(baseline_bytes):
    full = wandb_log.scan(baseline_bytes)
    victim = 500
    off = full.offsets[victim]
    data = bytearray(baseline_bytes)
    data[off + 7 + 3] ^= 0xFF  # inside the payload: the CRC no longer matches
    scan = wandb_log.scan(bytes(data))
    [dmg] = scan.damage
    assert (dmg.start, dmg.why, dmg.lost, dmg.exact) == (off, "CRC mismatch", 1, True)
    assert len(scan.records) == len(full.records) - 1
    assert scan.records == full.records[:victim] + full.records[victim + 1 :]
    assert scan.seen == len(full.records)


def test_flipped_length_resyncs_on_the_next_valid_chunk(baseline_bytes):
    full = wandb_log.scan(baseline_bytes)
    victim = 300
    off = full.offsets[victim]
    data = bytearray(baseline_bytes)
    data[off + 4] ^= 0x40  # the chunk's length field: its end points into the middle of nowhere
    scan = wandb_log.scan(bytes(data))
    [dmg] = scan.damage
    assert dmg.start == off and "unreadable up to the next valid chunk" in dmg.why
    # Everything after the damaged record is found again, and the loss is counted exactly.
    assert scan.records[victim:] == full.records[victim + 1 :]
    assert dmg.lost == 1 and dmg.exact and scan.seen == len(full.records)


def test_damage_in_a_split_record_counts_it_once(baseline_bytes):
    full = wandb_log.scan(baseline_bytes)
    # the record that straddles the first block boundary
    idx = max(i for i, o in enumerate(full.offsets) if o < wandb_log.BLOCK)
    data = bytearray(baseline_bytes)
    data[wandb_log.BLOCK + 7 + 2] ^= 0x01  # inside its LAST chunk, in the next block
    scan = wandb_log.scan(bytes(data))
    [dmg] = scan.damage
    assert dmg.lost == 1 and dmg.start == full.offsets[idx]
    assert scan.records == full.records[:idx] + full.records[idx + 1 :]


def test_flipped_bytes_in_load_report(tmp_path, baseline_bytes):
    full = wandb_log.scan(baseline_bytes)
    data = bytearray(baseline_bytes)
    for victim in (200, 700):
        data[full.offsets[victim] + 7 + 5] ^= 0x10
    path = tmp_path / "flipped.wandb"
    path.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="CRC"):
        inc = pm.load_wandb_run(path)
    rep = inc.load_report.files[0]
    assert rep.read == 1046 and rep.parsed == 1044 and rep.n_skipped == 2 and rep.balanced
    with pytest.raises(pm.SourceFormatError, match="CRC"):
        pm.load_wandb_run(path, on_bad_line="raise")


def test_not_a_wandb_file(tmp_path):
    path = tmp_path / "notes.wandb"
    path.write_text("this is a text file, not a W&B log\n")
    with pytest.raises(pm.SourceFormatError) as e:
        pm.load_wandb_run(path)
    assert e.value.path == path and "W&B" in e.value.expected
    with pytest.raises(wandb_log.NotAWandbLog):
        wandb_log.scan(b"PK\x03\x04 a zip file")


def test_empty_and_header_only_files(tmp_path):
    assert wandb_log.scan(b"").records == []
    part = wandb_log.scan(wandb_log.MAGIC_BYTES[:4])
    assert part.records == [] and part.stop == (0, "file ends inside the W&B file header")
    empty = tmp_path / "empty.wandb"
    empty.write_bytes(b"")
    with pytest.raises(pm.SourceFormatError, match="empty file"):
        pm.load_wandb_run(empty)
    header = tmp_path / "header.wandb"
    header.write_bytes(wandb_log.MAGIC_BYTES)
    inc = pm.load_wandb_run(header)
    rep = inc.load_report.files[0]
    assert rep.read == 0 and rep.balanced and inc.metrics.empty


@pytest.mark.parametrize("block", [1, 2, 3])
def test_a_zeroed_block_is_damage_not_padding(tmp_path, baseline_bytes, block):
    """A 32 KiB block of zeros (a disk or copy fault) loses the records whose bytes it held,
    counted by the records' own numbers; the records after it are read, none glued across it."""
    full = wandb_log.scan(baseline_bytes)
    data = bytearray(baseline_bytes)
    data[block * wandb_log.BLOCK : (block + 1) * wandb_log.BLOCK] = bytes(wandb_log.BLOCK)
    scan = wandb_log.scan(bytes(data))
    [dmg] = scan.damage
    assert dmg.exact and dmg.end == (block + 1) * wandb_log.BLOCK and "32768 zero bytes" in dmg.why
    # What is kept is exactly the full file's records minus one contiguous run of them.
    first = dmg.after
    assert scan.records[:first] == full.records[:first]
    assert scan.records[first:] == full.records[first + dmg.lost :]
    assert scan.seen == len(full.records) == 1046
    nums = [wandb_log.record_num(r) for r in scan.records]
    assert nums[first] - nums[first - 1] - 1 == dmg.lost

    path = tmp_path / "zeroed.wandb"
    path.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="records lost at byte"):
        inc = pm.load_wandb_run(path)
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.read == 1046 and rep.n_skipped == dmg.lost
    assert any(n.startswith(f"{dmg.lost} records lost in bytes {dmg.start}-{dmg.end}") for n in rep.notes)


def test_the_issue_s_zeroed_block_loses_238_records_not_silently(baseline_bytes):
    # Block 1 of the baseline run: before, its FIRST chunk was glued to a LAST chunk two
    # blocks on and 237 records vanished without a note.
    data = bytearray(baseline_bytes)
    data[wandb_log.BLOCK : 2 * wandb_log.BLOCK] = bytes(wandb_log.BLOCK)
    scan = wandb_log.scan(bytes(data))
    assert len(scan.records) == 808 and scan.lost == 238 and scan.seen == 1046
    assert set(scan.records) <= set(wandb_log.scan(baseline_bytes).records)  # nothing glued


@pytest.mark.parametrize("byte", range(7))
def test_a_flipped_header_byte_still_reads_every_record(tmp_path, baseline_bytes, byte):
    data = bytearray(baseline_bytes)
    data[byte] ^= 0x20
    scan = wandb_log.scan(bytes(data))
    assert len(scan.records) == 1046 and scan.header_damage == bytes(data[:7])
    assert wandb_log.is_wandb_log(bytes(data[: 64 * 1024]))
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "run.wandb").write_bytes(bytes(data))
    inc = pm.load_incident(tmp_path / "inc")
    rep = inc.load_report["run.wandb"]
    assert rep.format == "wandb-log" and rep.parsed == 1046 and rep.balanced
    assert any(n.startswith("file header damaged") for n in rep.notes)


def test_a_damaged_header_on_other_bytes_is_still_refused():
    with pytest.raises(wandb_log.NotAWandbLog):
        wandb_log.scan(b":W&B\xe1\xbe\x00" [:5] + b"xx" + b"\x00" * 40)
    assert not wandb_log.is_wandb_log(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)


def test_a_block_cut_out_never_glues_two_records(baseline_bytes):
    """Bytes removed by a bad copy leave valid chunks on both sides: the split record whose
    FIRST chunk now meets another record's LAST chunk is dropped, found by the number jump."""
    full = wandb_log.scan(baseline_bytes)
    data = baseline_bytes[: 2 * wandb_log.BLOCK] + baseline_bytes[3 * wandb_log.BLOCK :]
    scan = wandb_log.scan(data)
    assert set(scan.records) <= set(full.records)
    [dmg] = scan.damage
    assert dmg.exact and "jump" in dmg.why and scan.seen == len(full.records)


@pytest.mark.parametrize("cut", [100, 65536, 65540, 70000])
def test_a_zero_filled_tail_is_a_torn_end_not_damage(baseline_bytes, cut):
    """A file whose last pages were allocated but never written (killed mid-write) ends in zeros."""
    full = wandb_log.scan(baseline_bytes)
    scan = wandb_log.scan(baseline_bytes[:cut] + bytes(30000))
    assert scan.damage == [] and scan.torn and scan.zero_tail[1] >= 30000
    assert scan.records == full.records[: len(scan.records)]
    assert scan.seen == len(scan.records) + 1
