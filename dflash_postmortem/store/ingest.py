"""`ingest`: an incident folder -> its Parquet store, converting only what changed.

The folder is walked and each entry's format decided exactly as `load_incident` does
(loaders/folder.py); each source is then converted on its own (convert.py) by a process pool, or
by dask tasks when a scheduler is given (cluster.py). Sources of phase 1 (transcripts, PID files,
dmon, kernel logs), which borrow what the others say (process start times, the incident's date),
are converted after them, from what the store holds. A source whose key (manifest.py) is
unchanged is not read again; the parts of a source that is gone are removed. Partitions that
many sources write to get a compact (compact.py).
"""

from __future__ import annotations

import hashlib
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

import pandas as pd

from .. import plain_data as plain
from .. import schema
from ..config import CONFIG_NAME
from ..errors import PostmortemError
from ..incident import Incident, RunInfo, runs_from_plain, runs_to_plain
from ..load_report import FileReport, LoadReport
from ..loaders.folder import FolderPlan, plan_incident
from . import layout
from .compact import compact
from .convert import CHUNK_BYTES, Converted, ConvertTask, convert_source, remove_parts
from .manifest import (
    Manifest,
    SourceEntry,
    file_key,
    folder_snapshot,
    read_document,
    write_document,
)
from .views import as_frame, connect

SCHEDULER_ENV = "DFLASH_SCHEDULER"
# Below this many bytes to convert, the default is to convert in this process.
POOL_BYTES = 64 << 20
# The kinds of the store's documents (manifest.write_document).
WALK, SOURCE, COMBINED = "store-folder-walk", "store-source", "store-combined"


@dataclass
class IngestResult:
    """What one `ingest` did: the store's location and which sources it converted or removed."""

    store: str
    converted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    # what this ingest found in the store and could not trust (a damaged or planted document),
    # and rebuilt from the evidence
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.store}: {len(self.converted)} source(s) converted, {len(self.unchanged)} unchanged, "
                f"{len(self.removed)} removed")


def ingest(
    folder: str | os.PathLike,
    store: str | None = None,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    timezone: str | None = None,
    host: str | None = None,
    on_bad_line: str = "warn",
    chunk_bytes: int = CHUNK_BYTES,
) -> IngestResult:
    """Convert the sources of `folder` into the store at `store` (default: `folder/.dflash-store`).

    `workers` processes convert files side by side (default: one per CPU; 1 converts in this
    process); with `scheduler` (or the DFLASH_SCHEDULER environment variable), the conversions
    are dask.distributed tasks on that cluster instead, and `store` may be any fsspec URL the
    workers can write.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise PostmortemError(f"{folder}: not an incident folder (ingest converts a folder)")
    store = store or layout.default_store(folder)
    scheduler = scheduler or os.environ.get(SCHEDULER_ENV) or None
    fs, root = layout.filesystem(store)
    # Sniffing decides each file's format from its content: ~50 ms a file, half a minute for a
    # fleet's 578. A folder whose every entry is as the last ingest saw it needs none of it.
    skip = {folder / layout.DEFAULT_NAME, Path(os.path.abspath(store))}
    snapshot = folder_snapshot(folder, skip, (timezone, host, on_bad_line))
    notes: list[str] = []
    manifest = _read_manifest(fs, root, notes)
    if snapshot is not None and manifest.snapshot == snapshot and manifest.order and _trusted(fs, root, manifest, notes):
        if compact(store, manifest, scheduler):
            _write_combined(fs, root, manifest, {})
        return IngestResult(store, unchanged=list(manifest.order))
    plan = plan_incident(folder, timezone=timezone, on_bad_line=on_bad_line, host=host)
    try:
        fs.makedirs(root, exist_ok=True)
    except OSError as e:
        raise PostmortemError(f"{store}: the store cannot be created there ({e.strerror or e}); "
                              "give another place with --store") from e
    options = _options(plan, on_bad_line)
    if manifest.options != options:
        # Another zone, host or incident.toml changes every row: nothing of the old store stands.
        for entry in manifest.sources.values():
            remove_parts(store, entry.parts + [entry.result])
        manifest = Manifest(options=options)
    result = IngestResult(store, notes=notes)

    named = [(plan.context.name(p.path), p) for p in plan.sources]
    ordered = sorted(range(len(named)), key=lambda i: (named[i][1].fmt.phase, i))
    here = {rel for rel, _ in named}
    for rel in sorted(set(manifest.sources) - here):
        entry = manifest.sources.pop(rel)
        remove_parts(store, entry.parts + [entry.result])
        result.removed.append(rel)

    keys = {rel: file_key(p.path) for rel, p in named}
    results = _source_results(fs, root, manifest, notes)
    stale = [(rel, p) for rel, p in named
             if rel not in manifest.sources or manifest.sources[rel].key != keys[rel] or rel not in results]
    first = [(rel, p) for rel, p in stale if p.fmt.phase == 0]
    later = [(rel, p) for rel, p in named if p.fmt.phase > 0]
    if not first and not result.removed:
        later = [(rel, p) for rel, p in later if (rel, p) in stale]  # what they borrow is unchanged
    _convert(first, plan, store, manifest, keys, result, results, scheduler, workers, chunk_bytes)
    if later:
        # Phase 1 borrows from what is loaded so far: in a folder load, every phase-0 source.
        _borrow_known(plan, store, manifest)
        _convert(later, plan, store, manifest, keys, result, results, None, 1, chunk_bytes)
    result.unchanged = [rel for rel, _ in named if rel not in result.converted]
    manifest.order = [named[i][0] for i in ordered]
    manifest.folder = f"{layout.RESULTS}/folder.json"
    write_document(fs, f"{root}/{manifest.folder}", WALK, plan.report.to_plain())
    manifest.snapshot = snapshot or ""
    compact(store, manifest, scheduler)
    _write_combined(fs, root, manifest, results)
    return result


def _read_manifest(fs, root: str, notes: list[str]) -> Manifest:
    """The store's manifest; one it cannot trust is set aside with a note, and the store is
    converted afresh (the frame folders and documents it wrote are removed: no part of it stands)."""
    try:
        return Manifest.read(fs, root) if fs.exists(root) else Manifest()
    except plain.Untrusted as e:
        notes.append(f"store manifest not trusted ({e}): the store is converted again from the evidence")
        clear(fs, root)
        return Manifest()


def clear(fs, root: str) -> None:
    """Remove what a store holds (its frame folders, documents and manifest), nothing else."""
    for top in (*schema.FRAME_NAMES, layout.RESULTS, layout.MANIFEST):
        if fs.exists(f"{root}/{top}"):
            fs.rm(f"{root}/{top}", recursive=True)


def _trusted(fs, root: str, manifest: Manifest, notes: list[str]) -> bool:
    """Whether the combined load report the store keeps can be read back as this kit wrote it."""
    if not manifest.combined:
        return False  # a store made before ingest kept it: made now
    try:
        read_document(fs, f"{root}/{manifest.combined}", COMBINED)
        return True
    except plain.Untrusted as e:
        notes.append(f"{manifest.combined or 'combined load report'} not trusted ({e}): rebuilt from the evidence")
        return False


def _source_results(fs, root: str, manifest: Manifest, notes: list[str] | None) -> dict[str, tuple]:
    """Each source's stored load report and runs, by name; a source whose document cannot be
    trusted is left out (with a note): ingest converts it again, a window shows it as unread."""
    out = {}
    for rel, entry in manifest.sources.items():
        try:
            data = plain.fields(rel, read_document(fs, f"{root}/{entry.result}", SOURCE),
                                {"report": plain.anything, "runs": plain.anything})
            out[rel] = (LoadReport.from_plain(data["report"]), runs_from_plain(data["runs"]))
        except plain.Untrusted as e:
            if notes is not None:
                notes.append(f"{entry.result or rel} not trusted ({e}): converted again from {rel}")
    return out


def _write_combined(fs, root: str, manifest: Manifest, results: dict[str, tuple]) -> None:
    """Keep the incident-wide load report and runs (`combined`) in the store, and the manifest
    that points at them."""
    manifest.combined = ""
    report, runs, renamed = combined(fs, root, manifest, results)
    manifest.combined = f"{layout.RESULTS}/combined.json"
    write_document(fs, f"{root}/{manifest.combined}", COMBINED, {
        "report": report.to_plain(), "runs": runs_to_plain(runs),
        "renamed": [[rel, old, new] for (rel, old), new in renamed.items()]})
    manifest.write(fs, root)


def combined(fs, root: str, manifest: Manifest, results: dict[str, tuple] | None = None
             ) -> tuple[LoadReport, dict[str, RunInfo], dict]:
    """The load report and runs of the whole incident, as a folder load makes them, and the runs
    renamed because another source has a run of the same name: {(source, old name): new name}.
    Written once by ingest (`results`: the sources' documents it has read already); where the
    store's copy cannot be trusted, combined again from the sources' own documents, and a source
    whose document cannot be trusted either is listed with that note and no report."""
    notes: list[str] = []
    if manifest.combined:
        try:
            data = plain.fields("combined", read_document(fs, f"{root}/{manifest.combined}", COMBINED),
                                {"report": plain.anything, "runs": plain.anything, "renamed": plain.anything})
            renamed = plain.list_of(plain.list_of(plain.text))("combined.renamed", data["renamed"])
            return (LoadReport.from_plain(data["report"]), runs_from_plain(data["runs"]),
                    {(rel, old): new for rel, old, new in renamed})
        except (plain.Untrusted, ValueError) as e:
            notes.append(f"{manifest.combined} not trusted ({e}): combined again from each source's report")
    if results is None or set(results) != set(manifest.sources):
        results = {**_source_results(fs, root, manifest, None), **(results or {})}
    parts = []
    # One set of empty frames for every source's part: they are never changed (combine skips
    # empty frames), and five fresh ones per source cost seconds for a fleet's hundreds of sources.
    empty = {frame: schema.empty(frame) for frame in schema.FRAME_NAMES}
    for rel in manifest.order:
        if rel in results:
            report, runs = results[rel]
        else:
            entry = manifest.sources[rel]
            why = "its load report in the store could not be trusted: rows shown, the account of its lines is not"
            report, runs = LoadReport(files=[FileReport(path=rel, format=entry.format, notes=[why])]), {}
        parts.append((rel, list(runs), Incident(load_report=report, runs=dict(runs), **empty)))
    inc = Incident.combine([p for _, _, p in parts])
    renamed = {}
    for rel, before, part in parts:
        for old, new in zip(before, part.runs, strict=True):
            if old != new:
                renamed[(rel, old)] = new
    try:
        walk = LoadReport.from_plain(read_document(fs, f"{root}/{manifest.folder}", WALK))
    except plain.Untrusted as e:
        walk = LoadReport(notes=[f"{manifest.folder}: the folder walk in the store could not be trusted ({e})"])
    inc.load_report.files = walk.files + inc.load_report.files
    inc.load_report.notes = notes + walk.notes + inc.load_report.notes
    inc.load_report.files.sort(key=lambda r: r.path)
    return inc.load_report, inc.runs, renamed


def _options(plan: FolderPlan, on_bad_line: str) -> dict:
    """What every converted row depends on besides its file: the load options and incident.toml."""
    cfg = plan.root / CONFIG_NAME
    digest = hashlib.blake2b(cfg.read_bytes(), digest_size=16).hexdigest() if cfg.is_file() else ""
    ctx = plan.context
    return {"version": layout.VERSION, "timezone": ctx.timezone, "host": ctx.host,
            "on_bad_line": "raise" if on_bad_line == "raise" else "warn", "incident_toml": digest}


def _convert(todo, plan: FolderPlan, store: str, manifest: Manifest, keys, result: IngestResult,
             results: dict[str, tuple], scheduler: str | None, workers: int | None, chunk_bytes: int) -> None:
    if not todo:
        return
    fs, root = layout.filesystem(store)
    for rel, _ in todo:
        old = manifest.sources.pop(rel, None)
        if old is not None:
            remove_parts(store, old.parts + [old.result])
    tasks = [ConvertTask(rel, p, plan.context, store, chunk_bytes, _tag(keys[rel])) for rel, p in todo]
    for task, done in zip(tasks, _run(tasks, scheduler, workers), strict=True):
        p = task.planned
        entry = SourceEntry(keys[task.rel], p.fmt.name, p.fmt.phase, done.parts,
                            f"{layout.RESULTS}/{layout.part_stem(task.rel)}.json", done.columns, done.spans,
                            done.schemas)
        write_document(fs, f"{root}/{entry.result}", SOURCE,
                       {"report": done.load_report.to_plain(), "runs": runs_to_plain(done.runs)})
        results[task.rel] = (done.load_report, done.runs)
        manifest.sources[task.rel] = entry
        result.converted.append(task.rel)


def _tag(key) -> str:
    """Eight hex digits that change whenever the file's key does (ConvertTask.tag)."""
    return hashlib.blake2b(f"{key.size}:{key.mtime_ns}:{key.hash}".encode(), digest_size=4).hexdigest()


def _run(tasks: list[ConvertTask], scheduler: str | None, workers: int | None) -> list[Converted]:
    if scheduler:
        # Dask is the `cluster` extra: imported only when a scheduler is asked for.
        from .cluster import map_on_cluster

        return map_on_cluster(convert_source, tasks, scheduler)
    n = min(workers or os.cpu_count() or 1, len(tasks))
    if workers is None and sum(t.planned.path.stat().st_size for t in tasks if t.planned.path.is_file()) < POOL_BYTES:
        n = 1  # starting worker processes takes longer than converting a few MiB here
    if n <= 1:
        # One worker is this process: a pool of one would only add a spawned interpreter's start.
        return [convert_source(t) for t in tasks]
    # spawn, not fork: a forked child inherits pyarrow's and dask's threads mid-flight. No
    # max_tasks_per_child: Python 3.11-3.14 deadlock once a worker retires with tasks still queued
    # (CPython gh-115634: 17 sources on 2 workers hung forever).
    with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool:
        with _workers_do_not_run_main():
            done = pool.map(convert_source, tasks)  # the workers start here, all of them
        return list(done)


@contextmanager
def _workers_do_not_run_main():
    """A spawned worker first runs the parent's `__main__` again: from its file, or by its module
    name under `python -m`. A script read from standard input (`python - <<EOF`, as shell scripts
    and CI run Python) names `<stdin>`, which no worker can open: every worker died before its
    first task. A script without `if __name__ == "__main__":` around its call (`pm.ingest(...)` at
    the top of `fleet.py`) had each worker run the whole script again, ingest and all, until
    multiprocessing refused to start a pool from a worker's start-up: the ingest died with
    BrokenProcessPool. The workers run the package's functions, never the script's, so while they
    start `__main__` names neither a file nor a module, as in a notebook."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    path, spec = main.__dict__.pop("__file__", None), getattr(main, "__spec__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__spec__ = spec
        if path is not None:
            main.__file__ = path


def _borrow_known(plan: FolderPlan, store: str, manifest: Manifest) -> None:
    """Give phase-1 sources what a folder load would: the incident's date (its first time) and,
    as `known`, the processes and each source's first metric and event (what they look up)."""
    con = connect(store, manifest=manifest)  # what this run converted, not yet written down
    ctx = plan.context
    known = Incident()
    known.processes = _frame(con, "SELECT * FROM processes", "processes")
    for name in ("metrics", "events"):
        # Each source's first time first (a streaming aggregate), then only the rows at that time
        # ranked: a window function over every row held a fleet's metrics in memory (1.1 GB for
        # 512 GPUs x 6 h, benchmarks/bench_store.py).
        known_rows = con.sql(
            f"WITH firsts AS (SELECT source, min(time) AS first FROM {name} GROUP BY source) "
            f"SELECT m.* FROM {name} m JOIN firsts f ON m.source IS NOT DISTINCT FROM f.source AND m.time = f.first "
            f"QUALIFY row_number() OVER (PARTITION BY m.source ORDER BY m.{layout.FILE_COLUMN}, m.{layout.ROW_COLUMN}) = 1")
        setattr(known, name, _frame(con, known_rows, name))
    ctx.known = known
    if ctx.date is None:
        first = con.execute(" UNION ALL ".join(
            f"SELECT min({layout.time_column(n)}) FROM {n}" for n in ("gpus", "gpu_processes", "metrics", "events", "processes"))
        ).df().iloc[:, 0].dropna()
        if len(first):
            t = pd.Timestamp(first.min()).tz_convert("UTC")
            ctx.date = t.tz_convert(ctx.timezone).date() if ctx.timezone != "UTC" else t.date()


def _frame(con, query, name: str) -> pd.DataFrame:
    rel = con.sql(query) if isinstance(query, str) else query
    return as_frame(name, rel.to_arrow_table())
