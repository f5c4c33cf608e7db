"""Glue for running the kit's notebooks, interactively in JupyterLab or in batch under papermill.

Figures are shown through one renderer that emits both plotly's own mimetype (which JupyterLab
renders natively) and a plain HTML div that does not load plotly.js: the report pipeline embeds
plotly.js once per page, so a report renders offline and never reaches a CDN.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from pathlib import Path

import pandas as pd
import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer

from .detect import detect
from .loaders.folder import load_incident, regular_files

RENDERER = "dflash"


class ReportRenderer(MimetypeRenderer):
    def to_mimebundle(self, fig_dict):
        html = pio.to_html(
            fig_dict,
            include_plotlyjs=False,
            include_mathjax=False,
            full_html=False,
            default_width="100%",
            default_height=520,
            validate=False,
            config={"displaylogo": False, "responsive": True},
        )
        # JupyterLab wants plain JSON; plotly's encoder turns numpy datetimes and arrays into it.
        plain = json.loads(pio.to_json(fig_dict, validate=False))
        return {"application/vnd.plotly.v1+json": plain, "text/html": html}


def setup() -> None:
    """Call once at the top of a notebook: figures render in JupyterLab and in the HTML report."""
    pio.renderers[RENDERER] = ReportRenderer()
    pio.renderers.default = RENDERER
    pd.set_option("display.max_colwidth", 160)
    pd.set_option("display.max_rows", 200)


CACHE_ENV = "DFLASH_POSTMORTEM_CACHE"


def _fingerprint(folder: Path, timezone: str | None) -> str:
    """Changes whenever an evidence file changes (the cache lives for one report or test session)."""
    stamp = [str(folder.resolve()), timezone or ""]
    for p, st in regular_files(folder):
        stamp.append(f"{p.relative_to(folder)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha1("\n".join(stamp).encode("utf-8", "surrogateescape")).hexdigest()


def load(incident_dir: str, timezone: str = "", on_bad_line: str = "skip"):
    """The incident and its findings, as every notebook starts.

    A report runs five notebooks on one incident; where `DFLASH_POSTMORTEM_CACHE` names a folder
    (the report and the test suite set it, for the length of one run) the loaded incident and
    findings are kept there, keyed by the evidence files, so only the first notebook pays for
    loading. `on_bad_line="raise"` (`--strict`) stops at the first unreadable file or line; a
    load that passes it is the same incident as a lenient one, so the cache is shared.
    """
    folder = Path(incident_dir)
    cache = os.environ.get(CACHE_ENV)
    path = Path(cache) / f"{_fingerprint(folder, timezone)}.pickle" if cache and folder.is_dir() else None
    if path is not None and path.exists():
        with path.open("rb") as fh:
            return pickle.load(fh)
    inc = load_incident(folder, timezone=timezone or None, on_bad_line=on_bad_line)
    found = (inc, detect(inc))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(found, fh)
        tmp.replace(path)  # atomic: notebooks running in parallel never read half a file
    return found
