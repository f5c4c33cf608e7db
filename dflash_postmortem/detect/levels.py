"""Throughput levels as a reader weighs them: the baseline, the regression and the recovery that
name the levels, the level changes that cross the baseline's band, and the stretch the incident
ended in (the window to judge the GPUs on).

The level segments themselves are the throughput detector's (`throughput.segments`); this module
picks out of them what a page names.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from .sources import throughput_samples
from .throughput import MIN_DROP


def band_crossings(segments: pd.DataFrame, min_drop: float = MIN_DROP) -> pd.DataFrame:
    """Segments whose start moves throughput into or out of the baseline band (the first
    segment's level x (1 - min_drop)): the changes a reader cares about, with `before` level."""
    if len(segments) < 2:
        return pd.DataFrame(columns=["start", "before", "level"])
    band = (1 - min_drop) * segments["level"].iloc[0]
    before = segments["level"].shift()
    crossed = (before >= band) != (segments["level"] >= band)
    crossed.iloc[0] = False
    return segments.assign(before=before)[crossed][["start", "before", "level"]]


def _first(findings: pd.DataFrame, kind: str) -> pd.Series | None:
    hit = findings[findings["kind"] == kind]
    return None if hit.empty else hit.iloc[0]


def regression(findings: pd.DataFrame) -> pd.Series | None:
    """The first throughput regression finding: the baseline and degraded levels a page names."""
    return _first(findings, "throughput_regression")


def recovery(findings: pd.DataFrame) -> pd.Series | None:
    """The first recovery finding, else the first partial recovery: the level the job came back to."""
    found = _first(findings, "recovery")
    return found if found is not None else _first(findings, "partial_recovery")


def baseline(inc: Incident, findings: pd.DataFrame) -> float | None:
    """The throughput baseline: the regression finding's, else incident.toml's expected_tok_per_s."""
    reg = regression(findings)
    return reg["numbers"]["baseline_tok_per_s"] if reg is not None else inc.config.expected_tok_per_s


def recovery_window(inc: Incident, findings: pd.DataFrame) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """The stretch to judge GPU roles on: the recovery (or partial recovery) finding, else the last run."""
    if len(findings):
        hit = findings[findings["kind"].isin(["recovery", "partial_recovery"])]
        if len(hit):
            return hit["start"].iloc[-1], hit["end"].iloc[-1]
    s = throughput_samples(inc)
    if s.empty:
        return None, None
    last = s[s["run"] == s.sort_values("time")["run"].iloc[-1]]
    return last["time"].min(), last["time"].max()
