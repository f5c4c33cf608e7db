"""What loading did, file by file: the format sniffed, rows made, lines skipped and why.

The invariant every loader keeps: for each file, parsed + skipped == read (lines for text
formats, records for binary ones). Nothing readable is dropped without a counted reason.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from . import plain_data as plain
from .errors import SourceFormatError

POLICIES = ("raise", "warn", "skip")
_EXAMPLES_PER_REASON = 5


@dataclass
class FileReport:
    """The account of one source file (or one run folder)."""

    path: str
    format: str | None = None
    unit: str = "line"
    read: int = 0
    parsed: int = 0
    skipped: Counter = field(default_factory=Counter)
    examples: dict[str, list[int]] = field(default_factory=dict)
    rows: Counter = field(default_factory=Counter)
    assumptions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    trace: str | None = None  # the traceback of a loader that failed, shown with --debug
    start: pd.Timestamp | None = None
    end: pd.Timestamp | None = None
    on_bad_line: str = "warn"
    abs_path: str | None = None
    # Set by a loader whose stamps lack a date or a year that the incident could give (glog's
    # `E1201 22:44:03`, a time of day): a folder load reads the file again once the other
    # sources have dated the incident. Not kept in the store's reports (not in _FILE_FIELDS).
    needs_date: bool = False

    def skip(self, line: int | None, reason: str, n: int = 1) -> None:
        """Count `n` lines that carry nothing to parse (blank, header, repeated progress bar...)."""
        self.skipped[reason] += n
        if line is not None:
            ex = self.examples.setdefault(reason, [])
            if len(ex) < _EXAMPLES_PER_REASON:
                ex.append(line)

    def skip_lines(self, lines, reason: str) -> None:
        """Count the lines numbered `lines` (in file order) skipped for one reason, as `skip` one
        at a time would: a columnar reader's millions of lines without a call each."""
        first = [int(n) for n in lines[:_EXAMPLES_PER_REASON]]
        for n in first:
            self.skip(n, reason)
        if len(lines) > len(first):
            self.skip(None, reason, len(lines) - len(first))

    def bad(self, line: int | None, expected: str, found: str, n: int = 1) -> None:
        """A line that should have parsed and did not (or `n` of them, lost together: a damaged
        range of records): apply the on_bad_line policy, one warning for them all."""
        if self.on_bad_line == "raise":
            raise SourceFormatError(self.abs_path or self.path, line, expected, found, fmt=self.format)
        reason = f"expected {expected}"
        self.skip(line, reason, n)
        if self.on_bad_line == "warn":
            shown = found if len(found) <= 80 else found[:77] + "..."
            warnings.warn(f"{self.path}:{line}: {reason}, found {shown!r}", stacklevel=3)

    def assume(self, text: str) -> None:
        if text not in self.assumptions:
            self.assumptions.append(text)

    def count_rows(self, frame: str, n: int) -> None:
        if n:
            self.rows[frame] += n

    def see_times(self, times: pd.Series) -> None:
        times = times.dropna()
        if times.empty:
            return
        lo, hi = times.min(), times.max()
        self.start = lo if self.start is None else min(self.start, lo)
        self.end = hi if self.end is None else max(self.end, hi)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    @property
    def balanced(self) -> bool:
        return self.parsed + self.n_skipped == self.read

    def to_plain(self) -> dict:
        return {f: getattr(self, f) for f in _FILE_FIELDS}

    @classmethod
    def from_plain(cls, data, where: str = "file report") -> FileReport:
        """A FileReport from what `to_plain` gave, every field type-checked (plain_data.Untrusted)."""
        got = plain.fields(where, data, _FILE_FIELDS)
        for counted in ("skipped", "rows"):
            got[counted] = Counter(got[counted])
        return cls(**got)

    def summary(self) -> str:
        rows = ", ".join(f"{k} {v}" for k, v in sorted(self.rows.items())) or "no rows"
        return f"{self.path}: {self.format or 'unrecognised'}; {self.read} {self.unit}s read, {self.parsed} parsed, {self.n_skipped} skipped; {rows}"


_opt_text = plain.optional(plain.text)
_opt_time = plain.optional(plain.time)
_texts = plain.list_of(plain.text)
# Every field of a FileReport and the type it must have when read back (plain_data).
_FILE_FIELDS: dict[str, plain.Check] = {
    "path": plain.text, "format": _opt_text, "unit": plain.text, "read": plain.integer,
    "parsed": plain.integer, "skipped": plain.map_of(plain.integer),
    "examples": plain.map_of(plain.list_of(plain.integer)), "rows": plain.map_of(plain.integer),
    "assumptions": _texts, "notes": _texts, "error": _opt_text, "trace": _opt_text,
    "start": _opt_time, "end": _opt_time, "on_bad_line": plain.text, "abs_path": _opt_text,
}


@dataclass
class LoadReport:
    """Every file of an incident, each accounted for."""

    files: list[FileReport] = field(default_factory=list)
    offsets: dict[str, float] = field(default_factory=dict)  # source -> seconds added
    notes: list[str] = field(default_factory=list)
    # host -> its clock skew estimated against the reference host (align.align_host_clocks):
    # reference, seconds, uncertainty_s, pairs, methods, applied, why
    host_clocks: dict[str, dict] = field(default_factory=dict)

    def to_plain(self) -> dict:
        return {"files": [f.to_plain() for f in self.files], "offsets": self.offsets, "notes": self.notes,
                "host_clocks": self.host_clocks}

    @classmethod
    def from_plain(cls, data, where: str = "load report") -> LoadReport:
        got = plain.fields(where, data, {
            "files": plain.list_of(plain.anything), "offsets": plain.map_of(plain.number),
            "notes": _texts, "host_clocks": plain.map_of(plain.map_of(plain.anything))})
        got["files"] = [FileReport.from_plain(f, f"{where}.files[{i}]") for i, f in enumerate(got["files"])]
        return cls(**got)

    def add(self, report: FileReport) -> FileReport:
        self.files.append(report)
        return report

    def extend(self, other: LoadReport) -> None:
        self.files.extend(other.files)
        self.offsets.update(other.offsets)
        self.notes.extend(other.notes)
        self.host_clocks.update(other.host_clocks)

    def __getitem__(self, path: str) -> FileReport:
        for f in self.files:
            if f.path == path:
                return f
        raise KeyError(path)

    @property
    def loaded(self) -> list[FileReport]:
        return [f for f in self.files if f.format is not None and f.error is None]

    @property
    def unrecognised(self) -> list[FileReport]:
        return [f for f in self.files if f.format is None and f.error is None]

    @property
    def failed(self) -> list[FileReport]:
        """Files that could not be read: unreadable, a link loop, or a loader that failed."""
        return [f for f in self.files if f.error is not None]

    def to_frame(self) -> pd.DataFrame:
        """One row per file: the table notebooks and `inspect` show."""
        rows = []
        for f in self.files:
            rows.append(
                {
                    "path": f.path,
                    "format": f.format or "unrecognised",
                    "unit": f.unit,
                    "read": f.read,
                    "parsed": f.parsed,
                    "skipped": f.n_skipped,
                    "rows": ", ".join(f"{k}={v}" for k, v in sorted(f.rows.items())),
                    "start": f.start,
                    "end": f.end,
                    "skip_reasons": "; ".join(f"{r} ×{n}" for r, n in f.skipped.most_common()),
                    "assumptions": "; ".join(f.assumptions),
                    "notes": "; ".join(f.notes),
                    "error": f.error or "",
                }
            )
        return pd.DataFrame(rows)
