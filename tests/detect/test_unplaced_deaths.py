"""A death no attempt accounts for (detect/deaths.py `process_died`): an error pasted alone, as in
an issue, or a log's tail kept after a crash. Read before as "No training seen ... nothing can be
said": the public samples below each hold what ended a process and no launch of its run."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.detect import detect
from dflash_postmortem.present.sentences import what_happened

REPO = Path(__file__).resolve().parents[2]
REAL_WORLD = REPO / "tests" / "fixtures" / "real-world"


def _told(tmp_path, *names: str, beside: str | None = None):
    folder = tmp_path / "incident"
    if beside is not None:
        shutil.copytree(REPO / "data" / "incidents" / beside, folder)
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copy(REAL_WORLD / name, folder / name.rsplit("/", 1)[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(folder)
    found = detect(inc)
    return inc, found, found[found["kind"] == "process_died"]


def test_an_nccl_watchdog_timeout_pasted_alone(tmp_path):
    inc, found, died = _told(tmp_path, "torchrun/nccl-watchdog-desync-report-ml-engineering.log")
    assert len(found) == len(died) == 1
    f = died.iloc[0]
    n = f["numbers"]
    assert n["ranks"] == [0] and n["error_kind"] == "nccl_timeout"
    assert n["error"] == ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, "
                          "NumelIn=4, NumelOut=4, Timeout(ms)=8000) ran for 8097 milliseconds before timing out.")
    assert f["evidence"][0] == "nccl-watchdog-desync-report-ml-engineering.log:1"
    assert pd.isna(f["start"])  # glog's `[E1104 ...]` carries no year and nothing else dates it
    assert (n["waited_s"], n["collective"]) == (8.097, 2)  # `ran for 8097 milliseconds`, `SeqNum=2`
    assert what_happened(inc, found) == [
        f"A process on rank 0 died: {n['error'].rstrip('.')}. The collective had waited 8 s: the hang began that long "
        "before this line. nccl-watchdog-desync-report-ml-engineering.log holds no training step and no launch of its run."]


def test_the_failed_worker_not_the_agents_signals_to_the_others(tmp_path):
    """torchrun prints the SIGTERMs it sends the other workers before the failure that made it
    send them: what went wrong is local rank 3's SIGKILL (exit -9), its line 7."""
    _, _, died = _told(tmp_path, "train-log/colossalai-padded-sigterm-x3-exit9.log")
    f = died.iloc[0]
    assert f["numbers"]["error"].startswith("failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary: ")
    assert f["numbers"]["error"].endswith("(SIGKILL)") and f["numbers"]["exit_code"] == -9
    assert f["numbers"]["end_message"] is None  # the same line ended it
    assert f["evidence"][0] == "colossalai-padded-sigterm-x3-exit9.log:7"


def test_ranks_of_several_watchdogs_and_the_c10_prefix_left_out(tmp_path):
    _, _, died = _told(tmp_path, "train-log/nccl-watchdog-old-format-ofa-8xv100.log")
    n = died.iloc[0]["numbers"]
    assert n["ranks"] == [1, 2, 3, 6, 7]
    assert n["error"].startswith("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=469508, ")
    assert died.iloc[0]["title"].startswith("processes died (ranks 1, 2, 3, 6, 7): [Rank 1] Watchdog caught")


def test_nccls_return_traces_before_an_exception_are_not_what_went_wrong(tmp_path):
    """vllm #10453 as pasted: eight `NCCL INFO graph/paths.cc:260 -> 3` lines (where NCCL's error
    code passed on its way up), then rank 1's traceback ending `DistBackendError: ... internal
    error ...`, `ncclInternalError: Internal check failed.` and an empty `Last error:`. What went
    wrong is the exception; the story quoted the first trace."""
    inc, found, died = _told(tmp_path, "train-log/nccl-internal-empty-last-error-rank1-carets-vllm.log")
    n = died.iloc[0]["numbers"]
    assert (n["error_kind"], n["ranks"]) == ("traceback", [1])
    assert n["error"] == ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                          "NCCLUtils.hpp:317, internal error - please report this issue to the NCCL developers, "
                          "NCCL version 2.21.5")  # (NCCL's `Last error:` names nothing here)
    assert died.iloc[0]["evidence"][0] == "nccl-internal-empty-last-error-rank1-carets-vllm.log:9"


def test_an_nccl_error_pasted_alone_is_told_by_the_last_error_it_names(tmp_path):
    """MambaTree #14: a barrier's `RuntimeError: NCCL error in: ...:1201, internal error, NCCL
    version 2.14.3`, then `ncclInternalError: Internal check failed.`, `Last error:`, `Bootstrap :
    no socket interface found`: the failure itself is quoted."""
    inc, found, died = _told(tmp_path, "train-log/nccl-internal-bootstrap-no-socket-interface-runtimeerror-mambatree.log")
    assert died.iloc[0]["numbers"]["error"].endswith(
        "internal error, NCCL version 2.14.3 … Last error: Bootstrap : no socket interface found")


def test_a_traceback_the_file_cuts_before_its_exception_tells_no_death(tmp_path):
    inc, found, died = _told(tmp_path, "train-log/bonito-bar-no-percent-then-traceback-cut.log")
    assert died.empty and what_happened(inc, found)[0].startswith("No training seen")


def test_a_pasted_error_beside_an_incident_is_told_apart_from_its_runs(tmp_path):
    """The nohup crash (a run that trained, then died: its own story) and an OOM pasted beside
    it, which no attempt of the folder owns."""
    name = "train-log/oom-torch22-fenced-23gib.log"
    inc, found, died = _told(tmp_path, name, beside="h200-1gpu-nohup-crash")
    assert (found["kind"] == "training_died").sum() == 1
    assert len(died) == 1 and died.iloc[0]["numbers"]["source"] == "oom-torch22-fenced-23gib.log"
    assert died.iloc[0]["numbers"]["error"].startswith("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB.")
    alone = pm.load_incident(REPO / "data" / "incidents" / "h200-1gpu-nohup-crash")
    assert not (detect(alone)["kind"] == "process_died").any()


def test_a_death_after_steps_nothing_dates(tmp_path):
    """detectron2's lines give month and day, no year: its 20 step lines and its FloatingPointError
    are in one log no attempt owns; the story tells both."""
    inc, found, died = _told(tmp_path, "train-log/detectron2-fasterrcnn-diverged-nan.log")
    n = died.iloc[0]["numbers"]
    assert (n["steps_logged"], n["last_step"]) == (20, 5878)
    assert n["error"] == "FloatingPointError: Predicted boxes or scores contain Inf/NaN. Training has diverged."
    assert died.iloc[0]["evidence"][0] == "detectron2-fasterrcnn-diverged-nan.log:21"  # the traceback, which ends at 46
    assert what_happened(inc, found) == [
        "A process died: FloatingPointError: Predicted boxes or scores contain Inf/NaN. Training has diverged. "
        "detectron2-fasterrcnn-diverged-nan.log holds 20 step lines, up to step 5878, but no launch of its run and "
        "no time to place them."]


def test_a_job_whose_steps_nothing_dates_trained_before_slurm_stopped_it(tmp_path):
    """Megatron's `iteration 2/ 1000 | ...` lines carry no time; Slurm's CANCELLED line is the
    only dated one. Read before as a start that "never came up: killed during start-up"; the log
    shows iterations 2-4, so the attempt trained (from its start, as far as anything shows) and
    was stopped when Slurm cancelled it at its time limit: a time limit, not an error. Its
    launcher then stopped its two workers (`Killing subprocess 4946`, `4947`)."""
    inc, found, _ = _told(tmp_path, "slurm/megatron-time-limit-job-first-bigscience.out")
    att = pm.model.attempts(inc)
    assert len(att) == 1
    a = att.iloc[0]
    stop = pd.Timestamp("2021-05-27 21:52:36", tz="UTC")
    assert a["first_step"] == a["start"] == stop
    assert a["first_step_ref"] == "megatron-time-limit-job-first-bigscience.out:2"
    assert found["kind"].tolist() == ["time_limit"] and found.iloc[0]["severity"] == "warning"
    assert found.iloc[0]["start"] == stop and "DUE TO TIME LIMIT" in found.iloc[0]["numbers"]["error"]
    assert what_happened(inc, found)[0] == (
        "At 21:52:36 UTC run megatron-time-limit-job-first-bigscience was stopped by its time limit while training: "
        "slurmstepd: error: *** STEP 1999618.0 ON node02 CANCELLED AT 2021-05-27T21:52:36 DUE TO TIME LIMIT ***. "
        "The launcher then stopped PIDs 4946, 4947. Nothing started it again.")


@pytest.mark.parametrize("name", [
    "slurm/scontrol-show-job-running-cut-goose.txt", "slurm/squeue-o-start-time-running-ml-engineering.txt",
    "k8s/kuard-get-pods-o-json-list-minikube-running.json"])
def test_a_scheduler_listing_of_a_running_job_is_no_slow_start(tmp_path, name):
    """A listing taken once, of a job that had started (`JobState=RUNNING`, squeue's `R`, a pod
    `Running`): it dates the start and nothing after it, so no start can be called slow (these
    were each "Slow start after launch at ..."): the listing shows no training, as the story says."""
    inc, found, _ = _told(tmp_path, name)
    att = pm.model.attempts(inc)
    assert len(att) == 1 and att.iloc[0]["by"] in ("scheduler", "container")
    assert found.empty
    assert what_happened(inc, found)[0].startswith("No training seen in 1 file")


@pytest.mark.parametrize(("name", "error"), [
    ("train-log/disk-full-errno-28-glued-to-progress-chained-cut-mockingbird.log",
     "OSError: [Errno 28] No space left on device"),
    ("train-log/disk-full-rank0-write-failed-data-pkl-fenced-tqdm-f5tts.log",
     "PytorchStreamWriter failed writing file data.pkl: file write failed"),
    ("train-log/disk-full-spawn-write-failed-then-unexpected-pos-windows-rvc.log",
     "PytorchStreamWriter failed writing file data/2229: file write failed"),
    # dated lines, every one behind Metaflow's prefix; nothing but the error: no start of its own
    ("train-log/metaflow-prefix-traceback-torch-save-errno-28-dolly.log",
     "OSError: [Errno 28] No space left on device"),
])
def test_a_process_that_died_in_a_save_is_told_saving(tmp_path, name, error):
    """Four public pastes of a save that a full disk broke (torch.save's frames, a trainer's
    `save`): the process died while saving a checkpoint, in torch's or the OS's words."""
    inc, found, died = _told(tmp_path, name)
    assert len(died) == 1 and died.iloc[0]["numbers"]["doing"] == "saving"
    said = what_happened(inc, found)[0]
    assert " died while saving a checkpoint: " in said and error in said


def test_a_death_whose_traceback_saves_nothing_is_not_told_saving(tmp_path):
    inc, found, died = _told(tmp_path, "torchrun/nccl-watchdog-desync-report-ml-engineering.log")
    assert died.iloc[0]["numbers"]["doing"] is None and "saving" not in what_happened(inc, found)[0]


def test_a_shells_killed_is_told_by_the_kernels_line_that_says_who_killed_it(tmp_path):
    """A paste whose first line is the shell's `Killed`, then `dmesg -T` with the OOM killer's
    line: the death is the OOM kill (its line, its time), not a bare SIGKILL."""
    inc, found, died = _told(tmp_path, "terminal/dmesg-T-fence-glued-oom-table-commas.txt")
    n = died.iloc[0]["numbers"]
    assert n["error_kind"] == "oom_kill" and n["error"].startswith("Out of memory: Killed process 7899 (python)")
    assert died.iloc[0]["evidence"][0] == "dmesg-T-fence-glued-oom-table-commas.txt:8"
    assert died.iloc[0]["start"] == pd.Timestamp("2025-03-30 08:24:00", tz="UTC")


def test_a_torchrun_failure_table_alone_is_told_by_the_signal_it_names(tmp_path):
    inc, found, died = _told(tmp_path, "train-log/torchrun-childfailed-table-accelerate-grpo.log")
    assert [k for k in found["kind"]] == ["process_died"]
    assert what_happened(inc, found)[0].startswith(
        "At 15:43:03 UTC a process on rank 0 died: Signal 9 (SIGKILL) received by PID 14750.")


def test_a_dataloader_workers_kill_keeps_its_own_words_beside_the_kernels(tmp_path):
    """Python's `DataLoader worker (pid 629) is killed by signal: Killed.` says whose death it
    was; the memory cgroup's OOM line for PID 629 says who killed it: both are told."""
    inc, found, died = _told(tmp_path, "terminal/colab-memory-cgroup-oom-dataloader-worker.txt")
    assert died.iloc[0]["numbers"]["error"].startswith(
        "RuntimeError: DataLoader worker (pid 629) is killed by signal: Killed; Memory cgroup out of memory: "
        "Killed process 629 (onmt_train)")


def test_a_worker_failed_under_torch_distributed_launch_and_the_launcher_stopped_the_rest(tmp_path):
    """RepViT #65: epoch 7's lines carry no time; at 14:04:27.954-.955 the agent sends SIGTERM to
    PIDs 60552, 60553 and 60555, at 14:04:28.584 it says local rank 2 (PID 60554) failed with exit
    code 1, and its own traceback is cut before its exception. Read before as an attempt that
    "started 14:04:27" (the first dated line) and died of "[traceback cut off: the file ends
    here]": a traceback that never says its error names no cause, and dated lines that only end
    processes start none. The worker was dead by the agent's first SIGTERM to the others: the
    death is dated there, not at the line that reports it."""
    inc, found, died = _told(tmp_path, "torchrun/launch-exitcode-1-local-rank-2-mid-epoch-sigterm-x3-repvit.log")
    assert found["kind"].tolist() == ["process_died"] and pm.model.attempts(inc).empty
    f = died.iloc[0]
    n = f["numbers"]
    assert f["start"] == pd.Timestamp("2024-05-28 14:04:27.954", tz="UTC")
    assert n["error"].startswith("failed (exitcode: 1) local_rank: 2 (pid: 60554)")
    assert n["stopped_pids"] == [60552, 60553, 60555] and n["steps_logged"] == 3
    assert "cut off" not in what_happened(inc, found)[0]
    assert "The launcher then stopped PIDs 60552, 60553, 60555." in what_happened(inc, found)[0]


def test_deepspeeds_launcher_killing_its_workers_is_their_end_not_a_start(tmp_path):
    """DeepSpeed #2946: the launcher kills its eight workers (PIDs 3698707-3698714) from 06:40:25
    to 06:40:34, each as the one before is gone, then logs at ERROR that local rank 7 ended badly
    (the line is cut before its return code). Read before as a start at the first kill, "slow
    start ... no sign that it failed". The launcher kills the others because rank 7 ended: it was
    dead by the first kill, which dates its death (not the ERROR line after the kills)."""
    inc, found, died = _told(tmp_path, "torchrun/deepspeed-killing-8-over-10s-return-code-9-local-rank-7-t5-cut.log")
    assert found["kind"].tolist() == ["process_died"]
    f = died.iloc[0]
    n = f["numbers"]
    assert f["start"] == pd.Timestamp("2023-03-05 06:40:25.173", tz="UTC")
    assert n["stopped_pids"] == list(range(3698707, 3698715))
    assert n["error"].startswith("`/home/userx/anaconda3/envs/tk-instruct/bin/python -u src/run_s2s.py --local_rank=7 ")
    assert not n["why_unknown"]


def test_a_launchers_teardown_alone_says_it_stopped_them_and_not_why(tmp_path):
    """deepspeed-killing-8-subprocesses-runpy-cut: eight `Killing subprocess` lines at 08:32:07
    and the launcher's traceback cut inside its frames: no line says what failed. Read before as
    "died during start-up: ... wrote a traceback ending `[traceback cut off: the file ends here]`"."""
    inc, found, died = _told(tmp_path, "train-log/deepspeed-killing-8-subprocesses-runpy-cut.log")
    assert found["kind"].tolist() == ["process_died"]
    n = died.iloc[0]["numbers"]
    assert n["why_unknown"] and n["stopped_pids"] == [250621, 250622, 250623, 250624, 250625, 250626, 250629, 250632]
    assert what_happened(inc, found)[0].startswith(
        "At 08:32:07 UTC the launcher stopped PIDs 250621, 250622, 250623, 250624, 250625, 250626, 250629, "
        "250632; no line says why.")


def test_two_oom_kills_days_apart_are_two_deaths_and_a_storm_is_one(tmp_path):
    """NervanaSystems/deepspeech #48: dmesg's OOM kill of PID 25635 at uptime 3,017,506 s, and after
    the user lowered the batch size, of PID 9666 at 3,256,824 s (66.5 hours later): two runs, two
    deaths, where the log's one process death ended "with Killed process 9666". A syslog whose
    kernel killed four processes within 30 ms (docker host, 518.05-518.08 s) is one death."""
    inc, found, died = _told(tmp_path, "kernel/deepspeech-prose-dmesg-kill-process-score-974-then-second-kill-9666.txt")
    assert [n["killed"] for n in died["numbers"]] == [["PID 25635 (python)"], ["PID 9666 (python)"]]
    assert what_happened(inc, found)[0].startswith("PID 25635 (python) was killed by the OOM killer (out of memory)")
    (tmp_path / "storm").mkdir()
    inc, found, died = _told(tmp_path / "storm", "terminal/syslog-oom-python3-docker-host.txt")
    assert len(died) == 1
    assert died.iloc[0]["numbers"]["killed"] == ["PID 15784 (python3)", "PID 15925 ((resolved))",
                                                 "PID 15783 (python3)", "PID 15934 ((resolved))"]


def test_a_process_killed_while_its_evaluation_bar_ran_is_told_evaluating(tmp_path):
    """NSCL #23: epoch 15's training bar done (1006/1006), its validation bar at 20/1094 when the
    shell reported PID 3305 Killed, on the bar's own line: it died evaluating. A model's own
    frames that predict (detectron2's `predict_proposals`, in a training step) are no evaluation."""
    inc, found, died = _told(tmp_path, "terminal/nscl-epoch15-bar-done-validation-2pct-then-bash-pid-3305-killed.log")
    assert len(died) == 1 and died.iloc[0]["numbers"]["doing"] == "evaluating"
    assert what_happened(inc, found)[0].startswith("A process died while evaluating: ")
    (tmp_path / "d2").mkdir()
    _, _, d2 = _told(tmp_path / "d2", "train-log/detectron2-fasterrcnn-diverged-nan.log")
    assert d2.iloc[0]["numbers"]["doing"] is None


def test_a_run_whose_traceback_evaluates_died_while_evaluating(tmp_path):
    """A run that trained, then ran out of memory in its `evaluate` (the loop #57's frames): it
    died while evaluating, not training."""
    log = tmp_path / "incident" / "train.log"
    log.parent.mkdir()
    log.write_text("".join(f"2026-12-07 07:0{i}:00 step {i * 100} loss {2.0 - i / 10:.2f}\n" for i in range(1, 6))
                   + "Traceback (most recent call last):\n"
                   + '  File "train.py", line 200, in <module>\n    eval_loss = evaluate(model)\n'
                   + '  File "train.py", line 157, in evaluate\n    output = model(batch)\n'
                   + "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(log.parent)
    found = detect(inc)
    died = found[found["kind"] == "training_died"]
    assert len(died) == 1 and died.iloc[0]["numbers"]["doing"] == "evaluating"
    assert what_happened(inc, found)[0].startswith("At 07:05:00 UTC run train died while evaluating: RuntimeError: CUDA out of memory.")


def test_a_pasted_death_its_launcher_restarted_says_so(tmp_path):
    """ultralytics/yolov5 #4400: torchrun's `Worker group FAILED. 2/3 attempts left; will restart
    worker group`, then its rendezvous (`restart_count=2`) and `Starting worker group`: the death
    and the restart its log shows; Supervisor #1387: the restart is of the program that ended
    (`spawned: 'worker_1'` after `exited: worker_1`, not worker_0's)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    inc, found, _ = _told(tmp_path / "a", "torchrun/elastic-worker-group-failed-2-of-3-attempts-left-restart-count-2-yolov5.log")
    said = what_happened(inc, found)
    assert said[0].startswith("A process died: [default] Worker group FAILED. 2/3 attempts left; will restart worker group. "
                              "It was started again: `[default] Starting worker group` (elastic-worker-group-failed-2-of-3-"
                              "attempts-left-restart-count-2-yolov5.log:17).")
    inc, found, _ = _told(tmp_path / "b", "supervisord/supervisor-1387-two-workers-crash-loop-cut.log")
    said = what_happened(inc, found)
    assert ("exited: worker_1 (exit status 1; not expected). It was started again: `spawned: 'worker_1' with pid 22270` "
            "(supervisor-1387-two-workers-crash-loop-cut.log:2).") in said[0]


def test_a_cuda_oom_whose_gpu_another_process_filled_says_so(tmp_path):
    """rwth-i6/returnn #1649: a restarted run's CUDA OOM names `Process 118636 has 71.62 GiB memory
    in use` and `this process has 21.24 GiB`: the crashed run's process still held the GPU."""
    inc, found, died = _told(tmp_path, "train-log/returnn-bus-error-restart-oom-dead-pid-holds-gpu-oom.log")
    n = died.iloc[0]["numbers"]
    assert (n["held_by"], round(n["own_mib"], 2)) == ("118636: 71.62 GiB", 21749.76)
    assert ("Another process held more of the GPU than this one: PID 118636 (71.62 GiB), against 21.24 GiB of its own; "
            "what filled the GPU was not this run.") in what_happened(inc, found)[0]


def _pasted(tmp_path, text: str):
    (tmp_path / "paste.txt").write_text(text, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path / "paste.txt")
    found = detect(inc)
    return inc, found, found[found["kind"] == "process_died"]


@pytest.mark.parametrize(("text", "pid", "command", "signal"), [
    # yandex-research/ddpm-segmentation #11: a script's bash on the trainer it ran (host RAM)
    ("scripts/ddpm/train_interpreter.sh: line 6:  3842 Killed   python train_interpreter.py --exp x.json\n",
     3842, "python train_interpreter.py --exp x.json", "SIGKILL"),
    # PaddlePaddle/ERNIE #24: the same report where bash speaks Chinese (`行 30`: line 30), no command
    ("Load pretraining parameters from /home/h1/LARK/ERNIE/model/params.\nscript/run_ChnSentiCorp2.sh: 行 30: 23195 已杀死\n",
     23195, None, "SIGKILL"),
    # clinplayer/Point2Skeleton #6: zsh's word on a process of a job, by PID, lower case
    ("14957 segmentation fault (core dumped)  python train.py --pc_list_file all-train.txt\n",
     14957, "python train.py --pc_list_file all-train.txt", "SIGSEGV"),
    # kahst/BirdNET-Analyzer: zsh's report on the background job it lost, with no command shown
    ("Training model...\n[1]    2843557 killed\n", 2843557, None, "SIGKILL"),
    # bash's on a background job, by its number
    ("[2]+  Killed                  python3 train.py --run-name lm\n", None, "python3 train.py --run-name lm", "SIGKILL"),
])
def test_a_shells_report_of_a_commands_death_is_a_death_of_its_own(tmp_path, text, pid, command, signal):
    """A shell's report of how a command it ran died, pasted with no launch and no kill typed:
    `A process died` with its PID, its signal and the command it names (read before as "No
    training seen ... nothing can be said", or quoted only)."""
    inc, found, died = _pasted(tmp_path, text)
    assert found["kind"].tolist() == ["process_died"]
    n = died.iloc[0]["numbers"]
    assert (n["pid"], n["command"], n["died_of"]) == (pid, command, signal)
    story = what_happened(inc, found)[0]
    assert story.startswith(f"`{command}` died: " if command else "A process died: ")
    assert "holds no training step of it" in story if command else "no launch of its run" in story


def test_a_shells_report_of_a_process_the_operator_killed_is_no_death_of_its_own(tmp_path):
    """The same report after the operator's own `kill` of that PID: the kill tells it."""
    inc, found, died = _pasted(tmp_path, "$ kill -9 3842\n$\nscripts/run.sh: line 6:  3842 Killed   python train.py\n$\n")
    assert died.empty


def test_a_schedulers_errors_alone_start_nothing_though_they_name_its_job(tmp_path):
    """hafs-community/HAFS #101: slurmstepd's and srun's words on two steps (3495064.0: an
    oom-kill event, task 4 Out Of Memory, cancelled at 19:35:36; 3495450.0: task 289's bus error,
    cancelled at 20:22:22), and nothing else. A job's number in its errors places them in no start:
    deaths, not three starts that "never came up"."""
    inc, found, died = _told(tmp_path, "slurm/hafs-3denvar-oom-kill-and-bus-error-shared-nodes.log")
    assert set(found["kind"]) == {"process_died"}
    assert pd.Timestamp("2021-10-27 20:22:22", tz="UTC") in set(died["start"])
    assert any("CANCELLED AT 2021-10-27T20:22:22" in n["error"] for n in died["numbers"])


def test_an_oom_whose_process_held_little_says_other_programs_filled_the_gpu(tmp_path):
    """facebookresearch/fastMRI (a paste cut before `CUDA out of memory.`): 7.92 GiB total, 24.56
    MiB free, 86.00 MiB reserved by this process's PyTorch: 7.81 GiB held by others (a zombie of
    an earlier run, per the thread), so the run's own size did not fill the GPU."""
    inc, found, died = _pasted(tmp_path, "Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total capacity; 69.17 MiB already "
                                         "allocated; 24.56 MiB free; 86.00 MiB reserved in total by PyTorch)\n")
    n = died.iloc[0]["numbers"]
    assert n["own_mib"] == 86.0 and round(n["others_mib"] / 1024, 2) == 7.81
    assert "Other programs held 7.81 GiB of the GPU" in what_happened(inc, found)[0]


def test_an_oom_of_a_process_that_held_the_gpu_itself_blames_no_one_else(tmp_path):
    """The same message where this process reserved most of the GPU: nothing about others."""
    _, _, died = _pasted(tmp_path, "RuntimeError: CUDA out of memory. Tried to allocate 216.00 MiB (GPU 0; 7.92 GiB total "
                                   "capacity; 7.10 GiB already allocated; 24.56 MiB free; 7.40 GiB reserved in total by PyTorch)\n")
    assert died.iloc[0]["numbers"]["others_mib"] is None


@pytest.mark.parametrize(("text", "says"), [
    # PaddlePaddle/FastDeploy: a server's own word on its port, raised as a bare `Exception`
    ("Traceback (most recent call last):\n  File \"api_server.py\", line 593, in launch_api_server\n"
     "    raise Exception(f\"The parameter `port`:{args.port} is already in use.\")\n"
     "Exception: The parameter `port`:52321 is already in use.\n", "another process held the port"),
    # jade-hpc's node: PyTorch's THC form of CUDA error 46 (a GPU in exclusive-process mode, held)
    ("THCudaCheck FAIL file=/pytorch/aten/src/THC/THCTensorRandom.cu line=25 error=46 : all CUDA-capable devices are busy "
     "or unavailable\n", "the GPU was held by another process"),
])
def test_an_error_of_a_start_that_never_ran_is_told_with_what_it_means(tmp_path, text, says):
    inc, found, _ = _pasted(tmp_path, text)
    assert says in what_happened(inc, found)[0]


def test_ranks_whose_watchdogs_name_different_collectives_were_out_of_step(tmp_path):
    """torchtune #1107 (the watchdogs' lines as the issue pastes them): after a mid-epoch save,
    rank 1 timed out in _ALLGATHER_BASE #313 and rank 0 in ALLREDUCE #315: they had not called the
    same collectives, and each waited for the other; ranks whose watchdogs agree say nothing of it."""
    lines = [
        "[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=313, "
        "OpType=_ALLGATHER_BASE, NumelIn=262668288, NumelOut=525336576, Timeout(ms)=600000) ran for 600010 milliseconds "
        "before timing out.",
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=315, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600095 milliseconds before timing out."]
    for case, text in (("apart", lines), ("together", [lines[0], lines[0].replace("rank1", "rank0").replace("Rank 1", "Rank 0")])):
        folder = tmp_path / case
        folder.mkdir()
        (folder / "paste.log").write_text("\n".join(text) + "\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inc = pm.load_incident(folder)
        died = detect(inc)
        died = died[died["kind"] == "process_died"]
        said = what_happened(inc, died)[0]
        if case == "apart":
            assert died.iloc[0]["numbers"]["out_of_step"] == [[0, "ALLREDUCE", 315], [1, "_ALLGATHER_BASE", 313]]
            assert ("The ranks were out of step, waiting in different collectives (rank 0 in ALLREDUCE #315 and rank 1 "
                    "in _ALLGATHER_BASE #313)") in said
        else:
            assert died.iloc[0]["numbers"]["out_of_step"] is None and "out of step" not in said
