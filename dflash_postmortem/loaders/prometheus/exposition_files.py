"""Prometheus metrics saved as files: the text exposition format (`curl host:9400/metrics` of a
DCGM exporter, a node exporter's page, often pasted with the command and a Markdown fence
around it), OpenMetrics as `promtool tsdb dump-openmetrics` writes it (timestamps in seconds,
`# EOF` at the end), and `promtool tsdb dump` (`{__name__="...", ...} value timestamp_ms`).

Every line is a sample (parsed), a HELP/TYPE/UNIT comment, a blank, prose around a paste
(skipped, each with its reason), or a damaged sample (a bad line: the on_bad_line policy). A dump
cut off mid-line keeps every sample before the cut.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...incident import from_frames
from .. import registry
from ..registry import LoadContext
from . import dcgm_fields as F
from . import exposition as X
from .series_frames import Series, build

TEXT = "prometheus-text"
DUMP = "prometheus-tsdb-dump"
_SNIFF_LINES = 200
_EXPECTED = 'a sample line: name{label="value",...} value [timestamp]'
_IGNORED = Series("", {})  # a series of the exporter's own instrumentation: counted, not kept
_EXPECTED_DUMP = 'a promtool tsdb dump line: {__name__="name", label="value", ...} value timestamp_ms'


def _head_lines(head: bytes) -> list[str]:
    text = head.decode("utf-8", "replace")
    lines = text.splitlines()
    if len(head) >= registry.SNIFF_BYTES and lines:
        lines = lines[:-1]  # cut by the sniff window, not by the writer
    return [s.strip() for s in lines if s.strip()][:_SNIFF_LINES]


def sniff_text(path: Path, head: bytes) -> float:
    lines = _head_lines(head)
    if not lines:
        return 0.0
    samples = [s for s in (X.parse_sample(s) for s in lines) if s is not None]
    meta = sum(1 for s in lines if X.META.match(s))
    eof = X.EOF_LINE in lines
    labelled = sum(1 for s in samples if s.labels)
    # A bare "name value" line alone could be anything (a config, a log): a sample file also has
    # HELP/TYPE lines, labels, or the OpenMetrics end marker.
    if not samples or not (meta or eof or labelled >= 2):
        return 0.0
    share = (len(samples) + meta + eof) / len(lines)
    if share >= 0.5:
        return 0.95
    return 0.7 if share >= 0.2 else 0.0


def sniff_dump(path: Path, head: bytes) -> float:
    lines = _head_lines(head)
    if not lines:
        return 0.0
    dumped = sum(1 for s in lines if X.parse_dump_line(s) is not None)
    return 0.96 if dumped and dumped / len(lines) >= 0.5 else 0.0


# Both forms are read by one loader. (The decorator next to the function registers first.)
@registry.format(DUMP, sniff=sniff_dump, doc="promtool tsdb dump ({__name__=...} value timestamp_ms)")
@registry.format(TEXT, sniff=sniff_text,
                 doc="Prometheus text exposition (a DCGM or node exporter's /metrics) and OpenMetrics "
                     "(promtool tsdb dump-openmetrics)")
def load(path: Path, ctx: LoadContext):
    head = registry.read_head(path)
    fmt = DUMP if sniff_dump(path, head) > sniff_text(path, head) else TEXT
    rep = ctx.report(path, fmt)
    with open(path, encoding="utf-8", errors="replace", newline=None) as f:
        text = f.read()
    lines = text.splitlines()
    rep.read = len(lines)
    cut = bool(text) and not text.endswith(("\n", "\r"))
    found: dict[tuple, Series | None] = {}  # (name, label text) as written -> its series
    eof_at = None
    fractional = stamped = False
    for i, raw in enumerate(lines, start=1):
        s = raw.strip()
        if not s:
            rep.skip(i, "blank line")
            continue
        if eof_at is not None:
            rep.skip(i, "after the OpenMetrics end marker (# EOF)")
            continue
        if s == X.EOF_LINE:
            eof_at = i
            rep.skip(i, "OpenMetrics end marker (# EOF)")
            continue
        if s.startswith("#"):
            rep.skip(i, "HELP/TYPE/UNIT line" if X.META.match(s) else "comment line")
            continue
        parts = X.split_sample(s)
        if parts is not None:
            key = parts[:2]
            if key not in found:
                named = X.series_of(*key)
                found[key] = None if named is None else (
                    _IGNORED if F.role(*named) == "ignored" else Series(*named))
            series = found[key]
        if parts is None or series is None:
            if X.LOOKS_LIKE_SAMPLE.match(s):
                what = "truncated last line: " if cut and i == len(lines) else ""
                rep.bad(i, _EXPECTED_DUMP if s.startswith("{") else _EXPECTED, what + raw)
            else:
                rep.skip(i, "text that is not a metric line (a prompt, a Markdown fence, prose)")
            continue
        if series is _IGNORED:
            rep.skip(i, F.SELF_MONITORING_REASON)
            continue
        ts = parts[3]
        series.times.append(np.nan if ts is None else X.number(ts))
        series.values.append(X.number(parts[2]))
        series.lines.append(i)
        stamped |= ts is not None
        fractional |= ts is not None and "." in ts
        rep.parsed += 1
    seconds = fmt == TEXT and (eof_at is not None or fractional)
    _note_times(rep, fmt, stamped, seconds, eof_at, cut)
    if stamped and not seconds:
        for series in found.values():
            if series is not None:
                series.times = [t / 1000.0 for t in series.times]
    frames = build([v for v in found.values() if v is not None and v is not _IGNORED], rep.path, ctx.host)
    return from_frames(rep, **frames)


def _note_times(rep, fmt: str, stamped: bool, seconds: bool, eof_at: int | None, cut: bool) -> None:
    if not stamped:
        rep.assume("samples carry no timestamp (a scrape saved as text): rows carry no time")
    elif fmt == DUMP:
        rep.assume("promtool tsdb dump: timestamps in milliseconds since the epoch, UTC")
    elif seconds:
        rep.assume("OpenMetrics: timestamps in seconds since the epoch, UTC")
        if eof_at is None:
            rep.notes.append("no '# EOF' line: the dump ends early (cut off?); every sample before the end is kept")
    else:
        rep.assume("exposition format: timestamps in milliseconds since the epoch, UTC")
    if cut:
        rep.notes.append("the file ends mid-line (a dump cut off while written)")
