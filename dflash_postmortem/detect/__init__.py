"""Detectors: pure functions of an Incident, each answering one question with a findings frame.

`detect(incident)` runs them all and returns one frame (id, kind, start, end, severity, title,
detail, evidence, numbers, caused_by). No detector reads files or draws; a source that is missing only means the
question it would answer gets fewer findings, never an error.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from . import findings, memo
from .causes import frame_with_causes
from .control import detect_failed_kills
from .recovery import detect_recovery
from .restart import detect_failed_restarts
from .roles import detect_role_mismatch
from .stall import detect_stalls
from .throughput import detect_throughput_regressions

DETECTORS = (
    detect_failed_kills,
    detect_throughput_regressions,
    detect_failed_restarts,
    detect_recovery,
    detect_role_mismatch,
    detect_stalls,
)


def detect(incident: Incident) -> pd.DataFrame:
    """Every detector's findings, ordered by start time, with the cause graph across them."""
    with memo.scope(incident):
        parts = [d(incident) for d in DETECTORS]
        if not any(len(p) for p in parts):
            return findings.empty()
        return frame_with_causes(incident, parts)


__all__ = [
    "DETECTORS",
    "detect",
    "detect_failed_kills",
    "detect_failed_restarts",
    "detect_recovery",
    "detect_role_mismatch",
    "detect_stalls",
    "detect_throughput_regressions",
]
