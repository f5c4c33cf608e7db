"""Failed restarts: a launch after which training never came up, and why.

A launch is judged on four pieces of evidence, each independent of the others: a new process
running the launched script, its log filling, GPU memory held (by the new PID where per-process
samples exist), and a first training step within a grace window. A python process that already
existed before the launch is *stale*, never evidence that training runs; it is reported as such.
"""

from __future__ import annotations

import re

import pandas as pd

from ..incident import Incident
from . import findings
from .launches import outcomes

GRACE_S = 600.0
# A background job started inside one of these exits with it unless it is detached (setsid/disown).
_SESSION = re.compile(r"\b(?P<how>pct exec|pct enter|lxc-attach|docker exec|kubectl exec|ssh)\b")
_DETACHED = re.compile(r"\bsetsid\b|\bdisown\b|\btmux\b|\bscreen\b|\bsystemd-run\b")
_NO_FILE = "No such file or directory"
_PYTHON = re.compile(r"\bpython[\d.]*\b")
_GPU_IDLE_MIB = 100.0  # an idle GPU shows a few MiB of driver memory, never a loaded model


def _window(oc: pd.DataFrame, i: int, grace: pd.Timedelta) -> tuple[pd.Timestamp, pd.Timestamp]:
    start = oc["time"].iloc[i]
    end = start + grace
    if i + 1 < len(oc):
        end = min(end, oc["time"].iloc[i + 1])
    return start, end


def _between(df: pd.DataFrame, start, end, col: str = "time") -> pd.DataFrame:
    return df[(df[col] >= start) & (df[col] < end)]


def _output_refs(inc: Incident, ev: pd.Series) -> list[str]:
    """The output lines of the transcript command an event came from (they follow its prompt)."""
    ref = ev.get("ref")
    if not isinstance(ref, str):
        return []
    out = ev.get("output") if isinstance(ev.get("output"), str) else None
    if out is None and "output" in inc.events.columns:
        same = inc.events[(inc.events["ref"] == ref) & inc.events["output"].notna()]
        out = same["output"].iloc[0] if len(same) else None
    if not isinstance(out, str) or not out:
        return []
    return [r for r in (findings.shifted(ref, k) for k in range(1, len(out.splitlines()) + 1)) if r]


def _gpu_check(inc: Incident, start, end, pid) -> tuple[bool | None, str, list[str]]:
    """Did GPU memory appear after the launch? (None: no GPU source says.)"""
    gp = _between(inc.gpu_processes, start, end)
    if pid is not None and len(gp):
        mine = gp[gp["pid"] == pid]
        return (len(mine) > 0, f"{len(mine)} GPU samples held by PID {pid}", findings.refs(mine, 3))
    g = _between(inc.gpus, start, end)
    if g.empty:
        return None, "no GPU samples after the launch", []
    queries = _between(inc.events, start, end)
    queries = queries[queries["kind"] == "gpu_query"]
    refs = []
    for _, q in queries.iterrows():
        refs += ([q["ref"]] if isinstance(q.get("ref"), str) else []) + _output_refs(inc, q)
    peak = g["memory_used_mib"].max()
    held = bool(peak > _GPU_IDLE_MIB)
    text = f"GPU memory rose to {peak:.0f} MiB" if held else f"all {g['gpu'].nunique()} GPUs at {peak:.0f} MiB"
    return held, text, refs + findings.refs(g, 8)


def _count_checks(inc: Incident, start, end) -> list[pd.Series]:
    ev = _between(inc.events, start, end)
    return [r for _, r in ev[ev["kind"] == "process_count"].iterrows()]


def _alive(procs: pd.DataFrame, when) -> pd.DataFrame:
    first = procs["first_seen"].fillna(procs["started"])
    last = procs["last_seen"].fillna(first)
    return procs[(first <= when) & (last >= when)]


def _launcher(command: str) -> str | None:
    m = _SESSION.search(command or "")
    return m.group("how") if m else None


def _reason(L: pd.Series, inc: Incident, start, end) -> tuple[str, str, list[str]]:
    """Why the launch failed, as far as the evidence goes: (reason, explanation, refs)."""
    ev = _between(inc.events, start, end)
    path = L.get("log_path") if isinstance(L.get("log_path"), str) else None
    # A redirect the shell could not open is reported right after the launch, on its own output.
    soon = ev[ev["time"] <= start + pd.Timedelta(seconds=10)]
    said = soon["message"].fillna("").astype(str)
    if "output" in soon.columns:
        said = said + "\n" + soon["output"].fillna("").astype(str)
    failed = soon[(soon["kind"] == "redirect_failed")
                  | (said.str.contains(re.escape(path) + ": " + _NO_FILE) if path else False)]
    if path and len(failed):
        r = failed.iloc[0]
        refs = [r["ref"]] if isinstance(r.get("ref"), str) else []
        if r["kind"] != "redirect_failed":
            refs += _output_refs(inc, r)
        return ("redirect target missing",
                f"log path does not exist, process never started: the shell could not open {path} "
                f"for the redirect, so the command after it never ran", refs)
    proc = L.get("process")
    if isinstance(proc, pd.Series):
        tb = ev[ev["kind"] == "traceback"]
        if len(tb):
            return ("died in start-up",
                    f"process {proc['pid']} started and died during start-up with a traceback",
                    findings.refs(tb, 3))
    how = _launcher(str(L["command"]))
    if how and not _DETACHED.search(str(L["command"])):
        return ("launching session killed",
                f"the process was started in the background inside `{how}` without setsid or "
                f"disown and did not survive the end of that session; process never started",
                [L["ref"]] if isinstance(L.get("ref"), str) else [])
    return ("unknown", "no evidence says why the process did not start", [])


def detect_failed_restarts(inc: Incident, grace_s: float | None = None) -> pd.DataFrame:
    """One finding per launch that did not bring training up, and one per stale process."""
    grace = pd.Timedelta(seconds=grace_s if grace_s is not None else
                         float(inc.config.detect.get("restart_grace_s", GRACE_S)))
    oc = outcomes(inc)
    rows = []
    for i, L in oc.iterrows():
        start, end = _window(oc, i, grace)
        proc = L["process"] if isinstance(L["process"], pd.Series) else None
        first = L["first_step"] if isinstance(L["first_step"], pd.Series) else None
        log = L["log"] if isinstance(L["log"], pd.Series) else None
        stepped = first is not None and first["time"] - L["time"] <= grace
        if stepped:
            continue
        pid = None if proc is None else proc["pid"]
        gpu_ok, gpu_text, gpu_refs = _gpu_check(inc, start, end, pid)
        evidence = [L["ref"]] if isinstance(L.get("ref"), str) else []
        checks = {"process": proc is not None, "log": log is not None, "gpu_memory": gpu_ok,
                  "first_step": stepped}
        lines = []
        counts = _count_checks(inc, start, end)
        if proc is None:
            said = "; ".join(f"{c['time']:%H:%M:%S}: {c['message']}" for c in counts)
            lines.append("no new process running " + str(L["script"] or "the launched script")
                         + " appeared" + (f" ({said})" if said else ""))
            for c in counts:
                evidence += [c["ref"]] if isinstance(c.get("ref"), str) else []
                evidence += _output_refs(inc, c)
        else:
            lines.append(f"process {pid} started")
        missing = inc.events[(inc.events["kind"] == "log_missing") & (inc.events["time"] >= start)
                             & (inc.events["time"] < end)]
        if log is None:
            lines.append(f"no log: {L['log_path']} never received a line")
            for _, m in missing.iterrows():
                evidence += [m["ref"]] if isinstance(m.get("ref"), str) else []
        lines.append(gpu_text)
        evidence += gpu_refs
        if not stepped:
            lines.append(f"no training step within {grace.total_seconds():.0f} s")
        # Gone: no longer listed while the listings went on (a capture that ends proves nothing).
        listed_until = inc.processes["last_seen"].max()
        gone = proc is not None and pd.notna(proc["last_seen"]) and (
            proc["last_seen"] < min(end, listed_until) - pd.Timedelta(seconds=30))
        if (proc is not None and not gone) or (proc is None and inc.processes.empty and log is not None):
            # Alive (or no process listing, but its log fills): slow, not failed.
            rows.append(findings.finding(
                "slow_start", L["time"], end, "info", f"slow start after launch at {L['time']:%H:%M:%S}",
                "; ".join(lines) + ". Alive and no evidence of failure: slow, not failed.",
                evidence, {"checks": checks, "run": L["run"], "pid": None if pid is None else int(pid)}))
            continue
        reason, why, why_refs = _reason(L, inc, start, end)
        evidence = why_refs + evidence
        rows.append(findings.finding(
            "failed_restart", L["time"], end, "critical",
            f"restart at {L['time']:%H:%M:%S} never came up: {why.split(':')[0]}",
            why + ". Checks: " + "; ".join(lines) + ".",
            evidence,
            {"reason": reason, "checks": checks, "run": L["run"], "log_path": L["log_path"],
             "launcher": _launcher(str(L["command"])), "pid": None if pid is None else int(pid)}))
        rows += _stale(inc, L, start, end, counts)
    return findings.frame(rows)


def _stale(inc: Incident, L: pd.Series, start, end, counts: list[pd.Series]) -> list[dict]:
    """Python processes alive across a failed launch that predate it: not the launched trainer."""
    procs = inc.processes
    if procs.empty:
        return []
    when = counts[0]["time"] if counts else start
    alive = _alive(procs, when)
    if alive.empty:
        alive = _alive(procs, start)
    started = alive["started"].fillna(alive["first_seen"])
    old = alive[(started < start.floor("min")) & alive["command"].fillna("").str.contains(_PYTHON)]
    out = []
    for _, p in old.iterrows():
        count_text = ""
        refs = findings.refs(procs[procs["pid"] == p["pid"]].iloc[:1])
        for c in counts:
            count_text = f"; the process count at {c['time']:%H:%M:%S} counted it"
            refs += [c["ref"]] if isinstance(c.get("ref"), str) else []
            refs += _output_refs(inc, c)
        p_start = p["started"] if pd.notna(p["started"]) else p["first_seen"]
        out.append(findings.finding(
            "stale_process", p_start, p["last_seen"], "warning",
            f"stale python process {p['pid']} predates the launch at {L['time']:%H:%M:%S}",
            f"PID {p['pid']} (`{p['command']}`) was started {p_start:%H:%M} and seen from "
            f"{p['first_seen']:%H:%M:%S} to {p['last_seen']:%H:%M:%S}: it predates the launch and is "
            f"not the launched trainer, so its existence does not mean training is running{count_text}.",
            refs, {"pid": int(p["pid"]), "command": str(p["command"]), "launch": L["time"]}))
    return out
