"""MLflow's file store (`mlruns/`, what `mlflow.log_metric` writes without a tracking server).

A run is a folder, `mlruns/<experiment id>/<run id>/`, read as one source (like a wandb run
folder): `meta.yaml` (run id and name, experiment, user, `start_time`/`end_time` in epoch
milliseconds, `status` 1 running, 2 scheduled, 3 finished, 4 failed, 5 killed), `metrics/<key>`
(one `timestamp_ms value step` line per logged value; a key with `/` is a sub-folder; MLflow
before 1.0 wrote no step), `params/<key>` and `tags/<key>` (one value each: the run's config and
tags, `mlflow.runName` among them). Metric values become `metrics` rows under canonical keys
(naming.metric_key) at their own millisecond times (UTC); the start and the end become
`run_start` / `run_end` events. Artifacts are the run's outputs, not evidence: counted, not read.

An experiment's own `meta.yaml` (`mlruns/<id>/meta.yaml`: its name and artifact location) is a
file format of its own, read as bookkeeping. Both meta files are read line by line as `key:
value` (MLflow writes them flat), never through a YAML loader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ...incident import Incident, RunInfo, from_frames, from_sources
from ...load_report import FileReport
from ...schema import TIME
from .. import registry
from ..registry import LoadContext
from ..training_log.patterns import integer
from .metric_rows import MetricRows
from .naming import metric_key

RUN_FORMAT = "mlflow-run"
EXPERIMENT_FORMAT = "mlflow-experiment"
_META_LINE = re.compile(r"^(?P<key>[A-Za-z_]\w*):(?: (?P<value>.*))?$")
_RUN_KEYS = (b"run_id:", b"run_uuid:")
_EXPERIMENT_KEYS = (b"artifact_location:", b"lifecycle_stage:", b"experiment_id:")
# mlflow.entities.RunStatus
_STATUS = {"1": "RUNNING", "2": "SCHEDULED", "3": "FINISHED", "4": "FAILED", "5": "KILLED"}
_ENDED_BADLY = ("FAILED", "KILLED")
_MAX_VALUE_CHARS = 5000  # a param or tag longer than this is cut in the run's config (MLflow's own limit is 6000)


def _head(path: Path, n: int = 4096) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def sniff_run_folder(path: Path, head: bytes) -> float:
    meta = path / "meta.yaml"
    try:
        if not meta.is_file() or not any((path / d).is_dir() for d in ("metrics", "params", "tags")):
            return 0.0
    except OSError:
        return 0.0
    text = _head(meta)
    return 0.95 if any(k in text for k in _RUN_KEYS) else 0.0


def sniff_experiment(path: Path, head: bytes) -> float:
    if any(k in head for k in _RUN_KEYS):
        return 0.0
    return 0.9 if sum(1 for k in _EXPERIMENT_KEYS if k in head) >= 2 and b"\nname:" in b"\n" + head else 0.0


def read_meta(path: Path, ctx: LoadContext, fmt: str) -> tuple[dict[str, str], FileReport]:
    """A flat `key: value` meta.yaml, every line accounted for; quoted values unquoted."""
    rep = ctx.report(path, fmt)
    meta: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    rep.read = len(lines)
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            rep.skip(n, "blank line")
            continue
        m = _META_LINE.match(line)
        if m is None:
            rep.bad(n, "'key: value'", line)
            continue
        value = (m.group("value") or "").strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        meta[m.group("key")] = value
        rep.parsed += 1
    return meta, rep


def _ms(text: str | None) -> pd.Timestamp | None:
    v = integer(text) if text else None
    if v is None or not 0 < v < 2**41:  # epoch milliseconds before 2039
        return None
    return pd.Timestamp(v, unit="ms", tz="UTC")


@registry.format(EXPERIMENT_FORMAT, sniff=sniff_experiment, doc="MLflow file store experiment meta.yaml (name, id): bookkeeping")
def load_experiment(path: Path, ctx: LoadContext) -> Incident:
    meta, rep = read_meta(path, ctx, EXPERIMENT_FORMAT)
    rep.notes.append(f"MLflow experiment {meta.get('experiment_id', '?')} named {meta.get('name', '?')!r}: "
                     "its runs are the folders beside this file")
    return from_frames(rep)


@registry.format(RUN_FORMAT, sniff=sniff_run_folder, folder=True,
                 doc="MLflow file store run folder (meta.yaml, metrics/, params/, tags/)")
def load_run_folder(folder: Path, ctx: LoadContext) -> Incident:
    whole = ctx.report(folder, RUN_FORMAT, unit="folder")
    whole.read = whole.parsed = 1
    reports = [whole]
    meta, rep = read_meta(folder / "meta.yaml", ctx, RUN_FORMAT)
    reports.append(rep)
    params, params_rep = _values(folder / "params", ctx, "params")
    tags, tags_rep = _values(folder / "tags", ctx, "tags")
    reports += [r for r in (params_rep, tags_rep) if r is not None]
    run_id = meta.get("run_id") or meta.get("run_uuid") or folder.name
    run = tags.get("mlflow.runName") or meta.get("run_name") or meta.get("name") or run_id
    metric_frames = []
    metrics_dir = folder / "metrics"
    for p in _files(metrics_dir):
        rep_m, frame = _read_metric(p, p.relative_to(metrics_dir).as_posix(), run, ctx)
        reports.append(rep_m)
        metric_frames.append(frame)
    handled = {folder / "meta.yaml", *_files(metrics_dir), *_files(folder / "params"), *_files(folder / "tags")}
    other = [p for p in _files(folder) if p not in handled]
    if other:
        rest = ctx.report(folder / "artifacts", "mlflow-run-file", unit="file")
        rest.read = len(other)
        rest.skip(None, "run artifact or other file (models, plots, datasets): not read as evidence", len(other))
        reports.append(rest)
    status = _STATUS.get(meta.get("status", ""), meta.get("status") or None)
    started, ended = _ms(meta.get("start_time")), _ms(meta.get("end_time"))
    source = ctx.name(folder / "meta.yaml")
    events = _milestones(run, started, ended, status, source, ctx.host)
    if meta.get("lifecycle_stage") == "deleted":
        rep.notes.append("the run was deleted in MLflow (lifecycle_stage deleted): its files were kept")
    if status == "RUNNING" and ended is None:
        rep.notes.append("status RUNNING and no end time: the run never said it ended (killed, or copied while it ran)")
    info = RunInfo(run=run, id=run_id, name=meta.get("run_name") or tags.get("mlflow.runName"),
                   project=meta.get("experiment_id"), host=ctx.host, started=started, ended=ended,
                   config=params, summary={"status": status} if status else {}, source=source,
                   command=tags.get("mlflow.source.name"))
    # one run, one source: its metric files are parts of its record, as a .wandb log's keys are
    # (each file read as a log of its own was a start of its own); each row's ref keeps its file
    metrics = [f.assign(source=source) for f in metric_frames if len(f)]
    inc = from_sources(reports, metrics=pd.concat(metrics, ignore_index=True) if metrics else pd.DataFrame(),
                       events=events)
    inc.runs[run] = info
    return inc


def _files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _values(folder: Path, ctx: LoadContext, what: str) -> tuple[dict[str, str], FileReport | None]:
    """params/ or tags/: one value per file, the file's path under the folder its key."""
    files = _files(folder)
    if not files:
        return {}, None
    rep = ctx.report(folder, f"mlflow-{what}", unit="file")
    rep.read = len(files)
    out = {}
    for p in files:
        with open(p, encoding="utf-8", errors="replace") as f:
            out[p.relative_to(folder).as_posix()] = f.read(_MAX_VALUE_CHARS)
        rep.parsed += 1
    return out, rep


def _read_metric(path: Path, key: str, run: str, ctx: LoadContext) -> tuple[FileReport, pd.DataFrame]:
    rep = ctx.report(path, "mlflow-metric")
    rows = MetricRows()
    for n, line in enumerate(_bounded_lines(path), start=1):
        rep.read += 1
        if line is None:
            rep.skip(n, f"line longer than {_MAX_LINE} characters: not a metric line, not read")
            continue
        parts = line.split()
        if not parts:
            rep.skip(n, "blank line")
            continue
        t = _ms(parts[0]) if len(parts) in (2, 3) else None
        try:
            value = float(parts[1]) if t is not None else None
        except ValueError:
            value = None
        if value is None:
            rep.bad(n, "'timestamp_ms value [step]'", line)
            continue
        rows.add(integer(parts[2]) if len(parts) == 3 else None, metric_key(key), value, n, t)
        rep.parsed += 1
    if rows.refs and all(s is None for s in rows.steps):
        rep.assume("metric lines without a step (MLflow before 1.0): step unknown")
    frame = rows.frame(rep.path, run, pd.Series(rows.times, dtype=object).astype(TIME))
    return rep, frame


_MAX_LINE = 4096  # a metric line is three numbers


def _bounded_lines(path: Path):
    """The file's lines, each read up to _MAX_LINE characters (None for a longer one, whose rest
    is passed over): a file of one endless line never sits in memory."""
    with open(path, encoding="utf-8", errors="replace") as f:
        while True:
            line = f.readline(_MAX_LINE)
            if not line:
                return
            if len(line) == _MAX_LINE and not line.endswith("\n"):
                while (more := f.readline(_MAX_LINE)) and not more.endswith("\n"):
                    pass
                yield None
                continue
            yield line.rstrip("\r\n")


def _milestones(run, started, ended, status, source, host) -> pd.DataFrame:
    rows = []
    if started is not None:
        rows.append({"time": started, "kind": "run_start", "message": "MLflow run started (meta.yaml start_time)"})
    if ended is not None:
        bad = status in _ENDED_BADLY
        rows.append({"time": ended, "kind": "run_end", "status": status,
                     "message": f"MLflow run ended with status {status or 'unknown'} (meta.yaml end_time)"
                                + (": it did not finish" if bad else "")})
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    df["time"] = df["time"].astype(TIME)
    return df.assign(run=run, host=host, source=source, ref=f"{source}:1")
