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


def parse_sample(line: str) -> Sample | None:
    """One exposition/OpenMetrics sample line, or None when the line is not one."""
    m = _SAMPLE.match(line)
    if m is None:
        return None
    labels = parse_labels(m["labels"])
    if labels is None:
        return None
    ts = m["ts"]
    return Sample(m["name"], labels, number(m["value"]), None if ts is None else number(ts),
                  ts is not None and "." in ts)


def parse_dump_line(line: str) -> Sample | None:
    """One `promtool tsdb dump` line (`{__name__="x", a="b"} value timestamp_ms`), or None."""
    m = _DUMP.match(line)
    if m is None:
        return None
    labels = parse_labels(m["labels"])
    if not labels or "__name__" not in labels:
        return None
    name = labels.pop("__name__")
    return Sample(name, labels, number(m["value"]), float(m["ts"]), False)
