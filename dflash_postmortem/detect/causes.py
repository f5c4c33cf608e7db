"""The cause graph across detectors: links that need two detectors' findings at once.

Each detector links what it knows on its own (a failed restart to the timeout that killed it, a
stall to the traceback before it, a regression to the launch whose flags changed). What only the
whole picture shows is linked here: a relaunch that came back short because a survivor of a
failed kill still shared its GPUs, and the recovery that came when the operator finally stopped
that survivor.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from ..units import clock
from . import findings
from .control import stopped_by


def _add(row: dict, link: dict) -> None:
    if link["id"] != row["id"] and all(c["id"] != link["id"] for c in row["caused_by"]):
        row["caused_by"].append(link)


def link(inc: Incident, rows: list[dict]) -> list[dict]:
    """Add the cross-detector links to `rows` (findings as dicts with ids) and return them."""
    survivors = {r["numbers"]["pid"]: r for r in rows if r["kind"] == "survivor"}
    partials = [r for r in rows if r["kind"] == "partial_recovery"]
    for p in partials:
        for pid in p["numbers"].get("other_pids") or []:
            s = survivors.get(pid)
            if s is not None:
                _add(p, findings.cause(
                    s["id"], f"PID {pid} survived the failed kill and still held GPU memory while run "
                    f"{p['numbers'].get('run')} trained", s["evidence"][-2:]))
    for r in rows:
        s = survivors.get(r["numbers"].get("pid")) if r["kind"] == "stale_process" else None
        if s is not None:
            _add(r, findings.cause(s["id"], f"PID {s['numbers']['pid']} was still there because the kill meant "
                                   "for it failed", s["evidence"][:2]))
    # A recovery after a drop or a short relaunch that shared its GPUs with other processes came
    # when the operator stopped them: the drop's own (a sweep typed beside the run), else the
    # partial recovery's (a survivor of a failed kill).
    drops = [r for r in rows if r["kind"] == "throughput_regression" and r["numbers"].get("other_pids")]
    for r in rows:
        if r["kind"] != "recovery":
            continue
        before = [p for p in partials + drops if p["start"] < r["start"] and p["numbers"].get("other_pids")]
        if not before:
            continue
        p = max(before, key=lambda p: p["start"])
        cmd = stopped_by(inc, p["numbers"]["other_pids"], p["start"], r["start"])
        if cmd is not None and isinstance(cmd.get("ref"), str):
            _add(r, findings.cause(findings.event_id(cmd["ref"]),
                                   f"the operator stopped PID(s) {', '.join(map(str, p['numbers']['other_pids']))} "
                                   f"at {clock(cmd['time'])} (`{str(cmd['message']).strip()}`)", [cmd["ref"]]))
        if p["kind"] == "partial_recovery":
            _add(r, findings.cause(p["id"], "it recovered from this partial recovery", p["evidence"][:1]))
    return rows


def unique_ids(rows: list[dict]) -> list[dict]:
    """Two findings of one kind starting in the same second get `#2`, `#3`... after their id."""
    seen: dict[str, int] = {}
    for r in rows:
        n = seen.get(r["id"], 0) + 1
        seen[r["id"]] = n
        if n > 1:
            r["id"] = f"{r['id']}#{n}"
    return rows


def frame_with_causes(inc: Incident, parts: list[pd.DataFrame]) -> pd.DataFrame:
    """All detectors' findings as one frame: ordered, ids unique, cross-detector causes linked."""
    rows = findings.frame([r for p in parts if len(p) for r in p.to_dict("records")]).to_dict("records")
    rows = unique_ids(rows)
    for r in rows:
        r["caused_by"] = list(r.get("caused_by") or [])
    return findings.frame(link(inc, rows))
