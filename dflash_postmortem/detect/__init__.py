"""Detectors: pure functions of an Incident, each answering one question with a findings frame.

`detect(incident)` runs them all and returns one frame (kind, start, end, severity, title, detail,
evidence, numbers). No detector reads files or draws; a source that is missing only means the
question it would answer gets fewer findings, never an error.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from . import findings
from .recovery import detect_recovery
from .restart import detect_failed_restarts
from .roles import detect_role_mismatch
from .stall import detect_stalls
from .throughput import detect_throughput_regressions

DETECTORS = (
    detect_throughput_regressions,
    detect_failed_restarts,
    detect_recovery,
    detect_role_mismatch,
    detect_stalls,
)


def detect(incident: Incident) -> pd.DataFrame:
    """Every detector's findings, ordered by start time."""
    parts = [d(incident) for d in DETECTORS]
    parts = [p for p in parts if len(p)]
    if not parts:
        return findings.empty()
    return findings.frame(pd.concat(parts, ignore_index=True).to_dict("records"))


__all__ = [
    "DETECTORS",
    "detect",
    "detect_failed_restarts",
    "detect_recovery",
    "detect_role_mismatch",
    "detect_stalls",
    "detect_throughput_regressions",
]
