"""Every sentence the kit says about an incident, and the one way each number is written.

- Formatters: `clock` (times on the incident's UTC clock), `duration`, `tok_s` (throughput),
  `gpu_hours`; every page, sentence and terminal line writes its numbers through them, so the
  report index, the notebooks and `inspect` say "4,786 s" and "146.8K tok/s" alike.
- What happened: the incident in at most five sentences, cause first (`what_happened`), and the
  report index's summary (`summary_lines`).
- Headlines: each notebook's one-line answer (`headline_text`, `levels_text`, `restart_text`,
  `recovery_text`, `effects_text`: the cells tests/notebook_headlines.json holds).
- What a notebook shows instead of a table it has no evidence for (`Missing`), and findings to
  read one by one (`verdicts`).
- The terminal: what `dflash-postmortem inspect` prints (`render_inspect`: the load report, then
  `format_for_terminal`: what happened, the cause chain, findings, timeline, impact).

Every number is the finding's own, so every page says the same.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import pandas as pd

from .detect import detect
from .detect.levels import band_crossings, recovery, regression
from .incident import Incident
from .schema import TOK_PER_S
from .timeline import Timeline, timeline
from .timeline import impact as timeline_impact
from .units import clock, duration, gpu_hours, tok_s

MAX_SENTENCES = 5


# --- the formatters live in units.py (detect's titles use them too) ------------------------------

def _missing(value) -> bool:
    return value is None or pd.isna(value)


def one_line(value, limit: int) -> str:
    """Evidence text for a label: one line, at most `limit` characters (an ellipsis where cut)."""
    s = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    s = " ".join(s.split())
    return s[: limit - 1] + "…" if len(s) > limit else s


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
            f"<div class='pm-claim' style='margin:0 0 1em 0'><strong>{esc(h)}</strong><p style='margin:.3em 0'>{esc(body)}</p>"
            f"<p style='margin:0;font-size:90%'>evidence: {', '.join(f'<code>{esc(e)}</code>' for e in ev) or 'none cited'}</p></div>"
            for h, body, ev in self.items)


RESTART_KINDS = ("failed_restart", "slow_start", "stale_process")


def verdicts(findings: pd.DataFrame, kinds=RESTART_KINDS) -> Claims | Missing:
    """Restart verdicts with their full explanation and the exact evidence lines."""
    hit = findings[findings["kind"].isin(kinds)]
    if hit.empty:
        return Missing("no failed restart: every launch came up")
    return Claims([(f"{clock(r.start)} {r.title}", str(r.detail), list(r.evidence)) for r in hit.itertuples()])


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
    text = f"The restart at {_when(first['start'])} never came up: {why}"
    if len(failed) > 1:
        more = [f"{_when(r['start'])} ({r['numbers'].get('reason', '?')})" for _, r in failed.iloc[1:].iterrows()]
        text += f"; so did the one{'s' if len(more) > 1 else ''} at " + ", ".join(more)
    if len(stale):
        pids = ", ".join(str(p["numbers"]["pid"]) for _, p in stale.iterrows())
        text += (f"; the stale python process{'es' if len(stale) > 1 else ''} {pids}, older than the launch, "
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
        parts.append(f"{cost['tokens_lost']:,.0f} tokens")
    return ("; lost: " + " and ".join(parts)) if parts else ""


def what_happened(inc: Incident, findings: pd.DataFrame | None, impact: dict | None = None) -> list[str]:
    """The incident in at most five sentences, cause first, each with its time; `impact` (the
    timeline's) adds what it cost."""
    first, last = inc.span()
    if findings is None or findings.empty:
        return [f"Nothing went wrong that the evidence shows between {_when(first)} and {_when(last)}: "
                "no throughput regression, stall, failed restart or start that never trained."]
    out = []
    sign = _first(findings, "throughput_regression", "stall", "never_trained")
    if sign is not None:
        out.append(_first_sign(sign))
    kill = _first(findings, "kill_failed")
    if kill is not None:
        survivor = _first(findings, "survivor")
        out.append(_kill(kill, survivor))
    failed = _of(findings, "failed_restart")
    if len(failed):
        out.append(_restarts(failed, _of(findings, "stale_process")))
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


def summary_lines(inc: Incident, findings: pd.DataFrame | None = None) -> list[str]:
    """The report index's summary: what happened, then what the evidence was."""
    if findings is None:
        findings = detect(inc)
    lines = what_happened(inc, findings, timeline_impact(inc, findings))
    rep = inc.load_report
    lines.append(
        f"{len(rep.loaded)} source files loaded, {len(rep.failed)} could not be read, {len(rep.unrecognised)} not recognised."
    )
    return lines


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

def render_load_report(inc: Incident, verbose: bool = False, debug: bool = False) -> str:
    """What was loaded, what was skipped and why, per file; the frames and the span."""
    rep = inc.load_report
    lines = [f"Incident: {inc.title}", f"Root: {inc.root}", f"Clock: UTC (sources without a zone read as {inc.config.timezone})", ""]
    lines.append(f"Files: {len(rep.files)} — {len(rep.loaded)} loaded, {len(rep.failed)} failed, {len(rep.unrecognised)} not recognised")
    width = max((len(f.path) for f in rep.files), default=10)
    for f in rep.files:
        if f.format is None and f.error:
            status = f"could not be read: {f.error}"
        elif f.format is None:
            status = "not recognised: " + ("; ".join(f.notes) or "no known format")
        elif f.error:
            status = f"{f.format or 'not read'}: FAILED: {f.error}"
        else:
            rows = ", ".join(f"{k} {v}" for k, v in sorted(f.rows.items())) or "no rows"
            status = f"{f.format}: {f.read} {f.unit}s, {f.parsed} parsed, {f.n_skipped} skipped -> {rows}"
            if f.start is not None:
                status += f"  [{_stamp(f.start)} .. {_stamp(f.end)}]"
        lines.append(f"  {f.path:<{width}}  {status}")
        if debug and f.trace:
            lines.extend(f"  {'':<{width}}    | {t}" for t in f.trace.rstrip().splitlines())
        if verbose or f.error is None:
            for reason, n in f.skipped.most_common():
                where = ", ".join(str(x) for x in f.examples.get(reason, []))
                if verbose or not reason.startswith(("header", "blank")):
                    lines.append(f"  {'':<{width}}    skipped {n}: {reason}" + (f" (lines {where})" if verbose and where else ""))
            for a in f.assumptions:
                lines.append(f"  {'':<{width}}    assumed: {a}")
            if f.format is not None:
                for note in f.notes:
                    lines.append(f"  {'':<{width}}    note: {note}")
    if rep.offsets:
        lines.append("")
        lines.append("Clock offsets applied:")
        for src, sec in rep.offsets.items():
            lines.append(f"  {src}: {sec:+.3f} s")
    lines.append("")
    lines.append("Frames:")
    for name, df in inc.frames().items():
        lines.append(f"  {name:<14} {len(df):>8} rows")
    first, last = inc.span()
    lines.append(f"Span: {_stamp(first)} .. {_stamp(last)}")
    return "\n".join(lines)


def _stamp(t) -> str:
    return clock(t, date=True, utc=True, missing="-")


def format_for_terminal(incident: Incident, findings: pd.DataFrame | None = None,
                        tl: Timeline | None = None, width: int = 110) -> str:
    """Findings, timeline and impact as plain text for `dflash-postmortem inspect`."""
    if findings is None:
        findings = detect(incident)
    if tl is None:
        tl = timeline(incident, findings)
    out = ["What happened"]
    out += [f"  {line}" for line in what_happened(incident, findings, tl.impact)]
    out.append("")
    linked = findings[findings["caused_by"].map(len) > 0]
    if len(linked):
        out.append("Cause chain")
        for f in linked.itertuples():
            out.append(f"  {f.id}")
            for c in f.caused_by:
                out.append(f"    <- {c['id']}: {c['why']}")
                for ref in c["evidence"][:3]:
                    out.append(f"         {ref}")
        out.append("")
    out.append(f"Findings ({len(findings)})")
    if findings.empty:
        out.append("  none")
    for f in findings.itertuples():
        out.append(f"  [{f.severity}] {clock(f.start, date=True)} {f.kind}: {f.title}"[:width])
        for ref in f.evidence[:4]:
            out.append(f"      {ref}")
    out.append("")
    out.append("Timeline (UTC)")
    for e in tl.events.itertuples():
        out.append(f"  {clock(e.time)}  {e.phase:<16} {e.what}"[:width])
    i = tl.impact
    out.append("")
    out.append("Impact")
    out.append(f"  time to detect {duration(i.get('time_to_detect_s'))}, to mitigate "
               f"{duration(i.get('time_to_mitigate_s'))}, to recover {duration(i.get('time_to_recover_s'))}")
    if i.get("gpu_hours_lost") is not None:
        tokens = (f"; tokens lost {i['tokens_lost']:,.0f} against {_k(i['baseline_tok_per_s'])}"
                  if i.get("tokens_lost") is not None else "; tokens lost: no baseline rate (expected_tok_per_s)")
        out.append(f"  {i['gpus_held']} GPUs held ({i['gpus_held_from']}); GPU-hours lost "
                   f"{gpu_hours(i['gpu_hours_lost'])} of {gpu_hours(i['gpu_hours_held'])} held{tokens}")
    return "\n".join(out)


def render_inspect(inc: Incident, verbose: bool = False, debug: bool = False) -> str:
    """Everything `dflash-postmortem inspect` prints: the load report, then the findings."""
    return render_load_report(inc, verbose, debug) + "\n\n" + format_for_terminal(inc, detect(inc))
