"""The line grammar of Prometheus' text formats: the text exposition format (what an exporter's
`/metrics` returns), OpenMetrics (what `promtool tsdb dump-openmetrics` writes, ending in
`# EOF`), and the label-set lines of `promtool tsdb dump`.

One sample line is `name{label="value",...} value [timestamp]`; `promtool tsdb dump` writes the
name as a label instead, `{__name__="name", label="value"} value timestamp_ms`. Timestamps are
milliseconds in the exposition format and in `tsdb dump`, seconds (with a fraction) in
OpenMetrics.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL_SET = r'\{(?P<labels>(?:[^"}]|"(?:[^"\\\n]|\\.)*")*)\}'
# Go's strconv.ParseFloat spellings Prometheus writes and accepts.
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|[Nn]a[Nn]|[Ii]nf(?:inity)?)"
_SAMPLE = re.compile(
    rf"^(?P<name>{METRIC_NAME})\s*(?:{_LABEL_SET})?\s+(?P<value>{_NUMBER})"
    rf"(?:\s+(?P<ts>{_NUMBER}))?\s*(?:#\s*\{{.*)?$"  # an OpenMetrics exemplar after ` # ` is not read
)
_DUMP = re.compile(rf"^{_LABEL_SET}\s+(?P<value>{_NUMBER})\s+(?P<ts>-?\d+)\s*$")
_NAME = re.compile(METRIC_NAME)
_NUMBER_ONLY = re.compile(_NUMBER)
_INT = re.compile(r"-?\d+")
_LABEL = re.compile(r'\s*(?P<key>[a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*(?:,|$)')
_ESCAPES = re.compile(r"\\(.)")
# HELP/TYPE/UNIT name the metric family they describe; anything else after # is a comment.
META = re.compile(rf"^#\s*(?P<kind>HELP|TYPE|UNIT)\s+(?P<name>{METRIC_NAME})(?:\s+(?P<rest>.*))?$")
EOF_LINE = "# EOF"
# A line that starts like a sample (a metric name, then labels or a value): when it does not
# parse, it is a damaged sample, not prose around a paste.
LOOKS_LIKE_SAMPLE = re.compile(
    rf"^(?:{METRIC_NAME}\s*\{{|{METRIC_NAME}\s+(?:[-+]?[\d.]|[Nn]a[Nn]|[-+]?[Ii]nf)|\{{__name__=)"
)


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float
    timestamp: float | None  # as written: milliseconds or seconds, the caller knows which
    fractional: bool  # the timestamp was written with a fraction (OpenMetrics seconds)


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return _ESCAPES.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), text)


def parse_labels(text: str | None) -> dict[str, str] | None:
    """`a="1", b="x\\"y"` -> {"a": "1", "b": 'x"y'}; None when the text is not a label list."""
    if not text or not text.strip():
        return {}
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = _LABEL.match(text, pos)
        if m is None:
            return None if text[pos:].strip(" ,") else out
        out[m["key"]] = _unescape(m["value"])
        pos = m.end()
    return out


def number(text: str) -> float:
    low = text.lower()
    if low.endswith(("inf", "infinity")):
        return -math.inf if low.startswith("-") else math.inf
    return float(text)


def split_sample(line: str) -> tuple[str, str | None, str, str | None] | None:
    """(name, label text, value, timestamp) of a sample line as written, or None; the name is ""
    for a `tsdb dump` line, whose name is among its labels. A file repeats each series' label
    text in every sample: the caller parses it once per series (`series_of`)."""
    quick = _split_quickly(line)
    if quick is not None:
        return quick
    m = (_DUMP if line.startswith("{") else _SAMPLE).match(line)
    if m is None:
        return None
    return m.groupdict().get("name") or "", m["labels"], m["value"], m["ts"]


def _split_quickly(line: str) -> tuple[str, str, str, str | None] | None:
    """The common `name{labels} value [ts]` line without a regex over its labels (ten times
    faster on DCGM's long label sets); None leaves the line to the full grammar. The label text
    is checked when its series is first met (`series_of`)."""
    brace, close = line.find("{"), line.rfind("}")
    if brace < 0 or close < brace or "#" in line:
        return None
    name, rest = line[:brace].rstrip(), line[close + 1:].split()
    if not 1 <= len(rest) <= 2 or not all(_NUMBER_ONLY.fullmatch(r) for r in rest):
        return None
    if name:
        return (name, line[brace + 1:close], rest[0], rest[1] if len(rest) == 2 else None) if _NAME.fullmatch(name) else None
    # A `tsdb dump` line: always a time, in integer milliseconds.
    return ("", line[brace + 1:close], rest[0], rest[1]) if len(rest) == 2 and _INT.fullmatch(rest[1]) else None


def series_of(name: str, label_text: str | None) -> tuple[str, dict[str, str]] | None:
    """The metric name and labels of a split sample line, or None when its labels do not parse
    (or a dump line names no metric)."""
    labels = parse_labels(label_text)
    if labels is None:
        return None
    if not name:
        if not labels.get("__name__"):
            return None
        name = labels.pop("__name__")
    return name, labels


def parse_sample(line: str) -> Sample | None:
    """One exposition/OpenMetrics (or `tsdb dump`) sample line, or None when the line is not one."""
    parts = split_sample(line)
    if parts is None:
        return None
    named = series_of(parts[0], parts[1])
    if named is None:
        return None
    ts = parts[3]
    return Sample(named[0], named[1], number(parts[2]), None if ts is None else number(ts),
                  ts is not None and "." in ts)


def parse_dump_line(line: str) -> Sample | None:
    """One `promtool tsdb dump` line (`{__name__="x", a="b"} value timestamp_ms`), or None."""
    return parse_sample(line) if line.startswith("{") else None
