"""Operator shell transcripts -> `events`: each command, each launch with its log path and
trainer arguments, and what the outputs say (missing files, kills, process counts, GPU memory).

Two forms are read: timestamped transcripts (`[2026-11-30T05:23:01.707Z] $ command`, then its
output) and plain terminal pastes (`user@host:~/dir$ command`). Launch log paths are checked
against the incident folder: a log that never appeared, or stayed empty for 60 s, becomes an
event of its own (`log_never_created`, `log_empty`). This format loads in phase 1, so it can
see which logs wrote when and which PIDs `ps` saw.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import align
from ..errors import SourceFormatError
from ..incident import Incident, from_frames
from .registry import Format, LoadContext, register

EMPTY_LOG_SECONDS = 60.0

_STAMPED = re.compile(r"^\[(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\] ?[$#] (?P<cmd>.*)$")
_PROMPT = re.compile(r"^(?:\([\w.-]+\) )?[\w.-]+@[\w.-]+:[^\s$#]*(?: \([^)]*\))?[$#] (?P<cmd>.*)$")
_BARE = re.compile(r"^\$ (?P<cmd>.+)$")

# Launchers, in the order they wrap each other (ssh host 'nohup ...'): the outermost is named.
_LAUNCHERS = (
    ("ssh", re.compile(r"(?:^|[\s;&|(])ssh\s")),
    ("pct exec", re.compile(r"\bpct exec\b")),
    ("docker exec", re.compile(r"\bdocker exec\b")),
    ("kubectl exec", re.compile(r"\bkubectl exec\b")),
    ("tmux", re.compile(r"\btmux (?:send-keys|send|new-session|new)\b")),
    ("screen", re.compile(r"\bscreen -\w*d")),
    ("dflash-postmortem launch", _KIT_LAUNCHER := re.compile(r"\bdflash[-_]postmortem(?:\.cli)? launch\b")),
    ("setsid", re.compile(r"(?:^|[\s;&|(])setsid\s")),
    ("nohup", re.compile(r"(?:^|[\s;&|(])nohup\s")),
    ("torchrun", re.compile(r"\btorchrun\b|torch\.distributed\.(?:run|launch)")),
    ("accelerate", re.compile(r"\baccelerate launch\b")),
    ("deepspeed", re.compile(r"(?:^|[\s;&|(])deepspeed\s")),
)
_TRAINER = re.compile(r"\b(?:python[\d.]*|torchrun|accelerate|deepspeed)\b|\S+\.(?:py|sh)\b")
_NO_SUCH = re.compile(r"^(?:(?P<prog>[\w./-]+): )?(?:line \d+: )?(?:(?:cannot access|cannot open) )?'?(?P<path>/?[^\s:']+)'?: No such file or directory")
_SMI_QUERY = re.compile(r"nvidia-smi\b.*--query-(?P<what>gpu|compute-apps)=(?P<fields>[\w.,]+)(?P<rest>.*)")
_LS_LONG = re.compile(r"^[-dl][rwxsStT-]{9}\S*\s+\d+\s+\S+\s+\S+\s+(?P<size>\d+)\s+\w+\s+\d+\s+[\d:]+\s+(?P<path>\S+)")
_EXIT = re.compile(r"(?i)\bexit(?:ed)?(?: with)?(?: code|=|:| status)\s*(?P<code>-?\d+)")
_RUN_NAME = re.compile(r"--run[-_]name[= ](?P<run>[\w.@-]+)")
# `dflash-postmortem launch` prints one verdict line per check: `launch: gpu   ok      4.3s  detail`.
_VERDICT = re.compile(r"^launch: (?P<check>\w+)\s+(?P<state>ok|FAIL)\s+(?P<seconds>[\d.]+)s\s+(?P<detail>.*)$")
_VERDICT_END = re.compile(r"^launch: (?P<state>started|FAILED)\s*$")
_VERDICT_PID = re.compile(r"\bpid (?P<pid>\d+)\b")


def is_prompt(line: str) -> bool:
    """A shell prompt with a command (`user@host:dir$ cmd`, `$ cmd`): ps pastes carry them too."""
    return bool(_PROMPT.match(line) or _BARE.match(line))


@dataclass
class Command:
    line: int
    time: object
    text: str
    output: list[str] = field(default_factory=list)


def parse_commands(lines: list[str], rep) -> tuple[list[Command], int]:
    """Split a transcript into commands and their output; returns (commands, lines before any)."""
    cmds: list[Command] = []
    preamble = 0
    for i, line in enumerate(lines, 1):
        m = _STAMPED.match(line)
        if m:
            cmds.append(Command(i, m.group("ts"), m.group("cmd")))
            continue
        m = _PROMPT.match(line) or _BARE.match(line)
        if m:
            cmds.append(Command(i, None, m.group("cmd")))
            continue
        if cmds:
            cmds[-1].output.append(line)
        else:
            preamble += 1
            rep.skip(i, "text before the first command")
    return cmds, preamble


@dataclass
class Launch:
    launcher: str
    background: bool
    log_path: str | None
    program: str | None
    args: str
    run: str | None


# Shell control operators (shlex groups these characters into one token) and redirections.
_CONTROL = {"&&", "||", ";", ";;", "|", "|&", "&", "(", ")", "\n"}
_OUT_REDIRECTS = {">", ">>", ">|", "&>", "&>>", ">&", "1>", "1>>", "1>|", "1>&"}
_REDIRECT_OPS = _OUT_REDIRECTS | {"<", "<<", "<<<", "2>", "2>>", "2>&", "<&", "<>"}
_HELPERS = {"cd", "echo", "sleep", "kill", "pkill", "pgrep", "grep", "cat", "tail", "head", "ls", "ps",
            "rm", "mkdir", "cp", "mv", "tee", "wc", "export", "source", "."}


def shell_words(cmd: str) -> list[str]:
    """A command line as shell tokens: words unquoted, operators (`&&`, `|`, `&`, `2>&1` as
    `2>&` `1`) as tokens of their own, and quoted commands (`bash -c '...'`, `ssh host '...'`,
    `tmux send-keys '...'`) tokenised in place between `;` separators.

    An unbalanced quote (a paste cut short) is closed at the end of the line, as if typed.
    """
    for closing in ("", "'", '"'):
        try:
            return _shell_words(cmd + closing)
        except ValueError:
            continue
    return cmd.split()


def _shell_words(cmd: str) -> list[str]:
    lex = shlex.shlex(cmd, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = ""
    out: list[str] = []
    fd: str | None = None
    while (tok := lex.get_token()) is not None:
        if fd is not None:  # `2` glued to the `>` after it names a file descriptor
            out.append(fd + tok)
            fd = None
            continue
        # shlex keeps a lookahead operator character back: a digit that is followed at once by
        # `>` or `<` is a descriptor (`2>&1`), a digit followed by a space is a word (`--n 2 > x`).
        if tok.isdigit() and lex._pushback_chars and lex._pushback_chars[-1] in "<>":
            fd = tok
            continue
        if " " in tok and _TRAINER.search(tok):  # a quoted command: bash -c '...', ssh host '...'
            out += [";", *shell_words(tok), ";"]
            continue
        out.append(tok)
    return out


def _simple_commands(words: list[str]) -> list[tuple[list[str], str]]:
    """Words split at control operators: (the command's words, the operator after it)."""
    out: list[tuple[list[str], str]] = []
    cur: list[str] = []
    for w in words:
        if w in _CONTROL:
            if cur:
                out.append((cur, w))
            cur = []
        else:
            cur.append(w)
    if cur:
        out.append((cur, ""))
    return out


def _program_index(words: list[str]) -> int | None:
    i = next((i for i, w in enumerate(words) if re.search(r"\.(py|sh)$", w) or w in ("torchrun", "accelerate", "deepspeed")), None)
    if i is None:
        i = next((i for i, w in enumerate(words) if re.match(r"python[\d.]*$", Path(w).name)), None)
    return i


def _without_redirects(words: list[str]) -> tuple[list[str], str | None]:
    """(the words minus redirections, the file stdout goes to: first `>`-like target, else `2>`)."""
    kept: list[str] = []
    out_path = err_path = None
    i = 0
    while i < len(words):
        w = words[i]
        if w in _REDIRECT_OPS:
            target = words[i + 1] if i + 1 < len(words) else None
            if target is not None and not (w.endswith("&") and (target.isdigit() or target == "-")):
                if w in _OUT_REDIRECTS:
                    out_path = out_path or target
                elif w.startswith("2>"):
                    err_path = err_path or target
            i += 2
            continue
        kept.append(w)
        i += 1
    return kept, out_path or err_path


def _tee_target(words: list[str]) -> str | None:
    rest = [w for w in words[1:] if not w.startswith("-")]
    return rest[0] if rest else None


def _kit_launch(words: list[str], cmd: str) -> Launch | None:
    """`dflash-postmortem launch --log F ... -- CMD` (or `python -m dflash_postmortem.cli launch`):
    CMD runs in its own session with its output in F, whatever the shell around it does."""
    for seg, _ in _simple_commands(words):
        at = next((i for i in range(len(seg) - 1) if seg[i + 1] == "launch"
                   and re.search(r"(?:^|/)dflash-postmortem$|^dflash_postmortem\.cli$", seg[i])), None)
        if at is None or "--" not in seg[at:]:
            continue
        sep = seg.index("--", at)
        opts, target = seg[at + 2:sep], seg[sep + 1:]
        log_path = next((v.split("=", 1)[1] for v in opts if v.startswith("--log=")), None)
        if log_path is None and "--log" in opts[:-1]:
            log_path = opts[opts.index("--log") + 1]
        prog_i = _program_index(target) if target else None
        if prog_i is None and target:
            prog_i = 0
        program = target[prog_i] if prog_i is not None else None
        args = " ".join(target[prog_i + 1:]) if prog_i is not None else ""
        rm = _RUN_NAME.search(" ".join(target))
        return Launch("dflash-postmortem launch", True, log_path, program, args, rm.group("run") if rm else None)
    return None


def parse_launch(cmd: str) -> Launch | None:
    """A command that starts a trainer in the background or through a launcher, or None."""
    words = shell_words(cmd)
    kit = _kit_launch(words, cmd)
    if kit is not None:
        return kit
    launcher = next((name for name, rx in _LAUNCHERS if rx.search(cmd)), None)
    detached = bool(re.search(r"\btmux (?:new|send)|\bscreen -\w*d|\b(?:docker|kubectl) exec (?:-\w+ )*-\w*d", cmd))
    background = "&" in words or "disown" in words or detached
    commands = _simple_commands(words)
    found = next(((k, c) for k, (c, _) in enumerate(commands)
                  if c[0] not in _HELPERS and _program_index(c) is not None), None)
    if found is None or (launcher is None and not background):
        return None
    if launcher is None:
        launcher = "&"
    k, seg = found
    seg, log_path = _without_redirects(seg)
    if log_path is None and commands[k][1] in ("|", "|&") and k + 1 < len(commands) and commands[k + 1][0][0] == "tee":
        log_path = _tee_target(commands[k + 1][0])
    if log_path == "/dev/null":
        log_path = None
    prog_i = _program_index(seg)
    program = seg[prog_i] if prog_i is not None else None
    args = " ".join(seg[prog_i + 1:]) if prog_i is not None else ""
    rm = _RUN_NAME.search(cmd)
    return Launch(launcher, background, log_path, program, args, rm.group("run") if rm else None)


def _times(cmds: list[Command], ctx: LoadContext, rep) -> pd.Series:
    raw = pd.Series([c.time for c in cmds], dtype="object")
    if raw.isna().all():
        rep.assume("no timestamps on commands: events have no time")
        return pd.Series(pd.NaT, index=raw.index, dtype="datetime64[us, UTC]")
    aware = raw.dropna().str.contains(r"Z$|[+-]\d{2}:?\d{2}$", regex=True)
    if aware.all():
        return pd.to_datetime(raw, format="ISO8601", utc=True).astype("datetime64[us, UTC]")
    rep.assume(align.zone_assumption(ctx.timezone))
    return align.localize(pd.to_datetime(raw, format="ISO8601", errors="coerce"), ctx.timezone)


def gpu_rows(cmd: str, output: list[str], time, rep, ctx: LoadContext):
    """nvidia-smi --query-* output inside a transcript, read by the nvidia-smi loader."""
    from .nvidia_smi import load_nvidia_smi

    m = _SMI_QUERY.search(cmd)
    if not m or not output:
        return None
    fields = m.group("fields").split(",")
    noheader = "noheader" in m.group("rest")
    fd, tmp = tempfile.mkstemp(suffix=".csv")
    try:
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(output) + "\n")
        sub = load_nvidia_smi(tmp, host=ctx.host, timezone=ctx.timezone, fields=fields if noheader else None, on_bad_line="skip")
    except SourceFormatError as e:
        rep.notes.append(f"nvidia-smi answer not readable: {e.expected}")
        return None
    finally:
        os.unlink(tmp)
    frame = "gpus" if m.group("what") == "gpu" else "gpu_processes"
    df = getattr(sub, frame).copy()
    if df["time"].isna().all():
        df["time"] = time
    df["source"] = rep.path
    return frame, df


class _Events:
    def __init__(self):
        self.rows: list[dict] = []

    def add(self, time, kind, message, ref, **extra):
        self.rows.append(dict(time=time, kind=kind, message=message, ref=ref, **extra))


def _output_events(ev: _Events, c: Command, t, ref_of, launch: Launch | None, cmd_ref: str) -> dict:
    """Events read from one command's output; returns facts later steps use."""
    facts: dict = {"missing": {}, "empty": {}}
    for j, out in enumerate(c.output):
        ref = ref_of(c.line + 1 + j)
        m = _NO_SUCH.match(out.strip())
        if m:
            path = m.group("path")
            facts["missing"][path] = ref
            if launch is not None and launch.log_path == path:
                ev.add(t, "redirect_failed", f"the shell could not open the log file {path}: {out.strip()}", ref, path=path, run=launch.run)
            else:
                kind = "log_missing" if re.search(r"\.(log|out|txt|err)$", path) else "file_missing"
                ev.add(t, kind, out.strip(), ref, path=path)
            continue
        s = out.strip()
        if launch is not None and launch.launcher == "dflash-postmortem launch":
            if _verdict_event(ev, t, s, ref, cmd_ref, facts):
                continue
            if s.startswith("| ") and ev.rows and ev.rows[-1]["kind"] == "launch_check":
                # The log tail `launch` quotes under a failed check belongs to that check.
                ev.rows[-1]["message"] += "\n" + s
                ev.rows[-1]["lines"] = ev.rows[-1].get("lines", 1) + 1
                continue
        if s in ("Killed", "Terminated") or re.match(r"^(?:\[\d+\]\+?\s+)?(Killed|Terminated)\b", s):
            ev.add(t, "signal", s, ref, signal="SIGKILL" if "Killed" in s else "SIGTERM")
            continue
        em = _EXIT.search(s)
        if em:
            ev.add(t, "exit", s, ref, exit_code=int(em.group("code")))
            continue
        lm = _LS_LONG.match(s)
        if lm:
            size = int(lm.group("size"))
            facts["empty"][lm.group("path")] = size
            ev.add(t, "file_check", f"{lm.group('path')}: {size} bytes", ref, path=lm.group("path"), size_bytes=size)
    if re.search(r"\bps\b.*\|\s*wc -l\s*$", c.text) and c.output and c.output[-1].strip().isdigit():
        n = int(c.output[-1].strip())
        what = re.findall(r"grep\s+(?!-v)([^\s|]+)", c.text)
        pattern = what[0] if what else "?"
        ev.add(t, "process_count", f"{n} process{'es' if n != 1 else ''} matching {pattern!r}",
               ref_of(c.line + len(c.output)), count=n, pattern=pattern)
    return facts


def _verdict_event(ev: _Events, t, line: str, ref: str, cmd_ref: str, facts: dict) -> bool:
    """One verdict line of `dflash-postmortem launch` -> a `launch_check` event at its own time
    (the launch's time plus the seconds the line reports); the started PID goes into `facts`."""
    m = _VERDICT.match(line)
    if m:
        secs = float(m.group("seconds"))
        pid = _VERDICT_PID.search(m.group("detail"))
        if m.group("check") == "start" and pid and m.group("state") == "ok":
            facts["pid"] = int(pid.group("pid"))
        facts["verdict_s"] = max(secs, facts.get("verdict_s", 0.0))
        ev.add(t + pd.Timedelta(seconds=secs) if t == t else t, "launch_check", line, ref, check=m.group("check"),
               ok=m.group("state") == "ok", seconds=secs, detail=m.group("detail"), launch_ref=cmd_ref)
        return True
    m = _VERDICT_END.match(line)
    if m:
        at = t + pd.Timedelta(seconds=facts.get("verdict_s", 0.0)) if t == t else t
        ev.add(at, "launch_check", line, ref, check="verdict", ok=m.group("state") == "started", launch_ref=cmd_ref)
        return True
    return False


def load_transcript(path: Path, ctx: LoadContext) -> Incident:
    path = Path(path)
    rep = ctx.report(path, "shell-transcript")
    text = path.read_bytes().decode("utf-8", "replace")
    lines = text.splitlines()
    rep.read = len(lines)
    cmds, _ = parse_commands(lines, rep)
    rep.parsed = rep.read - rep.n_skipped
    times = _times(cmds, ctx, rep)
    ev = _Events()
    gpu_parts: dict[str, list] = {"gpus": [], "gpu_processes": []}
    launches: list[tuple[int, Launch, object, str]] = []
    missing_after: list[tuple[object, str, str]] = []  # (time, path, ref) of "no such file"

    def ref_of(n: int) -> str:
        return f"{rep.path}:{n}"

    for i, c in enumerate(cmds):
        t = times.iloc[i]
        cref = ref_of(c.line)
        launch = parse_launch(c.text)
        ev.add(t, "command", c.text, cref, output="\n".join(c.output))
        if launch is not None:
            how = launch.launcher if launch.launcher.endswith(" launch") else f"{launch.launcher} launch"
            ev.add(t, "launch", f"{how} of {launch.program or 'a trainer'}"
                   + (f" > {launch.log_path}" if launch.log_path else ""), cref,
                   launcher=launch.launcher, log_path=launch.log_path, args=launch.args, run=launch.run,
                   program=launch.program, background=launch.background)
            launches.append((len(ev.rows) - 1, launch, t, cref))
        facts = _output_events(ev, c, t, ref_of, launch, cref)
        if "pid" in facts:
            ev.rows[launches[-1][0]]["pid"] = facts["pid"]
        for p, mref in facts["missing"].items():
            missing_after.append((t, p, mref))
        got = gpu_rows(c.text, c.output, t, rep, ctx)
        if got is not None:
            frame, df = got
            gpu_parts[frame].append(df)
            summary = "; ".join(
                f"GPU {g}: {m:.0f} MiB" + (f", {u:.0f} %" if u == u else "")
                for g, m, u in zip(df.get("gpu", []), df.get("memory_used_mib", []), df.get("util_gpu_pct", [float("nan")] * len(df)), strict=False)
            ) if frame == "gpus" else f"{len(df)} compute processes"
            ev.add(t, "gpu_query", summary, cref)
    _file_evidence(ev, launches, missing_after, times.max(), ctx, rep)
    events = pd.DataFrame(ev.rows)
    if not events.empty:
        events["source"] = rep.path
        events["host"] = ctx.host
        if "time" in events:
            events["time"] = pd.to_datetime(events["time"], utc=True).astype("datetime64[us, UTC]")
        for col in ("count", "exit_code", "size_bytes"):
            if col in events:
                events[col] = events[col].astype("Int64")
    frames = {"events": events}
    for name, parts in gpu_parts.items():
        if parts:
            frames[name] = pd.concat(parts, ignore_index=True)
    return from_frames(rep, **frames)


def _file_evidence(ev: _Events, launches, missing_after, end, ctx: LoadContext, rep) -> None:
    """Where each launch's log went: found in the incident folder, never created, or empty."""
    files = _incident_files(ctx)
    claimed: dict[str, tuple[int, int]] = {}  # relpath -> (suffix length, launch index)
    for k, (_, launch, _, _) in enumerate(launches):
        if not launch.log_path:
            continue
        for rel in files:
            n = _suffix_match(launch.log_path, rel)
            if n and (rel not in claimed or n >= claimed[rel][0]):
                claimed[rel] = (n, k)
    known = ctx.known if isinstance(ctx.known, Incident) else None
    for k, (row, launch, t, cref) in enumerate(launches):
        if not launch.log_path:
            continue
        mine = [rel for rel, (_, who) in claimed.items() if who == k]
        ev.rows[row]["log_file"] = mine[0] if mine else None
        _link_pid(ev.rows[row], launch, t, launches[k + 1][2] if k + 1 < len(launches) else None, known)
        if not mine:
            seen_missing = [(mt, mref) for mt, p, mref in missing_after if p == launch.log_path and (t != t or mt >= t)]
            if seen_missing:
                mt, mref = seen_missing[-1]
                ev.add(mt, "log_never_created", f"log file never created: {launch.log_path} (launched at {cref})", mref,
                       path=launch.log_path, run=launch.run)
            else:
                rep.notes.append(f"{cref}: log {launch.log_path} is not in the incident folder")
            continue
        rel = mine[0]
        first = _first_written(known, rel)
        size = (ctx.root / rel).stat().st_size if ctx.root is not None else None
        if size == 0:
            if end == end and t == t and (end - t).total_seconds() >= EMPTY_LOG_SECONDS:
                ev.add(t + pd.Timedelta(seconds=EMPTY_LOG_SECONDS), "log_empty",
                       f"log file empty: {launch.log_path} (0 bytes in the incident folder)", cref, path=launch.log_path, run=launch.run)
        elif first is not None and t == t and (first - t).total_seconds() >= EMPTY_LOG_SECONDS:
            gap = (first - t).total_seconds()
            ev.add(t + pd.Timedelta(seconds=EMPTY_LOG_SECONDS), "log_empty",
                   f"log file empty for {gap:.0f} s after launch: {launch.log_path}", cref, path=launch.log_path, run=launch.run)


def _incident_files(ctx: LoadContext) -> list[str]:
    if ctx.root is None or not Path(ctx.root).is_dir():
        return []
    root = Path(ctx.root)
    return [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]


def _suffix_match(log_path: str, rel: str) -> int:
    """How many trailing path components two paths share (0: different file names)."""
    a, b = Path(log_path).parts[::-1], Path(rel).parts[::-1]
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _first_written(known: Incident | None, rel: str):
    if known is None:
        return None
    times = [df.loc[df["source"] == rel, "time"].dropna() for df in (known.metrics, known.events) if len(df)]
    times = [t for t in times if len(t)]
    return min(t.min() for t in times) if times else None


def _link_pid(row: dict, launch: Launch, t, nxt, known: Incident | None) -> None:
    """The PID `ps` saw running this launch's command line, first seen within 2 min of it and
    before the next launch (a launcher that prints the PID it started has already said it)."""
    if known is None or known.processes.empty or t != t or not launch.program or row.get("pid") is not None:
        return
    p = known.processes
    needle = f"{launch.program} {launch.args}".strip()
    cmd = p["command"].fillna("")
    wrapper = cmd.str.contains(r"^(?:bash|sh) -c", regex=True) | cmd.str.contains(_KIT_LAUNCHER, regex=True)
    hit = p[cmd.str.contains(needle, regex=False) & ~wrapper]
    until = t + pd.Timedelta(seconds=120)
    if nxt is not None and nxt == nxt:
        until = min(until, nxt)
    hit = hit[(hit["first_seen"] >= t - pd.Timedelta(seconds=1)) & (hit["first_seen"] <= until)]
    if len(hit):
        row["pid"] = int(hit.sort_values("first_seen")["pid"].iloc[0])


def load_shell_transcript(path, *, timezone: str = "UTC", host: str | None = None, root=None):
    """Read an operator's shell transcript into events (commands, launches, what outputs say).

    `root` is the incident folder the launch log paths are looked up in (default: none).
    """
    ctx = LoadContext(root=Path(root) if root else None, timezone=timezone, host=host)
    return load_transcript(Path(path), ctx)


def sniff_transcript(path: Path, head: bytes) -> float:
    text = head.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines()[:400] if ln.strip()]
    if not lines:
        return 0.0
    stamped = sum(1 for ln in lines if _STAMPED.match(ln))
    if stamped:
        return 0.9
    prompts = sum(1 for ln in lines if is_prompt(ln))
    # A ps listing pasted with its prompt line is a ps listing: prompts must be a fair share.
    return 0.7 if prompts >= 2 and prompts / len(lines) >= 0.1 else 0.0


register(Format(
    name="shell-transcript",
    sniff=sniff_transcript,
    load=load_transcript,
    doc="operator shell transcripts: `[time] $ command` + output, or terminal pastes with prompts",
    phase=1,
))
