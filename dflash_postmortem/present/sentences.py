"""Every sentence the kit says about an incident, and the one way each number is written.

- Numbers through units.py's one formatter each (`clock`, `duration`, `tok_s`, `gpu_hours`,
  `tokens`), so the report index, the notebooks and `inspect` say "4,786 s" and "146.8K tok/s"
  alike.
- What happened: the incident in at most five sentences, cause first (`what_happened`), and what
  the evidence was (`sources_line`, under the report index's title).
- Headlines: each notebook's one-line answer (`headline_text`, `levels_text`, `restart_text`,
  `recovery_text`, `effects_text`: the cells tests/notebook_headlines.json holds).
- What a notebook shows instead of a table it has no evidence for (`Missing`), and findings to
  read one by one (`verdicts`).
- Where each GPU's time went, one line per GPU (`gpu_time_lines`).

The terminal lays these out for `inspect` (terminal_view.py). A finding's own title and detail are
written where findings are made (detect/finding_text.py), from the same numbers these read.

Every number is the finding's own, so every page says the same.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import pandas as pd

from ..analysis.throughput_levels import band_crossings, recovery, regression
from ..detect.finding_text import became, interrupted_loop, ranks_text, started_again
from ..detect.findings import in_file_order
from ..detect.interrupts import loop_of
from ..error_meanings import meaning
from ..incident import Incident
from ..model.attempts import attempts, came_up_after, open_ended, stopped_cleanly_near
from ..model.ledger import CLASSES, SHOWN_S, ledger
from ..model.log_files import unseen
from ..model.own_timings import dated_change, largest, largest_change
from ..model.pace import pace_rows
from ..model.progress import LINES_PER_WINDOW, last_step, placed_together, resumes, steps_of
from ..model.step_lines import SAVED_STEP, counted
from ..said import error_text, waiting_in
from ..schema import TOK_PER_S, column, ref_lines
from ..shell_words import SIGNAL_SENDERS
from ..units import (
    clock,
    clock_within,
    count,
    duration,
    gpu_hours,
    is_missing,
    rate,
    share,
    tok_s,
    tokens,
)

MAX_SENTENCES = 5


# --- the formatters live in units.py (detect's titles use them too) ------------------------------

# A table cell longer than this is cut where it is shown (notebook.frame_html), with an ellipsis and
# the whole text on hover; the tables themselves keep the whole text.
CELL_CHARS = 160


def one_line(value, limit: int | None = None) -> str:
    """Evidence text for a label or a cell: one line, at most `limit` characters (an ellipsis
    where cut; no limit: the whole text, on one line)."""
    s = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    s = " ".join(s.split())
    if limit is None or len(s) <= limit:
        return s
    kept = s[: limit - 1]
    # a cut inside a quoted span (`RuntimeError: ...`) closes it: no backtick is left raw
    return kept[:-1] + "…`" if kept.count("`") % 2 else kept + "…"


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
class Headline:
    """A page's one-line answer: in HTML a paragraph in bold, wrapped at words, what it quotes in
    code style; as text the line itself (what tests/notebook_headlines.json holds)."""

    line: str

    def __repr__(self) -> str:
        return self.line

    def _repr_html_(self) -> str:
        return (f"<p class='pm-headline' style='font-weight:600;margin:.3em 0 1em 0;line-height:1.5'>"
                f"{html_text(html.escape(self.line))}</p>")


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

def _when(t, within_s=None) -> str:
    return clock_within(t, within_s, utc=True, missing="?")


def _k(v: float, n: dict) -> str:
    """A level in its finding's unit (`numbers["unit"]`; findings older than steps/s have none)."""
    return rate(v, n.get("unit") or "tok/s")


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
        where = ((f"when {started_again(n['run_after'], n.get('run_after_launch'))}"
                  if n["run_after"] == n["run_before"] else f"when run {n['run_after']} replaced run {n['run_before']}")
                 if n.get("across_runs") else f"within run {n['run_after']}")
        flags = n.get("flag_differences") or []
        why = f", started with {' '.join(flags)}" if flags else ""
        others = [c for c in n.get("candidates", []) if not c.startswith("configuration differs")]
        # else what another finding showed caused it (a GPU of the host setting the job's pace)
        linked = [c["why"] for c in f.get("caused_by") or [] if not str(c["id"]).startswith(("event:", "config:"))]
        if not flags and (others or linked):
            why = f"; likely cause: {(others or linked)[0]}"
        if n.get("gradual"):
            # (no one moment: the pace fell line after line; the finding begins where it stayed
            # below the baseline by the least drop a regression is)
            return (f"Throughput fell steadily {where}, line after line: from {_k(n['baseline_tok_per_s'], n)} "
                    f"at its first lines to {_k(n['degraded_tok_per_s'], n)} at its last ({n['ratio']:.2f} of "
                    f"baseline), lastingly below the baseline from {_when(f['start'])}{why}.")
        return (f"At {_when(f['start'])} throughput fell from {_k(n['baseline_tok_per_s'], n)} to "
                f"{_k(n['degraded_tok_per_s'], n)} ({n['ratio']:.2f} of baseline) {where}{why}.")
    if f["kind"] == "stall":
        # what came before the silence: the error's last line, else what shows the job stopped
        cause = f", after {n['traceback']}" if n.get("traceback") else \
            (f": the job was stopped, {n['cause']}" if n.get("stopped") else
             f": {n['cause']}" if n.get("saving") else "")
        held = (f"; PID {', '.join(map(str, n['holders']))} held its memory" if n.get("holders") else "")
        idle = " at ~0 % GPU utilization" if n["idle"] else f" while {n['alive']} was alive"
        ended = ("" if n.get("interrupted") is None else
                 f", until an interrupt (Ctrl-C) stopped it at {_when(f['end'])}"
                 + (f", {n['interrupted']}" if n["interrupted"] else "")) + \
            (f", until a kill stopped it at {_when(f['end'])} ({n['killed']})" if n.get("killed") else "")
        return f"At {_when(f['start'])} training stalled: no step for {duration(n['seconds'])}{idle}{cause}{ended}{held}."
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
        # (on the GPUs its memory was seen on; where no sample shows any, where it ran is not said)
        where = f" on {', '.join(f'GPU {g}' for g in sorted(mem))}" if mem else ""
        text += f"; PID {f['numbers']['pid']} kept running{where} until {_when(survivor['end'])}"
    return text + "."


def _restarts(failed: pd.DataFrame, stale: pd.DataFrame) -> str:
    first = failed.iloc[0]
    why = first["numbers"]["why"]
    word = "start" if first["numbers"]["first_start"] else "restart"
    text = f"The {word} at {_when(first['start'])} never came up: {why}"
    if len(failed) > 1:
        more = [f"{_when(r['start'])} ({r['numbers'].get('reason', '?')})" for _, r in failed.iloc[1:].iterrows()]
        text += f"; so did the one{'s' if len(more) > 1 else ''} at " + ", ".join(more)
    quits = [r["numbers"] for _, r in failed.iterrows() if r["numbers"].get("gave_up")]
    if quits:
        last = max(q["gave_up_at"] for q in quits)
        more = f", and on {count(len(quits) - 1, 'other')} by {_when(last)}" if len(quits) > 1 else ""
        text += f"; its supervisor then gave up at {_when(quits[0]['gave_up_at'])} (`{quits[0]['gave_up']}`){more}"
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
    return (f"The relaunch at {_when(f['start'])} trained at only {_k(n['level_tok_per_s'], n)} "
            f"({n['ratio']:.2f} of baseline){because}.")


def _recovery(f: pd.Series, cost: dict | None) -> str:
    n = f["numbers"]
    ttr = n.get("time_to_recover_s")
    text = (f"Throughput recovered to {_k(n['level_tok_per_s'], n)} ({n['ratio']:.2f} of baseline) at {_when(f['start'])}"
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
    if not is_missing(cost.get("gpu_hours_lost")):
        parts.append(f"{gpu_hours(cost['gpu_hours_lost'])} GPU-hours")
    if not is_missing(cost.get("tokens_lost")):
        parts.append(f"{tokens(cost['tokens_lost'])} tokens")
    if not is_missing(cost.get("steps_lost")):
        parts.append(f"{tokens(cost['steps_lost'])} steps")
    return ("; lost: " + " and ".join(parts)) if parts else ""


def what_happened(inc: Incident, findings: pd.DataFrame | None, impact: dict | None = None) -> list[str]:
    """The incident in at most five sentences, cause first, each with its time; `impact` (the
    timeline's) adds what it cost."""
    first, last = inc.span()
    if findings is None or findings.empty:
        return [_nothing_found(inc, first, last)] + [said for _, said in _unseen(inc)][: MAX_SENTENCES - 1]
    out = []
    sign = _first(findings, "throughput_regression", "stall", "never_trained")
    # what happened, in the order it happened (a crash loop alternates deaths and restarts; a
    # run that died and came back slower died first)
    sign_said = None if sign is None else _first_sign(sign)
    timed = [] if sign is None else [(sign["start"], sign_said)]
    # and the first of each other kind of loss, where it came later (a run that slowed, then hung)
    timed += [(f["start"], _first_sign(f)) for kind in ("throughput_regression", "stall", "never_trained")
              if sign is not None and kind != sign["kind"] and (f := _first(findings, kind)) is not None
              and f["start"] > sign["start"]]
    timed += [(died["start"], _death(died)) for _, died in _of(findings, "training_died", "time_limit", "stopped_by_signal").iterrows()]
    timed += [(died["start"], _unplaced_death(died)) for _, died in _of(findings, "process_died").iterrows()]
    lost = _of(findings, "loss_not_finite")
    timed += [(f["start"], _not_finite(f)) for _, f in lost.iterrows()]
    timed += _finite_again(lost)
    timed += [(left["start"], _lingered(left)) for _, left in _of(findings, "lingering").iterrows()]
    timed += [(f["start"], f"At {_when(f['start'])} {interrupted_loop(f['numbers'])}.")
              for _, f in _of(findings, "interrupt_went_on").iterrows()]
    timed += _unseen(inc)
    kill = _first(findings, "kill_failed")
    if kill is not None:
        timed.append((kill["start"], _kill(kill, _first(findings, "survivor"))))
    failed = _of(findings, "failed_restart")
    if len(failed):
        timed.append((failed["start"].min(), _restarts(failed, _of(findings, "stale_process"))))
        up = _came_up(inc, failed["start"].max())
        if up is not None and not len(_of(findings, "recovery", "partial_recovery", "verified_start")):
            timed.append(up)
    told = [said for _, said in sorted(timed, key=lambda x: x[0])]
    if sign_said is not None and told.index(sign_said) >= MAX_SENTENCES - 1:
        # so much came before it (a crash loop's deaths) that it would be cut: it leads
        told.remove(sign_said)
        told.insert(0, sign_said)
    out += told
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
    elif partial is None and sign is not None and sign["kind"] == "stall" and \
            (stopped := stopped_cleanly_near(inc, sign["end"])) is not None:
        out.append(f"Then the run stopped by itself at {_when(stopped)}" + _lost(impact) + ".")
    elif partial is None and sign is not None and sign["kind"] == "stall" and impact and impact.get("recovered_what") \
            and (up := came_up_after(inc, sign["start"])) is not None:
        # a start after the stall trained back past it, where no pace shows a level
        # (analysis/timeline.py): when it started is known, when it passed that step may not be
        out.append(f"It was started again at {_when(up['start'])} and trained {impact['recovered_what']}" + _lost(impact) + ".")
    elif partial is None and sign is not None and sign["kind"] == "stall" and sign["numbers"].get("last_step_time") \
            and _no_pace_before(inc, sign["start"]) and (up := came_up_after(inc, sign["start"])) is not None:
        # (no pace before the stall to measure a recovery against: its run's log is not in the
        # incident; a start after it trained)
        out.append(f"It was started again at {_when(up['start'])}, which trained from {_when(up['first_step'])}"
                   + _lost(impact) + ".")
    elif partial is None and sign is not None:
        out.append("It had not recovered when the evidence ends" + _lost(impact) + ".")
    if sign is None and not out:
        f = findings.iloc[0]
        # (a title that names its own time, "slow start after launch at 05:09:57", is not dated
        # twice; one nothing dates says so itself)
        dated = pd.isna(f["start"]) or f"{f['start']:%H:%M:%S}" in str(f["title"])
        out.append(_cap(f["title"]) + ("." if dated else f" at {_when(f['start'])}."))
    return out[:MAX_SENTENCES]


def _unseen(inc: Incident) -> list[tuple]:
    """(when, sentence) for each start no finding can judge: its log is not in the incident, and
    its GPU was at work or nothing covers its time (model/log_files.py unseen); and how it ended, where it did."""
    out = []
    for _, a in attempts(inc).iterrows():
        if pd.isna(a["first_step"]) and (seen := unseen(inc, a)) is not None:
            how = (f", killed by {a['signal']}" if isinstance(a["signal"], str) else
                   f", with exit status {int(a['exit_code'])}" if pd.notna(a["exit_code"]) else "")
            ended = f"; it ended at {_when(a['end'])}{how}" if pd.notna(a["end"]) else ""
            # (a launch typed before anything in the evidence dates: named by what it ran)
            start = f"The start at {_when(a['start'])}" if pd.notna(a["start"]) else \
                f"The launch of {a['script'] or 'a command'} ({a['launch_ref'] or a['start_ref']})"
            out.append((a["start"], f"{start} cannot be judged: {seen}{ended}."))
    return out


_STARTED_BY = {"supervisor": "its supervisor", "agent": "the launcher's agent", "scheduler": "the scheduler",
               "operator": "the operator", "container": "the container runtime", "script": "a script"}


def _came_up(inc: Incident, after) -> tuple | None:
    """(when, sentence) for the first start after `after` that reached a training step."""
    a = came_up_after(inc, after)
    if a is None:
        return None
    who = f" by {_STARTED_BY[a['by']]}" if a["by"] in _STARTED_BY else ""
    steps = steps_of(inc, a)
    if placed_together(steps):  # (its steps' one time is its launch's: model/progress.py)
        return a["start"], f"The start at {_when(a['start'])}{who} came up: its log holds its steps, though no line of it carries a time."
    first = steps.iloc[0] if len(steps) else None
    if first is not None and first["metric"] == SAVED_STEP:  # (no step line of it is left: model/step_lines.py)
        return a["start"], (f"The start at {_when(a['start'])}{who} came up: it saved a checkpoint at step "
                            f"{int(first['step'])} at {_when(first['time'])}{_redoing(inc, a)}.")
    return a["start"], (f"The start at {_when(a['start'])}{who} came up: its first step was logged at "
                        f"{_when(a['first_step'])}{_redoing(inc, a)}.")


def _redoing(inc: Incident, a: pd.Series) -> str:
    """What a start that came up did again: the steps between where it began and the step its
    job had logged before (model/progress.py `resumes`), where it began below that."""
    redo = resumes(inc)
    r = redo[redo["attempt"] == a["attempt"]]
    if r.empty:
        return ""
    r = r.iloc[0]
    began = (f"it resumed from a checkpoint at step {r['resumed_step']}" if r["said"]
             else f"its steps began again at step {r['resumed_step']}")
    return (f"; {began}, below step {r['reached_step']} that its job had logged, so {r['redone_steps']} steps were done "
            + ("again" if r["caught_up"] else f"again, and it had not passed step {r['reached_step']} when the evidence ends"))


# What a row of each frame is, in a sentence
_ROWS = {"metrics": "metric value", "events": "event", "gpus": "GPU sample", "processes": "process",
         "gpu_processes": "per-process GPU sample"}


# GPU memory this much of the card held at 0 % utilization is a loaded program doing nothing (a
# CUDA context takes a few hundred MiB, a desktop's display server a GiB or two); this many MiB
# where a sample gives no total
_HELD_SHARE, _HELD_MIB, _HELD_FLOOR_MIB = 0.25, 4096.0, 1024.0


def _held_idle(gpus: pd.DataFrame) -> str | None:
    """GPUs that hold memory at 0 % utilization in every sample, where no training is seen: a
    program that loaded its model and waits, hangs, or outlived its run (nvidia-smi's answer
    alone says which of these it is not)."""
    need = {"gpu", "memory_used_mib", "util_gpu_pct"}
    if gpus.empty or not need <= set(gpus.columns):
        return None
    g = gpus.dropna(subset=["gpu", "memory_used_mib", "util_gpu_pct"])
    if g.empty:
        return None
    g = g.assign(total=column(g, "memory_total_mib"))
    keys = ["host", "gpu"] if "host" in g.columns and g["host"].notna().any() else ["gpu"]
    held = g.groupby(keys, dropna=False).agg(mib=("memory_used_mib", "min"), util=("util_gpu_pct", "max"),
                                             n=("gpu", "size"), total=("total", "max"))
    big = (held["mib"] >= _HELD_SHARE * held["total"]).where(held["total"].notna(), held["mib"] >= _HELD_MIB)
    held = held[big.astype(bool) & (held["mib"] >= _HELD_FLOOR_MIB) & (held["util"] == 0)]
    if held.empty:
        return None
    ids = [str(int(k[-1] if isinstance(k, tuple) else k)) for k in held.index]
    mib = [f"{int(v):,}" for v in held["mib"]]
    n = int(held["n"].max())
    who = f"GPU {ids[0]} held {mib[0]}" if len(ids) == 1 else f"GPUs {_and(ids)} held {_and(mib)}"
    return (f"{who} MiB at 0 % utilization "
            f"{'in its one sample' if n == 1 else f'in all {n} samples'}: memory taken and no work done, as by a "
            "program that loaded its model and waits or hangs, one that outlived its run, or one this view does not "
            "list (another container's or user's: a PID namespace hides them)")


# A process's state in its last listing that says it makes no progress while alive (ps's STAT's
# first letter), as a reader tells it
_STUCK_STATES = {
    "T": "stopped (`T`: alive, doing nothing until it gets SIGCONT: Ctrl-Z, a debugger or profiler that left it)",
    "D": "in uninterruptible sleep (`D`: waiting inside the kernel, on a driver, a device or a file system, which no "
         "signal ends)",
}


def _stuck_processes(procs: pd.DataFrame) -> str | None:
    """The listed processes whose last state says they make no progress while alive (`_STUCK_STATES`)."""
    if procs.empty or "state" not in procs.columns:
        return None
    said = []
    for letter, what in _STUCK_STATES.items():
        hit = procs[procs["state"].astype(str).str.startswith(letter)]
        if len(hit):
            pids = [f"{int(p)} ({str(c).split()[0].rsplit('/', 1)[-1]})" if isinstance(c, str) and c.strip() else str(int(p))
                    for p, c in zip(hit["pid"], column(hit, "command"), strict=True)]
            said.append(f"PID{'s' if len(pids) > 1 else ''} {_and(pids)} {'were' if len(pids) > 1 else 'was'} {what}")
    return "; ".join(said) or None


def _interrupt_said(ev: pd.DataFrame) -> tuple[str, str] | None:
    """(its words, its ref) of the first interrupt the events tell (`KeyboardInterrupt`), or None."""
    if ev.empty or "kind" not in ev.columns:
        return None
    hit = ev[(ev["kind"] == "interrupt") & ev["ref"].notna()]
    if hit.empty:
        return None
    first = in_file_order(hit).iloc[0]
    return one_line(error_text(first["message"], "interrupt") or str(first["message"]), 120), first["ref"]


def _training_begun(ev: pd.DataFrame) -> str | None:
    """` at T (`its words`, ref)` of the first line a trainer said training began with
    (`***** Running training *****`, `Starting training`), else None."""
    if ev.empty or "kind" not in ev.columns:
        return None
    hit = ev[(ev["kind"] == "training_start") & ev["ref"].notna()]
    if hit.empty:
        return None
    first = in_file_order(hit).iloc[0]
    at = f" at {_when(first['time'])}" if pd.notna(first["time"]) else ""
    return f"{at} (`{one_line(error_text(first['message'], 'training_start'), 100)}`, {first['ref']})"


def _dump_said(ev: pd.DataFrame) -> str | None:
    """`PID N (`cmd`) was waiting on X (...) in its main thread when py-spy dumped its stacks
    (ref): it was alive, not crashed` of the first live stack dump whose main thread shows a wait
    (said.waiting_in), else None."""
    if ev.empty or "kind" not in ev.columns:
        return None
    for _, d in in_file_order(ev[ev["kind"] == "stack_dump"]).iterrows():
        where = waiting_in(d.get("frames"))
        if where:
            cmd = f" (`{one_line(d['command'], 80)}`)" if isinstance(d.get("command"), str) else ""
            return (f"PID {int(d['pid'])}{cmd} was {where} in its main thread when its stacks were dumped "
                    f"({d['ref']}): it was alive, not crashed")
    return None


def _stopped_where(ev: pd.DataFrame, ref) -> str:
    """` while it was waiting on X (`code`, file:line)`: where the traceback the interrupt printed
    at `ref` shows its thread waited when the Ctrl-C came (said.waiting_in): in its data loader,
    at a lock, in a collective. (Where it was computing, the frame tells a reader nothing.)"""
    if not isinstance(ref, str) or ev.empty or "kind" not in ev.columns:
        return ""
    tb = ev[(ev["ref"] == ref) & (ev["kind"] == "traceback")]
    where = next((w for w in map(waiting_in, tb["message"]) if w), None)
    return f" while it was {where}" if where else ""


def _and(items: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _no_pace_before(inc: Incident, when) -> bool:
    """Whether no pace line comes before `when` (a stall no level before it measures)."""
    rows = pace_rows(inc)
    return rows.empty or not (rows["time"] < when).any()


def _nothing_found(inc: Incident, first, last) -> str:
    """No finding: "nothing went wrong" only where the evidence shows training that ran; else
    what was seen and what was not."""
    files = len(inc.load_report.files) if inc.load_report else 0
    read = count(files, "file")
    if not any(len(df) for df in inc.frames().values()):
        return f"No evidence to tell from: {read} read, none with a row (no step, GPU sample, process or event)."
    att = attempts(inc)
    if att.empty or att["first_step"].isna().all():
        seen = [count(len(df), _ROWS[name]) for name, df in inc.frames().items() if len(df)]
        # (a launcher script alone says where its starts write, at no time: no span to name)
        span = f" between {_when(first)} and {_when(last)}" if pd.notna(first) and pd.notna(last) else ", and none of its rows dated"
        began = _training_begun(inc.events) if att.empty or att["first_step"].isna().all() else None
        if began is not None:  # (the trainer's word that training began, then no step: a hang, or a paste cut there)
            span = f" after the trainer said training began{began}"
        said = f"No training seen in {read}: no training step{span} ({', '.join(seen)})"
        m = inc.metrics
        if len(m) and m["time"].isna().all():  # steps logged, but nothing dates them
            steps = m.loc[counted(m), "step"].dropna()
            span = f", steps {int(steps.min())} to {int(steps.max())}" if len(steps) else ""
            own = _own_times(inc)
            dates = "where they give a time of day, or a month and day, `date = \"YYYY-MM-DD\"` in incident.toml places them"
            said = f"Training seen in {read} ({', '.join(seen)}{span}) but not placed in time: nothing in the evidence dates its lines"
            # (a pace the lines say of themselves is judged without a clock)
            said += f" ({dates}). What its own step times show: {own}" if own else \
                f", so its pace and its stops cannot be judged ({dates})"
        wrong = _gone_wrong(inc.events) or _ended_in_a_traceback(inc)
        if wrong is None:
            idle = _held_idle(inc.gpus)
            if idle:
                return said + f". What its GPUs show: {idle}."
            # (where training was seen, a state one listing caught, `D` for a save's disk write, says less
            # than how it ended)
            stuck = _stuck_processes(inc.processes) if said.startswith("No training") else None
            if stuck:
                return said + f". What its processes show: {stuck}."
            dumped = _dump_said(inc.events)
            if dumped is not None:
                return said + f". What its stack shows: {dumped}."
            interrupted = _interrupt_said(inc.events)
            if interrupted is not None:
                return (said + f". What it shows: an interrupt (Ctrl-C, SIGINT) reached it{_stopped_where(inc.events, interrupted[1])}: "
                        f"`{interrupted[0]}` ({interrupted[1]}).")
            stop = _stopped_by_itself(inc.events) if said.startswith("Training") else None
            if stop is not None:
                return said + f". It stopped by itself: `{stop[0]}` ({stop[1]})."
            if began is not None and said.startswith("No training"):
                return said + ": no line shows a first step (a start that hung or stopped before it, or a log cut there)."
            return said + ("." if said.startswith("Training") else ", so nothing can be said of how it went.")
        text, ref, more, smi_error = wrong
        return (said + f". What it shows going wrong: {text.rstrip('.')} ({ref})"
                + (f", and {count(more, 'more such line')}" if more else "") + "." + _means(text, smi_error))
    ends = ("".join(_interrupted(inc, a) for _, a in att[att["end_kind"] == "interrupt"].iterrows()
                    if pd.notna(a["first_step"]))
            + "".join(_no_last_word(inc, a) for _, a in att.iterrows() if open_ended(a) and pd.notna(a["first_step"])))
    shown = _steps_shown(inc, att)
    if shown is not None:
        return shown + ends + "."
    return (f"Nothing went wrong that the evidence shows between {_when(first)} and {_when(last)}: "
            "no throughput regression, stall, failed restart or start that never trained" + ends + ".")


# Fewer dated step lines than this, or a stretch shorter than this between them, shows too little
# training to say that nothing went wrong in it (a pace, a stall need lines over time)
_FEW_STEPS, _SHORT_S = 3, 10.0
# Fewer dated step lines than two windows of the pace hold (model/progress.py) show no change of
# pace in those windows: the times between the lines are read instead.
_PACE_LINES = 2 * LINES_PER_WINDOW


def _steps_shown(inc: Incident, att: pd.DataFrame) -> str | None:
    """Where the attempts' dated step lines are too few, or too close together, to judge a pace or
    a stop by: that, in place of an all-clear over a stretch of seconds (the sentence's end left to
    the caller)."""
    times = pd.concat([steps_of(inc, a)["time"] for _, a in att.iterrows()] or [pd.Series(dtype=object)]).dropna()
    if times.empty:
        return None
    lasted = (times.max() - times.min()).total_seconds()
    lines = count(len(times), "dated step line")
    if len(times) >= _FEW_STEPS and lasted >= _SHORT_S:
        # (enough to say nothing went wrong, unless the times between its few lines show a change
        # the pace's windows are too few to: 13 s, then 46 s, then 123 s an iteration)
        grew = _dated_times(inc, att) if len(times) < _PACE_LINES else None
        if grew is None:
            return None
        return (f"Training seen between {_when(times.min())} and {_when(times.max())} ({lines}), too few to judge its "
                f"pace by windows of them; the times between them show it: {grew}")
    if lasted == 0:
        seen = f"at {_when(times.min())} ({lines}{', all at that time' if len(times) > 1 else ''})"
    else:
        seen = f"between {_when(times.min())} and {_when(times.max())} ({lines})"
    own = _own_times(inc)
    if own:
        return f"Training seen {seen}, too little of it to judge its pace or its stops by their times; its own step times show it: {own}"
    return f"Training seen {seen}, too little of it to judge its pace or its stops: nothing in it went wrong that the evidence shows"


def _own_times(inc: Incident) -> str | None:
    """What the step times a run wrote itself show of its pace (model/own_timings.py): the largest
    change, where one series has one, else None."""
    c = largest_change(inc)
    return None if c is None else _told_change(c)


def _dated_times(inc: Incident, att: pd.DataFrame) -> str | None:
    """The largest change of step time between the few dated step lines of one attempt
    (model/own_timings.py `dated_change`: the time between two starts is no step's), in words,
    else None."""
    c = largest([dated_change(inc, steps_of(inc, a)) for _, a in att.iterrows()])
    return None if c is None else _told_change(c)


def _told_change(c) -> str:
    """A change of step time (own_timings.Change) in words."""
    how = {"bar": "by its bar's elapsed time", "dated": "by the times of its lines"}.get(c.how, "as its lines state them")
    if c.ratio > 1 and c.rows_after == 1:
        return (f"at step {c.at_step:.0f} ({c.at_ref}), the last it shows, a step had taken {_seconds(c.after)}, "
                f"against {_seconds(c.before)} before ({c.first_ref}): {_times(c.ratio)} as long ({how})")
    if c.ratio > 1:
        return (f"from step {c.at_step:.0f} ({c.at_ref}) on, a step took {_seconds(c.after)}, against "
                f"{_seconds(c.before)} before ({c.first_ref}): {_times(c.ratio)} as long ({how})")
    return (f"its first steps took {_seconds(c.before)} each ({c.first_ref}), then {_seconds(c.after)} from step "
            f"{c.at_step:.0f} ({c.at_ref}) on: {_times(1 / c.ratio)} as fast ({how})")


def _times(x: float) -> str:
    """How many times: `1.6x`, `16.4x`, `7,481x`."""
    return f"{x:,.0f}x" if x >= 100 else f"{x:.1f}x"


def _seconds(x: float) -> str:
    """A step's seconds in the digits they need: `0.163 s`, `2.69 s`, `5,499 s`."""
    return f"{x:,.0f} s" if x >= 100 else f"{x:.3g} s"


def _interrupted(inc: Incident, a: pd.Series) -> str:
    """`; run X was stopped by an interrupt at T (`its line`)`, and where it was a pass of a typed
    loop that had passes left, that the loop ended with it."""
    words = error_text(a["end_message"])
    # (a traceback after Ctrl-C's `^C`, cut off before its exception line, has no words of its own)
    how = "a traceback after Ctrl-C's `^C`, cut off" if words.startswith("[traceback cut off") else f"`{words}`"
    said = f"; run {a['run'] or '?'} was stopped by an interrupt at {_when(a['end'])} ({how}){_stopped_where(inc.events, a['end_ref'])}"
    if not isinstance(a["launch_ref"], str):
        return said
    _, passes, ran = loop_of(inc, a["launch_ref"])
    att = attempts(inc)
    last = att.loc[att["launch_ref"] == a["launch_ref"], "start"].max()
    if passes is None or ran >= passes or a["start"] < last:  # (not the pass the loop ended on)
        return said
    return said + f", and with it the loop it ran in: {ran} of its {passes} passes had started"


def _no_last_word(inc: Incident, a: pd.Series) -> str:
    """`; run X (PID N) left no last word: ...`: a run whose record stops with no exit record (a
    wandb run's, written on every end its process lives to see) is no run seen to finish; a reader
    names it, and that the files cannot tell its kill from a copy taken while it ran."""
    reached = last_step(inc, a)
    step = f" after step {reached}" if reached is not None else ""
    pids = a["pids"]
    pid = f" (PID {int(pids[0])})" if isinstance(pids, list) and len(pids) == 1 else ""
    return (f"; run {a['run'] or '?'}{pid} left no last word: its record stops at {_when(a['end'])}{step} with no "
            "exit record, as a run killed, crashed hard or still running when the files were copied leaves it")


# What a reader names as gone wrong where no finding does (no training to judge): a GPU's fault
# (a kernel's Xid, nvidia-smi's "GPU is lost"), a kill (the kernel's OOM killer choosing its
# process, a cgroup's limit), a job or command that failed.
_WRONG = ("gpu_lost", "xid", "gpu_error", "oom_kill", "oom_chosen", "oom_memcg", "oom", "nccl_timeout", "timeout",
          "nccl_error", "killed", "exit", "attempt_end")
# error lines (most say nothing a reader would name) whose pattern is a fault: a CUDA error, a
# kernel out of the GPU's resources (loaders/training_log/patterns.py EXCEPTION_FACTS)
_WRONG_PATTERNS = ("cuda_error", "triton_out_of_resource", "host_out_of_memory", "shared_memory_full", "port_in_use",
                   "slurm_error", "nccl_error_in", "nccl_remote_error", "extension_lock",
                   "horovod_stall")


def _gone_wrong(ev: pd.DataFrame) -> tuple[str, str, int, str | None] | None:
    """(the first such line's words, its reference, how many more, nvidia-smi's name for it) of
    the events, or None."""
    if ev.empty or "kind" not in ev.columns:
        return None
    wrong = ev["kind"].isin(_WRONG)
    if "pattern" in ev.columns:
        wrong |= ev["pattern"].isin(_WRONG_PATTERNS).fillna(False).astype(bool)
    bad = ev[wrong.fillna(False).astype(bool) & ev["ref"].notna()]
    if "exit_code" in bad.columns:  # a status of 0, a job or container that completed: nothing went wrong
        bad = bad[~(bad["exit_code"] == 0).fillna(False).astype(bool)]
    for col in ("reason", "state", "status"):  # torchrun's SUCCEEDED, a scheduler's COMPLETED, a pod's Completed
        if col in bad.columns:
            bad = bad[~bad[col].astype("string").str.upper().isin(["SUCCEEDED", "COMPLETED"]).fillna(False).astype(bool)]
    if bad.empty:
        return None
    rank = {k: i for i, k in enumerate(_WRONG)}
    first = bad.assign(_k=bad["kind"].map(rank).fillna(len(rank))).sort_values(["_k", "time"], kind="stable").iloc[0]
    text = one_line(error_text(first["message"], first["kind"]) or first["kind"], 200)
    code = first.get("exit_code")
    if isinstance(first.get("state"), str) and isinstance(first.get("job"), str):  # a scheduler's table row
        step = first.get("step")
        text = f"job {first['job']}" + (f" step {step}" if isinstance(step, str) and step else "") + f" {first['state']}"
    elif text.isdigit() and code is not None and not pd.isna(code):  # `echo $?` printed the status alone
        signal = first.get("signal")
        text = f"exit status {int(code)}" + (f" ({signal})" if isinstance(signal, str) and signal else "")
    smi_error = first.get("smi_error")
    return text, first["ref"], len(bad) - 1, smi_error if isinstance(smi_error, str) else None


def _stopped_by_itself(ev: pd.DataFrame) -> tuple[str, str] | None:
    """(its words, its reference) of a training's own stop line (Lightning's `Trainer.fit`
    stopped: `max_epochs=1` reached., `Training finished`, an early-stopping rule's last word,
    Hugging Face's closing summary) where it is the last thing its log says, or None."""
    # (a run an interrupt stopped, which then wrote its end, did not stop by itself)
    if ev.empty or "kind" not in ev.columns or "ref" not in ev.columns or (ev["kind"] == "interrupt").any():
        return None
    told = ev[ev["ref"].notna() & ~ev["kind"].isin(("progress", "stage", "warning"))]
    told = told.assign(_at=ref_lines(told["ref"])).sort_values(["source", "_at"], kind="stable")
    last_words = told.groupby("source", sort=False).tail(1)  # each log's last word, in the order its file holds them
    stops = last_words[last_words["kind"] == "training_stop"]
    if stops.empty:
        return None
    last = stops.iloc[-1]
    # (quoted whole: its own backticks, Lightning's, taken off)
    return one_line(str(last["message"]).replace("`", "").strip(), 160), last["ref"]


def _ended_in_a_traceback(inc: Incident) -> tuple[str, str, int, None] | None:
    """(its words, its reference, 0, None) of a traceback after the last step line of the log that
    holds both, where it is the log's last word: the trainer crashed there (a traceback in
    mid-log, a warning's or a handled one, says nothing a reader would name). A traceback cut
    off before its exception is named by its last frame's code."""
    ev, m = inc.events, inc.metrics
    if ev.empty or m.empty or "ref" not in m.columns:
        return None
    # (a KeyboardInterrupt's is an interrupt, no crash)
    crashed = (ev["kind"] == "traceback") & (column(ev, "pattern") != "KeyboardInterrupt").fillna(True).astype(bool)
    for source, mine in ev[crashed].groupby("source", sort=False):
        last = ref_lines(m.loc[m["source"] == source, "ref"]).max()
        after = ref_lines(ev.loc[ev["source"] == source, "ref"])
        tb = mine.loc[ref_lines(mine["ref"]) == after.max()]
        # (a traceback glued after a bar on its line, `0/522 [00:00<?, ?it/s]Traceback ...`, follows it)
        if pd.isna(last) or tb.empty or after.max() < last:
            continue
        text = error_text(tb["message"].iloc[0], "traceback")
        if text.startswith("[traceback cut off"):
            code = [ln.strip() for ln in str(tb["message"].iloc[0]).splitlines()[1:]
                    if ln.strip() and not ln.strip().startswith(("File ", "[traceback"))]
            text = "a traceback cut off before its exception" + (f", last in `{code[-1]}`" if code else "")
        return one_line(text, 200), tb["ref"].iloc[0], 0, None
    return None


def _waited_for(n: dict) -> str:
    """Of a hang, then an error: what the rank that erred waited for, as the evidence shows it (a
    rank's own log silent since the last step; a rank that logged no error of its own and that
    the launcher stopped)."""
    said = ""
    logs = n.get("silent_logs") or []
    if logs:
        said += f" {', '.join(logs)} wrote nothing after that step."
    ranks = n.get("stopped_ranks") or []
    if ranks:
        which = f"Rank{'s' if len(ranks) > 1 else ''} {ranks_text(ranks)}"
        said += f" {which} logged no error of {'their' if len(ranks) > 1 else 'its'} own before the launcher stopped {'them' if len(ranks) > 1 else 'it'}."
    return said


def _stopped(n: dict) -> str:
    """The processes the launcher stopped as it gave up (a death's `stopped_pids`), unless the
    ranks it stopped are told already (`_waited_for`)."""
    pids = [] if n.get("stopped_ranks") else n.get("stopped_pids") or []
    return f" The launcher then stopped PID{'s' if len(pids) > 1 else ''} {ranks_text(pids)}." if pids else ""


def _memory_before(m: dict) -> str:
    """How its GPU memory went before it ran out: climbing step after step, or steady until one
    request asked for more."""
    if m["climbed"]:
        return (f" Its GPU memory had climbed while it trained, from {m['from_mib'] / 1024:,.1f} GiB at "
                f"{_when(m['from_time'])} to {m['to_mib'] / 1024:,.1f} GiB at {_when(m['to_time'])}: memory kept "
                "step after step until none was left, not one request too large.")
    return (f" Its GPU memory was steady while it trained ({m['from_mib'] / 1024:,.1f} GiB at {_when(m['from_time'])}, "
            f"{m['to_mib'] / 1024:,.1f} GiB at {_when(m['to_time'])}): one request asked for more than was free.")


def _death(f: pd.Series) -> str:
    """A run that died of an error while training (or that a limit on its time stopped), and
    what started it again."""
    n = f["numbers"]
    rank = f" on rank {n['error_rank']}" if n.get("error_rank") is not None else ""
    since = f", {duration(n['silent_s'])} after its last step" if n.get("hung") else ""
    what = "was stopped by its time limit" if f["kind"] == "time_limit" else "died"
    doing = {"saving": "saving a checkpoint", "evaluating": "evaluating"}.get(n.get("doing"), "training")
    # (a time the line took from the one before it: the death was then or later)
    later = " or later" if n.get("lent_at") else ""
    head, error = f"At {_when(f['start'], f.get('within_s'))}{later} run {n['run'] or '?'}", (n["error"] or "an error").rstrip(".")
    if f["kind"] == "stopped_by_signal":
        # a stop asked of it from outside its shell (a preemption handler, a scheduler, a watchdog)
        said = f"{head} was stopped while {doing} by a signal sent from outside its shell (`{error}`)."
        if n.get("saved"):
            said += f" It saved a checkpoint at step {n['saved'][0]:,} at {_when(n['saved'][1])} before it ended."
    elif n.get("thread"):
        # a thread's traceback is all that ends it: its process may have lived on (a stall)
        said = (f"{head} stopped training when its thread {n['thread']} raised{rank}: {error}. Its log says nothing "
                "after that, and nothing in the evidence shows whether its process lived on.")
    else:
        said = f"{head} {what} while {doing}{rank}{since}: {error}.{_means(error)}{_waited(n)}"
    if n.get("bar_stopped"):
        said += f" Its training bar had stopped at step {n['bar_stopped'][0]:,} of {n['bar_stopped'][1]:,}."
    if n.get("memory_before"):
        said += _memory_before(n["memory_before"])
    if n.get("disk_full"):
        said += f" `df` at {_when(n['disk_full_at'])} showed a full file system: {n['disk_full']}."
    said += _waited_for(n) + _stopped(n)
    if n.get("gave_up"):
        said += f" Its supervisor then gave up at {_when(n['gave_up_at'])} (`{n['gave_up']}`)."
    if n.get("restarted_at") is None or pd.isna(n.get("restarted_at")):
        return said + " Nothing started it again."
    who = _STARTED_BY.get(n.get("restarted_by"), "a new start")
    said += f" It was started again at {_when(n['restarted_at'])} by {who}"
    if n.get("resumed_step") is not None and n.get("reached_step") is None:
        said += f", resuming from a checkpoint at step {n['resumed_step']}: no step was done again"
    elif n.get("resumed_step") is not None:
        said += (f", resuming from a checkpoint at step {n['resumed_step']}: it had logged step {n['reached_step']}, "
                 f"so {n['redone_steps']} steps were done again")
    return said + "."


def _lingered(f: pd.Series) -> str:
    """A run that finished whose process did not exit, what it held, and what ended it."""
    n = f["numbers"]
    who = f"PID {n['pid']}" if n.get("pid") is not None else "its process"
    said = (f"Run {n['run'] or '?'} finished at {_when(f['start'])} ({n['stop_line']}), but {who} did not exit: "
            f"it lived on for {duration(n['seconds'])}")
    held = n.get("holder_mib") or {}
    if held:
        gpus = n.get("gpus") or []
        said += (f", holding {sum(held.values()) / 1024:,.1f} GiB of "
                 + (f"GPU {ranks_text(gpus)}" if gpus else "GPU memory")
                 + (" at ~0 % utilization" if n.get("idle") else ""))
    if n.get("end_message"):
        how = "it was killed at " if n.get("end_kind") in ("kill_sent", "killed", "oom_kill") else ""
        return said + f", until {how}{_when(f['end'])}: {n['end_message']}."
    return said + f"; it was last seen alive at {_when(f['end'])}."


def _unplaced_death(f: pd.Series) -> str:
    """A process's death in a log that holds no launch of its run and no step the kit could place
    (a pasted error)."""
    n = f["numbers"]
    ranks = n.get("ranks") or []
    who = f"on rank{'s' if len(ranks) > 1 else ''} {ranks_text(ranks)}" if ranks else ""
    # (a shell's report names the command it ran: `python train.py` died, not "a process")
    what = "processes" if len(ranks) > 1 else f"`{n['command']}`" if n.get("command") else "a process"
    # (a time the line took from the one before it: the death was then or later)
    later = " or later" if n.get("lent_at") else ""
    said = f"At {_when(f['start'], f.get('within_s'))}{later} {what}" if pd.notna(f["start"]) else _cap(what)
    steps = n.get("steps_logged") or 0
    ran = f" (its progress bar had run {_bar_clock(n['bar_ran_s'])})" if n.get("bar_ran_s") else ""
    # (what the kit knows: no launch of the run it could tie these lines to; the log may say what
    # the process did before, a resume or a checkpoint's load, in lines no reader names)
    command = n.get("command")
    held = (f"{n['source']} holds {count(steps, 'step line')}, up to step {n['last_step']}{ran}, but no launch of "
            "its run" + (" and no time to place them" if pd.isna(f["start"]) else "")) if steps else \
        f"{n['source']} holds no training step of it" if command else \
        f"{n['source']} holds no training step and no launch of its run"
    doing = {"saving": " while saving a checkpoint", "evaluating": " while evaluating"}.get(n.get("doing"), "")
    error = (n["error"] or "an error").rstrip(".")
    killed = n.get("killed") or []
    if n.get("error_kind") == "oom_kill" and killed:
        # the OOM killer's lines name its victims: who died, and of what, before its words
        when = f"At {_when(f['start'], f.get('within_s'))} " if pd.notna(f["start"]) else ""
        victims = _and(killed)
        return (f"{when}{victims} {'was' if len(killed) == 1 else 'were'} killed by the OOM killer (out of memory): "
                f"{error}. {held}.")
    if n.get("why_unknown"):
        # a launcher's teardown alone (`Killing subprocess 250621`, ...): that it stopped them is
        # all its lines say; what failed, if anything did, is not in them
        pids = n["stopped_pids"]
        when = f"At {_when(f['start'], f.get('within_s'))} the" if pd.notna(f["start"]) else "The"
        why = " after Ctrl-C was pressed (the terminal's `^C` before its line)" if n.get("ctrl_c") else "; no line says why"
        return f"{when} launcher stopped PID{'s' if len(pids) > 1 else ''} {ranks_text(pids)}{why}. {held}."
    if n.get("launcher_signalled"):
        # the launcher was told to stop, from outside: what the signal means is why it stopped
        signal = n.get("signal") or "a signal"
        when = f"At {_when(f['start'], f.get('within_s'))} the" if pd.notna(f["start"]) else "The"
        pids = n.get("stopped_pids") or []
        stopped = f", and stopped PID{'s' if len(pids) > 1 else ''} {ranks_text(pids)}" if pids else ""
        return f"{when} launcher was stopped by {signal}{SIGNAL_SENDERS.get(signal, '')}: `{error}`{stopped}. {held}."
    return (f"{said} {who + ' ' if who else ''}died{doing}: {error}.{_means(error)}{_held_by(n)}{_waited(n)}{_stopped(n)}"
            f"{_sender_unknown(n)}{_started_again(n)} {held}.")


def _held_by(n: dict) -> str:
    """Another process that held more of the GPU than the one that ran out (its OOM says so)."""
    if n.get("others_mib"):
        return (f" Other programs held {n['others_mib'] / 1024:,.2f} GiB of the GPU (its capacity less what was free "
                f"and this process's {n['own_mib'] / 1024:,.2f} GiB): what filled the GPU was not this run.")
    if not n.get("held_by"):
        return ""
    held = ", ".join(f"PID {pid} ({size})" for pid, _, size in (h.partition(": ") for h in n["held_by"].split(", ")))
    return (f" Another process held more of the GPU than this one: {held}, against {n['own_mib'] / 1024:,.2f} GiB "
            "of its own; what filled the GPU was not this run.")


def _started_again(n: dict) -> str:
    """The start a pasted log says came after a death (a launcher restarting its workers)."""
    if not n.get("started_again"):
        return ""
    words, ref = n["started_again"]
    return f" It was started again: `{one_line(words, 160)}` ({ref})."


def _means(error: str, smi_error: str | None = None) -> str:
    """What an error means beyond its words, where it is a known fault (error_meanings.py)."""
    m = meaning(error, smi_error)
    return f" It means {m}." if m else ""


def _waited(n: dict) -> str:
    """How long a collective a watchdog reports had waited, and which of its group's it was."""
    if n.get("waited_s") is None:
        return ""
    waited = duration(n["waited_s"]) if n["waited_s"] >= 1 else f"{n['waited_s'] * 1000:.0f} ms"
    said = f" The collective had waited {waited}: the hang began that long before this line"
    if n.get("lent_at"):
        # (the line's time is the last dated line's: the collective began after that line, the
        # watchdog fired its wait later)
        at = pd.Timestamp(n["lent_at"])
        said = (f" The collective had waited {waited}; this line has no time of its own (it took {_when(at)} from the "
                f"line before it), so if the collective began after that line, the watchdog fired at "
                f"{_when(at + pd.Timedelta(seconds=n['waited_s']))} or later")
    if n.get("collective") == 1:
        said = (f" The collective had waited {waited} and was its group's first: the ranks never met once, so "
                "training never began")
    if n.get("out_of_step"):
        ranks = _and([f"rank {r} in {op} #{q}" for r, op, q in n["out_of_step"]])
        said += (f". The ranks were out of step, waiting in different collectives ({ranks}): one had taken another "
                 "path (a save, an evaluation, a branch on one rank) and the others waited for it until the timeout")
    return said + "."


def _sender_unknown(n: dict) -> str:
    """Who may have sent the SIGKILL a death's line names, where none of its lines says (an OOM
    killer's line, told above, does): it comes from outside the process."""
    if n.get("died_of") != "SIGKILL":
        return ""
    if n.get("memory_said"):
        words, ref = n["memory_said"]
        return (f" The log says the machine's memory ran out (`{one_line(words, 160)}`, {ref}): the kernel's OOM "
                "killer sends SIGKILL then.")
    return (" Nothing here says who sent SIGKILL: a `kill -9`, the kernel's OOM killer (the host's kernel log "
            "names its victims) or a scheduler past its grace time.")


def _bar_clock(seconds: float) -> str:
    """Elapsed time as tqdm prints it (`2:51:14`, `04:59`): the bar's own words."""
    h, rest = divmod(int(seconds), 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"


def _not_finite(f: pd.Series) -> str:
    """A loss or gradient norm that stopped being a number, and whether it came back."""
    n = f["numbers"]
    when = f"At {_when(f['start'], f.get('within_s'))} the" if pd.notna(f["start"]) else "The"
    said = f"{when} {n['metric'].removeprefix('train/')} of run {n['run'] or '?'} {became(n['value'])}"
    said += f" at step {n['step']}" if n.get("step") is not None else ""
    if n.get("last_finite_value") is not None and n.get("last_finite_step") is not None:
        said += f" (it was {n['last_finite_value']:.4g} at step {n['last_finite_step']})"
    learning = n.get("loss_learning")
    if learning:
        # a gradient norm not measured (or overflowing) beside a loss that moved on: the run learned
        return (said + f" and stayed so, but its loss stayed a number and moved on, {learning['from']:.4g} at step "
                f"{learning['from_step']} to {learning['to']:.4g} at step {learning['to_step']}: a norm not measured "
                "(or steps an overflow skipped) beside a run that learned, not a diverged one.")
    if not n["finite_after"] and not n["lines_after"]:
        # (its last line: nothing after it says whether it came back)
        said += ", on the log's last line of it: nothing after it shows whether it came back"
    else:
        # (steps an overflow skipped only where the log shows its run scaling its loss)
        said += (": a finite value came back later" + (" (skipped steps)" if n.get("loss_scaled") else "") if n["finite_after"]
                 else f" and stayed so to the end of the log ({count(n['lines_after'], 'more line')})")
    if n.get("resumed_step") is not None:
        said += (f"; it had resumed from a checkpoint at step {n['resumed_step']}, saved after its "
                 f"{n['metric'].removeprefix('train/')} had stopped being a number at step {n['broke_at_step']}")
    if n.get("end_kind") == "killed" and n.get("ended_at") is not None:
        trained = (n["ended_at"] - f["start"]).total_seconds() if pd.notna(f["start"]) else None
        said += ("; the run trained on" + (f" for {duration(trained)}" if trained is not None and trained > 0 else "")
                 + f" until it was stopped at {_when(n['ended_at'])}" + (f": {n['ended_by']}" if n.get("ended_by") else ""))
    elif n.get("end_kind") == "stopped" and n.get("ended_at") is not None:
        said += f"; the run trained on to its own stop at {_when(n['ended_at'])}"
    return said + "."


def _finite_again(lost: pd.DataFrame) -> list[tuple]:
    """(when, sentence) for each run whose metric was a number again in a later start, told once
    (every break before it names the same line)."""
    out, told = [], set()
    for _, f in lost.iloc[::-1].iterrows():
        n = f["numbers"]
        if n.get("again_at") is None or n.get("again_ref") in told:
            continue
        told.add(n.get("again_ref"))
        metric, run = n["metric"].removeprefix("train/"), n["run"] or "?"
        broke = n.get("broke_at_step") if n.get("broke_at_step") is not None else n.get("step")
        said = (f"Run {run} was started again at {_when(n['again_started'])}" if n.get("again_started") is not None
                else f"The {metric} of run {run} came back")
        resumed = n.get("again_resumed_step")
        if resumed is not None:
            said += f" from a checkpoint at step {resumed}" + (
                f", saved before its {metric} broke at step {broke}" if broke is not None and resumed < broke else "")
        said += (f", and its {metric} was a number again: {n['again_value']:.4g}"
                 + (f" at step {n['again_step']}" if n.get("again_step") is not None else "")
                 + f" ({_when(n['again_at'])}).")
        out.append((n["again_at"], said))
    return out


def sources_line(inc: Incident) -> str:
    """What the evidence was, in one line (the report index's, under its title)."""
    rep = inc.load_report
    return f"{len(rep.loaded)} source files loaded, {len(rep.failed)} could not be read, {len(rep.unrecognised)} not recognised"


# --- the notebooks' one-line headlines (the cells nbval checks; see docs/report.md) --------------

NO_THROUGHPUT = f"no data from training logs or wandb runs ({TOK_PER_S}, or a step counter)"


def headline_text(findings: pd.DataFrame) -> str:
    """Baseline, degraded and recovered throughput, each with its ratio to the baseline."""
    reg = regression(findings)
    if reg is None:
        return "no throughput regression found"
    n = reg["numbers"]
    line = f"baseline {_k(n['baseline_tok_per_s'], n)} -> degraded {_k(n['degraded_tok_per_s'], n)} ({n['ratio']:.2f})"
    rec = recovery(findings)
    if rec is not None and "level_tok_per_s" in rec["numbers"]:
        line += f" -> {rec['kind'].replace('_', ' ')} {_k(rec['numbers']['level_tok_per_s'], n)} ({rec['numbers']['ratio']:.2f})"
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
