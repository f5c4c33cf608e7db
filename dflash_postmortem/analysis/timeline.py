"""The post-mortem timeline: first sign, detection, each action, mitigation, recovery, and cost.

Built from the findings and the operator's own actions (transcript commands), on the incident's
one UTC clock. Impact: time to detect / mitigate / recover from the first sign, GPU-hours lost
(GPUs held x time, weighted by the throughput shortfall against the baseline: a GPU at half the
baseline throughput loses half its hour, a GPU waiting for a restart loses all of it) and tokens
lost (the baseline's tokens minus those trained). Where the incident begins with a loss that
stopped being a number, nothing trained from then on is of use until the run's loss is a number
again: every GPU-second and the baseline's tokens of that window are lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..detect import detect
from ..detect.findings import refs as evidence_refs
from ..detect.throughput import series
from ..incident import Incident
from ..model.attempts import attempts, came_up_after
from ..model.pace import unit
from ..model.progress import resumes, steps_of
from ..schema import TIME
from .throughput_levels import baseline_and_source

COLUMNS = ("time", "phase", "what", "evidence")
# Findings that say nothing went wrong (a start checked, a recovery) or that only explain another.
_NOT_TROUBLE = ("verified_start", "recovery", "partial_recovery", "stale_process")
_ENDED = ("training_died", "time_limit", "stopped_by_signal")  # a run's end, which its next start may undo
_FIRST_SIGN = ("throughput_regression", "stall", "failed_restart", "never_trained", "loss_not_finite", *_ENDED)
# First signs after which nothing trained was of use until the recovery: a loss that broke, a run
# that died (its restart, and the steps its resume did again, are time lost too).
_ALL_LOST = ("loss_not_finite", *_ENDED)


@dataclass
class Timeline:
    """`events`: the ordered timeline frame; `impact`: durations and cost (see `impact`)."""

    events: pd.DataFrame
    impact: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.events)


def _row(time, phase, what, evidence=()) -> dict:
    return {"time": time, "phase": phase, "what": what, "evidence": list(evidence)}


def _kinds(f: pd.DataFrame, *kinds) -> pd.DataFrame:
    return f[f["kind"].isin(kinds)].sort_values("start", kind="stable")


def _milestones(inc: Incident, f: pd.DataFrame, s: pd.DataFrame) -> dict:
    """First sign, detection, mitigation and recovery times (None where the evidence has none);
    `s` is the throughput series."""
    first = _kinds(f, *_FIRST_SIGN)
    out = {"first_sign": first["start"].iloc[0] if len(first) else None,
           "first_sign_kind": first["kind"].iloc[0] if len(first) else None}
    # Recovered: back to the baseline; failing that, the partial recovery it ended with.
    rec = _kinds(f, "recovery")
    if rec.empty:
        rec = _kinds(f, "partial_recovery").tail(1)
    out["recovered"] = rec["start"].iloc[0] if len(rec) and out["first_sign"] is not None else None
    never = _kinds(f, "never_trained")
    up = _kinds(f, "verified_start")
    if out["recovered"] is None and len(never) and len(up[up["start"] > never["start"].iloc[0]]):
        # A start that never trained is over when a relaunch trains: its first step.
        first_up = up[up["start"] > never["start"].iloc[0]].iloc[0]
        out["recovered"] = first_up["end"]
        out["recovered_evidence"] = list(first_up["evidence"])[-1:]
    stalls = _kinds(f, "stall")
    if out["recovered"] is None and len(stalls) and _kinds(f, "throughput_regression").empty:
        # A stall with no throughput drop around it ends when training steps again.
        resumed = s[s["time"] > stalls["end"].iloc[-1]].head(1)
        out["recovered"] = resumed["time"].iloc[0] if len(resumed) else None
        out["recovered_evidence"] = evidence_refs(resumed)
        up = came_up_after(inc, stalls["start"].iloc[-1]) if resumed.empty else None
        if up is not None:
            # no pace to show it (a log placed at its starts): the start after the stall that
            # trained, back where the stall had stopped it
            out.update({k: v for k, v in _trained_back(inc, up, "where it had stalled").items()
                        if not k.startswith("mitigated")})
    failed = _kinds(f, "failed_restart")
    back = {}  # a start that mitigated what went wrong where nothing recovered (below)
    if out["recovered"] is None and out["first_sign_kind"] == "failed_restart":
        # starts that never came up are over when a start after the last of them trains, and
        # nothing goes wrong after it (a crash loop's next round trains, then dies again)
        up = came_up_after(inc, failed["start"].max())
        later = f[(f["start"] > up["start"]) & ~f["kind"].isin(_NOT_TROUBLE)] if up is not None else f.iloc[:0]
        if up is not None and later.empty:
            back = _trained_back(inc, up, "where it had been")
            out.update({k: v for k, v in back.items() if not k.startswith("mitigated")})
        elif up is not None and later["kind"].isin(_SLOWER).all():
            back = {"mitigated": up["start"], "mitigated_ref": up["launch_ref"] or up["start_ref"]}
    if out["recovered"] is None and out["first_sign_kind"] in _ENDED:
        back = _back_after_death(inc, f, first.iloc[0])
        out.update({k: v for k, v in back.items() if not k.startswith("mitigated")})
    again = [n for n in _kinds(f, "loss_not_finite")["numbers"] if n.get("again_at") is not None]
    if out["recovered"] is None and out["first_sign_kind"] == "loss_not_finite" and again:
        # a loss that broke is over where the run's loss is a number again (detect/divergence.py)
        out["recovered"], out["recovered_evidence"] = again[-1]["again_at"], [again[-1]["again_ref"]]
    ev = inc.events
    cmds = ev[ev["kind"] == "command"].sort_values("time", kind="stable")
    out["detected"] = out["detected_ref"] = None
    if out["first_sign"] is not None:
        after = cmds[cmds["time"] > out["first_sign"]]
        if len(after):
            out["detected"], out["detected_ref"] = after["time"].iloc[0], after["ref"].iloc[0]
    out["mitigated"] = out["mitigated_ref"] = None
    if out["recovered"] is not None:
        fix = _fix_of(ev, rec)
        if fix is not None:
            # The recovery names what ended the incident (a survivor stopped): that is the mitigation.
            out["mitigated"], out["mitigated_ref"] = fix["time"], fix["ref"]
        else:
            # the relaunch that brought it back: after the first sign (the launch of the run
            # that slowed down and came back by itself mitigated nothing)
            # (a start typed in the foreground into a log is a command the model took as a launch)
            started = set(attempts(inc)["launch_ref"].dropna())
            launches = ev[((ev["kind"] == "launch") | ((ev["kind"] == "command") & ev["ref"].isin(started)))
                          & (ev["time"] <= out["recovered"])].drop_duplicates("ref")
            if out["first_sign"] is not None:
                launches = launches[launches["time"] >= out["first_sign"]]
            failed = set(_kinds(f, "failed_restart")["start"])
            ok = launches[~launches["time"].isin(failed)]
            if len(ok):
                out["mitigated"], out["mitigated_ref"] = ok["time"].iloc[-1], ok["ref"].iloc[-1]
    elif "mitigated" in back:
        out["mitigated"], out["mitigated_ref"] = back["mitigated"], back["mitigated_ref"]
    return out


def _back_after_death(inc: Incident, f: pd.DataFrame, died: pd.Series) -> dict:
    """Where a run that died (or a limit stopped) was back: its next start passed the step it had
    reached (`resumes`' `redone_until`), else that start's first step where it resumed nothing;
    none where that start, or anything after it, went wrong too (detect/deaths.py names it)."""
    b = _trained_again(inc, died)
    if b is None:
        return {}
    later = f[(f["start"] > died["start"]) & ~f["kind"].isin(_NOT_TROUBLE)]
    if len(later) and later["kind"].isin(_ENDED).all():
        # it ended again, and again came back (a job preempted twice): back where the last came back
        return _back_after_death(inc, f, later.sort_values("start", kind="stable").iloc[-1])
    if len(later):
        return {"mitigated": b["start"], "mitigated_ref": b["launch_ref"] or b["start_ref"]} \
            if later["kind"].isin(_SLOWER).all() else {}
    return _trained_back(inc, b, "where it had died")


def _trained_back(inc: Incident, b: pd.Series, where: str) -> dict:
    """Where a start that trained again was back: its first step, or where it began below the
    step its job had reached (`resumes`), when its steps passed that one again; still below it
    when the evidence ends, it only mitigated."""
    redo = resumes(inc)
    redo = redo[redo["attempt"] == b["attempt"]]
    if len(redo) and not redo["caught_up"].iloc[0]:
        return {"mitigated": b["start"], "mitigated_ref": b["launch_ref"] or b["start_ref"]}
    if len(redo):
        until = redo["redone_until"].iloc[0]
        steps = steps_of(inc, b)
        return {"recovered": until, "recovered_evidence": evidence_refs(steps[steps["time"] == until].head(1)),
                "recovered_what": f"past step {int(redo['reached_step'].iloc[0])} again, {where}"}
    return {"recovered": b["first_step"],
            "recovered_evidence": [b["first_step_ref"]] if isinstance(b["first_step_ref"], str) else []}


# What a start that trained, but slower than before, leaves: the start mitigated what went wrong
# before it (a death, starts that never came up), and nothing has recovered yet.
_SLOWER = ("throughput_regression", "partial_recovery", "no_recovery")


def _trained_again(inc: Incident, died: pd.Series) -> pd.Series | None:
    """The start after a death (detect/deaths.py's `next_attempt`) where it reached a step."""
    att = attempts(inc)
    b = att[att["attempt"] == died["numbers"].get("next_attempt")]
    return None if b.empty or pd.isna(b["first_step"].iloc[0]) else b.iloc[0]


def _fix_of(ev: pd.DataFrame, rec: pd.DataFrame) -> pd.Series | None:
    """The operator's command a recovery finding gives as its cause, if any."""
    if rec.empty:
        return None
    for c in rec["caused_by"].iloc[0]:
        if str(c["id"]).startswith("event:") and c["evidence"]:
            hit = ev[(ev["ref"] == c["evidence"][0]) & (ev["kind"] == "command")]
            if len(hit):
                return hit.iloc[0]
    return None


def _gpus_held(inc: Incident) -> tuple[int, str]:
    if inc.config.has_roles:
        hosts = inc.gpus["host"].dropna().unique().tolist() or inc.config.hosts or [None]
        n = sum(len({g for v in inc.config.roles_for(h).values() for g in v}) for h in hosts)
        return n, "GPUs named in incident.toml roles" + (f" on {len(hosts)} hosts" if len(hosts) > 1 else "")
    g = inc.gpus.dropna(subset=["gpu"])
    if len(g):
        n = int(g.groupby(g["host"].fillna(""))["gpu"].nunique().max())
        return n, "GPUs seen in the GPU samples"
    return 1, "no GPU source: assumed 1 GPU"


def impact(inc: Incident, findings: pd.DataFrame) -> dict:
    """Durations from the first sign and the cost of the incident window."""
    s = series(inc)
    m = _milestones(inc, findings, s)
    out = dict(m)
    t0 = m["first_sign"]
    for key, name in (("detected", "time_to_detect_s"), ("mitigated", "time_to_mitigate_s"),
                      ("recovered", "time_to_recover_s")):
        out[name] = (m[key] - t0).total_seconds() if t0 is not None and m[key] is not None else None
    baseline, baseline_from = baseline_and_source(inc, findings)
    n_gpus, how = _gpus_held(inc)
    out.update(baseline_tok_per_s=baseline, baseline_from=baseline_from if baseline is not None else None,
               gpus_held=n_gpus, gpus_held_from=how, unit=unit(inc))
    last = s["time"].max() if len(s) else None
    end = m["recovered"] if m["recovered"] is not None else (None if pd.isna(last) else last)
    if t0 is not None and baseline is None and end is not None and end > t0 and (
            len(_kinds(findings, "never_trained")) or m["first_sign_kind"] in _ALL_LOST):
        # Nothing trained from the start that never did to the relaunch's first step (or of use,
        # from a loss that broke to the loss a number again, from a death to its resume passing
        # the step it had reached): every GPU-second in between is lost;
        # tokens lost need a rate (incident.toml expected_tok_per_s).
        window = (end - t0).total_seconds()
        out.update(window_s=window, gpu_hours_held=n_gpus * window / 3600.0,
                   gpu_hours_lost=n_gpus * window / 3600.0, tokens_lost=None, mean_shortfall=1.0)
        return out
    if t0 is None or baseline is None or end is None or end <= t0:
        out.update(window_s=None, gpu_hours_held=None, gpu_hours_lost=None, tokens_lost=None)
        return out
    grid = pd.DataFrame({"time": pd.date_range(t0, end, freq="1s", inclusive="left").astype(TIME)})
    gaps = s.groupby("run")["time"].diff().dt.total_seconds().dropna()
    tol = max(10.0, 3 * float(gaps.median())) if len(gaps) else 60.0
    # A tok/s value logged at t describes the interval ending at t: look forward to it; a pace
    # counted from steps stands at the beginning of its interval (model/pace.py): look back.
    rate = pd.merge_asof(grid, s[["time", "value"]].sort_values("time"), on="time",
                         direction="forward" if out["unit"] == "tok/s" else "backward",
                         tolerance=pd.Timedelta(seconds=tol))["value"]
    rate = rate.fillna(0.0).to_numpy(dtype=float)
    if m["first_sign_kind"] in _ALL_LOST:
        rate = np.zeros_like(rate)  # what trains on a broken loss, or again what was done before a death, is of no use
    shortfall = np.clip(1.0 - rate / baseline, 0.0, 1.0)
    window = len(grid)
    # what the shortfall cost in the pace's own unit: tokens, or steps (model/pace.py)
    lost = float(np.clip(baseline - rate, 0.0, None).sum())
    out.update(
        window_s=float(window),
        gpu_hours_held=n_gpus * window / 3600.0,
        gpu_hours_lost=float(n_gpus * shortfall.sum() / 3600.0),
        mean_shortfall=float(shortfall.mean()),
        **({"tokens_lost": lost} if out["unit"] == "tok/s" else {"tokens_lost": None, "steps_lost": lost}),
    )
    return out


def timeline(incident: Incident, findings: pd.DataFrame | None = None) -> Timeline:
    """The ordered incident timeline with its impact (runs `detect` when findings are not given)."""
    if findings is None:
        findings = detect(incident)
    imp = impact(incident, findings)
    rows = []
    t0 = imp["first_sign"]
    for f in findings.itertuples():
        if f.kind == "verified_start" and f.start == imp["mitigated"]:
            continue  # its evidence goes on the mitigation row below
        phase = {"throughput_regression": "first sign" if f.start == t0 else "finding",
                 "stall": "first sign" if f.start == t0 else "finding",
                 "never_trained": "first sign" if f.start == t0 else "finding",
                 "loss_not_finite": "first sign" if f.start == t0 else "finding",
                 "training_died": "first sign" if f.start == t0 else "finding",
                 "time_limit": "first sign" if f.start == t0 else "finding",
                 "stopped_by_signal": "first sign" if f.start == t0 else "finding",
                 "kill_failed": "failed kill", "survivor": "survivor",
                 "failed_restart": "failed restart", "stale_process": "stale process", "verified_start": "verified start",
                 "recovery": "recovery", "partial_recovery": "partial recovery"}.get(f.kind, "finding")
        when = f.start
        if f.kind == "stale_process" and isinstance(f.numbers, dict):
            when = f.numbers.get("launch", f.start)
        rows.append(_row(when, phase, f.title, f.evidence[:3]))
    ev = incident.events
    if t0 is not None:
        end = imp["recovered"] if imp["recovered"] is not None else ev["time"].max()
        cmds = ev[(ev["kind"] == "command") & (ev["time"] > t0) & (ev["time"] <= end)]
        for c in cmds.itertuples():
            phase = ("detection" if c.ref == imp["detected_ref"] else
                     "mitigation" if c.ref == imp["mitigated_ref"] else "action")
            refs = [c.ref] if isinstance(c.ref, str) else []
            if phase == "mitigation":
                proof = findings[(findings["kind"] == "verified_start") & (findings["start"] == c.time)]
                refs += [r for ev in proof["evidence"] for r in ev if r not in refs]
            rows.append(_row(c.time, phase, f"$ {c.message}", refs))
    if "recovered_evidence" in imp and imp["recovered"] is not None:
        # A stall's or a start's end without a recovery finding: the first step after it is the proof.
        what = imp.get("recovered_what") or (
            "the loss a number again" if imp["first_sign_kind"] == "loss_not_finite" else "training steps again")
        rows.append(_row(imp["recovered"], "recovery", what, imp["recovered_evidence"]))
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df["time"] = pd.to_datetime(df["time"], utc=True).astype(TIME) if len(df) else pd.Series(dtype=TIME)
    df = df.sort_values("time", kind="stable").reset_index(drop=True)
    return Timeline(events=df, impact=imp)


__all__ = ["Timeline", "impact", "timeline"]
