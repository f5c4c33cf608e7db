"""An incident folder: every entry in it accounted for, each file's format decided by content,
everything loaded into one Incident.

Nothing in a folder can stop the rest from loading: a sniffer or loader that raises becomes a
load-report error for its file; named pipes, sockets and devices are listed and never opened
(opening a FIFO waits for a writer forever); symbolic-link loops, dangling links, folders and
files the user cannot read, and names that are not valid UTF-8 are entries of the load report.
`on_bad_line="raise"` (the CLI's `--strict`) turns the first such problem into an exception.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pandas as pd

from ..clock import align, untimed
from ..config import CONFIG_NAME, IncidentConfig, incident_config
from ..errors import IncidentConfigError, LoadError, PostmortemError, SourceFormatError
from ..incident import Incident
from ..load_report import FileReport, LoadReport
from ..schema import ref_lines
from ..units import count
from . import encoding
from .pages import ordinary_pages
from .prometheus import api as prometheus_api
from .registry import (
    FORMATS,
    Format,
    LoadContext,
    is_valid_name,
    printable,
    read_head,
    sniff,
    whole_folder,
)
from .teed_logs import mark_teed_copies

# Folders that hold no evidence of their own: version control, notebook autosaves, caches, the
# incident's own Parquet store (docs/store.md).
_SKIPPED_FOLDERS = {".dflash-store", ".git", ".hg", ".svn", ".ipynb_checkpoints", "__pycache__", ".pytest_cache", ".mypy_cache"}
# The record `dflash-postmortem watch` keeps in the folder it watches (watch/live.py): what the
# watcher said, not evidence of the run; listed in the load report with this reason, never read.
WATCH_LOG = "dflash-watch.log"
_OWN_RECORDS = {WATCH_LOG: "the watcher's own record of what it announced (dflash-postmortem watch): not evidence"}
_SPECIAL = (
    (stat.S_ISFIFO, "a named pipe (FIFO): not read (reading it waits for a writer)"),
    (stat.S_ISSOCK, "a socket: not read"),
    (stat.S_ISCHR, "a character device: not read"),
    (stat.S_ISBLK, "a block device: not read"),
)


@dataclass
class Entry:
    """One thing found in the folder: a file or folder to sniff, or a report entry only."""

    path: Path
    is_dir: bool = False
    report: FileReport | None = None  # set when the entry is only accounted for, not read
    # A link whose target is gone: a format may still know it (wandb's links into ~/.cache);
    # otherwise this is its load-report entry.
    dangling: FileReport | None = None


def _os_error(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _classify(path: Path, ctx: LoadContext) -> Entry:
    """What `path` is, from `stat` alone: nothing is opened here."""
    rel = ctx.name(path)
    try:
        st = os.stat(path)  # follows links: a link to a file is read as the file
    except OSError as e:
        if path.is_symlink():
            if e.errno == errno.ELOOP:
                return Entry(path, report=FileReport(path=rel, error="symbolic link loop: not read"))
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            return Entry(path, dangling=FileReport(path=rel, error=f"dangling symbolic link to {target}: not read"))
        return Entry(path, report=FileReport(path=rel, error=f"could not be examined: {_os_error(e)}"))
    for test, why in _SPECIAL:
        if test(st.st_mode):
            return Entry(path, report=FileReport(path=rel, notes=[why]))
    return Entry(path, is_dir=stat.S_ISDIR(st.st_mode))


def _listing(folder: Path, ctx: LoadContext, seen: set[str]) -> list[Entry]:
    """The entries of one folder, sorted by name; a folder reached twice (a link loop, or a
    link to a folder read elsewhere) is listed once and not read again."""
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it)
    except OSError as e:
        return [Entry(folder, report=FileReport(path=ctx.name(folder) + "/",
                                               error=f"folder could not be listed: {_os_error(e)}"))]
    out = []
    for name in names:
        path = folder / name
        if name in _SKIPPED_FOLDERS and path.is_dir():
            continue
        if name in _OWN_RECORDS and ctx.root is not None and os.path.abspath(folder) == os.path.abspath(ctx.root):
            out.append(Entry(path, report=FileReport(path=ctx.name(path), notes=[_OWN_RECORDS[name]])))
            continue
        entry = _classify(path, ctx)
        if entry.is_dir:
            real = os.path.realpath(path)
            if path.is_symlink() and ctx.root is not None and _inside(real, ctx.root):
                # wandb's `latest-run` and the like: the folder is read where it really lies.
                target = Path(real).relative_to(os.path.realpath(ctx.root)).as_posix()
                why = f"link to {target}/, read there"
                entry = Entry(path, report=FileReport(path=ctx.name(path) + "/", notes=[why]))
            elif real in seen:
                why = "link to a folder already read (a loop): not read again"
                entry = Entry(path, report=FileReport(path=ctx.name(path) + "/", notes=[why]))
            else:
                seen.add(real)
        out.append(entry)
    return out


def _inside(real: str, root: Path) -> bool:
    top = os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def walked(root: Path, skip: Iterable[Path] = ()):
    """(path, stat) of every entry under `root` as the loader walks it: each regular file with
    its stat, each entry the walk reports instead of reading (a dangling link, a loop, a FIFO, a
    folder it cannot list) with None. Never blocking, each linked folder once; the folders in
    `skip` (a store written inside the folder) left out."""
    ctx = LoadContext(root=root)
    pending = [root]
    seen = {os.path.realpath(root)}
    skipped = {os.path.realpath(p) for p in skip}
    while pending:
        for entry in _listing(pending.pop(), ctx, seen):
            if skipped and os.path.realpath(entry.path) in skipped:
                continue
            if entry.report is not None or entry.dangling is not None:
                yield entry.path, None
            elif entry.is_dir:
                pending.append(entry.path)
            else:
                try:
                    yield entry.path, os.stat(entry.path)
                except OSError:
                    yield entry.path, None


def folder_digest(root: Path, args: tuple, skip: Iterable[Path] = ()) -> str:
    """A digest of `root` as the loader walks it (`walked`: every entry's path, a regular file's
    size and modification time in nanoseconds, an entry the walk reports instead of reading as
    such) and of `args`. Equal digests: a load would read the same files with the same options.
    The one key of both caches (the report's of loaded incidents, the store's of a folder's
    sources). A file rewritten to the same size within the same nanosecond is the one change it
    misses (hashing content cost a fleet's walk seconds each time)."""
    h = hashlib.blake2b(repr(args).encode("utf-8", "surrogateescape"), digest_size=20)
    for path, st in walked(root, skip):
        rel = path.relative_to(root).as_posix().encode("utf-8", "surrogateescape")
        h.update(rel + (b"\0%d\0%d\n" % (st.st_size, st.st_mtime_ns) if st else b"\0-\n"))
    return h.hexdigest()


def regular_files(root: Path):
    """(path, stat) of every regular file under `root`, as the loader walks it (`walked`)."""
    return ((path, st) for path, st in walked(root) if st is not None)


@dataclass
class _Planned:
    path: Path
    fmt: Format
    enc: encoding.Encoding = encoding.PLAIN


class _Planner:
    """Decides what each entry is before anything is loaded: folder formats (a wandb run) claim
    everything inside them; explicit `[[sources]]` override sniffing."""

    def __init__(self, ctx: LoadContext, cfg: IncidentConfig, cfg_path: Path | None, sniffed: dict | None = None):
        self.ctx, self.cfg, self.cfg_path = ctx, cfg, cfg_path
        self.plan: list[_Planned] = []
        self.report = LoadReport()
        # path -> (digest of its head, format, the sniffers' notes), kept by the caller across
        # plans of a folder that grows: sniffers read the path and the head only, so a head
        # unchanged since the last plan (a file that outgrew it, or one that did not grow) is
        # not sniffed again; one entry a path, however often a short file grows
        # (loaders/following.py)
        self.sniffed = sniffed

    def strict(self, rep: FileReport) -> None:
        if self.ctx.on_bad_line == "raise" and rep.error:
            raise LoadError(rep.path, rep.error)

    def account(self, rep: FileReport) -> None:
        self.strict(rep)
        self.report.add(rep)

    def folder(self, folder: Path, seen: set[str]) -> None:
        for entry in _listing(folder, self.ctx, seen):
            if entry.report is not None:
                self.account(entry.report)
            elif entry.dangling is not None:
                self.link(entry)
            elif entry.is_dir:
                fmt = self.sniff(entry.path, b"")
                if fmt is not None:
                    self.plan.append(_Planned(entry.path, fmt))
                else:
                    self.folder(entry.path, seen)
            else:
                self.file(entry.path)

    def sniff(self, path: Path, head: bytes, rep: FileReport | None = None) -> Format | None:
        failures: list[tuple[str, BaseException]] = []
        fmt, _ = sniff(path, head, failures=failures)
        for name, exc in failures:
            # A sniffer that raises is a bug in the kit, never the file's fault: say so and go on.
            note = f"sniffer {name} failed: {type(exc).__name__}: {exc}"
            if rep is not None:
                rep.notes.append(note)
            else:
                self.report.notes.append(f"{self.ctx.name(path)}: {note}")
        return fmt

    def link(self, entry: Entry) -> None:
        fmt = self.sniff(entry.path, b"")
        if fmt is None:
            self.account(entry.dangling)
        else:
            self.plan.append(_Planned(entry.path, fmt))

    def file(self, path: Path) -> None:
        rel = self.ctx.name(path)
        if path == self.cfg_path:
            self.report.add(FileReport(path=rel, format="incident.toml", notes=["incident configuration"]))
            return
        if any(Path(rel).match(pat) for pat in self.cfg.ignore):
            self.report.add(FileReport(path=rel, notes=["ignored by incident.toml"]))
            return
        explicit = self.cfg.source_options(rel).get("format")
        try:
            head = read_head(path)
        except OSError as e:
            self.account(FileReport(path=rel, error=f"could not be read: {_os_error(e)}"))
            return
        enc = encoding.plan(path, head)
        if explicit:
            if explicit not in FORMATS:
                raise IncidentConfigError(
                    f"{self.cfg.path}: sources[{rel}].format: unknown format {explicit!r}; known: {sorted(FORMATS)}"
                )
            self.plan.append(_Planned(path, FORMATS[explicit], enc))
            return
        probe = FileReport(path=rel)
        digest = hashlib.blake2b(head, digest_size=16).digest() if self.sniffed is not None else None
        known = self.sniffed.get(str(path)) if self.sniffed is not None else None
        if known is not None and known[0] == digest:
            fmt, probe.notes = known[1], list(known[2])
        else:
            fmt = self.sniff(path, encoding.sniff_head(head, enc), probe)
            if self.sniffed is not None:
                self.sniffed[str(path)] = (digest, fmt, list(probe.notes))
        if fmt is None:
            probe.notes.insert(0, "empty file" if not head else "no known format matched its content")
            self.report.add(probe)
        else:
            self.plan.append(_Planned(path, fmt, enc))
            if probe.notes:
                self.report.notes.extend(f"{rel}: {n}" for n in probe.notes)


@dataclass
class FolderPlan:
    """What loading a folder will read, decided before anything is loaded: the sources in load
    order with their formats, and the entries that are only accounted for (unrecognised,
    unreadable, special files). The Parquet store converts each planned source on its own."""

    root: Path
    config: IncidentConfig
    context: LoadContext
    sources: list[_Planned]
    report: LoadReport


def plan_incident(
    path: str | os.PathLike, *, timezone: str | None = None, on_bad_line: str = "warn", host: str | None = None,
    sniffed: dict | None = None,
) -> FolderPlan:
    """Walk an incident folder (or take a single file) and decide each entry's format
    (`sniffed`: the formats decided by earlier plans of the same folder, see _Planner)."""
    root = Path(path)
    if not root.exists():
        if root.is_symlink():
            raise PostmortemError(f"{root}: dangling symbolic link")
        raise PostmortemError(f"{root}: no such file or folder")
    cfg_path = root / CONFIG_NAME if root.is_dir() else None
    cfg = incident_config(root, timezone)
    # A folder that is itself evidence of one format (a wandb run folder handed over as it is) is
    # read as that, as it would be inside an incident folder (its files named as a walk names
    # them); walked file by file, its debug logs' start and finish lines read as starts of their own.
    whole = whole_folder(root) if root.is_dir() else None
    base = root if root.is_dir() else root.parent
    ctx = LoadContext(root=base, timezone=cfg.timezone, host=host, on_bad_line=on_bad_line, config=cfg, date=cfg.date)

    planner = _Planner(ctx, cfg, cfg_path, sniffed)
    if whole is not None:
        planner.plan.append(_Planned(root, whole))
    elif root.is_dir():
        planner.folder(root, {os.path.realpath(root)})
    else:
        entry = _classify(root, ctx)
        if entry.report is not None:
            planner.account(entry.report)
        elif entry.dangling is not None:
            planner.link(entry)
        else:
            planner.file(root)
    return FolderPlan(root, cfg, ctx, planner.plan, planner.report)


def read_folder(
    root: Path,
    *,
    timezone: str | None = None,
    on_bad_line: str = "warn",
    host: str | None = None,
    online: bool = False,
    reader: SourceReader | None = None,
    sniffed: dict | None = None,
) -> Incident:
    """Read every source in an incident folder (or a single file) into one Incident, in memory
    (`load.load_incident` decides between this and the Parquet store).

    Each file's format is sniffed from its content; `incident.toml`, when present, adds what the
    files cannot say (zone, date, roles, field lists of header-less CSVs, clock offsets). A file
    that cannot be read is an entry of the load report with the reason, never the end of the load,
    unless `on_bad_line="raise"`. A server that incident.toml names (Prometheus) is asked only with
    `online=True`, and is otherwise listed in the load report as needing it.

    `reader`: what reads each planned source (`load_source` by default); the live watch's keeps
    what it read and reads a growing file from where it stopped (following.py). Each part it
    returns is new (what it keeps, it keeps apart), so this consumes them as it combines them as
    well. `sniffed`: its formats decided so far.
    """
    with ordinary_pages():  # pages.py: combining the sources fills new frames as reading them did
        return _read_planned(plan_incident(root, timezone=timezone, on_bad_line=on_bad_line, host=host,
                                           sniffed=sniffed), root, online, reader)


def _read_planned(plan: FolderPlan, root: Path, online: bool, reader: SourceReader | None) -> Incident:
    cfg, ctx = plan.config, plan.context
    with tempfile.TemporaryDirectory(prefix="dflash-transcoded-") as scratch:
        parts = _load_planned(plan.sources, ctx, cfg, Path(scratch), reader or load_source)
    # A Prometheus server named in incident.toml is one more source (an empty part without one).
    parts.append(prometheus_api.from_config(cfg, ctx.on_bad_line, online=online))
    inc = Incident.combine(parts, consume=True, config=cfg, root=root)
    inc.load_report.files = plan.report.files + inc.load_report.files
    inc.load_report.notes = plan.report.notes + inc.load_report.notes
    mark_teed_copies(inc)
    _without_printed_copies(inc)
    align.apply_offsets(inc, cfg.offsets)
    untimed.date_untimed_logs(inc)
    align.align_host_clocks(inc)
    _fill_gpu_index(inc)
    inc.load_report.files.sort(key=lambda r: r.path)
    return inc


def _without_printed_copies(inc: Incident) -> None:
    """The rows of a log printed in a session (`tail -n 2 logs/train.log`, a foreground run teed
    into it: their `copy_of`) where the folder holds a file of that name: the file is the
    evidence, every line of it; its printed lines are a copy, and each would count twice. Where
    that file holds nothing (emptied by a later `> logs/train.log` before it was collected), the
    printed lines are the only evidence of them left: they stay, a line with no time of its own
    dated when it was printed (the latest it can have been written), and the session's account
    says so."""
    names = {PurePosixPath(f.path).name for f in inc.load_report.files}
    empty = {PurePosixPath(f.path).name for f in inc.load_report.files if not sum(f.rows.values())}
    reports = {f.path: f for f in inc.load_report.files}
    for frame in ("metrics", "events"):
        df = getattr(inc, frame)
        if "copy_of" not in df.columns or not df["copy_of"].notna().any():
            continue
        name_of = df["copy_of"].map(lambda path: PurePosixPath(path).name if isinstance(path, str) else None)
        kept = name_of.isin(empty).astype(bool)
        copy = name_of.isin(names).astype(bool) & ~kept
        # the session's account says where its rows went (its file's line counts are unchanged)
        by = [df["ref"].str.rsplit(":", n=1).str[0], "copy_of"]
        what = "metric row" if frame == "metrics" else "event"
        for (ref, path), n in df[copy].groupby(by).size().items():
            rep = reports.get(ref)
            if rep is not None:
                rep.rows[frame] -= int(n)
                rep.rows += Counter()  # (a count that reached 0 is no row of the file's)
                rep.notes.append(f"{count(int(n), what)} printed from {path}: read from the folder's copy of it instead")
        for (ref, path), n in df[kept].groupby(by).size().items():
            rep = reports.get(ref)
            if rep is not None:
                rep.notes.append(f"{count(int(n), what)} printed from {path}, whose copy in the folder holds nothing: "
                                 "read from the session")
        if frame == "events" and "printed_at" in df.columns:
            _printed_tracebacks(inc, df[copy])
        if "printed_at" in df.columns:
            undated = kept & df["time"].isna() & df["printed_at"].notna()
            if undated.any():
                approx = df["time_approx"].astype("boolean").fillna(False).astype(bool) if "time_approx" in df.columns else False
                df = df.assign(time=df["time"].where(~undated, df["printed_at"]), time_approx=undated | approx)
            df = df.drop(columns="printed_at")
        setattr(inc, frame, df[~copy].reset_index(drop=True))


def _printed_tracebacks(inc: Incident, copies: pd.DataFrame) -> None:
    """A traceback a session printed from a file (`tail -n 5 nohup.out`) had been written by then:
    of a partly dated log, the undated tracebacks before its first dated line (which its head
    gives the time of that line, the latest it can have been: clock/untimed.py) are dated at the
    earliest such print where it came first, the latest they can have been written."""
    printed = copies[(copies["kind"] == "traceback") & copies["printed_at"].notna()]
    if printed.empty:
        return
    ev = inc.events
    for path, when in printed.groupby("copy_of")["printed_at"].min().items():
        name = PurePosixPath(str(path)).name
        mine = ev["source"].map(lambda s, n=name: isinstance(s, str) and PurePosixPath(s).name == n).astype(bool)
        dated = mine & ev["time"].notna()
        lines = ref_lines(ev["ref"])
        first = lines[dated].min() if dated.any() else float("inf")
        if not dated.any() or ev.loc[dated, "time"].min() <= when:
            continue  # (a log with no dated line is dated as a whole: clock/untimed.py; one whose first dated line bounds them closer)
        head = mine & ev["time"].isna() & (ev["kind"] == "traceback") & (lines < first)
        if head.any():
            ev.loc[head, "time"] = when
            ev.loc[head, "time_approx"] = True
            ev.loc[head, "time_latest"] = True
            rep = next((f for f in inc.load_report.files if PurePosixPath(f.path).name == name), None)
            if rep is not None:
                rep.assume(f"dated afterwards: {count(int(head.sum()), 'traceback')} before its first dated line "
                           f"printed by a session at {when:%Y-%m-%d %H:%M:%S} UTC, the latest it can have been written")


def load_source(p: _Planned, ctx: LoadContext, scratch: Path) -> Incident:
    """Load one planned source (an entry of `FolderPlan.sources`) alone; whatever goes wrong
    stays with this file, as in a folder load."""
    return _load_one(p, ctx, scratch)


# What reads one planned source: (source, context, scratch folder) -> its Incident.
SourceReader = Callable[[_Planned, LoadContext, Path], Incident]


def _load_planned(plan: list[_Planned], ctx: LoadContext, cfg: IncidentConfig, scratch: Path,
                  reader: SourceReader) -> list[Incident]:
    loaded: list[tuple[int, Incident]] = []
    for phase in sorted({p.fmt.phase for p in plan}):
        if phase > 0:
            so_far = Incident.combine([part for _, part in loaded])
            ctx.known = so_far
            if ctx.date is None:
                ctx.date = _first_date(so_far, cfg)
        for n, p in enumerate(plan):
            if p.fmt.phase == phase:
                loaded.append((n, reader(p, ctx, scratch / str(n))))
    # A source whose stamps lack a date or a year (glog's `E1201 22:44:03`) is read again with
    # the incident's date, once the other sources have given one.
    undated = {n for n, part in loaded if any(r.needs_date for r in part.load_report.files)}
    if undated:
        date = ctx.date or _first_date(Incident.combine([part for n, part in loaded if n not in undated]), cfg)
        if date is not None:
            ctx.date = date
            loaded = [(n, reader(plan[n], ctx, scratch / f"{n}-dated") if n in undated else part)
                      for n, part in loaded]
    return [part for _, part in loaded]


def _first_date(inc: Incident, cfg: IncidentConfig):
    """The incident's date: the day of its first time, in the incident's zone."""
    first, _ = inc.span()
    if first is None:
        return None
    return first.tz_convert(cfg.timezone).date() if cfg.timezone != "UTC" else first.date()


def _load_one(p: _Planned, ctx: LoadContext, scratch: Path) -> Incident:
    """Load one planned source; whatever goes wrong stays with this file."""
    fctx = ctx.for_file(p.path)
    read_from = p.path
    transcoded = None
    try:
        if p.enc.needs_transcoding:
            scratch.mkdir(parents=True)
            transcoded = encoding.transcode(p.path, scratch / printable(p.path.name), p.enc)
            read_from = transcoded.path
        elif not is_valid_name(p.path) and not p.path.is_dir():
            # Libraries that take a path as text (pyarrow) cannot open a name that is not UTF-8:
            # they get a link under a name that is.
            scratch.mkdir(parents=True)
            read_from = scratch / printable(p.path.name)
            read_from.symlink_to(os.path.abspath(p.path))
        if read_from != p.path:
            fctx.aliases[read_from] = p.path
        with ordinary_pages():  # pages.py: a big load stalled on the kernel's huge pages
            inc = p.fmt.load(read_from, fctx)
    except IncidentConfigError:
        raise  # the user's incident.toml is wrong for every file alike: one clear line, stop
    except SourceFormatError as e:
        if ctx.on_bad_line == "raise":
            raise
        return _failed(p, fctx, str(e))
    except Exception as e:  # noqa: BLE001 - isolation is the point: one file never stops the rest
        # Anything else is a bug in a loader, or a file it could not open; the rest of the
        # incident still loads. The traceback is kept for `--debug`.
        if ctx.on_bad_line == "raise":
            raise LoadError(fctx.name(p.path), f"{p.fmt.name} failed: {type(e).__name__}: {e}") from e
        failed = _failed(p, fctx, f"{p.fmt.name} could not read it: {type(e).__name__}: {e}")
        failed.load_report.files[0].trace = traceback.format_exc()
        return failed
    rep = _own_report(inc, fctx.name(p.path))
    if rep is not None:
        if transcoded is not None:
            encoding.annotate(rep, p.enc, transcoded)
        if not is_valid_name(p.path):
            rep.notes.append("file name is not valid UTF-8: shown with U+FFFD in its place")
    return inc


def _failed(p: _Planned, fctx: LoadContext, error: str) -> Incident:
    rep = fctx.report(p.path, p.fmt.name)
    rep.error = error
    inc = Incident()
    inc.load_report.add(rep)
    return inc


def _own_report(inc: Incident, rel: str) -> FileReport | None:
    """The load report entry of the source named `rel` (a file, or a folder's first file)."""
    for rep in inc.load_report.files:
        if rep.path == rel or rep.path.startswith(rel + "/"):
            return rep
    return None


def _fill_gpu_index(inc: Incident) -> None:
    """Give per-process rows that only name a GPU UUID the index any other source knows."""
    known = inc.gpus.dropna(subset=["uuid", "gpu"]).drop_duplicates("uuid").set_index("uuid")["gpu"]
    if known.empty or inc.gpu_processes.empty:
        return
    gp = inc.gpu_processes
    missing = gp["gpu"].isna() & gp["uuid"].notna()
    if missing.any():
        gp.loc[missing, "gpu"] = gp.loc[missing, "uuid"].map(known).astype("Int64")
