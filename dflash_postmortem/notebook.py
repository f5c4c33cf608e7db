"""Glue for running the kit's notebooks, interactively in JupyterLab or in batch for a report.

Figures are shown as plotly's own mimetype (which JupyterLab renders natively) plus a plain HTML
div that does not load plotly.js: the report loads plotly.js once for the whole folder, so a
report renders offline and never reaches a CDN. The figure display is registered with IPython
directly: plotly's renderer machinery imports nbformat and, through jsonschema, builds dozens
of grammars at import (seconds per kernel) for nothing a notebook here needs.

The loaded incident and its findings are cached on disk, keyed by the evidence files and the
kit's version, so that only the first of a report's pages (or the first cell in JupyterLab
after a report) pays for loading.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import pickle
from functools import cache
from pathlib import Path

import pandas as pd

from . import __version__
from .detect import detect
from .evidence import link_refs
from .loaders.folder import load_incident, walked
from .redact import redact, redact_frame, redact_incident
from .units import clock

CACHE_ENV = "DFLASH_POSTMORTEM_CACHE"
REDACT_ENV = "DFLASH_POSTMORTEM_REDACT"  # "0": the report was asked not to mask secrets
_CACHE_KEEP = 64  # most recent files kept in the cache folder (an incident as read, and masked)


def figure_bundle(fig) -> dict:
    """A plotly figure as the mime bundle a notebook output holds."""
    import plotly.io as pio  # start-up time: plotting loads only when a figure is shown

    html = pio.to_html(
        fig, include_plotlyjs=False, include_mathjax=False, full_html=False, default_width="100%",
        default_height=520, validate=False, config={"displaylogo": False, "responsive": True},
    )
    # JupyterLab wants plain JSON; plotly's encoder turns numpy datetimes and arrays into it.
    plain = json.loads(pio.to_json(fig, validate=False))
    return {"application/vnd.plotly.v1+json": plain, "text/html": html}


def setup() -> None:
    """Call once at the top of a notebook: figures render in JupyterLab and in the HTML report,
    tables read as tables (no index, text left, evidence refs as links, never typeset as math)."""
    pd.set_option("display.max_colwidth", None)  # evidence is never cut: cells wrap instead
    pd.set_option("display.max_rows", 200)
    try:  # IPython is there in a kernel; a plain interpreter shows no figures anyway
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        from IPython.display import display
        from plotly.basedatatypes import BaseFigure  # start-up time, as above

        # A figure displays itself through plotly's renderers (`_ipython_display_`); a printer
        # registered for its type is asked first.
        shell.display_formatter.ipython_display_formatter.for_type(
            BaseFigure, lambda fig: display(figure_bundle(fig), raw=True))
        shell.display_formatter.formatters["text/html"].for_type(pd.DataFrame, lambda df: frame_html(df, _shown.root))


def redacting() -> bool:
    """Whether what the notebooks show is masked: yes unless the report was asked not to
    (`--no-redact` sets the variable for its kernels)."""
    return os.environ.get(REDACT_ENV, "1") != "0"


class _Shown:
    """The incident folder the tables' evidence refs point into: the one `load` read last."""

    root: Path | None = None


_shown = _Shown()

_TABLE_STYLE = ("<style>.pm-table td,.pm-table th{text-align:left!important;vertical-align:top;"
                "white-space:pre-wrap;overflow-wrap:break-word;max-width:60em}.pm-table table{font-size:12px}</style>")


def frame_html(df: pd.DataFrame, root: Path | None = None) -> str:
    """A table as a reader wants it: no 0..N index (a named index is a column), text left-aligned
    and wrapped whole, times to the second, every `file:line` a link to the file (relative to
    the kernel's folder, as JupyterLab opens it), masked and escaped, inside a block MathJax
    leaves alone (a `$` in a command is a dollar, not math)."""
    if df.index.name is not None or isinstance(df.index, pd.MultiIndex):
        df = df.reset_index()
    multi_day = any(_dates(df[c]) > 1 for c in df.columns if isinstance(df[c].dtype, pd.DatetimeTZDtype))
    mask = redact if redacting() else str
    href = None if root is None else (lambda ref: os.path.relpath(Path(root) / ref.path, os.getcwd()))

    def cell(value) -> str:
        text = html.escape(mask(cell_text(value, multi_day)))
        return link_refs(text, root, href) if href is not None else text

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "\n".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>"
                     for row in df.itertuples(index=False, name=None))
    more = f"<p>{len(df):,} rows</p>" if len(df) > 20 else ""
    return (f'{_TABLE_STYLE}<div class="pm-table tex2jax_ignore mathjax_ignore"><table class="dataframe">'
            f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{more}</div>")


def _dates(s: pd.Series) -> int:
    return s.dropna().dt.date.nunique()


def cell_text(value, with_date: bool = False) -> str:
    """One table cell as text: times to the second, whole numbers with thousands separators,
    fractions to three significant digits, lists joined, nothing for a missing value."""
    if isinstance(value, (list, tuple)):
        return ", ".join(cell_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={cell_text(v)}" for k, v in value.items())
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, pd.Timestamp):
        return clock(value, date=with_date)
    if isinstance(value, float):
        if value.is_integer() or abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}"
    return str(value)


def cache_dir() -> Path:
    """Where loaded incidents are kept: `DFLASH_POSTMORTEM_CACHE`, else the user's cache folder."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "dflash-postmortem"


@cache
def _kit_stamp() -> str:
    """The kit's own code, as loaded: its version and every module's size and mtime (a working
    checkout changes without a new version number)."""
    here = Path(__file__).resolve().parent
    parts = [__version__] + [f"{p.relative_to(here)}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
                             for p in sorted(here.rglob("*.py"))]
    return hashlib.sha1("\n".join(parts).encode()).hexdigest()


def _fingerprint(folder: Path, timezone: str | None) -> str:
    """Changes whenever an evidence file or the kit changes, and whenever an entry the load
    reports instead of reading (a dangling link, a FIFO) comes or goes: it is in the load report."""
    stamp = [_kit_stamp(), str(folder.resolve()), timezone or ""]
    for p, st in walked(folder):
        stamp.append(f"{p.relative_to(folder)}:{st.st_size}:{st.st_mtime_ns}" if st else f"{p.relative_to(folder)}:-")
    return hashlib.sha1("\n".join(stamp).encode("utf-8", "surrogateescape")).hexdigest()


def load_cached(incident_dir: str, timezone: str = "", on_bad_line: str = "skip", masked: bool = False):
    """The incident and its findings, as every notebook starts: from the cache when the evidence
    and the kit are the ones it was made from, else loaded, detected and cached.

    `masked`: with secrets masked (redact.py), cached too, beside the incident as read: every
    page of a report shows it masked, and masking costs a page as much as reading the cache.
    `on_bad_line="raise"` (`--strict`) stops at the first unreadable file or line; a load that
    passes it is the same incident as a lenient one, so the cache is shared, but a cached
    incident with a file it could not read or a line it skipped is loaded again, strictly, so
    that the load stops where a strict one does.
    """
    folder = Path(incident_dir)
    path = None
    if folder.is_dir():
        path = cache_dir() / f"{_fingerprint(folder, timezone)}{'-masked' if masked else ''}.pickle"
    if path is not None and path.exists():
        try:
            with path.open("rb") as fh:
                found = pickle.load(fh)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            found = None  # a cache written by another version of a dependency: load again
        if found is not None and (on_bad_line != "raise" or _clean(found[0].load_report)):
            return found
    if masked:
        inc, findings = load_cached(incident_dir, timezone, on_bad_line)
        found = (redact_incident(inc), redact_frame(findings))
    else:
        inc = load_incident(folder, timezone=timezone or None, on_bad_line=on_bad_line)
        found = (inc, detect(inc))
    if path is not None:
        _store(path, found)
    return found


def _clean(report) -> bool:
    """Nothing in the load report a strict load would stop at."""
    return not report.failed and not any(f.n_skipped for f in report.files)


def load(incident_dir: str, timezone: str = "", on_bad_line: str = "skip"):
    """The incident and its findings as a notebook shows them (`load_cached`): secrets masked
    (unless the report was asked not to), and the tables' evidence refs pointing into this
    folder."""
    _shown.root = Path(incident_dir) if Path(incident_dir).is_dir() else None
    return load_cached(incident_dir, timezone, on_bad_line, masked=redacting())


def _store(path: Path, found) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as fh:
            pickle.dump(found, fh)
        tmp.replace(path)  # atomic: notebooks running in parallel never read half a file
        old = sorted(path.parent.glob("*.pickle"), key=lambda p: p.stat().st_mtime)[:-_CACHE_KEEP]
        for p in old:
            p.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only home: every page loads for itself, slower but the same
