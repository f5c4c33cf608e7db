"""docker's own accounts of containers that started and ended -> `events`.

    docker events         2017-01-05T00:36:09.840186338+08:00 container die 0fdb...ff37 (exitCode=143, image=alpine, name=test)
                          (also `--format '{{json .}}'`: one JSON object a line, `timeNano` in UTC)
    docker inspect        [{"Name": "/trainer", "RestartCount": 3, "State": {"Status": "exited", "OOMKilled": true,
                          "ExitCode": 137, "StartedAt": "...", "FinishedAt": "..."}}]  (or `-f '{{json .State}}'`)
    docker ps -a          CONTAINER ID  IMAGE  COMMAND  CREATED  STATUS                      PORTS  NAMES
                          3f2a1b...     img    "python…"  2 hours ago  Exited (137) 5 minutes ago         trainer

`docker logs -t` needs no reader of its own: each line starts with an RFC 3339 stamp, and the
training-log reader reads it as the trainer's line at that time.

Kinds: `attempt_start` (a container started: `start`, `StartedAt`, `Up 2 hours`), `attempt_end`
(it ended: `die` with its exit code, `FinishedAt`, `Exited (137)`, `Restarting (1)`), `oom_kill`
(`oom`, `OOMKilled: true`), `kill_sent` (`kill`, with the signal docker sent). `job` is the
container's name (its id where no name is given), `attempt` the restart count where `docker
inspect` gives it; `by` is "docker".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from ...incident import Incident
from ...shell_words import exit_meaning, signal_name
from .. import registry
from ..clock_text import parse_age
from ..registry import LoadContext
from ..training_log.patterns import integer
from .documents import find_json
from .events import Found, Lines, framing, is_session, load_output, stated_time, table_rows

BY = "docker"
_STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})?(?:Z?[+-]?\d{2}:\d{2})?"
_EVENT = re.compile(
    rf"^(?P<time>{_STAMP}) (?P<type>container|image|network|volume|plugin|daemon|service|node|secret|config|builder) "
    r"(?P<action>\w+)(?:: (?P<detail>.*?))? (?P<id>\S+)(?: \((?P<attrs>.*?)\)?)?\s*$")  # `)` lost in a paste cut short
_STAMP_START = re.compile(r"^\d{4}-\d{2}-\d{2}T")
_ATTR_KEY = re.compile(r"(?:^|, )(?P<key>[\w./-]+)=")
# Container actions read as lifecycle facts; the others (attach, resize, exec_*, ...) are skipped.
_STAGES = {"create", "stop", "restart", "destroy", "pause", "unpause", "health_status", "rename", "update"}
_STATUS = re.compile(
    r"^(?:(?P<state>Exited|Restarting) \((?P<code>-?\d{1,6})\) (?P<ago>.+? ago)|Up (?P<up>.+?)(?: \((?:healthy|unhealthy|"
    r"health: starting|Paused)\))*|(?P<other>Created|Dead|Removal In Progress|Paused))\s*$")
_PS_HEADER = re.compile(r"^CONTAINER ID\s{2,}IMAGE\s{2,}COMMAND\s{2,}CREATED\s{2,}STATUS\s{2,}(?:PORTS\s{2,})?NAMES\b")


def _attrs(text: str | None) -> dict[str, str]:
    """`exitCode=137, image=alpine, name=test` -> a dict (a value may hold `, `: it runs to the next key)."""
    if not text:
        return {}
    keys = list(_ATTR_KEY.finditer(text))
    return {m["key"]: text[m.end(): keys[i + 1].start() if i + 1 < len(keys) else len(text)] for i, m in enumerate(keys)}


def _lifecycle(found: Found, t, action: str, cid: str, attrs: dict, line: int, message: str) -> bool:
    """One container event -> its row; False for an action that states no lifecycle fact."""
    job = attrs.get("name") or cid
    where = dict(job=job, container_id=cid, by=BY, image=attrs.get("image"))
    if action == "start":
        found.add(t, "attempt_start", message, line, **where)
    elif action == "die":
        code = integer(attrs.get("exitCode"))
        sig, meaning = exit_meaning(code) if code is not None else (None, None)
        found.add(t, "attempt_end", message, line, exit_code=code, signal=sig, reason=meaning, **where)
    elif action == "oom":
        found.add(t, "oom_kill", message, line, **where)
    elif action == "kill":
        found.add(t, "kill_sent", message, line, signal=signal_name(attrs.get("signal")), **where)
    elif action in _STAGES:
        kind = "warning" if action == "health_status" and "unhealthy" in message else "stage"
        found.add(t, kind, message, line, action=action, **where)
    else:
        return False
    return True


def _unwrapped(lines: list[str], first: int) -> list[tuple[int, str, int]]:
    """(line number, text, lines it spans): an event line a paste wrapped (its attributes' `(`
    still open, the next line not an event) is read as one, the wrap undone."""
    out: list[tuple[int, str, int]] = []
    for i, raw in enumerate(lines, first):
        s = raw.strip()
        if out and s and not _STAMP_START.match(s) and (prev := out[-1][1]).startswith(tuple("0123456789")) \
                and prev.count("(") > prev.count(")"):
            out[-1] = (out[-1][0], prev + s, out[-1][2] + 1)
            continue
        out.append((i, s, 1))
    return out


def read_events(lines: list[str], first: int, ctx: LoadContext, rep, found: Found, *, counted: bool = True) -> None:
    """`docker events` output, text or JSON lines, from line number `first`."""
    count = Lines(rep, counted)
    for i, s, span in _unwrapped(lines, first):
        why = framing(s)
        if why is not None:
            count.skip(i, why)
            continue
        if span > 1:
            count.parsed(span - 1)  # the wrapped lines, read with their first
        got = _json_event(s) if s.startswith("{") else None
        if got is None:
            m = _EVENT.match(s)
            if m is None:
                count.skip(i, "not a docker event line")
                continue
            got = (stated_time(m["time"], ctx, rep), m["type"], m["action"], m["id"], _attrs(m["attrs"]))
        t, kind, action, cid, attrs = got
        if kind != "container":
            count.skip(i, f"docker {kind} event (no container lifecycle)")
        elif _lifecycle(found, t, action, cid, attrs, i, s):
            count.parsed()
        else:
            count.skip(i, f"docker container event {action!r} (no lifecycle fact)")


def _json_event(s: str):
    """`docker events --format '{{json .}}'`: (time, type, action, id, attributes) or None."""
    try:
        doc = json.loads(s)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or "Action" not in doc:
        return None
    actor = doc.get("Actor") if isinstance(doc.get("Actor"), dict) else {}
    attrs = actor.get("Attributes") if isinstance(actor.get("Attributes"), dict) else {}
    nano = integer(doc.get("timeNano"))
    secs = integer(doc.get("time"))
    t = (pd.Timestamp(nano, unit="ns", tz="UTC") if nano is not None and 0 < nano < 2**62
         else pd.Timestamp(secs, unit="s", tz="UTC") if secs is not None and 0 < secs < 2**33 else pd.NaT)
    action = str(doc.get("Action") or "").split(":", 1)[0]
    return t, str(doc.get("Type") or ""), action, str(actor.get("ID") or doc.get("id") or ""), \
        {str(k): str(v) for k, v in attrs.items()}


# -- docker inspect -----------------------------------------------------------------------------
def _containers(doc) -> list[dict]:
    """The container objects of an inspect document: an array of them, one, or a lone State."""
    items = doc if isinstance(doc, list) else [doc]
    out = []
    for c in items:
        if isinstance(c, dict) and isinstance(c.get("State"), dict):
            out.append(c)
        elif isinstance(c, dict) and "StartedAt" in c and "ExitCode" in c:
            out.append({"State": c})  # `docker inspect -f '{{json .State}}'`
    return out


def _inspected(found: Found, c: dict, line: int, ctx: LoadContext, rep) -> None:
    """One container's State: its last start, and its last end (of this attempt when it is not
    running; of the attempt before when it runs again: docker keeps FinishedAt but clears ExitCode)."""
    st = c["State"]
    name = str(c.get("Name") or "").lstrip("/") or None
    cid = str(c.get("Id") or "")[:64] or None
    restarts = integer(c.get("RestartCount"))
    job = name or cid
    label = job or "the container"
    where = dict(job=job, container_id=cid, by=BY, restart_count=restarts, status=st.get("Status"))
    started = stated_time(str(st.get("StartedAt") or ""), ctx, rep)
    finished = stated_time(str(st.get("FinishedAt") or ""), ctx, rep)
    running = bool(st.get("Running")) or st.get("Status") in ("running", "restarting", "paused")
    pid = integer(st.get("Pid")) if running else None
    if not pd.isna(started):
        found.add(started, "attempt_start", f"{label} started (StartedAt {st.get('StartedAt')})", line,
                  attempt=restarts, pid=pid or None, **where)
    if pd.isna(finished):
        return
    if running or (not pd.isna(started) and finished < started):
        before = restarts - 1 if restarts else None
        found.add(finished, "attempt_end", f"{label}: an earlier run ended (FinishedAt {st.get('FinishedAt')}); "
                  "docker keeps no exit code for it", line, attempt=before, reason="ended before the last start", **where)
        return
    code = integer(st.get("ExitCode"))
    sig, meaning = exit_meaning(code) if code is not None else (None, None)
    oom = st.get("OOMKilled") is True
    reason = "OOMKilled" if oom else (str(st.get("Error")) if st.get("Error") else meaning)
    found.add(finished, "attempt_end", f"{label} {st.get('Status') or 'ended'} with exit code {code} (FinishedAt "
              f"{st.get('FinishedAt')}{', OOMKilled' if oom else ''})", line, attempt=restarts, exit_code=code,
              signal=sig, reason=reason, **where)
    if oom:
        found.add(finished, "oom_kill", f"{label}: OOMKilled (docker inspect)", line, attempt=restarts, **where)


_STATE_KEY = re.compile(r'^\s*"State":\s*\{\s*$')
_FIELD = re.compile(r'^\s*"(?P<key>Id|Name|RestartCount)":\s*(?P<value>"[^"]*"|\d+)')


def _state_fragments(lines: list[str]) -> list[tuple[dict, int, int]]:
    """The `"State": {...}` objects of a paste whose JSON does not parse as a whole (cut short, or
    `docker inspect x | grep -A12 State`): (container, first line index, last line index), the
    container's Id, Name and RestartCount taken from the lines around its State."""
    out: list[tuple[dict, int, int]] = []
    k = 0
    while k < len(lines):
        if not _STATE_KEY.match(lines[k]):
            k += 1
            continue
        depth, j = 0, k
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0:
                break
            j += 1
        try:
            state = json.loads("{" + "\n".join(lines[k + 1:j + 1]).rstrip().rstrip(","))
        except (ValueError, RecursionError):
            k += 1
            continue
        out.append(({"State": state}, k, min(j, len(lines) - 1)))
        k = j + 1
    for n, (c, _, _) in enumerate(out):
        lo = out[n - 1][2] + 1 if n else 0
        hi = out[n + 1][1] if n + 1 < len(out) else len(lines)
        for ln in lines[lo:hi]:
            m = _FIELD.match(ln)
            if m and m["key"] not in c:
                try:
                    c[m["key"]] = json.loads(m["value"])
                except ValueError:  # a garbled Id or Name: the State still tells the exit
                    continue
    return out


def read_inspect(lines: list[str], first: int, ctx: LoadContext, rep, found: Found, *, counted: bool = True) -> bool:
    """`docker inspect` output (the JSON array, or a lone State object, or the State objects of a
    paste cut short); False when it holds none."""
    count = Lines(rep, counted)
    got = find_json(lines)
    containers = _containers(got[0]) if got is not None else []
    if not containers:
        fragments = _state_fragments(lines)
        if not fragments:
            return False
        inside = {i for _, a, b in fragments for i in range(a, b + 1)}
        for i, ln in enumerate(lines):
            if i in inside:
                count.parsed()
            else:
                count.skip(first + i, framing(ln) or "docker inspect text around the State objects")
        rep.notes.append("the docker inspect document does not parse as a whole: its State objects are read")
        for c, a, _ in fragments:
            _inspected(found, c, first + a, ctx, rep)
        return True
    doc, a, b = got
    for i in range(len(lines)):
        if a <= i <= b:
            count.parsed()
        else:
            count.skip(first + i, framing(lines[i]) or "text around the docker inspect document")
    # A line for each container: where its "State" key is, else the document's first line.
    state_lines = [first + i for i in range(a, b + 1) if '"State"' in lines[i]]
    for k, c in enumerate(containers):
        _inspected(found, c, state_lines[k] if k < len(state_lines) else first + a, ctx, rep)
    return True


# -- docker ps -a -------------------------------------------------------------------------------
def _columns(header: str) -> list[tuple[str, int]]:
    """(name, start) of each column of a `docker ps` header (names are cut at runs of 2+ spaces)."""
    return [(m.group().strip(), m.start()) for m in re.finditer(r"\S+(?: \S+)*", header)]


def _cells(line: str, columns: list[tuple[str, int]]) -> dict[str, str]:
    """A row cut where the header's columns start; a row whose gaps do not fall there (a paste that
    collapsed spaces) is cut at runs of 2+ spaces instead, when it has as many cells."""
    cut = {name: line[start:columns[k + 1][1] if k + 1 < len(columns) else None].strip()
           for k, (name, start) in enumerate(columns)}
    if _STATUS.match(cut.get("STATUS", "")):
        return cut
    parts = re.split(r"\s{2,}", line.strip())
    names = [n for n, _ in columns]
    if len(parts) == len(names) - 1 and "PORTS" in names:  # no ports: that cell is empty
        parts.insert(names.index("PORTS"), "")
    return dict(zip(names, parts, strict=False)) if len(parts) == len(names) else cut


def read_ps(lines: list[str], first: int, ctx: LoadContext, rep, found: Found, *, counted: bool = True) -> None:
    """`docker ps -a`: each container's status as an age (`Exited (137) 5 minutes ago`, `Up 2 hours`)."""
    count = Lines(rep, counted)
    for i, raw, columns in table_rows(lines, first, count, _PS_HEADER, _columns, "text before the docker ps header"):
        row = _cells(raw.rstrip(), columns)
        m = _STATUS.match(row.get("STATUS", ""))
        if m is None:
            count.skip(i, "not a docker ps row")
            continue
        count.parsed()
        job = row.get("NAMES") or row.get("CONTAINER ID")
        where = dict(job=job, container_id=row.get("CONTAINER ID"), by=BY, image=row.get("IMAGE"), status=row["STATUS"])
        if m["state"]:
            code = integer(m["code"])
            sig, meaning = exit_meaning(code) if code is not None else (None, None)
            age = parse_age(m["ago"])
            found.add(pd.NaT, "attempt_end", raw.strip(), i, exit_code=code, signal=sig, reason=meaning, age_s=age, **where)
        elif m["up"] and (age := parse_age(m["up"])) is not None:
            found.add(pd.NaT, "attempt_start", raw.strip(), i, age_s=age, **where)


# -- formats ------------------------------------------------------------------------------------
def _text(head: bytes) -> list[str]:
    return [ln for ln in head.decode("utf-8", "replace").splitlines()[:400] if ln.strip()]


def sniff_docker_events(path: Path, head: bytes) -> float:
    if is_session(head):
        return 0.0
    lines = _text(head)
    hits = sum(1 for ln in lines if _EVENT.match(ln.strip()) or (ln.startswith('{"') and '"Action"' in ln and '"Actor"' in ln))
    return 0.85 if hits >= 2 and hits / len(lines) >= 0.3 else 0.0


def sniff_docker_inspect(path: Path, head: bytes) -> float:
    if is_session(head):
        return 0.0
    text = head.decode("utf-8", "replace")
    if '"StartedAt"' not in text or '"FinishedAt"' not in text or '"ExitCode"' not in text:
        return 0.0
    return 0.9 if '"OOMKilled"' in text or '"RestartCount"' in text or '"Restarting"' in text else 0.0


def sniff_docker_ps(path: Path, head: bytes) -> float:
    if is_session(head):
        return 0.0
    lines = _text(head)
    if not any(_PS_HEADER.match(ln.strip()) for ln in lines):
        return 0.0
    return 0.9 if any(re.search(r"\b(?:Exited \(-?\d+\)|Up \w|Restarting \()", ln) for ln in lines) else 0.0


@registry.format("docker-events", sniff=sniff_docker_events,
                 doc="docker events (text or JSON lines): container start, die with exit code, kill, oom")
def load_docker_events(path: Path, ctx: LoadContext) -> Incident:
    return load_output(path, ctx, "docker-events", read_events, "docker events")


@registry.format("docker-inspect", sniff=sniff_docker_inspect,
                 doc="docker inspect: each container's State (started, finished, exit code, OOMKilled, restart count)")
def load_docker_inspect(path: Path, ctx: LoadContext) -> Incident:
    return load_output(path, ctx, "docker-inspect", read_inspect, "docker inspect")


@registry.format("docker-ps", sniff=sniff_docker_ps,
                 doc="docker ps -a: containers exited (exit code, how long ago) or up (for how long)")
def load_docker_ps(path: Path, ctx: LoadContext) -> Incident:
    return load_output(path, ctx, "docker-ps", read_ps, "docker ps")
