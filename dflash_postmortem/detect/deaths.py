"""Deaths: an attempt that trained, then ended of an error (a traceback, CUDA or host out of
memory, the OOM killer, a collective's timeout, a launcher or scheduler saying it failed, a
non-zero exit, a signal nobody in the evidence sent), and what came after it: the next attempt of
the same job, who started it and how long after, and the steps it did again when it resumed from
a checkpoint (`Resumed from checkpoint ... at step N`).

An attempt whose process outlived the error is a stall (stall.py), not a death; one the operator
killed, or that stopped cleanly, is neither.
"""

from __future__ import annotations

import re

import pandas as pd

from ..incident import Incident
from ..model.attempts import attempts, trainer_pids
from ..model.progress import lines_of, resumes
from ..model.states import states
from ..units import clock
from . import findings
from .per_host import judged

_ERRORS = ("traceback", "oom", "oom_kill", "timeout", "nccl_timeout", "attempt_end", "exit", "killed")


@judged
def detect_deaths(inc: Incident) -> pd.DataFrame:
    att = attempts(inc)
    st = states(inc)
    redo = resumes(inc)
    rows = []
    for _, a in att.iterrows():
        if pd.isna(a["first_step"]) or a["end_kind"] not in _ERRORS:
            continue
        mine = st[st["attempt"] == a["attempt"]]
        if (mine["state"] == "stalled").any() or not (mine["state"].isin(("exited", "killed"))).any():
            continue
        if not _an_error(a):
            continue
        lines = lines_of(inc, a)
        last = lines.tail(1)
        nxt = att[(att["start"] > a["start"]) & (att["job"] == a["job"])].head(1)
        after, numbers = "", {}
        if len(nxt):
            b = nxt.iloc[0]
            gap = (b["start"] - a["end"]).total_seconds()
            r = redo[redo["attempt"] == b["attempt"]]
            redo_b = (int(r["resumed_step"].iloc[0]), int(r["redone_steps"].iloc[0]), int(r["reached_step"].iloc[0])) \
                if len(r) else None
            after = (f" The {b['by'] if b['by'] != 'unknown' else 'next'} start at {clock(b['start'])}, {gap:.0f} s "
                     f"later, began attempt {b['attempt']}"
                     + (f"; it resumed at step {redo_b[0]}, so {redo_b[1]} step(s) up to {redo_b[2]} were done again"
                        if redo_b else "") + ".")
            numbers = {"restarted_at": b["start"], "restarted_by": b["by"],
                       "resumed_step": redo_b[0] if redo_b else None, "redone_steps": redo_b[1] if redo_b else 0,
                       "reached_step": redo_b[2] if redo_b else None}
        else:
            after = " Nothing started it again in the evidence."
            numbers = {"restarted_at": None, "restarted_by": None, "resumed_step": None, "redone_steps": 0,
                       "reached_step": None}
        # what went wrong (the first error after the last step) and how it ended (the line that
        # said it was over) may be apart: a rank's timeout, then the agent's "failed" line
        error = a["cause_message"] or a["end_message"]
        when = a["cause_time"] if pd.notna(a["cause_time"]) else a["end"]
        last_t = last["time"].iloc[0] if len(last) else None
        silent = (when - last_t).total_seconds() if last_t is not None else None
        on_rank = f" on rank {a['cause_rank']}" if a["cause_rank"] is not None and not pd.isna(a["cause_rank"]) else ""
        refs = [r for r in dict.fromkeys((a["cause_ref"], a["end_ref"])) if isinstance(r, str)]
        rows.append(findings.finding(
            "training_died", when, a["end"], "critical",
            f"run {a['run'] or a['script'] or '?'} died at {clock(when)}: {_one_line(error)}",
            f"Attempt {a['attempt']} (run {a['run'] or '?'}, started {clock(a['start'])} by {a['by']}) trained from "
            f"{clock(a['first_step'])}; its last step line was at {clock(last_t) if last_t is not None else '?'}; "
            f"at {clock(when)}{on_rank}: `{error}`; it ended at {clock(a['end'])}"
            + (f" (`{_one_line(a['end_message'])}`)" if a["end_message"] and a["end_message"] != error else "")
            + f".{after}",
            refs + findings.refs(last),
            {"run": a["run"], "pid": next(iter(trainer_pids(inc, a)), None), "last_step_time": last_t,
             "error": error, "error_rank": None if not on_rank else int(a["cause_rank"]), "ended": a["end"],
             "silent_s": silent, "hung": silent is not None and silent >= _hang_s(lines), **numbers},
            caused_by=[findings.cause(findings.event_id(refs[0]), f"what went wrong: {_one_line(error)}", refs[:1])]
            if refs else []))
    return findings.frame(rows)


def _hang_s(lines: pd.DataFrame) -> float:
    """How long without a step line reads as a hang before the error rather than a crash in
    stride: five of the attempt's usual gaps between lines, and at least 10 s."""
    gaps = lines["time"].diff().dt.total_seconds().dropna()
    return max(10.0, 5 * float(gaps.median())) if len(gaps) else 10.0


def _an_error(a: pd.Series) -> bool:
    """The end is an error, not a clean stop or a kill someone sent: an exit status of 0 or a
    message saying the run stopped is not a death."""
    if a["end_kind"] == "exit":
        return a["exit_code"] not in (None, 0) and not pd.isna(a["exit_code"])
    text = str(a["end_message"] or "")
    return not re.search(r"\b(?:completed|succeeded|success)\b", text, re.I)


def _one_line(text) -> str:
    """The error whole, on one line: where it is shown, the page or terminal cuts it (with an
    ellipsis and the whole text a hover away)."""
    return " ".join(str(text or "ended").split())
