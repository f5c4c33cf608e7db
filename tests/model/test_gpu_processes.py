"""A start that no listing ties to a process takes the one that came onto the GPUs while it started
(nvidia-smi's process list): not one that was there before it, nor one that came mid-training."""

from __future__ import annotations

from pathlib import Path

from support.bundled import loaded

import dflash_postmortem as pm
from dflash_postmortem.model import attempts
from dflash_postmortem.present.sentences import what_happened

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"


def test_two_foreground_runs_take_the_processes_the_gpu_list_shows_while_each_started():
    # README: the same command at 02:48:55.841 and 02:49:40.634 in a `script` session, no PID
    # printed; smi_apps.csv lists PID 3307 from the first's start-up to 02:49:31.874, then 3370
    att = attempts(loaded("h200-1gpu-clean-relaunch")[0])
    assert att["pids"].tolist() == [[3307], [3370]]
    assert att["gpus"].tolist() == [[0], [0]]
    assert str(att["last_alive"].iloc[0]) == "2026-12-02 02:49:31.874000+00:00"


def test_a_process_there_before_the_start_or_come_mid_training_is_not_the_starts():
    # README: PID 1024 held 128.51 GiB before the launcher ran; its trainers were 1073 and 1139
    oom = attempts(loaded("h200-1gpu-oom-bashx")[0])
    assert oom["pids"].tolist() == [[1073], [1139]]
    # README: another user's job (PID 877) started at 21:19:59.260, mid-training of PID 601's run
    shared = attempts(loaded("h200-1gpu-pl-contention")[0])
    assert all(877 not in pids for pids in shared["pids"])


def _background_run_sent_sigint(folder: Path) -> None:
    """What a shell session leaves when a background job (which ignores SIGINT: a non-interactive
    shell starts it so) is sent `kill -INT`, goes on training, and is stopped by `kill`: recorded
    on this machine with the replay trainer on CPU (2026-12-04), lines cut to the ones that tell."""
    (folder / "logs").mkdir(parents=True)
    cmd = ("nohup python -m dflash_postmortem.replay.train --cpu --run-name sigint --seconds 120 --log-every 5 "
           "--no-wandb > logs/train.log 2>&1 &")
    (folder / "logs" / "operator.log").write_text(
        f"[2026-12-04T04:40:45.575Z] $ {cmd}\n"
        "[2026-12-04T04:41:10.581Z] $ kill -INT 23974\n"
        "[2026-12-04T04:41:15.584Z] $ ps -p 23974\n"
        "  PID TTY          TIME CMD\n"
        "23974 ?        00:00:41 python\n"
        "[2026-12-04T04:41:19.076Z] $ kill 23974\n"
        "[2026-12-04T04:41:22.080Z] $ ps -p 23974\n"
        "  PID TTY          TIME CMD\n")
    lines = ["2026-12-04 04:40:46 [sigint] Loading target model on cpu ...",
             "2026-12-04 04:40:47 [sigint] Starting training threads"]
    lines += [f"2026-12-04 04:{40 + (47 + s) // 60:02d}:{(47 + s) % 60:02d} [sigint] step {5 * (s + 1)} loss 6.4 "
              f"tok/s {13000 + 37 * (s % 5)} queue 4" for s in range(33)]  # 04:40:47 .. 04:41:19
    (folder / "logs" / "train.log").write_text("\n".join(lines) + "\n")


def test_a_process_a_listing_names_by_its_program_alone_is_the_start_whose_log_it_wrote_meanwhile(tmp_path):
    _background_run_sent_sigint(tmp_path)
    inc = pm.load_incident(tmp_path)
    (a,) = attempts(inc).itertuples(index=False)
    assert a.pids == [23974]  # `ps -p 23974` shows `python` while only that start's log was written
    found = pm.detect(inc)
    survivor = found[found["kind"] == "survivor"].iloc[0]
    # SIGINT at 04:41:10 did not stop it: its log went on to 04:41:19, when `kill` (SIGTERM) was sent
    assert str(survivor["start"]) == "2026-12-04 04:41:10.581000+00:00"
    assert str(survivor["end"]) == "2026-12-04 04:41:19+00:00"
    told = " ".join(what_happened(inc, found))
    assert "PID 23974 kept running until 04:41:19 UTC" in told  # no GPU sample: where it ran is not said


def test_a_log_alone_takes_the_python_process_that_came_onto_the_gpu_as_it_started(tmp_path):
    """h200-1gpu-timeout-limit without the operator's transcript: nothing shows how either run was
    launched. README: the first run's trainer is PID 1606 (on the GPU from 02:29:36.820, its
    first step 02:29:46), `timeout` killed it at ~02:30:18.8 with no word in its log; the resume
    (PID 1671) started at 02:30:24 from step 200. Read before as an attempt with no process and
    no end, and "Nothing went wrong": a trainer's log takes the one Python process that came onto
    the GPU while it started, so the process leaving the GPU ends it, and the resume tells it
    died."""
    import shutil

    folder = tmp_path / "timeout-limit"
    shutil.copytree(INCIDENTS / "h200-1gpu-timeout-limit", folder)
    (folder / "logs" / "operator.log").unlink()
    inc = pm.load_incident(folder)
    att = attempts(inc)
    assert att["pids"].tolist() == [[1606], [1671]]
    assert str(att["end"].iloc[0]) == "2026-12-05 02:30:18.843000+00:00"
    found = pm.detect(inc)
    assert found["kind"].tolist() == ["training_died"]
    n = found.iloc[0]["numbers"]
    assert n["pid"] == 1606 and n["resumed_step"] == 200 and n["redone_steps"] == 40
    assert str(n["restarted_at"]) == "2026-12-05 02:30:24+00:00"
