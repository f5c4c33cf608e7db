"""The stories of the incidents recorded on an H200 with an operator habit each (data/incidents/
h200-1gpu-*): what the kit says against what was done, as each README's table tells it from the
recording driver's own clock. Times are held to 5 s (a `script` typescript dates its commands
only by the `date`s typed; ps and top list to the second), PIDs exactly."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest
from support.bundled import loaded

import dflash_postmortem as pm
from dflash_postmortem.analysis.timeline import impact
from dflash_postmortem.detect import detect
from dflash_postmortem.model import attempts, ledger, states
from dflash_postmortem.model.pace import PACE_S, unit
from dflash_postmortem.model.progress import resumes

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

    def get(name):
        if name not in cache:
            inc, found = loaded(name)  # as a report reads it: tests/support/bundled.py
            cache[name] = (inc, attempts(inc), found)
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
    # ended by the operator's `kill $(cat run/lone.pid)` (typescript line 16), which bash's `Terminated`
    # then reported: the kill, not the report, is what ended it
    assert near(att.iloc[0]["first_step"], "02:35:10") and att.iloc[0]["end_kind"] == "kill_sent"
    assert att.iloc[0]["end_ref"] == "logs/terminal.typescript:16" and att.iloc[0]["signal"] == "SIGTERM"
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


def test_a_restart_loop_of_start_up_deaths_then_a_start_by_hand_that_trains(told):
    inc, att, found = told("h200-1gpu-crash-loop")
    # the loop's four trainers, each its own start (the loop's shell, PID 711, is their parent),
    # then the operator's; the recording driver (PID 467, python, no log, no GPU) is no start
    assert [a["pids"] for _, a in att.iterrows()] == [[714], [758], [804], [846], [879]]
    assert att["by"].tolist() == ["operator", "supervisor", "supervisor", "supervisor", "operator"]
    assert all(near(a["start"], t) for (_, a), t in zip(att.iterrows(), ["04:37:00", "04:37:09", "04:37:18",
                                                                          "04:37:26", "04:37:32"], strict=True))
    assert att.iloc[:4]["first_step"].isna().all() and near(att.iloc[4]["first_step"], "04:37:48")
    # the fourth was killed by the operator's `kill -- -$(cat run/loop.pid)`: the group, PID 711's
    assert att.iloc[3]["end_kind"] == "kill_sent" and near(att.iloc[3]["end"], "04:37:31")
    assert att.iloc[4]["end_kind"] == "training_stop" and near(att.iloc[4]["end"], "04:38:04")
    assert _kinds(found) == ["failed_restart"] * 4
    reasons = [n["reason"] for n in found.sort_values("start")["numbers"]]
    assert reasons == ["died in start-up"] * 3 + ["killed"]
    assert all("invalid device ordinal" in d for d in found.sort_values("start")["detail"].iloc[:3])
    story = " ".join(pm.what_happened(inc, found))
    assert "The start at 04:37:32 UTC by the operator came up: its first step was logged at 04:37:48 UTC" in story


def test_torchrun_restarts_that_its_agent_does_not_log_are_attempts(told):
    """torchrun at its default log level: no `Starting worker group`, only each attempt's end."""
    _, att, found = told("h200-1gpu-torchrun-crashloop")
    assert len(att) == 3 and att["job"].nunique() == 1 and att["job_attempt"].tolist() == [0, 1, 2]
    assert att["by"].tolist() == ["operator", "agent", "agent"]
    # the agent (491) belongs to the job; each attempt has its own workers
    assert {534, 535} <= set(att.iloc[0]["pids"])
    assert att.iloc[1]["pids"] == [610, 611] and att.iloc[2]["pids"] == [631, 632]
    assert near(att.iloc[0]["end"], "04:36:34") and near(att.iloc[1]["end"], "04:36:38")
    assert near(att.iloc[2]["end"], "04:36:58")
    assert _kinds(found) == ["failed_restart", "training_died", "training_died"]
    first, last = found[found["kind"] == "training_died"].sort_values("start")["numbers"]
    assert first["restarted_by"] == "agent" and near(first["restarted_at"], "04:36:37")
    assert last["restarted_at"] is None  # the agent gave up
    failed = found[found["kind"] == "failed_restart"].iloc[0]
    assert near(failed["start"], "04:36:37") and "connectFullMesh failed" in failed["detail"]
    assert "stall" not in set(found["kind"])  # rank 0 was killed within 2 s of rank 1's error


@pytest.mark.parametrize(("name", "firsts", "ends"), [
    ("h200-1gpu-alternating", ["02:48:29"], [("training_stop", None)]),
    # each run's own `...; echo exit=$?` printed exit=0 (README), the status of the command that ran it
    ("h200-1gpu-clean-relaunch", ["02:49:10", "02:49:51"], [("exit", 0), ("exit", 0)]),
])
def test_healthy_runs_have_no_finding(told, name, firsts, ends):
    _, att, found = told(name)
    assert found.empty, found[["kind", "title"]].to_string()
    assert len(att) == len(firsts)
    assert all(near(a["first_step"], f) for (_, a), f in zip(att.iterrows(), firsts, strict=True))
    assert [(k, None if pd.isna(c) else int(c)) for k, c in zip(att["end_kind"], att["exit_code"], strict=True)] == ends


def test_a_torchrun_run_on_cpu_tells_the_same_story(told):
    """The CPU recording of tests/loaders/launchers/fixtures (its README): torchrun with INFO logs,
    no transcript; rank 1 hangs at its drafter step 30, rank 0's gloo recv times out after 8 s,
    the agent restarts the group, whose ranks time out connecting gloo; the agent gives up."""
    _, att, found = told(REPO / "tests" / "loaders" / "launchers" / "fixtures" / "torchrun-gloo-hang-restart")
    assert len(att) == 2 and (att["by"] == "agent").all() and (att["launcher"] == "torchrun").all()
    assert att["job_attempt"].tolist() == [0, 1] and att["job"].nunique() == 1
    assert [r for r in att["ranks"]] == [[0, 1], [0, 1]]
    assert pd.notna(att.iloc[0]["first_step"]) and pd.isna(att.iloc[1]["first_step"])
    assert _kinds(found) == ["failed_restart", "training_died"]
    died = found[found["kind"] == "training_died"].iloc[0]
    assert near(died["start"], "01:54:16") and died["numbers"]["error_rank"] == 0
    assert "Timed out waiting 8000ms for recv" in died["numbers"]["error"]
    assert near(died["numbers"]["restarted_at"], "01:54:17") and died["numbers"]["restarted_by"] == "agent"
    failed = found[found["kind"] == "failed_restart"].iloc[0]
    assert near(failed["start"], "01:54:17") and near(failed["end"], "01:55:01")
    assert "connectFullMesh failed" in failed["detail"]


def test_tmux_kill_session_leaves_a_nohup_trainer_alive_told_from_bash_history_alone(told):
    """The operator's only record is bash's own history: `tmux kill-session -t train` at
    17:38:19.948 sent SIGHUP to a trainer started under nohup (PID 582), which trained on until
    `kill 582` at 17:39:13.538; the relaunch at 17:38:22.957 (PID 732) shared GPU 0 with it."""
    inc, att, found = told("h200-1gpu-tmux-history")
    assert len(att) == 2 and att["by"].tolist() == ["operator", "operator"]
    first, second = att.iloc[0], att.iloc[1]
    assert near(first["start"], "17:37:38") and first["pids"] == [582] and near(first["first_step"], "17:37:54")
    assert near(second["start"], "17:38:22") and second["pids"] == [732]
    assert first["end_kind"] == "kill_sent" and near(first["end"], "17:39:13")
    assert first["end_ref"] == "logs/bash_history:16"  # `kill 582`, not the kill-session that missed it
    assert second["end_kind"] == "training_stop" and near(second["end"], "17:40:12")
    assert _kinds(found) == ["kill_failed", "survivor"]
    kill = found[found["kind"] == "kill_failed"].iloc[0]
    assert near(kill["start"], "17:38:19") and kill["numbers"]["pid"] == 582 and kill["evidence"][0] == "logs/bash_history:6"
    survivor = found[found["kind"] == "survivor"].iloc[0]
    assert near(survivor["numbers"]["until"], "17:39:13") and survivor["numbers"]["memory_mib_by_gpu"] == {0: 5622.0}
    assert survivor["caused_by"][0]["id"] == kill["id"]


def test_sigint_to_a_background_run_is_ignored_and_the_kill_after_it_ends_the_run(told):
    """`kill -INT 641` at 05:18:42.356 reached a run started in the background by a non-interactive
    shell (SIGINT ignored): it trained on to its step 145 at 05:19:02; `kill 641` at 05:19:02.994
    ended it; the relaunch at 05:19:08.632 (PID 713) trained from 05:19:23 and stopped at 05:19:46.
    No PID was printed at the launch: nvidia-smi's process list ties each run to its process."""
    inc, att, found = told("h200-1gpu-sigint-ignored")
    at = lambda hms: pd.Timestamp(f"2026-12-04 {hms}", tz="UTC")  # noqa: E731
    close = lambda t, hms: pd.notna(t) and abs(t - at(hms)) <= NEAR  # noqa: E731
    first, second = att.iloc[0], att.iloc[1]
    assert len(att) == 2 and first["pids"] == [641] and second["pids"] == [713]
    assert close(first["first_step"], "05:18:39") and close(second["first_step"], "05:19:23")
    # its end is the kill it did not outlive, not the SIGINT it trained through
    assert first["end_kind"] == "kill_sent" and first["signal"] == "SIGTERM" and first["end_ref"] == "logs/operator.log:9"
    assert second["end_kind"] == "training_stop" and close(second["end"], "05:19:46")
    assert _kinds(found) == ["kill_failed", "survivor"]
    kill = found[found["kind"] == "kill_failed"].iloc[0]
    assert close(kill["start"], "05:18:42") and kill["numbers"]["pid"] == 641 and kill["numbers"]["signal"] == "SIGINT"
    survivor = found[found["kind"] == "survivor"].iloc[0]
    assert close(survivor["numbers"]["until"], "05:19:02") and survivor["numbers"]["memory_mib_by_gpu"] == {0: 5622.0}


def test_a_hugging_face_trainer_dies_of_cuda_oom_and_is_resumed_from_its_checkpoint(told):
    """A real transformers.Trainer run whose log prints no time: tqdm bars and loss dicts, with
    TensorBoard beside it. It died of CUDA OOM at step 250 (the driver saw it at 17:41:13.993);
    the relaunch with --resume at 17:41:29.602 went on from checkpoint-200 and redid 201-249."""
    inc, att, found = told("h200-1gpu-hf-oom-resume")
    assert len(att) == 2 and att["job"].nunique() == 1  # the same script writing the same checkpoints
    first, second = att.iloc[0], att.iloc[1]
    assert near(first["start"], "17:40:13") and 1112 in first["pids"] and near(first["first_step"], "17:40:42")
    assert first["end_kind"] == "oom" and near(first["end"], "17:41:13") and first["end_ref"] == "logs/hf_train.log:32"
    assert near(second["start"], "17:41:29") and 1344 in second["pids"] and second["end_kind"] == "training_stop"
    assert _kinds(found) == ["training_died"]
    died = found.iloc[0]
    assert near(died["start"], "17:41:13") and died["numbers"]["pid"] == 1112
    assert "CUDA out of memory" in died["numbers"]["error"] and near(died["numbers"]["restarted_at"], "17:41:29")
    (resumed,) = resumes(inc).itertuples()
    # the bar leapt to 201 at 0 s: its first step done, checkpoint-200 holding the ones before
    assert (resumed.resumed_step, resumed.reached_step, resumed.redone_steps) == (200, 249, 49)
    log = next(f for f in inc.load_report.files if f.path == "logs/hf_train.log")
    assert any("its progress bar's elapsed time spaces" in a and "tfevents" in a for a in log.assumptions)


def test_a_lightning_run_slowed_by_another_job_on_its_gpu_told_from_its_step_counter(told):
    """A Lightning run whose log is a tqdm bar only (no time of day, no tokens; the bar's it/s is
    the mean since its start). Another user's job (PID 877) computed on the same GPU from about
    21:20:02 until 21:21:13; the trainer (PID 601) ran at about half its pace meanwhile."""
    inc, att, found = told("h200-1gpu-pl-contention")
    assert len(att) == 1 and att["pids"].iloc[0][0] == 601 and near(att["start"].iloc[0], "21:18:46")
    assert near(att["first_step"].iloc[0], "21:19:00")  # the bar dated by GPU 0 going busy (21:19:01)
    assert _kinds(found) == ["recovery", "throughput_regression"]
    reg = found[found["kind"] == "throughput_regression"].iloc[0]
    assert near(reg["start"], "21:20:02") and reg["numbers"]["unit"] == "steps/s"
    assert 0.4 < reg["numbers"]["ratio"] < 0.6
    assert "another process on GPU 0 beside the trainer (PID 601): PID 877" in reg["numbers"]["candidates"]
    rec = found[found["kind"] == "recovery"].iloc[0]
    # a pace counted over intervals of PACE_S (5 s) of whole-second bar times shows a change one
    # interval late at most
    assert abs(rec["start"] - T("21:21:13")) <= pd.Timedelta(seconds=PACE_S + 2)
    assert rec["numbers"]["ratio"] > 0.9


def test_a_watched_session_a_dead_relaunch_a_stuck_one_killed_by_pattern_then_a_slow_hang(told):
    """h200-1gpu-watched-relaunch (2026-12-03): the README's table, from the driver's clock."""
    inc, att, found = told("h200-1gpu-watched-relaunch")

    def at(hms):
        return pd.Timestamp(f"2026-12-03 {hms}", tz="UTC")

    assert [p for a in att["pids"] for p in a] == [669, 924, 963, 1298]
    a1, a2, a3, a4 = (att.iloc[i] for i in range(4))
    assert a1["first_step"] == at("04:14:05") and a1["end_kind"] == "training_stop"
    assert a2["end_kind"] == "traceback" and pd.isna(a2["first_step"])
    # the stuck start ended by the operator's second pkill pattern, the one that matched PID 963
    assert a3["end"] == at("04:15:36.538") and "'[-]-hidden 8192'" in a3["end_message"]
    assert a4["first_step"] == at("04:15:51")
    by_kind = {k: g for k, g in found.groupby("kind")}
    dead, stuck = by_kind["failed_restart"].sort_values("start").itertuples()
    assert dead.title == "restart at 04:14:31 never came up: died during start-up"
    assert "invalid device ordinal" in dead.detail
    assert stuck.title == "restart at 04:14:35 never came up: killed during start-up by a kill aimed at it"
    # the first and third patterns reached nothing: no failed kill, no survivor (the watch's own
    # python process, and the harness's shells whose command lines hold a `64`, are not targets)
    assert "kill_failed" not in by_kind and "survivor" not in by_kind
    drop = by_kind["throughput_regression"].iloc[0]
    assert drop["numbers"]["run_after"] == "slow" and drop["numbers"]["run_before"] == "steady"
    assert "--fast-linear-attn 0" in drop["numbers"]["flag_differences"]
    stall = by_kind["stall"].iloc[0]
    assert (stall["start"], stall["end"]) == (at("04:16:18"), at("04:17:48.239"))  # its last step, the kill


def test_each_ranks_own_log_under_torchrun_is_one_attempt_and_the_silent_rank_is_named(told):
    """h200-1gpu-rank-logs: `nohup ./launch.sh` at 01:19:01.788 (driver) runs torchrun --no-python
    with a wrapper that sends each rank's output to logs/train_rankN.log; rank 1 stops at its
    step 150 (its last line, step 145, at 01:19:54), rank 0's all-reduce times out at 01:20:25,
    the agent ends rank 1 and gives up at 01:20:27."""
    _, att, found = told("h200-1gpu-rank-logs")

    def at(hms: str) -> pd.Timestamp:
        return pd.Timestamp(f"2026-12-04 {hms}", tz="UTC")

    assert len(att) == 1  # the launch, torchrun (PID 636), its two workers and both rank logs
    a = att.iloc[0]
    assert a["by"] == "operator" and a["start"] == at("01:19:01.788")
    assert {636, 678, 679} <= set(a["pids"]) and a["ranks"] == [0, 1]
    assert {"logs/launch.out", "logs/train_rank0.log", "logs/train_rank1.log"} <= set(a["sources"])
    assert a["first_step"] == at("01:19:27")
    assert _kinds(found) == ["training_died"]
    died = found.iloc[0]
    n = died["numbers"]
    assert died["start"] == at("01:20:25") and n["last_step_time"] == at("01:19:54") and n["hung"]
    assert abs(n["ended"] - at("01:20:27.187")) <= pd.Timedelta(seconds=1)
    assert "Timed out waiting 30000ms for recv" in n["error"]
    assert n["silent_logs"] == ["logs/train_rank1.log"]  # rank 1 said nothing: what rank 0 waited for
    assert n["stopped_ranks"] == [1]  # torchrun's table: rank 1 ended by its SIGTERM, no error of its own


def test_a_hugging_face_run_in_a_long_evaluation_when_the_evidence_ends_is_no_stall(told):
    """A Trainer run whose log prints no time (tqdm bars, dicts): steps 1-100 by 07:47:07.8
    (TensorBoard), an evaluation of 270.8 s (its results at 07:51:38.5), steps to 200 by 07:51:51.3,
    then a second evaluation, its bar at 2635/3125 after 3:47 when the captures ended (07:55:37),
    the GPU at 97-98 % throughout. Its evaluation's bar advancing is work: nothing went wrong."""
    inc, att, found = told("h200-1gpu-hf-long-eval")
    at = lambda hms: pd.Timestamp(f"2026-12-04 {hms}", tz="UTC")  # noqa: E731
    close = lambda t, hms: pd.notna(t) and abs(t - at(hms)) <= NEAR  # noqa: E731
    assert found.empty, found[["kind", "title"]].to_string()
    (a,) = att.itertuples()
    assert a.pids == [658] and close(a.start, "07:46:34")
    bar = inc.events[(inc.events["kind"] == "progress") & inc.events["message"].str.contains("2635/3125")].iloc[0]
    # the evaluation's bar began after step 200 (07:51:50.98 on the log's own bar clock) and ran 227 s
    assert close(bar["time"], "07:55:37") and bar["bar_elapsed_s"] == 227
    # the first evaluation's results, printed as its bar closed: TensorBoard logged them at 07:51:38.5
    m = inc.metrics
    results = m[(m["source"] == "logs/hf_train.log") & (m["metric"] == "eval/runtime")]
    assert abs(results["time"].iloc[0] - at("07:51:38.5")) < pd.Timedelta(seconds=2)
    told_states = states(inc)
    training = told_states[told_states["state"] == "training"]
    assert "stalled" not in set(told_states["state"]) and close(training["end"].max(), "07:55:37")
    # its first 30 s window (2.9 s for step 1, then 8.5 steps/s) is warm-up, not a loss
    assert "degraded" not in set(told_states["state"])
    (gpu,) = ledger(inc).itertuples()
    assert gpu.degraded == 0 and gpu.stalled == 0 and gpu.productive > 0.9 * gpu.total


def test_a_silence_at_the_end_no_longer_than_the_runs_last_evaluation_is_one_more_evaluation(tmp_path):
    """h200-1gpu-hf-long-eval without its log (logs/hf_train.log, where the second evaluation's bar
    is): TensorBoard's steps 1-100, the first evaluation (07:47:03 to 07:51:40, its results at
    07:51:38.5), steps to 200 by 07:51:51, then nothing to 07:55:37: 230 s, shorter than the
    first evaluation's 277 s, so as far as anything shows, the second. It read as a stall once the
    steps counted by TensorBoard were dated by the lines that close each interval (their median,
    5.8 s, made the threshold the 60 s floor); the truth (README): evaluating."""
    folder = tmp_path / "no-log"
    shutil.copytree(REPO / "data" / "incidents" / "h200-1gpu-hf-long-eval", folder)
    (folder / "logs" / "hf_train.log").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(folder)
    told_states = states(inc)
    assert "stalled" not in set(told_states["state"]) and pm.detect(inc).empty
    training = told_states[told_states["state"] == "training"]
    assert abs(training["end"].max() - pd.Timestamp("2026-12-04 07:55:37", tz="UTC")) <= NEAR


def T5(hms: str) -> pd.Timestamp:
    return pd.Timestamp(f"2026-12-05 {hms}", tz="UTC")


def test_a_job_of_a_terminal_that_hung_up_dies_with_no_word_and_its_resume_dies_on_the_cut_checkpoint(told):
    """Started with `&` and no nohup in a `script`-recorded bash; the connection drops at
    02:24:02.420 (SIGHUP to that bash), which hangs up PID 592 after step 300 with nothing in its
    log. Nothing but its absence from ps and the terminal's `exited with 129` says it ended."""
    inc, att, found = told("h200-1gpu-hangup")
    first, resume = att.iloc[0], att.iloc[1]
    assert first["pids"] == [592] and first["end_kind"] == "gone" and first["end"] == T5("02:24:02")
    assert first["cause_kind"] == "hangup" and first["cause_ref"] == "logs/terminal.typescript:11"
    assert resume["pids"] == [851] and pd.isna(resume["first_step"])
    # bash's `[1]+  Exit 1  nohup ...` came at the operator's next prompt (02:29:27); the process
    # wrote its traceback and left ps's listing at 02:24:38: that is its end, not five idle minutes
    assert (resume["end"], resume["exit_code"], resume["end_ref"]) == (T5("02:24:38"), 1, "logs/terminal2.typescript:13")
    assert "hung" not in set(states(inc).loc[lambda s: s["attempt"] == resume["attempt"], "state"])
    assert _kinds(found) == ["failed_restart", "training_died"]
    died = found[found["kind"] == "training_died"].iloc[0]
    assert died["start"] == T5("02:24:02") and died["numbers"]["pid"] == 592
    # (typed at 02:24:27.472, README; its log's first line is 02:24:32, ps lists it from 02:24:26, a
    # second before the `date` it was typed after: the same moment by a clock a little behind)
    assert died["numbers"]["restarted_at"] == T5("02:24:27") and died["numbers"]["restarted_by"] == "operator"
    failed = found[found["kind"] == "failed_restart"].iloc[0]
    assert "PytorchStreamReader failed reading zip archive" in failed["detail"]
    said = pm.what_happened(inc, found)
    assert said[0].startswith("At 02:24:02 UTC run remote died while training: the terminal it was started "
                              "from hung up (script: command exited with 129: SIGHUP); it ran as a job of "
                              "that shell, not under nohup or setsid.")


def test_a_process_gone_with_no_word_no_cause_and_no_restart_is_no_death(told, tmp_path):
    """The same first run alone (its terminal's log and the resume left out): its process leaves
    the listing after step 300 with nothing said; a run that finished with no last word reads the
    same, so nothing is found."""
    src = REPO / "data" / "incidents" / "h200-1gpu-hangup"
    (tmp_path / "logs").mkdir()
    for name in ("train.log", "ps.txt", "smi.csv", "smi_apps.csv"):
        (tmp_path / "logs" / name).write_bytes((src / "logs" / name).read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    att = attempts(inc)
    gone = att[att["pids"].map(lambda p: 592 in p)].iloc[0]
    assert gone["end_kind"] == "gone" and gone["end"] == T5("02:24:02") and gone["cause_kind"] is None
    assert "training_died" not in set(detect(inc)["kind"])


def test_a_run_that_timeout_stopped_is_told_as_its_time_limit_with_the_steps_redone(told):
    """`timeout 50` ends the run at 02:30:18 after step 240 (exit=124); the resume at 02:30:19.659
    loads step 200's checkpoint: 40 steps again."""
    inc, att, found = told("h200-1gpu-timeout-limit")
    assert att["exit_code"].tolist() == [124, 0]
    assert _kinds(found) == ["time_limit"]
    limit = found.iloc[0]
    n = limit["numbers"]
    assert limit["severity"] == "warning" and abs(limit["start"] - T5("02:30:18.843")) <= NEAR
    assert (n["resumed_step"], n["reached_step"], n["redone_steps"]) == (200, 240, 40)
    assert abs(n["restarted_at"] - T5("02:30:19.659")) <= NEAR and n["restarted_by"] == "operator"
    assert pm.what_happened(inc, found)[0] == (
        "At 02:30:18 UTC run budget was stopped by its time limit while training: exit=124 (timed out: timeout "
        "sent its signal). It was started again at 02:30:19 UTC by the operator, resuming from a checkpoint at "
        "step 200: it had logged step 240, so 40 steps were done again.")


def _fixture(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(REPO / "tests" / "detect" / "fixtures" / name)
    return inc, attempts(inc), detect(inc)


def test_a_job_stopped_by_ctrl_z_stalls_until_fg_however_short_the_wait():
    """fixtures/ctrl-z-cpu: step 150 at 03:13:13, Ctrl-Z at 03:13:13.129 (`[1]+  Stopped`), `fg`
    at 03:14:13, step 155 at 03:14:13. A 60 s silence is within the 60 s threshold a stall needs
    by itself; the shell's word that it stopped the job makes it one."""
    inc, att, found = _fixture("ctrl-z-cpu")
    stall = found[found["kind"] == "stall"]
    assert len(stall) == 1 and att.iloc[0]["pids"] == [5671]
    s = stall.iloc[0]
    assert s["start"] == T5("03:13:13") and s["end"] == T5("03:14:13") and s["numbers"]["stopped"]
    assert "logs/terminal.typescript:43" in s["evidence"]
    assert [c["why"] for c in s["caused_by"]] == [
        "the job was stopped: `[1]+ Stopped` (Ctrl-Z, SIGTSTP or SIGSTOP), until `fg` at 03:14:13"]
    assert pm.what_happened(inc, found)[0] == (
        "At 03:13:13 UTC training stalled: no step for 60 s while PID 5671 was alive: the job was stopped, "
        "`[1]+ Stopped` (Ctrl-Z, SIGTSTP or SIGSTOP), until `fg` at 03:14:13.")


def test_a_job_a_listing_shows_stopped_stalls_with_no_word_from_its_shell(tmp_path):
    """The same recording without the terminal's log: ps lists PID 5671 in state `T` from
    03:13:14 to 03:14:12, between its steps 150 (03:13:13) and 155 (03:14:13)."""
    src = REPO / "tests" / "detect" / "fixtures" / "ctrl-z-cpu" / "logs"
    (tmp_path / "logs").mkdir()
    for name in ("train.log", "ps.txt"):
        (tmp_path / "logs" / name).write_bytes((src / name).read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = detect(inc)
    stall = found[found["kind"] == "stall"]
    assert len(stall) == 1 and stall.iloc[0]["start"] == T5("03:13:13") and stall.iloc[0]["end"] == T5("03:14:13")
    assert stall.iloc[0]["numbers"]["stopped"] and "logs/ps.txt:19" in stall.iloc[0]["evidence"]
    assert pm.what_happened(inc, found)[0] == (
        "At 03:13:13 UTC training stalled: no step for 60 s while PID 5671 was alive: the job was stopped, "
        "logs/ps.txt lists PID 5671 stopped (state `T`: Ctrl-Z, SIGTSTP or SIGSTOP) from 03:13:14 to 03:14:12.")


def test_a_run_killed_with_no_word_and_resumed_died_where_its_process_left_the_listing():
    """fixtures/vanished-cpu: SIGKILL to PID 6352 at 03:17:48.089 from outside the evidence, its
    last step line 280 at 03:17:48; the operator's resume at 03:18:28.400 loads step 200."""
    inc, att, found = _fixture("vanished-cpu")
    assert att.iloc[0]["pids"] == [6352] and att.iloc[0]["end_kind"] == "gone"
    assert _kinds(found) == ["training_died"]
    n = found.iloc[0]["numbers"]
    assert found.iloc[0]["start"] == T5("03:17:48") and n["pid"] == 6352
    assert (n["resumed_step"], n["reached_step"], n["redone_steps"]) == (200, 280, 80)
    assert abs(n["restarted_at"] - T5("03:18:28.400")) <= NEAR


def test_where_no_listing_shows_processes_the_gpu_shows_the_end(tmp_path):
    """h200-1gpu-hangup without its ps loop: nvidia-smi's process list shows PID 592 last at
    02:24:01.897 and GPU 0's memory is 0 MiB at 02:24:02.899 (smi.csv): its end; the terminal's
    hangup is still its cause."""
    src = REPO / "data" / "incidents" / "h200-1gpu-hangup" / "logs"
    (tmp_path / "logs").mkdir()
    for name in ("smi.csv", "smi_apps.csv", "train.log", "train2.log", "terminal.typescript", "terminal2.typescript"):
        (tmp_path / "logs" / name).write_bytes((src / name).read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    first = attempts(inc).iloc[0]
    assert first["end_kind"] == "gone" and first["end"] == T5("02:24:01.897") and first["cause_kind"] == "hangup"
    assert "released by 02:24:02 (logs/smi.csv:" in first["end_message"]
    died = detect(inc)
    assert died[died["kind"] == "training_died"]["start"].tolist() == [T5("02:24:02")]


def test_on_the_h200_a_ctrl_z_stall_and_a_kill_from_outside_are_told(told):
    """h200-1gpu-ctrl-z: step 150 at 03:44:12, Ctrl-Z at 03:44:13.189, `fg` at 03:45:13.191, then
    a clean stop; h200-1gpu-vanished: SIGKILL to PID 816 at 03:46:11.961 after step 250, the
    operator's resume at 03:46:52.298 from step 200."""
    inc, att, found = told("h200-1gpu-ctrl-z")
    assert _kinds(found) == ["stall"]
    stall = found.iloc[0]
    # (it ends where the process was last seen on the GPU, 03:45:14.684, after its stop line)
    assert stall["start"] == T5("03:44:12") and abs(stall["end"] - T5("03:45:13")) <= NEAR
    assert stall["numbers"]["stopped"]
    assert stall["numbers"]["holders"] == [503] and stall["numbers"]["idle"]
    # `fg` woke it with its 90 s used up: it stopped at once (no "had not recovered")
    assert pm.what_happened(inc, found)[1].startswith("Then the run stopped by itself at 03:45:13 UTC")
    inc, att, found = told("h200-1gpu-vanished")
    # the resume trained slower than the run it resumed (train.log's tok/s median 52,749 after
    # its first line, train2.log's 41,557): the same run name, started again
    assert _kinds(found) == ["no_recovery", "throughput_regression", "training_died"]
    (drop,) = [n for k, n in zip(found["kind"], found["numbers"], strict=True) if k == "throughput_regression"]
    assert drop["across_runs"] and drop["run_before"] == drop["run_after"] == "quiet"
    assert 0.75 < drop["ratio"] < 0.83 and abs(drop["run_after_launch"] - T5("03:46:52.298")) <= NEAR
    found = found[found["kind"] == "training_died"]
    n = found.iloc[0]["numbers"]
    assert abs(found.iloc[0]["start"] - T5("03:46:11.961")) <= NEAR and n["pid"] == 816
    assert (n["resumed_step"], n["reached_step"], n["redone_steps"]) == (200, 250, 50)
    assert abs(n["restarted_at"] - T5("03:46:52.298")) <= NEAR


def test_a_checkpoint_that_did_not_fit_on_a_full_volume_is_told_with_the_df_that_shows_it(told):
    """h200-1gpu-disk-full: another job fills the checkpoint volume after step 100's checkpoint;
    at 05:13:44 torch.save of step 200 fails with words that say nothing of a disk (`basic_ios::
    clear: iostream error`); the operator's `df -h ckpt` at 05:13:54.705 shows it at 100 %; the
    resume at 05:13:55.930 loads step 100: 100 steps again. The first trainer is PID 512."""
    inc, att, found = told("h200-1gpu-disk-full")
    assert _kinds(found) == ["training_died"]
    died = found.iloc[0]
    n = died["numbers"]
    assert died["start"] == T5("05:13:44") and n["doing"] == "saving" and n["pid"] == 512
    assert n["disk_full_at"] == T5("05:13:54.705") and "100% of its space used (6.0G of 6.0G, 0 available)" in n["disk_full"]
    assert [c["evidence"] for c in died["caused_by"]] == [["logs/train.log:50"], ["logs/operator.log:11"]]
    assert (n["resumed_step"], n["reached_step"], n["redone_steps"]) == (100, 200, 100)
    assert pm.what_happened(inc, found)[0] == (
        "At 05:13:44 UTC run scratch died while saving a checkpoint: RuntimeError: basic_ios::clear: iostream "
        "error. `df` at 05:13:54 UTC showed a full file system: tmpfs mounted on /tmp/inc/h200-1gpu-disk-full/ckpt: "
        "100% of its space used (6.0G of 6.0G, 0 available). It was started again at 05:13:55 UTC by the operator, "
        "resuming from a checkpoint at step 100: it had logged step 200, so 100 steps were done again.")


def test_a_run_that_finished_but_never_exited_holds_its_gpu_until_killed(told):
    """h200-1gpu-lingering: sweep-a logs `Training stopped` at 05:15:34 and never exits; PID 882
    holds 5,622 MiB of GPU 0 beside sweep-b (PID 1097) until the operator's kill at
    05:17:01.030. Not a stall (it had finished) and not a regression of sweep-b."""
    inc, att, found = told("h200-1gpu-lingering")
    assert att["pids"].tolist() == [[882], [1097]]
    assert _kinds(found) == ["lingering"]
    left = found.iloc[0]
    n = left["numbers"]
    assert left["start"] == T5("05:15:34") and abs(left["end"] - T5("05:17:01.030")) <= NEAR
    assert (n["run"], n["pid"], n["holder_mib"], n["gpus"]) == ("sweep-a", 882, {882: 5622.0}, [0])
    assert left["evidence"][:2] == ["logs/sweep-a.log:56", "logs/operator.log:11"]
    st = states(inc)
    lived = st[(st["attempt"] == "A1") & (st["state"] != "degraded")]  # (its last window's tail is slower)
    assert lived["state"].tolist() == ["starting", "training", "lingering", "killed"]
    gpu = ledger(inc).iloc[0]
    # the 87 s it lived on, less the share sweep-b held of the GPU while both were on it
    assert gpu.stalled == 0 and 40 < gpu.lingering < 87
    assert pm.what_happened(inc, found) == [
        "Run sweep-a finished at 05:15:34 UTC (its last word was `Training stopped`), but PID 882 did not exit: it "
        "lived on for 87 s, holding 5.5 GiB of GPU 0, until it was killed at 05:17:01 UTC: `kill $(cat "
        "run/sweep-a.pid); sleep 3; ps -p $(cat run/sweep-a.pid) || echo gone`."]


def test_a_lingering_process_whose_end_nothing_says_is_told_where_it_was_last_seen(tmp_path):
    """The same capture without the operator's transcript: nothing says the process was killed;
    nvidia-smi's process list shows PID 882 last at 05:17:00.460 (logs/smi_apps.csv:91) and the
    folder ends ten seconds later (too soon to call it gone), so it is told lingering until it was
    last seen alive, not ended."""
    shutil.copytree(REPO / "data" / "incidents" / "h200-1gpu-lingering", tmp_path / "inc")
    (tmp_path / "inc" / "logs" / "operator.log").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path / "inc")
    found = detect(inc)
    assert _kinds(found) == ["lingering"] and found.iloc[0]["numbers"]["end_message"] is None
    assert found.iloc[0]["end"] == T5("05:17:00.460")
    assert pm.what_happened(inc, found)[0].endswith(
        "PID 882 did not exit: it lived on for 86 s, holding 5.5 GiB of GPU 0; it was last seen alive at 05:17:00 UTC.")


def test_a_resume_from_a_checkpoint_saved_after_the_loss_broke_carries_the_nan():
    """fixtures/diverged-cpu: `--lr 3e2` makes the loss nan from step 2725 (06:41:56); the run
    trains on, checkpointing, until the operator kills PID 5561 at 06:42:56.709; the resume at
    06:43:05.018 (PID 6026) loads step 8200, which that run wrote: nan from step 8205."""
    inc, att, found = _fixture("diverged-cpu")
    assert att["pids"].tolist() == [[5397], [5561], [6026], [6160]]
    # the PID file names 6026 at the end; the first kill read it while it named 5561
    assert att["end_kind"].tolist() == ["training_stop", "kill_sent", "kill_sent", "training_stop"]
    assert att["end"].iloc[1] == T5("06:42:56.709") and att["end"].iloc[2] == T5("06:43:27.825")
    assert _kinds(found) == ["loss_not_finite", "loss_not_finite"]
    broke, carried = found.iloc[0], found.iloc[1]
    assert (broke["start"], broke["numbers"]["step"]) == (T5("06:41:56"), 2725)
    n = carried["numbers"]
    assert (carried["start"], n["step"], n["resumed_step"], n["broke_at_step"]) == (T5("06:43:07"), 8205, 8200, 2725)
    assert [c["id"] for c in carried["caused_by"]] == [broke["id"]]
    assert carried["caused_by"][0]["evidence"] == ["logs/train3.log:7"]  # `Resumed from checkpoint ckpt/step_8200.pt`
    st = states(inc)
    assert st.loc[st["state"] == "diverged", ["attempt", "start"]].values.tolist() == [
        ["A2", T5("06:41:56")], ["A3", T5("06:43:07")]]
    said = pm.what_happened(inc, found)
    # how each run on a broken loss ended (the operator's kills), then where the loss came back:
    # the resume at 06:43:36.466 from step 2700, after the checkpoints past it were removed
    assert said[0].endswith("; the run trained on for 61 s until it was stopped at 06:42:56 UTC: `kill $(cat run/ft.pid)`.")
    assert said[1] == (
        "At 06:43:07 UTC the loss of run ft stopped being a number at step 8205 and stayed so to the end of the log "
        "(351 more lines); it had resumed from a checkpoint at step 8200, saved after its loss had stopped being a "
        "number at step 2725; the run trained on for 21 s until it was stopped at 06:43:27 UTC: "
        "`tail -n 2 logs/train3.log; kill $(cat run/ft.pid)`.")
    assert said[2] == ("Run ft was started again at 06:43:36 UTC from a checkpoint at step 2700, saved before its loss "
                       "broke at step 2725, and its loss was a number again: 5.793 at step 2705 (06:43:39 UTC).")
    # the incident runs from the first nan line to the loss a number again; the operator's first
    # command after it (`tail`, 06:42:56.404) detects it, the good resume mitigates it
    imp = pm.timeline(inc, found).impact
    assert (imp["first_sign"], imp["detected"], imp["mitigated"], imp["recovered"]) == (
        T5("06:41:56"), T5("06:42:56.404"), T5("06:43:36.466"), T5("06:43:39"))
    assert imp["gpu_hours_lost"] == pytest.approx(imp["window_s"] / 3600) and imp["window_s"] == 103


def test_a_threads_traceback_read_from_the_logs_alone_is_no_death_it_cannot_show(tmp_path):
    """h200-1gpu-stall-crash's training log alone (no ps listing, no GPU samples): at 09:44:29 its
    drafter thread raises (`Exception in thread drafter-0:`) and the log says nothing more. README:
    the process lived on, stalled, until the operator killed it. The logs alone cannot tell a
    stall from a death; read before as "died while training", it is now told as what they show."""
    src = REPO / "data" / "incidents" / "h200-1gpu-stall-crash"
    inc = pm.load_incident(src)
    logs = [f.path for f in inc.load_report.files if f.format == "training-log"]
    for rel in logs:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, tmp_path / rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = pm.load_incident(tmp_path)
    found = detect(alone)
    died = found[found["kind"] == "training_died"].iloc[0]
    assert abs(died["start"] - pd.Timestamp("2026-11-30 09:44:29", tz="UTC")) <= NEAR
    assert died["numbers"]["thread"] == "drafter-0" and died["numbers"]["pid"] is None
    story = " ".join(pm.what_happened(alone, found))
    assert "stopped training when its thread drafter-0 raised" in story and "died" not in story
    # with its listing, the same traceback is a stall of a process that lived on (the post-mortem)
    assert "stall" in set(detect(inc)["kind"]) and "training_died" not in set(detect(inc)["kind"])


def _without(tmp_path, name: str, *gone: str) -> pm.Incident:
    """A bundled incident loaded without some of its files (what a user who lacks them reads)."""
    folder = tmp_path / name
    shutil.copytree(REPO / "data" / "incidents" / name, folder)
    for rel in gone:
        (folder / rel).unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(folder)


def test_a_run_and_its_log_are_one_attempt_without_the_listing_that_names_its_pid(tmp_path):
    """h200-1gpu-stall-crash without its ps listing: run `stalled` writes logs/train.log from
    09:43:35 and its wandb run from 09:44:08 (README: one process, PID 467). The listing had tied
    them by the PID; without it the wandb run was an attempt of its own that "started again at
    09:44:08", before the death it restarted. A tracked run's records begun while a log naming
    the same run is being written are that log's trainer's: one attempt, and the story is the
    post-mortem's own (a stall while PID 467 held its memory)."""
    inc = _without(tmp_path, "h200-1gpu-stall-crash", "logs/ps_aux_snapshots.txt")
    att = attempts(inc)
    assert att["run"].tolist() == ["stalled", "fixed"] and att["pids"].tolist() == [[467], [872]]
    assert any(s.endswith("run-s0m5ck60.wandb") for s in att["sources"].iloc[0])
    found = detect(inc)
    assert "training_died" not in set(found["kind"]) and "stall" in set(found["kind"])


def test_a_start_whose_log_is_missing_and_whose_gpu_worked_is_not_judged_a_failed_start(tmp_path):
    """h200-1gpu-disk-full without logs/train.log (README: run scratch, PID 512, started 05:12:51.419,
    trained to step 200 and died saving at 05:13:44) and h100-1gpu-diverged without logs/train3.log
    (PID 918, started 10:35:36.728, trained until the kill at 10:36:10.042). Without its log the
    kit said each "never came up"; nvidia-smi shows each PID's GPU busy the while. Whether it
    trained, no line says: no failed start, and the story says why it cannot judge it."""
    inc = _without(tmp_path, "h200-1gpu-disk-full", "logs/train.log")
    found = detect(inc)
    assert "failed_restart" not in set(found["kind"])
    said = pm.what_happened(inc, found)
    assert said[-1].startswith("The start at 05:12:51 UTC cannot be judged: its log (logs/train.log) is not in the "
                               "incident, and its GPU was at work while PID 512 held it: ")
    assert said[-1].endswith("whether it trained, no line says; it ended at 05:13:45 UTC.")
    inc = _without(tmp_path, "h100-1gpu-diverged", "logs/train3.log")
    found = detect(inc)
    assert list(found["kind"]) == ["loss_not_finite"]
    said = pm.what_happened(inc, found)
    assert said[1].startswith("The start at 10:35:36 UTC cannot be judged: its log (logs/train3.log) is not in the "
                              "incident, and its GPU was at work while PID 918 held it: ")
    assert said[1].endswith("; it ended at 10:36:10 UTC, killed by SIGTERM.")  # the operator's `kill` (README)


def test_a_start_killed_through_the_pid_file_it_writes_is_not_judged_by_the_count_after_the_kill(tmp_path):
    """h200-2gpu's operator log alone (README: run `regressed`, launched 05:21:42 with `--pid-file
    /tmp/capture2/run/regressed.pid`, trained at half speed until the operator killed it at
    05:22:57). The kill reads that PID file (`kill -TERM $(cat /tmp/capture2/run/regressed.pid);
    sleep 4; ps aux | grep trainer.py | grep -v grep | wc -l` -> `0`): it was meant for that start,
    whose PID nothing in the log names; the count typed after the kill says what the kill did, not
    that the start never came up (the kit had said it "never came up")."""
    folder = tmp_path / "operator-log"
    (folder / "logs").mkdir(parents=True)
    shutil.copy(REPO / "data" / "incidents" / "h200-2gpu" / "logs" / "operator.log", folder / "logs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(folder)
    att = attempts(inc)
    regressed = att.iloc[1]
    assert "--run-name regressed" in regressed["command"] and regressed["end_kind"] == "kill_sent"
    assert regressed["end_ref"] == "logs/operator.log:5" and regressed["signal"] == "SIGTERM"
    found = detect(inc)
    assert [f["start"].strftime("%H:%M:%S") for _, f in found.iterrows()] == ["05:23:01"]  # the redirect that failed
    said = pm.what_happened(inc, found)
    assert said[1] == ("The start at 05:21:42 UTC cannot be judged: its log (/tmp/capture2/logs/train_opt.log) is not "
                       "in the incident, and no GPU sample or process listing covers its time: whether it trained, "
                       "nothing shows; it ended at 05:22:57 UTC, killed by SIGTERM.")


def test_starts_whose_log_is_missing_and_that_never_got_their_gpu_working_never_came_up(tmp_path):
    """h200-1gpu-crash-loop without logs/loop.log (README: a supervisor loop restarts a trainer that
    dies of `invalid device ordinal` within seconds, PIDs 714 onward, until the operator's start
    at 04:37:32 trains): no log shows their steps either, but no GPU of theirs ever worked; the
    four starts are still told as starts that never came up."""
    inc = _without(tmp_path, "h200-1gpu-crash-loop", "logs/loop.log")
    found = detect(inc)
    assert list(found["kind"]) == ["failed_restart"] * 4
    assert pm.what_happened(inc, found)[0].startswith("The start at 04:37:00 UTC never came up: ended before its first step")


def test_a_launchers_agent_no_launch_is_known_for_and_its_workers_are_one_start(tmp_path):
    """h200-1gpu-rank-logs without the operator's transcript: torchrun (PID 636: `launch.sh`'s own
    process after its `exec`; no launch known) starts its two workers (678 and 679, both
    01:19:09), each writing its own rank log. The workers were read as two attempts, and rank 1's
    log was given to the recording driver's own Python process (614), listed since 01:18:59 and
    writing nothing: the agent, known only from the listing, was no parent its workers could join,
    and its first rank log no sibling of the second. One start (README), the death as the whole
    incident tells it, and nothing began while it ran."""
    inc = _without(tmp_path, "h200-1gpu-rank-logs", "logs/operator.log")
    att = attempts(inc)
    assert att["pids"].tolist() == [[636, 678, 679]]
    assert sorted(att["sources"].iloc[0]) == ["logs/launch.out", "logs/train_rank0.log", "logs/train_rank1.log"]
    found = detect(inc)
    assert list(found["kind"]) == ["training_died"]
    whole = loaded("h200-1gpu-rank-logs")
    assert pm.what_happened(inc, found) == pm.what_happened(*whole)


def test_a_nan_run_killed_then_resumed_from_its_own_checkpoint_then_from_a_good_one(told):
    """h100-1gpu-diverged (README): `--lr 3e2` makes the loss nan from step 105 (10:34:27, PID 678);
    the operator kills it at 10:35:28.388; the resume (PID 918) loads step 400, which the nan run
    wrote: nan from step 405 until the kill at 10:36:10.042; the checkpoints after step 100
    removed, the resume at 10:36:18.867 (PID 1069) loads step 100 and its loss is 10.2261 at step
    105 (10:36:31). What trained from 10:34:27 to 10:36:31 was of no use."""
    inc, att, found = told("h100-1gpu-diverged")
    assert att["pids"].tolist() == [[527], [678], [918], [1069]]
    assert att["end_kind"].tolist() == ["training_stop", "kill_sent", "kill_sent", "training_stop"]
    assert att["end"].iloc[1] == T5("10:35:28.388") and att["end"].iloc[2] == T5("10:36:10.042")
    first, second = (found.iloc[i]["numbers"] for i in (0, 1))
    assert (first["step"], first["end_kind"], first["ended_at"], first["ended_ref"]) == (
        105, "killed", T5("10:35:28.388"), "logs/operator.log:7")
    assert (second["step"], second["resumed_step"], second["ended_at"]) == (405, 400, T5("10:36:10.042"))
    for n in (first, second):  # where the run's loss came back: the last resume, from before the break
        assert (n["again_at"], n["again_step"], n["again_started"], n["again_resumed_step"], n["again_ref"]) == (
            T5("10:36:31"), 105, T5("10:36:18.867"), 100, "logs/train4.log:9")
    said = pm.what_happened(inc, found)
    assert said[0].endswith("the run trained on for 61 s until it was stopped at 10:35:28 UTC: `kill $(cat run/ft.pid)`.")
    assert said[2] == ("Run ft was started again at 10:36:18 UTC from a checkpoint at step 100, saved before its "
                       "loss broke at step 105, and its loss was a number again: 10.23 at step 105 (10:36:31 UTC).")
    imp = pm.timeline(inc, found).impact
    assert (imp["first_sign"], imp["detected"], imp["mitigated"], imp["recovered"]) == (
        T5("10:34:27"), T5("10:35:28.078"), T5("10:36:18.867"), T5("10:36:31"))
    assert imp["window_s"] == 124 and imp["gpus_held"] == 1


def test_a_two_gpu_accelerate_command_on_one_gpu_dies_of_its_ranks_nccl_error(told):
    """h100-1gpu-accelerate-gpus (README): `accelerate launch --multi_gpu --num_processes 2` at
    10:37:06.287 on one GPU: ranks 1 and 0 raise NCCL's `Duplicate GPU detected` (tracebacks with
    no time of their own, before the first dated line, 10:37:40.065); agent 1231 stops 1310 and
    raises ChildFailedError at 10:37:41.167. The cause is the rank's error, not the agent's
    reaction; the relaunch with one process (10:37:47.989, PIDs 1395 and 1460) trains from
    10:38:16.7."""
    inc, att, found = told("h100-1gpu-accelerate-gpus")
    assert att["pids"].tolist() == [[1231, 1310, 1311], [1395, 1460]]
    a = att.iloc[0]
    assert (a["cause_ref"], a["cause_time"], a["cause_rank"]) == ("logs/hf_train.log:1", T5("10:37:40.065051"), 1)
    assert "DistBackendError: NCCL error" in a["cause_message"] and pd.isna(a["first_step"])
    (failed,) = found.itertuples()
    assert failed.kind == "failed_restart" and failed.caused_by[0]["id"] == "event:logs/hf_train.log:1"
    assert pm.what_happened(inc, found)[0].startswith(
        "The start at 10:37:06 UTC never came up: died during start-up: rank 1 started and wrote a traceback "
        "ending `torch.distributed.DistBackendError: NCCL error in:")
    # NCCL's message goes on to what failed, three lines after the exception line
    assert pm.what_happened(inc, found)[0].endswith(
        "NCCL version 2.28.9 … Last error: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60`.")
    report = next(f for f in inc.load_report.files if f.path == "logs/hf_train.log")
    assert any(s.startswith("dated afterwards: 2 tracebacks before its first dated line, placed at that line "
                            "(logs/hf_train.log:69") for s in report.assumptions), report.assumptions
    imp = pm.timeline(inc, found).impact
    assert (imp["mitigated"], imp["recovered"]) == (T5("10:37:47.989"), att["first_step"].iloc[1])
    assert abs(imp["recovered"] - T5("10:38:16.7")) <= pd.Timedelta(seconds=1)


def test_a_leak_climbs_the_gpu_memory_until_cuda_oom_and_the_resume_redoes_from_checkpoint_200(told):
    """h100-1gpu-leak-oom (README): a Trainer (PID 1662, foreground through `tee`, no time of its
    own in its log) keeps 256 MiB a step; nvidia-smi's process list shows its memory climbing,
    28,362 MiB at 10:39:23.507 to 78,634 MiB at 10:39:53.518, then CUDA OOM at step 211. Its
    TensorBoard file names PID 1662: it is that start's, not a start of its own. The resume
    (PID 1750) loads checkpoint-200: steps 201-211 done again."""
    inc, att, found = told("h100-1gpu-leak-oom")
    assert att["pids"].tolist() == [[1662], [1750]]
    assert any("tfevents" in s for s in att["sources"].iloc[0]) and any("tfevents" in s for s in att["sources"].iloc[1])
    (died,) = found.itertuples()
    n = died.numbers
    assert died.kind == "training_died" and "CUDA out of memory" in n["error"]
    m = n["memory_before"]
    assert m["climbed"] and (m["from_mib"], m["from_time"], m["to_mib"], m["to_time"]) == (
        28362.0, T5("10:39:23.507"), 78634.0, T5("10:39:53.518"))
    assert m["refs"] == ["logs/smi_apps.csv:4", "logs/smi_apps.csv:19"] and set(m["refs"]) <= set(died.evidence)
    assert (n["resumed_step"], n["reached_step"], n["redone_steps"], n["restarted_at"]) == (200, 211, 11, T5("10:40:01.487"))
    assert "Its GPU memory had climbed while it trained, from 27.7 GiB at 10:39:23 UTC to 76.8 GiB at 10:39:53 UTC" \
        in pm.what_happened(inc, found)[0]
    # the same death of one request far too large (h200-1gpu-hf-oom-resume: 1 TiB asked) reads as steady memory
    _, _, other = told("h200-1gpu-hf-oom-resume")
    assert other.iloc[0]["numbers"]["memory_before"]["climbed"] is False


def test_a_kill_through_a_pid_file_a_later_run_rewrote_aimed_at_the_process_it_named_then(tmp_path):
    """h100-1gpu-diverged without its ps listing: `kill $(cat run/ft.pid)` at 10:35:28.388 read
    the file while it named PID 678; the next run (PID 918, on the GPU from 10:35:4x) wrote it
    again. Read through the file's last content, the kill aimed at 918 and "failed" (918 "kept
    running"); the GPU samples show 918 only after the kill, so it was not the file's PID then."""
    inc = _without(tmp_path, "h100-1gpu-diverged", "logs/ps.txt")
    found = detect(inc)
    assert "kill_failed" not in set(found["kind"]) and "survivor" not in set(found["kind"])
    died = found[found["kind"] == "training_died"].iloc[0]
    # 678 left the GPU as the kill landed (the listing that told the kill's end is gone)
    assert died["numbers"]["pid"] == 678 and abs(died["start"] - T5("10:35:27")) <= pd.Timedelta(seconds=2)


def test_a_relaunch_that_reuses_the_run_name_is_no_sign_the_killed_process_lived_on(tmp_path):
    """h100-1gpu-diverged without logs/train3.log (PID 918's log): the kill at 10:36:10.042
    stopped 918 (ps lists it last at 10:36:10); the relaunch at 10:36:18.867 writes steps of run
    `ft` too. Those steps are the relaunch's, not signs that 918 lived on: no failed kill."""
    inc = _without(tmp_path, "h100-1gpu-diverged", "logs/train3.log")
    found = detect(inc)
    assert "kill_failed" not in set(found["kind"]) and "survivor" not in set(found["kind"])


def test_a_start_after_one_that_logged_no_step_is_read(tmp_path):
    """h100-1gpu-diverged without logs/train.log: the first start (PID 527) has no step of its
    own; the resume after it (PID 678) asked the steps it had reached and got none (it raised).
    The resumes after runs that did log steps are still told. The first start itself, its GPU at
    work (README: it trained 30 s), cannot be judged: no failed start."""
    inc = _without(tmp_path, "h100-1gpu-diverged", "logs/train.log")
    found = detect(inc)
    assert sorted(found["kind"]) == ["loss_not_finite", "loss_not_finite"]
    assert any(s.startswith("The start at 10:33:29 UTC cannot be judged: its log (logs/train.log)")
               for s in pm.what_happened(inc, found))
    assert resumes(inc)[["resumed_step", "reached_step"]].values.tolist() == [[400, 450], [100, 520]]


def test_a_foreground_log_with_no_clock_of_its_own_is_dated_from_its_command(tmp_path):
    """h100-1gpu-leak-oom without the first run's TensorBoard file: logs/train.log (tqdm bars and
    dicts, no time) was written by the foreground `python3 run/hf_train.py ... | tee
    logs/train.log` typed at 10:39:01.476; with no other source of its steps, its bar is put on
    the clock where GPU 0 went busy after that command, and its CUDA OOM (~10:39:54 by the
    README) is told at 10:39:56, no longer a process's death with no start."""
    inc = _without(tmp_path, "h100-1gpu-leak-oom", "runs/gpt2/runs/Dec05_10-39-20_vm/events.out.tfevents.1796467160.vm.1662.0")
    found = detect(inc)
    assert found["kind"].tolist() == ["training_died"]
    assert abs(found.iloc[0]["start"] - T5("10:39:55")) <= pd.Timedelta(seconds=2)
    report = next(f for f in inc.load_report.files if f.path == "logs/train.log")
    assert any("dated afterwards" in a and "logs/operator.log:1" in a for a in report.assumptions), report.assumptions


def test_a_death_is_the_first_sign_and_its_resume_passing_the_step_it_reached_the_recovery(told):
    """h200-1gpu-disk-full (README): run scratch dies at 05:13:44 while
    saving step 200; the operator resumes at 05:13:55.930 from step 100, which passes step 200
    again: that is its recovery, and until then nothing new was trained: the whole window is
    lost. h200-1gpu-vanished: run quiet dies with no word at ~03:46:12 after step 250; the
    operator looks at 03:46:51.965 and resumes at 03:46:52.298 from step 200; that resume trains
    at 0.79 of the pace before (its log's tok/s median 41,557 against 52,749) to its end: the
    resume mitigated the death, nothing recovered."""
    inc, att, found = told("h200-1gpu-disk-full")
    tl = pm.timeline(inc, found)
    imp = tl.impact
    assert (imp["first_sign_kind"], imp["mitigated"]) == ("training_died", T5("05:13:55.930"))
    assert imp["recovered"] > imp["mitigated"] and imp["gpu_hours_lost"] == pytest.approx(imp["window_s"] / 3600)
    (back,) = tl.events[tl.events["phase"] == "recovery"].itertuples()
    assert back.what == "past step 200 again, where it had died" and back.evidence[0].startswith("logs/train2.log:")
    inc, att, found = told("h200-1gpu-vanished")
    imp = pm.timeline(inc, found).impact
    assert (imp["first_sign_kind"], imp["detected"], imp["mitigated"]) == (
        "training_died", T5("03:46:51.965"), T5("03:46:52.298"))
    assert imp["recovered"] is None and imp["time_to_recover_s"] is None
    # a start typed in the foreground mitigates too (h100-1gpu-leak-oom: `python3 ... | tee logs/train2.log`)
    inc, _, found = told("h100-1gpu-leak-oom")
    assert pm.timeline(inc, found).impact["mitigated"] == T5("10:40:01.487")


def test_a_run_whose_child_was_killed_vanished_mid_bar_and_the_operator_relaunched_it(told):
    """h200-1gpu-child-killed (README): a nohup'd Lightning run (PID 538; DataLoader workers 675
    and 676) trains from ~13:07:34; SIGKILL to a child of it at 13:08:11.167; its bar stops at
    720/65536 with no word, 538 is a zombie at 13:08:13, its workers are gone at 13:08:15; the
    operator relaunches the same script into another log at 13:10:26.565 (PID 1113), which trains
    from ~13:10:46 and stops on its time limit (`Time limit reached. ... Signaling Trainer to
    stop.`). Told before as "Nothing went wrong": a bar short of its total is a run that did not
    finish, its end is its trainer's (the PID that held the GPU), and the next start of its
    script started it again."""
    inc, att, found = told("h200-1gpu-child-killed")
    assert att["pids"].tolist() == [[538, 675, 676], [1113, 1242, 1243]]
    # the bar's log has no clock: its first step where GPU 0 went busy after the launch, through
    # the start-up's ramp (17 %, 38 %) to 94 % at 13:07:34.395
    assert att["first_step"].tolist() == [T5("13:07:34.395"), T5("13:10:46.447")]
    assert att["end_kind"].tolist() == ["gone", "training_stop"]
    assert att["end"].iloc[0] == pd.Timestamp("2026-12-05 13:08:13", tz="UTC") and att["end_ref"].iloc[0] == "logs/ps.txt:228"
    assert abs(att["end"].iloc[1] - T5("13:11:30.407")) <= pd.Timedelta(seconds=3)
    (died,) = found.itertuples()
    assert died.kind == "training_died" and died.numbers["restarted_at"] == T5("13:10:26.565")
    assert pm.what_happened(inc, found) == [
        "At 13:08:13 UTC run pl_train died while training: PID 538 was listed as a zombie (`Z`: it had exited) at "
        "13:08:13 in logs/ps.txt, which went on without it; no error or stop line of its own. Its training bar had "
        "stopped at step 720 of 65,536. It was started again at 13:10:26 UTC by the operator."]
    assert died.numbers["bar_stopped"] == [720, 65536]
    imp = pm.timeline(inc, found).impact
    assert (imp["detected"], imp["mitigated"], imp["recovered"]) == (T5("13:10:26.255"), T5("13:10:26.565"), T5("13:10:46.447"))


@pytest.mark.parametrize("gone", ["logs/smi_apps.csv", "logs/ps.txt"])
def test_a_run_whose_child_was_killed_is_told_without_its_gpu_list_or_its_listing(tmp_path, gone):
    """h200-1gpu-child-killed without nvidia-smi's process list (nothing says which PID held the
    GPU: the trainer is the Python process started first, 538, not the worker 676 its death left
    orphaned for two seconds) or without the ps listing (its end is where PID 538 left the GPU)."""
    inc = _without(tmp_path, "h200-1gpu-child-killed", gone)
    found = detect(inc)
    (died,) = found.itertuples()
    said = pm.what_happened(inc, found)[0]
    if gone == "logs/smi_apps.csv":
        assert died.start == pd.Timestamp("2026-12-05 13:08:13", tz="UTC")
        assert "PID 538 was listed as a zombie (`Z`: it had exited) at 13:08:13 in logs/ps.txt" in said
    else:
        assert said.startswith("At 13:08:15 UTC run pl_train died while training: PID 538 was on GPU 0 last at 13:08:15")
    assert said.endswith("It was started again at 13:10:26 UTC by the operator.")


def test_a_dataloader_worker_killed_from_outside_ends_the_run_with_its_own_error(told):
    """h200-1gpu-worker-killed (README): a nohup'd Lightning run (PID 580; DataLoader workers 703
    and 704) trains from ~13:31:20; SIGKILL to worker 703 at 13:31:56.925; the trainer raises
    `RuntimeError: DataLoader worker (pid 703) is killed by signal: Killed.` (the direct cause of
    `... (pid(s) 703) exited unexpectedly`) at ~13:31:57, its bar stopped at 700/65536 and the
    log dated by it; the operator looks at 13:32:14.429 and relaunches at 13:32:14.734 (PID 857),
    which trains from ~13:32:30 and stops on its time limit."""
    inc, att, found = told("h200-1gpu-worker-killed")
    assert att["pids"].tolist() == [[580, 703, 704], [857, 978, 979]]
    assert att["end_kind"].tolist() == ["traceback", "training_stop"]
    a = att.iloc[0]
    assert a["cause_message"] == "RuntimeError: DataLoader worker (pid 703) is killed by signal: Killed."
    # (the bar's log has no clock: dated where GPU 0 went busy, within the samples' two seconds)
    assert abs(a["first_step"] - T5("13:31:20")) <= pd.Timedelta(seconds=3)
    assert abs(a["end"] - T5("13:31:57")) <= pd.Timedelta(seconds=3)
    (died,) = found.itertuples()
    assert died.kind == "training_died" and died.numbers["restarted_at"] == T5("13:32:14.734")
    said = pm.what_happened(inc, found)
    assert said[0].endswith("run pl_train died while training: RuntimeError: DataLoader worker (pid 703) is killed by "
                            "signal: Killed. It was started again at 13:32:14 UTC by the operator.")
    imp = pm.timeline(inc, found).impact
    assert (imp["detected"], imp["mitigated"]) == (T5("13:32:14.429"), T5("13:32:14.734"))
    assert abs(imp["recovered"] - T5("13:32:30")) <= pd.Timedelta(seconds=1)


def test_a_foreground_runs_output_in_the_typescript_is_its_log(tmp_path):
    """h200-1gpu-ctrl-z: the run is in the foreground, `... 2>&1 | tee logs/train.log`, stopped by
    Ctrl-Z at its step 150 (03:44:12), brought back by `fg` at 03:45:13, where it stops at once
    (README). Without logs/train.log the typescript still holds every line the run printed, and
    `fg` echoes the job before its last line: the kit said "No training seen in 4 files"; now the
    story is the one the whole folder gives. With the log there, its printed copy adds no row."""
    whole = _without(tmp_path / "whole", "h200-1gpu-ctrl-z")
    assert set(whole.metrics["source"]) == {"logs/train.log"}
    typescript = next(f for f in whole.load_report.files if f.path == "logs/terminal.typescript")
    assert "metrics" not in typescript.rows and any(  # its account says where its printed rows went
        n.endswith("metric rows printed from logs/train.log: read from the folder's copy of it instead")
        for n in typescript.notes), typescript.notes
    told = pm.what_happened(whole, detect(whole))
    inc = _without(tmp_path, "h200-1gpu-ctrl-z", "logs/train.log")
    assert set(inc.metrics["source"]) == {"logs/train.log"}  # (the printed copy stands for the file)
    assert all(r.startswith("logs/terminal.typescript:") for r in inc.metrics["ref"])
    steps = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    assert steps["step"].max() == 150 and f"{steps['time'].max():%H:%M:%S}" == "03:44:12"
    said = pm.what_happened(inc, detect(inc))
    assert said == told and said[-1] == "Then the run stopped by itself at 03:45:13 UTC.", said


def test_a_run_that_stops_early_exits_cleanly_and_an_oom_relaunch_never_came_up():
    """h100-1gpu-early-stop (README): run 1 (PID 560, `--patience 3`) stops early at step 800 of
    its bar's 3000 (`Early stopping`, the bar at 799/3000, no "finished" line) and exits 0, bash's
    `[1]+ Done`; run 2 (PID 707, a 32x batch) dies of CUDA OOM in its first forward pass,
    `Exit 1`; run 3 (PID 817) trains from ~15:39:19 and stops early at step 1500, `Done`. A bar
    short of its total is no death where the shell says the job was done: only run 2 failed,
    by its OOM, and run 3 came up. Run 2's log has no timestamp: its lines are dated from its
    launch, not from run 3's GPU going busy (15:39:18, after run 3's launch), and it ended when it
    was last seen."""
    inc, found = loaded("h100-1gpu-early-stop")
    att = attempts(inc)
    assert att["pids"].tolist() == [[560], [707], [817]]
    assert att["exit_code"].tolist()[::2] == [0, 0] and att["end_kind"].tolist() == ["exit", "oom", "exit"]
    # its OOM, undated, is no earlier than its launch; PID 707 was last seen holding 67,526 MiB at
    # 15:38:52.648 (README): it ended there, not at its launch nor after run 3's launch (15:39:18)
    assert f"{att.loc[1, 'end']:%H:%M:%S.%f}"[:12] == "15:38:52.648"
    assert list(found["kind"]) == ["failed_restart"]
    failed = found.iloc[0]
    assert failed["numbers"]["pid"] == 707 and failed["numbers"]["reason"] == "out of memory in start-up"
    said = pm.what_happened(inc, found)
    # (launched at 15:38:41.35 by the driver's clock, typed after the `date` at 15:38:36; `ps` says
    # PID 707 started at 15:38:40: its undated log's lines, placed no earlier than the launch, no
    # longer outbid that)
    assert said == ["The restart at 15:38:40 UTC never came up: out of memory in start-up: process 707 ran out of GPU "
                    "memory (32,768 MiB asked, 13,548 MiB free).",
                    "The start at 15:39:08 UTC by the operator came up: its first step was logged at 15:39:20 UTC."]


def test_a_make_launcher_tells_each_start_by_the_recipe_it_echoed_and_the_kill_by_its_shells_report():
    """h100-1gpu-make-launcher (README): `make train` (typescript line 4) starts trainer PID 584,
    which dies in start-up of a FileNotFoundError (its PID file's folder), make says `Error 1`;
    `make train PIDFILE=run/drafter.pid` (line 16, typed at 17:29:15) starts PID 663, which trains
    from 17:29:28 until a SIGKILL from outside after its step 350 (17:30:23): its recipe's shell
    wrote `Killed` into its log (line 81), make said `Error 137`; `make resume ...` (line 51) starts
    PID 967, which goes on from the step-300 checkpoint to step 600 and exits 0. The starts are the
    recipes make echoed (the trainer's command and the log it names), each attempt's status the
    one make gave its command."""
    inc, found = loaded("h100-1gpu-make-launcher")
    att = attempts(inc)
    assert att["pids"].tolist() == [[584], [663], [967]]
    assert att["launch_ref"].tolist() == [f"logs/terminal.typescript:{n}" for n in (4, 16, 51)]
    assert att["log_path"].tolist() == ["logs/train-20261205-172853.log", "logs/train-20261205-172915.log",
                                        "logs/resume-20261205-173059.log"]
    assert att["end_kind"].tolist() == ["exit", "killed", "exit"] and att["exit_code"].tolist()[::2] == [1, 0]
    assert att.loc[1, "signal"] == "SIGKILL" and att.loc[1, "end_ref"] == "logs/train-20261205-172915.log:81"
    assert list(found["kind"]) == ["failed_restart", "training_died"]
    assert found.iloc[0]["numbers"]["pid"] == 584
    died = found.iloc[1]["numbers"]
    assert (died["pid"], died["reached_step"], died["resumed_step"], died["redone_steps"]) == (663, 350, 300, 50)
    assert pm.what_happened(inc, found) == [
        "The start at 17:28:53 UTC never came up: died during start-up: process 584 started and wrote a traceback "
        "ending `FileNotFoundError: [Errno 2] No such file or directory: '/scratch/dflash/drafter.pid'`.",
        "The start at 17:29:15 UTC by the operator came up: its first step was logged at 17:29:28 UTC.",
        "At 17:30:23 UTC run drafter died while training: killed by SIGKILL (Killed). It was started again at "
        "17:30:59 UTC by the operator, resuming from a checkpoint at step 300: it had logged step 350, so 50 steps "
        "were done again."]


def test_a_pattern_kill_meant_for_the_old_run_ends_the_relaunch_in_start_up_too():
    """h200-1gpu-pkill-both (README): run 1 (PID 584, `--run-name drafter-7b`) trains; the operator
    relaunches under the same run name (PID 705, typed 18:10:13.56), then types `pkill -f 'run-name
    drafter-7b'` (typescript line 10, 18:10:18.07) while PID 705 is still loading: both die of its
    SIGTERM (bash's `Terminated` for jobs [1] and [2]); PID 774 (18:10:32) trains to step 400,
    slower than run 1 (tok/s median 52,518 against 69,817) with `--lr 1e-4` (run 1: 3e-4). The
    transcript dates the pkill only by the `date` before it (18:10:13, before PID 705 was listed):
    the processes it reached are those of the pattern listed in its window and gone by its end."""
    inc, found = loaded("h200-1gpu-pkill-both")
    att = attempts(inc)
    assert att["pids"].tolist() == [[584], [705], [774]]
    assert att["end_kind"].tolist()[:2] == ["kill_sent", "kill_sent"]
    assert att["end_ref"].tolist()[:2] == ["logs/terminal.typescript:10"] * 2
    assert list(found["kind"]) == ["failed_restart", "throughput_regression", "no_recovery"]
    failed = found.iloc[0]
    assert failed["numbers"]["pid"] == 705 and failed["numbers"]["reason"] == "killed"
    assert failed["caused_by"][0]["evidence"] == ["logs/terminal.typescript:10"]
    assert pm.what_happened(inc, found) == [
        "The restart at 18:10:13 UTC never came up: killed during start-up by a kill aimed at it: pkill sent SIGTERM "
        "to processes matching 'run-name drafter-7b' (18:10:17); the same kill ended the start at 18:09:38 (PID 584), "
        "which was training.",
        "The start at 18:10:32 UTC by the operator came up: its first step was logged at 18:10:42 UTC; its steps "
        "began again at step 5, below step 225 that its job had logged, so 220 steps were done again.",
        "At 18:10:45 UTC throughput fell from 70.1K tok/s to 53.3K tok/s (0.76 of baseline) when run drafter-7b was "
        "started again at 18:10:32, started with --lr 1e-4.",
        "It had not recovered when the evidence ends."]
    imp = pm.timeline(inc, found).impact
    assert (imp["mitigated"], imp["recovered"]) == (att["start"].iloc[2], None)  # run 3 came up, slower


def test_without_a_listing_a_pattern_kill_reaches_the_starts_whose_command_it_matches(tmp_path):
    """h200-1gpu-pkill-both without logs/ps.txt: no listing resolves `pkill -f 'run-name
    drafter-7b'`, but `pkill -f` matches command lines, and both starts' typed commands hold the
    pattern (README: it killed PID 584 and PID 705): the relaunch was killed by that kill, not by
    its launching session's end, and the run before it was ended by it too."""
    inc = _without(tmp_path, "h200-1gpu-pkill-both", "logs/ps.txt")
    att = attempts(inc)
    assert att["pids"].tolist()[:2] == [[584], [705]]
    assert att["end_kind"].tolist()[:2] == ["kill_sent", "kill_sent"]
    found = detect(inc)
    assert found["kind"].iloc[0] == "failed_restart" and found.iloc[0]["numbers"]["reason"] == "killed"
    assert pm.what_happened(inc, found)[0].endswith(
        "pkill sent SIGTERM to processes matching 'run-name drafter-7b' (18:10:17); the same kill ended the start at "
        "18:09:42 (PID 584), which was training.")


def test_a_relaunch_under_the_same_name_that_trained_slower_is_a_drop_with_the_setting_typed_before_it():
    """h100-1gpu-debug-env (README): run 1 (PID 582, typed 19:42:06.328) trains at a tok/s median of
    60,642 and dies at 19:42:45 (`RuntimeError: injected failure in the drafter at its step 150`);
    the operator types `export CUDA_LAUNCH_BLOCKING=1` (typescript line 11) and resumes the same
    command under the same `--run-name drafter-7b` at 19:43:00.368 (PID 751): 28,598 tok/s (0.47);
    `kill 751` at 19:44:22.382 after step 350, `unset CUDA_LAUNCH_BLOCKING` (line 22), and run 3
    (PID 1002, 19:44:26.788) trains at 51,723 to step 1000. One run name, three starts: the drop
    came with the second start, and what differs is the environment typed before it."""
    inc, found = loaded("h100-1gpu-debug-env")
    att = attempts(inc)
    assert att["pids"].tolist() == [[582], [751], [1002]]
    assert list(found["kind"]) == ["training_died", "throughput_regression", "partial_recovery", "recovery"]
    drop = found.iloc[1]
    n = drop["numbers"]
    assert n["across_runs"] and n["run_before"] == n["run_after"] == "drafter-7b"
    assert 0.42 < n["ratio"] < 0.52 and 55_000 < n["baseline_tok_per_s"] < 66_000
    assert abs(n["run_after_launch"] - T5("19:43:00.368")) <= NEAR
    assert drop["start"] == T5("19:43:11")  # run 2's first step line (train2.log line 10)
    assert n["flag_differences"][0] == "CUDA_LAUNCH_BLOCKING=1"
    assert drop["caused_by"][0]["evidence"][0] == "logs/terminal.typescript:11"
    assert pm.what_happened(inc, found)[1] == (
        "At 19:43:11 UTC throughput fell from 61.7K tok/s to 28.6K tok/s (0.46 of baseline) when run drafter-7b was "
        "started again at 19:43:00, started with CUDA_LAUNCH_BLOCKING=1 (no --inject-error; was drafter:150).")
    # run 3 starts slower than it goes on (train3.log: 40-50K for its first minute), then holds
    # the pace: its start is what brought it back, launched once the variable was unset
    partial, back = found.iloc[2], found.iloc[3]
    assert partial["numbers"]["relaunch"] and partial["start"] >= T5("19:44:26") and back["start"] > partial["end"]
    imp = pm.timeline(inc, found).impact
    assert abs(imp["mitigated"] - T5("19:44:26.788")) <= NEAR and imp["recovered"] > imp["mitigated"]


def test_a_resume_with_the_same_batch_in_smaller_steps_that_trains_at_half_the_pace_is_a_drop():
    """h200-1gpu-hf-slow-resume (README): a Hugging Face Trainer (PID 557, typed 22:08:57.062,
    `--per_device_train_batch_size 8 --gradient_accumulation_steps 1`) trains at a bar median of
    14.79 it/s for twenty seconds; `kill 557` at 22:09:42.588 after its step-200 checkpoint; the
    same command resumed at 22:09:47.797 (PID 739) with `--per_device_train_batch_size 4
    --gradient_accumulation_steps 2 --gradient_checkpointing` (8 sequences a step, as before)
    trains at 6.60 it/s (0.45) to step 800. The first start is three pace samples long: its own
    noise, not the next start's level, is what the drop is weighed against; the bare switch is
    named as typed; the ledger counts the resumed run's lost half against the first start's pace."""
    inc, found = loaded("h200-1gpu-hf-slow-resume")
    att = attempts(inc)
    assert att["pids"].tolist() == [[557], [739]]
    assert abs(att["start"].iloc[1] - T5("22:09:47.797")) <= NEAR
    assert list(found["kind"]) == ["throughput_regression", "no_recovery"]
    n = found.iloc[0]["numbers"]
    assert n["across_runs"] and 0.40 < n["ratio"] < 0.55 and n["unit"] == "steps/s"
    assert n["flag_differences"] == ["--per_device_train_batch_size 4", "--gradient_accumulation_steps 2",
                                     "--gradient_checkpointing"]
    assert found.iloc[0]["caused_by"][0]["evidence"] == ["logs/terminal.typescript:16"]
    # the GPU's seconds while PID 739 trained at half the pace: about half of them lost
    parts = ledger(inc)
    degraded = float(parts["degraded"].sum())
    assert 35 < degraded < 70, parts


def test_a_relaunch_with_a_batch_the_first_left_to_its_default_is_not_weighed_in_steps():
    """h100-1gpu-early-stop (README): run 1 (PID 560, no `--batch`: the script's default of
    1,048,576) at ~42 it/s, run 3 (PID 817, `--batch 2097152`) at ~20.2 it/s: twice the batch
    at half the steps, the same work a second. How much larger run 3's steps are no file says (the
    default is in no log): steps a second compare unlike steps, and neither the findings nor the
    ledger count run 3's pace as a loss."""
    inc, found = loaded("h100-1gpu-early-stop")
    assert "throughput_regression" not in set(found["kind"])
    assert float(ledger(inc)["degraded"].sum()) == 0.0


def test_a_two_node_torchrun_waiting_at_rendezvous_is_two_starts_that_never_came_up():
    """h100-1gpu-rendezvous-wait (README): `nohup /opt/torch/.venv/bin/torchrun --nnodes 2 ...`
    typed at 01:59:48.241 on one machine; its agent, PID 599, waits at rendezvous for a node that
    never comes (no worker, 4 MiB on the GPU) and times out; the same command at 02:01:00.409
    (agent PID 659) is ended by the operator's `kill 659` at 02:01:31.748; `--standalone` at
    02:01:40.361 logs its first step at 02:01:53. The kit said "Nothing went wrong": it read no
    launch from a torchrun typed by its path."""
    inc, found = loaded("h100-1gpu-rendezvous-wait")
    att = attempts(inc)
    typed = [pd.Timestamp(f"2026-12-06 {t}", tz="UTC") for t in ("01:59:48.241", "02:01:00.409", "02:01:40.361")]
    assert [abs(s - t) <= NEAR for s, t in zip(att["start"], typed, strict=True)] == [True] * 3
    assert att["pids"].iloc[0] == [599] and 659 in att["pids"].iloc[1]
    assert att["first_step"].iloc[:2].isna().all() and f"{att['first_step'].iloc[2]:%H:%M:%S}" == "02:01:53"
    failed = found[found["kind"] == "failed_restart"]
    assert [f"{t:%H:%M:%S.%f}"[:12] for t in failed["start"]] == ["01:59:48.241", "02:01:00.409"]
    assert failed.iloc[1]["caused_by"][0]["evidence"] == ["logs/operator.log:75"]  # `kill 659`
    # its log holds nothing (the relaunch's `>` emptied it): the operator's `tail -n 20` of it at
    # 02:00:55 is what says how it ended
    assert failed.iloc[0]["numbers"]["reason"] == "died in start-up"
    assert failed.iloc[0]["caused_by"][0]["evidence"] == ["logs/operator.log:48"]
    assert "RendezvousTimeoutError" in failed.iloc[0]["numbers"]["why"]


def test_a_log_held_in_the_trainers_buffer_is_no_start_that_never_came_up_and_no_stall():
    """h200-1gpu-buffered-log (README): `nohup python3 train_plain.py ... > logs/train.log 2>&1 &`
    at 04:08:07.039 (PID 580) prints only with `print()`: its lines wait in its stdout buffer, the
    operator's `ls -la logs/` lists train.log at 0 bytes (04:08:37.708, 04:08:59.343) while the GPU
    holds 16 GiB at 100 %, and `kill -9 580` (04:08:59.965) loses them: it made ~930 iterations. The
    `python3 -u` relaunch at 04:09:10.271 (PID 784) logs nanoGPT's lines, which carry no time, and
    ends by itself (`training done`, 04:10:36.495). The kit said the relaunch stalled for 87 s (its
    steps, placed at its launch, showed no later step) and would have called the first a start that
    never came up."""
    inc, found = loaded("h200-1gpu-buffered-log")
    att = attempts(inc)
    assert [f"{t:%H:%M:%S.%f}"[:12] for t in att["start"]] == ["04:08:07.039", "04:09:10.271"]
    assert att["pids"].tolist() == [[580], [784]]
    assert set(found["kind"]) & {"stall", "failed_restart", "training_died"} == set()
    st = states(inc)
    assert "stalled" not in set(st["state"])
    said = " ".join(pm.what_happened(inc, found))
    assert ("The start at 04:08:07 UTC cannot be judged: its log stayed empty (04:08:37: logs/train.log listed "
            "with 0 bytes; 04:08:59: logs/train.log listed with 0 bytes), and its GPU was at work while PID 580 "
            "held it: 100 % utilization") in said
    assert "it ended at 04:08:59 UTC, killed by SIGKILL" in said


def test_a_start_whose_log_carries_no_time_came_up_without_a_time_of_its_first_step():
    """The buffered-log capture's relaunch at 04:09:10 came up, and its nanoGPT lines (`iter 50:
    loss ...`) carry no time; told as the start that came up after a failed one (as the story
    tells it where the start before it never came up), the kit said "its first step was logged at
    04:09:10 UTC", the launch's time where it placed the lines, a time no line gives (its first
    line reached the file at 04:09:15.330, README)."""
    from dflash_postmortem.present.sentences import _came_up

    inc, found = loaded("h200-1gpu-buffered-log")
    day = "2026-12-06 "
    assert _came_up(inc, pd.Timestamp(day + "04:08:07.039", tz="UTC")) == (
        pd.Timestamp(day + "04:09:10.271", tz="UTC"),
        "The start at 04:09:10 UTC by the operator came up: its log holds its steps, though no line of it carries a time.")
    assert not any("first step was logged" in s for s in pm.what_happened(inc, found))


def _dec6(hms: str) -> pd.Timestamp:
    return pd.Timestamp(f"2026-12-06 {hms}", tz="UTC")


def test_a_supervisor_loops_restarts_on_a_torn_checkpoint_are_starts_of_their_own_under_its_shell():
    """h100-1gpu-torn-checkpoint (README): `nohup ./run.sh` (bash PID 641) runs train.py as PID 646,
    which trains from 08:14:23 until `kill -9 646` (08:15:30.825) tears its checkpoint mid-save; the
    loop starts it again as PIDs 888, 960 and 1031, each dying in `torch.load` (exit 1); a second
    `nohup ./run.sh` (PID 1118) starts PID 1121 from step 0, stopped by `kill 1121` at 08:17:08.500.
    Only ps's parent column ties the restarts to the loop (their log is the loop's `>>` append):
    they were one start, and the recording driver (PID 632, a python process begun a second before
    the launch) was counted as its process."""
    inc, found = loaded("h100-1gpu-torn-checkpoint")
    att = attempts(inc)
    assert att["pids"].tolist() == [[646], [888], [960], [1031], [1121]]
    assert att["by"].tolist() == ["operator", "supervisor", "supervisor", "supervisor", "operator"]
    starts = dict(zip(att["attempt"], att["start"], strict=True))
    for a, hms in (("A2", "08:15:36.258"), ("A3", "08:15:49.642"), ("A4", "08:16:03.226")):
        assert abs(starts[a] - _dec6(hms)) <= pd.Timedelta(seconds=2)  # ps lists starts to the second
    assert att["end_kind"].tolist()[0] == "kill_sent" and att["end"].iloc[0] == _dec6("08:15:30.825")
    # each restart's exit status is the loop's line about it (supervisor.log), 1 each
    assert att["exit_code"].tolist()[1:4] == [1, 1, 1]
    assert att["end"].iloc[4] == _dec6("08:17:08.500") and att["signal"].iloc[4] == "SIGTERM"
    failed = found[found["kind"] == "failed_restart"]
    assert [f"{t:%H:%M:%S}" for t in failed["start"]] == ["08:15:35", "08:15:48", "08:16:02"]
    # the last start began again from its first step line (step 25 at 08:16:29) and never passed
    # step 1000, where the first one had been when it was killed
    r = resumes(inc).set_index("attempt").loc["A5"]
    assert (r["resumed_step"], r["reached_step"], bool(r["caught_up"]), bool(r["said"])) == (25, 1000, False, False)
    assert pm.what_happened(inc, found)[-1] == (
        "The start at 08:16:19 UTC by the operator came up: its first step was logged at 08:16:29 UTC; its steps "
        "began again at step 25, below step 1000 that its job had logged, so 975 steps were done again, and it had "
        "not passed step 1000 when the evidence ends.")
    assert pm.timeline(inc, found).impact["recovered"] is None


def test_a_python_supervisors_restarts_into_the_same_segfault_and_the_operators_relaunch_are_one_job():
    """h100-1gpu-segv-supervisor (README): `nohup python3 supervise.py` (PID 656, typed 10:13:38.097)
    runs train.py as PID 660, which dies of a real SIGSEGV at step 450 (faulthandler's `Fatal Python
    error: Segmentation fault`, 10:14:16.078; the supervisor: `returncode -11 (SIGSEGV)`); it runs it
    again as PIDs 812 (seen 10:14:26.418) and 913 (10:14:53.191), each resuming at step 400 into the
    same crash; the operator's `nohup python3 train.py --resume ckpt/last.pt --skip-bad-shard` (PID
    1020, 10:15:19.095) resumes at 400 and trains to `training done at step 1150` (10:16:13.405).
    The supervisor, a Python process, was taken for the trainer (the first death was missed, the
    restarts were one), a fatal signal's dump ended nothing, and the manual relaunch was no job's."""
    inc, found = loaded("h100-1gpu-segv-supervisor")
    att = attempts(inc)
    assert att["pids"].tolist() == [[660], [812], [913], [1020]]
    assert att["by"].tolist() == ["operator", "supervisor", "supervisor", "operator"]
    assert att["job"].nunique() == 1
    for a, hms in (("A2", "10:14:26.418"), ("A3", "10:14:53.191")):
        assert abs(att.set_index("attempt").at[a, "start"] - _dec6(hms)) <= pd.Timedelta(seconds=2)
    assert att["start"].iloc[3] == _dec6("10:15:19.095")
    assert att["signal"].tolist()[:3] == ["SIGSEGV"] * 3 and att["end"].iloc[0] == _dec6("10:14:16.078")
    assert (att["end_kind"].iloc[3], att["end"].iloc[3]) == ("training_stop", _dec6("10:16:13.405"))
    r = resumes(inc).set_index("attempt")
    assert r.loc[["A2", "A3", "A4"], "resumed_step"].tolist() == [400] * 3 and set(r["redone_steps"]) == {50}
    assert [f"{t:%H:%M:%S}" for t in found["start"]] == ["10:14:16", "10:14:42", "10:15:07"]
    assert pm.what_happened(inc, found)[2].endswith(
        "Its supervisor then gave up at 10:15:07 UTC (`giving up after 3 attempts`). "
        "It was started again at 10:15:19 UTC by the operator, resuming from a checkpoint at step 400: it had logged "
        "step 450, so 50 steps were done again.")
    # (the supervisor's `giving up` line, 10:15:07,566, after the third death only: not after the first two,
    # which it restarted)
    assert [f["numbers"]["gave_up_at"] for _, f in found.iterrows()] == [None, None, _dec6("10:15:07.566")]


def test_a_supervisors_own_log_tells_its_restarts_and_their_pids_without_a_listing(tmp_path):
    """h100-1gpu-segv-supervisor without ps.txt and the operator's transcript: what is left of the
    restarts is supervisor.log (and its copy on stdout, supervisor.out): `started train.py (attempt
    2/3, pid 812)` at 10:14:26,287 and `(attempt 3/3, pid 913)` at 10:14:53,051, each `train.py (pid
    N) exited with returncode -11`. They were read as no starts: the restarts were dated by their
    first lines in train.log ("started again at 10:14:39 UTC by a new start"), and the first
    trainer's exit, in each of the two files, was a death of its own that "holds nothing of its
    start". The driver saw 812 start at 10:14:26.418 and 913 at 10:14:53.191 (README)."""
    inc = _without(tmp_path, "h100-1gpu-segv-supervisor", "logs/ps.txt", "logs/operator.log")
    att = attempts(inc)
    sup = att[att["by"] == "supervisor"]
    assert sup["pids"].tolist() == [[660], [812], [913]]
    assert sup["start"].tolist() == [_dec6("10:13:38.183"), _dec6("10:14:26.287"), _dec6("10:14:53.051")]
    assert sup["signal"].tolist() == ["SIGSEGV"] * 3
    found = detect(inc)
    assert "process_died" not in set(found["kind"])
    said = pm.what_happened(inc, found)
    assert [s.split(" UTC by ")[0].split("started again at ")[-1] for s in said[:2]] == ["10:14:26", "10:14:53"]
    assert all("by its supervisor" in s for s in said[:2]), said


def test_a_second_torchrun_dies_on_the_port_the_first_still_holds():
    """h100-1gpu-port-in-use (README): run 1, `nohup torchrun ... --master-port 29500` typed at
    10:44:20.500 (agent 651, workers 679 and 680), trains; the operator, reading an older log by
    mistake, types the same command at 10:45:03.110 (agent 797), which dies at once of
    `EADDRINUSE` on port 29500; `kill 651` at 10:45:14.374 ends run 1; run 3 (agent 864, typed
    10:45:18.494) trains from step 0 to `Training stopped`. The session was read as an
    nvidia-smi table (its sniffer tied with the transcript's on the table it printed): no launch
    was known, run 1's own processes were "stale", and nothing said who held the port."""
    inc, found = loaded("h100-1gpu-port-in-use")
    att = attempts(inc).set_index("attempt")
    live = att[att["start"] >= _dec6("10:44:00")]
    assert live["pids"].tolist() == [[651, 679, 680], [797], [864, 893, 894]]
    assert live["start"].tolist() == [_dec6("10:44:20.500"), _dec6("10:45:03.110"), _dec6("10:45:18.494")]
    assert (live["end_kind"].iloc[0], live["end"].iloc[0]) == ("kill_sent", _dec6("10:45:14.374"))
    assert list(found["kind"]) == ["failed_restart"]
    assert pm.what_happened(inc, found)[0].endswith(
        "address already in use`; port 29500 was held by the start at 10:44:20 UTC (PID 651), still running.")


def test_a_logs_tail_a_session_printed_says_nothing_of_where_its_start_began(tmp_path):
    """h100-1gpu-port-in-use without run3.log: what is left of run 3's log is the operator's `tail -n
    3 logs/run3.log` (steps 185, at 10:46:07). Its first line was read as where run 3 began: "its
    steps began again at step 185, below step 195 ... 10 steps were done again" (run 3 began at step
    5, README)."""
    inc = _without(tmp_path, "h100-1gpu-port-in-use", "logs/run3.log")
    said = pm.what_happened(inc, detect(inc))
    assert said[-1] == "The start at 10:45:18 UTC by the operator came up: its first step was logged at 10:46:07 UTC."


def test_a_relaunch_with_a_debugging_setting_typed_on_its_command_line_is_the_drops_candidate():
    """h100-1gpu-assert-relaunch (README): run 1 (PID 668) dies on a CUDA device-side assert at
    ~08:19:40; the operator runs the same command prefixed with `CUDA_LAUNCH_BLOCKING=1` (PID 836,
    typed 08:19:55.901) into its own `tee` log, which trains 1.65 times slower and dies the same
    way; run 3 (PID 1065) with the data's vocabulary fixed trains to its end. The setting was typed
    on the foreground command itself, which was read as no launch's environment."""
    inc, found = loaded("h100-1gpu-assert-relaunch")
    att = attempts(inc)
    assert att["pids"].tolist() == [[668], [836], [1065]]
    assert att["exit_code"].tolist() == [1, 1, 0]
    assert att["start"].iloc[1] == _dec6("08:19:55.901")
    assert list(found["kind"]) == ["training_died", "throughput_regression", "training_died", "recovery"]
    drop = found[found["kind"] == "throughput_regression"].iloc[0]
    assert drop["numbers"]["flag_differences"] == ["CUDA_LAUNCH_BLOCKING=1"]
    assert pm.what_happened(inc, found)[1] == (
        "At 08:20:05 UTC throughput fell from 372.5K tok/s to 224.9K tok/s (0.60 of baseline) when run run2 replaced "
        "run run1, started with CUDA_LAUNCH_BLOCKING=1.")


def test_a_loops_restarts_are_told_from_the_listing_alone_without_the_operators_session(tmp_path):
    """h100-1gpu-torn-checkpoint without operator.log: no launch names run.sh, yet ps lists the
    loop's shell (PID 641, `/bin/bash ./run.sh`) as the parent of train.py's PIDs 646, 888, 960 and
    1031, each begun after the one before had gone. PID 646 and the recording driver (PID 632, a
    python process) are both listed as begun at 08:14:14; the log was taken for the driver's, and
    the three restarts were one stall of it. A script that runs the same program again after it
    ended restarted it; of two starts in one second the higher PID is the later; the loop's
    `646 Killed` line (dated by the line before it, 08:14:15) tells 646's end, when it was last
    listed (08:15:30); the loop's exit lines after each end are those ends, no death of their own."""
    inc = _without(tmp_path, "h100-1gpu-torn-checkpoint", "logs/operator.log")
    att = attempts(inc)
    assert att["pids"].tolist() == [[646], [888], [960], [1031], [1121]]
    assert att["by"].tolist()[1:4] == ["supervisor"] * 3
    first = att.iloc[0]
    assert (first["end_kind"], first["signal"], first["end"]) == ("killed", "SIGKILL", _dec6("08:15:30"))
    found = detect(inc)
    assert list(found["kind"]).count("failed_restart") == 3
    assert "process_died" not in set(found["kind"])
    said = pm.what_happened(inc, found)
    assert said[0].startswith("At 08:15:30 UTC run train died while training: ./run.sh: line 10:   646 Killed")
    assert said[-1].startswith("The start at 08:16:18 UTC came up: its first step was logged at 08:16:29 UTC")


def test_a_process_a_session_listed_once_writes_the_log_it_was_seen_during(tmp_path):
    """h100-1gpu-torn-checkpoint without ps.txt: the operator's `pgrep -af train.py` at 08:15:15.198
    shows PID 646 (training since 08:14:23, README), and at 08:17:08.167 PID 1121 (started 08:16:18
    by the second loop). A sighting is no start: 646 began no later than it was seen, and 1121 after
    the session's listing before. Taken as their starts, 646 was no writer of train.log's first
    part (begun 08:14:26) but a "new worker" of each later start, so the loop's `646 Killed` ended
    the start at 08:16:29 ("died while training at 08:17:08"); the kill -9 of 646 ended nothing."""
    inc = _without(tmp_path, "h100-1gpu-torn-checkpoint", "logs/ps.txt")
    att = attempts(inc)
    first = att[att["pids"].map(lambda p: 646 in p)].iloc[0]
    assert first["start"] == _dec6("08:14:26.686") and first["end"] == _dec6("08:15:30.825")
    assert first["end_kind"] == "kill_sent" and first["signal"] == "SIGKILL"
    last = att[att["pids"].map(lambda p: 1121 in p)].iloc[0]
    assert last["start"] == _dec6("08:16:29.258") and last["end"] == _dec6("08:17:08.500")
    said = " ".join(pm.what_happened(inc, detect(inc)))
    assert "08:17:08 UTC run train died" not in said


def test_a_process_on_a_listings_first_screen_writes_no_log_begun_later(tmp_path):
    """h200-1gpu-torchrun-halt without torchrun.log: `top`'s first screen (02:32:30) shows the
    recording driver (PID 897, `python3 scripts/gpu_incidents.py ...`) beside torchrun (917); the
    log's part that `tail` printed begins at 02:33:17. Nothing shows when either began, and the
    driver was taken for a start of its own that "died while training" after its own restart."""
    inc = _without(tmp_path, "h200-1gpu-torchrun-halt", "logs/torchrun.log")
    att = attempts(inc)
    assert att["pids"].tolist() == [[917, 939, 940], [999, 1000]]
    said = pm.what_happened(inc, detect(inc))
    assert len(said) == 2 and said[0].startswith("At 02:33:49 UTC run ddp-drafter died while training on rank 0")
    assert said[1].startswith("The restart at 02:33:53 UTC never came up")


def test_a_restart_owns_no_line_written_after_the_listing_saw_it_gone(tmp_path):
    """h100-1gpu-torn-checkpoint without train.log: what is left of it is what `tail` printed,
    the last time at 08:17:07 (steps 550-600 of PID 1121, 08:17:03-08:17:06). The loop's third
    restart (PID 1031) was gone by 08:16:10 (ps.txt); its part of the log ran on to the evidence's
    end, so it "came up" with the next start's steps. A restart's part ends where the listing saw
    its processes gone (and 30 s for its last words)."""
    inc = _without(tmp_path, "h100-1gpu-torn-checkpoint", "logs/train.log")
    att = attempts(inc).set_index("attempt")
    restarts = att[att["by"] == "supervisor"]
    assert restarts["pids"].tolist() == [[888], [960], [1031]]
    assert restarts["first_step"].isna().all()
    said = " ".join(pm.what_happened(inc, detect(inc)))
    assert "08:16:02 UTC (exited)" in said and "by its supervisor came up" not in said


def test_the_rank_logs_begun_after_a_launchers_own_output_are_its_workers(tmp_path):
    """h200-1gpu-rank-logs without ps.txt: the launch (`nohup ./launch.sh > logs/launch.out`,
    01:19:01.788) writes torchrun's own lines; its workers write train_rank0.log and
    train_rank1.log from 01:19:16. With no listing to join them, the rank logs were a start of
    their own ("The start at 01:19:16 UTC came up") and the launch one that "never came up",
    ended by torchrun's ChildFailedError. One start (README): the ranks are the workers of the
    launcher whose output began 7 s before them."""
    inc = _without(tmp_path, "h200-1gpu-rank-logs", "logs/ps.txt")
    att = attempts(inc)
    assert att["start"].tolist() == [pd.Timestamp("2026-12-04 01:19:01.788", tz="UTC")]
    assert sorted(att["sources"].iloc[0]) == ["logs/launch.out", "logs/train_rank0.log", "logs/train_rank1.log"]
    found = detect(inc)
    assert list(found["kind"]) == ["training_died"]
    assert pm.what_happened(inc, found) == pm.what_happened(*loaded("h200-1gpu-rank-logs"))


def test_a_launchers_agent_its_worker_and_the_workers_records_are_one_start_without_the_session(tmp_path):
    """h200-1gpu-hf-oom-resume without the operator's transcript: `accelerate launch` (PID 1050,
    no launch known) starts the Trainer as PID 1112, which writes TensorBoard events named for its
    PID (17:40:39) and logs/hf_train.log (from 17:40:41); the resume is 1283 and 1344 the same
    way. Read as the agent's worker, 1112's attempt already had its events file when the log's
    first line came, so the log went to the recording driver (PID 542, listed since 17:37:36 and
    writing nothing): "training stalled ... while PID 542 was alive". The records a tracking
    library writes from inside the trainer are no log of their own; the story is the whole
    incident's, but for who started the resume (the transcript says the operator)."""
    inc = _without(tmp_path, "h200-1gpu-hf-oom-resume", "logs/operator.log")
    att = attempts(inc)
    assert att["pids"].tolist() == [[1050, 1112], [1283, 1344]]
    assert ["logs/hf_train.log" in s for s in att["sources"]] == [True, False]
    said = pm.what_happened(inc, detect(inc))
    assert [s.split(":")[0] for s in said] == ["At 17"] and "542" not in said[0]
    assert said[0].endswith("It was started again at 17:41:29 UTC by a new start, resuming from a checkpoint at step "
                            "200: it had logged step 249, so 49 steps were done again.")


def test_a_launchers_agent_under_which_no_worker_started_never_came_up(tmp_path):
    """h100-1gpu-rendezvous-wait without the operator's transcript: what is left of the two
    two-node launches is `top`'s listing of their torchrun agents (PID 599 from 01:59:48 to
    02:00:50, PID 659 from 02:01:00 to 02:01:30), waiting at rendezvous, no worker ever begun while
    either was listed; train.log was emptied by the third launch's redirect. They were processes
    that wrote no log, so no start: "The start at 02:01:46 UTC came up" was all the story said.
    Both never came up (README), and the third came up."""
    inc = _without(tmp_path, "h100-1gpu-rendezvous-wait", "logs/operator.log")
    att = attempts(inc)
    assert att["pids"].tolist() == [[599], [659], [734]]
    assert att["end"].tolist()[:2] == [_dec6("02:00:50"), _dec6("02:01:30")]
    found = detect(inc)
    assert list(found["kind"]) == ["failed_restart", "failed_restart"]
    said = pm.what_happened(inc, found)
    assert said[0].startswith("The start at 01:59:48 UTC never came up") and "so did the one at 02:01:00 UTC" in said[0]
    assert said[1] == "The start at 02:01:46 UTC came up: its first step was logged at 02:01:53 UTC."


def test_the_log_a_supervisors_launch_names_is_the_supervisors_not_its_programs(tmp_path):
    """h100-1gpu-segv-supervisor without ps.txt: the typed launch (`nohup python3 supervise.py >
    logs/supervisor.out`) names the supervisor's log, and each restart the supervisor made took
    that name from it; train.log's parts, which no launch names, joined none of them: the three
    starts "never came up" and the log's parts were three starts of their own ("started again at
    10:14:39 UTC by a new start"). Each part is the start the supervisor made before it (README)."""
    inc = _without(tmp_path, "h100-1gpu-segv-supervisor", "logs/ps.txt")
    att = attempts(inc)
    assert att["pids"].tolist() == [[660], [812], [913], [1020]]
    assert ["logs/train.log" in s for s in att["sources"]] == [True, True, True, False]
    whole = pm.what_happened(*loaded("h100-1gpu-segv-supervisor"))
    said = pm.what_happened(inc, detect(inc))
    assert said[:2] == whole[:2]


def test_a_supervised_scripts_relaunch_by_hand_starts_it_again_whatever_started_the_supervisor(tmp_path):
    """h100-1gpu-segv-supervisor without ps.txt: the supervisor says it started `train.py` (attempt
    3/3, pid 913), and that the third died, then `giving up after 3 attempts` (10:15:07,566, in
    supervisor.log and supervisor.out, which name PID 913); the operator's `nohup python3 train.py
    --resume ckpt/last.pt ...` (typed 10:15:19.095) starts train.py again. The supervised starts
    carry the script the operator typed to start the supervisor (supervise.py), so the relaunch
    was no start of theirs: "Nothing started it again", and the supervisor's giving up, written
    where no log of the trainer's own is, was not told (README: the operator relaunched by hand
    after the supervisor gave up)."""
    inc = _without(tmp_path, "h100-1gpu-segv-supervisor", "logs/ps.txt")
    found = detect(inc)
    third = found[found["start"] == found["start"].max()].iloc[0]["numbers"]
    assert (third["restarted_at"], third["restarted_by"]) == (_dec6("10:15:19.095"), "operator")
    assert third["gave_up_at"] == _dec6("10:15:07.566")
    # (the relaunch's own log says it resumed at step 400; the dead start had logged step 450)
    assert pm.what_happened(inc, found)[2].endswith(
        "Its supervisor then gave up at 10:15:07 UTC (`giving up after 3 attempts`). It was started again at 10:15:19 "
        "UTC by the operator, resuming from a checkpoint at step 400: it had logged step 450, so 50 steps were done again.")


def test_a_run_that_logs_only_to_tensorboard_hangs_and_its_pace_is_its_own_tokens_per_second():
    """h100-1gpu-tb-hang (README): the trainer writes `train/tokens_per_sec` (and loss, lr) to
    TensorBoard every 10 steps, nothing else but checkpoint lines; its data thread blocks for good
    after step 470 (TensorBoard's last step, 15:13:24.080), PID 674 holds 17 GiB at 0 % until `kill
    674` (15:14:28.034) does nothing and `kill -9 674` (15:14:38.651) ends it; `--resume` (PID 1040,
    typed 15:14:47.562) trains from step 400 at the same ~276K tok/s. The pace was read as steps per
    second from the step counter (TensorBoard's name for the rate was not the kit's): the stall
    began "at 15:13:14", and the relaunch "trained at only 0.87 of baseline" (checkpoint pauses
    in the step counter's windows), which the trainer's own rate does not show."""
    inc, found = loaded("h100-1gpu-tb-hang")
    assert unit(inc) == "tok/s"
    stall = found[found["kind"] == "stall"].iloc[0]
    assert stall["start"] == _dec6("15:13:24.080572") and stall["numbers"]["holders"] == [674]
    assert "partial_recovery" not in set(found["kind"]) and "throughput_regression" not in set(found["kind"])
    kill = found[found["kind"] == "kill_failed"].iloc[0]
    assert (kill["start"], kill["numbers"]["pid"]) == (_dec6("15:14:28.034"), 674)
    said = pm.what_happened(inc, found)
    assert said[0] == ("At 15:13:24 UTC training stalled: no step for 75 s at ~0 % GPU utilization, until a kill stopped "
                       "it at 15:14:38 UTC (kill sent SIGKILL to PID 674); PID 674 held its memory."), said


def test_another_users_cpu_job_is_the_likely_cause_of_a_loader_bound_runs_drop():
    """h100-1gpu-cpu-starved (README): `train.py` (PID 2033, its DataLoader workers 2061-2064)
    tokenizes on the CPU at ~623K tok/s; at 15:20:53.672 another user (`nobody`) starts
    `preprocess_shards.py --workers 32` (PID 2104 and 32 workers) on the 16 CPUs, the rate falls to
    ~252K; the operator's `top` finds it and `kill 2104` (15:21:35.311) ends it, all its workers
    gone by 15:21:36.119; the rate is back at ~624K. top.txt lists every process's %CPU every 3 s:
    the drop was told with no cause ("within run train"). Neither the trainer's own workers nor
    the operator's `top -b -n 1` (the same processes by their short name) are another program."""
    inc, found = loaded("h100-1gpu-cpu-starved")
    drop = found[found["kind"] == "throughput_regression"].iloc[0]
    assert abs(drop["start"] - _dec6("15:21:00")) <= pd.Timedelta(seconds=5)
    assert drop["numbers"]["candidates"] == [
        "another program on the host's CPUs: 33 processes of `/usr/bin/python3 preprocess_shards.py --workers 32` "
        "(user nobody), up to 72 % CPU each, listed from 15:20:54 to 15:21:36"]
    assert [c["evidence"][0].split(":")[0] for c in drop["caused_by"]] == ["logs/top.txt"]
    recovered = found[found["kind"] == "recovery"].iloc[0]
    assert abs(recovered["start"] - _dec6("15:21:43")) <= pd.Timedelta(seconds=5)
    # (the survivor incident's torch.compile workers, `--parent=789`, and the operator's relaunches are
    # no other program on its CPUs)
    inc2, found2 = loaded("h200-1gpu-survivor")
    cands = found2[found2["kind"] == "throughput_regression"].iloc[0]["numbers"]["candidates"]
    assert not any("host's CPUs" in c for c in cands), cands


def test_a_resume_that_refuses_the_checkpoints_shapes_is_told_by_the_first_shape_it_refused():
    """h100-1gpu-resume-mismatch (README): run 1 (PID 1270, width 768) is stopped; `./run.sh
    --resume --n-layer 8 --n-embd 1024` (typed 15:17:15.720, trainer PID 1509) dies in
    `load_state_dict` with `RuntimeError: Error(s) in loading state_dict for GPT:` and, on the
    lines below it, 101 `size mismatch for ...` lines; the same again at 15:17:51.329 (PID 1638).
    The exception's own line ends in a colon: what failed is on the next line, and the story
    quoted only `... for GPT:`."""
    inc, found = loaded("h100-1gpu-resume-mismatch")
    failed = found[found["kind"] == "failed_restart"]
    assert failed["start"].tolist() == [_dec6("15:17:15.720"), _dec6("15:17:51.329")]
    assert [f["pid"] for f in failed["numbers"]] == [1509, 1638]
    assert pm.what_happened(inc, found)[0].startswith(
        "The restart at 15:17:15 UTC never came up: died during start-up: process 1509 started and wrote a traceback "
        "ending `RuntimeError: Error(s) in loading state_dict for GPT: size mismatch for wte.weight: copying a param "
        "with shape torch.Size([32768, 768]) from checkpoint, the shape in current model is torch.Size([32768, 1024]). "
        "(more lines follow)`")
    # the start that trained (15:18:19, `--n-layer 12 --n-embd 1024` from step 0) trains a wider
    # model than run 1's: its lower tok/s is other work, no regression (the kit had said "throughput
    # fell from 533.6K to 402.7K tok/s ... started with --n-embd 1024" and "not recovered")
    assert "throughput_regression" not in set(found["kind"]) and "no_recovery" not in set(found["kind"])


def test_a_tensorboard_file_that_names_another_pid_is_the_relaunchs_though_the_old_process_just_died(tmp_path):
    """h100-1gpu-tb-hang without ps.txt: TensorBoard names each events file after its writer's
    PID (`...vm.674.0`, `...vm.1040.0`); PID 674 was `kill -9`ed at 15:14:38.651 and the relaunch
    typed at 15:14:47.562 (`... --resume --seconds 40 >> nohup.out`) wrote the second file from
    15:14:56.868. The second file joined the first start, whose process was "alive" within the
    slack a log is allowed after its process was last seen: the stall ran "from 15:12:47 for 130
    s", the kill "failed" until 15:15:35, and the relaunch "never came up" (README: it trained to
    step 900)."""
    inc = _without(tmp_path, "h100-1gpu-tb-hang", "logs/ps.txt")
    att = attempts(inc)
    assert att["pids"].tolist() == [[674], [1040]]
    assert att["start"].tolist() == [_dec6("15:12:36.648"), _dec6("15:14:47.562")]
    assert (att["end_kind"].iloc[0], att["end"].iloc[0]) == ("kill_sent", _dec6("15:14:38.651"))
    found = detect(inc)
    assert "failed_restart" not in set(found["kind"])
    assert found[found["kind"] == "stall"]["start"].tolist() == [_dec6("15:13:24.080572")]


def test_a_trainer_under_nohup_whose_tee_dies_with_the_terminal_is_told_by_the_hangup():
    """h100-1gpu-tee-hangup (README): `nohup python3 train.py --run-name tee-run --seconds 3600 2>&1
    | tee logs/train.log &` (trainer PID 684, tee 685) typed in a `script`-recorded bash; the
    terminal hangs up at 15:55:44.814 (`Script done ... [COMMAND_EXIT_CODE="129"]`), tee dies of
    SIGHUP, the trainer's next print raises BrokenPipeError (lost in the dead pipe) and it exits at
    15:55:46.161; the operator's `nohup ... --resume > logs/train2.log` (PID 941, 15:56:24.944)
    resumes at step 400. The death was told with "no error or stop line of its own": its shell's
    hangup was read only for a job that nohup did not guard at all. Bash's `[1] 685` names the
    pipeline's last process, tee: the start's process is the trainer, 684, that ps lists."""
    inc, found = loaded("h100-1gpu-tee-hangup")
    att = attempts(inc)
    assert att["pids"].tolist() == [[684], [941]]
    died = found[found["kind"] == "training_died"].iloc[0]
    assert died["start"] == pd.Timestamp("2026-12-06 15:55:44", tz="UTC")
    assert abs(died["end"] - _dec6("15:55:46.161")) <= pd.Timedelta(seconds=1)
    assert [c["evidence"] for c in died["caused_by"]] == [["logs/terminal.typescript:58"]]
    assert (died["numbers"]["restarted_by"], died["numbers"]["resumed_step"]) == ("operator", 400)
    assert pm.what_happened(inc, found)[0].startswith(
        "At 15:55:44 UTC run tee-run died while training: the terminal it was started from hung up (script: command "
        "exited with 129: SIGHUP); nohup guarded the trainer, not the `tee` its output was piped to: that died with the "
        "terminal, and the trainer's next write to the pipe failed.")


def test_a_launch_dated_by_the_date_before_it_takes_the_process_that_loaded_before_its_log(tmp_path):
    """h100-1gpu-tee-hangup without logs/ps.txt: the launch is typed after `date` printed 15:54:50
    (the typescript dates it no closer); nvidia-smi lists PID 684 (python3) from 15:54:58, the
    log's first dated line is 15:55:04. The start, placed at that line, could not take a process
    seen before it, so it had no PID, no end, and "Nothing went wrong". A command can have begun
    from the `date` it follows on: PID 684 is the one new process in that time."""
    inc = _without(tmp_path, "h100-1gpu-tee-hangup", "logs/ps.txt")
    first = attempts(inc).iloc[0]
    assert (first["pids"], first["end_kind"]) == ([684], "gone")
    found = detect(inc)
    died = found[found["kind"] == "training_died"]
    assert died["start"].tolist() == [pd.Timestamp("2026-12-06 15:55:44", tz="UTC")]
    assert [c["evidence"] for c in died.iloc[0]["caused_by"]] == [["logs/terminal.typescript:58"]]


def test_a_checkpoint_line_printed_from_a_log_that_is_gone_shows_the_relaunch_trained(tmp_path):
    """h100-1gpu-tee-hangup without logs/train2.log: the relaunch (PID 941, 15:56:24.944, README:
    resumed at step 400, trained to step 800, exit 0) is known only by the operator's `tail -n 2
    logs/train2.log`, which printed `2026-12-06 15:57:15 saved checkpoint step 800` and `done: step
    800 ...`. With no rate line of it left, the relaunch "never came up": a checkpoint saved at a
    step is that step reached when its line was written."""
    inc = _without(tmp_path, "h100-1gpu-tee-hangup", "logs/train2.log")
    second = attempts(inc).iloc[1]
    assert (second["pids"], second["first_step"]) == ([941], pd.Timestamp("2026-12-06 15:57:15", tz="UTC"))
    assert second["first_step_ref"] == "logs/terminal2.typescript:34"
    found = detect(inc)
    assert "failed_restart" not in set(found["kind"])
    said = pm.what_happened(inc, found)
    assert said[0].endswith("It was started again at 15:56:24 UTC by the operator.")
    assert len(said) == 1


def test_a_start_known_only_by_its_printed_checkpoint_line_is_told_by_it(tmp_path):
    """h200-1gpu-pkill-both without logs/train3.log: run 3 (typed 18:10:32.399, README: first step
    18:10:42, `Training stopped` at step 400 at 18:11:43) is known by the operator's `tail -n 2
    logs/train3.log`: its step-400 checkpoint line and its stop. It came up; what shows it is
    that checkpoint, not a first step."""
    inc = _without(tmp_path, "h200-1gpu-pkill-both", "logs/train3.log")
    said = pm.what_happened(inc, detect(inc))
    assert "The start at 18:10:32 UTC by the operator came up: it saved a checkpoint at step 400 at 18:11:43 UTC." in said


def test_a_launch_whose_output_goes_to_dev_null_owns_the_log_its_script_names_after_it(tmp_path):
    """h100-1gpu-resume-mismatch without ps.txt: `nohup ./run.sh --n-layer 8 --n-embd 768 --seconds
    600 > /dev/null 2>&1 &` (typed 15:15:57.209) runs train.py into `logs/train_20261206_151557.log`
    (first line 15:16:00,025); the operator's `nvidia-smi` at 15:16:13 names PID 1270, with no start.
    That PID, dated by nothing, took the log as a start of its own, and the launch "never came up"
    (README: run 1 trained 825 steps)."""
    inc = _without(tmp_path, "h100-1gpu-resume-mismatch", "logs/ps.txt")
    att = attempts(inc)
    first = att.iloc[0]
    assert (first["start"], first["sources"]) == (_dec6("15:15:57.209"), ["logs/train_20261206_151557.log"])
    assert first["first_step"] == pd.Timestamp("2026-12-06 15:16:06.895", tz="UTC")
    found = detect(inc)
    assert _dec6("15:15:57.209") not in set(found.loc[found["kind"] == "failed_restart", "start"])


def test_a_healthy_run_with_a_noisy_per_step_rate_raises_nothing():
    """h100-1gpu-noisy-healthy (README), a negative control: one healthy run (PID 650, typed
    16:31:29.264) whose SFT-style batches are 128..2048 tokens long, each step's own rate logged
    (p10 ~62K, p90 ~282K tok/s over the run, its 30 s windows' means 168K-177K), an eval every 300
    steps, a checkpoint every 500, `training done at step 4112` and exit 0. Nothing went wrong:
    no regression, stall or failed start may be raised from the per-line swings."""
    inc, found = loaded("h100-1gpu-noisy-healthy")
    rate = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]["value"]
    assert len(rate) > 4000 and rate.quantile(0.9) > 3 * rate.quantile(0.1)  # the swings are real
    assert found.empty
    assert pm.what_happened(inc, found)[0].startswith("Nothing went wrong that the evidence shows between 16:31:29 UTC")
    # nor is any of its time lost: its 5-s windows of evaluation and checkpoint pauses (one down
    # to 81K tok/s) are no drop that lasted, as the regression detector's are not
    assert "degraded" not in set(states(inc)["state"])
    (row,) = [r for _, r in ledger(inc).iterrows()]
    assert row["degraded"] == 0 and row["productive"] > 0.9 * (row["total"] - row["starting"])


def test_a_preempted_run_is_told_as_stopped_from_outside_saved_and_requeued():
    """h100-1gpu-preempt-requeue (README): `nohup ./requeue.sh > logs/requeue.log` runs `python3
    train.py --resume auto | tee -a logs/train.log` in a loop; a preemption watcher sends SIGTERM
    to PID 669 at 18:40:21.405 and to PID 896 at 18:41:34.852; each time the trainer saves (step
    466 at 18:40:23,219; step 857 at 18:41:36,134) and exits 0, and the wrapper starts it again 20 s
    later (PIDs 896, 1096), which resumes at the saved step; the third trains to 1400 and ends.
    Before: requeue.log (the wrapper's output, holding every line tee printed) and train.log were
    two runs, a throughput drop "when run train replaced run requeue", and each stop a death with
    "no error or stop line of its own"."""
    inc, found = loaded("h100-1gpu-preempt-requeue")
    notes = inc.load_report["logs/requeue.log"].notes
    assert "168 metric rows printed from logs/train.log: read from the folder's copy of it instead" in notes
    assert set(inc.metrics["source"]) == {"logs/train.log"}
    att = attempts(inc)
    assert att["pids"].tolist() == [[669], [896], [1096]]
    assert att["end_kind"].tolist() == ["kill_sent", "kill_sent", "training_stop"]
    stops = found[found["kind"] == "stopped_by_signal"]
    assert stops["start"].tolist() == [_dec6("18:40:21"), _dec6("18:41:34")] and set(stops["severity"]) == {"warning"}
    assert [n["saved"][0] for n in stops["numbers"]] == [466, 857]
    assert "throughput_regression" not in set(found["kind"]) and "training_died" not in set(found["kind"])
    assert pm.what_happened(inc, found)[0] == (
        "At 18:40:21 UTC run train was stopped while training by a signal sent from outside its shell (`sent SIGTERM "
        "to pid 669 (python3 train.py)`). It saved a checkpoint at step 466 at 18:40:23 UTC before it ended. It was "
        "started again at 18:40:44 UTC by its supervisor, resuming from a checkpoint at step 466: no step was done again.")


def test_a_hung_run_a_watchdog_killed_and_restarted_is_a_stall_then_a_resume():
    """h100-1gpu-stall-watchdog (README): `nohup ./watchdog.sh`, whose script starts `train.py ...
    >> "$LOG" 2>&1` (LOG=logs/train.log; print() lines with no time of day); run 1 (PID 682, from
    20:55:35.548) logs step 820 at 20:56:39.976, then its prefetch thread deadlocks and the GPU sits
    at 0 % holding its memory; the watchdog's SIGTERM (20:57:45) does nothing, its SIGKILL
    (20:58:00) ends it, and it starts PID 1116 with --resume at 20:58:00, which resumes from step
    800 and ends with `done: 1500 steps`. Before: train.log's steps belonged to no start."""
    inc, found = loaded("h100-1gpu-stall-watchdog")
    att = attempts(inc)
    assert att["pids"].tolist() == [[682], [1116]] and all("logs/train.log" in s for s in att["sources"])
    assert att["start"].tolist() == [_dec6("20:55:35.548"), _dec6("20:58:00")]
    assert (att["end_kind"].tolist(), att["signal"].iloc[0], att["exit_code"].iloc[1]) == (["kill_sent", "exit"], "SIGKILL", 0)
    stall = found[found["kind"] == "stall"].iloc[0]
    assert (stall["start"], stall["end"]) == (_dec6("20:56:39"), _dec6("20:58:00")) and stall["numbers"]["idle"]
    redo = resumes(inc).iloc[0]
    assert (redo["attempt"], redo["resumed_step"], redo["reached_step"]) == ("A2", 800, 820)
    said = pm.what_happened(inc, found, impact(inc, found))
    assert said[0] == ("At 20:56:39 UTC training stalled: no step for 81 s at ~0 % GPU utilization, until a kill stopped "
                       "it at 20:58:00 UTC (watchdog: 682 still alive after 15s, sending SIGKILL); PID 682 held its memory.")
    assert said[-1] == "It was started again at 20:58:00 UTC and trained past step 820 again, where it had stalled."
    assert "never came up" not in " ".join(said) and "throughput_regression" not in set(found["kind"])


def test_a_relaunch_that_hid_the_gpu_is_a_drop_caused_by_the_variable_typed_before_it():
    """h100-1gpu-cpu-fallback (README): run 1 (PID 743) trains on the GPU; the operator kills it and
    resumes it as `CUDA_VISIBLE_DEVICES=1 nohup python3 train.py --run-name lm --resume ... >
    logs/train_2.log` (21:44:07.068) on a one-GPU machine: PID 927 logs `CUDA is not available,
    training on CPU` and trains ~30 times slower; killed at 21:45:11, resumed without the variable
    at 21:45:17 (PID 1134), back on the GPU. Before: the drop named no cause (the launch of run
    `train_2` was not found under its --run-name `lm`)."""
    inc, found = loaded("h100-1gpu-cpu-fallback")
    att = attempts(inc)
    assert att["pids"].tolist() == [[743], [927], [1134]]
    drop = found[found["kind"] == "throughput_regression"].iloc[0]
    assert drop["numbers"]["flag_differences"] == ["CUDA_VISIBLE_DEVICES=1"]
    assert drop["numbers"]["run_after_launch"] == _dec6("21:44:07.068")
    assert any(c.startswith("no GPU in use: WARNING CUDA is not available") for c in drop["numbers"]["candidates"])
    # and the GPU samples: 0 MiB used through the slow run, where run 1 held 1315 MiB
    assert [c["evidence"][0] for c in drop["caused_by"]] == ["logs/operator.log:5", "logs/train_2.log:2", "logs/smi.csv:79"]
    assert drop["caused_by"][2]["why"] == ("no GPU in use: every GPU sample from 21:44:20 to 21:45:06 shows at most 0 MiB "
                                           "used, where they held up to 1315 MiB before the drop")
    rec = found[found["kind"] == "recovery"].iloc[0]
    assert _dec6("21:45:17") <= rec["start"] <= _dec6("21:45:30")
    assert pm.what_happened(inc, found)[0].endswith("when run train_2 replaced run train_1, started with CUDA_VISIBLE_DEVICES=1.")




def test_a_slow_start_known_only_by_a_tail_of_its_log_is_a_drop_over_the_time_it_lived(tmp_path):
    """h100-1gpu-cpu-fallback without logs/train_2.log: the slow start (PID 927, 21:44:07.068 to its
    kill at 21:45:11.116) is known by the three lines the operator's `tail -n 3` printed at 21:45:07
    (steps 2120-2160, 5,143-6,042 tok/s, 15 s apart): too few, too close for a dip inside a run,
    but all of a start that lived 64 s. Before: "Nothing went wrong"."""
    shutil.copytree(REPO / "data" / "incidents" / "h100-1gpu-cpu-fallback", tmp_path / "inc")
    (tmp_path / "inc" / "logs" / "train_2.log").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path / "inc")
    found = detect(inc)
    assert _kinds(found) == ["recovery", "throughput_regression"]
    drop = found[found["kind"] == "throughput_regression"].iloc[0]
    assert drop["start"] == _dec6("21:44:51.572") and drop["numbers"]["degraded_tok_per_s"] == 5640.0
    assert drop["numbers"]["flag_differences"] == ["CUDA_VISIBLE_DEVICES=1"]
    assert drop["evidence"][-2:] == ["logs/operator.log:7", "logs/operator.log:8"]


def test_a_start_that_outlived_the_one_it_logged_beside_replaced_it_where_no_kill_says_so(tmp_path):
    """h200-1gpu-survivor without logs/terminal.log: no kill is in the evidence, and run fixed
    (10:31:26-10:32:43) logs beside run regressed (to 10:31:57, its survivor). The older stopped
    first: the newer replaced it, as the whole folder tells (a sweep beside a run, which the
    run outlives, is a side job: h200-1gpu-sweep-share). The drop is regressed's, at 10:30:46."""
    # (dangling links to wandb's debug logs, as the SDK left them)
    shutil.copytree(REPO / "data" / "incidents" / "h200-1gpu-survivor", tmp_path / "inc", symlinks=True)
    (tmp_path / "inc" / "logs" / "terminal.log").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path / "inc")
    found = detect(inc)
    drop = found[found["kind"] == "throughput_regression"].iloc[0]
    assert (drop["numbers"]["run_before"], drop["numbers"]["run_after"]) == ("baseline", "regressed")
    assert drop["start"] == pd.Timestamp("2026-12-01 10:30:46", tz="UTC")
    assert found[found["kind"] == "partial_recovery"].iloc[0]["numbers"]["run"] == "fixed"

def test_a_sweep_typed_beside_a_run_is_two_starts_that_slowed_it_until_the_operator_killed_them():
    """h200-1gpu-sweep-share (README): `base` (PID 712) trains alone on GPU 0; at 22:10:30.870 the
    operator types `for lr in 1e-4 1e-3; do nohup python3 train.py --run-name sweep-$lr ... >
    logs/sweep-$lr.log 2>&1 & done`: PIDs 862 and 863 join GPU 0 and `base` steps at 30 % of its
    pace from 22:10:38 (base.log line 73); `kill 862 863` at 22:11:14.824, and `base` is back at its
    pace. Before: one launch with `$lr` unexpanded ("its log (logs/sweep-$lr.log) is not in the
    incident") and the sweep read as replacing `base` ("when run sweep-1e-3 replaced run base")."""
    inc, found = loaded("h200-1gpu-sweep-share")
    att = attempts(inc)
    assert att["run"].tolist() == ["base", "sweep-1e-4", "sweep-1e-3"]
    assert att["log_path"].tolist() == ["logs/base.log", "logs/sweep-1e-4.log", "logs/sweep-1e-3.log"]
    assert att["pids"].tolist() == [[712], [862], [863]]
    assert att["end"].iloc[1] == att["end"].iloc[2] == _dec6("22:11:14.824")
    assert _kinds(found) == ["recovery", "throughput_regression"]
    drop, rec = (found[found["kind"] == k].iloc[0] for k in ("throughput_regression", "recovery"))
    assert drop["start"] == _dec6("22:10:38.270") and drop["numbers"]["across_runs"] is False
    assert drop["numbers"]["run_after"] == "base" and drop["numbers"]["other_pids"] == [862, 863]
    assert drop["caused_by"][0]["evidence"][-1] == "logs/operator.log:2"  # the loop that started them
    assert _dec6("22:11:14.824") < rec["start"] < _dec6("22:11:20")
    assert rec["caused_by"][0]["evidence"] == ["logs/operator.log:32"]  # kill 862 863
    told = pm.what_happened(inc, found)
    assert told[0].startswith("At 22:10:38 UTC throughput fell from 501.4K tok/s to 152.5K tok/s (0.30 of baseline) within run base")
    assert "PID 862, 863 (run sweep-1e-4, started at 22:10:30; run sweep-1e-3, started at 22:10:30)" in told[0]
    assert told[1].endswith("once the operator stopped PID(s) 862, 863 at 22:11:14 (`kill 862 863`).")


def _dec7(hms: str) -> pd.Timestamp:
    return pd.Timestamp(f"2026-12-07 {hms}", tz="UTC")


def test_a_foreground_sweep_stopped_by_ctrl_c_went_on_pass_by_pass():
    """h100-1gpu-ctrlc-sweep (README): `for lr in 1e-4 3e-4 1e-3; do python3 train.py ... > logs/
    lr-$lr.log 2>&1; done` typed at 02:19:23.896. Ctrl-C at 02:19:58.897 stopped pass 1 (lr-1e-4,
    PID 541, checkpoint at step 709) only: its trainer caught it and exited 0, and bash started pass
    2 (lr-3e-4, PID 669, seen 02:20:00.427); Ctrl-C at 02:20:23.897 the same, pass 3 (lr-1e-3, PID
    762, seen 02:20:26.283); Ctrl-C at 02:20:38.898 stopped pass 3 and the loop, which had no value
    left. Each pass ends at its trainer's interrupt line, not at the checkpoint saved after it (the
    dying trainer's own line, no restart)."""
    inc, found = loaded("h100-1gpu-ctrlc-sweep")
    att = attempts(inc)
    assert att["run"].tolist() == ["lr-1e-4", "lr-3e-4", "lr-1e-3"]
    assert att["pids"].tolist() == [[541], [669], [762]]
    assert att["by"].tolist() == ["operator"] * 3 and set(att["launch_ref"]) == {"logs/terminal.typescript:4"}
    for start, truth in zip(att["start"], ("02:19:23.896", "02:20:00.427", "02:20:26.283"), strict=True):
        assert abs(start - _dec7(truth)) <= pd.Timedelta(seconds=1)
    assert att["end_kind"].tolist() == ["interrupt"] * 3
    for end, truth in zip(att["end"], ("02:19:58.897", "02:20:23.897", "02:20:38.898"), strict=True):
        assert abs(end - _dec7(truth)) <= pd.Timedelta(seconds=0.01)
    assert found["kind"].tolist() == ["interrupt_went_on"]
    n = found.iloc[0]["numbers"]
    assert [(p["run"], p["pid"], p["last_step"], p["next_pid"]) for p in n["went_on"]] == [
        ("lr-1e-4", 541, 700, 669), ("lr-3e-4", 669, 420, 762)]
    assert (n["ended"]["pid"], n["ended"]["last_step"], n["passes"], n["ran"], n["key_presses"]) == (762, 80, 3, 3, 3)
    told = pm.what_happened(inc, found)
    assert told[0].startswith("At 02:19:58 UTC an interrupt stopped run lr-1e-4 (PID 541)")
    assert "the loop went on with run lr-3e-4 (PID 669) at 02:20:00" in told[0]
    assert "the interrupt at 02:20:38 stopped run lr-1e-3 (PID 762)" in told[0] and "no pass was left" in told[0]


def test_a_foreground_sweep_whose_trainers_exit_after_their_keyboardinterrupt_went_on_pass_by_pass():
    """h100-1gpu-ctrlc-stops-sweep (README): the same sweep with a trainer that catches nothing,
    typed at 04:33:43.882. Each Ctrl-C (04:34:18.883, 04:34:33.883, 04:34:48.884) ended its pass
    in a KeyboardInterrupt traceback, but the trainer exited with status 1 (04:34:19.392,
    04:34:34.406, 04:34:49.495), not killed by SIGINT, so bash went on: PIDs 544, 669 (seen
    04:34:19.572), 744 (seen 04:34:34.528), last step lines 720, 160 and 180; `echo $?` printed 1.
    Nothing handled the interrupt: the story must not say a trainer did."""
    inc, found = loaded("h100-1gpu-ctrlc-stops-sweep")
    att = attempts(inc)
    assert att["run"].tolist() == ["lr-1e-4", "lr-3e-4", "lr-1e-3"] and att["pids"].tolist() == [[544], [669], [744]]
    for start, truth in zip(att["start"], ("04:33:43.882", "04:34:19.572", "04:34:34.528"), strict=True):
        assert abs(start - _dec7(truth)) <= pd.Timedelta(seconds=2)
    assert att["end_kind"].tolist() == ["interrupt"] * 3
    # (the traceback has no time: each end is its log's last dated line, the step line before the key)
    for end, truth in zip(att["end"], ("04:34:18.883", "04:34:33.883", "04:34:48.884"), strict=True):
        assert pd.Timedelta(0) <= _dec7(truth) - end <= pd.Timedelta(seconds=1)
    assert found["kind"].tolist() == ["interrupt_went_on"]
    n = found.iloc[0]["numbers"]
    assert [(p["pid"], p["last_step"], p["handled"], p["next_pid"]) for p in n["went_on"]] == [
        (544, 720, False, 669), (669, 160, False, 744)]
    assert (n["ended"]["pid"], n["ended"]["last_step"], n["ran"], n["key_presses"]) == (744, 180, 3, 3)
    told = pm.what_happened(inc, found)
    assert told[0].startswith("At 04:34:18 UTC an interrupt stopped run lr-1e-4 (PID 544), its last step line step 720")
    assert ("Each trainer ended in a KeyboardInterrupt traceback and exited with a status of its own, not killed by "
            "the signal, so bash went on with the loop") in told[0]
    assert "handled" not in told[0]


def test_a_ddp_run_under_torch_multiprocessing_spawn_that_died_twice_and_finished():
    """h100-1gpu-spawn-oom (README): DDP started with `torch.multiprocessing.spawn` in a terminal's
    foreground through tee. Typed at 07:32:46.125 (parent 638, ranks 663 and 664): rank 1 died of
    CUDA out of memory at step 150 (exit 1 at 07:33:40.689, its last step line 140 at 07:33:36.854)
    and spawn stopped rank 0, PID 663, at 07:33:40.769; resumed from step 100 at 07:34:00.340 (parent
    914, ranks 941 and 942): rank 0 SIGKILLed from outside at 07:34:40.244, spawn stopped PID 942;
    resumed from step 200 at 07:34:53.918 (parent 1148): trained to step 300 and exited 0 at 07:35:33."""
    inc, found = loaded("h100-1gpu-spawn-oom")
    att = attempts(inc)
    assert att["run"].tolist() == ["train", "train2", "train3"] and att["pids"].tolist() == [[638], [914], [1148]]
    for start, truth in zip(att["start"], ("07:32:46.125", "07:34:00.340", "07:34:53.918"), strict=True):
        assert abs(start - _dec7(truth)) <= pd.Timedelta(seconds=1)
    assert att["end_kind"].tolist() == ["oom", "killed", "training_stop"]
    assert abs(att["end"].iloc[0] - _dec7("07:33:40.769")) <= pd.Timedelta(seconds=1)
    assert abs(att["end"].iloc[1] - _dec7("07:34:40.244")) <= pd.Timedelta(seconds=1)
    assert att["signal"].iloc[1] == "SIGKILL" and att["cause_rank"].tolist()[:2] == [1, 0]
    assert found["kind"].tolist() == ["training_died", "training_died"]
    told = pm.what_happened(inc, found)
    assert told[0].startswith("At 07:33:40 UTC run train died while training on rank 1: torch.OutOfMemoryError: "
                              "CUDA out of memory. Tried to allocate 512.00 GiB.")
    assert ("The launcher then stopped PID 663. It was started again at 07:34:00 UTC by the operator, resuming from "
            "a checkpoint at step 100: it had logged step 140, so 40 steps were done again.") in told[0]
    assert "after its last step" not in told[0]  # 3.9 s after step 140: no hang
    assert told[1] == ("At 07:34:40 UTC run train2 died while training on rank 0: torch.multiprocessing.spawn."
                       "ProcessExitedException: process 0 terminated with signal SIGKILL. The launcher then stopped "
                       "PID 942. It was started again at 07:34:53 UTC by the operator, resuming from a checkpoint at "
                       "step 200: no step was done again.")


def test_a_nohup_run_whose_traceback_is_only_in_nohup_out_and_whose_rotating_log_lost_its_start():
    """h100-1gpu-rotated-log (README): `nohup python3 train.py ... &` typed at 09:49:12.963 (PID 555)
    with no redirection, so its stderr went to ./nohup.out; it logged through a rotating handler
    (train.log, .1, .2: its start rotated away) and died at step 187 (exit 1 at 09:50:21.403, last
    step line 186 at 09:50:20.951) with a traceback only in nohup.out, undated, which the operator's
    `tail -n 5 nohup.out` printed at 09:50:41. Relaunched the same way at 09:50:46.415 (PID 801),
    resuming from step 100 (86 steps redone) into the same nohup.out and the same rotating log,
    across two more rotations, to step 230 (exit 0 at 09:51:39.690)."""
    inc, found = loaded("h100-1gpu-rotated-log")
    att = attempts(inc)
    assert att["pids"].tolist() == [[555], [801]] and att["run"].tolist() == ["lm", "lm"]
    for start, truth in zip(att["start"], ("09:49:12.963", "09:50:46.415"), strict=True):
        assert abs(start - _dec7(truth)) <= pd.Timedelta(seconds=1)
    # the rotated parts are one log: the first run's steps in train.log.2, the second's in all three
    assert att["sources"].tolist() == [["logs/train.log.2", "nohup.out"],
                                       ["logs/train.log.2", "nohup.out", "logs/train.log.1", "logs/train.log"]]
    assert att["end_kind"].tolist() == ["traceback", "training_stop"]
    assert abs(att["end"].iloc[0] - _dec7("09:50:21.403")) <= pd.Timedelta(seconds=2)
    assert found["kind"].tolist() == ["training_died"]
    assert pm.what_happened(inc, found) == [
        "At 09:50:20 UTC run lm died while training: ValueError: sample 48213 has 0 tokens (corrupt shard "
        "data/shard-0007.bin). It was started again at 09:50:46 UTC by the operator, resuming from a checkpoint at "
        "step 100: it had logged step 186, so 86 steps were done again."]


def test_without_the_operators_transcript_the_traceback_nohup_out_begins_with_is_the_first_runs_death(tmp_path):
    """h100-1gpu-rotated-log without logs/operator.log: nothing ties nohup.out to a launch. Its
    traceback is undated (placed at 09:51:23, the second run's first dated line after it: the latest
    it can have been written); ps saw PID 555 go at 09:50:21-22 while 801 went on to step 230. An
    error ends a process and starts none: it is 555's death, not a start at 09:51:23 that never
    came up, and the rotated parts are 801's log though no launch names them."""
    inc = _without(tmp_path, "h100-1gpu-rotated-log", "logs/operator.log")
    att = attempts(inc)
    assert att["pids"].tolist() == [[555], [801]]
    assert att["sources"].tolist() == [["logs/train.log.2"],
                                       ["logs/train.log.2", "logs/train.log.1", "logs/train.log"]]
    assert att["end_kind"].tolist() == ["traceback", "training_stop"]
    assert att["cause_ref"].iloc[0] == "nohup.out:1"
    assert abs(att["end"].iloc[0] - _dec7("09:50:21.403")) <= pd.Timedelta(seconds=2)
    found = detect(inc)
    assert found["kind"].tolist() == ["training_died"]
    assert pm.what_happened(inc, found)[0].startswith(
        "At 09:50:22 UTC run lm died while training: ValueError: sample 48213 has 0 tokens (corrupt shard "
        "data/shard-0007.bin). It was started again at 09:50:46 UTC by a new start, resuming from a checkpoint "
        "at step 100")


def test_another_users_job_seen_only_in_the_tables_a_shell_loop_appends_slows_the_run_until_killed():
    """h100-1gpu-table-loop (README): the only GPU record is plain `nvidia-smi` tables a shell loop
    appends to logs/gpu.log every 5 s. `main` (PID 535, typed 12:15:31.587) trains alone at ~459K
    tok/s; another user's job (PID 738, no line of the operator's) starts at 12:16:27.634, trains
    from 12:16:35.797, and `main` steps at ~46 % of its pace from 12:16:36 (train.log line 77:
    290,769 tok/s, then ~209K) until the operator's `kill 738` at 12:17:21.243 (operator.log line
    33), read off the table's process rows; `main` finishes at step 3800 at 12:18:27.172. Cost
    per the README: ~44 s slow, ~10.6M tokens against its own pace."""
    inc, found = loaded("h100-1gpu-table-loop")
    att = attempts(inc)
    assert att["pids"].tolist() == [[535]] and att["run"].tolist() == ["main"]
    assert abs(att["start"].iloc[0] - _dec7("12:15:31.587")) <= pd.Timedelta(seconds=1)
    assert att["end_kind"].tolist() == ["training_stop"] and att["end"].iloc[0] == _dec7("12:18:27.172")
    assert _kinds(found) == ["recovery", "throughput_regression"]
    drop, rec = (found[found["kind"] == k].iloc[0] for k in ("throughput_regression", "recovery"))
    assert _dec7("12:16:35") <= drop["start"] <= _dec7("12:16:40")
    assert drop["numbers"]["other_pids"] == [738]
    assert drop["caused_by"][0]["evidence"][0].startswith("logs/gpu.log:")  # the table that lists 738
    assert _dec7("12:17:20") <= rec["start"] <= _dec7("12:17:25")
    assert rec["caused_by"][0]["evidence"] == ["logs/operator.log:33"]  # kill 738
    lost = impact(inc, found)["tokens_lost"]
    assert 9e6 <= lost <= 12e6  # ~10.6M per the README's count against its own pace


def test_a_run_hung_in_its_data_loader_until_ctrl_c_is_a_stall_ended_by_the_interrupt_where_it_waited():
    """h100-1gpu-hang-ctrlc (README): `lm` (PID 588, workers 644 and 645) trains in the foreground
    of a `script`-recorded terminal, its output in logs/train.log; a DataLoader worker blocks for
    good on the batch of step 3627: the last step line is step 3620 at 15:40:01.119 (train.log line
    188), the GPU holds 1307 MiB at 0 % (smi.csv lines 78-168); 90 s later the operator presses
    Ctrl-C (15:41:31.120), PID 588 exits at 15:41:32.444 with the KeyboardInterrupt raised in
    `next(batches)` (train.py line 148; the traceback, train.log 189-210, has no time of its own).
    The resume (PID 1050, `--num-workers 0 --resume`, typed 15:41:34) redoes steps 3301-3627 and
    runs slower (a median 100K against 124K tok/s). The traceback placed at the last step's time
    was told as a death before the silence ("after KeyboardInterrupt"), and the stall after the
    slowdown before it was not told at all."""
    inc, found = loaded("h100-1gpu-hang-ctrlc")
    att = attempts(inc)
    assert att["pids"].tolist() == [[588, 644, 645], [1050]]
    assert att["flags"].iloc[1]["--num-workers"] == "0" and "--num-workers" not in att["flags"].iloc[0]
    stall = found[found["kind"] == "stall"].iloc[0]
    assert stall["start"] == _dec7("15:40:01.119")
    assert _dec7("15:41:31") <= stall["end"] <= _dec7("15:41:33")
    assert stall["numbers"]["holders"] == [588] and stall["numbers"]["idle"]
    assert stall["numbers"]["interrupted"].startswith("waiting in its data loader (`chunk = next(batches)")
    assert stall["caused_by"] == []  # (the interrupt ended it; nothing died before it)
    said = pm.what_happened(inc, found, impact(inc, found))
    assert ("At 15:40:01 UTC training stalled: no step for 91 s at ~0 % GPU utilization, until an interrupt (Ctrl-C) "
            "stopped it at 15:41:32 UTC, waiting in its data loader (`chunk = next(batches).to(device, "
            "non_blocking=True)`, train.py:148); PID 588 held its memory.") in said
    assert any("--num-workers 0" in s for s in said)


def test_a_trainer_stuck_after_its_checkpoint_save_until_killed_is_a_stall_from_the_save_to_the_kill():
    """h100-1gpu-hf-save-hang (README): a Hugging Face Trainer under `nohup ... &` (PID 537) logs
    with times only on its own `[INFO|trainer.py:N] <time> >>` lines; its loss dicts and bar print
    none. Its save at step 200 begins at 16:12:29.608 (train.log line 49) and its `on_save` hook
    blocks for good: the GPU holds 25229 MiB at 0 % until the operator's `kill 537` at 16:14:01
    (typescript line 68); the resume (PID 969) goes on from checkpoint-200 at 16:14:23. The dicts
    took the step-100 save's time (16:12:15), so the stall was told from there, 106 s, and the
    kill that ended it was told as the run's own failure (a `hung` state, no stall)."""
    inc, found = loaded("h100-1gpu-hf-save-hang")
    att = attempts(inc)
    assert att["pids"].tolist() == [[537], [969]]
    assert att["end_kind"].tolist()[0] == "kill_sent"
    stall = found[found["kind"] == "stall"]
    assert len(stall) == 1
    s = stall.iloc[0]
    assert s["start"] == _dec7("16:12:29.608") and s["end"] == _dec7("16:14:01")
    assert s["numbers"]["holders"] == [537] and s["numbers"]["saving"]
    assert s["numbers"]["killed"] == "kill sent SIGTERM to PID 537"
    assert s["caused_by"][0]["evidence"] == ["logs/train.log:49"]
    rec = found[found["kind"] == "recovery"].iloc[0]
    assert rec["start"] == _dec7("16:14:23.739")


@pytest.mark.parametrize(("name", "gone", "start"), [
    ("h100-1gpu-hf-save-hang", "logs/ps.txt", _dec7("16:12:29.608")),
    ("h100-1gpu-hang-ctrlc", "logs/ps.txt", _dec7("15:40:01.119")),
])
def test_without_the_process_listings_the_stall_is_told_the_same(tmp_path, name, gone, start):
    """Leave-one-out: without ps.txt the only processes are those the operator's `nvidia-smi` in the
    transcript shows (a command missing); the attempts were built over them and raised (a missing
    process name read as a bool; a missing command mapped into Arrow strings)."""
    inc = _without(tmp_path, name, gone)
    found = pm.detect(inc)
    stall = found[found["kind"] == "stall"]
    assert len(stall) == 1 and stall.iloc[0]["start"] == start


def test_without_its_log_a_hung_runs_gpu_held_idle_is_its_stall(tmp_path):
    """h100-1gpu-hf-save-hang without logs/train.log (README: PID 537's save hook blocked at the
    step-200 save, 25229 MiB at 0 % until the operator's `kill 537` at 16:14:01; the resume, PID
    969, started at 16:14:05 and trained from 16:14:23). The operator's `tail`s show the run
    trained, none of its lines show when it stopped: its GPU's samples do (memory held at ~0 %
    from 16:12:29). It said "Nothing went wrong"."""
    inc = _without(tmp_path, "h100-1gpu-hf-save-hang", "logs/train.log")
    found = detect(inc)
    assert found["kind"].tolist() == ["stall"]
    s = found.iloc[0]
    assert s["start"] == _dec7("16:12:29") and abs(s["end"] - _dec7("16:14:01")) <= pd.Timedelta(seconds=2)
    assert s["numbers"]["holders"] == [537] and s["numbers"]["idle"]
    assert s["numbers"]["killed"] == "kill sent SIGTERM to PID 537"
    said = pm.what_happened(inc, found)
    assert said[0].startswith("At 16:12:29 UTC training stalled: no step for 91 s at ~0 % GPU utilization, until a kill "
                              "stopped it at 16:14:00 UTC (kill sent SIGTERM to PID 537); PID 537 held its memory.")
    assert said[1] == "It was started again at 16:14:05 UTC, which trained from 16:14:23 UTC."


def test_a_trainers_data_loader_workers_started_again_each_epoch_are_no_restarts():
    """h100-1gpu-bar-freeze (README): `python3 train.py --run-name det` (PID 596, under nohup)
    starts a new pair of DataLoader workers each epoch (642/643, 697/698, 748/749, 804/805: its
    children, the same command line); a worker blocks at batch 107 of epoch 4, the bar stands,
    its GPU holds 11241 MiB at 0 % until the operator's `kill -INT 596` at 19:36:18.709 (the
    KeyboardInterrupt traceback in `_next_data`), the resume PID 1173 starts at 19:36:27. Each
    epoch's workers ending had been told as the run's death and a supervisor's restart of it, and
    epoch 4's as a restart that never came up: they are its workers.

    The log prints no time: its bars' elapsed times count none of the seconds between epochs (a
    checkpoint saved, new workers), so from epoch 2 on each bar's time is the earliest it can be,
    and the stall begins where its GPU was last at work (`smi.csv` line 70, 19:34:06.563, 95 %;
    the README puts the freeze's last real redraw at 19:34:05.71-19:34:07.32). The
    KeyboardInterrupt printed after the last bar is the interrupt that ended the stall, not a
    death before it; the resume (PID 1173, epoch 4 again from its batch 0, first drawn at
    19:36:38.208, batch 107 at about 19:36:43.5) trained at run 1's pace."""
    inc, found = loaded("h100-1gpu-bar-freeze")
    assert found["kind"].tolist() == ["stall", "recovery"]
    s = found.iloc[0]
    assert _dec7("19:34:05.71") <= s["start"] <= _dec7("19:34:07.32")
    assert not s["caused_by"]
    assert _dec7("19:36:38.208") <= found.iloc[1]["start"] <= _dec7("19:36:55.976")
    assert s["numbers"]["holders"] == [596] and s["numbers"]["idle"]
    assert abs(s["end"] - _dec7("19:36:18.709")) <= pd.Timedelta(seconds=2)
    assert s["numbers"]["interrupted"].startswith("waiting in its data loader (`data = self._next_data()`")
    att = attempts(inc)
    assert [p for p in att["pids"].tolist() if 596 in p or 1173 in p] == att["pids"].tolist()
    assert not any(set(p) & {697, 748, 804} and 596 not in p for p in att["pids"])
