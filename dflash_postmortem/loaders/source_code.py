"""Files beside the logs that are not evidence: a trainer's source, its launcher script, its
configuration. Recognised by content (a Python file's `import` / `def` / `class` lines, a shell
script's `#!` line or statements without a prompt, a YAML/TOML document of settings), never by
name, so that none is read as console text with an event per line.

- Python source: every line skipped, "source code, not evidence".
- A shell script: the lines that launch a trainer (`python train.py --lr 3e-4`, `torchrun ...`;
  not a helper that names a Python file, `sed -i ... settings.py`) are read as configuration: the program and its flags go into the load report's notes; the
  other lines are skipped as source code. A launch whose output goes to a file (`>> "$LOG"
  2>&1`, `| tee logs/train.log`, the script's own plain assignments resolved) is a
  `script_launch` event with no time: every start the script makes writes there, which is how
  a log with no time of day is tied to the starts (clock/untimed.py, model/attempts.py). A `for`
  loop over values the script holds is read a pass at a time (a sweep: a log a pass).
- A YAML or TOML file of settings (a trainer's config): skipped as configuration, its top-level
  settings listed in the notes.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pandas as pd

from ..incident import Incident, from_frames
from ..shell_words import (
    LOOP_HEADER,
    environment_changes,
    expand_variables,
    invocation,
    is_prompt,
    log_target,
    loop_passes,
    loop_values,
    match_prompt,
    only_helpers,
)
from . import registry
from .registry import LoadContext
from .terminal import read_lines

FORMAT = "source-code"
NOT_EVIDENCE = "source code, not evidence"
CONFIGURATION = "configuration, not evidence"
_PY_STATEMENT = re.compile(r"^(?:import [\w.]+|from [\w.]+ import \S|def \w+\(|async def \w+\(|class \w+\s*[(:]|"
                           r"if __name__ == ['\"]__main__['\"]|@[\w.]+(?:\(|$))")
_SHEBANG = re.compile(r"^#!\s*\S*(?:/|env\s+)(?P<lang>python[\d.]*|(?:ba|z|da|k)?sh)\b")
_SHELL_KEYWORD = re.compile(r"^(?:export \w+=|set -[euxo]|if \[|fi$|then$|else$|done$|do$|for \w+ in |while |"
                            r"case .+ in$|esac$|source |\. \S|\w+\(\) \{|function \w+|cd \S|echo |exit \d)")
_SHELL_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=(?!=)\S*$")
_TRAINER = re.compile(r"\b(?:python[\d.]*|torchrun|accelerate launch|deepspeed|srun|mpirun)\b|\S+\.py\b")
_MAX_NOTES = 5


def _lines(head: bytes) -> list[str]:
    return [ln for ln in head.decode("utf-8", "replace").splitlines()[:400] if ln.strip()]


def _python_statements(lines: list[str]) -> int:
    """How many of the lines are Python statements at the top level (0: not Python source). A
    module that opens with its docstring or a `#!` naming python needs only one."""
    statements = sum(1 for ln in lines if _PY_STATEMENT.match(ln))
    opening = bool(lines) and (lines[0].startswith(('"""', "'" * 3)) or
                               ((m := _SHEBANG.match(lines[0])) is not None and m["lang"].startswith("python")))
    return statements if (statements >= 3 and statements / len(lines) >= 0.03) or (opening and statements >= 1) else 0


def _is_python(lines: list[str]) -> bool:
    return _python_statements(lines) > 0


def _is_shell(lines: list[str]) -> bool:
    if any(is_prompt(ln) and (p := match_prompt(ln)) is not None and p.command for ln in lines[:50]):
        return False  # a terminal session, whatever it ran
    if lines and (m := _SHEBANG.match(lines[0])) is not None and not m["lang"].startswith("python"):
        return True
    code = [ln for ln in lines if not ln.lstrip().startswith("#")]
    keywords = sum(1 for ln in code if _SHELL_KEYWORD.match(ln.strip()))
    assignments = sum(1 for ln in code if _SHELL_ASSIGNMENT.match(ln.strip()))
    return len(code) >= 3 and keywords >= 2 and (keywords + assignments) / len(code) >= 0.4


def _settings(path: Path, text: str) -> dict | None:
    """The top-level settings of a TOML or YAML document of them, else None."""
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        doc = None
    if doc is None and re.search(r"(?m)^[A-Za-z_][\w.-]*:(?:\s|$)", text):
        import yaml  # here, not at the top: start-up time (only a YAML file needs it)

        try:
            doc = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError, ValueError):
            return None
    if not isinstance(doc, dict) or len(doc) < 3 or not all(isinstance(k, str) for k in doc):
        return None
    if "apiVersion" in doc or "kind" in doc:
        return None  # a Kubernetes object: its own readers decide
    return doc


def sniff_source(path: Path, head: bytes) -> float:
    lines = _lines(head)
    if not lines or b"\0" in head[:4096]:
        return 0.0
    statements = _python_statements(lines)
    if statements >= 10:
        return 0.99  # a module that quotes another format's text (XML, a log line) is still source
    if statements or _is_shell(lines):
        return 0.95
    text = head.decode("utf-8", "replace")
    if len(head) < registry.SNIFF_BYTES and _settings(path, text) is not None:
        return 0.4  # any format that knows the document (wandb's config.yaml) is more confident
    return 0.0


@registry.format(FORMAT, sniff=sniff_source,
                 doc="source code, launcher scripts and settings files beside the logs: not evidence (a launcher's flags noted)")
def load_source(path: Path, ctx: LoadContext) -> Incident:
    path = Path(path)
    rep = ctx.report(path, FORMAT)
    lines = read_lines(path, FORMAT)
    rep.read = len(lines)
    nonblank = [ln for ln in lines if ln.strip()]
    if _is_python(nonblank[:400]):
        rep.skip(None, NOT_EVIDENCE, rep.read)
        rep.notes.append("Python source: not read as evidence")
    elif _is_shell(nonblank[:400]):
        events = _launcher_script(lines, rep, ctx.host)
        if len(events):
            return from_frames(rep, events=events)
    else:
        settings = _settings(path, "\n".join(lines)) or {}
        rep.skip(None, CONFIGURATION, rep.read)
        shown = [f"{k}={v}" for k, v in settings.items() if isinstance(v, str | int | float | bool)][:12]
        rep.notes.append(f"settings file: {len(settings)} top-level settings" + (f" ({', '.join(shown)})" if shown else ""))
    return from_frames(rep)


def _commands(lines: list[str]):
    """(first line, last line, text) of each command of a script, lines continued with `\\` joined."""
    i = 0
    while i < len(lines):
        j, text = i, lines[i].rstrip()
        while text.endswith("\\") and j + 1 < len(lines):
            j += 1
            text = text[:-1] + " " + lines[j].strip()
        yield i + 1, j + 1, text.strip()
        i = j + 1


def _launcher_script(lines: list[str], rep, host: str | None) -> pd.DataFrame:
    """A shell script: its trainer launches as configuration (program, flags), the rest skipped;
    the launches into a file as `script_launch` events (the module's docstring). The lines of a
    `for` loop over values the script holds (`for seed in 0 1 2; do` ... `done`) are read once a
    pass, its variable set to each value: a sweep writes a log a pass."""
    launches, rows = 0, []
    values: dict[str, str] = {}  # the script's plain assignments so far (`LOG=logs/train.log`)
    loop: tuple[str, list[str], list] | None = None  # (variable, values, the body's commands)

    def read(command: tuple[int, int, str], known: dict[str, str], counted: bool) -> None:
        nonlocal launches
        first, last, s = command
        program, flags = _read(s, known, rows, rep, host, first)
        if not counted:  # (a loop's later passes: each line is accounted for once)
            return
        if program is None:
            _skip(rep, first, last)
            return
        rep.parsed += last - first + 1
        launches += 1
        if launches <= _MAX_NOTES:
            shown = ", ".join(f"{k} {v}" for k, v in flags.items())
            rep.notes.append(f"launcher script line {first}: runs {program}" + (f" with {shown}" if shown else ""))

    for first, last, s in _commands(lines):
        header = LOOP_HEADER.match(s) if loop is None else None
        if header is not None and (passes := loop_values(header["values"])):
            loop = (header["var"], passes, [])
            _skip(rep, first, last)
        elif loop is not None and re.match(r"done\b", s):
            _skip(rep, first, last)
            var, passes, body = loop
            for v in passes:
                mine = values | {var: v}
                for command in body:
                    read(command, mine, counted=v == passes[0])
            loop = None
        elif loop is not None:
            # (`do` alone on its line, or opening the body: `do python train.py --seed $s &`)
            opened = re.sub(r"^do\b\s*", "", s)
            if opened:
                loop[2].append((first, last, opened))
            else:
                _skip(rep, first, last)
        else:
            # (a loop typed on one line: `for lr in 1e-4 1e-3; do nohup python ... & done`)
            for k, one in enumerate(loop_passes(s) or [s]):
                read((first, last, one), values, counted=k == 0)
    # a loop the file never closes (a copy cut short): the shell would run none of it; its lines
    # are read as they stand, its variable unknown
    for command in loop[2] if loop is not None else []:
        read(command, values, counted=True)
    if not launches:
        rep.notes.append("shell script: not read as evidence (it launches no trainer)")
    if not rows:
        return pd.DataFrame()
    # (one launch line read twice, as a script may run it from two branches, is one place it writes)
    events = pd.DataFrame(rows).drop_duplicates(["program", "log_path"])
    events.insert(0, "time", pd.Series([pd.NaT] * len(events), dtype="datetime64[us, UTC]", index=events.index))
    return events


def _skip(rep, first: int, last: int) -> None:
    for i in range(first, last + 1):
        rep.skip(i, NOT_EVIDENCE)


def _read(s: str, values: dict[str, str], rows: list[dict], rep, host: str | None, line: int) -> tuple[str | None, dict]:
    """One command of a script: an assignment kept in `values`; a trainer launch, whose program and
    flags are returned, a `script_launch` row in `rows` where it writes a file."""
    runs = s and not s.startswith("#") and _TRAINER.search(s) and not only_helpers(s)
    program, flags = invocation(s) if runs else (None, {})
    if program is None:
        # (read as a shell reads it: `LOG=logs/train.log`, `export OUT="$ROOT/out"`)
        kept, given = environment_changes(s)
        for name, value in (given | kept).items():
            if value is None:
                values.pop(name, None)
            else:
                values[name] = expand_variables(value, values)
        return None, {}
    log = log_target(expand_variables(s, values))
    if log and "$" not in log and "`" not in log:
        rows.append(dict(kind="script_launch", message=s, program=program, log_path=log, script=rep.path,
                         source=rep.path, ref=f"{rep.path}:{line}", host=host))
    return program, flags
