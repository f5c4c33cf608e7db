"""What container and orchestrator commands answered inside a session: each answer is read by
the reader of that output (`loaders/containers/`), its ages read against the time the command ran.

    kubectl describe pod X          -> kubernetes.read_describe
    kubectl get events              -> kubernetes.read_events
    kubectl get pod X -o json|yaml  -> kubernetes.read_pod_document
    kubectl get pods [-A] [-o wide] -> kubernetes.read_pods
    docker events / inspect / ps    -> docker.read_events / read_inspect / read_ps
    kubectl logs [--previous] X, docker logs [-t] X
                                    -> the training-log reader: the container's own log, its rows
                                       attributed to the pod or container (`job`)
    tail / cat / head of a log file -> the training-log reader: that file's lines, as printed
                                       (`copy_of`: the file; the folder's own copy is read instead
                                       where it holds it, loaders/folder.py)
    a trainer run in the foreground, or brought back by `fg`
                                    -> the training-log reader: its output on the terminal
                                       (`copy_of`: the file it tees into)

(`systemctl status` and `journalctl -u` answers are read line by line with the kernel's lines:
`systemd_units`.)
"""

from __future__ import annotations

import fnmatch
import os
import re
import tempfile
from pathlib import PurePosixPath

import pandas as pd

from ...shell_words import RUN_NAME, command_name, foreground_program, log_target
from ..containers import docker, kubernetes
from ..containers.events import Found, anchor
from ..training_log import load_process_log

_RUNTIMES = {"docker", "podman", "nerdctl"}
# Options of `kubectl logs` / `docker logs` that take a value (the pod or container is the word left).
_VALUE_OPTIONS = {"-c", "--container", "-n", "--namespace", "--since", "--since-time", "--tail", "-l", "--selector",
                  "--context", "--kubeconfig", "--until", "--pod-running-timeout", "-f", "--filter", "--format", "-o",
                  "--output"}


def _subcommand(words: list[str]) -> tuple[str, list[str]]:
    """(the program, its words after the program) of a simple command (`sudo docker ps -a`)."""
    name = command_name(words)
    at = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == name), None)
    return name, words[at + 1:] if at is not None else []


def reader_of(words: list[str]):
    """(reader, what) for a command whose answer a container reader reads, else None."""
    name, rest = _subcommand(words)
    args = [w for w in rest if not w.startswith("-")]
    if name == "kubectl" and args:
        output = " ".join(rest)
        if args[0] == "describe" and len(args) > 1 and re.match(r"^(?:pods?|po)(?:/|$)", args[1]):
            return kubernetes.read_describe, "kubectl describe pod"
        if args[0] == "get" and len(args) > 1 and args[1] in ("events", "event", "ev"):
            return kubernetes.read_events, "kubectl get events"
        if args[0] == "get" and len(args) > 1 and re.match(r"^(?:pods?|po)(?:/|$)", args[1]):
            if re.search(r"(?:-o|--output)[= ]?(?:json|yaml)\b", output):
                return kubernetes.read_pod_document, "kubectl get pod"
            return kubernetes.read_pods, "kubectl get pods"
    if name in _RUNTIMES and args:
        verb = args[1] if args[0] in ("container", "system") and len(args) > 1 else args[0]
        return {"events": (docker.read_events, "docker events"), "inspect": (docker.read_inspect, "docker inspect"),
                "ps": (docker.read_ps, "docker ps"), "ls": (docker.read_ps, "docker ps")}.get(verb)
    return None


def read_answer(c, ctx, rep, ref_of) -> list[dict]:
    """The events a container command's answer states, as transcript event rows (ref, command_ref);
    rows that name no pod or container take the one the command names."""
    got = reader_of(c.words) if c.output else None
    if got is None:
        return []
    read, what = got
    found = Found()
    read([s for _, s in c.output], c.output[0][0], ctx, rep, found, counted=False)
    named = _object_of(c.words)
    for r in found.rows:
        if r.get("job") is None and named is not None:
            r["job"] = named
    anchor(found, None if pd.isna(c.time) else c.time, rep, f"{what} at line {c.line}")
    rows = []
    for r in found.rows:
        n = r.pop("line")
        r.update(ref=ref_of(n), command_ref=ref_of(c.line))
        if r.get("time_approx") is None:
            r["time_approx"] = False
        rows.append(r)
    return rows


def _object_of(words: list[str]) -> str | None:
    """The pod a `kubectl describe pod X` / `kubectl get pod X` names, or the container a docker
    command names (the first word that is not an option or its value), else None."""
    name, rest = _subcommand(words)
    if name == "kubectl":
        args = [w for w in rest if not w.startswith("-")]
        if len(args) < 2 or args[0] not in ("describe", "get"):
            return None
        rest = rest[rest.index(args[1]) + (0 if "/" in args[1] else 1):]
    elif name in _RUNTIMES:
        rest = rest[1:] if rest[:1] == ["container"] else rest
        rest = rest[1:]
    else:
        return None
    return _first_argument(rest)


def log_of(words: list[str]) -> str | None:
    """The pod or container whose log a `kubectl logs` / `docker logs` command prints, else None."""
    name, rest = _subcommand(words)
    if name == "kubectl":
        if not rest or rest[0] != "logs":
            return None
        rest = rest[1:]
    elif name in _RUNTIMES:
        rest = rest[1:] if rest[:1] == ["container"] else rest
        if not rest or rest[0] != "logs":
            return None
        rest = rest[1:]
    else:
        return None
    return _first_argument(rest)


def _first_argument(rest: list[str]) -> str | None:
    """The first word that is not an option or an option's value (`pod/x` -> `x`)."""
    skip = False
    for w in rest:
        if skip:
            skip = False
            continue
        if w.startswith("-"):
            skip = w in _VALUE_OPTIONS
            continue
        return w.split("/", 1)[1] if w.startswith(("pod/", "pods/")) else w
    return None


# The programs that print a file's lines, their options that take a value, and the names of the
# files whose printed lines are read as a log (a config or a script printed is no log)
_PRINTERS = {"tail", "cat", "head"}
_PRINTER_VALUES = {"-n", "-c", "--lines", "--bytes", "-s", "--sleep-interval", "--pid", "--max-unchanged-stats"}
_LOG_NAME = re.compile(r"(?:\.(?:log|out|err|txt)|log)$")
_GLOB = re.compile(r"[*?[]")


def printed_log(c) -> tuple[str | None, dict, str] | None:
    """What a command's output is a log of, where it is one: (the run its untagged lines belong
    to, the columns its rows take, what it is, in words). A container's log (`kubectl logs`,
    `docker logs`: attributed to the pod or container), a log file printed (`tail -n 2
    logs/train.log`: its lines, a copy of the file), or a trainer run in the foreground or brought
    back to it by `fg` (its output on the terminal, a copy of the file it tees into)."""
    job = log_of(c.words)
    if job is not None:
        previous = bool(re.search(r"(?:^|\s)(?:-p|--previous)(?:\s|=|$)", c.text))
        # (a previous log is the container's last attempt, not the running one)
        extra = {"job": job, "by": "kubernetes" if command_name(c.words) == "kubectl" else "docker"} | (
            {"previous": True} if previous else {})
        return job, extra, f"the {'previous ' if previous else ''}log of {job}"
    name, rest = _subcommand(c.words)
    if name in _PRINTERS and "|" not in c.words:
        files, skip = [], False
        for w in rest:
            if skip or w.startswith("-"):
                skip = not skip and w in _PRINTER_VALUES
                continue
            files.append(w)
        # (a glob is several files, each under a header of its own: printed_logs)
        if len(files) == 1 and _LOG_NAME.search(files[0]) and not _GLOB.search(files[0]):
            return _printed_file(files[0], name, c.time)
        return None
    # `fg` brings a job back: bash echoes the job's command line first, then the job's output
    command = c.output[0][1] if name == "fg" and c.output else c.text
    program = foreground_program(command)
    if program is None:
        return None
    target = log_target(command)
    run = RUN_NAME.search(command)
    named = run.group("run") if run else PurePosixPath(target).stem if target else PurePosixPath(program).stem
    return named, {"copy_of": target} if target else {}, f"the output of {program}"


def _printed_file(path: str, printer: str, when) -> tuple[str, dict, str]:
    # a line it printed was in the file when it ran: the latest it can have been written
    # (the folder's loader dates it so where the folder's file no longer holds it)
    return PurePosixPath(path).stem, {"copy_of": path, "printed_at": when}, f"{path} as `{printer}` printed it"


# What tail and head print before each file's lines when given several (`tail -n 2 logs/*.log`)
_FILE_HEADER = re.compile(r"^==> (?P<path>.+) <==$")


def printed_logs(c) -> list[tuple[tuple[str | None, dict, str], list[tuple[int, str]]]]:
    """Each log a command's output is, with the lines of the output that are that log's
    (`printed_log`): several where `tail` or `head` printed several files (a glob, or names), each
    under its `==> path <==` header, a header that names a file the command was given (a header
    the glob matches); none where the output is no log."""
    printed = printed_log(c)
    if printed is not None:
        return [(printed, c.output)]
    name, rest = _subcommand(c.words)
    if name not in ("tail", "head") or "|" in c.words:
        return []
    given = [w for w in rest if not w.startswith("-")]
    found, path, lines = [], None, []
    for n, text in [*c.output, (None, None)]:
        m = _FILE_HEADER.match(text.strip()) if text is not None else None
        if (m or text is None) and path is not None and _LOG_NAME.search(path):
            while lines and not lines[-1][1].strip():  # the blank line before the next header
                lines.pop()
            found.append((_printed_file(path, name, c.time), lines))
        if m:
            path = m["path"] if any(fnmatch.fnmatchcase(m["path"], g) for g in given) else None
            lines = []
        elif text is not None and path is not None:
            lines.append((n, text))
    return found


def read_log(c, printed, ctx, rep, ref_of, held: set[int] = frozenset(), output=None) -> dict[str, pd.DataFrame]:
    """A log printed in the session (`printed`: what `printed_log` says of the command): read as
    the training log it is (the training-log reader), its rows cited at the session's lines; the
    lines in `held` are the shell's own (bash's `Killed` under a foreground command), read as the
    session's already. `output`: the command's lines that are this log (all of them by default)."""
    if printed is None:
        return {}
    run, extra, what = printed
    output = c.output if output is None else output
    fd, tmp = tempfile.mkstemp(suffix=".log")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join("" if n in held else s for n, s in output) + "\n")  # (line for line)
        sub = load_process_log(tmp, timezone=ctx.timezone, host=ctx.host, run=run, date=ctx.date, on_bad_line="skip")
    finally:
        os.unlink(tmp)
    out = {}
    for frame in ("metrics", "events"):
        df = getattr(sub, frame)
        if df.empty:
            continue
        df = df.copy()
        lines = [int(str(r).rsplit(":", 1)[-1]) for r in df["ref"]]
        df["ref"] = [ref_of(output[k - 1][0]) if 0 < k <= len(output) else ref_of(c.line) for k in lines]
        # A printed log is a source of its own: the file it is a copy of, else the command's output
        # (the session's other lines are no sign of its trainer's life); a container's log is the
        # session's, attributed to its job.
        df["source"] = rep.path if "job" in extra else extra.get("copy_of") or ref_of(c.line)
        for col, value in extra.items():
            df[col] = value
        if frame == "events":
            df["command_ref"] = ref_of(c.line)
        out[frame] = df
    if out or extra.get("job"):
        rep.notes.append(f"line {c.line}: {what} read as a training log "
                         f"({len(out.get('metrics', []))} metric rows, {len(out.get('events', []))} events)")
    return out
