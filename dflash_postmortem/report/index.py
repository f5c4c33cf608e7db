"""The report's front page: a summary card, the way an incident review opens.

Title, date and time window (UTC and the incident's own zone), what happened in a few sentences,
the cause chain, the headline numbers, where the GPU time went, the overview figure, and then every page with the question
it answers. Everything on it comes from the incident as the notebooks show it (masked when the
report masks), and is escaped here, after masking.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from zoneinfo import ZoneInfo

import pandas as pd

from ..analysis.timeline import Timeline
from ..incident import Incident
from ..model.ledger import CLASSES, SHOWN_S, ledger
from ..present.evidence_views import link_refs, view_href
from ..present.figures import LEDGER_COLOURS
from ..present.sentences import gpu_time_lines, html_text, sources_line, what_happened
from ..units import clock
from .notebook import cut_html

CHAIN_LINES = 6  # cause links shown on the card; the overview page has them all


@dataclass
class PageEntry:
    """A page of the report as the index lists it."""

    href: str
    name: str
    question: str
    about: str
    error: str | None = None


def page_entry(notebook: Path, href: str, error: str | None = None) -> PageEntry:
    """The page's question (its notebook's heading) and what it shows (the paragraph after it)."""
    question, about = notebook.stem, ""
    try:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):
        cells = []
    md = next(("".join(c["source"]) for c in cells if c.get("cell_type") == "markdown"), "")
    paragraphs = [p.strip() for p in md.split("\n\n") if p.strip()]
    if paragraphs and paragraphs[0].startswith("#"):
        question = paragraphs[0].lstrip("#").strip()
        about = paragraphs[1] if len(paragraphs) > 1 else ""
    return PageEntry(href, notebook.stem, question, about.replace("`", ""), error)


def time_window(inc: Incident) -> str:
    """`2026-11-30 05:20:20 – 05:31:02 UTC`, and the same in the incident's zone when it has one."""
    first, last = inc.span()
    if first is None:
        return "no timestamped evidence"
    text = f"{clock(first, date=True)} – {clock(last, date=last.date() != first.date())} UTC"
    zone = inc.config.timezone
    if zone and zone != "UTC":
        a, b = first.tz_convert(ZoneInfo(zone)), last.tz_convert(ZoneInfo(zone))
        text += f" ({a:%Y-%m-%d %H:%M:%S} – {b:%H:%M:%S} {zone})"
    return text


def chain_lines(findings: pd.DataFrame) -> list[tuple[str, str, list[str]]]:
    """Each cause link as (finding, why, evidence refs), in the findings' time order."""
    out = []
    for f in findings[findings["caused_by"].map(len) > 0].itertuples():
        for c in f.caused_by:
            out.append((f.title, str(c["why"]), list(c.get("evidence", []))))
    return out


_STYLE = """<style>
body { font-family: system-ui, sans-serif; max-width: 1600px; margin: 1.5em auto; padding: 0 1.5em; line-height: 1.45; }
h1 { margin-bottom: .1em; } .when { color: #555; margin-top: 0; }
.card { border: 1px solid #ddd; border-radius: 8px; padding: 1em 1.4em; margin: 1em 0; background: #fcfcfc; }
.numbers { display: grid; grid-template-columns: repeat(auto-fill, minmax(15em, 1fr)); gap: .6em 1.2em; }
.numbers > div { border-left: 3px solid #4c78a8; padding-left: .6em; }
.numbers .q { color: #555; font-size: 90%; } .numbers .v { font-size: 120%; font-weight: 600; }
.chain li { margin: .25em 0; } .chain .why { color: #333; } .refs { font-size: 85%; color: #555; }
.pages li { margin: .5em 0; } .pages .about { color: #555; font-size: 92%; }
code, .refs a { font-family: ui-monospace, monospace; }
.failed { color: #b00020; font-weight: 600; }
.ledger { display: flex; height: 1.6em; border-radius: 4px; overflow: hidden; margin: .4em 0; }
.ledger span { display: block; height: 100%; }
.keys span.key { display: inline-block; width: .9em; height: .9em; margin: 0 .3em 0 .9em; vertical-align: -.1em; }
</style>"""


def gpu_time_card(inc: Incident, esc) -> str:
    """One stacked bar of every GPU-second of the incident window by class (`model.ledger`), its
    key with each class's share, and the per-GPU lines `inspect` prints; empty without GPUs."""
    led = ledger(inc)
    if led.empty:
        return ""
    total = float(led["total"].sum())
    parts = [(c, float(led[c].sum())) for c in CLASSES if led[c].sum() >= SHOWN_S]
    bar = "".join(f"<span class='{c}' style='width:{100 * v / total:.3f}%;background:{LEDGER_COLOURS[c]}' "
                  f"title='{c}: {v / total:.0%}'></span>" for c, v in parts)
    keys = "".join(f"<span class='key' style='background:{LEDGER_COLOURS[c]}'></span>{c} {v / total:.0%}"
                   for c, v in parts)
    lines = "".join(f"<li>{esc(line)}</li>" for line in gpu_time_lines(inc))
    return (f"<div class='card'><h2>Where the GPU time went</h2><div class='ledger'>{bar}</div>"
            f"<div class='keys'>{keys}</div><ul>{lines}</ul></div>")


def index_html(inc: Incident, findings: pd.DataFrame, tl: Timeline, headline: pd.DataFrame | None,
               figure: str, pages: list[PageEntry], plotly_js: str, root: Path | None, mask) -> str:
    """The front page. `mask` masks text (the identity when the report does not redact);
    `figure` is the overview figure's HTML (a div and its script); `headline` the headline
    table (quantity, value, from) or None when there are no numbers."""

    def rendered(text: str) -> str:
        escaped = html_text(html.escape(text))
        return link_refs(escaped, root, view_href) if root is not None else escaped

    def esc(text) -> str:
        return rendered(mask(str(text)))

    def cut(text) -> str:  # cut the way a table cell is: an ellipsis, the whole text on hover
        return cut_html(mask(str(text)), rendered)

    title = esc(inc.title)
    sentences = "".join(f"<li>{esc(s)}</li>" for s in what_happened(inc, findings, tl.impact))
    chain = chain_lines(findings)
    chain_html = "".join(
        f"<li>{cut(what)} <span class='why'>&larr; {cut(why)}</span>"
        + (f"<div class='refs'>{cut(', '.join(refs))}</div>" if refs else "") + "</li>"
        for what, why, refs in chain[:CHAIN_LINES])
    if len(chain) > CHAIN_LINES:
        chain_html += f"<li>and {len(chain) - CHAIN_LINES} more on the overview page</li>"
    numbers = "" if headline is None else "".join(
        f"<div><div class='q'>{esc(r.quantity)}</div><div class='v'>{esc(r.value)}</div></div>"
        for r in headline.itertuples())
    page_items = "".join(
        f"<li><a href='{html.escape(p.href)}'><strong>{html.escape(p.question)}</strong></a> "
        f"<code>{html.escape(p.name)}</code>"
        + (f" <span class='failed'>failed: {esc(p.error)}</span>" if p.error else "")
        + (f"<div class='about'>{html.escape(p.about)}</div>" if p.about else "") + "</li>"
        for p in pages)
    sources = sources_line(inc)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Post-mortem: {title}</title>
<script type="text/javascript" src="{html.escape(plotly_js)}"></script>
{_STYLE}</head>
<body>
<h1>Post-mortem: {title}</h1>
<p class="when">{esc(time_window(inc))} · {esc(sources)}</p>
<div class="card"><h2>What happened</h2><ul>{sentences}</ul>
{f"<h3>Cause chain</h3><ul class='chain'>{chain_html}</ul>" if chain_html else ""}</div>
{f"<div class='card'><h2>Headline numbers</h2><div class='numbers'>{numbers}</div></div>" if numbers else ""}
{gpu_time_card(inc, esc)}
<div class="card"><h2>Overview</h2>{figure}</div>
<div class="card"><h2>Pages</h2><ul class="pages">{page_items}</ul></div>
</body></html>
"""
