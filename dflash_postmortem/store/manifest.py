"""The store's manifest: for each source, the key it was converted under and the parts it wrote.

A source is converted again only when its key changes. The key is the file's size and mtime and a
cheap content hash (BLAKE2b of the size and the first and last MiB: constant time whatever the
size, and it tells a rewritten file from a touched one); a folder source (a wandb run) is keyed by
its files' names, sizes and mtimes.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from dataclasses import asdict, dataclass, field
from pathlib import Path

import fsspec

from ..errors import PostmortemError
from . import layout

_EDGE = 1 << 20


@dataclass(frozen=True)
class FileKey:
    size: int
    mtime_ns: int
    hash: str


def file_key(path: Path) -> FileKey:
    if path.is_dir():
        h = hashlib.blake2b(digest_size=16)
        size, newest = 0, 0
        for sub in sorted(p for p in path.rglob("*") if p.is_file()):
            st = sub.stat()
            size += st.st_size
            newest = max(newest, st.st_mtime_ns)
            h.update(f"{sub.relative_to(path)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
        return FileKey(size, newest, h.hexdigest())
    st = path.stat()
    h = hashlib.blake2b(str(st.st_size).encode(), digest_size=16)
    with open(path, "rb") as f:
        h.update(f.read(_EDGE))
        if st.st_size > _EDGE:
            f.seek(max(_EDGE, st.st_size - _EDGE))
            h.update(f.read(_EDGE))
    return FileKey(st.st_size, st.st_mtime_ns, h.hexdigest())


@dataclass
class SourceEntry:
    key: FileKey
    format: str
    phase: int
    parts: list[str] = field(default_factory=list)  # relative to the store root
    result: str = ""  # the pickle of its load report and runs, relative to the store root
    columns: dict[str, dict[str, str]] = field(default_factory=dict)  # frame -> {column: dtype}


@dataclass
class Manifest:
    options: dict = field(default_factory=dict)
    sources: dict[str, SourceEntry] = field(default_factory=dict)  # by the source's name in the incident
    order: list[str] = field(default_factory=list)  # load order: phase, then the folder walk's order
    folder: str = ""  # pickle of what the walk alone accounted for (unread entries, notes)

    @classmethod
    def read(cls, fs: fsspec.AbstractFileSystem, root: str) -> Manifest:
        path = f"{root}/{layout.MANIFEST}"
        if not fs.exists(path):
            return cls()
        try:
            with fs.open(path, "r", encoding="utf-8") as f:
                raw = json.load(f)
            sources = {rel: SourceEntry(**{**e, "key": FileKey(**e["key"])}) for rel, e in raw["sources"].items()}
            return cls(raw["options"], sources, raw["order"], raw["folder"])
        except (ValueError, KeyError, TypeError) as e:
            raise PostmortemError(
                f"{path}: not a store manifest this version can read ({type(e).__name__}: {e}); "
                "remove the store folder to convert the incident again") from e

    def write(self, fs: fsspec.AbstractFileSystem, root: str) -> None:
        raw = {"options": self.options, "order": self.order, "folder": self.folder,
               "sources": {rel: asdict(e) for rel, e in self.sources.items()}}
        tmp = f"{root}/{layout.MANIFEST}.tmp"
        with fs.open(tmp, "w", encoding="utf-8") as f:
            json.dump(raw, f, indent=1)  # key order kept: it is the column order
        fs.mv(tmp, f"{root}/{layout.MANIFEST}")  # a reader never sees half a manifest


def write_pickle(fs: fsspec.AbstractFileSystem, path: str, obj) -> None:
    fs.makedirs(os.path.dirname(path), exist_ok=True)
    with fs.open(path, "wb") as f:
        pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)


def read_pickle(fs: fsspec.AbstractFileSystem, path: str):
    # The store is the kit's own output, written by `ingest`: only ever read a store you trust.
    with fs.open(path, "rb") as f:
        return pickle.load(f)  # noqa: S301
