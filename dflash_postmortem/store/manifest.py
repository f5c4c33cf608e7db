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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import fsspec

from .. import plain_data as plain
from .. import schema
from ..loaders.folder import folder_digest
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
    result: str = ""  # the JSON of its load report and runs (plain_data), relative to the store root
    columns: dict[str, dict[str, str]] = field(default_factory=dict)  # frame -> {column: dtype}
    # part -> [earliest, latest] time of its rows in µs (layout.span): a window skips the parts
    # outside it unopened (a host's 3-day capture is dozens of parts; an hour needs one or two)
    spans: dict[str, list[int] | None] = field(default_factory=dict)
    # part -> the fingerprint of its columns (layout.schema_key): parts alike are scanned together
    # without DuckDB's union by name (it reads every part's schema: +0.45 s for 500 rank logs)
    schemas: dict[str, str] = field(default_factory=dict)


@dataclass
class Compact:
    """One Parquet file that holds, sorted by time, the rows of `members`: parts of one partition
    and one column fingerprint, written by many sources (compact.py)."""

    members: list[str]  # the parts it holds, relative to the store root; they stay on disk
    span: list[int] | None  # [earliest, latest] time of its rows (layout.span)
    schema: str  # the fingerprint of its columns (layout.schema_key)


@dataclass(frozen=True)
class Part:
    """A file a query reads: a source's part, or a compact in place of the parts it holds."""

    path: str  # relative to the store root
    span: list[int] | None | tuple  # layout.span; () when the store does not know it
    schema: str | None  # layout.schema_key; None when the store does not know it


@dataclass
class Manifest:
    options: dict = field(default_factory=dict)
    sources: dict[str, SourceEntry] = field(default_factory=dict)  # by the source's name in the incident
    order: list[str] = field(default_factory=list)  # load order: phase, then the folder walk's order
    folder: str = ""  # JSON of what the walk alone accounted for (unread entries, notes)
    # Digest of the folder as the last ingest saw it (ingest.folder_snapshot): equal, and the
    # store is up to date without sniffing every file again.
    snapshot: str = ""
    # JSON of the incident-wide load report and runs, every source's combined (ingest.combined):
    # a window reads one file, not one per source (578 for a fleet of 64 hosts)
    combined: str = ""
    # compact path -> what it holds (compact.py): a fleet's rank logs all write to one partition
    # per day, and a window opened each of their 500 parts
    compacts: dict[str, Compact] = field(default_factory=dict)

    def parts(self, frame: str | None = None) -> list[Part]:
        """The files a query reads (those of `frame`, or of every frame), in load order: each
        source's parts, the parts a compact holds replaced by the compact, where its first member
        was; a compact one of whose parts is gone (its source converted again) is passed over.
        Reading the list here, not the folders, never sees a part half written."""
        listed = set(self.order)
        names = [rel for rel in self.order if rel in self.sources] + [rel for rel in self.sources if rel not in listed]
        current = {path for rel in names for path in self.sources[rel].parts}
        held = {m: name for name, c in self.compacts.items() if current.issuperset(c.members) for m in c.members}
        out, placed = [], set()
        for rel in names:
            entry = self.sources[rel]
            for path in entry.parts:
                if frame is not None and not path.startswith(frame + "/"):
                    continue
                name = held.get(path)
                if name is None:
                    out.append(Part(path, entry.spans.get(path, ()), entry.schemas.get(path)))
                elif name not in placed:
                    placed.add(name)
                    c = self.compacts[name]
                    out.append(Part(name, c.span, c.schema))
        return out

    @classmethod
    def read(cls, fs: fsspec.AbstractFileSystem, root: str) -> Manifest:
        """The store's manifest (an empty one where there is none); `plain_data.Untrusted` when
        it is not one this version wrote: damaged, another version's, or naming a file outside
        the store (the caller starts the store afresh)."""
        path = f"{root}/{layout.MANIFEST}"
        if not fs.exists(path):
            return cls()
        try:
            with fs.open(path, "rb") as f:
                text = f.read(plain.MAX_BYTES + 1)
            if len(text) > plain.MAX_BYTES:
                raise plain.Untrusted(f"{len(text):,} bytes: larger than any manifest the kit writes")
            raw = json.loads(text)
            if raw.get("options", {}).get("version") != layout.VERSION:
                raise plain.Untrusted(f"store version {raw.get('options', {}).get('version')!r}, "
                                      f"this kit writes version {layout.VERSION}")
            sources = {rel: SourceEntry(**{**e, "key": FileKey(**e["key"])}) for rel, e in raw["sources"].items()}
            compacts = {name: Compact(**c) for name, c in raw.get("compacts", {}).items()}
            manifest = cls(raw["options"], sources, raw["order"], raw["folder"], raw.get("snapshot", ""),
                           raw.get("combined", ""), compacts)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
            raise plain.Untrusted(f"{path}: not a store manifest ({type(e).__name__})") from e
        manifest.check_paths()
        return manifest

    def check_paths(self) -> None:
        """Every file the manifest names lies inside the store, where the kit puts it: a part
        under its frame's folder, a result under results/. A manifest is read from a folder that
        may come from anyone, and a window reads what it names."""
        documents = [self.folder, self.combined] + [e.result for e in self.sources.values()]
        parts = [p for e in self.sources.values() for p in e.parts] + list(self.compacts)
        parts += [m for c in self.compacts.values() for m in c.members]
        for rel in documents:
            if rel and not _inside_store(rel, (layout.RESULTS,), ".json"):
                raise plain.Untrusted(f"the manifest names {rel[:80]!r}, not a document of the store")
        for rel in parts:
            if not _inside_store(rel, schema.FRAME_NAMES, ".parquet"):
                raise plain.Untrusted(f"the manifest names {rel[:80]!r}, not a part of the store")

    def write(self, fs: fsspec.AbstractFileSystem, root: str) -> None:
        raw = {"options": self.options, "order": self.order, "folder": self.folder, "snapshot": self.snapshot,
               "combined": self.combined, "sources": {rel: asdict(e) for rel, e in self.sources.items()},
               "compacts": {name: asdict(c) for name, c in self.compacts.items()}}
        tmp = f"{root}/{layout.MANIFEST}.tmp"
        with fs.open(tmp, "w", encoding="utf-8") as f:
            json.dump(raw, f, indent=1)  # key order kept: it is the column order
        fs.mv(tmp, f"{root}/{layout.MANIFEST}")  # a reader never sees half a manifest


def folder_snapshot(folder: Path, skip: set[Path], args: tuple) -> str:
    """A digest of every entry below `folder` as the loader walks it, leaving out the folders in
    `skip`, and of `args` (loaders.folder.folder_digest, the report cache's key too): two equal
    digests, and a walk would plan the same. Not the sources' content hashes (file_key's):
    hashing the first and last MiB of every file cost a windowed load of 578 files ~2.5 s each
    time it checked the store; a change the digest sees sends ingest to the per-source keys,
    which hash the content."""
    return folder_digest(Path(os.path.abspath(folder)), (layout.VERSION, args), skip)


def _inside_store(rel: str, tops, suffix: str) -> bool:
    words = rel.split("/")
    return (isinstance(rel, str) and len(words) >= 2 and words[0] in tops and rel.endswith(suffix)
            and not any(w in ("", ".", "..") or "\\" in w or ":" in w for w in words))


def write_document(fs: fsspec.AbstractFileSystem, path: str, kind: str, data) -> None:
    """One of the store's documents (plain_data), written whole or not at all."""
    fs.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    with fs.open(tmp, "wb") as f:
        f.write(plain.dumps(kind, layout.VERSION, data))
    fs.mv(tmp, path)


def read_document(fs: fsspec.AbstractFileSystem, path: str, kind: str):
    """The data of a document `write_document` wrote; `plain_data.Untrusted` for anything else
    (missing, damaged, another version's, or not the kit's at all). Nothing in it is executed."""
    try:
        with fs.open(path, "rb") as f:
            raw = f.read(plain.MAX_BYTES + 1)
    except OSError as e:
        raise plain.Untrusted(f"{path}: cannot be read ({type(e).__name__})") from e
    return plain.loads(kind, layout.VERSION, raw)
