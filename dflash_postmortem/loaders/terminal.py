"""Terminal text as it reaches us: what a line says once the terminal has drawn it, and whether it
is a prompt with a command.

`script` recordings and tmux/screen logs keep the raw bytes a terminal interprets: colour and
cursor sequences, window titles (OSC), carriage returns that redraw a progress bar, backspaces of
typed corrections. `screen_text` replays one line the way the terminal would have shown it.

Prompts come in many shapes; `match_prompt` knows these (a command may follow each):

    [2026-11-30T05:23:01.707Z] $ cmd        the kit's own stamped transcripts
    user@host:~/dir$ cmd    root@host:/w# cmd    (venv) (base) user@host:~ (main)$ cmd
    [user@host dir]$ cmd    [root@host:~]# cmd   user@host ~ % cmd    user@host ~ $ cmd
    user@host:~> cmd        host:~ # cmd         (SUSE)
    host:dir user$ cmd      bash-5.1$ cmd        sh-4.2# cmd
    ❯ cmd    ➜  dir git:(main) ✗ cmd    λ cmd    PS C:\\dir> cmd    C:\\dir>cmd
    $ cmd    # cmd (when cmd starts with a known command)   [03:04:05] user@host:~$ cmd
    + cmd / ++ cmd                           `set -x` traces (a script's commands)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_CSI = re.compile(r"\x1b\[(?P<args>[0-?]*)[ -/]*(?P<final>[@-~])")
_ESC_OTHER = re.compile(r"\x1b[()*+][0-9A-Za-z]|\x1b[@-Z\\^_=>78]|\x1b")
_C1_CSI = re.compile(r"\x9b[0-?]*[ -/]*[@-~]")


def screen_text(line: str) -> str:
    """What a terminal shows for one line of raw output: escape sequences interpreted (cursor
    moves and erasures applied, colours and titles dropped), `\\r` returning to the start of the
    line, `\\b` stepping back. Plain text comes back unchanged (trailing whitespace trimmed)."""
    if not any(c in line for c in "\x1b\r\b\x9b\x00\x07\x7f"):
        return line.rstrip()
    line = _OSC.sub("", line)
    line = _C1_CSI.sub("", line)
    cells: list[str] = []
    cur = 0
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if c == "\x1b":
            m = _CSI.match(line, i)
            if m:
                cur = _csi(cells, cur, m["args"], m["final"])
                i = m.end()
                continue
            m = _ESC_OTHER.match(line, i)
            i = m.end() if m else i + 1
            continue
        if c == "\r":
            cur = 0
        elif c in "\b\x7f":
            cur = max(0, cur - 1)
        elif c == "\t":
            stop = (cur // 8 + 1) * 8
            while len(cells) < stop:
                cells.append(" ")
            cur = stop
        elif c >= " ":
            if cur < len(cells):
                cells[cur] = c
            else:
                cells.extend(" " * (cur - len(cells)))
                cells.append(c)
            cur += 1
        i += 1
    return "".join(cells).rstrip()


def _csi(cells: list[str], cur: int, args: str, final: str) -> int:
    """Apply one CSI sequence to the line buffer; returns the new cursor column."""
    nums = [int(a) if a.isdigit() else 0 for a in args.lstrip("?<=>").split(";")] if args else []
    k = nums[0] if nums and nums[0] else 1
    if final == "K":  # erase in line: 0 right of the cursor, 1 left of it, 2 all
        mode = nums[0] if nums else 0
        if mode == 0:
            del cells[cur:]
        elif mode == 1:
            for j in range(min(cur + 1, len(cells))):
                cells[j] = " "
        else:
            cells.clear()
    elif final == "C":
        cur += k
    elif final == "D":
        cur = max(0, cur - k)
    elif final == "G":
        cur = max(0, k - 1)
    elif final == "P":
        del cells[cur:cur + k]
    elif final == "@":
        cells[cur:cur] = [" "] * k
    elif final == "X":
        for j in range(cur, min(cur + k, len(cells))):
            cells[j] = " "
    return cur


@dataclass(frozen=True)
class Prompt:
    """A prompt line: the command typed after it ("" for a bare prompt), the stamp of a
    stamped transcript, a time of day shown in the prompt, and `set -x` trace depth (0: typed)."""

    command: str
    stamp: str | None = None
    time_of_day: str | None = None
    trace_depth: int = 0
    style: str = ""


_ENV = r"(?:\((?:[^()\s]|\([^()]*\))+\)\s?)*"  # (venv) (base) (.venv)
_USER_HOST = r"[\w.+-]+@[\w.~-]+"
_TOD = r"(?:\[?(?P<tod>\d{2}:\d{2}:\d{2})\]?\s)?"
_STAMPED = re.compile(r"^\[(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\] ?[$#] (?P<cmd>.*)$")
_STYLES = (
    # user@host:~/dir$   (Debian/Ubuntu bash, docker's root@3f2a1b:/workspace#), git branch after
    ("user@host:dir$", re.compile(rf"^{_ENV}{_TOD}{_ENV}{_USER_HOST}:[^\s$#]*(?: \([^)]*\))?\s?[$#](?: (?P<cmd>.*))?$")),
    # [user@host dir]$ (RHEL, CentOS, Fedora) and [user@host:~]$
    ("[user@host dir]$", re.compile(rf"^{_ENV}{_TOD}{_ENV}\[{_USER_HOST}(?:[ :][^\]]*)?\]\s?[$#](?: (?P<cmd>.*))?$")),
    # user@host dir %  (zsh default) / user@host ~ $ (Gentoo)
    ("user@host dir %", re.compile(rf"^{_ENV}{_TOD}{_ENV}{_USER_HOST} [^\s%$#]+(?: \([^)]*\))? ?[%$#](?: (?P<cmd>.*))?$")),
    # user@host:dir> (SUSE/tcsh) and user@host> without a directory
    ("user@host:dir>", re.compile(rf"^{_ENV}{_USER_HOST}(?::[^\s>]*)?>(?: (?P<cmd>.*))?$")),
    # host:~ # (SUSE root), Pclinux90:/home/runner #
    ("host:dir #", re.compile(rf"^\s?{_ENV}[\w.-]+:[~/][^\s#$>]* ?#(?: +(?P<cmd>.*))?$")),
    # host:dir user$  (macOS bash)
    ("host:dir user$", re.compile(rf"^{_ENV}[\w.-]+:[^\s$#]+ [\w.-]+[$#](?: (?P<cmd>.*))?$")),
    # bash-5.1$ / sh-4.2#
    ("bash-N$", re.compile(rf"^{_ENV}(?:ba|z|k|da|)sh(?:-\d+(?:\.\d+)*)?[$#](?: (?P<cmd>.*))?$")),
    # oh-my-zsh robbyrussell: ➜  dir git:(main) ✗ cmd
    ("➜", re.compile(rf"^{_ENV}➜ +\S+(?: git:\([^)]*\))?(?: ✗)?(?: (?P<cmd>.*))?$")),
    # pure / starship / powerlevel10k: the path is on the line above, the prompt is a glyph
    ("❯", re.compile(rf"^{_ENV}(?:[\w~/.-]+ )?❯(?: (?P<cmd>.*))?$|^{_ENV}[λ»→▶](?: (?P<cmd2>.*))?$")),
    # PowerShell and cmd.exe
    ("PS C:\\>", re.compile(r"^PS [A-Za-z]:\\[^>]*> ?(?P<cmd>.*)$")),
    ("C:\\>", re.compile(r"^[A-Za-z]:\\[^>]*>(?P<cmd>\S.*)?$")),
    # $ cmd (docs, issues, a minimal PS1), also indented inside a markdown list
    ("$", re.compile(rf"^ ?{_ENV}\$(?: (?P<cmd>.*))?$")),
)
# `# cmd` and `% cmd` also start comments and other text: a prompt only before a known command.
_ROOT_OR_CSH = re.compile(r"^ ?(?P<sign>[#%]) (?P<cmd>(?P<word>[\w./-]+)\b.*)$")
_TRACE = re.compile(r"^(?P<plus>\++) (?P<cmd>\S.*)$")
KNOWN_COMMANDS = frozenset("""
    kill pkill killall pgrep pidof ps top htop nvidia-smi nvtop gpustat python python3 torchrun
    accelerate deepspeed bash sh zsh cat tail head less ls ll cd echo date sleep dmesg journalctl
    free df du nohup setsid tmux screen timeout sudo su docker kubectl ssh scp rsync git pip
    pip3 conda uv make watch wc grep egrep fgrep awk sed fuser lsof uptime uname hostname whoami
    export source env which rm mv cp mkdir touch chmod chown systemctl service srun sbatch squeue
    scancel sacct salloc wandb jobs fg bg wait disown exit strace gdb py-spy find tee history
    """.split())


def match_prompt(line: str) -> Prompt | None:
    """The prompt a line starts with and the command after it, or None (an output line)."""
    m = _STAMPED.match(line)
    if m:
        return Prompt(m["cmd"], stamp=m["ts"], style="[stamp] $")
    if line.startswith(("    ", "\t")) and line.strip():
        line = line[4:] if line[0] == " " else line[1:]  # a markdown code block indents its lines
    if not line or line[:2].isspace():
        return None  # indented deeper than one space: output, not a prompt
    for style, rx in _STYLES:
        m = rx.match(line)
        if m:
            tod = m.groupdict().get("tod")
            cmd = m["cmd"] if m["cmd"] is not None else m.groupdict().get("cmd2")
            return Prompt((cmd or "").strip(), time_of_day=tod, style=style)
    m = _ROOT_OR_CSH.match(line)
    if m and m["word"].rsplit("/", 1)[-1] in KNOWN_COMMANDS:
        return Prompt(m["cmd"].strip(), style=m["sign"])
    m = _TRACE.match(line)
    if m and len(m["plus"]) <= 8:
        return Prompt(m["cmd"].strip(), trace_depth=len(m["plus"]), style="set -x")
    return None


def is_prompt(line: str) -> bool:
    """A shell prompt with a command (`user@host:dir$ cmd`, `$ cmd`): ps pastes carry them too.
    `set -x` trace lines are not counted: a `+` line inside a listing is not a prompt."""
    p = match_prompt(line)
    return p is not None and bool(p.command) and p.trace_depth == 0


_SCRIPT = re.compile(r"^Script (?P<what>started|done) on (?P<when>.+?)(?: \[(?P<info>.*)\])?\s*$")
_SCRIPT_EXIT = re.compile(r'COMMAND_EXIT_CODE="(?P<code>-?\d+)"')
_SCRIPT_COMMAND = re.compile(r'COMMAND="(?P<cmd>(?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ScriptMark:
    """`script`'s first or last line: when, and (util-linux >= 2.35) the command and exit code."""

    started: bool
    when: str
    command: str | None
    exit_code: int | None


def match_script_mark(line: str) -> ScriptMark | None:
    m = _SCRIPT.match(line)
    if not m:
        return None
    info = m["info"] or ""
    code = _SCRIPT_EXIT.search(info)
    cmd = _SCRIPT_COMMAND.search(info)
    return ScriptMark(m["what"] == "started", m["when"], cmd["cmd"] if cmd else None,
                      int(code["code"]) if code else None)
