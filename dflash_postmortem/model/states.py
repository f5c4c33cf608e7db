"""States: what each attempt was doing, from its start to its end, from generic signals.

    starting      from its start to its first training step
    training      progressing at its job's level
    degraded      progressing, below (1 - min_drop) x its job's level before, for MIN_DEGRADED_S
                  (`[detect] min_regression_s`) or its whole training: a dip shorter than that
                  (a checkpoint's pause, an evaluation, a noisy rate) is no loss, as it is no
                  regression of the detectors'
    stalled       alive (a listing shows it, its PIDs hold GPU memory, or its log grows), no step
                  for longer than max(3 x its median step interval, 60 s) (`[detect] stall_s`)
                  and no evaluation results logged in that time;
                  before a first step: no start-up stage line for that long after its last one
    hung          no step from its last one until the error that ended it, longer than 3 x its
                  median step interval (a collective waiting for a rank that stopped, until its
                  timeout): its death's story, as a stall is one of its own
    diverged      its loss (or gradient norm) stopped being a number and never came back before
                  its end: it trained on, to no purpose, from that line
    lingering     done training (its own stop line: `Training stopped`, its run's end) and silent
                  after it, yet alive (a listing, its GPU memory, a kill that ended it) for longer
                  than LINGER_S: a process that did not exit, holding what it held
    exited        ended with a status, an error line or a clean stop
    killed        ended by a signal, the OOM killer, or a launcher's or scheduler's kill
    never trained gave up before a first step: it ended, it went silent (no sign of life for
                  SILENT_S while the evidence went on), or another start followed it on its host;
                  one still showing life when the evidence ends is still starting, and so is one
                  that showed life where nothing in the incident could show a step

Each row is one stretch of one state, with the line that shows its beginning.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..incident import Incident
from ..said import error_text, exception_line, silence_said
from ..schema import column
from ..units import clock, figure
from . import carried, computed, gpu_state
from .attempts import APPROX_S, CLEAN_ENDS, MACHINE_FAULTS, attempts, finished
from .log_files import unseen
from .pace import unit
from .progress import (
    falling,
    lines_of,
    losses_of,
    placed_together,
    progress,
    reached_at,
    steps_of,
    warmed,
)
from .step_lines import lent, named_step

COLUMNS = ("attempt", "state", "start", "end", "ref", "detail")
# The frames the states are read from (the memo of computed.py is keyed by them).
READS = ("metrics", "events", "processes", "gpu_processes", "gpus")
MIN_STALL_S = 60.0
STALL_INTERVALS = 3.0
MIN_DROP = 0.15
# A level below the job's must last this long to be degraded (short replay runs logged once a
# second showed 9 s dips inside otherwise steady runs; a run whose rate swings with its batches
# has 5 s windows of evaluation and checkpoint pauses).
MIN_DEGRADED_S = 20.0
# A start with no step whose last sign of life (a listing, GPU memory, a log line) came this long
# before the evidence ends went silent: it is over, not still loading.
SILENT_S = 60.0
# A run silent this long after its own stop line while its process lived on did not exit (a
# trainer saving or evaluating after its stop line writes lines while it does).
LINGER_S = 60.0
_KILLED = ("oom_kill", "oom", "killed", "kill_sent")


# How much longer than its longest evaluation so far a silence at the evidence's end may be and
# still read as one more evaluation (their length varies a little with the machine's load)
_AGAIN = 1.25
# A save line this close to the end of a silence ended it (the save's own word that it finished)
_SAVE_ENDED = pd.Timedelta(seconds=5)


def stall_threshold_s(inc: Incident, lines: pd.DataFrame | None = None) -> float:
    """How long an attempt may go without a step before it is stalled: `[detect] stall_s` where
    incident.toml sets it, else max(3 x its median step interval, 60 s)."""
    given = inc.config.detect.get("stall_s")
    if given is not None:
        return float(given)
    if lines is None or lines.empty:
        return MIN_STALL_S
    return max(STALL_INTERVALS * step_interval_s(lines), MIN_STALL_S)


def step_interval_s(lines: pd.DataFrame) -> float:
    """The attempt's median time between step lines (0 with fewer than two times): between the
    times lines were written, so that ranks or threads logging the same step together count once."""
    if "closed_at" in lines.columns and len(lines):
        # a step counter's pace rows: each its interval, from its line to the line that closes it
        # (ranks or threads that logged the same interval together count once)
        rows = lines.drop_duplicates(["time", "closed_at"])
        return float((rows["closed_at"] - rows["time"]).dt.total_seconds().median())
    times = np.unique(lines["time"].to_numpy(dtype="datetime64[us]").astype("i8"))
    return float(np.median(np.diff(times))) / 1e6 if len(times) > 1 else 0.0


def states(inc: Incident) -> pd.DataFrame:
    """Each attempt's states over time (COLUMNS), in time order."""
    return computed.cached(inc, "states", READS,
                           lambda: _states(inc))


def _states(inc: Incident) -> pd.DataFrame:
    rows = []
    prog = progress(inc)
    att = attempts(inc)
    evaluations = _evaluation_rows(inc)
    evidence_end = inc.span()[1]
    known = (float(inc.config.detect.get("min_drop", MIN_DROP)), inc.config.detect.get("stall_s"), unit(inc),
             not inc.metrics.empty)
    for _, a in att.iterrows():
        # an attempt that is over, read again as its folder grows, has the states its own rows
        # made it (carried.py); its pace lines are hashed as they are (a step counter's rates
        # are made from the rows)
        done = carried.of_attempt(
            inc, a["attempt"], "states",
            lambda a=a: (carried.digest(lines_of(inc, a)), carried.digest_in(inc, "events", _own_events(inc, a)),
                         carried.digest(_evaluations(evaluations, a).to_frame()), known),
            lambda a=a: _attempt_states(inc, a, prog, att, evaluations, evidence_end))
        rows += [{**r, "attempt": a["attempt"]} for r in done]
    out = pd.DataFrame([r for r in rows if r["start"] is not None], columns=list(COLUMNS))
    return _fill_training(out)


def _own_events(inc: Incident, a: pd.Series) -> pd.DataFrame:
    """The event rows of the attempt's own logs from its start (its stages, its errors)."""
    ev = inc.events
    return ev[ev["source"].isin(a["sources"]) & (ev["time"] >= a["start"])] if a["sources"] else ev.iloc[:0]


def _attempt_states(inc: Incident, a: pd.Series, prog: pd.DataFrame, att: pd.DataFrame,
                    evaluations: pd.DataFrame, evidence_end) -> list[dict]:
    """One attempt's states (rows of COLUMNS), in the order they are found."""
    rows = []
    min_drop = float(inc.config.detect.get("min_drop", MIN_DROP))
    end = a["end"] if pd.notna(a["end"]) else a["last_alive"]
    end = max(end, a["last_alive"]) if pd.notna(a["last_alive"]) else end
    first = a["first_step"]
    if pd.isna(first):
        stuck = _stuck_in_start_up(inc, a, end)
        rows.append(_row(a, "starting", a["start"], end if stuck is None else stuck["start"], a["start_ref"], ""))
        if stuck is not None:
            rows.append(stuck)
    else:
        rows.append(_row(a, "starting", a["start"], first, a["start_ref"], ""))
        lines = lines_of(inc, a)
        done = _done_but_alive(inc, a, lines, end)
        if done is not None:  # its training ended at its stop line; the rest is a process that lived on
            rows.append(_row(a, "lingering", done[0], end, done[1], done[2]))
            end = done[0]
        threshold = pd.Timedelta(seconds=stall_threshold_s(inc, lines))
        # Its steps, then the last sign of life: a gap longer than the threshold is a stall. (A
        # step counter's pace row stands at its interval's beginning; the step was reached when
        # the line that closes it was written.)
        times = reached_at(lines).tolist() + [end]
        refs = (lines["ref"].tolist() if "ref" in lines.columns else [None] * len(lines)) + [a["last_alive_ref"]]
        # lines of several steps whose one time a line before them lent (loaders: `time_earliest`;
        # a Trainer's undated dicts after its dated banner): written then or later, up to the next
        # dated line, so no silence is measured from one. (A metric block's fields take its dated
        # header's time: one step, written at it.)
        shared = lines.groupby("time")["step"].transform("nunique") > 1 if len(lines) else lent(lines)
        lent_at = (lent(lines) & shared).to_numpy(dtype=bool)
        all_lent = bool(lent(steps_of(inc, a)).all())
        w = prog[prog["attempt"] == a["attempt"]]
        w = w.assign(level=warmed(w["level"]))  # its first window's warm-up is no loss
        base = float(w["level"].iloc[: max(3, len(w) // 3)].median()) if len(w) else np.nan
        # a pace that fell line after line is measured from its first lines (progress.falling)
        fell = falling(lines["value"].to_numpy(dtype=float, na_value=np.nan), min_drop) if len(lines) else None
        base = fell.before if fell is not None and len(w) else base
        since = first
        # what ended the silence at its end: a part that died while the process lived on, else
        # the error that ended an attempt which had waited for it
        died = _died_inside(inc, a, lines, end)
        hung = _hung_until_error(a, lines) if died is None else None
        said = died or hung
        evaluated = _evaluations(evaluations, a)
        own = _own_events(inc, a)  # (read once: its saves and its bars beside training)
        saves = _saves(own)
        steps = column(lines, "step").to_numpy(dtype=float, na_value=np.nan)
        pace = _step_rate(steps, reached_at(lines))
        steps = np.append(steps, _step_at_end(inc, a))  # (as `times` ends with the attempt's end)
        bars = _bar_work(own)
        # a job its shell stopped (Ctrl-Z) makes no step until `fg`, however short the wait
        stops = _job_stops(inc, a)
        shortest = min(threshold, pd.Timedelta(seconds=STALL_INTERVALS * step_interval_s(lines))) if stops else threshold
        # steps placed together at the launch that wrote their log (it prints no time: clock/
        # untimed.py) show no silence: when it trained, and whether it paused, no line says
        placed = placed_together(steps_of(inc, a))
        gaps = [] if placed else _gaps(times, first, shortest, end if said is not None else None)
        silent = _said_silent(inc, a, end) if placed else None
        if silent is not None:  # (the one silence a line says, where no step's time shows one)
            rows.append(_row(a, "training", since, silent[0], a["first_step_ref"], ""))
            rows.append(_row(a, "stalled", silent[0], end, silent[1], silent[2]))
            since = end
        evaluating = pd.Timedelta(0)  # the longest gap an evaluation has taken so far
        for k, last in gaps:
            t, ref = times[k], refs[k]
            cursor, cursor_ref = (first, a["first_step_ref"]) if last < 0 else (times[last], refs[last])
            cursor = cursor if last < 0 else _busy_after(inc, a, lines.iloc[last], cursor, t)
            stopped = _stop_in(stops, cursor, t)
            if stopped is None and t - cursor <= threshold and not (said is not None and t == end):
                continue
            # a gap the attempt spent evaluating (its evaluation's results logged in it, or its
            # evaluation's bar advancing through it) is work, not a stall: Hugging Face's
            # Trainer stops training for every evaluation
            busy = bool(len(evaluated)) and ((evaluated > cursor) & (evaluated <= t)).any()
            busy = busy or any(b - cursor <= threshold and t - e <= threshold and e > cursor for b, e in bars)
            # and one it spent writing a checkpoint that it finished: a save begun as the steps
            # stopped, then steps again or its last line a save's (torchtitan's synchronous save:
            # `Saving the checkpoint`, 394 s, `Finished saving the checkpoint ... in 393.86 seconds`);
            # a save that never ends is a stall
            saving = saves[(saves >= cursor) & (saves <= t)]
            busy = busy or (len(saving) > 0 and saving.min() - cursor <= threshold
                            and (t < end or t - saving.max() <= _SAVE_ENDED))
            # and one whose next line's step shows it went on training at its pace, unseen (two
            # `tail`s of a log the folder lacks, a paste cut between lines): no silence
            busy = busy or (last >= 0 and _trained_unseen(steps, last, k, t - cursor, pace))
            busy = busy or (bool(lent_at[last]) if last >= 0 else all_lent)
            if busy:
                evaluating = max(evaluating, t - cursor)
            # the silence the evidence ends in, no longer than an evaluation of the same run took
            # before it: one more, as far as anything shows (its results not written yet)
            busy = busy or (t == end and said is None and stopped is None and t - cursor <= evaluating * _AGAIN)
            if (t - cursor > threshold and not busy) or stopped is not None or (said is not None and t == end and t > cursor):
                rows.append(_row(a, "training", since, cursor, a["first_step_ref"] if since == first else ref, ""))
                told = stopped or said or _unfinished_save(own, saving)
                why = f"no step for {(t - cursor).total_seconds():.0f} s" + (f", {told[1]}" if told else "")
                state = "hung" if hung is not None and t == end and stopped is None else "stalled"
                rows.append(_row(a, state, cursor, t, told[0] if told else cursor_ref, why))
                since = t
        if end > since:
            rows.append(_row(a, "training", since, end, a["first_step_ref"] if since == first else None, ""))
        rows += _degraded(inc, a, w, base, min_drop, unit(inc))
        broke = _diverged(inc, a, end)
        if broke is not None:
            rows.append(_row(a, "diverged", broke[0], end, broke[1], broke[2]))
    kind = a["end_kind"]
    if pd.isna(first):
        # a start whose log is not there to show a step, seen at work on its GPU, gave nothing up
        gave_up = None if unseen(inc, a) or finished_its_work(inc, a) else \
            _gave_up(a, att, evidence_end, not inc.metrics.empty)
        if gave_up is not None:
            rows.append(_row(a, "never trained", end, end, a["end_ref"] or a["last_alive_ref"],
                             a["end_message"] or gave_up))
    elif isinstance(kind, str):
        rows.append(_row(a, "killed" if kind in _KILLED or pd.notna(a["signal"]) else "exited",
                         a["end"], a["end"], a["end_ref"], a["end_message"] or ""))
    return rows


def _busy_after(inc: Incident, a: pd.Series, row: pd.Series, cursor, until):
    """When the step line `row`, whose time is only the earliest it can have been written (an
    untimed log's bar after an epoch's end its clock does not count: clock/untimed.py), was
    written at the latest known: the last sample before `until` (and within the time the line may
    be late) at which a GPU the attempt's PIDs held was at work, where its GPUs were idle at every
    sample after it. Its steps kept it busy, so they went on to then; `cursor` where no sample
    says more, where the line's time is its own, or where the GPUs stayed busy to the silence's
    end (a collective spinning while it waits is busy too: no step shows in that)."""
    approx = row.get("time_approx")
    if not (pd.notna(approx) and approx) or inc.gpus.empty:
        return cursor
    gpus = gpu_state.held_by(inc.gpu_processes, a["pids"])
    late = row.get("time_within_s")
    until = min(until, cursor + pd.Timedelta(seconds=float(late))) if pd.notna(late) else until
    g = inc.gpus
    g = g[g["gpu"].isin(list(gpus)) & (g["time"] > cursor) & (g["time"] < until)] if gpus else g.iloc[:0]
    at_work = g.loc[gpu_state.busy(g["util_gpu_pct"]).fillna(False).astype(bool), "time"]
    if at_work.empty:
        return cursor
    after = g.loc[g["time"] > at_work.max(), "util_gpu_pct"]
    return at_work.max() if len(after) and bool(gpu_state.idle(after).all()) else cursor


def _said_silent(inc: Incident, a: pd.Series, end) -> tuple | None:
    """(since, ref, why) where a line from the attempt's start to its end says its log or its
    progress had been silent for a while (a stall watchdog's `train.log not written for 64s
    (limit 60s), sending SIGTERM to 26117`, in a log of the attempt's or as a kill aimed at it):
    a stall from that long before the line to the attempt's end."""
    ev = inc.events
    if ev.empty:
        return None
    aimed = column(ev, "target_pid").isin(list(a["pids"])).fillna(False).astype(bool) & (ev["kind"] == "kill_sent")
    mine = ev[(aimed | ev["source"].isin(list(a["sources"]))) & (ev["time"] >= a["start"]) & (ev["time"] <= end)]
    seconds = mine["message"].map(silence_said).dropna()
    if seconds.empty:
        return None
    first = mine.loc[seconds.index].sort_values("time", kind="stable").iloc[0]
    since = max(a["start"], first["time"] - pd.Timedelta(seconds=float(seconds[first.name])))
    return since, first["ref"], f"no step for {(end - since).total_seconds():.0f} s, {first['message']}"


def _diverged(inc: Incident, a: pd.Series, end) -> tuple | None:
    """(when, ref, what) of the first value of the attempt's loss or gradient norm after which
    that metric was never a number again up to its end: what it trained from there was lost."""
    rows = losses_of(inc, a)
    rows = rows[rows["time"].notna() & (rows["time"] <= end)] if len(rows) else rows
    broke = None
    for metric, g in rows.groupby("metric", sort=True):
        g = g.sort_values("time", kind="stable")
        finite = np.isfinite(g["value"].to_numpy(dtype=float))
        if finite[-1]:
            continue
        k = int(np.flatnonzero(finite)[-1]) + 1 if finite.any() else 0
        r = g.iloc[k]
        if broke is None or r["time"] < broke[0]:
            step = f" at step {int(r['step'])}" if pd.notna(r["step"]) else ""
            broke = (r["time"], r.get("ref"), f"{metric.removeprefix('train/')} {r['value']}{step}, and never a number again")
    return broke


def _done_but_alive(inc: Incident, a: pd.Series, lines: pd.DataFrame, end) -> tuple | None:
    """(its last line, the stop line's ref, the stop line) of an attempt whose own logs said it
    was done after its last step and then nothing for longer than LINGER_S while it lived on."""
    if pd.isna(end) or lines.empty:
        return None
    ev = _own_events(inc, a)
    last_step = lines["time"].max()
    stops = ev[ev["kind"].isin(CLEAN_ENDS) & (ev["time"] >= last_step)]
    if stops.empty:
        return None
    stop = stops.sort_values("time", kind="stable").iloc[0]
    # its last line of any kind: a trainer that saves or evaluates after its stop line says so
    quiet_from = max(ev["time"].max(), last_step)
    if (end - quiet_from).total_seconds() <= LINGER_S:
        return None
    return quiet_from, stop["ref"], f"its last word was `{error_text(stop['message'], stop['kind'], 160)}`"


def _gaps(times: list, first, threshold: pd.Timedelta, end) -> list[tuple[int, int]]:
    """The positions in `times` (an attempt's line times, then its end) that may end a silence,
    each with the position of the latest time before it (-1: its first step): the cursor is the
    latest time seen so far, and a silence is a time more than `threshold` past it, or `end`
    past it where something said how the attempt ended. Found over arrays: an hour of a 1 Hz
    log has thousands of lines and a few silences at most."""
    at = np.array([pd.Timestamp(t).value for t in times], dtype="int64")  # NaT: the smallest
    start = pd.Timestamp(first).value
    cursor = np.maximum.accumulate(np.concatenate([[start], at]))[:-1]
    # where the cursor moved (a time at or past it), and the last such position before each
    moved = np.where(at >= cursor, np.arange(len(at)), -1)
    before = np.concatenate([[-1], np.maximum.accumulate(moved)[:-1]])
    late = (at - cursor > threshold.value) & (at != np.iinfo("int64").min)
    if end is not None:
        late |= (at == pd.Timestamp(end).value) & (at > cursor)
    return [(int(k), int(before[k])) for k in np.flatnonzero(late)]


def _bar_work(ev: pd.DataFrame) -> list[tuple]:
    """When the attempt's bars beside training advanced (an evaluation's, a prediction's: each
    bar's last state and the seconds it had run since it began, loaders/training_log/bars.py), as
    (began, last drawn) times, of its own events (`_own_events`)."""
    if ev.empty or "bar_elapsed_s" not in ev.columns:
        return []
    ev = ev[ev["bar_elapsed_s"].notna() & ev["time"].notna()]
    began = ev["began_s"].astype(float).fillna(0.0) if "began_s" in ev.columns else 0.0
    ran = pd.to_timedelta(ev["bar_elapsed_s"].astype(float) - began, unit="s")
    return [(t - r, t) for t, r in zip(ev["time"], ran, strict=True) if r > pd.Timedelta(0)]


def _evaluation_rows(inc: Incident) -> pd.DataFrame:
    """The incident's evaluation results (`eval/...` metrics with a time)."""
    m = inc.metrics
    return m[m["metric"].str.startswith("eval/") & m["time"].notna()] if len(m) else m


def _step_rate(steps: np.ndarray, times: pd.Series) -> float:
    """The attempt's median steps per second between consecutive step lines (NaN where unknown)."""
    t = pd.to_datetime(times).to_numpy(dtype="datetime64[ns]").astype("int64") / 1e9
    ds, dt = np.diff(steps), np.diff(t)
    ok = (ds > 0) & (dt > 0) & np.isfinite(ds)
    return float(np.median(ds[ok] / dt[ok])) if ok.any() else np.nan


def _step_at_end(inc: Incident, a: pd.Series) -> float:
    """The step the line that ended the attempt names (`training done at step 3800`), else NaN."""
    said = computed.rows_where(inc, "events", "ref", a["end_ref"]) if isinstance(a["end_ref"], str) else None
    step = named_step(said["message"].iloc[0]) if said is not None and len(said) else None
    return float(step) if step is not None else np.nan


def _trained_unseen(steps: np.ndarray, before: int, after: int, gap: pd.Timedelta, pace: float) -> bool:
    """Whether the step line at `after` is so far past the one at `before` that the attempt
    trained through the silence between them at half its pace or more, its lines not in the
    evidence."""
    done = steps[after] - steps[before]
    if not (np.isfinite(done) and np.isfinite(pace)) or done <= 0 or pace <= 0:
        return False
    return done / max(gap.total_seconds(), 1e-9) >= 0.5 * pace


def _saves(ev: pd.DataFrame) -> pd.Series:
    """When the attempt's own logs said it saved a checkpoint (the `checkpoint_save` lines of its own
    events, `_own_events`)."""
    return ev.loc[column(ev, "pattern").eq("checkpoint_save").fillna(False).astype(bool), "time"].dropna()


def _unfinished_save(own: pd.DataFrame, saving: pd.Series) -> tuple | None:
    """(its ref, why) of the last checkpoint save begun in a silence that no step followed (a save
    that finished is work, not a stall: the gap loop): the run was writing its state when it
    stopped (a full or hung file system, a collective inside the save)."""
    if saving.empty:
        return None
    save = own.loc[saving.index].sort_values("time", kind="stable").iloc[-1]
    words = error_text(save["message"], save["kind"], 120)
    return save["ref"], f"likely cause: a checkpoint save begun at {clock(save['time'])} never finished (`{words}`)"


def _evaluations(rows: pd.DataFrame, a: pd.Series) -> pd.Series:
    """When the attempt logged evaluation results (of `_evaluation_rows`: its own logs and runs)."""
    ev = rows[(rows["time"] >= a["start"]) & (rows["source"].isin(a["sources"]) | rows["run"].isin(a["runs"]))]
    return ev["time"].drop_duplicates()


def _stuck_in_start_up(inc: Incident, a: pd.Series, end) -> dict | None:
    """A start that stopped making start-up progress: its last start-up stage line (`Loading
    target model ...`) followed by nothing for longer than the stall threshold while it lived
    (`[detect] stall_s`, else 60 s: it has no step to measure an interval by). Stalled where it
    lived on or was killed; hung where that wait ended in its own error (a rendezvous that timed
    out)."""
    if not a["sources"] or pd.isna(end):
        return None
    ev = inc.events
    stages = ev[ev["source"].isin(a["sources"]) & (ev["kind"] == "stage") & (ev["time"] >= a["start"])
                & (ev["time"] <= end)]
    if stages.empty:
        return None
    last = stages.sort_values("time", kind="stable").iloc[-1]
    waited = (end - last["time"]).total_seconds()
    if waited < stall_threshold_s(inc) or not isinstance(last.get("ref"), str):
        return None  # (a stage line the finding could not cite tells nothing)
    text = str(last["message"]).strip().splitlines()[0]
    died = isinstance(a["cause_kind"], str) or a["end_kind"] in _ENDED_BY_ITSELF
    return _row(a, "hung" if died else "stalled", last["time"], end, last["ref"],
                f"no start-up progress for {waited:.0f} s after `{text[:120]}`")


# Ends that a process, its shell or its launcher report (a status, a signal); with an OOM and a
# redirect the shell could not open, the ends an attempt came to by itself, not by a kill the
# operator sent to a start that hung.
REPORTED_ENDS = ("killed", "exit", "segfault", "attempt_end", "oom_kill")
_ENDED_BY_ITSELF = (*REPORTED_ENDS, "oom", "redirect_failed")


def finished_its_work(inc: Incident, a: pd.Series) -> bool:
    """Whether a start with no step line ended as one that did what it was started for: it
    stopped cleanly (its run's record says FINISHED, a status of 0) having logged results of its
    own (a Keras run whose record holds only its epochs' validation and test values). What it
    did is not in step lines; it did not fail to start."""
    if not finished(a) or not a["sources"]:
        return False
    m = inc.metrics
    return bool(len(m)) and bool((m["source"].isin(a["sources"]) & (m["time"] >= a["start"])).any())


def _gave_up(a: pd.Series, att: pd.DataFrame, evidence_end, steps_seen: bool) -> str | None:
    """Why an attempt with no step is over (None: it still showed life when the evidence ends, or
    it showed life in an incident where nothing could show a step: no progress line at all)."""
    if pd.notna(a["end"]):
        return "no step before it ended"
    if not steps_seen and (a["pids"] or a["sources"]):
        return None
    later = att[(att["start"] > a["start"]) & ((att["host"] == a["host"]) | att["host"].isna() | pd.isna(a["host"]))]
    if len(later):
        return f"no step before the next start at {later['start'].min():%H:%M:%S}"
    if evidence_end is not None and (evidence_end - a["last_alive"]).total_seconds() > SILENT_S:
        return f"no step, and no sign of life after {a['last_alive']:%H:%M:%S}"
    return None


# An error line after the last step, with the process alive this long after it, is a stall
# whatever the threshold: a thread or rank died and the rest waits (no slow step explains it).
DIED_ALIVE_S = 10.0
_DEATHS = ("traceback", "thread_crash", "exception", "error", "oom", "nccl_timeout", "timeout")


def _died_inside(inc: Incident, a: pd.Series, lines: pd.DataFrame, end) -> tuple[str, str] | None:
    """(ref, last line) of an error the attempt's log wrote after its last step, when the attempt
    stayed alive well after it: a part of it died, not all of it."""
    if lines.empty or not a["sources"]:
        return None
    last = lines["time"].max()
    ev = inc.events
    err = ev[ev["source"].isin(a["sources"]) & ev["kind"].isin(_DEATHS) & (ev["time"] >= last) & (ev["time"] <= end)]
    # an error with no time of its own (`time_earliest`: the last step line's, lent) was written
    # then or later: a thread's may have died there as its process lived on; the main thread's
    # (a KeyboardInterrupt's) came with the end, whenever that was
    err = err[~lent(err) | err["message"].astype(str).str.lstrip().str.startswith("Exception in thread")]
    if err.empty:
        return None
    r = err.sort_values("time", kind="stable").iloc[0]
    if (end - r["time"]).total_seconds() < max(DIED_ALIVE_S, STALL_INTERVALS * step_interval_s(lines)):
        return None
    said = [ln.strip() for ln in str(r["message"]).strip().splitlines() if ln.strip()]
    first, last = (said[0], said[-1]) if said else (r["kind"], r["kind"])
    if r["kind"] == "traceback" and len(said) > 1:
        # its exception line says it ("Traceback (most recent call last):" or a first frame does
        # not; a thread's `Exception in thread NAME:` names where), and it is the last quoted: the
        # lines after it go on with its message
        last = exception_line(r["message"], r["kind"]).strip()
        first = first if first.startswith("Exception in thread") else last
    first = first.rstrip(":")
    return ((r["ref"] if isinstance(r.get("ref"), str) else None),
            f"the process alive; likely cause: {first[:120]} ({last[:160]}) at {r['time']:%H:%M:%S}")


# A shell's command that sets a stopped job going again: `fg`, `bg`, `kill -CONT`
_RESUMES = r"^\s*(?:fg|bg)\b|\bkill\s+-(?:s\s+)?(?:SIG)?(?:CONT|18)\b"


def _job_stops(inc: Incident, a: pd.Series) -> list[tuple]:
    """Where the attempt's job was stopped (Ctrl-Z, SIGTSTP or SIGSTOP), as its shell said it
    (`[1]+  Stopped  python ...`) or a process listing shows it (state `T`): (time, its time's
    slack, ref, what a reader is told), in time order."""
    return sorted(_shell_stops(inc, a) + _listed_stops(inc, a), key=lambda s: s[0])


def _listed_stops(inc: Incident, a: pd.Series) -> list[tuple]:
    p = inc.processes
    if p.empty or "stopped_from" not in p.columns or not a["pids"]:
        return []
    mine = p[p["pid"].isin(a["pids"]) & p["stopped_from"].notna()]
    return [(r["stopped_from"], pd.Timedelta(0), r["stopped_ref"],
             f"likely cause: {r['source']} lists PID {int(r['pid'])} stopped (state `T`: Ctrl-Z, SIGTSTP or "
             f"SIGSTOP) from {r['stopped_from']:%H:%M:%S} to {r['stopped_until']:%H:%M:%S}")
            for _, r in mine.iterrows() if isinstance(r.get("stopped_ref"), str)]


def _shell_stops(inc: Incident, a: pd.Series) -> list[tuple]:
    ev = inc.events
    if ev.empty or "kind" not in ev.columns:
        return []
    said = ev[ev["kind"] == "job_stopped"]
    if said.empty:
        return []
    launch = a.get("launch_ref")
    mine = pd.Series(False, index=said.index)
    if isinstance(launch, str) and "command_ref" in said.columns:
        mine |= (said["command_ref"] == launch).fillna(False).astype(bool)
    if a["pids"] and "pid" in said.columns:
        mine |= said["pid"].isin(a["pids"]).fillna(False).astype(bool)
    out = []
    for _, r in said[mine].sort_values("time", kind="stable").iterrows():
        if pd.isna(r["time"]) or not isinstance(r.get("ref"), str):
            continue
        approx = bool(r.get("time_approx")) if pd.notna(r.get("time_approx")) else False
        # the shell's words without the job's command line the loader read after them
        said, job = str(r["message"]).strip(), r.get("job_command")
        shown = " ".join((said.split(job, 1)[0] if isinstance(job, str) and job in said else said).split())
        text = f"likely cause: `{shown}` (Ctrl-Z, SIGTSTP or SIGSTOP)"
        later = ev[(ev["source"] == r["source"]) & (ev["kind"] == "command") & (ev["time"] >= r["time"])
                   & ev["message"].astype(str).str.contains(_RESUMES, regex=True)]
        if len(later):
            go = later.iloc[0]
            text += f", until `{str(go['message']).strip()[:40]}` at {go['time']:%H:%M:%S}"
        out.append((r["time"], pd.Timedelta(seconds=APPROX_S if approx else 0), r["ref"], text))
    return out


def _stop_in(stops: list[tuple], after, before) -> tuple[str, str] | None:
    """(ref, text) of the first stop said between two step lines (a transcript dated only by its
    `date`s dates it up to its slack early)."""
    for when, slack, ref, text in stops:
        if after - slack <= when <= before:
            return ref, text
    return None


# How an attempt ends when someone stops it: a kill aimed at it, an interrupt (Ctrl-C)
_STOPPED_FROM_OUTSIDE = ("kill_sent", "interrupt")


def _hung_until_error(a: pd.Series, lines: pd.DataFrame) -> tuple[str, str] | None:
    """(ref, what it said) of the error that ended the attempt, when that error came long after
    its last step (more than STALL_INTERVALS of its step intervals): it waited, then failed (a
    collective's timeout after a rank stopped), and the wait made no progress however short it
    was against the stall threshold, which is for a run whose end is not known."""
    if lines.empty or pd.isna(a["cause_time"]) or len(lines) < 2:
        return None
    if a["end_kind"] in _STOPPED_FROM_OUTSIDE:
        return None  # (the operator stopped a run that had stopped stepping: it stalled, then was killed)
    said, when, ref = a["cause_message"] or a["cause_kind"], a["cause_time"], a["cause_ref"]
    first = ""
    if a["cause_kind"] in MACHINE_FAULTS and pd.notna(a["end"]) and a["end"] > when:
        # a GPU that failed under it came first; the wait ended with the attempt's own end (the
        # collective's timeout on the ranks that lived)
        first = f" (after its GPU failed: {error_text(said)[:120]} at {when:%H:%M:%S})"
        said, when, ref = error_text(a["end_message"]) or a["end_kind"], a["end"], a["end_ref"]
    waited = (when - reached_at(lines).max()).total_seconds()
    if waited <= STALL_INTERVALS * step_interval_s(lines):
        return None
    return ref, f"then it failed: {str(said)[:160]} at {when:%H:%M:%S}{first}"


def _row(a: pd.Series, state: str, start, end, ref, detail: str) -> dict:
    return {"attempt": a["attempt"], "state": state, "start": start, "end": end, "ref": ref, "detail": detail}


def _degraded(inc: Incident, a: pd.Series, w: pd.DataFrame, base: float, min_drop: float, u: str) -> list[dict]:
    """Windows of the attempt below (1 - min_drop) of its own early level, for long enough."""
    if not np.isfinite(base) or w.empty:
        return []
    low = lasting_below(inc, w, (1 - min_drop) * base)
    return [_row(a, "degraded", r["start"], r["end"], r["ref"], f"{figure(r['level'], u)} {u} against {figure(base, u)}")
            for _, r in low.iterrows()]


def lasting_below(inc: Incident, w: pd.DataFrame, level: float) -> pd.DataFrame:
    """The windows of one attempt's progress (in time order) below `level` in a stretch of
    such windows, one after the other, that lasts MIN_DEGRADED_S (`[detect] min_regression_s`)
    or holds every window of the attempt (a relaunch that trained slower from start to end)."""
    low = (w["level"] < level).to_numpy(dtype=bool, na_value=False)
    if not low.any():
        return w.iloc[:0]
    min_s = pd.Timedelta(seconds=float(inc.config.detect.get("min_regression_s", MIN_DEGRADED_S)))
    keep = np.zeros(len(w), dtype=bool)
    starts, ends = w["start"].to_numpy(), w["end"].to_numpy()
    # stretches of consecutive low windows: where a run of True begins and ends
    edges = np.flatnonzero(np.diff(np.concatenate([[0], low.astype(np.int8), [0]])))
    for b, e in zip(edges[::2], edges[1::2], strict=True):
        if (b == 0 and e == len(w)) or pd.Timedelta(ends[e - 1] - starts[b]) >= min_s:
            keep[b:e] = True
    return w[keep]


def _fill_training(df: pd.DataFrame) -> pd.DataFrame:
    """Training is what lies between an attempt's first step and its end that no other state
    covers: made explicit here so that the states tile each attempt's life."""
    return df.sort_values(["attempt", "start"], kind="stable").reset_index(drop=True)
