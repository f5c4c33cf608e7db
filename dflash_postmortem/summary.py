"""Plain-language sentences about an incident, for the report index and the overview page."""

from __future__ import annotations

import pandas as pd

from .incident import Incident


def _when(t) -> str:
    return pd.Timestamp(t).strftime("%H:%M:%S UTC") if t is not None and not pd.isna(t) else "?"


def _first(findings: pd.DataFrame, *kinds: str) -> pd.Series | None:
    hit = findings[findings["kind"].isin(kinds)] if len(findings) else findings
    return None if hit.empty else hit.iloc[0]


def _k(v: float) -> str:
    return f"{v / 1e3:.1f}K tok/s"


def what_happened(inc: Incident, findings: pd.DataFrame | None, impact: dict | None = None) -> list[str]:
    """Three sentences: what broke, what the restart did, how (and whether) it recovered."""
    first, last = inc.span()
    if findings is None or findings.attrs.get("note"):
        return [f"Evidence spans {_when(first)} to {_when(last)}.",
                "The detectors are not available, so nothing was judged yet.",
                "The figures below show what was loaded."]
    out = []
    reg = _first(findings, "throughput_regression", "stall")
    if reg is None:
        out.append(f"No throughput regression or stall was detected between {_when(first)} and {_when(last)}.")
    elif reg["kind"] == "throughput_regression":
        n = reg["numbers"]
        where = (f"when run {n['run_after']} replaced run {n['run_before']}" if n.get("across_runs")
                 else f"within run {n['run_after']}")
        out.append(f"Throughput fell from {_k(n['baseline_tok_per_s'])} to {_k(n['degraded_tok_per_s'])} "
                   f"({n['ratio']:.2f} of baseline) at {_when(reg['start'])}, {where}.")
    else:
        out.append(f"{reg['title'][:1].upper()}{reg['title'][1:]} at {_when(reg['start'])}.")
    failed = findings[findings["kind"] == "failed_restart"]
    if len(failed):
        f = failed.iloc[0]
        more = f" ({len(failed)} failed restarts in all)" if len(failed) > 1 else ""
        out.append(f"The restart at {_when(f['start'])} never came up: {f['numbers'].get('reason', 'see evidence')}{more}.")
    else:
        out.append("Every relaunch in the evidence came up." if len(findings) else "No relaunch failed.")
    rec = _first(findings, "recovery", "partial_recovery", "no_recovery")
    if rec is None and reg is not None and reg["kind"] == "stall" and impact and impact.get("recovered") is not None:
        out.append(f"Training resumed at {_when(impact['recovered'])}, {impact['time_to_recover_s']:,.0f} s after the "
                   "stall began" + (f" (relaunch at {_when(impact['mitigated'])})" if impact.get("mitigated") else "")
                   + _impact(impact) + ".")
    elif rec is None:
        out.append("There was nothing to recover from." if reg is None else "Whether it recovered cannot be told from the evidence.")
    else:
        text = f"{rec['title'][:1].upper()}{rec['title'][1:]}"
        ttr = rec["numbers"].get("time_to_recover_s")
        out.append(text + (f" at {_when(rec['start'])}, {ttr:,.0f} s after the drop began" if ttr is not None else "")
                   + _impact(impact) + ".")
    return out


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
    from .views import find

    if findings is None:
        findings = find(inc)
    cost = None
    if not findings.attrs.get("note"):
        from .timeline import impact

        cost = impact(inc, findings)
    lines = what_happened(inc, findings, cost)
    rep = inc.load_report
    lines.append(
        f"{len(rep.loaded)} source files loaded, {len(rep.failed)} failed, {len(rep.unrecognised)} not recognised."
    )
    return lines
