"""Plain-language sentences about an incident, for the report index, the overview page and
`inspect`: what happened, leading with why.

The sentences follow the findings' cause graph in time order, at most five of them: the first
sign with its cause (the flags that changed, the thread that died), what the operator's actions
did or failed to do (a kill that stopped nothing, a restart that never came up and why, with the
missing path or the stale PID), how far the relaunch came back and why not further, and when it
recovered, with what it cost. Every number is the finding's own, so every page says the same.
"""

from __future__ import annotations

import pandas as pd

from .incident import Incident

MAX_SENTENCES = 5


def _when(t) -> str:
    return pd.Timestamp(t).strftime("%H:%M:%S UTC") if t is not None and not pd.isna(t) else "?"


def _k(v: float) -> str:
    return f"{v / 1e3:.1f}K tok/s"


def _of(findings: pd.DataFrame, *kinds: str) -> pd.DataFrame:
    return findings[findings["kind"].isin(kinds)] if len(findings) else findings


def _first(findings: pd.DataFrame, *kinds: str) -> pd.Series | None:
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
        return (f"At {_when(f['start'])} training stalled: no step for {n['seconds']:,.0f} s at ~0 % GPU "
                f"utilization{cause}{held}.")
    if f["kind"] == "never_trained":
        mem = n.get("memory_mib") or []
        creep = (f" while its GPU memory crept from {mem[0][1] / 1024:,.1f} to {mem[-1][1] / 1024:,.1f} GiB"
                 if len(mem) >= 2 and mem[-1][1] > mem[0][1] else "")
        return (f"At {_when(f['start'])} run {n.get('run') or '?'} was launched and never reached training: "
                f"it stayed at `{n['last_stage']}` for {n['seconds_in_stage']:,.0f} s{creep}.")
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


def _recovery(f: pd.Series, impact: dict | None) -> str:
    n = f["numbers"]
    ttr = n.get("time_to_recover_s")
    text = (f"Throughput recovered to {_k(n['level_tok_per_s'])} ({n['ratio']:.2f} of baseline) at {_when(f['start'])}"
            + (f", {ttr:,.0f} s after the {'stall' if n.get('episode') == 'stall' else 'drop'} began"
               if ttr is not None else ""))
    fix = [c for c in f["caused_by"] if str(c["id"]).startswith("event:") and "stopped" in c["why"]]
    if fix:
        text += f", once {fix[0]['why']}"
    return text + _impact(impact) + "."


def what_happened(inc: Incident, findings: pd.DataFrame | None, impact: dict | None = None) -> list[str]:
    """The incident in at most five sentences, cause first, each with its time."""
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
        out.append("It had not recovered when the evidence ends" + _impact(impact) + ".")
    if sign is None and not out:
        out.append(_cap(findings.iloc[0]["title"]) + f" at {_when(findings.iloc[0]['start'])}.")
    return out[:MAX_SENTENCES]


def _impact(impact: dict | None) -> str:
    if not impact:
        return ""
    parts = []
    if impact.get("gpu_hours_lost") is not None and not pd.isna(impact["gpu_hours_lost"]):
        parts.append(f"{impact['gpu_hours_lost']:,.2f} GPU-hours")
    if impact.get("tokens_lost") is not None and not pd.isna(impact["tokens_lost"]):
        parts.append(f"{impact['tokens_lost']:,.0f} tokens")
    return ("; lost: " + " and ".join(parts)) if parts else ""


def summary_lines(inc: Incident, findings: pd.DataFrame | None = None) -> list[str]:
    """The index page's summary: what happened, then what the evidence was."""
    from .detect import detect
    from .timeline import impact

    if findings is None:
        findings = detect(inc)
    lines = what_happened(inc, findings, impact(inc, findings))
    rep = inc.load_report
    lines.append(
        f"{len(rep.loaded)} source files loaded, {len(rep.failed)} could not be read, {len(rep.unrecognised)} not recognised."
    )
    return lines
