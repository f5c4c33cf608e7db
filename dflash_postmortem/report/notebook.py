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

import html
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from .. import plain_data
from ..detect import detect
from ..present.evidence_views import link_refs
from ..present.redact import redact, redact_frame, redact_incident
from ..present.sentences import CELL_CHARS, html_text, one_line
from ..store.load import load_incident
from ..units import clock
from . import cache as report_cache

REDACT_ENV = "DFLASH_POSTMORTEM_REDACT"  # "0": the report was asked not to mask secrets
ONLINE_ENV = "DFLASH_POSTMORTEM_ONLINE"  # "1": the report was asked to query the servers incident.toml names


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

    def rendered(text: str) -> str:
        text = html_text(html.escape(text))  # what a cell quotes in backticks, in code style
        return link_refs(text, root, href) if href is not None else text

    def cell(value) -> str:
        return cut_html(mask(cell_text(value, multi_day)), rendered)

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "\n".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>"
                     for row in df.itertuples(index=False, name=None))
    more = f"<p>{len(df):,} rows</p>" if len(df) > 20 else ""
    return (f'{_TABLE_STYLE}<div class="pm-table tex2jax_ignore mathjax_ignore"><table class="dataframe">'
            f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{more}</div>")


def cut_html(whole: str, rendered, limit: int = CELL_CHARS) -> str:
    """Text for a page, by the one rule for every cut: past `limit` characters it ends in an
    ellipsis, and the whole text is one hover away. `rendered(text)` makes the HTML of what is
    shown (escaped, code style, links)."""
    shown = one_line(whole, limit) if len(whole) > limit else whole
    text = rendered(shown)
    return text if shown == whole else f'<span title="{html.escape(whole)}">{text}</span>'


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
    if isinstance(value, (bool, np.bool_)):  # a flag reads as a word, not as Python's True
        return "yes" if value else "no"
    if isinstance(value, pd.Timestamp):
        return clock(value, date=with_date)
    if isinstance(value, float):
        if value.is_integer() or abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}"
    return str(value)


def load_cached(incident_dir: str, timezone: str = "", on_bad_line: str = "skip", masked: bool = False,
                online: bool = False):
    """The incident and its findings, as every notebook starts: from the cache when the evidence
    and the kit are the ones it was made from, else loaded, detected and cached (report_cache).

    `masked`: with secrets masked (redact.py), cached too, beside the incident as read: every
    page of a report shows it masked, and masking costs a page as much as reading the cache.
    `on_bad_line="raise"` (`--strict`) stops at the first unreadable file or line; a load that
    passes it is the same incident as a lenient one, so the cache is shared, but a cached
    incident with a file it could not read or a line it skipped is loaded again, strictly, so
    that the load stops where a strict one does. `online`: servers named in incident.toml are
    asked too (load_incident).
    """
    folder = Path(incident_dir)
    entry, notes = None, []
    if folder.is_dir():
        where = report_cache.cache_dir()
        unsafe = report_cache.unsafe_folder(where)
        if unsafe:
            notes.append(f"the cache folder {where} {unsafe}: not used (loaded from the evidence)")
        else:
            entry = report_cache.entry(folder, timezone, online, masked)
    found = None
    if entry is not None:
        try:
            found = report_cache.read(entry, folder, timezone or None)
        except plain_data.Untrusted as e:
            notes.append(f"{e}: loaded again from the evidence")
    if found is not None and (on_bad_line != "raise" or _clean(found[0].load_report)):
        return found
    if masked:
        inc, findings = load_cached(incident_dir, timezone, on_bad_line, online=online)
        found = (redact_incident(inc), redact_frame(findings))
    else:
        inc = load_incident(folder, timezone=timezone or None, on_bad_line=on_bad_line, online=online)
        found = (inc, detect(inc))
    if entry is not None:
        report_cache.write(entry, *found)
    found[0].load_report.notes.extend(notes)  # this load's own: not kept in the cache
    return found


def _clean(report) -> bool:
    """Nothing in the load report a strict load would stop at."""
    return not report.failed and not any(f.n_skipped for f in report.files)


def load(incident_dir: str, timezone: str = "", on_bad_line: str = "skip"):
    """The incident and its findings as a notebook shows them (`load_cached`): secrets masked
    (unless the report was asked not to), and the tables' evidence refs pointing into this
    folder."""
    _shown.root = Path(incident_dir) if Path(incident_dir).is_dir() else None
    return load_cached(incident_dir, timezone, on_bad_line, masked=redacting(),
                       online=os.environ.get(ONLINE_ENV) == "1")
