"""What each knob costs: replay runs compared with the baseline run, one factor at a time.

Replay runs switch suspected root causes on and off on purpose; each run's wandb config gives
its knob settings, its logs or wandb its tok/s.
"""

from __future__ import annotations

import pandas as pd

from ..detect.throughput import BOOKKEEPING, series
from ..incident import Incident

EFFECT_COLUMNS = ["run", "change", "knobs_changed", "samples", "median_tok_per_s", "p25", "p75", "vs_baseline", "note"]


def knob_settings(inc: Incident) -> pd.DataFrame:
    """Each run's settings (wandb config), limited to those that differ between runs; bookkeeping
    settings (run name, duration, output paths) are not knobs."""
    rows = {run: {k: v for k, v in info.config.items() if not isinstance(v, dict | list)} for run, info in inc.runs.items()}
    df = pd.DataFrame.from_dict(rows, orient="index")
    if df.empty:
        return df
    keep = [c for c in df.columns if df[c].astype(str).nunique() > 1 and not BOOKKEEPING.match(c)]
    return df[keep]


def replay_effects(inc: Incident) -> pd.DataFrame:
    """Each run against the baseline run: which knobs it changed, and its tok/s with spread.

    Replays change one factor at a time, so a run is compared with the baseline, never pooled with
    other runs that share one of its settings (pooling mixes in whatever else those runs changed).
    The baseline is the run called `baseline`, else the run that logged throughput first. A run
    that changed several knobs at once is marked: its effect cannot be split between them.
    """
    knobs = knob_settings(inc)
    s = series(inc)
    if knobs.empty or s.empty:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    s = s[s["run"].isin(knobs.index)]
    if s.empty:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    base = "baseline" if "baseline" in set(s["run"]) else s.sort_values("time")["run"].iloc[0]
    order = [base] + [r for r in s.sort_values("time")["run"].drop_duplicates() if r != base]
    rows = []
    for run in order:
        changed = [k for k in knobs.columns if str(knobs.at[run, k]) != str(knobs.at[base, k])]
        v = s.loc[s["run"] == run, "value"]
        rows.append({
            "run": run,
            "change": ", ".join(f"{k}={knobs.at[run, k]}" for k in changed) or "-",
            "knobs_changed": len(changed), "samples": len(v), "median_tok_per_s": float(v.median()),
            "p25": float(v.quantile(0.25)), "p75": float(v.quantile(0.75)),
            "note": "baseline" if run == base else ("several knobs at once: not separable" if len(changed) > 1
                                                      else "same settings as baseline" if not changed else ""),
        })
    out = pd.DataFrame(rows, columns=EFFECT_COLUMNS)
    out["vs_baseline"] = (out["median_tok_per_s"] / out["median_tok_per_s"].iloc[0]).round(3)
    return out
