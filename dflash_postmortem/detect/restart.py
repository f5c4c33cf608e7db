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

from ..incident import Incident
from ..model import computed as memo
from ..model import gpu_state
from ..model.attempts import attempts, kill_reach, supervisor_gave_up
from ..model.kills import aimed_at
from ..model.launches import is_trainer, outcomes, verdicts
from ..model.log_files import NEVER_CREATED, NOT_IN_INCIDENT, log_files, unseen
from ..model.states import REPORTED_ENDS, finished_its_work, states
from ..said import error_text
from ..schema import ref_line
from ..shell_words import AGENT_RUN, is_detached, session_launcher
from ..units import clock
from . import findings
from .per_host import judged

GRACE_S = 600.0
# A python interpreter in a listed command: a process that could pass for the trainer.
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
        stop = ref_line(self.stop_ref) if self.stop_ref else None
        if stop is not None and "ref" in df.columns:
            at_end = (df[df[col] == self.end] if self.inc is None
                      else memo.between(self.inc, df, col, self.end, self.end, inclusive=True))
            lines = at_end["ref"].map(lambda r: ref_line(r) if isinstance(r, str) else None)
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
    n = g["gpu"].nunique()
    text = (f"GPU memory rose to {peak:.0f} MiB" if held
            else f"the GPU at {peak:.0f} MiB" if n == 1 else f"all {n} GPUs at {peak:.0f} MiB")
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


# What went wrong first, as a reader says it of a start: "process 714 started and wrote a
# traceback ending `...`" (the model's `cause_kind` -> the words before the error's own).
# A start's store or rendezvous could not bind its port: another process holds it.
_IN_USE = re.compile(r"EADDRINUSE|[Aa]ddress already in use")
# the port as c10d names it: `port: 29500, useIpv6: false, code: -98` (torch 2.3+), `failed to bind
# to [::]:29500 (errno: 98 - Address already in use)` (1.11-2.2); torch before 1.11 names none
_PORT_SAID = re.compile(r"\bport[\s:=]+(\d{2,5})\b|\bbind to \S*:(\d{2,5})\b", re.I)
_PORT_FLAG = re.compile(r"(?:--master[-_]port|--main[-_]process[-_]port|\bMASTER_PORT)[=\s]+(\d{2,5})\b"
                        r"|--rdzv[-_]endpoint[=\s]+\S*:(\d{2,5})\b")
# torchrun's, torch.distributed.launch's, DeepSpeed's and accelerate's port where none is given
_DEFAULT_PORT = 29500
_DIED = {"traceback": "wrote a traceback ending", "exception": "raised", "thread_crash": "lost a thread to",
         "timeout": "timed out:", "nccl_timeout": "timed out in a collective:", "nccl_error": "hit an NCCL error:",
         "gpu_error": "hit a GPU error:", "xid": "hit a GPU error:", "gpu_lost": "lost its GPU:"}
# A shell's words for a redirect target whose folder is not there (bash, zsh; dash).
_MISSING = re.compile(r"no such file or directory|directory nonexistent", re.IGNORECASE)
# Ends that a process, its shell or its launcher report (a status, a signal); a kill the operator
# sent is its own story.
_REPORTED = REPORTED_ENDS


def _attempt(inc: Incident, L: pd.Series) -> pd.Series | None:
    """The model's row of the launch's attempt."""
    att = attempts(inc)
    a = att[att["attempt"] == L.get("attempt")]
    return a.iloc[0] if len(a) else None


def _line(inc: Incident, ref, kind: str) -> pd.Series | None:
    """The event of this kind that a model column cites (one line may hold several events)."""
    if not isinstance(ref, str):
        return None
    rows = memo.rows_where(inc, "events", "ref", ref)
    rows = rows[rows["kind"] == kind]
    return rows.iloc[0] if len(rows) else None


def _told(L: pd.Series, inc: Incident, a: pd.Series) -> _Verdict | None:
    """Why the attempt ended before its first step, from how the model says it ended (`end_kind`,
    `exit_code`, `signal`) and what went wrong first (`cause_kind`, `cause_message`), with the
    lines that show them. None where the model read no end."""
    end, cause = a["end_kind"], a["cause_kind"]
    end_ref = a["end_ref"] if isinstance(a["end_ref"], str) else None
    refs = [end_ref] if end_ref else []
    proc = L.get("process")
    who = f"process {proc['pid']}" if isinstance(proc, pd.Series) else "the launched process"
    if end == "redirect_failed":
        r = _line(inc, end_ref, end)
        refs = [L["ref"], *refs] if isinstance(L.get("ref"), str) else refs  # the launch, then what the shell said
        path = r["path"] if r is not None and isinstance(r.get("path"), str) else L.get("log_path")
        # the shell's own words (its line ends the message): a folder that is not there, or a
        # file it may not write
        missing = _MISSING.search(str(a["end_message"] or "")) is not None
        return _Verdict("redirect target missing" if missing else "log not writable",
                        ("log path does not exist" if missing else "log path not writable") + ", process never "
                        f"started: the shell could not open {path} for the redirect, so the command after it never ran",
                        refs,
                        [findings.cause(findings.event_id(end_ref), f"the shell could not open {path}", refs)] if end_ref else [])
    oom = _line(inc, end_ref, "oom") if end == "oom" else _line(inc, a["cause_ref"], "oom") if cause == "oom" else None
    if oom is not None:
        return _out_of_memory(oom, who)
    if cause in _DIED:
        ref = a["cause_ref"]
        said = f"{_DIED[cause]} `{a['cause_message'] or a['end_message']}`"
        if a["cause_rank"] is not None and not pd.isna(a["cause_rank"]):
            who = f"rank {int(a['cause_rank'])}"  # a launcher's worker, whose lines name their rank
        held, holder = _port_holder(inc, a)
        return _Verdict("died in start-up", f"died during start-up: {who} started and {said}{held}",
                        [ref, *(r for r in refs if r != ref), *holder],
                        ([findings.cause(findings.event_id(ref), said, [ref])] if isinstance(ref, str) else [])
                        + [findings.cause(findings.event_id(r), "an earlier start still running held the port", [r])
                           for r in holder])
    # what ran it may say one end twice (the shell's `Killed`, then `exit=137` from the operator's `echo`)
    told = _reported(inc, a)
    refs += [r for r in findings.refs(told) if r not in refs]
    # (a report over several lines, a launcher's failure table entry, is told by what it says)
    quoted = (error_text(m, k) if len(str(m).strip().splitlines()) > 1 else str(m).strip()
            for m, k in zip(told["message"].head(3), told["kind"].head(3), strict=True))
    shown = "; ".join(f"`{t}`" for t in dict.fromkeys(quoted)) or f"`{a['end_message']}`"  # (each said once)
    reported = [findings.cause(findings.event_id(r), "what ran it (a shell, launcher or supervisor) reported how it ended", [r]) for r in refs]
    if end == "oom_kill":
        return _Verdict("killed by the OOM killer", f"killed by the kernel's OOM killer: {shown}", refs,
                        [findings.cause(findings.event_id(end_ref), "the kernel killed the process for memory", refs)]
                        if refs else [])
    limit = L.get("timeout_s")
    if end in _REPORTED and limit is not None and not pd.isna(limit):
        sig = L.get("timeout_signal") or "SIGTERM"
        launch = [findings.cause(findings.event_id(L["ref"]), f"the launch ran under `timeout`, {limit:g} s then {sig}",
                                 [L["ref"]])] if isinstance(L.get("ref"), str) else []
        return _Verdict("killed by its timeout wrapper",
                        f"killed by its timeout wrapper: the launch ran under `timeout` with {limit:g} s and {sig} "
                        f"({shown}), so the trainer was killed before it could start", refs, launch + reported)
    if end == "kill_sent":
        return _kill_sent(L, inc, a, refs)
    code = int(a["exit_code"]) if pd.notna(a["exit_code"]) else None
    if end in _REPORTED and (pd.notna(a["signal"]) or end == "killed" or (code or 0) >= 128):
        sig = f" by {a['signal']}" if pd.notna(a["signal"]) else ""
        return _Verdict("killed", f"killed{sig} during start-up ({shown})", refs, reported)
    if end == "interrupt":
        # the trainer's own word that an interrupt stopped it (Ctrl-C at its terminal, a SIGINT)
        return _Verdict("interrupted", f"stopped by an interrupt before its first step ({shown})", refs,
                        [findings.cause(findings.event_id(end_ref), "an interrupt (Ctrl-C, SIGINT) stopped it", refs)]
                        if end_ref else [])
    if code:
        return _Verdict("exited", f"exited with status {code} during start-up ({shown})", refs, reported)
    if isinstance(end, str):
        return _Verdict("ended", f"ended before its first step: {shown}", refs, reported)
    return None


def _port_holder(inc: Incident, a: pd.Series) -> tuple[str, list[str]]:
    """Where a start died because its port was taken (`EADDRINUSE`, `Address already in use`:
    `port_in_use`): the other starts alive then that were given the same port (`--master-port`,
    `--main_process_port`, `MASTER_PORT=`, `--rdzv-endpoint host:port`; a launcher's 29500 where
    none is given): (what to add to the story, the lines of their launches)."""
    port = port_in_use(f"{a['cause_message']} {a['end_message']}", str(a["command"] or ""))
    if port is None:
        return "", []
    att = attempts(inc)
    gone = pd.concat([att["end"], att["last_alive"]], axis=1).max(axis=1)
    alive = att[(att["attempt"] != a["attempt"]) & (att["start"] <= a["start"]) & ~(gone < a["start"])]
    holders = alive[alive["command"].map(lambda c: _port_of(str(c or "")) == port)]
    if holders.empty:
        return "", []
    told = ", ".join(f"the start at {clock(h['start'])} UTC" + (f" (PID {min(h['pids'])})" if h["pids"] else "")
                     for _, h in holders.iterrows())
    refs = [r for r in holders["start_ref"] if isinstance(r, str)]
    return f"; port {port} was held by {told}, still running", refs


def port_in_use(said: str, command: str) -> int | None:
    """The port a start could not bind where its error says so: the one the error names, else
    the one its launch gave (`RuntimeError: Address already in use` names none)."""
    if not _IN_USE.search(said):
        return None
    m = _PORT_SAID.search(said)
    return int(m.group(1) or m.group(2)) if m else _port_of(command)


def _port_of(command: str) -> int | None:
    """The port a launch gives its rendezvous or store, else a launcher's default."""
    m = _PORT_FLAG.search(command)
    if m:
        return int(m.group(1) or m.group(2))
    return _DEFAULT_PORT if AGENT_RUN.search(command) else None


def _reported(inc: Incident, a: pd.Series) -> pd.DataFrame:
    """The lines that report the attempt's end: its end line, and the other status lines of the
    command that launched it."""
    lines = memo.rows_where(inc, "events", "ref", a["end_ref"]) if isinstance(a["end_ref"], str) else inc.events.iloc[:0]
    if isinstance(a["launch_ref"], str) and "command_ref" in inc.events.columns:
        lines = pd.concat([lines, memo.rows_where(inc, "events", "command_ref", a["launch_ref"])])
    lines = lines[lines["kind"].isin(_REPORTED)]
    return lines[~lines.index.duplicated()].sort_values("time", kind="stable")


def _out_of_memory(r: pd.Series, who: str) -> _Verdict:
    """CUDA out of memory in start-up: what was asked and free, and who held the rest, where the
    error says."""
    holders = str(r["holders"]) if isinstance(r.get("holders"), str) and r["holders"] else None
    held = f"; the memory was held by PID {holders.replace(', ', ', PID ')}" if holders else ""
    asked = (f" ({r['requested_mib']:,.0f} MiB asked, {r['free_mib']:,.0f} MiB free)"
             if pd.notna(r.get("requested_mib")) and pd.notna(r.get("free_mib")) else "")
    # the error's own words where its numbers could not be read
    said = "" if asked else f" (`{str(r['message']).strip().splitlines()[0][:100]}`)"
    return _Verdict("out of memory in start-up", f"out of memory in start-up: {who} ran out of GPU memory{asked}{held}{said}",
                    [r["ref"]] if isinstance(r.get("ref"), str) else [],
                    [_event_cause(r, f"CUDA out of memory{held.replace(';', ':')}")])


def _kill_sent(L: pd.Series, inc: Incident, a: pd.Series, refs: list[str]) -> _Verdict:
    """A kill ended the start: aimed at it (its PID, a PID file, a pattern, its listed group), or
    at the shell session it was started in without setsid or disown (the model's inference where
    no listing gives the group's members)."""
    kill = _line(inc, refs[0] if refs else None, "kill_sent")
    # a runtime's or scheduler's own kill (docker's `kill` event) was aimed at its container or
    # job; only a kill the operator typed can have reached a start through its shell session
    typed = (_line(inc, kill.get("command_ref"), "command")
             if kill is not None and not isinstance(kill.get("by"), str) else None)
    # aimed at it: by PID, PID file, pattern or listed group, or at the tmux or screen session it
    # was started in, or by a pattern its command matched where no listing resolved it (the
    # model resolves those); a group the model only infers from a launch not detached from its
    # shell is the launching session's, told below
    # every kill its line sent counts: one line may hold several (`pkill -f a ; pkill -f b`)
    sent = memo.rows_where(inc, "events", "ref", refs[0]) if kill is not None else inc.events.iloc[:0]
    sent = sent[sent["kind"] == "kill_sent"]
    aimed = {p for _, k in sent.iterrows() for p in aimed_at(inc, k) | (
        kill_reach(inc).get(k.name, set()) if _resolved_by_model(k) else set())}
    if kill is None or aimed & set(a["pids"]) or typed is None:
        # the same kill ended other starts too (a pattern meant for the run before it): said
        att = attempts(inc)
        also = att[(att["end_ref"] == a["end_ref"]) & (att["attempt"] != a["attempt"]) & (att["end_kind"] == "kill_sent")]
        too = "; the same kill ended " + ", ".join(_start_told(o) for _, o in also.iterrows()) if len(also) else ""
        return _Verdict("killed", f"killed during start-up by a kill aimed at it: {a['end_message'] or 'a kill'} "
                        f"({clock(a['end'])}){too}", refs,
                        [findings.cause(findings.event_id(refs[0]), "the kill reached the process", refs)] if refs else [])
    pids = ", ".join(map(str, a["pids"]))
    proc = L.get("process")
    last = (f"it was last listed running at {clock(proc['last_seen'])}"
            if isinstance(proc, pd.Series) and pd.notna(proc["last_seen"]) else f"its last sign of life was at {clock(a['last_alive'])}")
    stopped, log_refs = _log_stopped(inc, L)
    return _Verdict("launching session killed",
                    f"launching session killed / process died during start-up: PID {pids} was started in the "
                    f"background without setsid or disown, inside the shell session that the operator then "
                    f"killed (`{typed['message']}` at {clock(typed['time'])}); {last}, before any training step{stopped}", refs + log_refs,
                    [findings.cause(findings.event_id(refs[0]), "the kill reached the session it ran in", refs)] if refs else [])


def _resolved_by_model(kill: pd.Series) -> bool:
    """A kill whose reach the attempt model resolves beyond its own target: a tmux or screen
    session's, or a pattern's matched against the starts' commands."""
    return any(isinstance(kill.get(c), str) and kill.get(c) for c in ("target_session", "target_pattern"))


def _start_told(a: pd.Series) -> str:
    """Another start, as a failed start's verdict names it: when, its PIDs, whether it trained."""
    held = f" (PID {', '.join(map(str, a['pids']))})" if a["pids"] else ""
    return f"the start at {clock(a['start'])}{held}" + (", which was training" if pd.notna(a["first_step"]) else "")


def _log_stopped(inc: Incident, L: pd.Series) -> tuple[str, list[str]]:
    """Where the launch's log stopped, and its last line (with that line's reference)."""
    log = L.get("log")
    if not isinstance(log, pd.Series):
        return "", []
    lines = memo.rows_where(inc, "events", "source", log["source"])
    last = lines.sort_values("time", kind="stable").tail(1)
    n = len(set(findings.refs(lines)) | set(findings.refs(memo.rows_where(inc, "metrics", "source", log["source"]))))
    return (f"; its log {log['name']} stopped at {clock(log['last'])} after {n} line(s)"
            + (f" (`{str(last['message'].iloc[0]).strip()}`)" if len(last) else "")), findings.refs(last)


def _missing_evidence(L: pd.Series, inc: Incident, w: _Window, a: pd.Series | None) -> str:
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
    elif a is None or not isinstance(a["end_kind"], str):
        missing.append("no exit status or kill message in the transcript")
    return "; ".join(missing) or "every usual source is here and none says why"


def _reason(L: pd.Series, inc: Incident, w: _Window, said: pd.DataFrame, a: pd.Series | None) -> _Verdict:
    """Why the launch failed, as far as the evidence goes: the launcher's own verdict where it
    checked the start (`said`: its lines for this launch, empty unless it went through `launch`),
    else how the attempt model says it ended (`a`, its row), else what the launch line itself
    implies."""
    launcher = _launcher_said(L, said, a)
    if launcher is not None:
        return _Verdict(*launcher)
    told = _told(L, inc, a) if a is not None else None
    if told is not None:
        return told
    how = session_launcher(str(L["command"]))
    if how and not is_detached(str(L["command"])):
        return _Verdict("launching session killed",
                        f"the process was started in the background inside `{how}` without setsid or "
                        f"disown and did not survive the end of that session; process never started",
                        [L["ref"]] if isinstance(L.get("ref"), str) else [])
    # The title takes the why up to its first colon: the list of what is missing goes after it.
    return _Verdict("unknown", "no evidence says why the process did not start: the evidence that would "
                    "tell is missing (" + _missing_evidence(L, inc, w, a) + ")", [])


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


def _launcher_said(L: pd.Series, said: pd.DataFrame, a: pd.Series | None) -> tuple[str, str, list[str]] | None:
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
    # The trainer's own log, when it is in the folder, holds the error at its source.
    if a is not None and isinstance(a["cause_ref"], str):
        refs.append(a["cause_ref"])
    return (reason, f"{reason}: dflash-postmortem launch reported `{check}` FAIL "
            f"({detail.removesuffix('; last log lines:')})"
            + (f"; the log tail it quoted ends `{quoted[-1]}`" if quoted else ""), refs)


def _verified(L: pd.Series, said: pd.DataFrame, proc, first) -> dict:
    """A launch through `dflash-postmortem launch` that came up: its verdict lines are the proof."""
    checks = {str(c): bool(ok) for c, ok in zip(said["check"], said["ok"], strict=True)}
    text = "; ".join(str(m).removeprefix("launch: ").strip() for m in said["message"])
    return findings.finding(
        "verified_start", L["time"], first["time"], "info",
        ([L["ref"]] if isinstance(L.get("ref"), str) else []) + findings.refs(said),
        {"checks": checks, "run": L["run"], "attempt": L["attempt"], "log_path": L["log_path"], "launcher_said": text,
         "pid": None if proc is None else int(proc["pid"])}, within_s=L.get("within_s"))


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


def _never_trained(inc: Incident, L: pd.Series, w: _Window, pid, stuck: pd.Series, gone: bool,
                   evidence: list[str]) -> dict:
    """A start the model found stalled in start-up (`stuck`, its state row: its last stage line,
    then nothing for longer than the stall threshold), until it was killed or the evidence ends.
    Not a stall finding (that is a run that trained, then stopped)."""
    last = _line(inc, stuck["ref"], "stage")
    until = stuck["end"]
    curve = _memory_curve(inc, _Window(w.start, min(w.end, until + pd.Timedelta(seconds=2)), w.stop_ref, inc), pid)
    curve = curve[curve["mib"] > 0] if len(curve) else curve
    ends: dict = {"memory_from": None, "memory_to": None, "memory_growing": False}
    points = []
    if len(curve) >= 2:
        lo, hi = curve.iloc[0], curve.iloc[-1]
        ends = {"memory_from": (lo["time"], float(lo["mib"])), "memory_to": (hi["time"], float(hi["mib"])),
                "memory_growing": bool(hi["mib"] > curve["mib"].iloc[:-1].max())}
        step = max(1, len(curve) // 8)
        points = [(t, float(m)) for t, m in zip(curve["time"].iloc[::step], curve["mib"].iloc[::step], strict=True)]
    return findings.finding(
        "never_trained", L["time"], until, "critical", evidence + [stuck["ref"]],
        {"run": L["run"], "attempt": L["attempt"], "pid": None if pid is None else int(pid), "last_stage": _stage_text(last),
         "last_stage_time": last["time"], "seconds_in_stage": (until - last["time"]).total_seconds(),
         "memory_mib": points, "gone": gone, **ends},
        caused_by=[_event_cause(last, "the last start-up stage it reached")], within_s=L.get("within_s"))


def _only_listed(inc: Incident, L: pd.Series, proc, log, grace: pd.Timedelta) -> bool:
    """A start that only a scheduler's or orchestrator's listing shows (squeue, scontrol show
    job, kubectl get or describe: no process, no output of the trainer's own), in evidence that
    ends before the start could be called slow: the listing says the job was running, nothing
    says how its start went."""
    end = inc.span()[1]
    if inc.live or proc is not None or end is None or pd.isna(L["time"]) or end - L["time"] >= grace:
        return False
    a = _attempt(inc, L)
    if a is None or a["by"] not in LISTED_BY or isinstance(a["launch_ref"], str):
        return False
    formats = {f.path: f.format for f in inc.load_report.files} if inc.load_report else {}
    return log is None or formats.get(log.get("source")) != TRAINER_OUTPUT


def _stage_text(ev: pd.Series) -> str:
    text = str(ev["message"]).strip().splitlines()[0]
    return re.sub(r"^\d{4}-\d\d-\d\d[ T][\d:.,]+\s*(\[[^\]]*\]\s*)?", "", text)[:120]


# The load report's format of a trainer's own output (its log, a job's output file)
TRAINER_OUTPUT = "training-log"
# Who starts the attempts a listing shows (model/attempts.py ROLES): a scheduler, an orchestrator
LISTED_BY = ("scheduler", "container")


@judged
def detect_failed_restarts(inc: Incident, grace_s: float | None = None) -> pd.DataFrame:
    """One finding per launch that did not bring training up (failed, never trained, or slow),
    and one per stale process that made it look alive."""
    grace = pd.Timedelta(seconds=grace_s if grace_s is not None else
                         float(inc.config.detect.get("restart_grace_s", GRACE_S)))
    oc = outcomes(inc)
    st = states(inc)
    gave_up = set(st.loc[st["state"] == "never trained", "attempt"])
    # (an attempt with no first step has no other stalled stretch than its start-up's)
    begun = set(attempts(inc).dropna(subset=["first_step"])["attempt"])
    stalled_in_start_up = {r["attempt"]: r for _, r in st[(st["state"] == "stalled") & ~st["attempt"].isin(begun)].iterrows()}
    evidence_end = inc.span()[1]
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
        a = _attempt(inc, L)
        if a is not None and finished_its_work(inc, a):
            continue  # (no step line, yet it stopped cleanly with results of its own: states.py)
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
                         else f"no log: {L['log_path']} never received a line" if isinstance(L["log_path"], str)
                         else "no log of its own")
            evidence += list(told.refs) if told is not None else []
        lines.append(gpu_text)
        evidence += gpu_refs
        if not stepped:
            lines.append(f"no training step within {grace.total_seconds():.0f} s")
        # Whether it gave up is the model's (states: never trained, or still starting when the
        # evidence ends); the checks and the reason below say what shows it.
        over = L["attempt"] in gave_up
        gone = over and proc is not None and _stopped(inc, proc)
        exited = own.get("alive", (True,))[0] is False
        if exited:
            lines.append(str(own["alive"][1]).removesuffix("; last log lines:"))
        elif gone:
            after = [c for c in _count_checks(inc, w.later(proc["last_seen"])) if c.get("count") == 0]
            lines.append("; ".join(f"{clock(c['time'])}: {c['message']}" for c in after) or
                         f"no longer listed after {clock(proc['last_seen'])}")
            evidence += [c["ref"] for c in after if isinstance(c.get("ref"), str)]
        # stalled in start-up (model/states: its last stage line, then nothing for longer than
        # the stall threshold while it lived on or until it was killed); one whose wait ended in
        # its own error is a failed start, told by that error
        stuck = stalled_in_start_up.get(L["attempt"])
        if stuck is not None and not exited:
            ended = over or (a is not None and pd.notna(a["end"]))
            if inc.live and not ended:
                # a folder still being written: a start quiet past the stall threshold with
                # nothing that ended it is still starting (start-up goes quiet for minutes while
                # weights load or code compiles); the watch says "not starting" when its start
                # budget runs out
                continue
            rows.append(_never_trained(inc, L, w, pid, stuck, ended, evidence))
            continue
        if not over:
            if first is None and (_only_listed(inc, L, proc, log, grace) or (a is not None and unseen(inc, a))):
                continue  # (its log is not in the incident, and its GPU worked or nothing covers it: model/log_files.py)
            if first is None and proc is None and L.get("by") != "operator" and not _watched_past(evidence_end, L["time"], grace):
                # (a start only a log's lines show, no launch typed and no process, in evidence that
                # ends, or has no clock, before a first step was due: nothing slow yet)
                continue
            rows.append(findings.finding(
                "slow_start", L["time"], w.end, "info", evidence,
                {"checks": checks, "run": L["run"], "attempt": L["attempt"], "pid": None if pid is None else int(pid),
                 "checks_seen": lines,
                 "first_step_after_s": (first["time"] - L["time"]).total_seconds() if first is not None else None},
                within_s=L.get("within_s")))
            continue
        v = _reason(L, inc, w, said, a)
        stale = _stale(inc, L, w, counts)
        # a stale process named as the holder of the memory the start could not get caused it
        holders = {int(x) for x in re.findall(r"PID (\d+)", v.why)} if v.reason.startswith("out of memory") else set()
        held = [findings.cause(f["id"], f"PID {f['numbers']['pid']} held the GPU memory", f["evidence"][:1])
                for f in stale if f["numbers"]["pid"] in holders]
        quit = supervisor_gave_up(inc, a) if a is not None else None
        rows.append(findings.finding(
            "failed_restart", L["time"], _failed_until(L, w), "critical",
            v.refs + evidence + ([quit["ref"]] if quit else []),
            {"reason": v.reason, "why": v.why, "checks_seen": lines, "first_start": i == 0,
             "checks": checks, "run": L["run"], "attempt": L["attempt"], "log_path": L["log_path"],
             "launcher": session_launcher(str(L["command"])), "pid": None if pid is None else int(pid),
             "gave_up": quit["said"] if quit else None, "gave_up_at": quit["time"] if quit else None},
            caused_by=v.causes + held, within_s=L.get("within_s")))
        rows += stale
    return findings.frame(rows)


def _watched_past(evidence_end, when, grace: pd.Timedelta) -> bool:
    """Whether the evidence (ending at `evidence_end`) goes on `grace` past `when`: long enough to
    see a first step come."""
    return pd.notna(when) and evidence_end is not None and pd.notna(evidence_end) and evidence_end - when >= grace


def _failed_until(L: pd.Series, w: _Window):
    """The failed start's period: to its end where it lasted, else (a redirect the shell could not
    open ends it the instant it began) to the next launch or the grace, the time it was the start
    the job waited on."""
    ended = L.get("ended")
    return min(w.end, ended) if pd.notna(ended) and ended > L["time"] else w.end


def _stopped(inc: Incident, proc: pd.Series) -> bool:
    """Its last listing came before the listings ended: it was no longer there."""
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
        refs = findings.refs(procs[procs["pid"] == p["pid"]].iloc[:1])
        for c in counts:
            refs += [c["ref"]] if isinstance(c.get("ref"), str) else []
            refs += _output_refs(inc, c)
        p_start = p["started"] if pd.notna(p["started"]) else p["first_seen"]
        out.append(findings.finding(
            "stale_process", p_start, p["last_seen"], "warning", refs,
            {"pid": int(p["pid"]), "command": str(p["command"]), "launch": L["time"], "first_seen": p["first_seen"],
             "counted_at": counts[-1]["time"] if counts else None}))
    return out
