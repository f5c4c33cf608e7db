"""An interrupt that stopped one pass of a loop, and the loop that went on.

Ctrl-C at a terminal sends SIGINT to the whole foreground job: the loop's bash and the trainer it
runs. Bash leaves a `for` loop only if its command died of that signal; a trainer that catches the
interrupt (a KeyboardInterrupt handler that saves a checkpoint, Lightning's graceful shutdown) and
exits normally ends its pass, and bash goes on with the next one at once. An operator who pressed
Ctrl-C to stop a sweep stops one run and starts the next; the prompt does not come back.

The signals: an attempt that ended on the trainer's own word that an interrupt stopped it
(model/attempts.py: `interrupt`), and a start of the same typed command (a loop's next pass) within
seconds after it. The terminal's echo of each press (`^C`, under that command) is the operator's
key, where the session was recorded. One finding per loop: each interrupt, the pass it stopped and
the pass that followed, and how the loop ended.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from ..model import computed as memo
from ..model.attempts import END_SLACK, attempts
from ..model.progress import last_step
from ..said import error_text
from ..shell_words import loop_passes
from . import findings
from .per_host import judged

# The kinds of end that are an interrupt the trainer said it took (model/attempts.py)
_INTERRUPTED = ("interrupt",)


@judged
def detect_interrupted_loops(inc: Incident) -> pd.DataFrame:
    """One finding per typed loop in which an interrupt stopped a pass and the loop went on."""
    att = attempts(inc)
    if att.empty:
        return findings.empty()
    rows = []
    for ref, passes in att[att["launch_ref"].notna()].groupby("launch_ref", sort=False):
        passes = passes.sort_values("start", kind="stable")
        if len(passes) < 2:
            continue
        stops = []
        for (_, a), (_, b) in zip(passes.iloc[:-1].iterrows(), passes.iloc[1:].iterrows(), strict=True):
            if a["end_kind"] not in _INTERRUPTED or pd.isna(a["end"]):
                continue
            # the next pass began as this one ended: bash went on with the loop
            if not (a["end"] - END_SLACK <= b["start"] <= a["end"] + END_SLACK):
                continue
            stops.append((a, b))
        if not stops:
            continue
        rows.append(_finding(inc, str(ref), stops, passes))
    return findings.frame(rows)


def loop_of(inc: Incident, ref: str) -> tuple[str | None, int | None, int]:
    """The loop typed at `ref`: its command, how many passes its text holds (None: a glob, a
    variable, no loop) and how many of them started (the attempts of that launch)."""
    ev = inc.events
    typed = ev[(ev["kind"] == "command") & (ev["ref"] == ref)]
    command = str(typed["message"].iloc[0]) if len(typed) else None
    att = attempts(inc)
    return command, len(loop_passes(command or "")) or None, int((att["launch_ref"] == ref).sum())


def _finding(inc: Incident, ref: str, stops: list, passes: pd.DataFrame) -> dict:
    last = passes.iloc[-1]
    ev = inc.events
    command, values, ran = loop_of(inc, ref)
    keys = ev[(ev["kind"] == "interrupt_key") & (ev["command_ref"] == ref)] if "command_ref" in ev.columns else ev.iloc[:0]
    went_on = [_stopped(inc, a) | {"next_run": b["run"], "next_pid": _pid(b), "next_start": b["start"]} for a, b in stops]
    ended = _stopped(inc, last) if last["end_kind"] in _INTERRUPTED and pd.notna(last["end"]) else None
    first, *_ = stops
    end = ended["stopped_at"] if ended else stops[-1][1]["start"]
    refs = [ref] + [a["end_ref"] for a, _ in stops] + [b["start_ref"] for _, b in stops]
    refs += [last["end_ref"]] if ended else []
    refs += findings.refs(keys)
    return findings.finding(
        "interrupt_went_on", first[0]["end"], end, "warning", [r for r in refs if isinstance(r, str)],
        {"command": command, "passes": values, "went_on": went_on, "ended": ended, "ran": ran,
         "key_presses": int(keys["presses"].fillna(1).sum()) if len(keys) and "presses" in keys.columns else len(keys)})


def _stopped(inc: Incident, a: pd.Series) -> dict:
    """A pass an interrupt stopped: its run, PID, when, the trainer's words and its last step line."""
    return {"run": a["run"], "pid": _pid(a), "stopped_at": a["end"], "said": error_text(a["end_message"]) or None,
            "last_step": last_step(inc, a), "handled": _handled(inc, a)}


def _handled(inc: Incident, a: pd.Series) -> bool | None:
    """Whether the trainer caught the interrupt (its own words: `interrupted at step 709, saving
    checkpoint`, Lightning's graceful shutdown) or it ended in a KeyboardInterrupt traceback; None
    where its end's line is not known."""
    if "pattern" not in inc.events.columns or not isinstance(a["end_ref"], str):
        return None
    line = memo.rows_where(inc, "events", "ref", a["end_ref"])
    return None if line.empty else bool(line["pattern"].iloc[0] != "KeyboardInterrupt")


def _pid(a: pd.Series) -> int | None:
    pids = a["pids"]
    return int(pids[0]) if isinstance(pids, list) and pids else None

