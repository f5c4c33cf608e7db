"""What Kubernetes says about a pod's containers -> `events`.

    kubectl describe pod     State: Terminated / Reason: OOMKilled / Exit Code: 137 / Started: ... /
                             Finished: ... / Last State: ... / Restart Count: 3, and the Events table
                             (`Warning  BackOff  3m (x4 over 10m)  kubelet  Back-off restarting ...`)
    kubectl get events       LAST SEEN  TYPE  REASON  OBJECT  MESSAGE (also -o wide, and the older
                             LASTSEEN FIRSTSEEN COUNT NAME KIND SUBOBJECT TYPE REASON SOURCE MESSAGE)
    kubectl get pod -o json|yaml   status.containerStatuses[]: state, lastState, restartCount

A container's current state and its last state are two attempts: `attempt_start` at Started,
`attempt_end` at Finished (reason, exit code, signal), `oom_kill` where the reason is OOMKilled;
the current one is attempt = Restart Count, the last one the attempt before. An init container's
run is a `stage` of the pod's start (an `error` where it failed: the pod's containers never start). A container waiting
(CrashLoopBackOff) is a `warning` at the time the command ran. Rows of the events table become
`oom_kill` (OOMKilling, SystemOOM, CgroupOOM), `kill_sent` (Killing), `attempt_start` (Started, in `get
events`; in `describe` the container's state already says it, so there it is a `stage`),
`warning` (any Warning), `stage` (other Normal rows). `job` is the pod, `container` the
container, `by` "kubernetes". Ages are read by `events.anchor`. `kubectl logs --previous` is a
container's own log: a transcript reads it as a training log attributed to the pod.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ...incident import Incident
from ...shell_words import exit_meaning, signal_name
from .. import registry
from ..clock_text import parse_age
from ..registry import LoadContext
from ..training_log.patterns import integer
from ..transcript import process_control
from .documents import find_json, find_yaml
from .events import Found, Lines, framing, is_session, load_output, stated_time, table_rows

BY = "kubernetes"
_KV = re.compile(r"^(?P<indent>[ \t]*)(?P<key>[A-Za-z][\w .()/-]{0,40}?):(?:[ \t]+(?P<value>.*?))?\s*$")
_STATES = {"Running", "Terminated", "Waiting"}
_STATE_KEYS = {"State": "state", "Last State": "last", "Last Termination State": "last"}
_STATE_FIELDS = ("Reason", "Exit Code", "Signal", "Started", "Finished", "Message")
# `3m (x4 over 10m)`: the last time, how many times, the first time.
_AGE_CELL = re.compile(r"^(?P<last>\S+)(?: \(x(?P<count>\d+) over (?P<first>\S+)\))?$")
_CONTAINER_OF = re.compile(r"spec\.(?:initContainers|containers|ephemeralContainers)\{(?P<name>[^}]+)\}")
_CONTAINER_IN_MESSAGE = re.compile(r"\bcontainer[: ]+\"?(?P<name>[a-z0-9][a-z0-9.-]*)\"?", re.I)
_SYSTEM_OOM = re.compile(r"victim process: (?P<name>[^,]+), pid: (?P<pid>\d+)")
# The events that say the OOM killer killed a process: the kernel monitor's (the kernel's line as its
# message) and kubelet's (`System OOM encountered, victim process: python, pid: 1234`).
_OOM_REASONS = ("OOMKilling", "SystemOOM", "CgroupOOM")
# Events whose reason ends the pod, whatever its containers were doing: the kubelet evicted it
# (a node low on memory or disk), the scheduler preempted it for a pod of higher priority.
_POD_ENDED_BY = ("Evicted", "Preempting", "Preempted")
# The events table's column names, in every kubectl version -> one name each.
_COLUMN = {
    "TYPE": "type", "REASON": "reason", "AGE": "last", "LAST SEEN": "last", "LASTSEEN": "last", "FIRST SEEN": "first",
    "FIRSTSEEN": "first", "COUNT": "count", "FROM": "from", "SOURCE": "from", "OBJECT": "object", "NAME": "name",
    "KIND": "kind", "SUBOBJECT": "subobject", "SUBOBJECTPATH": "subobject", "MESSAGE": "message",
    "NAMESPACE": "namespace",
}
_EVENTS_HEADER = re.compile(r"^\s*(?:LAST SEEN|LASTSEEN|Type|TYPE|FirstSeen|NAMESPACE)\b")


@dataclass
class State:
    """One state of a container: Running, Terminated or Waiting, with its fields and lines."""

    what: str
    line: int
    fields: dict[str, tuple[str, int]] = field(default_factory=dict)  # key -> (value, line)

    def value(self, key: str) -> str | None:
        got = self.fields.get(key)
        return got[0] if got else None

    def line_of(self, key: str) -> int:
        got = self.fields.get(key)
        return got[1] if got else self.line


@dataclass
class Container:
    pod: str | None
    name: str
    init: bool = False
    restart_count: int | None = None
    states: dict[str, State] = field(default_factory=dict)  # "state" / "last" -> State


def _container_events(found: Found, c: Container, ctx: LoadContext, rep) -> None:
    """A container's current and last state as attempts: start, end, OOM kill, or waiting."""
    where = dict(job=c.pod, container=c.name, by=BY, restart_count=c.restart_count,
                 init_container=True if c.init else None)
    for which, st in c.states.items():
        attempt = c.restart_count if which == "state" else (c.restart_count - 1 if c.restart_count else None)
        label = f"{c.pod}/{c.name}" if c.pod else c.name
        if st.what == "Waiting":
            reason = st.value("Reason")
            if reason and which == "state":
                found.add(pd.NaT, "warning", f"{label}: waiting ({reason})", st.line_of("Reason"), age_s=0.0,
                          reason=reason, attempt=attempt, **where)
            continue
        # (an init container prepares the pod before its containers start: its run is a stage of
        # the pod's start, no attempt of the job; its failure keeps the pod from starting at all)
        started = stated_time(st.value("Started") or "", ctx, rep)
        if not pd.isna(started):
            when = (f" (restart count {c.restart_count})" if c.restart_count is not None else "") if which == "state" \
                else " (the run before the last restart)"
            found.add(started, "stage" if c.init else "attempt_start", f"{label} started{when}",
                      st.line_of("Started"), attempt=attempt, **where)
        if st.what != "Terminated":
            continue
        code = integer(st.value("Exit Code"))
        reason = st.value("Reason")
        signal = _signal(st.value("Signal"), code)
        finished = stated_time(st.value("Finished") or "", ctx, rep)
        ended = "attempt_end" if not c.init else "stage" if reason == "Completed" and code == 0 else "error"
        found.add(finished, ended, f"{label}{' (init container)' if c.init else ''} terminated: "
                  f"{reason or 'no reason given'}, exit code {code}",
                  st.line_of("Finished") if st.value("Finished") else st.line_of("Reason"), attempt=attempt,
                  exit_code=code, signal=signal, reason=reason, detail=st.value("Message"), **where)
        if reason == "OOMKilled":
            found.add(finished, "oom_kill", f"{label}{' (init container)' if c.init else ''}: OOMKilled", st.line_of("Reason"),
                      attempt=attempt, **where)


def _signal(value: str | None, code: int | None) -> str | None:
    if value:
        return signal_name(value)
    return exit_meaning(code)[0] if code is not None else None


# -- kubectl describe pod -----------------------------------------------------------------------
def read_describe(lines: list[str], first: int, ctx: LoadContext, rep, found: Found, *, counted: bool = True) -> None:
    """`kubectl describe pod` output (one or several pods) from line number `first`."""
    count = Lines(rep, counted)
    pod: str | None = None
    containers: list[Container] = []
    section = None
    current: Container | None = None
    state: tuple[State, int] | None = None  # the open state block and the indent of its key
    table: list[tuple[int, str]] | None = None
    for k, raw in enumerate(lines):
        i = first + k
        if table is not None:
            if raw.strip() and not raw[:1].strip() or _EVENTS_HEADER.match(raw) or re.match(r"^\s*-{2,}", raw):
                table.append((i, raw))
                continue
            _event_rows(table, ctx, rep, found, count, pod, in_describe=True)
            table = None
        why = framing(raw)
        if why is not None:
            count.skip(i, why)
            continue
        m = _KV.match(raw)
        if m is None:
            count.skip(i, "pod description line (no process fact)")
            continue
        indent, key, value = len(m["indent"].expandtabs(8)), m["key"].strip(), (m["value"] or "").strip()
        # A state's fields are indented below it; a paste that lost its indentation keeps them right
        # after it, each once.
        if state is not None and key in _STATE_FIELDS and (indent > state[1] or (indent == state[1] and key not in state[0].fields)):
            state[0].fields[key] = (value, i)
            count.parsed()
            continue
        state = None
        if key == "Name" and not indent and value:
            pod, section, current = value, None, None
            count.parsed()
        elif key in ("Containers", "Init Containers") and not value:
            section = key
            count.skip(i, "pod description line (no process fact)")
        elif key == "Events" and not indent:
            table = []
            count.skip(i, "events table heading" if not value else "no events")
        elif section and not value and _opens_container(lines, k):
            current = Container(pod, key, init=section == "Init Containers")
            containers.append(current)
            count.parsed()
        elif current is not None and key in _STATE_KEYS and value.split()[:1] and value.split()[0] in _STATES:
            st = State(value.split()[0], i)
            current.states[_STATE_KEYS[key]] = st
            state = (st, indent)
            count.parsed()
        elif current is not None and key == "Restart Count" and integer(value) is not None:
            current.restart_count = integer(value)
            count.parsed()
        else:
            count.skip(i, "pod description line (no process fact)")
    if table is not None:
        _event_rows(table, ctx, rep, found, count, pod, in_describe=True)
    for c in containers:
        _container_events(found, c, ctx, rep)


def _opens_container(lines: list[str], k: int) -> bool:
    """A `name:` line opens a container when its next line names the container's id or image, or
    its state (a paste that cut the lines between, `...`, or lost their indentation)."""
    nxt = next((ln for ln in lines[k + 1:k + 4] if ln.strip() and ln.strip() not in _ELIDED), "")
    m = _KV.match(nxt)
    return m is not None and m["key"].strip() in ("Container ID", "Image", "State")


_ELIDED = ("...", "…", "[...]")


# -- the events table (describe's and `kubectl get events`) -------------------------------------
def _table_columns(header: str) -> tuple[list[tuple[str, int]], bool]:
    """(column, start) of a table header; tabbed headers (kubectl before 1.5) are split on tabs."""
    if "\t" in header.strip():
        return [(_COLUMN.get(c.strip().upper(), c.strip().lower()), -1) for c in re.split(r"\t+", header.strip())], True
    return [(_COLUMN.get(m.group().upper(), m.group().lower()), m.start())
            for m in re.finditer(r"\S+(?: (?:SEEN|Seen))?", header)], False


def _table_cells(line: str, columns: list[tuple[str, int]], tabbed: bool) -> dict[str, str] | None:
    if tabbed:
        parts = re.split(r"\t+", line.strip())
        names = [name for name, _ in columns]
        if len(parts) == len(names) - 1 and "subobject" in names:
            parts.insert(names.index("subobject"), "")  # an empty column's tabs run into the next one's
        if len(parts) < len(columns):
            return None
        parts = parts[: len(columns) - 1] + ["\t".join(parts[len(columns) - 1:])]
        return {name: p.strip() for (name, _), p in zip(columns, parts, strict=True)}
    cells = {}
    for k, (name, start) in enumerate(columns):
        end = columns[k + 1][1] if k + 1 < len(columns) else None
        if start > len(line):
            return None
        cells[name] = line[start:end].strip()
    return cells


def _event_rows(table: list[tuple[int, str]], ctx: LoadContext, rep, found: Found, count: Lines, pod: str | None,
                *, in_describe: bool) -> None:
    columns, tabbed = None, False
    for i, raw in table:
        s = raw.strip()
        if _EVENTS_HEADER.match(raw) and ("REASON" in s.upper()):
            columns, tabbed = _table_columns(raw)
            count.skip(i, "header line")
            continue
        if not s or re.fullmatch(r"[-\s]+", s):
            count.skip(i, "separator line" if s else "blank line")
            continue
        cells = _table_cells(raw, columns, tabbed) if columns else None
        if not cells or not cells.get("reason"):
            count.skip(i, "not an events table row")
            continue
        count.parsed()
        _event_row(found, cells, i, ctx, rep, pod, in_describe)


def _when(cell: str, ctx: LoadContext, rep) -> tuple[pd.Timestamp, float | None, int | None, float | None]:
    """(absolute time, age, count, age of the first) of an events-table time cell."""
    m = _AGE_CELL.match(cell.strip())
    if m:
        age = parse_age(m["last"])
        if age is not None or m["last"] in ("<invalid>", "<unknown>"):
            first = parse_age(m["first"]) if m["first"] else None
            if age is None:
                rep.assume("events with age <invalid> or <unknown> (a clock behind the API server's) have no time")
            return pd.NaT, age, integer(m["count"]), first
    return stated_time(cell, ctx, rep), None, None, None


def _event_row(found: Found, cells: dict, line: int, ctx: LoadContext, rep, pod: str | None, in_describe: bool) -> None:
    reason, message, typ = cells.get("reason", ""), cells.get("message", ""), cells.get("type", "")
    t, age, n, first_age = _when(cells.get("last", ""), ctx, rep)
    first_t = pd.NaT
    if cells.get("first"):
        first_t, first_age = (_when(cells["first"], ctx, rep)[:2])
    obj = cells.get("object") or ""
    kind_of_object, _, name = obj.rpartition("/") if obj else (cells.get("kind", ""), "", cells.get("name", ""))
    job = pod if in_describe else (name if kind_of_object.lower() in ("pod", "") and name else None)
    sub = _CONTAINER_OF.search(cells.get("subobject", "") + " " + message)
    cm = _CONTAINER_IN_MESSAGE.search(message) if sub is None else None
    container = sub["name"] if sub else (cm["name"] if cm and cm["name"] not in ("with", "image", "id", "runtime") else None)
    where = dict(job=job, container=container, by=BY, reason=reason, event_type=typ or None,
                 count=n if n is not None else integer(cells.get("count")), source_component=cells.get("from") or None,
                 age_s=age, first_age_s=first_age, first_seen=first_t if not pd.isna(first_t) else None)
    text = f"{typ} {reason}: {message}".strip()
    fact = process_control.read_kernel(message) if reason in _OOM_REASONS else None
    oom = _SYSTEM_OOM.search(message) if reason in _OOM_REASONS else None
    if reason in _OOM_REASONS:
        pid = fact.get("pid") if fact else integer(oom["pid"]) if oom else None
        name_ = fact.get("process_name") if fact else oom["name"] if oom else None
        found.add(t, "oom_kill", text, line, pid=pid, process_name=name_, **where)
    elif reason == "Killing":
        found.add(t, "kill_sent", text, line, **where)
    elif reason in _POD_ENDED_BY:
        found.add(t, "attempt_end", text, line, **where)
    elif reason == "Started" and not in_describe:
        found.add(t, "attempt_start", text, line, **where)
    elif typ == "Warning":
        found.add(t, "warning", text, line, **where)
    else:
        found.add(t, "stage", text, line, **where)


# A row of today's `kubectl get events` pasted without its header: LAST SEEN (an age, `(x3 over
# 10m)` after it in older versions), TYPE, REASON, OBJECT (`pod/NAME`: a masked name may hold a
# blank), MESSAGE; NAMESPACE first (`-A`) where the first word is no age.
_HEADLESS_EVENT = re.compile(r"^(?:(?P<namespace>[a-z0-9][-a-z0-9.]*)\s+)?(?P<last>(?:\d+[smhdy])+|<unknown>|<invalid>"
                             r")(?: \(x\d+ over \S+\))?\s+(?P<type>Normal|Warning)\s+(?P<reason>[A-Z]\w+)\s+"
                             r"(?P<object>[a-z][a-z.]*/.+?)\s{2,}(?P<message>\S.*)$")


# A row of describe's events table pasted without its header (or its `Events:` line): TYPE,
# REASON, AGE (`(x3 over 10m)` after it), FROM (`kubelet`, older versions' `kubelet, node-1`),
# MESSAGE.
_DESCRIBED_EVENT = re.compile(r"^(?P<type>Normal|Warning)\s+(?P<reason>[A-Z]\w+)\s+(?P<last>(?:\d+[smhdy])+|<unknown>|"
                              r"<invalid>)(?: \(x\d+ over \S+\))?\s+(?P<from>[\w.-]+(?:, [\w.-]+)?)\s+(?P<message>\S.*)$")


def read_events(lines: list[str], first: int, ctx: LoadContext, rep, found: Found, *, counted: bool = True) -> None:
    """`kubectl get events` output (any version's columns, -o wide too) from line number `first`;
    rows pasted without the table's header read as today's columns (`_HEADLESS_EVENT`), or as
    describe's (`_DESCRIBED_EVENT`)."""
    count = Lines(rep, counted)
    table: list[tuple[int, str]] = []
    for k, raw in enumerate(lines):
        i = first + k
        why = framing(raw) if not table or not raw.strip() or raw.strip().startswith(("```", "~~~")) else None
        if why is not None and not (why == "blank line" and table):
            count.skip(i, why)
            continue
        if not table and (m := _HEADLESS_EVENT.match(raw.strip())):
            count.parsed()
            cells = {c: v for c, v in m.groupdict().items() if v is not None}
            cells["last"] = raw.strip()[m.start("last"):m.end("type")].removesuffix(m["type"]).strip()
            _event_row(found, cells, i, ctx, rep, None, in_describe=False)
            continue
        if not table and (m := _DESCRIBED_EVENT.match(raw.strip())):
            count.parsed()
            cells = {c: v for c, v in m.groupdict().items() if v is not None}
            cells["last"] = raw.strip()[m.start("last"):m.start("from")].strip()
            _event_row(found, cells, i, ctx, rep, None, in_describe=True)
            continue
        if not table and not _EVENTS_HEADER.match(raw):
            count.skip(i, "text before the events table")
            continue
        table.append((i, raw))
    _event_rows(table, ctx, rep, found, count, None, in_describe=False)


# -- kubectl get pod -o json|yaml ---------------------------------------------------------------
def _pods(doc) -> list[dict]:
    if not isinstance(doc, dict):
        return []
    if doc.get("kind") == "List" or isinstance(doc.get("items"), list):
        return [p for p in doc.get("items") or [] if isinstance(p, dict) and isinstance(p.get("status"), dict)]
    return [doc] if isinstance(doc.get("status"), dict) else []


def _doc_state(raw, line: int) -> State | None:
    """A containerStatus's `state` / `lastState` ({"terminated": {...}}) as a State."""
    if not isinstance(raw, dict):
        return None
    for what, key in (("Terminated", "terminated"), ("Running", "running"), ("Waiting", "waiting")):
        d = raw.get(key)
        if isinstance(d, dict):
            st = State(what, line)
            for src, dst in (("reason", "Reason"), ("exitCode", "Exit Code"), ("signal", "Signal"),
                             ("startedAt", "Started"), ("finishedAt", "Finished"), ("message", "Message")):
                if d.get(src) is not None:
                    st.fields[dst] = (str(d[src]), line)
            return st
    return None


def read_pod_document(lines: list[str], first: int, ctx: LoadContext, rep, found: Found, *,
                      counted: bool = True) -> bool:
    """`kubectl get pod -o json` or `-o yaml` (a pod, or a List of them); False when it holds none."""
    count = Lines(rep, counted)
    got = find_json(lines) or find_yaml(lines)
    pods = _pods(got[0]) if got is not None else []
    if not pods:
        return False
    _, a, b = got
    for i in range(len(lines)):
        if a <= i <= b:
            count.parsed()
        else:
            count.skip(first + i, framing(lines[i]) or "text around the pod document")
    # Each status's line: where its restartCount is (kubectl prints statuses in key order).
    counts = [first + i for i in range(a, b + 1) if re.search(r"\brestartCount\"?:", lines[i])]
    k = 0
    for p in pods:
        meta = p.get("metadata") if isinstance(p.get("metadata"), dict) else {}
        pod = str(meta["name"]) if meta.get("name") else None
        for key, init in (("containerStatuses", False), ("ephemeralContainerStatuses", False),
                          ("initContainerStatuses", True)):
            for cs in p["status"].get(key) or []:
                if not isinstance(cs, dict):
                    continue
                line = counts[k] if k < len(counts) else first + a
                k += 1
                c = Container(pod, str(cs.get("name") or "?"), init=init, restart_count=integer(cs.get("restartCount")))
                for which, field_ in (("state", "state"), ("last", "lastState")):
                    st = _doc_state(cs.get(field_), line)
                    if st is not None:
                        c.states[which] = st
                _container_events(found, c, ctx, rep)
    return True


# -- kubectl get pods ---------------------------------------------------------------------------
# Its table in any kubectl version: `-A` puts NAMESPACE first, `-o wide` adds columns after AGE
# (two of them named in two words); kubectl 1.24 and later say when the last restart was: `5 (49s ago)`.
_PODS_HEADER = re.compile(r"^(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\b")
_PODS_COLUMN = re.compile(r"\S+(?: (?:NODE|GATES))?")
_RESTARTS = re.compile(r"^(?P<n>\d+)(?:\s*\((?P<ago>[^)\s]+) ago\))?$")
# A pod's STATUS is its container's state: the reason it ended (a pod that ended, or one whose
# container ended and waits out its restart policy's back-off: CrashLoopBackOff), or the reason it
# cannot start it (an image it cannot pull, a bad spec). `Init:` names an init container's.
_POD_ENDED = {"Error", "OOMKilled", "Completed", "ContainerCannotRun", "StartError", "DeadlineExceeded", "Evicted",
              "ContainerStatusUnknown", "CrashLoopBackOff", "PostStartHookError"}
_POD_WAITING = {"ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "CreateContainerError",
                "RunContainerError", "InvalidImageName"}


# A row of the table pasted without its header: NAME READY (`0/1`) STATUS RESTARTS AGE, NAMESPACE
# first (`-A`) where the third word is READY; the STATUS one kubectl prints.
_HEADLESS_POD = re.compile(r"^(?:(?P<namespace>\S+)\s+)?\S+\s+\d+/\d+\s+(?P<status>\S+)\s+\d+(?:\s*\(\S+ ago\))?\s+"
                           r"(?:\d+[smhdy])+(?:\s|$)")
_POD_STATES = _POD_ENDED | _POD_WAITING | {"Running", "Pending", "ContainerCreating", "PodInitializing", "Terminating",
                                           "Unknown"}


def _headless_pod(line: str) -> bool:
    m = _HEADLESS_POD.match(line.strip())
    return m is not None and (m["status"].startswith("Init:") or m["status"] in _POD_STATES)


def _implied_pods_columns(line: str) -> list[str]:
    """The columns of a header-less row (`_HEADLESS_POD`)."""
    names = ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    return ["NAMESPACE", *names] if _HEADLESS_POD.match(line.strip())["namespace"] else names


def _pods_columns(header: str) -> list[tuple[str, int]]:
    """(column, start) of the pods table's header (`NOMINATED NODE` one column)."""
    return [(m.group(), m.start()) for m in _PODS_COLUMN.finditer(header)]


def _pods_cells_by_words(line: str, names: list[str]) -> dict[str, str] | None:
    """A pods row whose spacing was lost (a paste that collapsed the table's blanks) read word by
    word: NAME READY STATUS RESTARTS (with its `(49s ago)`) AGE, NAMESPACE first where the header
    has it; None where it has too few words."""
    words = line.split()
    if "RESTARTS" not in names or len(words) <= names.index("RESTARTS"):
        return None
    at = names.index("RESTARTS")
    if at + 1 < len(words) and words[at + 1].startswith("("):
        end = next((k for k in range(at + 1, len(words)) if words[k].endswith(")")), None)
        if end is None:
            return None
        words = words[:at] + [" ".join(words[at:end + 1])] + words[end + 1:]
    return dict(zip(names, words, strict=False))


def read_pods(lines: list[str], first: int, ctx: LoadContext, rep, found: Found, *, counted: bool = True) -> None:
    """`kubectl get pods`: what each pod's row says at the time the command ran. A container that
    ended (`Error`, `OOMKilled`, `Completed`, `CrashLoopBackOff`: ended and waiting to be started
    again) is an `attempt_end` with that reason (OOMKilled an `oom_kill` too), one that cannot start
    (`ImagePullBackOff`) a `warning`, each with its restarts (`attempt`, `restart_count`) and when
    the last one was, where kubectl says it. A pod running or starting says nothing that went
    wrong: its row is read and counted, no event."""
    count = Lines(rep, counted)
    for i, raw, columns in table_rows(lines, first, count, _PODS_HEADER, _pods_columns, "text before the pods table",
                                      headless=_headless_pod):
        cells = _table_cells(raw.rstrip(), columns, False) if columns else None
        if not (cells and _RESTARTS.match(cells.get("RESTARTS", ""))):
            cells = _pods_cells_by_words(raw, [name for name, _ in columns] if columns else _implied_pods_columns(raw))
        restarts = _RESTARTS.match(cells.get("RESTARTS", "")) if cells else None
        if not cells or not cells.get("NAME") or restarts is None:
            count.skip(i, "not a kubectl get pods row")
            continue
        count.parsed()
        pod, status, n = cells["NAME"], cells.get("STATUS", ""), int(restarts["n"])
        own = status.removeprefix("Init:")
        where = dict(job=pod, by=BY, reason=own, attempt=n, restart_count=n, status=status,
                     init_container=True if status.startswith("Init:") else None,
                     namespace=cells.get("NAMESPACE") or None)
        # (when the last restart was, where kubectl says it: in the words only; the start of an
        # attempt nothing else shows would be a start that nothing checks)
        last = f", the last {restarts['ago']} before" if restarts["ago"] else ""
        said = f"pod {pod}: {status}, {n} restart{'' if n == 1 else 's'}{last}"
        if own in _POD_ENDED:
            found.add(pd.NaT, "attempt_end", said, i, age_s=0.0, **where)
            if own == "OOMKilled":
                found.add(pd.NaT, "oom_kill", f"pod {pod}: OOMKilled", i, age_s=0.0, **where)
        elif own in _POD_WAITING:
            found.add(pd.NaT, "warning", said, i, age_s=0.0, **where)


# -- several outputs pasted one after another ---------------------------------------------------
# The keys a description's own lines begin with (where a paste holds a part of one: a container's
# state without the pod's name).
_DESCRIBE_KEY = re.compile(r"^\s*(?:Name|Namespace|Containers|Init Containers|State|Last State|Restart Count):(?:\s|$)")


def _output_at(line: str):
    """The reader of the output a line begins, where it is a line only that output holds: a
    pods table's header or row, an events table's, a description's key; else None."""
    s = line.strip()
    if _PODS_HEADER.match(s) or _headless_pod(line):
        return read_pods
    if (_EVENTS_HEADER.match(line) and "REASON" in s.upper()) or _HEADLESS_EVENT.match(s) or _DESCRIBED_EVENT.match(s):
        return read_events
    return read_describe if _DESCRIBE_KEY.match(line) else None


def read_pasted(lines: list[str], first: int, ctx: LoadContext, rep, found: Found, *, counted: bool = True,
                alone=None) -> None:
    """kubectl's outputs pasted one after another without the prompts that ran them (an issue's
    `kubectl get pods`, then the part of `kubectl describe pod` that says why, then its events):
    each read by its reader from the line it begins on to the next one's. A description's own
    events table is its own: it is read with it. Where no line begins one, `alone` (the reader of
    the format the file was taken for) reads them all."""
    starts: list[tuple[int, object]] = []
    for k, raw in enumerate(lines):
        reader = _output_at(raw)
        current = starts[-1][1] if starts else None
        if reader is None or reader is current or (current is read_describe and reader is read_events):
            continue
        starts.append((k, reader))
    if not starts:
        alone(lines, first, ctx, rep, found, counted=counted)
        return
    count = Lines(rep, counted)
    for k in range(starts[0][0]):
        count.skip(first + k, framing(lines[k]) or "text before the output")
    for (k, reader), (end, _) in zip(starts, [*starts[1:], (len(lines), None)], strict=True):
        reader(lines[k:end], first + k, ctx, rep, found, counted=counted)


# -- formats ------------------------------------------------------------------------------------
def _head(head: bytes) -> str:
    return head.decode("utf-8", "replace")


def sniff_describe(path: Path, head: bytes) -> float:
    if is_session(head):
        return 0.0
    text = _head(head)
    keys = sum(1 for k in ("Namespace:", "Containers:", "Restart Count:", "Container ID:", "Image ID:", "QoS Class:")
               if k in text)
    return 0.9 if re.search(r"(?m)^Name:", text) and keys >= 3 else 0.0


def sniff_get_events(path: Path, head: bytes) -> float:
    """`kubectl get events`, or an events table pasted alone (describe's `Type Reason Age From Message`)."""
    if is_session(head):
        return 0.0
    lines = _head(head).splitlines()
    for ln in lines[:50]:
        if _EVENTS_HEADER.match(ln) and "REASON" in ln.upper() and ("MESSAGE" in ln.upper() or "OBJECT" in ln):
            return 0.85
    # its rows pasted without the header: an age, a type, a reason, an object and a message (or
    # describe's: a type, a reason, an age, who said it and a message)
    return 0.6 if any(_HEADLESS_EVENT.match(ln.strip()) or _DESCRIBED_EVENT.match(ln.strip()) for ln in lines[:50]) else 0.0


def sniff_pod_document(path: Path, head: bytes) -> float:
    if is_session(head):
        return 0.0
    text = _head(head)
    if not re.search(r"\"?kind\"?:\s*\"?(?:Pod|List)\b", text):
        return 0.0
    return 0.9 if re.search(r"\"?(?:containerStatuses|restartCount)\"?:", text) else 0.0


def sniff_get_pods(path: Path, head: bytes) -> float:
    """`kubectl get pods` pasted alone (a prompt line above it at most)."""
    if is_session(head):
        return 0.0
    lines = _head(head).splitlines()[:50]
    if any(_PODS_HEADER.match(ln.strip()) for ln in lines):
        return 0.85
    # its rows pasted without the header: a row's READY, STATUS, RESTARTS and AGE are its own
    return 0.6 if any(_headless_pod(ln) for ln in lines) else 0.0


@registry.format("kubectl-describe-pod", sniff=sniff_describe,
                 doc="kubectl describe pod: container states (OOMKilled, exit codes, restart count) and the events table")
def load_describe(path: Path, ctx: LoadContext) -> Incident:
    return load_output(path, ctx, "kubectl-describe-pod", functools.partial(read_pasted, alone=read_describe), "kubectl describe pod")


@registry.format("kubectl-events", sniff=sniff_get_events,
                 doc="kubectl get events (any version's columns, -o wide): OOM kills, kills, starts, warnings")
def load_events(path: Path, ctx: LoadContext) -> Incident:
    return load_output(path, ctx, "kubectl-events", functools.partial(read_pasted, alone=read_events), "kubectl get events")


@registry.format("kubectl-pod-document", sniff=sniff_pod_document,
                 doc="kubectl get pod -o json|yaml: containerStatuses (state, lastState, restartCount)")
def load_pod_document(path: Path, ctx: LoadContext) -> Incident:
    return load_output(path, ctx, "kubectl-pod-document", read_pod_document, "pod document")


@registry.format("kubectl-get-pods", sniff=sniff_get_pods,
                 doc="kubectl get pods (-A, -o wide): each pod's status and restarts (CrashLoopBackOff, OOMKilled, Error)")
def load_pods(path: Path, ctx: LoadContext) -> Incident:
    return load_output(path, ctx, "kubectl-get-pods", functools.partial(read_pasted, alone=read_pods), "kubectl get pods")
