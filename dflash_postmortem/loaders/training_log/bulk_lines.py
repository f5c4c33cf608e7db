"""The candidate lines of the known trainer formats (patterns.METRIC_PATTERNS and FIELD_FORMATS:
torchtitan, nanoGPT, Megatron, fairseq, timm...) read in bulk: which lines of a block are plain
records of one format, their fields and their own times, told for the whole block by Arrow's
regex kernels (RE2) in the scan's threads.

A plain record is a line the general path (process_log.LogScanner._line) would read for that
format's metrics and for nothing else: ASCII text once its colour and one launcher prefix are
taken off, that the rest of its cleaning leaves as it is (no CR inside it, no HTML escape), no
second record glued on, no progress bar, no word that opens a traceback, a dump, a failure table
or a metric block, and no format before it in the general path's order that reads it. Each of
these is asked of RE2 as the general path asks it of Python's re. Where a regex of the general
path has a lookaround RE2 lacks, RE2 is asked a looser one (`_looser`: it matches wherever the
original does), and a line it cannot clear takes the general path; where a field format's
separator or step regex has one, and for the bar regex, Python's re reads those lines here. What
depends on the lines before (the time a line without one borrows, the run, the file's calendar)
stays the scan's, which gives it to a run of such lines at once (process_log `_plain_run`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from re import _parser as sre_parse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..terminal import ESCAPES
from . import patterns as lp
from .keywords import re2_literal
from .line_metrics import MAX_FIELD_CHARS
from .times import END_BACK, SEARCHED, TIMESTAMPS, stamp_of

# Words that send a line to the general path: what `_clean` would change, what opens or closes a
# record of several lines, and what the general path reads before a line's metrics.
_HAZARD_WORDS = (
    b"\r", b"^M", b"&", b"<pre>", lp.TRACEBACK_KEYWORD, lp.THREAD_EXCEPTION_KEYWORD,
    *(k.encode() for k in (*lp.FAULTHANDLER_KEYWORDS, *lp.STEP_HEADER_KEYWORDS)), b"train_runtime",
    b"[rank", b"]<std",
)


def _looser(regex: str) -> str:
    """`regex` with its lookarounds taken off, as RE2 reads it: a lookbehind or a negative
    lookahead dropped, a positive lookahead kept as a group that consumes. Where the original
    matches, this one matches at the same place (a superset, asked only whether it matches)."""
    out, i = [], 0
    while i < len(regex):
        m = re.match(r"\(\?(<=|<!|=|!)", regex[i:])
        if m is None:
            j = _token_end(regex, i)
            out.append(regex[i:j])
            i = j
            continue
        depth, j = 1, i + len(m.group(0))
        while depth:
            depth += {"(": 1, ")": -1}.get(regex[j], 0)
            j = _token_end(regex, j)
        if m.group(1) == "=":
            out.append("(?:" + _looser(regex[i + len(m.group(0)) : j - 1]) + ")")
        i = j
    return "".join(out)


def _token_end(regex: str, i: int) -> int:
    """Where the token at `i` ends: an escape, a character class (whose brackets and parentheses
    are characters), or one character."""
    if regex[i] == "\\":
        return i + 2
    if regex[i] != "[":
        return i + 1
    j = i + 1 + (regex[i + 1 : i + 2] == "^")
    j += regex[j : j + 1] == "]"  # a `]` first in a class is a character
    while regex[j] != "]":
        j += 2 if regex[j] == "\\" else 1
    return j + 1


def _unnamed(regex: str) -> str:
    """`regex` asked only whether it matches: its named groups (some share a name) plain."""
    return re.sub(r"\(\?P<\w+>", "(?:", regex)


def _re2(regex: str) -> str | None:
    """`regex` if RE2 reads it (Arrow's kernels), else None."""
    try:
        pc.match_substring_regex(pa.array([b""]), pattern=regex)
    except pa.ArrowInvalid:
        return None
    return regex


def _never_empty(regex: re.Pattern, groups) -> bool:
    """Whether each of `groups` (those `regex` has) matches at least one character: RE2, and
    this module for Python's, give a group that did not take part as empty text, which is then
    told from one that matched nothing."""
    widths = {}

    def walk(sub):
        for op, av in sub:
            if op is sre_parse.SUBPATTERN:
                group, _, _, inner = av
                if group is not None:
                    widths[group] = inner.getwidth()[0]
                walk(inner)
            elif op is sre_parse.BRANCH:
                for branch in av[1]:
                    walk(branch)
            elif op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, sre_parse.POSSESSIVE_REPEAT):
                walk(av[2])

    walk(sre_parse.parse(regex.pattern))
    return all(widths.get(regex.groupindex[g], 0) > 0 for g in groups if g in regex.groupindex)


# A line with one of these needs the general path.
_HAZARDS = "[^\\t\\x20-\\x7e]|" + "|".join(re2_literal(w) for w in _HAZARD_WORDS)
# Text any time find_stamp reads holds (its hours and minutes, as ASCII or other digits), or
# text whose cleaning may make it (colour, a pager's ^M, an HTML escape): a line without it has none.
_TIME_LIKE = r"\d\d:\d\d|[^\x00-\x7f]|\x{1b}|\^M|&|<pre>"
# a prefix strip_prefixes would take off (patterns.PREFIXES), looser where RE2 needs it; the
# lines it looks at (its gate); each prefix's regex as RE2 reads it (None where it cannot), the
# prefix and what it names captured, and a looser one
_PREFIXES = "|".join("(?:" + _unnamed(_looser(rx.pattern)) + ")" for _, rx in lp.PREFIXES)
_PREFIX_GATE = r"^(?:[\[`<]|stderr: |stdout: |.{0,44}pid=)"  # strip_prefixes' first test, as RE2 asks it
_PREFIX_FORMS = tuple((_re2("^(?P<prefix>" + rx.pattern.removeprefix("^") + ")"), "^(?:" + _unnamed(_looser(rx.pattern)) + ")")
                      for _, rx in lp.PREFIXES)
# a record head after the line's first character: _records would cut the line there
_GLUED = "^." + ".*" + "(?:" + _looser(lp.RECORD_HEADS) + ")"
# what _record reads before a line's metrics: a traceback's last line, a failure table's header
_BEFORE_METRICS = "|".join("(?:" + _unnamed(_looser(rx.pattern)) + ")" for rx in (lp.EXCEPTION_LINE, lp.FAILURE_TABLE_HEADER))


@dataclass(frozen=True)
class _Format:
    """A metric pattern (patterns.METRIC_PATTERNS) as RE2 reads it."""

    pattern: lp.MetricPattern
    match: str | None  # the regex as RE2 reads it; None: RE2 cannot, its lines take the general path
    bulk: bool  # its fields can be read by RE2's captures


_STEP_GROUPS = ("step", "epoch", "per_epoch", "i")
_FORMATS = tuple(_Format(p, m := _re2(p.regex.pattern),
                         m is not None and _never_empty(p.regex, (*p.metrics, *_STEP_GROUPS)))
                 for p in lp.METRIC_PATTERNS)


@dataclass(frozen=True)
class _Fields:
    """A field format (patterns.FIELD_FORMATS) as RE2 reads it: its step regexes and separator,
    each None where RE2 cannot read it (Python's re then reads it, line by line, in the thread)."""

    format: lp.FieldFormat
    bulk: bool  # its step groups match at least a character each (_never_empty): else the general path
    steps: tuple[str | None, ...]
    loose_steps: tuple[str, ...]  # the step regexes as RE2 reads them, looser where it must (_looser)
    separator: str | None
    keys: pa.Array  # its fields' keys, and their (metric, scale) in the same order
    targets: list[tuple[str, float]]
    metrics: np.ndarray  # each key's metric, and a number for it (the same for keys of one metric)
    metric_ids: np.ndarray


def _fields(f: lp.FieldFormat) -> _Fields:
    steps = tuple(_re2(rx.pattern) for rx in f.steps)
    loose = tuple(_unnamed(_looser(rx.pattern)) for rx in f.steps)
    assert all(_re2(rx) is not None for rx in loose), f.name
    metrics = [m for m, _ in f.fields.values()]
    return _Fields(f, all(_never_empty(rx, _STEP_GROUPS) for rx in f.steps), steps, loose, _re2(f.separator.pattern),
                   pa.array(list(f.fields), pa.string()), list(f.fields.values()), np.array(metrics, dtype=object),
                   np.array([metrics.index(m) for m in metrics], dtype=np.int64))


_FIELD_FORMATS = tuple(_fields(f) for f in lp.FIELD_FORMATS)


def _stamp_form(form: str, regex: str) -> tuple[str, str | None, str]:
    """A form of find_stamp's (times.TIMESTAMPS): the form, the regex whose captures read it as
    find_stamp does (the text before it, the stamp, its parts; None where RE2 cannot), and one
    that matches wherever it does, for RE2's DFA."""
    if form not in SEARCHED:
        return form, _re2(f"^(?P<pre>)(?P<stamp>{regex.removeprefix('^')})"), "^" + _unnamed(_looser(regex.removeprefix("^")))
    # searched: the text before it, where a lookbehind of one character class opens the regex
    # (mdy's `(?<![\d/])`), empty or ending in a character out of that class
    behind = re.match(r"\(\?<!\[([^\]]*)\]\)", regex)
    pre = f"(?:.*?[^{behind.group(1)}])?" if behind else ".*?"
    told = f"^(?P<pre>{pre})(?P<stamp>{regex[behind.end():] if behind else regex})"
    return form, _re2(told), _unnamed(told)


_STAMP_FORMS = tuple(_stamp_form(form, rx.pattern) for form, rx in TIMESTAMPS)
# a number Python's float and Arrow's parse read alike
_PLAIN_NUMBER = r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$"
_RUN_TAG = lp.RUN_TAG.pattern.replace("(?!:)", "(?P<after>.?)")  # its lookahead read as what follows the tag
assert _RUN_TAG != lp.RUN_TAG.pattern
_LEVELS = pa.array(sorted(lp.LEVELS), pa.string())
_FIELD = lp.FIELD.pattern
_BAR_WORDS = "|".join(re2_literal(k) for k in lp.BAR_KEYWORDS)
# a line that holds any of these takes the general path (one pass of RE2 for them all)
_UNREAD = f"(?:{_HAZARDS})|(?:{_BEFORE_METRICS})|(?:{_GLUED})|^(?:{_PREFIXES})"
# the lines that hold a metric pattern's keyword, a field format's
_METRIC_KEYWORDS = "|".join(re2_literal(f.pattern.keyword) for f in _FORMATS)
_FIELD_KEYWORDS = "|".join(re2_literal(f.format.keyword) for f in _FIELD_FORMATS)
for _rx in (_PREFIX_GATE, *(loose for _, loose in _PREFIX_FORMS), *(loose for _, _, loose in _STAMP_FORMS),
            _PLAIN_NUMBER, _FIELD, _RUN_TAG, _TIME_LIKE, _UNREAD, _BAR_WORDS, _METRIC_KEYWORDS, _FIELD_KEYWORDS):
    assert _re2(_rx) is not None, _rx


@dataclass
class BulkLines:
    """Of a block's candidates, those read in bulk (`ok`) and those of them that look back for a
    time and find none (`alone`), and their rows: a row per value, in the order of the lines and,
    in a line, of its format's metrics, as the general path adds them (Python objects, for the
    scan to append as it appends its own)."""

    ok: np.ndarray  # per candidate
    alone: np.ndarray  # per candidate: no time in it, nor in the lines before it that a line looks back to
    # per candidate: its own time (a times.Stamp, no run tag after it), else None; or, for a line
    # that says none, the candidate whose own time it takes (the nearest line before it in the
    # block that may say one, and does: `_look_back`), and how many lines back; else -1
    stamps: list
    lender: np.ndarray
    back: np.ndarray
    told: np.ndarray  # per candidate: its time is told here (its own, or its lender's)
    first_row: np.ndarray  # per candidate, and one more: its first row
    line: np.ndarray  # per row: its candidate
    rank: list  # per row: the rank its line's prefix names, else None
    step: list
    metric: list
    value: list
    pattern: list

    @classmethod
    def of(cls, block: bytes, lines: pa.Array, idx: np.ndarray, general: np.ndarray, look_back: int,
           label: re.Pattern | None = None) -> BulkLines | None:
        """`block`: the block's bytes; `lines`: its lines, each with its newline; `idx`: the candidates' lines;
        `general`: the candidates not read otherwise (the DFlash lines are); `look_back`: how many
        lines before its own a line without a time looks at for one."""
        at = np.flatnonzero(general)
        if not len(at):
            return None
        # the line without its newline and the CRs before it (a file written with CRLF), as `_clean` reads it
        text = pc.replace_substring_regex(lines.take(pa.array(idx[at])), pattern="\r*\n?$", replacement="")
        if b"\x1b" in block:  # colour, taken off as `_clean` takes it
            text = pc.replace_substring_regex(text, pattern=ESCAPES.pattern, replacement="")
            block = bytes(text.buffers()[2])  # what a keyword is looked for in
        text, rank, undecided = _unprefixed(*_unlabelled(text, label))
        undecided &= ~_matches(text, _UNREAD)
        # a bar's rate unit (`it/s`) where no bar is drawn (`ms/batch`): Python's bar regex says
        barred = np.flatnonzero(undecided & _matches(text, _BAR_WORDS))
        if len(barred):
            undecided[barred] = [not lp.find_bars(t) for t in text.take(pa.array(barred)).cast(pa.string()).to_pylist()]
        chosen = np.full(len(at), -1)
        among = undecided & _matches(text, _METRIC_KEYWORDS)
        for j, f in enumerate(_FORMATS):
            has = _holding(text, among, f.pattern.keyword, block)
            among &= ~has
            if not has.any():
                continue
            if f.match is None:  # RE2 cannot tell whether it matches: the general path will
                undecided &= ~has
                continue
            k = np.flatnonzero(has)
            hit = _matches(text.take(pa.array(k)), f.match)
            chosen[k[hit]] = j if f.bulk and j > 0 else -2  # DFlash lines here are not plain: the general path
            undecided[k[hit]] = False
        parts = [_rows(_FORMATS[int(j)], text.take(pa.array(np.flatnonzero(chosen == j))), at[chosen == j])
                 for j in np.unique(chosen[chosen > 0])]
        # no metric pattern matched: the first field format that reads a field of the line, of
        # those whose keyword it holds (a line none reads takes the general path)
        among = undecided & _matches(text, _FIELD_KEYWORDS)
        for f in _FIELD_FORMATS:
            has = _holding(text, among, f.format.keyword, block)
            if not has.any():
                continue
            stepped = np.zeros(len(has), dtype=bool)  # lines a step regex of it may match
            held = text.filter(pa.array(has))
            stepped[has] = np.any([_matches(held, rx) for rx in f.loose_steps], axis=0)
            if not f.bulk:
                undecided &= ~stepped
                among &= ~stepped
                continue
            part = _field_rows(f, text.filter(pa.array(stepped)), at[stepped])
            parts.append(part)
            undecided[np.searchsorted(at, part[0])] = False
            among &= undecided
        parts = [part for part in parts if len(part[0])]
        if not parts:
            return None
        line, step, metric, value, pattern = (np.concatenate([part[c] for part in parts]) for c in range(5))
        order = np.argsort(line, kind="stable")  # the formats' rows in the order of their lines
        line = line[order]
        first_row = np.zeros(len(idx) + 1, np.int64)
        np.cumsum(np.bincount(line, minlength=len(idx)), out=first_row[1:])
        ok = first_row[1:] > first_row[:-1]
        # the lines that may say a time, and a line's own with the `look_back` before it, in the block
        timed_lines = _matches(lines, _TIME_LIKE)
        timed = np.concatenate([[0], np.cumsum(timed_lines)])
        end = idx + 1
        alone = ok & ((timed[end] - timed[np.maximum(end - 1 - look_back, 0)]) == 0)
        stamps = np.full(len(idx), None, dtype=object)
        own = ok[at] & ~alone[at] & timed_lines[idx[at]]
        stamps[at[own]] = _stamps(text.filter(pa.array(own)))
        # a line that says no time takes the nearest earlier one's that says one: where that is a
        # candidate whose own time is told here (not a time of day, which the calendar dates at it)
        said = np.flatnonzero(timed_lines)
        before = said[np.maximum(np.searchsorted(said, idx) - 1, 0)] if len(said) else np.zeros(len(idx), np.int64)
        lender = np.minimum(np.searchsorted(idx, before), len(idx) - 1)
        back = idx - before
        lends = np.array([s is not None and s.form != "clock" for s in stamps.tolist()], dtype=bool)
        borrows = (ok & ~alone & ~timed_lines[idx] & (back > 0) & (back < look_back) & (idx[lender] == before)
                   & lends[lender])
        lender[~borrows] = -1
        ranks = np.full(len(idx), None, dtype=object)
        ranks[at] = rank
        return cls(ok=ok, alone=alone, stamps=stamps.tolist(), lender=lender, back=back,
                   told=np.not_equal(stamps, None) | borrows, first_row=first_row, line=line, rank=ranks[line].tolist(),
                   step=step[order].tolist(),
                   metric=metric[order].tolist(), value=value[order].tolist(), pattern=pattern[order].tolist())


def _rows(f: _Format, text: pa.Array, cand: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rows of the lines `text` (candidates `cand`) of format `f`, as pattern_values reads
    each: (candidate, step, metric, value, pattern) a row, line after line."""
    groups = pc.extract_regex(text, pattern=f.match)
    names = [groups.type.field(i).name for i in range(groups.type.num_fields)]
    field = {name: groups.field(i) for i, name in enumerate(names)}
    p, n = f.pattern, len(text)
    keys = list(p.metrics.items())
    values, present = np.full((n, len(keys)), np.nan), np.zeros((n, len(keys)), dtype=bool)
    for c, (group, _) in enumerate(keys):
        if group not in field:
            continue
        present[:, c] = np.asarray(pc.binary_length(field[group]), dtype=np.int64) > 0
        v = _floats(field[group], present[:, c]) * p.scale.get(group, 1.0)
        if group in p.sentinel:
            v[v == p.sentinel[group]] = np.nan
        values[:, c] = v
    steps = _steps(field, n)
    per_line = present.sum(axis=1)
    return (np.repeat(cand, per_line), np.repeat(steps, per_line),
            np.broadcast_to(np.array([key for _, key in keys], dtype=object), present.shape)[present],
            values[present], np.full(int(per_line.sum()), p.name, dtype=object))


def _field_rows(f: _Fields, text: pa.Array, cand: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rows of the lines `text` (candidates `cand`) of field format `f`, as line_metrics'
    `_field_metrics` reads each: the step by the first of its step regexes that matches; the
    line cut at its separator, each part a `key: value` field (patterns.FIELD) whose key the
    format knows, the first field of each metric; a line without a step gives none."""
    n = len(text)
    step, stepped = np.full(n, None, dtype=object), np.zeros(n, dtype=bool)
    for rx, python in zip(f.steps, f.format.steps, strict=True):
        k = np.flatnonzero(~stepped)
        fields, hit = _captures(text.take(pa.array(k)), rx, python)
        if hit.any():
            step[k[hit]] = _steps(fields, int(hit.sum()), f.format.first_epoch)
            stepped[k[hit]] = True
    if f.separator is not None:
        pieces = pc.split_pattern_regex(text, pattern=f.separator)
    else:
        pieces = pa.array([f.format.separator.split(t) for t in text.cast(pa.string()).to_pylist()], pa.list_(pa.string()))
    line = np.asarray(pc.list_parent_indices(pieces), dtype=np.int64)
    piece = pc.list_flatten(pieces)
    short = np.asarray(pc.binary_length(piece), dtype=np.int64) <= MAX_FIELD_CHARS
    found = pc.extract_regex(piece, pattern=_FIELD)
    keys = pc.replace_substring_regex(pc.utf8_lower(found.field("key").cast(pa.string())),
                                      pattern=lp.NON_FINITE_KEY_WORD, replacement="")
    target = np.asarray(pc.fill_null(pc.index_in(keys, value_set=f.keys), -1), dtype=np.int64)
    # a field is read where RE2 found one (a null where not), short enough, of a key it knows
    keep = np.asarray(found.is_valid(), dtype=bool) & short & (target >= 0) & stepped[line]
    # the first field of each metric in its line: a later one of the same metric is not read
    at = np.flatnonzero(keep)
    metric_id = f.metric_ids[target[at]]
    at = np.sort(at[np.unique(line[at] * (int(metric_id.max(initial=0)) + 1) + metric_id, return_index=True)[1]])
    # each field's factor (patterns.field_scale), found once for each of its key and unit
    unit = pc.dictionary_encode(found.field("unit").take(pa.array(at)).cast(pa.string()))
    pair = target[at] * (len(unit.dictionary) + 1) + np.asarray(unit.indices, dtype=np.int64)
    pairs, of_pair = np.unique(pair, return_inverse=True)
    units = unit.dictionary.to_pylist()
    scale = np.array([lp.field_scale(*f.targets[int(q) // (len(units) + 1)], units[int(q) % (len(units) + 1)] or None)
                      for q in pairs], dtype=np.float64)
    values = _floats(found.field("value").take(pa.array(at)), np.ones(len(at), dtype=bool)) * scale[of_pair]
    return (cand[line[at]], step[line[at]], f.metrics[target[at]], values, np.full(len(at), f.format.name, dtype=object))


_LONG = 1 << 30  # binary_slice's stop: without one, Arrow 26 fails on some arrays ("Negative buffer resize")


def _unlabelled(text: pa.Array, label: re.Pattern | None) -> tuple[pa.Array, np.ndarray]:
    """The lines without the label a launcher put before every line of the file (process_log
    line_label: srun's task id, pdsh's host), and the rank each names (srun's), as `unlabel`
    reads them; a line without it (the launcher's own) as it is."""
    rank = np.full(len(text), None, dtype=object)
    if label is None:
        return text, rank
    found = pc.extract_regex(text, pattern="^(?P<label>" + label.pattern.removeprefix("^") + ")")
    has = np.asarray(found.is_valid(), dtype=bool)
    if "rank" in label.groupindex and has.any():
        rank[has] = [lp.integer(r) for r in found.field("rank").filter(pa.array(has)).cast(pa.string()).to_pylist()]
    cut = np.zeros(len(text), dtype=np.int64)
    cut[has] = np.asarray(pc.binary_length(found.field("label").filter(pa.array(has))), dtype=np.int64)
    return _cut(text, cut), rank


def _cut(text: pa.Array, cut: np.ndarray) -> pa.Array:
    """Each line without its first `cut` bytes: a slice for each length, in the lines' order."""
    if not cut.any():
        return text
    parts, order = [], []
    for n in np.unique(cut):
        k = np.flatnonzero(cut == n)
        parts.append(pc.binary_slice(text.take(pa.array(k)), int(n), _LONG) if n else text.take(pa.array(k)))
        order.append(k)
    return pa.concat_arrays(parts).take(pa.array(np.argsort(np.concatenate(order), kind="stable")))


def _unprefixed(text: pa.Array, rank: np.ndarray) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """The lines without the launcher's or viewer's prefix strip_prefixes takes off (`[rank3]:`,
    `[1,0]<stdout>:`, a Ray actor's `(pid=...)`), each line's rank (the one a prefix names, else
    `rank`'s: a label's), and the lines read on: those with one such prefix at most (a line with
    two, or one of a kind RE2 cannot read, takes the general path, as one the gate would not strip
    does)."""
    rank = rank.copy()
    fine = np.ones(len(text), dtype=bool)
    left = _matches(text, _PREFIX_GATE)  # the lines strip_prefixes looks at
    cut = np.zeros(len(text), dtype=np.int64)
    for told, loose in _PREFIX_FORMS:
        k = np.flatnonzero(left)
        if not len(k):
            break
        if told is None:  # RE2 cannot read it: a line it may strip takes the general path
            hit = k[_matches(text.take(pa.array(k)), loose)]
            fine[hit], left[hit] = False, False
            continue
        found = pc.extract_regex(text.take(pa.array(k)), pattern=told)
        hit = np.asarray(found.is_valid(), dtype=bool)
        if not hit.any():
            continue
        cut[k[hit]] = np.asarray(pc.binary_length(found.field("prefix").filter(pa.array(hit))), dtype=np.int64)
        if "rank" in {found.type.field(i).name for i in range(found.type.num_fields)}:
            rank[k[hit]] = [lp.integer(r) for r in found.field("rank").filter(pa.array(hit)).cast(pa.string()).to_pylist()]
        left[k[hit]] = False
    return _cut(text, cut), rank, fine


def _captures(text: pa.Array, rx: str | None, python: re.Pattern) -> tuple[dict, np.ndarray]:
    """The named groups of regex `rx` (RE2's), or of `python` (Python's re, line by line) where
    RE2 cannot read it, in the lines it matches (searched), and which lines those are."""
    if rx is not None:
        hit = _matches(text, rx)
        if not hit.any():
            return {}, hit
        groups = pc.extract_regex(text.filter(pa.array(hit)), pattern=rx)
        return {groups.type.field(i).name: groups.field(i) for i in range(groups.type.num_fields)}, hit
    found = [python.search(t) for t in text.cast(pa.string()).to_pylist()]
    hit = np.array([m is not None for m in found], dtype=bool)
    return {name: pa.array([(m.group(name) or "") for m in found if m is not None], pa.string()).cast(pa.binary())
            for name in python.groupindex}, hit


def _stamps(text: pa.Array) -> list:
    """Each line's own time as find_stamp reads it (the first of its forms that matches the
    line's first 64 characters) where no run tag follows it (the scan reads a tag line by line):
    a times.Stamp, else None (a line the scan reads as the general path does)."""
    out = np.full(len(text), None, dtype=object)
    head = pc.utf8_slice_codeunits(text.cast(pa.string()), 0, 64)
    left = np.ones(len(text), dtype=bool)  # lines no form has matched yet
    for form, told, looser in _STAMP_FORMS:
        # RE2's DFA tells the lines a form may match (its looser regex); its captures, slower,
        # read those; a form RE2 cannot read leaves its lines to the scan
        maybe = np.zeros(len(text), dtype=bool)
        k = np.flatnonzero(left)
        maybe[k] = _matches(head.take(pa.array(k)), looser)
        left &= ~maybe
        if told is None or not maybe.any():
            continue
        k = np.flatnonzero(maybe)
        found = pc.extract_regex(head.take(pa.array(k)), pattern=told)
        names = [found.type.field(i).name for i in range(found.type.num_fields)]
        end = np.asarray(pc.add(pc.binary_length(found.field("pre")), pc.binary_length(found.field("stamp"))),
                         dtype=np.int64) - END_BACK.get(form, 0)
        tagless = np.zeros(len(k), dtype=bool)
        for e in np.unique(end):
            at = np.flatnonzero(end == e)
            tagless[at] = _tagless(pc.utf8_slice_codeunits(text.take(pa.array(k[at])).cast(pa.string()), int(e)))
        cols = [found.field(name).filter(pa.array(tagless)).cast(pa.string()).to_pylist() for name in names]
        out[k[tagless]] = [stamp_of(form, {name: v or None for name, v in zip(names, row, strict=True)})
                           for row in zip(*cols, strict=True)]
    return out.tolist()


def _tagless(body: pa.Array) -> np.ndarray:
    """Whether the text after a line's time names no run (process_log._run_tag: a `[name]` not
    followed by a colon, that is no level)."""
    tag = pc.extract_regex(body, pattern=_RUN_TAG)
    named = np.asarray(tag.is_valid(), dtype=bool)
    named &= np.asarray(pc.not_equal(tag.field("after"), ":").fill_null(True), dtype=bool)
    named &= ~np.asarray(pc.is_in(tag.field("run"), value_set=_LEVELS), dtype=bool)
    named &= ~np.asarray(pc.match_substring_regex(tag.field("run"), lp.RANK_TAG.pattern).fill_null(False), dtype=bool)
    return ~named


def _floats(digits: pa.Array, present: np.ndarray) -> np.ndarray:
    """Numbers as patterns.number reads them: Arrow's parse (correctly rounded, as Python's
    float) of those that are plain digits once their thousands commas are dropped, number() of
    the others (a K, a nan) one by one."""
    text = pc.replace_substring(pc.if_else(pa.array(present), digits, b"0"), pattern=",", replacement="").cast(pa.string())
    plain = _matches(text, _PLAIN_NUMBER)
    out = np.array(pc.cast(pc.if_else(pa.array(plain), text, "0"), pa.float64()), dtype=np.float64)
    if not plain.all():
        odd = np.flatnonzero(~plain)
        out[odd] = [lp.number(t) for t in text.take(pa.array(odd)).to_pylist()]
    return out


def _steps(field: dict, n: int, first_epoch: int = 0) -> np.ndarray:
    """Each line's step as line_metrics' `_step` reads it: `step`, else (epoch - first_epoch) *
    per_epoch + i for loggers that count iterations within an epoch, else `i` (an int, or None)."""
    def ints(name: str, drop: str = "") -> np.ndarray:
        out = np.full(n, None, dtype=object)
        if name not in field:
            return out
        col = field[name]
        has = np.asarray(pc.binary_length(col), dtype=np.int64) > 0
        digits = pc.replace_substring(col, pattern=drop, replacement="") if drop else col
        digits = pc.if_else(pa.array(has), digits, b"0").cast(pa.string())
        try:
            out[has] = np.asarray(pc.cast(digits, pa.int64()))[has].astype(object)
        except pa.ArrowInvalid:  # a sign, or more than 64 bits: integer() says
            out[has] = [lp.integer(t) for t in np.asarray(digits.to_pylist(), dtype=object)[has]]
        return out

    step, i = ints("step", drop=","), ints("i")
    if "per_epoch" in field:
        counted = np.asarray(pc.binary_length(field["per_epoch"]), dtype=np.int64) > 0
        within = [lp.integer((e - first_epoch) * per + k) if None not in (e, per, k) else None
                  for e, per, k in zip(ints("epoch")[counted], ints("per_epoch")[counted], i[counted], strict=True)]
        i[counted] = within if within else i[counted]
    has_step = np.asarray(pc.binary_length(field["step"]), dtype=np.int64) > 0 if "step" in field else np.zeros(n, bool)
    return np.where(has_step, step, i)


def _holding(text: pa.Array, among: np.ndarray, keyword: bytes, block: bytes) -> np.ndarray:
    """Of the lines `among` (a mask of `text`), those that hold `keyword`; `block`, bytes that
    hold every line (a keyword it lacks, no line holds: one fast search of the bytes)."""
    out = np.zeros(len(among), dtype=bool)
    k = np.flatnonzero(among)
    if len(k) and keyword in block:
        out[k] = np.asarray(pc.match_substring(text if len(k) == len(among) else text.take(pa.array(k)),
                                               pattern=keyword.decode()), dtype=bool)
    return out


def _matches(text: pa.Array, regex: str) -> np.ndarray:
    return np.asarray(pc.match_substring_regex(text, pattern=regex), dtype=bool)
