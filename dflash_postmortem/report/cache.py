"""The cache of loaded incidents: an incident as read (and masked) with its findings, kept on disk
so that only the first of a report's pages, or the first cell in JupyterLab, pays for loading.

An entry is keyed by the evidence files (each entry the folder walk sees, with its size and
modification time), the kit's own code, and the load's options. It is plain data: a Parquet table
per frame and one JSON document (plain_data) for the load report, the runs, the findings and the
model's frames (attempts, states, ledger: model/kept.py), which every page would otherwise build
again. An
entry the kit cannot read back as it wrote it is ignored and written again; nothing in it is ever
executed. The cache folder is the user's own: one that other users can write to is not used.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from functools import cache
from pathlib import Path

import pyarrow.parquet as pq

from .. import __version__, schema
from .. import plain_data as plain
from ..config import incident_config
from ..detect import findings as found_frame
from ..incident import Incident, runs_from_plain, runs_to_plain
from ..load_report import LoadReport
from ..loaders.folder import folder_digest
from ..model import kept
from ..store.convert import to_arrow
from ..store.views import as_frame

CACHE_ENV = "DFLASH_POSTMORTEM_CACHE"
KEEP = 64  # most recent entries kept in the cache folder (an incident as read, and masked)
_KIND, _VERSION = "incident-cache", 2
_META = "incident.json"


def cache_dir() -> Path:
    """Where loaded incidents are kept: `DFLASH_POSTMORTEM_CACHE`, else the user's cache folder."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dflash-postmortem"


def unsafe_folder(folder: Path) -> str | None:
    """Why `folder` may not hold the cache (another user owns it or can write to it), or None.
    What another user writes there would be read back as an incident of ours."""
    try:
        st = folder.stat()
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot be examined ({e.strerror or type(e).__name__})"
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"can be written by other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


@cache
def _kit_stamp() -> str:
    """The kit's own code, as loaded: its version and every module's size and mtime (a working
    checkout changes without a new version number)."""
    here = Path(__file__).resolve().parents[1]  # the package, not this folder of it
    parts = [__version__] + [f"{p.relative_to(here)}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
                             for p in sorted(here.rglob("*.py"))]
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()


def key(folder: Path, options: tuple) -> str:
    """Changes whenever an evidence file or the kit changes, and whenever an entry the load
    reports instead of reading (a dangling link, a FIFO) comes or goes: it is in the load report
    (`folder_digest`, the store's key too)."""
    return folder_digest(folder, (_kit_stamp(), str(folder.resolve()), repr(options)))


def entry(folder: Path, timezone: str = "", online: bool = False, masked: bool = False) -> Path:
    """The cache entry of `folder` loaded with these options (`notebook.load_cached`), masked or
    as read; whether the cache folder may be used is `unsafe_folder`'s question."""
    return cache_dir() / f"{key(folder, (timezone, online))}{'-masked' if masked else ''}"


def read(entry: Path, folder: Path, timezone: str | None):
    """(incident, findings) from a cache entry, None where there is none; `plain_data.Untrusted`
    where it cannot be read back as the kit wrote it (another version, damaged, planted), and
    the entry is removed so that this load writes it again."""
    if not (entry / _META).is_file():
        return None
    config = incident_config(folder, timezone)
    try:
        meta = plain.fields("cache", plain.loads(_KIND, _VERSION, (entry / _META).read_bytes()), {
            "load_report": plain.anything, "runs": plain.anything, "findings": plain.list_of(plain.anything),
            "columns": plain.map_of(plain.map_of(plain.text)), "model": plain.map_of(plain.anything)})
        frames = {name: as_frame(name, pq.read_table(entry / f"{name}.parquet"), meta["columns"].get(name))
                  for name in schema.FRAME_NAMES}
        inc = Incident(**frames, load_report=LoadReport.from_plain(meta["load_report"]),
                       runs=runs_from_plain(meta["runs"]), config=config, root=folder)
        findings = found_frame.frame([plain.fields("finding", f, {c: plain.anything for c in found_frame.COLUMNS})
                                      for f in meta["findings"]])
        kept.restore(inc, meta["model"])
    except (plain.Untrusted, OSError, ValueError, TypeError, KeyError) as e:  # pyarrow's errors are among them
        shutil.rmtree(entry, ignore_errors=True)
        why = str(e) if isinstance(e, plain.Untrusted) else f"{type(e).__name__}: {str(e)[:120]}"
        raise plain.Untrusted(f"cache entry {entry.name} not trusted ({why})") from e
    return inc, findings


def write(entry: Path, inc: Incident, findings) -> None:
    """Keep (incident, findings) as `entry`: written beside it, then renamed into place, so that
    pages loading side by side never read half an entry. A read-only cache is passed over."""
    tmp = entry.with_name(f"{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(mode=0o700)
        columns = {}
        for name in schema.FRAME_NAMES:
            df = getattr(inc, name)
            pq.write_table(to_arrow(df), tmp / f"{name}.parquet", compression="zstd")
            columns[name] = {c: str(t) for c, t in df.dtypes.items()}
        rows = [{c: row[c] for c in found_frame.COLUMNS} for row in findings.to_dict("records")]
        (tmp / _META).write_bytes(plain.dumps(_KIND, _VERSION, {
            "load_report": inc.load_report.to_plain(), "runs": runs_to_plain(inc.runs), "findings": rows,
            "columns": columns, "model": kept.frames(inc)}))
        try:
            tmp.rename(entry)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another page wrote the same entry first
        old = sorted((p for p in entry.parent.iterdir() if p.is_dir() and not p.name.endswith(".tmp")),
                     key=lambda p: p.stat().st_mtime)[:-KEEP]
        for p in old:
            shutil.rmtree(p, ignore_errors=True)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # a read-only home: every page loads for itself
