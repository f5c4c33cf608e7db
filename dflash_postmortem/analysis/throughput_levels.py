"""Throughput levels as a reader weighs them: the baseline, the regression and the recovery that
name the levels, the level changes that cross the baseline's band, and the stretch the incident
ended in (the window to judge the GPUs on).

The level segments themselves are the throughput detector's (`throughput.segments`); this module
picks out of them what a page names.
"""

from __future__ import annotations

import pandas as pd

from ..detect.throughput import MIN_DROP
from ..incident import Incident
from ..model.pace import unit
from .source_choice import throughput_samples


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
    """The throughput baseline every page and the cost use (see `baseline_and_source`)."""
    return baseline_and_source(inc, findings)[0]


def baseline_and_source(inc: Incident, findings: pd.DataFrame) -> tuple[float | None, str | None]:
    """The one throughput baseline: incident.toml's expected_tok_per_s when the user gives it (what
    the run should do), else the level measured before the first regression, else the stalled
    run's level before its stall; and where it came from."""
    # (a rate in tokens says nothing of a job measured in steps)
    if inc.config.expected_tok_per_s is not None and unit(inc) == "tok/s":
        return inc.config.expected_tok_per_s, "incident.toml expected_tok_per_s"
    reg = regression(findings)
    if reg is not None:
        return reg["numbers"]["baseline_tok_per_s"], "the regression's baseline"
    stall = findings[findings["kind"] == "recovery"] if len(findings) else findings
    stall = stall[stall["numbers"].map(lambda n: n.get("episode") == "stall")] if len(stall) else stall
    if len(stall):
        return stall["numbers"].iloc[0]["baseline_tok_per_s"], "throughput before the stall"
    partial = findings[findings["kind"] == "partial_recovery"] if len(findings) else findings
    partial = partial[partial["numbers"].map(lambda n: n.get("episode") == "stall")] if len(partial) else partial
    if len(partial):
        return partial["numbers"].iloc[0]["baseline_tok_per_s"], "throughput before the stall"
    return None, None


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
