"""Detectors: pure functions of an Incident, each answering one question with a findings frame.

`detect(incident)` runs them all and returns one frame (id, kind, start, end, severity, title,
detail, evidence, numbers, caused_by). No detector reads files or draws; a source that is missing only means the
question it would answer gets fewer findings, never an error. An incident of several hosts is
judged host by host (`per_host`): each host's findings name it.

May import: the contracts, clock/, model/ (docs/architecture.md, "Who may import whom").
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ..clock.hosts import views
from ..incident import Incident
from . import findings, per_host
from .causes import frame_with_causes
from .control import detect_failed_kills
from .deaths import detect_deaths, detect_unplaced_deaths
from .divergence import detect_nonfinite_loss
from .interrupts import detect_interrupted_loops
from .lingering import detect_lingering
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
    detect_lingering,
    detect_interrupted_loops,
    detect_deaths,
    detect_unplaced_deaths,
    detect_nonfinite_loss,
)


def detect(incident: Incident, on_error: Callable[[str, Exception], None] | None = None, *,
           fleet: bool = True) -> pd.DataFrame:
    """Every detector's findings, ordered by start time, with the cause graph across them; in a
    fleet, each host's own (causes link findings of one host), then the summary across hosts,
    and (`fleet`) what the fleet detectors find that the hosts' own findings do not tell: a GPU
    that sets its host's pace, a GPU lost (detect/fleet.py).

    With `on_error`, a detector that raises is passed over: `on_error(its name, the error)`, and
    the others' findings are returned (the live watch tells the error and goes on telling the
    rest); without, the error propagates (a post-mortem says nothing rather than half)."""
    if len(per_host.hosts(incident)) < 2:
        return _judged(incident, on_error)
    told = per_host.summarised([per_host.named(_judged(share, on_error), host) for host, share in views(incident)])
    if not fleet:
        return told
    # Start-up time: DuckDB loads for an incident of several hosts only.
    from .fleet import told_with_fleet

    return _found(lambda inc: told_with_fleet(inc, told), incident, on_error, "fleet detectors", told)


def _judged(inc: Incident, on_error=None) -> pd.DataFrame:
    parts = [_found(d, inc, on_error) for d in DETECTORS]
    if not any(len(p) for p in parts):
        return findings.empty()
    return frame_with_causes(inc, parts)


def _found(d, inc: Incident, on_error, name: str | None = None, fallback: pd.DataFrame | None = None) -> pd.DataFrame:
    if on_error is None:
        return d(inc)
    try:
        return d(inc)
    except Exception as e:  # noqa: BLE001 - handed to on_error, which tells it
        on_error(name or d.__name__, e)
        return findings.empty() if fallback is None else fallback


__all__ = [
    "DETECTORS",
    "detect",
    "detect_deaths",
    "detect_failed_kills",
    "detect_failed_restarts",
    "detect_interrupted_loops",
    "detect_lingering",
    "detect_recovery",
    "detect_role_mismatch",
    "detect_stalls",
    "detect_throughput_regressions",
]
