"""What the output of a session's commands says: nvidia-smi answers (GPUs and their processes),
`ps`/`top`/`pgrep` listings, and facts about processes (a kill that failed, a job killed by a
signal, an exit status, the kernel's OOM killer, a redirect the shell could not open, the
verdict lines of `dflash-postmortem launch`), as events tied to the command that printed them."""

from __future__ import annotations

import os
import re
import tempfile

import pandas as pd

from ...clock import align
from ...errors import SourceFormatError
from ...shell_words import (
    Launch,
    command_name,
    exit_meaning,
    kill_targets,
    pipes_into,
    shell_words,
    simple_commands,
    under_timeout,
)
from ..clock_text import month_number
from ..nvidia_smi import load_nvidia_smi
from ..ps_snapshots import read_listing
from ..registry import LoadContext
from . import process_control, systemd_units
from .session import Command, pid_or_none

_NO_SUCH = re.compile(r"^(?:(?P<prog>[\w./-]+): )?(?:line \d+: )?(?:(?:cannot access|cannot open) )?'?(?P<path>/?[^\s:']+)'?: No such file or directory")
# What a shell says when it cannot open a redirect's file, as bash, dash and zsh print it:
#   bash: line 1: /w/x.log: No such file or directory    bash: /w/x.log: Permission denied
#   sh: 1: cannot create /w/x.log: Directory nonexistent  zsh:1: no such file or directory: /w/x.log
_CANNOT_OPEN = re.compile(
    r"^(?:[\w./-]+: ?)?(?:(?:line )?\d+: )?(?:cannot create (?P<dash>\S+): [A-Z][\w -]+"
    r"|(?:no such file or directory|permission denied|is a directory|read-only file system): (?P<zsh>\S+)"
    r"|(?P<bash>/?[^\s:']+): (?:No such file or directory|Permission denied|Is a directory|Read-only file system))$")
_SMI_QUERY = re.compile(r"nvidia-smi\b.*--query-(?P<what>gpu|compute-apps)=(?P<fields>[\w.,]+)(?P<rest>.*)")
# `ls -l` in every time style (`Dec  6 08:43`, `--full-time`, long-iso, iso) and size (`-h`: 1.3K)
_LS_LONG = re.compile(r"^[-dl][rwxsStT-]{9}\S*\s+\d+\s+\S+\s+\S+\s+(?P<size>\d+|\d{1,4}(?:[.,]\d{1,2})?[KMGTPE])\s+"
                      r"(?:\w+\.?\s+\d+\s+[\d:]+|\d{4}-\d\d-\d\d\s+[\d:.]+(?:\s+[+-]\d{4})?|\d\d-\d\d\s+[\d:]+)\s+(?P<path>\S+)")
# `ls -h`'s units: powers of 1024, the size rounded up to one decimal below 10 (four digits at most:
# a longer number before a unit is no size ls printed)
_LS_UNITS = {u: 1024 ** (i + 1) for i, u in enumerate("KMGTPE")}
# `dflash-postmortem launch` prints one verdict line per check: `launch: gpu   ok      4.3s  detail`.
_VERDICT = re.compile(r"^launch: (?P<check>\w+)\s+(?P<state>ok|FAIL)\s+(?P<seconds>[\d.]+)s\s+(?P<detail>.*)$")
_VERDICT_END = re.compile(r"^launch: (?P<state>started|FAILED)\s*$")
_VERDICT_PID = re.compile(r"\bpid (?P<pid>\d+)\b")
ECHO_STATUS = re.compile(r"^echo\b[^|;&]*\$\{?\?")
_PGREP_ROW = re.compile(r"^(?P<pid>\d{1,10})(?:\s+(?P<cmd>.*))?$")


# -- what outputs say -------------------------------------------------------------------------
class Events:
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
    errors = sub.events[sub.events["kind"].isin(["gpu_lost", "gpu_error"])] if len(sub.events) else sub.events
    if len(errors):
        # what nvidia-smi said instead of an answer (a GPU lost, a driver that did not answer)
        errors = errors.copy()
        at = [int(str(r).rsplit(":", 1)[1]) for r in errors["ref"]]
        errors["ref"] = [f"{rep.path}:{c.output[k - 1][0]}" if 0 < k <= len(c.output) else f"{rep.path}:{c.line}" for k in at]
        errors["source"] = rep.path
        if errors["time"].isna().all() and not pd.isna(c.time):
            errors["time"] = c.time
        got["events"] = errors
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


def gpu_summary(got: dict[str, pd.DataFrame]) -> str:
    """The gpu_query event's message: memory and utilisation per GPU, else the process count,
    else what nvidia-smi said instead."""
    if "gpus" not in got and "gpu_processes" not in got:
        return "; ".join(got["events"]["message"])
    if "gpus" not in got:
        return f"{len(got['gpu_processes'])} compute processes"
    df = got["gpus"]
    return "; ".join(
        f"GPU {g}" + (f": {m:.0f} MiB" if m == m else "") + (f", {u:.0f} %" if u == u else "")
        for g, m, u in zip(df.get("gpu", []), df.get("memory_used_mib", []), df.get("util_gpu_pct", [float("nan")] * len(df)), strict=False)
    )


def listing_rows(c: Command, ctx: LoadContext, rep) -> list[dict]:
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
                if m and pid_or_none(m["pid"]) is not None:
                    rows.append(dict(pid=pid_or_none(m["pid"]), command=(m["cmd"] or "").strip() or None, snap=snap, line=n))
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


class Jobs:
    """The shell's job table as the session shows it: `[1] 4242` gives job 1 the PID 4242."""

    def __init__(self):
        self.pid_of: dict[int, int] = {}

    def pid(self, job) -> int | None:
        return self.pid_of.get(job) if job is not None else None


def fact_events(ev: Events, lines: list[tuple[int, str]], c: Command | None, ref_of, jobs: Jobs,
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
            # (of `python3 train.py | tee train.log &`, bash names tee's PID: not the trainer's)
            if c is not None and c.pid is None and pipes_into(c.text) is None:
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
        if shell and kind == "exit" and fact.get("exit_code") is not None and under_timeout(fact.get("job_command") or ""):
            # `timeout 20 python ...; echo exit=$?`: 124 is timeout's own (it sent its signal)
            fact["signal"], fact["meaning"] = exit_meaning(int(fact["exit_code"]), after_timeout=True)
        if kind == "oom_kill" and fact.get("pid") in pending_oom and not context:
            earlier = pending_oom.pop(fact["pid"])
            ev.rows.remove(earlier)
            fact.update(constraint=earlier.get("constraint"), memcg=earlier.get("memcg"))
        fact["pid"] = pid_or_none(fact.get("pid"))
        if fact.get("target_pid") is not None:
            fact["target_pid"] = pid_or_none(fact["target_pid"])
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
                   time_within_s=c.within_s, command_ref=ref_of(c.line), pid=k.pid if k.pid is not None else jobs.pid(k.job), target_pid=k.pid,
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


def status_answer(ev: Events, c: Command, prev: Command | None, ref_of) -> set[int]:
    """`echo $?` answers for the command before it: an exit event of that command (with its PID
    and, under `timeout`, what 124 means). Returns the answer's line."""
    if not ECHO_STATUS.match(c.text):
        return set()
    for n, s in c.output:
        m = re.search(r"(?<![\w.])(-?\d{1,3})\s*$", s.strip())
        if not m:
            continue
        code = int(m.group(1))
        about = prev if prev is not None else c
        sig, meaning = exit_meaning(code, after_timeout=under_timeout(about.text))
        pid = about.pid
        if pid is None and prev is not None and command_name(prev.words) == "wait":
            pid = next((pid_or_none(w) for w in prev.words[1:] if w.isdigit()), None)
        ev.add(c.time, "exit", s.strip(), ref_of(n), time_approx=c.approx, command_ref=ref_of(about.line),
               exit_code=code, signal=sig, meaning=meaning, pid=pid, job_command=about.text)
        return {n}
    return set()


def launch_pids_to_outcomes(ev: Events, launches) -> None:
    """A foreground launch that `ps` tied to a PID (`timeout ... python ...` then `Killed`,
    `exit=137`): the outcome lines of that command are about that PID."""
    pid_of = {cref: ev.rows[row].get("pid") for row, _, _, cref in launches if ev.rows[row].get("pid") is not None}
    for r in ev.rows:
        if r["kind"] in ("killed", "exit") and r.get("pid") is None and r.get("job") is None and r.get("command_ref") in pid_of:
            r["pid"] = pid_of[r["command_ref"]]


def output_events(ev: Events, c: Command, ref_of, launch: Launch | None, cmd_ref: str) -> dict:
    """Files, sizes, process counts and launcher verdicts in one command's output; returns facts
    later steps use."""
    t = c.time
    facts: dict = {"lines": set()}
    folder, headed = _listed_folders(c)
    for n, out in c.output:
        ref = ref_of(n)
        s = out.strip()
        if s in headed:  # `logs:` before a folder's entries, where ls lists several
            folder = headed[s]
            continue
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
        # (`.` and `..` are the folder and its parent, `./` with `ls -F` or `ll`)
        if lm and lm.group("path").rstrip("/") not in (".", ".."):
            shown = lm.group("size")
            # (a size `-h` rounded is that many bytes give or take its last digit: 0 is 0)
            size = int(shown) if shown.isdigit() else round(float(shown[:-1].replace(",", ".")) * _LS_UNITS[shown[-1]])
            # an entry of a folder's listing is named without the folder: it is that folder's file
            named = lm.group("path")
            path = named if folder is None or "/" in named.rstrip("/") else f"{folder}/{named}"
            ev.add(t, "file_check", f"{path}: {shown if not shown.isdigit() else f'{size} bytes'}", ref, path=path,
                   size_bytes=size if size < 2**62 else None)
    last = c.output[-1][1].strip() if c.output else ""
    if re.search(r"\bps\b.*\|\s*wc -l\s*$", c.text) and last.isdigit() and len(last) < 10:
        n = int(last)
        what = re.findall(r"grep\s+(?!-v)([^\s|]+)", c.text)
        pattern = what[0] if what else "?"
        ev.add(t, "process_count", f"{n} process{'es' if n != 1 else ''} matching {pattern!r}",
               ref_of(c.output[-1][0]), count=n, pattern=pattern)
    return facts


# `ls`, and `ll`: the alias of `ls -alF` that most distributions' shells define
_LISTERS = ("ls", "ll")


def _listed_folders(c: Command) -> tuple[str | None, dict[str, str]]:
    """The folder a long listing lists (`ls -la logs/`: its entries are `logs/`'s files, each
    named without it), and the header line before each folder's entries where it lists several
    (`ls -l logs runs/` prints `logs:`, then `runs/:`, as typed). One operand: it is the folder
    where the output begins with the `total` line that a folder's listing has and a file's does
    not. Several: a file among them is listed first, under no header, with its path as typed."""
    if not c.output or not re.search(r"\bl[sl]\b", c.text):  # (every command's words parsed would cost)
        return None, {}
    commands = simple_commands(shell_words(c.text))
    if len(commands) != 1 or command_name(commands[0][0]) not in _LISTERS:
        return None, {}
    words = commands[0][0]
    at = next(i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] in _LISTERS)
    operands = [w for w in words[at + 1:] if not w.startswith("-")]
    if len(operands) > 1:
        return None, {f"{w}:": w.rstrip("/") or w for w in operands}
    if len(operands) == 1 and re.match(r"total \d+", c.output[0][1].strip()):
        return operands[0].rstrip("/") or None, {}
    return None, {}


def _verdict_event(ev: Events, t, line: str, ref: str, cmd_ref: str, facts: dict) -> bool:
    """One verdict line of `dflash-postmortem launch` -> a `launch_check` event at its own time
    (the launch's time plus the seconds the line reports); the started PID goes into `facts`."""
    m = _VERDICT.match(line)
    if m:
        secs = float(m.group("seconds"))
        pid = _VERDICT_PID.search(m.group("detail"))
        if m.group("check") == "start" and pid and m.group("state") == "ok" and pid_or_none(pid.group("pid")) is not None:
            facts["pid"] = pid_or_none(pid.group("pid"))
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
