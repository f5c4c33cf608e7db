"""What the wandb SDK says about a run in its own words: its debug logs and its terminal lines.

These are not training logs: they say when wandb.init ran, under which run id, whether and how the
run finished (exit code), and what went wrong on wandb's side. One reader covers every version:

| file | line form |
| --- | --- |
| `logs/debug.log` (all SDKs), `logs/debug-internal.log` (<= 0.17) | `2023-02-21 17:26:10,232 INFO    MainThread:4822 [wandb_init.py:init():516] message` (local time) |
| `logs/debug-internal.log` (wandb-core, >= 0.18) | `{"time":"2026-11-30T05:20:27.77Z","level":"INFO","msg":"stream: started","id":"3lsy4q7j"}` |
| `wandb/debug-cli.<user>.log` | `2023-02-21 18:09:32 ERROR dropped chunk 404 ...` (local time) |
| terminal output (a paste, a job's stdout) | `wandb: Run summary:`, `wandb: 🚀 View run x at: https://.../runs/<id>`, `wandb: ERROR ...` |

Events: `run_start` (wandb.init's run is up), `run_end` (finished, with `exit_code` when the log
gives one; or the log stops without a finish line: killed, crashed hard, or still running),
`error` and `warning` (the SDK's own, `level` column; continuation lines such as a traceback are
part of the message), `run_summary` (the terminal's "Run summary" block, at its `_timestamp`).
Every line is counted: parsed when it is, or belongs to, an event; skipped with its level or
reason otherwise.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ...clock import align
from ...incident import Incident, RunInfo, from_frames
from ...load_report import FileReport
from ...schema import TIME
from .. import registry
from ..registry import LoadContext
from ..terminal import ESCAPES
from .files import bookkeeping, link_target, read_text, summary_event, summary_facts

_PY_LINE = re.compile(
    r"^(?P<time>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) (?P<level>[A-Z]+)\s+(?P<thread>.*?):(?P<pid>\d+) "
    r"\[(?P<where>[^\]]*)\] ?(?P<msg>.*)$"
)
_CLI_LINE = re.compile(r"^(?P<time>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (?P<level>[A-Z]+) (?P<msg>.*)$")
_JSON_START = '{"time":"'
# Source files of the SDK that only write wandb's debug logs (a training log never names them).
_SDK_FILES = re.compile(r"\[(?:wandb_\w+|internal|sender|handler|writer|backend|interface\w*|meta|stats|"
                        r"system_monitor|file_pusher|dir_watcher|internal_api|router\w*|retry|"
                        r"redirect|jupyter|service\w*|wandb_setup|manager|datastore|context|"
                        r"streams?|server\w*|settings\w*|upload_job|progress|run|mailbox)\.py:")
_RUN_DIR = re.compile(r"(?:offline-)?run-(?P<stamp>\d{8}_\d{6})-(?P<id>[a-z0-9]+)")
_PATH_RUN = re.compile(r"/runs/(?P<id>[a-z0-9]{6,})\b|/files/[\w.-]+/[\w.-]+/(?P<fid>[a-z0-9]{6,})/")
_ERROR_LEVELS = {"ERROR", "CRITICAL", "FATAL"}
# INFO-level messages that are trouble all the same (network retries while the run waits).
_TROUBLE = re.compile(r"retrying (?:HTTP )?error|Retry attempt failed|Network error|timed out|"
                      r"parent process exited|received signal|panic")
_WARNING_LEVELS = {"WARNING", "WARN"}
# The Python SDK's sender (0.10-0.16) logs the run's start as epoch seconds on a local-time line:
# the one place such a log says which zone its clock was in.
_EPOCH_START = re.compile(r"^run started: \w+ with start time (?P<epoch>\d+(?:\.\d+)?)$")
_ZONE_STEP_S = 900  # UTC offsets are whole quarter hours
# The Python SDK's system monitor (0.13-0.17) logs every NVML call that fails, at ERROR, every 2 s.
_MONITOR_FAILED = re.compile(r"^Failed to (?:sample|serialize) metric: (?P<why>.+)$")
# NVML's words for a GPU that is itself failing (NVML_ERROR_RESET_REQUIRED, _GPU_IS_LOST); the rest
# ("Not Supported", "division by zero") are metrics a GPU does not report.
_NVML_FAULT = re.compile(r"GPU requires restart|GPU is lost")
_CONTINUATION_LIMIT = 40  # lines of a traceback kept in one event's message
_TERM_LINE = re.compile(r"^(?:.*?[\s>$#%:])?wandb: (?P<msg>.*)$")
_SPARK = re.compile(r"^[▁▂▃▄▅▆▇█ ]+$")

# (kind, pattern) for the messages that matter, first match wins; `code` names the exit code.
_MILESTONES: tuple[tuple[str, re.Pattern], ...] = (
    ("run_start", re.compile(r"^run started, returning control to user process")),
    ("run_start", re.compile(r"^stream: started$|^W&B internal server running at pid")),
    ("run_start", re.compile(r"^Logging user logs to ")),  # 0.10-0.12 write no "run started"
    ("run_start", re.compile(r"^handleInformInit: stream started$")),  # wandb-core's own debug-core.log
    ("run_end", re.compile(r"^got exitcode: (?P<code>-?\d+)")),
    ("run_end", re.compile(r"^handling exit code: (?P<code>-?\d+)")),
    ("run_end", re.compile(r"^finishing run (?P<path>\S+)")),
    ("run_end", re.compile(r"^Internal process exiting, parent pid (?P<pid>\d+) disappeared")),
    ("run_end", re.compile(r"^stream: closing$|^stream: finishing up$")),
    ("run_end", re.compile(r"^handleInformTeardown: server teardown initiated$")),
)
# Kinds a file contributes once: the first start, the most telling end.
_END_RANK = {"got exitcode": 0, "handling exit code": 1, "Internal process exiting": 2, "finishing run": 3,
             "stream:": 4, "handleInformTeardown": 4}


@dataclass
class SdkLog:
    """What one debug log says, before it becomes events."""

    run_id: str | None = None
    pid: int | None = None
    version: str | None = None
    rows: list[dict] = field(default_factory=list)
    naive_times: bool = False
    last_time: str | None = None
    last_line: int | None = None
    started: bool = False
    ended: bool = False
    utc_offset_s: int | None = None  # of its local-time lines, when the log (or a sibling) tells it
    utc_offset_from: str = "the offset the log gives itself ('run started ... with start time <epoch>')"

    @property
    def zone_assumed(self) -> bool:
        """Local times whose zone the log does not give: read in the incident's timezone."""
        return self.naive_times and self.utc_offset_s is None


def _event(i: int, when: str | None, kind: str, level: str | None, message: str, **extra) -> dict:
    return {"line": i, "when": when, "kind": kind, "level": level, "message": message, **extra}


def _parse_line(line: str):
    """(time text, zoned?, level, message, pid, fields) of one debug-log line, or None."""
    if line.startswith(_JSON_START):
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("msg"), str):
            return None
        return str(doc.get("time")), True, str(doc.get("level", "")).upper(), doc["msg"], None, doc
    if m := _PY_LINE.match(line):
        return m["time"].replace(",", "."), False, m["level"], m["msg"], int(m["pid"]), None
    if m := _CLI_LINE.match(line):
        return m["time"], False, m["level"], m["msg"], None, None
    return None


def scan_debug_log(lines: list[str], rep: FileReport) -> SdkLog:
    """Classify every line of a debug log; milestones, errors and warnings become rows."""
    log = SdkLog()
    open_row: dict | None = None  # the error/warning that continuation lines belong to
    end_rank = len(_END_RANK)
    start_rank, start_line, end_line = 2, None, None
    other_finish = False
    for i, line in enumerate(lines, 1):
        parsed = _parse_line(line)
        if parsed is None:
            if open_row is not None and len(open_row["more"]) < _CONTINUATION_LIMIT:
                open_row["more"].append(line)
                rep.parsed += 1
            elif not line.strip():
                rep.skip(i, "blank line")
            else:
                rep.skip(i, "continuation of a wandb SDK message (config, protobuf dump, traceback)")
            continue
        when, zoned, level, msg, pid, fields = parsed
        open_row = None
        log.naive_times |= not zoned
        log.last_time, log.last_line = when, i
        if pid is not None and log.pid is None and "MainThread" in line[24:60]:
            log.pid = pid
        if m := re.search(r"Configure stats pid to (\d+)", msg):
            log.pid = int(m.group(1))
        if fields and msg.startswith("Will exit if parent process dies") and isinstance(fields.get("ppid"), int):
            log.pid = fields["ppid"]  # debug-core.log: wandb-core's parent is the trainer
        # "wandb version 0.12.11 is available!" names the upgrade, not the SDK that wrote the log.
        if log.version is None and "is available" not in msg and (v := re.search(r"(?:SDK version is|core version\"?:?\"?|wandb version) ?(\d+\.\d+\.\d+[\w.+-]*)", line)):
            log.version = v.group(1)
        if log.run_id is None:
            log.run_id = _run_id(msg, fields)
        if log.utc_offset_s is None and not zoned and (ep := _EPOCH_START.match(msg)):
            log.utc_offset_s = _utc_offset(when, float(ep["epoch"]))
        elif log.utc_offset_s is None and zoned and (minutes := _written_offset(when)) is not None:
            # wandb-core writes the machine's own offset: the clock of the folder's local-time logs.
            log.utc_offset_s, log.utc_offset_from = minutes * 60, "the offset wandb-core writes in its JSON times"
        kind, code = None, None
        for k, rx in _MILESTONES:
            if mm := rx.search(msg):
                kind, code = k, mm.groupdict().get("code")
                break
        if kind == "run_start":
            # The best start line wins: "run started" over "Logging user logs to" (init began).
            rank = 1 if msg.startswith("Logging user logs to") else 0
            if rank < start_rank:
                log.rows = [r for r in log.rows if r["kind"] != "run_start"]
                if start_rank < 2:
                    rep.parsed -= 1
                    rep.skip(start_line, "a later line says better when the run started")
                log.rows.append(_event(i, when, "run_start", level, f"wandb: {msg}"))
                start_rank, start_line, log.started = rank, i, True
                rep.parsed += 1
                continue
        if kind == "run_end":
            # A notebook re-running wandb.init first finishes the run before it, in this log.
            if (fin := re.match(r"finishing run \S*/(\w+)$", msg)) and log.run_id and fin.group(1) != log.run_id:
                other_finish = True
            if other_finish:
                rep.skip(i, "the end of an earlier run of the same process (wandb.init called again)")
                other_finish = not msg.startswith("got exitcode")
                continue
            rank = next(r for p, r in _END_RANK.items() if msg.startswith(p))
            log.ended = True
            if rank < end_rank:
                if end_rank < len(_END_RANK):
                    rep.parsed -= 1
                    rep.skip(end_line, "a later line says better how the run ended")
                end_rank, end_line = rank, i
                log.rows = [r for r in log.rows if r["kind"] != "run_end"]
                extra = {"exit_code": int(code)} if code is not None else {}
                log.rows.append(_event(i, when, "run_end", level, f"wandb: {msg}", **extra))
                rep.parsed += 1
                continue
        if monitor := _MONITOR_FAILED.match(msg):
            if fault := _NVML_FAULT.search(monitor["why"]):
                kind = "gpu_lost" if fault.group(0) == "GPU is lost" else "gpu_error"
                log.rows.append(_event(i, when, kind, level, f"wandb GPU monitor: {msg}"))
                rep.parsed += 1
            else:
                rep.skip(i, "wandb's system monitor: a metric the GPU does not report")
            continue
        # wandb-core logs its network retries at INFO: they stall init all the same.
        trouble = level not in _ERROR_LEVELS and _TROUBLE.search(msg) is not None
        if level in _ERROR_LEVELS or level in _WARNING_LEVELS or trouble:
            text = msg
            if fields:
                more = {k: v for k, v in fields.items() if k not in ("time", "level", "msg")}
                if more:
                    text += " " + json.dumps(more, default=str)[:500]
            open_row = _event(i, when, "error" if level in _ERROR_LEVELS else "warning", level, text, more=[],
                              row_run=_run_id(msg, fields))
            log.rows.append(open_row)
            rep.parsed += 1
        else:
            rep.skip(i, f"wandb SDK diagnostics at {level or 'no'} level")
    return log


def _utc_offset(local: str, epoch: float) -> int | None:
    """Seconds east of UTC of a local wall-clock time that stamps the instant `epoch`."""
    wall = pd.to_datetime(local, errors="coerce", format="ISO8601")
    if pd.isna(wall):
        return None
    seconds = (wall - pd.Timestamp(epoch, unit="s")).total_seconds()
    offset = round(seconds / _ZONE_STEP_S) * _ZONE_STEP_S
    # Real zones lie within -12:00..+14:00; anything else is not a clock offset.
    return int(offset) if -12 * 3600 <= offset <= 14 * 3600 else None


def _written_offset(when: str) -> int | None:
    """Minutes east of UTC a zoned time is written in (`...+05:30`, `...Z`)."""
    m = re.search(r"(Z|[+-]\d{2}:?\d{2})$", when)
    return align.zone_offset(m.group(1)) if m else None


def _run_id(msg: str, fields: dict | None) -> str | None:
    if fields:
        # debug-core.log's "id" is a connection ("127.0.0.1:44424"): its run is "streamId".
        for k in ("streamId", "id", "stream_id", "run_id"):
            if isinstance(fields.get(k), str) and re.fullmatch(r"[\w-]+", fields[k]):
                return fields[k]
    if m := _RUN_DIR.search(msg):
        return m["id"]
    if m := re.match(r"finishing run \S+/(\w+)$", msg) or re.search(r"\bwith run id (\w+)", msg):
        return m.group(1)
    if m := _PATH_RUN.search(msg):
        return m["id"] or m["fid"]
    return None


def debug_log_events(log: SdkLog, ctx: LoadContext, rep: FileReport, run: str | None, host: str | None,
                     *, say_unfinished: bool) -> pd.DataFrame:
    """The scanned rows as events; with `say_unfinished`, a log that stops without a finish line
    says so (inside a run folder the .wandb log's own run_end says it instead)."""
    rows = list(log.rows)
    if say_unfinished and log.started and not log.ended and log.last_line is not None:
        rows.append(_event(log.last_line, log.last_time, "run_end", None,
                           "the wandb log stops here without a finish line: the run was killed, "
                           "crashed without wandb.finish, or was still running", open_end=True))
        rep.notes.append("no finish line: the run was killed, crashed hard, or was still running")
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame(rows)
    frame["message"] = [
        m + ("\n" + "\n".join(r["more"]) if r.get("more") else "") for m, r in zip(frame["message"], rows, strict=True)
    ]
    frame["time"] = _times(frame["when"], ctx, rep, log)
    frame["ref"] = [f"{rep.path}:{n}" for n in frame["line"]]
    frame["source"], frame["host"] = rep.path, host
    # A line that names its run (the CLI's log spans several) keeps it; the rest are the file's.
    frame["run"] = frame["row_run"].where(frame["row_run"].notna(), run) if "row_run" in frame else run
    if log.pid is not None:
        frame["pid"] = log.pid
    if "exit_code" in frame:
        frame["exit_code"] = pd.array(frame["exit_code"], dtype="Int64")
    if "open_end" in frame:
        frame["open_end"] = pd.array(frame["open_end"].eq(True), dtype="boolean")
    return frame.drop(columns=[c for c in ("when", "line", "more", "row_run") if c in frame])


def _times(when: pd.Series, ctx: LoadContext, rep: FileReport, log: SdkLog) -> pd.Series:
    text = when.astype(object)
    zoned = text.str.contains(r"(?:Z|[+-]\d{2}:?\d{2})$", na=False, regex=True)
    times = pd.Series(pd.NaT, index=text.index, dtype=TIME)
    if zoned.any():
        times[zoned] = pd.to_datetime(text[zoned], utc=True, format="ISO8601", errors="coerce").astype(TIME)
    if (~zoned).any():
        wall = pd.to_datetime(text[~zoned], errors="coerce", format="ISO8601")
        if log.utc_offset_s is not None:
            # An offset the SDK's own logs give beats any configured zone: it is this machine's clock.
            times[~zoned] = align.localize(wall, "UTC") - pd.Timedelta(seconds=log.utc_offset_s)
            rep.assume(f"local time read as UTC{_offset_text(log.utc_offset_s)}, {log.utc_offset_from}")
        else:
            times[~zoned] = align.localize(wall, ctx.timezone)
            if log.zone_assumed:
                rep.assume(align.zone_assumption(ctx.timezone) + " (the SDK writes local time)")
    return times


def _offset_text(seconds: int) -> str:
    sign, minutes = ("+" if seconds >= 0 else "-"), abs(seconds) // 60
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


WANDB_DEBUG_LOG_FORMAT = "wandb-debug-log"


def scan_debug_file(path: Path, ctx: LoadContext) -> tuple[FileReport, SdkLog]:
    rep = ctx.report(path, WANDB_DEBUG_LOG_FORMAT)
    lines = read_text(path).splitlines()
    rep.read = len(lines)
    log = scan_debug_log(lines, rep)
    if log.version:
        rep.notes.append(f"wandb {log.version}")
    return rep, log


def share_utc_offset(logs: list[SdkLog]) -> None:
    """The debug logs of one run folder share the machine's clock: an offset one of them states
    (debug-internal.log's epoch line) holds for the others (debug.log of 0.13+ has no such line)."""
    known = next((log.utc_offset_s for log in logs if log.utc_offset_s is not None), None)
    for log in logs:
        if known is not None and log.zone_assumed:
            log.utc_offset_s, log.utc_offset_from = known, "the offset the run's other debug logs give"


def read_debug_log(path: Path, ctx: LoadContext, run: str | None = None, host: str | None = None,
                   *, say_unfinished: bool = True) -> tuple[FileReport, pd.DataFrame, SdkLog]:
    rep, log = scan_debug_file(path, ctx)
    frame = debug_log_events(log, ctx, rep, run or log.run_id, host, say_unfinished=say_unfinished)
    return rep, frame, log


def is_debug_log(head: bytes) -> bool:
    text = head[:8192].decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines()[:40] if ln.strip()]
    if not lines:
        return False
    py = sum(bool(_PY_LINE.match(ln)) for ln in lines)
    if py and py >= 0.3 * len(lines) and _SDK_FILES.search(text):
        return True
    js = [ln for ln in lines if ln.startswith(_JSON_START)]
    if js and len(js) >= 0.5 * len(lines) and '"msg":"' in text and (
        "wandb-core" in text or '"msg":"stream:' in text or '"stream_id"' in text or "core version" in text
        # debug-core.log copied as a file (not the usual link): wandb-core's own server log
        or '"port-filename"' in text or '"msg":"handleInformInit' in text
    ):
        return True
    cli = sum(bool(_CLI_LINE.match(ln)) for ln in lines)
    return bool(cli >= 0.3 * len(lines) and re.search(r"api\.wandb\.ai|file_stream|wandb", text))


# --------------------------------------------------------------------------------------------
# a debug log found alone


def sniff_debug_log(path: Path, head: bytes) -> float:
    # Above any training-log score: these lines look like a log, but are wandb's own.
    return 0.95 if is_debug_log(head) else 0.0


@registry.format(
    WANDB_DEBUG_LOG_FORMAT, sniff=sniff_debug_log,
    doc="wandb SDK debug.log / debug-internal.log / debug-cli.log: run id, start, finish or its absence, the SDK's "
        "errors and warnings",
)
def load_debug_file(path: Path, ctx: LoadContext) -> Incident:
    target = link_target(path, b"") if path.is_symlink() else None
    if target is not None:
        return from_frames(bookkeeping(path, ctx, target))
    rep, frame, log = read_debug_log(path, ctx, ctx.options.get("run"), ctx.host)
    inc = from_frames(rep, events=frame)
    if log.run_id:
        run = ctx.options.get("run") or log.run_id
        exits = frame.loc[frame["kind"] == "run_end", "exit_code"].dropna() if "exit_code" in frame else []
        starts = frame.loc[frame["kind"] == "run_start", "time"] if len(frame) else []
        ends = frame.loc[frame["kind"] == "run_end", "time"] if len(frame) else []
        inc.runs[run] = RunInfo(
            run=run, id=log.run_id, host=ctx.host,
            started=starts.iloc[0] if len(starts) and pd.notna(starts.iloc[0]) else None,
            ended=ends.iloc[-1] if len(ends) and pd.notna(ends.iloc[-1]) else None,
            exit_code=int(exits.iloc[-1]) if len(exits) else None, source=rep.path,
        )
    return inc


# --------------------------------------------------------------------------------------------
# the SDK's terminal lines (`wandb: ...`), pasted into an issue or caught in a job's stdout


@dataclass
class _Terminal:
    run_id: str | None = None
    name: str | None = None
    summary: dict = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)


def _term_message(line: str) -> str | None:
    m = _TERM_LINE.match(ESCAPES.sub("", line).rstrip())
    return m["msg"] if m else None


def _scalar(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


WANDB_TERMINAL_FORMAT = "wandb-terminal"


def read_terminal(path: Path, ctx: LoadContext) -> tuple[FileReport, _Terminal]:
    rep = ctx.report(path, WANDB_TERMINAL_FORMAT)
    lines = read_text(path).splitlines()
    rep.read = len(lines)
    term = _Terminal()
    block = None  # "summary" or "history" while inside such a block
    for i, raw in enumerate(lines, 1):
        msg = _term_message(raw)
        if msg is None:
            plain = ESCAPES.sub("", raw).strip()
            if plain in ("Run summary:", "Run history:"):  # a paste that lost its first prefix
                msg = plain
            elif not plain:
                rep.skip(i, "blank line")
                continue
            else:
                rep.skip(i, "not a wandb line (the program's own output)")
                continue
        body = msg.strip()
        if body in ("Run summary:", "Run history:"):
            block = body.split()[1].rstrip(":")
            rep.parsed += 1
            continue
        if block and (m := re.match(r"^(?P<key>\S+)\s+(?P<value>.+)$", body)) and not body.endswith(":"):
            if block == "summary":
                term.summary[m["key"]] = _scalar(m["value"].strip())
            rep.parsed += 1
            if block == "history" and not _SPARK.match(m["value"]):
                rep.notes.append(f"line {i}: a history row without a sparkline")
            continue
        block = None
        if not body:
            rep.skip(i, "blank wandb line")
            continue
        if m := re.search(r"(?:View run|Syncing run|Synced) (?P<name>.+?)(?: at)?: (?P<url>https?://\S+)", body):
            term.name = term.name or m["name"].strip().lstrip("🚀 ").strip()
        elif m := re.match(r"^(?:🚀 )?Syncing run (?P<name>\S.*)$", body):
            term.name = term.name or m["name"].strip()
        term.run_id = term.run_id or _run_id(body, None)
        if m := re.search(r"Waiting for W&B process to finish.*\((?P<how>success|failed(?: (?P<code>-?\d+))?)\)", body):
            code = 0 if m["how"] == "success" else (int(m["code"]) if m["code"] else None)
            extra = {"exit_code": code} if code is not None else {}
            term.rows.append(_event(i, None, "run_end", None, f"wandb: {body}", **extra))
            rep.parsed += 1
        elif re.match(r"^(?:ERROR|Error)\b", body):
            term.rows.append(_event(i, None, "error", "ERROR", f"wandb: {body}"))
            rep.parsed += 1
        elif re.match(r"^(?:WARNING|Warning)\b|[Nn]etwork error|retry", body):
            term.rows.append(_event(i, None, "warning", "WARNING", f"wandb: {body}"))
            rep.parsed += 1
        else:
            rep.skip(i, "wandb progress or information line")
    return rep, term


def sniff_terminal(path: Path, head: bytes) -> float:
    if b"\0" in head[:4096]:
        return 0.0
    text = head.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines()[:300] if ln.strip()]
    if len(lines) < 3:
        return 0.0
    ours = sum(_term_message(ln) is not None for ln in lines)
    return 0.7 if ours >= 0.5 * len(lines) else 0.0


@registry.format(
    WANDB_TERMINAL_FORMAT, sniff=sniff_terminal,
    doc="wandb's terminal lines (`wandb: ...`): run summary, run link, exit status",
)
def load_terminal(path: Path, ctx: LoadContext) -> Incident:
    rep, term = read_terminal(path, ctx)
    run = ctx.options.get("run") or term.name or term.run_id or path.stem
    parts = [summary_event(term.summary, run, rep.path)] if term.summary else []
    if term.rows:
        ev = pd.DataFrame(term.rows)
        ev["time"] = pd.Series(pd.NaT, index=ev.index, dtype=TIME)
        ev["ref"] = [f"{rep.path}:{n}" for n in ev["line"]]
        ev["source"], ev["run"] = rep.path, run
        if "exit_code" in ev:
            ev["exit_code"] = pd.array(ev["exit_code"], dtype="Int64")
        parts.append(ev.drop(columns=[c for c in ("when", "line") if c in ev]))
        rep.notes.append("wandb's terminal lines carry no time: events other than the summary have none")
    events = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else pd.DataFrame()
    inc = from_frames(rep, events=events)
    start, end, _, _ = summary_facts(term.summary)
    exit_codes = [r["exit_code"] for r in term.rows if r.get("exit_code") is not None]
    inc.runs[run] = RunInfo(run=run, id=term.run_id, name=term.name, summary=term.summary, started=start,
                            ended=end, exit_code=exit_codes[-1] if exit_codes else None, source=rep.path)
    return inc
