"""Shell-command vocabulary: how a command line splits into words and simple commands, what a
launch is (its launcher, redirect, program and arguments), what a `kill` aims at, what a
`timeout` wrapper allows, what an exit status says about how a process ended, and the prompts a
command is typed after.

Pure text functions, no I/O: the transcript loader and the detectors read commands through them.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

# Linux signal numbers (x86/arm): an exit status 128+N is "killed by signal N".
SIGNALS = {
    1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
    8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
    14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD", 18: "SIGCONT", 19: "SIGSTOP",
    20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU", 23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ",
    26: "SIGVTALRM", 27: "SIGPROF", 28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS",
    **{n: f"SIGRTMIN+{n - 34}" if n < 50 else f"SIGRTMAX-{64 - n}" for n in range(35, 64)},
    34: "SIGRTMIN", 64: "SIGRTMAX",
}
SIGNAL_NUMBERS = {name: n for n, name in SIGNALS.items()}
# The words for "died of signal N" (strsignal's, as the shell prints them: bash/dash capitalised,
# zsh lower case; srun says the same of a task).
STATUS_SIGNALS = {
    "killed": "SIGKILL", "terminated": "SIGTERM", "segmentation fault": "SIGSEGV", "aborted": "SIGABRT",
    "abort": "SIGABRT", "bus error": "SIGBUS", "illegal instruction": "SIGILL", "floating point exception": "SIGFPE",
    "hangup": "SIGHUP", "quit": "SIGQUIT", "interrupt": "SIGINT", "user defined signal 1": "SIGUSR1",
    "user defined signal 2": "SIGUSR2", "alarm clock": "SIGALRM", "broken pipe": "SIGPIPE",
    "trace/breakpoint trap": "SIGTRAP", "cpu time limit exceeded": "SIGXCPU", "file size limit exceeded": "SIGXFSZ",
    "killed by signal": None,
    # the same words where the shell speaks Chinese (glibc's zh_CN strsignal): `已杀死`, `段错误 (核心已转储)`
    "已杀死": "SIGKILL", "已终止": "SIGTERM", "段错误": "SIGSEGV", "已放弃": "SIGABRT", "总线错误": "SIGBUS",
    "非法指令": "SIGILL", "浮点数例外": "SIGFPE", "挂断": "SIGHUP",
}
# bash's word "line" in its own messages (`./run.sh: line 7:  4242 Killed  python train.py`) as
# its translations print it: zh_CN and ja `行`, de `Zeile`, es `línea`, pt_BR `linha`, it `riga`,
# ru `строка`, fr `ligne` (with a space before the colon)
SCRIPT_LINE = r"(?:line|行|Zeile|línea|linha|riga|строка|ligne) \d+ ?:"
SCRIPT_LINE_KEYWORDS = (": line ", ": 行 ", ": Zeile ", ": línea ", ": linha ", ": riga ", ": строка ", ": ligne ")
# Who sends a signal that stops a process from outside, as a reader names it (a launcher that
# says it got one: torchrun's `Received 1 death signal`)
SIGNAL_SENDERS = {
    "SIGHUP": ", the signal of a terminal or session that hung up",
    "SIGTERM": ", the signal a kill, a scheduler's cancel, preemption or time limit sends",
    "SIGINT": ", an interrupt (Ctrl-C)",
    "SIGKILL": ", which no process can catch (a kill -9, the OOM killer, a scheduler past its grace time)",
}
# `timeout` exits 124 when the time ran out (and it sent its signal), 125 when it failed itself,
# 126/127 when the command could not be run / found; 137 when the KILL came (-s KILL, -k).
_TIMEOUT_CODES = {124: "timed out: timeout sent its signal", 125: "timeout itself failed",
                  126: "command found but not runnable", 127: "command not found"}


def signal_name(spec: str | int | None) -> str | None:
    """`9`, `KILL`, `SIGKILL`, `-9`, `-KILL`, `kill` -> `SIGKILL`; None when not a signal."""
    if spec is None:
        return None
    s = str(spec).strip().lstrip("-").upper()
    if s.isdigit():
        return SIGNALS.get(int(s))
    s = s if s.startswith("SIG") else "SIG" + s
    return s if s in SIGNAL_NUMBERS else None


_UNDER_TIMEOUT = re.compile(r"(?:^|[\s;&|(])timeout\s")


def under_timeout(command: str) -> bool:
    """Whether a command line runs its job under coreutils' `timeout` (its 124 is timeout's)."""
    return bool(_UNDER_TIMEOUT.search(command))


# Windows ends a process that crashed natively with an NTSTATUS as its exit code: Python's
# subprocess prints it unsigned (`returned non-zero exit status 3221225477`), cmd and PowerShell
# often signed (`-1073741819`)
WINDOWS_CRASHES = {0xC0000005: "an access violation", 0xC00000FD: "a stack overflow",
                   0xC0000409: "a stack buffer overrun (a fail-fast abort)", 0xC000001D: "an illegal instruction",
                   0xC0000094: "an integer division by zero", 0xC0000135: "a DLL not found",
                   0xC0000017: "no memory left", 0xC000013A: "Ctrl-C (the console's interrupt)"}
_WINDOWS_STATUS = re.compile(r"\b(?:exit (?:status|code)|returned|return code|exitcode)[ :=]*(?P<code>-?\d{10})\b", re.I)


def windows_crash(code: int) -> str | None:
    """`0xC0000005, an access violation` for an exit code that is a Windows crash's NTSTATUS."""
    unsigned = code & 0xFFFFFFFF
    return f"0x{unsigned:08X}, {WINDOWS_CRASHES[unsigned]}" if unsigned in WINDOWS_CRASHES else None


def windows_crash_said(text: str) -> str | None:
    """windows_crash of the exit status a line says (`returned non-zero exit status 3221225477`)."""
    m = _WINDOWS_STATUS.search(text)
    return windows_crash(int(m["code"])) if m else None


def exit_meaning(code: int, *, after_timeout: bool = False) -> tuple[str | None, str]:
    """(signal, meaning) of a shell exit status: 137 -> (SIGKILL, "killed by SIGKILL")."""
    if after_timeout and code in _TIMEOUT_CODES:
        return ("SIGTERM" if code == 124 else None), _TIMEOUT_CODES[code]
    if code == 0:
        return None, "success"
    if 128 < code < 128 + 65 and (name := SIGNALS.get(code - 128)):
        return name, f"killed by {name}"
    if code < 0 and (name := SIGNALS.get(-code)):  # Python's subprocess: -9
        return name, f"killed by {name}"
    if code == 127:
        return None, "command not found"
    if code == 126:
        return None, "command not executable"
    if (crash := windows_crash(code)) is not None:
        return None, f"crashed ({crash})"
    return None, "failed"


# -- words ----------------------------------------------------------------------------------
_TRAINER = re.compile(r"\b(?:python[\d.]*|torchrun|accelerate|deepspeed)\b|\S+\.(?:py|sh)\b")
# Shell control operators (shlex groups these characters into one token) and redirections.
CONTROL = {"&&", "||", ";", ";;", "|", "|&", "&", "(", ")", "\n"}
_OUT_REDIRECTS = {">", ">>", ">|", "&>", "&>>", ">&", "1>", "1>>", "1>|", "1>&"}
_REDIRECT_OPS = _OUT_REDIRECTS | {"<", "<<", "<<<", "2>", "2>>", "2>&", "<&", "<>"}
_HELPERS = {"cd", "echo", "sleep", "kill", "pkill", "pgrep", "grep", "cat", "tail", "head", "ls", "ps",
            "rm", "mkdir", "cp", "mv", "tee", "wc", "export", "source", ".", "nvidia-smi", "watch",
            "less", "vim", "vi", "nano", "which", "top", "htop", "dmesg", "journalctl", "free"}


def shell_words(cmd: str) -> list[str]:
    """A command line as shell tokens: words unquoted, operators (`&&`, `|`, `&`, `2>&1` as
    `2>&` `1`) as tokens of their own, and quoted commands (`bash -c '...'`, `ssh host '...'`,
    `tmux send-keys '...'`) tokenised in place between `;` separators.

    An unbalanced quote (a paste cut short) is closed at the end of the line, as if typed.
    """
    cmd, substs = _protect_substitutions(cmd)
    for closing in ("", "'", '"'):
        try:
            words = _shell_words(cmd + closing, depth=0)
            break
        except ValueError:
            continue
    else:
        words = cmd.split()
    if substs:
        words = [_SUBST.sub(lambda m: substs[int(m[1])], w) for w in words]
    return words


_SUBST = re.compile(r"__subst(\d+)__")


def _protect_substitutions(cmd: str) -> tuple[str, list[str]]:
    """`$(cat x.pid)` and `` `pgrep python` `` as one word each: shlex would cut them at the
    parentheses. Returns the line with placeholders and what they stand for."""
    if "$(" not in cmd and "`" not in cmd:
        return cmd, []
    out: list[str] = []
    substs: list[str] = []
    i = 0
    while i < len(cmd):
        start = cmd.find("$(", i)
        tick = cmd.find("`", i)
        if start < 0 and tick < 0:
            out.append(cmd[i:])
            break
        if tick >= 0 and (start < 0 or tick < start):
            end = cmd.find("`", tick + 1)
            end = len(cmd) - 1 if end < 0 else end
            out.append(cmd[i:tick])
            substs.append(cmd[tick:end + 1])
            i = end + 1
        else:
            depth, j = 0, start + 1
            while j < len(cmd):
                depth += {"(": 1, ")": -1}.get(cmd[j], 0)
                if depth == 0:
                    break
                j += 1
            out.append(cmd[i:start])
            substs.append(cmd[start:j + 1])
            i = j + 1
        out.append(f"__subst{len(substs) - 1}__")
    return "".join(out), substs


def _shell_words(cmd: str, depth: int) -> list[str]:
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
        # A quoted command (bash -c '...', ssh host '...'): its words in place. Depth-limited:
        # a quote inside a quote inside a quote is an argument, not a script.
        if " " in tok and depth < 3 and _TRAINER.search(tok) and not _takes_text(out):
            try:
                out += [";", *_shell_words(tok, depth + 1), ";"]
            except ValueError:
                out += [";", *tok.split(), ";"]
            continue
        out.append(tok)
    return out


# Commands whose quoted argument is text to match or print, not a command to run.
_TEXT_ARGUMENT = {"pkill", "pgrep", "grep", "egrep", "fgrep", "killall", "echo", "printf", "awk", "sed"}


def _takes_text(words: list[str]) -> bool:
    start = max((i + 1 for i, w in enumerate(words) if w in CONTROL), default=0)
    return command_name(words[start:]) in _TEXT_ARGUMENT


def simple_commands(words: list[str]) -> list[tuple[list[str], str]]:
    """Words split at control operators: (the command's words, the operator after it)."""
    out: list[tuple[list[str], str]] = []
    cur: list[str] = []
    for w in words:
        if w in CONTROL:
            if cur:
                out.append((cur, w))
            cur = []
        else:
            cur.append(w)
    if cur:
        out.append((cur, ""))
    return out


def command_name(words: list[str]) -> str:
    """The program a simple command runs, behind `VAR=1`, `sudo -u x`, `env`, `time`, `nohup`...:
    `sudo -u x /usr/bin/kill -9 5` -> `kill`."""
    i = 0
    while i < len(words):
        w = words[i]
        base = w.rsplit("/", 1)[-1]
        if re.match(r"[A-Za-z_]\w*=", w):
            i += 1
            continue
        if base in _PREFIXES:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in _PREFIX_VALUE_OPTIONS and base in ("sudo", "nice", "ionice", "stdbuf") else 1
            continue
        return base
    return ""


_PREFIXES = {"sudo", "env", "time", "nohup", "setsid", "stdbuf", "nice", "ionice", "command", "builtin", "exec"}
_PREFIX_VALUE_OPTIONS = {"-u", "-g", "-n", "-c", "-o", "-e"}
_ASSIGNMENT = re.compile(r"(?P<name>[A-Za-z_]\w*)=(?P<value>.*)", re.S)


def environment_changes(cmd: str) -> tuple[dict[str, str | None], dict[str, str]]:
    """What a typed command does to environment variables: (what it leaves set in the shell for
    the commands after it: `export A=1`, `declare -x A=1`, `unset A` as None; what it gives only
    the program it runs: `A=1 python ...`, `env A=1 ...`). A setting the operator typed between
    two launches (`export CUDA_LAUNCH_BLOCKING=1` to debug a crash) changes how the next trains
    as much as a flag does."""
    kept: dict[str, str | None] = {}
    given: dict[str, str] = {}
    for words, _ in simple_commands(shell_words(cmd or "")):
        head = words[0] if words else ""
        if head in ("export", "declare", "typeset") and (head == "export" or "-x" in words[1:]):
            for w in words[1:]:
                m = _ASSIGNMENT.fullmatch(w)
                if m:
                    kept[m["name"]] = m["value"]
        elif head == "unset":
            kept.update({w: None for w in words[1:] if re.fullmatch(r"[A-Za-z_]\w*", w)})
        else:
            for w in words:
                m = _ASSIGNMENT.fullmatch(w)
                if m:
                    given[m["name"]] = m["value"]
                elif w.rsplit("/", 1)[-1] not in _PREFIXES and not w.startswith("-"):
                    break
    return kept, given


# -- launches -------------------------------------------------------------------------------
# Launchers, in the order they wrap each other (ssh host 'nohup ...'): the outermost is named.
KIT_LAUNCHER = re.compile(r"\bdflash[-_]postmortem(?:\.cli)? launch\b")
_LAUNCHERS = (
    ("ssh", re.compile(r"(?:^|[\s;&|(])ssh\s")),
    ("pct exec", re.compile(r"\bpct exec\b")),
    ("docker exec", re.compile(r"\bdocker exec\b")),
    ("kubectl exec", re.compile(r"\bkubectl exec\b")),
    ("tmux", re.compile(r"\btmux (?:send-keys|send|new-session|new)\b")),
    ("screen", re.compile(r"\bscreen -\w*d")),
    ("dflash-postmortem launch", KIT_LAUNCHER),
    ("setsid", re.compile(r"(?:^|[\s;&|(])setsid\s")),
    ("nohup", re.compile(r"(?:^|[\s;&|(])nohup\s")),
    ("torchrun", re.compile(r"\btorchrun\b|torch\.distributed\.(?:run|launch)")),
    ("accelerate", re.compile(r"\baccelerate launch\b")),
    ("deepspeed", re.compile(r"(?:^|[\s;&|(])deepspeed\s")),
)
RUN_NAME = re.compile(r"--run[-_]name[= ](?P<run>[\w.@-]+)")


@dataclass
class Launch:
    launcher: str
    background: bool
    log_path: str | None
    program: str | None
    args: str
    run: str | None
    timeout_s: float | None = None  # `timeout [-s SIG] DURATION cmd`: how long it was allowed
    timeout_signal: str | None = None
    loop_pass: str | None = None  # the command one pass of a `for` loop ran, its variable filled in


# Launchers whose own program starts the trainer, known by their file's name as Python is: a
# virtualenv's `/opt/venv/bin/torchrun` is torchrun.
_LAUNCHER_PROGRAMS = ("torchrun", "accelerate", "deepspeed")
# Programs that run trainers by a subcommand, their output the trainers' (a sweep's agent runs
# each run as its child, on its own terminal)
_RUNNING_SUBCOMMANDS = {"wandb": "agent"}


def _program_index(words: list[str]) -> int | None:
    i = next((i for i, w in enumerate(words) if re.search(r"\.(py|sh)$", w)
              or not w.startswith("-") and Path(w).name in _LAUNCHER_PROGRAMS
              or Path(w).name in _RUNNING_SUBCOMMANDS and words[i + 1:i + 2] == [_RUNNING_SUBCOMMANDS[Path(w).name]]),
             None)
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


_DURATION = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>[smhd]?)$")


def timeout_wrapper(words: list[str]) -> tuple[float, str] | None:
    """`timeout [-s SIG | --signal=SIG] [-k D] DURATION cmd ...` -> (seconds, signal sent)."""
    if "timeout" not in words:
        return None
    i = words.index("timeout") + 1
    sig = "SIGTERM"
    while i < len(words) and words[i].startswith("-"):
        w = words[i]
        if w in ("-s", "--signal") and i + 1 < len(words):
            sig = signal_name(words[i + 1]) or sig
            i += 2
            continue
        if w.startswith("--signal="):
            sig = signal_name(w.split("=", 1)[1]) or sig
        elif w.startswith("-s") and len(w) > 2:
            sig = signal_name(w[2:]) or sig
        elif w in ("-k", "--kill-after"):
            i += 1
        i += 1
    if i >= len(words):
        return None
    m = _DURATION.match(words[i])
    if not m:
        return None
    scale = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m["unit"]]
    return float(m["n"]) * scale, sig


def _kit_launch(words: list[str]) -> Launch | None:
    """`dflash-postmortem launch --log F ... -- CMD` (or `python -m dflash_postmortem.cli launch`):
    CMD runs in its own session with its output in F, whatever the shell around it does."""
    for seg, _ in simple_commands(words):
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
        rm = RUN_NAME.search(" ".join(target))
        return Launch("dflash-postmortem launch", True, log_path, program, args, rm.group("run") if rm else None)
    return None


def parse_launch(cmd: str) -> Launch | None:
    """A command that starts a trainer in the background, through a launcher or under `timeout`;
    None for anything else (a foreground `python check.py` is a command, not a launch)."""
    words = shell_words(cmd)
    kit = _kit_launch(words)
    if kit is not None:
        return kit
    launcher = next((name for name, rx in _LAUNCHERS if rx.search(cmd)), None)
    detached = bool(re.search(r"\btmux (?:new|send)|\bscreen -\w*d|\b(?:docker|kubectl) exec (?:-\w+ )*-\w*d", cmd))
    background = "&" in words or "disown" in words or detached
    commands = simple_commands(words)
    found = next(((k, c) for k, (c, _) in enumerate(commands)
                  if command_name(c) not in _HELPERS and _program_index(c) is not None), None)
    if found is None:
        return None
    k, seg = found
    limit = timeout_wrapper(seg)
    if launcher is None and not background and limit is None:
        return None
    if launcher is None:
        launcher = "timeout" if limit is not None and not background else "&"
    seg, log_path = _without_redirects(seg)
    # its output piped on: the file the pipeline ends in is its log, through `tee` or through any
    # filter (`| cut -c21- > train.log`, `| grep --line-buffered step > steps.log`)
    j = k
    while log_path is None and commands[j][1] in ("|", "|&") and j + 1 < len(commands) and commands[j + 1][0]:
        stage = commands[j + 1][0]
        log_path = _tee_target(stage) if stage[0] == "tee" else _without_redirects(stage)[1]
        j += 1
    prog_i = _program_index(seg)
    if log_path is None and prog_i is not None and "nohup" in seg[:prog_i]:
        # nohup sends output that no redirection took to `nohup.out` in the current folder,
        # appending: every such launch from there writes that one file
        log_path = "nohup.out"
    if log_path == "/dev/null":
        log_path = None
    program = seg[prog_i] if prog_i is not None else None
    args = " ".join(seg[prog_i + 1:]) if prog_i is not None else ""
    rm = RUN_NAME.search(cmd)
    return Launch(launcher, background, log_path, program, args, rm.group("run") if rm else None,
                  timeout_s=limit[0] if limit else None, timeout_signal=limit[1] if limit else None)


def parse_launches(cmd: str) -> list[Launch]:
    """Each trainer a command line starts: a `for` loop over listed values (a sweep typed in one
    line) starts one per pass, with its variable filled in, as the shell runs it."""
    passes = loop_passes(cmd)
    if not passes:
        return [launch] if (launch := parse_launch(cmd)) is not None else []
    return [replace(launch, loop_pass=one) for one in passes if (launch := parse_launch(one)) is not None]


# `for NAME in VALUES; do BODY; done`, one line; a body ended by `&` needs no `;` before `done`.
_FOR_LOOP = re.compile(r"(?:^|[;&|(]|\s)for\s+(?P<var>[A-Za-z_]\w*)\s+in\s+(?P<values>[^;\n]*?)\s*[;\n]\s*"
                       r"do\s+(?P<body>.*?)\s*;?\s*done\b", re.S)
_RANGE = re.compile(r"\{(?P<a>-?\d+)\.\.(?P<b>-?\d+)\}|\$\(\s*seq\s+(?:(?P<first>-?\d+)\s+)?(?P<last>-?\d+)\s*\)")
# Beyond this many passes a loop is not a sweep a person typed (`{1..1000000}`): left as one command.
_MAX_PASSES = 64


def loop_passes(cmd: str) -> list[str]:
    """The command each pass of a one-line `for` loop runs, its variable (`$lr`, `${lr}`) filled
    in with each value (listed words, `{1..4}`, `$(seq 0 3)`); [] for a line with no loop, or
    one whose values the text does not hold (a glob, `$(ls ...)`, a variable)."""
    m = _FOR_LOOP.search(cmd or "")
    values = loop_values(m["values"]) if m is not None else None
    if not values:
        return []
    return [expand_variables(m["body"], {m["var"]: v}) for v in values]


# A script's loop header on a line of its own: `for seed in 0 1 2; do`, or `for i in $(seq 1 3)`
# with its `do` on the next line.
LOOP_HEADER = re.compile(r"^\s*for\s+(?P<var>[A-Za-z_]\w*)\s+in\s+(?P<values>[^;]*?)\s*(?:;\s*do)?\s*$")


def loop_values(text: str) -> list[str] | None:
    """The values a `for` loop's `in` list gives, where its text holds them: words, `{1..4}`,
    `$(seq 0 3)`; None for a glob, `$(ls ...)`, a variable, or more than _MAX_PASSES."""
    values: list[str] = []
    for word in re.findall(r"\$\([^)]*\)|\S+", text):
        r = _RANGE.fullmatch(word)
        if r is not None:
            a, b = (int(r["a"]), int(r["b"])) if r["a"] is not None else (int(r["first"] or 1), int(r["last"]))
            step = 1 if b >= a else -1
            if abs(b - a) >= _MAX_PASSES:
                return None
            values += [str(v) for v in range(a, b + step, step)]
        elif re.search(r"[$`*?\[{]", word):
            return None
        else:
            values.append(word.strip("'\""))
    return values if values and len(values) <= _MAX_PASSES else None


# a variable a command names (`$LOG`, `${LOG}`, `${LOG:-logs/train.log}`)
_REFERENCE = re.compile(r"\$\{(?P<braced>[A-Za-z_]\w*)(?::?-(?P<default>[^}]*))?\}|\$(?P<plain>[A-Za-z_]\w*)")


def expand_variables(text: str, values: dict[str, str]) -> str:
    """`text` with the variables whose values are known put in (a script's own assignments, a
    loop's variable; `${LOG:-x}`: the default where none is known, as the shell gives it to an
    unset variable); any other stays as written (the environment's, unknown here)."""
    def value(m: re.Match) -> str:
        name = m["braced"] or m["plain"]
        if name in values:
            return values[name]
        return m["default"].strip("'\"") if m["default"] is not None else m.group(0)
    return _REFERENCE.sub(value, text)


# -- kills ----------------------------------------------------------------------------------
@dataclass
class KillTarget:
    """One target of a kill-like command: a PID, a process GROUP (`kill -- -924`), a job (`%1`),
    a name pattern (`pkill -f train.py`, `killall python`) or a terminal multiplexer's session
    (`tmux kill-session -t train`, `screen -S train -X quit`: what was started in it gets SIGHUP)."""

    program: str  # kill, pkill, killall, skill, tmux, screen, scancel
    signal: str
    pid: int | None = None
    is_group: bool = False
    job: int | None = None
    pattern: str | None = None
    expr: str | None = None  # `kill $(cat run/train.pid)`: the PID is known only when it ran
    session: str | None = None  # a tmux or screen session name; "*" for every one (`tmux kill-server`)
    scheduler_job: str | None = None  # `scancel 1234`: a Slurm job (`1234_5` an array task, `1234.0` a step)


_KILL_VALUE_OPTIONS = {"-u", "-U", "-g", "-G", "-P", "-t", "--user", "--parent", "--group", "--terminal"}


def kill_targets(cmd: str) -> list[KillTarget]:
    """Every target of every kill/pkill/killall in a command line, with the signal sent.

    `kill 924` -> PID 924 (SIGTERM); `kill -9 -- -924` and `kill -KILL -924` -> process group 924;
    `kill %1` -> job 1; `pkill -9 -f "python train.py"` -> pattern; `kill -- -$(cat x.pid)` -> the
    expression (a group: note the minus), its PID unknown until an answer names it. A target
    named twice in one command (`kill -9 6943 6943`) is one target.
    """
    out: list[KillTarget] = []
    for seg, _ in simple_commands(shell_words(cmd)):
        name = command_name(seg)
        if name in ("tmux", "screen"):
            out += _multiplexer_kill(name, seg)
            continue
        if name == "scancel":
            out += _scancel(seg)
            continue
        if name not in ("kill", "pkill", "killall", "skill"):
            continue
        i = next(i for i, w in enumerate(seg) if w.rsplit("/", 1)[-1] == name) + 1
        first = len(out)  # this command's targets start here: one named twice is one target
        sig = "SIGTERM"
        sig_given = options_done = False
        args: list[str] = []
        groups: list[str] = []
        while i < len(seg):
            w = seg[i]
            if options_done or not w.startswith("-") or w == "-":
                args.append(w)
            elif w == "--":
                options_done = True
            elif name == "pkill" and w in ("-g", "-s", "--pgroup", "--session") and i + 1 < len(seg):
                groups += seg[i + 1].split(",")  # pkill -g PGID / -s SID: a whole group or session
                i += 1
            elif w in ("-s", "--signal", "-n") and i + 1 < len(seg):
                sig, sig_given = signal_name(seg[i + 1]) or sig, True
                i += 1
            elif w.startswith("--signal="):
                sig, sig_given = signal_name(w.split("=", 1)[1]) or sig, True
            elif name == "kill" and (w[1:].isdigit() and (sig_given or args) or w[1:2] in ("$", "`")):
                args.append(w)  # kill -9 -924 / kill -9 -$(cat x.pid): after the signal, a group
            elif (s := signal_name(w)) and not sig_given:
                sig, sig_given = s, True
            elif name != "kill" and w in _KILL_VALUE_OPTIONS:
                i += 1  # pkill -u user: the value is not a pattern
            i += 1
        for a in args:
            if name == "kill":
                if re.fullmatch(r"-?\d+", a):
                    n = int(a)
                    out.append(KillTarget(name, sig, pid=abs(n), is_group=n < 0 or a.startswith("-")))
                elif re.fullmatch(r"%\d+", a):
                    out.append(KillTarget(name, sig, job=int(a[1:])))
                elif "$" in a or "`" in a:
                    out.append(KillTarget(name, sig, is_group=a.startswith("-"), expr=a.removeprefix("-")))
            elif not a.startswith("$"):
                out.append(KillTarget(name, sig, pattern=a))
        if not args:  # `pkill -g 924` alone: the group is the target (with a pattern, it only narrows it)
            out += [KillTarget(name, sig, pid=int(g), is_group=True) for g in groups if g.isdigit() and int(g) > 0]
        mine = out[first:]
        out[first:] = [t for k, t in enumerate(mine) if t not in mine[:k]]
    return out


# scancel's options that take a value (`-u alice`, `--partition gpu`), and a job id as it names
# one: `1234`, an array task `1234_5`, a het component `1234+1`, a step `1234.0`.
_SCANCEL_VALUES = {"-A", "--account", "-M", "--clusters", "-n", "--name", "--jobname", "-p", "--partition",
                   "-q", "--qos", "-R", "--reservation", "-s", "--signal", "-t", "--state", "-u", "--user",
                   "-w", "--nodelist", "--wckey", "--sibling"}
_SLURM_JOB = re.compile(r"\d+(?:[_+]\d+)?(?:\.\w+)?")


def _scancel(seg: list[str]) -> list[KillTarget]:
    """`scancel [-s SIGNAL] JOBID...`: Slurm ends each job (SIGTERM to its processes, then SIGKILL
    after its KillWait), or only signals it where `--signal` is given. Jobs chosen by name, user
    or partition are not targets the command line names."""
    i = next(i for i, w in enumerate(seg) if w.rsplit("/", 1)[-1] == "scancel") + 1
    sig, jobs = "SIGTERM", []
    while i < len(seg):
        w = seg[i]
        option, _, value = w.partition("=")
        if option in _SCANCEL_VALUES:
            if not value and i + 1 < len(seg):
                value = seg[i + 1]
                i += 1
            if option in ("-s", "--signal"):
                sig = signal_name(value) or sig
        elif _SLURM_JOB.fullmatch(w):
            jobs.append(w)
        i += 1
    return [KillTarget("scancel", sig, scheduler_job=j) for j in dict.fromkeys(jobs)]


def _multiplexer_kill(name: str, seg: list[str]) -> list[KillTarget]:
    """`tmux kill-session -t NAME`, `tmux kill-server`, `screen -S NAME -X quit`: the multiplexer
    closes the session's panes, and the programs started in them get SIGHUP (a program run under
    `nohup` ignores it and lives on)."""
    i = next(i for i, w in enumerate(seg) if w.rsplit("/", 1)[-1] == name)
    words = seg[i + 1:]
    if name == "tmux":
        if "kill-server" in words:
            return [KillTarget("tmux", "SIGHUP", session="*")]
        if "kill-session" not in words:
            return []
        return [KillTarget("tmux", "SIGHUP", session=t) for t in [_option_value(words, "-t")] if t]
    if "-X" in words and {"quit", "kill"} & set(words[words.index("-X") + 1:]):
        return [KillTarget("screen", "SIGHUP", session=t) for t in [_option_value(words, "-S")] if t]
    return []


def _option_value(words: list[str], option: str) -> str | None:
    """The value of `-t NAME` / `-tNAME` / `-t=NAME`; a tmux target's window part (`train:0`)
    names its session."""
    for k, w in enumerate(words):
        if w == option and k + 1 < len(words):
            value = words[k + 1]
        elif w.startswith(option) and len(w) > len(option):
            value = w[len(option):].lstrip("=")
        else:
            continue
        return value.split(":", 1)[0].removeprefix("=") or None
    return None


def multiplexer_session(cmd: str) -> str | None:
    """The tmux or screen session a command starts a program in: `tmux new-session -d -s NAME
    '...'`, `tmux send-keys -t NAME '...'`, `screen -dmS NAME ...`."""
    for seg, _ in simple_commands(shell_words(cmd)):
        name = command_name(seg)
        if name not in ("tmux", "screen"):
            continue
        words = seg[next(i for i, w in enumerate(seg) if w.rsplit("/", 1)[-1] == name) + 1:]
        if name == "tmux" and words and words[0] in ("new-session", "new"):
            return _option_value(words, "-s")
        if name == "tmux" and words and words[0] in ("send-keys", "send"):
            return _option_value(words, "-t")
        if name == "screen":
            for k, w in enumerate(words):
                if re.fullmatch(r"-[dmDRrA]*S", w) and k + 1 < len(words):
                    return words[k + 1]  # -S NAME, -dmS NAME
                if w.startswith("-S") and len(w) > 2:
                    return w[2:]
    return None


# -- what a launch line runs, and what a command does to a session --------------------------
# The script (or `-m` module) a launch runs and its arguments, up to the first redirect, pipe,
# separator or closing quote.
_SCRIPT_CALL = re.compile(r"(?P<script>[\w./~-]+\.py)(?P<args>(?:\s+(?![0-9]?[<>|;&'\"])[^\s<>|;&'\"]+)*)")
# `python -m module`, and a launcher's `-m`: `torchrun --nproc-per-node 2 -m module` (its own
# options, with their values, come first)
_MODULE_CALL = re.compile(r"(?:\bpython[\d.]*(?:\s+-[^m\s]\S*)*|\btorchrun(?:\s+(?!-m\b)[^\s<>|;&'\"]+)*?)"
                          r"\s+-m\s+(?P<script>[\w.]+)"
                          r"(?P<args>(?:\s+(?![0-9]?[<>|;&'\"])[^\s<>|;&'\"]+)*)")
# Programs that run another program: a process running one of these is not the trainer itself.
_WRAPPER_PROCESS = re.compile(
    r"^\s*(?:\S*/)?(?:ba|z|da)?sh\s+-c\b|^\s*(?:\S*/)?(?:tmux|screen|ssh|pct|docker|kubectl|nohup|setsid|"
    r"timeout|nice|ionice|taskset|numactl|stdbuf|chrt|env|time|srun)\b|" + KIT_LAUNCHER.pattern.replace(" launch", r"\s+launch"))
# Sessions a background job dies with unless detached from them.
_SESSION_LAUNCHER = re.compile(r"\b(?P<how>pct exec|pct enter|lxc-attach|docker exec|kubectl exec|ssh)\b")
_DETACHING = re.compile(r"\bsetsid\b|\bdisown\b|\btmux\b|\bscreen\b|\bsystemd-run\b")
# `--use-reentrant` on a command line and wandb's `use_reentrant` name one setting.
_FLAG_KEY = re.compile(r"-")


# The value a bare `--switch` is read as.
SWITCH = "true"


def flags_of(args: str) -> dict[str, str]:
    """`--flag value`, `--flag=value` and bare `--switch` (as SWITCH) of an argument string."""
    try:
        tokens = shlex.split(args)
    except ValueError:
        tokens = args.split()
    flags: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("-"):
            key, eq, val = tok.partition("=")
            if not eq:
                nxt = tokens[i + 1] if i + 1 < len(tokens) else None
                if nxt is not None and not nxt.startswith("--"):
                    val, i = nxt, i + 1
                else:
                    val = SWITCH
            flags[key] = val
        i += 1
    return flags


def invocation(command: str) -> tuple[str | None, dict[str, str]]:
    """The python script (or `-m` module, or the wrapper a launch names) a command line runs, and
    its `--flag value` arguments."""
    command = command or ""
    kit = KIT_LAUNCHER.search(command)
    if kit and " -- " in command[kit.end():]:
        command = command[kit.end():].split(" -- ", 1)[1]
    m = _SCRIPT_CALL.search(command) or _MODULE_CALL.search(command)
    if m:
        script, args = m.group("script"), m.group("args")
    else:
        launch = parse_launch(command)
        if launch is None or not launch.program:
            return None, {}
        script, args = launch.program, launch.args or ""
    return Path(script).name, flags_of(args)


def flag_key(name: str) -> str:
    """`--use-reentrant` and wandb's `use_reentrant` name the same setting."""
    return _FLAG_KEY.sub("_", name.lstrip("-")).lower()


# A command line that runs Python (`python3 train.py`, `python -m pkg`, `./train.py`), and one
# that runs a launcher's agent (which runs Python).
PYTHON_RUN = re.compile(r"(?:^|/)python[\d.]*\s|\s-m\s[\w.]+|\.py\b")
AGENT_RUN = re.compile(r"\btorchrun\b|torch\.distributed\.(?:run|launch)|\bdeepspeed\b|\baccelerate launch\b")


def only_helpers(command: str) -> bool:
    """Whether every simple command of a line is a helper or a text tool (`sed -i ... x.py`,
    `cat train.py`, `mkdir -p logs`): nothing it runs is a trainer, whatever file it names."""
    commands = simple_commands(shell_words(command or ""))
    return bool(commands) and all(command_name(c) in _HELPERS | _TEXT_ARGUMENT for c, _ in commands)


def runs_program(command: str) -> bool:
    """Whether a command runs a program a trainer can be: Python, a launcher's agent, a script."""
    return bool(PYTHON_RUN.search(command) or AGENT_RUN.search(command) or re.search(r"\.sh\b", command))


def foreground_log(command: str) -> str | None:
    """The log a command writes that runs a trainer in the foreground into it (`python
    train.py > run.log`, `... 2>&1 | tee logs/train.log`), else None (a background or launcher
    start is `parse_launch`'s)."""
    if parse_launch(command or "") is not None or not runs_program(command or ""):
        return None
    return log_target(command)


# Programs that print each command of a recipe before they run it (GNU make, just): the trainer
# `make train` starts is the command line it printed, with its variables filled in.
_RECIPE_RUNNERS = {"make", "gmake", "just"}
# How far into a recipe runner's output its trainer's command is looked for (a recipe's first
# lines: `mkdir -p logs`, then `python train.py ...`); the rest is what the command printed.
_RECIPE_LINES = 10
_RUNNER_SAYS = re.compile(r"^(?:g?make|just)(?:\[\d+\])?:")


def echoed_command(command: str, output: list[str]) -> str | None:
    """The trainer command a recipe runner typed at a prompt (`make train`) printed before running
    it (`python train.py --lr 1e-4 > logs/train.log 2>&1`): the first line near the top of its
    output whose command is a program (after helpers: `cd`, `mkdir`, `export`), else None (a silent `@` recipe,
    another command; a traceback's `File "train.py"` line is no command)."""
    words = shell_words(command or "")
    if not any(command_name(seg) in _RECIPE_RUNNERS for seg, _ in simple_commands(words)):
        return None
    for line in output[:_RECIPE_LINES]:
        line = line.strip()
        if not line or _RUNNER_SAYS.match(line):
            continue
        names = [command_name(seg) for seg, _ in simple_commands(shell_words(line))]
        first = next((n for n in names if n not in _HELPERS), "")
        if _TRAINER.fullmatch(first) and runs_program(line):
            return line
    return None


def foreground_program(command: str) -> str | None:
    """The trainer a command runs in the foreground, its output on the terminal (`python train.py
    2>&1 | tee logs/train.log`, `torchrun ... train.py`): the program's word; None for a launch
    into the background, a helper (`cat`, `grep`, `ls`) or a command that runs no program."""
    words = shell_words(command or "")
    if "&" in words or "disown" in words:
        return None
    for seg, _ in simple_commands(words):
        if command_name(seg) in _HELPERS:
            continue
        i = _program_index(seg)
        if i is not None:
            return seg[i]
    return None


def without_redirections(command: str) -> str:
    """A command line as its processes' command lines hold it: its words without the shell's
    redirections (`python train.py > logs/train.log 2>&1` -> `python train.py`)."""
    return " ".join(_without_redirects(shell_words(command or ""))[0])


def log_target(command: str) -> str | None:
    """Where a launch sends its stdout: its `>` redirect or `| tee` target (not /dev/null)."""
    launch = parse_launch(command or "")
    path = launch.log_path if launch is not None else None
    if path is None:
        words = shell_words(command or "")
        _, path = _without_redirects(words)
        if path is None and "tee" in words:
            path = _tee_target(words[words.index("tee"):])
    return None if path in (None, "/dev/null") or str(path).startswith("&") else path


_SHELL_RUNS = re.compile(r"^\s*(?:\S*/)?(?:ba|z|da)?sh\s+-c\b")


def is_shell_running(command: str) -> bool:
    """A `sh -c '...'` process: a shell holding a command line, not a program of its own."""
    return bool(_SHELL_RUNS.search(command or ""))


# what runs a script given as its first word: a shell (`/bin/bash ./run.sh`, as ps lists a
# script run by its #! line), or nohup and setsid, which exec it
_SCRIPT_RUNNERS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "nohup", "setsid"})


def runs_script(command: str, name: str) -> bool:
    """Whether a process command line runs the script `name` (a file name): `./run.sh`,
    `/bin/bash ./run.sh`, `bash -x run.sh`; not `vim run.sh` nor `tail -f run.sh.log`."""
    word = _program_word(command)
    return word is not None and word.rsplit("/", 1)[-1] == name


def runs_a_script(command: str) -> bool:
    """Whether a process runs a script file (`/bin/bash ./run.sh`, `sh -x loop.sh`, `./supervise`,
    `python3 supervise.py`), not a bare shell (`-bash`, `bash --login`, `zsh`) where commands are
    typed by hand."""
    word = _program_word(command)
    return word is not None and ("/" in word or "." in word.rsplit("/", 1)[-1] or invocation(command)[0] is not None)


def runs_launcher(command: str) -> bool:
    """Whether a process's command line is a launcher's agent itself (`torchrun ...`, `python
    /venv/bin/torchrun ...`, `python -m torch.distributed.run ...`, `accelerate launch`,
    `deepspeed`), not a program that names one among its arguments (`python3 driver.py
    torchrun-halt`)."""
    words = command.split()
    at = 0
    while at < len(words) and (re.match(r"python[\d.]*$", words[at].rsplit("/", 1)[-1]) or words[at].startswith("-")
                               and words[at] != "-m"):
        at += 1  # the interpreter and its own options
    if at < len(words) and words[at] == "-m":
        return at + 1 < len(words) and words[at + 1] in ("torch.distributed.run", "torch.distributed.launch")
    return at < len(words) and words[at].rsplit("/", 1)[-1] in _LAUNCHER_PROGRAMS


def _program_word(command: str) -> str | None:
    """The first word of a command line that is no script runner nor option: the script or
    program it runs (None: a shell alone)."""
    for word in command.split():
        if word.rsplit("/", 1)[-1] not in _SCRIPT_RUNNERS and not word.startswith("-"):
            return word
    return None


def is_wrapper_process(command: str) -> bool:
    """A process command line that runs another program (a shell -c, nohup, timeout, ssh...)."""
    return bool(_WRAPPER_PROCESS.search(command or ""))


def session_launcher(command: str) -> str | None:
    """The session a background job was started inside (`ssh`, `docker exec`, `pct exec`...)."""
    m = _SESSION_LAUNCHER.search(command or "")
    return m.group("how") if m else None


def is_detached(command: str) -> bool:
    """Started out of the shell's session (setsid, disown, tmux, screen, systemd-run)."""
    return bool(_DETACHING.search(command or ""))


def hangup_exposed(command: str) -> str | None:
    """The program of a job typed in a shell that the shell's hangup kills, or None where none:
    the job's first program where nothing guards it (`python3 train.py &`), a later part of its
    pipeline where `nohup` guards only the first (`nohup python3 train.py 2>&1 | tee train.log &`:
    tee dies with the terminal, and the trainer's next write to its pipe fails). Not a job
    started out of the shell's session (is_detached)."""
    if is_detached(command):
        return None
    bare = next((w for w in _job_pipeline(command) if w and w[0] != "nohup"), None)
    return command_name(bare) if bare else None


def pipes_into(command: str) -> str | None:
    """The program a job's trainer pipes its output into (`python3 train.py | tee train.log &`:
    tee), or None where it pipes into none. Bash's `[1] 685` for such a job is that last
    program's PID, not the trainer's."""
    job = _job_pipeline(command)
    return command_name(job[-1]) if len(job) > 1 and not runs_program(" ".join(job[-1])) else None


def _job_pipeline(command: str) -> list[list[str]]:
    """The simple commands of the pipeline that runs a program a trainer can be (not a `cd` or
    `source` before it), in order."""
    pipelines, joined = [], False
    for words, sep in simple_commands(shell_words(command or "")):
        if joined:
            pipelines[-1].append(words)
        else:
            pipelines.append([words])
        joined = sep in ("|", "|&")
    return next((p for p in reversed(pipelines) if any(runs_program(" ".join(w)) for w in p)), [])


# -- prompts --------------------------------------------------------------------------------
# Prompts come in many shapes; `match_prompt` knows these (a command may follow each):
#
#     [2026-11-30T05:23:01.707Z] $ cmd        the kit's own stamped transcripts
#     user@host:~/dir$ cmd    root@host:/w# cmd    (venv) (base) user@host:~ (main)$ cmd
#     [user@host dir]$ cmd    [root@host:~]# cmd   user@host ~ % cmd    user@host ~ $ cmd
#     user@host:~> cmd        host:~ # cmd         (SUSE)
#     host:dir user$ cmd      bash-5.1$ cmd        sh-4.2# cmd
#     ❯ cmd    ➜  dir git:(main) ✗ cmd    λ cmd    PS C:\\dir> cmd    C:\\dir>cmd
#     $ cmd    # cmd (when cmd starts with a known command)   [03:04:05] user@host:~$ cmd
#     + cmd / ++ cmd                           `set -x` traces (a script's commands)
#
# A transcript is read command by command, so its prompts are parsed exactly (`match_prompt`). A
# pasted capture only needs its prompt lines told from the output around them, so a looser
# pattern serves there (`PASTED_PROMPT`, `is_bare_prompt`, `ran`): it also takes a bare `>` or
# `%`, and a prompt's first line above the command.
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
    # dev containers and GitHub Codespaces: `@user ➜ /workspaces/repo (main) $ cmd` (`user` without
    # the `@` in a local dev container)
    ("user ➜ dir $", re.compile(rf"^{_ENV}@?[\w.-]+ ➜ +[^\s$#]+(?: \([^)]*\))?(?: ✗)? ?[$#](?: (?P<cmd>.*))?$")),
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


# Every form above has one of these signs before its command: a line with none of them is output,
# told without trying each form (a sniffer asks this of every line of every file it looks at).
_PROMPT_SIGNS = re.compile(r"[$#%>+➜❯λ»→▶]")


def match_prompt(line: str) -> Prompt | None:
    """The prompt a line starts with and the command after it, or None (an output line)."""
    if _PROMPT_SIGNS.search(line) is None:
        return None
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


# A shell prompt as pastes show it: `user@host:~$`, `[user@host dir]$`, `root@host:/#`,
# `(venv) ...`, `PS C:\>`, `C:\Users\me>`, a bare `$`/`#`/`%`, zsh's `❯`/`➜  dir`.
PASTED_PROMPT = (
    r"(?:\([^()\s]*\)\s*)?"
    r"(?:[\w.-]+@[\w.-]+(?::\S*)?\s?[$#%]"
    r"|\[[^\]\n]+\]\s?[$#%]"
    r"|PS [A-Za-z]:[^>]*>"
    r"|[A-Za-z]:\\[^>]*>"
    r"|~[^\s>]*>"
    r"|[$#%>❯»]"
    r"|➜\s+\S+"
    r")"
)
# A prompt with nothing typed, or the first line of a two-line prompt (starship, oh-my-zsh,
# "[user@host dir]" above "$ command").
_BARE_PROMPT = re.compile(rf"^\s*(?:{PASTED_PROMPT}|~[\w./-]*|\[[\w.-]+@[\w.-]+[^\]]*\])\s*$")


def is_bare_prompt(line: str) -> bool:
    """A pasted prompt line with no command typed after it."""
    return _BARE_PROMPT.match(line) is not None


@lru_cache(maxsize=8)
def ran(program: str) -> re.Pattern:
    """The pattern of a pasted line that ran `program`: a prompt then any command line naming it,
    the command itself (behind sudo, watch, timeout, srun, ssh, docker or kubectl; a full path;
    `.exe`; a notebook's `!`), or the header `watch` draws above its output."""
    name = re.escape(program)
    return re.compile(
        rf"^\s*(?:{PASTED_PROMPT}\s*|(?:sudo|watch|timeout|srun|ssh|docker|kubectl)\s)"
        rf".*?(?<![\w.-]){name}(?:\.exe)?(?=[\s'\";|&)]|$)"
        rf"|^\s*!?\s*(?:\S*[/\\])?{name}(?:\.exe)?(?=\s|$)"
        rf"|^\s*Every \d+(?:\.\d+)?s: .*\b{name}\b"
    )
