"""Failed restarts: a launch after which training never came up, and why.

A launch is judged on four pieces of evidence, each independent of the others: a new process
running the launched script, its log filling, GPU memory held (by the new PID where per-process
samples exist), and a first training step within a grace window. A python process that already
existed before the launch is *stale*, never evidence that training runs; it is reported as such.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from ..commands import ends_session, is_detached, session_launcher
from ..incident import Incident
from ..model import computed as memo
from ..model.attempts import attempts
from ..model.log_files import NEVER_CREATED, NOT_IN_INCIDENT, log_files
from ..model.states import states
from ..said import error_text
from ..units import clock, clock_within
from . import findings, gpu_state
from .launches import is_trainer, outcomes, verdicts
from .per_host import judged

GRACE_S = 600.0
# A background job started inside one of these exits with it unless it is detached (setsid/disown).
_NO_FILE = "No such file or directory"
_PYTHON = re.compile(r"\bpython[\d.]*\b")


@dataclass(frozen=True)
class _Window:
    """From a launch to the next one (or the grace period). A transcript dated only by `date`
    gives many lines one time: at the window's end, lines of the launch's own transcript count
    by their order, up to the next launch's line."""

    start: pd.Timestamp
    end: pd.Timestamp
    stop_ref: str | None = None
    inc: Incident | None = None  # for the time index shared within one detect() call

    def of(self, df: pd.DataFrame, col: str = "time") -> pd.DataFrame:
        if self.inc is None:
            inside = df[(df[col] >= self.start) & (df[col] < self.end)]
        else:
            inside = memo.between(self.inc, df, col, self.start, self.end)
        stop = findings.ref_line(self.stop_ref) if self.stop_ref else None
        if stop is not None and "ref" in df.columns:
            at_end = (df[df[col] == self.end] if self.inc is None
                      else memo.between(self.inc, df, col, self.end, self.end, inclusive=True))
            lines = at_end["ref"].map(lambda r: findings.ref_line(r) if isinstance(r, str) else None)
            before = lines.map(lambda x: x is not None and x[0] == stop[0] and x[1] < stop[1]).astype(bool)
            if before.any():
                inside = df.loc[sorted(set(inside.index) | set(before[before].index))]
        return inside

    def later(self, start) -> _Window:
        return _Window(start, self.end, self.stop_ref, self.inc)


def _window(inc: Incident, oc: pd.DataFrame, i: int, grace: pd.Timedelta) -> _Window:
    start = oc["time"].iloc[i]
    end = start + grace
    # what the launch's own transcript says of it begins when it was typed, which a transcript
    # dated only by its `date`s may place before the start the model settled on
    launched = oc["launched"].iloc[i] if "launched" in oc.columns else pd.NaT
    if pd.notna(launched) and launched < start:
        start = launched
    stop_ref = None
    if i + 1 < len(oc) and oc["time"].iloc[i + 1] <= end:
        end = oc["time"].iloc[i + 1]
        stop_ref = oc["ref"].iloc[i + 1] if isinstance(oc["ref"].iloc[i + 1], str) else None
    return _Window(start, end, stop_ref, inc)


def _between(df: pd.DataFrame, start, end, col: str = "time") -> pd.DataFrame:
    return df[(df[col] >= start) & (df[col] < end)]


def _output_refs(inc: Incident, ev: pd.Series) -> list[str]:
    """The output lines of the transcript command an event came from (they follow its prompt)."""
    ref = ev.get("ref")
    if not isinstance(ref, str):
        return []
    out = ev.get("output") if isinstance(ev.get("output"), str) else None
    if out is None and "output" in inc.events.columns:
        same = memo.rows_where(inc, "events", "ref", ref)
        same = same[same["output"].notna()]
        out = same["output"].iloc[0] if len(same) else None
    if not isinstance(out, str) or not out:
        return []
    return [r for r in (findings.shifted(ref, k) for k in range(1, len(out.splitlines()) + 1)) if r]


def _gpu_check(inc: Incident, w: _Window, pid) -> tuple[bool | None, str, list[str]]:
    """Did GPU memory appear after the launch? (None: no GPU source says.)"""
    queries = w.of(inc.events)
    queries = queries[queries["kind"] == "gpu_query"]
    refs = []
    for _, q in queries.iterrows():
        refs += ([q["ref"]] if isinstance(q.get("ref"), str) else []) + _output_refs(inc, q)
    gp = w.of(inc.gpu_processes)
    if pid is not None and len(gp):
        mine = gp[gp["pid"] == pid]
        if len(mine):
            return True, f"{len(mine)} GPU samples held by PID {pid}", findings.refs(mine, 3)
        # Not held by the new PID: the operator's own GPU checks say what the GPUs held instead,
        # and the per-process samples who held them.
        others = sorted(int(p) for p in gp["pid"].dropna().unique())
        held = (" (memory held only by PID(s) " + ", ".join(map(str, others)) + ")") if others else ""
        return False, f"0 GPU samples held by PID {pid}{held}", refs + findings.refs(gp, 3)
    if len(gp):
        # Per-process samples: memory held only by PIDs that were there before is not the launch's.
        first = memo.first_seen_on_gpus(inc)
        new = gp[gp["pid"].map(first) >= w.start]
        if new.empty:
            old = sorted(int(p) for p in gp["pid"].dropna().unique())
            return False, ("no new PID on the GPUs (memory held only by PID(s) "
                           + ", ".join(map(str, old)) + ", there before the launch)"), refs + findings.refs(gp, 3)
    g = w.of(inc.gpus)
    if g.empty:
        return None, "no GPU samples after the launch", []
    peak = g["memory_used_mib"].max()
    held = gpu_state.started(peak)
    text = f"GPU memory rose to {peak:.0f} MiB" if held else f"all {g['gpu'].nunique()} GPUs at {peak:.0f} MiB"
    return held, text, refs + findings.refs(g, 8)


def _count_checks(inc: Incident, w: _Window) -> list[pd.Series]:
    ev = w.of(inc.events)
    return [r for _, r in ev[ev["kind"] == "process_count"].iterrows()]


def _alive(procs: pd.DataFrame, when) -> pd.DataFrame:
    first = procs["first_seen"].fillna(procs["started"])
    last = procs["last_seen"].fillna(first)
    return procs[(first <= when) & (last >= when)]


@dataclass
class _Verdict:
    """Why a launch failed: a short reason, the explanation, its evidence lines, and the causes
    (events) it rests on, as cause-graph links."""

    reason: str
    why: str
    refs: list[str]
    causes: list[dict] = field(default_factory=list)


def _event_cause(r: pd.Series, why: str) -> dict:
    ref = r["ref"] if isinstance(r.get("ref"), str) else None
    return findings.cause(findings.event_id(ref) if ref else f"event:{r['kind']}@{r['time']}", why, [ref] if ref else [])


def _own_ends(L: pd.Series, inc: Incident, w: _Window) -> pd.DataFrame:
    """`killed` / `exit` / `oom_kill` events of this launch: tied to its command line, to its job's
    PID, or (OOM) to its process."""
    ev = w.of(inc.events)
    ends = ev[ev["kind"].isin(("killed", "exit", "oom_kill", "segfault"))]
    if ends.empty:
        return ends
    mine = pd.Series(False, index=ends.index)
    if "command_ref" in ends.columns and isinstance(L.get("ref"), str):
        mine |= ends["command_ref"] == L["ref"]
    pids = {int(p) for p in (L.get("pid"), (L["process"]["pid"] if isinstance(L.get("process"), pd.Series) else None))
            if p is not None and not pd.isna(p)}
    if pids:
        mine |= ends["pid"].isin(pids).fillna(False).astype(bool)
    return ends[mine.fillna(False).astype(bool)]


def _ended(L: pd.Series, inc: Incident, w: _Window) -> _Verdict | None:
    """Killed by its `timeout` wrapper, by the OOM killer, or exited: what the shell said."""
    ends = _own_ends(L, inc, w)
    if ends.empty:
        return None
    refs = findings.refs(ends)
    oom = ends[ends["kind"] == "oom_kill"]
    if len(oom):
        r = oom.iloc[0]
        return _Verdict("killed by the OOM killer", f"killed by the kernel's OOM killer: `{str(r['message']).strip()}`",
                        refs, [_event_cause(r, "the kernel killed the process for memory")])
    code = ends["exit_code"].dropna() if "exit_code" in ends.columns else pd.Series(dtype=float)
    killed = ends[ends["kind"] == "killed"]
    said = "; ".join(f"`{str(m).strip()}`" for m in ends["message"].head(3))
    limit = L.get("timeout_s")
    if limit is not None and not pd.isna(limit):
        sig = L.get("timeout_signal") or "SIGTERM"
        launch = [findings.cause(findings.event_id(L["ref"]), f"the launch ran under `timeout`, {limit:g} s then {sig}",
                                 [L["ref"]])] if isinstance(L.get("ref"), str) else []
        return _Verdict(
            "killed by its timeout wrapper",
            f"killed by its timeout wrapper: the launch ran under `timeout` with {limit:g} s and {sig} "
            f"({said}), so the trainer was killed before it could start",
            refs, launch + [_event_cause(r, "the shell reported how it ended") for _, r in ends.iterrows()])
    if len(killed) or (len(code) and int(code.iloc[0]) >= 128):
        sig = killed["signal"].dropna().iloc[0] if len(killed) and "signal" in killed.columns and killed["signal"].notna().any() else None
        return _Verdict("killed", f"killed{f' by {sig}' if sig else ''} during start-up ({said})", refs,
                        [_event_cause(r, "the shell reported how it ended") for _, r in ends.iterrows()])
    if len(code) and int(code.iloc[0]) != 0:
        return _Verdict("exited", f"exited with status {int(code.iloc[0])} during start-up ({said})", refs,
                        [_event_cause(r, "the shell reported its exit status") for _, r in ends.iterrows()])
    return None


def _missing_evidence(L: pd.Series, inc: Incident, w: _Window) -> str:
    """What would have told why, and is not in the incident."""
    missing = []
    if not len(w.of(inc.processes, "first_seen")) and inc.processes.empty:
        missing.append("no process listing (ps) covers the launch")
    if inc.gpu_processes.empty:
        missing.append("no per-process GPU samples")
    log = log_files(inc).get(L.get("attempt"))
    # (a log a check found missing never existed: nothing is missing from the folder)
    if not isinstance(L.get("log"), pd.Series) and (log is None or (log.file is None and log.state != NEVER_CREATED)):
        missing.append(f"its log ({L.get('log_path') or 'no redirect'}) is not in the incident")
    sources = memo.cached(inc, "event sources", ("events",), lambda: tuple(inc.events["source"].dropna().unique()))
    if not isinstance(L.get("ref"), str) or not str(L["ref"]).startswith(sources):
        missing.append("no transcript of the launch")
    elif _own_ends(L, inc, w).empty:
        missing.append("no exit status or kill message in the transcript")
    return "; ".join(missing) or "every usual source is here and none says why"


def _killed_in_startup(L: pd.Series, inc: Incident) -> _Verdict | None:
    """A kill the attempt model found aimed at the attempt (a PID, a PID file, a pattern or the
    process group it ran in) before its first step."""
    att = attempts(inc)
    a = att[att["attempt"] == L.get("attempt")]
    if a.empty or a.iloc[0]["end_kind"] != "kill_sent":
        return None
    a = a.iloc[0]
    refs = [a["end_ref"]] if isinstance(a["end_ref"], str) else []
    return _Verdict("killed", f"killed during start-up by a kill aimed at it: {a['end_message'] or 'a kill'} "
                    f"({clock(a['end'])})", refs,
                    [findings.cause(findings.event_id(refs[0]), "the kill reached the process", refs)] if refs else [])


def _reason(L: pd.Series, inc: Incident, w: _Window, said: pd.DataFrame) -> _Verdict:
    """Why the launch failed, as far as the evidence goes. `said`: the launcher's verdict lines
    for this launch (empty unless it went through `launch`)."""
    launcher = _launcher_said(L, inc, said)
    if launcher is not None:
        return _Verdict(*launcher)
    ev = w.of(inc.events)
    path = L.get("log_path") if isinstance(L.get("log_path"), str) else None
    # A redirect the shell could not open is reported right after the launch, on its own output.
    soon = ev[ev["time"] <= w.start + pd.Timedelta(seconds=10)]
    said = soon["message"].fillna("").astype(str)
    if "output" in soon.columns:
        said = said + "\n" + soon["output"].fillna("").astype(str)
    failed = soon[(soon["kind"] == "redirect_failed")
                  | (said.str.contains(re.escape(path) + ": " + _NO_FILE) if path else False)]
    if path and len(failed):
        r = failed.iloc[0]
        refs = [r["ref"]] if isinstance(r.get("ref"), str) else []
        if r["kind"] != "redirect_failed":
            refs += _output_refs(inc, r)
        return _Verdict("redirect target missing",
                        f"log path does not exist, process never started: the shell could not open {path} "
                        f"for the redirect, so the command after it never ran", refs,
                        [findings.cause(findings.event_id(refs[0]), f"the shell could not open {path}", refs)] if refs else [])
    proc = L.get("process")
    oom = _startup_traceback(L, ev, kind="oom")
    if len(oom):
        r = oom.iloc[0]
        who = f"process {proc['pid']}" if isinstance(proc, pd.Series) else "the launched process"
        holders = str(r["holders"]) if isinstance(r.get("holders"), str) and r["holders"] else None
        held = f"; the memory was held by PID {holders.replace(', ', ', PID ')}" if holders else ""
        asked = (f" ({r['requested_mib']:,.0f} MiB asked, {r['free_mib']:,.0f} MiB free)"
                 if pd.notna(r.get("requested_mib")) and pd.notna(r.get("free_mib")) else "")
        # the error's own words where its numbers could not be read
        said = "" if asked else f" (`{str(r['message']).strip().splitlines()[0][:100]}`)"
        return _Verdict("out of memory in start-up",
                        f"out of memory in start-up: {who} ran out of GPU memory{asked}{held}{said}",
                        findings.refs(oom, 1), [_event_cause(r, f"CUDA out of memory{held.replace(';', ':')}")])
    tb = _startup_traceback(L, ev)
    if len(tb):
        last = error_text(tb["message"].iloc[0], "traceback")
        who = f"process {proc['pid']}" if isinstance(proc, pd.Series) else "the launched process"
        return _Verdict("died in start-up", f"died during start-up: {who} started and wrote a traceback "
                        f"ending `{last}`", findings.refs(tb, 3), [_event_cause(tb.iloc[0], f"traceback ending `{last}`")])
    ended = _ended(L, inc, w) or _killed_in_startup(L, inc)
    if ended is not None:
        return ended
    killed = _session_kill(L, inc, w)
    if killed is not None:
        return _Verdict(*killed)
    how = session_launcher(str(L["command"]))
    if how and not is_detached(str(L["command"])):
        return _Verdict("launching session killed",
                        f"the process was started in the background inside `{how}` without setsid or "
                        f"disown and did not survive the end of that session; process never started",
                        [L["ref"]] if isinstance(L.get("ref"), str) else [])
    # The title takes the why up to its first colon: the list of what is missing goes after it.
    return _Verdict("unknown", "no evidence says why the process did not start: the evidence that would "
                    "tell is missing (" + _missing_evidence(L, inc, w) + ")", [])


# What `dflash-postmortem launch` says in its first failed check -> the reason it names.
_LAUNCHER_REASONS = (
    ("start", "does not exist", "log folder missing"),
    ("start", "cannot open log", "log not writable"),
    ("start", "cannot run", "command could not run"),
    ("alive", "exited with status", "died in start-up"),
)


def _launcher_checks(said: pd.DataFrame) -> dict[str, tuple[bool, str]]:
    """check -> (ok, detail) from `dflash-postmortem launch`'s verdict lines for one launch."""
    if said.empty:
        return {}
    return {str(r["check"]): (bool(r["ok"]), str(r.get("detail") or r["message"]))
            for _, r in said.iterrows() if r["check"] != "verdict"}


def _launcher_said(L: pd.Series, inc: Incident, said: pd.DataFrame) -> tuple[str, str, list[str]] | None:
    """A start through `dflash-postmortem launch`: its first FAIL line is the reason, with the log
    tail it quoted (the traceback of a trainer that died is there even when its log is lost)."""
    if said.empty:
        return None
    bad = said[(said["check"] != "verdict") & (said["ok"] == False)]  # noqa: E712 (nullable booleans)
    if bad.empty:
        return None
    first = bad.iloc[0]
    check, detail = str(first["check"]), str(first.get("detail") or "")
    reason = next((r for c, text, r in _LAUNCHER_REASONS if c == check and text in detail),
                  f"launcher check '{check}' failed")
    quoted = [ln.removeprefix("| ").strip() for ln in str(first["message"]).splitlines()[1:]]
    n = int(first["lines"]) if pd.notna(first.get("lines")) else 1
    refs = [first["ref"], *(r for r in (findings.shifted(first["ref"], k) for k in range(1, n)) if r)]
    # The trainer's own log, when it is in the folder, holds the same traceback at its source.
    refs += findings.refs(_startup_traceback(L, _between(inc.events, L["time"], first["time"] + pd.Timedelta(seconds=5))), 3)
    return (reason, f"{reason}: dflash-postmortem launch reported `{check}` FAIL "
            f"({detail.removesuffix('; last log lines:')})"
            + (f"; the log tail it quoted ends `{quoted[-1]}`" if quoted else ""), refs)


def _startup_traceback(L: pd.Series, ev: pd.DataFrame, kind: str = "traceback") -> pd.DataFrame:
    """Tracebacks (or out-of-memory lines) after the launch: in its own log when that log is
    known, else in any source while the launched process is the one being watched (a process
    listing says it ran)."""
    tb = ev[ev["kind"] == kind]
    log = L.get("log")
    if isinstance(log, pd.Series):
        return tb[tb["source"] == log["source"]]
    return tb if isinstance(L.get("process"), pd.Series) else tb.iloc[:0]


def _session_kill(L: pd.Series, inc: Incident, w: _Window) -> tuple[str, str, list[str]] | None:
    """A background job of the operator's shell (no setsid/disown) whose session or process group
    the operator then killed, after which the process vanished before its first step."""
    proc = L.get("process")
    if not isinstance(proc, pd.Series) or is_detached(str(L["command"])):
        return None
    ev = w.of(inc.events)
    kills = ev[(ev["kind"] == "command") & ev["message"].fillna("").map(ends_session).astype(bool)]
    kills = kills[kills["time"] >= proc["first_seen"] - pd.Timedelta(seconds=5)]
    if kills.empty:
        return None
    k = kills.iloc[0]
    refs = [k["ref"]] if isinstance(k.get("ref"), str) else []
    log = L.get("log")
    said = ""
    if isinstance(log, pd.Series):
        lines = memo.rows_where(inc, "events", "source", log["source"])
        last = lines.sort_values("time", kind="stable").tail(1)
        n = len(set(findings.refs(lines)) | set(findings.refs(memo.rows_where(inc, "metrics", "source", log["source"]))))
        said = (f"; its log {log['name']} stopped at {clock(log['last'])} after {n} line(s)"
                + (f" (`{str(last['message'].iloc[0]).strip()}`)" if len(last) else ""))
        refs += findings.refs(last)
    return ("launching session killed",
            f"launching session killed / process died during start-up: PID {proc['pid']} was started in "
            f"the background without setsid or disown, inside the shell session that the operator then "
            f"killed (`{k['message']}` at {clock(k['time'])}); it was last listed running at "
            f"{clock(proc['last_seen'])}, before any training step{said}", refs)


def _verified(L: pd.Series, said: pd.DataFrame, proc, first) -> dict:
    """A launch through `dflash-postmortem launch` that came up: its verdict lines are the proof."""
    checks = {str(c): bool(ok) for c, ok in zip(said["check"], said["ok"], strict=True)}
    text = "; ".join(str(m).removeprefix("launch: ").strip() for m in said["message"])
    return findings.finding(
        "verified_start", L["time"], first["time"], "info",
        f"restart at {_when(L)} verified by dflash-postmortem launch",
        f"The launcher checked the start itself: {text}. First training step logged at "
        f"{clock(first['time'])}" + (f" by PID {proc['pid']}" if proc is not None else "") + ".",
        ([L["ref"]] if isinstance(L.get("ref"), str) else []) + findings.refs(said),
        {"checks": checks, "run": L["run"], "log_path": L["log_path"],
         "pid": None if proc is None else int(proc["pid"])}, within_s=L.get("within_s"))


def _when(L: pd.Series) -> str:
    """The start's time as its source gives it (`05:23:01 (up to 2 s later)` where it is rough)."""
    return clock_within(L["time"], L.get("within_s"))


def _gone(inc: Incident, proc: pd.Series, end) -> bool:
    """No longer listed while the listings went on (a capture that ends proves nothing)."""
    if pd.isna(proc["last_seen"]):
        return False
    procs = inc.processes
    listed_until = procs["last_seen"].max()
    if proc["last_seen"] < min(end, listed_until) - pd.Timedelta(seconds=30):
        return True
    # Or: a later listing left it out, and the operator's own count after it said none.
    later = procs["last_seen"][procs["last_seen"] > proc["last_seen"]]
    ev = inc.events
    if "count" not in ev.columns:
        return False  # no operator's count of processes in the evidence
    zero = ev[(ev["kind"] == "process_count") & (ev["time"] > proc["last_seen"]) & (ev["count"] == 0)]
    return bool(len(later) and len(zero))


def _stages(inc: Incident, log) -> pd.DataFrame:
    """The start-up stage lines of a launch's log (`Loading target model ...`), in order."""
    if not isinstance(log, pd.Series):
        return inc.events.iloc[:0]
    ev = inc.events
    return ev[(ev["source"] == log["source"]) & (ev["kind"] == "stage")].sort_values("time", kind="stable")


def _memory_curve(inc: Incident, w: _Window, pid) -> pd.DataFrame:
    """GPU memory over the launch window: by the launched PID where per-process samples have it,
    else the GPUs' total (the curve of a start that loads for minutes)."""
    gp = w.of(inc.gpu_processes)
    if pid is not None and len(gp) and (gp["pid"] == pid).any():
        mine = gp[gp["pid"] == pid]
        return mine.groupby("time", as_index=False).agg(mib=("used_memory_mib", "sum"))
    g = w.of(inc.gpus).dropna(subset=["memory_used_mib"])
    if g.empty:
        return pd.DataFrame(columns=["time", "mib"])
    # One source per curve: the one with the most samples.
    g = g[g["source"] == g["source"].value_counts().index[0]]
    return g.groupby("time", as_index=False).agg(mib=("memory_used_mib", "sum"))


def _never_trained(inc: Incident, L: pd.Series, w: _Window, proc, pid, stages: pd.DataFrame,
                   gone: bool, evidence: list[str]) -> dict:
    """A start that reached a stage line and stopped there: no step, for minutes, until it was
    killed or the evidence ends. Not a stall (that is a run that trained, then stopped)."""
    last = stages.iloc[-1]
    until = proc["last_seen"] if proc is not None and pd.notna(proc["last_seen"]) else w.end
    curve = _memory_curve(inc, _Window(w.start, min(w.end, until + pd.Timedelta(seconds=2)), w.stop_ref, inc), pid)
    curve = curve[curve["mib"] > 0] if len(curve) else curve
    creep = ""
    points = []
    if len(curve) >= 2:
        lo, hi = curve.iloc[0], curve.iloc[-1]
        creep = (f"; GPU memory went from {lo['mib']:,.0f} MiB at {clock(lo['time'])} to {hi['mib']:,.0f} MiB "
                 f"at {clock(hi['time'])}" + (" and was still growing" if hi["mib"] > curve["mib"].iloc[:-1].max() else ""))
        step = max(1, len(curve) // 8)
        points = [(t, float(m)) for t, m in zip(curve["time"].iloc[::step], curve["mib"].iloc[::step], strict=True)]
    how_ended = (f"it was gone by {clock(until)}" if gone else f"still no step at {clock(until)}")
    seconds = (until - last["time"]).total_seconds()
    return findings.finding(
        "never_trained", L["time"], until, "critical",
        f"launch at {_when(L)} never reached training: stuck after `{_stage_text(last)}`",
        f"Run {L['run'] or '?'} wrote its start-up stages up to `{_stage_text(last)}` at {clock(last['time'])} "
        f"and nothing after it for {seconds:,.0f} s{creep}; no training step; {how_ended}.",
        evidence + findings.refs(stages.tail(1)),
        {"run": L["run"], "pid": None if pid is None else int(pid), "last_stage": _stage_text(last),
         "last_stage_time": last["time"], "seconds_in_stage": seconds, "memory_mib": points},
        caused_by=[_event_cause(last, "the last start-up stage it reached")], within_s=L.get("within_s"))


def _stage_text(ev: pd.Series) -> str:
    text = str(ev["message"]).strip().splitlines()[0]
    return re.sub(r"^\d{4}-\d\d-\d\d[ T][\d:.,]+\s*(\[[^\]]*\]\s*)?", "", text)[:120]


# A start stuck in one stage this long without a step never trained (compile and weight loading
# take minutes on big models; the default grace for a first step is 10 minutes).
NEVER_TRAINED_S = 90.0


@judged
def detect_failed_restarts(inc: Incident, grace_s: float | None = None) -> pd.DataFrame:
    """One finding per launch that did not bring training up (failed, never trained, or slow),
    and one per stale process that made it look alive."""
    grace = pd.Timedelta(seconds=grace_s if grace_s is not None else
                         float(inc.config.detect.get("restart_grace_s", GRACE_S)))
    oc = outcomes(inc)
    st = states(inc)
    gave_up = set(st.loc[st["state"] == "never trained", "attempt"])
    rows = []
    for i, L in oc.iterrows():
        w = _window(inc, oc, i, grace)
        proc = L["process"] if isinstance(L["process"], pd.Series) else None
        first = L["first_step"] if isinstance(L["first_step"], pd.Series) else None
        log = L["log"] if isinstance(L["log"], pd.Series) else None
        stepped = first is not None and first["time"] - L["time"] <= grace
        said = verdicts(inc, L.get("ref"))
        if stepped:
            if len(said):
                rows.append(_verified(L, said, proc, first))
            continue
        pid = None if proc is None else proc["pid"]
        gpu_ok, gpu_text, gpu_refs = _gpu_check(inc, w, pid)
        evidence = [L["ref"]] if isinstance(L.get("ref"), str) else []
        checks = {"process": proc is not None, "log": log is not None, "gpu_memory": gpu_ok,
                  "first_step": stepped}
        lines = []
        counts = _count_checks(inc, w)
        own = _launcher_checks(said)
        if proc is None and own.get("start", (False,))[0] and pd.notna(L.get("pid")):
            checks["process"] = True
            pid = int(L["pid"])
            lines.append(f"process {pid} started (the launcher's `start` line)")
        elif proc is None:
            counted = "; ".join(f"{clock(c['time'])}: {c['message']}" for c in counts)
            lines.append("no new process running " + str(L["script"] or "the launched script")
                         + " appeared" + (f" ({counted})" if counted else ""))
            for c in counts:
                evidence += [c["ref"]] if isinstance(c.get("ref"), str) else []
                evidence += _output_refs(inc, c)
        else:
            lines.append(f"process {pid} started")
        if log is None:
            told = log_files(inc).get(L.get("attempt"))
            lines.append(f"no log: {told.said}" if told is not None and told.state != NOT_IN_INCIDENT
                         else f"no log: {L['log_path']} never received a line")
            evidence += list(told.refs) if told is not None else []
        lines.append(gpu_text)
        evidence += gpu_refs
        if not stepped:
            lines.append(f"no training step within {grace.total_seconds():.0f} s")
        gone = proc is not None and _gone(inc, proc, w.end)
        exited = own.get("alive", (True,))[0] is False
        if exited:
            lines.append(str(own["alive"][1]).removesuffix("; last log lines:"))
        elif gone:
            after = [c for c in _count_checks(inc, w.later(proc["last_seen"])) if c.get("count") == 0]
            lines.append("; ".join(f"{clock(c['time'])}: {c['message']}" for c in after) or
                         f"no longer listed after {clock(proc['last_seen'])}")
            evidence += [c["ref"] for c in after if isinstance(c.get("ref"), str)]
        # Whether it gave up is the model's (states: never trained, or still starting when the
        # evidence ends); the checks above and the reason below say what shows it.
        over = L["attempt"] in gave_up
        stages = _stages(inc, log)
        died = len(_startup_traceback(L, w.of(inc.events))) > 0 or _ended(L, inc, w) is not None
        if not (exited or died) and len(stages) and proc is not None:
            stuck_until = proc["last_seen"] if pd.notna(proc["last_seen"]) else w.end
            if (stuck_until - stages["time"].iloc[-1]).total_seconds() >= NEVER_TRAINED_S:
                rows.append(_never_trained(inc, L, w, proc, pid, stages, gone or _stopped(inc, proc, w), evidence))
                continue
        if not over:
            late = f"its first step came {(first['time'] - L['time']).total_seconds():,.0f} s after the launch" \
                if first is not None else "still starting when the evidence ends, with no sign that it failed"
            rows.append(findings.finding(
                "slow_start", L["time"], w.end, "info",
                f"slow start after launch at {_when(L)}",
                "; ".join(lines) + f". Slow, not failed: {late}.",
                evidence, {"checks": checks, "run": L["run"], "pid": None if pid is None else int(pid)},
                within_s=L.get("within_s")))
            continue
        v = _reason(L, inc, w, said)
        stale = _stale(inc, L, w, counts)
        # a stale process named as the holder of the memory the start could not get caused it
        holders = {int(x) for x in re.findall(r"PID (\d+)", v.why)} if v.reason.startswith("out of memory") else set()
        held = [findings.cause(f["id"], f"PID {f['numbers']['pid']} held the GPU memory", f["evidence"][:1])
                for f in stale if f["numbers"]["pid"] in holders]
        word = "restart" if i > 0 else "start"  # the first start of the incident is no restart
        rows.append(findings.finding(
            "failed_restart", L["time"], min(w.end, L["ended"]) if pd.notna(L.get("ended")) else w.end, "critical",
            f"{word} at {_when(L)} never came up: {v.why.split(':')[0]}",
            v.why + ". Checks: " + "; ".join(lines) + ".",
            v.refs + evidence,
            {"reason": v.reason, "checks": checks, "run": L["run"], "log_path": L["log_path"],
             "launcher": session_launcher(str(L["command"])), "pid": None if pid is None else int(pid)},
            caused_by=v.causes + held, within_s=L.get("within_s")))
        rows += stale
    return findings.frame(rows)


def _stopped(inc: Incident, proc: pd.Series, w: _Window) -> bool:
    """Its last listing came before the listings ended: something stopped it."""
    listed = inc.processes["last_seen"].max()
    return bool(pd.notna(proc["last_seen"]) and proc["last_seen"] < listed - pd.Timedelta(seconds=2))


def _relevant(inc: Incident, procs: pd.DataFrame, L: pd.Series, when, patterns: list[str]) -> pd.DataFrame:
    """Of the python processes alive across a launch, those that could pass for the trainer: the
    launched script, what the operator's count matched, or a GPU holder. Helper processes (compile
    workers, data loaders) are their parent's business, not a stale trainer."""
    cmd = procs["command"].fillna("")
    keep = pd.Series(False, index=procs.index)
    if patterns:
        keep |= cmd.map(lambda c: any(pt in c for pt in patterns)).astype(bool)
    script = L.get("script")
    if isinstance(script, str) and script:
        keep |= cmd.map(lambda c: is_trainer(c, script)).astype(bool)
    near = memo.between(inc, inc.gpu_processes, "time", when - pd.Timedelta(minutes=2),
                        when + pd.Timedelta(minutes=2), inclusive=True)
    keep |= procs["pid"].isin(near["pid"].dropna().unique()).fillna(False).astype(bool)
    return procs[keep]


def _stale(inc: Incident, L: pd.Series, w: _Window, counts: list[pd.Series]) -> list[dict]:
    """Python processes alive across a failed launch that predate it: not the launched trainer."""
    procs = inc.processes
    if procs.empty:
        return []
    start = w.start
    when = counts[0]["time"] if counts else start
    alive = _alive(procs, when)
    if alive.empty:
        alive = _alive(procs, start)
    started = alive["started"].fillna(alive["first_seen"])
    old = alive[(started < start.floor("min")) & alive["command"].fillna("").str.contains(_PYTHON)
                & ~alive["pid"].isin(L.get("job_pids") or [])]
    # Where the operator counted processes, the stale ones that matter are those the count matched.
    patterns = [str(c["pattern"]) for c in counts if isinstance(c.get("pattern"), str) and c["pattern"] != "?"]
    old = _relevant(inc, old, L, when, patterns)
    out = []
    for _, p in old.iterrows():
        count_text = ""
        refs = findings.refs(procs[procs["pid"] == p["pid"]].iloc[:1])
        for c in counts:
            count_text = f"; the process count at {clock(c['time'])} counted it"
            refs += [c["ref"]] if isinstance(c.get("ref"), str) else []
            refs += _output_refs(inc, c)
        p_start = p["started"] if pd.notna(p["started"]) else p["first_seen"]
        out.append(findings.finding(
            "stale_process", p_start, p["last_seen"], "warning",
            f"stale python process {p['pid']} predates the launch at {clock(L['time'])}",
            f"PID {p['pid']} (`{p['command']}`) was started {p_start:%H:%M} and seen from "
            f"{clock(p['first_seen'])} to {clock(p['last_seen'])}: it predates the launch and is "
            f"not the launched trainer, so its existence does not mean training is running{count_text}.",
            refs, {"pid": int(p["pid"]), "command": str(p["command"]), "launch": L["time"]}))
    return out
