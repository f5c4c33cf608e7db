"""A loss or gradient norm that stops being a number: the first line where a run's `loss` or
`grad_norm` is NaN or infinite (`loss nan`, `'grad_norm': nan`), how many such lines follow, and
whether a finite value came back (an fp16 overflow that skipped a step) or not (a run that
diverged and trains on to no purpose: its process alive, its steps counted, its weights lost).
A reader of the log names the step it happened; the rows keep its line. Where it stayed so, what
the reader asks next is told too: how the run that trained on it ended (stopped by a `kill`, or
by itself), and where the same run's metric was a number again in a later log (a restart from
a checkpoint saved before it broke), which ends the incident.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..incident import Incident
from ..model.attempts import attempts, finished
from ..model.progress import NOT_FINITE_BREAKS
from ..model.step_lines import named_step
from ..schema import ref_line, ref_lines
from . import findings
from .per_host import judged

# The metrics whose non-finite value means the training is broken (not a rate or a sentinel
# a logger writes before it has one: nanoGPT's `mfu -100.00%` is read as NaN).
_WATCHED = NOT_FINITE_BREAKS
_LOSS, _GRAD_NORM = NOT_FINITE_BREAKS


@judged
def detect_nonfinite_loss(inc: Incident) -> pd.DataFrame:
    m = inc.metrics
    if m.empty:
        return findings.frame([])
    mine = m[m["metric"].isin(_WATCHED)]
    found = []  # (its first line that is not a number, its position, the metric's rows in its log, their values)
    for _, g in mine.groupby(["source", "metric"], sort=True):
        g = findings.in_file_order(g)
        value = g["value"].astype(float).to_numpy()
        bad = ~np.isfinite(value)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            found.append((g.iloc[first], first, g, value))
    # in time order: a run that resumed from a checkpoint saved after its loss broke carries it
    found.sort(key=lambda f: (pd.isna(f[0]["time"]), f[0]["time"] if pd.notna(f[0]["time"]) else 0))
    rows = []
    for row, first, g, value in found:
        bad = ~np.isfinite(value)
        before = g.iloc[:first][np.isfinite(value[:first])].tail(1)
        finite_after = bool(np.isfinite(value[first + 1:]).any())
        learning = _loss_learning(mine, row) if row["metric"] == _GRAD_NORM and not finite_after else None
        last_bad = g.iloc[int(np.flatnonzero(bad)[-1])]
        evidence = [r for r in (row.get("ref"), *findings.refs(before), last_bad.get("ref")) if isinstance(r, str)]
        run = row["run"] if isinstance(row["run"], str) else None
        carried = _carried(inc, row, run, rows)
        ended = _ended(inc, last_bad) if not finite_after else _NOT_ENDED
        again = _again(inc, run, last_bad) if not finite_after else _NOT_AGAIN
        evidence += [r for r in (ended["ended_ref"], again["again_ref"]) if isinstance(r, str)]
        rows.append(findings.finding(
            "loss_not_finite", row["time"] if pd.notna(row["time"]) else None,
            last_bad["time"] if pd.notna(last_bad["time"]) else None,
            "warning" if finite_after or learning else "critical",
            evidence + ([carried[1]] if carried else []),
            {"source": row["source"], "run": run, "metric": row["metric"],
             "step": findings.whole(row["step"]), "value": _shown(value[first]),
             "last_finite_step": findings.whole(before["step"].iloc[0]) if len(before) else None,
             "last_finite_value": float(before["value"].iloc[0]) if len(before) else None,
             "lines_not_finite": int(bad.sum()), "lines_after": len(g) - first - 1, "finite_after": finite_after,
             "loss_scaled": _loss_scaled(inc, row["source"]) if finite_after else None,
             "loss_learning": learning,
             "resumed_step": carried[2] if carried else None,
             "broke_at_step": carried[0]["numbers"]["step"] if carried else None,
             **ended, **again},
            caused_by=[findings.cause(carried[0]["id"], f"it resumed from a checkpoint at step {carried[2]}, saved "
                                      f"after the {carried[0]['numbers']['metric'].removeprefix('train/')} stopped "
                                      f"being a number at step {carried[0]['numbers']['step']}", [carried[1]])]
            if carried else []))
    return findings.frame(rows)


# What says a run scales its loss (mixed precision): where it does, a step whose gradients
# overflowed is skipped, and its loss line may read `nan` while the next is a number again.
_SCALED = re.compile(r"(?i)\bfp16\b|\boverflow|loss[ _]?scal|\bamp\b|GradScaler")


def _loss_scaled(inc: Incident, source) -> bool:
    """Whether the log `source` shows its run scaling its loss: a loss scale it logs, or a line
    that names an overflow, fp16 or a scaler."""
    m, ev = inc.metrics, inc.events
    mine = m[m["source"] == source]
    if (mine["metric"] == "train/loss_scale").any():
        return True
    said = ev.loc[ev["source"] == source, "message"] if "message" in ev.columns else ev.iloc[:0]
    return bool(said.astype("string").str.contains(_SCALED).fillna(False).any())


def _loss_learning(watched: pd.DataFrame, row: pd.Series) -> dict | None:
    """Where a gradient norm stopped being a number and stayed so: the same log's loss from that
    line on, if it stayed a number and moved (a norm not measured, as a sharded or offloaded
    optimizer's may be, or an overflow the scaler skips, beside a run that learns): its first
    and last values and steps. None where the loss broke too, stood still, or was not logged."""
    loss = findings.in_file_order(watched[(watched["source"] == row["source"]) & (watched["metric"] == _LOSS)])
    at = ref_line(row["ref"]) if isinstance(row.get("ref"), str) else None
    if loss.empty or at is None:
        return None
    after = loss[(ref_lines(loss["ref"]) >= at[1]).to_numpy()]
    value = after["value"].astype(float).to_numpy()
    if len(after) < 2 or not np.isfinite(value).all() or np.ptp(value) == 0:
        return None
    return {"from": float(value[0]), "to": float(value[-1]), "from_step": findings.whole(after["step"].iloc[0]),
            "to_step": findings.whole(after["step"].iloc[-1])}


def _carried(inc: Incident, row: pd.Series, run, told: list[dict]) -> tuple[dict, str, int] | None:
    """(the earlier finding, the resume line, its step) where the log of `row` resumed, before
    it, from a checkpoint of a step at or after the one where the same run's metric had already
    stopped being a number: the checkpoint holds what broke."""
    ev = inc.events
    if pd.isna(row["time"]) or "kind" not in ev.columns:
        return None
    said = ev[(ev["kind"] == "resumed") & (ev["source"] == row["source"]) & (ev["time"] <= row["time"])].tail(1)
    step = named_step(said["message"].iloc[0]) if len(said) else None
    if step is None or not isinstance(said["ref"].iloc[0], str):
        return None
    broke = [f for f in told if f["numbers"]["run"] == run and f["numbers"]["metric"] == row["metric"]
             and f["numbers"]["step"] is not None and f["numbers"]["step"] <= step and f["start"] is not None
             and f["start"] < said["time"].iloc[0] and f["numbers"]["source"] != row["source"]]
    return (broke[-1], said["ref"].iloc[0], step) if broke else None


def _shown(v: float) -> str:
    return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")


_NOT_ENDED = {"ended_at": None, "end_kind": None, "ended_by": None, "ended_ref": None}
_NOT_AGAIN = {"again_at": None, "again_step": None, "again_value": None, "again_ref": None,
              "again_started": None, "again_resumed_step": None}


def _ended(inc: Incident, last_bad: pd.Series) -> dict:
    """How the attempt that wrote the metric's last line that was not a number ended, where it
    was stopped (a kill) or stopped by itself: the run trained on a broken loss until then. A
    death is a finding of its own (detect/deaths.py), told there."""
    att = attempts(inc)
    if att.empty or pd.isna(last_bad["time"]):
        return _NOT_ENDED
    mine = att[_writes(att, last_bad["source"]) & (att["start"] <= last_bad["time"]) & (att["end"] >= last_bad["time"])]
    if mine.empty:
        return _NOT_ENDED
    a = mine.iloc[-1]
    clean = finished(a)
    if a["end_kind"] != "kill_sent" and not clean:
        return _NOT_ENDED
    return {"ended_at": a["end"], "end_kind": "stopped" if clean else "killed", "ended_by": findings.ended_by(inc, a),
            "ended_ref": a["end_ref"] if isinstance(a["end_ref"], str) else None}


def _again(inc: Incident, run, last_bad: pd.Series) -> dict:
    """The first line after the last one that was not a number where the same run's metric is a
    number again, in another log (a run started again), with the checkpoint step that log
    resumed from and when that start was."""
    m = inc.metrics
    if run is None or pd.isna(last_bad["time"]):
        return _NOT_AGAIN
    later = m[(m["metric"] == last_bad["metric"]) & (m["run"] == run) & (m["time"] > last_bad["time"])
              & (m["source"] != last_bad["source"])]
    later = later[np.isfinite(later["value"].astype(float).to_numpy())].sort_values("time", kind="stable")
    if later.empty:
        return _NOT_AGAIN
    back = later.iloc[0]
    ev = inc.events
    said = ev[(ev["kind"] == "resumed") & (ev["source"] == back["source"]) & (ev["time"] <= back["time"])].tail(1)
    att = attempts(inc)
    starts = att[_writes(att, back["source"]) & (att["start"] <= back["time"])]["start"]
    return {"again_at": back["time"], "again_step": findings.whole(back["step"]), "again_value": float(back["value"]),
            "again_ref": next(iter(findings.refs(later.head(1))), None),
            "again_started": starts.iloc[-1] if len(starts) else None,
            "again_resumed_step": named_step(said["message"].iloc[0]) if len(said) else None}


def _writes(att: pd.DataFrame, source: str) -> np.ndarray:
    """Which attempts wrote into `source`."""
    return np.array([source in srcs for srcs in att["sources"]], dtype=bool)
