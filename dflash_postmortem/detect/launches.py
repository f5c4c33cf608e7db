"""What each launch command led to: its flags, its process, its log, its run, its first step.

Shared by the restart and throughput detectors: a launch is only known to have started training
when a new process running its script appears after it, its log fills, and steps are logged. A
python process that was already there before the launch proves nothing.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import pandas as pd

from ..commands import invocation, is_wrapper_process, log_target
from ..incident import Incident
from ..model import computed as memo
from ..schema import TOK_PER_S

STARTUP_SLACK = pd.Timedelta(seconds=60)  # ps START has minute resolution


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series(pd.NA, index=df.index, dtype=object)


def launch_events(inc: Incident) -> pd.DataFrame:
    """Launch events with the command line, script, flags and log path each one names.

    The command line is the transcript's `command` event at the same reference when there is
    one (a launch event's message may be a summary); flags are parsed from it here.
    """
    ev = inc.events
    rows = ev[ev["kind"] == "launch"].copy()
    if rows.empty:
        return rows.assign(script=pd.Series(dtype=object), flags=pd.Series(dtype=object),
                           command=pd.Series(dtype=object))
    cmds = ev[(ev["kind"] == "command") & ev["ref"].notna()].drop_duplicates("ref").set_index("ref")["message"]
    rows["command"] = [cmds.get(r, m) if isinstance(r, str) else m
                       for r, m in zip(rows["ref"], rows["message"], strict=True)]
    parsed = [invocation(str(c)) for c in rows["command"]]
    program = _col(rows, "program")
    rows["script"] = [p[0] or (PurePosixPath(str(g)).name if isinstance(g, str) else None)
                      for p, g in zip(parsed, program, strict=True)]
    rows["flags"] = [p[1] for p in parsed]
    given = _col(rows, "log_path")
    rows["log_path"] = [g.strip("'\"") if isinstance(g, str) and g else log_target(str(c))
                        for g, c in zip(given, rows["command"], strict=True)]
    return rows.sort_values("time", kind="stable").reset_index(drop=True)


def verdicts(inc: Incident, launch_ref) -> pd.DataFrame:
    """The `dflash-postmortem launch` verdict lines printed for one launch (empty for others)."""
    ev = inc.events
    if "launch_ref" not in ev.columns or not isinstance(launch_ref, str):
        return ev.iloc[:0]
    return ev[(ev["kind"] == "launch_check") & (ev["launch_ref"] == launch_ref)].sort_values("time", kind="stable")


def is_trainer(command: str, script: str | None) -> bool:
    """A process running the launched script itself, not a shell or session wrapping it."""
    if not command or not script or script not in command:
        return False
    return not is_wrapper_process(command)


def _log_sources(inc: Incident) -> pd.DataFrame:
    """Each log-like source: its file name and the first and last time it says anything."""
    parts = [df[["source", "time"]] for df in (inc.metrics, inc.events) if not df.empty]
    if not parts:
        return pd.DataFrame(columns=["source", "name", "first", "last"])
    both = pd.concat(parts).dropna()
    g = both.groupby("source")["time"].agg(["min", "max"]).reset_index()
    g.columns = ["source", "first", "last"]
    g["name"] = [PurePosixPath(str(s)).name for s in g["source"]]
    return g


def outcomes(inc: Incident) -> pd.DataFrame:
    """One row per launch: what appeared after it (process, log, GPU memory, first step)."""
    return memo.cached(inc, "outcomes", ("events", "processes", "metrics"), lambda: _outcomes(inc))


def _outcomes(inc: Incident) -> pd.DataFrame:
    launches = launch_events(inc)
    if launches.empty:
        return launches
    logs = _log_sources(inc)
    procs = inc.processes
    commands = procs["command"].fillna("").astype(str)
    tok = inc.metrics[inc.metrics["metric"] == TOK_PER_S].sort_values("time", kind="stable")
    # Grouped once: every launch looks up its own script, log and run in these.
    by_script = {s: _by_seen(procs[commands.map(lambda c, s=s: is_trainer(c, s)).astype(bool)])
                 for s in launches["script"].dropna().unique()}
    by_source = {k: g for k, g in tok.groupby("source", sort=False)}
    by_run = {k: g for k, g in tok.groupby("run", sort=False)}
    logs_by_name = {k: g for k, g in logs.groupby("name", sort=False)}
    out = []
    for i, L in launches.iterrows():
        nxt = launches["time"].iloc[i + 1] if i + 1 < len(launches) else None
        row = L.to_dict()
        # The process this launch started: first seen after it (and before the next launch
        # claims it), running its script, started no earlier than the launch.
        cand = by_script.get(L["script"], _by_seen(procs.iloc[:0]))
        # Only processes first seen from the launch on (to the next launch) can be its own.
        lo = cand["seen"].searchsorted(L["time"], side="left")
        hi = cand["seen"].searchsorted(nxt, side="left") if nxt is not None else len(cand)
        window = cand.iloc[lo:hi]
        mine = window[window["start"] >= L["time"].floor("min")]
        row["process"] = mine.iloc[0].drop(["seen", "start"]) if len(mine) else None
        row["stale"] = cand[cand["start"] < L["time"].floor("min")] if len(cand) else cand
        # Its log: a source with the redirect target's file name whose first line follows it.
        log = None
        if isinstance(L["log_path"], str):
            named = logs_by_name.get(PurePosixPath(L["log_path"]).name, logs.iloc[:0])
            hit = named[named["first"] >= L["time"]]
            if nxt is not None:
                hit = hit[hit["first"] < nxt]
            log = hit.iloc[0] if len(hit) else None
        row["log"] = log
        run = None
        own = by_source.get(log["source"]) if log is not None else None
        if own is not None:
            runs = own["run"].dropna()
            run = runs.iloc[0] if len(runs) else None
        if run is None and isinstance(L.get("run"), str) and L.get("run"):
            run = L.get("run")
        if run is None:
            run = L["flags"].get("--run-name") or L["flags"].get("--run_name")
        row["run"] = run
        if log is not None:
            steps = own if own is not None else tok.iloc[:0]
        elif not isinstance(L["log_path"], str) and run is not None:
            steps = by_run.get(run, tok.iloc[:0])
        else:
            steps = tok.iloc[:0]
        steps = steps[steps["time"] >= L["time"]]
        row["first_step"] = steps.iloc[0] if len(steps) else None
        out.append(row)
    return pd.DataFrame(out)


def _by_seen(procs: pd.DataFrame) -> pd.DataFrame:
    """Processes ordered by when they were first seen (`seen`), with `start` as the best start
    time known: what a launch's lookup searches."""
    seen = procs["first_seen"].fillna(procs["started"])
    start = procs["started"].fillna(procs["first_seen"])
    out = procs.assign(seen=seen, start=start).dropna(subset=["seen"])
    return out.sort_values("seen", kind="stable")


def launch_of(inc: Incident, run, before) -> pd.Series | None:
    """The last launch of `run` (by run name, log file, or --run-name) before `before`."""
    oc = outcomes(inc)
    if oc.empty:
        return None
    # Each run's launches, grouped once per scope: a lookup per episode over every launch made
    # detection grow faster than the evidence.
    by_run = memo.cached(inc, "outcomes:by_run", ("events", "processes", "metrics"),
                         lambda: oc.groupby("run", sort=False, dropna=True).indices)
    idx = by_run.get(run)
    if idx is None:
        return None
    mine = oc.iloc[idx]
    hit = mine[mine["time"] <= before]
    return hit.iloc[-1] if len(hit) else None
