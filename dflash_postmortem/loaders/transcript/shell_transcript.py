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

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ...clock import align
from ...errors import SourceFormatError
from ...incident import Incident, from_frames
from ...shell_words import (
    Launch,
    Prompt,
    command_name,
    exit_meaning,
    kill_targets,
    match_prompt,
    parse_launch,
    shell_words,
)
from .. import registry
from ..clock_text import WallClock, month_number, parse_wall_clock
from ..nvidia_smi import load_nvidia_smi
from ..ps_snapshots import lifetimes, read_listing
from ..registry import LoadContext
from ..terminal import match_script_mark, read_lines, screen_text
from . import process_control, runtime_outputs, systemd_units

FORMAT = "shell-transcript"
MAX_PID = 2**31 - 1  # larger numbers are not process ids (Linux pid_max is at most 2**22)

_NO_SUCH = re.compile(r"^(?:(?P<prog>[\w./-]+): )?(?:line \d+: )?(?:(?:cannot access|cannot open) )?'?(?P<path>/?[^\s:']+)'?: No such file or directory")
# What a shell says when it cannot open a redirect's file, as bash, dash and zsh print it:
#   bash: line 1: /w/x.log: No such file or directory    bash: /w/x.log: Permission denied
#   sh: 1: cannot create /w/x.log: Directory nonexistent  zsh:1: no such file or directory: /w/x.log
_CANNOT_OPEN = re.compile(
    r"^(?:[\w./-]+: ?)?(?:(?:line )?\d+: )?(?:cannot create (?P<dash>\S+): [A-Z][\w -]+"
    r"|(?:no such file or directory|permission denied|is a directory|read-only file system): (?P<zsh>\S+)"
    r"|(?P<bash>/?[^\s:']+): (?:No such file or directory|Permission denied|Is a directory|Read-only file system))$")
_SMI_QUERY = re.compile(r"nvidia-smi\b.*--query-(?P<what>gpu|compute-apps)=(?P<fields>[\w.,]+)(?P<rest>.*)")
_LS_LONG = re.compile(r"^[-dl][rwxsStT-]{9}\S*\s+\d+\s+\S+\s+\S+\s+(?P<size>\d+)\s+\w+\s+\d+\s+[\d:]+\s+(?P<path>\S+)")
# `dflash-postmortem launch` prints one verdict line per check: `launch: gpu   ok      4.3s  detail`.
_VERDICT = re.compile(r"^launch: (?P<check>\w+)\s+(?P<state>ok|FAIL)\s+(?P<seconds>[\d.]+)s\s+(?P<detail>.*)$")
_VERDICT_END = re.compile(r"^launch: (?P<state>started|FAILED)\s*$")
_VERDICT_PID = re.compile(r"\bpid (?P<pid>\d+)\b")
_ECHO_STATUS = re.compile(r"^echo\b[^|;&]*\$\{?\?")
_PGREP_ROW = re.compile(r"^(?P<pid>\d{1,10})(?:\s+(?P<cmd>.*))?$")
_EPOCH = re.compile(r"^\d{9,10}(?:\.\d+)?$")
_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)(?:[\w+-]*\s*$|(?P<rest>.+))")
# Commands whose answer only a session makes sense of (a lone `nvidia-smi` or `ps` paste is
# that format's capture, read by its own loader).
_SESSION_COMMANDS = {"kill", "pkill", "killall", "date", "jobs", "fg", "bg", "wait", "timeout", "nohup", "dmesg", "journalctl"}
_SHELL_REPORTS = {"kill_failed", "killed", "job_started", "nohup", "nohup_failed", "job_stopped", "timeout_kill"}


def _pid(v) -> int | None:
    try:
        n = int(v)
    except (TypeError, ValueError):
        return None
    return n if 0 <= n <= MAX_PID else None


@dataclass
class Command:
    line: int
    text: str
    prompt: Prompt | None = None
    time: pd.Timestamp = pd.NaT
    approx: bool = False
    within_s: float | None = None  # approx: the true time lies up to this much later (the next clock)
    pid: int | None = None
    output: list[tuple[int, str]] = field(default_factory=list)  # (line number, screen text)

    @property
    def words(self) -> list[str]:
        return shell_words(self.text)


@dataclass
class Session:
    """A transcript split into what it holds: commands with their output, `script` marks,
    and lines outside any command (before the first, or prose after a closing fence)."""

    commands: list[Command] = field(default_factory=list)
    marks: list[tuple[int, object]] = field(default_factory=list)  # (line, ScriptMark)
    loose: list[tuple[int, str]] = field(default_factory=list)  # lines outside any command


_INLINE_CODE = re.compile(r"^`(?!``)|(?<!``)`$")


def _unquoted(s: str) -> str:
    """A line of a paste wrapped in single backticks (`` `[root@host ~]# pgrep -l fio` ``, or the
    first and last line of a block quoted that way) without them; a backtick inside stays."""
    if s.count("`") % 2 and not s.startswith("`") and not s.endswith("`"):
        return s
    if s.startswith("`") or s.endswith("`"):
        inner = _INLINE_CODE.sub("", s)
        if "`" not in inner:
            return inner
    return s


def split_session(lines: list[str], rep) -> Session:
    """Commands, their output and `script` marks; prompts without a command are skipped."""
    ses = Session()
    current: Command | None = None
    for i, raw in enumerate(lines, 1):
        s = _unquoted(screen_text(raw))
        fence = _FENCE.match(s)
        if fence and not fence["rest"]:
            # A markdown fence opens or closes a paste: what follows a closing one is prose,
            # not the output of the last command.
            rep.skip(i, "markdown fence")
            current = None
            continue
        if fence or s.endswith("```"):
            s = (fence["rest"] if fence else s).removesuffix("```")  # a fence glued to a line
        mark = match_script_mark(s)
        if mark is not None:
            ses.marks.append((i, mark))
            rep.parsed += 1
            current = None
            if mark.started and mark.command:
                current = Command(i, mark.command)
                ses.commands.append(current)
            continue
        p = match_prompt(s)
        if p is not None:
            if p.command:
                current = Command(i, p.command, p)
                ses.commands.append(current)
                rep.parsed += 1
            else:
                rep.skip(i, "prompt without a command")
            continue
        if current is not None:
            current.output.append((i, s))
            rep.parsed += 1
        else:
            ses.loose.append((i, s))
    return ses


# -- the session's clock ----------------------------------------------------------------------
class Clock:
    """The latest time the session stated (UTC) and the zone it was stated in, for reading a
    prompt's time of day."""

    def __init__(self, ctx: LoadContext, rep):
        self.ctx, self.rep = ctx, rep
        self.now = pd.NaT
        self.offset_min: int | None = None
        self.source: str | None = None

    def utc(self, wall: WallClock) -> pd.Timestamp:
        if wall.offset_min is not None:
            return wall.utc()
        self.rep.assume(align.zone_assumption(self.ctx.timezone))
        t = align.localize(pd.Series([wall.naive]), self.ctx.timezone).iloc[0]
        return t

    def set(self, t, offset_min: int | None, source: str) -> None:
        if not pd.isna(t):
            self.now, self.offset_min, self.source = t, offset_min, source

    def at_time_of_day(self, tod: str) -> pd.Timestamp:
        """A prompt's `HH:MM:SS` on the date of the latest clock (the next day when it is earlier)."""
        if pd.isna(self.now):
            return pd.NaT
        if self.offset_min is not None:
            local = self.now.tz_localize(None) + pd.Timedelta(minutes=self.offset_min)
        else:
            local = self.now.tz_convert(self.ctx.timezone).tz_localize(None)
        h, m, s = (int(x) for x in tod.split(":"))
        if h > 23 or m > 59 or s > 59:
            return pd.NaT
        # On the clock's date, or the next day when more than an hour earlier than the clock.
        seconds = h * 3600 + m * 60 + s
        since = (local - local.normalize()).total_seconds()
        day = align.date_times_of_day([since, seconds], [local.date(), None], slack_s=3600)[1]
        cand = pd.Timestamp(day) + pd.Timedelta(seconds=seconds)
        if self.offset_min is not None:
            return (cand - pd.Timedelta(minutes=self.offset_min)).tz_localize("UTC")
        return align.localize(pd.Series([cand]), self.ctx.timezone).iloc[0]


def _stamp_time(stamp: str, clock: Clock) -> pd.Timestamp:
    wall = parse_wall_clock(stamp)
    return clock.utc(wall) if wall is not None else pd.NaT


def _stated_time(c: Command, clock: Clock) -> tuple[pd.Timestamp, int | None] | None:
    """The time a command's own output states: `date` (any locale, `+%s`), or the date line an
    nvidia-smi table starts with. None when it states none."""
    first = next((s.strip() for _, s in c.output if s.strip()), "")
    if not first:
        return None
    name = command_name(c.words) if c.words else ""
    if name == "date":
        if _EPOCH.match(first):
            return pd.Timestamp(float(first), unit="s", tz="UTC"), 0
    elif name not in ("nvidia-smi", "watch"):
        return None
    wall = parse_wall_clock(first)
    if wall is None and name == "date":
        # `date '+DATE: %d-%m-%Y%nTIME: %H:%M:%S%nZONE: %z'`: a custom format over several lines
        wall = parse_wall_clock(" ".join(s.strip() for _, s in c.output[:4]))
    if wall is None:
        return None
    return clock.utc(wall), wall.offset_min


def date_commands(ses: Session, ctx: LoadContext, rep) -> None:
    """Give each command its time: its stamp, the time of day in its prompt, the time its own
    output states (`date`), else the latest clock before it (approximate)."""
    clock = Clock(ctx, rep)
    marks = iter(sorted(ses.marks, key=lambda m: m[0]))
    nxt = next(marks, None)
    approx = 0
    for c in ses.commands:
        while nxt is not None and nxt[0] <= c.line:
            wall = parse_wall_clock(nxt[1].when)
            if wall is not None and nxt[1].started:
                clock.set(clock.utc(wall), wall.offset_min, f"script header (line {nxt[0]})")
            nxt = next(marks, None)
        p = c.prompt
        if p is not None and p.stamp:
            c.time = _stamp_time(p.stamp, clock)
            clock.set(c.time, 0, "stamp")
        elif p is not None and p.time_of_day and not pd.isna(t := clock.at_time_of_day(p.time_of_day)):
            c.time = t
            clock.set(t, clock.offset_min, "prompt")
        elif not pd.isna(clock.now):
            c.time, c.approx = clock.now, True
            approx += 1
        stated = _stated_time(c, clock)
        if stated is not None and not pd.isna(stated[0]):
            c.time, c.approx = stated[0], False
            clock.set(stated[0], stated[1], f"line {c.line}")
    # A command dated by the latest clock before it ran between that clock and the next one
    # the session gives: how much later it may be is the gap to that next clock.
    following = pd.NaT
    for c in reversed(ses.commands):
        if c.approx and not pd.isna(c.time):
            c.within_s = (following - c.time).total_seconds() if not pd.isna(following) else None
        elif not pd.isna(c.time):
            following = c.time
    if approx:
        rep.assume(f"{approx} command(s) carry no time of their own: each is dated by the latest clock "
                   "before it (`date` output, script header, nvidia-smi date line), and may be as late as "
                   "the next clock; time_approx is True, time_within_s the gap to that next clock")
    if ses.commands and all(pd.isna(c.time) for c in ses.commands):
        rep.assume("no clock in the session (no stamp, date output or script header): commands have no time")


# -- what outputs say -------------------------------------------------------------------------
class _Events:
    def __init__(self):
        self.rows: list[dict] = []

    def add(self, time, kind, message, ref, **extra) -> dict:
        row = dict(time=time, kind=kind, message=message, ref=ref, **extra)
        self.rows.append(row)
        return row


def gpu_rows(c: Command, rep, ctx: LoadContext) -> dict[str, pd.DataFrame]:
    """nvidia-smi output inside a transcript (any form: table, query CSV, -L, -q), read by the
    nvidia-smi loader. Returns the frames it gave rows to: a table gives both `gpus` and
    `gpu_processes` (the PIDs that hold memory are the evidence a stale process leaves)."""
    name = command_name(c.words) if c.output else ""
    if name != "nvidia-smi" and not (name == "watch" and "nvidia-smi" in c.text):
        return {}  # `watch nvidia-smi` answers with its header above the table: the loader knows it
    m = _SMI_QUERY.search(c.text)
    fields = m.group("fields").split(",") if m and "noheader" in m.group("rest") else None
    fd, tmp = tempfile.mkstemp(suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(s for _, s in c.output) + "\n")
        sub = load_nvidia_smi(tmp, host=ctx.host, timezone=ctx.timezone, fields=fields, on_bad_line="skip", date=ctx.date)
    except SourceFormatError as e:
        rep.notes.append(f"line {c.line}: nvidia-smi answer not readable: {e.expected}")
        return {}
    except Exception as e:  # noqa: BLE001  (another format's loader: its failure must not lose this file)
        rep.notes.append(f"line {c.line}: nvidia-smi answer not readable ({type(e).__name__}: {e})")
        return {}
    finally:
        os.unlink(tmp)
    got = {}
    for frame in ("gpus", "gpu_processes"):
        df = getattr(sub, frame)
        if len(df):
            df = df.copy()
            if df["time"].isna().all() and not pd.isna(c.time):
                df["time"] = c.time
            df["source"] = rep.path
            if "line" in df:  # a line of the answer written alone -> that line in the transcript
                df["line"] = [c.output[int(k) - 1][0] if k == k and 0 < k <= len(c.output) else None for k in df["line"]]
            got[frame] = df
    return got


def _gpu_summary(got: dict[str, pd.DataFrame]) -> str:
    """The gpu_query event's message: memory and utilisation per GPU, else the process count."""
    if "gpus" not in got:
        return f"{len(got['gpu_processes'])} compute processes"
    df = got["gpus"]
    return "; ".join(
        f"GPU {g}" + (f": {m:.0f} MiB" if m == m else "") + (f", {u:.0f} %" if u == u else "")
        for g, m, u in zip(df.get("gpu", []), df.get("memory_used_mib", []), df.get("util_gpu_pct", [float("nan")] * len(df)), strict=False)
    )


def _listing_rows(c: Command, ctx: LoadContext, rep) -> list[dict]:
    """Processes a `ps`/`top`/`fuser -v`/`lsof`/`pgrep`/`pidof` answer shows, seen at the command's time."""
    name = command_name(c.words) if c.words else ""
    first = c.line + 1
    snap = None if pd.isna(c.time) else c.time
    if not c.output:
        return []  # a command with no answer (a history keeps none) lists nothing
    if name in ("ps", "top", "fuser", "lsof") or (name == "watch" and re.search(r"\bps\b", c.text)):
        # the output lines follow the prompt without a gap: read_listing numbers them from there
        rows, _ = read_listing([s for _, s in c.output], first, snap, ctx, rep, counted=False, command=c.text)
        return rows
    if name in ("pgrep", "pidof"):
        rows = []
        for n, s in c.output:
            words = s.split() if name == "pidof" else [s]
            for w in words:
                m = _PGREP_ROW.match(w.strip())
                if m and _pid(m["pid"]) is not None:
                    rows.append(dict(pid=_pid(m["pid"]), command=(m["cmd"] or "").strip() or None, snap=snap, line=n))
        return rows
    return []


def _kernel_time(fact: dict, c: Command | None, ctx: LoadContext, rep) -> pd.Timestamp:
    """A kernel (or journal) line's own time: dmesg -T / iso stamps; syslog stamps (a month in any
    locale `month_number` reads) take the year of the command that printed them, or of the
    incident's `date`. Seconds since boot, a time of day or no stamp alone give no time; the load
    report says which."""
    stamp = process_control.kernel_stamp(fact.pop("prefix", ""))
    if "uptime_s" in stamp:
        fact["uptime_s"] = stamp["uptime_s"]
    if "wall" in stamp:
        wall = stamp["wall"]
        if wall.offset_min is not None:
            return wall.utc()
        rep.assume(align.zone_assumption(ctx.timezone))
        return align.localize(pd.Series([wall.naive]), ctx.timezone).iloc[0]
    # The year and zone the same text states elsewhere (systemctl status's `since`).
    stated_year, stated_offset = fact.pop("year", None), fact.pop("offset_min", None)
    if "syslog" in stamp:
        year = (c.time.year if c is not None and not pd.isna(c.time) else stated_year or (ctx.date.year if ctx.date else None))
        if year is None:
            rep.assume("syslog stamps carry no year and nothing dates the session: those kernel lines have no time")
            return pd.NaT
        mon, day, tod = stamp["syslog"]
        try:
            naive = pd.Timestamp(f"{year:04d}-{month_number(mon):02d}-{day:02d} {tod}")
        except (ValueError, TypeError):
            return pd.NaT
        rep.assume(f"syslog stamps carry no year: {year} taken from the session")
        if stated_offset is not None:
            rep.assume(f"journal stamps read in the zone the status line states (UTC{stated_offset / 60:+g}h)")
            return (naive - pd.Timedelta(minutes=stated_offset)).tz_localize("UTC")
        rep.assume(align.zone_assumption(ctx.timezone))
        return align.localize(pd.Series([naive]), ctx.timezone).iloc[0]
    if "uptime_s" in stamp:
        rep.assume("kernel lines stamped with seconds since boot only: those events have no time (uptime_s column)")
    elif "time_of_day" in stamp:
        rep.assume("kernel lines stamped with a time of day only (no date): those events have no time")
    else:
        rep.assume("kernel or journal lines without a stamp of their own (bare, cut to `kernel:`, `journalctl -o cat`): "
                   "those events have no time")
    return pd.NaT


class _Jobs:
    """The shell's job table as the session shows it: `[1] 4242` gives job 1 the PID 4242."""

    def __init__(self):
        self.pid_of: dict[int, int] = {}

    def pid(self, job) -> int | None:
        return self.pid_of.get(job) if job is not None else None


def _fact_events(ev: _Events, lines: list[tuple[int, str]], c: Command | None, ref_of, jobs: _Jobs,
                 ctx: LoadContext, rep, skip_lines: set[int]) -> set[int]:
    """Process-control facts in output lines -> events tied to the command (and its PID).
    Returns the line numbers that held a fact."""
    got: set[int] = set()
    targets = kill_targets(c.text) if c is not None else []
    failed: set[tuple] = set()
    pending_oom: dict[int, dict] = {}  # pid -> the `oom-kill:constraint=` event waiting for its Killed line
    gpus: dict[str, dict] = {}  # bus -> the uuid (and board serial) the driver printed for it
    last_gpu: str | None = None
    units = systemd_units.Units(lines)
    for n, s, joined in _kernel_messages(lines):
        if n in skip_lines:
            continue
        if n in units.held:
            got.add(n)  # a status header or a main PID: read for the lines it belongs to
            continue
        ident = process_control.read_gpu_identity(s)
        if ident is not None:
            if "uuid" in ident:
                last_gpu = process_control.bus_key(ident["bus"])
                gpus[last_gpu] = {"uuid": ident["uuid"]}
                got.add(n)
            elif ident["serial"] and last_gpu is not None:
                gpus[last_gpu]["board_serial"] = ident["serial"]
                got.add(n)
            continue
        fact = units.fact(n) or process_control.read_line(s)
        if fact is None:
            continue
        got.add(n)
        got.update(joined)
        kind = fact.pop("kind")
        shell = "by" not in fact  # a launcher's or service manager's fact names its own job
        t = c.time if c is not None else pd.NaT
        approx = bool(c.approx) if c is not None else False
        if "prefix" in fact:
            t, approx = _kernel_time(fact, c, ctx, rep), False
        context = fact.pop("context", False)
        if kind == "xid" and (gpu := gpus.get(process_control.bus_key(fact.get("bus")))):
            fact.update(gpu)  # the GPU the driver named on this bus before the Xid (no index: the bus is not one)
        if kind == "kill_sent":
            # killall -v / pkill -e named the PIDs its pattern matched: they stand for the pattern
            failed.update(_key(k) for k in targets if k.pattern)
            fact.setdefault("signal", next((k.signal for k in targets if k.pattern), None))
        if kind == "job_started":
            jobs.pid_of[fact["job"]] = fact["pid"]
            if c is not None and c.pid is None:
                c.pid = fact["pid"]
        if kind == "kill_failed":
            target = _kill_target_of(fact, targets)
            if target is not None:
                fact.setdefault("signal", target.signal)
                if fact.get("target_pid") is None and target.pid is not None:
                    fact.update(target_pid=target.pid, target_is_group=target.is_group, pid=target.pid)
                if fact.get("target_pattern") is None and target.pattern:
                    fact["target_pattern"] = target.pattern
                if target.expr:
                    fact["target_expr"] = target.expr
                failed.add(_key(target))
            if fact.get("job") is not None and fact.get("pid") is None:
                fact["pid"] = jobs.pid(fact["job"])
        if shell and kind in ("killed", "exit", "job_stopped", "job_running") and fact.get("pid") is None:
            fact["pid"] = jobs.pid(fact.get("job"))
            if fact["pid"] is None and fact.get("job") is None and c is not None and kind == "killed":
                fact["pid"] = c.pid
        if shell and kind in ("killed", "exit") and not fact.get("job_command") and c is not None:
            fact["job_command"] = c.text
        if kind == "oom_kill" and fact.get("pid") in pending_oom and not context:
            earlier = pending_oom.pop(fact["pid"])
            ev.rows.remove(earlier)
            fact.update(constraint=earlier.get("constraint"), memcg=earlier.get("memcg"))
        fact["pid"] = _pid(fact.get("pid"))
        if fact.get("target_pid") is not None:
            fact["target_pid"] = _pid(fact["target_pid"])
        row = ev.add(t, kind, s.strip(), ref_of(n), time_approx=approx,
                     command_ref=ref_of(c.line) if c is not None else None, **fact)
        if kind == "oom_kill" and context:
            pending_oom[fact["pid"]] = row
    if c is not None:
        for k in targets:
            if _key(k) in failed:
                continue
            group = "process group" if k.is_group else "PID"
            what = (f"{group} {k.pid}" if k.pid is not None else f"{group} {k.expr}" if k.expr else
                    f"job %{k.job}" if k.job is not None else
                    f"Slurm job {k.scheduler_job}" if k.scheduler_job else
                    f"every {k.program} session" if k.session == "*" else
                    f"{k.program} session {k.session!r}" if k.session else f"processes matching {k.pattern!r}")
            ev.add(c.time, "kill_sent", f"{k.program} sent {k.signal} to {what}", ref_of(c.line), time_approx=c.approx,
                   command_ref=ref_of(c.line), pid=k.pid if k.pid is not None else jobs.pid(k.job), target_pid=k.pid,
                   target_is_group=k.is_group if k.pid is not None or k.expr else None, target_pattern=k.pattern,
                   target_expr=k.expr, target_session=k.session, target_job=k.scheduler_job, job=k.job,
                   signal=k.signal)
    return got


_CONTINUED = re.compile(r"^\s{4,}NVRM: ")
# An Xid message wrapped onto indented lines with no `NVRM:` and no stamp of their own
# (`          MMU Fault: ENGINE GRAPHICS ...`).
_XID_WRAPPED = re.compile(r"^\s{4,}(?![\[<>]|\d{1,2}:\d{2}|NVRM:)\S")


def _kernel_messages(lines: list[tuple[int, str]]):
    """(line, text, lines joined into it): the NVIDIA driver continues a message on indented
    `NVRM:` lines (`NVRM: The NVIDIA GPU 0000:b3:00.0` / `NVRM: ... fallen off the bus`), and an
    Xid message wrapped onto indented lines without `NVRM:` continues it too; they are read as
    one message at its first line."""
    out: list[tuple[int, str, list[int]]] = []
    for n, s in lines:
        if out and _CONTINUED.match(s) and "NVRM:" in out[-1][1]:
            first, text, joined = out[-1]
            out[-1] = (first, text + " " + s.strip().removeprefix("NVRM: "), [*joined, n])
            continue
        if (out and _XID_WRAPPED.match(s) and "NVRM: Xid" in out[-1][1] and process_control.read_line(s) is None
                and process_control.read_gpu_identity(s) is None):
            first, text, joined = out[-1]
            out[-1] = (first, text.rstrip() + " " + s.strip(), [*joined, n])
            continue
        out.append((n, s, []))
    return out


def _key(k) -> tuple:
    return (k.pid, k.is_group, k.job, k.pattern, k.expr)


def _kill_target_of(fact: dict, targets):
    """The target of the kill command a failure line answers (by PID, job, pattern, the one
    `$(...)` target of the same kind, or the only one)."""
    exprs = [k for k in targets if k.expr and k.is_group == bool(fact.get("target_is_group"))]
    if fact.get("target_pid") is not None and len(exprs) == 1 and not any(k.pid == fact["target_pid"] for k in targets):
        return exprs[0]
    for k in targets:
        if fact.get("target_pid") is not None and k.pid == fact["target_pid"]:
            return k
        if fact.get("job") is not None and k.job == fact["job"]:
            return k
        if fact.get("target_pattern") and k.pattern == fact["target_pattern"]:
            return k
    if fact.get("target_pid") is None and fact.get("job") is None and len(targets) == 1:
        return targets[0]
    return None


def _status_answer(ev: _Events, c: Command, prev: Command | None, ref_of) -> set[int]:
    """`echo $?` answers for the command before it: an exit event of that command (with its PID
    and, under `timeout`, what 124 means). Returns the answer's line."""
    if not _ECHO_STATUS.match(c.text):
        return set()
    for n, s in c.output:
        m = re.search(r"(?<![\w.])(-?\d{1,3})\s*$", s.strip())
        if not m:
            continue
        code = int(m.group(1))
        about = prev if prev is not None else c
        wrapped = bool(re.search(r"(?:^|[\s;&|(])timeout\s", about.text))
        sig, meaning = exit_meaning(code, after_timeout=wrapped)
        pid = about.pid
        if pid is None and prev is not None and command_name(prev.words) == "wait":
            pid = next((_pid(w) for w in prev.words[1:] if w.isdigit()), None)
        ev.add(c.time, "exit", s.strip(), ref_of(n), time_approx=c.approx, command_ref=ref_of(about.line),
               exit_code=code, signal=sig, meaning=meaning, pid=pid, job_command=about.text)
        return {n}
    return set()


def _launch_pids_to_outcomes(ev: _Events, launches) -> None:
    """A foreground launch that `ps` tied to a PID (`timeout ... python ...` then `Killed`,
    `exit=137`): the outcome lines of that command are about that PID."""
    pid_of = {cref: ev.rows[row].get("pid") for row, _, _, cref in launches if ev.rows[row].get("pid") is not None}
    for r in ev.rows:
        if r["kind"] in ("killed", "exit") and r.get("pid") is None and r.get("job") is None and r.get("command_ref") in pid_of:
            r["pid"] = pid_of[r["command_ref"]]


def _output_events(ev: _Events, c: Command, ref_of, launch: Launch | None, cmd_ref: str) -> dict:
    """Files, sizes, process counts and launcher verdicts in one command's output; returns facts
    later steps use."""
    t = c.time
    facts: dict = {"lines": set()}
    for n, out in c.output:
        ref = ref_of(n)
        s = out.strip()
        failed = _CANNOT_OPEN.match(s) if launch is not None and launch.log_path else None
        if failed and launch.log_path in (failed["dash"], failed["zsh"], failed["bash"]):
            facts["lines"].add(n)
            ev.add(t, "redirect_failed", f"the shell could not open the log file {launch.log_path}: {s}", ref,
                   path=launch.log_path, run=launch.run, command_ref=cmd_ref)
            continue
        m = _NO_SUCH.match(s)
        if m:
            path = m.group("path")
            facts["lines"].add(n)
            kind = "log_missing" if re.search(r"\.(log|out|txt|err)$", path) else "file_missing"
            ev.add(t, kind, s, ref, path=path)
            continue
        if launch is not None and launch.launcher == "dflash-postmortem launch":
            if _verdict_event(ev, t, s, ref, cmd_ref, facts):
                facts["lines"].add(n)
                continue
            if s.startswith("| ") and ev.rows and ev.rows[-1]["kind"] == "launch_check":
                # The log tail `launch` quotes under a failed check belongs to that check.
                ev.rows[-1]["message"] += "\n" + s
                ev.rows[-1]["lines"] = ev.rows[-1].get("lines", 1) + 1
                facts["lines"].add(n)
                continue
        lm = _LS_LONG.match(s)
        if lm:
            size = int(lm.group("size"))
            ev.add(t, "file_check", f"{lm.group('path')}: {size} bytes", ref, path=lm.group("path"),
                   size_bytes=size if size < 2**62 else None)
    last = c.output[-1][1].strip() if c.output else ""
    if re.search(r"\bps\b.*\|\s*wc -l\s*$", c.text) and last.isdigit() and len(last) < 10:
        n = int(last)
        what = re.findall(r"grep\s+(?!-v)([^\s|]+)", c.text)
        pattern = what[0] if what else "?"
        ev.add(t, "process_count", f"{n} process{'es' if n != 1 else ''} matching {pattern!r}",
               ref_of(c.output[-1][0]), count=n, pattern=pattern)
    return facts


def _verdict_event(ev: _Events, t, line: str, ref: str, cmd_ref: str, facts: dict) -> bool:
    """One verdict line of `dflash-postmortem launch` -> a `launch_check` event at its own time
    (the launch's time plus the seconds the line reports); the started PID goes into `facts`."""
    m = _VERDICT.match(line)
    if m:
        secs = float(m.group("seconds"))
        pid = _VERDICT_PID.search(m.group("detail"))
        if m.group("check") == "start" and pid and m.group("state") == "ok" and _pid(pid.group("pid")) is not None:
            facts["pid"] = _pid(pid.group("pid"))
        facts["verdict_s"] = max(secs, facts.get("verdict_s", 0.0))
        at = t + pd.Timedelta(seconds=secs) if not pd.isna(t) and secs < 1e9 else t
        ev.add(at, "launch_check", line, ref, check=m.group("check"),
               ok=m.group("state") == "ok", seconds=secs, detail=m.group("detail"), launch_ref=cmd_ref)
        return True
    m = _VERDICT_END.match(line)
    if m:
        secs = facts.get("verdict_s", 0.0)
        at = t + pd.Timedelta(seconds=secs) if not pd.isna(t) and secs < 1e9 else t
        ev.add(at, "launch_check", line, ref, check="verdict", ok=m.group("state") == "started", launch_ref=cmd_ref)
        return True
    return False


_INT_COLUMNS = ("count", "exit_code", "size_bytes", "pid", "target_pid", "shell_job", "xid", "uid", "oom_score_adj", "order", "score",
                "attempt", "restart_count")
_BOOL_COLUMNS = ("time_approx", "target_is_group", "core_dumped", "cgroup")


def sniff_transcript(path: Path, head: bytes) -> float:
    text = head.decode("utf-8", "replace").removeprefix("\ufeff")
    lines = [s for s in (_unquoted(screen_text(ln)) for ln in text.split("\n")[:400]) if s.strip()]
    if not lines:
        return 0.0
    if match_script_mark(lines[0]) is not None:
        return 0.95
    prompts = [p for p in map(match_prompt, lines) if p is not None and p.command]
    if any(p.stamp for p in prompts):
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
    ev = _Events()
    jobs = _Jobs()
    gpu_parts: dict[str, list] = {"gpus": [], "gpu_processes": []}
    log_parts: dict[str, list] = {"metrics": [], "events": []}  # containers' own logs (kubectl/docker logs)
    procs: list[dict] = []
    launches: list[tuple[int, Launch, object, str]] = []

    def ref_of(n: int) -> str:
        return f"{rep.path}:{n}"

    # Lines outside any command: kernel lines and shell reports pasted on their own.
    held = _fact_events(ev, ses.loose, None, ref_of, jobs, ctx, rep, set())
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
        launch = parse_launch(c.text)
        ev.add(t, "command", c.text, cref, output="\n".join(s for _, s in c.output), time_approx=c.approx,
               time_within_s=c.within_s,
               traced=c.prompt.trace_depth if c.prompt is not None and c.prompt.trace_depth else None)
        if launch is not None:
            how = launch.launcher if launch.launcher.endswith(" launch") else f"{launch.launcher} launch"
            ev.add(t, "launch", f"{how} of {launch.program or 'a trainer'}"
                   + (f" > {launch.log_path}" if launch.log_path else ""), cref,
                   launcher=launch.launcher, log_path=launch.log_path, args=launch.args, run=launch.run,
                   program=launch.program, background=launch.background, time_approx=c.approx,
                   time_within_s=c.within_s, timeout_s=launch.timeout_s, timeout_signal=launch.timeout_signal)
            launches.append((len(ev.rows) - 1, launch, t, cref))
        facts = _output_events(ev, c, ref_of, launch, cref)
        answered = _status_answer(ev, c, prev, ref_of)
        _fact_events(ev, c.output, c, ref_of, jobs, ctx, rep, facts["lines"] | answered)
        if "pid" in facts:
            c.pid = facts["pid"]
        if launch is not None and c.pid is not None:
            ev.rows[launches[-1][0]]["pid"] = c.pid
        got = gpu_rows(c, rep, ctx)
        for frame, df in got.items():
            gpu_parts[frame].append(df)
        if got:
            ev.add(t, "gpu_query", _gpu_summary(got), cref, time_approx=c.approx)
        procs += _listing_rows(c, ctx, rep)
        ev.rows += runtime_outputs.read_answer(c, ctx, rep, ref_of)
        for frame, df in runtime_outputs.read_log(c, ctx, rep, ref_of).items():
            log_parts[frame].append(df)
        if not (c.prompt is not None and c.prompt.trace_depth) and not _ECHO_STATUS.match(c.text):
            prev = c
    _launch_pids_to_outcomes(ev, launches)
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
        return _pid(n)
    return n if -(2**63) < n < 2**63 else None


def _events_frame(ev: _Events, rep, ctx: LoadContext) -> pd.DataFrame:
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
