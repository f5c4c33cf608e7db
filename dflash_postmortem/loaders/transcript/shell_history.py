"""A shell's own history of what was typed, with the time of each command -> `events`, read the
way a transcript's commands are (launches, kills, the rest; shell_transcript.session_incident).

A history holds no output: it says what the operator started and killed and when, and the other
captures say what followed. Three forms carry times:

    #1764650401                          bash with HISTTIMEFORMAT set: the epoch seconds of the
    tmux new-session -d -s train '...'   command on the line after it
    : 1764650401:0;nvidia-smi            zsh's EXTENDED_HISTORY (start, seconds it ran; command)
      512  2026-12-02 04:40:01 nvidia-smi  `history` printed with HISTTIMEFORMAT='%F %T ' (local time)

What real histories hold beside that, and how it is read:
- a command of several lines (a heredoc, a quoted `python -c "..."`): bash stamps each line as an
  entry of its own, zsh ends each line but the last with a backslash; the lines are one command
  until its quotes and heredocs close;
- times out of order: each shell appends its history when it exits, so a long session's commands
  follow a short one's; each command keeps its own time, and the load report counts them;
- zsh writes bytes above 0x7f "metafied" (0x83, then the byte XOR 0x20): undone before decoding.

A history without times (bash's default) cannot place its commands on the incident's clock: it
is not read as one (its lines would pass for a shell script's).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pandas as pd

from ...incident import Incident
from .. import registry
from ..clock_text import parse_wall_clock
from ..registry import LoadContext
from ..terminal import decode_lines, read_bytes
from .shell_transcript import Clock, Command, Session, session_incident

FORMAT = "shell-history"
_BASH_STAMP = re.compile(r"^#(?P<epoch>\d{9,11})\s*$")
_ZSH = re.compile(r"^: (?P<epoch>\d{9,11}):(?P<elapsed>\d+);(?P<command>.*)$")
_PRINTED = re.compile(r"^\s*\d+\*?\s+(?P<when>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)\s+(?P<command>\S.*)$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(?P<word>[A-Za-z_][\w.-]*)\1")
_META = re.compile(rb"\x83(.)", re.DOTALL)


def _form(lines: list[str]) -> str | None:
    """Which of the three forms the lines are in, where most of them say so."""
    lines = [s for s in lines if s.strip()]
    if not lines:
        return None
    stamps = sum(bool(_BASH_STAMP.match(s)) for s in lines)
    if stamps >= 2 and stamps / len(lines) >= 0.3:
        return "bash"
    if sum(bool(_ZSH.match(s)) for s in lines) / len(lines) >= 0.5:
        return "zsh"
    if sum(bool(_PRINTED.match(s)) for s in lines) / len(lines) >= 0.6 and len(lines) >= 2:
        return "printed"
    return None


def sniff_history(path: Path, head: bytes) -> float:
    return 0.93 if _form(head.decode("utf-8", "replace").split("\n")[:400]) else 0.0


def _lines(path: Path) -> tuple[list[str], str | None]:
    """The file's lines (zsh's metafied bytes undone) and its form."""
    raw = read_bytes(path, FORMAT)
    form = _form(raw[:65536].decode("utf-8", "replace").split("\n")[:400])
    if form == "zsh":
        raw = _META.sub(lambda m: bytes([m[1][0] ^ 0x20]), raw)
    return decode_lines(raw), form


def _is_open(text: str) -> bool:
    """A command that goes on: a quote or a heredoc not yet closed (shell_words keeps going over
    an open quote, so shlex's strict reading tells it)."""
    m = _HEREDOC.search(text)
    if m and not re.search(rf"(?m)^\t*{re.escape(m['word'])}\s*$", text[m.end():]):
        return True
    try:
        shlex.split(text, comments=True)
    except ValueError:
        return True
    return False


@registry.format(FORMAT, sniff=sniff_history,
                 doc="shell history with times: bash's HISTTIMEFORMAT #epoch lines, zsh extended history, `history` output")
def load_shell_history(path: Path, ctx: LoadContext) -> Incident:
    path = Path(path)
    rep = ctx.report(path, FORMAT)
    lines, form = _lines(path)
    rep.read = len(lines)
    ses = Session()
    clock = Clock(ctx, rep)
    when = None
    current: Command | None = None  # a command still open (its next line belongs to it)
    for n, s in enumerate(lines, 1):
        entry = _entry(form, s, clock)
        if current is not None and _continues(form, entry, current):
            if entry is None:  # a line of the open command (bash stamps each one with its time)
                current.text = (current.text.removesuffix("\\") if form == "zsh" else current.text) + "\n" + s
                still = s.endswith("\\") if form == "zsh" else _is_open(current.text)
                current = current if still else _close(current)
            rep.parsed += 1
            continue
        if current is not None:
            current = _close(current)
        if isinstance(entry, pd.Timestamp):
            when = entry  # bash: the time of the command on the next line
            rep.parsed += 1
        elif not s.strip():
            rep.skip(n, "empty line")
        elif entry is None and (form != "bash" or when is None):
            rep.skip(n, "a command without a time (typed before the history kept times)")
        else:
            text, t = (s, when) if entry is None else entry
            c = Command(n, text, time=t)
            ses.commands.append(c)
            rep.parsed += 1
            when = None
            still = c.text.endswith("\\") if form == "zsh" else _is_open(c.text)
            current = c if still else _close(c)
    if current is not None:
        _close(current)
    times = [c.time for c in ses.commands]
    back = sum(b < a for a, b in zip(times, times[1:], strict=False))
    if back:
        rep.assume(f"{back} command(s) earlier than the one before them (each shell appends its history when it "
                   "exits): each is read at its own time")
    rep.assume("commands are dated by the shell's history; it keeps no output, so what followed "
               "each is read from the other captures")
    return session_incident(ses, ctx, rep)


def _continues(form: str | None, entry, current: Command) -> bool:
    """Whether a line belongs to the open command before it: in bash, a line without a stamp or
    one stamped with the command's own time (bash stamps every line of a command of several);
    in zsh and in `history` output, a line that is not an entry of its own."""
    if form == "bash" and isinstance(entry, pd.Timestamp):
        return entry == current.time
    return entry is None


def _close(c: Command) -> None:
    """A command of several lines as the shell reads it: `\\` + newline is nothing (a line
    continued), and a newline ending it is no part of it. None: nothing is open after it."""
    c.text = c.text.replace("\\\n", "").rstrip("\n").removesuffix("\\")


def _entry(form: str | None, s: str, clock: Clock) -> pd.Timestamp | tuple[str, pd.Timestamp] | None:
    """One history line: a bash time stamp, a command with its time (zsh, printed), or None."""
    if form == "bash":
        m = _BASH_STAMP.match(s)
        return pd.Timestamp(int(m["epoch"]), unit="s", tz="UTC") if m else None
    if form == "zsh":
        m = _ZSH.match(s)
        return (m["command"], pd.Timestamp(int(m["epoch"]), unit="s", tz="UTC")) if m else None
    m = _PRINTED.match(s)
    wall = parse_wall_clock(m["when"]) if m else None
    return (m["command"], clock.utc(wall)) if wall is not None else None
