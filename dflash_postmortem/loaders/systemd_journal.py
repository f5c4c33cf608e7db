"""A systemd unit's journal or status pasted on its own (`journalctl -u train`, any `-o short*`
form or `-o cat`; `systemctl status train`): the unit's starts, its main process's exits and
kills, OOM kills, failures and scheduled restarts become events with the unit as the job and
the restart counter as the attempt (`transcript/systemd_units.py` reads the lines). The file is
read like a terminal session without prompts, by the transcript loader, so kernel lines in a
whole journal (the OOM killer, Xid errors) are read as well; lines that state none of these are
counted as skipped.
"""

from __future__ import annotations

from pathlib import Path

from ..incident import Incident
from . import registry
from .kernel_log import pasted_lines
from .registry import LoadContext
from .transcript import systemd_units
from .transcript.shell_transcript import load_transcript

FORMAT = "systemd-journal"
_FACTS = {"attempt_start", "attempt_end", "exit", "killed", "oom_kill", "restart_scheduled", "kill_sent"}


def sniff_journal(path: Path, head: bytes) -> float:
    lines = pasted_lines(head)
    if not lines:
        return 0.0
    facts = [f for f in map(systemd_units.read_unit_line, lines) if f is not None]
    if not any(f.get("kind") in _FACTS and (f.get("unit") or f.get("status_line")) for f in facts):
        return 0.0
    if any(f.get("header") for f in facts) or len(facts) / len(lines) >= 0.2:
        return 0.85
    return 0.5


@registry.format(
    FORMAT, sniff=sniff_journal, phase=1,
    doc="journalctl -u / systemctl status of a unit: starts, exits, kills, OOM kills, restarts (restart counter)",
)
def load_journal(path: Path, ctx: LoadContext) -> Incident:
    return load_transcript(path, ctx, fmt=FORMAT, loose="journal line with no process fact")
