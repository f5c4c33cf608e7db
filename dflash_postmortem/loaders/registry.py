"""The format registry: each loader module registers how to recognise its files by content, with
`@registry.format(name, sniff=..., doc=...)` on its loader function.

`load_incident` asks every registered sniffer about every file (or folder, for formats that are
folders, such as a wandb run) and hands the file to the most confident one. File names are never
used to decide a format: a capture called `out.txt` is as readable as one called `smi.csv`.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..config import IncidentConfig
from ..errors import UsageError
from ..load_report import POLICIES, FileReport

SNIFF_BYTES = 64 * 1024


@dataclass
class LoadContext:
    """What a loader may know beyond the file itself."""

    root: Path | None = None
    timezone: str = "UTC"
    host: str | None = None
    on_bad_line: str = "warn"
    config: IncidentConfig = field(default_factory=IncidentConfig)
    date: dt.date | None = None  # for time-of-day-only sources
    options: dict = field(default_factory=dict)  # the [[sources]] entry for this file
    known: object | None = None  # the Incident loaded so far (UUIDs, dates, runs), if any
    # A file read from another path (a UTF-8 copy of a UTF-16 capture) -> the file it stands for.
    aliases: dict[Path, Path] = field(default_factory=dict)
    # What a reader that follows a growing folder keeps from one read of it to the next
    # (following.GrowingFolder owns it): a loader may keep there, under its file's name, what
    # lets its next read go on from where this one stopped (wandb/decoding.py). None: read once.
    kept: dict | None = None

    def __post_init__(self):
        if self.on_bad_line not in POLICIES:
            raise UsageError(f"on_bad_line must be one of {POLICIES}, not {self.on_bad_line!r}")

    def name(self, path: Path) -> str:
        """How a file is named in `source` columns and evidence refs: relative to the incident,
        always valid text (a name that is not UTF-8 shows U+FFFD where its bad bytes were)."""
        return printable(self._relative(self.aliases.get(Path(path), Path(path))))

    def _relative(self, path: Path) -> str:
        if self.root is not None:
            # A path found by walking the incident is named as it was reached, through any
            # linked folder on the way.
            try:
                return Path(os.path.abspath(path)).relative_to(os.path.abspath(self.root)).as_posix()
            except ValueError:
                pass
            # Resolve the folder but not the file: a symlink (wandb's debug-core.log points into
            # ~/.cache) is named where it lies in the incident, not where it points.
            here = path.parent.resolve() / path.name
            try:
                return here.relative_to(self.root.resolve()).as_posix()
            except ValueError:
                pass
        return path.name if self.root is not None else str(path)

    def report(self, path: Path, fmt: str, unit: str = "line") -> FileReport:
        original = self.aliases.get(Path(path), Path(path))
        return FileReport(
            path=self.name(path), format=fmt, unit=unit, on_bad_line=self.on_bad_line,
            abs_path=printable(str(original)),
        )

    def for_file(self, path: Path) -> LoadContext:
        """A copy carrying the file's own [[sources]] options (host, timezone, fields...)."""
        opts = self.config.source_options(self.name(path)) if self.config else {}
        return LoadContext(
            root=self.root,
            timezone=opts.get("timezone", self.timezone),
            host=opts.get("host", self.host),
            on_bad_line=self.on_bad_line,
            config=self.config,
            date=self.date,
            options=opts,
            known=self.known,
            aliases=dict(self.aliases),
            kept=self.kept,
        )


@dataclass(frozen=True)
class Format:
    """One source format.

    sniff(path, head) -> confidence in [0, 1]; `head` is the first SNIFF_BYTES bytes of a file,
    or b"" for a folder. load(path, ctx) -> Incident holding this source's frames and one
    FileReport per file it consumed. `phase` 1 formats load after phase 0 ones, so they can borrow
    dates or GPU UUIDs from what is already known. whole(folder) -> whether a folder handed over
    as the incident itself is one of this folder format's, holding nothing else (the sniffer
    answers for folders inside an incident, beside other evidence).
    """

    name: str
    sniff: Callable[[Path, bytes], float]
    load: Callable[[Path, LoadContext], object]
    doc: str
    folder: bool = False
    phase: int = 0
    whole: Callable[[Path], bool] | None = None


FORMATS: dict[str, Format] = {}


def register(fmt: Format) -> Format:
    assert fmt.name not in FORMATS, f"format {fmt.name} registered twice"
    FORMATS[fmt.name] = fmt
    return fmt


def format(
    name: str, *, sniff: Callable[[Path, bytes], float], doc: str, folder: bool = False, phase: int = 0,
    whole: Callable[[Path], bool] | None = None,
) -> Callable[[Callable[[Path, LoadContext], object]], Callable[[Path, LoadContext], object]]:
    """Register the decorated loader as format `name`, recognised by `sniff`.

    Every format is registered this way, when its module is imported: `loaders/__init__.py`
    imports each family in turn, so the order of FORMATS (which breaks ties between sniffers) is
    the order of those imports. A loader that reads several formats alike carries one decorator
    each; stacked decorators apply from the bottom up, so the one next to the function registers
    first.
    """

    def register_loader(load: Callable[[Path, LoadContext], object]) -> Callable[[Path, LoadContext], object]:
        register(Format(name=name, sniff=sniff, load=load, doc=doc, folder=folder, phase=phase, whole=whole))
        return load

    return register_loader


def formats_of(module: str) -> list[Format]:
    """The formats whose loaders live in `module` or below it (a family's package), in
    registration order: what a family's own entry point chooses among."""
    return [f for f in FORMATS.values() if f.load.__module__ == module or f.load.__module__.startswith(module + ".")]


def whole_folder(path: Path) -> Format | None:
    """The folder format `path` is, where the folder handed over as the incident is one whole
    source of it (Format.whole), else None: it is walked file by file."""
    return next((f for f in FORMATS.values() if f.folder and f.whole is not None and f.whole(path)), None)


def read_head(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(SNIFF_BYTES)


def printable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (kept by the OS as surrogates) become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def is_valid_name(path: Path) -> bool:
    return printable(str(path)) == str(path)


def sniff(
    path: Path, head: bytes | None = None, *, failures: list | None = None,
    among: Iterable[Format] | None = None,
) -> tuple[Format | None, float]:
    """The most confident format for `path` and its confidence (ties: first registered).

    A sniffer that raises counts as "not this format"; with `failures`, each such sniffer's name
    and exception are appended to it, so the caller can report the bug. `among` restricts the
    choice to some formats (a family's own entry point), in registration order.
    """
    folder = path.is_dir()
    if head is None:
        head = b"" if folder else read_head(path)
    among = None if among is None else tuple(among)
    key = None if folder else _sniffed_key(path, head, among)
    if key is not None and key in _SNIFFED:
        best, best_score, failed = _SNIFFED[key]
        if failures is not None:
            failures.extend(failed)
        return best, best_score
    failed: list = []
    best, best_score = _sniff(path, head, folder, among, failed)
    if key is not None:
        if len(_SNIFFED) >= _SNIFFED_MAX:
            _SNIFFED.clear()
        _SNIFFED[key] = (best, best_score, failed)
    if failures is not None:
        failures.extend(failed)
    return best, best_score


# What each file was sniffed as, by its name, size, time of change and first bytes: a folder read
# again (every look of a live watch, every report page's cache check) sniffs its unchanged files
# once. A file that grows or is rewritten is sniffed again.
_SNIFFED: dict[tuple, tuple] = {}
_SNIFFED_MAX = 4096


def _sniffed_key(path: Path, head: bytes, among: tuple | None) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    # (the formats registered now, each as the object it is, are part of what a sniff answers)
    return (str(path), st.st_size, st.st_mtime_ns, hash(head), tuple(map(id, FORMATS.values() if among is None else among)))


def _sniff(path: Path, head: bytes, folder: bool, among: tuple | None, failures: list) -> tuple[Format | None, float]:
    best, best_score = None, 0.0
    for fmt in FORMATS.values() if among is None else among:
        if fmt.folder != folder:
            continue
        try:
            score = fmt.sniff(path, head)
        except Exception as e:  # noqa: BLE001 - one broken sniffer must not decide for all formats
            failures.append((fmt.name, e))
            continue
        if score > best_score:
            best, best_score = fmt, score
    return best, best_score
