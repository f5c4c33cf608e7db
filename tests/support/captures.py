"""Writing a capture for a loader test, reading back its one load-report entry, and picking a
source's rows out of an incident's frame."""

from __future__ import annotations

import pandas as pd


def write(tmp_path, name, lines, newline="\n"):
    """`lines` written as the file `name` under `tmp_path`, each ended by `newline` (UTF-8)."""
    p = tmp_path / name
    p.write_bytes((newline.join(lines) + newline).encode())
    return p


def only_report(inc):
    """The load report of an incident read from one file, checked balanced (parsed + skipped ==
    read)."""
    (rep,) = inc.load_report.files
    assert rep.balanced, rep.summary()
    return rep


def ts(text: str) -> pd.Timestamp:
    """A UTC time as the frames hold it."""
    return pd.Timestamp(text, tz="UTC")


def rows(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """The rows of `df` that came from `source` (a path relative to the incident), renumbered."""
    return df[df["source"] == source].reset_index(drop=True)
