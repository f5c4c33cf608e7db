"""Logs with no timestamp at all, dated from what the incident says of them.

A trainer that prints no time (Hugging Face's Trainer: tqdm bars and `{'loss': ...}` dicts; a
trainer that died at start-up: its traceback) still says when things happened, the way a reader
works it out:

- the launch that redirected into the log is the earliest any of its lines can be; so is a start
  of a launcher script in the folder whose trainer's output goes to the log (`script_launch`:
  the script typed, or a supervisor's `started train.py pid 26117`);
- a log several starts appended to (a restart loop's `>>`) holds one start-up each: each is
  placed at its own start, in order (a resume from a checkpoint, or steps counted again from
  below, begins the next);
- a progress bar states the seconds since it began (`249/400 [00:33<00:17, 7.5it/s]`): the
  log's lines are that far apart;
- another source of the same run with a clock (TensorBoard, wandb, a metrics file) logged the
  same steps at known times: the bar began where the two counters agree;
- else a GPU that was idle when the log was launched went busy: its steps are what keeps a GPU at
  work (loading a model copies memory at low utilization), so the bar began after its last idle
  sample, within one sampling interval.

Each row gets the bar's clock where a bar came before it (lines before the first bar: the
launch), put on the incident's clock by the earliest source whose steps agree with the bar and
that begins after the launch, else by the GPU going busy after it, else by the launch itself
(then the times are the earliest they can be). The file's load report says which.

A traceback never carries a time of its own. In a log whose first records have no time and whose
later ones do (the ranks' tracebacks of a launcher's output, `[rank1]: Traceback ...`, before the
launcher's own dated lines), a traceback before the first dated line is placed at that line, the
latest it can have been written: it comes before what the file says after it (a launcher's
teardown follows its ranks' errors). Other undated lines stay undated (Megatron's iteration
lines before Slurm's one dated line were written over hours, not at its end).
"""

from __future__ import annotations

from pathlib import PurePosixPath

import numpy as np
import pandas as pd

from ..schema import BAR_ELAPSED_S, column
from ..shell_words import foreground_log, runs_script
from ..units import count

# Two sources' step counters agree when their offsets spread no more than this (or 10 % of the
# bar's span): step lines are written when a step ends, a logging callback a moment later.
AGREE_S = 5.0
# Fewer common steps than this prove nothing.
MIN_COMMON = 3
# A bar begins after its process starts; a shell's clock and a trainer's differ by a second.
LAUNCH_SLACK = pd.Timedelta(seconds=2)
# A script's start told twice (the launch typed, the supervisor's line of its first start, which
# gives only its second): one start.
SAME_START = pd.Timedelta(seconds=2)


def date_untimed_logs(inc) -> None:
    """Date each training log that carries no timestamp (see the module's docstring). A log no
    launch names and no clocked source agrees with stays NaT."""
    ev = inc.events
    launches = None  # the commands that wrote logs: found once, where a log needs dating
    for rep in inc.load_report.files:
        if rep.format != "training-log":
            continue
        frames = [df for df in (inc.events, inc.metrics) if not df.empty]
        rows = [df["source"] == rep.path for df in frames]
        if not any(r.any() for r in rows):
            continue
        if any(df.loc[r, "time"].notna().any() for df, r in zip(frames, rows, strict=True)):
            _date_head(inc, rep, frames, rows)
            continue
        launches = _writers(ev) if launches is None else launches
        named = [i for i, p in zip(launches.index, launches["log_path"], strict=True)
                 if p == rep.path or str(p).endswith("/" + rep.path)] if len(launches) else []
        at = launches.loc[named[-1]] if named else None
        clock = _bar_clock(inc.metrics, rep.path)
        start, how = _bar_start(inc.metrics, rep.path, clock, None if at is None else at["time"])
        if start is None and at is not None and clock:
            # (a GPU that went busy after the next launch is the next start's work)
            later = launches["time"][launches["time"] > at["time"]]
            start, how = _gpu_busy(inc.gpus, at["time"], later.min() if len(later) else None)
        earliest = start is None and at is not None and bool(clock)
        if earliest:
            start, how = at["time"], "the launch that wrote the file, the earliest its bar can have begun"
        n = int(sum(r.sum() for r in rows))
        if start is not None:
            bars = _bars_beside_training(inc.events, rep.path, clock)
            for df, r in zip(frames, rows, strict=True):
                lines = df.loc[r, "ref"].map(_line)
                rel = lines.map(clock.at_line)
                lends = rel.notna()  # a line that is no bar's state of its own: the bar before it lends its time
                if df is inc.metrics:  # a step's rows (its bar, its logged dict): the step's time
                    own = df.loc[r, "step"].map(clock.at_step).astype(float)
                    # (a bar's redraws on one line, `\r` after `\r`: each its own drawing's time)
                    own = own.fillna(clock.of_drawings(df.loc[r], lines))
                    rel = own.where(own.notna(), rel)
                    lends &= own.isna()
                elif {"bar_elapsed_s", "began_s", "began_line"} <= set(df.columns):  # a bar beside training
                    own = _own_bar_seconds(df.loc[r], clock)
                    rel = own.combine_first(rel)
                    lends &= own.isna()
                # a line after a bar beside training ended (an evaluation's results after its bar)
                # was written after it: no earlier than that bar's last state
                rel = _not_before(rel, lines, bars)
                before = at["time"] if at is not None else start
                df.loc[r, "time"] = [before if pd.isna(x) else start + pd.Timedelta(seconds=float(x)) for x in rel]
                if df is inc.events and lends.any():  # (written then or later: a traceback after the last bar)
                    _lent(df, lends[lends].index)
                # each line's time the earliest it can have been written: every line where the
                # bar began at the launch, else those after a time between bars the clock does
                # not count (an epoch's end: its checkpoint saved, its workers started again)
                latest = inc.span()[1]
                later = r if earliest else r & _after_gap(df, r, clock)
                if latest is not None and later.any():
                    _may_be_later(df, later, (latest - df.loc[later, "time"]).dt.total_seconds().clip(lower=0.0))
            ref = f" ({at['ref']})" if at is not None else ""
            rep.assume(f"dated afterwards: no line has a timestamp; its progress bar's elapsed time spaces its {n} "
                       f"rows, the bar began at {start:%Y-%m-%d %H:%M:%S} UTC ({how}){ref}; lines before the bar "
                       "are placed at the launch")
        elif at is not None:
            if len(named) > 1 and _place_by_start(inc, rep, frames, rows, launches.loc[named]):
                continue
            # the latest they can be: the last moment anything else in the incident was observed
            latest = inc.span()[1]
            within = max(0.0, (latest - at["time"]).total_seconds()) if latest is not None else None
            for df, r in zip(frames, rows, strict=True):
                _place(df, r, at["time"], within)
            rep.assume(f"dated afterwards: no line has a timestamp, so its {n} rows are placed at the launch "
                       f"that wrote the file ({at['ref']}, {at['time']:%Y-%m-%d %H:%M:%S} UTC), the earliest "
                       "they can have been written"
                       + (f", and up to {within:,.0f} s later (the last time the incident observed)" if within else ""))


def _writers(ev: pd.DataFrame) -> pd.DataFrame:
    """The dated commands that started a trainer writing into a log, in time order, each with
    its `log_path`: launches (in the background, by a launcher) and foreground commands into a
    log (`python train.py 2>&1 | tee logs/train.log`); not those whose redirect failed. And the
    starts a launcher script makes, where the folder holds the script (`script_launch`: its
    trainer's output goes to a file): each launch of the script typed, and each start a
    supervisor's log says it made of the program the script runs into that file (a watchdog's
    `started train.py pid 26117`); one start told by both, seconds apart, once, at the later
    time."""
    if ev.empty:
        return ev.assign(log_path=pd.Series(dtype=object))
    launched = ev[(ev["kind"] == "launch") & ev["time"].notna()]
    launched = launched.assign(log_path=launched["log_path"]) if "log_path" in ev.columns \
        else launched.assign(log_path=None)
    cmds = ev[(ev["kind"] == "command") & ev["time"].notna() & ~ev["ref"].isin(launched["ref"])]
    cmds = cmds.assign(log_path=cmds["message"].map(lambda c: foreground_log(str(c))))
    writers = pd.concat([launched, cmds, _script_starts(ev, launched)])
    writers = writers[writers["log_path"].notna()].sort_values("time", kind="stable")
    # (of one start told twice, the later time: a supervisor's line gives only the second)
    again = -writers.groupby("log_path")["time"].diff(-1) <= SAME_START
    writers = writers[~again]
    failed = set(ev.loc[ev["kind"] == "redirect_failed", "path"].dropna()) if "path" in ev.columns else set()
    return writers[~writers["log_path"].isin(failed)].reset_index(drop=True)


def _script_starts(ev: pd.DataFrame, launched: pd.DataFrame) -> pd.DataFrame:
    """The starts a launcher script in the folder makes that write a file (`_writers`), each as
    a row of that file's `log_path`."""
    scripted = ev[ev["kind"] == "script_launch"]
    if scripted.empty:
        return ev.iloc[:0]
    by_script: dict[str, set[str]] = {}
    by_program: dict[str, set[str]] = {}
    for script, program, log in zip(scripted["script"], scripted["program"], scripted["log_path"], strict=True):
        by_script.setdefault(PurePosixPath(str(script)).name, set()).add(str(log))
        by_program.setdefault(PurePosixPath(str(program)).name, set()).add(str(log))
    rows = []
    typed = ev[(ev["kind"] == "command") & ev["ref"].notna()].drop_duplicates("ref").set_index("ref")["message"]
    for _, r in launched.iterrows():
        command = str(typed.get(r["ref"], r["message"]))  # (a launch's message may be a summary)
        rows += [r.to_dict() | {"log_path": log} for name, logs in by_script.items() if runs_script(command, name)
                 for log in sorted(logs)]
    supervised = ev[(ev["kind"] == "attempt_start") & (column(ev, "by") == "supervisor").fillna(False).astype(bool)
                    & ev["time"].notna()]
    for _, r in supervised.iterrows():
        logs = by_program.get(PurePosixPath(str(r.get("program"))).name, set())
        if len(logs) == 1:  # (two scripts running it into two files: which one, nothing says)
            rows.append(r.to_dict() | {"log_path": next(iter(logs))})
    return pd.DataFrame(rows) if rows else ev.iloc[:0]


def _place_by_start(inc, rep, frames: list[pd.DataFrame], rows: list[pd.Series], writers: pd.DataFrame) -> bool:
    """A log several starts wrote in turn (a loop appending each run's output): each start-up in
    it (`_start_ups`) placed at the start that wrote it, the latest starts where it holds fewer
    than were made (`>` keeps only the last), up to the next start or the last time the
    incident observed. False where it holds more start-ups than there were starts: which wrote
    which, nothing says."""
    parts = _start_ups(frames, rows)
    k, n = _count(parts), len(writers)
    if k < 2 or k > n:
        return False
    mine = writers.iloc[n - k:]
    times = list(mine["time"])
    latest = inc.span()[1]
    ends = times[1:] + [latest if latest is not None else times[-1]]
    for df, r, part in zip(frames, rows, parts, strict=True):
        for i, (at, until) in enumerate(zip(times, ends, strict=True)):
            here = r & part.reindex(df.index).eq(i).fillna(False).astype(bool)
            _place(df, here, at, max(0.0, (until - at).total_seconds()))
    refs = ", ".join(f"{w['ref']} ({w['time']:%H:%M:%S})" for _, w in mine.iterrows())
    rep.assume(f"dated afterwards: no line has a timestamp; it holds {k} start-ups, each placed at the start that "
               f"wrote it ({refs}), the earliest its lines can have been written, and up to the next start")
    return True


def _count(parts: list[pd.Series]) -> int:
    """How many start-ups `_start_ups` found."""
    return max((int(p.max()) + 1 for p in parts if p.notna().any()), default=0)


def _start_ups(frames: list[pd.DataFrame], rows: list[pd.Series]) -> list[pd.Series]:
    """Which start-up of the log each row belongs to (0, 1, ...), in line order: a new one begins
    where, after step lines, the log says a start resumed from a checkpoint or counts its steps
    again from below (a new process appending to the file: a trainer resumes only as it starts)."""
    lines = [_lines(df, r) for df, r in zip(frames, rows, strict=True)]
    marks = []
    for df, r, ln in zip(frames, rows, lines, strict=True):
        step = pd.to_numeric(df.loc[r, "step"], errors="coerce") if "step" in df.columns else pd.Series(np.nan, index=ln.index)
        kind = df.loc[r, "kind"] if "kind" in df.columns else pd.Series("metric", index=ln.index)
        marks.append(pd.DataFrame({"line": ln, "step": step.astype(float), "resumed": kind.eq("resumed")}))
    order = pd.concat(marks, ignore_index=True).dropna(subset=["line"]).sort_values("line", kind="stable")
    begins, top = [], -np.inf
    for line, step, resumed in order.itertuples(index=False):
        if top > -np.inf and (resumed or step < top):
            begins.append(line)
            top = -np.inf
        if step == step:
            top = max(top, step)
    return [pd.Series(np.searchsorted(np.asarray(begins, dtype=float), ln.to_numpy(dtype=float), side="right"),
                      index=ln.index).where(ln.notna()) for ln in lines]


def _place(df: pd.DataFrame, rows: pd.Series, at: pd.Timestamp, within: float | None) -> None:
    """Put `rows` of `df` at `at`, each carrying how much later it may be (an error among them:
    "died at 05:09:57 (up to 18 s later)"; steps placed together, whose pace and pauses no time
    shows: model/states.py)."""
    df.loc[rows, "time"] = at
    # (marked: a time shared by lines written over a while says nothing of their pace: model/step_lines.py)
    if "time_placed" not in df.columns:
        df["time_placed"] = pd.array([pd.NA] * len(df), dtype="boolean")
    df.loc[rows, "time_placed"] = True
    if within:
        _may_be_later(df, rows, within)


def _after_gap(df: pd.DataFrame, rows: pd.Series, clock: _Clock) -> pd.Series:
    """Which of `rows` come at or after the clock's first uncounted gap (`_Clock.gap_line`)."""
    if clock.gap_line is None:
        return pd.Series(False, index=df.index)
    return (_lines(df, rows) >= clock.gap_line).reindex(df.index, fill_value=False).astype(bool)


def _lent(df: pd.DataFrame, labels) -> None:
    """Mark the rows `labels` of `df` as carrying a time the line before them lent (`time_earliest`,
    model/step_lines.py)."""
    if "time_earliest" not in df.columns:
        df["time_earliest"] = pd.array([pd.NA] * len(df), dtype="boolean")
    df.loc[labels, "time_earliest"] = True


def _may_be_later(df: pd.DataFrame, rows: pd.Series, within) -> None:
    """Mark `rows` of `df` as times that may be up to `within` seconds later (one number, or one
    a row)."""
    if "time_approx" not in df.columns:
        df["time_approx"] = pd.array([pd.NA] * len(df), dtype="boolean")
    if "time_within_s" not in df.columns:
        df["time_within_s"] = np.nan
    df.loc[rows, "time_approx"] = True
    df.loc[rows, "time_within_s"] = within


def _date_head(inc, rep, frames: list[pd.DataFrame], rows: list[pd.Series]) -> None:
    """The tracebacks of a partly dated log that come before its first dated line: at that
    line's time (the module's docstring). Asked only of a log with an undated traceback: most
    logs have none, and a long one has millions of dated rows."""
    ev = inc.events
    undated = (ev["source"] == rep.path) & (ev["kind"] == "traceback") & ev["time"].isna()
    if not undated.any():
        return
    firsts = []  # each frame's first dated line: (line, time)
    for df, r in zip(frames, rows, strict=True):
        lines = _lines(df, r & df["time"].notna()).dropna()
        if len(lines):
            at = lines.idxmin()
            firsts.append((int(lines[at]), df.at[at, "time"]))
    if not firsts:
        return
    first_line, first_time = min(firsts)
    head = undated & (_lines(ev, undated).reindex(ev.index).fillna(first_line) < first_line)
    n = int(head.sum())
    if n:
        _place(ev, head, first_time, None)
        ev.loc[head, "time_latest"] = True
        rep.assume(f"dated afterwards: {count(n, 'traceback')} before its first dated line, placed at that line "
                   f"({rep.path}:{first_line}, {first_time:%Y-%m-%d %H:%M:%S} UTC), the latest it can have been written")


class _Clock:
    """A log's bar clock: seconds since its first bar began, by line and by step. Bars that
    follow one another (an epoch each) continue the count where the last one stopped."""

    def __init__(self, lines: list[int], steps: list, seconds: list[float], gap_line: int | None = None,
                 labels: list | None = None):
        self.lines, self.seconds = np.asarray(lines), np.asarray(seconds, dtype=float)
        # each drawing's row label in the metrics, and when its count was first drawn (a bar
        # redrawn at the same count, tqdm's monitor or a new postfix, reached its step before)
        self.labels = list(labels or [])
        self.reached = self.seconds.copy()
        for i in range(1, len(steps)):
            if steps[i] is not None and steps[i] == steps[i - 1] and self.seconds[i] >= self.seconds[i - 1]:
                self.reached[i] = self.reached[i - 1]
        # the first line of the first bar after another: the time between two bars (an epoch's
        # checkpoint, its new workers) is in no bar's elapsed time, so from here on each time is
        # the earliest its line can have been written
        self.gap_line = gap_line
        self.steps: dict[int, float] = {}
        # a bar redrawn at the same count (Lightning's, when its postfix `loss=` changes) repeats
        # a step: the first drawing of a count is when it was reached
        monotonic = all(b >= a for a, b in zip(steps, steps[1:], strict=False) if a is not None and b is not None)
        if monotonic:  # a counter that restarts (an epoch's bar) names no global step
            for s, t in zip(steps, self.seconds, strict=True):
                if s is not None:
                    self.steps.setdefault(int(s), t)

    def __bool__(self) -> bool:
        return len(self.lines) > 0

    def at_step(self, step) -> float | None:
        return None if step is None or pd.isna(step) else self.steps.get(int(step))

    def of_drawings(self, rows: pd.DataFrame, lines: pd.Series) -> pd.Series:
        """The seconds at which each of `rows` (metric rows, in the order they were read) was
        drawn: those of the bar's drawing on the same line at or before it (its loss, its rate,
        read from the same drawing); NaN for a row no drawing of its line comes before."""
        if not self.labels:
            return pd.Series(np.nan, index=rows.index)
        drawn = pd.DataFrame({"at": self.reached, "line": self.lines.astype(float)}, index=self.labels)
        mine = drawn.reindex(rows.index.union(drawn.index)).ffill().reindex(rows.index)
        same = mine["line"].to_numpy(dtype=float) == lines.to_numpy(dtype=float, na_value=np.nan)
        return mine["at"].where(same)

    def at_line(self, line: int | None) -> float | None:
        """The bar's time at the end of this line (None before the first bar)."""
        if line is None or not len(self.lines) or line < self.lines[0]:
            return None
        return float(self.seconds[np.searchsorted(self.lines, line, side="right") - 1])


def _own_bar_seconds(ev: pd.DataFrame, clock: _Clock) -> pd.Series:
    """The clock's seconds when each bar beside training was last drawn: where it began (the
    clock at its first line) and the seconds it counts of its own since (bars.py); NaN for other
    rows."""
    ran = ev["bar_elapsed_s"].astype(float) - ev["began_s"].astype(float)
    return _began_seconds(ev, clock) + ran


def _began_seconds(ev: pd.DataFrame, clock: _Clock) -> pd.Series:
    """The clock's seconds at the line each bar beside training began on (NaN where unknown)."""
    return pd.Series([clock.at_line(int(x)) if pd.notna(x) else None for x in ev["began_line"]],
                     index=ev.index, dtype=float)


def _bars_beside_training(ev: pd.DataFrame, source: str, clock: _Clock) -> list[tuple[float, float, float, float]]:
    """The log's runs of bars beside training: (the line each began on, the line of its last
    state, the clock's seconds at each)."""
    if ev.empty or not {"bar_elapsed_s", "began_s", "began_line"} <= set(ev.columns):
        return []
    mine = ev[(ev["source"] == source) & ev["bar_elapsed_s"].notna()]
    began, last = _began_seconds(mine, clock), _own_bar_seconds(mine, clock)
    return [(float(bl), float(ll), b, s) for bl, ll, b, s in zip(mine["began_line"], mine["ref"].map(_line), began, last,
                                                                strict=True)
            if pd.notna(bl) and ll is not None and pd.notna(b) and pd.notna(s) and ll > bl]


def _not_before(rel: pd.Series, lines: pd.Series, bars: list[tuple[float, float, float, float]]) -> pd.Series:
    """Each row's seconds raised to where the bars beside training say its line came: after a
    bar's last state, no earlier than it; inside a bar's run (an evaluation's results, printed
    before its bar is closed), where its redrawn lines would be, its seconds spread over them
    evenly (a bar redraws at its own steady pace). A row with no seconds of its own keeps none."""
    if not bars:
        return rel
    at = lines.to_numpy(dtype=float, na_value=np.nan)
    floor = np.full(len(at), np.nan)
    for began, last, b, s in bars:
        inside = np.where((at > began) & (at <= last), b + (s - b) * (at - began) / (last - began), np.nan)
        after = np.where(at > last, s, np.nan)
        floor = np.fmax(floor, np.fmax(inside, after))
    own = rel.to_numpy(dtype=float, na_value=np.nan)
    # to the microsecond: the frames' unit (a spread second is no finer than that)
    return pd.Series(np.where(np.isnan(own), own, np.fmax(own, np.round(floor, 6))), index=rel.index)


def _lines(df: pd.DataFrame, rows: pd.Series) -> pd.Series:
    """The line numbers of `rows` of `df` (float, NaN where unknown): the line its `ref` names,
    else its `line` column."""
    out = pd.Series(float("nan"), index=df.index[rows], dtype=float)
    if "ref" in df.columns:
        tail = df.loc[rows, "ref"].astype("string").str.rsplit(":", n=1).str[-1]
        out = pd.to_numeric(tail, errors="coerce").astype(float)
    if "line" in df.columns:
        out = out.fillna(pd.to_numeric(df.loc[rows, "line"], errors="coerce").astype(float))
    return out


def _line(ref) -> int | None:
    tail = str(ref).rsplit(":", 1)[-1] if isinstance(ref, str) else ""
    return int(tail) if tail.isdigit() else None


def _bar_clock(metrics: pd.DataFrame, source: str) -> _Clock:
    el = metrics[(metrics["source"] == source) & (metrics["metric"] == BAR_ELAPSED_S)] if len(metrics) else metrics
    if el.empty:
        return _Clock([], [], [])
    lines = el["ref"].map(_line)
    el = el.assign(_line=lines).dropna(subset=["_line"]).sort_values("_line", kind="stable")
    total, base, last, gap_line = [], 0.0, 0.0, None
    for v, line in zip(el["value"].astype(float), el["_line"].astype(int), strict=True):
        if v < last:  # a new bar: its count starts where the last one stopped
            base += last
            gap_line = line if gap_line is None else gap_line
        last = v
        total.append(base + v)
    steps = [None if pd.isna(s) else int(s) for s in el["step"]]
    return _Clock(el["_line"].astype(int).tolist(), steps, total, gap_line, el.index.tolist())


# A GPU below IDLE_PCT is idle, at or above BUSY_PCT busy (nvidia-smi's utilization.gpu: the
# share of the last sample period a kernel ran; model/gpu_state.py judges by the same busy line);
# a start that takes longer than BUSY_WITHIN after its launch to make a GPU busy is not told apart
# from other work.
IDLE_PCT, BUSY_PCT = 10.0, 50.0
BUSY_WITHIN = pd.Timedelta(minutes=30)


def _gpu_busy(gpus: pd.DataFrame, launched, until=None) -> tuple[pd.Timestamp | None, str]:
    """The last idle sample before a GPU that was idle at the launch went busy, before `until`
    (the next launch): the earliest the trainer's steps can have begun, and the latest is the
    first busy sample (a ramp between them, 17 % then 38 % as the trainer's first kernels run, is
    its start-up)."""
    g = gpus.dropna(subset=["time", "util_gpu_pct"]) if len(gpus) else gpus
    if g.empty:
        return None, ""
    best = None
    for key, s in g.groupby([g["host"].fillna(""), g["gpu"].fillna(-1)], sort=False):
        s = s.sort_values("time", kind="stable")
        end = launched + BUSY_WITHIN if until is None or pd.isna(until) else min(launched + BUSY_WITHIN, until)
        # (a sample within a second or two of the launch shows what ran before it: a process
        # starts its interpreter and its CUDA context before any kernel of its own)
        after = s[(s["time"] >= launched + LAUNCH_SLACK) & (s["time"] <= end)]
        busy = np.flatnonzero(after["util_gpu_pct"].to_numpy(dtype=float) >= BUSY_PCT)
        if not len(busy) or busy[0] == 0:
            continue  # busy at its first sample after the launch: other work, or no idle sample to bound it
        before = after.iloc[: busy[0]]
        idle = before[before["util_gpu_pct"] < IDLE_PCT]
        if before["util_gpu_pct"].iloc[0] >= IDLE_PCT or idle.empty:
            continue  # at work at the launch: not idle
        last_idle, first_busy = idle.iloc[-1], after.iloc[busy[0]]
        if best is None or last_idle["time"] < best[0]:
            best = (last_idle["time"], first_busy["time"], key[1])
    if best is None:
        return None, ""
    gpu = f"GPU {int(best[2])}" if best[2] != -1 else "its GPU"
    return best[0], (f"where {gpu}, idle at the launch, went busy: idle at {best[0]:%H:%M:%S}, busy at "
                     f"{best[1]:%H:%M:%S}")


def _bar_start(metrics: pd.DataFrame, source: str, clock: _Clock, launched) -> tuple[pd.Timestamp | None, str]:
    """When the log's bar began, from another source that logged the same steps with a clock:
    the earliest such start at or after the launch (a restart logs the same steps again later)."""
    if not clock.steps or metrics.empty:
        return None, ""
    timed = metrics[(metrics["source"] != source) & metrics["time"].notna() & metrics["step"].notna()]
    timed = timed[timed["step"].isin(list(clock.steps))]
    span = max(clock.steps.values()) - min(clock.steps.values())
    found = []
    for other, g in timed.groupby("source", sort=True):
        first = g.groupby("step")["time"].min()
        if len(first) < MIN_COMMON:
            continue
        offsets = np.array([(t - pd.Timestamp(0, tz="UTC")).total_seconds() - clock.steps[int(s)]
                            for s, t in first.items()])
        if offsets.max() - offsets.min() > max(AGREE_S, 0.1 * span):
            continue
        start = pd.Timestamp(0, tz="UTC") + pd.Timedelta(seconds=float(np.median(offsets)))
        if launched is not None and start < launched - LAUNCH_SLACK:
            continue  # the steps of an earlier run of the same script
        found.append((start, other, len(first)))
    if not found:
        return None, ""
    start, other, n = min(found, key=lambda f: (f[0], -f[2])) if launched is not None else max(found, key=lambda f: f[2])
    return start.floor("ms"), f"where its steps agree with {n} steps of {other}"
