"""wandb runs at full resolution: offline `.wandb` logs, run folders, CSV exports, the online API.

Records become frames in two passes: a tight loop decodes each protobuf record and appends raw
strings to flat lists (no per-record DataFrame work, no per-value json.loads), then every column
is built once (one bulk json.loads for all history values). History goes to `metrics` in long
form, `stats` records to `metrics` as `system/...` and, per GPU, to `gpus`; console output to
`events`; identity, config, summary and the exit record (or its absence) to `Incident.runs`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import align
from ..errors import MissingDependencyError, SourceFormatError
from ..incident import Incident, RunInfo, from_frames
from ..load_report import FileReport
from ..schema import TIME
from . import wandb_log, wandb_records
from .registry import Format, LoadContext, register

# The trainer's throughput under the names trainers use for it; one canonical key downstream.
THROUGHPUT = "train/tok_per_s"
_THROUGHPUT_ALIASES = {
    "tok/s", "tok_per_s", "tokens_per_s", "tokens/s", "train/tok_s", "train/tok/s",
    "train/tokens_per_s", "train/tokens_per_sec", "train/tok_per_sec", "throughput/tok_per_s",
    "perf/tok_per_s", "tokens_per_second", "train/tokens_per_second",
}
_HISTORY_SPECIAL = ("_step", "_timestamp", "_runtime")

# wandb `stats` keys gpu.{i}.<field> -> gpus column and scale (one table, no code per field).
GPU_FIELDS: dict[str, tuple[str, float]] = {
    "memoryAllocatedBytes": ("memory_used_mib", 1 / 2**20),
    "gpu": ("util_gpu_pct", 1.0),
    "memory": ("util_mem_pct", 1.0),
    "powerWatts": ("power_w", 1.0),
    "temp": ("temp_c", 1.0),
    "smClock": ("sm_clock_mhz", 1.0),
    "memoryClock": ("mem_clock_mhz", 1.0),
    "enforcedPowerLimitWatts": ("power_limit_w", 1.0),
    "energyJoules": ("energy_j", 1.0),
    "memoryAllocated": ("memory_used_pct", 1.0),
}
_GPU_KEY = re.compile(r"gpu\.(\d+)\.(\w+)$")
_LEADING_TIME = re.compile(r"^\[?(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)")
_DEBUG_LINE = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) (\w+)\s+\S+:(\d+) ")
_STATS_PID = re.compile(r"Configure stats pid to (\d+)")
_LINK_TEXT = re.compile(
    rb"^[^\n]{0,200}?(?:(?:offline-)?run-\d{8}_\d{6}-\w+(?:/logs/debug(?:-internal)?\.log)?"
    rb"|core-debug-\d{8}_\d{6}\.log)\n?$"
)


def _pb():
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError as e:  # pragma: no cover - wandb is a core dependency
        raise MissingDependencyError("wandb", "reading .wandb run logs") from e
    return wandb_internal_pb2


def _us(ts) -> int:
    """A protobuf Timestamp as integer microseconds since the epoch."""
    return ts.seconds * 1_000_000 + ts.nanos // 1000


def _to_time(us) -> pd.Series:
    return pd.Series(pd.to_datetime(np.asarray(us, dtype="int64"), unit="us", utc=True)).astype(TIME)


# --------------------------------------------------------------------------------------------
# records -> flat lists


@dataclass
class _Decoded:
    """What a run's records say, still as flat Python lists (columns are built once, later)."""

    hist_row: list[int] = field(default_factory=list)
    hist_key: list[str] = field(default_factory=list)
    hist_val: list[str] = field(default_factory=list)  # value_json text, decoded in bulk
    # HistoryRecord.step per row, or a function giving it for the rows asked (read lazily)
    hist_stepnum: list[int] | Callable[[np.ndarray], list[int]] = field(default_factory=list)
    n_hist: int = 0
    stats_row: list[int] = field(default_factory=list)
    stats_key: list[str] = field(default_factory=list)
    stats_val: list[str] = field(default_factory=list)
    stats_time: list[int] = field(default_factory=list)  # µs, per stats record
    console: list[tuple[int, int, str, str]] = field(default_factory=list)  # num, µs, stream, text
    summary: dict[str, str] = field(default_factory=dict)  # key -> latest value_json
    config: dict[str, object] = field(default_factory=dict)
    identity: dict[str, object] = field(default_factory=dict)
    environment: dict[str, object] = field(default_factory=dict)
    exit: tuple[int, float] | None = None
    last_us: int | None = None


def _item_key(item) -> str:
    return ".".join(item.nested_key) if item.nested_key else item.key


def _typed_value_json(item) -> str:
    """History items written with typed fields instead of value_json (newer SDKs may)."""
    which = item.WhichOneof("value")
    if which is None or which == "none":
        return "null"
    if which in ("text", "json"):
        return item.json if which == "json" else json.dumps(item.text)
    return json.dumps(getattr(item, which))


def _decode(records: list[bytes], rep: FileReport) -> _Decoded:
    """All records, through the batch decoder when it can vouch for them, else one by one."""
    try:
        d, parsed = _decode_batched(records)
    except wandb_records.Unverified:
        return _decode_each(records, rep)
    rep.parsed += parsed
    return d


def _decode_batched(records: list[bytes]) -> tuple[_Decoded, int]:
    """History and summary items in a few bulk calls (wandb_records); other kinds one by one.

    Raises wandb_records.Unverified (having reported nothing) when a record needs the per-record
    decoder: one that does not parse, a summary that removes keys, an item that does not parse.
    """
    pb = _pb()
    RecordView, _, _ = wandb_records.views()
    d = _Decoded()
    view, rec = RecordView(), pb.Record()
    hist_bodies, sum_bodies = [], []
    from google.protobuf.message import DecodeError

    parse, which = view.ParseFromString, view.WhichOneof  # bound once: 600 000 calls a run
    add_hist, add_sum = hist_bodies.append, sum_bodies.append
    for num, payload in enumerate(records, 1):
        try:
            parse(payload)
        except DecodeError as e:
            raise wandb_records.Unverified(str(e)) from e
        kind = which("record_type")
        if kind == "history":
            add_hist(view.history)
        elif kind == "summary":
            add_sum(view.summary)
        elif kind in _OTHER_KINDS:
            try:
                rec.ParseFromString(payload)
            except DecodeError as e:
                raise wandb_records.Unverified(str(e)) from e
            _decode_other(rec, kind, num, d)
    if hist_bodies:
        items, counts, steps = wandb_records.items_of(hist_bodies)
        wandb_records.parse(pb.HistoryStep, b"".join(steps))  # every step parses, as in Record
        d.hist_key, d.hist_val = wandb_records.item_pairs(items, pb.HistoryItem)
        d.hist_row = np.repeat(np.arange(len(hist_bodies)), counts)
        d.hist_stepnum = lambda rows: [  # HistoryRecord.step, only for rows without `_step`
            wandb_records.parse(pb.HistoryRecord, hist_bodies[r]).step.num for r in rows
        ]
        d.n_hist = len(hist_bodies)
    if sum_bodies:
        items, _, removes = wandb_records.items_of(sum_bodies, per_body=False)
        if removes:
            raise wandb_records.Unverified("summary records remove keys: order matters")
        wandb_records.parse(pb.SummaryRecord, b"".join(sum_bodies))  # all parse, as in Record
        d.summary = wandb_records.merged(items, pb.SummaryItem)
    return d, len(records)


def _decode_each(records: list[bytes], rep: FileReport) -> _Decoded:
    from google.protobuf.message import DecodeError

    pb = _pb()
    d = _Decoded()
    rec = pb.Record()
    hist_row, hist_key, hist_val, hist_stepnum = d.hist_row, d.hist_key, d.hist_val, d.hist_stepnum
    summary = d.summary
    n_hist = 0
    for num, payload in enumerate(records, 1):
        try:
            rec.ParseFromString(payload)
        except DecodeError as e:
            rep.bad(num, "a wandb Record protobuf", f"{len(payload)} bytes ({e})")
            continue
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            items = rec.history.item
            for it in items:
                hist_key.append(it.nested_key and ".".join(it.nested_key) or it.key)
                hist_val.append(it.value_json or _typed_value_json(it))
            hist_row.extend([n_hist] * len(items))
            hist_stepnum.append(rec.history.step.num)
            n_hist += 1
            d.n_hist = n_hist
        elif kind == "summary":
            for it in rec.summary.update:
                summary[_item_key(it)] = it.value_json
            for it in rec.summary.remove:
                summary.pop(_item_key(it), None)
        elif kind in _OTHER_KINDS:
            _decode_other(rec, kind, num, d)
        rep.parsed += 1
    return d


_OTHER_KINDS = {"output_raw", "output", "stats", "run", "config", "environment", "exit"}


def _decode_other(rec, kind: str, num: int, d: _Decoded) -> None:
    """The record kinds other than history and summary (few in a run: read through the SDK)."""
    from google.protobuf.json_format import MessageToDict

    if kind == "output_raw" or kind == "output":
        o = getattr(rec, kind)
        t = _us(o.timestamp)
        d.console.append((num, t, "stderr" if o.output_type == 0 else "stdout", o.line))
        d.last_us = t
    elif kind == "stats":
        t = _us(rec.stats.timestamp)
        row = len(d.stats_time)
        d.stats_time.append(t)
        for it in rec.stats.item:
            d.stats_row.append(row)
            d.stats_key.append(it.key)
            d.stats_val.append(it.value_json)
        d.last_us = t
    elif kind == "run":
        r = rec.run
        d.identity.update(
            id=r.run_id or None, name=r.display_name or None, project=r.project or None,
            entity=r.entity or None, host=r.host or None,
            started=_us(r.start_time) if r.HasField("start_time") else None,
        )
        for it in r.config.update:
            d.config[_item_key(it)] = it.value_json
    elif kind == "config":
        for it in rec.config.update:
            d.config[_item_key(it)] = it.value_json
        for it in rec.config.remove:
            d.config.pop(_item_key(it), None)
    elif kind == "environment":
        d.environment.update(MessageToDict(rec.environment, preserving_proto_field_name=True))
    elif kind == "exit":
        d.exit = (rec.exit.exit_code, float(rec.exit.runtime))


# --------------------------------------------------------------------------------------------
# flat lists -> frames


def _bulk_json(texts: list[str]) -> list:
    """Decode many JSON values in one call; fall back per value only if one is malformed."""
    if not texts:
        return []
    try:
        return json.loads("[" + ",".join(texts) + "]")
    except ValueError:
        out = []
        for t in texts:
            try:
                out.append(json.loads(t))
            except ValueError:
                out.append(None)
        return out


def _numeric(values: list) -> tuple[np.ndarray, np.ndarray]:
    """(float values, mask of the ones that are numbers): text, media and bools are not metrics."""
    if set(map(type, values)) <= {float, int}:  # the usual case, checked in one pass
        return np.array(values, dtype=float), np.ones(len(values), dtype=bool)
    mask = np.fromiter(
        ((type(v) is float or type(v) is int) for v in values), dtype=bool, count=len(values)
    )
    out = np.full(len(values), np.nan)
    if mask.any():
        out[mask] = [v for v, m in zip(values, mask, strict=True) if m]
    return out, mask


def canonical_metric(key: str) -> str:
    """The kit's metric key for a trainer's key (throughput aliases -> train/tok_per_s)."""
    return THROUGHPUT if key in _THROUGHPUT_ALIASES else key


def history_frame(row, key: list[str], value: list, stepnum, run: str, source: str, rep: FileReport,
                  n_rows: int | None = None) -> pd.DataFrame:
    """History rows in long form: one row per (history row, numeric metric).

    `row`, `key`, `value` are flat, one entry per logged value; `stepnum` gives each history row
    the step to use when it carries no `_step` value: a list, or (with `n_rows`) a function of
    the rows that need it.
    """
    if n_rows is None:
        n_rows = len(stepnum)
    if not n_rows:
        return pd.DataFrame()
    codes, uniques = pd.factorize(np.asarray(key, dtype=object))
    uniques = np.asarray(uniques, dtype=object)
    rows = np.asarray(row, dtype=np.int64)
    values, numeric = _numeric(value)

    def per_row(name: str) -> np.ndarray:
        col = np.full(n_rows, np.nan)
        hit = np.flatnonzero(uniques == name)
        if len(hit):
            hit = codes == hit[0]
            col[rows[hit]] = values[hit]
        return col

    steps = per_row("_step")
    no_step = np.flatnonzero(np.isnan(steps))
    if len(no_step):
        given = stepnum(no_step) if callable(stepnum) else np.asarray(stepnum)[no_step]
        steps[no_step] = np.asarray(given, dtype=float)
    stamps = per_row("_timestamp")
    runtime = per_row("_runtime")
    keep = numeric & ~np.isin(uniques, _HISTORY_SPECIAL)[codes]
    n_other = int((~numeric).sum())
    if n_other:
        rep.notes.append(f"{n_other} history values are not numbers (text, media, tables): not in metrics")
    if np.isnan(stamps).any():
        rep.notes.append(f"{int(np.isnan(stamps).sum())} history rows have no _timestamp: time left empty")
    r = rows[keep]
    kept_codes = codes[keep]
    raw_keys = pd.Categorical.from_codes(kept_codes, categories=pd.Index(uniques, dtype="string"))
    # Aliases may map two keys to one metric: categories must stay unique.
    metric_codes, metric_names = pd.factorize(np.asarray([canonical_metric(k) for k in uniques], dtype=object))
    metric = pd.Categorical.from_codes(metric_codes[kept_codes], categories=pd.Index(metric_names, dtype="string"))
    times = pd.to_datetime(stamps * 1e6, unit="us", utc=True)
    out = pd.DataFrame(
        {
            "time": pd.Series(times.take(r)).astype(TIME),
            "run": run,
            "step": pd.array(steps[r], dtype="Int64"),
            "metric": pd.Series(metric).astype("string"),
            "value": values[keep],
            "source": source,
            "key": pd.Series(raw_keys).astype("string"),
            "runtime_s": runtime[r],
        }
    )
    return out


def _stats_frames(d: _Decoded, run: str, host, source: str, gpu_info: dict[int, dict]):
    if not d.stats_row:
        return pd.DataFrame(), pd.DataFrame()
    rows = np.asarray(d.stats_row, dtype=np.int64)
    keys = np.asarray(d.stats_key, dtype=object)
    values, numeric = _numeric(_bulk_json(d.stats_val))
    times = _to_time(d.stats_time)
    metrics = pd.DataFrame(
        {
            "time": times.take(rows[numeric]).reset_index(drop=True),
            "run": run,
            "metric": pd.Series("system/" + keys[numeric].astype(str)).astype("string"),
            "value": values[numeric],
            "source": source,
            "key": pd.Series(keys[numeric].astype(str)).astype("string"),
        }
    )
    # Per-GPU keys pivot into the gpus frame: one row per stats record and GPU.
    parsed = pd.Series(keys).str.extract(_GPU_KEY)
    is_gpu = parsed[0].notna().to_numpy() & numeric
    parsed = parsed[is_gpu]
    fields = parsed[1].map(lambda f: GPU_FIELDS.get(f, (None, 1.0)))
    col = fields.map(lambda f: f[0])
    scale = fields.map(lambda f: f[1]).to_numpy(dtype=float)
    long = pd.DataFrame(
        {
            "row": rows[is_gpu],
            "gpu": parsed[0].astype(int).to_numpy(),
            "col": col.to_numpy(),
            "value": values[is_gpu] * scale,
        }
    ).dropna(subset=["col"])
    if long.empty:
        return metrics, pd.DataFrame()
    wide = long.pivot_table(index=["row", "gpu"], columns="col", values="value", aggfunc="last")
    wide = wide.reset_index()
    wide["time"] = times.take(wide["row"].to_numpy()).to_numpy()
    wide["time"] = wide["time"].astype(TIME)
    wide["host"] = host
    wide["source"] = source
    wide["run"] = run
    info = pd.DataFrame.from_dict(gpu_info, orient="index")
    if not info.empty:
        wide = wide.merge(info, left_on="gpu", right_index=True, how="left")
    if "memory_total_mib" not in wide and "memory_used_pct" in wide:
        pass  # neither bytes nor a total: leave the total unknown rather than guess
    return metrics, wide.drop(columns=["row"])


def _gpu_info(environment: dict, metadata: dict) -> dict[int, dict]:
    """GPU index -> uuid, total memory and name, from the environment record or metadata.json."""
    gpus = environment.get("gpu_nvidia") or metadata.get("gpu_nvidia") or []
    info = {}
    for i, g in enumerate(gpus):
        total = g.get("memory_total") or g.get("memoryTotal")
        info[i] = {
            "uuid": g.get("uuid"),
            "memory_total_mib": float(total) / 2**20 if total else np.nan,
            "name": g.get("name"),
        }
    return info


def _console_lines(chunks: list[tuple[int, int, str, str]]):
    """Raw console chunks (text and newlines arrive as separate records) -> whole lines.

    Yields (record number, µs, stream, line) with the number and time of the line's first chunk;
    a carriage return keeps what a terminal would show (the text after the last one).
    """
    open_: dict[str, list] = {}
    for num, t, stream, text in chunks:
        parts = text.split("\n")
        for j, part in enumerate(parts):
            buf = open_.get(stream)
            if buf is None:
                buf = open_[stream] = [num, t, []]
            buf[2].append(part)
            if j < len(parts) - 1:
                line = "".join(buf[2]).rstrip("\r").rsplit("\r", 1)[-1]
                del open_[stream]
                if line.strip():
                    yield buf[0], buf[1], stream, line
    for stream, (num, t, parts) in open_.items():
        line = "".join(parts).rstrip("\r").rsplit("\r", 1)[-1]
        if line.strip():
            yield num, t, stream, line


def _console_events(d: _Decoded, run: str, host, source: str) -> pd.DataFrame:
    lines = list(_console_lines(d.console))
    if not lines:
        return pd.DataFrame()
    nums, times, streams, texts = zip(*lines, strict=True)
    return pd.DataFrame(
        {
            "time": _to_time(times),
            "host": host,
            "run": run,
            "kind": "console",
            "message": list(texts),
            "source": source,
            "ref": [f"{source}:{n}" for n in nums],
            "stream": list(streams),
        }
    )


def _json_values(raw: dict[str, str]) -> dict:
    if not raw:
        return {}
    return dict(zip(raw, _bulk_json(list(raw.values())), strict=True))


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
        rep.bad(None, _DAMAGE_EXPECTED, f"{dmg.lost} records lost at byte {dmg.start}: {dmg.why}")
        if dmg.lost > 1:
            rep.skip(None, f"expected {_DAMAGE_EXPECTED}", dmg.lost - 1)
    if len(scan.damage) > _NOTES_PER_FILE:
        rest = scan.damage[_NOTES_PER_FILE:]
        rep.notes.append(f"{len(rest)} more damaged ranges, {sum(d.lost for d in rest)} records lost in them")
    if scan.zero_tail is not None:
        at, n = scan.zero_tail
        rep.notes.append(f"the file ends in {n} zero bytes from byte {at}: space allocated and never "
                         "written (the run was killed mid-write, or the machine went down)")
    if scan.torn:
        rep.skip(None, "incomplete last record (the file ends inside it)")


def _read_log(path: Path, ctx: LoadContext, parts: _RunParts, metadata: dict) -> None:
    """Decode one .wandb file into `parts` (the run's metrics, gpus, console and identity)."""
    rep = ctx.report(path, "wandb-log", unit="record")
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
    d = _decode(scan.records, rep)

    ident = d.identity
    env = d.environment
    run = ident.get("name") or ident.get("id") or path.stem
    host = ctx.host or ident.get("host") or env.get("host") or metadata.get("host")
    parts.run, parts.host = run, host
    hist = history_frame(d.hist_row, d.hist_key, _bulk_json(d.hist_val), d.hist_stepnum, run, source, rep,
                         n_rows=d.n_hist)
    stats, gpus = _stats_frames(d, run, host, source, _gpu_info(env, metadata))
    parts.metrics += [hist, stats]
    parts.gpus.append(gpus)
    console = _console_events(d, run, host, source)
    parts.events.append(console)
    if len(console):
        parts.console_texts += console["message"].tolist()

    started = pd.Timestamp(ident["started"], unit="us", tz="UTC") if ident.get("started") else None
    info = RunInfo(
        run=run, id=ident.get("id"), name=ident.get("name"), project=ident.get("project"),
        host=host, started=started, config=_json_values({k: v for k, v in d.config.items() if k != "_wandb"}),
        summary=_json_values(d.summary), source=source,
        command=" ".join([env.get("program", "")] + list(env.get("args", []))).strip() or None,
    )
    last = pd.Timestamp(d.last_us, unit="us", tz="UTC") if d.last_us else None
    if len(hist):
        hist_last = hist["time"].max()
        last = hist_last if last is None or (pd.notna(hist_last) and hist_last > last) else last
    if d.exit is not None:
        info.exit_record, info.exit_code = True, d.exit[0]
        info.ended = started + pd.Timedelta(seconds=d.exit[1]) if started is not None else last
        message = f"run exited with code {d.exit[0]} after {d.exit[1]:.0f} s (exit record)"
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
            rep.assume("run end time unknown (NaT): the .wandb log holds no timestamped record "
                       "(the run was stopped seconds after it started)")
    parts.events.append(
        pd.DataFrame({"time": pd.Series([info.ended], dtype=object).astype(TIME), "host": host, "run": run,
                      "kind": "run_end", "message": message, "source": source, "ref": ref})
    )
    parts.info = info
    parts.reports.append(rep)


# --------------------------------------------------------------------------------------------
# run folders: the log plus files/ (summary, metadata, config, console) and logs/


def _files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def _is_link_stub(path: Path, head: bytes) -> str | None:
    """A symlink, or a symlink copied as a short text file holding its target: bookkeeping."""
    if path.is_symlink():
        return str(path.readlink())
    if len(head) < 300 and _LINK_TEXT.match(head):
        return head.decode("utf-8", "replace").strip()
    return None


def _bookkeeping(path: Path, ctx: LoadContext, target: str) -> FileReport:
    rep = ctx.report(path, "wandb-bookkeeping", unit="file")
    rep.read = 1
    rep.skip(None, "wandb bookkeeping (a link), not evidence")
    rep.notes.append(f"points to {target}")
    return rep


def _read_json_doc(path: Path, ctx: LoadContext, fmt: str) -> tuple[dict, FileReport]:
    rep = ctx.report(path, fmt, unit="document")
    rep.read = 1
    try:
        doc = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except ValueError as e:
        rep.bad(1, "one JSON object", str(e))
        return {}, rep
    if not isinstance(doc, dict):
        rep.bad(1, "one JSON object", type(doc).__name__)
        return {}, rep
    rep.parsed = 1
    return doc, rep


def _read_config_yaml(path: Path, ctx: LoadContext) -> tuple[dict, FileReport]:
    import yaml

    rep = ctx.report(path, "wandb-config-yaml", unit="document")
    rep.read = 1
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8", errors="replace")) or {}
    except yaml.YAMLError as e:
        rep.bad(1, "a wandb config.yaml mapping", str(e).splitlines()[0])
        return {}, rep
    rep.parsed = 1
    # wandb writes {key: {desc: ..., value: ...}}; `_wandb` is the SDK's own bookkeeping.
    return {
        k: (v.get("value") if isinstance(v, dict) and "value" in v else v)
        for k, v in doc.items()
        if k != "_wandb"
    }, rep


def _leading_times(lines: list[str], tz: str) -> pd.Series:
    stamps = [(m.group(1).replace(",", ".") if (m := _LEADING_TIME.match(t)) else None) for t in lines]
    naive = pd.to_datetime(pd.Series(stamps, dtype=object), errors="coerce", format="mixed")
    return align.localize(naive, tz)


def _read_output_log(path: Path, ctx: LoadContext, parts: _RunParts) -> FileReport:
    """files/output.log: console lines the .wandb log did not already give (with times)."""
    rep = ctx.report(path, "wandb-output-log")
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    rep.read = len(lines)
    known = parts.console_texts
    j = 0
    kept_no, kept = [], []
    for i, raw in enumerate(lines, 1):
        line = raw.rstrip("\r").rsplit("\r", 1)[-1]
        if not line.strip():
            rep.skip(i, "blank line")
        elif j < len(known) and line == known[j]:
            rep.skip(i, "same console line as the .wandb log (kept from there, with its time)")
            j += 1
        else:
            kept_no.append(i)
            kept.append(line)
    rep.parsed = len(kept)
    if not kept:
        return rep
    times = _leading_times(kept, ctx.timezone)
    if times.notna().any():
        rep.assume(align.zone_assumption(ctx.timezone) + " (times at the start of console lines)")
    if times.isna().any():
        rep.notes.append(f"{int(times.isna().sum())} console lines carry no time of their own")
    if known:
        rep.notes.append(f"{len(kept)} console lines are not in the .wandb log (written after it stops)")
    parts.events.append(
        pd.DataFrame({"time": times, "host": parts.host, "run": parts.run, "kind": "console", "message": kept,
                      "source": rep.path, "ref": [f"{rep.path}:{n}" for n in kept_no]})
    )
    return rep


def _read_debug_log(path: Path, ctx: LoadContext, run: str | None, parts: _RunParts | None = None):
    """wandb's own diagnostics: warnings and errors become events, the rest is counted."""
    rep = ctx.report(path, "wandb-debug-log")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    rep.read = len(lines)
    rows = []
    for i, line in enumerate(lines, 1):
        if parts is not None and parts.pid is None and (m := _STATS_PID.search(line)):
            parts.pid = int(m.group(1))
        level, when, message = None, None, line
        if line.startswith("{"):
            try:
                doc = json.loads(line)
                level, when, message = doc.get("level"), doc.get("time"), doc.get("msg", line)
            except ValueError:
                pass
        elif m := _DEBUG_LINE.match(line):
            level, when = m.group(2), m.group(1).replace(",", ".")
            message = line[m.end():]
        if level in ("WARNING", "WARN", "ERROR", "CRITICAL", "FATAL"):
            rows.append((i, when, level, message))
            rep.parsed += 1
        elif level is None:
            rep.skip(i, "continuation or unstructured line of a wandb SDK log")
        else:
            rep.skip(i, f"wandb SDK diagnostics at {level} level")
    if rows:
        nums, whens, levels, messages = zip(*rows, strict=True)
        naive = pd.Series(whens, dtype=object)
        zoned = naive.str.endswith("Z", na=False)
        times = pd.Series(pd.NaT, index=naive.index, dtype=TIME)
        if zoned.any():
            times[zoned] = pd.to_datetime(naive[zoned], utc=True, format="ISO8601").astype(TIME)
        if (~zoned).any():
            times[~zoned] = align.localize(pd.to_datetime(naive[~zoned], errors="coerce"), ctx.timezone)
            rep.assume(align.zone_assumption(ctx.timezone))
        frame = pd.DataFrame({"time": times, "run": run, "kind": "wandb_sdk",
                              "message": [f"{lv}: {m}" for lv, m in zip(levels, messages, strict=True)],
                              "source": rep.path, "ref": [f"{rep.path}:{n}" for n in nums]})
        if parts is not None:
            parts.events.append(frame)
        return rep, frame
    return rep, pd.DataFrame()


def _is_debug_log(head: bytes) -> bool:
    text = head[:4096].decode("utf-8", "replace")
    first = text.split("\n", 1)[0]
    if _DEBUG_LINE.match(first) and "[wandb_" in text:
        return True
    return first.startswith('{"time":') and '"msg":"' in first and ("wandb-core" in text or '"stream:' in text)


def _wandb_logs(folder: Path) -> list[Path]:
    out = []
    for p in sorted(folder.iterdir()):
        if p.is_file() and not p.is_symlink():
            with open(p, "rb") as f:
                if wandb_log.is_wandb_log(f.read(8)):
                    out.append(p)
    return out


def load_run_folder(folder: Path, ctx: LoadContext) -> Incident:
    """A wandb run folder, online or offline, with or without its .wandb log."""
    parts = _RunParts()
    logs = _wandb_logs(folder)
    files = _files_in(folder)
    files_dir = folder / "files"
    metadata, summary, config = {}, {}, {}
    meta_path = files_dir / "wandb-metadata.json"
    if meta_path.is_file():
        metadata, rep = _read_json_doc(meta_path, ctx, "wandb-metadata")
        parts.reports.append(rep)
    debug = [p for p in (folder / "logs" / "debug.log", folder / "logs" / "debug-internal.log")
             if p.is_file() and not p.is_symlink()]
    for p in debug:  # first: it names the trainer's PID, which console events carry
        parts.reports.append(_read_debug_log(p, ctx, None, parts)[0])
    for log in logs:
        _read_log(log, ctx, parts, metadata)
    if not logs:
        # Only the folder names the run then (metadata.json carries no display name).
        parts.run = folder.name.rsplit("-", 1)[-1]
        parts.host = ctx.host or metadata.get("host")
    for p in files:
        if p in logs or p == meta_path or p in debug:
            continue
        head = b""
        if p.exists():  # a dangling symlink has no content, only its target
            with open(p, "rb") as f:
                head = f.read(512)
        target = _is_link_stub(p, head)
        if target is not None:
            parts.reports.append(_bookkeeping(p, ctx, target))
        elif p == files_dir / "output.log":
            parts.reports.append(_read_output_log(p, ctx, parts))
        elif p == files_dir / "wandb-summary.json":
            summary, rep = _read_json_doc(p, ctx, "wandb-summary")
            parts.reports.append(rep)
        elif p == files_dir / "config.yaml":
            config, rep = _read_config_yaml(p, ctx)
            parts.reports.append(rep)
        else:
            rep = ctx.report(p, "wandb-run-file", unit="file")
            rep.read = 1
            rep.skip(None, "wandb run file not read as evidence (code, requirements, media)")
            parts.reports.append(rep)
    info = parts.info
    if info is None:
        # No .wandb: identity from metadata and the folder, no history, exit unknown.
        run = parts.run
        started = pd.Timestamp(metadata["startedAt"]) if metadata.get("startedAt") else None
        info = RunInfo(run=run, id=run, host=parts.host,
                       started=started, source=ctx.name(folder),
                       command=" ".join([metadata.get("program", "")] + metadata.get("args", [])).strip() or None)
        note = ctx.report(folder, "wandb-run", unit="file")
        note.notes.append("no .wandb transaction log in this run folder: history is not on disk "
                          "(sync it, use the API with load_wandb_run('entity/project/id'), or an export)")
        parts.reports.append(note)
    if summary:
        info.summary = {**summary, **info.summary} if info.summary else summary
    if config:
        info.config = {**config, **info.config}
    if parts.pid is not None:
        for ev in parts.events:
            if len(ev):
                ev["pid"] = parts.pid
    return _assemble(parts, info)


def _assemble(parts: _RunParts, info: RunInfo) -> Incident:
    def cat(frames):
        frames = [f for f in frames if len(f)]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    metrics, gpus, events = cat(parts.metrics), cat(parts.gpus), cat(parts.events)
    inc = Incident()
    for name, df in (("metrics", metrics), ("gpus", gpus), ("events", events)):
        if len(df):
            setattr(inc, name, from_frames(None, **{name: df}).frames()[name])
    # Rows and time spans go to the report of the file they came from.
    for rep in parts.reports:
        for name, df in (("metrics", metrics), ("gpus", gpus), ("events", events)):
            if len(df):
                mine = df["source"] == rep.path
                rep.count_rows(name, int(mine.sum()))
                if mine.any():
                    rep.see_times(df.loc[mine, "time"])
        inc.load_report.add(rep)
    inc.runs[info.run] = info
    return inc


# --------------------------------------------------------------------------------------------
# sniffers


def sniff_log(path: Path, head: bytes) -> float:
    return 1.0 if wandb_log.is_wandb_log(head) else 0.0


def sniff_run_folder(path: Path, head: bytes) -> float:
    try:
        if _wandb_logs(path):
            return 0.95
    except OSError:
        return 0.0
    files = path / "files"
    if (files / "wandb-metadata.json").is_file() or (files / "wandb-summary.json").is_file():
        return 0.9
    return 0.0


def sniff_debug_log(path: Path, head: bytes) -> float:
    return 0.9 if _is_debug_log(head) else 0.0


def sniff_link(path: Path, head: bytes) -> float:
    return 0.6 if _is_link_stub(path, head) is not None else 0.0


def load_log_file(path: Path, ctx: LoadContext) -> Incident:
    parts = _RunParts()
    _read_log(path, ctx, parts, {})
    return _assemble(parts, parts.info)


def load_debug_file(path: Path, ctx: LoadContext) -> Incident:
    if path.is_symlink():
        return _single(_bookkeeping(path, ctx, str(path.readlink())))
    rep, frame = _read_debug_log(path, ctx, None)
    return from_frames(rep, events=frame) if len(frame) else _single(rep)


def load_link_file(path: Path, ctx: LoadContext) -> Incident:
    with open(path, "rb") as f:
        head = f.read(512)
    return _single(_bookkeeping(path, ctx, _is_link_stub(path, head) or "?"))


def _single(rep: FileReport) -> Incident:
    inc = Incident()
    inc.load_report.add(rep)
    return inc


register(Format("wandb-log", sniff_log, load_log_file, "wandb .wandb transaction log (offline or online run)"))
register(Format("wandb-run", sniff_run_folder, load_run_folder,
                "wandb run folder (run-*/offline-run-*: .wandb log, files/, logs/)", folder=True))
register(Format("wandb-debug-log", sniff_debug_log, load_debug_file,
                "wandb SDK debug.log / debug-internal.log (warnings and errors become events)"))
register(Format("wandb-bookkeeping", sniff_link, load_link_file,
                "wandb latest-run / debug*.log links (copied as text): bookkeeping, not evidence"))


# --------------------------------------------------------------------------------------------
# public entry point


_RUN_PATH = re.compile(r"^(?:https?://[^/]+/)?([\w.-]+)/([\w.-]+)/(?:runs/)?(\w+)/?$")


def load_wandb_run(source, *, on_bad_line: str = "warn", sampled: bool = False, host=None,
                   timezone: str = "UTC", api=None) -> Incident:
    """Read one wandb run at full resolution into an Incident.

    `source` is a `.wandb` file, a run folder, a wandb folder holding run folders, a history or
    chart CSV export, or (only when no such path exists) an online run path
    `entity/project/run_id`, read with `wandb.Api()` (or `api`). Online history is read in full
    (`scan_history`); `sampled=True` allows the sampled `history()` and the report says so.
    """
    path = Path(source)
    if not path.exists():
        if isinstance(source, str) and (m := _RUN_PATH.match(source)):
            from .wandb_online import load_online_run

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
                                    "a folder without one", fmt="wandb-run")
        ctx.root = path
        return Incident.combine([load_run_folder(p, ctx) for p in folders])
    from .registry import read_head

    head = read_head(path)
    if sniff_log(path, head):
        return load_log_file(path, ctx)
    from . import wandb_export

    for fmt in wandb_export.FORMATS:
        if fmt.sniff(path, head):
            return fmt.load(path, ctx)
    found = "an empty file" if not head else repr(head[:16])
    raise SourceFormatError(path, None, "a W&B transaction log (header ':W&B' 0xBEE1) or a wandb CSV export",
                            found, fmt="wandb")
