"""A terminal session as the operator left it, read into commands: each prompt's command with its
line and the output lines that follow it, the text outside any command (a paste's fences, a
note) kept apart (shell_transcript.py reads what they say)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from ...shell_words import (
    Prompt,
    match_prompt,
    shell_words,
)
from ..terminal import match_script_mark, screen_text

MAX_PID = 2**31 - 1  # larger numbers are not process ids (Linux pid_max is at most 2**22)
_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)(?:[\w+-]*\s*$|(?P<rest>.+))")
# What the terminal echoes of the keys that signal the foreground job (Ctrl-C, Ctrl-\\), as `^C`:
# where the shell's next prompt follows on the same line (`^C^Croot@host:~# date`), the echo is the
# running command's output and the rest a prompt.
_ECHOED_KEYS = re.compile(r"^(?:\^[C\\])+")


def pid_or_none(v) -> int | None:
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


def unquoted(s: str) -> str:
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
        s = unquoted(screen_text(raw))
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
        keys = _ECHOED_KEYS.match(s) if p is None else None
        if keys is not None and keys.end() < len(s):
            p = match_prompt(s[keys.end():])
            if p is not None and current is not None:
                current.output.append((i, keys.group()))
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
