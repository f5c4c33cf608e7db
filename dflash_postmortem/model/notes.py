"""What the model assumed in reading an incident, said so a reader can check it: each attempt's
stall threshold and where it came from, how its ranks' rates were combined, where its lines'
rates alternate (read over windows, never line by line), and the logs its launch named that the
folder lacks."""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from .attempts import attempts
from .log_files import NOT_IN_INCIDENT, log_files
from .progress import lines_of, progress
from .states import MIN_STALL_S, STALL_INTERVALS, stall_threshold_s, step_interval_s


def reading_notes(inc: Incident) -> list[str]:
    """One line per assumption, attempt by attempt."""
    notes = list(progress(inc).attrs.get("notes", []))
    given = inc.config.detect.get("stall_s") is not None
    for _, a in attempts(inc).iterrows():
        if pd.isna(a["first_step"]):
            continue
        lines = lines_of(inc, a)
        why = ("[detect] stall_s in incident.toml" if given else
               f"max({STALL_INTERVALS:g} x its median step interval of {step_interval_s(lines):.1f} s, "
               f"{MIN_STALL_S:.0f} s); [detect] stall_s in incident.toml sets it")
        notes.append(f"attempt {a['attempt']} ({a['run'] or a['script'] or '?'}): stalled after "
                     f"{stall_threshold_s(inc, lines):,.0f} s without a step ({why})")
    for attempt, log in log_files(inc).items():
        if log.state == NOT_IN_INCIDENT:
            notes.append(f"attempt {attempt}: its log {log.path} is not in the incident folder, so its lines are not read")
    return notes
