"""The time its steps took, as a run wrote it: the pace of a log nothing places in time.

Many trainers print no time of day but say how long their steps took: Keras an epoch's seconds
(`- 3943s -`) or a step's (`345ms/step`), timm, mmcv or detectron2 a step's seconds (`time:
0.52`), nanoGPT an iteration's milliseconds, a tqdm bar the seconds since it began (`9/351
[13:44:50<...]`). Where the incident's clock cannot hold the lines, these are the pace a reader
reads: the steps of one series compared with each other (Ultralytics' bar that stood 13 h 44 min
at 9 of 351 where the epoch before ran 351 in 4 min 18 s; an epoch of Keras 1.6x as long from the
second on), and a series with the next by the same measure, in the order of their steps (a run
resumed from its checkpoint into a log of its own at half the pace).

A series is one source's, run's and rank's steps by one measure; its rows in the order of its
lines. A row's seconds are per step, over the steps since the row before (`covers`). What is no
pace of training steps is left out:
- a first row that covers one step or none (nanoGPT's iteration 0, a compiled model's first step):
  a start-up;
- an interval during which the log says the run did other work: another bar drawn (Lightning
  counts its validation's batches in its epoch's bar, and the validation bar is drawn meanwhile),
  a checkpoint saved (Hugging Face's `Saving model checkpoint to ...`, nanoGPT's `saving checkpoint`
  before the iteration whose time holds it);
- a stated time that grows with the count at every line, by about the same seconds a step (a
  timer never reset, YOLOP's `Time 7.4s`, `113.4s`, `226.0s` every 20 batches): a clock since the
  epoch began, read as one (the seconds between two lines over the steps between them).
A change is told where both sides cover TOLD_STEPS steps (fewer are the noise of a step that
evaluated or saved, nanoGPT's `time` after an evaluation holds it, or of a start that compiled), or
where the steps after a pace of TOLD_STEPS took STOPPED times as long (a bar that stood still). A
start slower than what followed is told from SLOW_START times on (a run's first hundred steps warm
its allocator, its kernels' autotuning and its data workers: twice as slow is common, and no fault).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..incident import Incident
from ..schema import BAR_ELAPSED_S, column
from . import computed

# A step's seconds by the metric that says them, and the factor to seconds.
_STATED = {"train/step_time_s": 1.0, "train/iter_time_ms": 1e-3}
# A bar's states closer than this in its elapsed time (whole seconds) are merged into one interval.
_BAR_S = 5.0
# Steps that took this many times as long as the others' (or as short) are a change a reader names;
# less is the noise of steps that load, evaluate or save now and then.
CHANGED = 1.5
# Steps on each side of a change, at the least (see the module's docstring), unless one side's
# took STOPPED times the other's.
TOLD_STEPS = 10
STOPPED = 10.0
SLOW_START = 3.0


@dataclass(frozen=True)
class Change:
    """The largest change of one series' step time: `before` and `after` seconds a step (the
    medians on each side of `at`, the first row after it), the rows' refs."""

    how: str  # "bar" (its bar's elapsed time) or "stated" (its lines say a step's time)
    before: float
    after: float
    first_ref: str  # the first row of the series
    at_ref: str
    at_step: float
    last_ref: str
    rows_before: int
    rows_after: int

    @property
    def ratio(self) -> float:
        return self.after / self.before


def step_seconds(inc: Incident) -> pd.DataFrame:
    """One row per interval a run's own words time: source, run, rank, how, step, seconds (a
    step, over the interval), covers (its steps), ref, line; in the order of each source's lines."""
    return computed.cached(inc, "own step times", ("metrics", "events"), lambda: _rows(inc.metrics, inc.events))


def largest_change(inc: Incident) -> Change | None:
    """The largest change of step time in any series (at least CHANGED times, every step time on
    one side beyond every one on the other), or between one series and the next by the same
    measure (`_next_series`: a resume in a log of its own at half the pace), else None."""
    s = step_seconds(inc)
    series = [g.sort_values("line", kind="stable") for _, g in s.groupby(["source", "run", "rank", "how"], sort=False,
                                                                          dropna=False)]
    return largest([_change(g) for g in series] + [_from_start(_change(pd.concat([a, b]), at=len(a)), b0)
                                                   for a, b, b0 in _next_series(series)])


def largest(found: list[Change | None]) -> Change | None:
    """Of the changes found, the one of the largest ratio either way."""
    found = [c for c in found if c is not None]
    return max(found, key=lambda c: abs(np.log(c.ratio))) if found else None


def dated_change(inc: Incident, lines: pd.DataFrame) -> Change | None:
    """The largest change of step time in a few dated step lines (their times, steps and refs;
    each source's on its own), where too few for the pace's windows (model/progress.py) to judge:
    the seconds between two lines over the steps between them, each at the line that closes it (as
    a bar's interval is). An interval during which the log says the run did other work (an
    evaluation's bar or results, a checkpoint saved) is left out, as in a series."""
    return largest([_dated(inc, g) for _, g in lines.groupby("source", sort=True)]) if len(lines) else None


def _dated(inc: Incident, lines: pd.DataFrame) -> Change | None:
    """dated_change of one source's lines."""
    lines = lines.dropna(subset=["time", "step"]).sort_values("time", kind="stable")
    lines = lines.drop_duplicates("step", keep="first")
    if len(lines) < 3:
        return None
    t = lines["time"].astype("datetime64[us, UTC]").to_numpy(dtype="datetime64[us]").astype("i8") / 1e6
    step = lines["step"].to_numpy(dtype=float)
    at = pd.to_numeric(lines["ref"].astype("string").str.rsplit(":", n=1).str[-1], errors="coerce").to_numpy(dtype=float)
    other = _other_work(inc.events, inc.metrics).get(str(lines["source"].iloc[0]), np.empty(0))
    took, covers = np.diff(t), np.diff(step)
    ok = (covers > 0) & ~_after_other_work(at[1:], at, other)
    rows = pd.DataFrame({"how": "dated", "step": step[1:][ok], "seconds": (took / np.where(covers > 0, covers, 1))[ok],
                         "covers": covers[ok], "ref": lines["ref"].to_numpy()[1:][ok]})
    return _change(rows, at=None, ordered=True)


def _next_series(series: list[pd.DataFrame]) -> list[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]]:
    """The pairs of one rank's series by one measure, one after the other in the order of their
    steps, where the second begins at or after the first's first step (a run resumed from a
    checkpoint of the first, started again from its start, or the next log of a long run, each
    writing a log or a run of its own). Each side's first interval is left out where it has
    others: a start's first steps compile, autotune and warm its allocator (a run's pace against
    another's is each one's steady pace). Each pair: (the first, the second, the second with its
    first interval)."""
    pairs = []
    # (one rank's series with its own next: two ranks' paces side by side are no change in time)
    kinds = {(str(g["how"].iloc[0]), _rank(g)) for g in series}
    for how, rank in sorted(kinds):
        mine = sorted((g for g in series if str(g["how"].iloc[0]) == how and _rank(g) == rank and len(_paced(g))),
                      key=lambda g: (float(g["step"].min()), float(g["step"].max())))
        for a, b in zip(mine, mine[1:], strict=False):
            if a["step"].min() <= b["step"].min():
                pairs.append((_steady(a), _steady(b), _paced(b)))
    return pairs


def _from_start(c: Change | None, b: pd.DataFrame) -> Change | None:
    """A change between two series, placed where the second began (its first row)."""
    return None if c is None else replace(c, at_ref=b["ref"].iloc[0], at_step=float(b["step"].iloc[0]))


def _rank(g: pd.DataFrame) -> float:
    """A series' rank (-1 where its lines name none)."""
    r = g["rank"].iloc[0] if "rank" in g.columns else None
    return -1.0 if r is None or pd.isna(r) else float(r)


def _steady(g: pd.DataFrame) -> pd.DataFrame:
    """A series' paced rows without its first interval, where it has others."""
    g = _paced(g)
    return g.iloc[1:] if len(g) > 1 else g


def _paced(g: pd.DataFrame) -> pd.DataFrame:
    """A series' rows that time its pace: without a first row that covers one step or none (a
    start-up's), with seconds."""
    g = g.iloc[1:] if len(g) and g["covers"].iloc[0] <= 1 else g
    return g[g["seconds"].notna()]


_COLUMNS = ["source", "run", "rank", "how", "step", "seconds", "covers", "ref", "line"]


def _rows(m: pd.DataFrame, ev: pd.DataFrame) -> pd.DataFrame:
    if m.empty or "ref" not in m.columns:
        return pd.DataFrame(columns=_COLUMNS)
    other = _other_work(ev, m)
    m = m[m["value"].notna() & m["step"].notna() & m["ref"].notna()]
    m = m.assign(line=pd.to_numeric(m["ref"].astype("string").str.rsplit(":", n=1).str[-1], errors="coerce"))
    m = m[m["line"].notna()]
    parts = []
    keys = [m["source"].fillna(""), m["run"].fillna(""), m["rank"].fillna(-1)]
    for _, g in m.groupby(keys, sort=False):
        g = g.sort_values("line", kind="stable")
        for metric, factor in _STATED.items():
            st = g[g["metric"] == metric]
            if len(st):
                parts.append(_stated_rows(st, factor, other.get(str(st["source"].iloc[0]), np.empty(0))))
        bar = g[g["metric"] == BAR_ELAPSED_S]
        if len(bar):
            parts.append(_bar_rows(bar, other.get(str(bar["source"].iloc[0]), np.empty(0))))
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=_COLUMNS)
    return pd.concat(parts)[_COLUMNS].reset_index(drop=True)


def _other_work(ev: pd.DataFrame, m: pd.DataFrame) -> dict[str, np.ndarray]:
    """By source, the lines that say the run did other work than its steps, sorted: a bar beside
    training last drawn (its `progress` event: an evaluation's, a save's), a checkpoint saved, an
    evaluation's results (`eval/` metrics: BasicSR's `# Validation ... # PSNR`, an hour's work)."""
    found = []
    if len(ev) and {"kind", "ref"} <= set(ev.columns):
        bars = ev["kind"] == "progress"
        if "bar_elapsed_s" in ev.columns:
            bars &= ev["bar_elapsed_s"].notna()  # (a training bar's last state is one too; it has no own clock here)
        saved = (ev["kind"] == "stage") & (column(ev, "pattern") == "checkpoint_save").fillna(False).astype(bool)
        found.append(ev.loc[(bars | saved) & ev["ref"].notna(), ["source", "ref"]])
    if len(m) and "ref" in m.columns:
        found.append(m.loc[m["metric"].str.startswith("eval/").fillna(False).astype(bool) & m["ref"].notna(), ["source", "ref"]])
    if not found:
        return {}
    p = pd.concat(found)
    line = pd.to_numeric(p["ref"].astype("string").str.rsplit(":", n=1).str[-1], errors="coerce")
    return {str(src): np.sort(lines.dropna().to_numpy(dtype=float)) for src, lines in line.groupby(p["source"])}


def _stated_rows(st: pd.DataFrame, factor: float, other: np.ndarray) -> pd.DataFrame:
    """A step's stated seconds, each over the steps since the line before; a time that grows with
    the count at every line by about the same seconds a step is a clock since its start (see the
    module's docstring): the seconds between its lines over the steps between them. A line after
    other work since the line before (a save) is left out: its time holds that work."""
    step = st["step"].to_numpy(dtype=float)
    v = st["value"].to_numpy(dtype=float) * factor
    out = st.assign(how="stated", seconds=v, covers=np.diff(step, prepend=0.0))
    if len(v) >= 3 and (np.diff(v) > 0).all() and (np.diff(step) > 0).all():
        per = np.diff(v) / np.diff(step)
        if per.min() > 0 and per.max() < CHANGED * per.min():
            # (its first line is the clock's start: no interval of its own)
            out = out.iloc[1:].assign(seconds=per)
    return out[~_after_other_work(out["line"].to_numpy(dtype=float), st["line"].to_numpy(dtype=float), other)]


def _after_other_work(lines: np.ndarray, all_lines: np.ndarray, other: np.ndarray) -> np.ndarray:
    """For each of `lines`, whether a line of other work lies between the line of the series
    (`all_lines`, sorted) before it and it."""
    if not len(other) or not len(lines):
        return np.zeros(len(lines), dtype=bool)
    before = all_lines[np.maximum(np.searchsorted(all_lines, lines) - 1, 0)]
    before = np.where(before < lines, before, lines)  # (a series' first line: its time is of its own steps)
    # the other-work lines in (before, line): how many lie below each bound
    return np.searchsorted(other, lines) > np.searchsorted(other, before, side="right")

def _bar_rows(bar: pd.DataFrame, other: np.ndarray) -> pd.DataFrame:
    """A bar's states as intervals of at least _BAR_S of its elapsed time: the seconds a step took
    in each; a bar drawn again from its start (its elapsed time or its count went back) begins
    anew, from 0 or from the count it was drawn at as it began."""
    n = bar["step"].to_numpy(dtype=float)
    e = bar["value"].to_numpy(dtype=float)
    line = bar["line"].to_numpy(dtype=float)
    keep, seconds, covers = [], [], []
    n0 = e0 = 0.0
    last = -1
    for i in range(len(bar)):
        if e[i] < e0 or n[i] < n0:  # a new bar (the next epoch's): it counts from its own start,
            # where the last one stopped in a count of the run's steps (bars.py: a bar that names
            # its epoch), from 0 in a count of its own
            n0, e0 = (n[i - 1] if i and n[i] >= n[i - 1] else 0.0), 0.0
            last = -1
        if e[i] <= 1.0:  # drawn as it began (`200/400 [00:00<...]`, a resumed one): where it counts from
            n0, e0, last = n[i], e[i], i
            continue
        if n[i] > n0 and e[i] - e0 >= _BAR_S:
            # (another bar drawn since its last state: the seconds hold other work)
            if last < 0 or not ((other > line[last]) & (other < line[i])).any():
                keep.append(i)
                seconds.append((e[i] - e0) / (n[i] - n0))
                covers.append(n[i] - n0)
            n0, e0, last = n[i], e[i], i
    out = bar.iloc[keep]
    return out.assign(how="bar", seconds=np.asarray(seconds, dtype=float), covers=np.asarray(covers, dtype=float))


def _change(g: pd.DataFrame, at: int | None = None, ordered: bool = False) -> Change | None:
    """The largest change in one series (its rows in line order, or as given where `ordered`), or
    only where the rows `at` on begin (a series after another: `_next_series`, their rows already
    paced)."""
    if at is None:
        g = _paced(g if ordered else g.sort_values("line", kind="stable"))  # (a start-up's first step left out)
    s = g["seconds"].to_numpy(dtype=float)
    if len(s) < 2 or not (s > 0).all():
        return None
    covers = g["covers"].to_numpy(dtype=float)
    # steps slower at every row than at the row before, by CHANGED at the least, over three rows or
    # more: a slowdown that grows, whatever steps each row covers (no one step's save or evaluation)
    growing = len(s) >= 3 and bool((s[1:] >= CHANGED * s[:-1]).all())
    best = None
    for k in range(1, len(s)) if at is None else [at] if 0 < at < len(s) else []:
        before, after = float(np.median(s[:k])), float(np.median(s[k:]))
        # (every step time of one side beyond every one of the other, by CHANGED at the least; a
        # slow start by SLOW_START)
        if not (s[k:].min() >= CHANGED * s[:k].max() or s[:k].min() >= SLOW_START * s[k:].max()):
            continue
        # (a stop is told however few steps it held; a start slower than what followed only over
        # as many steps as a pace: a model's first steps compile and warm up)
        stopped = after >= STOPPED * before
        if min(covers[:k].sum(), covers[k:].sum()) < TOLD_STEPS and not (stopped and covers[:k].sum() >= TOLD_STEPS) \
                and not growing:
            continue
        if best is None or abs(np.log(after / before)) > abs(np.log(best[1] / best[0])):
            best = (before, after, k)
    if best is None:
        return None
    before, after, k = best
    refs = g["ref"].tolist()
    return Change(how=str(g["how"].iloc[0]), before=before, after=after, first_ref=refs[0], at_ref=refs[k],
                  at_step=float(g["step"].iloc[k]), last_ref=refs[-1], rows_before=k, rows_after=len(s) - k)
