"""The rows that show a training step was taken, whatever the trainer logs.

A step line is a row of the metrics with a step and a time: the throughput lines (`tok/s`) where a
source has them; where a source has none (Hugging Face's Trainer logs `loss` every N steps and a
tqdm bar of steps; Lightning a metrics file), one row per step of its training metrics. A bar
drawn at 0 s elapsed shows the count it starts from (`0/400`, or `200/400` on a resume), no step
taken. Evaluation and summary rows are no step of training. A source with none of these, whose
lines say a checkpoint was saved at a step (`saved checkpoint step 800`, all an operator's `tail`
printed of a log that is gone), shows that step reached when the line was written.
"""

from __future__ import annotations

import re

import pandas as pd

from ..incident import Incident
from ..schema import BAR_ELAPSED_S, TOK_PER_S
from . import computed

READS = ("metrics", "events")
_NOT_STEPS = ("train/train_", "train/total_flos", "train/epoch")  # closing summaries, and a fraction of an epoch


def step_lines(inc: Incident) -> pd.DataFrame:
    """The metrics' step lines (see the module's docstring), in time order."""
    return computed.cached(inc, "step lines", READS, lambda: _step_lines(inc.metrics, inc.events))


# The step a line names (`at step 120`, `global step 120`, `iteration 120`, `ckpt/step_000200.pt`,
# MMCV's `at 2000 iterations`, Hugging Face's `out/checkpoint-200`), not a fraction (`step 1.5`).
_NAMED_STEP = re.compile(r"\b(?:step|iteration)[\s_=:]*(\d+)(?!\d|\.\d)|(?<![\d.])(\d+) (?:iterations|steps)\b"
                         r"|\bcheckpoint-(\d+)\b", re.I)
SAVED_STEP = "checkpoint/step"  # the metric of a step line read from a checkpoint's line


def named_step(message) -> int | None:
    """The step a line names (its last: `resuming from step_400.pt at step 400`), else None."""
    said = _NAMED_STEP.findall(str(message))
    return int(next(g for g in said[-1] if g)) if said else None


def _step_lines(m: pd.DataFrame, ev: pd.DataFrame) -> pd.DataFrame:
    saved = _saved_steps(m, ev)
    if m.empty:
        return saved
    rates = m[m["metric"] == TOK_PER_S]
    others = m[~m["source"].isin(set(rates["source"])) & m["time"].notna() & m["step"].notna()
               & m["metric"].str.startswith("train/") & ~m["metric"].str.startswith(_NOT_STEPS)]
    others = others[counted(others)]
    keys = ["source", "step"] + (["rank"] if "rank" in others.columns else [])
    others = others.sort_values("time", kind="stable").drop_duplicates(keys, keep="first")
    saved = saved[~saved["source"].isin(set(rates["source"]))]  # (a rate line says more than a save)
    if len(saved):
        # a save's dated line, not the lent time of the row that logged the same step before it
        seen = pd.MultiIndex.from_frame(saved[["source", "step"]].astype(object))
        doubled = lent(others) & pd.MultiIndex.from_frame(others[["source", "step"]].astype(object)).isin(seen)
        others = others[~doubled]
        others = pd.concat([others, saved]) if len(others) else saved
    if len(others):
        return pd.concat([rates, others]).sort_values("time", kind="stable")
    # a trainer's lines come in time order: no sorted copy of them (the watch holds one less)
    return rates if rates["time"].is_monotonic_increasing else rates.sort_values("time", kind="stable")


def placed(rows: pd.DataFrame) -> pd.Series:
    """Which rows carry a time that is not their own: a log with no timestamp placed at the
    start that wrote it (clock/untimed.py `_place`), many lines of a file at one moment, the
    earliest they can have been written. How fast it went, and whether it paused, no such row
    says (a progress bar's seconds, which space a log's lines, do)."""
    if rows.empty or "time_placed" not in rows.columns:
        return pd.Series(False, index=rows.index, dtype=bool)
    return rows["time_placed"].astype("boolean").fillna(False).astype(bool)


def _saved_steps(m: pd.DataFrame, ev: pd.DataFrame) -> pd.DataFrame:
    """Metric-shaped rows (SAVED_STEP, the step as its value) of the checkpoint lines that name a
    step, in dated sources: where no metric row of its source logged that step or a later one by
    then (a trainer's own lines say more, and are never doubled by these): a log's own lines
    gone, or a save between its step lines."""
    if ev.empty or "pattern" not in ev.columns:
        return m.iloc[:0]
    ck = ev[(ev["pattern"] == "checkpoint_save") & ev["time"].notna() & ev["source"].notna()]
    if ck.empty:
        return m.iloc[:0]
    step = ck["message"].map(named_step)
    ck, step = ck[step.notna()], step[step.notna()]
    if len(ck) and len(m):
        # in a source with step lines, a save past the last of them before it is progress no
        # line shows (mmseg's `Saving checkpoint at 2000 iterations` after `Iter [1950/20000]`,
        # its lines every 50); a save at a logged step says nothing more
        before = _steps_so_far(m, ck)
        ck, step = ck[before.isna() | (step > before)], step[before.isna() | (step > before)]
    if ck.empty:
        return m.iloc[:0]
    rows = pd.DataFrame({c: ck[c].to_numpy() for c in ("time", "source", "ref", "run", "host", "rank", "pid")
                         if c in ck.columns and c in m.columns})
    rows["metric"] = SAVED_STEP
    rows["step"] = step.astype("int64").to_numpy()
    rows["value"] = rows["step"].astype(float)
    # labels after the metrics' own: a step line's label is its metric row's where it has one
    rows.index = pd.RangeIndex(len(rows)) + (int(m.index.max()) + 1 if len(m) else 0)
    return rows.astype({c: m[c].dtype for c in rows.columns if c in m.columns}, errors="ignore")


def counted(rows: pd.DataFrame) -> pd.Series:
    """Which metric rows show a step taken: all but a bar drawn as it began (0 s elapsed: the count
    it starts from, a resume's checkpoint or the epochs before it, loaders/training_log/bars.py)."""
    return (rows["metric"] != BAR_ELAPSED_S) | (rows["value"] > 0)


def lent(rows: pd.DataFrame) -> pd.Series:
    """Which rows carry a time a line before them lent (loaders: `time_earliest`)."""
    if "time_earliest" not in rows.columns:
        return pd.Series(False, index=rows.index, dtype=bool)
    return rows["time_earliest"].astype("boolean").fillna(False).astype(bool)


def _steps_so_far(m: pd.DataFrame, ck: pd.DataFrame) -> pd.Series:
    """For each checkpoint line of `ck`, the highest step its source's metric rows logged at or
    before its time (NaN where none did)."""
    # (rows whose time a line before them lent, `time_earliest`, were logged by then at the latest:
    # a save's own time says more of when its step was reached)
    logged = m[m["step"].notna() & m["time"].notna() & m["source"].notna() & ~lent(m)]
    if logged.empty:
        return pd.Series(float("nan"), index=ck.index)
    logged = logged.sort_values("time", kind="stable")
    high = logged.assign(high=logged.groupby("source")["step"].cummax().astype(float))[["time", "source", "high"]]
    at = ck[["time", "source"]].assign(_k=range(len(ck))).sort_values("time", kind="stable")
    got = pd.merge_asof(at, high.astype({"source": at["source"].dtype}), on="time", by="source")
    return pd.Series(got.sort_values("_k")["high"].to_numpy(), index=ck.index)

