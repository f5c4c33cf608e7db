"""The rows that show a training step was taken, whatever the trainer logs.

A step line is a row of the metrics with a step and a time: the throughput lines (`tok/s`) where a
source has them; where a source has none (Hugging Face's Trainer logs `loss` every N steps and a
tqdm bar of steps; Lightning a metrics file), one row per step of its training metrics. A bar
drawn at 0 s elapsed shows the count it starts from (`0/400`, or `200/400` on a resume), no step
taken. Evaluation and summary rows are no step of training.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from ..schema import BAR_ELAPSED_S, TOK_PER_S
from . import computed

READS = ("metrics",)
_NOT_STEPS = ("train/train_", "train/total_flos", "train/epoch")  # closing summaries, and a fraction of an epoch


def step_lines(inc: Incident) -> pd.DataFrame:
    """The metrics' step lines (see the module's docstring), in time order."""
    return computed.cached(inc, "step lines", READS, lambda: _step_lines(inc.metrics))


def _step_lines(m: pd.DataFrame) -> pd.DataFrame:
    if m.empty:
        return m
    rates = m[m["metric"] == TOK_PER_S]
    others = m[~m["source"].isin(set(rates["source"])) & m["time"].notna() & m["step"].notna()
               & m["metric"].str.startswith("train/") & ~m["metric"].str.startswith(_NOT_STEPS)]
    others = others[(others["metric"] != BAR_ELAPSED_S) | (others["value"] > 0)]
    keys = ["source", "step"] + (["rank"] if "rank" in others.columns else [])
    others = others.sort_values("time", kind="stable").drop_duplicates(keys, keep="first")
    if len(others):
        return pd.concat([rates, others]).sort_values("time", kind="stable")
    # a trainer's lines come in time order: no sorted copy of them (the watch holds one less)
    return rates if rates["time"].is_monotonic_increasing else rates.sort_values("time", kind="stable")
