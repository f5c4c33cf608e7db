"""Progress: how fast each attempt trained, from its counters over windows, not line by line.

A trainer's log line says how many tokens per second it saw since its last line; lines differ for
reasons that are not the job's speed: two drafter threads (or ranks) each writing their own rate
make the values alternate, gradient accumulation makes every k-th line slower, a compile makes one
line slow. So progress is counted: the tokens a line stands for (its rate times the time since the
previous line of its own series) are summed over a window and divided by the window's time, and
the step counter's advance over the window is kept beside it as a cross-check. A series is one
rank's lines of one attempt; ranks that log different values at the same step each log their own
share (the job's level is their sum), ranks that log the same value log a global figure (one is
taken); the choice is in `notes`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..incident import Incident
from ..schema import STEPS_PER_S, ref_line
from ..shell_words import command_name, shell_words
from . import carried, changepoints, computed
from .attempts import attempts, finished
from .pace import pace_metric, pace_rows
from .step_lines import named_step, placed, step_lines

COLUMNS = ("attempt", "start", "end", "level", "steps_per_s", "lines", "ref")
# A window holds about this many lines of each series (an even number: alternating values of two
# threads average out), and lasts at least / at most:
LINES_PER_WINDOW = 6
MIN_WINDOW_S, MAX_WINDOW_S = 5.0, 120.0


# The frames progress is read from (the memo of computed.py is keyed by them): the attempts' own.
READS = ("metrics", "events", "processes", "gpu_processes")


def progress(inc: Incident) -> pd.DataFrame:
    """Each attempt's throughput over windows (COLUMNS; `level` in the pace's unit, pace.py), in time order, with
    `attrs["notes"]` saying how ranks were combined and where line values alternate."""
    return computed.cached(inc, "progress", READS,
                           lambda: _progress(inc))


def lines_of(inc: Incident, attempt: pd.Series) -> pd.DataFrame:
    """The attempt's pace lines (pace.py: its tok/s lines, else its step counter's rates): its own
    log parts (from its start), else its runs'. Taken once per attempt and incident: the states,
    the progress and several detectors ask for them."""
    return computed.cached(inc, f"pace lines of {attempt['attempt']}", READS,
                           lambda: _attempt_rows(inc, attempt, pace_rows(inc)))


def reached_at(lines: pd.DataFrame) -> pd.Series:
    """When each pace line's step was reached: a step counter's rate row stands at its interval's
    beginning and was closed by a later line (pace.py `closed_at`); a rate line at its own time."""
    return lines["closed_at"] if "closed_at" in lines.columns else lines["time"]


# The metrics whose value stops being a number when training breaks (a loss that diverged to
# NaN, an overflowed gradient norm): detect/divergence.py tells it, the states count what follows.
NOT_FINITE_BREAKS = ("train/loss", "train/grad_norm")


def losses_of(inc: Incident, attempt: pd.Series) -> pd.DataFrame:
    """The attempt's rows of NOT_FINITE_BREAKS, taken the way its pace lines are."""
    return computed.cached(inc, f"loss lines of {attempt['attempt']}", READS,
                           lambda: _attempt_rows(inc, attempt, _losses(inc)))


def _losses(inc: Incident) -> pd.DataFrame:
    m = inc.metrics
    return computed.cached(inc, "loss rows", ("metrics",), lambda: m[m["metric"].isin(NOT_FINITE_BREAKS)])


def steps_of(inc: Incident, attempt: pd.Series) -> pd.DataFrame:
    """The attempt's step lines (step_lines.py), taken the way its throughput lines are."""
    return computed.cached(inc, f"step lines of {attempt['attempt']}", READS,
                           lambda: _attempt_rows(inc, attempt, step_lines(inc)))


def last_step(inc: Incident, attempt: pd.Series) -> int | None:
    """The highest step of the attempt's step lines; None where it has none."""
    steps = steps_of(inc, attempt)["step"].dropna()
    return int(steps.max()) if len(steps) else None


def placed_together(steps: pd.DataFrame) -> bool:
    """Whether step lines (`steps_of`) all carry one time that is not their own: a log with no
    timestamp, its rows placed at the launch that wrote it (clock/untimed.py: the earliest they
    can be). When such an attempt trained, and whether it paused, no line says."""
    return len(steps) >= 2 and bool(placed(steps).all()) and steps["time"].nunique(dropna=False) == 1


def _run_rows(inc: Incident, m: pd.DataFrame, attempt: pd.Series) -> pd.DataFrame:
    """Rows of the attempt's run from its start on that no attempt's log holds (a tracking
    library's records of it), up to the next start of that run: an attempt whose own log has no
    such line does not take the lines of the runs started after it under the same name."""
    att = attempts(inc)
    owned = {s for ss in att["sources"] for s in ss}
    later = att.loc[(att["start"] > attempt["start"]) & att["runs"].map(lambda r: bool(set(r) & set(attempt["runs"]))),
                    "start"].min()
    mine = m["run"].isin(attempt["runs"]) & (m["time"] >= attempt["start"]) & ~m["source"].isin(owned)
    return m[mine & (m["time"] < later)] if pd.notna(later) else m[mine]


def _attempt_rows(inc: Incident, attempt: pd.Series, m: pd.DataFrame) -> pd.DataFrame:
    sources = attempt["sources"]
    if sources:
        # through the frame's grouping by source (computed.py): an attempt's lines cost its
        # sources' rows, not the frame's (a crash loop's fifty starts share one frame)
        later = _next_part(inc, attempt)
        picked = [computed.positions(inc, m, "source", s, since=attempt["start"], until=later) for s in sources]
        mine = m.iloc[np.unique(np.concatenate(picked))]
        if mine.empty and attempt["runs"]:
            mine = _run_rows(inc, m, attempt)
    elif attempt["runs"]:
        mine = _run_rows(inc, m, attempt)
    else:
        return m.iloc[:0]
    # one source per series: a run in its log and in wandb is counted once (the one with most lines)
    if mine["source"].nunique() > 1:
        key = mine["rank"].fillna(-1)
        best = mine.groupby([key, "source"]).size().reset_index(name="n").sort_values("n", ascending=False)
        best = best.drop_duplicates(best.columns[0])
        keep = set(zip(best.iloc[:, 0], best["source"], strict=True))
        mine = mine[[(k, s) in keep for k, s in zip(key, mine["source"], strict=True)]]
    return mine.sort_values("time", kind="stable")


RESUME_COLUMNS = ("attempt", "resumed_at", "resumed_step", "reached_step", "redone_steps", "redone_until", "caught_up",
                  "said", "ref")


def resumes(inc: Incident) -> pd.DataFrame:
    """Each attempt that began below the step its job had logged before (RESUME_COLUMNS): from a
    checkpoint its log names (`said`), else from where its first step line shows it began (from
    scratch, or a checkpoint it does not name); when, at which step, the step reached before, how
    many steps it did again, and when its steps passed that one again (`caught_up`; else its last
    sign of life): from `resumed_at` to `redone_until` it redid what was done."""
    return computed.cached(inc, "resumes", ("metrics", "events", "processes", "gpu_processes"),
                           lambda: _resumes(inc))


def resumed_from(inc: Incident, attempt: pd.Series) -> tuple[list[int], pd.DataFrame]:
    """The steps the attempt's own logs say it resumed from (`resuming from step_466.pt at step
    466`), and those lines."""
    ev = inc.events
    said = ev[(ev["kind"] == "resumed") & ev["source"].isin(attempt["sources"] or []) & (ev["time"] >= attempt["start"])]
    return [s for m in said["message"] if (s := named_step(m)) is not None], said


def _resumes(inc: Incident) -> pd.DataFrame:
    att = attempts(inc)
    rows = []
    for _, b in att.iterrows():
        steps, said = resumed_from(inc, b)
        mine = steps_of(inc, b)
        if not steps and (mine.empty or pd.isna(mine["step"].iloc[0]) or _tailed(inc, mine.iloc[0])):
            continue
        before = att[(att["start"] < b["start"]) & (att["job"] == b["job"])]
        reached = max((m for _, a in before.iterrows() if pd.notna(m := steps_of(inc, a)["step"].max())), default=np.nan)
        first = steps[0] if steps else int(mine["step"].iloc[0])
        if not (pd.notna(reached) and reached > first):
            continue
        if not steps and len(before) and finished(before.iloc[-1]):
            continue  # a new run after one that finished: nothing of it was lost
        past = mine[mine["step"] >= reached]
        at, ref = (said["time"].iloc[0], said["ref"].iloc[0]) if steps else (mine["time"].iloc[0], mine["ref"].iloc[0])
        rows.append({"attempt": b["attempt"], "resumed_at": at, "resumed_step": first, "reached_step": int(reached),
                     "redone_steps": int(reached) - first, "redone_until": past["time"].iloc[0] if len(past) else b["last_alive"],
                     "caught_up": bool(len(past)), "said": bool(steps), "ref": ref})
    return pd.DataFrame(rows, columns=list(RESUME_COLUMNS))


def _tailed(inc: Incident, row: pd.Series) -> bool:
    """Whether a step line is a log's line as a session's `tail` printed it (its ref is the
    session's line, under a `tail` of the file): the end of the log, which says nothing of where
    it began (`cat`, `head` and a foreground run's own output begin where the log does)."""
    at = ref_line(row.get("ref")) if isinstance(row.get("ref"), str) else None
    if at is None or at[0] == row.get("source"):
        return False
    ev = inc.events
    typed = ev[(ev["kind"] == "command") & (ev["source"] == at[0])]
    lines = typed["ref"].map(lambda r: (ref_line(r) or ("", -1))[1])
    before = typed[lines <= at[1]]
    return bool(len(before)) and command_name(shell_words(str(before.loc[lines[lines <= at[1]].idxmax(), "message"]))) == "tail"


def _next_part(inc: Incident, attempt: pd.Series):
    """Where the next attempt's part of the same log begins (a restart loop appends to one log)."""
    all_ = attempts(inc)
    later = all_[(all_["start"] > attempt["start"])
                 & all_["sources"].map(lambda s: bool(set(s) & set(attempt["sources"])))]
    return later["start"].min() if len(later) else None


def _progress(inc: Incident) -> pd.DataFrame:
    rows, notes = [], []
    for _, a in attempts(inc).iterrows():
        lines = lines_of(inc, a)
        if lines.empty:
            continue
        # an attempt that is over, read again as its folder grows, has the windows its own lines
        # made it (carried.py); they are hashed as they are (a step counter's rates are made)
        mine, said = carried.of_attempt(inc, a["attempt"], "progress",
                                        lambda lines=lines: (carried.digest(lines), pace_metric(inc)),
                                        lambda a=a, lines=lines: _attempt_progress(inc, a, lines))
        name = f"attempt {a['attempt']} ({a['run'] or a['script'] or '?'})"
        rows += [{**r, "attempt": a["attempt"]} for r in mine]
        notes += [f"{name}: {n}" for n in said]
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out.attrs["notes"] = notes
    return out


def _attempt_progress(inc: Incident, a: pd.Series, lines: pd.DataFrame) -> tuple[list[dict], list[str]]:
    """One attempt's windows (rows of COLUMNS) from its pace lines, and what its lines showed of
    how they were taken (how ranks combine, rates that alternate or swing)."""
    rows, notes = [], []
    series = {r: g for r, g in lines.groupby(lines["rank"].fillna(-1), sort=True)}
    combine, note = _combine(series, pace_metric(inc))
    if note:
        notes.append(note)
    # (the trainer's own rates only: a step counter's are the model's, over PACE_S or more)
    values = [g["value"].to_numpy(dtype=float) for g in series.values()] if pace_metric(inc) != STEPS_PER_S else []
    if any(alternates(v) for v in values):
        notes.append("its lines' tok/s alternate between two levels (threads or ranks writing their own rate, or "
                     "gradient accumulation): levels are taken over windows, never line by line")
    elif (swing := max((spread(v) for v in values), default=0.0)) > SPIKY:
        notes.append(f"its lines' tok/s swing by {swing:.0%} of their median from line to line (threads or ranks "
                     "logging their own rate, uneven steps): levels are taken over windows, never line by line")
    width = _window_s(series)
    t0 = lines["time"].min()
    edges = pd.date_range(t0, lines["time"].max() + pd.Timedelta(seconds=width), freq=pd.Timedelta(seconds=width))
    per = [_windows(g, edges) for g in series.values()]
    merged = pd.concat(per, ignore_index=True)
    # the ranks' windows that share a span, taken together (their first rank's line cited)
    together = merged.groupby(["start", "end"], sort=True).agg(
        level=("level", combine), steps_per_s=("steps_per_s", "max"), lines=("lines", "sum"))
    cited = merged.drop_duplicates(["start", "end"]).set_index(["start", "end"])["ref"]
    for w in together.join(cited).reset_index().to_dict("records"):
        rows.append({"attempt": a["attempt"], "start": w["start"], "end": w["end"], "level": float(w["level"]),
                     "steps_per_s": float(w["steps_per_s"]), "lines": int(w["lines"]), "ref": w["ref"]})
    return rows, notes


def warmed(levels) -> np.ndarray:
    """An attempt's window levels (in time order) with its warm-up forgiven: a first window below
    the one after it (compilation, the first batches: how every start begins) taken at that next
    window's level. A start slow from its beginning stays slow: its next window is as low."""
    out = np.asarray(levels, dtype=float).copy()
    if len(out) > 1 and out[0] < out[1]:
        out[0] = out[1]
    return out


def _window_s(series: dict) -> float:
    gaps = [np.median(np.diff(g["time"].to_numpy(dtype="datetime64[us]").astype("i8"))) / 1e6
            for g in series.values() if len(g) > 1]
    gap = float(np.median(gaps)) if gaps else MIN_WINDOW_S
    return float(np.clip(LINES_PER_WINDOW * gap, MIN_WINDOW_S, MAX_WINDOW_S))


def _windows(g: pd.DataFrame, edges: pd.DatetimeIndex) -> pd.DataFrame:
    """One series' windows: the tokens its lines stand for over the time they cover."""
    t = g["time"].to_numpy(dtype="datetime64[us]").astype("i8") / 1e6
    v = g["value"].to_numpy(dtype=float)
    # The tokens a line stands for cover the time since the previous line of its series; the
    # first line's interval is unknown (it starts where the trainer's meter did), so it counts
    # only where it is the series' one line.
    dt = np.diff(t, prepend=np.nan)
    if len(dt) == 1:
        dt[0] = 1.0
    dt = np.where(dt > 0, dt, np.nan)
    step = g["step"].to_numpy(dtype="float64", na_value=np.nan)
    bins = np.searchsorted(edges.asi8 / 1e6, t, side="right") - 1
    refs = g["ref"].tolist() if "ref" in g.columns else [None] * len(g)
    if not len(bins):
        return pd.DataFrame([])
    # each window's lines as one slice, in their own order (a stable sort): a window costs its
    # lines, not the whole series (an hour of a rank's 1 Hz log is 3,600 lines in 600 windows)
    order = np.argsort(bins, kind="stable")
    firsts = np.flatnonzero(np.r_[True, bins[order][1:] != bins[order][:-1]])
    out = []
    for a, z in zip(firsts, [*firsts[1:], len(order)], strict=True):
        sel, b = order[a:z], bins[order[a]]
        covered = np.nansum(dt[sel])
        level = np.nansum(v[sel] * dt[sel]) / covered if covered > 0 else float(np.nanmean(v[sel]))
        s = step[sel]
        steps_per_s = (np.nanmax(s) - np.nanmin(s)) / max(t[sel].max() - t[sel].min(), 1e-9) \
            if np.isfinite(s).sum() > 1 else np.nan
        out.append({"start": edges[b], "end": edges[b + 1] if b + 1 < len(edges) else edges[-1],
                    "level": level, "steps_per_s": steps_per_s, "lines": len(sel),
                    "ref": next((refs[k] for k in sel if isinstance(refs[k], str)), None)})
    return pd.DataFrame(out)


def _combine(series: dict, metric: str) -> tuple[str, str | None]:
    """How ranks' levels make the job's: summed where each logs its own, one where all log the
    same figure (and always for steps: ranks take the job's steps together); and the note saying
    which."""
    ranked = {r: g for r, g in series.items() if r != -1}
    if len(ranked) < 2:
        return "sum", None
    if metric == STEPS_PER_S:
        return "mean", f"its {len(ranked)} ranks count the same steps: their steps per second are averaged"
    base = next(iter(ranked.values()))
    diffs = []
    for g in list(ranked.values())[1:]:
        both = base.merge(g, on="step", suffixes=("_a", "_b")).dropna(subset=["step"])
        if len(both):
            diffs.append(float(np.median(np.abs(both["value_a"] - both["value_b"]) / both["value_a"].abs().clip(lower=1e-9))))
    if diffs and max(diffs) < 1e-6:
        return "mean", f"its {len(ranked)} ranks log the same tok/s at the same step (a global figure): one is taken"
    return "sum", f"its {len(ranked)} ranks each log their own tok/s: the job's throughput is their sum"


# Line values whose typical distance from their median is more than this share of it are no
# steady rate (a steady trainer's lines stay within a few per cent).
SPIKY = 0.1


def spread(v: np.ndarray) -> float:
    """The median distance of the values from their median, as a share of it."""
    if len(v) < 8:
        return 0.0
    mid = float(np.median(v))
    return float(np.median(np.abs(v - mid))) / mid if mid > 0 else 0.0


def alternates(v: np.ndarray) -> bool:
    """Line values that swing between two levels every other line (by more than a tenth)."""
    if len(v) < 8:
        return False
    d = np.diff(v)
    flips = np.sign(d[1:]) != np.sign(d[:-1])
    swing = np.median(np.abs(d)) / max(np.median(v), 1e-9)
    return bool(flips.mean() > 0.8 and swing > 0.1)


# A pace that falls a little at every stretch (a history recomputed over every step so far, a
# cache or a leak that grows with the steps) changes no level: each stretch is within the noise,
# or under min_drop, of the one before, and the run reads as one level, where a person reading
# the log sees the rate of its first lines and of its last. A fall is told where the last sixth
# of an attempt's samples is below (1 - min_drop) x its first sixth and the values fall with
# their order: their rank correlation with it at most FALLING (a steady rate's noise is near 0).
FALLING = -0.6
MIN_FALLING = 12


@dataclass(frozen=True)
class Fall:
    """Where an attempt's pace fell (`falling`): `at` the index of the first sample below,
    `before` and `after` the levels; `gradual` where it fell line after line (a straight line
    through the log rates fits them better than one step), else it fell at once, at `at`."""
    at: int
    before: float
    after: float
    gradual: bool


def falling(v: np.ndarray, min_drop: float) -> Fall | None:
    """How a pace (an attempt's samples, in time order) fell by min_drop or more from its first
    lines to its last, if it did."""
    v = np.asarray(v, dtype=float)
    if len(v) < MIN_FALLING or not np.isfinite(v).all() or (v <= 0).any():
        return None
    # (log rates, each held within 3 robust deviations of their median in the fits below; a
    # start's first intervals, its meter just begun, may read several times the rest: those that
    # lead the attempt above that are no level of it, as a slow warm-up is none)
    x = np.log(v)
    mid = float(np.median(x))
    # (a floor of 5 %: most lines at one value, as a step counter's rounded rates are, have none)
    dev = max(1.4826 * float(np.median(np.abs(x - mid))), 0.05)
    lead = int(np.argmin(x > mid + 3 * dev))
    v, x = v[lead:], np.clip(x[lead:], mid - 3 * dev, mid + 3 * dev)
    n = len(v)
    if n < MIN_FALLING:
        return None
    k = max(3, n // 6)
    head, tail = float(np.median(v[:k])), float(np.median(v[-k:]))
    if not tail < (1 - min_drop) * head:
        return None
    ranks = pd.Series(v).rank().to_numpy()  # (ties share their mean rank)
    if float(np.corrcoef(ranks, np.arange(n))[0, 1]) > FALLING:
        return None
    order = np.arange(n, dtype=float)
    line = float(((x - np.polyval(np.polyfit(order, x, 1), order)) ** 2).sum())
    # the best single step, a sixth of the samples on each side at the least (a start's first
    # lines, faster or slower than the rest, are no step): its squared error
    best, step = changepoints.best_step(x, k)
    if step < line:
        before, after = float(np.median(v[:best])), float(np.median(v[best:]))
        return Fall(lead + best, before, after, False) if after < (1 - min_drop) * before else None
    # (the first stretch of k samples whose median is below the line: one slow sample is noise;
    # a stretch's median is the level at its middle. pandas' rolling median keeps its window
    # sorted: a day of a 1 Hz log is 86,400 stretches)
    rolled = pd.Series(v).rolling(k).median().to_numpy()[k - 1:]
    below = np.flatnonzero(rolled < (1 - min_drop) * head)
    return Fall(lead + int(below[0]) + k // 2, head, tail, True)
