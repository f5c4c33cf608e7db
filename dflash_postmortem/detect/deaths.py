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
from ..model import computed as memo
from ..model.attempts import attempts, trainer_pids
from ..model.progress import lines_of, resumes
from ..model.states import states
from . import findings
from .finding_text import one_line
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
        numbers = {"restarted_at": None, "restarted_by": None, "next_attempt": None, "resumed_step": None,
                   "redone_steps": 0, "reached_step": None}
        if len(nxt):
            b = nxt.iloc[0]
            r = redo[redo["attempt"] == b["attempt"]]
            numbers.update(restarted_at=b["start"], restarted_by=b["by"], next_attempt=b["attempt"])
            if len(r):
                numbers.update(resumed_step=int(r["resumed_step"].iloc[0]), redone_steps=int(r["redone_steps"].iloc[0]),
                               reached_step=int(r["reached_step"].iloc[0]))
        # what went wrong (the first error after the last step) and how it ended (the line that
        # said it was over) may be apart: a rank's timeout, then the agent's "failed" line
        error = a["cause_message"] or a["end_message"]
        when = a["cause_time"] if pd.notna(a["cause_time"]) else a["end"]
        last_t = last["time"].iloc[0] if len(last) else None
        silent = (when - last_t).total_seconds() if last_t is not None else None
        on_rank = a["cause_rank"] is not None and not pd.isna(a["cause_rank"])
        refs = [r for r in dict.fromkeys((a["cause_ref"], a["end_ref"])) if isinstance(r, str)]
        hung = silent is not None and silent >= _hang_s(lines)
        rows.append(findings.finding(
            "training_died", when, a["end"], "critical", refs + findings.refs(last),
            {"run": a["run"], "script": a["script"], "attempt": a["attempt"], "started": a["start"],
             "started_by": a["by"], "first_step_time": a["first_step"], "end_message": a["end_message"] or None,
             "pid": next(iter(trainer_pids(inc, a)), None), "last_step_time": last_t,
             "error": error, "error_rank": int(a["cause_rank"]) if on_rank else None, "ended": a["end"],
             "silent_s": silent, "hung": hung, "silent_logs": _silent_logs(inc, a, last_t) if hung else [],
             **numbers},
            caused_by=[findings.cause(findings.event_id(refs[0]), f"what went wrong: {one_line(error)}", refs[:1])]
            if refs else [], within_s=_within(inc, a["cause_ref"])))
    return findings.frame(rows)


def _within(inc: Incident, ref) -> float:
    """How much later than its time the line at `ref` may be (a log with no time of its own,
    placed at its launch: clock/untimed.py), else 0."""
    if not isinstance(ref, str) or not {"time_approx", "time_within_s"} <= set(inc.events.columns):
        return 0.0
    said = memo.rows_where(inc, "events", "ref", ref)
    within = said.loc[said["time_approx"].fillna(False).astype(bool), "time_within_s"].dropna()
    return float(within.max()) if len(within) else 0.0


def _silent_logs(inc: Incident, a: pd.Series, last_step) -> list[str]:
    """Of a hang that ended in an error: the attempt's logs with no line after its last step
    while another of its logs wrote one (each rank writing its own file: the rank the others
    waited for said nothing; theirs timed out)."""
    m = inc.metrics
    # the logs that logged steps (a launcher's own output logs none)
    logs = sorted(set(m.loc[m["source"].isin(a["sources"]), "source"].dropna()))
    if len(logs) < 2 or last_step is None:
        return []
    said = set()
    for frame in (m, inc.events):
        said |= set(frame.loc[frame["source"].isin(logs) & (frame["time"] > last_step), "source"].dropna())
    return [s for s in logs if s not in said] if said else []


def _hang_s(lines: pd.DataFrame) -> float:
    """How long without a step line reads as a hang before the error rather than a crash in
    stride: five of the attempt's usual gaps between lines, and at least 10 s."""
    gaps = lines["time"].diff().dt.total_seconds().dropna()
    return max(10.0, 5 * float(gaps.median())) if len(gaps) else 10.0


def _an_error(a: pd.Series) -> bool:
    """The end is an error, not a clean stop or a kill someone sent: an exit status of 0 or a
    message saying the run stopped is not a death."""
    if a["end_kind"] == "exit":
        # 124 with SIGTERM is `timeout`'s own status (shell_words.exit_meaning): the limit the
        # command set was reached, a stop it asked for
        if a["exit_code"] == 124 and a["signal"] == "SIGTERM":
            return False
        return a["exit_code"] not in (None, 0) and not pd.isna(a["exit_code"])
    text = str(a["end_message"] or "")
    return not re.search(r"\b(?:completed|succeeded|success)\b", text, re.I)
