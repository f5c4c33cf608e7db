"""The stories of the incidents recorded on an H200 with an operator habit each (data/incidents/
h200-1gpu-*): what the kit says against what was done, as each README's table tells it from the
recording driver's own clock. Times are held to 5 s (a `script` typescript dates its commands
only by the `date`s typed; ps and top list to the second), PIDs exactly."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.detect import detect
from dflash_postmortem.model import attempts

REPO = Path(__file__).resolve().parents[2]
NEAR = pd.Timedelta(seconds=5)


def T(hms: str) -> pd.Timestamp:
    return pd.Timestamp(f"2026-12-02 {hms}", tz="UTC")


def near(t, hms: str) -> bool:
    return pd.notna(t) and abs(t - T(hms)) <= NEAR


@pytest.fixture(scope="module")
def told():
    """Each incident loaded once: (incident, attempts, findings)."""
    cache = {}

    def get(name: str):
        if name not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inc = pm.load_incident(REPO / "data" / "incidents" / name)
            cache[name] = (inc, attempts(inc), detect(inc))
        return cache[name]

    return get


def _kinds(found: pd.DataFrame) -> list[str]:
    return sorted(found["kind"])


def test_a_bash_x_launch_dies_of_cuda_oom_beside_a_leftover_job(told):
    _, att, found = told("h200-1gpu-oom-bashx")
    assert len(att) == 2
    first, second = att.iloc[0], att.iloc[1]
    # 02:34:08.881: the bash -x launcher; its trainer PID 1073 died of CUDA OOM in start-up
    assert near(first["start"], "02:34:08") and 1073 in first["pids"] and pd.isna(first["first_step"])
    assert first["end_kind"] == "oom"
    # 02:34:24.419: the same launcher again, trainer PID 1139, trained
    assert near(second["start"], "02:34:24") and 1139 in second["pids"] and pd.notna(second["first_step"])
    failed = found[found["kind"] == "failed_restart"].iloc[0]
    assert near(failed["start"], "02:34:08") and failed["numbers"]["reason"] == "out of memory in start-up"
    assert "PID 1024" in failed["detail"]  # the leftover job holding 128 GiB
    stale = found[found["kind"] == "stale_process"].iloc[0]
    assert stale["numbers"]["pid"] == 1024 and near(stale["start"], "02:33:58")
    assert [c["id"] for c in failed["caused_by"]][-1] == stale["id"]


def test_a_nohup_start_with_no_transcript_dies_and_stays_dead(told):
    _, att, found = told("h200-1gpu-nohup-crash")
    (a,) = [r for _, r in att.iterrows()]
    assert near(a["start"], "02:36:33") and a["pids"] == [1529] and near(a["first_step"], "02:36:49")
    assert _kinds(found) == ["training_died"]
    died = found.iloc[0]
    assert near(died["start"], "02:37:12") and died["numbers"]["pid"] == 1529
    assert died["numbers"]["error"] == "RuntimeError: injected failure in the drafter at its step 150"
    assert died["numbers"]["restarted_at"] is None


def test_a_dead_drafter_thread_leaves_a_stalled_process_until_the_kill(told):
    _, att, found = told("h200-1gpu-thread-death")
    assert len(att) == 2 and att.iloc[0]["pids"] == [1251] and att.iloc[1]["pids"] == [1431]
    assert near(att.iloc[0]["first_step"], "02:35:10") and att.iloc[0]["end_kind"] == "killed"
    stall = found[found["kind"] == "stall"].iloc[0]
    # the thread died after its step 115 (~02:35:24); the operator killed PID 1251 at 02:35:59.677
    assert near(stall["start"], "02:35:24") and near(stall["end"], "02:35:59")
    assert "injected failure in the drafter at its step 120" in stall["detail"]
    assert near(att.iloc[1]["start"], "02:36:02") and pd.notna(att.iloc[1]["first_step"])
    assert "training_died" not in set(found["kind"])  # the process outlived its thread


def test_a_supervisor_restarts_a_dead_run_that_resumes_from_its_checkpoint(told):
    _, att, found = told("h200-1gpu-resume-supervisor")
    assert len(att) == 2
    assert att.iloc[0]["pids"] == [2882] and att.iloc[1]["pids"] == [3020]
    assert att.iloc[1]["by"] == "supervisor" and att.iloc[0]["job"] == att.iloc[1]["job"]
    died = found[found["kind"] == "training_died"].iloc[0]
    n = died["numbers"]
    assert near(died["start"], "02:47:28") and near(n["restarted_at"], "02:47:35")
    assert n["restarted_by"] == "supervisor" and n["resumed_step"] == 120
    assert n["reached_step"] == 125 and n["redone_steps"] == 5  # the last step it logged: 125


def test_a_torchrun_rank_hangs_the_collective_times_out_and_the_restart_never_sets_up(told):
    _, att, found = told("h200-1gpu-torchrun-halt")
    assert len(att) == 2
    first, restart = att.iloc[0], att.iloc[1]
    assert first["by"] == "operator" and restart["by"] == "agent" and first["job"] == restart["job"]
    assert (first["job_attempt"], restart["job_attempt"]) == (0, 1)
    assert {939, 940} <= set(first["pids"]) and {999, 1000} <= set(restart["pids"])
    assert first["ranks"] == [0, 1] and near(first["first_step"], "02:32:51")
    died = found[found["kind"] == "training_died"].iloc[0]
    n = died["numbers"]
    # both ranks' last step lines at 02:33:18; rank 0's gloo recv timed out at 02:33:49
    assert near(n["last_step_time"], "02:33:18") and near(died["start"], "02:33:49") and n["error_rank"] == 0
    assert "Timed out waiting 30000ms for recv" in n["error"] and n["hung"]
    assert n["restarted_by"] == "agent" and near(n["restarted_at"], "02:33:53")
    failed = found[found["kind"] == "failed_restart"].iloc[0]
    # the agent's restart failed in process-group setup at 02:33:56; the job ended 02:33:57
    assert near(failed["start"], "02:33:53") and near(failed["end"], "02:33:57")
    assert "connectFullMesh failed" in failed["detail"]
    assert "stale_process" not in set(found["kind"])  # the agent, PID 917, is the job's own


@pytest.mark.parametrize(("name", "firsts"), [
    ("h200-1gpu-alternating", ["02:48:29"]),
    ("h200-1gpu-clean-relaunch", ["02:49:10", "02:49:51"]),
])
def test_healthy_runs_have_no_finding(told, name, firsts):
    _, att, found = told(name)
    assert found.empty, found[["kind", "title"]].to_string()
    assert len(att) == len(firsts)
    assert all(near(a["first_step"], f) for (_, a), f in zip(att.iterrows(), firsts, strict=True))
    assert (att["end_kind"] == "training_stop").all()
