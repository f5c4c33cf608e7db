"""Every table the notebooks and `inspect` show, as DataFrames: each a function of an Incident,
its findings or its timeline.

The detectors answer the questions; these functions lay their answers out for a reader (times
on the UTC clock, evidence lines joined, long commands cut). Where the evidence for a table is
missing, the table is a `text.Missing` note ("no data from ...") instead, so a notebook runs on
whatever evidence survived. `overview` gathers the frames the overview figure draws.
"""

from __future__ import annotations

import re

import pandas as pd

from ..analysis.cause_ranking import rank_causes
from ..analysis.source_choice import gpu_samples, throughput_samples
from ..analysis.throughput_levels import recovery, regression
from ..analysis.timeline import Timeline
from ..detect.throughput import config_differences
from ..incident import Incident
from ..model import gpu_state
from ..model.attempts import attempts
from ..model.launches import outcomes
from ..model.ledger import CLASSES, SHOWN_S, ledger, ledger_parts
from ..schema import PROBLEM_EVENTS, column
from ..shell_words import is_shell_running, runs_program
from ..units import clock, duration, gpu_hours, rate, share, start_clock, start_known_to, tokens
from .evidence_views import cited_line
from .sentences import NO_THROUGHPUT, Missing, gpu_label, one_line

Table = pd.DataFrame | Missing


def _evidence(refs) -> str:
    """Evidence lines cited, joined, all of them (a long list is cut where it is shown, with an
    ellipsis and the whole list on hover: notebook.frame_html)."""
    return ", ".join(refs)


# --- overview -----------------------------------------------------------------------------------

def findings_table(findings: pd.DataFrame) -> Table:
    """Findings for reading: when, how bad, what, and the evidence lines cited."""
    if findings.empty:
        return Missing("no findings: the detectors found nothing in this evidence")
    return pd.DataFrame({
        "start": findings["start"].map(clock), "end": findings["end"].map(clock), "severity": findings["severity"],
        "what": findings["title"], "evidence": findings["evidence"].map(_evidence),  # cut where shown, with a hover
    })


def timeline_table(tl: Timeline) -> Table:
    """The timeline for reading: time, phase, what, and the evidence lines."""
    ev = tl.events
    if ev.empty:
        return Missing("nothing on the timeline: no finding and no operator action")
    return pd.DataFrame({"time": ev["time"].map(clock), "phase": ev["phase"], "what": ev["what"].map(one_line),
                         "evidence": ev["evidence"].map(_evidence)})


NOT_MEASURABLE = "not measurable from this evidence"


def headline(findings: pd.DataFrame, tl: Timeline | None = None) -> Table:
    """The numbers a reader asks for first, each with where it comes from."""
    rows = []
    reg = regression(findings)
    if reg is not None:
        n = reg["numbers"]
        u = n.get("unit") or "tok/s"
        rows += [("baseline throughput", rate(n["baseline_tok_per_s"], u), f"run {n['run_before']}"),
                 ("degraded throughput", f"{rate(n['degraded_tok_per_s'], u)} ({n['ratio']:.2f} of baseline)",
                  f"run {n['run_after']}")]
    rec = recovery(findings)
    if rec is not None and "level_tok_per_s" in rec["numbers"]:
        rows.append(("throughput after recovery",
                     rate(rec["numbers"]["level_tok_per_s"], rec["numbers"].get("unit") or "tok/s"), rec["title"]))
    if tl is not None and tl.impact:
        for key, label, fmt in (("time_to_detect_s", "time to detect", duration),
                                ("time_to_mitigate_s", "time to mitigate", duration),
                                ("time_to_recover_s", "time to recover", duration),
                                ("gpu_hours_lost", "GPU-hours lost", gpu_hours),
                                ("tokens_lost", "tokens lost", tokens), ("steps_lost", "steps lost", tokens)):
            if key == ("tokens_lost" if "steps_lost" in tl.impact else "steps_lost"):
                continue  # one of the two: the job's pace is in tokens or in steps (model/pace.py)
            v = tl.impact.get(key)
            rows.append((label, NOT_MEASURABLE if v is None or pd.isna(v) else fmt(v), "timeline"))
    elif rec is not None and "time_to_recover_s" in rec["numbers"]:
        rows.append(("time to recover", duration(rec["numbers"]["time_to_recover_s"]), "recovery finding"))
    if not rows:
        return Missing("no throughput regression found: no headline numbers")
    return pd.DataFrame(rows, columns=["quantity", "value", "from"])


# --- throughput drop ----------------------------------------------------------------------------

def levels(segments: pd.DataFrame) -> Table:
    """Each level segment (`detect.throughput.segments`): from, to, level and its ratio to the one before."""
    if segments.empty:
        return Missing(NO_THROUGHPUT)
    lv = segments["level"]
    return pd.DataFrame({"from": segments["start"].map(clock), "to": segments["end"].map(clock),
                         "samples": segments["i1"] - segments["i0"], "level tok/s": lv.round(0).astype(int),
                         "vs previous": (lv / lv.shift()).round(2)})


# What a setting that differs between two runs changes: how it trains, or only its bookkeeping
TRAINING, BOOKKEEPING = "training", "bookkeeping (a name, path or duration)"


def config_diff(inc: Incident, findings: pd.DataFrame) -> Table:
    """Settings that differ between the run before a throughput drop and the run after it."""
    regs = findings[findings["kind"] == "throughput_regression"]
    rows = []
    for r in regs.itertuples():
        n = r.numbers
        if not n.get("across_runs"):
            continue
        for d in config_differences(inc, n["run_before"], n["run_after"], r.start, n.get("baseline_end")):
            rows.append({"runs": f"{n['run_before']} → {n['run_after']}", "setting": d["setting"],
                         "before": _setting(d["before"]), "after": _setting(d["after"]), "from": d["from"],
                         "evidence": d["ref"] or "", "changes": BOOKKEEPING if d["bookkeeping"] else TRAINING})
    if not rows:
        return Missing("no configuration difference between runs (or no run-to-run drop)")
    # the settings that change how it trains first, bookkeeping (names, paths, duration) last
    out = pd.DataFrame(rows)
    return out.sort_values(["changes", "setting"], key=lambda c: c.eq(BOOKKEEPING) if c.name == "changes" else c,
                           kind="stable").reset_index(drop=True)


def _setting(value):
    # a flag stays a bool, and a flag given as text (`--lm-head-trainable False`, a config's
    # "true") becomes one: the table writes it as a word (yes, no), not as Python's True
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return "(not set)" if value is None else value if isinstance(value, bool) else str(value)


# Event kinds that may explain a drop: what a reader scans the logs around it for.


def warnings_near(inc: Incident, findings: pd.DataFrame, minutes: float = 10.0) -> Table:
    """Warnings and errors from `minutes` before each throughput drop to its end."""
    regs = findings[findings["kind"] == "throughput_regression"]
    if regs.empty:
        return Missing("no throughput drop to look around")
    ev = inc.events[inc.events["kind"].isin(PROBLEM_EVENTS)]
    parts = [ev[(ev["time"] >= r.start - pd.Timedelta(minutes=minutes)) & (ev["time"] <= r.end)] for r in regs.itertuples()]
    near = pd.concat(parts).drop_duplicates(subset=["time", "message", "ref"])
    if near.empty:
        if inc.events.empty:
            return Missing(f"no data from logs or transcripts: nothing to look through within {minutes:g} min of the drop")
        return Missing(f"no warnings or errors in the logs within {minutes:g} min of the drop")
    return pd.DataFrame({"time": near["time"].map(clock), "kind": near["kind"], "run": near["run"],
                         "message": near["message"].map(one_line), "evidence": near["ref"]}).reset_index(drop=True)


def root_causes(inc: Incident, findings: pd.DataFrame) -> Table:
    """Root-cause candidates of each throughput drop, ranked by how many evidence lines back them
    (`detect.ranking`), numbered from 1."""
    ranked = rank_causes(inc, findings)
    if ranked.empty:
        dropped = (findings["kind"] == "throughput_regression").any()
        return Missing("no root-cause candidate in the evidence" if dropped else "no throughput drop found")
    out = ranked.assign(evidence=ranked["evidence"].map(_evidence))
    out.index = out.index + 1
    out.index.name = "rank"
    return out


# --- restarts -----------------------------------------------------------------------------------

def launch_checklist(inc: Incident, findings: pd.DataFrame) -> Table:
    """For each launch: process started, log created, log growing, GPU memory held, first step."""
    oc = outcomes(inc)
    if oc.empty:
        return Missing("no data from shell transcripts or operator logs: no launch command seen")
    rows = []
    for i, L in oc.iterrows():
        nxt = oc["time"].iloc[i + 1] if i + 1 < len(oc) else None
        proc, log, step = (L[k] if isinstance(L[k], pd.Series) else None for k in ("process", "log", "first_step"))
        pid = None if proc is None else proc["pid"]
        if proc is not None:
            when = (start_clock(proc["started"], proc.get("started_within_s")) if pd.notna(proc["started"])
                    else clock(proc["first_seen"]))
            started = f"{when} PID {pid}"
        elif pd.notna(L.get("pid")):  # no process listing, but the launcher printed the PID it started
            started = f"{clock(L['time'])} PID {int(L['pid'])} (launcher)"
        else:
            started = "✗ none"
        rows.append({
            "launch": clock(L["time"]), "run": L["run"], "command": one_line(L.get("message") if isinstance(L.get("message"), str) else L.get("command") or ""),
            "process started": started,
            "log created": "✗ none" if log is None else f"{clock(log['first'])} {log['name']}",
            "log growing": "✗" if log is None else (f"✓ until {clock(log['last'])}" if log["last"] > log["first"] else "✗ one line"),
            "GPU memory held": _gpu_held(inc, L["time"], nxt, pid),
            "first step": "✗ none" if step is None else clock(step["time"]),
            "verdict": _verdict(findings, L["time"], step is not None),
            "evidence": L.get("ref", ""),
        })
    return pd.DataFrame(rows)


def _gpu_held(inc: Incident, start, end, pid) -> str:
    gp = inc.gpu_processes.dropna(subset=["time"])
    gp = gp[(gp["time"] >= start) & ((gp["time"] < end) if end is not None else True)]
    if pid is not None and len(gp):
        mine = gp[gp["pid"] == pid]
        return f"✓ {clock(mine['time'].iloc[0])} by PID {pid}" if len(mine) else f"✗ none by PID {pid}"
    g = inc.gpus.dropna(subset=["time", "memory_used_mib"])
    g = g[(g["time"] >= start) & ((g["time"] < end) if end is not None else True)]
    if g.empty:
        return "no data from GPU captures"
    held = g[gpu_state.held(g["memory_used_mib"])]
    return f"✓ {clock(held['time'].iloc[0])} (any PID)" if len(held) else f"✗ all GPUs ≤ {g['memory_used_mib'].max():.0f} MiB"


def _verdict(findings: pd.DataFrame, when, stepped: bool) -> str:
    hit = findings[(findings["start"] == when) & findings["kind"].isin(["failed_restart", "slow_start"])]
    if len(hit):
        return str(hit["title"].iloc[0])
    return "came up" if stepped else "no training step seen"


def _worker_pools(procs: pd.DataFrame) -> pd.Series:
    """Processes whose command more than 3 processes alive together share: a pool of identical
    workers (torch's compile workers, dataloader workers), shown as one row or bar so the rest
    stays readable. The same command run again and again (a restart loop) is no pool: each run
    is a start of its own."""
    key = procs["command"].fillna("")
    pooled = pd.Series(False, index=procs.index)
    for _, g in procs.groupby(key, sort=False):
        if len(g) > 3 and _most_alive_at_once(g["first_seen"], g["last_seen"]) > 3:
            pooled[g.index] = True
    return pooled


def _most_alive_at_once(first, last) -> int:
    """The most of these lifetimes (first to last seen) that overlap at one time."""
    changes = sorted([(t, 1) for t in first.dropna()] + [(t, -1) for t in last.dropna()], key=lambda x: (x[0], -x[1]))
    alive = most = 0
    for _, d in changes:
        alive += d
        most = max(most, alive)
    return most


def process_view(inc: Incident, findings: pd.DataFrame) -> Table:
    """Python processes seen by `ps`, each marked stale (predates a launch) or new.

    Pools of identical workers (torch's compile workers, dataloader workers) are folded into one
    row with their count, so the launches and the stale process stay readable.
    """
    procs = inc.processes
    if procs.empty:
        return Missing("no data from ps snapshots (no process listing was loaded)")
    # (a command listed blank, as top lists a process between fork and exec, has no first word)
    first_word = procs["command"].fillna("").str.split(n=1).str[0].str.rsplit("/", n=1).str[-1].fillna("")
    procs = procs[first_word.str.startswith("python")]
    if procs.empty:
        return Missing("ps snapshots were loaded, but no python process was ever seen in them")
    stale = {r.numbers.get("pid") for r in findings[findings["kind"] == "stale_process"].itertuples()}
    out = pd.DataFrame({
        "pid": procs["pid"].astype("string"), "user": procs["user"], "started": [start_clock(t, w) for t, w in zip(procs["started"], procs.get("started_within_s", pd.Series(pd.NA, index=procs.index)), strict=True)],
        "first seen": procs["first_seen"].map(clock), "last seen": procs["last_seen"].map(clock),
        "status": ["stale (predates the launch)" if p in stale else "" for p in procs["pid"]],
        "command": procs["command"], "source": procs["source"],
    }).reset_index(drop=True)
    pools = _worker_pools(procs.reset_index(drop=True))
    folded = out[pools].groupby("command", as_index=False, sort=False).agg(
        pid=("pid", lambda p: f"{len(p)} processes (PIDs {p.iloc[0]}–{p.iloc[-1]})"), user=("user", "first"),
        started=("started", "min"), **{"first seen": ("first seen", "min"), "last seen": ("last seen", "max")},
        status=("status", "first"), source=("source", "first"))
    out = pd.concat([out[~pools], folded[out.columns]], ignore_index=True)
    out["command"] = out["command"].map(one_line)
    return out.sort_values("first seen", kind="stable").reset_index(drop=True)


# --- recovery -----------------------------------------------------------------------------------

def gpu_roles(inc: Incident, start=None, end=None) -> pd.DataFrame:
    """Per GPU: the role incident.toml expects, median memory and utilization in the window, and
    what that looks like (holds memory and busy, allocated but idle, empty)."""
    g = inc.gpus.dropna(subset=["gpu"])
    if start is not None:
        g = g[(g["time"] >= start) & (g["time"] <= end)]
    mem = gpu_samples(g, "memory_used_mib")
    cols = ["label", "host", "gpu", "expected_role", "memory_gib", "util_pct", "observed"]
    if mem.empty:
        return pd.DataFrame(columns=cols)
    util = gpu_samples(g, "util_gpu_pct")
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
    if not gpu_state.held(mib):
        return "empty"
    if pd.isna(util):
        return "holds memory (no utilization samples)"
    return "allocated, idle" if gpu_state.idle(util) else "holds memory, busy"


def gpu_time(inc: Incident) -> Table:
    """Where each GPU's time went over the incident window (`model.ledger`): one row per GPU,
    a column per class with its seconds and share of the window."""
    led = ledger(inc)
    if led.empty:
        return Missing("no attempt on a known GPU in the evidence, so no GPU time to account for")
    many = led["host"].nunique() > 1
    out = pd.DataFrame({"GPU": [gpu_label(h, g, many) for h, g in zip(led["host"], led["gpu"], strict=True)],
                        "window": led["total"].map(duration)})
    for c in CLASSES:
        out[c] = [share(v, t) if v >= SHOWN_S else "" for v, t in zip(led[c], led["total"], strict=True)]
    return out


def gpu_time_by_attempt(inc: Incident) -> Table:
    """The same GPU time by job and attempt (`model.ledger_parts`): one row per class an attempt
    spent its GPUs' time in, and per gap between attempts, with the lines that show it."""
    parts = ledger_parts(inc)
    if parts.empty:
        return Missing("no attempt on a known GPU in the evidence, so no GPU time to account for")
    total = float(ledger(inc)["total"].sum())
    whose = [a if isinstance(a, str) else f"after {p}" for a, p in zip(parts["attempt"], parts["after"], strict=True)]
    return pd.DataFrame({"job": parts["job"].fillna(""), "attempt": whose, "GPU time went to": parts["class"],
                         "GPU time": [share(v, total) for v in parts["seconds"]],
                         "evidence": parts["evidence"].map(_evidence)})


def recovery_table(findings: pd.DataFrame) -> Table:
    """Recovery findings: level reached against baseline, time to recover, and the reason if partial."""
    return _kinds(findings, ("recovery", "partial_recovery", "no_recovery"), "no throughput drop, so nothing to recover from")


def role_findings(findings: pd.DataFrame, inc: Incident | None = None) -> Table:
    """GPUs used against the roles incident.toml expects, and GPUs that hold memory but sit idle.
    With the incident, an empty answer says whether there were roles to check at all."""
    roles_given = inc is None or bool(inc.config.roles or inc.config.host_roles)
    none = ("GPU roles as incident.toml expects them" if roles_given
            else "no GPU roles given in incident.toml ([roles]), so none checked") + "; no allocated idle GPU"
    return _kinds(findings, ("role_mismatch", "idle_allocated_gpu"), none)


def _kinds(findings: pd.DataFrame, kinds, none: str) -> Table:
    hit = findings[findings["kind"].isin(kinds)]
    if hit.empty:
        return Missing(none)
    return pd.DataFrame({"from": hit["start"].map(clock), "to": hit["end"].map(clock), "what": hit["title"],
                         "detail": hit["detail"], "evidence": hit["evidence"].map(_evidence)}).reset_index(drop=True)


# --- what the overview figure draws --------------------------------------------------------------

# Event kinds too frequent to mark one by one on a timeline (every console line of a wandb run).
NOISY_EVENTS = {"console"}
MAX_LIFETIMES = 30
# A `bash -c` wrapper lives exactly as long as the trainer it runs: one bar is enough.
_PATHS = re.compile(r"(/[^\s/]+)+/([^\s/]+)")  # /srv/x/trainer.py -> trainer.py, for labels


_PS_START_RESOLUTION = pd.Timedelta(minutes=1)  # START shows HH:MM


def lifetimes(inc: Incident) -> pd.DataFrame:
    """What was alive when: runs (wandb or log span), processes seen by ps, PIDs holding GPU memory;
    the first `MAX_LIFETIMES` by start, each labelled (`what`) as the overview names it, with the
    whole text behind the label (`detail`: the full command line).

    A start is a range where the evidence gives no more: `ps` START gives only the minute, and a
    repeated listing the seconds between the one before a process's first and that first, so such
    a process started between `start` (the range's start, or the launch that started it or its
    parent when one is known, whichever is later) and `start_latest` (the range's end, or when ps
    first listed it, whichever is earlier); `start_note` says so. Elsewhere `start_latest` is
    `start`.
    """
    rows = []
    spans = pd.concat([inc.metrics[["run", "time", "source"]], inc.events[["run", "time", "source"]]]).dropna(subset=["run", "time"])
    for run, g in spans.groupby("run", sort=False):
        info = inc.runs.get(run)
        start = info.started if info is not None and info.started is not None else g["time"].min()
        end = info.ended if info is not None and info.ended is not None else g["time"].max()
        rows.append({"what": f"run {run}", "detail": f"run {run}", "group": "run", "start": start, "start_latest": start,
                     "start_note": "", "end": end, "source": g["source"].iloc[0], "fits": 0})
    procs = inc.processes.join(_start_ranges(inc, inc.processes))  # before the shells go: they link children to launches
    # never a kernel thread or a process listed without a command line (`top` lists `[kthreadd]`
    # and its kin, a whole machine's, from before the job began)
    bare = procs["command"].map(lambda c: not isinstance(c, str) or re.fullmatch(r"\s*(?:\[[^\]]*\])?\s*", c) is not None)
    procs = procs[~bare.astype(bool) & ~procs["command"].fillna("").map(is_shell_running).astype(bool)].dropna(subset=["start"])
    # which lanes fit (MAX_LIFETIMES): first what a reader looks for, the runs, the PIDs on GPUs and
    # the processes of the starts the incident is about; then what a trainer can be; then the rest
    # (by start alone, the machine's own processes filled every lane)
    mine = {int(q) for pids in attempts(inc)["pids"] for q in pids}

    def fits(pids, command) -> int:
        return 0 if mine & {int(q) for q in pids} else 1 if runs_program(str(command)) else 2
    # (a launch's own process is a row of its own, though its DataLoader's workers share its command line)
    launched = {int(p["pid"]) for p in column(outcomes(inc), "process") if isinstance(p, pd.Series)}
    pools = _worker_pools(procs) & ~procs["pid"].isin(launched)
    for cmd, pool in procs[pools].groupby("command", sort=False):
        label = one_line(_PATHS.sub(r"\2", str(cmd)), 50)
        first = pool.loc[pool["start"].idxmin()]
        n = pool["pid"].nunique()
        rows.append({"what": f"{n} PIDs {label}", "detail": f"{n} PIDs ({pool['pid'].min()}–{pool['pid'].max()}) {cmd}",
                     "group": "process", "start": first["start"], "start_latest": first["start_latest"],
                     "start_note": first["start_note"], "end": pool["last_seen"].max(), "source": pool["source"].iloc[0],
                     "fits": fits(pool["pid"], cmd)})
    for _, p in procs[~pools].iterrows():
        end = p["last_seen"] if pd.notna(p["last_seen"]) else p["start_latest"]
        cmd = one_line(_PATHS.sub(r"\2", str(p["command"])), 60)
        rows.append({"what": f"PID {p['pid']} {cmd}", "detail": f"PID {p['pid']} {p['command']}", "group": "process",
                     "start": p["start"], "start_latest": p["start_latest"], "start_note": p["start_note"], "end": end,
                     "source": p["source"], "fits": fits([p["pid"]], p["command"])})
    gp = inc.gpu_processes.dropna(subset=["time", "pid"])
    for pid, g in gp.groupby("pid"):
        gpus = ",".join(str(int(x)) for x in sorted(g["gpu"].dropna().unique()))
        what = f"PID {int(pid)} on GPU {gpus or '?'}"
        rows.append({"what": what, "detail": what, "group": "GPU process", "start": g["time"].min(), "start_latest": g["time"].min(),
                     "start_note": "", "end": g["time"].max(), "source": g["source"].iloc[0], "fits": 0})
    out = pd.DataFrame(rows, columns=["what", "detail", "group", "start", "start_latest", "start_note", "end", "source", "fits"])
    out = out.sort_values(["fits", "start"], kind="stable").head(MAX_LIFETIMES).drop(columns="fits")
    return out.sort_values("start", kind="stable").reset_index(drop=True)


def _start_ranges(inc: Incident, procs: pd.DataFrame) -> pd.DataFrame:
    """Per process: `start`, `start_latest` and `start_note` (see `lifetimes`). A start the
    listing gives to within `started_within_s` is a range of that length: ps START's minute, or the
    seconds between a listing that did not show the process and the next that did. Where no
    within is given, a start on the whole minute is read as START's minute (one from elapsed time
    that falls on :00 is drawn as a minute that still holds it); without a start, the first
    listing stands for it."""
    started = procs["started"]
    within = pd.to_numeric(procs["started_within_s"], errors="coerce") if "started_within_s" in procs.columns \
        else pd.Series(float("nan"), index=procs.index)
    whole = started.notna() & (started.dt.second == 0) & (started.dt.microsecond == 0)
    span = within.where(within.notna(), whole * _PS_START_RESOLUTION.total_seconds())
    launched = _launched_at(inc, procs)
    lo = started.where(launched.isna() | (launched <= started), launched).fillna(procs["first_seen"])
    hi = pd.concat([started + pd.to_timedelta(span.fillna(0.0), unit="s"), procs["first_seen"]], axis=1).min(axis=1)
    hi = hi.where((span > 1) & (hi > lo), lo)
    note = [_start_note(s, w, f) + (f"; launched {clock(x)}" if w > 1 and pd.notna(x) else "")
            for s, w, f, x in zip(started, span.fillna(0.0), procs["first_seen"], launched, strict=True)]
    return pd.DataFrame({"start": lo, "start_latest": hi, "start_note": note}, index=procs.index)


def _start_note(started, within_s: float, first_seen) -> str:
    """Where a start known only as a range comes from: START's day or minute, or the listing
    before the first that shows the process (`_start_ranges`)."""
    known = start_known_to(started, within_s)
    if known == "day":
        return f"ps gives the start to the day ({started:%Y-%m-%d})"
    if known == "minute":
        return f"ps gives the start to the minute ({clock(started)[:5]})"
    return f"not in the listing at {clock(started)}, in the one at {clock(first_seen)}" if known else ""


def _launched_at(inc: Incident, procs: pd.DataFrame) -> pd.Series:
    """When the launch that started each process (or an ancestor of it) was typed or traced, NaT
    where none was: the start each PID joined in model.attempts. No process starts before the
    launch that started it, nor before its parent's."""
    att = attempts(inc)
    typed: dict[int, list[tuple]] = {}
    for host, pids, launched in zip(att["host"], att["pids"], att["launched"], strict=True):
        if pd.notna(launched):
            for pid in pids:
                typed.setdefault(int(pid), []).append((host, launched))

    def launched_for(host, pid):
        # a launch on another host is not this process's (PIDs repeat across machines)
        hits = [t for h, t in typed.get(int(pid), []) if h is None or pd.isna(host) or h == host]
        return max(hits) if hits else pd.NaT

    own = pd.Series([launched_for(h, p) for h, p in zip(procs["host"], procs["pid"], strict=True)],
                    index=procs.index, dtype=procs["started"].dtype)
    by_pid = dict(zip(zip(procs["host"], procs["pid"], strict=True), own, strict=True))
    parent = dict(zip(zip(procs["host"], procs["pid"], strict=True), procs["ppid"], strict=True))
    out = own.copy()
    for i, host, pid in zip(procs.index, procs["host"], procs["pid"], strict=True):
        seen, key = set(), (host, pid)
        while pd.isna(out[i]) and key in parent and key not in seen:  # walk up to a launched ancestor
            seen.add(key)
            key = (host, parent[key])
            out[i] = by_pid.get(key, pd.NaT)
    return out


def overview(inc: Incident, findings: pd.DataFrame | None = None) -> dict:
    """The frames the overview figure draws, by the names `plots.plot_overview` takes them."""
    events = inc.events[~inc.events["kind"].isin(NOISY_EVENTS)].dropna(subset=["time"])
    if findings is not None and inc.root is not None:
        findings = findings.assign(cited=findings["evidence"].map(lambda refs: [_with_line(inc, r) for r in refs]))
    return {"title": inc.title, "throughput": throughput_samples(inc), "memory": gpu_samples(inc.gpus, "memory_used_mib"),
            "utilization": gpu_samples(inc.gpus, "util_gpu_pct"), "lifetimes": lifetimes(inc), "events": events,
            "findings": findings}


def _with_line(inc: Incident, ref: str) -> str:
    """`logs/operator.log:9: bash: line 1: ...`: a ref and the text of the line it cites (masked)."""
    line = cited_line(inc.root, ref)
    return ref if line is None else f"{ref}: {line.strip()}"
