"""wandb runs at full resolution: offline `.wandb` logs, run folders, CSV exports, the online API.

Records become frames in two passes: a tight loop decodes each protobuf record and appends raw
strings to flat lists (no per-record DataFrame work, no per-value json.loads), then every column
is built once (one bulk json.loads for all history values). History goes to `metrics` in long
form, `stats` records to `metrics` as `system/...` and, per GPU, to `gpus`; console output to
`events`; identity, config, summary and the exit record (or its absence) to `Incident.runs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ...errors import SourceFormatError, UsageError
from ...incident import Incident, RunInfo, from_frames, from_sources
from ...load_report import FileReport
from ...schema import TIME
from .. import registry
from ..registry import LoadContext
from . import export as wandb_export
from . import files as wandb_files
from . import log as wandb_log
from . import messages as wandb_messages
from .console import console_events, read_console
from .decoding import decode_log
from .frames import gpu_info, history_frame, stats_frames, to_time
from .keys import bulk_json, json_values
from .online import load_online_run

LOG_FORMAT = "wandb-log"


# --------------------------------------------------------------------------------------------
# flat lists -> frames


# --------------------------------------------------------------------------------------------
# one .wandb file


@dataclass
class _RunParts:
    """Everything one run folder (or bare log) yields, before it becomes an Incident."""

    run: str | None = None
    info: RunInfo | None = None
    metrics: list[pd.DataFrame] = field(default_factory=list)
    gpus: list[pd.DataFrame] = field(default_factory=list)
    events: list[pd.DataFrame] = field(default_factory=list)
    reports: list[FileReport] = field(default_factory=list)
    console_texts: list[str] = field(default_factory=list)
    pid: int | None = None
    host: str | None = None
    records: int = 0  # records read from the .wandb log(s)
    run_record: int | None = None  # the run record's number in its log (where the start is)
    ends: list[pd.DataFrame] = field(default_factory=list)  # run_end events of the log(s)


def _stop_note(scan: wandb_log.LogScan) -> str | None:
    if scan.stop is None:
        return None
    at, why = scan.stop
    return f"reading stopped at byte {at} of {scan.size}: {why} (every complete record before it kept)"


_DAMAGE_EXPECTED = "records in CRC-valid chunks"
_NOTES_PER_FILE = 20  # damage notes beyond this are summed up in one


def _report_scan(scan: wandb_log.LogScan, rep: FileReport) -> None:
    """The framing's account in the load report: every record the file shows is counted."""
    rep.read = scan.seen
    if scan.header_damage is not None:
        rep.notes.append(f"file header damaged: found {scan.header_damage!r}, expected "
                         f"{wandb_log.MAGIC_BYTES!r}; the records after it were read by their checksums")
    for i, dmg in enumerate(scan.damage):
        if i < _NOTES_PER_FILE:
            rep.notes.append(dmg.describe())
        # One warning (or error, under on_bad_line="raise") per damaged range; every record
        # lost in it is counted under the same reason.
        rep.bad(None, _DAMAGE_EXPECTED, f"{dmg.lost} records lost at byte {dmg.start}: {dmg.why}", n=dmg.lost)
    if len(scan.damage) > _NOTES_PER_FILE:
        rest = scan.damage[_NOTES_PER_FILE:]
        rep.notes.append(f"{len(rest)} more damaged ranges, {sum(d.lost for d in rest)} records lost in them")
    if scan.zero_tail is not None:
        at, n = scan.zero_tail
        rep.notes.append(f"the file ends in {n} zero bytes from byte {at}: space allocated and never "
                         "written (the run was killed mid-write, or the machine went down)")
    if scan.torn:
        rep.skip(None, "incomplete last record (the file ends inside it)")


def _read_log(path: Path, ctx: LoadContext, parts: _RunParts, meta: wandb_files.Metadata,
              fallback: str | None = None) -> None:
    """Decode one .wandb file into `parts` (the run's metrics, gpus, console and identity)."""
    rep = ctx.report(path, LOG_FORMAT, unit="record")
    source = rep.path
    data = path.read_bytes()
    try:
        scan = wandb_log.scan(data)
    except wandb_log.NotAWandbLog as e:
        raise SourceFormatError(path, None, "a W&B transaction log (header ':W&B' 0xBEE1)", repr(e.found), fmt="wandb-log") from e
    _report_scan(scan, rep)
    note = _stop_note(scan)
    if note:
        rep.notes.append(note)
    d = decode_log(data, scan.records, rep, ctx.kept, (LOG_FORMAT, str(path.resolve())))

    ident = d.identity
    env = d.environment
    run = ident.get("name") or ident.get("id") or fallback or path.stem
    host = ctx.host or ident.get("host") or env.get("host") or meta.host
    parts.run, parts.host = run, host
    parts.run_record = ident.get("num")
    hist = history_frame(d.hist_row, d.hist_key, bulk_json(d.hist_val), d.hist_stepnum, run, source, rep,
                         n_rows=d.n_hist)
    stats, gpus = stats_frames(d.stats_row, d.stats_key, bulk_json(d.stats_val), to_time(d.stats_time), run, host,
                               source, gpu_info(env, {}) or meta.gpus)
    parts.metrics += [hist, stats]
    parts.gpus.append(gpus)
    console = console_events(d, run, host, source)
    parts.events.append(read_console(console, ctx))
    if len(console):
        parts.console_texts += console["message"].tolist()

    started = pd.Timestamp(ident["started"], unit="us", tz="UTC") if ident.get("started") else None
    info = RunInfo(
        run=run, id=ident.get("id"), name=ident.get("name"), project=ident.get("project"),
        host=host, started=started, config=json_values({k: v for k, v in d.config.items() if k != "_wandb"}),
        summary=json_values(d.summary), source=source,
        command=" ".join([env.get("program", "")] + list(env.get("args", []))).strip() or None,
    )
    last = pd.Timestamp(d.last_us, unit="us", tz="UTC") if d.last_us else None
    if len(hist):
        hist_last = hist["time"].max()
        last = hist_last if last is None or (pd.notna(hist_last) and hist_last > last) else last
    if d.exit is not None:
        info.exit_record, info.exit_code = True, d.exit[0]
        # SDKs before 0.11 leave the exit record's runtime at 0: the last record's time then.
        runtime = d.exit[1]
        info.ended = started + pd.Timedelta(seconds=runtime) if started is not None and runtime > 0 else last
        after = f" after {runtime:.0f} s" if runtime > 0 else ""
        message = f"run exited with code {d.exit[0]}{after} (exit record)"
        ref = f"{source}:{len(scan.records)}"
    else:
        info.exit_record, info.ended = False, last
        tail = f"; {note}" if note else ""
        message = f"ended without exit record (last record written at {last}){tail}"
        ref = f"{source}:{len(scan.records)}"
        rep.notes.append("no exit record: the run was killed, crashed, or the file was copied while it ran")
        if last is None:
            # Killed seconds after start: no record carries a time yet, so the end has none.
            message = f"ended without exit record; no record in the file carries a time{tail}"
            rep.assume("run end time unknown: the .wandb log holds no timestamped record "
                       "(the run was stopped seconds after it started)")
    parts.ends.append(
        pd.DataFrame({"time": pd.Series([info.ended], dtype=object).astype(TIME), "host": host, "run": run,
                      "kind": "run_end", "message": message, "source": source, "ref": ref,
                      "exit_code": pd.array([info.exit_code], dtype="Int64"),
                      # no exit record: the run's records stop here (model/attempts.py `_end`)
                      "open_end": pd.array([not info.exit_record], dtype="boolean")})
    )
    parts.records += len(scan.records)
    if not scan.records and not scan.seen and scan.size >= wandb_log.FILE_HEADER.size:
        rep.notes.append("the log holds only its header: the run stopped before wandb-core wrote its "
                         "first block (it writes in 32 KiB blocks)")
    parts.info = info
    parts.reports.append(rep)


# --------------------------------------------------------------------------------------------
# run folders: the log plus files/ (summary, metadata, config, console) and logs/


_RUN_FILES = ("wandb-metadata.json", "wandb-summary.json", "wandb-history.jsonl", "wandb-events.jsonl")
_RUN_FOLDER = re.compile(r"^(?:offline-)?run-\d{8}_\d{6}-(\w+)$")


def _files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def _head(path: Path, n: int = 512) -> bytes:
    if not path.exists():  # a dangling symlink has no content, only its target
        return b""
    with open(path, "rb") as f:
        return f.read(n)


def _wandb_logs(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.iterdir())
            if p.is_file() and not p.is_symlink() and wandb_log.is_wandb_log(_head(p, registry.SNIFF_BYTES))]


def _debug_logs(folder: Path) -> list[Path]:
    logs = folder / "logs"
    if not logs.is_dir():
        return []
    return [p for p in sorted(logs.iterdir())
            if p.is_file() and not p.is_symlink() and wandb_messages.is_debug_log(_head(p, 8192))]


# --------------------------------------------------------------------------------------------
# sniffers


def sniff_log(path: Path, head: bytes) -> float:
    return 1.0 if wandb_log.is_wandb_log(head) else 0.0


def sniff_run_folder(path: Path, head: bytes) -> float:
    try:
        if _wandb_logs(path):
            return 0.95
        for files in (path / "files", path):  # path itself: the layout before 0.10
            if any((files / name).is_file() for name in _RUN_FILES):
                return 0.9
        if _debug_logs(path):
            return 0.85  # a run stopped before its .wandb log had a byte: logs/ says what it was
    except OSError:
        return 0.0
    return 0.0


# What a run folder holds at its top, in every SDK's layout (before 0.10, its files themselves).
_RUN_ENTRIES = {"files", "logs", "tmp", "media", "code", "artifacts", "output.log", "requirements.txt", "config.yaml",
                "diff.patch", *_RUN_FILES}


def is_run_folder(path: Path) -> bool:
    """Whether a folder handed over as the incident is a run folder and nothing else: a run's
    entries only, as the SDK leaves them, its debug logs among them (a folder holding a .wandb
    log alone reads the same file by file)."""
    try:
        top = list(path.iterdir())
    except OSError:
        return False
    return bool(top) and all(p.name in _RUN_ENTRIES or p.suffix == ".wandb" for p in top) \
        and bool(_debug_logs(path)) and sniff_run_folder(path, b"") > 0


def sniff_link(path: Path, head: bytes) -> float:
    return 0.6 if wandb_files.link_target(path, head) is not None else 0.0


@registry.format(LOG_FORMAT, sniff=sniff_log, doc="wandb .wandb transaction log (offline or online run)")
def load_log_file(path: Path, ctx: LoadContext) -> Incident:
    parts = _RunParts()
    _read_log(path, ctx, parts, wandb_files.Metadata())
    parts.events += parts.ends
    return _assemble(parts, parts.info)


WANDB_RUN_FORMAT = "wandb-run"


WANDB_RUN_FILE_FORMAT = "wandb-run-file"


@registry.format(
    WANDB_RUN_FORMAT, sniff=sniff_run_folder, folder=True, whole=is_run_folder,
    doc="wandb run folder (run-*/offline-run-*: .wandb log, files/, logs/)",
)
def load_run_folder(folder: Path, ctx: LoadContext) -> Incident:
    """A wandb run folder, online or offline, with or without its .wandb log."""
    parts = _RunParts()
    logs = _wandb_logs(folder)
    # SDKs before 0.10 kept the run's files in the run folder itself, not in files/.
    files_dir = folder / "files" if (folder / "files").is_dir() else folder
    # The folder's own entry, first in the report: what was found in it.
    whole = ctx.report(folder, WANDB_RUN_FORMAT, unit="folder")
    whole.read = whole.parsed = 1
    parts.reports.append(whole)
    meta, summary, config = wandb_files.Metadata(), {}, {}
    meta_path = files_dir / "wandb-metadata.json"
    if meta_path.is_file():
        meta, rep = wandb_files.read_metadata(meta_path, ctx)
        parts.reports.append(rep)
    debug = _debug_logs(folder)
    debug_scans = []
    scanned = [(p, *wandb_messages.scan_debug_file(p, ctx)) for p in debug]
    wandb_messages.share_utc_offset([log for _, _, log in scanned])
    for p, rep, log in scanned:  # first: debug.log names the trainer's PID, which console events carry
        frame = wandb_messages.debug_log_events(log, ctx, rep, log.run_id, None, say_unfinished=True)
        parts.reports.append(rep)
        debug_scans.append((p, frame, log))
        if parts.pid is None and log.pid is not None and p.name == "debug.log":
            parts.pid = log.pid
    # The run's id when its records do not say (no .wandb, or one the run never wrote to).
    said_id = next((log.run_id for _, _, log in debug_scans if log.run_id), None)
    m = _RUN_FOLDER.match(folder.name)
    fallback = said_id or (m.group(1) if m else folder.name)
    for log in logs:
        _read_log(log, ctx, parts, meta, fallback)
    if not logs:
        # Only the folder and its logs name the run then (metadata.json names it before 0.10).
        parts.run = meta.name or fallback
        parts.host = ctx.host or meta.host
    for _, frame, _ in debug_scans:
        if len(frame):
            # Inside a run folder the .wandb log's own identity names the run.
            frame["run"], frame["host"] = parts.run, parts.host
            parts.events.append(frame[~frame["kind"].isin(_MILESTONE_KINDS)])
    handled = set(logs) | set(debug) | {meta_path}
    events_jsonl = []
    for p in _files_in(folder):
        if p in handled:
            continue
        target = wandb_files.link_target(p, _head(p))
        if target is not None:
            parts.reports.append(wandb_files.bookkeeping(p, ctx, target))
        elif p.parent == folder and p.stat().st_size == 0:
            rep = ctx.report(p, WANDB_RUN_FILE_FORMAT, unit="file")
            rep.read = 1
            rep.skip(None, "empty file")
            rep.notes.append("empty: a .wandb log the run never wrote a byte to (stopped at its start), "
                             "or a sync marker")
            parts.reports.append(rep)
        elif p == files_dir / "output.log":
            rep, frame = wandb_files.read_output_log(p, ctx, parts.console_texts, parts.run, parts.host)
            parts.reports.append(rep)
            parts.events.append(read_console(frame, ctx))
        elif p == files_dir / "wandb-summary.json":
            summary, rep = wandb_files.read_json_doc(p, ctx, "wandb-summary")
            parts.reports.append(rep)
        elif p == files_dir / "config.yaml":
            config, rep = wandb_files.read_config(p, ctx)
            parts.reports.append(rep)
        elif p == files_dir / "requirements.txt":
            parts.reports.append(wandb_files.read_requirements(p, ctx))
        elif p.parent in (folder, files_dir) and wandb_files.sniff_events_jsonl(p, _head(p, 8192)):
            events_jsonl.append(p)
        elif p.parent in (folder, files_dir) and not logs and wandb_files.sniff_history_jsonl(p, _head(p, 8192)):
            rep, metrics = wandb_files.read_history_jsonl(p, ctx, parts.run)
            parts.reports.append(rep)
            parts.metrics.append(metrics)
        else:
            rep = ctx.report(p, WANDB_RUN_FILE_FORMAT, unit="file")
            rep.read = 1
            rep.skip(None, "wandb run file not read as evidence (code, environment, media)")
            parts.reports.append(rep)
    info = parts.info
    if info is None:
        # No .wandb: identity from metadata and the folder, no history, exit unknown.
        run = parts.run
        start, end, _, _ = wandb_files.summary_facts(summary)
        said = _debug_said(debug_scans)
        info = RunInfo(run=run, id=said_id or run, host=parts.host, started=meta.started or said.get("started") or start,
                       ended=said.get("ended") or end, exit_code=said.get("exit_code"),
                       source=ctx.name(folder), command=meta.command)
        whole.notes.append("no .wandb transaction log in this run folder: history is not on disk "
                           "(sync it, use the API with load_wandb_run('entity/project/id'), or an export)")
        if summary:
            parts.events.append(wandb_files.summary_event(summary, run, ctx.name(files_dir / "wandb-summary.json")))
    elif summary and _summary_outlived_log(summary, info):
        # The log lost its last blocks (no exit record) but the summary file was rewritten
        # after them: where the run really was when it last logged.
        parts.events.append(wandb_files.summary_event(summary, info.run, ctx.name(files_dir / "wandb-summary.json")))
    parts.events += _milestones(parts, info, debug_scans, wandb_files.metadata_frames(
        meta, parts.run, ctx.name(meta_path), parts.host)[0])
    for p in events_jsonl:
        rep, metrics, gpus = wandb_files.read_events_jsonl(p, ctx, parts.run, parts.host, meta.gpus)
        parts.reports.append(rep)
        parts.metrics.append(metrics)
        parts.gpus.append(gpus)
    if info.id is None:
        info.id = fallback
    if info.started is None:
        info.started = meta.started or _debug_said(debug_scans).get("started")
    if summary:
        info.summary = {**summary, **info.summary} if info.summary else summary
    if config:
        info.config = {**config, **info.config}
    if parts.pid is not None:
        for ev in parts.events:
            if len(ev):
                ev["pid"] = parts.pid
    return _assemble(parts, info)


_MILESTONE_KINDS = ("run_start", "run_end")


def _summary_outlived_log(summary: dict, info: RunInfo) -> bool:
    """A summary written after the last record of a .wandb log that has no exit record."""
    _, last_logged, _, _ = wandb_files.summary_facts(summary)
    return (info.exit_record is False and last_logged is not None
            and (info.ended is None or pd.isna(info.ended) or last_logged > info.ended))


def _milestones(parts: _RunParts, info: RunInfo, debug_scans, meta_start: pd.DataFrame) -> list[pd.DataFrame]:
    """One run_start and one run_end for a run folder, each from the source that knows best.

    With records in its .wandb log the run record's start (UTC, exact) and the exit record (or
    its absence) decide. Without, metadata's startedAt, then debug.log, then debug-internal.log
    give the start (zoned times before local ones); the debug logs' end lines the end (one with an exit code first, then any real
    end line, then "the log stops without a finish line").
    """
    if parts.records:
        out = list(parts.ends)
        if info.started is not None:
            source = parts.ends[0]["source"].iloc[0] if parts.ends else info.source
            out.append(pd.DataFrame({
                "time": pd.Series([info.started], dtype=object).astype(TIME), "host": parts.host, "run": parts.run,
                "kind": "run_start", "message": "wandb run started (the run record's start time)",
                "source": source, "ref": f"{source}:{parts.run_record or 1}",
            }))
        return out
    # Logs with zoned times (wandb-core's JSON) before local-time ones, then debug.log first.
    frames = [f for _, f, _ in sorted(debug_scans, key=lambda s: (s[2].naive_times, s[0].name != "debug.log"))
              if len(f)]
    starts = [f[f["kind"] == "run_start"] for f in [meta_start, *frames] if len(f)]
    starts = [f for f in starts if len(f)]
    ends = pd.concat([f[f["kind"] == "run_end"] for f in frames], ignore_index=True) if frames else pd.DataFrame()
    out = [starts[0].iloc[:1]] if starts else []
    if len(ends):
        has_code = ends["exit_code"].notna() if "exit_code" in ends else pd.Series(False, index=ends.index)
        stops = (ends["open_end"].fillna(False).astype(bool) if "open_end" in ends
                 else pd.Series(False, index=ends.index))  # a log that only stops (messages.py)
        # Among logs that only stop, the one that went on longest dates the end best.
        late = ends["time"].rank(ascending=False, method="first").fillna(len(ends)) * stops
        best = ends.assign(_rank=(~has_code).astype(int) * 2 + stops.astype(int), _late=late)
        best = best.sort_values(["_rank", "_late"], kind="stable").drop(columns="_late")
        out.append(best.iloc[:1].drop(columns="_rank"))
    elif parts.ends:
        out += parts.ends
    return out


def _debug_said(scans) -> dict:
    """Start, end and exit code the debug logs give (for a folder without its .wandb log)."""
    out = {}
    for _, frame, _ in scans:
        if not len(frame):
            continue
        for kind, key in (("run_start", "started"), ("run_end", "ended")):
            times = frame.loc[frame["kind"] == kind, "time"].dropna()
            if len(times) and key not in out:
                out[key] = times.iloc[0] if kind == "run_start" else times.iloc[-1]
        if "exit_code" in frame and "exit_code" not in out:
            codes = frame["exit_code"].dropna()
            if len(codes):
                out["exit_code"] = int(codes.iloc[-1])
    return out


def _assemble(parts: _RunParts, info: RunInfo) -> Incident:
    def cat(frames):
        frames = [f for f in frames if len(f)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    # Rows and time spans go to the report of the file they came from.
    inc = from_sources(parts.reports, metrics=cat(parts.metrics), gpus=cat(parts.gpus), events=cat(parts.events))
    inc.runs[info.run] = info
    return inc


@registry.format(
    "wandb-bookkeeping", sniff=sniff_link,
    doc="wandb latest-run / debug*.log links (copied as text): bookkeeping, not evidence",
)
def load_link_file(path: Path, ctx: LoadContext) -> Incident:
    return from_frames(wandb_files.bookkeeping(path, ctx, wandb_files.link_target(path, _head(path)) or "?"))


# --------------------------------------------------------------------------------------------
# public entry point


_RUN_PATH = re.compile(r"^(?:https?://[^/]+/)?([\w.-]+)/([\w.-]+)/(?:runs/)?(\w+)/?$")


def load_wandb_run(source, *, on_bad_line: str = "warn", sampled: bool = False, host=None,
                   timezone: str = "UTC", api=None, online: bool = False) -> Incident:
    """Read one wandb run at full resolution into an Incident.

    `source` is a `.wandb` file, a run folder, a wandb folder holding run folders, a history or
    chart CSV export, or (only when no such path exists) an online run path
    `entity/project/run_id`, read with `wandb.Api()` (or `api`) when `online=True` says the
    network may be used. Online history is read in full (`scan_history`); `sampled=True` allows
    the sampled `history()` and the report says so.
    """
    path = Path(source)
    if not path.exists():
        if isinstance(source, str) and (m := _RUN_PATH.match(source)):
            if not online:
                raise UsageError(f"{source}: no such file or folder here; as a wandb run path it needs the "
                                 "network: pass online=True to read it from the wandb server")
            return load_online_run("/".join(m.groups()), api=api, sampled=sampled,
                                   on_bad_line=on_bad_line)
        raise SourceFormatError(path, None, "a .wandb file, a run folder, an export or entity/project/run_id",
                                "no such file or folder", fmt="wandb")
    ctx = LoadContext(root=path.parent, timezone=timezone, host=host, on_bad_line=on_bad_line)
    if path.is_dir():
        if sniff_run_folder(path, b""):
            return load_run_folder(path, ctx)
        folders = [p for p in sorted(path.rglob("*")) if p.is_dir() and not p.is_symlink()
                   and sniff_run_folder(p, b"")]
        if not folders:
            raise SourceFormatError(path, None, "a wandb run folder (a .wandb log or files/wandb-*.json)",
                                    "a folder without one", fmt=WANDB_RUN_FORMAT)
        ctx.root = path
        return Incident.combine([load_run_folder(p, ctx) for p in folders])
    head = registry.read_head(path)
    # A .wandb log, else one of the CSV exports (a file of the run folder is read with its run).
    fmt, _ = registry.sniff(path, head, among=[registry.FORMATS[LOG_FORMAT], *registry.formats_of(wandb_export.__name__)])
    if fmt is not None:
        return fmt.load(path, ctx)
    found = "an empty file" if not head else repr(head[:16])
    raise SourceFormatError(path, None, "a W&B transaction log (header ':W&B' 0xBEE1) or a wandb CSV export",
                            found, fmt="wandb")
