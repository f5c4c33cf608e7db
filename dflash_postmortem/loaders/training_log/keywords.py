"""Which lines of a block can give a row: those that hold one of the patterns' keywords (a line
without any has no metric and no event). Two searches find the same lines; which is faster
depends on how many lines hold one.

- Hyperscan compiles the ~150 keywords into one regex, a keyword then the rest of its line,
  searched by a SIMD matcher that skips the bytes no keyword can start at, as grep does. It
  reports a pattern once at each end, so once a line that holds keywords (`_Literals` with
  `lines`); each report is a call back into Python, which takes the GIL again (python-hyperscan
  lets go of it while it searches): ~0.45 us a line alone, far more beside a thread running
  Python.
- RE2's alternation of the same keywords (pyarrow's `match_substring_regex`) reads every line
  and stops at a line's first keyword: ~0.15 us a line (~540 MB/s on the DFlash log, where
  Hyperscan is 3x faster), and faster than Hyperscan's reports on a log where most lines hold
  one (a fairseq or nanoGPT log).

The scan picks per block from the block read before (`sparse`): few candidates, Hyperscan.
"""

from __future__ import annotations

import functools
import threading

import hyperscan
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import patterns as lp

# One line in this many bytes holding a keyword, or fewer: Hyperscan's pass and its finds (two a
# candidate line, ~0.4 us) cost less than RE2's per-line search (~2 ns a byte with its per-line cost).
SPARSE_BYTES = 300


class Keywords:
    """The keywords of every pattern (and of the user's), compiled for both searches."""

    def __init__(self, literals: tuple[tuple[bytes, bool], ...]):
        self.literals = literals  # (keyword, case-insensitive)
        self.regex = "|".join(f"(?i:{re2_literal(k)})" if folded else re2_literal(k) for k, folded in literals)
        self._search = _Literals(literals, lines=True)

    @classmethod
    def of(cls, user=()) -> Keywords:
        """The keywords of every built-in pattern and of the user's patterns that have one."""
        return _compiled(tuple(p.keyword for p in user if p.keyword))

    def lines(self, block: bytes, ends: np.ndarray, lines: pa.Array, sparse: bool) -> np.ndarray:
        """The indices of the block's lines (`lines`, each ending at its entry of `ends`: a
        newline, or the block's end) that hold a keyword, in order."""
        if not len(ends):
            return np.empty(0, np.int64)
        if not sparse:
            return np.flatnonzero(pc.match_substring_regex(lines, self.regex).to_numpy(zero_copy_only=False))
        found: list[int] = []
        self._search.scan(block, _note_end, found)
        if not found:
            return np.empty(0, np.int64)
        # a keyword holds no newline: its last byte lies on the line of the first end at or after it
        at = np.searchsorted(ends, np.asarray(found, np.int64) - 1)
        # Hyperscan reports in the order of the finds' ends, so a line's finds come together
        if len(at) > 1 and (at[1:] >= at[:-1]).all():
            return at[np.flatnonzero(np.diff(at, prepend=-1))]
        return np.unique(at)


class PatternKeywords:
    """Which of a list of patterns have one of their keywords in a text, from one search (the
    keywords of a pattern whose case is folded, in any case); a pattern without keywords is always
    tried. The event patterns are ~60, tried on every candidate line that gave no metric: one
    substring test per keyword and a regex for each case-insensitive pattern cost ~36 us a line,
    one search ~2 us."""

    def __init__(self, patterns: tuple[tuple[tuple[str, ...], bool], ...]):
        self.always = frozenset(i for i, (kws, _) in enumerate(patterns) if not kws)
        found = [(k, folded, i) for i, (kws, folded) in enumerate(patterns) for k in kws]
        self._owner = [i for _, _, i in found]
        self._search = _Literals(tuple((k.encode(), folded) for k, folded, _ in found))

    def present(self, text: str) -> set[int]:
        """The indices of the patterns to try on `text`."""
        found = set(self.always)
        owner = self._owner
        self._search.scan(text.encode(), lambda i, _s, _e, _f, _c: found.add(owner[i]), None)
        return found


class _Literals:
    """Literals (each with whether its case is folded) compiled into one Hyperscan database, each
    reported where it is found (`lines`: one regex, a literal then the rest of its line, reported
    once at the end of each line that holds any: after its newline, or at the data's end)."""

    def __init__(self, literals: tuple[tuple[bytes, bool], ...], lines: bool = False):
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        if lines:
            either = "|".join(f"(?i:{_hs_literal(k)})" if folded else _hs_literal(k) for k, folded in literals)
            self._db.compile(expressions=[f"(?:{either})[^\\n]*(?:\\n|\\z)".encode()], ids=[0], elements=1, flags=[0])
        else:
            self._db.compile(expressions=[k for k, _ in literals], ids=list(range(len(literals))),
                             elements=len(literals), literal=True,
                             flags=[hyperscan.HS_FLAG_CASELESS if folded else 0 for _, folded in literals])
        self._scratch = threading.local()  # Hyperscan's scratch space is one thread's at a time

    def scan(self, data: bytes, on_find, context) -> None:
        """Call `on_find(id, start, end, flags, context)` for every find in `data`."""
        if not data:
            return
        scratch = getattr(self._scratch, "space", None)
        if scratch is None:
            scratch = self._scratch.space = hyperscan.Scratch(self._db)
        self._db.scan(data, match_event_handler=on_find, context=context, scratch=scratch)


def _hs_literal(keyword: bytes) -> str:
    # byte by byte: Hyperscan reads bytes (no UTF-8 mode), as RE2 does the lines' binary arrays
    return "".join(chr(b) if chr(b).isalnum() and b < 128 else f"\\x{b:02x}" for b in keyword)


def _note_end(_id: int, _start: int, end: int, _flags: int, found: list) -> None:
    found.append(end)


def re2_literal(keyword: bytes) -> str:
    # RE2 rejects some of Python's escapes (`\ `); hex escapes mean the same to both. Byte by
    # byte: the lines are binary arrays, which RE2 reads as Latin-1 (a code point past 255, the
    # `\x{5df2}` of a keyword that is not ASCII, is no escape there)
    return _hs_literal(keyword)


@functools.lru_cache(maxsize=16)
def _compiled(user: tuple[bytes, ...]) -> Keywords:
    parts = [p.keyword for p in lp.METRIC_PATTERNS] + [f.keyword for f in lp.FIELD_FORMATS] + list(lp.GENERIC_KEYWORDS)
    parts += [lp.HF_DICT_KEYWORD, lp.TRACEBACK_KEYWORD, lp.THREAD_EXCEPTION_KEYWORD, *lp.BAR_KEYWORDS]
    parts += [k.encode() for k in (*lp.FAILURE_TABLE_KEYWORDS, *lp.UNIT_KEYWORDS, *lp.FAULTHANDLER_KEYWORDS, *lp.PYSPY_KEYWORDS,
                                   *lp.STEP_HEADER_KEYWORDS, *lp.BLOCK_FIELD_KEYWORDS, lp.KERAS_EPOCH_KEYWORD)]
    literals = {(k, False): None for k in (*parts, *user)}
    for p in lp.EVENT_PATTERNS:
        literals.update({(k.encode(), p.case_insensitive_keyword): None for k in p.keywords})
    return Keywords(tuple(literals))
