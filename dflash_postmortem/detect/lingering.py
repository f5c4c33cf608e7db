"""Lingering: a run that finished (its own stop line) whose process did not exit (model.states'
`lingering`): it lived on, silent, holding its GPU memory, until it was killed, exited much later,
or the evidence ended. Nothing failed, so no other detector tells it; what it costs is the GPU
it held (the ledger's `lingering` seconds) and, for whoever starts the next run, a GPU that looks
busy.

The finding names what shows it alive (a listing of its PID, its PID in the GPU's process list,
the kill that ended it), the memory it held and how busy the GPU was meanwhile.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from ..model import gpu_state
from ..model.attempts import attempts, trainer_pids
from ..model.states import states
from . import findings
from .per_host import judged
from .stall import IDLE_SHARE


@judged
def detect_lingering(inc: Incident) -> pd.DataFrame:
    """One finding per attempt whose process outlived its own stop line (model.states)."""
    st = states(inc)
    att = attempts(inc).set_index("attempt", drop=False)
    rows = []
    for _, s in st[st["state"] == "lingering"].iterrows():
        a = att.loc[s["attempt"]]
        start_, end = s["start"], s["end"]
        pids = trainer_pids(inc, a)
        gp = inc.gpu_processes
        gp = gp[(gp["time"] >= start_) & (gp["time"] <= end) & gp["pid"].isin(pids)]
        holders, holder_refs = findings.memory_by_pid(gp)
        g = inc.gpus.dropna(subset=["memory_used_mib"])
        g = g[(g["time"] >= start_) & (g["time"] <= end)]
        if len(gp) and "gpu" in gp.columns:
            g = g[g["gpu"].isin(gp["gpu"].dropna().unique())]
        util = g["util_gpu_pct"].dropna()
        ended = a["end"] if pd.notna(a["end"]) and a["end"] >= end - pd.Timedelta(seconds=1) else None
        said = findings.ended_by(inc, a) if ended is not None else None
        refs = findings.unique([r for r in (s["ref"], a["end_ref"] if ended is not None else a["last_alive_ref"])
                                if isinstance(r, str)] + holder_refs)
        rows.append(findings.finding(
            "lingering", start_, end, "warning", refs,
            {"run": a["run"], "attempt": a["attempt"], "pid": int(pids[0]) if pids else None,
             "seconds": (end - start_).total_seconds(), "stop_line": s["detail"],
             "end_kind": a["end_kind"] if ended is not None else None,
             "end_message": said,
             "holder_mib": {int(p): float(m) for p, m in holders.items()},
             "gpus": sorted(int(x) for x in g["gpu"].dropna().unique()) if len(gp) else [],
             "idle": len(util) > 0 and float(gpu_state.idle(util).mean()) >= IDLE_SHARE,
             "util_pct_mostly": float(util.quantile(IDLE_SHARE)) if len(util) else None}))
    return findings.frame(rows)

