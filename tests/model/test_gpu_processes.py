"""A start that no listing ties to a process takes the one that came onto the GPUs while it started
(nvidia-smi's process list): not one that was there before it, nor one that came mid-training."""

from __future__ import annotations

from pathlib import Path

import dflash_postmortem as pm
from dflash_postmortem.model import attempts

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"


def test_two_foreground_runs_take_the_processes_the_gpu_list_shows_while_each_started():
    # README: the same command at 02:48:55.841 and 02:49:40.634 in a `script` session, no PID
    # printed; smi_apps.csv lists PID 3307 from the first's start-up to 02:49:31.874, then 3370
    att = attempts(pm.load_incident(INCIDENTS / "h200-1gpu-clean-relaunch"))
    assert att["pids"].tolist() == [[3307], [3370]]
    assert att["gpus"].tolist() == [[0], [0]]
    assert str(att["last_alive"].iloc[0]) == "2026-12-02 02:49:31.874000+00:00"


def test_a_process_there_before_the_start_or_come_mid_training_is_not_the_starts():
    # README: PID 1024 held 128.51 GiB before the launcher ran; its trainers were 1073 and 1139
    oom = attempts(pm.load_incident(INCIDENTS / "h200-1gpu-oom-bashx"))
    assert oom["pids"].tolist() == [[1073], [1139]]
    # README: another user's job (PID 877) started at 21:19:59.260, mid-training of PID 601's run
    shared = attempts(pm.load_incident(INCIDENTS / "h200-1gpu-pl-contention"))
    assert all(877 not in pids for pids in shared["pids"])
