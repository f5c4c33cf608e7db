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


def columnar_and_lines(loader, path, ctx, monkeypatch):
    """`loader.load(path)` once as it runs (its `_columnar` reader taking the file or declining
    it) and once line by line (`_columnar` declining): checks that both give the same frames and
    load report; returns (the incident, whether the columnar reader took the file)."""
    import dataclasses

    taken = []
    real = loader._columnar
    monkeypatch.setattr(loader, "_columnar", lambda *a: taken.append(real(*a)) or taken[-1])
    fast = loader.load(path, ctx())
    monkeypatch.setattr(loader, "_columnar", lambda *a: None)
    slow = loader.load(path, ctx())
    for frame in ("gpus", "gpu_processes", "events"):
        pd.testing.assert_frame_equal(getattr(fast, frame), getattr(slow, frame))
    assert dataclasses.asdict(fast.load_report.files[0]) == dataclasses.asdict(slow.load_report.files[0])
    return fast, taken[0] is not None
