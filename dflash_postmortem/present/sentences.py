"""Every sentence the kit says about an incident, and the one way each number is written.

- Formatters: `clock` (times on the incident's UTC clock), `duration`, `tok_s` (throughput),
  `gpu_hours`; every page, sentence and terminal line writes its numbers through them, so the
  report index, the notebooks and `inspect` say "4,786 s" and "146.8K tok/s" alike.
- What happened: the incident in at most five sentences, cause first (`what_happened`), and what
  the evidence was (`sources_line`, under the report index's title).
- Headlines: each notebook's one-line answer (`headline_text`, `levels_text`, `restart_text`,
  `recovery_text`, `effects_text`: the cells tests/notebook_headlines.json holds).
- What a notebook shows instead of a table it has no evidence for (`Missing`), and findings to
  read one by one (`verdicts`).
- The terminal: what `dflash-postmortem inspect` prints (`render_inspect`: the incident and its
  span, `format_for_terminal`: what happened, the cause chain, findings, timeline, impact, then
  `render_load_report`: one line per file), wrapped to the terminal's width and redacted.

Every number is the finding's own, so every page says the same.
"""

from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass

import pandas as pd

from ..analysis.throughput_levels import band_crossings, recovery, regression
from ..analysis.timeline import Timeline, timeline
from ..detect import detect
from ..incident import Incident
from ..model.attempts import attempts
from ..model.ledger import CLASSES, SHOWN_S, ledger
from ..model.notes import reading_notes
from ..schema import TOK_PER_S
from ..units import clock, duration, gpu_hours, share, tok_s, tokens
from .evidence_views import cited_line
from .redact import redact

MAX_SENTENCES = 5


# --- the formatters live in units.py (detect's titles use them too) ------------------------------

def _missing(value) -> bool:
    return value is None or pd.isna(value)


# A table cell longer than this is cut where it is shown (notebook.frame_html), with an ellipsis and
# the whole text on hover; the tables themselves keep the whole text.
CELL_CHARS = 160


def one_line(value, limit: int | None = None) -> str:
    """Evidence text for a label or a cell: one line, at most `limit` characters (an ellipsis
    where cut; no limit: the whole text, on one line)."""
    s = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    s = " ".join(s.split())
    return s[: limit - 1] + "…" if limit is not None and len(s) > limit else s


def gpu_label(host, gpu, many_hosts: bool) -> str:
    """`GPU 3`, or `host:GPU 3` where the incident has several hosts."""
    g = "GPU ?" if pd.isna(gpu) else f"GPU {int(gpu)}"
    return f"{host}:{g}" if many_hosts and isinstance(host, str) else g


# --- what a notebook shows instead of a table, and findings to read one by one ---------------------

@dataclass
class Missing:
    """What a notebook shows instead of a table or number it has no evidence for."""

    text: str

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f'<p class="pm-missing" style="color:#666;font-style:italic">{html.escape(self.text)}</p>'


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def html_text(escaped: str) -> str:
    """An escaped sentence for HTML: its `code` spans (commands, lines quoted from the
    evidence) in code style instead of between backticks."""
    return _CODE_SPAN.sub(r"<code>\1</code>", escaped)


@dataclass
class Sentences:
    """Sentences to read (what happened, how the evidence was read): in HTML a list wrapped at
    words, the commands they quote in code style; as text one per line."""

    lines: list[str]

    def __repr__(self) -> str:
        return "\n".join(self.lines)

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html_text(html.escape(s))}</li>" for s in self.lines)
        return f"<ul class='pm-sentences' style='margin:.3em 0 1em 1.2em;padding:0;line-height:1.5'>{items}</ul>"


@dataclass
class Claims:
    """Findings to read one by one: a heading, the full explanation, the evidence lines. Evidence
    text is escaped here, so a log line holding markup shows as text."""

    items: list[tuple[str, str, list[str]]]

    def __repr__(self) -> str:
        return "\n\n".join(f"{h}\n  {body}\n  evidence: {', '.join(ev)}" for h, body, ev in self.items)

    def _repr_html_(self) -> str:
        esc = html.escape
        return "".join(
            f"<div class='pm-claim' style='margin:0 0 1em 0'><strong>{html_text(esc(h))}</strong>"
            f"<p style='margin:.3em 0'>{html_text(esc(body))}</p>"
            f"<p style='margin:0;font-size:90%'>evidence: {', '.join(f'<code>{esc(e)}</code>' for e in ev) or 'none cited'}</p></div>"
            for h, body, ev in self.items)


RESTART_KINDS = ("failed_restart", "slow_start", "stale_process")


def verdicts(findings: pd.DataFrame, kinds=RESTART_KINDS) -> Claims | Missing:
    """Restart verdicts with their full explanation and the exact evidence lines."""
    hit = findings[findings["kind"].isin(kinds)]
    if hit.empty:
        return Missing("no failed restart: every launch came up")
    # a title that names its time already ("restart at 05:23:01 never came up") is not prefixed with it
    return Claims([(r.title if clock(r.start) in r.title else f"{clock(r.start)} {r.title}", str(r.detail),
                    list(r.evidence)) for r in hit.itertuples()])


# --- what happened -----------------------------------------------------------------------------
# The sentences follow the findings' cause graph in time order: the first sign with its cause (the
# flags that changed, the thread that died), what the operator's actions did or failed to do (a
# kill that stopped nothing, a restart that never came up and why, with the missing path or the
# stale PID), how far the relaunch came back and why not further, and when it recovered, with
# what it cost.

def _when(t) -> str:
    return clock(t, utc=True, missing="?")


def _k(v: float) -> str:
    return f"{tok_s(v)} tok/s"


def _of(findings: pd.DataFrame, *kinds: str) -> pd.DataFrame:
    return findings[findings["kind"].isin(kinds)] if len(findings) else findings


def _first(findings: pd.DataFrame, *kinds: str) -> pd.Series | None:
    """The earliest finding of any of `kinds`."""
    hit = _of(findings, *kinds)
    return None if hit.empty else hit.iloc[0]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _first_sign(f: pd.Series) -> str:
    n = f["numbers"]
    if f["kind"] == "throughput_regression":
        where = (f"when run {n['run_after']} replaced run {n['run_before']}" if n.get("across_runs")
                 else f"within run {n['run_after']}")
        flags = n.get("flag_differences") or []
        why = f", started with {' '.join(flags)}" if flags else ""
        others = [c for c in n.get("candidates", []) if not c.startswith("configuration differs")]
        if not flags and others:
            why = f"; likely cause: {others[0]}"
        return (f"At {_when(f['start'])} throughput fell from {_k(n['baseline_tok_per_s'])} to "
                f"{_k(n['degraded_tok_per_s'])} ({n['ratio']:.2f} of baseline) {where}{why}.")
    if f["kind"] == "stall":
        cause = f", after {n['traceback']}" if n.get("traceback") else ""
        held = (f"; PID {', '.join(map(str, n['holders']))} held its memory" if n.get("holders") else "")
        return (f"At {_when(f['start'])} training stalled: no step for {duration(n['seconds'])} at ~0 % GPU "
                f"utilization{cause}{held}.")
    if f["kind"] == "never_trained":
        mem = n.get("memory_mib") or []
        creep = (f" while its GPU memory crept from {mem[0][1] / 1024:,.1f} to {mem[-1][1] / 1024:,.1f} GiB"
                 if len(mem) >= 2 and mem[-1][1] > mem[0][1] else "")
        return (f"At {_when(f['start'])} run {n.get('run') or '?'} was launched and never reached training: "
                f"it stayed at `{n['last_stage']}` for {duration(n['seconds_in_stage'])}{creep}.")
    return f"At {_when(f['start'])} {f['title']}."


def _kill(f: pd.Series, survivor: pd.Series | None) -> str:
    text = f"At {_when(f['start'])} the kill meant to stop PID {f['numbers']['pid']} failed (`{f['numbers'].get('message', '?')}`)"
    if f["numbers"].get("group"):
        text += ": the PID file named a process, not a process group"
    if survivor is not None:
        mem = survivor["numbers"].get("memory_mib_by_gpu") or {}
        gpus = ", ".join(f"GPU {g}" for g in sorted(mem)) or "its GPUs"
        text += f"; PID {f['numbers']['pid']} kept running on {gpus} until {_when(survivor['end'])}"
    return text + "."


def _restarts(failed: pd.DataFrame, stale: pd.DataFrame) -> str:
    first = failed.iloc[0]
    why = first["detail"].split(". Checks:")[0]
    word = "start" if str(first["title"]).startswith("start ") else "restart"
    text = f"The {word} at {_when(first['start'])} never came up: {why}"
    if len(failed) > 1:
        more = [f"{_when(r['start'])} ({r['numbers'].get('reason', '?')})" for _, r in failed.iloc[1:].iterrows()]
        text += f"; so did the one{'s' if len(more) > 1 else ''} at " + ", ".join(more)
    holders = {c["id"] for cs in failed["caused_by"] for c in cs}
    counted = stale[~stale["id"].isin(holders)] if len(stale) else stale
    if len(counted):
        pids = ", ".join(str(p["numbers"]["pid"]) for _, p in counted.iterrows())
        text += (f"; the stale python process{'es' if len(counted) > 1 else ''} {pids}, older than the launch, "
                 "made a process count look like it was running")
    return text + "."


def _partial(f: pd.Series) -> str:
    n = f["numbers"]
    reasons = n.get("reasons") or []
    because = f" because {reasons[0]}" if reasons else " (no reason in the evidence)"
    return (f"The relaunch at {_when(f['start'])} trained at only {_k(n['level_tok_per_s'])} "
            f"({n['ratio']:.2f} of baseline){because}.")


def _recovery(f: pd.Series, cost: dict | None) -> str:
    n = f["numbers"]
    ttr = n.get("time_to_recover_s")
    text = (f"Throughput recovered to {_k(n['level_tok_per_s'])} ({n['ratio']:.2f} of baseline) at {_when(f['start'])}"
            + (f", {duration(ttr)} after the {'stall' if n.get('episode') == 'stall' else 'drop'} began"
               if ttr is not None else ""))
    fix = [c for c in f["caused_by"] if str(c["id"]).startswith("event:") and "stopped" in c["why"]]
    if fix:
        text += f", once {fix[0]['why']}"
    return text + _lost(cost) + "."


def _lost(cost: dict | None) -> str:
    if not cost:
        return ""
    parts = []
    if not _missing(cost.get("gpu_hours_lost")):
        parts.append(f"{gpu_hours(cost['gpu_hours_lost'])} GPU-hours")
    if not _missing(cost.get("tokens_lost")):
        parts.append(f"{tokens(cost['tokens_lost'])} tokens")
    return ("; lost: " + " and ".join(parts)) if parts else ""


def what_happened(inc: Incident, findings: pd.DataFrame | None, impact: dict | None = None) -> list[str]:
    """The incident in at most five sentences, cause first, each with its time; `impact` (the
    timeline's) adds what it cost."""
    first, last = inc.span()
    if findings is None or findings.empty:
        return [_nothing_found(inc, first, last)]
    out = []
    sign = _first(findings, "throughput_regression", "stall", "never_trained")
    if sign is not None:
        out.append(_first_sign(sign))
    # what happened next, in the order it happened (a crash loop alternates deaths and restarts)
    timed = [(died["start"], _death(died)) for _, died in _of(findings, "training_died").iterrows()]
    kill = _first(findings, "kill_failed")
    if kill is not None:
        timed.append((kill["start"], _kill(kill, _first(findings, "survivor"))))
    failed = _of(findings, "failed_restart")
    if len(failed):
        timed.append((failed["start"].min(), _restarts(failed, _of(findings, "stale_process"))))
        up = _came_up(inc, failed["start"].max())
        if up is not None and not len(_of(findings, "recovery", "partial_recovery", "verified_start")):
            timed.append(up)
    out += [said for _, said in sorted(timed, key=lambda x: x[0])]
    partial = _first(findings, "partial_recovery")
    rec = _first(findings, "recovery")
    if partial is not None and (rec is None or partial["start"] < rec["start"]):
        out.append(_partial(partial))
    verified = _of(findings, "verified_start")
    if rec is not None:
        out.append(_recovery(rec, impact))
    elif partial is None and sign is not None and sign["kind"] == "never_trained" and len(verified):
        v = verified.iloc[-1]
        out.append(f"The relaunch at {_when(v['start'])} came up, checked by dflash-postmortem launch; its first "
                   f"step was logged at {_when(v['end'])}.")
    elif partial is None and sign is not None:
        out.append("It had not recovered when the evidence ends" + _lost(impact) + ".")
    if sign is None and not out:
        out.append(_cap(findings.iloc[0]["title"]) + f" at {_when(findings.iloc[0]['start'])}.")
    return out[:MAX_SENTENCES]


_STARTED_BY = {"supervisor": "its supervisor", "agent": "the launcher's agent", "scheduler": "the scheduler",
               "operator": "the operator", "container": "the container runtime", "script": "a script"}


def _came_up(inc: Incident, after) -> tuple | None:
    """(when, sentence) for the first start after `after` that reached a training step."""
    att = attempts(inc)
    later = att[(att["start"] > after) & att["first_step"].notna()]
    if later.empty:
        return None
    a = later.iloc[0]
    who = f" by {_STARTED_BY[a['by']]}" if a["by"] in _STARTED_BY else ""
    return a["start"], (f"The start at {_when(a['start'])}{who} came up: its first step was logged at "
                        f"{_when(a['first_step'])}.")


# What a row of each frame is, in a sentence
_ROWS = {"metrics": "metric value", "events": "event", "gpus": "GPU sample", "processes": "process",
         "gpu_processes": "per-process GPU sample"}


def _nothing_found(inc: Incident, first, last) -> str:
    """No finding: "nothing went wrong" only where the evidence shows training that ran; else
    what was seen and what was not."""
    files = len(inc.load_report.files) if inc.load_report else 0
    read = f"{files} file{'' if files == 1 else 's'}"
    if not any(len(df) for df in inc.frames().values()):
        return f"No evidence to tell from: {read} read, none with a row (no step, GPU sample, process or event)."
    att = attempts(inc)
    if att.empty or att["first_step"].isna().all():
        seen = [f"{len(df):,} {_ROWS[name]}{'' if len(df) == 1 else 's'}" for name, df in inc.frames().items() if len(df)]
        return (f"No training seen in {read}: no training step between {_when(first)} and {_when(last)} "
                f"({', '.join(seen)}), so nothing can be said of how it went.")
    return (f"Nothing went wrong that the evidence shows between {_when(first)} and {_when(last)}: "
            "no throughput regression, stall, failed restart or start that never trained.")


def _death(f: pd.Series) -> str:
    """A run that died of an error while training, and what started it again."""
    n = f["numbers"]
    rank = f" on rank {n['error_rank']}" if n.get("error_rank") is not None else ""
    since = f", {duration(n['silent_s'])} after its last step" if n.get("hung") else ""
    said = f"At {_when(f['start'])} run {n['run'] or '?'} died while training{rank}{since}: {n['error'] or 'an error'}."
    if n.get("restarted_at") is None or pd.isna(n.get("restarted_at")):
        return said + " Nothing started it again."
    who = _STARTED_BY.get(n.get("restarted_by"), "a new start")
    said += f" It was started again at {_when(n['restarted_at'])} by {who}"
    if n.get("resumed_step") is not None:
        said += (f", resuming from a checkpoint at step {n['resumed_step']}: it had logged step {n['reached_step']}, "
                 f"so {n['redone_steps']} steps were done again")
    return said + "."


def sources_line(inc: Incident) -> str:
    """What the evidence was, in one line (the report index's, under its title)."""
    rep = inc.load_report
    return f"{len(rep.loaded)} source files loaded, {len(rep.failed)} could not be read, {len(rep.unrecognised)} not recognised"


# --- the notebooks' one-line headlines (the cells nbval checks; see docs/report.md) --------------

NO_THROUGHPUT = f"no data from training logs or wandb runs ({TOK_PER_S})"


def headline_text(findings: pd.DataFrame) -> str:
    """Baseline, degraded and recovered throughput, each with its ratio to the baseline."""
    reg = regression(findings)
    if reg is None:
        return "no throughput regression found"
    n = reg["numbers"]
    line = f"baseline {tok_s(n['baseline_tok_per_s'])} tok/s -> degraded {tok_s(n['degraded_tok_per_s'])} tok/s ({n['ratio']:.2f})"
    rec = recovery(findings)
    if rec is not None and "level_tok_per_s" in rec["numbers"]:
        line += f" -> {rec['kind'].replace('_', ' ')} {tok_s(rec['numbers']['level_tok_per_s'])} tok/s ({rec['numbers']['ratio']:.2f})"
    return line


def levels_text(segments: pd.DataFrame) -> str:
    """The level changes that cross the baseline band, with their times."""
    if segments.empty:
        return NO_THROUGHPUT
    changes = band_crossings(segments)
    if changes.empty:
        return f"no change in or out of the baseline band ({len(segments)} level segments)"
    return "baseline band crossed: " + ", ".join(f"{tok_s(c.before)} -> {tok_s(c.level)} tok/s at {clock(c.start)}"
                                                 for c in changes.itertuples())


def restart_text(findings: pd.DataFrame) -> str:
    """How many restarts failed (and why), started slowly, or were faked by a stale process."""
    failed = findings[findings["kind"] == "failed_restart"]
    reasons = sorted({str(n.get("reason")) for n in failed["numbers"]})
    return (f"failed restarts: {len(failed)}" + (f" ({', '.join(reasons)})" if reasons else "")
            + f"; slow starts: {int((findings['kind'] == 'slow_start').sum())}"
            + f"; stale processes: {int((findings['kind'] == 'stale_process').sum())}")


def recovery_text(findings: pd.DataFrame) -> str:
    """The recovery finding's title: full, partial, or none."""
    rec = recovery(findings)
    if rec is None:
        rec = _first(findings, "no_recovery")
    return "no throughput drop, nothing to recover from" if rec is None else str(rec["title"])


def effects_text(effects: pd.DataFrame) -> str:
    """Each replay run's median tok/s and its ratio to the baseline run (`detect.replay_ab`)."""
    if effects.empty:
        return "no data from replay runs: no knob varied between runs with throughput samples"
    parts = []
    for r in effects.itertuples():
        what = "baseline" if r.note == "baseline" else r.change
        parts.append(f"{r.run} ({what}): {tok_s(r.median_tok_per_s)} ({r.vs_baseline:.2f}x)")
    return "; ".join(parts)


# --- the terminal: `dflash-postmortem inspect` ---------------------------------------------------
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


def _cause_chain(page: _Page, findings: pd.DataFrame) -> None:
    linked = findings[findings["caused_by"].map(len) > 0]
    if linked.empty:
        return
    page.blank()
    page.para("Cause chain")
    for f in linked.itertuples():
        page.para(f.id, 2)
        for c in f.caused_by:
            page.para(f"<- {c['id']}: {c['why']}", 4, 7)
            page.refs(list(c["evidence"]), 7)


def _findings(page: _Page, findings: pd.DataFrame, cited: dict[str, str] | None) -> None:
    page.blank()
    page.para(f"Findings ({len(findings)})")
    if findings.empty:
        page.para("none", 2)
    for f in findings.itertuples():
        page.para(f"[{f.severity}] {clock(f.start, date=True)} {f.kind}: {f.title}", 2, 6)
        if cited is None:
            page.refs(list(f.evidence), 6)
            continue
        page.para(f.detail, 6, 6)
        label_width = max((len(r) for r in f.evidence), default=0)
        for ref in f.evidence:
            page.row(ref, cited.get(ref, ""), label_width, 8)


def _timeline(page: _Page, tl: Timeline) -> None:
    page.blank()
    page.para("Timeline (UTC)")
    for e in tl.events.itertuples():
        page.row(f"{clock(e.time)}  {e.phase:<16}", e.what, 26)


def _impact(page: _Page, i: dict) -> None:
    page.blank()
    page.para("Impact")
    page.para(f"time to detect {duration(i.get('time_to_detect_s'))}, to mitigate "
              f"{duration(i.get('time_to_mitigate_s'))}, to recover {duration(i.get('time_to_recover_s'))}", 2, 4)
    if i.get("gpu_hours_lost") is not None:
        lost = (f"; tokens lost {tokens(i['tokens_lost'])} against {_k(i['baseline_tok_per_s'])}"
                if i.get("tokens_lost") is not None else "; tokens lost: no baseline rate (expected_tok_per_s)")
        page.para(f"{i['gpus_held']} GPUs held ({i['gpus_held_from']}); GPU-hours lost "
                  f"{gpu_hours(i['gpu_hours_lost'])} of {gpu_hours(i['gpu_hours_held'])} held{lost}", 2, 4)


def gpu_time_lines(inc: Incident) -> list[str]:
    """Where each GPU's time went over the incident window (`model.ledger`), one line per GPU
    naming every class it spent a second in: `GPU 0 (75 s): productive 49 s (65%), ...`."""
    led = ledger(inc)
    many = led["host"].nunique() > 1
    lines: dict[str, list[str]] = {}  # GPUs whose time went the same way share a line
    for r in led.itertuples():
        said = ", ".join(f"{c} {share(getattr(r, c), r.total)}" for c in CLASSES if getattr(r, c) >= SHOWN_S)
        lines.setdefault(f"({duration(r.total)}): {said}", []).append(gpu_label(r.host, r.gpu, many))
    return [f"{gpus[0] if len(gpus) == 1 else ', '.join(gpus) + ' each'} {said}" for said, gpus in lines.items()]


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
    _cause_chain(page, findings)
    refs = [r for ev in findings["evidence"] for r in ev]
    _findings(page, findings, cited_lines(inc, refs) if verbose else None)
    _timeline(page, tl)
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
                   width: int = TERMINAL_WIDTH, redacted: bool = True) -> str:
    """Everything `dflash-postmortem inspect` prints: the incident and its span, the story
    (`format_for_terminal`), then the load report (`render_load_report`), `width` columns wide and
    redacted unless `redacted` is false."""
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
