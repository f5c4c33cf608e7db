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
from .launches import outcomes, verdicts

GRACE_S = 600.0
# A background job started inside one of these exits with it unless it is detached (setsid/disown).
_SESSION = re.compile(r"\b(?P<how>pct exec|pct enter|lxc-attach|docker exec|kubectl exec|ssh)\b")
_DETACHED = re.compile(r"\bsetsid\b|\bdisown\b|\btmux\b|\bscreen\b|\bsystemd-run\b")
_NO_FILE = "No such file or directory"
_PYTHON = re.compile(r"\bpython[\d.]*\b")
_GPU_IDLE_MIB = 100.0  # an idle GPU shows a few MiB of driver memory, never a loaded model
# Commands that end a whole session or process group (and every background job started in it).
_KILLS_SESSION = re.compile(r"\bkill\b[^;&|]*?\s(?:--\s+)?-\d+\b(?![^;&|]*\s-\d)|\bpkill\s+(?:-\S+\s+)*-[sg]\s*\d+|"
                            r"\btmux\s+kill-(?:session|server)\b|\bscreen\b.*-X\s+quit\b|\bloginctl\s+terminate")
_SIGNAL_SPEC = re.compile(r"^-(?:\d{1,2}|[A-Z]+|s)$")


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
    queries = _between(inc.events, start, end)
    queries = queries[queries["kind"] == "gpu_query"]
    refs = []
    for _, q in queries.iterrows():
        refs += ([q["ref"]] if isinstance(q.get("ref"), str) else []) + _output_refs(inc, q)
    gp = _between(inc.gpu_processes, start, end)
    if pid is not None and len(gp):
        mine = gp[gp["pid"] == pid]
        if len(mine):
            return True, f"{len(mine)} GPU samples held by PID {pid}", findings.refs(mine, 3)
        # Not held by the new PID: the operator's own GPU checks say what the GPUs held instead.
        return False, f"0 GPU samples held by PID {pid}", refs
    g = _between(inc.gpus, start, end)
    if g.empty:
        return None, "no GPU samples after the launch", []
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


def _reason(L: pd.Series, inc: Incident, start, end, said: pd.DataFrame) -> tuple[str, str, list[str]]:
    """Why the launch failed, as far as the evidence goes: (reason, explanation, refs). `said`: the
    launcher's verdict lines for this launch (empty unless it went through `launch`)."""
    launcher = _launcher_said(L, inc, said)
    if launcher is not None:
        return launcher
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
    tb = _startup_traceback(L, ev)
    if len(tb):
        last = str(tb["message"].iloc[0]).strip().splitlines()[-1]
        who = f"process {proc['pid']}" if isinstance(proc, pd.Series) else "the launched process"
        return ("died in start-up", f"died during start-up: {who} started and wrote a traceback "
                f"ending `{last}`", findings.refs(tb, 3))
    killed = _session_kill(L, inc, start, end)
    if killed is not None:
        return killed
    how = _launcher(str(L["command"]))
    if how and not _DETACHED.search(str(L["command"])):
        return ("launching session killed",
                f"the process was started in the background inside `{how}` without setsid or "
                f"disown and did not survive the end of that session; process never started",
                [L["ref"]] if isinstance(L.get("ref"), str) else [])
    return ("unknown", "no evidence says why the process did not start", [])


# What `dflash-postmortem launch` says in its first failed check -> the reason it names.
_LAUNCHER_REASONS = (
    ("start", "does not exist", "log folder missing"),
    ("start", "cannot open log", "log not writable"),
    ("start", "cannot run", "command could not run"),
    ("alive", "exited with status", "died in start-up"),
)


def _launcher_checks(said: pd.DataFrame) -> dict[str, tuple[bool, str]]:
    """check -> (ok, detail) from `dflash-postmortem launch`'s verdict lines for one launch."""
    if said.empty:
        return {}
    return {str(r["check"]): (bool(r["ok"]), str(r.get("detail") or r["message"]))
            for _, r in said.iterrows() if r["check"] != "verdict"}


def _launcher_said(L: pd.Series, inc: Incident, said: pd.DataFrame) -> tuple[str, str, list[str]] | None:
    """A start through `dflash-postmortem launch`: its first FAIL line is the reason, with the log
    tail it quoted (the traceback of a trainer that died is there even when its log is lost)."""
    if said.empty:
        return None
    bad = said[(said["check"] != "verdict") & (said["ok"] == False)]  # noqa: E712 (nullable booleans)
    if bad.empty:
        return None
    first = bad.iloc[0]
    check, detail = str(first["check"]), str(first.get("detail") or "")
    reason = next((r for c, text, r in _LAUNCHER_REASONS if c == check and text in detail),
                  f"launcher check '{check}' failed")
    quoted = [ln.removeprefix("| ").strip() for ln in str(first["message"]).splitlines()[1:]]
    n = int(first["lines"]) if pd.notna(first.get("lines")) else 1
    refs = [first["ref"], *(r for r in (findings.shifted(first["ref"], k) for k in range(1, n)) if r)]
    # The trainer's own log, when it is in the folder, holds the same traceback at its source.
    refs += findings.refs(_startup_traceback(L, _between(inc.events, L["time"], first["time"] + pd.Timedelta(seconds=5))), 3)
    return (reason, f"{reason}: dflash-postmortem launch reported `{check}` FAIL "
            f"({detail.removesuffix('; last log lines:')})"
            + (f"; the log tail it quoted ends `{quoted[-1]}`" if quoted else ""), refs)


def _startup_traceback(L: pd.Series, ev: pd.DataFrame) -> pd.DataFrame:
    """Tracebacks after the launch: in its own log when that log is known, else in any source
    while the launched process is the one being watched (a process listing says it ran)."""
    tb = ev[ev["kind"] == "traceback"]
    log = L.get("log")
    if isinstance(log, pd.Series):
        return tb[tb["source"] == log["source"]]
    return tb if isinstance(L.get("process"), pd.Series) else tb.iloc[:0]


def _kill_targets_group(command: str) -> bool:
    """`kill [-SIG] -- -PGID` / `kill -9 -PGID`: a negative target is a whole process group."""
    if not re.search(r"\bkill\b", command):
        return bool(_KILLS_SESSION.search(command))
    for part in re.split(r"[;&|]", command):
        words = part.split()
        if "kill" not in words:
            continue
        args = words[words.index("kill") + 1:]
        if args[:1] == ["-s"]:
            args = args[2:]
        elif args and _SIGNAL_SPEC.match(args[0]) and len(args) > 1:
            args = args[1:]
        if args[:1] == ["--"]:
            args = args[1:]
        if any(re.fullmatch(r"-\d+", a) for a in args):
            return True
    return bool(_KILLS_SESSION.search(command))


def _session_kill(L: pd.Series, inc: Incident, start, end) -> tuple[str, str, list[str]] | None:
    """A background job of the operator's shell (no setsid/disown) whose session or process group
    the operator then killed, after which the process vanished before its first step."""
    proc = L.get("process")
    if not isinstance(proc, pd.Series) or _DETACHED.search(str(L["command"])):
        return None
    ev = _between(inc.events, start, end)
    kills = ev[(ev["kind"] == "command") & ev["message"].fillna("").map(_kill_targets_group).astype(bool)]
    kills = kills[kills["time"] >= proc["first_seen"] - pd.Timedelta(seconds=5)]
    if kills.empty:
        return None
    k = kills.iloc[0]
    refs = [k["ref"]] if isinstance(k.get("ref"), str) else []
    log = L.get("log")
    said = ""
    if isinstance(log, pd.Series):
        lines = inc.events[(inc.events["source"] == log["source"])]
        last = lines.sort_values("time", kind="stable").tail(1)
        n = len(set(findings.refs(lines)) | set(findings.refs(inc.metrics[inc.metrics["source"] == log["source"]])))
        said = (f"; its log {log['name']} stopped at {log['last']:%H:%M:%S} after {n} line(s)"
                + (f" (`{str(last['message'].iloc[0]).strip()}`)" if len(last) else ""))
        refs += findings.refs(last)
    return ("launching session killed",
            f"launching session killed / process died during start-up: PID {proc['pid']} was started in "
            f"the background without setsid or disown, inside the shell session that the operator then "
            f"killed (`{k['message']}` at {k['time']:%H:%M:%S}); it was last listed running at "
            f"{proc['last_seen']:%H:%M:%S}, before any training step{said}", refs)


def _verified(L: pd.Series, said: pd.DataFrame, proc, first) -> dict:
    """A launch through `dflash-postmortem launch` that came up: its verdict lines are the proof."""
    checks = {str(c): bool(ok) for c, ok in zip(said["check"], said["ok"], strict=True)}
    text = "; ".join(str(m).removeprefix("launch: ").strip() for m in said["message"])
    return findings.finding(
        "verified_start", L["time"], first["time"], "info",
        f"restart at {L['time']:%H:%M:%S} verified by dflash-postmortem launch",
        f"The launcher checked the start itself: {text}. First training step logged at "
        f"{first['time']:%H:%M:%S}" + (f" by PID {proc['pid']}" if proc is not None else "") + ".",
        ([L["ref"]] if isinstance(L.get("ref"), str) else []) + findings.refs(said),
        {"checks": checks, "run": L["run"], "log_path": L["log_path"],
         "pid": None if proc is None else int(proc["pid"])})


def _gone(inc: Incident, proc: pd.Series, end) -> bool:
    """No longer listed while the listings went on (a capture that ends proves nothing)."""
    if pd.isna(proc["last_seen"]):
        return False
    procs = inc.processes
    listed_until = procs["last_seen"].max()
    if proc["last_seen"] < min(end, listed_until) - pd.Timedelta(seconds=30):
        return True
    # Or: a later listing left it out, and the operator's own count after it said none.
    later = procs["last_seen"][procs["last_seen"] > proc["last_seen"]]
    ev = inc.events
    zero = ev[(ev["kind"] == "process_count") & (ev["time"] > proc["last_seen"]) & (ev["count"] == 0)]
    return bool(len(later) and len(zero))


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
        said = verdicts(inc, L.get("ref"))
        if stepped:
            if len(said):
                rows.append(_verified(L, said, proc, first))
            continue
        pid = None if proc is None else proc["pid"]
        gpu_ok, gpu_text, gpu_refs = _gpu_check(inc, start, end, pid)
        evidence = [L["ref"]] if isinstance(L.get("ref"), str) else []
        checks = {"process": proc is not None, "log": log is not None, "gpu_memory": gpu_ok,
                  "first_step": stepped}
        lines = []
        counts = _count_checks(inc, start, end)
        own = _launcher_checks(said)
        if proc is None and own.get("start", (False,))[0] and pd.notna(L.get("pid")):
            checks["process"] = True
            pid = int(L["pid"])
            lines.append(f"process {pid} started (the launcher's `start` line)")
        elif proc is None:
            counted = "; ".join(f"{c['time']:%H:%M:%S}: {c['message']}" for c in counts)
            lines.append("no new process running " + str(L["script"] or "the launched script")
                         + " appeared" + (f" ({counted})" if counted else ""))
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
        gone = proc is not None and _gone(inc, proc, end)
        exited = own.get("alive", (True,))[0] is False
        if exited:
            lines.append(str(own["alive"][1]).removesuffix("; last log lines:"))
        elif gone:
            after = [c for c in _count_checks(inc, proc["last_seen"], end) if c.get("count") == 0]
            lines.append("; ".join(f"{c['time']:%H:%M:%S}: {c['message']}" for c in after) or
                         f"no longer listed after {proc['last_seen']:%H:%M:%S}")
            evidence += [c["ref"] for c in after if isinstance(c.get("ref"), str)]
        # A traceback in its log is a death, whatever the process listings say.
        died = len(_startup_traceback(L, _between(inc.events, start, end))) > 0
        if not (exited or died) and ((proc is not None and not gone)
                                     or (proc is None and inc.processes.empty and log is not None)):
            # Alive (or no process listing, but its log fills): slow, not failed.
            rows.append(findings.finding(
                "slow_start", L["time"], end, "info", f"slow start after launch at {L['time']:%H:%M:%S}",
                "; ".join(lines) + ". Alive and no evidence of failure: slow, not failed.",
                evidence, {"checks": checks, "run": L["run"], "pid": None if pid is None else int(pid)}))
            continue
        reason, why, why_refs = _reason(L, inc, start, end, said)
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
    # Where the operator counted processes, the stale ones that matter are those the count matched.
    patterns = [str(c["pattern"]) for c in counts if isinstance(c.get("pattern"), str) and c["pattern"] != "?"]
    if patterns:
        old = old[old["command"].fillna("").map(lambda cmd: any(pt in cmd for pt in patterns)).astype(bool)]
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
