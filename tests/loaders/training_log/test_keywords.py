"""The candidate lines of a log (those holding a pattern's keyword) as both searches find them
(keywords.py: Hyperscan's literal matcher, RE2's alternation per line), against a plain Python
reference, on every file of the corpus and of the bundled incidents."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from dflash_postmortem.load_report import FileReport
from dflash_postmortem.loaders.training_log.keywords import SPARSE_BYTES, Keywords
from dflash_postmortem.loaders.training_log.process_log import LogScanner

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted(p for d in ("tests/fixtures/real-world", "data/incidents") for p in (ROOT / d).rglob("*")
               if p.is_file() and p.stat().st_size < (4 << 20))


def _lines(block: bytes) -> tuple[np.ndarray, pa.Array]:
    ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
    if block and not block.endswith(b"\n"):
        ends = np.append(ends, len(block))
    offsets = np.concatenate([[0], np.minimum(ends + 1, len(block))]).astype(np.int32)
    return ends, pa.BinaryArray.from_buffers(pa.binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(block)])


def _reference(block: bytes, keywords: Keywords) -> list[int]:
    """Each keyword's every occurrence by `bytes.find` (the folded ones in the block lowered, as
    ASCII case folds), each on the line of the first newline at or after it (no keyword holds one)."""
    ends = _lines(block)[0]
    lowered = block.lower()
    at = []
    for k, folded in keywords.literals:
        text, i = (lowered, lowered.find(k.lower())) if folded else (block, block.find(k))
        while i >= 0:
            at.append(i)
            i = text.find(k.lower() if folded else k, i + 1)
    return sorted(set(np.searchsorted(ends, np.asarray(at, np.int64)).tolist())) if at else []


def test_every_file_has_the_same_candidates_by_both_searches():
    keywords = Keywords.of()
    assert len(FILES) > 900
    differ, candidates = [], 0
    for path in FILES:
        block = path.read_bytes().replace(b"\x00", b"")
        ends, lines = _lines(block)
        fast, per_line = keywords.lines(block, ends, lines, sparse=True), keywords.lines(block, ends, lines, sparse=False)
        want = _reference(block, keywords)
        if fast.tolist() != want or per_line.tolist() != want:
            differ.append(path.relative_to(ROOT))
        candidates += len(want)
    assert not differ and candidates > 20_000, differ


@pytest.mark.parametrize("text", [b"", b"\n", b"no keyword here\n", b"tok/s", b"a\nSIGNAL 9\nb\n", b"loss\nloss\n"])
def test_edges(text):
    keywords = Keywords.of()
    ends, lines = _lines(text)
    want = _reference(text, keywords)
    assert keywords.lines(text, ends, lines, True).tolist() == keywords.lines(text, ends, lines, False).tolist() == want


def test_a_users_keyword_is_searched(tmp_path):
    from dflash_postmortem.loaders.training_log.patterns import UserPattern

    mine = UserPattern("mine", b"zorp=", None, "train/zorp")
    text = b"a zorp=3\nb\n"
    ends, lines = _lines(text)
    assert Keywords.of((mine,)).lines(text, ends, lines, True).tolist() == [0]
    assert Keywords.of().lines(text, ends, lines, True).tolist() == []


def test_the_scan_picks_the_search_by_the_density_of_the_block_before(tmp_path):
    # a DFlash log, one trainer line among nine of filler: Hyperscan's; a nanoGPT log, where every
    # line holds `iter ` and `loss`: RE2's per line from its second block on
    sparse, dense = tmp_path / "dflash.log", tmp_path / "nanogpt.log"
    filler = b"2026-11-30 06:41:36 [run] target forward 12: 12 blocks, 4096 positions, hidden 2048\n"
    sparse.write_bytes((b"2026-11-30 06:41:36 [run] step 12 loss 6.44 tok/s 21500\n" + filler * 9) * 40)
    line = b"iter 1200: loss 3.2134, time 151.23ms, mfu 38.21%\n"
    dense.write_bytes(line * 300)
    for path, want, rows in ((sparse, True, 40 * 2), (dense, False, 300 * 3)):
        scanner = LogScanner(path, FileReport(path=path.name, format="training-log"), block_bytes=4096)
        assert sum(len(r.metrics["line"]) for r in scanner.scan()) == rows
        assert scanner.sparse is want, path
    # the rule's two sides: a candidate every line of 50 bytes; one in ten lines of ~85 bytes
    assert len(line) < SPARSE_BYTES < 9 * len(filler)
