"""Operator terminal sessions -> `events`: each command, each launch with its log path and
trainer arguments, and what the outputs say about processes (kills that failed, jobs killed by a
signal, exit statuses, the kernel's OOM killer, nohup, missing files, process counts); the `ps`,
`top` and `pgrep` listings inside the session -> `processes`; nvidia-smi answers -> `gpus` /
`gpu_processes`.

Sessions come in every form an operator leaves (shell_words.py lists the prompts):
the kit's stamped transcripts (`[2026-11-30T05:23:01.707Z] $ command`), terminal pastes,
`script` recordings (escape sequences, CR/LF, backspaces), tmux capture-pane output, `set -x`
traces. A prompt has no time: a command is dated by the nearest clock before it (`date` output in
any locale, `script`'s header, an nvidia-smi table's date line), marked `time_approx`, and the load
report says so. The reader reads the session and nothing beside it: whether a launch's log was
ever written, and which process ran it, are the attempt model's questions (model/attempts.py).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...incident import Incident, from_frames
from ...shell_words import (
    Launch,
    command_name,
    echoed_command,
    exit_meaning,
    kill_targets,
    match_prompt,
    parse_launches,
    shell_words,
)
from .. import registry
from ..clock_text import parse_wall_clock
from ..ps_snapshots import lifetimes
from ..registry import LoadContext
from ..terminal import match_script_mark, read_lines, screen_lines
from . import process_control, runtime_outputs
from .command_output import (
    ECHO_STATUS,
    Events,
    Jobs,
    fact_events,
    gpu_rows,
    gpu_summary,
    launch_pids_to_outcomes,
    listing_rows,
    output_events,
    status_answer,
)
from .disk_usage import disk_full_events
from .session import Command, Session, pid_or_none, split_session, unquoted
from .session_clock import Clock, date_commands

__all__ = ["Clock", "Command", "Session", "load_shell_transcript", "load_transcript", "session_incident",
           "sniff_transcript"]


FORMAT = "shell-transcript"
# Commands whose answer only a session makes sense of (a lone `nvidia-smi` or `ps` paste is
# that format's capture, read by its own loader).
_SESSION_COMMANDS = {"kill", "pkill", "killall", "date", "jobs", "fg", "bg", "wait", "timeout", "nohup", "dmesg", "journalctl"}
_SHELL_REPORTS = {"kill_failed", "killed", "job_started", "nohup", "nohup_failed", "job_stopped", "timeout_kill"}


_INT_COLUMNS = ("count", "exit_code", "size_bytes", "pid", "target_pid", "shell_job", "xid", "uid", "oom_score_adj", "order", "score",
                "attempt", "restart_count")
_BOOL_COLUMNS = ("time_approx", "target_is_group", "core_dumped", "cgroup")


def sniff_transcript(path: Path, head: bytes) -> float:
    lines = [s for s in map(unquoted, screen_lines(head)) if s.strip()]
    if not lines:
        return 0.0
    if match_script_mark(lines[0]) is not None:
        return 0.95
    prompts = [p for p in map(match_prompt, lines) if p is not None and p.command]
    stamped = sum(1 for p in prompts if p.stamp)
    if stamped >= 2:
        return 0.95  # a stamped session, whatever its commands printed (an nvidia-smi table fills most of it)
    if stamped:
        return 0.9
    typed = [p for p in prompts if not p.trace_depth]
    facts = [f for f in map(process_control.read_line, lines) if f is not None]
    kills = any(kill_targets(p.command) for p in typed)
    if len(typed) >= 2 and (kills or any(f["kind"] in ("kill_failed", "killed", "oom_kill", "nohup") for f in facts)):
        return 0.92  # a session about processes, even when an nvidia-smi table fills most of it
    if len({p.command for p in typed}) >= 2 and len(typed) / len(lines) >= 0.05:
        return 0.75
    if len(typed) >= 3:
        return 0.7
    if typed and (facts or kills or any(command_name(shell_words(p.command)) in _SESSION_COMMANDS for p in typed)):
        return 0.5  # one prompt: a trainer's output pasted with its command stays a training log
    reports = [f for f in facts if f["kind"] in _SHELL_REPORTS and (f.get("pid") or f.get("job") or f["kind"] != "killed")]
    if not typed and reports and len(reports) / len(lines) >= 0.3:
        return 0.45  # the shell's own reports pasted without their prompt (`run.sh: line 1: 7364 Killed ...`)
    traces = len(prompts) - len(typed)
    if traces >= 3 and traces / len(lines) >= 0.2:
        return 0.6
    return 0.0


@registry.format(
    FORMAT, sniff=sniff_transcript,
    doc="operator terminal sessions: stamped transcripts, prompts of any shell, script recordings, set -x traces",
)
def load_transcript(path: Path, ctx: LoadContext, fmt: str = FORMAT, loose: str = "text outside any command") -> Incident:
    """A session (or, as format `fmt`, text read like one); `loose` is the skip reason of a line
    outside any command that states no process fact."""
    path = Path(path)
    rep = ctx.report(path, fmt)
    lines = read_lines(path, fmt)
    rep.read = len(lines)
    ses = split_session(lines, rep)
    date_commands(ses, ctx, rep)
    return session_incident(ses, ctx, rep, loose)


def session_incident(ses: Session, ctx: LoadContext, rep, loose: str = "text outside any command") -> Incident:
    """What a session's commands (dated) and their output say, as frames: the one reading of a
    transcript, a `script` log, a paste and a shell's history alike."""
    ev = Events()
    jobs = Jobs()
    gpu_parts: dict[str, list] = {"gpus": [], "gpu_processes": []}
    log_parts: dict[str, list] = {"metrics": [], "events": []}  # containers' own logs (kubectl/docker logs)
    procs: list[dict] = []
    launches: list[tuple[int, Launch, object, str]] = []

    def ref_of(n: int) -> str:
        return f"{rep.path}:{n}"

    # Lines outside any command: kernel lines and shell reports pasted on their own.
    held = fact_events(ev, ses.loose, None, ref_of, jobs, ctx, rep, set())
    for n, _ in ses.loose:
        if n in held:
            rep.parsed += 1
        else:
            rep.skip(n, loose)
    for n, mark in ses.marks:
        if not mark.started and mark.exit_code is not None:
            sig, meaning = exit_meaning(mark.exit_code)
            wall = parse_wall_clock(mark.when)
            t = Clock(ctx, rep).utc(wall) if wall is not None else pd.NaT
            ev.add(t, "exit", f"script: command exited with {mark.exit_code}", ref_of(n), exit_code=mark.exit_code,
                   signal=sig, meaning=meaning, time_approx=False, job_command=mark.command)

    prev: Command | None = None
    for c in ses.commands:
        t = c.time
        cref = ref_of(c.line)
        # what a recipe runner (`make train`) printed it runs is the command it launched
        echoed = echoed_command(c.text, [s for _, s in c.output])
        started = parse_launches(c.text) or (parse_launches(echoed) if echoed else [])
        launch = started[0] if started else None
        ev.add(t, "command", c.text, cref, output="\n".join(s for _, s in c.output), time_approx=c.approx,
               time_within_s=c.within_s, echoed=echoed,
               traced=c.prompt.trace_depth if c.prompt is not None and c.prompt.trace_depth else None)
        for one in started:
            how = one.launcher if one.launcher.endswith(" launch") else f"{one.launcher} launch"
            ev.add(t, "launch", f"{how} of {one.program or 'a trainer'}"
                   + (f" > {one.log_path}" if one.log_path else ""), cref,
                   launcher=one.launcher, log_path=one.log_path, args=one.args, run=one.run,
                   program=one.program, background=one.background, time_approx=c.approx,
                   time_within_s=c.within_s, timeout_s=one.timeout_s, timeout_signal=one.timeout_signal,
                   loop_pass=one.loop_pass)
            launches.append((len(ev.rows) - 1, one, t, cref))
        facts = output_events(ev, c, ref_of, launch, cref)
        answered = status_answer(ev, c, prev, ref_of)
        held = facts["lines"] | answered
        # A file printed (`tail -n 8 logs/run.log`) shows the file's lines: a `Killed` or an exit
        # status among them is what the file says, with the file's times, read as its log
        # (read_log) and superseded by the folder's copy of it; only the shell's reports of its
        # jobs, printed at the prompt, are the session's own.
        printed = runtime_outputs.printed_logs(c) if c.output else []
        lines = c.output if not any("printed_at" in extra for (_, extra, _), _ in printed) else \
            [(n, s) for n, s in c.output if process_control.is_job_report(s)]
        held |= fact_events(ev, lines, c, ref_of, jobs, ctx, rep, held)
        if "pid" in facts:
            c.pid = facts["pid"]
        if len(started) > 1:
            # each pass's job, in the order the shell reported them (`[1] 862`, `[2] 863`)
            pids = [r.get("pid") for r in ev.rows if r["kind"] == "job_started" and r.get("command_ref") == cref]
            for (row, *_), pid in zip(launches[-len(started):], pids, strict=False):
                ev.rows[row]["pid"] = pid
        elif launch is not None and c.pid is not None:
            ev.rows[launches[-1][0]]["pid"] = c.pid
        got = gpu_rows(c, rep, ctx)
        for frame, df in got.items():
            (log_parts if frame == "events" else gpu_parts)[frame].append(df)
        if got.keys() & gpu_parts.keys():
            ev.add(t, "gpu_query", gpu_summary(got), cref, time_approx=c.approx)
        procs += listing_rows(c, ctx, rep)
        ev.rows += runtime_outputs.read_answer(c, ctx, rep, ref_of)
        ev.rows += disk_full_events(c, ref_of)
        for one, output in printed:
            for frame, df in runtime_outputs.read_log(c, one, ctx, rep, ref_of, held, output).items():
                log_parts[frame].append(df)
        if not (c.prompt is not None and c.prompt.trace_depth) and not ECHO_STATUS.match(c.text):
            prev = c
    launch_pids_to_outcomes(ev, launches)
    frames = {"events": _events_frame(ev, rep, ctx)}
    if log_parts["events"]:
        frames["events"] = pd.concat([frames["events"], *log_parts["events"]], ignore_index=True)
    if log_parts["metrics"]:
        frames["metrics"] = pd.concat(log_parts["metrics"], ignore_index=True)
    for name, parts in gpu_parts.items():
        if parts:
            frames[name] = pd.concat(parts, ignore_index=True)
    if procs:
        frames["processes"] = lifetimes(procs, rep.path, ctx, rep)
    return from_frames(rep, **frames)


def _whole(v, col: str) -> int | None:
    """An integer cell: a whole number within int64 (PIDs within pid range), else missing."""
    if v is None or isinstance(v, bool) or (isinstance(v, float) and (v != v or not v.is_integer())):
        return None
    try:
        n = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    if col in ("pid", "target_pid"):
        return pid_or_none(n)
    return n if -(2**63) < n < 2**63 else None


def _events_frame(ev: Events, rep, ctx: LoadContext) -> pd.DataFrame:
    events = pd.DataFrame(ev.rows)
    if events.empty:
        return events
    events["source"] = rep.path
    events["host"] = ctx.host
    events["time"] = pd.Series(pd.to_datetime(events["time"], utc=True, errors="coerce"), dtype="datetime64[us, UTC]")
    # The shell's job number (`[1]`, `%1`) is `shell_job`: `job` in the frames is a launcher's job
    # (schema.py), which the facts of launchers, runtimes and service managers name (they say `by`).
    if "job" in events:
        launcher = events["by"].notna() if "by" in events else pd.Series(False, index=events.index)
        events["shell_job"] = events["job"].where(~launcher)
        events["job"] = events["job"].where(launcher).astype("string")
    for col in _INT_COLUMNS:
        if col in events:
            events[col] = pd.array([_whole(v, col) for v in events[col]], dtype="Int64")
    for col in _BOOL_COLUMNS:
        if col in events:
            events[col] = events[col].astype("boolean")
    return events




def load_shell_transcript(path, *, timezone: str = "UTC", host: str | None = None, root=None, on_bad_line: str = "warn"):
    """Read an operator's terminal session into events (commands, launches, what outputs say),
    processes (ps/top/pgrep answers) and GPU rows (nvidia-smi answers).

    `root` is the incident folder the launch log paths are looked up in (default: none).
    """
    ctx = LoadContext(root=Path(root) if root else None, timezone=timezone, host=host, on_bad_line=on_bad_line)
    return load_transcript(Path(path), ctx)
