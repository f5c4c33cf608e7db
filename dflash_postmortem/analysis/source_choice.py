"""Which source to read when several saw the same thing.

The same GPU or run is often seen by several sources (an nvidia-smi stream, dmon, wandb system
metrics, a one-off snapshot; a training log and wandb): drawing or tabulating all of them doubles
every line. Per GPU or per run, the source with the most samples stands for the others.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident
from ..model.pace import pace_rows


def densest(df: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """Per group of `keys`, the rows of the one source with the most samples of `value`."""
    df = df.dropna(subset=["time", value])
    if df.empty:
        return df
    if "host" in keys:
        df = _one_host(df)
    counts = df.groupby([*keys, "source"], dropna=False).size().rename("n").reset_index()
    best = counts.sort_values("n", ascending=False, kind="stable").drop_duplicates(keys)
    return df.merge(best[[*keys, "source"]], on=[*keys, "source"]).sort_values("time", kind="stable")


def _one_host(df: pd.DataFrame) -> pd.DataFrame:
    """Rows without a host belong to the one host the others name (a snapshot with no hostname
    next to a wandb run that has one); with several hosts named they stay unassigned."""
    named = df["host"].dropna().unique()
    return df.assign(host=df["host"].fillna(named[0])) if len(named) == 1 else df


def gpu_samples(gpus: pd.DataFrame, value: str) -> pd.DataFrame:
    """GPU samples of `value` (a `gpus` column), per host and GPU from its best-sampled source."""
    return densest(gpus.dropna(subset=["gpu"]), ["host", "gpu"], value)


def throughput_samples(inc: Incident) -> pd.DataFrame:
    """The job's pace samples (model/pace.py: tok/s, else steps/s) per run from the run's
    best-sampled source (log or wandb), warm-up kept (`detect.throughput.series` is the job's
    series the detectors judge)."""
    return densest(pace_rows(inc), ["run"], "value")
