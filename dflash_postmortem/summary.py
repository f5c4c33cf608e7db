"""Plain-language sentences about an incident, for the report index and the overview page."""

from __future__ import annotations

import pandas as pd

from .incident import Incident


def _when(t) -> str:
    return pd.Timestamp(t).strftime("%H:%M:%S UTC") if t is not None and not pd.isna(t) else "?"


def summary_lines(inc: Incident, findings: pd.DataFrame | None = None) -> list[str]:
    """What happened, from the findings when detectors are available, else what was loaded."""
    if findings is None:
        try:
            from .detect import detect
        except ImportError:
            detect = None
        findings = detect(inc) if detect is not None else None
    lines = []
    if findings is not None and len(findings):
        for _, f in findings.sort_values("start").iterrows():
            lines.append(f"{_when(f['start'])} — {f['title']}")
    else:
        first, last = inc.span()
        lines.append(f"Evidence spans {_when(first)} to {_when(last)}; no incident was detected.")
    rep = inc.load_report
    lines.append(
        f"{len(rep.loaded)} source files loaded, {len(rep.failed)} failed, {len(rep.unrecognised)} not recognised."
    )
    return lines
