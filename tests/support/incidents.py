"""Incident folders cut down to one source, for what a page says when the rest is missing."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import dflash_postmortem as pm


def smi_stream_only(folder: Path, bundled_dir: Path) -> pm.Incident:
    """The bundled capture's nvidia-smi stream alone: GPU samples, no runs, processes or events."""
    (folder / "logs").mkdir()
    shutil.copy(bundled_dir / "logs" / "smi_stream.csv", folder / "logs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the load report lists what was assumed
        return pm.load_incident(folder)


def load_written(folder: Path, name: str, text: str) -> pm.Incident:
    """`text` written as the file `name` in `folder`, and the folder loaded (warnings about bad
    lines silenced: the tests read the load report)."""
    (folder / name).write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(folder)
