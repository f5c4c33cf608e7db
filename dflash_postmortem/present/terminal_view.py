"""The terminal: what `dflash-postmortem inspect` prints, the sentences of sentences.py laid out
for a terminal (`render_inspect`: the incident and its span; `format_for_terminal`: what
happened, the cause chain, the findings, the timeline, the impact and where the GPU time went;
`render_load_report`: one line per file), every line wrapped to the terminal's width and
redacted.
"""

from __future__ import annotations

import re
import textwrap

import pandas as pd

from ..analysis.timeline import Timeline, timeline
from ..detect import detect
from ..incident import Incident
from ..model.notes import reading_notes
from ..units import clock, count, duration, gpu_hours, rate, tokens
from .evidence_views import cited_line
from .redact import redact
from .sentences import CELL_CHARS, gpu_time_lines, one_line, what_happened

# What happened, the cause chain, the findings, the timeline and the impact come first; then one
# line per file of the load report. Every line fits `width`: evidence is wrapped at word
# boundaries with a hanging indent, never cut; only a file path used as a label is shortened
# (with "…"), and `verbose` shows it whole, with each file's skipped lines, assumptions and notes,
# the clock offsets, the frames, each finding's detail and the text of every line it cites.

TERMINAL_WIDTH = 100  # columns when the output is not a terminal and COLUMNS is not set
MIN_WIDTH = 40  # narrower than this, hanging indents would leave no room for the text
MIN_COLUMN = 40  # a value column narrower than this goes under its label instead
ELLIPSIS = "…"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but tab and newline, which wrapping turns into spaces


class _Page:
    """Lines for a terminal `width` columns wide. Every text is redacted (unless `redacted` is
    false) before it is wrapped, so a mask never pushes a line past the edge and no secret is
    split across two lines where the redaction could not see it."""

    def __init__(self, width: int, redacted: bool = True):
        self.width = max(MIN_WIDTH, width)
        self.redacted = redacted
        self.lines: list[str] = []

    def clean(self, value) -> str:
        s = "" if value is None else str(value)
        # Control characters from the evidence (a colour code, a carriage return) would move the
        # cursor or recolour the user's terminal: shown as escapes, so nothing is lost.
        s = _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), s)
        return redact(s) if self.redacted else s

    def blank(self) -> None:
        self.lines.append("")

    def para(self, value, indent: int = 0, hang: int | None = None) -> None:
        """`value` wrapped at word boundaries; lines after the first indented by `hang`."""
        hang = indent + 2 if hang is None else hang
        self.lines.extend(_wrap(self.clean(value), self.width, indent, hang))

    def row(self, label: str, value, label_width: int, indent: int = 2) -> None:
        """`label` in a column `label_width` wide, `value` wrapped in the column after it. A label
        wider than its column, or a value column narrower than MIN_COLUMN, and the value goes on
        the lines under the label instead."""
        label = self.clean(label)
        col = indent + label_width + 2
        text = self.clean(value)
        if len(label) > label_width or self.width - col < MIN_COLUMN:
            at = min(indent, max(0, self.width - len(label)))  # left of `indent` rather than broken
            self.lines.extend(_wrap(label, self.width, at, indent + 4))
            self.lines.extend(_wrap(text, self.width, indent + 4, indent + 6))
            return
        lines = _wrap(text, self.width - col, 0, 0) or [""]
        self.lines.append((" " * indent + label.ljust(label_width) + "  " + lines[0]).rstrip())
        self.lines.extend(" " * col + line for line in lines[1:])

    def refs(self, refs: list[str], indent: int, lead: str = "evidence: ") -> None:
        """`file:line` references packed into lines after `lead`, each one whole on one line."""
        col = indent + len(lead)
        pieces = [self.clean(r) + "," for r in refs[:-1]] + [self.clean(r) for r in refs[-1:]]
        line, empty = " " * indent + lead, True
        for piece in pieces:
            if len(line) + (0 if empty else 1) + len(piece) > self.width:
                if not empty or line.strip():
                    self._add(line.rstrip(), col)
                # Under the first reference where it fits, further left where a narrow terminal
                # would otherwise break one.
                line, empty = " " * min(col, max(0, self.width - len(piece))), True
            line += ("" if empty else " ") + piece
            empty = False
        if not empty:
            self._add(line, col)

    def _add(self, line: str, hang: int) -> None:
        # A reference longer than a whole line is the one thing broken, onto the next line.
        self.lines.extend(_wrap(line, self.width, 0, hang) if len(line) > self.width else [line])

    def text(self) -> str:
        return "\n".join(self.lines)


def _wrap(text: str, width: int, indent: int, hang: int) -> list[str]:
    # Hyphens stay joined (`--fast-linear-attn`); a word longer than a whole line is the only
    # thing ever broken, and it continues on the next line.
    return textwrap.wrap(text, width, initial_indent=" " * indent, subsequent_indent=" " * hang,
                         break_on_hyphens=False, break_long_words=True)


def shorten_label(label: str, limit: int) -> str:
    """`label` in at most `limit` characters: an ellipsis, then its end (a path's file name and the
    folders nearest it, which tell paths apart) where it is longer."""
    if len(label) <= limit:
        return label
    return ELLIPSIS + label[len(label) - (limit - 1):]


def _header(page: _Page, inc: Incident) -> None:
    first, last = inc.span()
    page.para(f"Incident: {inc.title}")
    page.para(f"Span: {_stamp(first)} .. {_stamp(last)} (sources without a zone read as {inc.config.timezone})")


def _file_status(f, verbose: bool) -> str:
    """One file in one line: its format, the rows it gave and the lines it skipped, or why it
    could not be read."""
    if f.format is None and f.error:
        return f"could not be read: {f.error}"
    if f.format is None:
        return "not recognised: " + ("; ".join(f.notes) or "no known format")
    if f.error:
        return f"{f.format}: FAILED: {f.error}"
    rows = ", ".join(f"{k} {v}" for k, v in sorted(f.rows.items())) or "no rows"
    status = f"{f.format}: {rows}"
    if verbose:
        status += f"; {f.read} {f.unit}s, {f.parsed} parsed, {f.n_skipped} skipped"
        if f.start is not None:
            status += f"; {_stamp(f.start)} .. {_stamp(f.end)}"
    elif f.n_skipped:
        status += f"; {f.n_skipped} of {f.read} {f.unit}s skipped"
    return status


def _file_details(page: _Page, f, indent: int, debug: bool, verbose: bool) -> None:
    if debug and f.trace:
        for t in f.trace.rstrip().splitlines():
            page.para(f"| {t}", indent, indent + 2)
    if not verbose:
        return
    for reason, n in f.skipped.most_common():
        where = ", ".join(str(x) for x in f.examples.get(reason, []))
        page.para(f"skipped {n}: {reason}" + (f" (lines {where})" if where else ""), indent)
    for a in f.assumptions:
        page.para(f"assumed: {a}", indent)
    if f.format is not None:
        for note in f.notes:
            page.para(f"note: {note}", indent)


def _files(page: _Page, inc: Incident, verbose: bool, debug: bool) -> None:
    rep = inc.load_report
    page.para(f"Files in {inc.root}: {len(rep.files)} — {len(rep.loaded)} loaded, {len(rep.failed)} failed, "
              f"{len(rep.unrecognised)} not recognised")
    longest = max((len(f.path) for f in rep.files), default=10)
    # A path column no wider than a third of the line leaves the rest for the status; verbose
    # paths are whole, and where the status would be too narrow beside them it goes under them.
    label_width = longest if verbose else min(longest, max(16, page.width // 3))
    stacked = page.width - label_width - 4 < MIN_COLUMN
    for f in rep.files:
        path = f.path if verbose else shorten_label(f.path, page.width - 2 if stacked else label_width)
        page.row(path, _file_status(f, verbose), label_width)
        _file_details(page, f, 6, debug, verbose)


def render_load_report(inc: Incident, verbose: bool = False, debug: bool = False, *,
                       width: int = TERMINAL_WIDTH, redacted: bool = True) -> str:
    """What was loaded, one line per file (the reason where a file could not be read); with
    `verbose` also what was skipped and why, what was assumed, the clock offsets and the frames."""
    page = _Page(width, redacted)
    _files(page, inc, verbose, debug)
    if verbose:
        _load_details(page, inc)
    return page.text()


def _load_details(page: _Page, inc: Incident) -> None:
    said = reading_notes(inc)
    if said:
        page.blank()
        page.para("How the evidence was read:")
        for note in said:
            page.para(note, 2, 4)
    if inc.load_report.offsets:
        page.blank()
        page.para("Clock offsets applied:")
        for src, sec in inc.load_report.offsets.items():
            page.para(f"{src}: {sec:+.3f} s", 2, 6)
    page.blank()
    page.para("Frames:")
    for name, df in inc.frames().items():
        page.para(f"{name:<14} {len(df):>8} rows", 2)


def _stamp(t) -> str:
    return clock(t, date=True, utc=True, missing="-")


def cited_lines(inc: Incident, refs) -> dict[str, str]:
    """The text of each `file:line` the findings cite (`evidence.cited_line`: in the file's own
    encoding); a ref whose file is gone or binary (a .wandb log numbers records) has none. Not
    masked here: the terminal masks whatever it prints, unless told not to."""
    if inc.root is None:
        return {}
    # A single file inspected alone is its own incident; its refs are relative to its folder.
    root = inc.root if inc.root.is_dir() else inc.root.parent
    found = {ref: cited_line(root, ref, redacted=False) for ref in dict.fromkeys(refs)}
    return {ref: text for ref, text in found.items() if text is not None}


def _what_happened(page: _Page, inc: Incident, findings: pd.DataFrame, tl: Timeline) -> None:
    page.para("What happened")
    for line in what_happened(inc, findings, tl.impact):
        page.para(line, 2, 4)


def _cause_chain(page: _Page, findings: pd.DataFrame, verbose: bool = False) -> None:
    linked = findings[findings["caused_by"].map(len) > 0]
    if linked.empty:
        return
    page.blank()
    page.para("Cause chain")
    for f in linked.itertuples():
        page.para(f.id, 2)
        for c in f.caused_by:
            page.para(f"<- {c['id']}: {c['why'] if verbose else one_line(c['why'], CELL_CHARS)}", 4, 7)
            page.refs(list(c["evidence"]), 7)


def _findings(page: _Page, findings: pd.DataFrame, cited: dict[str, str] | None) -> None:
    page.blank()
    page.para(f"Findings ({len(findings)})")
    if findings.empty:
        page.para("none", 2)
    for f in findings.itertuples():
        # a title longer than a table cell is cut the way a cell is (the detail and -v have it whole)
        title = f.title if cited is not None else one_line(f.title, CELL_CHARS)
        page.para(f"[{f.severity}] {clock(f.start, date=True)} {f.kind}: {title}", 2, 6)
        if cited is None:
            page.refs(list(f.evidence), 6)
            continue
        page.para(f.detail, 6, 6)
        label_width = max((len(r) for r in f.evidence), default=0)
        for ref in f.evidence:
            page.row(ref, cited.get(ref, ""), label_width, 8)


def _timeline(page: _Page, tl: Timeline, verbose: bool = False) -> None:
    page.blank()
    page.para("Timeline (UTC)")
    for e in tl.events.itertuples():
        page.row(f"{clock(e.time)}  {e.phase:<16}", e.what if verbose else one_line(e.what, CELL_CHARS), 26)


def _impact(page: _Page, i: dict) -> None:
    page.blank()
    page.para("Impact")
    page.para(f"time to detect {duration(i.get('time_to_detect_s'))}, to mitigate "
              f"{duration(i.get('time_to_mitigate_s'))}, to recover {duration(i.get('time_to_recover_s'))}", 2, 4)
    if i.get("gpu_hours_lost") is not None:
        u = i.get("unit") or "tok/s"
        what = "tokens" if u == "tok/s" else "steps"
        n = i.get(f"{what}_lost")
        lost = (f"; {what} lost {tokens(n)} against {rate(i['baseline_tok_per_s'], u)}" if n is not None
                else "; tokens lost: no baseline rate (expected_tok_per_s)")
        page.para(f"{count(i['gpus_held'], 'GPU')} held ({i['gpus_held_from']}); GPU-hours lost "
                  f"{gpu_hours(i['gpu_hours_lost'])} of {gpu_hours(i['gpu_hours_held'])} held{lost}", 2, 4)


def _gpu_time(page: _Page, inc: Incident) -> None:
    lines = gpu_time_lines(inc)
    if not lines:
        return
    page.blank()
    page.para("Where the GPU time went")
    for line in lines:
        page.para(line, 2, 4)


def _story(page: _Page, inc: Incident, findings: pd.DataFrame, tl: Timeline, verbose: bool) -> None:
    _what_happened(page, inc, findings, tl)
    _cause_chain(page, findings, verbose)
    refs = [r for ev in findings["evidence"] for r in ev]
    _findings(page, findings, cited_lines(inc, refs) if verbose else None)
    _timeline(page, tl, verbose)
    _impact(page, tl.impact)
    _gpu_time(page, inc)


def format_for_terminal(incident: Incident, findings: pd.DataFrame | None = None,
                        tl: Timeline | None = None, width: int = TERMINAL_WIDTH, *,
                        verbose: bool = False, redacted: bool = True) -> str:
    """What happened, the cause chain, the findings (with `verbose` their detail and the text of
    each cited line), the timeline and the impact, `width` columns wide."""
    if findings is None:
        findings = detect(incident)
    if tl is None:
        tl = timeline(incident, findings)
    page = _Page(width, redacted)
    _story(page, incident, findings, tl, verbose)
    return page.text()


def render_inspect(inc: Incident, verbose: bool = False, debug: bool = False, *,
                   width: int = TERMINAL_WIDTH, redacted: bool = True, findings: pd.DataFrame | None = None) -> str:
    """Everything `dflash-postmortem inspect` prints: the incident and its span, the story
    (`format_for_terminal`), then the load report (`render_load_report`), `width` columns wide and
    redacted unless `redacted` is false. `findings`: `detect(inc)` where the caller has it already
    (a page at several widths, a notebook), else detected here."""
    if findings is None:
        findings = detect(inc)
    page = _Page(width, redacted)
    _header(page, inc)
    page.blank()
    _story(page, inc, findings, timeline(inc, findings), verbose)
    page.blank()
    _files(page, inc, verbose, debug)
    if verbose:
        _load_details(page, inc)
    else:
        page.blank()
        page.para("-v shows every file's skipped lines, assumptions and notes, the clock offsets, the frames, "
                  "and each finding's detail with the text of the lines it cites.", 0, 3)
    return page.text()
