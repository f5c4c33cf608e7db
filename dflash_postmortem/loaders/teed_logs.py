"""One trainer's output written to two logs: `python3 train.py | tee -a logs/train.log` run by a
wrapper whose own output goes to `logs/requeue.log`, or `nohup python3 train.py | tee train.log &`
beside its `nohup.out`. Each line is in both files, with the same time and the same values; read
as two logs they were two runs, one "replacing" the other where their lines interleave.

The file whose metric lines are all (COPIED) in another, longer file, and every other line it
says something with (its events), is the stream; the other holds a copy of it beside lines of
its own (the wrapper's). Ranks that log the same global figures at the same second are not
copies of each other: each has lines of its own (its rank's error, its rank's name). The copy's rows, metrics and events alike, are marked
`copy_of` the stream's file, as a session's printed lines are (folder.py drops them and says so
in the copy's load report); the copy keeps its own lines.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from .training_log.process_log import TRAINING_LOG_FORMAT

COPIED = 0.95  # the share of a stream's metric lines found in the other file that makes it a copy
_MOST_COPIES = 3  # logs holding one line, at most, for it to count as a copy's
_METRIC_KEY = ["time", "metric", "value", "step"]
_EVENT_KEY = ["time", "kind", "message"]


def mark_teed_copies(inc: Incident) -> None:
    """Mark the rows of each training log that copy another training log of the incident."""
    logs = {f.path: f.read for f in inc.load_report.files if f.format == TRAINING_LOG_FORMAT}
    copies = {holder: stream for holder, stream in _copies(inc.metrics, logs).items()
              if _all_said_in(inc.events, stream, holder)}
    if not copies:
        return
    for frame, key in (("metrics", _METRIC_KEY), ("events", _EVENT_KEY)):
        df = getattr(inc, frame)
        if df.empty or not set(key) <= set(df.columns):
            continue
        copy_of = df["copy_of"].astype(object) if "copy_of" in df.columns else pd.Series(None, index=df.index, dtype=object)
        h = _hashes(df, key)
        for holder, stream in copies.items():
            theirs = h[(df["source"] == stream).to_numpy(dtype=bool, na_value=False)]
            mine = (df["source"] == holder).to_numpy(dtype=bool, na_value=False) & np.isin(h, theirs)
            copy_of[mine & copy_of.isna().to_numpy()] = stream
        setattr(inc, frame, df.assign(copy_of=copy_of))


def _copies(m: pd.DataFrame, logs: dict[str, int]) -> dict[str, str]:
    """{file holding a copy: the stream it copies}, from the logs' timed metric lines (`logs`:
    each training log's lines read)."""
    mine = m[m["source"].isin(list(logs)) & m["time"].notna()] if len(m) else m
    if mine.empty:
        return {}
    rows = pd.DataFrame({"h": _hashes(mine, _METRIC_KEY), "source": mine["source"].to_numpy()}).drop_duplicates()
    sizes = rows.groupby("source").size()
    # a line two or three logs hold (a tee, a tee of a tee); one that every rank of a job logs alike
    # (a global loss, 512 ranks) says nothing of copies, and pairing it would cost ranks squared
    shared = rows[rows.groupby("h")["source"].transform("size").between(2, _MOST_COPIES)]
    if shared.empty:
        return {}
    pairs = shared.merge(shared, on="h")
    pairs = pairs[pairs["source_x"] != pairs["source_y"]].groupby(["source_x", "source_y"]).size()
    out: dict[str, str] = {}
    for (stream, holder), n in pairs.items():
        # the stream is the shorter file: the holder adds lines of its own (two files alike, line
        # for line, are two runs alike as far as anything shows: two jobs a script started together)
        if n >= COPIED * sizes[stream] and logs[stream] < logs[holder] and holder not in out:
            out[holder] = stream
    return out


def _all_said_in(ev: pd.DataFrame, stream: str, holder: str) -> bool:
    """Whether every event line of `stream` is in `holder` too (at its time, in its words)."""
    if ev.empty or not set(_EVENT_KEY) <= set(ev.columns):
        return True
    h = _hashes(ev, _EVENT_KEY)
    source = ev["source"].to_numpy(dtype=object)
    return bool(np.isin(h[source == stream], h[source == holder]).all())


def _hashes(df: pd.DataFrame, key: list[str]) -> np.ndarray:
    return pd.util.hash_pandas_object(df[key], index=False).to_numpy()
