"""The goodput ledger: every GPU-second of the incident window, for every GPU a job used, in one
class, so that the cost of an incident is a sum that can be checked.

    productive    an attempt trained on the GPU at the job's level (`_baseline`); a second below
                  it by more than `min_drop` counts its level / baseline here
    degraded      ... and the rest here: the share lost to the drop
    starting      an attempt held the GPU before its first step (program start-up, checkpoint restore)
    stalled       an attempt held the GPU and made no progress
    diverged      an attempt trained on after its loss stopped being a number for good (states)
    lingering     an attempt's process held the GPU after its run had finished (it did not exit)
    redone        training that repeated steps already done before a resume from a checkpoint
                  (Google's ML Goodput: wasted progress)
    restarting    between an attempt's end and the next attempt's start
    down          the GPU held by no attempt, with none to come

The window runs from the first attempt's start to the last sign of any (of the attempts the
evidence can account: not a run that ended before the GPUs were first sampled and that names
no GPU, `accounted`). It is cut where anything
changes (an attempt starts or ends, a state or a progress window begins, a resume's repeated
steps are done): within a piece every class is constant, so each piece is classified once. A
GPU held by two attempts at once splits its seconds between them by their memory on it where
per-process samples say, else evenly. Each GPU's classes sum exactly to the window.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from . import computed
from .attempts import attempts
from .pace import step_grew, unit
from .progress import progress, resumes, warmed
from .states import MIN_DROP, lasting_below, states

CLASSES = ("productive", "degraded", "starting", "stalled", "diverged", "lingering", "redone", "restarting", "down")
# A class with less than this many seconds is not shown (it rounds to 0 s)
SHOWN_S = 0.5
COLUMNS = ("host", "gpu", *CLASSES, "total")


def ledger(inc: Incident) -> pd.DataFrame:
    """One row per GPU (host, gpu) with seconds per class (CLASSES) and `total`, over the
    incident window; empty where no attempt or no GPU is known."""
    return _account(inc)[0]


def ledger_parts(inc: Incident) -> pd.DataFrame:
    """The same GPU-seconds by whose they were (PART_COLUMNS): one row per attempt and class
    (its job, the seconds summed over its GPUs, the lines that show it), and the GPU time
    between attempts (`attempt` None; restarting or down, after the attempt in `after`). Each
    class sums to the ledger's over every GPU, less the parts under SHOWN_S, which are not listed."""
    return _account(inc)[1]


# The frames the ledger is read from (the memo of computed.py is keyed by them).
READS = ("metrics", "events", "processes", "gpu_processes", "gpus")
PART_COLUMNS = ("job", "attempt", "after", "class", "seconds", "evidence")
_LIFE = ("starting", "redone", "productive", "degraded", "stalled", "diverged", "lingering", "restarting", "down")


def _account(inc: Incident) -> tuple[pd.DataFrame, pd.DataFrame]:
    return computed.cached(inc, "ledger", READS,
                           lambda: _ledger(inc))


def _ledger(inc: Incident) -> tuple[pd.DataFrame, pd.DataFrame]:
    none = pd.DataFrame(columns=list(COLUMNS)), pd.DataFrame(columns=list(PART_COLUMNS))
    att = accounted(inc)
    if att.empty:
        return none
    alive_until = pd.concat([att["last_alive"], att["end"]], axis=1).max(axis=1).fillna(att["start"])
    t0, t1 = att["start"].min(), alive_until.max()
    if not t1 > t0:
        return none
    st, prog, redo = states(inc), progress(inc), resumes(inc)
    cuts = pd.concat([att["start"], alive_until, att["first_step"], st["start"], st["end"], prog["start"],
                      prog["end"], redo["resumed_at"], redo["redone_until"], pd.Series([t0, t1])]).dropna()
    cuts = pd.DatetimeIndex(cuts[(cuts >= t0) & (cuts <= t1)]).tz_convert("UTC").tz_localize(None)
    cuts = np.unique(cuts.as_unit("us").to_numpy())
    lo, hi = cuts[:-1], cuts[1:]
    mid = pd.DatetimeIndex(lo + (hi - lo) // 2, tz="UTC")
    secs = (hi - lo).astype("timedelta64[us]").astype(np.int64) / 1e6
    like = _in_like_steps(inc, att, prog)
    baseline = _baseline(inc, like)
    # per attempt and piece: which class its share of the piece falls in, and its level ratio
    min_drop = float(inc.config.detect.get("min_drop", MIN_DROP))
    what = {a: _classes(inc, a, mid, st, like, redo, baseline, min_drop) for a in att["attempt"]}
    alive = {a: ((s <= mid) & (mid < e)) for a, s, e in zip(att["attempt"], att["start"], alive_until, strict=True)}
    later = np.array([(att["start"] > m).any() for m in mid])
    # the GPU time no attempt held belongs to the gap after the last attempt that had ended
    ended = sorted(zip(alive_until, att["attempt"], strict=True), key=lambda x: x[0])
    after = np.array([next((a for t, a in reversed(ended) if t <= m), None) for m in mid], dtype=object)
    parts: dict[tuple, float] = {}
    rows = []
    for host, gpu in _gpus(inc, att):
        users = [a for a, gs in zip(att["attempt"], att["gpus"], strict=True) if gpu in gs or not gs]
        weight = _memory_weights(inc, att, users, gpu)
        held = np.zeros(len(mid))
        cls = dict.fromkeys(CLASSES, 0.0)
        share_sum = sum(np.where(alive[a], weight[a], 0.0) for a in users) if users else np.zeros(len(mid))
        for a in users:
            share = np.divide(np.where(alive[a], weight[a], 0.0), share_sum, out=np.zeros(len(mid)),
                              where=share_sum > 0)
            held += share
            kind, ratio = what[a]
            training = kind == "training"
            for c, part in (("starting", kind == "starting"), ("stalled", kind == "stalled"), ("redone", kind == "redone"),
                            ("lingering", kind == "lingering"), ("diverged", kind == "diverged"),
                            ("productive", training * ratio),
                            ("degraded", training * (1 - ratio))):
                v = float(np.sum(secs * share * part))
                cls[c] += v
                parts[(a, None, c)] = parts.get((a, None, c), 0.0) + v
        idle = secs * (1 - np.clip(held, 0, 1))
        for c, when in (("restarting", later), ("down", ~later)):
            cls[c] += float(np.sum(idle * when))
            for prev in set(after[idle * when > 0]):
                v = float(np.sum(idle * when * (after == prev)))
                parts[(None, prev, c)] = parts.get((None, prev, c), 0.0) + v
        rows.append({"host": host, "gpu": gpu, **cls, "total": float(secs.sum())})
    return pd.DataFrame(rows, columns=list(COLUMNS)), _parts(parts, att, st, redo)


def accounted(inc: Incident) -> pd.DataFrame:
    """The attempts whose GPU time the ledger accounts: where the GPUs were sampled, not one that
    had ended before the first sample and whose GPUs nothing names (a log of a run a day before,
    kept in the folder: the hours between it and the capture are no restart)."""
    att = attempts(inc)
    if inc.gpus.empty or att.empty:
        return att
    first = inc.gpus["time"].min()
    unseen = att[["last_alive", "end"]].max(axis=1).fillna(att["start"]) < first
    return att[~(unseen & ~att["gpus"].map(bool))]


def _parts(parts: dict[tuple, float], att: pd.DataFrame, st: pd.DataFrame, redo: pd.DataFrame) -> pd.DataFrame:
    """The per-attempt rows, each with the lines that show its class: the start and first step,
    the state changes, the resume line; a gap by the end of the attempt before it and the start
    of the one after."""
    by = att.set_index("attempt")
    rows = []
    for (a, prev, c), v in parts.items():
        if v < SHOWN_S:
            continue
        me = by.loc[a if a is not None else prev]
        if a is None:
            nxt = att[att["start"] >= me["last_alive"]] if pd.notna(me["last_alive"]) else att.iloc[:0]
            refs = [me["end_ref"] if isinstance(me["end_ref"], str) else me["last_alive_ref"]]
            refs += [nxt["start_ref"].iloc[0]] if c == "restarting" and len(nxt) else []
        elif c == "starting":
            refs = [me["start_ref"], me["first_step_ref"]]
        elif c == "productive":
            refs = [me["first_step_ref"]]
        elif c == "degraded":
            refs = list(st.loc[(st["attempt"] == a) & (st["state"] == "degraded"), "ref"]) or [me["first_step_ref"]]
        elif c == "stalled":
            refs = list(st.loc[(st["attempt"] == a) & st["state"].isin(["stalled", "hung"]), "ref"])
        elif c in ("lingering", "diverged"):
            refs = list(st.loc[(st["attempt"] == a) & (st["state"] == c), "ref"])
        else:
            refs = list(redo.loc[redo["attempt"] == a, "ref"])
        rows.append({"job": me["job"], "attempt": a, "after": prev, "class": c, "seconds": v,
                     "evidence": list(dict.fromkeys(r for r in refs if isinstance(r, str)))})
    # attempt by attempt in start order, each followed by the gap after it, classes in the order
    # of an attempt's life
    start, order = dict(zip(att["attempt"], att["start"], strict=True)), {c: i for i, c in enumerate(_LIFE)}
    rows.sort(key=lambda r: (start[r["attempt"] or r["after"]], r["attempt"] is None, order[r["class"]]))
    return pd.DataFrame(rows, columns=list(PART_COLUMNS))


def _in_like_steps(inc: Incident, att: pd.DataFrame, prog: pd.DataFrame) -> pd.DataFrame:
    """The windows with their levels in like work: where the pace is counted in steps, each
    start's in the steps of the first start that trained (pace.step_grew: a start with twice the
    batch at half the steps a second lost nothing), and the windows of a start whose steps
    compare with those by a factor no file says left out (they are neither lost nor kept)."""
    if unit(inc) != "steps/s" or prog.empty:
        return prog
    flags = dict(zip(att["attempt"], att["flags"], strict=True))
    paced = set(prog["attempt"])
    first = next(a for a in att["attempt"] if a in paced)
    grew = {a: step_grew(flags.get(first), flags.get(a)) for a in prog["attempt"].unique()}
    known = prog["attempt"].map(lambda a: grew[a] is not None).astype(bool)
    return prog[known].assign(level=prog["level"][known] * prog["attempt"][known].map(grew).astype(float))


def _baseline(inc: Incident, prog: pd.DataFrame) -> float:
    """What the job should do: incident.toml's expected_tok_per_s, else the upper quartile of its
    windows (the first window's warm-up and a short last one sit at the ends, and a job that
    spent most of its time degraded still has its good half), or a start's own level (the
    median of its windows, each of progress.py's LINES_PER_WINDOW lines, its warm-up forgiven)
    where higher: a start killed after its first half-minute at full pace is what the slower
    one resumed after it is measured against, however much longer that one ran."""
    if inc.config.expected_tok_per_s is not None and unit(inc) == "tok/s":
        return float(inc.config.expected_tok_per_s)
    if not len(prog):
        return np.nan
    starts = [float(np.median(warmed(w["level"]))) for _, w in prog.groupby("attempt", sort=False)]
    return float(max([prog["level"].quantile(0.75), *starts]))


def _classes(inc: Incident, attempt: str, mid: pd.DatetimeIndex, st: pd.DataFrame, prog: pd.DataFrame, redo: pd.DataFrame,
             baseline: float, min_drop: float) -> tuple[np.ndarray, np.ndarray]:
    """For each piece (by its middle): the attempt's class there (starting, stalled, diverged,
    lingering, redone or training) and its level against the baseline (1 where no level is known)."""
    kind = np.full(len(mid), "training", dtype=object)
    mine = st[st["attempt"] == attempt]
    # stalled wins over starting where both say so; a hang until the error is a stall's seconds
    for state, cls in (("starting", "starting"), ("diverged", "diverged"), ("stalled", "stalled"), ("hung", "stalled"),
                       ("lingering", "lingering")):
        for s, e in zip(mine.loc[mine["state"] == state, "start"], mine.loc[mine["state"] == state, "end"], strict=True):
            kind[(s <= mid) & (mid < (e if pd.notna(e) else s))] = cls
    # from the resume line on it trains, though its first step line may come later
    for since, until in zip(redo.loc[redo["attempt"] == attempt, "resumed_at"],
                            redo.loc[redo["attempt"] == attempt, "redone_until"], strict=True):
        kind[(since <= mid) & (mid < until) & (kind != "stalled") & (kind != "diverged")] = "redone"
    # a window below the incident's level by more than the states' drop (`min_drop`) is
    # degraded, in any attempt (a relaunch that trains slower lost against the one before); a
    # level within that of the baseline is noise, not a loss
    ratio = np.ones(len(mid))
    w = prog[prog["attempt"] == attempt]
    w = w.assign(level=warmed(w["level"]))  # a start's warm-up is no loss (progress.warmed)
    w = lasting_below(inc, w, (1 - min_drop) * baseline)
    for s, e, level in zip(w["start"], w["end"], w["level"], strict=True):
        ratio[(s <= mid) & (mid < e)] = float(np.clip(level / baseline, 0.0, 1.0))
    return kind, ratio


def _gpus(inc: Incident, att: pd.DataFrame) -> list[tuple]:
    """The GPUs the attempts used (per-process samples), else every GPU the incident samples."""
    used = {(a["host"] if isinstance(a["host"], str) else None, g) for _, a in att.iterrows() for g in a["gpus"]}
    if not used:
        g = inc.gpus.dropna(subset=["gpu"])
        used = {(h if isinstance(h, str) else None, int(x)) for h, x in zip(g["host"], g["gpu"], strict=True)}
    # a source that names no host (a pasted nvidia-smi answer) beside one that names the only
    # host there is: the same machine's GPUs
    named = {h for h, _ in used if h is not None}
    if len(named) == 1:
        used = {(next(iter(named)), x) for _, x in used}
    return sorted(used, key=lambda x: (str(x[0]), x[1]))


def _memory_weights(inc: Incident, att: pd.DataFrame, users: list[str], gpu: int) -> dict[str, float]:
    """Each attempt's mean memory on the GPU where per-process samples give it for all of them,
    else 1 each (an even split: one sampled and one not cannot be weighed against each other)."""
    gp = inc.gpu_processes
    out = {}
    for a in users:
        pids = att.loc[att["attempt"] == a, "pids"].iloc[0]
        mine = gp[(gp["gpu"] == gpu) & gp["pid"].isin(pids)] if len(gp) and pids else gp.iloc[:0]
        mem = mine["used_memory_mib"].mean() if "used_memory_mib" in mine.columns and len(mine) else np.nan
        out[a] = float(mem) if pd.notna(mem) and mem > 0 else np.nan
    if any(np.isnan(v) for v in out.values()):
        return dict.fromkeys(users, 1.0)
    return out
