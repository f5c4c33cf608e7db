"""The cause chain on real H200 captures of issue #13's incident: every link, with the lines it
cites opened.

h200-1gpu-survivor: an operator at an interactive terminal; `kill -TERM -- -$(cat pid_file)`
fails (the PID file names a process, not a group), the regressed trainer keeps GPU 0, a relaunch
under `timeout -s KILL 2` dies before writing a line, the relaunch after it trains at 0.47 of
baseline beside the survivor, and the survivor killed by its PID brings the throughput back.
h200-1gpu-never-trains: a start that never leaves `Loading target model`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.analysis.timeline import impact
from dflash_postmortem.model import states

REPO = Path(__file__).resolve().parents[2]

SURVIVOR = REPO / "data" / "incidents" / "h200-1gpu-survivor"
NEVER = REPO / "data" / "incidents" / "h200-1gpu-never-trains"
T = lambda x: pd.Timestamp(f"2026-12-01 {x}", tz="UTC")  # noqa: E731


def _load(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(folder)
    return inc, pm.detect(inc)


@pytest.fixture(scope="module")
def survivor():
    return _load(SURVIVOR)


def _one(found: pd.DataFrame, kind: str) -> pd.Series:
    hit = found[found["kind"] == kind]
    assert len(hit) == 1, (kind, list(found["kind"]))
    return hit.iloc[0]


def _cited(line_at, root, refs) -> list[str]:
    """The cited lines as the terminal showed them (bracketed-paste codes and CRs dropped)."""
    return [line_at(root, r).replace("\x1b[?2004h", "").replace("\x1b[?2004l", "").replace("\r", "") for r in refs]


def test_survivor_findings_are_the_story(survivor):
    _, found = survivor
    assert list(found["kind"]) == ["stale_process", "throughput_regression", "kill_failed", "survivor",
                                   "failed_restart", "partial_recovery", "recovery"]


def test_the_regression_is_caused_by_the_flags_of_its_launch(survivor, line_at):
    _, found = survivor
    reg = _one(found, "throughput_regression")
    n = reg["numbers"]
    assert (round(n["baseline_tok_per_s"]), round(n["degraded_tok_per_s"])) == (75724, 53541)
    assert n["flag_differences"] == ["--fast-linear-attn 0", "--use-reentrant 0", "--draft-layer-ckpt 1", "--lm-head-opt 0"]
    flags = reg["caused_by"][0]
    assert flags["id"] == "event:logs/terminal.log:8"
    assert "--fast-linear-attn 0 --use-reentrant 0 --draft-layer-ckpt 1 --lm-head-opt 0" in _cited(line_at, SURVIVOR, flags["evidence"])[0]


def test_the_failed_kill_leaves_a_survivor_that_keeps_gpu_0(survivor, line_at):
    _, found = survivor
    kill, surv = _one(found, "kill_failed"), _one(found, "survivor")
    assert kill["numbers"] == {"pid": 789, "group": True, "run": "regressed",
                               "message": "bash: kill: (-789) - No such process", "refused": True,
                               "process_group": 787, "still": surv["numbers"]["still"], "until": surv["end"],
                               "signal": "SIGTERM", "aimed_again_at": None}
    assert surv["numbers"]["still"] == ["listed by ps", "holding GPU memory", "logging training steps (run regressed)"]
    assert "the PID named a process, not a process group" in kill["detail"]
    assert _cited(line_at, SURVIVOR, kill["evidence"]) == [
        "root@gpu-node:/tmp/survivor/incident# kill -TERM -- -$(cat run/regressed.pid)",
        "bash: kill: (-789) - No such process"]
    assert surv["numbers"]["pid"] == 789 and surv["numbers"]["memory_mib_by_gpu"] == {0: 11860.0}
    assert surv["end"] == T("10:31:59.669")  # its last per-process GPU sample
    assert [c["id"] for c in surv["caused_by"]] == [kill["id"]]
    # The survivor's evidence shows it alive after the kill: a ps line, a GPU sample, a step line.
    cited = _cited(line_at, SURVIVOR, surv["evidence"])
    assert any(" 789 " in c and "run-name regressed" in c for c in cited)
    assert any(c.startswith("2026-12-01 10:31:5") and "[regressed] step" in c for c in cited)


def test_the_restart_under_timeout_is_killed_by_its_wrapper(survivor, line_at):
    _, found = survivor
    f = _one(found, "failed_restart")
    assert f["numbers"]["reason"] == "killed by its timeout wrapper"
    assert f["start"] == T("10:31:06")
    # the typescript dates the command by the `date` before it; the next clock it gives is 10:31:08
    assert f["within_s"] == 2.0
    assert f["title"] == "restart at 10:31:06 (up to 2 s later) never came up: killed by its timeout wrapper"
    assert [c["id"] for c in f["caused_by"]] == [
        "event:logs/terminal.log:15", "event:logs/terminal.log:16", "event:logs/terminal.log:17"]
    cited = _cited(line_at, SURVIVOR, [c["evidence"][0] for c in f["caused_by"]])
    assert cited[0].startswith("root@gpu-node:/tmp/survivor/incident# timeout -s KILL 2 ")
    assert cited[1:] == ["Killed", "exit=137"]
    # The GPU memory during that launch was the survivor's, not the new process's.
    assert "0 GPU samples held by PID 1022 (memory held only by PID(s) 789)" in f["detail"]


def test_the_relaunch_beside_the_survivor_is_a_partial_recovery(survivor, line_at):
    _, found = survivor
    p = _one(found, "partial_recovery")
    n = p["numbers"]
    assert n["run"] == "fixed" and round(n["ratio"], 2) == 0.47 and n["other_pids"] == [789]
    assert n["reasons"] == ["another process holds memory on its GPUs: PID 789 (11860 MiB on GPU 0)"]
    assert [c["id"] for c in p["caused_by"]] == [_one(found, "survivor")["id"]]
    assert all("[fixed] step" in c for c in _cited(line_at, SURVIVOR, p["evidence"][:5]))


def test_the_recovery_comes_with_the_survivors_kill(survivor, line_at):
    inc, found = survivor
    r = _one(found, "recovery")
    assert r["start"] == T("10:32:01") and round(r["numbers"]["ratio"], 2) == 1.02
    fix = r["caused_by"][0]
    assert fix["id"] == "event:logs/terminal.log:136"
    assert _cited(line_at, SURVIVOR, fix["evidence"]) == ["root@gpu-node:/tmp/survivor/incident# kill $(cat run/regressed.pid)"]
    imp = impact(inc, found)
    assert imp["mitigated_ref"] == "logs/terminal.log:136"
    assert imp["time_to_recover_s"] == 75.0


def test_what_happened_tells_the_chain(survivor):
    inc, found = survivor
    lines = pm.what_happened(inc, found, impact(inc, found))
    assert len(lines) == 5
    assert lines[0] == ("At 10:30:46 UTC throughput fell from 75.7K tok/s to 53.5K tok/s (0.71 of baseline) when run "
                        "regressed replaced run baseline, started with --fast-linear-attn 0 --use-reentrant 0 "
                        "--draft-layer-ckpt 1 --lm-head-opt 0.")
    assert lines[1] == ("At 10:31:06 UTC the kill meant to stop PID 789 failed (`bash: kill: (-789) - No such process`): "
                        "the PID file named a process, not a process group; PID 789 kept running on GPU 0 until 10:31:59 UTC.")
    assert lines[2].startswith("The restart at 10:31:06 UTC never came up: killed by its timeout wrapper")
    assert lines[3] == ("The relaunch at 10:31:26 UTC trained at only 35.6K tok/s (0.47 of baseline) because another "
                        "process holds memory on its GPUs: PID 789 (11860 MiB on GPU 0).")
    assert lines[4].startswith("Throughput recovered to 77.0K tok/s (1.02 of baseline) at 10:32:01 UTC, 75 s after the "
                               "drop began, once the operator stopped PID(s) 789 at 10:31:56 (`kill $(cat run/regressed.pid)`)")


def test_a_start_that_never_trains(line_at):
    inc, found = _load(NEVER)
    assert list(found["kind"]) == ["never_trained", "verified_start"]
    f = found.iloc[0]
    n = f["numbers"]
    assert n["run"] == "big" and n["pid"] == 1553 and n["last_stage"] == "Loading target model on cuda:0 ..."
    # from its last stage line (10:25:24) to the operator's `pkill` that ended it (10:27:27.441)
    assert n["seconds_in_stage"] == pytest.approx(123.4, abs=0.1)
    # the model's states say so: starting, stalled in start-up from its stage line, never trained
    st = states(inc)
    mine = st[st["attempt"] == "A1"]
    assert mine["state"].tolist() == ["starting", "stalled", "never trained"]
    stalled = mine.iloc[1]
    assert (stalled["start"], stalled["ref"]) == (T("10:25:24"), "logs/train.log:3")
    mib = [m for _, m in n["memory_mib"]]
    assert mib == sorted(mib) and mib[0] < 5000 and mib[-1] > 25000  # the creep, sampled
    assert _cited(line_at, NEVER, [f["caused_by"][0]["evidence"][0]]) == [
        "2026-12-01 10:25:24 [big] Loading target model on cuda:0 ..."]
    lines = pm.what_happened(inc, found, impact(inc, found))
    assert lines[0].startswith("At 10:25:20 UTC run big was launched and never reached training: it stayed at "
                               "`Loading target model on cuda:0 ...` for 123 s while its GPU memory crept from")
    assert lines[1] == "The relaunch at 10:27:30 UTC came up, checked by dflash-postmortem launch; its first step was logged at 10:27:47 UTC."
    imp = impact(inc, found)
    assert imp["first_sign"] == f["start"] and imp["recovered"] == T("10:27:47")
    assert imp["gpu_hours_lost"] == pytest.approx((T("10:27:47") - f["start"]).total_seconds() / 3600)
