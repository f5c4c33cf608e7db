"""The tables the notebooks show: each a function of an Incident (and its findings).

The detectors answer the questions; these functions lay their answers out for a reader. Where a
source or a detector is missing, a table is a `Missing` note ("no data from ...") instead, so a
notebook runs on whatever evidence survived.
"""

from __future__ import annotations

import html
import importlib
from dataclasses import dataclass
from types import ModuleType

import pandas as pd

from .incident import Incident
from .plots import THROUGHPUT, band_crossings, densest, gpu_label, throughput_samples, worker_pools

HELD_MIB = 1024.0  # an idle GPU shows a few MiB of driver memory, never a loaded model
IDLE_UTIL_PCT = 5.0
NO_DETECTORS = "detectors not available"
FINDING_COLUMNS = ("kind", "start", "end", "severity", "title", "detail", "evidence", "numbers")


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


def _detect(module: str = "") -> ModuleType | None:
    """The detectors package (or one of its modules), or None while it is not installed."""
    try:
        return importlib.import_module("dflash_postmortem.detect" + (f".{module}" if module else ""))
    except ImportError:
        return None


def _t(ts) -> str:
    return "" if ts is None or pd.isna(ts) else pd.Timestamp(ts).strftime("%H:%M:%S")


def find(inc: Incident) -> pd.DataFrame:
    """All findings; an empty frame noted `detectors not available` when they are not installed."""
    det = _detect()
    if det is None:
        out = pd.DataFrame({c: pd.Series(dtype=object) for c in FINDING_COLUMNS})
        out.attrs["note"] = NO_DETECTORS
        return out
    return det.detect(inc)


def findings_table(findings: pd.DataFrame) -> pd.DataFrame | Missing:
    """Findings for reading: when, how bad, what, and the evidence lines cited."""
    if findings.attrs.get("note"):
        return Missing(findings.attrs["note"])
    if findings.empty:
        return Missing("no findings: the detectors found nothing in this evidence")
    return pd.DataFrame({
        "start": findings["start"].map(_t), "end": findings["end"].map(_t), "severity": findings["severity"],
        "what": findings["title"], "evidence": findings["evidence"].map(lambda e: ", ".join(list(e)[:4]) + (" …" if len(e) > 4 else "")),
    })


def timeline(inc: Incident, findings: pd.DataFrame):
    """The SRE timeline (`pm.timeline`: events and impact), or a note while it is not available."""
    try:
        from .timeline import timeline as build
    except ImportError:
        return Missing("timeline not available (dflash_postmortem.timeline is not installed)")
    if findings.attrs.get("note"):
        return Missing(findings.attrs["note"])
    return build(inc, findings)


def timeline_table(tl) -> pd.DataFrame | Missing:
    """The timeline for reading: time, phase, what, and the evidence lines."""
    if isinstance(tl, Missing):
        return tl
    ev = tl.events
    if ev.empty:
        return Missing("nothing on the timeline: no finding and no operator action")
    return pd.DataFrame({"time": ev["time"].map(_t), "phase": ev["phase"], "what": ev["what"].str.slice(0, 200),
                         "evidence": ev["evidence"].map(lambda e: ", ".join(e))})


def _first(findings: pd.DataFrame, kind: str) -> dict | None:
    hit = findings[findings["kind"] == kind]
    return None if hit.empty else hit.iloc[0].to_dict()


def headline(findings: pd.DataFrame, tl=None) -> pd.DataFrame | Missing:
    """The numbers a reader asks for first, each with where it comes from."""
    if findings.attrs.get("note"):
        return Missing(findings.attrs["note"])
    rows = []
    reg = _first(findings, "throughput_regression")
    if reg is not None:
        n = reg["numbers"]
        rows += [("baseline throughput", f"{n['baseline_tok_per_s']:,.0f} tok/s", f"run {n['run_before']}"),
                 ("degraded throughput", f"{n['degraded_tok_per_s']:,.0f} tok/s ({n['ratio']:.2f} of baseline)", f"run {n['run_after']}")]
    rec = _first(findings, "recovery") or _first(findings, "partial_recovery")
    if rec is not None and "level_tok_per_s" in rec["numbers"]:
        rows.append(("throughput after recovery", f"{rec['numbers']['level_tok_per_s']:,.0f} tok/s", rec["title"]))
    imp = impact(tl)
    if imp:
        for key, label, fmt in (("time_to_detect_s", "time to detect", "{:,.0f} s"),
                                ("time_to_mitigate_s", "time to mitigate", "{:,.0f} s"),
                                ("time_to_recover_s", "time to recover", "{:,.0f} s"),
                                ("gpu_hours_lost", "GPU-hours lost", "{:,.2f}"),
                                ("tokens_lost", "tokens lost", "{:,.0f}")):
            v = imp.get(key)
            rows.append((label, "not measurable from this evidence" if v is None or pd.isna(v) else fmt.format(v), "timeline"))
    elif rec is not None and "time_to_recover_s" in rec["numbers"]:
        rows.append(("time to recover", f"{rec['numbers']['time_to_recover_s']:,.0f} s", "recovery finding"))
    if not rows:
        return Missing("no throughput regression found: no headline numbers")
    return pd.DataFrame(rows, columns=["quantity", "value", "from"])


# --- throughput drop ------------------------------------------------------------------------

def change_points(inc: Incident) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Throughput series (warm-up dropped) and its level segments, from the throughput detector."""
    tp = _detect("throughput")
    if tp is None:
        return throughput_samples(inc), None
    s = tp.series(inc)
    return s, tp.segments(s) if len(s) else None


def levels(segments: pd.DataFrame | None) -> pd.DataFrame | Missing:
    """Each level segment: from, to, level and its ratio to the one before."""
    if segments is None:
        return Missing(NO_DETECTORS)
    if segments.empty:
        return Missing(f"no data from training logs or wandb runs ({THROUGHPUT})")
    lv = segments["level"]
    return pd.DataFrame({"from": segments["start"].map(_t), "to": segments["end"].map(_t),
                         "samples": segments["i1"] - segments["i0"], "level tok/s": lv.round(0).astype(int),
                         "vs previous": (lv / lv.shift()).round(2)})


def config_diff(inc: Incident, findings: pd.DataFrame) -> pd.DataFrame | Missing:
    """Settings that differ between the run before a throughput drop and the run after it."""
    tp = _detect("throughput")
    if tp is None or findings.attrs.get("note"):
        return Missing(NO_DETECTORS)
    regs = findings[findings["kind"] == "throughput_regression"]
    rows = []
    for r in regs.itertuples():
        n = r.numbers
        if not n.get("across_runs"):
            continue
        for d in tp.config_differences(inc, n["run_before"], n["run_after"], r.start):
            rows.append({"runs": f"{n['run_before']} → {n['run_after']}", "setting": d["setting"],
                         "before": _setting(d["before"]), "after": _setting(d["after"]), "from": d["from"],
                         "evidence": d["ref"] or "", "bookkeeping": d["bookkeeping"]})
    if not rows:
        return Missing("no configuration difference between runs (or no run-to-run drop)")
    return pd.DataFrame(rows).sort_values(["bookkeeping", "setting"], kind="stable").reset_index(drop=True)


def _setting(value) -> str:
    return "(not set)" if value is None else str(value)


def warnings_near(inc: Incident, findings: pd.DataFrame, minutes: float = 10.0) -> pd.DataFrame | Missing:
    """Warnings and errors from `minutes` before each throughput drop to its end."""
    regs = findings[findings["kind"] == "throughput_regression"] if not findings.attrs.get("note") else findings
    if regs.empty:
        return Missing(NO_DETECTORS if findings.attrs.get("note") else "no throughput drop to look around")
    ev = inc.events[inc.events["kind"].isin(["warning", "error", "traceback", "exception", "thread_crash", "compile_error", "signal"])]
    parts = [ev[(ev["time"] >= r.start - pd.Timedelta(minutes=minutes)) & (ev["time"] <= r.end)] for r in regs.itertuples()]
    near = pd.concat(parts).drop_duplicates(subset=["time", "message", "ref"]) if parts else ev.iloc[:0]
    if near.empty:
        return Missing(f"no data from logs: no warning or error within {minutes:g} min of the drop")
    return pd.DataFrame({"time": near["time"].map(_t), "kind": near["kind"], "run": near["run"],
                         "message": near["message"].str.slice(0, 300), "evidence": near["ref"]}).reset_index(drop=True)


def root_causes(inc: Incident, findings: pd.DataFrame) -> pd.DataFrame | Missing:
    """Root-cause candidates of each throughput drop, ranked by how many evidence lines back them."""
    if findings.attrs.get("note"):
        return Missing(findings.attrs["note"])
    regs = findings[findings["kind"] == "throughput_regression"]
    said = _lines_by_ref(inc)
    rows = []
    for r in regs.itertuples():
        for c in r.numbers.get("candidates", []):
            cited = [e for e in r.evidence if _backs(c, said.get(e))]
            rows.append({"drop": r.title, "candidate": c, "evidence lines": len(cited), "evidence": ", ".join(cited[:4])})
    if not rows:
        return Missing("no root-cause candidate in the evidence" if len(regs) else "no throughput drop found")
    out = pd.DataFrame(rows).sort_values("evidence lines", ascending=False, kind="stable").reset_index(drop=True)
    out.index = out.index + 1
    out.index.name = "rank"
    return out


def _lines_by_ref(inc: Incident) -> dict[str, tuple[str, str]]:
    ev = inc.events.dropna(subset=["ref"])
    return {ref: (str(kind), str(msg)) for ref, kind, msg in zip(ev["ref"], ev["kind"], ev["message"].fillna(""), strict=True)}


def _backs(candidate: str, line: tuple[str, str] | None) -> bool:
    """An evidence line backs a candidate when the candidate quotes it, or names the launch it is."""
    if line is None:
        return False
    kind, message = line
    if candidate.startswith("configuration differs"):
        return kind == "launch"
    first = message.strip().splitlines()[0] if message.strip() else ""
    return bool(first) and (first in candidate or candidate.split(": ", 1)[-1][:60] in message)


# --- restarts -------------------------------------------------------------------------------

def launch_checklist(inc: Incident, findings: pd.DataFrame) -> pd.DataFrame | Missing:
    """For each launch: process started, log created, log growing, GPU memory held, first step."""
    la = _detect("launches")
    if la is None:
        return Missing(NO_DETECTORS)
    oc = la.outcomes(inc)
    if oc.empty:
        return Missing("no data from shell transcripts or operator logs: no launch command seen")
    rows = []
    for i, L in oc.iterrows():
        nxt = oc["time"].iloc[i + 1] if i + 1 < len(oc) else None
        proc, log, step = (L[k] if isinstance(L[k], pd.Series) else None for k in ("process", "log", "first_step"))
        pid = None if proc is None else proc["pid"]
        if proc is not None:
            started = f"{_t(proc['started'] if pd.notna(proc['started']) else proc['first_seen'])} PID {pid}"
        elif pd.notna(L.get("pid")):  # no process listing, but the launcher printed the PID it started
            started = f"{_t(L['time'])} PID {int(L['pid'])} (launcher)"
        else:
            started = "✗ none"
        rows.append({
            "launch": _t(L["time"]), "run": L["run"], "command": str(L["message"])[:160],
            "process started": started,
            "log created": "✗ none" if log is None else f"{_t(log['first'])} {log['name']}",
            "log growing": "✗" if log is None else (f"✓ until {_t(log['last'])}" if log["last"] > log["first"] else "✗ one line"),
            "GPU memory held": _gpu_held(inc, L["time"], nxt, pid),
            "first step": "✗ none" if step is None else _t(step["time"]),
            "verdict": _verdict(findings, L["time"], step is not None),
            "evidence": L.get("ref", ""),
        })
    return pd.DataFrame(rows)


def _gpu_held(inc: Incident, start, end, pid) -> str:
    gp = inc.gpu_processes.dropna(subset=["time"])
    gp = gp[(gp["time"] >= start) & ((gp["time"] < end) if end is not None else True)]
    if pid is not None and len(gp):
        mine = gp[gp["pid"] == pid]
        return f"✓ {_t(mine['time'].iloc[0])} by PID {pid}" if len(mine) else f"✗ none by PID {pid}"
    g = inc.gpus.dropna(subset=["time", "memory_used_mib"])
    g = g[(g["time"] >= start) & ((g["time"] < end) if end is not None else True)]
    if g.empty:
        return "no data from GPU captures"
    held = g[g["memory_used_mib"] > HELD_MIB]
    return f"✓ {_t(held['time'].iloc[0])} (any PID)" if len(held) else f"✗ all GPUs ≤ {g['memory_used_mib'].max():.0f} MiB"


def _verdict(findings: pd.DataFrame, when, stepped: bool) -> str:
    if not findings.empty and "kind" in findings:
        hit = findings[(findings["start"] == when) & findings["kind"].isin(["failed_restart", "slow_start"])]
        if len(hit):
            return str(hit["title"].iloc[0])
    return "came up" if stepped else "no training step seen"


def process_view(inc: Incident, findings: pd.DataFrame) -> pd.DataFrame | Missing:
    """Python processes seen by `ps`, each marked stale (predates a launch) or new.

    Pools of identical workers (torch's compile workers, dataloader workers) are folded into one
    row with their count, so the launches and the stale process stay readable.
    """
    procs = inc.processes
    if procs.empty:
        return Missing("no data from ps snapshots (no process listing was loaded)")
    first_word = procs["command"].fillna("").str.split(n=1).str[0].str.rsplit("/", n=1).str[-1]
    procs = procs[first_word.str.startswith("python")]
    if procs.empty:
        return Missing("ps snapshots were loaded, but no python process was ever seen in them")
    stale = set()
    if not findings.attrs.get("note"):
        for r in findings[findings["kind"] == "stale_process"].itertuples():
            stale.add(r.numbers.get("pid"))
    out = pd.DataFrame({
        "pid": procs["pid"].astype("string"), "user": procs["user"], "started": procs["started"].map(_t),
        "first seen": procs["first_seen"].map(_t), "last seen": procs["last_seen"].map(_t),
        "status": ["stale (predates the launch)" if p in stale else "" for p in procs["pid"]],
        "command": procs["command"], "source": procs["source"],
    }).reset_index(drop=True)
    pools = worker_pools(out["command"])
    folded = out[pools].groupby("command", as_index=False, sort=False).agg(
        pid=("pid", lambda p: f"{len(p)} processes ({p.iloc[0]}…{p.iloc[-1]})"), user=("user", "first"),
        started=("started", "min"), **{"first seen": ("first seen", "min"), "last seen": ("last seen", "max")},
        status=("status", "first"), source=("source", "first"))
    out = pd.concat([out[~pools], folded[out.columns]], ignore_index=True)
    out["command"] = out["command"].str.slice(0, 160)  # after folding: pools differ past the cut
    return out.sort_values("first seen", kind="stable").reset_index(drop=True)


def verdicts(findings: pd.DataFrame, kinds=("failed_restart", "slow_start", "stale_process")) -> Claims | Missing:
    """Restart verdicts with their full explanation and the exact evidence lines."""
    if findings.attrs.get("note"):
        return Missing(findings.attrs["note"])
    hit = findings[findings["kind"].isin(kinds)]
    if hit.empty:
        return Missing("no failed restart: every launch came up")
    return Claims([(f"{_t(r.start)} {r.title}", str(r.detail), list(r.evidence)) for r in hit.itertuples()])


# --- recovery -------------------------------------------------------------------------------

def recovery_window(inc: Incident, findings: pd.DataFrame) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """The stretch to judge GPU roles on: the recovery (or partial recovery) finding, else the last run."""
    if not findings.attrs.get("note") and len(findings):
        hit = findings[findings["kind"].isin(["recovery", "partial_recovery"])]
        if len(hit):
            return hit["start"].iloc[-1], hit["end"].iloc[-1]
    s = throughput_samples(inc)
    if s.empty:
        return None, None
    last = s[s["run"] == s.sort_values("time")["run"].iloc[-1]]
    return last["time"].min(), last["time"].max()


def gpu_roles(inc: Incident, start=None, end=None) -> pd.DataFrame:
    """Per GPU: the role incident.toml expects, median memory and utilization in the window, and
    what that looks like (holds memory and busy, allocated but idle, empty)."""
    g = inc.gpus.dropna(subset=["gpu"])
    if start is not None:
        g = g[(g["time"] >= start) & (g["time"] <= end)]
    mem = densest(g, ["host", "gpu"], "memory_used_mib")
    cols = ["label", "host", "gpu", "expected_role", "memory_gib", "util_pct", "observed"]
    if mem.empty:
        return pd.DataFrame(columns=cols)
    util = densest(g, ["host", "gpu"], "util_gpu_pct")
    per = mem.groupby(["host", "gpu"], dropna=False)["memory_used_mib"].median().rename("mib").to_frame()
    per["util_pct"] = util.groupby(["host", "gpu"], dropna=False)["util_gpu_pct"].median() if len(util) else float("nan")
    per = per.reset_index()
    many = per["host"].nunique(dropna=True) > 1
    per["label"] = [gpu_label(h, x, many) for h, x in zip(per["host"], per["gpu"], strict=True)]
    per["expected_role"] = [_role_of(inc, h, int(x)) for h, x in zip(per["host"], per["gpu"], strict=True)]
    per["memory_gib"] = (per["mib"] / 1024).round(1)
    per["observed"] = [_observed(m, u) for m, u in zip(per["mib"], per["util_pct"], strict=True)]
    return per.sort_values(["host", "gpu"]).reset_index(drop=True)[cols]


def _role_of(inc: Incident, host, gpu: int) -> str:
    return next((role for role, gpus in inc.config.roles_for(host).items() if gpu in gpus), "unassigned")


def _observed(mib: float, util: float) -> str:
    if pd.isna(mib):
        return "no memory samples"
    if mib < HELD_MIB:
        return "empty"
    if pd.isna(util):
        return "holds memory (no utilization samples)"
    return "allocated, idle" if util < IDLE_UTIL_PCT else "holds memory, busy"


def baseline(inc: Incident, findings: pd.DataFrame) -> float | None:
    """The throughput baseline: the regression finding's, else incident.toml's expected_tok_per_s."""
    reg = None if findings.attrs.get("note") else _first(findings, "throughput_regression")
    return reg["numbers"]["baseline_tok_per_s"] if reg is not None else inc.config.expected_tok_per_s


def recovery_table(findings: pd.DataFrame) -> pd.DataFrame | Missing:
    """Recovery findings: level reached against baseline, time to recover, and the reason if partial."""
    return _kinds(findings, ("recovery", "partial_recovery", "no_recovery"), "no throughput drop, so nothing to recover from")


def role_findings(findings: pd.DataFrame) -> pd.DataFrame | Missing:
    return _kinds(findings, ("role_mismatch", "idle_allocated_gpu"), "GPU roles as expected; no allocated idle GPU")


def _kinds(findings: pd.DataFrame, kinds, none: str) -> pd.DataFrame | Missing:
    if findings.attrs.get("note"):
        return Missing(findings.attrs["note"])
    hit = findings[findings["kind"].isin(kinds)]
    if hit.empty:
        return Missing(none)
    return pd.DataFrame({"from": hit["start"].map(_t), "to": hit["end"].map(_t), "what": hit["title"],
                         "detail": hit["detail"], "evidence": hit["evidence"].map(lambda e: ", ".join(list(e)[:4]))}).reset_index(drop=True)


# --- replay A/B -----------------------------------------------------------------------------

def knob_settings(inc: Incident) -> pd.DataFrame:
    """Each run's settings (wandb config), limited to those that differ between runs."""
    tp = _detect("throughput")
    rows = {run: {k: v for k, v in info.config.items() if not isinstance(v, dict | list)} for run, info in inc.runs.items()}
    df = pd.DataFrame.from_dict(rows, orient="index")
    if df.empty:
        return df
    keep = [c for c in df.columns if df[c].astype(str).nunique() > 1
            and not (tp is not None and tp.BOOKKEEPING.match(c))]
    return df[keep]


def replay_effects(inc: Incident) -> pd.DataFrame:
    """Each run against the baseline run: which knobs it changed, and its tok/s with spread.

    Replays change one factor at a time, so a run is compared with the baseline, never pooled with
    other runs that share one of its settings (pooling mixes in whatever else those runs changed).
    The baseline is the run called `baseline`, else the run that logged throughput first. A run
    that changed several knobs at once is marked: its effect cannot be split between them.
    """
    cols = ["run", "change", "knobs_changed", "samples", "median_tok_per_s", "p25", "p75", "vs_baseline", "note"]
    knobs = knob_settings(inc)
    s = change_points(inc)[0]
    if knobs.empty or s.empty:
        return pd.DataFrame(columns=cols)
    s = s[s["run"].isin(knobs.index)]
    if s.empty:
        return pd.DataFrame(columns=cols)
    base = "baseline" if "baseline" in set(s["run"]) else s.sort_values("time")["run"].iloc[0]
    order = [base] + [r for r in s.sort_values("time")["run"].drop_duplicates() if r != base]
    rows = []
    for run in order:
        changed = [k for k in knobs.columns if str(knobs.at[run, k]) != str(knobs.at[base, k])]
        v = s.loc[s["run"] == run, "value"]
        rows.append({
            "run": run,
            "change": ", ".join(f"{k}={knobs.at[run, k]}" for k in changed) or "-",
            "knobs_changed": len(changed), "samples": len(v), "median_tok_per_s": float(v.median()),
            "p25": float(v.quantile(0.25)), "p75": float(v.quantile(0.75)),
            "note": "baseline" if run == base else ("several knobs at once: not separable" if len(changed) > 1
                                                      else "same settings as baseline" if not changed else ""),
        })
    out = pd.DataFrame(rows, columns=cols)
    out["vs_baseline"] = (out["median_tok_per_s"] / out["median_tok_per_s"].iloc[0]).round(3)
    return out


# --- one-line headlines (the cells nbval checks; see docs/report.md) --------------------------

def impact(tl) -> dict | None:
    """The timeline's impact numbers (TTD/TTM/TTR, GPU-hours and tokens lost), if it has them."""
    found = getattr(tl, "impact", None)
    return found if isinstance(found, dict) and found else None


def _k(v: float) -> str:
    return f"{v / 1e3:.1f}K"


def headline_text(findings: pd.DataFrame) -> str:
    if findings.attrs.get("note"):
        return findings.attrs["note"]
    reg = _first(findings, "throughput_regression")
    if reg is None:
        return "no throughput regression found"
    n = reg["numbers"]
    text = f"baseline {_k(n['baseline_tok_per_s'])} tok/s -> degraded {_k(n['degraded_tok_per_s'])} tok/s ({n['ratio']:.2f})"
    rec = _first(findings, "recovery") or _first(findings, "partial_recovery")
    if rec is not None and "level_tok_per_s" in rec["numbers"]:
        text += f" -> {rec['kind'].replace('_', ' ')} {_k(rec['numbers']['level_tok_per_s'])} tok/s ({rec['numbers']['ratio']:.2f})"
    return text


def levels_text(segments: pd.DataFrame | None) -> str:
    if segments is None:
        return NO_DETECTORS
    if segments.empty:
        return f"no data from training logs or wandb runs ({THROUGHPUT})"
    changes = band_crossings(segments)
    if changes.empty:
        return f"no change in or out of the baseline band ({len(segments)} level segments)"
    return "baseline band crossed: " + ", ".join(f"{_k(c.before)} -> {_k(c.level)} tok/s at {_t(c.start)}" for c in changes.itertuples())


def restart_text(findings: pd.DataFrame) -> str:
    if findings.attrs.get("note"):
        return findings.attrs["note"]
    failed = findings[findings["kind"] == "failed_restart"]
    reasons = sorted({str(n.get("reason")) for n in failed["numbers"]})
    return (f"failed restarts: {len(failed)}" + (f" ({', '.join(reasons)})" if reasons else "")
            + f"; slow starts: {int((findings['kind'] == 'slow_start').sum())}"
            + f"; stale processes: {int((findings['kind'] == 'stale_process').sum())}")


def recovery_text(findings: pd.DataFrame) -> str:
    if findings.attrs.get("note"):
        return findings.attrs["note"]
    rec = _first(findings, "recovery") or _first(findings, "partial_recovery") or _first(findings, "no_recovery")
    return "no throughput drop, nothing to recover from" if rec is None else str(rec["title"])


def effects_text(effects: pd.DataFrame) -> str:
    if effects.empty:
        return "no data from replay runs: no knob varied between runs with throughput samples"
    parts = []
    for r in effects.itertuples():
        what = "baseline" if r.note == "baseline" else r.change
        parts.append(f"{r.run} ({what}): {_k(r.median_tok_per_s)} ({r.vs_baseline:.2f}x)")
    return "; ".join(parts)
