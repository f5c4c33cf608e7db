"""A loss or gradient norm that stops being a number: the first line where a run's `loss` or
`grad_norm` is NaN or infinite (`loss nan`, `'grad_norm': nan`), how many such lines follow, and
whether a finite value came back (an fp16 overflow that skipped a step) or not (a run that
diverged and trains on to no purpose: its process alive, its steps counted, its weights lost).
A reader of the log names the step it happened; the rows keep its line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from . import findings
from .per_host import judged

# The metrics whose non-finite value means the training is broken (not a rate or a sentinel
# a logger writes before it has one: nanoGPT's `mfu -100.00%` is read as NaN).
_WATCHED = ("train/loss", "train/grad_norm")


@judged
def detect_nonfinite_loss(inc: Incident) -> pd.DataFrame:
    m = inc.metrics
    if m.empty:
        return findings.frame([])
    mine = m[m["metric"].isin(_WATCHED)]
    rows = []
    for (source, metric), g in mine.groupby(["source", "metric"], sort=True):
        g = findings.in_file_order(g)
        value = g["value"].astype(float).to_numpy()
        bad = ~np.isfinite(value)
        if not bad.any():
            continue
        first = int(np.flatnonzero(bad)[0])
        row = g.iloc[first]
        before = g.iloc[:first][np.isfinite(value[:first])].tail(1)
        finite_after = bool(np.isfinite(value[first + 1:]).any())
        last_bad = g.iloc[int(np.flatnonzero(bad)[-1])]
        evidence = [r for r in (row.get("ref"), *findings.refs(before), last_bad.get("ref")) if isinstance(r, str)]
        rows.append(findings.finding(
            "loss_not_finite", row["time"] if pd.notna(row["time"]) else None,
            last_bad["time"] if pd.notna(last_bad["time"]) else None, "warning" if finite_after else "critical",
            evidence,
            {"source": source, "run": row["run"] if isinstance(row["run"], str) else None, "metric": metric,
             "step": findings.whole(row["step"]), "value": _shown(value[first]),
             "last_finite_step": findings.whole(before["step"].iloc[0]) if len(before) else None,
             "last_finite_value": float(before["value"].iloc[0]) if len(before) else None,
             "lines_not_finite": int(bad.sum()), "lines_after": len(g) - first - 1, "finite_after": finite_after}))
    return findings.frame(rows)


def _shown(v: float) -> str:
    return "nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")
