"""The `timestamp` column of a query CSV in the forms it really comes in.

nvidia-smi writes `2024/01/02 03:04:05.678` (read by the CSV fast path without this module). The
same column arrives in other forms when a script or a person made the file: epoch seconds or
milliseconds from `date +%s`, ISO 8601 (with or without a zone), a spreadsheet's locale form
(`02.01.2024 03:04:05`, `1/2/2024 3:04:05 AM`), ctime. The form is decided once per column, from
its values, never per row; values that do not fit it are unreadable, not guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

NVIDIA_SMI = "%Y/%m/%d %H:%M:%S.%f"

_EPOCH_S = re.compile(r"^1\d{9}(?:\.\d+)?$")  # 2001-09-09 .. 2033-05-18
_EPOCH_MS = re.compile(r"^1\d{12}$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")

# Locale and tool forms, each tried on the whole column; day/month pairs are told apart by the
# values (a first number above 12 is a day).
_FORMATS = (
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d %H:%M",
    "%d.%m.%Y %H:%M:%S.%f",
    "%d.%m.%Y %H:%M:%S",
    "%d.%m.%Y %H:%M",
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%Y %H:%M:%S.%f",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M",
    "%d/%m/%Y %I:%M:%S %p",
    "%d/%m/%Y %H:%M:%S.%f",
    "%d/%m/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M",
    "%m-%d-%Y %H:%M:%S",
    "%d-%m-%Y %H:%M:%S",
    "%Y-%m-%d %H:%M:%S,%f",
    "%a %b %d %H:%M:%S %Y",
    "%Y%m%d %H:%M:%S",
)


@dataclass
class Times:
    values: pd.Series  # naive wall-clock times, or UTC ones when the form carries its zone
    unreadable: pd.Series  # bool: a value that is there but not in the column's form
    form: str  # what the column was read as, for the load report
    zoned: bool  # the form says its zone (epoch, ISO with an offset): no zone assumption


def parse_times(text: pd.Series) -> Times:
    """Read a timestamp column (string dtype, cells stripped)."""
    present = text.notna() & (text != "")
    sample = text[present].head(200)
    fixed = pd.to_datetime(text, format=NVIDIA_SMI, errors="coerce")
    if sample.empty or fixed[present].notna().all():
        return Times(fixed, present & fixed.isna(), "nvidia-smi's form", False)
    best = Times(fixed, present & fixed.isna(), "nvidia-smi's form", False)
    for times in _candidates(text, sample):
        if times.unreadable.sum() < best.unreadable.sum():
            best = times
        if not best.unreadable.any():
            break
    return best


def _candidates(text: pd.Series, sample: pd.Series):
    present = text.notna() & (text != "")
    if sample.str.match(_EPOCH_S).all():
        v = pd.to_datetime(pd.to_numeric(text, errors="coerce"), unit="s", utc=True)
        yield Times(v, present & v.isna(), "epoch seconds (UTC)", True)
    if sample.str.match(_EPOCH_MS).all():
        v = pd.to_datetime(pd.to_numeric(text, errors="coerce"), unit="ms", utc=True)
        yield Times(v, present & v.isna(), "epoch milliseconds (UTC)", True)
    if sample.str.match(_ISO).all():
        zoned = sample.str.contains(r"(?:Z|[+-]\d{2}:?\d{2})$", regex=True)
        if zoned.all():
            v = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
            yield Times(v, present & v.isna(), "ISO 8601 with its zone", True)
        elif not zoned.any():
            v = pd.to_datetime(text, format="ISO8601", errors="coerce")
            yield Times(v, present & v.isna(), "ISO 8601", False)
    for fmt in _FORMATS:
        if pd.to_datetime(sample, format=fmt, errors="coerce").notna().mean() < 0.5:
            continue
        v = pd.to_datetime(text, format=fmt, errors="coerce")
        yield Times(v, present & v.isna(), f"the form {fmt!r}", False)
