"""Throughput regressions: change points in the job's pace (tokens/s, else steps/s: model/pace.py),
within a run and across consecutive runs.

The series is every run's throughput in time order, joined end to end, so that a relaunch that
comes back slower is a change point like any other. Change points come from a PELT search on the
l2 cost of log throughput (model/changepoints.py) with a penalty calibrated on the steady baseline:
the noise of the first run's steady stretch sets what a real level change must exceed. Segments whose levels differ by less than `min_drop` are merged,
and consecutive segments below (1 - min_drop) x baseline form one regression episode, however
noisy the degraded run is.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pandas as pd

from ..incident import Incident, RunInfo
from ..model import changepoints, gpu_state
from ..model import computed as memo
from ..model.attempts import READS as ATTEMPTS_READ
from ..model.attempts import attempts, kill_reach
from ..model.kills import failed_targets
from ..model.launches import environment, launch_of
from ..model.pace import model_changed, pace_rows, step_grew, unit
from ..model.progress import LINES_PER_WINDOW, SPIKY, alternates, falling, spread
from ..model.states import MIN_DEGRADED_S
from ..said import exception_line
from ..schema import PROBLEM_EVENTS
from ..shell_words import SWITCH, flag_key, invocation, runs_script
from ..units import clock
from . import findings
from .per_host import judged
from .stall import stall_intervals

MIN_DROP = 0.15
MIN_SIZE = 3
# A drop shorter than the states' (model/states.py) is noise or a hiccup, not an incident.
MIN_REGRESSION_S = MIN_DEGRADED_S
PENALTY = 3.0  # x sigma^2 x ln(n): BIC-like, sigma from the steady baseline
# Settings that name or bound a run rather than change how it trains.
BOOKKEEPING = re.compile(
    r"^(run_?name|name|pid_?file|result_?json|record_?gpus_?dir|seconds|duration|max_?time|time_?limit|log(_?file|_?dir)?|"
    r"out(put)?(_?dir)?|save_?dir|checkpoint_?dir|wandb_\w+|project|entity|tags?|notes?|group|"
    r"resume(_?from)?(_?checkpoint)?)$")
# Other programs busy on the host's CPUs as a drop began (_busy_cpus): first listed this long
# before the drop (a listing every few seconds, step lines every few) up to this long after it,
# busy by a core or more between them (top's %CPU, per process).
_CPU_LEAD, _CPU_LAG = pd.Timedelta(seconds=30), pd.Timedelta(seconds=30)
_BUSY_CPU_PCT = 100.0
# A Python trainer's own helper processes, whoever's trainer they serve: PyTorch's names for its
# processes as `top` shows them without `-c` (`pt_main_thread`, a DataLoader's `pt_data_worker`),
# torch.compile's worker pool (`torch/_inductor/compile_worker/__main__.py --parent=789`),
# multiprocessing's spawned children and its resource tracker
_HELPERS = re.compile(r"^pt_|torch/_inductor/|torch\._inductor|from multiprocessing\.\w+ import")
CAUSES = (
    # a trainer that found no GPU and trains on the CPU (`CUDA is not available, training on CPU`,
    # Hugging Face's `no GPU/TPU found, running on CPU`, a device list that hides the GPU)
    ("no GPU in use", re.compile(r"CUDA (?:is )?not available|no (?:CUDA |GPU|cuda )[\w/ ]{0,12}(?:available|found|detected)"
                                 r"|(?:training|running|train|run) on (?:the )?CPU\b", re.I)),
    ("fast path missing", re.compile(r"fast path|fall(?:ing|s)? ?back|fallback|not installed", re.I)),
    # (not the advice after every CUDA error, `Compile with `TORCH_USE_CUDA_DSA` to enable ...`)
    ("compile error", re.compile(r"torch\._dynamo|inductor|torch\.compile|compil(?!e with `?TORCH_USE_CUDA_DSA)", re.I)),
    ("thread crash", re.compile(r"Exception in thread|thread .* (?:died|crashed)|_bootstrap_inner", re.I)),
    ("optimisation inactive", re.compile(r"optimi[sz]ation inactive|redundant", re.I)),
)


def series(inc: Incident) -> pd.DataFrame:
    """The job's pace samples in time order (model/pace.py: tok/s lines, else steps/s from the
    step counter): every start of every run, one source per start, warm-up dropped. Column
    `stint` names the start each sample came from (`stint_keys`): a relaunch that reuses its
    run name is a start of its own, compared with the one before like another run.

    When a start's throughput is in two sources (the log and wandb), the one with more samples is
    used. A few leading samples below 0.75 x the run's median are warm-up (compile, first batches).
    Runs follow each other: once a newer run logs its first step, an older one still logging is
    no longer the job (a survivor of a failed kill, a run left behind) and its later samples are
    left out; the detector of survivors says what it did meanwhile.
    """
    return memo.cached(inc, "series", ATTEMPTS_READ, lambda: _series(inc))


def stint_keys(inc: Incident, m: pd.DataFrame) -> np.ndarray:
    """The start each pace row came from: the latest attempt (model/attempts.py) begun by the row's
    time among those whose sources hold its file and whose runs its run (the first of them for a
    row before any, as a start's time may be a floor); for a file no attempt holds (a wandb run
    beside the log), among those whose runs its run; else `run NAME`, the run's name (`_across`
    tells the two apart by that prefix). A run name says what
    the operator called the job, not which process ran it: a relaunch that reuses it (the same
    command typed again, `--resume`) trained at its own pace, and a log appended by two starts
    (`>>`) holds both."""
    keys = ("run " + m["run"].astype("string").fillna("<NA>")).to_numpy(dtype=object)
    att = attempts(inc)
    if att.empty or m.empty:
        return keys
    owned = att[["attempt", "start", "sources", "runs"]].explode("runs").dropna(subset=["runs", "start"])
    by_file = owned.explode("sources").dropna(subset=["sources"])
    # (source, run) and run -> the starts that logged them, in time order
    starts = {key: (g["start"].to_numpy(dtype="datetime64[us]"), g["attempt"].to_numpy(dtype=object))
              for df, cols in ((by_file, ["sources", "runs"]), (owned, "runs"))
              for key, g in df.sort_values("start", kind="stable").groupby(cols, sort=False)}
    times = m["time"].to_numpy(dtype="datetime64[us]")
    rows = pd.Series(np.arange(len(m)))
    for (source, run), idx in rows.groupby([m["source"].to_numpy(), m["run"].to_numpy()], sort=False).indices.items():
        mine = starts.get((source, run), starts.get(run))
        if mine is not None:
            at, names = mine
            keys[idx] = names[np.maximum(np.searchsorted(at, times[idx], side="right") - 1, 0)]
    return _overlapping_as_one(keys, m["run"].to_numpy(dtype=object), times)


def _overlapping_as_one(keys: np.ndarray, runs: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Starts of one run whose samples overlap in time are one start seen twice (its log and its
    wandb run, which the evidence did not tie to one process): one key, the earlier's. One start
    of a run replaces the one before it; they do not train side by side."""
    spans = pd.DataFrame({"key": keys, "run": runs, "time": times}).groupby(["run", "key"], sort=False, dropna=False)["time"]
    spans = spans.agg(["min", "max"]).reset_index().sort_values(["run", "min"], kind="stable")
    same: dict = {}
    for _, g in spans.groupby("run", sort=False, dropna=False):
        head, end = None, None
        for key, lo, hi in zip(g["key"], g["min"], g["max"], strict=True):
            if head is not None and lo <= end:
                same[key], end = head, max(end, hi)
            else:
                head, end = key, hi
    return np.array([same.get(k, k) for k in keys], dtype=object) if same else keys


def _series(inc: Incident) -> pd.DataFrame:
    m = pace_rows(inc)
    if m.empty:
        return m.assign(stint=pd.Series(dtype="string"))
    # Worked on as positions of the pace rows, taken once at the end: each run's rows copied,
    # sorted, cut and joined again were most of a live look's peak memory at an hour of 8 ranks.
    times = m["time"].to_numpy(dtype="datetime64[us]")
    values = m["value"].to_numpy(dtype=float)
    keys = stint_keys(inc, m)
    starts = pd.factorize(keys, use_na_sentinel=False)[0]  # in order of first appearance
    by_start = np.argsort(starts, kind="stable")
    parts, averaged = [], False
    for idx in np.split(by_start, np.flatnonzero(np.diff(starts[by_start])) + 1):
        src = m["source"].iloc[idx]
        counts = src.groupby(src, dropna=False).size().sort_values(ascending=False)
        sel = idx[(src == counts.index[0]).to_numpy(dtype=bool, na_value=False)]
        sel = sel[np.argsort(times[sel], kind="stable")]
        v = values[sel]
        if unit(inc) == "tok/s" and (alternates(v) or spread(v) > SPIKY):
            # a trainer's lines that alternate or swing (threads or ranks each logging their own
            # rate, uneven steps) say no level one by one: the run's level is the mean over a
            # window of lines around each (as model/progress.py counts it); a pace counted from
            # steps is counted over intervals already
            v = pd.Series(v).rolling(LINES_PER_WINDOW, center=True).mean().to_numpy()
            sel, v, averaged = sel[~np.isnan(v)], v[~np.isnan(v)], True
        w = _warmup(v)
        if len(sel) > w:
            parts.append((sel[w:], v[w:]))
    if not parts:
        return m.iloc[:0].assign(stint=pd.Series(dtype="string"))
    parts.sort(key=lambda p: times[p[0][0]])
    parts = _without_side_jobs(inc, parts, keys, times)
    firsts = [times[p[0][0]] for p in parts]
    kept = []
    for i, (sel, v) in enumerate(parts):
        later = [t for t in firsts[i + 1:] if t > firsts[i]]
        keep = times[sel] < min(later) if later else slice(None)
        kept.append((sel[keep], v[keep]))
    pos, v = np.concatenate([p for p, _ in kept]), np.concatenate([x for _, x in kept])
    order = np.argsort(times[pos], kind="stable")
    out = m.take(pos[order]).reset_index(drop=True)
    out["stint"] = pd.array(keys[pos[order]], dtype="string")
    if averaged:
        out["value"] = v[order]
    return out


def _without_side_jobs(inc: Incident, parts: list, keys: np.ndarray, times: np.ndarray) -> list:
    """The starts that were the job, in order, without those that trained beside it. A start
    that logs while an older one still does replaced it where the operator aimed a kill at the
    older before the newer's last step (a survivor of a failed kill; a new start, then the old
    one stopped), or where the older stopped first (a run left behind). Where the operator killed
    the newer while the older went on, or the older outlived it unaimed at, the two trained side
    by side (a sweep typed beside a run): the newer is a side job, left out, and the job's pace
    is the older's."""
    kills = _kills_by_start(inc)
    span = [(times[sel[0]], times[sel[-1]]) for sel, _ in parts]
    side: set[int] = set()
    for i, j in itertools.combinations(range(len(parts)), 2):
        (lo_a, hi_a), (lo_b, hi_b) = span[i], span[j]
        if i in side or j in side or not lo_a < lo_b < hi_a:
            continue
        a, b = kills.get(keys[parts[i][0][0]], []), kills.get(keys[parts[j][0][0]], [])
        if any(t <= min(hi_a, hi_b) for t in a):
            continue  # the older was meant to stop: the newer replaced it
        if hi_b < hi_a or any(t < hi_a for t in b):
            side.add(j)
    return [p for k, p in enumerate(parts) if k not in side]


def _kills_by_start(inc: Incident) -> dict[str, list]:
    """Attempt -> the times of the kills aimed at its processes: those a kill reached
    (model/attempts.py kill_reach) and those an error line says a kill could not stop."""
    att = attempts(inc)
    if att.empty:
        return {}
    ev = inc.events
    aimed = [(ev.at[i, "time"], pids) for i, pids in kill_reach(inc).items()]
    failed = ev[ev["kind"] == "kill_failed"]
    aimed += [(t, {abs(int(p))}) for t, p in zip(failed["time"], failed_targets(failed), strict=True) if pd.notna(p)]
    # (on the series' clock: UTC, as numpy holds it)
    return {name: sorted(t.tz_convert(None).to_datetime64() for t, pids in aimed if pd.notna(t) and pids & set(mine))
            for name, mine in zip(att["attempt"], att["pids"], strict=True)}


# Warm-up (compile, first batches) is a short slow start: at most this share of a run's samples.
WARMUP_SHARE = 0.1


def _warmup(values: np.ndarray) -> int:
    """How many leading samples are warm-up: those below 0.75 x the run's median, if they are few.
    A longer slow start is a level of its own (a relaunch sharing its GPUs), not warm-up."""
    if not len(values):
        return 0
    warm = values < 0.75 * np.median(values)
    lead = int(np.argmin(warm)) if not warm.all() else len(values)
    return lead if lead <= max(3, int(WARMUP_SHARE * len(values))) else 0


def _sigma(signal: np.ndarray, runs: np.ndarray) -> float:
    """Noise of the steady baseline: robust (MAD) spread of the first start, floor 0.5 %. A first
    start too short to tell its noise alone (a run killed after twenty seconds) is not topped
    up with the next start's samples, whose level may be another: the spread of each start of
    MIN_SIZE samples or more about its own median is taken instead (a change of level between
    starts is no noise; a start of one or two samples tells none)."""
    first = int((runs == runs[0]).sum())
    edges = [0, *(np.flatnonzero(runs[1:] != runs[:-1]) + 1), len(signal)]
    own = [signal[a:b] - np.median(signal[a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True) if b - a >= MIN_SIZE]
    if first >= MIN_SIZE * 2 or not own:
        base = signal[: max(first, MIN_SIZE * 2)]
        own = [base - np.median(base)]
        # a start whose level changed part-way (4 s a step, then 70 s) spreads about its one median
        # by the change itself: the spread of its sample-to-sample steps (a level change is one
        # step among many) is its noise where that is smaller
        if len(base) > 2:
            step = float(np.median(np.abs(np.diff(base)))) * 1.4826 / math.sqrt(2)
            return max(min(float(np.median(np.abs(own[0]))) * 1.4826, step), 0.005)
    return max(float(np.median(np.abs(np.concatenate(own))) * 1.4826), 0.005)


# Grid points the change-point search steps through, about (see changepoints.breakpoints).
SEARCH_POINTS = 2000


def _absorb_short(segs: list[list], s: pd.DataFrame, values: np.ndarray, min_len: pd.Timedelta,
                  close: float) -> list[list]:
    """Merge every segment shorter than `min_len` that is not a whole start into its neighbour
    with the closer level, shortest first; then merge neighbours left within `close` of each other."""
    times = s["time"].to_numpy()
    runs = stints(s)

    def short(seg) -> bool:
        a, b = seg[0], seg[1]
        whole = (a == 0 or runs[a - 1] != runs[a]) and (b == len(runs) or runs[b] != runs[b - 1]) and \
            len(set(runs[a:b])) == 1
        return not whole and (times[b - 1] - times[a]) < min_len

    segs = [list(x) for x in segs]
    while len(segs) > 1:
        cands = [k for k, seg in enumerate(segs) if short(seg)]
        if not cands:
            break
        k = min(cands, key=lambda k: times[segs[k][1] - 1] - times[segs[k][0]])
        nbrs = [j for j in (k - 1, k + 1) if 0 <= j < len(segs)]
        j = min(nbrs, key=lambda j: abs(math.log(segs[j][2] / segs[k][2])))
        a, b = min(segs[j][0], segs[k][0]), max(segs[j][1], segs[k][1])
        segs[min(j, k)] = [a, b, float(np.median(values[a:b]))]
        del segs[max(j, k)]
        # The merged level may now be within `close` of its other neighbours.
        i = min(j, k)
        for nb in (i + 1, i - 1):
            if 0 <= nb < len(segs) and nb != i and close < segs[nb][2] / segs[i][2] < 1 / close:
                lo, hi = min(i, nb), max(i, nb)
                a, b = segs[lo][0], segs[hi][1]
                segs[lo] = [a, b, float(np.median(values[a:b]))]
                del segs[hi]
                i = lo
    return segs


def _snap_to_runs(bkps: list[int], runs: np.ndarray) -> list[int]:
    """A breakpoint a few samples from a relaunch is the relaunch: noise moved it (a busy CPU, a
    slow last step), not the level change."""
    edges = np.flatnonzero(runs[1:] != runs[:-1]) + 1
    if not len(edges):
        return list(bkps)
    out = []
    for b in bkps:
        near = edges[np.abs(edges - b) <= 2 * MIN_SIZE]
        out.append(int(near[np.argmin(np.abs(near - b))]) if len(near) and b < len(runs) else b)
    return out


def _run_boundaries(signal: np.ndarray, runs: np.ndarray, min_drop: float) -> list[int]:
    """Where one run hands over to the next and their levels differ: a relaunch is a change point
    whenever the two runs' medians differ by more than `min_drop` and by more than their own
    noise allows (3 standard errors of a robust spread). Short, noisy runs (a 20 s replay on a
    busy CPU) are judged by their own samples, not by a penalty fitted to long steady ones."""
    out = []
    edges = [0, *(np.flatnonzero(runs[1:] != runs[:-1]) + 1), len(signal)]
    for a, b, c in zip(edges[:-2], edges[1:-1], edges[2:], strict=True):
        left, right = signal[a:b], signal[b:c]
        if min(len(left), len(right)) < 2 * MIN_SIZE:
            continue
        diff = abs(np.median(right) - np.median(left))
        spread = [np.median(np.abs(x - np.median(x))) * 1.4826 for x in (left, right)]
        stderr = math.sqrt(spread[0] ** 2 / len(left) + spread[1] ** 2 / len(right)) * 1.2533  # of a median
        if diff > -math.log(1 - min_drop) and diff > 3 * stderr:
            out.append(int(b))
    return out


def segments(s: pd.DataFrame, min_drop: float = MIN_DROP, penalty: float = PENALTY,
             min_len_s: float = MIN_REGRESSION_S) -> pd.DataFrame:
    """Level segments of a throughput series: start/end index, level (median), first/last time.

    A level must last `min_len_s` or be a whole run to stand on its own: a shorter stretch inside
    a run (a burst at start-up, a dip, a busy neighbour for a few seconds) joins the neighbour
    whose level is closer."""
    if len(s) < 2 * MIN_SIZE:
        if s.empty:
            return pd.DataFrame(columns=["i0", "i1", "level", "start", "end"])
        bkps = [len(s)]
    else:
        signal = np.log(s["value"].to_numpy(dtype=float))
        runs = stints(s)
        sigma = _sigma(signal, runs)
        pen = penalty * sigma**2 * math.log(len(signal))
        bkps = changepoints.breakpoints(signal, pen, MIN_SIZE, SEARCH_POINTS)
        bkps = sorted(set(_snap_to_runs(bkps, runs)) | set(_run_boundaries(signal, runs, min_drop)))
    bounds = [0, *bkps]
    values = s["value"].to_numpy(dtype=float)
    close = 1.0 - min_drop
    # Merge neighbours whose levels are within min_drop of each other, left to right: a merge only
    # changes the pair it made and the one before it, so a stack replaces rescanning from the start.
    segs: list[list] = []  # [start, end, median]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        segs.append([a, b, float(np.median(values[a:b]))])
        while len(segs) > 1 and close < segs[-1][2] / segs[-2][2] < 1 / close:
            top = segs.pop()
            segs[-1] = [segs[-1][0], top[1], float(np.median(values[segs[-1][0]:top[1]]))]
    segs = _absorb_short(segs, s, values, pd.Timedelta(seconds=min_len_s), close)
    return pd.DataFrame([
        {"i0": a, "i1": b, "level": level, "start": s["time"].iloc[a],
         "end": s["time"].iloc[b - 1]} for a, b, level in segs
    ])


def episodes(inc: Incident, min_drop: float | None = None) -> list[dict]:
    """Regression episodes: consecutive segments below (1 - min_drop) x the level before them."""
    return memo.cached(inc, f"episodes:{min_drop}", ("metrics", "gpus", "processes"),
                       lambda: _episodes(inc, min_drop))


def _episodes(inc: Incident, min_drop: float | None) -> list[dict]:
    min_drop = min_drop if min_drop is not None else float(inc.config.detect.get("min_drop", MIN_DROP))
    min_len = pd.Timedelta(seconds=float(inc.config.detect.get("min_regression_s", MIN_REGRESSION_S)))
    s = series(inc)
    segs = segments(s, min_drop, min_len_s=min_len.total_seconds())
    stalls = stall_intervals(inc)
    out = []
    k = 0
    while k < len(segs):
        if k == 0 or segs["level"].iloc[k] >= (1 - min_drop) * segs["level"].iloc[k - 1]:
            out += _fallen(s, segs.iloc[k], min_drop, min_len)
            k += 1
            continue
        base = segs.iloc[k - 1]
        j = k
        while j + 1 < len(segs) and segs["level"].iloc[j + 1] < (1 - min_drop) * base["level"]:
            j += 1
        i0, i1 = int(segs["i0"].iloc[k]), int(segs["i1"].iloc[j])
        part = s.iloc[i0:i1]
        if any(base["end"] <= a and b <= part["time"].iloc[0] for a, b in stalls):
            # A stall between the two levels: the run after it is the stalled run's relaunch,
            # judged as its recovery, not as a regression of its own.
            k = j + 1
            continue
        if part["time"].iloc[-1] - part["time"].iloc[0] < min_len and not _whole_runs(inc, s, part, min_len):
            k = j + 1
            continue
        before = s.iloc[int(base["i0"]):int(base["i1"])]
        first = s.iloc[i0:int(segs["i1"].iloc[k])]
        if _same_work(inc, before, part, float(first["value"].median()) / float(base["level"]), min_drop):
            k = j + 1
            continue
        out.append({
            # The drop is the first degraded level; later ones (a relaunch that also ran slow)
            # are judged as recoveries that fell short.
            "series": s, "baseline": float(base["level"]), "degraded": float(first["value"].median()),
            "start": part["time"].iloc[0], "end": part["time"].iloc[-1], "i0": i0, "i1": i1,
            "before": before, "during": part, "after": s.iloc[i1:],
            "levels": segs["level"].iloc[k:j + 1].round(0).tolist(),
        })
        k = j + 1
    return out


def _fallen(s: pd.DataFrame, seg: pd.Series, min_drop: float, min_len: pd.Timedelta) -> list[dict]:
    """The starts that end in one level segment and whose pace fell from their first lines to
    their last (model/progress.py `falling`): each an episode from where it stayed below (1 -
    min_drop) x its first lines, or from its one step down, to its last line, where that lasted
    `min_len`, as any drop inside a run must. A start that goes on in the next segment came back
    up: a dip, the change points' to judge."""
    out = []
    i0, i1 = int(seg["i0"]), int(seg["i1"])
    every = stints(s)
    keys = every[i0:i1]
    for key in dict.fromkeys(keys):
        at = np.flatnonzero(every == key)
        a, z = int(at[0]), int(at[-1]) + 1
        if a < i0 or z > i1:
            continue
        fell = falling(s["value"].to_numpy(dtype=float)[a:z], min_drop)
        if fell is None:
            continue
        b = a + fell.at
        if s["time"].iloc[z - 1] - s["time"].iloc[b] < min_len:
            continue
        out.append({"series": s, "baseline": fell.before, "degraded": fell.after, "start": s["time"].iloc[b],
                    "end": s["time"].iloc[z - 1], "i0": b, "i1": z, "before": s.iloc[a:b], "during": s.iloc[b:z],
                    "after": s.iloc[z:], "levels": [round(fell.before), round(fell.after)], "gradual": fell.gradual})
    return out


def _whole_runs(inc: Incident, s: pd.DataFrame, part: pd.DataFrame, min_len: pd.Timedelta) -> bool:
    """A degraded stretch that is whole runs, start to end, with enough samples is a regression
    however short the runs are (a 20 s replay logging every second is evidence enough); only a
    dip inside a run must last `min_regression_s`. With fewer samples (a `tail` of a log the
    folder lacks), whole starts that lived `min_regression_s` between them: what was seen of
    each is its pace over its life (h100-1gpu-cpu-fallback without train_2.log: three lines
    printed at 5-6K tok/s of a start that ran 64 s on no GPU)."""
    keys = np.unique(stints(part))
    runs = s[np.isin(stints(s), keys)]
    whole = bool(runs["time"].min() >= part["time"].min() and runs["time"].max() <= part["time"].max())
    if not whole or len(part) < MIN_SIZE:
        return False
    if len(part) >= 2 * MIN_SIZE:
        return True
    att = attempts(inc)
    lived = att[att["attempt"].isin(keys)]
    return bool(((lived["end"] - lived["start"]).dropna() >= min_len).any())


def stints(s: pd.DataFrame) -> np.ndarray:
    """Which start each sample of a series came from (`series`' column `stint`; by run name for a
    series built without it)."""
    return (s["stint"] if "stint" in s.columns else s["run"]).to_numpy(dtype=object)


def _across(inc: Incident, before: pd.DataFrame, during: pd.DataFrame) -> bool:
    """Whether the drop came with a new start: the baseline's last sample and the drop's first
    came from two starts (`stint_keys`). Where either has no start of its own, by run: two runs of
    one attempt are its ranks, each logging (train_rank8.log, train_rank9.log), and the drop came
    inside it."""
    stint_b, stint_a = stints(before)[-1], stints(during)[0]
    if not str(stint_b).startswith("run ") and not str(stint_a).startswith("run "):
        return stint_a != stint_b
    run_b, run_a = before["run"].iloc[-1], during["run"].iloc[0]
    one = _attempt_of(inc, run_a)
    return run_a != run_b and (one is None or one != _attempt_of(inc, run_b))


def _attempt_of(inc: Incident, run) -> str | None:
    """The first attempt that logged `run`, or None."""
    att = attempts(inc)
    hit = att[[run in runs for runs in att["runs"]]]
    return None if hit.empty else hit["attempt"].iloc[0]


def _run_info(inc: Incident, run) -> RunInfo | None:
    if run in inc.runs:
        return inc.runs[run]
    for info in inc.runs.values():
        if run in (info.name, info.id):
            return info
    return None


def config_differences(inc: Incident, run_before, run_after, first_after, baseline_end=None) -> list[dict]:
    """Settings that differ between two runs (or two starts of one run): command-line flags of
    their launches, the environment the operator set for them, wandb config. `baseline_end`: the
    time of the baseline's last sample (its launch is the last start of `run_before` that trained
    by then; else by `first_after`)."""
    diffs: dict[str, dict] = {}
    la = launch_of(inc, run_after, first_after)
    # the launch whose pace was the baseline: the run's last start that trained
    lb = launch_of(inc, run_before, first_after if baseline_end is None else baseline_end, trained=True)
    if la is not None:
        fb = lb["flags"] if lb is not None else {}
        fa = la["flags"]
        nb = {flag_key(k): (k, v) for k, v in fb.items()}
        for k, v in fa.items():
            old = nb.get(flag_key(k))
            if old is None or old[1] != v:
                diffs[flag_key(k)] = {"setting": k, "before": None if old is None else old[1], "after": v,
                                      "shown": _typed(k, v), "from": "launch command", "ref": la.get("ref")}
        for key, (k, v) in nb.items():
            if key not in {flag_key(x) for x in fa} and lb is not None:
                diffs[key] = {"setting": k, "before": v, "after": None,
                              "shown": f"(no {k})" if v == SWITCH else f"(no {k}; was {v})",
                              "from": "launch command", "ref": lb.get("ref")}
    if la is not None and lb is not None:
        ea, eb = environment(inc, la.get("ref")), environment(inc, lb.get("ref"))
        for name in sorted(set(ea) | set(eb)):
            (va, ra), (vb, rb) = ea.get(name, (None, None)), eb.get(name, (None, None))
            if va != vb and flag_key(name) not in diffs:
                diffs[flag_key(name)] = {"setting": name, "before": vb, "after": va,
                                         "shown": f"{name}={va}" if va is not None else f"(no {name}; was {vb})",
                                         "from": "environment", "ref": ra or rb}
    ib, ia = _run_info(inc, run_before), _run_info(inc, run_after)
    if ib is not None and ia is not None:
        for k in sorted(set(ib.config) | set(ia.config)):
            vb, va = ib.config.get(k), ia.config.get(k)
            if vb != va and flag_key(k) not in diffs:
                diffs[flag_key(k)] = {"setting": k, "before": vb, "after": va, "shown": f"{k}={va!r} (was {vb!r})",
                                      "from": "wandb config", "ref": None}
    # a setting given before one the new start dropped (a dropped fault injection or debug flag
    # is seldom why a start is slower)
    return sorted((dict(d, bookkeeping=bool(BOOKKEEPING.match(key))) for key, d in diffs.items()),
                  key=lambda d: d["after"] is None)


# Where a difference was typed by the operator, not recorded by the run (wandb config)
TYPED = ("launch command", "environment")


def _same_work(inc: Incident, before: pd.DataFrame, during: pd.DataFrame, ratio: float, min_drop: float) -> bool:
    """Whether a drop in the pace is no drop in the work: it came with a new start of another
    model (a setting that sizes it differs: `model_changed`), whose tokens cost more; or, in a
    pace counted in steps, with a new start whose steps were sized by other settings, larger by
    as much as it is slower (a doubled batch at half the steps a second), or by a factor no file
    says (a batch the old start left to the program's default): the pace then compares unlike
    work, and says nothing of how fast the work went."""
    if not _across(inc, before, during):
        return False
    lb = launch_of(inc, before["run"].iloc[-1], before["time"].iloc[-1], trained=True)
    la = launch_of(inc, during["run"].iloc[0], during["time"].iloc[0])
    flags_before, flags_after = (None if lb is None else lb["flags"]), (None if la is None else la["flags"])
    if model_changed(flags_before, flags_after):
        return True
    if unit(inc) != "steps/s":
        return False
    grew = step_grew(flags_before, flags_after)
    return grew is None or ratio * grew >= 1 - min_drop


def _typed(flag: str, value: str) -> str:
    """A flag as the operator typed it: a bare switch (`--gradient_checkpointing`) alone, not
    with the value the flags' reading gives it."""
    return flag if value == SWITCH else f"{flag} {value}"


def _nearby_warnings(inc: Incident, ep: dict, run_after) -> pd.DataFrame:
    ev = memo.of_kinds(inc, PROBLEM_EVENTS)
    lo = ep["start"] - pd.Timedelta(minutes=10)
    near = memo.between(inc, ev, "time", lo, ep["end"], inclusive=True)
    if run_after is not None and "run" in ev.columns:
        own = ev[(ev["run"] == run_after) & (ev["time"] <= ep["end"])]
        near = pd.concat([near, own]).drop_duplicates(subset=["time", "message", "source"])
    return near.sort_values("time", kind="stable")


def _gist(message: str, kind: str | None, width: int = 160) -> str:
    """One line of a message: a traceback's exception, a log line without its timestamp/tag."""
    text = exception_line(message, kind)
    text = re.sub(r"^\d{4}-\d\d-\d\d[ T][\d:.,]+\s*(\[[^\]]*\]\s*)?", "", text).strip()
    return text if len(text) <= width else text[: width - 3] + "..."


def _shared_gpus(inc: Incident, ep: dict) -> list[dict]:
    """Other PIDs holding memory on a GPU at the same sample, while throughput was degraded."""
    gp = memo.between(inc, inc.gpu_processes, "time", ep["start"], ep["end"], inclusive=True).dropna(subset=["pid"])
    if gp.empty:
        return []
    # by index where the samples name one (an operator's `--query-compute-apps=pid,used_memory`
    # in a transcript names no GPU: it cannot say which GPU was shared)
    key = "gpu" if gp["gpu"].notna().any() else "uuid"
    gp = gp.dropna(subset=[key])
    per = gp.groupby(["time", key])["pid"].nunique()
    shared = per[per > 1]
    if shared.empty:
        return []
    held = gp.set_index(["time", key]).loc[shared.index].reset_index()
    pids = held["pid"].unique().tolist()
    # whether they shared it as the drop began: first seen together by the first process list
    # taken after it (a list every few seconds sees a process that came seconds before late)
    taken = gp["time"].drop_duplicates().sort_values()
    every = taken.diff().median() if len(taken) > 1 else pd.Timedelta(0)
    began = bool(held["time"].iloc[0] <= ep["start"] + (every if pd.notna(every) else pd.Timedelta(0)))
    return [{"gpus": sorted({str(k[1]) for k in shared.index}), "pids": [int(p) for p in pids],
             "samples": int(len(shared)), "first": held[held["time"] == held["time"].iloc[0]], "at_drop": began}]


def _starts_of(inc: Incident, pids: list[int]) -> tuple[str, list[str]]:
    """What the attempt model knows of the starts of these PIDs, in words (` (run sweep-1e-4,
    started at 22:10:30; ...)`, nothing for processes no start of the incident holds), and the
    lines that started them (their launches, their first signs)."""
    att = attempts(inc)
    mine = att[att["pids"].map(lambda held: bool(set(held) & set(pids)))]
    said = [(f"run {run}, " if isinstance(run, str) else "") + f"started at {clock(start)}"
            for run, start in zip(mine["run"], mine["start"], strict=True) if pd.notna(start)]
    refs = [r for pair in zip(mine["launch_ref"], mine["start_ref"], strict=True) for r in pair if isinstance(r, str)]
    return (f" ({'; '.join(said)})" if said else ""), refs


def _gpus_emptied(inc: Incident, ep: dict) -> dict | None:
    """The GPUs at their driver's own memory through the whole degraded stretch, after holding a
    job's memory while the baseline was measured: training went on, but on no GPU (a device list
    that hid it, `CUDA_VISIBLE_DEVICES=1` on a one-GPU machine; a CUDA that failed to load: the
    trainer fell back to the CPU). None where the GPU samples do not cover both."""
    g = inc.gpus.dropna(subset=["memory_used_mib"])
    if g.empty or ep["before"].empty:
        return None
    during = memo.between(inc, g, "time", ep["start"], ep["end"], inclusive=True)
    before = memo.between(inc, g, "time", ep["before"]["time"].iloc[0], ep["before"]["time"].iloc[-1], inclusive=True)
    if during.empty or before.empty or gpu_state.started(float(during["memory_used_mib"].max())) \
            or not gpu_state.held(before["memory_used_mib"]).any():
        return None
    return {"from": during["time"].iloc[0], "to": during["time"].iloc[-1], "mib": float(during["memory_used_mib"].max()),
            "held": float(before["memory_used_mib"].max()), "refs": findings.refs(during.head(1))}


def _busy_cpus(inc: Incident, ep: dict) -> list[dict]:
    """Other programs that took the host's CPUs as the pace fell: processes a listing (`top`,
    `ps`) first saw from shortly before the drop until it began, where it had listed the host
    before them, busy (a core or more between them, `_BUSY_CPU_PCT`), one program per command
    line; no trainer of the incident's starts, nor a child or helper of one (a DataLoader's
    workers, torch.compile's workers). A trainer fed by CPU work (tokenizing, decoding,
    augmenting in its loader's workers) slows when another job takes the cores; its GPU shows
    only that it waits."""
    p = inc.processes
    if p.empty or "cpu_pct_max" not in p.columns or p["cpu_pct_max"].isna().all():
        return []
    att = attempts(inc)
    trainers = [int(x) for pids in att["pids"] for x in (pids or ())]
    scripts = {str(x) for x in att["script"].dropna()}
    # (a PID's first sight in any listing: an operator's `top` lists the same processes later)
    seen = p["pid"].map(p.groupby("pid")["first_seen"].min())
    lo, hi = ep["start"] - _CPU_LEAD, ep["start"] + _CPU_LAG
    new = p[(seen >= lo) & (seen <= hi) & (seen > p["first_seen"].min()) & p["cpu_pct_max"].notna()
            & ~p["pid"].isin(trainers) & ~p["ppid"].isin(trainers).fillna(False).astype(bool)]
    commands = new["command"].fillna("").astype(str)
    theirs = [bool(_HELPERS.search(c)) or invocation(c)[0] in scripts or any(runs_script(c, s) for s in scripts)
              for c in commands]
    new = new[~np.array(theirs, dtype=bool)]
    # each process once, by its fullest command line (an operator's `top` shows `python3` for
    # what the recorded `top -c` shows whole), its busiest sample across the listings
    busiest = new.groupby("pid")["cpu_pct_max"].max()
    new = new.assign(_n=new["command"].fillna("").astype(str).str.len()).sort_values("_n", ascending=False, kind="stable")
    new = new.drop_duplicates("pid").assign(cpu_pct_max=lambda d: d["pid"].map(busiest))
    out = []
    for command, rows in new.groupby("command", sort=False):
        if rows["cpu_pct_max"].sum() < _BUSY_CPU_PCT:
            continue
        users = sorted({u for u in rows["user"].dropna().astype(str)}) if "user" in rows.columns else []
        out.append({"command": str(command), "pids": sorted(int(x) for x in rows["pid"]), "users": users,
                    "cpu_pct_max": float(rows["cpu_pct_max"].max()), "cpu_pct_sum": float(rows["cpu_pct_max"].sum()),
                    "first_seen": rows["first_seen"].min(), "last_seen": rows["last_seen"].max(),
                    "refs": findings.unique([r for r in rows.sort_values("first_seen")["ref"] if isinstance(r, str)][:1])})
    return sorted(out, key=lambda g: -g["cpu_pct_sum"])


@judged
def detect_throughput_regressions(inc: Incident, min_drop: float | None = None) -> pd.DataFrame:
    """One finding per regression episode, with its levels and root-cause candidates."""
    rows, u = [], unit(inc)
    for ep in episodes(inc, min_drop):
        during, before = ep["during"], ep["before"]
        run_b, run_a = before["run"].iloc[-1], during["run"].iloc[0]
        baseline_end = before["time"].iloc[-1]
        across = _across(inc, before, during)
        ratio = ep["degraded"] / ep["baseline"]
        cands, evidence, causes = [], [], []
        flags = [d for d in config_differences(inc, run_b, run_a, ep["start"], baseline_end)
                 if not d["bookkeeping"]] if across else []
        if flags:
            shown = " ".join(d["shown"] for d in flags)
            cands.append("configuration differs from run " + str(run_b) + ": " + shown)
            refs = [d["ref"] for d in flags if isinstance(d["ref"], str)]
            evidence += refs
            causes.append(findings.cause(
                findings.event_id(refs[0]) if refs else f"config:{run_a}",
                f"run {run_a} was started with settings that differ from run {run_b}: {shown}", refs))
        warns = _nearby_warnings(inc, ep, run_a)
        for label, rx in CAUSES:
            hit = warns[warns["message"].fillna("").str.contains(rx)]
            if len(hit):
                gist = _gist(hit["message"].iloc[0], hit["kind"].iloc[0])
                cands.append(f"{label}: {gist}")
                refs = findings.refs(hit, 3)
                evidence += refs
                if refs:
                    causes.append(findings.cause(findings.event_id(refs[0]), f"{label}: {gist}", refs))
        # the degraded run's own processes are not what it shared its GPUs with
        own = {p for _, a in attempts(inc).iterrows() if run_a in a["runs"] for p in a["pids"]}
        beside: list[int] = []
        for sh in _shared_gpus(inc, ep):
            others = [p for p in sh["pids"] if p not in own] or sh["pids"]
            mine = sorted(set(sh["pids"]) & own)
            gpus = f"GPU{'s' if len(sh['gpus']) > 1 else ''} {', '.join(sh['gpus'])}"
            started, launched = _starts_of(inc, others)
            said = (f"another process on {gpus}" + (f" beside the trainer (PID {', '.join(map(str, mine))})" if mine else "")
                    + f": PID {', '.join(map(str, others))}" + started)
            cands.append(said)
            if not sh["at_drop"]:
                continue  # they came later: the drop had begun without them
            beside += [p for p in others if p not in beside and p not in own]
            # the first sample that lists them together, and the lines that started them
            refs = list(dict.fromkeys(findings.refs(sh["first"]) + launched))
            evidence += refs
            causes.append(findings.cause(findings.event_id(refs[0]) if refs else f"gpu:{others[0]}", said, refs))
        for busy in _busy_cpus(inc, ep):
            n = len(busy["pids"])
            who = f" (user {', '.join(busy['users'])})" if busy["users"] else ""
            said = (f"another program on the host's CPUs: {n} process{'es' if n > 1 else ''} of `{busy['command']}`{who}, "
                    f"up to {busy['cpu_pct_max']:.0f} % CPU" + (" each" if n > 1 else "")
                    + f", listed from {clock(busy['first_seen'])} to {clock(busy['last_seen'])}")
            cands.append(said)
            evidence += busy["refs"]
            causes.append(findings.cause(findings.event_id(busy["refs"][0]) if busy["refs"] else f"cpu:{busy['pids'][0]}",
                                         said, busy["refs"]))
        empty = _gpus_emptied(inc, ep)
        if empty is not None:
            said = (f"no GPU in use: every GPU sample from {clock(empty['from'])} to {clock(empty['to'])} shows at most "
                    f"{empty['mib']:.0f} MiB used, where they held up to {empty['held']:.0f} MiB before the drop")
            cands.append(said)
            evidence += empty["refs"]
            causes.append(findings.cause(findings.event_id(empty["refs"][0]), said, empty["refs"]))
        evidence += findings.refs(before.tail(1)) + findings.refs(during.head(2))
        launch = launch_of(inc, run_a, ep["start"]) if across else None
        rows.append(findings.finding(
            "throughput_regression", ep["start"], ep["end"], "critical", evidence,
            {"baseline_tok_per_s": ep["baseline"], "degraded_tok_per_s": ep["degraded"],
             "ratio": ratio, "run_before": run_b, "run_after": run_a, "across_runs": across,
             "baseline_end": baseline_end,
             "degraded_min": float(during["value"].min()), "degraded_max": float(during["value"].max()),
             "run_after_launch": None if launch is None else launch["time"],
             # What the operator typed (the launch command's flags, the environment set for
             # it) where it differs, else the run's own config.
             "flag_differences": [d["shown"] for d in ([d for d in flags if d["from"] in TYPED] or flags)],
             "candidates": cands, "other_pids": beside,
             "levels_tok_per_s": ep["levels"], "gradual": bool(ep.get("gradual")), "unit": u},
            caused_by=causes,
        ))
    return findings.frame(rows)
