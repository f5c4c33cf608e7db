"""Record incidents on a lent GPU machine, each with an operator habit of its own, for
data/incidents/h200-*gpu-*/ (each scenario's folder comes back as $OUT/<name>.tgz):

    python3 scripts/gpu_incidents.py oom-bashx torchrun-halt thread-death nohup-crash
    python3 scripts/gpu_incidents.py --cpu ...     # a dry run on a machine without GPUs

Beside each incident folder the driver writes `<name>.truth`: its own UTC timestamps of what it
did (what the README of the incident is written from), which the incident folder never holds.

    oom-bashx          a leftover job holds most of the GPU; a launcher run with `bash -x` dies of
                       CUDA OOM in start-up; the operator kills the leftover and relaunches
    torchrun-halt      torchrun, 2 ranks on one GPU (gloo): rank 1 stops at a step, rank 0 waits
                       in the all-reduce until the timeout, the agent restarts the group, the
                       restart never gets past process-group setup (rank 1 never joins)
    rank-logs          a launcher script under nohup runs torchrun --no-python with a wrapper that
                       sends each rank's output to logs/train_rankN.log: rank 1 stops at a step,
                       rank 0's all-reduce times out, torchrun (no restarts) ends the job
    thread-death       a `script`-recorded terminal, dated only by `date`s: the drafter thread dies,
                       the process lives on idle; the operator kills it and relaunches
    nohup-crash        `nohup ... &` and nothing else: training runs, then dies of an error
    resume-supervisor  a supervisor loop: the run dies at a step, the loop restarts it with
                       --resume, it resumes from the last checkpoint and redoes the steps since
    crash-loop         a supervisor loop restarting a trainer that dies in start-up (a GPU that does
                       not exist); the operator stops the loop and starts it right
    torchrun-crashloop torchrun in the foreground, --max-restarts 2: rank 1 raises at the same step in
                       every attempt; the agent restarts the group twice, then gives up
    tmux-history       an operator working in tmux, whose only record is bash's own history (with
                       times): `tmux kill-session` does not stop a trainer started under nohup; the
                       relaunch shares the GPU with it until the operator kills it by its PID
    hf-oom-resume      a real Hugging Face Trainer (GPT-2 shape, random weights) under `accelerate
                       launch` with `nohup`, TensorBoard logging: CUDA out of memory at a step (a
                       callback asks for 1 TiB, as a batch far longer than the rest would), then
                       the operator relaunches with --resume from its last checkpoint
    pl-contention      a PyTorch Lightning run (tqdm bar only, no tokens, no times of day) started
                       with nohup; another user's job starts on the same GPU and takes half its
                       compute for about 70 s, then ends; the run goes back to its pace
    hf-long-eval       no incident: a Hugging Face Trainer run that stops training for a long
                       evaluation every 100 steps (TensorBoard beside its log)
    alternating        no incident: two drafter threads, each logging its own rate
    clean-relaunch     no incident: a run that stops cleanly, relaunched by hand
    watched-relaunch   `dflash-postmortem watch` follows the folder live (sampling NVML itself): a
                       good run, a relaunch that dies of a bad flag, a relaunch that never gets
                       past loading its target (killed after 60 s), then a slower relaunch whose
                       drafter thread hangs at its step 150; the watch's record and its terminal
                       output come back beside the folder
    hangup             a `script`-recorded terminal: the trainer started with a plain `&` (no nohup);
                       the connection drops, bash hangs up its jobs and the trainer dies of SIGHUP
                       with no error of its own; the operator logs in again and resumes it with nohup
    timeout-limit      by hand with coreutils `timeout`: the limit's SIGTERM ends a run mid-training
                       (exit 124); the operator resumes it from its checkpoint under a longer limit
    ctrl-z             a `script`-recorded terminal: the trainer in the foreground through `tee`; the
                       operator presses Ctrl-Z by mistake (the job stops, holding its GPU memory),
                       comes back a minute later and types `fg`; the run trains on to its end
    vanished           `nohup ... &` with a PID file; a SIGKILL from outside the operator's view (as the
                       host's OOM killer or an admin's cleanup would send) ends it with no word; the
                       operator notices, then resumes it from its last checkpoint
    disk-full          `nohup ... &` checkpointing into a small volume another job fills with a data
                       cache: the step-200 checkpoint cannot be written and the run dies; the operator
                       frees the volume, removes the cut file and resumes from step 100
    lingering          `nohup ... &`, a sweep: the first run logs its last line but its process never
                       exits, holding its GPU memory; the operator starts the next run beside it and,
                       once that one is done, finds the first in nvidia-smi and kills it
    diverged           `nohup ... &`: a resume with a typo in its learning rate (3e2 for 3e-4); the
                       loss turns nan within steps and the run trains on, checkpointing, until the
                       operator reads the log a minute later, kills it and resumes with the right
                       rate from the newest checkpoint, which the nan run wrote: nan again; killed,
                       its checkpoints removed, resumed from the last good one
    accelerate-gpus    a two-GPU `accelerate launch --multi_gpu --num_processes 2` command run in the
                       foreground on a one-GPU machine (a Hugging Face Trainer script) fails in
                       start-up; the operator relaunches it with one process, which trains to its end
    leak-oom           by hand, foreground through `tee`: a Hugging Face Trainer run keeps 256 MiB of
                       GPU memory every step; its memory climbs until CUDA out of memory; the
                       operator resumes it from its last checkpoint without the leak
    worker-killed      `nohup` Lightning run with two DataLoader workers; one worker is killed with
                       SIGKILL from outside the operator's view (as the OOM killer would): the run
                       dies of `DataLoader worker (pid(s) N) exited unexpectedly`; relaunched by hand
    early-stop         a `script`-recorded terminal, plain PyTorch (`train_es.py`, a tqdm bar over 3000
                       steps): the run stops early by the common `EarlyStopping` rule (patience 3) and
                       exits 0; a relaunch with a batch far too large dies of CUDA out of memory in its
                       first step; a relaunch with a batch that fits and patience 10 trains and exits 0
    make-launcher      a `script`-recorded terminal, a Makefile as the launcher (`make train`, `make
                       resume`, each running the trainer in the foreground into a dated log): the first
                       `make train` dies in start-up (its PID file's folder does not exist); the fixed
                       one trains until a SIGKILL from outside the operator's view (an admin's cleanup);
                       `make resume` goes on from the last checkpoint to the run's last step
    pkill-both         a `script`-recorded terminal, `nohup ... &`: the operator relaunches with one flag
                       changed and the same --run-name, then kills "the old one" with `pkill -f 'run-name
                       drafter-7b'` while the new one is still loading: both die (bash: two `Terminated`);
                       the operator notices and launches once more, which trains to its last step
    debug-env          a `script`-recorded terminal, `nohup ... &`: the run dies of an error after its step-100
                       checkpoint; to debug it the operator types `export CUDA_LAUNCH_BLOCKING=1` and resumes
                       it under the same --run-name, which trains slower; ~80 s later the operator kills
                       it by its PID, types `unset CUDA_LAUNCH_BLOCKING` and resumes it again, to its last step
    hf-slow-resume     a `script`-recorded terminal, `nohup python train_hf.py --output_dir out/run1 ... &` (a Hugging
                       Face Trainer, GPT-2 shape, flags as in Hugging Face's examples): after its step-200 checkpoint
                       the operator kills it by its PID and relaunches the same command into the same --output_dir
                       with --resume_from_checkpoint (the newest), adding --gradient_checkpointing and halving the
                       batch for twice the accumulation (the same effective batch): it trains slower, to max_steps
    rendezvous-wait    a two-node torchrun command (c10d rendezvous, --nnodes 2, join_timeout=60) pasted
                       onto one machine under nohup: the agent waits for a second node that never
                       comes, starts no worker and times out; the same command again, killed by its PID
                       after ~30 s; then --standalone --nnodes 1, which trains 60 s and ends cleanly
    buffered-log       `nohup python3 train_plain.py ... > logs/train.log 2>&1 &`: a nanoGPT-style script that
                       reports with print() only, its stdout block-buffered into the file, so the log stays
                       empty while it trains; the operator looks twice, takes it for stuck, `kill -9`s it
                       (the buffer is lost), then relaunches with `python3 -u`, which logs as it goes and
                       ends by itself
    assert-relaunch    by hand, `python3 train.py ... 2>&1 | tee logs/runN.log`: a data vocabulary larger than
                       the model's trips a CUDA device-side assert mid-run; the same command again with
                       CUDA_LAUNCH_BLOCKING=1 (slower, same crash, a traceback at the embedding); then
                       fixed, it trains to its end
    torn-checkpoint    `nohup ./run.sh`, a supervisor loop appending train.py's output to one log: the
                       operator's `kill -9` lands mid-save and tears ckpt/last.pt; the loop's restarts die
                       in torch.load; the operator moves the file aside and starts the loop again, from
                       step 0
    segv-supervisor    `nohup python3 supervise.py`, a Python supervisor (Popen, 3 attempts, 10 s apart)
                       running train.py under `-X faulthandler`: a ctypes record reader dereferences a
                       NULL index entry at step 450, a real SIGSEGV (returncode -11) in every attempt,
                       each resumed from the step-400 checkpoint; the supervisor gives up, the operator
                       relaunches by hand with --skip-bad-shard, which trains ~40 s and ends by itself
    port-in-use        torchrun under nohup (2 ranks, gloo on one GPU, --master-port 29500, each run into
                       its own log): the operator tails an older run's log, takes the run for stuck and
                       launches the same command again; its c10d store cannot bind the port (EADDRINUSE)
                       and it dies at once; the operator kills the first by its PID and relaunches
    tb-hang            `nohup python3 train.py --run-name lm-a ... > nohup.out 2>&1 &`, plain PyTorch whose
                       metrics go only to TensorBoard (runs/lm-a): after step 470 its producer thread blocks
                       for good and the loop waits on queue.get() (alive, memory held, 0 % GPU, nothing more
                       written); a minute later the operator looks, `kill`s it (its SIGTERM handler never
                       gets to act), `kill -9`s it and resumes from the step-400 checkpoint into the same
                       log dir, which trains ~40 s to its end
    resume-mismatch    `nohup ./run.sh ... > /dev/null 2>&1 &`, a launcher writing one log per launch
                       (logs/train_<start time>.log): the operator kills a run after ~60 s, resumes it
                       with a wider model (--n-embd 1024): load_state_dict's size mismatch in start-up,
                       twice (then --n-layer 12 too); moves ckpt aside and starts afresh from step 0
    cpu-starved        `nohup python3 train.py ... > logs/train.log 2>&1 &`, plain PyTorch whose 4 DataLoader
                       workers tokenize raw text in pure Python: ~60 s in, another user's CPU job (a pool of
                       two busy workers a core, `python3 preprocess_shards.py`) starts on the host; the rate
                       falls (the step waits on data); ~40 s later the operator finds it in `top` and kills it
                       by its PID; the rate recovers and the run ends by itself ~45 s later
    tee-hangup         a `script`-recorded terminal: `nohup python3 train.py ... 2>&1 | tee logs/train.log &`
                       (nohup covers python only); ~40 s in the terminal hangs up, tee dies of SIGHUP and
                       the trainer's next print() meets a broken pipe; ~40 s later the operator logs in
                       again, finds nothing running and resumes from ckpt/last.pt with `nohup ... > log`
    noisy-healthy      no incident: `nohup python3 train.py ... > logs/train.log 2>&1 &`, an SFT-style loader
                       (each batch's length drawn from 128..2048, no packing) and a line every step with
                       that step's own tok/s, which swings widely; evals every 300 steps, checkpoints
                       every 500; the operator looks twice; the run ends by itself after 150 s
    stall-watchdog     `nohup ./watchdog.sh > logs/watchdog.log 2>&1 &`, the operator's bash watchdog: it starts
                       train.py (print() lines, no times of day) and checks every 10 s how old logs/train.log
                       is; the prefetch thread blocks for good on its own lock after step 820 and the loop
                       waits on the empty queue (0 % GPU, memory held); after 60 s stale the watchdog sends
                       SIGTERM (the handler's flag is never checked), SIGKILL 15 s later, relaunches with
                       --resume from step 800, which trains to step 1500 and exits 0; the watchdog exits
    preempt-requeue    `nohup ./requeue.sh > logs/requeue.log 2>&1 &`, the operator's requeue loop on a spot slot
                       (train.py through `tee -a logs/train.log`, again 20 s after each exit until logs/DONE):
                       a preemption watcher (no transcript) SIGTERMs the trainer ~60 s into attempt 1 and
                       32-50 s into attempt 2 (by attempt 1's pace); each time it saves and exits 0; attempt 3 resumes
                       and trains to its last step, writes logs/DONE, and the loop exits
    cpu-fallback       `nohup python3 train.py --run-name lm --max-steps N > logs/train_1.log 2>&1 &`, plain PyTorch
                       whose device is "cuda" if torch.cuda.is_available() else "cpu" (a WARNING, and on it
                       trains): ~45 s in, the operator kills it by its PID and resumes it with a line from a
                       two-GPU machine's notes, `CUDA_VISIBLE_DEVICES=1 nohup ... --resume ...`: no GPU 1 here, so
                       torch sees none and it trains on the CPU, far slower, nothing in nvidia-smi; ~60 s later
                       the operator looks, kills it and resumes without the variable, on the GPU, to its end
    sweep-share        `nohup python3 train.py --run-name base --lr 3e-4 ... > logs/base.log 2>&1 &` alone on GPU 0
                       (a model that keeps the GPU busy): ~40 s in, the operator types a one-line `for lr in 1e-4
                       1e-3; do nohup ... --run-name sweep-$lr --lr $lr ... & done` meant for another GPU, unpinned:
                       both sweep runs start on GPU 0 and all three step slower; ~40 s later the operator looks
                       (`nvidia-smi`, `tail`), kills the two sweep runs by their PIDs (`pgrep -af`), and base goes
                       back to its pace and trains ~30 s more to its last step
    ctrlc-sweep        a `script`-recorded terminal, a one-line foreground sweep `for lr in 1e-4 3e-4 1e-3; do python3
                       train.py --run-name lr-$lr --lr $lr ... > logs/lr-$lr.log 2>&1; done` (a trainer that catches
                       Ctrl-C, saves ckpt/<run>.pt and exits 0): ~35 s in, the operator presses Ctrl-C to stop the
                       sweep; pass 1 saves and exits 0, so bash goes on with pass 2 (no prompt); Enter ~15 s later
                       (no prompt), Ctrl-C again ~25 s after the first (pass 3 starts), a third ~15 s later ends the
                       loop; `date`, `ls logs`, `tail -n 2 logs/lr-*.log`, `nvidia-smi`
    ctrlc-stops-sweep  ctrlc-sweep's terminal and one-line foreground sweep, its trainer without the KeyboardInterrupt
                       handler: ~35 s into pass 1 the operator presses Ctrl-C once; KeyboardInterrupt goes unhandled
                       (a traceback in logs/lr-1e-4.log), the trainer dies of SIGINT, bash ends the whole loop and
                       the prompt comes back at once (passes 2 and 3 never start); `echo $?`, `date`, `ls logs`,
                       `tail -n 3 logs/lr-*.log`, `nvidia-smi`
    spawn-oom          a `script`-recorded terminal, plain PyTorch DDP started with `torch.multiprocessing.spawn`
                       (no torchrun; 2 ranks, gloo, both on GPU 0) in the foreground through `tee`: rank 1 meets
                       a 4M-token document in its padded batch and dies of CUDA out of memory (spawn ends rank 0,
                       ProcessRaisedException); resumed with --max-len, rank 0 is SIGKILLed from outside the
                       operator's view ~30 s in (ProcessExitedException); resumed again, it trains to its end
    rotated-log        `nohup python3 train.py --run-name lm --max-steps N --bad-step K &` with no redirection (nohup
                       appends to ./nohup.out, run after run), plain PyTorch logging through a RotatingFileHandler
                       (logs/train.log, 2 old files kept, sized to rotate ~4 times in all; warnings and errors also
                       to stderr): ~60 s in, the batch of step K (87 steps past a checkpoint) fails the data check
                       (`ValueError: sample 48213 has 0 tokens`), the traceback only in nohup.out; ~20 s later the
                       operator looks (`tail`, `ls ckpt/`) and relaunches the same line with --resume
                       ckpt/step_<last>.pt --skip-bad added: it redoes the steps since, skips the batch with a
                       WARNING (in train.log and nohup.out) and trains to N; the rotation has dropped run 1's first
                       lines, its start among them
    table-loop         the only GPU record is the operator's habit, `nohup bash -c 'while true; do nvidia-smi >>
                       logs/gpu.log; sleep 5; done' > /dev/null 2>&1 &` (nvidia-smi's default table, appended every
                       5 s), beside `nohup python3 train.py --run-name main ... > logs/train.log 2>&1 &`: ~45 s in,
                       another user's training job (no transcript, its log outside the folder) starts on the same
                       GPU and the run slows; ~50 s later the operator looks (`tail` of both logs), kills the other
                       job by the PID its table shows; the run goes back to its pace and ends by itself; the
                       operator stops the loop by its PID
    hang-ctrlc         two `script`-recorded terminals: `python3 train.py --run-name lm ... > logs/train.log 2>&1` in
                       the foreground of window 1 (plain PyTorch, batches through a DataLoader with 2 workers), `tail -f`
                       of its log in window 2: ~65 s in, a worker blocks for good on one batch and the loop waits in
                       next() on the DataLoader (alive, memory held, 0 % GPU, the log silent); ~90 s after the last step
                       line the operator stops the tail, looks at `nvidia-smi`, presses Ctrl-C in window 1
                       (KeyboardInterrupt, a traceback in the log; a second Ctrl-C if it lives 10 s on), then resumes
                       from ckpt/last.pt with --num-workers 0 through `tee logs/train2.log`, which trains ~40 s to its end
    hf-save-hang       a `script`-recorded terminal, `nohup python3 run/hf_train.py --out out/run1 ... --hang-at-save 200 >
                       logs/train.log 2>&1 &` (a Hugging Face Trainer, GPT-2 shape, its own log lines at info level with
                       their times): a TrainerCallback's on_save never returns at the step-200 save (alive, memory held,
                       idle, the log silent); the operator watches with `tail`, ~90 s into the hang looks at `nvidia-smi`
                       and `ls out/run1`, `kill`s it by its PID (`kill -9` if it lives 10 s on) and relaunches with
                       --resume into logs/train2.log, which trains to its end
    bar-freeze         a `script`-recorded terminal, `nohup python3 train.py --run-name det --epochs 6 > logs/train.log 2>&1 &`
                       and `echo $! > logs/train.pid`: plain PyTorch whose only output is a tqdm bar an epoch (no time of
                       day, no step line; batches through a DataLoader with 2 workers, timeout 0), checked by hand with
                       `tail -c 400` and `nvidia-smi`: a third into epoch 4 a worker blocks for good and the bar stops being
                       redrawn (alive, memory held, 0 % GPU); the operator looks ~60 and ~100 s after the last redraw,
                       sends `kill -INT $(cat logs/train.pid)` ~120 s after it (`kill` if it lives 10 s on) and relaunches
                       with --num-workers 0 --resume into logs/train2.log, which redoes epoch 4 and trains to epoch 6
    acc-creep          `nohup python3 train.py --max-steps 100000 > logs/train.log 2>&1 &`, plain PyTorch whose
                       training accuracy keeps every step's sampled predictions in Python lists and recomputes it
                       over all of them every step: each step takes longer than the one before (no event, no
                       error); the operator looks at ~45 s and ~100 s, compares the rate over the log at ~130 s,
                       kills it by its PID and resumes from its last checkpoint with --running-acc (two counts),
                       which trains at its first pace to its last step
    nccl-watchdog      (2 GPUs) torchrun in a terminal's foreground through `tee -a`, NCCL: rank 1
                       stops at a step, rank 0's NCCL watchdog times out and tears the process
                       down, torchrun ends the job; the operator relaunches the same way, fixed
    nccl-contention    (2 GPUs) torchrun under nohup, NCCL; another user's job computes on GPU 1
                       alone for 60 s: both ranks slow down, then go back to their pace
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import functools
import os
import pty
import re
import select
import shlex
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tarfile
import termios
import threading
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Every process the scenarios start (the operator's shells take a copy of this environment when
# the replay module is imported) finds the kit here, installed or not.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))

from dflash_postmortem.replay import scenarios as replay_scenarios  # noqa: E402
from dflash_postmortem.replay.interactive_shell import InteractiveShell  # noqa: E402
from dflash_postmortem.replay.scenarios import Transcript  # noqa: E402

TRAIN = f"{shlex.quote(sys.executable)} -m dflash_postmortem.replay.train"
GPU_MODEL = ("--vocab 32768 --hidden 2048 --layers 12 --heads 16 --seq 2048 --batch 4 --draft-layers 2 "
             "--draft-heads 16 --attn sdpa --log-every 5 --no-wandb")
CPU_MODEL = ("--cpu --vocab 509 --hidden 32 --layers 4 --heads 2 --seq 64 --draft-heads 2 --num-anchors 6 "
             "--dataset-tokens 4096 --log-every 5 --no-wandb")
# A target too large for what the leftover job leaves free (8 x 8192-wide layers: ~13 GB in bf16).
GPU_BIG = "--vocab 32768 --hidden 8192 --layers 8 --heads 64 --seq 1024 --batch 1 --draft-layers 1 --draft-heads 64 --attn sdpa --log-every 5 --no-wandb"
SMI_QUERY = "timestamp,index,uuid,memory.used,memory.total,utilization.gpu,power.draw,temperature.gpu,clocks.sm"
SMI_APPS = "timestamp,gpu_uuid,pid,process_name,used_memory"


def stamp() -> str:
    now = dt.datetime.now(dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


class Recording:
    """One incident folder, its captures running in the background, and the driver's truth log."""

    def __init__(self, root: Path, name: str, gpu: bool):
        self.name, self.gpu = name, gpu
        self.dir = root / name
        shutil.rmtree(self.dir, ignore_errors=True)
        (self.dir / "logs").mkdir(parents=True)
        (self.dir / "run").mkdir()
        self.truth_path = root / f"{name}.truth"
        self.truth_path.write_text("")
        self.procs: list[subprocess.Popen] = []
        self.model = GPU_MODEL if gpu else CPU_MODEL

    def truth(self, what: str) -> None:
        with open(self.truth_path, "a") as f:
            f.write(f"{stamp()} {what}\n")
        print(f"[{self.name}] {what}", flush=True)

    def background(self, cmd: str, out: str) -> subprocess.Popen:
        """A capture or a process nobody typed: started with bash, output to `out` (in the folder)."""
        f = open(self.dir / out, "ab")  # noqa: SIM115 - open for the process's life
        p = subprocess.Popen(["bash", "-c", cmd], cwd=self.dir, stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append(p)
        return p

    def smi_stream(self, out: str = "logs/smi.csv") -> None:
        if self.gpu:
            self.background(f"exec nvidia-smi --query-gpu={SMI_QUERY} --format=csv -l 1", out)

    def smi_apps(self, out: str = "logs/smi_apps.csv") -> None:
        if self.gpu:
            self.background(f"exec nvidia-smi --query-compute-apps={SMI_APPS} --format=csv -l 2", out)

    def ps_loop(self, out: str = "logs/ps.txt", every: float = 2) -> None:
        self.background("while true; do echo \"# $(date -u +%Y-%m-%dT%H:%M:%SZ)\"; "
                        "ps -eo pid,ppid,pgid,sid,user,lstart,etimes,stat,args ww | grep -E '^ *PID|[p]ython|[t]orchrun'; "
                        f"sleep {every}; done", out)

    def gpus_and_processes(self) -> None:
        """What most scenarios capture: the GPUs, their compute apps and a `ps` loop."""
        self.smi_stream()
        self.smi_apps()
        self.ps_loop()

    def top_loop(self, out: str = "logs/top.txt", every: float = 2) -> None:
        self.background(f"exec top -b -c -w 512 -d {every}", out)

    def nvml(self, out: str = "nvml") -> None:
        if self.gpu:
            self.background(f"exec {shlex.quote(sys.executable)} -m dflash_postmortem.cli record-gpus --out {out} "
                            "--interval 1", "logs/.recorder.out")

    def other_users_job(self, op: Transcript, seconds: int, look_after: float, gpu: int | None = None) -> None:
        """Another user's job (no transcript) computing matrix products for `seconds` on the GPU
        (`gpu`: that one alone); the operator looks at the GPUs' processes `look_after` seconds in."""
        where = f"GPU {gpu} only" if gpu is not None else "the same GPU"
        self.truth(f"another user's job starts on {where} (no transcript): matrix products for {seconds} s")
        (self.dir / "run" / "hog_compute.py").write_text(HOG_COMPUTE)
        visible = f"CUDA_VISIBLE_DEVICES={gpu} " if gpu is not None else ""
        hog = self.background(f"{visible}exec {shlex.quote(sys.executable)} run/hog_compute.py {seconds}", "logs/hog.out")
        self.wait_for("logs/hog.out", "computing", 60)
        self.truth(f"the other job computes, pid {hog.pid}")
        time.sleep(look_after)
        op.run("nvidia-smi --query-compute-apps=pid,gpu_uuid,process_name,used_memory --format=csv" if self.gpu
               else "uptime")
        hog.wait(timeout=seconds + 60)
        self.truth("the other job ended")

    def wait_for(self, rel: str, text: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        path = self.dir / rel
        while time.monotonic() < deadline:
            if path.exists() and text in path.read_text(errors="replace"):
                return True
            time.sleep(0.5)
        self.truth(f"waited {timeout:g}s for {text!r} in {rel}: not seen")
        return False

    def close_shell(self, t, pids: list[str], checkpoints: str) -> None:
        """Close the operator's terminal, stop a run that outlived the scenario (none should), and
        remove the runs' checkpoints (`checkpoints`, a glob in the folder): the trainer's state,
        not evidence."""
        t.close()
        for pid in pids:
            if pid.isdigit() and Path(f"/proc/{pid}").exists():
                self.truth(f"PID {pid} still running at the end: killed")
                subprocess.run(["kill", pid], check=False)
        for ckpt in self.dir.glob(checkpoints):
            ckpt.unlink()

    def stop_ours(self, pattern: str) -> None:
        """SIGTERM to the processes matching `pattern` that run in this incident's folder: a dry run
        on a shared machine leaves other trainers (a test run's, another recording's) alone."""
        found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
        for pid in found:
            try:
                if Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(self.dir.resolve()):
                    os.kill(int(pid), 15)
            except (OSError, ValueError):
                pass  # gone meanwhile, or not ours to read

    def finish(self) -> None:
        """Stop the captures, then anything of this incident still running."""
        for p in self.procs:
            try:
                os.killpg(p.pid, 15)
            except ProcessLookupError:
                pass
        time.sleep(1)
        for trainer in ("dflash_postmortem.replay.train", "run/hf_train.py", "run/pl_train.py", "train_hf.py"):
            self.stop_ours(trainer)
        subprocess.run(["pkill", "-f", "hog_memory"], check=False)
        subprocess.run(["pkill", "-f", "hog_compute"], check=False)
        subprocess.run(["tmux", "kill-server"], check=False, capture_output=True)
        for leftover in self.dir.glob("logs/.*"):
            leftover.unlink()
        self.truth("recording ended")


def _machine(cpu: bool) -> str:
    """The folder names' prefix: the GPU model and how many the machine has (`h200-1gpu`,
    `h100-2gpu`); `h200-1gpu` for a dry run, as the scenarios are written for it."""
    if cpu:
        return "h200-1gpu"
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout
    model = re.search(r"GPU 0: NVIDIA (\w+)", out)
    return f"{model.group(1).lower() if model else 'gpu'}-{max(1, out.count('GPU '))}gpu"


def _torchrun() -> str:
    """torchrun beside this Python, else on PATH, else the module."""
    beside = Path(sys.executable).with_name("torchrun")
    return str(beside) if beside.exists() else shutil.which("torchrun") or f"{sys.executable} -m torch.distributed.run"


def oom_bashx(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    hog = ("import torch, time  # hog_memory\n"
           f"x = torch.empty({128 << 30 if r.gpu else 1 << 20}, dtype=torch.uint8, device={'cuda' if r.gpu else 'cpu'!r})\n"
           "print('holding', x.numel() >> 30, 'GiB', flush=True)\ntime.sleep(3600)\n")
    (r.dir / "run" / "hog_memory.py").write_text(hog)
    r.truth("a leftover job (another user's, no transcript) starts holding 128 GiB: run/hog_memory.py")
    hog_proc = r.background(f"exec {shlex.quote(sys.executable)} run/hog_memory.py", "logs/hog.out")
    r.wait_for("logs/hog.out", "holding", 60)
    r.truth(f"leftover job holds its memory, pid {hog_proc.pid}")
    big = GPU_BIG if r.gpu else CPU_MODEL
    (r.dir / "launch.sh").write_text(
        "#!/usr/bin/env bash\n# start the big drafter run\nset -euo pipefail\n"
        f"cd {r.dir}\nRUN=${{1:-big-drafter}}\nexport CUDA_VISIBLE_DEVICES=0\n"
        f"{TRAIN} --run-name \"$RUN\" --seconds 20 {big} --pid-file run/$RUN.pid\n")
    time.sleep(5)
    r.truth("operator runs the launcher under bash -x; expected: CUDA OOM in start-up")
    op.run("bash -x ./launch.sh big-drafter > logs/launch.log 2>&1; echo exit=$?", timeout=300)
    r.truth("launcher returned")
    time.sleep(5)
    op.run("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv")
    op.run("ps -o pid,user,etime,args -p $(pgrep -f hog_memory | head -1)")
    r.truth(f"operator kills the leftover job {hog_proc.pid}")
    op.run(f"kill {hog_proc.pid}; sleep 3; nvidia-smi --query-gpu=memory.used --format=csv,noheader")
    hog_proc.wait(timeout=30)  # reaped, as the shell that started it would
    r.truth("operator relaunches the same launcher under bash -x")
    op.run("bash -x ./launch.sh big-drafter > logs/launch2.log 2>&1; echo exit=$?", timeout=600)
    r.truth("relaunch returned (trained 20 s and stopped)")


def torchrun_halt(r: Recording) -> None:
    r.smi_stream()
    r.top_loop()
    op = Transcript(r.dir)
    torchrun = _torchrun()
    cmd = (f"nohup {torchrun} --nproc-per-node 2 --max-restarts 1 "
           "--log-dir logs/torchrun --tee 3 -m dflash_postmortem.replay.train --run-name ddp-drafter "
           f"--seconds 600 {r.model} --pg-timeout 30 --inject-hang drafter:150,init:1 --fault-rank 1 "
           "> logs/torchrun.log 2>&1 &")
    r.truth("operator starts torchrun (2 ranks, gloo on one GPU); rank 1 is set to stop at its drafter step 150, "
            "and to hang before joining the process group in attempt 1; process-group timeout 30 s; --max-restarts 1")
    op.run(cmd)
    r.wait_for("logs/torchrun.log", "step 145", 150)
    r.truth("step 145 logged: rank 1 stops at its step 150, rank 0 waits in the all-reduce")
    time.sleep(20)
    op.run("tail -n 4 logs/torchrun.log")
    op.run("nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader")
    r.wait_for("logs/torchrun.log", "attempt 1", 120)
    r.truth("the agent restarted the group (attempt 1 seen)")
    r.wait_for("logs/torchrun.log", "ChildFailedError", 120)
    r.truth("torchrun gave up (ChildFailedError)")
    op.run("tail -n 25 logs/torchrun.log")
    op.run("ps aux | grep [t]orchrun | wc -l")


def _proc_stat(pid: str) -> list[str]:
    """/proc/PID/stat's fields after the command name (state, ppid, ...); [] once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _wait_status(fields: list[str]) -> str:
    """A zombie's wait status, from /proc/PID/stat (field 52): what its parent will read."""
    if len(fields) < 50 or fields[0] != "Z":
        return "status not read (reaped before the driver saw it exit)"
    status = int(fields[49])
    return f"killed by signal {status & 0x7f}" if status & 0x7f else f"exit status {status >> 8}"


def _exited(pid: str, timeout: float) -> bool:
    """Wait until `pid` has exited: gone, or a zombie (an orphan of the operator's `bash -c`, left
    for init to reap)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _proc_stat(pid)[:1] in ([], ["Z"]):
            return True
        time.sleep(0.5)
    return False


def rendezvous_wait(r: Recording) -> None:
    r.smi_stream()
    r.top_loop()
    op = Transcript(r.dir)
    torchrun = _torchrun()
    train = "-m dflash_postmortem.replay.train --run-name rdzv-drafter"
    two_nodes = (f"nohup {torchrun} --nnodes 2 --node-rank 0 --nproc-per-node 1 --rdzv-backend c10d "
                 "--rdzv-endpoint localhost:29411 --rdzv-id drafter7 --rdzv-conf join_timeout=60 "
                 f"{train} --seconds 90 {r.model} > logs/train.log 2>&1 &")
    one_node = (f"nohup {torchrun} --standalone --nnodes 1 --nproc-per-node 1 {train} --seconds 60 {r.model} "
                "> logs/train2.log 2>&1 &")

    def agents() -> list[str]:
        """The PIDs whose command line carries the run name (the driver's own pgrep)."""
        return subprocess.run(["pgrep", "-f", "rdzv-drafter"], capture_output=True, text=True).stdout.split()

    def launched(n: int, cmd: str, log: str) -> list[str]:
        r.truth(f"attempt {n}: operator types {cmd!r}")
        op.run(cmd)
        r.wait_for(log, "", 10)
        time.sleep(2)
        pids = agents()
        r.truth(f"attempt {n} running: processes matching 'rdzv-drafter' (driver's pgrep): "
                f"{[f'{pid} ({role(pid)})' for pid in pids]}")
        return pids

    def role(pid: str) -> str:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            return "gone"
        return "torchrun agent" if "torchrun" in args or "distributed.run" in args else "worker"

    def log_said(log: str) -> str:
        lines = (r.dir / log).read_text(errors="replace").splitlines()
        return f"{log} has {len(lines)} lines, first {lines[0] if lines else '(none)'!r}"

    r.truth("operator pastes a two-node torchrun command (c10d rendezvous at localhost:29411, --nnodes 2 "
            "--node-rank 0, join_timeout=60) onto this one machine, under nohup; no second node exists")
    pids1 = launched(1, two_nodes, "logs/train.log")
    time.sleep(25)
    r.truth(f"operator looks (~25 s after the launch); train.log's last line: {_last_line(r, 'train.log')!r}")
    op.run("nvidia-smi" if r.gpu else "uptime")
    op.run("tail -n 5 logs/train.log")
    op.run("ps -ef | grep [t]orchrun")
    seen = r.wait_for("logs/train.log", "RendezvousTimeoutError", 120)
    r.truth(f"attempt 1: 'RendezvousTimeoutError' in logs/train.log: {seen}; its last line: "
            f"{_last_line(r, 'train.log')!r}; {log_said('logs/train.log')}")
    for pid in pids1:
        r.truth(f"attempt 1 PID {pid} {'exited' if _exited(pid, 30) else 'still running 30 s later'}")
    time.sleep(3)
    op.run("tail -n 20 logs/train.log")
    time.sleep(5)

    r.truth("operator relaunches exactly the same command (thinking it transient); `> logs/train.log` "
            "truncates attempt 1's log")
    pids2 = launched(2, two_nodes, "logs/train.log")
    time.sleep(28)
    r.truth(f"~30 s after the relaunch; train.log's last line: {_last_line(r, 'train.log')!r}")
    op.run("nvidia-smi" if r.gpu else "uptime")
    op.run("tail -n 3 logs/train.log")
    shown, _ = op.run("pgrep -f rdzv-drafter")
    found = shown.split()
    r.truth(f"operator's `pgrep -f rdzv-drafter` printed {found}")
    pid = found[0] if found else (pids2[0] if pids2 else "?")
    r.truth(f"operator types `kill {pid}`")
    op.run(f"kill {pid}")
    r.truth(f"attempt 2 PID {pid} {'exited' if _exited(pid, 30) else 'still running 30 s later'}; "
            f"{log_said('logs/train.log')}; still matching 'rdzv-drafter': {agents()}")
    time.sleep(3)
    op.run("tail -n 5 logs/train.log")
    time.sleep(5)

    r.truth("operator fixes the command: --standalone --nnodes 1, 60 s of training, into logs/train2.log")
    pids3 = launched(3, one_node, "logs/train2.log")
    r.wait_for("logs/train2.log", "step 5 ", 300)
    r.truth("attempt 3 logged its first step line (step 5)")
    r.wait_for("logs/train2.log", "Training stopped", 300)
    r.truth("attempt 3 logged 'Training stopped'")
    for pid in pids3:
        r.truth(f"attempt 3 PID {pid} {'exited' if _exited(pid, 60) else 'still running 60 s later'}")
    r.truth(f"train2.log's last line: {_last_line(r, 'train2.log')!r}")
    time.sleep(3)
    op.run("tail -n 3 logs/train2.log")
    op.run("nvidia-smi" if r.gpu else "uptime")
    time.sleep(3)


def rank_logs(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    torchrun = _torchrun()
    (r.dir / "rank.sh").write_text(
        "#!/usr/bin/env bash\n# one rank of the job, its output in a log of its own\n"
        f"exec {TRAIN} \"$@\" > logs/train_rank${{RANK}}.log 2>&1\n")
    (r.dir / "launch.sh").write_text(
        "#!/usr/bin/env bash\n# two ranks on GPU 0 (gloo), each writing logs/train_rankN.log\nset -euo pipefail\n"
        f"cd {r.dir}\nexec {torchrun} --nproc-per-node 2 --max-restarts 0 --no-python ./rank.sh "
        f"--run-name ddp-ranks --seconds 600 {r.model} --pg-timeout 30 --inject-hang drafter:150 --fault-rank 1\n")
    for script in ("rank.sh", "launch.sh"):
        (r.dir / script).chmod(0o755)
    r.truth("operator starts launch.sh under nohup: torchrun --no-python, 2 ranks on one GPU (gloo), each rank's "
            "output in logs/train_rank{0,1}.log; rank 1 is set to stop at its drafter step 150; process-group "
            "timeout 30 s; --max-restarts 0")
    op.run("nohup ./launch.sh > logs/launch.out 2>&1 &")
    r.wait_for("logs/train_rank0.log", "step 145", 180)
    r.truth("rank 0 logged step 145: rank 1 stops at its step 150, rank 0 waits in the all-reduce")
    r.wait_for("logs/launch.out", "ChildFailedError", 150)
    r.truth("torchrun gave up (ChildFailedError in logs/launch.out)")
    time.sleep(5)
    op.run("tail -n 3 logs/train_rank0.log logs/train_rank1.log")
    op.run("nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader")


def thread_death(r: Recording) -> None:
    r.nvml()
    r.smi_apps()
    r.ps_loop(every=3)
    t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", dict(os.environ, COLUMNS=""))
    try:
        r.truth("operator at a script-recorded terminal; launch with the drafter thread set to die at its step 120 "
                "(--on-thread-error continue: the process lives on)")
        t.run("date")
        t.run(f"nohup {TRAIN} --run-name lone-drafter --seconds 900 {r.model} --inject-error drafter:120 "
              "--on-thread-error continue --pid-file run/lone.pid > logs/train.log 2>&1 &")
        r.wait_for("logs/train.log", "Exception in thread", 300)
        r.truth("the drafter thread died (Exception in thread seen in the log)")
        time.sleep(35)
        t.run("date")
        t.run("tail -n 3 logs/train.log")
        t.run("nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv" if r.gpu else "uptime")
        t.run("cat run/lone.pid")
        r.truth("operator kills the idle process by its PID file")
        t.run("kill $(cat run/lone.pid)")
        time.sleep(3)
        t.run("date")
        r.truth("operator relaunches without the fault")
        t.run(f"nohup {TRAIN} --run-name lone-drafter-2 --seconds 20 {r.model} --pid-file run/lone2.pid "
              "> logs/train2.log 2>&1 &")
        r.wait_for("logs/train2.log", "Training stopped", 300)
        t.run("date")
        t.run("tail -n 2 logs/train2.log")
    finally:
        t.close()


def nohup_crash(r: Recording) -> None:
    r.smi_stream()
    r.ps_loop()
    r.truth("nohup launch, nothing else recorded; the drafter is set to raise at its step 150 (the run stops)")
    r.background(f"nohup {TRAIN} --run-name solo --seconds 600 {r.model} --inject-error drafter:150", "logs/nohup.out")
    r.wait_for("logs/nohup.out", "Training failed", 400)
    r.truth("the run died (Training failed)")
    time.sleep(10)


SUPERVISOR = """#!/usr/bin/env bash
# keep the drafter training: restart it from its last checkpoint whenever it dies
cd "$(dirname "$0")"
fault="$FIRST_FAULT"
n=0
while true; do
  n=$((n + 1))
  echo "[supervisor] $(date -u '+%F %T') starting attempt $n"
  {train} --run-name resumable --seconds 25 {model} --checkpoint-dir ckpt --checkpoint-every 60 --resume $fault
  rc=$?
  echo "[supervisor] $(date -u '+%F %T') trainer exited with status $rc"
  [ "$rc" -eq 0 ] && break
  fault=""
  sleep 5
done
"""


def resume_supervisor(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    (r.dir / "supervise.sh").write_text(SUPERVISOR.format(train=TRAIN, model=r.model))
    (r.dir / "supervise.sh").chmod(0o755)
    r.truth("operator starts the supervisor loop; first attempt raises at drafter step 130, checkpoints every 60 "
            "steps; later attempts resume from the newest checkpoint")
    op.run("FIRST_FAULT='--inject-error drafter:130' nohup ./supervise.sh > logs/supervisor.log 2>&1 &")
    r.wait_for("logs/supervisor.log", "starting attempt 2", 120)
    r.truth("the supervisor restarted the trainer (attempt 2)")
    r.wait_for("logs/supervisor.log", "exited with status 0", 120)
    r.truth("the resumed run stopped cleanly; the loop ended")
    op.run("ls ckpt; tail -n 3 logs/supervisor.log")


CRASH_LOOP = """#!/usr/bin/env bash
# restart the trainer forever
while true; do
  {train} --run-name looped --seconds 30 {model} $EXTRA
  echo "trainer died with $?, restarting in 4 s"
  sleep 4
done
"""


def crash_loop(r: Recording) -> None:
    r.smi_stream()
    r.ps_loop()
    op = Transcript(r.dir)
    (r.dir / "loop.sh").write_text(CRASH_LOOP.format(train=TRAIN, model=r.model))
    (r.dir / "loop.sh").chmod(0o755)
    bad = "--target-gpus 3 --drafter-gpus 3" if r.gpu else "--dtype bf17"
    r.truth(f"operator starts the restart loop with a bad flag ({bad}): each start dies at once")
    # setsid: the loop leads a process group of its own, which the operator then kills whole
    op.run(f"EXTRA='{bad}' setsid nohup ./loop.sh > logs/loop.log 2>&1 & echo $! > run/loop.pid")
    time.sleep(30)
    op.run("tail -n 6 logs/loop.log")
    r.truth("operator stops the loop (kills the loop's process group)")
    op.run("kill -- -$(cat run/loop.pid); sleep 1; ps aux | grep -c [l]oop.sh")
    r.truth("operator starts the trainer right, by hand")
    op.run(f"nohup {TRAIN} --run-name looped-fixed --seconds 20 {r.model} > logs/train_fixed.log 2>&1 &")
    r.wait_for("logs/train_fixed.log", "Training stopped", 300)
    r.truth("the fixed run trained and stopped")


def torchrun_crashloop(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    torchrun = _torchrun()
    r.truth("operator runs torchrun in the foreground (2 ranks, gloo on one GPU, --max-restarts 2); rank 1 raises "
            "at its drafter step 40 in every attempt, as a bad batch would")
    op.run(f"{torchrun} --nproc-per-node 2 --max-restarts 2 -m dflash_postmortem.replay.train --run-name ddp-loop "
           f"--seconds 600 {r.model} --pg-timeout 60 --inject-error drafter:40 --fault-rank 1 --fault-attempt -1 "
           "2>&1 | tee logs/torchrun.log; echo exit=${PIPESTATUS[0]}", timeout=900)
    r.truth("torchrun returned (gave up after its restarts)")
    op.run("nvidia-smi --query-compute-apps=pid,used_memory --format=csv")


def tmux_history(r: Recording) -> None:
    r.gpus_and_processes()
    # the terminal itself is not kept (the operator did not record it): only bash's history is
    t = InteractiveShell(r.dir, r.dir.parent / f"{r.name}.tty", dict(os.environ, COLUMNS=""),
                         history=r.dir / "logs" / "bash_history")
    try:
        r.truth("operator starts the run in a detached tmux session `train`, under nohup")
        t.run(f"tmux new-session -d -s train 'nohup {TRAIN} --run-name first --seconds 900 {r.model} "
              "> logs/first.log 2>&1'")
        r.wait_for("logs/first.log", "step 100", 300)
        r.truth("first run trains (step 100 seen)")
        time.sleep(10)
        t.run("nvidia-smi" if r.gpu else "uptime")
        r.truth("operator ends the session to restart the run: tmux kill-session -t train")
        t.run("tmux kill-session -t train")
        time.sleep(3)
        t.run("tmux ls")
        r.truth("operator relaunches in a new tmux session of the same name (the first run lives on: nohup ignores SIGHUP)")
        t.run(f"tmux new-session -d -s train 'nohup {TRAIN} --run-name second --seconds 100 {r.model} "
              "> logs/second.log 2>&1'")
        r.wait_for("logs/second.log", "step 50", 300)
        time.sleep(30)
        r.truth("operator looks at the GPU: two python processes")
        t.run("nvidia-smi --query-compute-apps=pid,used_memory --format=csv" if r.gpu else "uptime")
        # the trainer itself (nohup execs it), not the shell tmux ran it with
        first = subprocess.run(["pgrep", "-f", "^[^ ]*python[0-9.]* -m dflash_postmortem.replay.train --run-name first"],
                               capture_output=True, text=True).stdout.split()
        t.run("ps -eo pid,etime,args | grep [r]un-name")
        if first:
            r.truth(f"operator kills the first run by its PID {first[0]}")
            t.run(f"kill {first[0]}")
        r.wait_for("logs/second.log", "Training stopped", 400)
        r.truth("the second run trained to its end and stopped")
        t.run("tail -n 2 logs/second.log")
    finally:
        t.close()


# What the Hugging Face Trainer scripts share: sequences of random tokens (each seeded by its index)
# and a GPT-2 built from its config (random weights, no download), tiny where CPU is true.
HF_DATA = """SEQ = 64 if CPU else 1024


class Tokens(Dataset):
    def __init__(self, n=1 << 20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, 50257, (SEQ,), generator=g)
        return {"input_ids": ids, "labels": ids}


cfg = GPT2Config(vocab_size=50257, n_positions=SEQ, n_embd=64 if CPU else 768, n_layer=2 if CPU else 12,
                 n_head=2 if CPU else 12)
"""

HF_TRAIN = """import argparse, torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--max-steps", type=int, default=400)
p.add_argument("--oom-at-step", type=int, default=0)
p.add_argument("--resume", action="store_true")
p.add_argument("--cpu", action="store_true")
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--eval-size", type=int, default=0)
p.add_argument("--leak-mib", type=int, default=0)
a = p.parse_args()
CPU = a.cpu
""" + HF_DATA + """

class Spike(TrainerCallback):
    # a batch far longer than the rest: the allocator is asked for more than the GPU has
    def on_step_end(self, args, state, control, **kw):
        if a.oom_at_step and state.global_step == a.oom_at_step:
            torch.empty(1 << 40, dtype=torch.uint8, device="cuda" if torch.cuda.is_available() else "meta")
            if not torch.cuda.is_available():
                raise torch.OutOfMemoryError("CUDA out of memory (a dry run on the CPU)")


class Leak(TrainerCallback):
    # a step's tensors kept by mistake (a list of losses with their graphs would do the same)
    kept = []

    def on_step_end(self, args, state, control, **kw):
        if a.leak_mib:
            self.kept.append(torch.empty(a.leak_mib << 20, dtype=torch.uint8,
                                         device="cuda" if torch.cuda.is_available() else "cpu"))
            if not torch.cuda.is_available() and len(self.kept) * a.leak_mib > 64:
                raise torch.OutOfMemoryError("CUDA out of memory (a dry run on the CPU)")


model = GPT2LMHeadModel(cfg)
args = TrainingArguments(output_dir=a.out, max_steps=a.max_steps, per_device_train_batch_size=4 if a.cpu else 16,
                         logging_steps=10, save_steps=100, save_total_limit=3, report_to=["tensorboard"],
                         bf16=not a.cpu, use_cpu=a.cpu,
                         dataloader_num_workers=0, learning_rate=3e-4, warmup_steps=20, seed=0,
                         eval_strategy="steps" if a.eval_every else "no", eval_steps=a.eval_every or None,
                         per_device_eval_batch_size=4 if a.cpu else 32)
Trainer(model=model, args=args, train_dataset=Tokens(), eval_dataset=Tokens(a.eval_size) if a.eval_every else None,
        callbacks=[Spike(), Leak()]).train(resume_from_checkpoint=True if a.resume else None)
"""


def hf_oom_resume(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    (r.dir / "run" / "hf_train.py").write_text(HF_TRAIN)
    cpu = " --cpu" if not r.gpu else ""
    launch = f"{_accelerate()} launch --num_processes 1 --num_machines 1 --mixed_precision {'bf16' if r.gpu else 'no'} --dynamo_backend no"
    r.truth("operator starts a Hugging Face Trainer run under accelerate launch with nohup; a callback asks for "
            "1 TiB of GPU memory at step 250 (CUDA out of memory); checkpoints every 100 steps")
    op.run(f"nohup {launch} run/hf_train.py --out runs/gpt2 --oom-at-step 250{cpu} > logs/hf_train.log 2>&1 &")
    r.wait_for("logs/hf_train.log", "OutOfMemoryError", 900)
    r.truth("the run died of CUDA out of memory at step 250")
    time.sleep(15)
    op.run("tail -n 5 logs/hf_train.log")
    op.run("ls runs/gpt2")
    r.truth("operator relaunches the same command with --resume (resumes from checkpoint-200)")
    op.run(f"nohup {launch} run/hf_train.py --out runs/gpt2 --resume{cpu} > logs/hf_resume.log 2>&1 &")
    r.wait_for("logs/hf_resume.log", "train_runtime", 900)
    r.truth("the resumed run reached max_steps 400 and ended")
    time.sleep(5)
    op.run("ls runs/gpt2; tail -n 2 logs/hf_resume.log")

PL_TRAIN = """import argparse, torch, lightning as L
from lightning.pytorch.callbacks import TQDMProgressBar
from torch import nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--minutes", type=float, default=4.0)
p.add_argument("--cpu", action="store_true")
a = p.parse_args()
SEQ, WIDTH, LAYERS, VOCAB = (32, 32, 2, 512) if a.cpu else (1024, 1024, 8, 32000)


class Tokens(Dataset):
    def __init__(self, n=1 << 20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.randint(0, VOCAB, (SEQ + 1,), generator=torch.Generator().manual_seed(i))


class LM(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)
        layer = nn.TransformerEncoderLayer(WIDTH, 16 if not a.cpu else 2, 4 * WIDTH, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, LAYERS)
        self.head = nn.Linear(WIDTH, VOCAB)

    def training_step(self, batch, i):
        x, y = batch[:, :-1], batch[:, 1:]
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
        loss = nn.functional.cross_entropy(self.head(self.body(self.emb(x), mask=mask, is_causal=True)).flatten(0, 1),
                                           y.flatten())
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-4)


trainer = L.Trainer(accelerator="cpu" if a.cpu else "gpu", devices=1, precision="32" if a.cpu else "bf16-mixed",
                    max_time={"minutes": a.minutes}, max_epochs=-1, logger=False, enable_checkpointing=False,
                    # the tqdm bar, every 20 steps (Lightning picks rich's bar where rich is
                    # installed, which writes nothing to a file until the end)
                    callbacks=[TQDMProgressBar(refresh_rate=20)])
trainer.fit(LM(), DataLoader(Tokens(), batch_size=2 if a.cpu else 16, num_workers=2))
"""

# Another user's job: matrix products on the same GPU, for a while.
HOG_COMPUTE = """import sys, time, torch  # hog_compute
dev = "cuda" if torch.cuda.is_available() else "cpu"
n = 8192 if dev == "cuda" else 256
x = torch.randn(n, n, device=dev, dtype=torch.bfloat16 if dev == "cuda" else torch.float32)
print("computing", flush=True)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    y = x @ x
    if dev == "cuda":
        torch.cuda.synchronize()
print("done", flush=True)
"""


def _accelerate() -> str:
    beside = Path(sys.executable).with_name("accelerate")
    return str(beside) if beside.exists() else shutil.which("accelerate") or f"{sys.executable} -m accelerate.commands.accelerate_cli"


def accelerate_gpus(r: Recording) -> None:
    r.smi_stream()
    r.ps_loop()
    op = Transcript(r.dir)
    (r.dir / "run" / "hf_train.py").write_text(HF_TRAIN)
    cpu = " --cpu" if not r.gpu else ""
    r.truth("operator copies a two-GPU command onto a one-GPU machine: accelerate launch --multi_gpu "
            "--num_processes 2, in the foreground; expected: it fails in start-up")
    op.run(f"{_accelerate()} launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision "
           f"{'bf16' if r.gpu else 'no'} --dynamo_backend no run/hf_train.py --out runs/gpt2 --max-steps 200{cpu} "
           "> logs/hf_train.log 2>&1; echo exit=$?", timeout=300)
    r.truth("the two-process launch returned")
    time.sleep(5)
    op.run("tail -n 4 logs/hf_train.log; nvidia-smi -L")
    r.truth("operator relaunches with --num_processes 1 (no --multi_gpu), max_steps 200")
    op.run(f"{_accelerate()} launch --num_processes 1 --num_machines 1 --mixed_precision {'bf16' if r.gpu else 'no'} "
           f"--dynamo_backend no run/hf_train.py --out runs/gpt2 --max-steps 200{cpu} > logs/hf_train2.log 2>&1; "
           "echo exit=$?", timeout=400)
    r.truth("the one-process run returned (max_steps 200)")
    time.sleep(3)


def leak_oom(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    op = Transcript(r.dir)
    (r.dir / "run" / "hf_train.py").write_text(HF_TRAIN)
    cpu = " --cpu" if not r.gpu else ""
    leak = 256 if r.gpu else 4
    r.truth(f"by hand, in the foreground through tee: a Hugging Face Trainer run (python) that keeps {leak} MiB of "
            "GPU memory every step by mistake; its memory climbs until CUDA out of memory; checkpoints every 100 steps, "
            "max_steps 1000")
    op.run(f"{shlex.quote(sys.executable)} run/hf_train.py --out runs/gpt2 --max-steps 1000 --leak-mib {leak}{cpu} "
           "2>&1 | tee logs/train.log", timeout=540)
    r.truth("the leaking run returned")
    time.sleep(5)
    op.run("grep -c OutOfMemoryError logs/train.log; ls runs/gpt2")
    r.truth("operator resumes from the last checkpoint without the leak, through tee to a second log")
    op.run(f"{shlex.quote(sys.executable)} run/hf_train.py --out runs/gpt2 --max-steps 1000 --resume{cpu} "
           "2>&1 | tee logs/train2.log", timeout=540)
    r.truth("the resumed run returned (max_steps 1000)")
    time.sleep(3)


def worker_killed(r: Recording) -> None:
    r.gpus_and_processes()  # its `ps` loop lists the workers too: python, children of the trainer
    op = Transcript(r.dir)
    (r.dir / "run" / "pl_train.py").write_text(PL_TRAIN)
    cpu = " --cpu" if not r.gpu else ""
    r.truth("operator starts a PyTorch Lightning run with nohup (two DataLoader workers), its PID in run/pl.pid")
    op.run(f"nohup {shlex.quote(sys.executable)} run/pl_train.py --minutes 4{cpu} > logs/pl_train.log 2>&1 & "
           "echo $! > run/pl.pid")
    r.wait_for("logs/pl_train.log", "it/s", 180)
    time.sleep(40)
    main = (r.dir / "run" / "pl.pid").read_text().split()[0]
    # its python children (the DataLoader workers): the first recording killed the first child of
    # any kind (not a worker: h200-1gpu-child-killed)
    kids = subprocess.run(["pgrep", "-P", main, "-f", "python"], capture_output=True, text=True, check=False).stdout.split()
    r.truth(f"outside the operator's view, SIGKILL to DataLoader worker {kids[0] if kids else '?'} of PID {main} "
            f"(its workers: {' '.join(kids)}), as the host's OOM killer would")
    if kids:
        subprocess.run(["kill", "-9", kids[0]], check=False)
    r.wait_for("logs/pl_train.log", "exited unexpectedly", 120)
    time.sleep(15)
    r.truth("operator looks at the log and relaunches the same command, 45 s")
    op.run("tail -n 3 logs/pl_train.log")
    op.run(f"nohup {shlex.quote(sys.executable)} run/pl_train.py --minutes 0.75{cpu} > logs/pl_train2.log 2>&1 & "
           "echo $! > run/pl.pid")
    r.wait_for("logs/pl_train2.log", "Time limit reached", 240)
    r.truth("the relaunch reached its max_time and stopped")
    time.sleep(5)


def pl_contention(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    (r.dir / "run" / "pl_train.py").write_text(PL_TRAIN)
    cpu = " --cpu" if not r.gpu else ""
    r.truth("operator starts a PyTorch Lightning run with nohup (max_time 4 min; its log is the tqdm bar)")
    op.run(f"nohup {shlex.quote(sys.executable)} run/pl_train.py --minutes 4{cpu} > logs/pl_train.log 2>&1 &")
    r.wait_for("logs/pl_train.log", "it/s", 180)
    r.truth("the bar shows it/s: training")
    time.sleep(60)
    r.other_users_job(op, 70, look_after=20)
    r.wait_for("logs/pl_train.log", "Time limit reached", 240)
    time.sleep(5)
    r.truth("the Lightning run reached its max_time and stopped")
    op.run("tail -c 300 logs/pl_train.log")


def hf_long_eval(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    (r.dir / "run" / "hf_train.py").write_text(HF_TRAIN)
    cpu = " --cpu" if not r.gpu else ""
    size = 6000 if not r.gpu else 100000
    r.truth(f"no incident: a Hugging Face Trainer run (python, nohup) that evaluates every 100 steps on {size} "
            "sequences (each evaluation long against its steps), TensorBoard logging; max_steps 300")
    op.run(f"nohup {shlex.quote(sys.executable)} run/hf_train.py --out runs/gpt2 --max-steps 300 --eval-every 100 "
           f"--eval-size {size}{cpu} > logs/hf_train.log 2>&1 &")
    if r.wait_for("logs/hf_train.log", "train_runtime", 540):
        r.truth("the run reached max_steps 300 and ended")
    else:
        r.truth("the run was still going (evaluating) when the wait ran out; the captures stop, then it is killed")
    time.sleep(3)
    op.run("tail -c 400 logs/hf_train.log")


def alternating(r: Recording) -> None:
    r.smi_stream()
    r.ps_loop()
    op = Transcript(r.dir)
    r.truth("a healthy run with two drafter threads, each writing its own step lines and rate")
    op.run(f"nohup {TRAIN} --run-name two-threads --seconds 30 {r.model} --drafter-threads 2 --log-per-thread "
           "> logs/train.log 2>&1 &")
    r.wait_for("logs/train.log", "Training stopped", 400)
    r.truth("the run stopped cleanly")


def clean_relaunch(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    op = Transcript(r.dir)
    r.truth("by hand in a shell: a run that stops by itself after 25 s")
    op.run(f"{TRAIN} --run-name steady --seconds 25 {r.model} > logs/steady.log 2>&1; echo exit=$?", timeout=600)
    r.truth("first run ended; the operator relaunches it the same way")
    time.sleep(8)
    op.run(f"{TRAIN} --run-name steady --seconds 25 {r.model} > logs/steady2.log 2>&1; echo exit=$?", timeout=600)
    r.truth("second run ended")


def watched_relaunch(r: Recording) -> None:
    subprocess.run(["pkill", "-f", "dflash_postmortem.cli watch"], check=False)  # one left by an earlier try
    for old in (r.dir.parent / f"{r.name}.watch.out", r.dir.parent / "exec.out"):
        old.unlink(missing_ok=True)
    r.smi_apps()
    r.ps_loop()
    # The watcher's terminal goes beside the folder, not into it: it is not evidence of the run.
    r.background(f"exec {shlex.quote(sys.executable)} -m dflash_postmortem.cli watch . --poll 1 --width 220 "
                 "--sample-gpus --metrics-port 9464 --exec 'echo \"$DFLASH_TIME $DFLASH_KIND\" >> ../exec.out'",
                 f"../{r.name}.watch.out")
    time.sleep(5)
    op = Transcript(r.dir)
    r.truth("operator: a good run, 30 s of training")
    op.run(f"nohup {TRAIN} --run-name steady --seconds 30 {r.model} > logs/train.log 2>&1 &")
    r.wait_for("logs/train.log", "Training stopped", 300)
    r.truth("good run stopped; relaunch with a bad flag (a GPU that does not exist)")
    bad = "--target-gpus 3 --drafter-gpus 3" if r.gpu else "--dtype bf17"
    op.run(f"nohup {TRAIN} --run-name steady --seconds 30 {r.model} {bad} > logs/train2.log 2>&1 &")
    r.wait_for("logs/train2.log", "Error", 120)
    r.truth("relaunch died; relaunch with a target too large to finish loading (materialized on the host)")
    big = "--materialize host --hidden 8192 --layers 80 --heads 64" if r.gpu else "--materialize host --hidden 1024 --layers 64"
    op.run(f"nohup {TRAIN} --run-name steady --seconds 30 {r.model} {big} > logs/train3.log 2>&1 &")
    time.sleep(60)
    op.run("tail -n 2 logs/train3.log; nvidia-smi --query-gpu=memory.used --format=csv" if r.gpu else "tail -n 2 logs/train3.log")
    r.truth("operator kills the stuck start")
    op.run("pkill -TERM -f 'train3[.]log' ; pkill -TERM -f '[-]-hidden 8192' ; pkill -TERM -f '[-]-layers 64'; sleep 3")
    r.truth("relaunch without the fast linear attention; its drafter thread hangs at step 150")
    op.run(f"nohup {TRAIN} --run-name slow --seconds 240 {r.model} --fast-linear-attn 0 --inject-hang drafter:150 "
           "> logs/train4.log 2>&1 &")
    # the hang comes before step 150 is logged: its last line is step 145
    r.wait_for("logs/train4.log", "step 145", 240)
    time.sleep(90)
    r.truth("operator kills the hung run")
    op.run("pkill -TERM -f 'run-name [s]low'; sleep 3")
    time.sleep(10)
    # the watch ends on SIGINT as after Ctrl-C; finish() stops the rest
    subprocess.run(["pkill", "-INT", "-f", "dflash_postmortem.cli watch"], check=False)
    time.sleep(3)
    r.truth("watch stopped (SIGINT)")


def sigint_ignored(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    op = Transcript(r.dir)
    r.truth("operator: a run in the background with nohup, its PID not printed")
    op.run(f"nohup {TRAIN} --run-name bg --seconds 600 {r.model} > logs/train.log 2>&1 &")
    r.wait_for("logs/train.log", "step 20 ", 300)
    # the operator finds the PID as people do: the GPU's process list
    listed, _ = op.run("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv" if r.gpu
                       else "pgrep -f 'run-name [b]g' | head -1")
    pids = re.findall(r"^\s*(\d+)", listed, re.M)
    if not pids:
        r.truth(f"no PID found in {listed!r}")
        return
    pid = pids[0]
    r.truth(f"operator sends SIGINT to PID {pid} (a background job of a non-interactive shell ignores it)")
    op.run(f"kill -INT {pid}")
    time.sleep(20)
    op.run("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv" if r.gpu else f"ps -p {pid}")
    r.truth(f"still running: operator sends SIGTERM to PID {pid}")
    op.run(f"kill {pid}")
    time.sleep(5)
    op.run("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv" if r.gpu else f"ps -p {pid}")
    r.truth("operator relaunches the same run for 25 s of training")
    op.run(f"nohup {TRAIN} --run-name bg --seconds 25 {r.model} > logs/train2.log 2>&1 &")
    r.wait_for("logs/train2.log", "Training stopped", 300)
    r.truth("relaunch stopped by itself")
    time.sleep(5)


def hangup(r: Recording) -> None:
    r.gpus_and_processes()
    env = dict(os.environ, COLUMNS="")
    t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", env)
    r.truth("operator at a script-recorded terminal (as over SSH) starts the trainer with a plain `&`, no nohup; "
            "checkpoints every 100 steps")
    t.run("date")
    t.run(f"{TRAIN} --run-name remote --seconds 900 {r.model} --checkpoint-dir ckpt --checkpoint-every 100 "
          "> logs/train.log 2>&1 &")
    r.wait_for("logs/train.log", "step 300 ", 300)
    t.run("date; tail -n 1 logs/train.log")
    r.truth("the connection drops: the terminal hangs up (bash sends SIGHUP to its jobs)")
    t.hang_up()
    r.truth("terminal gone")
    time.sleep(25)
    t = InteractiveShell(r.dir, r.dir / "logs" / "terminal2.typescript", env)
    try:
        r.truth("operator logs in again (a second script-recorded terminal)")
        t.run("date")
        t.run("tail -n 2 logs/train.log")
        t.run("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv" if r.gpu else "uptime")
        r.truth("operator resumes from the newest checkpoint, this time with nohup, 30 s of training")
        t.run(f"nohup {TRAIN} --run-name remote --seconds 30 {r.model} --checkpoint-dir ckpt --checkpoint-every 100 "
              "--resume > logs/train2.log 2>&1 &")
        r.wait_for("logs/train2.log", "Training stopped", 300)
        r.truth("the resumed run stopped by itself")
        t.run("date; tail -n 1 logs/train2.log")
    finally:
        t.close()


def timeout_limit(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    op = Transcript(r.dir)
    r.truth("operator, by hand: the run under `timeout 50` (SIGTERM at 50 s), checkpoints every 100 steps")
    op.run(f"timeout 50 {TRAIN} --run-name budget --seconds 600 {r.model} --checkpoint-dir ckpt "
           "--checkpoint-every 100 > logs/train.log 2>&1; echo exit=$?", timeout=300)
    r.truth("timeout's SIGTERM ended the run; the operator looks at the log's end")
    op.run("tail -n 2 logs/train.log")
    r.truth("operator resumes under `timeout 90` with 25 s of training")
    op.run(f"timeout 90 {TRAIN} --run-name budget --seconds 25 {r.model} --checkpoint-dir ckpt "
           "--checkpoint-every 100 --resume > logs/train2.log 2>&1; echo exit=$?", timeout=300)
    r.truth("the resumed run ended")
    time.sleep(5)


def ctrl_z(r: Recording) -> None:
    r.gpus_and_processes()
    t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", dict(os.environ, COLUMNS=""))
    try:
        r.truth("operator at a script-recorded terminal runs the trainer in the foreground, through tee")
        t.run("date")
        t.start(f"{TRAIN} --run-name fg --seconds 90 {r.model} 2>&1 | tee logs/train.log")
        r.wait_for("logs/train.log", "step 150 ", 300)
        r.truth("operator presses Ctrl-Z by mistake: the job (trainer and tee) is stopped")
        t.suspend()
        time.sleep(60)
        r.truth("operator comes back: `date`, `jobs -l`, then `fg`")
        t.run("date")
        t.run("jobs -l")
        t.start("fg")
        r.wait_for("logs/train.log", "Training stopped", 400)
        t.wait_prompt(120)
        r.truth("the run stopped by itself")
        t.run("date")
    finally:
        t.close()


def vanished(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    r.truth("operator starts the trainer under nohup with a PID file, checkpoints every 100 steps")
    op.run(f"nohup {TRAIN} --run-name quiet --seconds 600 {r.model} --checkpoint-dir ckpt --checkpoint-every 100 "
           "--pid-file run/quiet.pid > logs/train.log 2>&1 &")
    r.wait_for("logs/train.log", "step 250 ", 300)
    pid = (r.dir / "run" / "quiet.pid").read_text().split()[0]
    r.truth(f"outside the operator's view (no transcript, no log of it), SIGKILL to PID {pid}")
    subprocess.run(["kill", "-9", pid], check=False)
    time.sleep(40)
    r.truth("operator checks the run")
    op.run("tail -n 2 logs/train.log; nvidia-smi --query-compute-apps=pid,used_memory --format=csv" if r.gpu
           else "tail -n 2 logs/train.log")
    r.truth("operator resumes from the newest checkpoint under nohup, 30 s of training")
    op.run(f"nohup {TRAIN} --run-name quiet --seconds 30 {r.model} --checkpoint-dir ckpt --checkpoint-every 100 "
           "--resume > logs/train2.log 2>&1 &")
    r.wait_for("logs/train2.log", "Training stopped", 300)
    r.truth("the resumed run stopped by itself")
    time.sleep(5)


def nccl_watchdog(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    torchrun = _torchrun()
    job = (f"{torchrun} --nproc-per-node 2 --max-restarts 0 -m dflash_postmortem.replay.train --run-name nccl-ddp "
           f"{r.model} --backend {'nccl' if r.gpu else 'gloo'} --pg-timeout 60")
    r.truth("operator runs torchrun in the foreground of a terminal, output through `tee -a logs/train.log`: 2 ranks, "
            "one GPU each (NCCL), --max-restarts 0, process-group timeout 60 s; rank 1 is set to stop at its "
            "drafter step 150")
    first = threading.Thread(target=op.run, args=(f"{job} --seconds 600 --inject-hang drafter:150 --fault-rank 1 "
                                                  "2>&1 | tee -a logs/train.log",), kwargs=dict(timeout=900))
    first.start()
    r.wait_for("logs/train.log", "step 145 ", 240)
    r.truth("step 145 logged: rank 1 stops at its step 150, rank 0 waits in the NCCL all-reduce")
    first.join()
    r.truth("torchrun returned to the prompt")
    op.run("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv" if r.gpu else "uptime")
    op.run("tail -n 30 logs/train.log | grep -m 3 -i -E 'watchdog|timeout|signal'")
    r.truth("operator relaunches the same job without the fault, for 40 s of training, the same way")
    op.run(f"{job} --seconds 40 2>&1 | tee -a logs/train.log", timeout=600)
    r.truth("the relaunch returned to the prompt (trained 40 s, stopped by itself)")
    time.sleep(5)


def nccl_contention(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    torchrun = _torchrun()
    r.truth("operator starts torchrun under nohup: 2 ranks, one GPU each (NCCL), 150 s of training")
    op.run(f"nohup {torchrun} --nproc-per-node 2 --max-restarts 0 -m dflash_postmortem.replay.train "
           f"--run-name nccl-shared --seconds 150 {r.model} --backend {'nccl' if r.gpu else 'gloo'} "
           "> logs/train.log 2>&1 &")
    r.wait_for("logs/train.log", "step 100 ", 240)
    r.truth("training (step 100 logged)")
    time.sleep(20)
    r.other_users_job(op, 60, look_after=15, gpu=1)
    r.wait_for("logs/train.log", "Training stopped", 240)
    time.sleep(8)
    r.truth("the run stopped by itself")
    op.run("tail -n 3 logs/train.log")


DISK_FILLER = """import sys, time  # a data cache another job writes
size = int(sys.argv[2])
with open(sys.argv[1], "wb") as f:
    while size > 0:
        n = min(size, 1 << 20)
        f.write(b"\\0" * n)
        size -= n
print("cache written", flush=True)
"""


def disk_full(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    ckpt = r.dir / "ckpt"
    ckpt.mkdir()
    size = "6g" if r.gpu else "64m"
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(ckpt)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode:
        r.truth(f"cannot mount a small volume for the checkpoints ({mounted.stderr.strip()}): scenario skipped")
        return
    r.truth(f"the checkpoint folder is a volume of its own, {size} (a tmpfs the driver mounted, as a small scratch disk)")
    try:
        r.truth("operator starts the trainer under nohup, checkpoints every 100 steps into ckpt/")
        op.run(f"nohup {TRAIN} --run-name scratch --seconds 600 {r.model} --checkpoint-dir ckpt --checkpoint-every 100 "
               "> logs/train.log 2>&1 &")
        r.wait_for("logs/train.log", "Saved checkpoint at step 100", 300)
        first = (ckpt / "step_100.pt").stat().st_size
        free = shutil.disk_usage(ckpt).free
        fill = max(0, free - first // 2)
        r.truth(f"step_100.pt is {first} bytes; another job (no transcript) writes a {fill} byte data cache to the "
                f"same volume, leaving about half a checkpoint free")
        (r.dir / "run" / "fill_cache.py").write_text(DISK_FILLER)
        (ckpt / "cache").mkdir()
        cache = r.background(f"exec {shlex.quote(sys.executable)} run/fill_cache.py ckpt/cache/shard-00.bin {fill}",
                             "logs/cache.out")
        cache.wait(timeout=120)
        r.truth("the cache is written; the step-200 checkpoint cannot fit")
        r.wait_for("logs/train.log", "Traceback", 300)
        time.sleep(10)
        r.truth("operator looks: the log's end, the volume, the folder")
        op.run("tail -n 6 logs/train.log")
        op.run("df -h ckpt; ls -la ckpt ckpt/cache")
        r.truth("operator removes the cache and the cut step-200 file, then resumes with 30 s of training")
        op.run("rm -r ckpt/cache ckpt/step_200.pt; df -h ckpt")
        op.run(f"nohup {TRAIN} --run-name scratch --seconds 30 {r.model} --checkpoint-dir ckpt --checkpoint-every 100 "
               "--resume > logs/train2.log 2>&1 &")
        r.wait_for("logs/train2.log", "Training stopped", 300)
        r.truth("the resumed run stopped by itself")
        time.sleep(5)
    finally:
        r.stop_ours("dflash_postmortem.replay.train")
        time.sleep(2)
        # the checkpoints are not evidence; the folder stays, as an empty mount point
        subprocess.run(["umount", "-l", str(ckpt)], check=False)


def lingering(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    r.truth("operator starts the first run of a sweep under nohup, 40 s of training; it is set never to exit "
            "after its last line (--inject-hang exit:1: as a process waiting on a worker that never ends)")
    op.run(f"nohup {TRAIN} --run-name sweep-a --seconds 40 {r.model} --inject-hang exit:1 "
           "--pid-file run/sweep-a.pid > logs/sweep-a.log 2>&1 &")
    r.wait_for("logs/sweep-a.log", "Training stopped", 300)
    r.truth("sweep-a logged `Training stopped`; its process lives on, holding its GPU memory")
    time.sleep(20)
    r.truth("operator sees the log's last line and starts the next run of the sweep the same way")
    op.run("tail -n 1 logs/sweep-a.log")
    op.run(f"nohup {TRAIN} --run-name sweep-b --seconds 40 {r.model} --pid-file run/sweep-b.pid "
           "> logs/sweep-b.log 2>&1 &")
    r.wait_for("logs/sweep-b.log", "Training stopped", 300)
    r.truth("sweep-b stopped by itself and exited")
    time.sleep(15)
    r.truth("operator looks at the GPU, finds sweep-a's process still there and kills it")
    op.run("nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv" if r.gpu else "uptime")
    op.run("ps -o pid,etime,args -p $(cat run/sweep-a.pid)")
    op.run("kill $(cat run/sweep-a.pid); sleep 3; ps -p $(cat run/sweep-a.pid) || echo gone")
    r.truth("sweep-a's process is gone")
    time.sleep(8)


def diverged(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    ckpt = "--checkpoint-dir ckpt --checkpoint-every 100"
    r.truth("operator trains a first stretch under nohup, 30 s, checkpoints every 100 steps")
    op.run(f"nohup {TRAIN} --run-name ft --seconds 30 {r.model} {ckpt} > logs/train.log 2>&1 &")
    r.wait_for("logs/train.log", "Training stopped", 300)
    r.truth("operator resumes it with a typo in the learning rate: --lr 3e2 (meant 3e-4), PID file")
    op.run(f"nohup {TRAIN} --run-name ft --seconds 600 {r.model} {ckpt} --resume --lr 3e2 --pid-file run/ft.pid "
           "> logs/train2.log 2>&1 &")
    r.wait_for("logs/train2.log", "loss nan", 300)
    r.truth("the loss is nan; the run trains on")
    time.sleep(60)
    r.truth("operator looks at the log, sees nan, kills the run")
    op.run("tail -n 3 logs/train2.log")
    op.run("kill $(cat run/ft.pid)")
    time.sleep(8)
    r.truth("operator resumes again with --lr 3e-4 from the newest checkpoint, which the nan run wrote")
    op.run(f"nohup {TRAIN} --run-name ft --seconds 600 {r.model} {ckpt} --resume --lr 3e-4 --pid-file run/ft.pid "
           "> logs/train3.log 2>&1 &")
    r.wait_for("logs/train3.log", "loss nan", 300)
    time.sleep(20)
    good = re.search(r"Resumed from checkpoint ckpt/step_(\d+)\.pt", (r.dir / "logs" / "train2.log").read_text())
    r.truth(f"operator sees nan again, kills it, removes the checkpoints the nan run wrote (after step "
            f"{good.group(1) if good else '?'}) and resumes from the last good one, 30 s")
    op.run("tail -n 2 logs/train3.log; kill $(cat run/ft.pid)")
    time.sleep(8)
    if good:
        newer = sorted(f.name for f in (r.dir / "ckpt").glob("step_*.pt") if int(f.stem[5:]) > int(good.group(1)))
        op.run("ls ckpt | tail -n 3; rm " + " ".join(f"ckpt/{n}" for n in newer))
    op.run(f"nohup {TRAIN} --run-name ft --seconds 30 {r.model} {ckpt} --resume --lr 3e-4 > logs/train4.log 2>&1 &")
    r.wait_for("logs/train4.log", "Training stopped", 300)
    r.truth("the last run stopped by itself")
    time.sleep(5)


# A plain PyTorch script as people write them: a tqdm bar over a fixed number of steps, a dated
# line every 50 steps, and the `EarlyStopping` class of the popular `pytorchtools` snippet (its
# `EarlyStopping counter: N out of M` lines), evaluated every 100 steps. The data (2048 noisy samples
# of a random teacher) is small enough that the MLP overfits: the validation loss turns up after a
# few hundred steps and the run stops long before the bar's total.
TRAIN_ES = r'''"""Fit a small MLP to a synthetic regression task (a fixed random teacher plus noise, 2048
training samples), with early stopping on the validation loss."""
import argparse
import datetime as dt

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--steps", type=int, default=3000)
p.add_argument("--batch", type=int, default=1048576)
p.add_argument("--lr", type=float, default=1.5e-4)
p.add_argument("--patience", type=int, default=5)
p.add_argument("--eval-every", type=int, default=100)
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()


class EarlyStopping:
    """Early stops the training if validation loss doesn't improve after a given patience."""

    def __init__(self, patience=7, verbose=False, delta=0, path="checkpoint.pt", trace_func=print):
        self.patience = patience
        self.verbose = verbose
        self.counter = 0
        self.best_score = None
        self.early_stop = False
        self.val_loss_min = np.inf
        self.delta = delta
        self.path = path
        self.trace_func = trace_func

    def __call__(self, val_loss, model):
        score = -val_loss
        if self.best_score is None:
            self.best_score = score
            self.save_checkpoint(val_loss, model)
        elif score < self.best_score + self.delta:
            self.counter += 1
            self.trace_func(f"EarlyStopping counter: {self.counter} out of {self.patience}")
            if self.counter >= self.patience:
                self.early_stop = True
        else:
            self.best_score = score
            self.save_checkpoint(val_loss, model)
            self.counter = 0

    def save_checkpoint(self, val_loss, model):
        """Saves model when validation loss decreases."""
        if self.verbose:
            self.trace_func(f"Validation loss decreased ({self.val_loss_min:.6f} --> {val_loss:.6f}).  Saving model ...")
        torch.save(model.state_dict(), self.path)
        self.val_loss_min = val_loss


def now():
    return dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")


torch.manual_seed(a.seed)
dev = torch.device(a.device)

# synthetic data: y = teacher(x) + noise, 2048 samples to train on, 4096 to validate on
DIM, N_TRAIN, N_VAL, NOISE = 8, 2048, 4096, 0.5
g = torch.Generator().manual_seed(1234)
w1, w2 = torch.randn(DIM, 64, generator=g) / DIM ** 0.5, torch.randn(64, 1, generator=g) / 2


def teacher(x):
    return torch.tanh(x @ w1) @ w2


x_train = torch.randn(N_TRAIN, DIM, generator=g)
y_train = teacher(x_train) + NOISE * torch.randn(N_TRAIN, 1, generator=g)
x_val = torch.randn(N_VAL, DIM, generator=g)
y_val = teacher(x_val) + NOISE * torch.randn(N_VAL, 1, generator=g)
x_train, y_train, x_val, y_val = (t.to(dev) for t in (x_train, y_train, x_val, y_val))

model = nn.Sequential(nn.Linear(DIM, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                      nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=a.lr)
loss_fn = nn.MSELoss()
early_stopping = EarlyStopping(patience=a.patience, verbose=True)

for step in tqdm(range(1, a.steps + 1), total=a.steps):
    model.train()
    idx = torch.randint(0, N_TRAIN, (a.batch,), device=dev)
    loss = loss_fn(model(x_train[idx]), y_train[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"{now()} step {step} loss {loss.item():.4f} lr {a.lr:g}", flush=True)
    if step % a.eval_every == 0:
        model.eval()
        with torch.no_grad():
            val_loss = loss_fn(model(x_val), y_val).item()
        early_stopping(val_loss, model)
        if early_stopping.early_stop:
            print("Early stopping", flush=True)
            break

# load the last checkpoint with the best model
model.load_state_dict(torch.load("checkpoint.pt"))
torch.save(model.state_dict(), "model_final.pt")
'''


def _python() -> str:
    """`python` where the one on PATH is this interpreter's (as a venv's bin on PATH has it), else
    this interpreter's path."""
    found = shutil.which("python")
    return "python" if found and Path(found).parent == Path(sys.executable).parent else shlex.quote(sys.executable)


def _job_pid(shown: str) -> str:
    """The PID bash prints for a job started with `&` (`[1] 1234`)."""
    m = re.search(r"\[\d+\] (\d+)", shown)
    return m.group(1) if m else "?"


def _wait_gone(pid: str, timeout: float) -> bool:
    """Wait until `pid` has exited and been reaped (the operator's bash reaps its jobs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fields = _proc_stat(pid)
        if not fields:
            return True
        if fields[0] == "Z":
            time.sleep(0.2)
            continue
        time.sleep(0.5)
    return False


STEP_LINE, COUNTER_LINE, JOB_DONE = r"step (\d+) loss", r"EarlyStopping counter: \d+ out of \d+", r"\[1\]\+ +(Done|Exit \d+)"


def _last(pattern: str, text: str) -> str:
    found = re.findall(pattern, text)
    return found[-1] if found else "?"


def early_stop(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train_es.py").write_text(TRAIN_ES)
    py = _python()
    # the dry run: a batch the CPU gets through, and one too large to allocate at all (not one that
    # would fill this machine's memory)
    dev, batch1, huge, batch3 = ("", None, 33554432, 2097152) if r.gpu else (" --device cpu", 4096, 10**12, 8192)
    b1 = f" --batch {batch1}" if batch1 else ""
    t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", dict(os.environ, COLUMNS=""))
    pids: list[str] = []

    def trains_to_its_stop(n: int, cmd: str, log: str) -> None:
        """Run `n` typed, then waited for: its step 50, its end, and what its log ends with."""
        r.truth(f"run {n}: {cmd}")
        pid = _job_pid(t.run(cmd))
        pids.append(pid)
        r.truth(f"run {n} started, PID {pid} (bash's [1] line)")
        r.wait_for(f"logs/{log}", "step 50 ", 300)
        r.truth(f"run {n} logged step 50")
        gone = _wait_gone(pid, 600)
        text = (r.dir / "logs" / log).read_text(errors="replace")
        r.truth(f"run {n} (PID {pid}) {'exited' if gone else 'still running after 600 s'}; last step line "
                f"{_last(STEP_LINE, text)}, 'Early stopping' in the log: {'Early stopping' in text}, "
                f"last counter line: {_last(COUNTER_LINE, text)!r}")

    try:
        r.truth("operator at a script-recorded terminal; train_es.py (plain PyTorch, tqdm bar over 3000 steps, "
                "EarlyStopping every 100 steps) is in the folder")
        t.run("date")
        trains_to_its_stop(1, f"nohup {py} train_es.py --patience 3{b1}{dev} > logs/train.log 2>&1 &", "train.log")
        time.sleep(8)
        r.truth("operator presses Enter, then `date` and `jobs`")
        shown = t.run("")
        r.truth(f"bash's job notification: {_last(JOB_DONE, shown)!r}")
        t.run("date")
        t.run("jobs")
        t.run("tail -n 3 logs/train.log")
        time.sleep(5)

        cmd2 = f"nohup {py} train_es.py --patience 10 --batch {huge}{dev} > logs/train2.log 2>&1 &"
        r.truth(f"run 2 (batch {huge}, patience 10): {cmd2}")
        pid = _job_pid(t.run(cmd2))
        pids.append(pid)
        r.truth(f"run 2 started, PID {pid}")
        gone = _wait_gone(pid, 300)
        log = (r.dir / "logs" / "train2.log").read_text(errors="replace")
        r.truth(f"run 2 (PID {pid}) {'exited' if gone else 'still running after 300 s'}; last line of its log: "
                f"{log.strip().splitlines()[-1] if log.strip() else '(empty)'!r}")
        time.sleep(6)
        r.truth("operator presses Enter, then `date`, `tail -n 5 logs/train2.log`, `nvidia-smi`")
        shown = t.run("")
        r.truth(f"bash's job notification: {_last(JOB_DONE, shown)!r}")
        t.run("date")
        t.run("tail -n 5 logs/train2.log")
        t.run("nvidia-smi" if r.gpu else "uptime")
        time.sleep(10)

        trains_to_its_stop(3, f"nohup {py} train_es.py --patience 10 --batch {batch3}{dev} > logs/train3.log 2>&1 &",
                           "train3.log")
        time.sleep(6)
        r.truth("operator runs `date` and `jobs`")
        shown = t.run("date")
        r.truth(f"bash's job notification: {_last(JOB_DONE, shown)!r}")
        t.run("jobs")
    finally:
        r.close_shell(t, pids, "*.pt")


# An operator's Makefile as launcher: each target runs the trainer in the foreground into a log
# dated by make (`date`, the machine's local time), so a relaunch never overwrites the last log. The
# PID file's default is a folder on the operator's other machines (a scratch disk) that this one
# does not have.
MAKEFILE = """# drafter training on one GPU: `make train`; `make resume` goes on from the newest checkpoint
PYTHON  ?= {python}
RUN     ?= drafter
STEPS   ?= 600
PIDFILE ?= /scratch/dflash/$(RUN).pid
STAMP   := $(shell date +%Y%m%d-%H%M%S)
MODEL    = {model}
TRAIN    = $(PYTHON) -m dflash_postmortem.replay.train --run-name $(RUN) --max-steps $(STEPS) --seconds 3600 \\
           $(MODEL) --checkpoint-dir ckpt --checkpoint-every 100 --pid-file $(PIDFILE)

.PHONY: train resume

train:
\t$(TRAIN) > logs/train-$(STAMP).log 2>&1

resume:
\t$(TRAIN) --resume > logs/resume-$(STAMP).log 2>&1
"""

MAKE_ERROR, SAVED_LINE, RESUMED_LINE = (r"make: \*\*\*[^\r\n]*", r"Saved checkpoint at step (\d+)",
                                       r"Resumed from checkpoint \S+ at step \d+")


def _program(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return "?"


def _newest(folder: Path, pattern: str, after: set[str]) -> Path | None:
    """The newest file matching `pattern` in `folder` that was not there before (`after`)."""
    found = sorted((f for f in folder.glob(pattern) if f.name not in after), key=lambda f: f.stat().st_mtime)
    return found[-1] if found else None


def make_launcher(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "Makefile").write_text(MAKEFILE.format(python=_python(), model=r.model))
    logs = r.dir / "logs"
    kill_at = 350
    t = InteractiveShell(r.dir, logs / "terminal.typescript", dict(os.environ, COLUMNS=""))

    def pids_of(target: str, timeout: float) -> str:
        """The processes of `make <target>...`, once the trainer runs: make's PID, then each child's
        PID and program, down to the last."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            chain = subprocess.run(["pgrep", "-f", f"^make {target}"], capture_output=True, text=True).stdout.split()[:1]
            while chain:
                kids = subprocess.run(["pgrep", "-P", chain[-1]], capture_output=True, text=True).stdout.split()
                if not kids:
                    break
                chain.append(kids[0])
            if len(chain) > 1 and "python" in _program(chain[-1]):
                return ", ".join(f"PID {pid} ({_program(pid)})" for pid in chain)
            time.sleep(0.2)
        return "not seen"

    def typed(n: int, cmd: str) -> set[str]:
        """Attempt n: the operator types `cmd` (`make <target> ...`); the logs there were before it."""
        before = {f.name for f in logs.iterdir()}
        r.truth(f"attempt {n}: operator types `{cmd}`")
        t.start(cmd)
        r.truth(f"attempt {n} runs: make and its children: {pids_of(cmd.split()[1], 30)}")
        return before

    def returned(timeout: float, pattern: str, before: set[str]) -> tuple[str, Path | None, str]:
        """What the terminal showed until the prompt came back, the attempt's log and its text."""
        shown = t.wait_prompt(timeout)
        log = _newest(logs, pattern, before)
        return shown, log, (log.read_text(errors="replace") if log else "")

    def status() -> str:
        """What the operator's `echo $?` shows."""
        shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", t.run("echo $?")).replace("\r", "")
        return _last(r"(?m)^(\d+)$", shown)

    try:
        r.truth(f"operator at a script-recorded terminal; the Makefile is in the folder (PIDFILE defaults to "
                f"/scratch/dflash/$(RUN).pid; /scratch exists on this machine: {Path('/scratch').exists()})")
        t.run("date")
        shown, log1, text = returned(300, "train-*.log", typed(1, "make train"))
        last = text.strip().splitlines()[-1] if text.strip() else ""
        r.truth(f"attempt 1 returned to the prompt; make printed {_last(MAKE_ERROR, shown)!r}; "
                f"log {log1.name if log1 else '?'}, last line {last!r}")
        r.truth(f"attempt 1: `echo $?` shows {status()}")
        time.sleep(5)
        r.truth("operator reads the log's end")
        t.run(f"tail -n 4 logs/{log1.name if log1 else 'train-*.log'}")
        time.sleep(5)

        t.run("date")
        before = typed(2, "make train PIDFILE=run/drafter.pid")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (log2 := _newest(logs, "train-*.log", before)):
            time.sleep(0.5)
        rel2 = f"logs/{log2.name}" if log2 else "logs/train-?.log"
        r.wait_for(rel2, f"step {kill_at} ", 400)
        pid = (r.dir / "run" / "drafter.pid").read_text().split()[0] if (r.dir / "run" / "drafter.pid").exists() else "?"
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode() if pid.isdigit() else ""
        r.truth(f"step {kill_at} logged; outside the operator's view (an admin's cleanup script; no transcript), SIGKILL "
                f"to PID {pid} from run/drafter.pid ({'the trainer' if 'replay.train' in cmdline else cmdline!r})")
        if "replay.train" in cmdline:
            subprocess.run(["kill", "-9", pid], check=False)
        shown = t.wait_prompt(60)
        text = (r.dir / rel2).read_text(errors="replace") if log2 else ""
        r.truth(f"attempt 2 returned to the prompt; make printed {_last(MAKE_ERROR, shown)!r}; last step line "
                f"{_last(STEP_LINE, text)}, last checkpoint {_last(SAVED_LINE, text)}")
        time.sleep(30)

        r.truth("operator notices: Enter, `echo $?`, `date`, the log's end, `nvidia-smi`")
        t.run("")
        r.truth(f"attempt 2: `echo $?` shows {status()}")
        t.run("date")
        t.run(f"tail -n 3 {rel2}")
        t.run("nvidia-smi" if r.gpu else "uptime")
        time.sleep(5)

        t.run("date")
        shown, log3, text = returned(600, "resume-*.log", typed(3, "make resume PIDFILE=run/drafter.pid"))
        r.truth(f"attempt 3 returned to the prompt; make printed {_last(MAKE_ERROR, shown)!r}; log "
                f"{log3.name if log3 else '?'}: {_last(RESUMED_LINE, text)!r}, last "
                f"step line {_last(STEP_LINE, text)}, 'Training stopped' in it: {'Training stopped' in text}")
        r.truth(f"attempt 3: `echo $?` shows {status()}")
        t.run("date")
    finally:
        t.close()
        # the checkpoints are the trainer's state, not evidence
        for ckpt in r.dir.glob("ckpt/*.pt"):
            ckpt.unlink()


JOB_STARTED, JOB_KILLED = r"\[\d\] \d+", r"\[\d\][+-] +(?:Terminated|Killed|Interrupt|Done|Exit \d+)[^\r\n]*"


def _launch(r: Recording, t: InteractiveShell, pids: list[str], n: int, cmd: str) -> str:
    """Run `n`: the operator types `cmd` (a job started with `&`); the PID bash prints for it, kept
    in `pids`."""
    r.truth(f"run {n}: {cmd}")
    shown = t.run(cmd)
    pid = _job_pid(shown)
    pids.append(pid)
    r.truth(f"run {n} started, PID {pid} (bash's line {_last(JOB_STARTED, shown)!r})")
    return pid


def _last_line(r: Recording, log: str) -> str:
    text = (r.dir / "logs" / log).read_text(errors="replace").strip()
    return text.splitlines()[-1] if text else "(empty)"


def _run_ended(r: Recording, n: int, pid: str, log: str, timeout: float = 600, step: str = STEP_LINE,
               stop: str = "Training stopped") -> None:
    """Wait until run `n` (`pid`, one of the operator's jobs) has exited; what its log ends with: the
    last step (`step`, a pattern whose group is the step) and whether the trainer's closing words
    (`stop`) are in it."""
    gone = _wait_gone(pid, timeout)
    text = (r.dir / "logs" / log).read_text(errors="replace")
    r.truth(f"run {n} (PID {pid}) {'exited' if gone else f'still running after {timeout:g} s'}; last step line "
            f"{_last(step, text)}, {stop!r} in its log: {stop in text}")


def _typed(r: Recording, t: InteractiveShell, line: str) -> str:
    """The operator types `line`; bash's job notifications before the next prompt, if any."""
    r.truth(f"operator types `{line}`")
    shown = t.run(line)
    if jobs := re.findall(JOB_KILLED, shown):
        r.truth(f"bash printed before its prompt: {jobs}")
    return shown


def _kill_typed(r: Recording, t: InteractiveShell, n: int, pid: str, log: str) -> None:
    """The operator types `date`, then `kill PID` with the PID bash printed for run `n`; whether the
    run is gone within 30 s, and its log's last line."""
    _typed(r, t, "date")
    _typed(r, t, f"kill {pid}")
    r.truth(f"run {n} (PID {pid}) {'gone' if _wait_gone(pid, 30) else 'still running after 30 s'}; its log's last "
            f"line: {_last_line(r, log)!r}")


def pkill_both(r: Recording) -> None:
    r.gpus_and_processes()
    py = _python()
    # A run name nothing else on the machine has: the operator's pkill matches whatever carries it.
    run = "drafter-7b"
    steps = 400 if r.gpu else 4000  # the dry run's tiny model trains ~10 times as fast
    flags = (f"--run-name {run} --max-steps {steps} --seconds 3600 {r.model} --checkpoint-dir ckpt "
             f"--checkpoint-every 100 --pid-file run/{run}.pid")
    t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", dict(os.environ, COLUMNS=""))
    pids: list[str] = []

    def launch(n: int, lr: str, log: str) -> str:
        return _launch(r, t, pids, n, f"nohup {py} -m dflash_postmortem.replay.train {flags} --lr {lr} > logs/{log} 2>&1 &")

    try:
        r.truth(f"operator at a script-recorded terminal; three launches of run {run} ({steps} steps, checkpoints "
                "every 100), each under nohup into a log of its own")
        t.run("date")
        pid1 = launch(1, "3e-4", "train.log")
        r.wait_for("logs/train.log", "step 150 ", 300)
        r.truth(f"run 1 logged step 150; its log's last line: {_last_line(r, 'train.log')!r}")
        time.sleep(5)

        r.truth("operator relaunches with one flag changed (--lr 1e-4) and the same run name, into logs/train2.log")
        t.run("date")
        pid2 = launch(2, "1e-4", "train2.log")
        r.wait_for("logs/train2.log", "Loading target model", 60)
        time.sleep(1)
        matched = subprocess.run(["pgrep", "-af", f"run-name {run}"], capture_output=True, text=True).stdout
        r.truth(f"processes whose command line matches 'run-name {run}' just before the pkill (driver's pgrep): "
                f"{[line.split(' ', 1)[0] for line in matched.splitlines()]}; run 2's log's last line: "
                f"{_last_line(r, 'train2.log')!r}; run 1's: {_last_line(r, 'train.log')!r}")
        r.truth(f"operator types `pkill -f 'run-name {run}'`, meaning to stop run 1 (PID {pid1})")
        shown = t.run(f"pkill -f 'run-name {run}'")
        r.truth(f"pkill returned; bash printed before its prompt: {re.findall(JOB_KILLED, shown)}")
        for n, pid in ((1, pid1), (2, pid2)):
            r.truth(f"run {n} (PID {pid}) {'gone' if _wait_gone(pid, 30) else 'still running after 30 s'}; its "
                    f"log's last line: {_last_line(r, 'train.log' if n == 1 else 'train2.log')!r}")
        time.sleep(8)

        r.truth("operator checks: Enter, `date`, `jobs`, `nvidia-smi`, `tail -n 3 logs/train2.log`")
        shown = t.run("")
        r.truth(f"bash's job notifications at the Enter: {re.findall(JOB_KILLED, shown)}")
        t.run("date")
        shown = t.run("jobs")
        r.truth(f"`jobs` shows: {re.findall(JOB_KILLED, shown) or 'no job line'}")
        t.run("nvidia-smi" if r.gpu else "uptime")
        t.run("tail -n 3 logs/train2.log")
        time.sleep(6)

        r.truth("operator launches once more, with --lr 1e-4, into logs/train3.log")
        t.run("date")
        pid3 = launch(3, "1e-4", "train3.log")
        r.wait_for("logs/train3.log", "step 50 ", 300)
        r.truth("run 3 logged step 50")
        _run_ended(r, 3, pid3, "train3.log")
        time.sleep(5)
        r.truth("operator runs `date`, `jobs` and `tail -n 2 logs/train3.log`")
        shown = t.run("date")
        r.truth(f"bash's job notification: {re.findall(JOB_KILLED, shown)}")
        t.run("jobs")
        t.run("tail -n 2 logs/train3.log")
    finally:
        r.close_shell(t, pids, "ckpt/*.pt")


def _environ(pid: str, name: str) -> str | None:
    """`name` in the environment `pid` was started with (None: not set, or no such process)."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    return next((v.decode() for k, _, v in (e.partition(b"=") for e in env) if k == name.encode()), None)


def debug_env(r: Recording) -> None:
    r.gpus_and_processes()
    py = _python()
    run, crash_at, blocking = "drafter-7b", 150, "CUDA_LAUNCH_BLOCKING"
    steps = 1000 if r.gpu else 8000  # the dry run's tiny model trains ~8 times as fast
    cmd = (f"nohup {py} -m dflash_postmortem.replay.train --run-name {run} --max-steps {steps} --seconds 3600 "
           f"{r.model} --checkpoint-dir ckpt --checkpoint-every 100")
    t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", dict(os.environ, COLUMNS=""))
    pids: list[str] = []
    typed = functools.partial(_typed, r, t)

    def launch(n: int, extra: str, log: str) -> str:
        pid = _launch(r, t, pids, n, f"{cmd}{extra} > logs/{log} 2>&1 &")
        # once nohup has exec'd the trainer: its environment is the one the operator's bash exported
        r.wait_for(f"logs/{log}", "Loading dataset", 60)
        r.truth(f"run {n} (PID {pid}, {_program(pid)}) was started with {blocking}={_environ(pid, blocking)}")
        return pid

    def resumed(n: int, log: str) -> None:
        r.wait_for(f"logs/{log}", "Resumed from checkpoint", 180)
        r.truth(f"run {n}: {_last(RESUMED_LINE, (r.dir / 'logs' / log).read_text(errors='replace'))!r}")

    try:
        r.truth(f"operator at a script-recorded terminal; run {run} ({steps} steps, checkpoints every 100) under "
                f"nohup; run 1 is set to raise in its drafter thread at its step {crash_at} (--inject-error)")
        typed("date")
        pid1 = launch(1, f" --inject-error drafter:{crash_at}", "train.log")
        r.wait_for("logs/train.log", "Saved checkpoint at step 100", 300)
        r.truth("run 1 saved its step-100 checkpoint")
        r.wait_for("logs/train.log", "Training failed", 300)
        text = (r.dir / "logs" / "train.log").read_text(errors="replace")
        error = _last(r"RuntimeError: [^\n]*", text)
        r.truth(f"run 1 crashed: {error!r}, then 'Training failed'; its last step line {_last(STEP_LINE, text)}")
        _run_ended(r, 1, pid1, "train.log", 60)
        time.sleep(8)

        typed("tail -n 3 logs/train.log")
        time.sleep(3)
        typed(f"export {blocking}=1")
        time.sleep(2)
        typed("date")
        launched = time.monotonic()
        pid2 = launch(2, " --resume", "train2.log")
        resumed(2, "train2.log")
        time.sleep(max(0.0, launched + 75 - time.monotonic()))

        r.truth(f"75 s after run 2's launch its log's last line: {_last_line(r, 'train2.log')!r}")
        typed("tail -n 2 logs/train2.log")
        time.sleep(3)
        _kill_typed(r, t, 2, pid2, "train2.log")
        time.sleep(2)
        typed(f"unset {blocking}")
        time.sleep(2)
        typed("date")
        pid3 = launch(3, " --resume", "train3.log")
        resumed(3, "train3.log")
        _run_ended(r, 3, pid3, "train3.log")
        time.sleep(5)
        typed("date")
        typed("tail -n 2 logs/train3.log")
    finally:
        r.close_shell(t, pids, "ckpt/*.pt")


# A Trainer script in the style of Hugging Face's examples: every TrainingArguments field is a flag
# (--output_dir, --max_steps, --resume_from_checkpoint, --gradient_checkpointing, ...).
TRAIN_HF = '''"""Train a GPT-2-shaped causal LM from scratch (random weights, random tokens) with the Hugging Face
Trainer: python train_hf.py --output_dir DIR --max_steps N [any TrainingArguments flag]"""
import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer, TrainingArguments

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
CPU = args.use_cpu
''' + HF_DATA + '''
Trainer(model=GPT2LMHeadModel(cfg), args=args, train_dataset=Tokens()).train(
    resume_from_checkpoint=args.resume_from_checkpoint)
'''
def _bar_pace(r: Recording, log: str, total: int) -> str:
    """The median rate (in it/s) the refreshes of the tqdm bar over `total` steps show in `log` (not
    another bar's, as the checkpoint's `Writing model shards`), and how many showed one."""
    text = (r.dir / "logs" / log).read_text(errors="replace")
    shown = re.findall(rf"\d+/{total} \[[^\]]*, *([\d.]+)(it/s|s/it)\]", text)
    rates = [float(v) if unit == "it/s" else 1 / float(v) for v, unit in shown if float(v) > 0]
    return f"median {statistics.median(rates):.2f} it/s over {len(rates)} refreshes" if rates else "no rate shown"


def _note_files(r: Recording, pattern: str) -> threading.Event:
    """Until the returned event is set, note in the truth log each new file matching `pattern` (a
    glob in the folder, as a checkpoint's last file) when the driver sees it (every 0.5 s)."""
    done = threading.Event()

    def watch() -> None:
        seen: set[Path] = set()
        while not done.wait(0.5):
            for f in sorted(set(r.dir.glob(pattern)) - seen, key=lambda f: f.stat().st_mtime):
                seen.add(f)
                r.truth(f"{f.relative_to(r.dir)} written (seen by the driver)")

    threading.Thread(target=watch, daemon=True).start()
    return done



def _hf_terminal(r: Recording, out: str) -> tuple[InteractiveShell, list[str], Callable[[str], str], threading.Event]:
    """The operator of a Hugging Face Trainer run at a `script`-recorded bash (logs/terminal.typescript):
    the shell, the list of its jobs' PIDs, `typed` (a line the operator types, noted in the truth log), and
    the event that stops the driver noting each checkpoint's trainer_state.json under `out` as it appears."""
    t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", dict(os.environ, COLUMNS=""))
    return t, [], functools.partial(_typed, r, t), _note_files(r, f"{out}/checkpoint-*/trainer_state.json")


def hf_slow_resume(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train_hf.py").write_text(TRAIN_HF)
    out, steps = "out/run1", 800
    bar = rf"(\d+)/{steps} \["  # the training bar's position (a checkpoint's shard bar is over 1)

    def command(batch: int, accum: int, extra: str, log: str) -> str:
        return (f"nohup {_python()} train_hf.py --output_dir {out} --per_device_train_batch_size {batch} "
                f"--gradient_accumulation_steps {accum} --max_steps {steps} --learning_rate 3e-4 --warmup_steps 20 "
                f"--logging_steps 10 --save_steps 100 {'--bf16' if r.gpu else '--use_cpu'} --report_to none{extra} "
                f"> logs/{log} 2>&1 &")

    t, pids, typed, saved = _hf_terminal(r, out)
    try:
        r.truth(f"operator at a script-recorded terminal; a Hugging Face Trainer run (transformers "
                f"{metadata.version('transformers')}, torch {metadata.version('torch')}) under nohup, {steps} steps, a "
                f"checkpoint every 100 into {out}; killed after its step-200 checkpoint and resumed from its newest "
                "checkpoint with gradient checkpointing, half the batch and twice the accumulation")
        typed("date")
        pid1 = _launch(r, t, pids, 1, command(8, 1, "", "hf_train.log"))
        r.wait_for(f"{out}/checkpoint-200/trainer_state.json", "global_step", 300)
        time.sleep(2)
        typed(f"ls {out}")
        _kill_typed(r, t, 1, pid1, "hf_train.log")
        r.truth(f"run 1's bar: {_bar_pace(r, 'hf_train.log', steps)}")
        time.sleep(2)

        typed(f"ls {out}")
        done = [int(c.name.split("-")[1]) for c in (r.dir / out).glob("checkpoint-*")
                if (c / "trainer_state.json").exists()]
        newest = f"{out}/checkpoint-{max(done, default=0)}"
        r.truth(f"checkpoints with a trainer_state.json: {sorted(done)}; the operator resumes from {newest} with "
                "--gradient_checkpointing, --per_device_train_batch_size 4 and --gradient_accumulation_steps 2")
        time.sleep(3)
        typed("date")
        pid2 = _launch(r, t, pids, 2, command(4, 2, f" --gradient_checkpointing --resume_from_checkpoint {newest}",
                                               "hf_train2.log"))
        _run_ended(r, 2, pid2, "hf_train2.log", 400, bar, "train_runtime")
        r.truth(f"run 2's bar: {_bar_pace(r, 'hf_train2.log', steps)}")
        time.sleep(5)
        typed("date")
        typed("tail -n 3 logs/hf_train2.log")
    finally:
        saved.set()
        r.close_shell(t, pids, f"{out}/checkpoint-*/*.safetensors")


# The transformer block of the homegrown trainers below (nanoGPT's: attention by PyTorch's SDPA),
# written into each script as its own code.
GPT_BLOCK = r'''class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln_2(x))


'''

# A nanoGPT-style script as people write them: a small GPT on one GPU, reporting with print() only
# (no flush, no times of day). Its data is a synthetic token stream (each token the last plus a
# random step of 0-15, modulo the vocabulary): learnable, so the loss falls towards ln 16.
TRAIN_PLAIN = r'''"""
Train a small GPT (nanoGPT-style, one GPU, no DDP) on a synthetic token stream.

$ python3 train_plain.py --max-iters 5000
"""
import argparse
import math
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=50304)
p.add_argument("--batch-size", type=int, default=12)
p.add_argument("--learning-rate", type=float, default=6e-4)
p.add_argument("--warmup-iters", type=int, default=100)
p.add_argument("--max-iters", type=int, default=5000)
p.add_argument("--eval-interval", type=int, default=500)
p.add_argument("--eval-iters", type=int, default=20)
p.add_argument("--log-interval", type=int, default=10)
p.add_argument("--compile", action="store_true")
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device = args.device
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if "cuda" in device else torch.autocast("cpu", enabled=False)
tokens_per_iter = args.batch_size * args.block_size
print(f"tokens per iteration will be: {tokens_per_iter:,}")

# data: a synthetic token stream, 90% train / 10% val
n_tokens = 20_000_000 if "cuda" in device else 1_000_000
g = torch.Generator().manual_seed(42)
data = (torch.randint(0, 16, (n_tokens,), generator=g).cumsum(0) % args.vocab_size).to(device)
split = int(0.9 * n_tokens)
train_data, val_data = data[:split], data[split:]


def get_batch(which):
    d = train_data if which == "train" else val_data
    ix = torch.randint(len(d) - args.block_size - 1, (args.batch_size,), device=device)
    offs = ix[:, None] + torch.arange(args.block_size + 1, device=device)
    chunk = d[offs]
    return chunk[:, :-1], chunk[:, 1:]


''' + GPT_BLOCK + r'''class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(args.vocab_size, args.n_embd)
        self.wpe = nn.Embedding(args.block_size, args.n_embd)
        self.h = nn.ModuleList(Block(args.n_embd, args.n_head) for _ in range(args.n_layer))
        self.ln_f = nn.LayerNorm(args.n_embd)
        self.lm_head = nn.Linear(args.n_embd, args.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            torch.nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))

    def estimate_mfu(self, fwdbwd_per_iter, dt):
        N = sum(p.numel() for p in self.parameters())
        L, H, Q, T = args.n_layer, args.n_head, args.n_embd // args.n_head, args.block_size
        flops_per_iter = (6 * N + 12 * L * H * Q * T) * T * fwdbwd_per_iter
        return flops_per_iter / dt / 312e12  # A100 bfloat16 peak flops is 312 TFLOPS


print("Initializing a new model from scratch")
model = GPT().to(device)
print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, betas=(0.9, 0.95), weight_decay=0.1,
                              fused="cuda" in device)
print(f"using fused AdamW: {'cuda' in device}")
if args.compile:
    print("compiling the model... (takes a ~minute)")
    model = torch.compile(model)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for which in ("train", "val"):
        losses = torch.zeros(args.eval_iters)
        for k in range(args.eval_iters):
            X, Y = get_batch(which)
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()
        out[which] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < args.warmup_iters:
        return args.learning_rate * (it + 1) / (args.warmup_iters + 1)
    return args.learning_rate


iter_num = 0
t0 = time.time()
while True:
    for group in optimizer.param_groups:
        group["lr"] = get_lr(iter_num)
    if iter_num % args.eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        t0 = time.time()
    X, Y = get_batch("train")
    with ctx:
        logits, loss = model(X, Y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    if iter_num % args.log_interval == 0:
        lossf = loss.item()
        t1 = time.time()
        dt = (t1 - t0) / args.log_interval
        t0 = t1
        mfu = model.estimate_mfu(args.batch_size, dt)
        print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms, mfu {mfu * 100:.2f}%")
    if iter_num >= args.max_iters:
        break

print("training done")
'''

# The driver's probe, loaded by the trainers the operator starts (a `sitecustomize` on their
# PYTHONPATH, beside the folder, not in it; nothing of it shows in a command line or a log): every
# print() with its time and size (what reached the stdout buffer, flushed or not), the trainer's
# `iter_num` sampled every 0.25 s, and a mark at a normal interpreter exit.
PROBE = r'''import atexit, builtins, os, sys, threading, time

_dir = os.environ.get("BL_PROBE_DIR")
if _dir:
    _base = os.path.join(_dir, str(os.getpid()))
    _print = builtins.print

    def print(*args, **kw):
        _print(*args, **kw)
        if kw.get("file") in (None, sys.stdout):
            sep, end = kw.get("sep"), kw.get("end")
            text = (" " if sep is None else sep).join(map(str, args)) + ("\n" if end is None else end)
            with open(_base + ".prints", "a") as f:
                f.write(f"{time.time():.3f} {len(text.encode())} {text}")

    builtins.print = print

    def _sample():
        while True:
            n = getattr(sys.modules.get("__main__"), "iter_num", None)
            if n is not None:
                with open(_base + ".iter.tmp", "w") as f:
                    f.write(f"{time.time():.3f} {n}\n")
                os.replace(_base + ".iter.tmp", _base + ".iter")
            time.sleep(0.25)

    threading.Thread(target=_sample, daemon=True).start()
    atexit.register(lambda: open(_base + ".exit", "w").write(f"{time.time():.3f}\n"))

# the sitecustomize this one shadows (a distribution's), if any, runs as it would have
try:
    import importlib.machinery, importlib.util
    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [d for d in sys.path if os.path.abspath(d or ".") != _here])
    if _spec and _spec.loader:
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
except Exception:
    pass
'''


def _python3() -> str:
    """`python3` where the one on PATH is this interpreter's, else this interpreter's path."""
    found = shutil.which("python3")
    return "python3" if found and Path(found).parent == Path(sys.executable).parent else shlex.quote(sys.executable)


def _utc(t: float) -> str:
    d = dt.datetime.fromtimestamp(t, dt.UTC)
    return d.strftime("%H:%M:%S.") + f"{d.microsecond // 1000:03d}"


def buffered_log(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train_plain.py").write_text(TRAIN_PLAIN)
    probe = r.dir.parent / f"{r.name}.probe"
    shutil.rmtree(probe, ignore_errors=True)
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(PROBE)
    py = _python3()
    # the dry run: a tiny model on one CPU thread, which logs more rarely (it iterates ~10x as fast)
    model = "" if r.gpu else (" --device cpu --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 --vocab-size 512 "
                              "--batch-size 8 --eval-iters 5")
    every, eval_every = (50, 500) if r.gpu else (200, 2000)
    if not r.gpu:
        model += f" --eval-interval {eval_every}"
    # The operator's shell (Transcript's environment): no PYTHONUNBUFFERED, as a login shell has it;
    # the probe on PYTHONPATH.
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    had = env.pop("PYTHONUNBUFFERED", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(probe), env.get("PYTHONPATH")]))
    env["BL_PROBE_DIR"] = str(probe)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)

    def trainer(cmd_part: str, timeout: float = 20) -> str:
        """The PID of the python (nohup exec's it) running `train_plain.py` with `cmd_part`, in this folder."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid in subprocess.run(["pgrep", "-f", cmd_part], capture_output=True, text=True).stdout.split():
                try:
                    if (Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(r.dir.resolve())
                            and "python" in _program(pid)):
                        return pid
                except OSError:
                    pass
            time.sleep(0.2)
        return "?"

    def prints(pid: str) -> list[tuple[float, int, str]]:
        path = probe / f"{pid}.prints"
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            t, n, text = line.split(" ", 2)
            out.append((float(t), int(n), text))
        return out

    def sampled(pid: str) -> str:
        path = probe / f"{pid}.iter"
        if not path.exists():
            return "no sample"
        t, n = path.read_text().split()
        return f"iter_num {n} at {_utc(float(t))}"

    def state(n: int, pid: str, log: str = "logs/train.log") -> str:
        p = prints(pid)
        size = (r.dir / log).stat().st_size if (r.dir / log).exists() else -1
        iters = [text for _, _, text in p if text.startswith("iter ")]
        return (f"run {n} (PID {pid}): {log} is {size} bytes; the trainer has print()ed {len(p)} lines, "
                f"{sum(b for _, b, _ in p)} bytes (last {iters[-1] if iters else '(no iter line)'!r}); probe: "
                f"{sampled(pid)}")

    try:
        r.truth(f"the operator's shell has no PYTHONUNBUFFERED (the driver removed {'PYTHONUNBUFFERED=' + had if had else 'nothing: it was unset'} "
                "from it); train_plain.py (nanoGPT-style, print() only, no flush) is in the folder; the driver's "
                f"probe (a sitecustomize on the trainers' PYTHONPATH, in {probe}, outside the folder) notes "
                "each print() and samples iter_num every 0.25 s")
        cmd1 = f"nohup {py} train_plain.py --max-iters 100000 --log-interval {every}{model} > logs/train.log 2>&1 &"
        r.truth(f"run 1: operator types {cmd1!r}")
        launched = time.monotonic()
        op.run(cmd1)
        pid1 = trainer("train_plain.py --max-iters 100000")
        r.truth(f"run 1 running: PID {pid1} ({_program(pid1)}), PYTHONUNBUFFERED in its environment: "
                f"{_environ(pid1, 'PYTHONUNBUFFERED')}, its stdout: "
                f"{os.readlink(f'/proc/{pid1}/fd/1') if pid1.isdigit() else '?'}")
        time.sleep(max(0.0, launched + 30 - time.monotonic()))

        r.truth(f"~30 s after the launch the operator looks; {state(1, pid1)}")
        op.run("tail logs/train.log")
        op.run("nvidia-smi" if r.gpu else "uptime")
        op.run("ls -la logs/")
        time.sleep(max(0.0, launched + 52 - time.monotonic()))

        r.truth(f"~50 s after the launch the operator looks again; {state(1, pid1)}")
        op.run("tail logs/train.log")
        op.run("ls -la logs/")
        shown, _ = op.run("ps aux | grep [t]rain_plain")
        listed = re.findall(r"^\S+\s+(\d+)", shown, re.M)
        pid = pid1 if pid1 in listed else (listed[0] if listed else pid1)
        r.truth(f"the operator's `ps aux | grep [t]rain_plain` lists PIDs {listed}; concluding the run is stuck, "
                f"the operator types `kill -9 {pid}`; just before: {state(1, pid1)}")
        op.run(f"kill -9 {pid}")
        gone = _exited(pid1, 15)
        p1 = prints(pid1)
        iters = [(t, int(m.group(1))) for t, _, text in p1 if (m := re.match(r"iter (\d+):", text))]
        r.truth(f"run 1 (PID {pid1}) {'gone' if gone else 'still running 15 s after the SIGKILL'}; {state(1, pid1)}; "
                f"the probe's last sample came at most 0.25 s before the kill; nothing of the "
                f"{sum(b for _, b, _ in p1)} bytes print()ed ever reached logs/train.log")
        for t, b, text in p1:
            r.truth(f"run 1 print() at {_utc(t)} ({b} bytes, lost): {text.rstrip()!r}")
        # the relaunch's length: ~70 s of training at run 1's pace, a round number as a person types it
        rate = ((iters[-1][1] - iters[0][1]) / (iters[-1][0] - iters[0][0])) if len(iters) > 1 and iters[-1][0] > iters[0][0] else 0
        step = 500 if rate * 70 < 20000 else 5000
        n2 = max(step, round(rate * 70 / step) * step) if rate else (1500 if r.gpu else 10000)
        r.truth(f"run 1's pace from its print() times: {rate:.1f} iter/s; the relaunch gets --max-iters {n2}")
        time.sleep(10)

        cmd2 = f"nohup {py} -u train_plain.py --max-iters {n2} --log-interval {every}{model} > logs/train.log 2>&1 &"
        r.truth(f"run 2: operator types {cmd2!r} (`>` truncates logs/train.log)")
        launched = time.monotonic()
        op.run(cmd2)
        pid2 = trainer(f"train_plain.py --max-iters {n2}")
        r.truth(f"run 2 running: PID {pid2} ({_program(pid2)}), PYTHONUNBUFFERED in its environment: "
                f"{_environ(pid2, 'PYTHONUNBUFFERED')}")
        r.wait_for("logs/train.log", "tokens per iteration", 60)
        r.truth(f"run 2's first line is in logs/train.log ({time.monotonic() - launched:.1f} s after the launch)")
        r.wait_for("logs/train.log", f"iter {every}:", 120)
        r.truth(f"run 2 logged its first iter line; {state(2, pid2)}")
        r.wait_for("logs/train.log", "training done", 300)
        gone = _exited(pid2, 30)
        exit_mark = probe / f"{pid2}.exit"
        text = (r.dir / "logs" / "train.log").read_text(errors="replace")
        p2 = prints(pid2)
        r.truth(f"run 2 (PID {pid2}) {'exited' if gone else 'still running 30 s after training done'}; normal "
                f"interpreter exit (the probe's atexit mark): "
                f"{_utc(float(exit_mark.read_text())) if exit_mark.exists() else 'none'}; 'Traceback' in its log: "
                f"{'Traceback' in text}; {state(2, pid2)}; its first print() at {_utc(p2[0][0]) if p2 else '?'}, "
                f"its last at {_utc(p2[-1][0]) if p2 else '?'} ({p2[-1][2].rstrip() if p2 else ''!r})")
        time.sleep(5)
        last = "tail -n 3 logs/train.log; " + ("nvidia-smi" if r.gpu else "uptime")
        r.truth(f"operator's last look: `{last}`")
        op.run(last)
        time.sleep(3)
    finally:
        env.clear()
        env.update(saved)
        r.stop_ours("train_plain.py")

# The assert-relaunch trainer's sampler: kept apart so that the driver can draw the same batches
# (on the CPU, seeded per step) and know which step's batch first holds an id the model has no row for.
ASSERT_SAMPLER = '''def batch_ids(step, data_vocab, batch_size, block_size, seed, warmup, first_ids=1024):
    """One step's token ids, (batch_size, block_size + 1): random walks (each id the last plus 0-15)
    over the ids the curriculum allows at this step, from the `first_ids` most frequent ones up to
    all `data_vocab` of them at step `warmup`."""
    first = min(first_ids, data_vocab)
    hi = first + int((data_vocab - first) * min(1.0, step / warmup))
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    start = torch.randint(0, hi, (batch_size, 1), generator=g)
    walk = torch.randint(0, 16, (batch_size, block_size), generator=g).cumsum(1)
    return torch.cat([start, start + walk], 1) % hi
'''

# A small GPT-style LM on synthetic ids, logging with `logging`; its data vocabulary's default
# (50304, GPT-2's padded) is larger than the model's (32000): the sampler's curriculum reaches the
# ids past 32000 only at ~63 % of --vocab-warmup-steps.
TRAIN_ASSERT = '''"""Train a small GPT-style language model on synthetic token ids.

    python3 train.py --max-steps N [--vocab-size V] [--data-vocab D] [--device cpu] ...

The sampler follows a frequency curriculum: the first steps draw only the most frequent ids, and
the range widens to the whole data vocabulary over --vocab-warmup-steps.
"""
import argparse
import logging
import math
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--vocab-size", type=int, default=32000, help="model vocabulary (embedding rows)")
p.add_argument("--data-vocab", type=int, default=50304, help="ids the sampler draws from (tokenizer size, padded)")
p.add_argument("--vocab-warmup-steps", type=int, default=1200)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--min-lr", type=float, default=3e-5)
p.add_argument("--warmup-steps", type=int, default=100)
p.add_argument("--max-steps", type=int, default=5000)
p.add_argument("--log-every", type=int, default=20)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.block_size


''' + ASSERT_SAMPLER + '''

def get_batch(step):
    ids = batch_ids(step, args.data_vocab, args.batch_size, args.block_size, args.seed, args.vocab_warmup_steps)
    ids = ids.to(device)
    return ids[:, :-1], ids[:, 1:]


''' + GPT_BLOCK + '''class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(args.vocab_size, args.n_embd)
        self.wpe = nn.Embedding(args.block_size, args.n_embd)
        self.h = nn.ModuleList(Block(args.n_embd, args.n_head) for _ in range(args.n_layer))
        self.ln_f = nn.LayerNorm(args.n_embd)
        self.lm_head = nn.Linear(args.n_embd, args.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            torch.nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def get_lr(step):
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = (step - args.warmup_steps) / max(1, args.max_steps - args.warmup_steps)
    return args.min_lr + 0.5 * (1 + math.cos(math.pi * min(1.0, progress))) * (args.lr - args.min_lr)


model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1,
                              fused=device.startswith("cuda"))
log.info(f"model: {args.n_layer} layers, {args.n_head} heads, {args.n_embd} wide, vocab {args.vocab_size}, "
         f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params on {device}")
log.info(f"data: synthetic ids < {args.data_vocab}, {tokens_per_step:,} tokens/step "
         f"({args.batch_size} x {args.block_size}), id range widening over {args.vocab_warmup_steps} steps")
log.info(f"training for {args.max_steps} steps, lr {args.lr:.1e}, warmup {args.warmup_steps}")

iter_num = 0
start = t0 = time.time()
while iter_num < args.max_steps:
    lr = get_lr(iter_num)
    for group in optimizer.param_groups:
        group["lr"] = lr
    X, Y = get_batch(iter_num)
    with ctx:
        _, loss = model(X, Y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    if iter_num % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        dt = (t1 - t0) / args.log_every
        t0 = t1
        log.info(f"step {iter_num} | loss {lossf:.2f} | lr {lr:.1e} | {dt * 1000:.1f} ms/step | "
                 f"{tokens_per_step / dt:,.0f} tok/s")

log.info(f"done: {iter_num} steps in {time.time() - start:.1f} s")
'''

ASSERT_STEP = r"step (\d+) \| loss"


def assert_relaunch(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train.py").write_text(TRAIN_ASSERT)
    probe = r.dir.parent / f"{r.name}.probe"
    shutil.rmtree(probe, ignore_errors=True)
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(PROBE)
    py = _python3()
    # on the GPU: train.py's defaults but --max-steps; the dry run: a tiny model on one CPU thread, with
    # vocabularies and steps in the same proportions (a 32000-row output layer is slow on a CPU)
    steps, vocab, data_vocab, warmup = (1500, 32000, 50304, 1200) if r.gpu else (300, 4000, 6288, 240)
    model = "" if r.gpu else (" --device cpu --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 --batch-size 8 "
                              f"--vocab-size {vocab} --data-vocab {data_vocab} --vocab-warmup-steps {warmup}")
    batch, block = (16, 1024) if r.gpu else (8, 64)
    base = f"{py} train.py --max-steps {steps}{model}"
    # The operator's shell (Transcript's environment), with the probe on PYTHONPATH.
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(probe), env.get("PYTHONPATH")]))
    env["BL_PROBE_DIR"] = str(probe)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)
    deadline = time.monotonic() + 480  # the device call's limit is 600 s: the folder must come back

    # Which batch first holds an id past the model's vocabulary: the sampler drawn here, as train.py draws it.
    import torch  # noqa: PLC0415 - the driver needs it for this scenario only
    ns: dict = {"torch": torch}
    exec(ASSERT_SAMPLER, ns)  # noqa: S102 - the driver's own source
    crossing = next(s for s in range(warmup + 1)
                    if 1024 + int((data_vocab - 1024) * min(1.0, s / warmup)) > vocab)
    first_bad, bad = None, ""
    for s in range(max(0, crossing - 2), crossing + 6):
        ids = ns["batch_ids"](s, data_vocab, batch, block, 1337, warmup)
        n_bad = int((ids >= vocab).sum())
        bad += f"; step index {s}: max id {int(ids.max())}, {n_bad} of {ids.numel()} ids >= {vocab}"
        if n_bad and first_bad is None:
            first_bad = s
    r.truth(f"train.py (model vocab {vocab}, sampler's --data-vocab default {data_vocab}, id range widening "
            f"from 1024 over {warmup} steps) is in the folder; drawn by the driver as train.py draws them: the "
            f"range first exceeds {vocab} at step index {crossing}; the first batch holding an id >= {vocab} is "
            f"step index {first_bad} (the model has completed {first_bad} steps when it takes it){bad}")

    def trainer(timeout: float = 30) -> str:
        """The PID of the python running train.py in this folder (not the `bash -c` around it)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for pid in subprocess.run(["pgrep", "-f", "train.py --max-steps"], capture_output=True,
                                      text=True).stdout.split():
                try:
                    if (Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(r.dir.resolve())
                            and "python" in _program(pid)):
                        return pid
                except OSError:
                    pass
            time.sleep(0.1)
        return "?"

    def sampled(pid: str) -> str:
        path = probe / f"{pid}.iter"
        if not path.exists():
            return "no iter_num sample"
        t, n = path.read_text().split()
        return f"last iter_num sample {n} at {_utc(float(t))}"

    def foreground(n: int, cmd: str, log: str) -> str:
        """Run `n`, typed and waited for; its log's text."""
        r.truth(f"run {n}: operator types {cmd!r}")
        out: dict = {}
        th = threading.Thread(target=lambda: out.update(text=op.run(cmd, timeout=560)[0]), daemon=True)
        th.start()
        pid = trainer()
        r.truth(f"run {n} running: PID {pid} ({_program(pid)}), CUDA_LAUNCH_BLOCKING in its environment: "
                f"{_environ(pid, 'CUDA_LAUNCH_BLOCKING')}")
        path = r.dir / "logs" / log
        end = time.monotonic() + 180
        while time.monotonic() < end and th.is_alive():
            if path.exists() and re.search(ASSERT_STEP, path.read_text(errors="replace")):
                text = path.read_text(errors="replace")
                r.truth(f"run {n}: its first step line is in {log}: "
                        f"{next(ln for ln in text.splitlines() if re.search(ASSERT_STEP, ln))!r}")
                break
            time.sleep(0.2)
        th.join(timeout=max(5.0, deadline - time.monotonic()))
        if th.is_alive():
            r.truth(f"run {n} (PID {pid}) still running at the driver's deadline: the driver stops it")
            r.stop_ours("train.py --max-steps")
            th.join(timeout=30)
        gone = _exited(pid, 10) if pid.isdigit() else True
        text = path.read_text(errors="replace") if path.exists() else ""
        shown = out.get("text", "")
        status = _last(r"exit=(\d+)", shown)
        steps_logged = re.findall(ASSERT_STEP, text)
        asserts = [ln for ln in text.splitlines() if "Assertion" in ln]
        frames = re.findall(r'  File "([^"]+)", line (\d+), in (\S+)\n +([^\n]*)', text)
        error = re.search(r"^(\S*(?:Error|Exception)\S*): ([^\n]*)", text, re.M)
        exit_mark = probe / f"{pid}.exit"
        done = _last(r"INFO (done: [^\n]*)", text)
        ours = [f"line {ln} in {fn}: {code.strip()}" for f, ln, fn, code in frames if f.endswith("train.py")]
        first_last = f", first {asserts[0]!r}, last {asserts[-1]!r}" if asserts else ""
        r.truth(f"run {n} (PID {pid}) returned, {'exited' if gone else 'STILL RUNNING'}; exit status shown: "
                f"{status}; {sampled(pid)}; interpreter exit (probe's atexit mark): "
                f"{_utc(float(exit_mark.read_text())) if exit_mark.exists() else 'none'}; {log}: "
                f"{len(text.splitlines())} lines, step lines {steps_logged[0] if steps_logged else '-'} to "
                f"{steps_logged[-1] if steps_logged else '-'}; 'done' line: "
                f"{done!r}; error: "
                f"{(error.group(1) + ': ' + error.group(2)) if error else None!r}; traceback's frames in train.py: "
                f"{ours}; "
                f"innermost frame: {frames[-1] if frames else None}; {len(asserts)} 'Assertion' lines{first_last}")
        return text

    try:
        r.truth("by hand, in the foreground through tee, at an interactive shell; the driver's probe (a "
                f"sitecustomize on the trainers' PYTHONPATH, in {probe}, outside the folder) samples train.py's "
                "iter_num (steps completed) every 0.25 s and marks a normal interpreter exit")
        foreground(1, f"{base} 2>&1 | tee logs/run1.log; echo exit=${{PIPESTATUS[0]}}", "run1.log")
        time.sleep(6)
        r.truth("operator looks at the log's tail")
        op.run("tail -n 20 logs/run1.log")
        time.sleep(8)
        foreground(2, f"CUDA_LAUNCH_BLOCKING=1 {base} 2>&1 | tee logs/run2.log; echo exit=${{PIPESTATUS[0]}}",
                   "run2.log")
        time.sleep(6)
        r.truth("operator looks at the new traceback, then at train.py's vocabulary flags")
        op.run("tail -n 20 logs/run2.log")
        time.sleep(4)
        op.run("grep -n vocab train.py")
        time.sleep(10)
        foreground(3, f"{base} --data-vocab {vocab} 2>&1 | tee logs/run3.log; echo exit=${{PIPESTATUS[0]}}",
                   "run3.log")
        time.sleep(4)
        r.truth("operator's last look: nvidia-smi")
        op.run("nvidia-smi" if r.gpu else "uptime")
        time.sleep(3)
    finally:
        env.clear()
        env.update(saved)
        r.stop_ours("train.py --max-steps")


# The GPT model of the torn-checkpoint and segv trainers (GPT_BLOCK's blocks, tied embeddings).
GPT_MODEL = GPT_BLOCK + r'''class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(args.vocab_size, args.n_embd)
        self.wpe = nn.Embedding(args.block_size, args.n_embd)
        self.h = nn.ModuleList(Block(args.n_embd, args.n_head) for _ in range(args.n_layer))
        self.ln_f = nn.LayerNorm(args.n_embd)
        self.lm_head = nn.Linear(args.n_embd, args.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))

'''

# A homegrown trainer that checkpoints straight into ckpt/last.pt (no temporary file and rename), so
# a kill while it writes leaves a cut file where the last good checkpoint was; and it resumes from
# that path whenever it exists. Time-based saving, as "every N minutes" trainers do.
TORN_TRAIN = r'''"""Train a small GPT-style LM on a synthetic token stream, checkpointing to ckpt/last.pt.

    python3 train.py --resume ckpt/last.pt
"""
import argparse
import logging
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--resume", default=None, help="checkpoint to resume from (if it exists)")
p.add_argument("--ckpt", default="ckpt/last.pt", help="where to save checkpoints")
p.add_argument("--save-interval", type=float, default=15.0, help="seconds of training between checkpoints")
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=16)
p.add_argument("--n-embd", type=int, default=1024)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--max-steps", type=int, default=100000)
p.add_argument("--log-every", type=int, default=25)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
log.info("config: %s", vars(args))

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

# data: a synthetic token stream (each token the previous one plus a random step of 0-15)
n_tokens = 20_000_000 if cuda else 1_000_000
g = torch.Generator().manual_seed(42)
data = (torch.randint(0, 16, (n_tokens,), generator=g).cumsum(0) % args.vocab_size).to(device)


def get_batch():
    ix = torch.randint(n_tokens - args.block_size - 1, (args.batch_size,), device=device)
    chunk = data[ix[:, None] + torch.arange(args.block_size + 1, device=device)]
    return chunk[:, :-1], chunk[:, 1:]


''' + GPT_MODEL + r'''
model = GPT().to(device)
log.info("model: %.1fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume and os.path.exists(args.resume):
    log.info("resuming from %s", args.resume)
    state = torch.load(args.resume, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resumed at step %d", step)
elif args.resume:
    log.info("no checkpoint at %s, starting from scratch", args.resume)


def save_checkpoint():
    log.info("saving checkpoint step %d to %s", step, args.ckpt)
    t = time.time()
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, args.ckpt)
    log.info("saved checkpoint step %d (%.0f MB in %.1fs)", step, os.path.getsize(args.ckpt) / 1e6, time.time() - t)


log.info("training from step %d", step)
t0 = last_save = time.time()
while step < args.max_steps:
    x, y = get_batch()
    with ctx:
        loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        log.info("step %d loss %.4f tok/s %.0f", step, lossf, args.log_every * args.batch_size * args.block_size / (t1 - t0))
        t0 = t1
    if time.time() - last_save >= args.save_interval:
        save_checkpoint()
        t0 = last_save = time.time()
save_checkpoint()
log.info("done")
'''

# The operator's supervisor loop, as people write it: dated lines of its own, the trainer's output
# appended to one log, a restart 5 s after any exit.
TORN_LOOP = """#!/bin/bash
# keep the run alive: if train.py dies, start it again; it picks up from ckpt/last.pt
cd "$(dirname "$0")"
while true; do
    echo "$(date -u +%FT%TZ) starting train.py"
    {python} train.py --resume ckpt/last.pt{flags} >> logs/train.log 2>&1
    rc=$?
    echo "$(date -u +%FT%TZ) train.py exited with code $rc, restarting in 5s"
    sleep 5
done
"""


def torn_checkpoint(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    # r.ps_loop()'s form, whose filter also keeps the supervisor loop (`bash ./run.sh`) and its `sleep 5`
    r.background("while true; do echo \"# $(date -u +%Y-%m-%dT%H:%M:%SZ)\"; "
                 "ps -eo pid,ppid,pgid,sid,user,lstart,etimes,stat,args ww | grep -E '^ *PID|[p]ython|[r]un\\.sh|[s]leep 5$'; "
                 "sleep 2; done", "logs/ps.txt")
    (r.dir / "train.py").write_text(TORN_TRAIN)
    # the dry run: a model the CPU steps through, whose checkpoint (~110 MB) still takes a while to write
    flags = " --batch-size 16 --save-interval 15 --log-every 25" if r.gpu else (
        " --device cpu --n-layer 2 --n-head 4 --n-embd 256 --block-size 64 --vocab-size 32768 --batch-size 4 "
        "--save-interval 15 --log-every 5")
    (r.dir / "run.sh").write_text(TORN_LOOP.format(python=_python3(), flags=flags))
    (r.dir / "run.sh").chmod(0o755)
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)
    ckpt = r.dir / "ckpt" / "last.pt"

    def text(rel: str = "logs/train.log") -> str:
        path = r.dir / rel
        return path.read_text(errors="replace") if path.exists() else ""

    def count(what: str, rel: str = "logs/train.log") -> int:
        return text(rel).count(what)

    def until(what: str, n: int, timeout: float, rel: str = "logs/train.log") -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if count(what, rel) >= n:
                return True
            time.sleep(0.1)
        r.truth(f"waited {timeout:g}s for {n} x {what!r} in {rel}: saw {count(what, rel)}")
        return False

    def size() -> int:
        try:
            return ckpt.stat().st_size
        except OSError:
            return -1

    def matching(pattern: str) -> list[str]:
        """The processes whose command line holds `pattern`, read from /proc (a `pgrep` of the driver's
        own would show in the operator's `pgrep -af train.py`)."""
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if pattern in cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(cmdline.parent.name)
            except OSError:
                pass
        return sorted((pid for pid in found if pid != str(os.getpid())), key=int)

    def ours(pattern: str, program: str) -> list[str]:
        """This folder's processes whose command line holds `pattern` and whose program has `program` in it."""
        found = []
        for pid in matching(pattern):
            try:
                if Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(r.dir.resolve()) and program in _program(pid):
                    found.append(pid)
            except OSError:
                pass
        return found

    def parent(pid: str) -> str:
        fields = _proc_stat(pid)
        return fields[1] if len(fields) > 1 else "?"

    # every trainer process, from when the driver first sees it to when it is gone (polled every 0.1 s)
    attempts: list[str] = []
    done = threading.Event()

    def watch() -> None:
        alive: set[str] = set()
        while not done.is_set():
            now = set(ours("train.py --resume", "python"))
            for pid in sorted(now - alive, key=int):
                attempts.append(pid)
                r.truth(f"trainer attempt {len(attempts)}: PID {pid} seen (parent PID {parent(pid)}); "
                        f"ckpt/last.pt is {size()} bytes")
            for pid in sorted(alive - now, key=int):
                r.truth(f"trainer attempt {attempts.index(pid) + 1} (PID {pid}) gone; ckpt/last.pt is {size()} bytes; "
                        f"train.log's last line: {text().strip().splitlines()[-1] if text().strip() else '(empty)'!r}")
            alive = now
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)

    def pkill_would_match(pattern: str) -> list[str]:
        """The PIDs `pkill -f PATTERN` would signal: its regular expression over each command line."""
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if re.search(pattern, cmdline.read_bytes().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")):
                    found.append(cmdline.parent.name)
            except OSError:
                pass
        return sorted((pid for pid in found if pid != str(os.getpid())), key=int)

    def stop_loop(n: int) -> None:
        """The operator's `pkill -f ./run.sh` (a plain `pkill -f run.sh` also matches the lent machine's own
        `device-run.sh`, and killed a recording); `kill <the loop's PID>` wherever the pattern would still
        match a process not of this folder (a dry run on a shared machine)."""
        loops = ours("run.sh", "bash")
        every = pkill_would_match("./run.sh")
        r.truth(f"loop {n}: its bash is PID(s) {loops}; trainer(s) now: {ours('train.py --resume', 'python')}")
        if set(every) <= set(loops):
            op.run("pkill -f ./run.sh")
        else:
            r.truth(f"`pkill -f ./run.sh` would match PIDs not of this folder ({sorted(set(every) - set(loops))}): "
                    f"the operator types `kill {' '.join(loops)}` instead")
            op.run(f"kill {' '.join(loops)}")
        r.truth(f"loop {n}: bash PID(s) {loops} {'gone' if all(_exited(p, 10) for p in loops) else 'still there'}; "
                f"trainer(s) left: {ours('train.py --resume', 'python')}")

    try:
        r.truth(f"train.py (checkpoints straight into ckpt/last.pt every 15 s of training, resumes from it if it "
                f"exists) and run.sh (the supervisor loop) are in the folder; run.sh's trainer line: "
                f"{_python3()} train.py --resume ckpt/last.pt{flags}")
        watcher.start()
        launch = "nohup ./run.sh > logs/supervisor.log 2>&1 &"
        r.truth(f"loop 1: operator types `{launch}`")
        op.run(launch)
        time.sleep(1)
        r.truth(f"loop 1 running: bash PID(s) {ours('run.sh', 'bash')}")

        until("saved checkpoint", 1, 300)
        r.truth(f"attempt 1 saved its first checkpoint: {_last(r'saved checkpoint .*', text())!r}")
        op.run("tail -n 3 logs/train.log")
        op.run("nvidia-smi" if r.gpu else "uptime")

        until("saved checkpoint", 3, 300)
        full = size()
        r.truth(f"attempt 1's third checkpoint: {_last(r'saved checkpoint .*', text())!r}; ckpt/last.pt is {full} bytes")
        op.run("ls -la ckpt/")
        op.run("pgrep -af train.py")
        trainers = ours("train.py --resume", "python")
        pid1 = trainers[0] if trainers else "?"

        # the kill: the operator's `kill -9`, timed by the driver to land while the trainer rewrites
        # ckpt/last.pt in place (seen truncated, then grown past 35 % of its full size)
        killed, saved_n, truncated, missed = False, count("saved checkpoint"), False, 0
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and missed < 3:
            s = size()
            truncated = truncated or 0 <= s < 0.3 * full
            if truncated and s >= 0.35 * full:
                r.truth(f"ckpt/last.pt is being rewritten: {s} bytes of {full} ({100 * s / full:.0f} %): operator "
                        f"types `kill -9 {pid1}`")
                op.run(f"kill -9 {pid1}")
                r.truth(f"kill -9 {pid1} returned; ckpt/last.pt is {size()} bytes; train.log's last line: "
                        f"{text().strip().splitlines()[-1]!r}")
                killed = True
                break
            if truncated and count("saved checkpoint") > saved_n:
                missed += 1
                r.truth(f"a save ended before the kill could land in it ({size()} bytes): waiting for the next one")
                saved_n, truncated = count("saved checkpoint"), False
            time.sleep(0.005)
        if not killed:
            r.truth(f"no save could be caught mid-write: operator types `kill -9 {pid1}` anyway")
            op.run(f"kill -9 {pid1}")
        gone = _exited(pid1, 15)
        steps = re.findall(r"step (\d+) loss", text())
        last_saved = _last(r"saved checkpoint step \d+", text())
        r.truth(f"attempt 1 (PID {pid1}) {'gone' if gone else 'still running 15 s after the kill'}; ckpt/last.pt "
                f"is {size()} bytes (the full checkpoints were {full}); its last step line: step "
                f"{steps[-1] if steps else '?'}; its last saved checkpoint: {last_saved!r}")

        # the loop restarts the trainer, which dies in torch.load; wait for three such failures
        until("exited with code", 4, 200 if r.gpu else 400, "logs/supervisor.log")
        exits = re.findall(r"exited with code \d+", text("logs/supervisor.log"))
        r.truth(f"the supervisor logged {len(exits)} exits: {exits}")
        time.sleep(2)
        r.truth("operator looks: `tail -n 20 logs/train.log`, `tail -n 8 logs/supervisor.log`, `ls -la ckpt/`, "
                + ("`nvidia-smi`" if r.gpu else "`uptime`"))
        op.run("tail -n 20 logs/train.log")
        op.run("tail -n 8 logs/supervisor.log")
        op.run("ls -la ckpt/")
        op.run("nvidia-smi" if r.gpu else "uptime")
        stop_loop(1)
        shown, _ = op.run("pgrep -af train.py")
        left = ours("train.py --resume", "python")
        if left:
            r.truth(f"operator kills the trainer that outlived the loop: `kill {' '.join(left)}`")
            op.run(f"kill {' '.join(left)}")
            r.truth(f"trainer(s) {left} {'gone' if all(_exited(p, 15) for p in left) else 'still there'}")
        else:
            r.truth("no trainer was running when the loop was stopped (it was in its `sleep 5`)")
        op.run("mv ckpt/last.pt ckpt/last.pt.bad")
        r.truth(f"operator moved the torn file aside: ckpt/last.pt.bad, "
                f"{(r.dir / 'ckpt' / 'last.pt.bad').stat().st_size if (r.dir / 'ckpt' / 'last.pt.bad').exists() else '?'} bytes")
        time.sleep(3)

        launch2 = "nohup ./run.sh > logs/supervisor2.log 2>&1 &"
        saved_before = count("saved checkpoint")
        r.truth(f"loop 2: operator types `{launch2}`")
        op.run(launch2)
        time.sleep(1)
        r.truth(f"loop 2 running: bash PID(s) {ours('run.sh', 'bash')}")
        until("saved checkpoint", saved_before + 2, 300)
        r.truth(f"the fresh attempt saved its second checkpoint: {_last(r'saved checkpoint .*', text())!r}")
        time.sleep(6)
        op.run("tail -n 3 logs/train.log")
        stop_loop(2)
        op.run("pgrep -af train.py")
        left = ours("train.py --resume", "python")
        r.truth(f"operator stops the trainer with SIGTERM: `kill {' '.join(left)}`; train.log's last line: "
                f"{text().strip().splitlines()[-1]!r}")
        if left:
            op.run(f"kill {' '.join(left)}")
            r.truth(f"trainer(s) {left} {'gone' if all(_exited(p, 15) for p in left) else 'still there'}; "
                    f"train.log's last line: {text().strip().splitlines()[-1]!r}")
        time.sleep(3)
        op.run("tail -n 3 logs/train.log; ls -la ckpt/")
        op.run("nvidia-smi" if r.gpu else "uptime")
        time.sleep(3)
    finally:
        env.clear()
        env.update(saved)
        r.stop_ours("run.sh")
        r.stop_ours("train.py --resume")
        time.sleep(1)
        done.set()
        watcher.join(timeout=5)
        # each attempt as train.log tells it: its first line, how it started, its last step and save, its last line
        for n, part in enumerate(re.split(r"(?m)^(?=\S+ \S+ INFO config: )", text())[1:], 1):
            lines = part.strip().splitlines()
            start = next((ln for ln in lines if "resuming from" in ln or "starting from scratch" in ln), "(neither)")
            last_step, last_save = _last(r"step \d+ loss", part), _last(r"saved checkpoint step \d+", part)
            r.truth(f"train.log attempt {n}: first line at {lines[0][:23]}; {start[24:]!r}; last step line "
                    f"{last_step!r}; last saved: {last_save!r}; "
                    f"last line {lines[-1][:160]!r}")
        # the checkpoints are the trainer's state, not evidence (GBs); the listing above keeps their sizes
        for f in (r.dir / "ckpt").glob("*"):
            r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
            f.unlink()



# A homegrown trainer whose batches come through a "fast tokenizer extension": a native reader of
# packed records, emulated here with ctypes over native buffers. One shard's record index has a
# NULL entry (as a crashed packer job leaves it); reading that record dereferences address 0 and
# the process dies of a real SIGSEGV. The shard is reached at the same global step on every
# resume, since the resume starts from the step-400 checkpoint.
SEGV_TRAIN = r'''"""Train a small GPT-style LM on packed token shards, checkpointing to ckpt/last.pt.

    python3 train.py --resume ckpt/last.pt

Batches are read by the fast tokenizer extension's record reader (native buffers, read through
ctypes): shard s holds --records-per-shard packed records, one batch each, and global step i reads
record i % R of shard i // R.
"""
import argparse
import ctypes
import logging
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--resume", default=None, help="checkpoint to resume from (if it exists)")
p.add_argument("--ckpt", default="ckpt/last.pt", help="where to save checkpoints")
p.add_argument("--save-every", type=int, default=200, help="steps between checkpoints")
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--max-steps", type=int, default=100000)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--records-per-shard", type=int, default=50)
p.add_argument("--skip-bad-shard", action="store_true",
               help="check each shard's record index when it is opened and skip a shard with a bad entry")
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
log.info("config: %s", vars(args))

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)


# --- the fast tokenizer extension's record reader (packed records in native memory) ---------------
class Record(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("n_tokens", ctypes.c_uint32), ("flags", ctypes.c_uint32)]


TAG = 32  # bytes of a record's header: its source tag
# index entries the packer left zeroed (shard -> record numbers): its job died while writing them
_PACKER_HOLES = {9: (0,)}


class Shard:
    """One packed shard: a native buffer of int32 token ids and its record index."""

    def __init__(self, n):
        self.n = n
        R, B, T = args.records_per_shard, args.batch_size, args.block_size + 1
        g = torch.Generator().manual_seed(10_000 + n)
        # a synthetic token stream: each token the previous one plus a random step of 0-15
        start = torch.randint(0, args.vocab_size, (R, B, 1), generator=g)
        toks = ((start + torch.randint(0, 16, (R, B, T), generator=g).cumsum(-1)) % args.vocab_size).to(torch.int32)
        size = TAG + B * T * 4  # a record: its NUL-terminated source tag, then its token ids
        self.buf = ctypes.create_string_buffer(R * size)
        base = ctypes.addressof(self.buf)
        self.index = (Record * R)()
        for i in range(R):
            ctypes.memmove(base + i * size, f"shard-{n:05d}/{i:05d}".encode(), 17)
            ctypes.memmove(base + i * size + TAG, toks[i].data_ptr(), B * T * 4)
            self.index[i].data = base + i * size
            self.index[i].n_tokens = B * T
        for i in _PACKER_HOLES.get(n, ()):
            self.index[i].data = None

    def bad_records(self):
        return [i for i, rec in enumerate(self.index) if not rec.data]

    def read(self, i):
        rec = self.index[i]
        tag = ctypes.string_at(rec.data)  # the record's source tag (NUL-terminated)
        raw = ctypes.string_at(rec.data + TAG, rec.n_tokens * 4)  # the extension's copy of the token ids
        assert tag.startswith(b"shard-"), tag
        return torch.frombuffer(bytearray(raw), dtype=torch.int32).view(args.batch_size, args.block_size + 1)


shard, skipped = None, 0


def get_batch(i):
    global shard, skipped
    n = i // args.records_per_shard + skipped
    while shard is None or shard.n != n:
        log.info("loading shard %d (records of steps %d-%d)", n, (n - skipped) * args.records_per_shard,
                 (n - skipped + 1) * args.records_per_shard - 1)
        shard = Shard(n)
        if args.skip_bad_shard and (bad := shard.bad_records()):
            log.warning("shard %d: bad index entries %s (NULL data pointer), skipping the shard", n, bad)
            skipped += 1
            n += 1
    chunk = shard.read(i % args.records_per_shard).to(device, dtype=torch.long, non_blocking=True)
    return chunk[:, :-1], chunk[:, 1:]


''' + GPT_MODEL + r'''
model = GPT().to(device)
log.info("model: %.1fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume and os.path.exists(args.resume):
    state = torch.load(args.resume, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resuming from %s at step %d", args.resume, step)
elif args.resume:
    log.info("no checkpoint at %s, starting from scratch", args.resume)


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    tmp = args.ckpt + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, tmp)
    os.replace(tmp, args.ckpt)
    log.info("saved checkpoint step %d", step)


t0 = time.time()
while step < args.max_steps:
    x, y = get_batch(step)
    with ctx:
        loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        log.info("step %d loss %.4f tok/s %.0f", step, lossf, args.log_every * args.batch_size * args.block_size / (t1 - t0))
        t0 = t1
    if step % args.save_every == 0 or step == args.max_steps:
        save_checkpoint()
        t0 = time.time()
log.info("training done at step %d", step)
'''

# The operator's supervisor, in Python as people write them: Popen with the trainer's output
# appended to one log, dated lines of its own from `logging`, a restart 10 s after a failure, and
# three attempts in all.
SEGV_SUPERVISOR = '''"""Keep train.py running: restart it from its last checkpoint if it dies, up to 3 attempts."""
import logging
import signal
import subprocess
import sys
import time

MAX_ATTEMPTS = 3
RESTART_DELAY = 10  # seconds
CMD = [sys.executable, "-X", "faulthandler", "train.py", "--resume", "ckpt/last.pt"{flags}]

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                    handlers=[logging.FileHandler("logs/supervisor.log"), logging.StreamHandler()])
log = logging.getLogger("supervisor")


def describe(rc):
    if rc < 0:
        try:
            return f"returncode {{rc}} ({{signal.Signals(-rc).name}})"
        except ValueError:
            pass
    return f"returncode {{rc}}"


for attempt in range(1, MAX_ATTEMPTS + 1):
    with open("logs/train.log", "a") as out:
        proc = subprocess.Popen(CMD, stdout=out, stderr=subprocess.STDOUT)
        log.info("started train.py (attempt %d/%d, pid %d)", attempt, MAX_ATTEMPTS, proc.pid)
        rc = proc.wait()
    if rc == 0:
        log.info("train.py (pid %d) finished (returncode 0)", proc.pid)
        sys.exit(0)
    log.error("train.py (pid %d) exited with %s", proc.pid, describe(rc))
    if attempt < MAX_ATTEMPTS:
        log.info("restarting in %d s", RESTART_DELAY)
        time.sleep(RESTART_DELAY)
log.error("giving up after %d attempts", MAX_ATTEMPTS)
sys.exit(1)
'''


def segv_supervisor(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train.py").write_text(SEGV_TRAIN)
    # the dry run: a model the CPU steps through at a few dozen steps a second
    flags = (["--batch-size", "16"] if r.gpu else
             ["--device", "cpu", "--n-layer", "2", "--n-head", "4", "--n-embd", "128", "--block-size", "64",
              "--vocab-size", "4096", "--batch-size", "4"])
    (r.dir / "supervise.py").write_text(SEGV_SUPERVISOR.format(flags="".join(f', "{f}"' for f in flags)))
    py = _python3()
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    # no core files in the folder (GBs of a CUDA process's memory), whatever the machine's default
    import resource  # noqa: PLC0415 - this scenario's alone
    core = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, core[1]))
    pattern = Path("/proc/sys/kernel/core_pattern")
    r.truth(f"core size limit for the processes started from here set to 0 (was {core}); core_pattern "
            f"{pattern.read_text().strip() if pattern.exists() else '?'!r}")
    op = Transcript(r.dir)

    def text(rel: str) -> str:
        path = r.dir / rel
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(rel: str) -> str:
        lines = text(rel).strip().splitlines()
        return lines[-1][:200] if lines else "(empty)"

    def ours(script: str) -> list[str]:
        """This folder's python processes running `script` (the driver reads /proc)."""
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
                if ("python" in argv[0].decode(errors="replace") and script.encode() in argv[1:4]
                        and Path(os.readlink(cmdline.parent / "cwd")).is_relative_to(r.dir.resolve())):
                    found.append(cmdline.parent.name)
            except (OSError, IndexError):
                pass
        return sorted(found, key=int)

    # each process of the incident, from when the driver first sees it to when it has exited (0.1 s)
    seen: dict[str, str] = {}
    done = threading.Event()

    def watch() -> None:
        alive: dict[str, str] = {}
        while not done.is_set():
            now = {pid: "supervisor" for pid in ours("supervise.py")}
            now.update({pid: "trainer" for pid in ours("train.py")})
            for pid in now.keys() - alive.keys():
                fields = _proc_stat(pid)
                if fields and fields[0] == "Z":
                    continue
                seen[pid] = now[pid]
                n = sum(1 for role in seen.values() if role == now[pid])
                r.truth(f"{now[pid]} {n}: PID {pid} seen (parent {fields[1] if fields else '?'}); ckpt/last.pt "
                        f"{'exists' if (r.dir / 'ckpt' / 'last.pt').exists() else 'does not exist'}")
                alive[pid] = now[pid]
            for pid in list(alive):
                fields = _proc_stat(pid)
                if fields and fields[0] != "Z":
                    continue
                role = alive.pop(pid)
                r.truth(f"{role} PID {pid} exited ({_wait_status(fields)}); train.log's last line: "
                        f"{last_line('logs/train.log')!r}; train_manual.log's: {last_line('logs/train_manual.log')!r}")
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    try:
        r.truth(f"train.py (batches through a ctypes record reader; shard 9's index has a NULL entry for the "
                f"record of step 450, so reading it is a SIGSEGV; checkpoints ckpt/last.pt atomically every 200 "
                f"steps) and supervise.py (Popen of `{py} -X faulthandler train.py --resume ckpt/last.pt "
                f"{' '.join(flags)}`, 3 attempts, 10 s apart) are in the folder")
        watcher.start()
        launch = f"nohup {py} supervise.py > logs/supervisor.out 2>&1 & echo $!"
        r.truth(f"operator types `{launch}`")
        shown, _ = op.run(launch)
        r.truth(f"the shell printed {shown.strip()!r}")
        time.sleep(5)
        op.run("cat logs/supervisor.log")

        gave_up = r.wait_for("logs/supervisor.log", "giving up", 300 if r.gpu else 400)
        sup = [pid for pid, role in seen.items() if role == "supervisor"]
        if sup:
            _exited(sup[0], 15)
        time.sleep(1)
        r.truth(f"supervisor gave up: {gave_up}; supervisor.log: {text('logs/supervisor.log').strip().splitlines()}")
        for n, part in enumerate(re.split(r"(?m)^(?=\S+ \S+ INFO config: )", text("logs/train.log"))[1:], 1):
            lines = part.strip().splitlines()
            start = next((ln for ln in lines if "resuming from" in ln or "starting from scratch" in ln), "(neither)")
            steps = re.findall(r"(\S+ \S+) INFO step (\d+) loss", part)
            saves = re.findall(r"saved checkpoint step (\d+)", part)
            r.truth(f"train.log attempt {n}: config at {lines[0][:23]}; {start[24:]!r}; step lines "
                    f"{steps[0][1] if steps else '?'}-{steps[-1][1] if steps else '?'} "
                    f"({steps[0][0] if steps else '?'} to {steps[-1][0] if steps else '?'}); saved: {saves}; "
                    f"'Fatal Python error: Segmentation fault' in it: {'Fatal Python error: Segmentation fault' in part}")

        time.sleep(4)
        r.truth("operator looks: `tail -n 30 logs/train.log`, `tail logs/supervisor.log`, "
                + ("`nvidia-smi`" if r.gpu else "`uptime`") + ", `ls -la ckpt/`")
        op.run("tail -n 30 logs/train.log")
        op.run("tail logs/supervisor.log")
        op.run("nvidia-smi" if r.gpu else "uptime")
        op.run("ls -la ckpt/")
        time.sleep(5)

        # ~40 s of training past the checkpoint, at the pace attempt 1 had (its step lines' times)
        first = re.findall(r"(\S+ \S+) INFO step (\d+) loss", text("logs/train.log").split(" INFO config: ")[1]
                           if " INFO config: " in text("logs/train.log") else "")
        pace = 10.0
        if len(first) >= 10:
            t = [dt.datetime.strptime(a, "%Y-%m-%d %H:%M:%S,%f") for a, _ in (first[1], first[-1])]
            pace = (int(first[-1][1]) - int(first[1][1])) / max(1e-3, (t[1] - t[0]).total_seconds())
        max_steps = 400 + max(100, int(pace * 40 / 50) * 50)
        manual = (f"nohup {py} train.py --resume ckpt/last.pt --skip-bad-shard {' '.join(flags)} --max-steps "
                  f"{max_steps} > logs/train_manual.log 2>&1 & echo $!")
        r.truth(f"attempt 1's pace {pace:.1f} steps/s: the operator relaunches by hand, without the supervisor, "
                f"skipping the bad shard, to step {max_steps}: `{manual}`")
        shown, _ = op.run(manual)
        r.truth(f"the shell printed {shown.strip()!r}")
        pid = shown.strip().split()[-1] if shown.strip() else "?"
        r.wait_for("logs/train_manual.log", "skipping the shard", 180 if r.gpu else 300)
        r.truth(f"the manual run skipped the shard: {_last(r'.*skipping the shard', text('logs/train_manual.log'))!r}")
        r.wait_for("logs/train_manual.log", "training done", 240 if r.gpu else 400)
        if pid.isdigit():
            _exited(pid, 60)
        time.sleep(2)
        log = text("logs/train_manual.log")
        steps = re.findall(r"(\S+ \S+) INFO step (\d+) loss", log)
        saves = re.findall(r"saved checkpoint step (\d+)", log)
        r.truth(f"manual run (PID {pid}): {_last(r'resuming from .*', log)!r}; step lines "
                f"{steps[0][1] if steps else '?'}-{steps[-1][1] if steps else '?'} ({steps[0][0] if steps else '?'} to "
                f"{steps[-1][0] if steps else '?'}); saved: {saves}; last "
                f"line {last_line('logs/train_manual.log')!r}")
        time.sleep(3)
        r.truth("operator looks: `tail -n 3 logs/train_manual.log`, " + ("`nvidia-smi`" if r.gpu else "`uptime`")
                + ", `dmesg -T | tail`")
        op.run("tail -n 3 logs/train_manual.log")
        op.run("nvidia-smi" if r.gpu else "uptime")
        op.run("dmesg -T | tail")
        time.sleep(3)
    finally:
        env.clear()
        env.update(saved)
        r.stop_ours("supervise.py")
        r.stop_ours("train.py --resume")
        time.sleep(1)
        done.set()
        watcher.join(timeout=5)
        resource.setrlimit(resource.RLIMIT_CORE, core)
        # the checkpoints are the trainer's state, not evidence (GBs); the `ls -la ckpt/` keeps their sizes
        for f in [*(r.dir / "ckpt").glob("*"), *r.dir.glob("core*")]:
            r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
            f.unlink()


def port_in_use(r: Recording) -> None:
    r.gpus_and_processes()
    op = Transcript(r.dir)
    torchrun = _torchrun()
    import socket  # noqa: PLC0415 - this scenario's alone

    def free(port: int) -> bool:
        with socket.socket() as s:
            try:
                s.bind(("", port))
            except OSError:
                return False
        return True

    # torchrun's default port; a dry run on a shared machine takes the next free one if another job holds it
    port = 29500 if r.gpu else next(p for p in range(29500, 29600) if free(p))
    look, budget3 = (40, 40) if r.gpu else (25, 20)  # s from run 1's launch to the look; run 3's --seconds
    head = (f"nohup {torchrun} --nproc-per-node 2 --master-port {port} -m dflash_postmortem.replay.train "
            "--run-name ddp")
    cmds = {1: f"{head} --seconds 900 {r.model} > logs/run1.log 2>&1 &",
            2: f"{head} --seconds 900 {r.model} > logs/run2.log 2>&1 &",
            3: f"{head} --seconds {budget3} --lr 2e-4 {r.model} > logs/run3.log 2>&1 &"}
    smi = "nvidia-smi" if r.gpu else "uptime"

    # the log the operator's habit tails: an older run's (a stand-in the driver writes, dated ~19 h ago,
    # in the trainer's format: two ranks, killed at its step 85, no `Training stopped`)
    import random  # noqa: PLC0415 - this scenario's alone
    rng = random.Random(85)
    t0 = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=19, minutes=23)

    def at(s: float) -> str:
        return (t0 + dt.timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S")

    old = []
    for rank in (1, 0):
        old.append(f"{at(0)} [ddp] Joining process group: rank {rank} of 2, backend gloo, attempt 0")
    for s, line in ((0, "Process group ready"), (0, "Loading dataset ..."), (0, "Dataset ready: 524288 tokens"),
                    (0, f"Loading target model on {'cuda:0' if r.gpu else 'cpu'} ..."), (1, "Target ready: 0.83B params"),
                    (1, f"Loading drafter on {'cuda:0' if r.gpu else 'cpu'} ..."), (6, "Drafter ready"),
                    (6, "Starting training threads")):
        old += [f"{at(s)} [ddp] {line}"] * 2
    for step in range(5, 90, 5):
        loss, tok = 10.5 + rng.uniform(-0.08, 0.08), rng.randint(40500, 42800)
        old += [f"{at(10 + step / 5)} [ddp] step {step} loss {loss:.4f} tok/s {tok + d} queue 0" for d in (0, -3)]
    path = r.dir / "logs" / "train.log"
    path.write_text("\n".join(old) + "\n")
    mtime = (t0 + dt.timedelta(seconds=10 + 85 / 5)).timestamp()
    os.utime(path, (mtime, mtime))
    r.truth(f"the driver wrote logs/train.log beforehand: a stand-in for an older run's log ({len(old)} lines, "
            f"{at(0)} to {at(10 + 85 / 5)}, step lines 5-85 of two ranks, no 'Training stopped'), its mtime set to "
            "its last line's time; no process of this recording ever writes it")
    r.truth(f"port {port} free before run 1: {free(port)}")

    def text(n: int) -> str:
        p = r.dir / "logs" / f"run{n}.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def steps(n: int) -> list[tuple[str, str]]:
        return re.findall(r"(\S+ \S+) \[ddp\] step (\d+) loss", text(n))

    def last_line(n: int) -> str:
        lines = text(n).strip().splitlines()
        return lines[-1][:240] if lines else "(empty)"

    def said(n: int) -> str:
        found = steps(n)
        lines = text(n).splitlines()
        return (f"run{n}.log: {len(lines)} lines; {len(found)} step lines"
                + (f" (step {found[0][1]} at {found[0][0]} to step {found[-1][1]} at {found[-1][0]})" if found else "")
                + f"; 'Training stopped' x{text(n).count('Training stopped')}; last line {last_line(n)!r}")

    # each process of the incident (agents and workers: `--run-name ddp`, in this folder), from when the
    # driver first sees it to when it has exited (0.2 s)
    run_of: dict[str, int] = {}
    role: dict[str, str] = {}
    exited: set[str] = set()
    current = [0]
    done = threading.Event()

    def ours() -> dict[str, str]:
        found = {}
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
                if (b"dflash_postmortem.replay.train" in argv and b"--run-name" in argv
                        and argv[argv.index(b"--run-name") + 1] == b"ddp"
                        and Path(os.readlink(cmdline.parent / "cwd")).is_relative_to(r.dir.resolve())):
                    agent = any(b"torchrun" in a or b"distributed.run" in a for a in argv[1:3])
                    found[cmdline.parent.name] = "agent" if agent else "worker"
            except (OSError, IndexError, ValueError):
                pass
        return found

    def watch() -> None:
        alive: set[str] = set()
        while not done.is_set():
            for pid, what in ours().items():
                if pid in role:
                    continue
                fields = _proc_stat(pid)
                if not fields or fields[0] == "Z":
                    continue
                n = run_of.get(fields[1], current[0]) if what == "worker" else current[0]
                run_of[pid], role[pid] = n, what
                alive.add(pid)
                try:
                    args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    args = "?"
                r.truth(f"run {n} {what}: PID {pid} seen (parent {fields[1]}): {args[:200]!r}")
            for pid in sorted(alive):
                fields = _proc_stat(pid)
                if fields and fields[0] != "Z":
                    continue
                alive.discard(pid)
                exited.add(pid)
                n = run_of[pid]
                r.truth(f"run {n} {role[pid]} PID {pid} exited ({_wait_status(fields)}); run{n}.log's last line: "
                        f"{last_line(n)!r}")
            time.sleep(0.2)

    def pids(n: int, what: str | None = None) -> list[str]:
        return sorted((p for p, k in run_of.items() if k == n and what in (None, role[p])), key=int)

    def gone(n: int, timeout: float) -> bool:
        """Wait until run `n` has been seen and all its processes have exited."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pids(n, "agent") and all(p in exited for p in pids(n)):
                return True
            time.sleep(0.2)
        return False

    def launch(n: int) -> float:
        current[0] = n
        r.truth(f"run {n}: operator types `{cmds[n]}`")
        op.run(cmds[n])
        return time.monotonic()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        started = launch(1)
        seen = r.wait_for("logs/run1.log", "step 5 ", 240 if r.gpu else 300)
        first = steps(1)
        r.truth(f"run 1 logged its first step line: {seen} ({first[0][0] if first else '?'}); agent "
                f"{pids(1, 'agent')}, workers {pids(1, 'worker')}")
        time.sleep(max(0.0, started + look - time.monotonic()))

        r.truth(f"~{look} s after run 1's launch the operator looks at the wrong file, `tail -n 3 logs/train.log` (the "
                f"older run's); meanwhile {said(1)}")
        op.run("tail -n 3 logs/train.log")
        time.sleep(2)
        r.truth("the operator takes run 1 for stuck and launches the same command again, into logs/run2.log, "
                f"same --master-port {port}, run 1 still running")
        launch(2)
        ended = gone(2, 90)
        r.truth(f"run 2 ended by itself: {ended}; its PIDs {pids(2)}; {said(2)}")
        for line in text(2).splitlines():
            if any(k in line for k in ("EADDRINUSE", "DistNetworkError", "Error", "error:")):
                r.truth(f"run2.log: {line.strip()[:300]!r}")
        r.truth(f"run 1 meanwhile: agent {pids(1, 'agent')} exited: {[p in exited for p in pids(1, 'agent')]}; {said(1)}")
        time.sleep(3)

        r.truth(f"operator looks: `tail -n 5 logs/run2.log`, `{smi}`, `ps -ef | grep [t]orchrun`")
        op.run("tail -n 5 logs/run2.log")
        op.run(smi)
        shown, _ = op.run("ps -ef | grep [t]orchrun")
        listed = [ln.split()[1] for ln in shown.splitlines() if "--master-port" in ln and "--run-name ddp" in ln]
        agent1 = pids(1, "agent")
        pid = listed[0] if listed else (agent1[0] if agent1 else "?")
        r.truth(f"`ps -ef | grep [t]orchrun` listed these torchrun commands of the job: {listed}; the driver's run 1 "
                f"agent {agent1}; run 1's last step line so far {steps(1)[-1] if steps(1) else '?'}")
        time.sleep(4)

        r.truth(f"the operator restarts cleanly anyway with a changed flag: `kill {pid}` (SIGTERM to run 1's agent)")
        op.run(f"kill {pid}")
        ended = gone(1, 90)
        r.truth(f"run 1 all exited within 90 s: {ended}; {said(1)}")
        tail = text(1).splitlines()
        k = max((i for i, ln in enumerate(tail) if " [ddp] step " in ln), default=-1)
        for line in tail[k + 1:k + 40]:
            r.truth(f"run1.log after its last step line: {line.rstrip()[:300]!r}")
        wait = ("for i in $(seq 60); do nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -q . || break; "
                "sleep 2; done; nvidia-smi" if r.gpu else
                "for i in $(seq 60); do ps -ef | grep -q '[d]flash_postmortem.replay.train --run-name ddp ' || break; "
                "sleep 2; done; uptime")
        r.truth("the operator waits until the GPU is free" if r.gpu else "the operator waits until the job's processes are gone")
        op.run(wait, timeout=300)
        r.truth(f"port {port} free now (driver's bind test): {free(port)}")
        time.sleep(3)

        r.truth(f"run 3: --lr 2e-4 and --seconds {budget3}, into logs/run3.log, same --master-port {port}")
        launch(3)
        seen = r.wait_for("logs/run3.log", "step 5 ", 240 if r.gpu else 300)
        r.truth(f"run 3 logged its first step line: {seen}; agent {pids(3, 'agent')}, workers {pids(3, 'worker')}")
        r.wait_for("logs/run3.log", "Training stopped", budget3 + 180)
        ended = gone(3, 120)
        r.truth(f"run 3 all exited: {ended}; {said(3)}")
        time.sleep(3)
        r.truth(f"operator looks: `tail -n 3 logs/run3.log`, `{smi}`")
        op.run("tail -n 3 logs/run3.log")
        op.run(smi)
        time.sleep(3)
        for n in (1, 2, 3):
            r.truth(f"summary run {n}: agent {pids(n, 'agent')}, workers {pids(n, 'worker')}; {said(n)}")
    finally:
        done.set()
        watcher.join(timeout=5)


# A plain PyTorch trainer whose metrics go only to TensorBoard (runs/<run-name>, flushed every 5 s);
# its stdout holds a banner and its checkpoint lines. Batches come from a producer thread through a
# bounded queue; with --hang-at the producer blocks for good before that step's batch (an Event
# nobody sets, as a deadlock would) and the loop waits in queue.get() with no timeout. A SIGTERM
# handler (save and exit after the current step, for preemption) never gets to act while it waits.
TB_TRAIN = r'''"""Train a small GPT-style LM on a synthetic token stream; metrics go to TensorBoard.

    nohup python3 train.py --run-name lm-a > nohup.out 2>&1 &
    tensorboard --logdir runs

Batches are made by a producer thread and handed over through a bounded queue (a prefetcher).
A checkpoint goes to ckpt/last.pt every --ckpt-every steps; --resume goes on from it, logging into
the same runs/<run-name>. On SIGTERM it saves a checkpoint after the current step and exits.
"""
import argparse
import math
import os
import queue
import signal
import threading
import time

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.tensorboard import SummaryWriter

p = argparse.ArgumentParser()
p.add_argument("--run-name", required=True, help="TensorBoard logs go to runs/<run-name>")
p.add_argument("--resume", action="store_true", help="go on from --ckpt")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--ckpt-every", type=int, default=100)
p.add_argument("--seconds", type=float, default=3600, help="training time budget")
p.add_argument("--max-steps", type=int, default=20000)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=16)
p.add_argument("--n-embd", type=int, default=1024)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--warmup", type=int, default=100)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--prefetch", type=int, default=8, help="batches the producer may run ahead")
p.add_argument("--seed", type=int, default=1337)
p.add_argument("--hang-at", type=int, default=-1,
               help="testing: the producer blocks for good before the batch of this step")
args = p.parse_args()

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.block_size


def make_batch(i):
    """The batch of step i, (batch, block + 1) token ids: random walks over the vocabulary (each id
    the last plus 0-15), seeded by the step, so a resumed run sees the same batches."""
    g = torch.Generator().manual_seed(args.seed * 1_000_003 + i)
    start = torch.randint(0, args.vocab_size, (args.batch_size, 1), generator=g)
    walk = (start + torch.randint(0, 16, (args.batch_size, args.block_size + 1), generator=g).cumsum(1)) % args.vocab_size
    return walk.pin_memory() if cuda else walk


batches = queue.Queue(maxsize=args.prefetch)


def producer(first):
    i = first
    while True:
        if i == args.hang_at:
            threading.Event().wait()  # nobody ever sets it
        batches.put(make_batch(i))
        i += 1


''' + GPT_MODEL + r'''
model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)
print(f"{args.run_name}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
      f"{tokens_per_step} tokens per step, TensorBoard logs in runs/{args.run_name}", flush=True)

step = 0
if args.resume:
    state = torch.load(args.ckpt, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    print(f"resumed from {args.ckpt} at step {step}", flush=True)

writer = SummaryWriter(log_dir=os.path.join("runs", args.run_name), flush_secs=5)


def lr_at(s):
    if s < args.warmup:
        return args.lr * (s + 1) / args.warmup
    frac = min(1.0, (s - args.warmup) / max(1, args.max_steps - args.warmup))
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, args.ckpt + ".tmp")
    os.replace(args.ckpt + ".tmp", args.ckpt)
    print(f"saved checkpoint step {step} to {args.ckpt}", flush=True)


stop_requested = False


def on_sigterm(signum, frame):
    global stop_requested
    stop_requested = True
    print("SIGTERM: saving a checkpoint and stopping after this step", flush=True)


signal.signal(signal.SIGTERM, on_sigterm)
threading.Thread(target=producer, args=(step,), name="producer", daemon=True).start()

saved = step
t_start = t0 = time.time()
while step < args.max_steps and time.time() - t_start < args.seconds and not stop_requested:
    lr = lr_at(step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    chunk = batches.get().to(device, non_blocking=True)
    with ctx:
        loss = model(chunk[:, :-1], chunk[:, 1:])
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        writer.add_scalar("train/loss", lossf, step)
        writer.add_scalar("train/tokens_per_sec", args.log_every * tokens_per_step / (t1 - t0), step)
        writer.add_scalar("train/lr", lr, step)
        t0 = t1
    if step % args.ckpt_every == 0:
        save_checkpoint()
        saved = step
        t0 = time.time()
if saved != step:
    save_checkpoint()
writer.close()
print(f"training done at step {step}", flush=True)
'''


def _tb_scalars(folder: Path, tag: str = "train/loss") -> list[tuple[str, list[tuple[float, int, float]]]]:
    """Each TensorBoard events file in `folder` (oldest first, by name) with its `tag` scalars (wall
    time, step, value), read with TensorBoard's own reader; [] where it cannot be imported."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: PLC0415
    except ImportError:
        return []
    out = []
    for f in sorted(folder.glob("events.out.tfevents.*")):
        ea = EventAccumulator(str(f), size_guidance={"scalars": 0})
        ea.Reload()
        found = ea.Scalars(tag) if tag in ea.Tags().get("scalars", []) else []
        out.append((f.name, [(e.wall_time, e.step, e.value) for e in found]))
    return out


def _threads(pid: str) -> tuple[int, dict[str, int], int, str]:
    """`pid`'s threads from /proc: how many, their states (counted), their CPU ticks (user + system,
    all threads) and the main thread's wchan."""
    states: dict[str, int] = {}
    ticks, n = 0, 0
    for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        n += 1
        states[fields[0]] = states.get(fields[0], 0) + 1
        ticks += int(fields[11]) + int(fields[12])
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text().strip() or "0"
    except OSError:
        wchan = "?"
    return n, states, ticks, wchan


def _smi_rows(r: Recording, since: float, until: float) -> str:
    """logs/smi.csv between two times (time.time()): rows, utilization and memory seen."""
    path = r.dir / "logs" / "smi.csv"
    if not path.exists():
        return "no smi.csv"
    util, mem = [], []
    for line in path.read_text(errors="replace").splitlines()[1:]:
        cells = [c.strip() for c in line.split(",")]
        try:
            t = dt.datetime.strptime(cells[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=dt.UTC).timestamp()
        except (ValueError, IndexError):
            continue
        if since <= t <= until:
            util.append(cells[5])
            mem.append(int(cells[3].split()[0]))
    return (f"smi.csv {_utc(since)}-{_utc(until)}: {len(util)} rows, utilization {sorted(set(util))}, memory.used "
            f"{min(mem) if mem else '?'}-{max(mem) if mem else '?'} MiB")


def tb_hang(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train.py").write_text(TB_TRAIN)
    py = _python3()
    # the dry run: a model one CPU thread steps through at a few dozen steps a second
    model = "" if r.gpu else (" --device cpu --n-layer 2 --n-head 2 --n-embd 128 --block-size 128 "
                              "--vocab-size 2048 --batch-size 8")
    hang_at, look, budget2 = 470, 60, (40 if r.gpu else 25)
    cmd1 = f"nohup {py} train.py --run-name lm-a --hang-at {hang_at}{model} > nohup.out 2>&1 &"
    cmd2 = f"nohup {py} train.py --run-name lm-a --resume --seconds {budget2}{model} >> nohup.out 2>&1 &"
    smi = "nvidia-smi" if r.gpu else "uptime"
    tb = r.dir / "runs" / "lm-a"
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)

    def text(rel: str = "nohup.out") -> str:
        path = r.dir / rel
        return path.read_text(errors="replace") if path.exists() else ""

    def ours() -> list[str]:
        """This folder's python processes running train.py (the driver reads /proc)."""
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
                if ("python" in argv[0].decode(errors="replace") and b"train.py" in argv[1:3]
                        and Path(os.readlink(cmdline.parent / "cwd")).is_relative_to(r.dir.resolve())):
                    found.append(cmdline.parent.name)
            except (OSError, IndexError):
                pass
        return sorted(found, key=int)

    def tb_said() -> str:
        files = _tb_scalars(tb)
        if not files:
            return "no TensorBoard events file (or no reader)"
        return "; ".join(f"{name}: {len(s)} train/loss scalars" + (
            f", step {s[0][1]} ({_utc(s[0][0])}, loss {s[0][2]:.4f}) to step {s[-1][1]} ({_utc(s[-1][0])}, loss "
            f"{s[-1][2]:.4f})" if s else "") for name, s in files)

    # each trainer, from when the driver first sees it to when it has exited (0.1 s)
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        alive: set[str] = set()
        while not done.is_set():
            for pid in ours():
                if pid in seen:
                    continue
                fields = _proc_stat(pid)
                if not fields or fields[0] == "Z":
                    continue
                seen.append(pid)
                alive.add(pid)
                r.truth(f"run {len(seen)}: trainer PID {pid} seen (parent {fields[1]}); ckpt/last.pt "
                        f"{'exists' if (r.dir / 'ckpt' / 'last.pt').exists() else 'does not exist'}")
            for pid in sorted(alive):
                fields = _proc_stat(pid)
                if fields and fields[0] != "Z":
                    continue
                alive.discard(pid)
                last = text().strip().splitlines()
                r.truth(f"run {seen.index(pid) + 1}: trainer PID {pid} exited ({_wait_status(fields)}); nohup.out's "
                        f"last line {last[-1] if last else '(empty)'!r}")
            time.sleep(0.1)

    def trainer(n: int, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(seen) < n:
            time.sleep(0.1)
        return seen[n - 1] if len(seen) >= n else "?"

    watcher = threading.Thread(target=watch, daemon=True)
    try:
        r.truth(f"train.py is in the folder: plain PyTorch, metrics only to TensorBoard (runs/lm-a, train/loss, "
                f"train/tokens_per_sec, train/lr every 10 steps, flush_secs=5), stdout only a banner and its "
                f"checkpoint lines (ckpt/last.pt every 100 steps); batches from a producer thread through "
                f"queue.Queue(maxsize=8); --hang-at {hang_at}: the producer blocks for good (an Event nobody "
                f"sets) before the batch of step {hang_at + 1}, and the loop waits in queue.get() with no timeout; "
                f"a SIGTERM handler asks for a checkpoint and a stop after the current step")
        watcher.start()
        r.truth(f"run 1: operator types `{cmd1}`")
        op.run(cmd1)
        pid1 = trainer(1)
        r.truth(f"run 1 running: PID {pid1} ({_program(pid1)})")

        # the hang: the loop has done step `hang_at` and logged it; TensorBoard's writer flushes it
        # within 5 s, then nothing more comes
        deadline = time.monotonic() + (300 if r.gpu else 400)
        scalars: list[tuple[float, int, float]] = []
        while time.monotonic() < deadline:
            files = _tb_scalars(tb)
            scalars = files[0][1] if files else []
            if scalars and scalars[-1][1] >= hang_at:
                break
            if pid1.isdigit() and _proc_stat(pid1)[:1] in ([], ["Z"]):
                break
            time.sleep(2)
        hung_at = scalars[-1][0] if scalars else time.time()
        saves = re.findall(r"saved checkpoint step (\d+)", text())
        r.truth(f"run 1's last TensorBoard step: {scalars[-1][1] if scalars else '?'} (its wall time "
                f"{_utc(hung_at)}): the loop has done {hang_at} steps and waits for the batch of step {hang_at + 1}; "
                f"last checkpoint in nohup.out: step {saves[-1] if saves else '?'}; {tb_said()}")
        time.sleep(8)
        before = _threads(pid1)
        r.truth(f"run 1 (PID {pid1}) {time.time() - hung_at:.1f} s after its last step: /proc says {before[0]} "
                f"threads, states {before[1]}, {before[2]} CPU ticks in all, main thread's wchan {before[3]!r}; "
                f"{tb_said()}")
        time.sleep(max(0.0, hung_at + look - time.time()))

        after = _threads(pid1)
        r.truth(f"~{look} s after the hang the operator looks; run 1 (PID {pid1}): {after[0]} threads, states "
                f"{after[1]}, CPU ticks {after[2]} (+{after[2] - before[2]} since the driver's last look); "
                f"{_smi_rows(r, hung_at + 2, time.time())}; {tb_said()}")
        op.run("tail nohup.out")
        shown, _ = op.run(smi)
        listed = re.findall(r"^\|\s+\d+\s+\S+\s+\S+\s+(\d+)\s+C\s", shown, re.M) if r.gpu else []
        op.run("ls -la --time-style=full-iso runs/lm-a/")
        if not listed:
            shown, _ = op.run("ps aux | grep '[t]rain.py'")
            listed = re.findall(r"^\S+\s+(\d+)\s", shown, re.M)
        pid = pid1 if pid1 in listed else (listed[0] if listed else pid1)
        r.truth(f"the operator reads PIDs {listed} ({'nvidia-smi' if r.gpu else 'ps'}) and types `kill {pid}`")
        time.sleep(3)
        op.run(f"kill {pid}")
        sent = time.time()
        gone = _exited(pid1, 10)
        r.truth(f"run 1 (PID {pid1}) {'exited' if gone else 'still running'} {time.time() - sent:.1f} s after the "
                f"SIGTERM; nohup.out's last lines {text().strip().splitlines()[-2:]}")
        if not gone:
            op.run(f"ps -o pid,stat,etime,args -p {pid}")
            r.truth(f"the operator types `kill -9 {pid}`")
            op.run(f"kill -9 {pid}")
            r.truth(f"run 1 (PID {pid1}) {'gone' if _exited(pid1, 15) else 'still running 15 s after SIGKILL'}")
        time.sleep(3)
        op.run("tail -n 3 nohup.out")
        op.run("ls -la --time-style=full-iso ckpt/")
        time.sleep(5)

        r.truth(f"run 2: operator types `{cmd2}` (no --hang-at; the same --run-name, so the same runs/lm-a)")
        op.run(cmd2)
        pid2 = trainer(2)
        r.truth(f"run 2 running: PID {pid2} ({_program(pid2)})")
        r.wait_for("nohup.out", "resumed from", 120 if r.gpu else 200)
        resumed_line = _last(r"resumed from \S+ at step \d+", text())
        r.truth(f"run 2 logged {resumed_line!r}")
        r.wait_for("nohup.out", "training done", budget2 + (180 if r.gpu else 300))
        if pid2.isdigit():
            _exited(pid2, 60)
        time.sleep(6)
        files = _tb_scalars(tb)
        found = re.findall(r"resumed from \S+ at step (\d+)", text())
        resumed = int(found[-1]) if found else None
        done_line = _last(r"training done at step \d+", text())
        r.truth(f"run 2 (PID {pid2}) ended: {done_line!r}; resumed at step "
                f"{resumed}, so steps {resumed + 1 if resumed is not None else '?'}-{hang_at} were trained again "
                f"({hang_at - resumed if resumed is not None else '?'} steps); {tb_said()}")
        if len(files) >= 2 and files[0][1] and files[1][1]:
            same = {s: v for _, s, v in files[0][1]}
            pairs = [(s, same[s], v) for _, s, v in files[1][1] if s in same]
            r.truth(f"the steps both events files hold: {[p[0] for p in pairs]}; train/loss run 1 vs run 2: "
                    f"{[(s, round(a, 4), round(b, 4)) for s, a, b in pairs[:4]]}")
        r.truth(f"operator's last look: `tail -n 4 nohup.out`, `{smi}`, `ls -la --time-style=full-iso runs/lm-a/`")
        op.run("tail -n 4 nohup.out")
        op.run(smi)
        op.run("ls -la --time-style=full-iso runs/lm-a/")
        time.sleep(3)
    finally:
        env.clear()
        env.update(saved)
        for pid in seen:
            if _proc_stat(pid)[:1] not in ([], ["Z"]):
                r.truth(f"PID {pid} still running at the end: SIGKILL")
                subprocess.run(["kill", "-9", pid], check=False)
        time.sleep(1)
        done.set()
        watcher.join(timeout=5)
        # the checkpoints are the trainer's state, not evidence (GBs); the `ls -la ckpt/` keeps their sizes
        for f in (r.dir / "ckpt").glob("*"):
            r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
            f.unlink()


# A homegrown trainer whose model is built from its flags alone and whose --resume loads
# ckpt/last.pt into it: a resume after a change of width or depth fails in load_state_dict.
# Python `logging` in UTC; no SIGTERM handler (a `kill` ends it where it is).
RM_TRAIN = r'''"""Train a small GPT-style LM on a synthetic token stream, checkpointing to ckpt/last.pt every 100 steps.

    python3 train.py --n-layer 8 --n-embd 768 --seconds 600
    python3 train.py --resume --n-layer 8 --n-embd 768     # go on from ckpt/last.pt
"""
import argparse
import logging
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--n-layer", type=int, default=8)
p.add_argument("--n-head", type=int, default=16)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--warmup", type=int, default=100, help="steps of linear warm-up")
p.add_argument("--seconds", type=float, default=3600, help="stop after this many seconds of training")
p.add_argument("--resume", action="store_true", help="go on from --ckpt")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--save-every", type=int, default=100)
p.add_argument("--log-every", type=int, default=20)
p.add_argument("--device", default="cuda")
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.Formatter.converter = time.gmtime  # UTC
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
log.info("config: %s", vars(args))

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

# data: a synthetic token stream (each token the previous one plus a random step of 0-15)
n_tokens = 20_000_000 if cuda else 1_000_000
g = torch.Generator().manual_seed(42)
data = (torch.randint(0, 16, (n_tokens,), generator=g).cumsum(0) % args.vocab_size).to(device)


def get_batch():
    ix = torch.randint(n_tokens - args.block_size - 1, (args.batch_size,), device=device)
    chunk = data[ix[:, None] + torch.arange(args.block_size + 1, device=device)]
    return chunk[:, :-1], chunk[:, 1:]


''' + GPT_MODEL + r'''
model = GPT().to(device)
log.info("model: %d layers, width %d, %.1fM parameters", args.n_layer, args.n_embd,
         sum(p.numel() for p in model.parameters()) / 1e6)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume and os.path.exists(args.ckpt):
    log.info("resuming from %s", args.ckpt)
    state = torch.load(args.ckpt, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resumed at step %d", step)
elif args.resume:
    log.info("no checkpoint at %s, starting from scratch", args.ckpt)
else:
    log.info("starting from scratch")


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    tmp = args.ckpt + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, tmp)
    os.replace(tmp, args.ckpt)
    log.info("saved checkpoint step %d to %s", step, args.ckpt)


log.info("training from step %d for %.0f s", step, args.seconds)
start = t0 = time.time()
while True:
    for group in optimizer.param_groups:
        group["lr"] = args.lr * min(1.0, (step + 1) / args.warmup)
    x, y = get_batch()
    with ctx:
        loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        log.info("step %d | loss %.2f | %s tok/s", step, lossf,
                 f"{args.log_every * args.batch_size * args.block_size / (t1 - t0):,.0f}")
        t0 = t1
    if step % args.save_every == 0:
        save_checkpoint()
        t0 = time.time()
    if time.time() - start >= args.seconds:
        break
save_checkpoint()
log.info("training done at step %d (%.0f s)", step, time.time() - start)
'''

# The operator's launcher, edited between runs as people do: one log per launch, named by its start
# time (the machine's local time, `date`). {flags}: none on a GPU; the dry run's CPU model.
RM_RUN_SH = """#!/bin/bash
# start train.py; one log per launch: logs/train_<start time>.log
mkdir -p logs
{python} train.py{flags} "$@" > logs/train_$(date +%Y%m%d_%H%M%S).log 2>&1
"""

# The driver's probe (a sitecustomize on the trainers' PYTHONPATH, outside the folder): samples the
# trainer's global `step` every 0.1 s into <dir>/<pid>.step, and marks a normal interpreter exit.
RM_PROBE = r'''import atexit, os, sys, threading, time

_dir = os.environ.get("RM_PROBE_DIR")
if _dir:
    _base = os.path.join(_dir, str(os.getpid()))

    def _sample():
        while True:
            n = getattr(sys.modules.get("__main__"), "step", None)
            if isinstance(n, int):
                with open(_base + ".step.tmp", "w") as f:
                    f.write(f"{time.time():.3f} {n}\n")
                os.replace(_base + ".step.tmp", _base + ".step")
            time.sleep(0.1)

    threading.Thread(target=_sample, daemon=True).start()
    atexit.register(lambda: open(_base + ".exit", "w").write(f"{time.time():.3f}\n"))

# the sitecustomize this one shadows (a distribution's), if any, runs as it would have
try:
    import importlib.machinery, importlib.util
    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [d for d in sys.path if os.path.abspath(d or ".") != _here])
    if _spec and _spec.loader:
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
except Exception:
    pass
'''


def resume_mismatch(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    # r.ps_loop()'s form, whose filter also keeps the launcher (`/bin/bash ./run.sh ...`)
    r.background("while true; do echo \"# $(date -u +%Y-%m-%dT%H:%M:%SZ)\"; "
                 "ps -eo pid,ppid,pgid,sid,user,lstart,etimes,stat,args ww | grep -E '^ *PID|[p]ython|[r]un\\.sh'; "
                 "sleep 2; done", "logs/ps.txt")
    (r.dir / "train.py").write_text(RM_TRAIN)
    # the dry run: a model the CPU steps through (one thread), logging and saving more rarely
    cpu_flags = "" if r.gpu else (" --device cpu --n-head 4 --block-size 64 --vocab-size 2048 --batch-size 8 "
                                  "--log-every 100")
    (r.dir / "run.sh").write_text(RM_RUN_SH.format(python=_python3(), flags=cpu_flags))
    (r.dir / "run.sh").chmod(0o755)
    layers, width, wider, deeper = (8, 768, 1024, 12) if r.gpu else (2, 64, 96, 3)
    probe = r.dir.parent / f"{r.name}.probe"
    shutil.rmtree(probe, ignore_errors=True)
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(RM_PROBE)
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(probe), env.get("PYTHONPATH")]))
    env["RM_PROBE_DIR"] = str(probe)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)
    typed: list[str] = []  # the operator's commands, in order: bash's history
    logs = r.dir / "logs"
    smi = "nvidia-smi" if r.gpu else "uptime"

    def run(cmd: str) -> str:
        typed.append(cmd)
        return op.run(cmd)[0]

    def text(log: str) -> str:
        path = logs / log
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(log: str) -> str:
        lines = text(log).strip().splitlines()
        return lines[-1][:300] if lines else "(empty)"

    # each process of the incident (the launcher's bash, the trainer), from when the driver first sees it
    # to when it has exited, read from /proc every 0.1 s
    run_of: dict[str, int] = {}
    role: dict[str, str] = {}
    exited: dict[str, str] = {}
    current = [0]
    done = threading.Event()

    def ours() -> dict[str, str]:
        found = {}
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
                if not Path(os.readlink(cmdline.parent / "cwd")).is_relative_to(r.dir.resolve()):
                    continue
                if b"python" in argv[0] and b"train.py" in argv[1:2]:
                    found[cmdline.parent.name] = "trainer"
                elif argv[0].endswith(b"bash") and argv[1:2] == [b"./run.sh"]:
                    found[cmdline.parent.name] = "run.sh"
            except (OSError, IndexError, ValueError):
                pass
        return found

    def watch() -> None:
        alive: set[str] = set()
        while not done.is_set():
            for pid, what in ours().items():
                fields = _proc_stat(pid)
                if pid in role or not fields or fields[0] == "Z":
                    continue
                run_of[pid], role[pid] = current[0], what
                alive.add(pid)
                try:
                    args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    args = "?"
                r.truth(f"run {current[0]} {what}: PID {pid} seen (parent {fields[1]}): {args.strip()[:200]!r}")
            for pid in sorted(alive):
                fields = _proc_stat(pid)
                if fields and fields[0] != "Z":
                    continue
                alive.discard(pid)
                exited[pid] = _wait_status(fields)
                r.truth(f"run {run_of[pid]} {role[pid]} PID {pid} exited ({exited[pid]})")
            time.sleep(0.1)

    def pid_of(n: int, what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            found = [p for p, k in list(run_of.items()) if k == n and role.get(p) == what]
            if found:
                return found[0]
            if time.monotonic() >= deadline:
                return "?"
            time.sleep(0.1)

    def gone(pid: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pid in exited:
                return True
            time.sleep(0.1)
        return False

    def sampled(pid: str) -> str:
        path, mark = probe / f"{pid}.step", probe / f"{pid}.exit"
        step = "no sample"
        if path.exists():
            t, n = path.read_text().split()
            step = f"step {n} at {_utc(float(t))}"
        return (f"probe: last sample of `step`: {step}; normal interpreter exit (atexit): "
                f"{_utc(float(mark.read_text())) if mark.exists() else 'none'}")

    def said(log: str) -> str:
        t = text(log)
        steps = re.findall(r"(\S+ \S+) INFO step (\d+) \|", t)
        saves = re.findall(r"saved checkpoint step (\d+)", t)
        first = t.splitlines()[0][:23] if t.strip() else "?"
        start = _last(r"INFO ((?:resuming from|resumed at|no checkpoint at|starting from scratch)[^\n]*)", t)
        err = _last(r"(RuntimeError: [^\n]*)", t)
        return (f"logs/{log}: {len(t.splitlines())} lines, first at {first}; {start!r}; "
                + (f"step lines {steps[0][1]}-{steps[-1][1]} ({steps[0][0]} to {steps[-1][0]}); " if steps else "no step line; ")
                + f"saved steps {saves[0] + '..' + saves[-1] if saves else 'none'} ({len(saves)}); "
                + (f"{err!r}; " if err != "?" else "")
                + f"'training done' in it: {'training done' in t}; last line {last_line(log)!r}")

    def launch(n: int, flags: str) -> tuple[str, str, float]:
        """Run `n`: the operator types the launch; the trainer's PID and its log (the new train_*.log)."""
        cmd = f"nohup ./run.sh {flags} > /dev/null 2>&1 &"
        before = {f.name for f in logs.glob("train_*.log")}
        current[0] = n
        r.truth(f"run {n}: operator types `{cmd}`")
        started = time.monotonic()
        run(cmd)
        trainer, launcher = pid_of(n, "trainer"), pid_of(n, "run.sh", 5)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (log := _newest(logs, "train_*.log", before)):
            time.sleep(0.1)
        name = log.name if log else "train_?.log"
        r.truth(f"run {n}: run.sh is PID {launcher}, the trainer PID {trainer}; its log logs/{name}")
        return trainer, name, started

    def look(n: int, tail: int) -> str:
        """The operator's habit: the newest logs, then the newest one's end."""
        shown = run("ls -t logs/train_* | head -3")
        newest = shown.split()[0] if shown.split() else "logs/train_*.log"
        r.truth(f"operator's look after run {n}: `ls -t logs/train_* | head -3` shows {shown.split()}; "
                f"`tail -n {tail} {newest}`")
        run(f"tail -n {tail} {newest}")
        return newest

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        r.truth(f"train.py (model from its flags; --resume loads ckpt/last.pt strictly; saves model, optimizer and "
                f"step every 100 steps, atomically; no SIGTERM handler) and run.sh (`{_python3()} train.py{cpu_flags} "
                f"\"$@\" > logs/train_$(date +%Y%m%d_%H%M%S).log 2>&1`) are in the folder; the driver's probe "
                f"(a sitecustomize on the trainers' PYTHONPATH, in {probe}, outside the folder) samples the "
                f"trainer's `step` every 0.1 s")

        # run 1: trains ~60 s, several checkpoints; the operator stops it with `kill <pid>`
        pid1, log1, _ = launch(1, f"--n-layer {layers} --n-embd {width} --seconds 600")
        r.wait_for(f"logs/{log1}", "saved checkpoint step 100 ", 240)
        r.truth(f"run 1 saved its step-100 checkpoint; {said(log1)}")
        look(1, 3)
        run(smi)
        r.wait_for(f"logs/{log1}", "training from step", 60)
        began = re.search(r"(\S+ \S+) INFO training from step", text(log1))
        t_began = (dt.datetime.strptime(began.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC).timestamp()
                   if began else time.time())
        time.sleep(max(0.0, t_began + 60 - time.time()))
        r.truth(f"~60 s of run 1's training; operator looks and stops it; {said(log1)}")
        run(f"tail -n 2 logs/{log1}")
        shown = run("pgrep -af train.py")
        listed = [ln.split()[0] for ln in shown.splitlines() if "train.py" in ln]
        r.truth(f"`pgrep -af train.py` lists {listed}; the driver's run-1 trainer is {pid1}: operator types `kill {pid1}`")
        run(f"kill {pid1}")
        r.truth(f"kill {pid1} returned; {sampled(pid1)}")
        ended = gone(pid1, 30)
        launcher1 = pid_of(1, "run.sh", 1)
        gone(launcher1, 10)
        r.truth(f"run 1 trainer (PID {pid1}) {'exited' if ended else 'still running 30 s after the kill'}; "
                f"{sampled(pid1)}; run.sh PID {launcher1}: {exited.get(launcher1, 'not seen exiting')}; {said(log1)}")
        time.sleep(4)
        run("ls -la ckpt/")
        time.sleep(6)

        # run 2: the wider model, resumed from run 1's checkpoint: load_state_dict fails in start-up
        r.truth(f"the operator changes the command to a wider model (--n-embd {wider}) and resumes")
        pid2, log2, started = launch(2, f"--resume --n-layer {layers} --n-embd {wider}")
        ended = gone(pid2, 180)
        r.truth(f"run 2 trainer (PID {pid2}) {'exited' if ended else 'still running after 180 s'}; {sampled(pid2)}; "
                f"run.sh: {exited.get(pid_of(2, 'run.sh', 1), 'not seen exiting')}; {said(log2)}")
        time.sleep(max(0.0, started + 30 - time.monotonic()))
        look(2, 5)
        time.sleep(5)

        # run 3: deeper as well, the same failure
        r.truth(f"the operator tries --n-layer {deeper} as well")
        pid3, log3, started = launch(3, f"--resume --n-layer {deeper} --n-embd {wider}")
        ended = gone(pid3, 180)
        r.truth(f"run 3 trainer (PID {pid3}) {'exited' if ended else 'still running after 180 s'}; {sampled(pid3)}; "
                f"run.sh: {exited.get(pid_of(3, 'run.sh', 1), 'not seen exiting')}; {said(log3)}")
        time.sleep(max(0.0, started + 20 - time.monotonic()))
        look(3, 5)
        run("ls -la ckpt/")
        time.sleep(4)

        # gives up on resuming: the checkpoint moved aside, a fresh start of the wider model
        old = f"ckpt_old_{width}"
        r.truth(f"the operator gives up on resuming: `mv ckpt {old}`, then a fresh start")
        run(f"mv ckpt {old}")
        time.sleep(3)
        pid4, log4, _ = launch(4, f"--n-layer {layers} --n-embd {wider} --seconds 60")
        r.wait_for(f"logs/{log4}", "INFO step ", 180)
        time.sleep(15)
        look(4, 2)
        ended = gone(pid4, 240)
        r.truth(f"run 4 trainer (PID {pid4}) {'exited' if ended else 'still running after 240 s'}; {sampled(pid4)}; "
                f"run.sh: {exited.get(pid_of(4, 'run.sh', 1), 'not seen exiting')}; {said(log4)}")
        time.sleep(3)
        run(f"tail -n 3 logs/{log4}")
        run(f"ls -la ckpt/ {old}/")
        run(smi)
        time.sleep(2)
        for n, log in ((1, log1), (2, log2), (3, log3), (4, log4)):
            r.truth(f"summary run {n}: run.sh PID {pid_of(n, 'run.sh', 0)}, trainer PID {pid_of(n, 'trainer', 0)}; "
                    f"{said(log)}")
    finally:
        env.clear()
        env.update(saved)
        (r.dir / "bash_history").write_text("".join(f"{cmd}\n" for cmd in typed))
        r.truth(f"bash_history written: the {len(typed)} commands the operator typed, in order, no times")
        r.stop_ours("train.py")
        time.sleep(1)
        done.set()
        watcher.join(timeout=5)
        # the checkpoints are the trainer's state, not evidence (GBs); the `ls -la` listings keep their sizes
        for f in sorted(r.dir.glob("ckpt*/*")):
            r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
            f.unlink()


# cpu-starved: the trainer (its input pipeline is CPU work: a pure-Python tokenizer in its DataLoader
# workers) and the other user's job (a pool of busy workers), written outside the incident folder.
CPU_STARVED_TRAIN = r'''"""Train a small GPT-style LM on text tokenized on the fly.

The corpus is raw text; each sample is cleaned and tokenized when the DataLoader asks for it (a
BERT-style basic tokenizer and WordPiece, in pure Python), in --num-workers worker processes.
"""
import argparse
import logging
import math
import random
import time
import unicodedata

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=600, help="training time budget")
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--block-size", type=int, default=512)
p.add_argument("--n-layer", type=int, default=6)
p.add_argument("--n-head", type=int, default=8)
p.add_argument("--n-embd", type=int, default=512)
p.add_argument("--vocab-size", type=int, default=8192)
p.add_argument("--lr", type=float, default=6e-4)
p.add_argument("--num-workers", type=int, default=4)
p.add_argument("--log-interval", type=int, default=100)
p.add_argument("--device", default="cuda")
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.Formatter.converter = time.gmtime
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")

# ---------------------------------------------------------------------------------------------
# the corpus: documents of words drawn (Zipf) from a lexicon of syllable words
SYLLABLES = [c + v + e for c in "bdfgklmnprstvz" for v in "aeiou" for e in ("", "n", "r", "s")]
_rng = random.Random(0)
LEXICON = sorted({"".join(_rng.choices(SYLLABLES, k=_rng.choice((1, 2, 2, 3, 3, 4)))) for _ in range(30000)})
_rng.shuffle(LEXICON)
CUM_WEIGHTS = list(__import__("itertools").accumulate(1.0 / (r + 10) for r in range(len(LEXICON))))
ACCENTED = {"e": "é", "a": "à", "o": "ö", "u": "ü", "n": "ñ"}


def document(index):
    """The raw text of document `index` (a few thousand characters)."""
    rng = random.Random(index)
    sentences = []
    for _ in range(rng.randint(30, 40)):
        words = rng.choices(LEXICON, cum_weights=CUM_WEIGHTS, k=rng.randint(6, 18))
        if rng.random() < 0.3:
            i = rng.randrange(len(words))
            words[i] = "".join(ACCENTED.get(ch, ch) if rng.random() < 0.3 else ch for ch in words[i])
        s = " ".join(words)
        sentences.append(s[0].upper() + s[1:] + rng.choice((".", ".", ".", "!", "?", ";", ",")))
    return "  ".join(sentences)


# ---------------------------------------------------------------------------------------------
# the tokenizer: basic (clean, accents, punctuation) then WordPiece, as BERT's reference code


def _is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch):
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class Tokenizer:
    def __init__(self, vocab_size):
        pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
        pieces += [chr(c) for c in range(33, 127)] + ["##" + chr(c) for c in range(97, 123)]
        pieces += SYLLABLES + ["##" + s for s in SYLLABLES]
        pieces += LEXICON
        self.vocab = {}
        for piece in pieces:
            if len(self.vocab) == vocab_size:
                break
            self.vocab.setdefault(piece, len(self.vocab))
        self.unk = self.vocab["[UNK]"]

    def basic(self, text):
        out = []
        for ch in text:
            if ord(ch) == 0 or ord(ch) == 0xFFFD or _is_control(ch):
                continue
            out.append(" " if _is_whitespace(ch) else ch)
        words = []
        for word in "".join(out).strip().split():
            word = unicodedata.normalize("NFD", word.lower())
            word = "".join(ch for ch in word if unicodedata.category(ch) != "Mn")
            current = []
            for ch in word:
                if _is_punctuation(ch):
                    if current:
                        words.append("".join(current))
                        current = []
                    words.append(ch)
                else:
                    current.append(ch)
            if current:
                words.append("".join(current))
        return words

    def wordpiece(self, word):
        ids, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            ids.append(found)
            start = end
        return ids

    def encode(self, text):
        ids = []
        for word in self.basic(text):
            ids.extend(self.wordpiece(word))
        return ids


class Documents(Dataset):
    """Sample i: the first block_size + 1 token ids of document i, tokenized when it is asked for."""

    def __init__(self, tokenizer, block_size, seed):
        self.tok, self.block_size, self.seed = tokenizer, block_size, seed

    def __len__(self):
        return 10**9

    def __getitem__(self, i):
        ids, part = [2], 0
        while len(ids) < self.block_size + 1:
            ids.extend(self.tok.encode(document(self.seed * 10**9 + i * 8 + part)))
            ids.append(3)
            part += 1
        return torch.tensor(ids[: self.block_size + 1], dtype=torch.long)


# ---------------------------------------------------------------------------------------------
# the model


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, d):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def main():
    torch.manual_seed(args.seed)
    log.info("config: %s", vars(args))
    device = torch.device(args.device)
    tok = Tokenizer(args.vocab_size)
    data = Documents(tok, args.block_size, args.seed)
    loader = DataLoader(data, batch_size=args.batch_size, num_workers=args.num_workers,
                        pin_memory=device.type == "cuda", persistent_workers=args.num_workers > 0)
    model = GPT(len(tok.vocab), args.block_size, args.n_layer, args.n_head, args.n_embd).to(device)
    log.info("model: %.1fM parameters, vocab %d; data: %d DataLoader workers, batch %d x %d tokens",
             sum(p.numel() for p in model.parameters()) / 1e6, len(tok.vocab), args.num_workers,
             args.batch_size, args.block_size)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    amp = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    tokens = args.batch_size * args.block_size
    step, waited, start = 0, 0.0, None
    it = iter(loader)
    t_log = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        batch = next(it)
        waited += time.perf_counter() - t0
        batch = batch.to(device, non_blocking=True)
        with amp:
            loss = model(batch[:, :-1], batch[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if start is None:  # the clock starts after the first step (workers started, kernels warm)
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = t_log = time.perf_counter()
            waited = 0.0
            log.info("first step done, training for %g s", args.seconds)
            continue
        if step % args.log_interval == 0:
            lv = loss.item()  # waits for the GPU
            now = time.perf_counter()
            n = args.log_interval
            log.info("step %d | loss %.3f | %.1f ms/step | %s tok/s | data %.1f ms", step, lv,
                     1000 * (now - t_log) / n, f"{tokens * n / (now - t_log):,.0f}", 1000 * waited / n)
            t_log, waited = now, 0.0
            if now - start >= args.seconds:
                break
            if not math.isfinite(lv):
                log.error("loss is %s, stopping", lv)
                break
    log.info("training done, %d steps", step)


if __name__ == "__main__":
    main()
'''

CPU_STARVED_HOG = r'''"""Near-duplicate filtering for the next text release: MinHash signatures of every line of every
chunk of the raw crawl, in a pool of worker processes (one chunk per task)."""
import argparse
import multiprocessing as mp
import random
import re
import time
import zlib

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=mp.cpu_count())
p.add_argument("--chunks", type=int, default=200000)
p.add_argument("--lines-per-chunk", type=int, default=2000)
p.add_argument("--num-perm", type=int, default=32)
args = p.parse_args()

WORDS = ["".join(random.Random(i).choices("abcdefghiklmnoprstuvwyz", k=random.Random(-i).randint(2, 9)))
         for i in range(20000)]
SEEDS = [random.Random(s).getrandbits(32) for s in range(args.num_perm)]
CLEAN = re.compile(r"[^a-z0-9 ]+")


def raw_lines(chunk):
    """The chunk's raw lines (a stand-in for reading it from the crawl)."""
    rng = random.Random(chunk)
    return [" ".join(rng.choices(WORDS, k=rng.randint(8, 20))) for _ in range(args.lines_per_chunk)]


def minhash(line):
    text = CLEAN.sub(" ", line.lower())
    shingles = {text[i:i + 5].encode() for i in range(max(1, len(text) - 4))}
    return tuple(min(zlib.crc32(s, seed) for s in shingles) for seed in SEEDS)


def process(chunk):
    seen, dups = set(), 0
    for line in raw_lines(chunk):
        sig = minhash(line)
        band = sig[:8]
        if band in seen:
            dups += 1
        seen.add(band)
    return chunk, dups


def main():
    t0 = time.time()
    print(f"{time.strftime('%H:%M:%S')} {args.chunks} chunks, {args.workers} workers", flush=True)
    done = dups = 0
    with mp.Pool(args.workers) as pool:
        for _, d in pool.imap_unordered(process, range(args.chunks)):
            done += 1
            dups += d
            if done % 100 == 0:
                print(f"{time.strftime('%H:%M:%S')} {done}/{args.chunks} chunks, {dups} near-duplicates, "
                      f"{done / (time.time() - t0):.1f} chunks/s", flush=True)
    print(f"{time.strftime('%H:%M:%S')} done: {done} chunks, {dups} near-duplicates", flush=True)


if __name__ == "__main__":
    main()
'''


def _step_lines(text: str) -> list[tuple[float, int, float, float, float]]:
    """The cpu-starved trainer's step lines: (UTC epoch, step, ms/step, tok/s, data ms)."""
    out = []
    for m in re.finditer(r"(?m)^(\S+ \S+) INFO step (\d+) \| loss \S+ \| ([\d.]+) ms/step \| ([\d,]+) tok/s \| "
                         r"data ([\d.]+) ms", text):
        t = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC).timestamp()
        out.append((t, int(m.group(2)), float(m.group(3)), float(m.group(4).replace(",", "")), float(m.group(5))))
    return out


def _inside(lines: list[tuple[float, int, float, float, float]], start: float, end: float) -> list:
    """The step lines whose whole interval (from the line before) lies in [start, end]."""
    return [cur for prev, cur in zip(lines, lines[1:], strict=False) if prev[0] >= start and cur[0] <= end]


def _phase(lines: list[tuple[float, int, float, float, float]], start: float, end: float) -> str:
    """The step lines whose whole interval lies in [start, end]: their medians."""
    inside = _inside(lines, start, end)
    if not inside:
        return "no step line wholly inside"
    med = [statistics.median(x[i] for x in inside) for i in (2, 3, 4)]
    return (f"{len(inside)} step lines (steps {inside[0][1]}-{inside[-1][1]}, {_utc(inside[0][0])} to "
            f"{_utc(inside[-1][0])}): median {med[0]:.1f} ms/step, {med[1]:,.0f} tok/s, data {med[2]:.1f} ms "
            f"(tok/s {min(x[3] for x in inside):,.0f}-{max(x[3] for x in inside):,.0f})")


def cpu_starved(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    r.top_loop(every=3)  # ~20 KB a snapshot with the hog's workers listed: every 3 s keeps it under 2 MB
    (r.dir / "train.py").write_text(CPU_STARVED_TRAIN)
    cores = len(os.sched_getaffinity(0))
    # the dry run: a tiny model on the CPU with one DataLoader worker, the story in half the time and a
    # hog of one worker a core (the machine is shared)
    if r.gpu:
        flags, seconds, before, look, hog_workers = "", 150, 60, 40, 2 * cores
    else:
        flags = (" --device cpu --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 --batch-size 8 --vocab-size 1024 "
                 "--num-workers 1 --log-interval 50")
        seconds, before, look, hog_workers = 75, 25, 20, cores
    py = _python3()
    # the other user's job: its own folder outside the incident's, run as `nobody` where the driver can
    # (root and setpriv), with the system's python3 (stdlib only); in the driver's session (so in the
    # trainer's autogroup, where the kernel has them), in a process group of its own
    other = r.dir.parent / f"{r.name}.other-user"
    shutil.rmtree(other, ignore_errors=True)
    other.mkdir()
    (other / "preprocess_shards.py").write_text(CPU_STARVED_HOG)
    import pwd  # noqa: PLC0415 - this scenario's alone
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        nobody = None
    hog_py = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable
    as_nobody = (os.geteuid() == 0 and shutil.which("setpriv") is not None and nobody is not None
                 and hog_py == "/usr/bin/python3")
    if as_nobody:
        os.chmod(other, 0o777)
    hog_argv = [hog_py, "preprocess_shards.py", "--workers", str(hog_workers)]
    if as_nobody:
        hog_argv = ["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups", *hog_argv]
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)
    hog: subprocess.Popen | None = None
    hog_kids: list[str] = []

    def text() -> str:
        path = r.dir / "logs" / "train.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line() -> str:
        lines = text().strip().splitlines()
        return lines[-1][:200] if lines else "(empty)"

    def loadavg() -> str:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])

    def trainer(timeout: float = 30) -> str:
        """The PID of the python running train.py in this folder (nohup exec's it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid in subprocess.run(["pgrep", "-f", "train.py --seconds"], capture_output=True, text=True).stdout.split():
                try:
                    if (Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(r.dir.resolve())
                            and "python" in _program(pid)):
                        return pid
                except OSError:
                    pass
            time.sleep(0.2)
        return "?"

    def children(pid: str) -> list[str]:
        return subprocess.run(["pgrep", "-P", pid], capture_output=True, text=True).stdout.split()

    try:
        r.truth(f"machine: {cores} CPUs usable (sched_getaffinity), {os.cpu_count()} online; kernel.sched_autogroup_enabled "
                f"{autogroup.read_text().strip() if autogroup.exists() else 'absent'}; load average {loadavg()}; "
                f"train.py is in the folder: a GPT-style LM whose DataLoader workers build each sample from raw text "
                f"with a pure-Python tokenizer (BERT-style basic tokenizer + WordPiece)")
        cmd = f"nohup {py} train.py --seconds {seconds}{flags} > logs/train.log 2>&1 &"
        r.truth(f"operator types {cmd!r}")
        op.run(cmd)
        pid = trainer()
        r.truth(f"trainer PID {pid} ({_program(pid)}), session {os.getsid(int(pid)) if pid.isdigit() else '?'}")
        if not r.wait_for("logs/train.log", "first step done", 300):
            r.truth(f"no first step: train.log's last line {last_line()!r}")
            return
        t_first = time.monotonic()
        workers = children(pid)
        r.truth(f"first step done ({last_line()!r}); the trainer's children (its DataLoader workers): {workers}")
        time.sleep(max(0.0, t_first + before - time.monotonic()))
        hog_start = time.time()
        r.truth(f"~{before} s of training; load average {loadavg()}; train.log's last line {last_line()!r}")

        hog_out = open(other / "preprocess.log", "ab")  # noqa: SIM115 - open for the hog's life
        r.truth(f"another user's job starts (no transcript, outside the operator's shell), in {other} (outside "
                f"the folder): `{' '.join(hog_argv)}` ({hog_workers} busy worker processes for {cores} CPUs"
                f"{', as nobody' if as_nobody else ', as the driver user (no setpriv as root here)'}), "
                f"output to {other / 'preprocess.log'}")
        hog = subprocess.Popen(hog_argv, cwd=other, stdout=hog_out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
                               process_group=0)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(hog_kids) < hog_workers:
            time.sleep(0.2)
            hog_kids = children(str(hog.pid))
        r.truth(f"the other job runs: PID {hog.pid} ({_program(str(hog.pid))}, uid "
                f"{Path(f'/proc/{hog.pid}/status').read_text().split('Uid:')[1].split()[0] if hog.poll() is None else '?'}, "
                f"session {os.getsid(hog.pid) if hog.poll() is None else '?'}), its {len(hog_kids)} pool workers "
                f"{hog_kids[0] if hog_kids else '?'}..{hog_kids[-1] if hog_kids else '?'}: {' '.join(hog_kids)}")
        time.sleep(max(0.0, hog_start + look - time.time()))

        r.truth(f"~{look} s into the other job the operator looks: `tail -n 3 logs/train.log`, "
                f"{'`nvidia-smi`' if r.gpu else '`uptime`'}, `top -b -n 1 | head -15`, "
                f"`ps -ef | grep [p]reprocess_shards | head -5`; load average {loadavg()}")
        op.run("tail -n 3 logs/train.log")
        op.run("nvidia-smi" if r.gpu else "uptime")
        op.run("top -b -n 1 | head -15")
        op.run("ps -ef | grep [p]reprocess_shards | head -5")
        r.truth(f"the operator kills the other job by its PID: `kill {hog.pid}`")
        kill_at = time.time()
        op.run(f"kill {hog.pid}")
        rc = hog.wait(timeout=30)
        r.truth(f"the other job's PID {hog.pid} exited (returncode {rc}); waiting for its pool workers")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(_proc_stat(k)[:1] in ([], ["Z"]) for k in hog_kids):
            time.sleep(0.1)
        left = [k for k in hog_kids if _proc_stat(k)[:1] not in ([], ["Z"])]
        gone_at = time.time()
        r.truth(f"its pool workers: {'all exited' if not left else f'still running: {left}'} "
                f"({gone_at - kill_at:.1f} s after the kill); load average {loadavg()}; the other job's output "
                f"ends with {(other / 'preprocess.log').read_text(errors='replace').strip().splitlines()[-1][:160]!r} "
                f"(its log has {(other / 'preprocess.log').read_text(errors='replace').count('BrokenPipeError')} "
                f"'BrokenPipeError' mentions)")
        time.sleep(20)
        op.run("tail -n 2 logs/train.log")

        if not r.wait_for("logs/train.log", "training done", seconds + 180):
            r.truth(f"no 'training done': train.log's last line {last_line()!r}")
        gone = _exited(pid, 60) if pid.isdigit() else False
        end = time.time()
        lines = _step_lines(text())
        r.truth(f"trainer PID {pid} {'exited (' + _wait_status(_proc_stat(pid)) + ')' if gone else 'still running'}; "
                f"train.log's last line {last_line()!r}")
        base = _phase(lines, 0, hog_start)
        slow = _phase(lines, hog_start, kill_at)
        back = _phase(lines, gone_at, end)
        r.truth(f"rate before the other job: {base}")
        r.truth(f"rate while it ran (its start to the kill): {slow}")
        r.truth(f"rate after its workers were gone: {back}")
        med = {}
        for name, (a, b) in {"before": (0, hog_start), "during": (hog_start, kill_at), "after": (gone_at, end)}.items():
            inside = [cur[3] for cur in _inside(lines, a, b)]
            med[name] = statistics.median(inside) if inside else float("nan")
        r.truth(f"tok/s drop while the other job ran: {100 * (1 - med['during'] / med['before']):.0f} % of the rate "
                f"before; after / before: {med['after'] / med['before']:.2f}")
        time.sleep(3)
        op.run("tail -n 3 logs/train.log")
        op.run("nvidia-smi" if r.gpu else "uptime")
        time.sleep(3)
    finally:
        env.clear()
        env.update(saved)
        r.stop_ours("train.py --seconds")
        for k in ([str(hog.pid)] if hog is not None and hog.poll() is None else []) + hog_kids:
            if _proc_stat(k)[:1] not in ([], ["Z"]):
                r.truth(f"the other job's PID {k} still running at the end: killed")
                subprocess.run(["kill", k], check=False)
        if hog is not None:
            hog.poll()


# tee-hangup's trainer: plain PyTorch as people write it, reporting with print(..., flush=True) only
# (a time of day on each line), checkpointing atomically to ckpt/last.pt every 100 steps.
TEE_TRAIN = r'''"""Train a small GPT-style LM on a synthetic token stream, checkpointing to ckpt/last.pt.

    python3 train.py --run-name NAME [--resume] [--seconds S]

A line every --log-every steps, ckpt/last.pt every --save-every steps and when --seconds of
training are up; --resume goes on from ckpt/last.pt.
"""
import argparse
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--run-name", default="run")
p.add_argument("--resume", action="store_true", help="go on from --ckpt if it exists")
p.add_argument("--seconds", type=float, default=24 * 3600, help="stop after this many seconds of training")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--save-every", type=int, default=100)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()


def now():
    return time.strftime("%Y-%m-%d %H:%M:%S")


print(f"{now()} run {args.run_name}: {vars(args)}", flush=True)
torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)


def get_batch(step):
    """Step `step`'s batch, the same in every run: each token the previous one plus 0-15."""
    g = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + step)
    first = torch.randint(0, args.vocab_size, (args.batch_size, 1), device=device, generator=g)
    walk = torch.randint(0, 16, (args.batch_size, args.block_size + 1), device=device, generator=g).cumsum(1)
    toks = (first + walk) % args.vocab_size
    return toks[:, :-1], toks[:, 1:]


''' + GPT_MODEL + r'''
model = GPT().to(device)
print(f"{now()} model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters on {device}", flush=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume and os.path.exists(args.ckpt):
    state = torch.load(args.ckpt, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    print(f"{now()} resumed from {args.ckpt} at step {step}", flush=True)
elif args.resume:
    print(f"{now()} no checkpoint at {args.ckpt}, starting from step 0", flush=True)


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "args": vars(args)}, args.ckpt + ".tmp")
    os.replace(args.ckpt + ".tmp", args.ckpt)
    print(f"{now()} saved checkpoint step {step}", flush=True)


print(f"{now()} training from step {step} for {args.seconds:g} s", flush=True)
start = t0 = time.time()
while time.time() - start < args.seconds:
    x, y = get_batch(step)
    with ctx:
        loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        tok_s = args.log_every * args.batch_size * args.block_size / (t1 - t0)
        print(f"{now()} step {step} loss {lossf:.2f} tok/s {tok_s:,.0f}", flush=True)
        t0 = t1
    if step % args.save_every == 0:
        save_checkpoint()
        t0 = time.time()
if step % args.save_every:
    save_checkpoint()
print(f"{now()} done: step {step} after {time.time() - start:.0f} s of training", flush=True)
'''

# The driver's probe for tee-hangup (a `sitecustomize` on the operator's PYTHONPATH, beside the folder,
# not in it; nothing of it in a command line or a log): each print() of train.py with its time and its
# outcome (written, or the exception it raised), the unhandled exception with the traceback the trainer
# could not write, and the start of a normal interpreter shutdown.
TEE_PROBE = r'''import atexit, builtins, os, sys, time, traceback

_dir = os.environ.get("TEE_PROBE_DIR")
try:
    _argv = open("/proc/self/cmdline", "rb").read().split(b"\0")
except OSError:
    _argv = []
if _dir and b"train.py" in _argv:
    _path = os.path.join(_dir, f"{os.getpid()}.probe")

    def _note(what):
        with open(_path, "a") as f:
            f.write(f"{time.time():.3f} {what}\n")

    _print = builtins.print

    def print(*args, **kw):
        text = (" " if kw.get("sep") is None else kw["sep"]).join(map(str, args))
        try:
            _print(*args, **kw)
        except BaseException as e:
            _note(f"print raised {type(e).__name__}: {e} | {text!r}")
            raise
        _note(f"print ok | {text!r}")

    builtins.print = print
    _hook = sys.excepthook

    def excepthook(t, v, tb):
        _note("excepthook: " + "".join(traceback.format_exception(t, v, tb)).replace("\n", "\\n"))
        _hook(t, v, tb)

    sys.excepthook = excepthook
    atexit.register(lambda: _note("atexit: normal interpreter shutdown begins"))

# the sitecustomize this one shadows (a distribution's), if any, runs as it would have
try:
    import importlib.machinery, importlib.util
    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [d for d in sys.path if os.path.abspath(d or ".") != _here])
    if _spec and _spec.loader:
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
except Exception:
    pass
'''


def tee_hangup(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train.py").write_text(TEE_TRAIN)
    # the dry run: a tiny model on one CPU thread
    flags = "" if r.gpu else (" --device cpu --n-layer 2 --n-head 2 --n-embd 128 --block-size 64 "
                              "--vocab-size 1024 --batch-size 16")
    py = _python3()
    probe = r.dir.parent / f"{r.name}.probe"
    shutil.rmtree(probe, ignore_errors=True)
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(TEE_PROBE)
    # the operator's login shell: no PYTHONUNBUFFERED (the driver's own), the probe on PYTHONPATH
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update(COLUMNS="", TEE_PROBE_DIR=str(probe),
               PYTHONPATH=os.pathsep.join(filter(None, [str(probe), os.environ.get("PYTHONPATH")])))
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    folder = r.dir.resolve()

    def text(rel: str) -> str:
        path = r.dir / rel
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(rel: str) -> str:
        lines = text(rel).strip().splitlines()
        return lines[-1][:200] if lines else "(empty)"

    def ours() -> dict[str, str]:
        """This folder's trainer (nohup, then the python it exec's) and tee processes (the driver reads /proc)."""
        found = {}
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
                role = "tee" if os.path.basename(argv[0]) == b"tee" else "trainer" if b"train.py" in argv else None
                if role and Path(os.readlink(cmdline.parent / "cwd")).is_relative_to(folder):
                    found[cmdline.parent.name] = role
            except (OSError, IndexError):
                pass
        return found

    # each process of the incident, from when the driver first sees it to when it has exited: its
    # zombie's wait status, read from /proc/PID/stat before its new parent reaps it
    seen: dict[str, str] = {}
    exited: dict[str, float] = {}
    done = threading.Event()

    def watch() -> None:
        alive: dict[str, str] = {}
        n = 0
        while not done.is_set():
            if n % 5 == 0:
                for pid, role in ours().items():
                    fields = _proc_stat(pid)
                    if pid in seen or not fields or fields[0] == "Z":
                        continue
                    seen[pid] = alive[pid] = role
                    r.truth(f"{role} PID {pid} seen (parent {fields[1]}, process group {fields[2]}, session "
                            f"{fields[3]}): {_program(pid)}")
            for pid in list(alive):
                fields = _proc_stat(pid)
                if fields and fields[0] != "Z":
                    continue
                exited[pid] = time.time()
                r.truth(f"{alive.pop(pid)} PID {pid} exited ({_wait_status(fields)}"
                        f"{', its parent then ' + fields[1] if fields else ''}); train.log's last line "
                        f"{last_line('logs/train.log')!r}; train2.log's {last_line('logs/train2.log')!r}")
            n += 1
            time.sleep(0.02)

    def probed(pid: str) -> list[str]:
        path = probe / f"{pid}.probe"
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def pids(role: str) -> list[str]:
        return [pid for pid, got in seen.items() if got == role]

    saved_re, resumed_re = r"saved checkpoint step (\d+)", r".*resumed from[^\r\n]*"
    watcher = threading.Thread(target=watch, daemon=True)
    t = None
    try:
        r.truth(f"train.py is in the folder (a GPT-style LM, print(..., flush=True) a line every 10 steps, "
                f"ckpt/last.pt every 100 steps{flags and ', dry-run flags' + flags}); the operator's shell has no "
                f"PYTHONUNBUFFERED; the driver's probe (a sitecustomize in {probe}, outside the folder) notes each "
                "print() of train.py and its outcome, an unhandled exception and a normal shutdown")
        watcher.start()
        t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", env)
        r.truth("session 1: operator at a script-recorded interactive bash (as over SSH)")
        _typed(r, t, "date")
        cmd1 = f"nohup {py} train.py --run-name tee-run --seconds 3600{flags} 2>&1 | tee logs/train.log &"
        r.truth(f"operator types {cmd1!r} (nohup covers python only; tee is a plain job of the shell)")
        t.start(cmd1)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (job := re.search(r"\[1\] (\d+)", text("logs/terminal.typescript"))):
            time.sleep(0.2)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (pids("trainer") and pids("tee")):
            time.sleep(0.2)
        r.truth(f"bash printed the job line {job.group(0) if job else '(none seen)'!r} (the pipeline's last "
                f"process); trainer PIDs {pids('trainer')}, tee PIDs {pids('tee')}")
        if not r.wait_for("logs/train.log", " step 10 loss", 300):
            return
        r.truth(f"first step line in train.log (and on the terminal, through tee): {last_line('logs/train.log')!r}")
        time.sleep(40)
        r.truth(f"~40 s of training; train.log's last line {last_line('logs/train.log')!r}; the operator has "
                "watched the step lines scroll by and typed nothing more")
        t._stop.set()  # the driver stops reading the terminal itself; `script` keeps its log
        t._reader.join()
        t._reader = None
        r.truth("the connection drops: SIGHUP to the operator's interactive bash, which hangs up its jobs "
                "(SIGHUP to the pipeline's process group) as it exits")
        hup = time.time()
        t.hang_up()
        t = None
        r.truth(f"terminal gone; the typescript's last line {last_line('logs/terminal.typescript')!r}")
        trainer1 = pids("trainer")[0] if pids("trainer") else "?"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(pid in exited for pid in seen):
            time.sleep(0.2)
        for pid, role in seen.items():
            r.truth(f"{role} PID {pid}: " + (f"exited {exited[pid] - hup:.2f} s after the hangup" if pid in exited
                                               else "still running 60 s after the hangup"))
        text1 = text("logs/train.log")
        steps = re.findall(r"^(\S+ \S+) step (\d+) loss", text1, re.M)
        r.truth(f"train.log: {len(text1.splitlines())} lines, step lines {steps[0][1] if steps else '?'}-"
                f"{steps[-1][1] if steps else '?'} ({steps[0][0] if steps else '?'} to {steps[-1][0] if steps else '?'}); "
                f"saved: {re.findall(saved_re, text1)}; last line {last_line('logs/train.log')!r}; "
                f"'Traceback' in it: {'Traceback' in text1}; 'Broken pipe' in it: {'Broken pipe' in text1}")
        notes = probed(trainer1)
        for line in [n for n in notes if " print ok " in n][-3:] + [n for n in notes if " print ok " not in n]:
            stamp_, what = line.split(" ", 1)
            r.truth(f"probe, trainer PID {trainer1}, {_utc(float(stamp_))}: {what[:1500]}")
        ckpt = r.dir / "ckpt" / "last.pt"
        r.truth(f"ckpt/last.pt: {ckpt.stat().st_size if ckpt.exists() else 'absent'} bytes, mtime "
                f"{_utc(ckpt.stat().st_mtime) if ckpt.exists() else '?'}")
        time.sleep(max(0.0, hup + 40 - time.time()))

        t = InteractiveShell(r.dir, r.dir / "logs" / "terminal2.typescript", env)
        r.truth("session 2: the operator logs in again (a second script-recorded interactive bash)")
        _typed(r, t, "date")
        _typed(r, t, "tail -n 3 logs/train.log")
        shown = _typed(r, t, "ps aux | grep [t]rain.py")
        listed = [ln for ln in (re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", ln).strip() for ln in shown.splitlines()[1:])
                  if ln and "@gpu-node:" not in ln]
        r.truth(f"`ps aux | grep [t]rain.py` printed {listed}" + (
            " (the unquoted `[t]rain.py` is a glob that matches the file train.py in the folder, so bash ran "
            "`grep train.py`, which lists itself)" if any(ln.endswith("grep train.py") for ln in listed) else ""))
        _typed(r, t, "nvidia-smi" if r.gpu else "uptime")
        cmd2 = f"nohup {py} train.py --run-name tee-run --resume --seconds 40{flags} > logs/train2.log 2>&1 &"
        r.truth(f"run 2: operator types {cmd2!r}")
        shown = t.run(cmd2)
        pid2 = _job_pid(shown)
        r.truth(f"run 2 started, bash printed {_last(JOB_STARTED, shown)!r}")
        r.wait_for("logs/train2.log", "resumed from", 300)
        r.truth(f"run 2: {_last(resumed_re, text('logs/train2.log'))!r}")
        r.wait_for("logs/train2.log", " done: step", 300)
        gone = _wait_gone(pid2, 60) if pid2.isdigit() else False
        text2 = text("logs/train2.log")
        steps = re.findall(r"^(\S+ \S+) step (\d+) loss", text2, re.M)
        r.truth(f"run 2 (PID {pid2}) {'exited' if gone else 'still running 60 s after its done line'}; step lines "
                f"{steps[0][1] if steps else '?'}-{steps[-1][1] if steps else '?'} ({steps[0][0] if steps else '?'} to "
                f"{steps[-1][0] if steps else '?'}); saved: {re.findall(saved_re, text2)}; "
                f"last line {last_line('logs/train2.log')!r}")
        for line in probed(pid2)[-2:]:
            stamp_, what = line.split(" ", 1)
            r.truth(f"probe, trainer PID {pid2}, {_utc(float(stamp_))}: {what[:300]}")
        time.sleep(3)
        _typed(r, t, "tail -n 2 logs/train2.log")
        time.sleep(2)
    finally:
        if t is not None:
            t.close()
        r.stop_ours("train.py --run-name tee-run")
        time.sleep(1)
        done.set()
        watcher.join(timeout=5)
        # the checkpoints are the trainer's state, not evidence
        for f in (r.dir / "ckpt").glob("*"):
            r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
            f.unlink()


# noisy-healthy's trainer: plain PyTorch, an SFT-style loader (each batch padded to its own length, no
# packing), a line every step with that step's own rate, evals and atomic checkpoints; nothing injected.
NOISY_TRAIN = r'''"""Fine-tune a small GPT-style LM on variable-length examples (SFT-style: no packing).

    python3 train.py [--seconds S] [--batch-size B] ...

Each batch holds examples of about one length (a length-grouped sampler): its length is drawn from
--min-len..--max-len and the batch is padded to a multiple of 64. One line a step, an eval every
--eval-every steps, ckpt/last.pt every --save-every steps; stops after --seconds of training.
"""
import argparse
import logging
import math
import os
import random
import time

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=3600)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--min-len", type=int, default=128)
p.add_argument("--max-len", type=int, default=2048)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--eval-every", type=int, default=300)
p.add_argument("--eval-iters", type=int, default=200)
p.add_argument("--save-every", type=int, default=500)
p.add_argument("--num-workers", type=int, default=2)
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--seed", type=int, default=1234)
args = p.parse_args()

logging.Formatter.converter = time.gmtime
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
PAD = 0


class Examples(Dataset):
    """Synthetic instruction data: each example follows a hidden rule of its own (learnable), with noise."""

    def __init__(self, vocab, seed):
        self.vocab, self.seed = vocab, seed

    def __len__(self):
        return 1 << 30

    def __getitem__(self, key):
        i, n = key
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        a, b = torch.randint(1, 64, (2,), generator=g).tolist()
        x = torch.empty(n, dtype=torch.long)
        x[0] = torch.randint(1, self.vocab, (1,), generator=g)
        steps = torch.arange(1, n)
        x[1:] = (x[0] + a * steps + b * (steps // 7)) % (self.vocab - 1) + 1
        noise = torch.rand(n, generator=g) < 0.1
        x[noise] = torch.randint(1, self.vocab, (int(noise.sum()),), generator=g)
        return x


class LengthGrouped(Sampler):
    """Batches of examples of about one length, the length drawn per batch (log-uniform)."""

    def __init__(self, batch, lo, hi, seed):
        self.batch, self.lo, self.hi, self.rng = batch, lo, hi, random.Random(seed)

    def __iter__(self):
        i = 0
        while True:
            top = int(math.exp(self.rng.uniform(math.log(self.lo), math.log(self.hi))))
            out = []
            for _ in range(self.batch):
                out.append((i, self.rng.randint(max(self.lo, int(top * 0.75)), top)))
                i += 1
            yield out


def collate(examples):
    longest = max(len(x) for x in examples)
    seq = -(-longest // 64) * 64
    batch = torch.full((len(examples), seq + 1), PAD, dtype=torch.long)
    for j, x in enumerate(examples):
        batch[j, :len(x)] = x
    return batch, sum(len(x) for x in examples)


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, max_len, layers, heads, d):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=PAD)


def loader(seed, lo, hi):
    return DataLoader(Examples(args.vocab_size, seed), batch_sampler=LengthGrouped(args.batch_size, lo, hi, seed),
                      collate_fn=collate, num_workers=args.num_workers, pin_memory=device.type == "cuda",
                      persistent_workers=args.num_workers > 0)


@torch.no_grad()
def evaluate():
    model.eval()
    t0 = time.perf_counter()
    it, total = iter(val), 0.0
    for _ in range(args.eval_iters):
        batch, _ = next(it)
        batch = batch.to(device, non_blocking=True)
        with amp:
            total += model(batch[:, :-1], batch[:, 1:]).item()
    model.train()
    return total / args.eval_iters, time.perf_counter() - t0


def save(step):
    t0 = time.perf_counter()
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, args.ckpt + ".tmp")
    os.replace(args.ckpt + ".tmp", args.ckpt)
    log.info("saved checkpoint step %d (%.1f s)", step, time.perf_counter() - t0)


torch.manual_seed(args.seed)
device = torch.device(args.device)
log.info("config: %s", vars(args))
model = GPT(args.vocab_size, args.max_len + 64, args.n_layer, args.n_head, args.n_embd).to(device)
log.info("model: %.1fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1, fused=device.type == "cuda")
amp = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
train = iter(loader(args.seed, args.min_len, args.max_len))
val = loader(args.seed + 1, args.max_len // 2, args.max_len)
log.info("training for %g s: batch %d, lengths %d-%d padded to a multiple of 64", args.seconds, args.batch_size,
         args.min_len, args.max_len)
step, start = 0, time.perf_counter()
while True:
    t0 = time.perf_counter()
    batch, tokens = next(train)
    batch = batch.to(device, non_blocking=True)
    with amp:
        loss = model(batch[:, :-1], batch[:, 1:])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    lv = loss.item()  # waits for the GPU
    dt = time.perf_counter() - t0
    step += 1
    log.info("step %d | loss %.2f | seq %d | %.1f ms | %s tok/s", step, lv, batch.shape[1] - 1, 1000 * dt,
             f"{tokens / dt:,.0f}")
    if step % args.eval_every == 0:
        vl, took = evaluate()
        log.info("eval step %d | val_loss %.2f | %.1f s", step, vl, took)
    if step % args.save_every == 0:
        save(step)
    if time.perf_counter() - start >= args.seconds:
        break
log.info("training done at step %d", step)
'''


def _noisy_steps(text: str) -> list[tuple[float, int, int, float, float]]:
    """noisy-healthy's step lines: (UTC epoch, step, seq, ms, tok/s)."""
    out = []
    for m in re.finditer(r"(?m)^(\S+ \S+) INFO step (\d+) \| loss \S+ \| seq (\d+) \| ([\d.]+) ms \| ([\d,]+) tok/s$", text):
        t = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC).timestamp()
        out.append((t, int(m.group(2)), int(m.group(3)), float(m.group(4)), float(m.group(5).replace(",", ""))))
    return out


def _rate_summary(rates: list[float]) -> str:
    """mean, median, p10, p90 (and min-max) of a list of per-step tok/s."""
    if len(rates) < 2:
        return f"{len(rates)} lines"
    q = statistics.quantiles(rates, n=10)
    return (f"mean {statistics.fmean(rates):,.0f}, median {statistics.median(rates):,.0f}, p10 {q[0]:,.0f}, "
            f"p90 {q[-1]:,.0f} tok/s (min {min(rates):,.0f}, max {max(rates):,.0f}; stdev/mean "
            f"{statistics.stdev(rates) / statistics.fmean(rates):.2f})")


def noisy_healthy(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train.py").write_text(NOISY_TRAIN)
    # the dry run: a tiny model on one CPU thread, shorter examples, no loader workers
    flags = "" if r.gpu else (" --device cpu --n-layer 2 --n-head 2 --n-embd 64 --vocab-size 1024 --batch-size 4 "
                              "--min-len 16 --max-len 256 --eval-iters 20 --num-workers 0")
    seconds = 150 if r.gpu else 60
    looks = (55, 110) if r.gpu else (25, 45)
    py = _python3()
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)
    log_path = r.dir / "logs" / "train.log"
    done = threading.Event()

    def text() -> str:
        return log_path.read_text(errors="replace") if log_path.exists() else ""

    def last_line() -> str:
        lines = text().strip().splitlines()
        return lines[-1][:200] if lines else "(empty)"

    def trainer(timeout: float = 30) -> str:
        """The PID of the python running train.py in this folder (nohup exec's it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid in subprocess.run(["pgrep", "-f", "train.py --seconds"], capture_output=True, text=True).stdout.split():
                try:
                    if (Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(r.dir.resolve())
                            and "python" in _program(pid)):
                        return pid
                except OSError:
                    pass
            time.sleep(0.2)
        return "?"

    def watch() -> None:
        """Note each eval, checkpoint and end line when the driver first sees it in the log."""
        seen = 0
        while not done.is_set():
            lines = text().splitlines()
            for line in lines[seen:]:
                if re.search(r" INFO (eval step|saved checkpoint|training done|config:|model:|training for)", line) \
                        or " ERROR " in line or "Traceback" in line:
                    r.truth(f"driver sees in train.log (line {lines.index(line) + 1}): {line[:200]!r}")
            seen = len(lines)
            done.wait(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    try:
        r.truth("train.py is in the folder: a GPT-style LM, SFT-style loader (each batch's length drawn from "
                "--min-len..--max-len, padded to a multiple of 64, no packing), a log line every step with that "
                "step's own tokens / that step's own time; eval every 300 steps, ckpt/last.pt every 500; nothing "
                "injected")
        cmd = f"nohup {py} train.py --seconds {seconds}{flags} > logs/train.log 2>&1 &"
        r.truth(f"operator types {cmd!r}")
        watcher.start()
        launched = time.monotonic()
        op.run(cmd)
        pid = trainer()
        r.truth(f"trainer PID {pid} ({_program(pid)}), parent {_proc_stat(pid)[1] if _proc_stat(pid) else '?'}")
        if not r.wait_for("logs/train.log", "INFO step 1 |", 300):
            r.truth(f"no first step: train.log's last line {last_line()!r}")
            return
        r.truth(f"first step line: {[x for x in text().splitlines() if ' INFO step 1 |' in x][0]!r}")
        for n, at in enumerate(looks, 1):
            time.sleep(max(0.0, launched + at - time.monotonic()))
            r.truth(f"look {n}: the operator types `tail -n 3 logs/train.log` and `{'nvidia-smi' if r.gpu else 'uptime'}`"
                    f" (train.log's last line {last_line()!r})")
            op.run("tail -n 3 logs/train.log")
            op.run("nvidia-smi" if r.gpu else "uptime")
        if not r.wait_for("logs/train.log", "training done", seconds + 240):
            r.truth(f"no 'training done': train.log's last line {last_line()!r}")
        gone = _exited(pid, 60) if pid.isdigit() else False
        r.truth(f"trainer PID {pid} {'exited (' + _wait_status(_proc_stat(pid)) + ')' if gone else 'still running'}")
        time.sleep(1)
        done.set()
        watcher.join(timeout=5)
        lines = _noisy_steps(text())
        if not lines:
            r.truth("no step lines in train.log")
            return
        r.truth(f"{len(lines)} step lines, steps {lines[0][1]}-{lines[-1][1]}, {_utc(lines[0][0])} to "
                f"{_utc(lines[-1][0])}; seq {min(x[2] for x in lines)}-{max(x[2] for x in lines)}")
        r.truth(f"the whole run, tok/s (step 1 left out): {_rate_summary([x[4] for x in lines[1:]])}")
        r.truth(f"the whole run, ms per step (step 1 left out): median {statistics.median(x[3] for x in lines[1:]):.1f}, "
                f"min {min(x[3] for x in lines[1:]):.1f}, max {max(x[3] for x in lines[1:]):.1f}")
        t0 = lines[0][0]
        w = 0
        while t0 + 30 * w <= lines[-1][0]:
            inside = [x for x in lines[1:] if t0 + 30 * w <= x[0] < t0 + 30 * (w + 1)]
            if inside:
                r.truth(f"window {w + 1} ({_utc(t0 + 30 * w)} to {_utc(t0 + 30 * (w + 1))}): {len(inside)} step lines "
                        f"(steps {inside[0][1]}-{inside[-1][1]}, tokens {sum(x[4] * x[3] / 1000 for x in inside):,.0f} "
                        f"in {sum(x[3] for x in inside) / 1000:.1f} s of steps): {_rate_summary([x[4] for x in inside])}")
            w += 1
        # seq buckets: the rate follows the batch's length
        for lo, hi in ((0, 512), (512, 1024), (1024, 1536), (1536, 4096)):
            bucket = [x[4] for x in lines[1:] if lo < x[2] <= hi]
            if bucket:
                r.truth(f"seq {lo + 1}-{hi}: {len(bucket)} steps, median {statistics.median(bucket):,.0f} tok/s")
    finally:
        done.set()
        env.clear()
        env.update(saved)
        r.stop_ours("train.py --seconds")
        # the checkpoint is the trainer's state, not evidence
        for f in (r.dir / "ckpt").glob("*"):
            r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
            f.unlink()


# stall-watchdog: a trainer whose batches come from a prefetch thread through a bounded queue,
# logging with print() (no time of day), with a SIGTERM handler that only sets a flag the loop checks
# between steps; started and watched by watchdog.sh, the operator's bash loop that kills it when its
# log goes stale and relaunches it with --resume.
STALL_TRAIN = r'''"""Train a small GPT-style LM on a synthetic token stream.

    python3 train.py --max-steps 1500 >> logs/train.log 2>&1 &      (watchdog.sh starts it so)

Batches are made by a prefetch thread, up to --prefetch ahead of the loop, through a bounded queue.
A checkpoint goes to ckpt/step_NNNNNN.pt every --ckpt-every steps and at the end; --resume goes on
from the newest one. On SIGTERM it stops after the current step and saves a checkpoint.
"""
import argparse
import glob
import math
import os
import queue
import signal
import sys
import threading
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--max-steps", type=int, default=1500)
p.add_argument("--resume", action="store_true", help="go on from the newest checkpoint in --ckpt-dir")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--ckpt-every", type=int, default=200)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=20)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--warmup", type=int, default=100)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--prefetch", type=int, default=8, help="batches the prefetch thread may run ahead")
p.add_argument("--seed", type=int, default=1337)
p.add_argument("--fault-at-step", type=int, default=-1,
               help="testing: force a reshuffle of the data order before the batch of this step")
args = p.parse_args()

torch.manual_seed(args.seed)
device = args.device
cuda = device.startswith("cuda")
torch.backends.cuda.matmul.allow_tf32 = True
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.block_size


def make_batch(i, order_seed):
    """The batch of step i, (batch, block + 1) token ids: random walks over the vocabulary (each id
    the last plus 0-15), seeded by the data order and the step, so a resumed run sees the same batches."""
    g = torch.Generator().manual_seed(order_seed * 1_000_003 + i)
    start = torch.randint(0, args.vocab_size, (args.batch_size, 1), generator=g)
    walk = (start + torch.randint(0, 16, (args.batch_size, args.block_size + 1), generator=g).cumsum(1)) % args.vocab_size
    return walk.pin_memory() if cuda else walk


class Prefetcher:
    """Makes the batches of steps first, first + 1, ... in a background thread, `depth` ahead."""

    def __init__(self, first, depth):
        self.batches = queue.Queue(maxsize=depth)
        self.lock = threading.Lock()  # guards the cursor and the data order
        self.next_step = first
        self.order_seed = args.seed
        threading.Thread(target=self.run, name="prefetch", daemon=True).start()

    def reshuffle(self, seed):
        with self.lock:
            self.order_seed = seed

    def run(self):
        while True:
            with self.lock:
                i = self.next_step
                self.next_step += 1
                if i == args.fault_at_step:
                    self.reshuffle(args.seed + i)
                seed = self.order_seed
            self.batches.put(make_batch(i, seed))

    def get(self):
        return self.batches.get()


''' + GPT_MODEL + r'''
model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)
print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, {tokens_per_step} tokens "
      f"per step, device {device}", flush=True)

step = 0
if args.resume:
    found = sorted(glob.glob(os.path.join(args.ckpt_dir, "step_*.pt")))
    if found:
        state = torch.load(found[-1], map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        print(f"resumed from {found[-1]} (step {step})", flush=True)
    else:
        print(f"--resume: no checkpoint in {args.ckpt_dir}/, starting from scratch", flush=True)
else:
    print("starting from scratch", flush=True)


def lr_at(s):
    if s < args.warmup:
        return args.lr * (s + 1) / args.warmup
    frac = min(1.0, (s - args.warmup) / max(1, args.max_steps - args.warmup))
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))


def save_checkpoint():
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"step_{step:06d}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, path + ".tmp")
    os.replace(path + ".tmp", path)
    print(f"checkpoint saved: {path}", flush=True)


stop_requested = False


def on_sigterm(signum, frame):
    global stop_requested
    stop_requested = True
    print("received SIGTERM, will stop after this step", flush=True)


signal.signal(signal.SIGTERM, on_sigterm)
data = Prefetcher(step, args.prefetch)

saved = step
t0 = time.time()
while step < args.max_steps and not stop_requested:
    lr = lr_at(step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    chunk = data.get().to(device, non_blocking=True)
    with ctx:
        loss = model(chunk[:, :-1], chunk[:, 1:])
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        print(f"step {step}/{args.max_steps} loss {lossf:.3f} lr {lr:.1e} "
              f"tok/s {args.log_every * tokens_per_step / (t1 - t0):.0f}", flush=True)
        t0 = t1
    if step % args.ckpt_every == 0 or step == args.max_steps:
        save_checkpoint()
        saved = step
        t0 = time.time()
if stop_requested:
    if saved != step:
        save_checkpoint()
    print(f"stopped at step {step} (SIGTERM)", flush=True)
    sys.exit(128 + signal.SIGTERM)
print(f"done: {step} steps", flush=True)
'''

# @PY@ and @TRAIN_ARGS@ are filled in by the driver (the python on PATH; the dry run's small model).
STALL_WATCHDOG = r'''#!/usr/bin/env bash
# watchdog.sh: start train.py and keep it going. Every CHECK_EVERY seconds look at how long ago
# logs/train.log was last written; past STALL_LIMIT, stop the trainer (SIGTERM, then SIGKILL after
# TERM_GRACE seconds) and start it again with --resume. Exit when train.py exits 0.
#
#   nohup ./watchdog.sh > logs/watchdog.log 2>&1 &
cd "$(dirname "$0")" || exit 1

PY=${PY:-@PY@}
TRAIN_ARGS="@TRAIN_ARGS@"
FIRST_ARGS=${WATCHDOG_FIRST_ARGS:-}   # extra flags for a launch that starts from scratch
LOG=logs/train.log
STALL_LIMIT=60    # seconds without a write to $LOG
CHECK_EVERY=10
TERM_GRACE=15

say() { echo "$(date -u '+%Y-%m-%d %H:%M:%S') watchdog: $*"; }

launch() {
    local extra=$FIRST_ARGS
    if ls ckpt/step_*.pt > /dev/null 2>&1; then
        extra=--resume
    fi
    $PY train.py $TRAIN_ARGS $extra >> "$LOG" 2>&1 &
    pid=$!
    started=$(date +%s)
    say "started train.py pid $pid${extra:+ ($extra)}"
}

mkdir -p logs
say "watching $LOG (stall limit ${STALL_LIMIT}s, checked every ${CHECK_EVERY}s)"
launch
while true; do
    sleep "$CHECK_EVERY"
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid"
        status=$?
        if [ "$status" -eq 0 ]; then
            say "train.py finished (status 0), exiting"
            exit 0
        fi
        say "$pid exited (status $status)"
        say "relaunching with --resume"
        launch
        continue
    fi
    last=$(stat -c %Y "$LOG")
    [ "$last" -lt "$started" ] && last=$started
    age=$(( $(date +%s) - last ))
    if [ "$age" -gt "$STALL_LIMIT" ]; then
        say "train.log not written for ${age}s (limit ${STALL_LIMIT}s), sending SIGTERM to $pid"
        kill -TERM "$pid"
        waited=0
        while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$TERM_GRACE" ]; do
            sleep 1
            waited=$((waited + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "$pid still alive after ${TERM_GRACE}s, sending SIGKILL"
            kill -KILL "$pid"
        fi
        wait "$pid"
        status=$?
        say "$pid exited (status $status)"
        say "relaunching with --resume"
        launch
    fi
done
'''


def stall_watchdog(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    # the helpers' ps loop keeps python lines only; this one keeps the watchdog's bash too
    r.background("while true; do echo \"# $(date -u +%Y-%m-%dT%H:%M:%SZ)\"; "
                 "ps -eo pid,ppid,pgid,sid,user,lstart,etimes,stat,args ww | grep -E '^ *PID|[p]ython|[w]atchdog\\.sh'; "
                 "sleep 2; done", "logs/ps.txt")
    py = _python3()
    fault_at, total = 820, 1500
    # the dry run: a model one CPU thread steps through at a few dozen steps a second
    flags = f"--max-steps {total}" + ("" if r.gpu else " --device cpu --n-layer 2 --n-head 2 --n-embd 128 "
                                      "--block-size 128 --vocab-size 2048 --batch-size 8")
    (r.dir / "train.py").write_text(STALL_TRAIN)
    (r.dir / "watchdog.sh").write_text(STALL_WATCHDOG.replace("@PY@", py).replace("@TRAIN_ARGS@", flags))
    (r.dir / "watchdog.sh").chmod(0o755)
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    env["WATCHDOG_FIRST_ARGS"] = f"--fault-at-step {fault_at}"
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)
    folder = r.dir.resolve()
    done = threading.Event()

    # the two logs, line by line, with the time the driver first read each (train.log's lines carry none)
    lines: dict[str, list[tuple[float, str]]] = {"logs/train.log": [], "logs/watchdog.log": []}

    def tail() -> None:
        pos, part = dict.fromkeys(lines, 0), dict.fromkeys(lines, "")
        while not done.is_set():
            for rel in lines:
                try:
                    with open(r.dir / rel, "rb") as f:
                        f.seek(pos[rel])
                        chunk = f.read()
                except OSError:
                    continue
                if not chunk:
                    continue
                now = time.time()
                pos[rel] += len(chunk)
                *complete, part[rel] = (part[rel] + chunk.decode(errors="replace")).split("\n")
                for ln in complete:
                    lines[rel].append((now, ln))
                    if rel == "logs/watchdog.log" or not re.match(r"step \d+/", ln):
                        r.truth(f"{rel} line {len(lines[rel])} (read at {_utc(now)}): {ln!r}")
            time.sleep(0.1)

    def find(rel: str, pattern: str, start: int = 0) -> tuple[int, float, str] | None:
        for n, (t, ln) in enumerate(lines[rel][start:], start):
            if re.search(pattern, ln):
                return n, t, ln
        return None

    def wait_line(rel: str, pattern: str, timeout: float, start: int = 0) -> tuple[int, float, str] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (hit := find(rel, pattern, start)) is not None:
                return hit
            time.sleep(0.2)
        r.truth(f"waited {timeout:g} s for /{pattern}/ in {rel}: not seen")
        return None

    # the incident's processes (the driver reads /proc every 0.1 s): the watchdog's bash (not its
    # forks for $(...) and before exec) and the trainers it starts
    seen: dict[str, str] = {}

    def ours() -> dict[str, tuple[str, str]]:
        found = {}
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                argv = cmdline.read_bytes().split(b"\0")
                if not Path(os.readlink(cmdline.parent / "cwd")).is_relative_to(folder):
                    continue
                fields = _proc_stat(cmdline.parent.name)
                if not fields or fields[0] == "Z":
                    continue
                if argv[0].endswith(b"bash") and argv[1:2] == [b"./watchdog.sh"]:
                    found[cmdline.parent.name] = ("watchdog", fields[1])
                elif b"python" in argv[0] and b"train.py" in argv[1:3]:
                    found[cmdline.parent.name] = ("trainer", fields[1])
            except (OSError, IndexError):
                pass
        return found

    def watch() -> None:
        alive: dict[str, str] = {}
        while not done.is_set():
            now = ours()
            for pid, (role, parent) in now.items():
                if pid in alive or pid in seen or (role == "watchdog" and seen.get(parent) == "watchdog"):
                    continue
                seen[pid] = alive[pid] = role
                n = sum(1 for x in seen.values() if x == role)
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip() \
                    if Path(f"/proc/{pid}").exists() else "?"
                r.truth(f"{role} {n}: PID {pid} seen (parent {parent}): `{argv}`; ckpt/: "
                        f"{sorted(f.name for f in (r.dir / 'ckpt').glob('*.pt')) if (r.dir / 'ckpt').exists() else 'none'}")
            for pid in list(alive):
                fields = _proc_stat(pid)
                if fields and fields[0] != "Z":
                    continue
                role = alive.pop(pid)
                last = lines["logs/train.log"][-1][1] if lines["logs/train.log"] else "(empty)"
                r.truth(f"{role} PID {pid} exited ({_wait_status(fields)}); train.log's last line {last!r}")
            time.sleep(0.1)

    def pid_of(role: str, n: int, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = [pid for pid, x in seen.items() if x == role]
            if len(pids) >= n:
                return pids[n - 1]
            time.sleep(0.1)
        return "?"

    threads = [threading.Thread(target=tail, daemon=True), threading.Thread(target=watch, daemon=True)]
    try:
        r.truth(f"train.py is in the folder: GPT-style LM, batches from a prefetch thread through "
                f"queue.Queue(maxsize=8), print(flush=True) lines without a time of day every 10 steps, "
                f"ckpt/step_NNNNNN.pt every 200 steps and at the end, a SIGTERM handler that only sets a flag the "
                f"loop checks between steps; --fault-at-step {fault_at}: the prefetch thread, holding its "
                f"threading.Lock, calls reshuffle(), which takes the same Lock again, before the batch of step "
                f"{fault_at + 1}: it blocks for good and the loop waits in queue.get() with no timeout. "
                f"watchdog.sh is in the folder: stall limit 60 s on logs/train.log's mtime, checked every 10 s, "
                f"SIGTERM then SIGKILL after 15 s, relaunch with --resume when ckpt/step_*.pt exists; it passes "
                f"$WATCHDOG_FIRST_ARGS to a launch that starts from scratch")
        r.truth(f"the operator's shell environment (not typed, not in the transcript) holds "
                f"WATCHDOG_FIRST_ARGS='--fault-at-step {fault_at}'" + ("" if r.gpu else "; OMP_NUM_THREADS=1"))
        for t in threads:
            t.start()
        launch = "nohup ./watchdog.sh > logs/watchdog.log 2>&1 &"
        r.truth(f"operator types `{launch}`")
        launched = time.monotonic()
        op.run(launch)
        wd, pid1 = pid_of("watchdog", 1), pid_of("trainer", 1)
        r.truth(f"watchdog PID {wd}, trainer 1 PID {pid1} ({_program(pid1)})")

        # the hang: the loop logs step `fault_at` and waits; nothing more is written
        hit = wait_line("logs/train.log", rf"^step {fault_at}/", 300 if r.gpu else 400)
        time.sleep(5)
        steps1 = [(t, ln) for t, ln in lines["logs/train.log"] if re.match(r"step \d+/", ln)]
        hung_at = steps1[-1][0] if steps1 else time.time()
        saves = [ln for _, ln in lines["logs/train.log"] if ln.startswith("checkpoint saved")]
        r.truth(f"run 1's first step line {steps1[0][1] if steps1 else '?'!r} (read at "
                f"{_utc(steps1[0][0]) if steps1 else '?'}); its last {steps1[-1][1] if steps1 else '?'!r} (read at "
                f"{_utc(hung_at)}); {'the loop did ' + str(fault_at) + ' steps and waits for the batch of step ' + str(fault_at + 1) if hit else 'no hang seen'}; "
                f"checkpoints so far {saves}")
        time.sleep(3)
        before = _threads(pid1)
        r.truth(f"run 1 (PID {pid1}) {time.time() - hung_at:.1f} s after its last step line: /proc says "
                f"{before[0]} threads, states {before[1]}, {before[2]} CPU ticks in all, main thread's wchan "
                f"{before[3]!r}")

        term = wait_line("logs/watchdog.log", r"sending SIGTERM", 120)
        if term:
            after = _threads(pid1)
            r.truth(f"the watchdog's SIGTERM line read at {_utc(term[1])}, {term[1] - hung_at:.1f} s after run 1's "
                    f"last step line; run 1 then: {after[0]} threads, states {after[1]}, CPU ticks {after[2]} "
                    f"(+{after[2] - before[2]} since the driver's last look); "
                    + (_smi_rows(r, hung_at + 2, term[1]) if r.gpu else "no GPU"))
        handler = wait_line("logs/train.log", r"received SIGTERM", 10)
        time.sleep(max(0.0, (term[1] if term else time.time()) + 5 - time.time()))
        state = _threads(pid1)
        r.truth(f"run 1's handler line {'read at ' + _utc(handler[1]) if handler else 'not seen'}; 5 s after the "
                f"SIGTERM line PID {pid1} is {'gone' if _proc_stat(pid1)[:1] in ([], ['Z']) else 'still running'}: "
                f"{state[0]} threads, states {state[1]}, main thread's wchan {state[3]!r}")
        kill = wait_line("logs/watchdog.log", r"sending SIGKILL", 30)
        gone = _exited(pid1, 15)
        r.truth(f"the watchdog's SIGKILL line {'read at ' + _utc(kill[1]) if kill else 'not seen'}; run 1 (PID {pid1}) "
                f"{'gone' if gone else 'still running 15 s after'} at {_utc(time.time())}")
        pid2 = pid_of("trainer", 2, 30)
        r.truth(f"trainer 2 PID {pid2} ({_program(pid2)})")
        resumed = wait_line("logs/train.log", r"^resumed from", 120 if r.gpu else 200)
        first2 = wait_line("logs/train.log", r"^step \d+/", 60, resumed[0] if resumed else 0)
        r.truth(f"run 2: {resumed[2] if resumed else '?'!r}; its first step line {first2[2] if first2 else '?'!r} "
                f"(read at {_utc(first2[1]) if first2 else '?'})")
        end = wait_line("logs/train.log", r"^done: \d+ steps", 300 if r.gpu else 400)
        finished = wait_line("logs/watchdog.log", r"finished \(status 0\), exiting", 30)
        if wd.isdigit():
            _exited(wd, 15)
        steps2 = [(t, ln) for t, ln in lines["logs/train.log"][resumed[0] if resumed else 0:] if re.match(r"step \d+/", ln)]
        r.truth(f"run 2 (PID {pid2}): first step line {steps2[0][1] if steps2 else '?'!r} (read at "
                f"{_utc(steps2[0][0]) if steps2 else '?'}), last {steps2[-1][1] if steps2 else '?'!r} (read at "
                f"{_utc(steps2[-1][0]) if steps2 else '?'}); {end[2] if end else 'no done line'!r} read at "
                f"{_utc(end[1]) if end else '?'}; the watchdog's exit line {'read at ' + _utc(finished[1]) if finished else 'not seen'}")

        # the operator comes back ~3 minutes after the launch (later if the watchdog is still going)
        time.sleep(max(0.0, launched + 180 - time.monotonic(), 5.0 if finished else 0.0))
        smi = "nvidia-smi" if r.gpu else "uptime"
        r.truth(f"the operator comes back: `tail -n 5 logs/watchdog.log`, `tail -n 3 logs/train.log`, `{smi}`")
        op.run("tail -n 5 logs/watchdog.log")
        op.run("tail -n 3 logs/train.log")
        op.run(smi)
        time.sleep(3)
    finally:
        env.clear()
        env.update(saved)
        # anything of the incident still running (none should be): the watchdog first, so it relaunches nothing
        for pid, role in sorted(seen.items(), key=lambda x: x[1] != "watchdog"):
            if _proc_stat(pid)[:1] not in ([], ["Z"]):
                r.truth(f"{role} PID {pid} still running at the end: SIGKILL")
                subprocess.run(["kill", "-9", pid], check=False)
        time.sleep(1)
        done.set()
        for t in threads:
            t.join(timeout=5)
        # the checkpoints are the trainer's state, not evidence (GBs)
        for f in sorted((r.dir / "ckpt").glob("*")):
            r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
            f.unlink()


# A trainer made for a preemptible (spot) slot, as such trainers are written: on SIGTERM it finishes
# its step, saves a checkpoint and exits 0 for the requeue loop; `--resume auto` goes on from the
# newest ckpt/step_N.pt; at its last step it writes logs/DONE. Synthetic token stream (each token
# the last plus a random step of 0-15), seeded by the step: learnable, the loss falls towards ln 16.
PREEMPT_TRAIN = r'''"""Train a small GPT-style LM on a synthetic token stream, on a preemptible (spot) slot.

    python3 train.py --resume auto --max-steps 1500

Checkpoints go to ckpt/step_N.pt every --save-every steps (the newest --keep-last are kept). On SIGTERM
(the scheduler's preemption notice) it finishes the step it is in, saves a checkpoint and exits with 0,
and requeue.sh starts it again: `--resume auto` goes on from the newest checkpoint. When it reaches
--max-steps it writes logs/DONE, which tells requeue.sh that the run is over.
"""
import argparse
import glob
import logging
import math
import os
import re
import signal
import sys
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--resume", default=None, help="a checkpoint, or 'auto': the newest in --ckpt-dir (if any)")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--save-every", type=int, default=200)
p.add_argument("--keep-last", type=int, default=3)
p.add_argument("--max-steps", type=int, default=1500)
p.add_argument("--log-every", type=int, default=25)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--lr", type=float, default=6e-4)
p.add_argument("--warmup-steps", type=int, default=100)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.Formatter.converter = time.gmtime
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
log = logging.getLogger("train")

# Preemption: the scheduler sends SIGTERM and kills the job when its grace period is over. Finish
# the step, save, and exit 0: requeue.sh starts the job again.
preempted = False


def on_sigterm(signum, frame):
    global preempted
    preempted = True


signal.signal(signal.SIGTERM, on_sigterm)

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.block_size


def get_batch(step):
    # each token the previous one plus a random step of 0-15 (mod the vocabulary); seeded by the step,
    # so that a resumed run reads the batches the first one would have read
    g = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + step)
    start = torch.randint(0, args.vocab_size, (args.batch_size, 1), generator=g, device=device)
    walk = torch.randint(0, 16, (args.batch_size, args.block_size + 1), generator=g, device=device).cumsum(1)
    chunk = (start + walk) % args.vocab_size
    return chunk[:, :-1], chunk[:, 1:]


''' + GPT_BLOCK + r'''class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(args.vocab_size, args.n_embd)
        self.wpe = nn.Embedding(args.block_size, args.n_embd)
        self.h = nn.ModuleList(Block(args.n_embd, args.n_head) for _ in range(args.n_layer))
        self.ln_f = nn.LayerNorm(args.n_embd)
        self.lm_head = nn.Linear(args.n_embd, args.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            torch.nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def get_lr(step):
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = (step - args.warmup_steps) / max(1, args.max_steps - args.warmup_steps)
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress))))


def checkpoints():
    found = []
    for path in glob.glob(os.path.join(args.ckpt_dir, "step_*.pt")):
        m = re.fullmatch(r"step_(\d+)\.pt", os.path.basename(path))
        if m:
            found.append((int(m.group(1)), path))
    return sorted(found)


def save_checkpoint(step):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"step_{step}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, path + ".tmp")
    os.replace(path + ".tmp", path)
    log.info("saved checkpoint %s", os.path.basename(path))
    for _, old in checkpoints()[:-args.keep_last]:
        os.remove(old)


model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)
log.info("model: %.1fM parameters | batch %d x %d tokens | %d steps | pid %d",
         sum(p.numel() for p in model.parameters()) / 1e6, args.batch_size, args.block_size, args.max_steps,
         os.getpid())

step = 0
resume = args.resume
if resume == "auto":
    found = checkpoints()
    resume = found[-1][1] if found else None
    if resume is None:
        log.info("no checkpoint found, starting from scratch")
if resume:
    state = torch.load(resume, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resuming from %s at step %d", os.path.basename(resume), step)

model.train()
t0, last = time.time(), step
while step < args.max_steps:
    for group in optimizer.param_groups:
        group["lr"] = get_lr(step)
    x, y = get_batch(step)
    with ctx:
        loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        dt = (time.time() - t0) / (step - last)
        log.info("step %d | loss %.2f | %.1f ms/step | %s tok/s", step, lossf, 1000 * dt,
                 f"{tokens_per_step / dt:,.0f}")
        t0, last = time.time(), step
    if preempted:
        log.warning("received SIGTERM (preemption notice), saving checkpoint at step %d", step)
        save_checkpoint(step)
        log.info("checkpoint saved, exiting for requeue")
        sys.exit(0)
    if step % args.save_every == 0 or step == args.max_steps:
        save_checkpoint(step)
        t0, last = time.time(), step

os.makedirs("logs", exist_ok=True)
with open("logs/DONE", "w") as f:
    f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} step {step}\n")
log.info("training complete: %d steps", step)
'''

# The operator's requeue wrapper for the spot slot, as people write them: the trainer in the
# foreground through `tee -a`, and after each exit logs/DONE tells a finish from a preemption.
PREEMPT_REQUEUE = """#!/bin/bash
# requeue.sh: keep the LM run going on the spot slot. A preemption SIGTERMs train.py, which saves
# a checkpoint and exits; we start it again and it resumes from the newest checkpoint. train.py
# writes logs/DONE when it reaches its last step.
#   nohup ./requeue.sh > logs/requeue.log 2>&1 &
cd "$(dirname "$0")"
mkdir -p logs ckpt
attempt=1
while true; do
    echo "$(date -u +%FT%TZ) requeue: attempt $attempt starting"
    @PY@ train.py --resume auto --max-steps @MAX_STEPS@@FLAGS@ 2>&1 | tee -a logs/train.log
    status=${PIPESTATUS[0]}
    if [ -f logs/DONE ]; then
        echo "$(date -u +%FT%TZ) requeue: training complete, exiting"
        exit 0
    fi
    echo "$(date -u +%FT%TZ) requeue: attempt $attempt ended with status $status, requeueing in 20s"
    sleep 20
    attempt=$((attempt + 1))
done
"""

# What a spot VM's preemption watcher does, made real: the driver runs it at the moment of the
# notice; it logs the notice, sends SIGTERM to the job's process itself, and gives it the notice's
# grace period before a SIGKILL. Its stdout (to the driver) has the times to the millisecond.
PREEMPT_WATCHER = r'''"""Preemption watcher: on the instance's preemption notice, SIGTERM the job's process and give it
the notice's grace period to exit, then SIGKILL it.

    python3 preempt_watcher.py --pid PID [--grace 30] [--log logs/preempt-watcher.log]
"""
import argparse
import os
import signal
import time

p = argparse.ArgumentParser()
p.add_argument("--pid", type=int, required=True)
p.add_argument("--grace", type=int, default=30)
p.add_argument("--log", default="logs/preempt-watcher.log")
args = p.parse_args()


def log(msg):
    now = time.time()
    with open(args.log, "a") as f:
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now))} {msg}\n")
    print(f"{time.strftime('%H:%M:%S', time.gmtime(now))}.{int(now % 1 * 1000):03d} {msg}", flush=True)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def program(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        return " ".join([os.path.basename(argv[0])] + argv[1:2])
    except (OSError, IndexError):
        return "?"


log(f"preemption notice received (instance-action: terminate, {args.grace}s)")
name = program(args.pid)
os.kill(args.pid, signal.SIGTERM)
log(f"sent SIGTERM to pid {args.pid} ({name})")
t0 = time.monotonic()
while alive(args.pid) and time.monotonic() - t0 < args.grace:
    time.sleep(0.1)
if alive(args.pid):
    os.kill(args.pid, signal.SIGKILL)
    log(f"grace period over, sent SIGKILL to pid {args.pid}")
else:
    log(f"pid {args.pid} exited {time.monotonic() - t0:.1f}s after SIGTERM")
'''

PREEMPT_STEP = r"(?m)^(\S+ \S+) \[INFO\] step (\d+) \| loss (\S+) \| ([\d.]+) ms/step \| ([\d,]+) tok/s$"


def _log_time(stamp: str) -> float:
    """A `logging` time (`2026-12-06 18:03:11,123`, UTC) as an epoch."""
    return dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC).timestamp()


def preempt_requeue(r: Recording) -> None:
    r.smi_stream()
    r.smi_apps()
    # the ps loop, with the wrapper, its tee and its sleep beside the python processes
    r.background("while true; do echo \"# $(date -u +%Y-%m-%dT%H:%M:%SZ)\"; "
                 "ps -eo pid,ppid,pgid,sid,user,lstart,etimes,stat,args ww | "
                 "grep -E '^ *PID|[p]ython|[r]equeue|[t]ee -a|[s]leep 20'; sleep 2; done", "logs/ps.txt")
    py = _python3()
    # the dry run: a tiny model on one CPU thread, at about the pace of the GPU's (~15 steps/s)
    flags = "" if r.gpu else (" --device cpu --n-layer 2 --n-head 4 --n-embd 128 --block-size 64 --vocab-size 4096 "
                              "--batch-size 8")
    max_steps = 1400 if r.gpu else 2400
    (r.dir / "train.py").write_text(PREEMPT_TRAIN)
    wrapper = r.dir / "requeue.sh"
    wrapper.write_text(PREEMPT_REQUEUE.replace("@PY@", py).replace("@MAX_STEPS@", str(max_steps))
                       .replace("@FLAGS@", flags))
    wrapper.chmod(0o755)
    (r.dir / "run" / "preempt_watcher.py").write_text(PREEMPT_WATCHER)
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)
    deadline = time.monotonic() + (470 if r.gpu else 700)

    def text(rel: str) -> str:
        path = r.dir / rel
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(rel: str) -> str:
        lines = text(rel).strip().splitlines()
        return lines[-1][:200] if lines else "(empty)"

    def attempts() -> list[str]:
        """train.log cut at each start's `model:` line."""
        return re.split(r"(?m)^(?=\S+ \S+ \[INFO\] model: )", text("logs/train.log"))[1:]

    def role(pid: str) -> str | None:
        """What a process of this incident is, from its command line (and its cwd, in the folder)."""
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if not Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(r.dir.resolve()):
                return None
        except OSError:
            return None
        if b"./requeue.sh" in argv[:3]:
            # not its own subshells (a pipeline's process before its exec, a `$(date ...)`)
            parent = _proc_stat(pid)[1:2]
            return None if parent and role(parent[0]) == "requeue.sh" else "requeue.sh"
        if b"python" in argv[0] and b"train.py" in argv[1:3]:
            return "trainer"
        if b"python" in argv[0] and b"run/preempt_watcher.py" in argv[1:3]:
            return "watcher"
        if argv[:2] == [b"sleep", b"20"]:
            return "sleep 20"
        if argv[0] == b"tee":
            return "tee"
        return None

    # each process of the incident, from when the driver first sees it to when it has exited (0.1 s)
    trainers: list[tuple[str, float]] = []  # (PID, when the driver saw it, epoch)
    exited: dict[str, str] = {}
    done = threading.Event()

    def watch() -> None:
        alive: dict[str, str] = {}
        while not done.is_set():
            for d in Path("/proc").glob("[0-9]*"):
                pid = d.name
                if pid in alive or pid in exited:
                    continue
                what = role(pid)
                fields = _proc_stat(pid)
                if what is None or not fields or fields[0] == "Z":
                    continue
                alive[pid] = what
                if what == "trainer":
                    trainers.append((pid, time.time()))
                r.truth(f"{what} PID {pid} seen (parent {fields[1]})"
                        + (f"; ckpt/: {sorted(f.name for f in (r.dir / 'ckpt').glob('step_*.pt'))}"
                           if what == "trainer" else ""))
            for pid in list(alive):
                fields = _proc_stat(pid)
                if fields and fields[0] != "Z":
                    continue
                what = alive.pop(pid)
                exited[pid] = _wait_status(fields)
                r.truth(f"{what} PID {pid} exited ({exited[pid]})"
                        + (f"; train.log's last line: {last_line('logs/train.log')!r}" if what == "trainer" else ""))
            time.sleep(0.1)

    def next_trainer(n: int) -> tuple[str, float]:
        while time.monotonic() < deadline:
            if len(trainers) >= n:
                return trainers[n - 1]
            time.sleep(0.1)
        return "", 0.0

    def wait_exit(pid: str) -> bool:
        while time.monotonic() < deadline:
            if pid in exited:
                return True
            time.sleep(0.1)
        return False

    def preempt(pid: str) -> None:
        """The watcher, run now: the notice, the SIGTERM, up to 30 s of grace."""
        r.truth(f"the preemption watcher runs (no transcript): notice, then SIGTERM to PID {pid}")
        out = r.dir / "logs" / ".watcher.out"
        with open(out, "w") as f:
            subprocess.run([sys.executable, "run/preempt_watcher.py", "--pid", pid, "--grace", "30"], cwd=r.dir,
                           stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False, timeout=60)
        for line in out.read_text(errors="replace").splitlines():
            r.truth(f"watcher: {line}")

    def summary() -> None:
        for n, part in enumerate(attempts(), 1):
            lines = part.strip().splitlines()
            start = next((ln[24:] for ln in lines if "resuming from" in ln or "starting from scratch" in ln), "(neither)")
            steps = re.findall(PREEMPT_STEP, part)
            saves = re.findall(r"(\S+ \S+) \[INFO\] saved checkpoint (\S+)", part)
            marks = [ln for ln in lines if re.search(r"SIGTERM|exiting for requeue|training complete|Traceback|Error", ln)]
            r.truth(f"train.log attempt {n}: `model:` at {lines[0][:23]}; {start!r}; step lines "
                    f"{steps[0][1] if steps else '?'}-{steps[-1][1] if steps else '?'} ({steps[0][0] if steps else '?'} "
                    f"to {steps[-1][0] if steps else '?'}); saved: {[(a[11:], b) for a, b in saves]}; {marks}")
            if len(steps) > 2:
                ms = [float(s[3]) for s in steps[1:]]
                r.truth(f"train.log attempt {n}: ms/step after its first step line: median {statistics.median(ms):.1f} "
                        f"(min {min(ms):.1f}, max {max(ms):.1f}); loss {steps[0][2]} -> {steps[-1][2]}")
        for line in text("logs/requeue.log").splitlines():
            if " requeue: " in line:
                r.truth(f"requeue.log: {line}")
        for line in text("logs/preempt-watcher.log").splitlines():
            r.truth(f"preempt-watcher.log: {line}")

    watcher = threading.Thread(target=watch, daemon=True)
    try:
        r.truth(f"train.py (GPT-style LM, SIGTERM: save ckpt/step_N.pt and exit 0; --resume auto; logs/DONE at "
                f"step {max_steps}), requeue.sh (`{py} train.py --resume auto --max-steps {max_steps}{flags} 2>&1 | "
                "tee -a logs/train.log` in a loop, 20 s apart, until logs/DONE) and run/preempt_watcher.py are in the "
                "folder")
        watcher.start()
        launch = "nohup ./requeue.sh > logs/requeue.log 2>&1 &"
        r.truth(f"operator types `{launch}`")
        op.run(launch)
        pace = 0.0
        for n in (1, 2, 3):
            pid, seen = next_trainer(n)
            if not pid:
                r.truth(f"attempt {n}: no trainer seen before the deadline; requeue.log's last line "
                        f"{last_line('logs/requeue.log')!r}")
                return
            if n == 3:
                break
            at = 60.0
            if n == 2:
                # ~40 s in (32-50 s), so that attempt 3 trains ~45 s to the last step at attempt 1's pace
                at = 40.0
                while time.monotonic() < deadline and time.time() < seen + 45 and pid not in exited:
                    part = attempts()[-1] if len(attempts()) >= 2 else ""
                    first = re.findall(PREEMPT_STEP, part)
                    if first:
                        t, s = _log_time(first[0][0]), int(first[0][1])
                        target = max_steps - 45 * pace
                        at = min(50.0, max(32.0, t + (target - s) / pace - seen)) if pace > 0 else 40.0
                        r.truth(f"attempt 2's first step line: step {s} at {_utc(t)}; at attempt 1's pace "
                                f"{pace:.2f} steps/s the notice comes {at:.1f} s after PID {pid} was seen "
                                f"(for ~45 s of training in attempt 3; 32-50 s allowed)")
                        break
                    time.sleep(0.2)
            while time.monotonic() < deadline and time.time() < seen + at and pid not in exited:
                time.sleep(0.05)
            if pid in exited:
                r.truth(f"attempt {n}: PID {pid} exited before its preemption")
                continue
            preempt(pid)
            wait_exit(pid)
            if n == 1:
                steps = re.findall(PREEMPT_STEP, attempts()[0] if attempts() else "")
                if len(steps) >= 3:
                    pace = (int(steps[-1][1]) - int(steps[1][1])) / max(
                        1e-3, _log_time(steps[-1][0]) - _log_time(steps[1][0]))
                r.truth(f"attempt 1's pace over its step lines (saves included): {pace:.2f} steps/s")
        if not r.wait_for("logs/requeue.log", "training complete, exiting", max(1.0, deadline - time.monotonic())):
            r.truth(f"no 'training complete' in requeue.log: its last line {last_line('logs/requeue.log')!r}")
        time.sleep(1)
        r.truth(f"processes exited so far: {exited}")
        time.sleep(4)
        r.truth("operator looks: `cat logs/requeue.log`, `tail -n 4 logs/train.log`, `ls ckpt/`")
        op.run("cat logs/requeue.log")
        op.run("tail -n 4 logs/train.log")
        op.run("ls ckpt/")
        time.sleep(2)
        summary()
    finally:
        env.clear()
        env.update(saved)
        r.stop_ours("./requeue.sh")
        r.stop_ours("train.py --resume auto")
        time.sleep(1)
        done.set()
        watcher.join(timeout=5)
        # the checkpoints are the trainer's state, not evidence (GBs); the operator's `ls ckpt/` keeps their names
        for f in (r.dir / "ckpt").glob("*"):
            r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
            f.unlink()


# cpu-fallback's trainer: resume-mismatch's train.py (dated `logging` lines in UTC, an atomic ckpt/last.pt,
# --resume) with --max-steps, a model small enough to step on a CPU, and a habit as common as any: the
# device is "cuda" where torch sees a GPU, else "cpu" with a WARNING, and the run trains on.
CPU_FALLBACK_TRAIN = r'''"""Train a small GPT-style LM on a synthetic token stream, checkpointing to ckpt/last.pt every 2000 steps.

    python3 train.py --run-name lm --max-steps 20000
    python3 train.py --run-name lm --resume --max-steps 20000     # go on from ckpt/last.pt
"""
import argparse
import logging
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--run-name", default="run")
p.add_argument("--n-layer", type=int, default=6)
p.add_argument("--n-head", type=int, default=6)
p.add_argument("--n-embd", type=int, default=384)
p.add_argument("--block-size", type=int, default=256)
p.add_argument("--vocab-size", type=int, default=4096)
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--warmup", type=int, default=100, help="steps of linear warm-up")
p.add_argument("--max-steps", type=int, default=20000, help="train until this step")
p.add_argument("--resume", action="store_true", help="go on from --ckpt")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--save-every", type=int, default=2000)
p.add_argument("--log-every", type=int, default=20)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.Formatter.converter = time.gmtime  # UTC
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
log.info("config: %s", vars(args))

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    log.warning("CUDA is not available, training on CPU (this will be slow)")
torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
cuda = device == "cuda"
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

# data: a synthetic token stream (each token the previous one plus a random step of 0-15)
n_tokens = 5_000_000
g = torch.Generator().manual_seed(42)
data = (torch.randint(0, 16, (n_tokens,), generator=g).cumsum(0) % args.vocab_size).to(device)


def get_batch():
    ix = torch.randint(n_tokens - args.block_size - 1, (args.batch_size,), device=device)
    chunk = data[ix[:, None] + torch.arange(args.block_size + 1, device=device)]
    return chunk[:, :-1], chunk[:, 1:]


''' + GPT_MODEL + r'''
model = GPT().to(device)
log.info("model: %d layers, width %d, %.1fM parameters", args.n_layer, args.n_embd,
         sum(p.numel() for p in model.parameters()) / 1e6)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume and os.path.exists(args.ckpt):
    log.info("resuming from %s", args.ckpt)
    state = torch.load(args.ckpt, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resumed at step %d", step)
elif args.resume:
    log.info("no checkpoint at %s, starting from scratch", args.ckpt)
else:
    log.info("starting from scratch")


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    tmp = args.ckpt + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, tmp)
    os.replace(tmp, args.ckpt)
    log.info("saved checkpoint step %d to %s", step, args.ckpt)


log.info("training from step %d to step %d", step, args.max_steps)
start = t0 = time.time()
while step < args.max_steps:
    for group in optimizer.param_groups:
        group["lr"] = args.lr * min(1.0, (step + 1) / args.warmup)
    x, y = get_batch()
    with ctx:
        loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        log.info("step %d | loss %.2f | %s tok/s", step, lossf,
                 f"{args.log_every * args.batch_size * args.block_size / (t1 - t0):,.0f}")
        t0 = t1
    if step % args.save_every == 0:
        save_checkpoint()
        t0 = time.time()
if step % args.save_every:
    save_checkpoint()
log.info("training done at step %d (%.0f s)", step, time.time() - start)
'''


CF_STEP = r"(?m)^(\S+ \S+) INFO step (\d+) \| loss (\S+) \| ([\d,]+) tok/s$"
CF_WARNING, CF_RESUMED, CF_BEGAN = r"\S+ \S+ WARNING [^\n]*", r"\S+ \S+ INFO resumed at step[^\n]*", r"(\S+ \S+) INFO training from step"


def _watch_trainers(r: Recording, done: threading.Event, seen: dict, exited: dict[str, tuple[float, str]],
                    label: Callable[[list[bytes]], object], on_seen: Callable[[str, list[bytes], list[str]], None],
                    on_exit: Callable[[str], None], every: float = 0.05,
                    each_round: Callable[[], None] | None = None) -> None:
    """A scenario's /proc watcher (its thread's target) over the trainers of the incident: each python
    running train.py in the folder (its working directory there), from when it is first seen alive to
    when it has exited (gone, or a zombie), read every `every` s until `done` is set.

    A new trainer goes into `seen` as `label(argv)` (argv: its command line's words), then
    `on_seen(pid, argv, fields)` (fields: its /proc/PID/stat from the state on) writes its truth line;
    a PID already in `seen` is never looked at again. One that has exited goes into `exited` as (the time
    the driver saw it exit, its wait status), then `on_exit(pid)` writes its truth line. `each_round()`,
    where given, runs after each pass."""
    alive: set[str] = set()
    folder = r.dir.resolve()
    while not done.is_set():
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            pid = cmdline.parent.name
            if pid in seen:
                continue
            try:
                argv = cmdline.read_bytes().split(b"\0")
                if not (b"python" in argv[0] and argv[1:2] == [b"train.py"]
                        and Path(os.readlink(cmdline.parent / "cwd")).is_relative_to(folder)):
                    continue
            except (OSError, IndexError):
                continue
            fields = _proc_stat(pid)
            if not fields or fields[0] == "Z":
                continue
            seen[pid] = label(argv)
            alive.add(pid)
            on_seen(pid, argv, fields)
        for pid in sorted(alive):
            fields = _proc_stat(pid)
            if fields and fields[0] != "Z":
                continue
            alive.discard(pid)
            exited[pid] = (time.time(), _wait_status(fields))
            on_exit(pid)
        if each_round is not None:
            each_round()
        time.sleep(every)


def _run_name(argv: list[bytes]) -> str:
    """A trainer's --run-name, from its command line's words ("?" where it has none)."""
    args = [a.decode(errors="replace") for a in argv]
    return args[args.index("--run-name") + 1] if "--run-name" in args[:-1] else "?"


def _pid_seen(seen: dict, label: object, timeout: float = 30) -> str:
    """The first PID `_watch_trainers` put into `seen` as `label`, waited for up to `timeout` s ("?" if none)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for p, k in list(seen.items()) if k == label]
        if found:
            return found[0]
        time.sleep(0.05)
    return "?"


def _gone(exited: dict[str, tuple[float, str]], pid: str, timeout: float, every: float = 0.05) -> bool:
    """Wait up to `timeout` s until `_watch_trainers` has put `pid` into `exited`; whether it has."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid not in exited:
        time.sleep(every)
    return pid in exited


def _ended(exited: dict[str, tuple[float, str]], pid: str) -> str:
    """How and when `pid` exited, as `_watch_trainers` saw it."""
    return f"exited ({exited[pid][1]}) at {_utc(exited[pid][0])}" if pid in exited else "not seen exiting"


def cpu_fallback(r: Recording) -> None:
    py = _python3()
    # the dry run: a tiny model (every run on the CPU there), saving more often
    flags = "" if r.gpu else (" --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 --vocab-size 1024 "
                              "--save-every 200")
    save_every = 2000 if r.gpu else 200
    run1_s, run2_s, run3_s = 45, 60, 40  # run 1's training before the kill, run 2's wall time, run 3's training
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    logs = r.dir / "logs"
    calib = r.dir.parent / f"{r.name}.calibrate"

    def text(log: str) -> str:
        path = logs / log
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(log: str) -> str:
        lines = text(log).strip().splitlines()
        return lines[-1][:300] if lines else "(empty)"

    def steps_of(body: str) -> list[tuple[float, int, float]]:
        return [(_log_time(m.group(1)), int(m.group(2)), float(m.group(4).replace(",", "")))
                for m in re.finditer(CF_STEP, body)]

    def pace(lines: list[tuple[float, int, float]]) -> float:
        """Steps a second from the second step line to the last (saves included)."""
        if len(lines) < 3:
            return 0.0
        return (lines[-1][1] - lines[1][1]) / max(1e-3, lines[-1][0] - lines[1][0])

    # each trainer of the incident (a python running train.py in the folder), from when the driver first
    # sees it to when it has exited, read from /proc every 0.05 s
    run_of: dict[str, int] = {}
    exited: dict[str, tuple[float, str]] = {}
    current = [0]
    done = threading.Event()

    def seen_one(pid: str, argv: list[bytes], fields: list[str]) -> None:
        shown = b" ".join(argv).decode(errors="replace").strip()
        r.truth(f"run {current[0]} trainer: PID {pid} seen (parent {fields[1]}, process group {fields[2]}, "
                f"session {fields[3]}): {shown!r}; its environment: "
                f"CUDA_VISIBLE_DEVICES={_environ(pid, 'CUDA_VISIBLE_DEVICES')}")

    def exited_one(pid: str) -> None:
        log = f"train_{run_of[pid]}.log"
        r.truth(f"run {run_of[pid]} trainer PID {pid} exited ({exited[pid][1]}); {log}'s last line "
                f"{last_line(log)!r}")

    def watch() -> None:
        _watch_trainers(r, done, run_of, exited, lambda argv: current[0], seen_one, exited_one)

    pid_of = functools.partial(_pid_seen, run_of)  # pid_of(n): run n's trainer
    gone = functools.partial(_gone, exited)
    ended = functools.partial(_ended, exited)

    def smi_rows(pid: str) -> str:
        """The rows of logs/smi_apps.csv that list `pid`: how many, their line numbers, times and memory."""
        if not r.gpu:
            return "no smi_apps.csv (dry run)"
        rows = [(i, ln.split(", ")) for i, ln in enumerate(text("smi_apps.csv").splitlines(), 1)]
        mine = [(i, f) for i, f in rows if len(f) >= 5 and f[2] == pid]
        if not mine:
            return f"smi_apps.csv: no row lists PID {pid} (of {len(rows)} lines)"
        mems = sorted({f[4] for _, f in mine})
        return (f"smi_apps.csv: {len(mine)} rows list PID {pid}, lines {mine[0][0]}-{mine[-1][0]} "
                f"({mine[0][1][0]} to {mine[-1][1][0]}), memory {', '.join(mems[:4])}")

    def ckpts() -> list[str]:
        return sorted(f.name for f in (r.dir / "ckpt").glob("*"))

    def said(n: int) -> str:
        log = f"train_{n}.log"
        body = text(log)
        lines = steps_of(body)
        saves = re.findall(r"saved checkpoint step (\d+)", body)
        start = _last(r"INFO ((?:resuming from|resumed at|no checkpoint at|starting from scratch)[^\n]*)", body)
        warn = _last(CF_WARNING, body)
        rates = [x[2] for x in lines[1:]]
        return (f"logs/{log}: {len(body.splitlines())} lines, first at {body[:23] if body.strip() else '?'}; "
                f"WARNING line: {warn!r}; {start!r}; "
                + (f"step lines {lines[0][1]}-{lines[-1][1]} ({len(lines)}, {_utc(lines[0][0])} to "
                   f"{_utc(lines[-1][0])}); " if lines else "no step line; ")
                + (f"tok/s after the first step line: median {statistics.median(rates):,.0f} (min {min(rates):,.0f}, "
                   f"max {max(rates):,.0f}); pace {pace(lines):.2f} steps/s; " if rates else "")
                + f"saved steps {saves}; 'training done' in it: {'training done' in body}; "
                f"'Traceback' in it: {'Traceback' in body}; last line {last_line(log)!r}")

    watcher = threading.Thread(target=watch, daemon=True)
    op = Transcript(r.dir)
    try:
        (r.dir / "train.py").write_text(CPU_FALLBACK_TRAIN)
        # the pace of this model on this machine's GPU (the dry run: its CPU), measured before the captures
        # start and outside the folder, so that --max-steps leaves run 3 about run3_s of training
        shutil.rmtree(calib, ignore_errors=True)
        calib.mkdir()
        (calib / "train.py").write_text(CPU_FALLBACK_TRAIN)
        cal_steps, cal_from = (2500, 500) if r.gpu else (600, 200)
        cal_argv = [sys.executable, "train.py", "--run-name", "calibrate", "--max-steps", str(cal_steps),
                    "--save-every", "1000000", "--log-every", "100", *flags.split()]
        r.truth(f"calibration (before the captures, in {calib}, outside the folder, in no transcript): "
                f"`{' '.join(cal_argv)}`")
        cal = subprocess.run(cal_argv, cwd=calib, env=env, capture_output=True, text=True, timeout=240, check=False)
        cal_out = cal.stdout + cal.stderr
        cal_lines = [x for x in steps_of(cal_out) if x[1] >= cal_from]
        p = (cal_lines[-1][1] - cal_lines[0][1]) / max(1e-3, cal_lines[-1][0] - cal_lines[0][0]) if len(cal_lines) >= 2 else 0.0
        unit = 1000 if r.gpu else 100
        if p > 0:
            # run 1 ends ~run1_s in, its last checkpoint on average save_every/2 behind that; the GPU recording's
            # CPU run is too slow to reach a save; the dry run's trains at the same pace and saves
            total = p * (run1_s + run3_s) - save_every / 2 + (0 if r.gpu else p * run2_s)
            max_steps = max(2 * save_every, int(round(total / unit)) * unit)
        else:
            max_steps = 30000 if r.gpu else 3000
        noted = "; ".join(ln[24:] for ln in cal_out.splitlines() if "WARNING" in ln or "model:" in ln)
        r.truth(f"calibration exited {cal.returncode}: {len(cal_lines)} step lines from step {cal_from}, pace "
                f"{p:.1f} steps/s ({noted[:300]}); --max-steps {max_steps} (for ~{run1_s} s of training in run 1 and "
                f"~{run3_s} s in run 3 at that pace){'' if cal.returncode == 0 else '; its output ends ' + repr(cal_out[-500:])}")
        shutil.rmtree(calib, ignore_errors=True)

        r.gpus_and_processes()
        watcher.start()
        r.truth(f"train.py is in the folder (GPT-style LM; device \"cuda\" if torch.cuda.is_available() else \"cpu\", "
                f"with a WARNING line on the CPU; ckpt/last.pt every {save_every} steps and at the end, atomically; "
                f"--resume loads it; no SIGTERM handler); the operator's shell has CUDA_VISIBLE_DEVICES="
                f"{env.get('CUDA_VISIBLE_DEVICES')}")
        time.sleep(3)
        base = f"nohup {py} train.py --run-name lm"

        def launch(n: int, cmd: str) -> tuple[str, float]:
            current[0] = n
            r.truth(f"run {n}: operator types `{cmd}`")
            at = time.time()
            op.run(cmd)
            pid = pid_of(n)
            r.truth(f"run {n}: trainer PID {pid} ({_program(pid)}), CUDA_VISIBLE_DEVICES="
                    f"{_environ(pid, 'CUDA_VISIBLE_DEVICES')}")
            return pid, at

        def kill(n: int, pid: str) -> None:
            """The operator finds the trainer with pgrep and kills it by the PID it shows."""
            shown = op.run("pgrep -af train.py")[0]
            listed = [ln.split()[0] for ln in shown.splitlines() if "train.py --run-name lm" in ln]
            target = listed[0] if len(listed) == 1 else pid
            log = f"train_{n}.log"
            r.truth(f"run {n}: `pgrep -af train.py` lists {listed}; the driver's run-{n} trainer is {pid}; "
                    f"operator types `kill {target}`; {log}'s last line {last_line(log)!r}")
            op.run(f"kill {target}")
            gone(pid, 30)
            r.truth(f"run {n} trainer (PID {pid}) {ended(pid) if pid in exited else 'still running 30 s after the kill'}")

        # run 1: on the GPU, ~run1_s of training, then stopped on purpose
        pid1, _ = launch(1, f"{base} --max-steps {max_steps}{flags} > logs/train_1.log 2>&1 &")
        if not r.wait_for("logs/train_1.log", "INFO training from step", 300):
            return
        began = _log_time(re.search(CF_BEGAN, text("train_1.log")).group(1))
        r.wait_for("logs/train_1.log", " INFO step ", 120)
        first = steps_of(text("train_1.log"))
        r.truth(f"run 1 began training at {_utc(began)} (its log's time); first step line: "
                f"{'step ' + str(first[0][1]) + ' at ' + _utc(first[0][0]) if first else 'none'}")
        time.sleep(max(0.0, began + run1_s - time.time()))
        r.truth(f"~{run1_s} s of run 1's training; the operator stops it on purpose, to relaunch it with the line "
                f"from their notes (written on a two-GPU machine, where GPU 1 was the free one); {said(1)}")
        kill(1, pid1)
        r.truth(f"after run 1: {said(1)}; ckpt/: {ckpts()}; {smi_rows(pid1)}")
        time.sleep(6)

        # run 2: the same resume with CUDA_VISIBLE_DEVICES=1 typed before it; this machine has no GPU 1
        pid2, at2 = launch(2, f"CUDA_VISIBLE_DEVICES=1 {base} --resume --max-steps {max_steps}{flags} "
                              "> logs/train_2.log 2>&1 &")
        if r.wait_for("logs/train_2.log", "WARNING", 120):
            r.truth(f"run 2 logged {_last(CF_WARNING, text('train_2.log'))!r}")
        if r.wait_for("logs/train_2.log", "INFO resumed at step", 180):
            r.truth(f"run 2: {_last(CF_RESUMED, text('train_2.log'))!r}")
        time.sleep(max(0.0, at2 + run2_s - time.time()))
        r.truth(f"~{run2_s} s after run 2's launch the operator looks: `tail -n 3 logs/train_2.log`, "
                f"{'`nvidia-smi`' if r.gpu else '`uptime`'}; {said(2)}; {smi_rows(pid2)}")
        op.run("tail -n 3 logs/train_2.log")
        op.run("nvidia-smi" if r.gpu else "uptime")
        time.sleep(3)
        if pid2 in exited:
            r.truth(f"run 2 (PID {pid2}) had already {ended(pid2)}: no kill")
        else:
            kill(2, pid2)
        r.truth(f"after run 2: {said(2)}; ckpt/: {ckpts()}")
        time.sleep(6)

        # run 3: the same resume without the variable: back on the GPU, to its last step
        pid3, _ = launch(3, f"{base} --resume --max-steps {max_steps}{flags} > logs/train_3.log 2>&1 &")
        if r.wait_for("logs/train_3.log", "INFO resumed at step", 180):
            r.truth(f"run 3: {_last(CF_RESUMED, text('train_3.log'))!r}")
        if not r.wait_for("logs/train_3.log", "training done", 300):
            r.truth(f"no 'training done' in train_3.log: its last line {last_line('train_3.log')!r}")
        gone(pid3, 60)
        r.truth(f"run 3 (PID {pid3}): {ended(pid3)}")
        time.sleep(5)
        r.truth("the operator looks once more: `tail -n 3 logs/train_3.log`")
        op.run("tail -n 3 logs/train_3.log")
        time.sleep(3)
        for n, pid in ((1, pid1), (2, pid2), (3, pid3)):
            r.truth(f"summary run {n}: PID {pid}, CUDA_VISIBLE_DEVICES typed before it: {'1' if n == 2 else 'none'}; "
                    f"{ended(pid)}; {said(n)}; {smi_rows(pid)}")
    finally:
        env.clear()
        env.update(saved)
        _wind_down(r, "train.py --run-name lm", done, watcher, calib)


# sweep-share's trainer: cpu-fallback's train.py (it has --lr) with defaults large enough that one run
# keeps the GPU busy (12 layers, width 768, block 1024, batch 16: the GPU, not the host, sets the pace),
# so that three runs on one GPU each step slower.
SWEEP_SHARE_TRAIN = CPU_FALLBACK_TRAIN
for _old, _new in (('"--n-layer", type=int, default=6)', '"--n-layer", type=int, default=12)'),
                   ('"--n-head", type=int, default=6)', '"--n-head", type=int, default=12)'),
                   ('"--n-embd", type=int, default=384)', '"--n-embd", type=int, default=768)'),
                   ('"--block-size", type=int, default=256)', '"--block-size", type=int, default=1024)'),
                   ('"--batch-size", type=int, default=8)', '"--batch-size", type=int, default=16)'),
                   ('    python3 train.py --run-name lm --max-steps 20000\n',
                    '    python3 train.py --run-name lm --max-steps 20000\n'
                    '    python3 train.py --run-name lr-1e-3 --lr 1e-3 --max-steps 20000\n')):
    assert _old in SWEEP_SHARE_TRAIN, _old
    SWEEP_SHARE_TRAIN = SWEEP_SHARE_TRAIN.replace(_old, _new)


def _smi_time(stamp: str) -> float:
    """An `nvidia-smi` timestamp (`2026/12/06 21:43:03.476`, the machine's clock: UTC) as an epoch."""
    return dt.datetime.strptime(stamp.strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=dt.UTC).timestamp()


def sweep_share(r: Recording) -> None:
    py = _python3()
    # the dry run: a tiny model on the CPU (the GPU path's commands carry no size flags)
    flags = "" if r.gpu else " --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 --vocab-size 1024"
    alone_s, shared_s, after_s = 40, 40, 30  # base alone; from the sweep's launch to the look; base after the kill
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    logs = r.dir / "logs"
    calib = r.dir.parent / f"{r.name}.calibrate"
    lrs = ("1e-4", "1e-3")
    sweeps = tuple(f"sweep-{lr}" for lr in lrs)

    def text(log: str) -> str:
        path = logs / log
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(log: str) -> str:
        lines = text(log).strip().splitlines()
        return lines[-1][:300] if lines else "(empty)"

    def steps_of(body: str) -> list[tuple[float, int, float]]:
        return [(_log_time(m.group(1)), int(m.group(2)), float(m.group(4).replace(",", "")))
                for m in re.finditer(CF_STEP, body)]

    def pace_between(lines: list[tuple[float, int, float]], t0: float, t1: float) -> str:
        """Steps a second over the step lines stamped in [t0, t1] (first to last of them) and their tok/s."""
        inside = [x for x in lines if t0 <= x[0] <= t1]
        if len(inside) < 2:
            return f"{len(inside)} step lines in {_utc(t0)}-{_utc(t1)}: no pace"
        p = (inside[-1][1] - inside[0][1]) / max(1e-3, inside[-1][0] - inside[0][0])
        rates = [x[2] for x in inside[1:]]
        return (f"steps {inside[0][1]}-{inside[-1][1]} stamped {_utc(inside[0][0])}-{_utc(inside[-1][0])}: "
                f"{p:.2f} steps/s, tok/s median {statistics.median(rates):,.0f} (min {min(rates):,.0f}, "
                f"max {max(rates):,.0f})")

    def smi_between(t0: float, t1: float) -> str:
        """smi.csv's rows in [t0, t1]: line numbers, memory and utilization."""
        if not r.gpu:
            return "no smi.csv (dry run)"
        rows = []
        for i, ln in enumerate(text("smi.csv").splitlines(), 1):
            f = ln.split(", ")
            try:
                rows.append((i, _smi_time(f[0]), int(f[3].split()[0]), int(f[5].split()[0])))
            except (ValueError, IndexError):
                continue
        inside = [x for x in rows if t0 <= x[1] <= t1]
        if not inside:
            return f"smi.csv: no row in {_utc(t0)}-{_utc(t1)}"
        utils, mems = [x[3] for x in inside], [x[2] for x in inside]
        return (f"smi.csv lines {inside[0][0]}-{inside[-1][0]} ({_utc(inside[0][1])}-{_utc(inside[-1][1])}): "
                f"utilization {min(utils)}-{max(utils)} % (median {statistics.median(utils):g}), "
                f"memory {min(mems)}-{max(mems)} MiB")

    # each trainer of the incident (a python running train.py in the folder), by its --run-name, from
    # when the driver first sees it to when it has exited, read from /proc every 0.05 s
    name_of: dict[str, str] = {}
    exited: dict[str, tuple[float, str]] = {}
    done = threading.Event()

    def log_of(name: str) -> str:
        return f"{name}.log"

    def seen_one(pid: str, argv: list[bytes], fields: list[str]) -> None:
        args = [a.decode(errors="replace") for a in argv]
        r.truth(f"{name_of[pid]} trainer: PID {pid} seen (parent {fields[1]}, process group {fields[2]}, "
                f"session {fields[3]}): {' '.join(args).strip()!r}; CUDA_VISIBLE_DEVICES="
                f"{_environ(pid, 'CUDA_VISIBLE_DEVICES')}")

    def exited_one(pid: str) -> None:
        name = name_of[pid]
        r.truth(f"{name} trainer PID {pid} exited ({exited[pid][1]}); {log_of(name)}'s last line "
                f"{last_line(log_of(name))!r}")

    def watch() -> None:
        _watch_trainers(r, done, name_of, exited, _run_name, seen_one, exited_one)

    pid_of = functools.partial(_pid_seen, name_of)  # pid_of(name): the trainer of --run-name `name`
    gone = functools.partial(_gone, exited)
    ended = functools.partial(_ended, exited)

    def smi_rows(pid: str) -> str:
        """The rows of logs/smi_apps.csv that list `pid`: how many, their line numbers, times and memory."""
        if not r.gpu:
            return "no smi_apps.csv (dry run)"
        rows = [(i, ln.split(", ")) for i, ln in enumerate(text("smi_apps.csv").splitlines(), 1)]
        mine = [(i, f) for i, f in rows if len(f) >= 5 and f[2] == pid]
        if not mine:
            return f"smi_apps.csv: no row lists PID {pid} (of {len(rows)} lines)"
        mems = sorted({f[4] for _, f in mine})
        return (f"smi_apps.csv: {len(mine)} rows list PID {pid}, lines {mine[0][0]}-{mine[-1][0]} "
                f"({mine[0][1][0]} to {mine[-1][1][0]}), memory {', '.join(mems[:4])}")

    def said(name: str) -> str:
        log = log_of(name)
        body = text(log)
        lines = steps_of(body)
        saves = re.findall(r"saved checkpoint step (\d+)", body)
        began = re.search(CF_BEGAN, body)
        rates = [x[2] for x in lines[1:]]
        return (f"logs/{log}: {len(body.splitlines())} lines, first at {body[:23] if body.strip() else '?'}; "
                f"training from {began.group(1) if began else '?'}; "
                + (f"step lines {lines[0][1]}-{lines[-1][1]} ({len(lines)}, {_utc(lines[0][0])} to "
                   f"{_utc(lines[-1][0])}); " if lines else "no step line; ")
                + (f"tok/s after the first step line: median {statistics.median(rates):,.0f} (min {min(rates):,.0f}, "
                   f"max {max(rates):,.0f}); " if rates else "")
                + f"saved steps {saves}; 'training done' in it: {'training done' in body}; "
                f"'Traceback' in it: {'Traceback' in body}; last line {last_line(log)!r}")

    watcher = threading.Thread(target=watch, daemon=True)
    op = Transcript(r.dir)
    try:
        (r.dir / "train.py").write_text(SWEEP_SHARE_TRAIN)
        # the pace of one run alone on this machine's GPU (the dry run: its CPU), and how busy it keeps the
        # GPU, measured before the captures start and outside the folder
        shutil.rmtree(calib, ignore_errors=True)
        calib.mkdir()
        (calib / "train.py").write_text(SWEEP_SHARE_TRAIN)
        cal_steps, cal_from = (500, 100) if r.gpu else (600, 200)
        cal_argv = [sys.executable, "train.py", "--run-name", "calibrate", "--lr", "3e-4", "--max-steps",
                    str(cal_steps), "--save-every", "1000000", *flags.split()]
        r.truth(f"calibration (before the captures, in {calib}, outside the folder, in no transcript): "
                f"`{' '.join(cal_argv)}`")
        sampler = None
        if r.gpu:
            sampler = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,utilization.gpu,memory.used",
                                        "--format=csv,noheader,nounits", "-lms", "500"],
                                       stdout=open(calib / "util.csv", "w"), stderr=subprocess.DEVNULL)  # noqa: SIM115
        cal = subprocess.run(cal_argv, cwd=calib, env=env, capture_output=True, text=True, timeout=240, check=False)
        if sampler:
            sampler.terminate()
            sampler.wait(timeout=10)
        cal_out = cal.stdout + cal.stderr
        cal_lines = [x for x in steps_of(cal_out) if x[1] >= cal_from]
        p = (cal_lines[-1][1] - cal_lines[0][1]) / max(1e-3, cal_lines[-1][0] - cal_lines[0][0]) if len(cal_lines) >= 2 else 0.0
        util = "no GPU (dry run)"
        if sampler and len(cal_lines) >= 2:
            samples = []
            for ln in (calib / "util.csv").read_text().splitlines():
                f = ln.split(", ")
                try:
                    t = _smi_time(f[0])
                except (ValueError, IndexError):
                    continue
                if cal_lines[0][0] <= t <= cal_lines[-1][0]:
                    samples.append((int(f[1]), int(f[2])))
            if samples:
                us = [u for u, _ in samples]
                util = (f"GPU utilization over those steps ({len(samples)} samples, every 0.5 s): {min(us)}-{max(us)} % "
                        f"(median {statistics.median(us):g}), memory up to {max(m for _, m in samples)} MiB")
        unit = 100
        share = 1 / 3  # base's part of the GPU while the two sweep runs compute beside it
        if p > 0:
            max_steps = max(2 * unit, int(round(p * (alone_s + shared_s * share + after_s) / unit)) * unit)
        else:
            max_steps = 1500 if r.gpu else 3000
        sweep_steps = max_steps
        noted = "; ".join(ln[24:] for ln in cal_out.splitlines() if "WARNING" in ln or "model:" in ln)
        r.truth(f"calibration exited {cal.returncode}: {len(cal_lines)} step lines from step {cal_from}, pace "
                f"{p:.2f} steps/s ({noted[:300]}); {util}; base --max-steps {max_steps} (~{alone_s} s alone, "
                f"~{shared_s} s at a third of that pace, ~{after_s} s alone again), the sweep's --max-steps "
                f"{sweep_steps}{'' if cal.returncode == 0 else '; its output ends ' + repr(cal_out[-500:])}")
        shutil.rmtree(calib, ignore_errors=True)

        r.gpus_and_processes()
        watcher.start()
        r.truth("train.py is in the folder (GPT-style LM, 12 layers, width 768, block 1024, batch 16 by default; "
                "--lr; ckpt/last.pt every 2000 steps and at the end, atomically, the same path whatever the "
                f"--run-name; no SIGTERM handler); the operator's shell has CUDA_VISIBLE_DEVICES="
                f"{env.get('CUDA_VISIBLE_DEVICES')}")
        time.sleep(3)

        # base: alone on GPU 0
        cmd = f"nohup {py} train.py --run-name base --lr 3e-4 --max-steps {max_steps}{flags} > logs/base.log 2>&1 &"
        r.truth(f"base: operator types `{cmd}`")
        op.run(cmd)
        pid_base = pid_of("base")
        r.truth(f"base: trainer PID {pid_base} ({_program(pid_base)})")
        if not r.wait_for("logs/base.log", "INFO training from step", 300):
            return
        began = _log_time(re.search(CF_BEGAN, text("base.log")).group(1))
        r.wait_for("logs/base.log", " INFO step ", 120)
        r.truth(f"base began training at {_utc(began)} (its log's time)")
        time.sleep(max(0.0, began + alone_s - time.time()))
        r.truth(f"~{alone_s} s of base's training alone; {said('base')}")

        # the sweep: one typed line, two runs, no CUDA_VISIBLE_DEVICES: both on GPU 0 beside base
        cmd = (f"for lr in {' '.join(lrs)}; do nohup {py} train.py --run-name sweep-$lr --lr $lr --max-steps "
               f"{sweep_steps}{flags} > logs/sweep-$lr.log 2>&1 & done")
        r.truth(f"sweep: operator types `{cmd}` (meant for another GPU; no CUDA_VISIBLE_DEVICES)")
        at_sweep = time.time()
        op.run(cmd)
        pids_sweep = [pid_of(s) for s in sweeps]
        r.truth(f"sweep: trainer PIDs {dict(zip(sweeps, pids_sweep, strict=True))}")
        for s in sweeps:
            if r.wait_for(f"logs/{log_of(s)}", "INFO training from step", 180):
                r.truth(f"{s} began training at {re.search(CF_BEGAN, text(log_of(s))).group(1)} (its log's time)")
        time.sleep(max(0.0, at_sweep + shared_s - time.time()))

        # the look and the kill
        r.truth(f"~{shared_s} s after the sweep's launch the operator looks: {'`nvidia-smi`' if r.gpu else '`uptime`'}, "
                f"`tail -n 2 logs/base.log`; {said('base')}")
        op.run("nvidia-smi" if r.gpu else "uptime")
        op.run("tail -n 2 logs/base.log")
        time.sleep(3)
        shown = op.run("pgrep -af 'run-name sweep'")[0]
        listed = [ln.split()[0] for ln in shown.splitlines() if "train.py --run-name sweep" in ln]
        targets = listed if sorted(listed) == sorted(pids_sweep) else pids_sweep
        r.truth(f"`pgrep -af 'run-name sweep'` lists {listed}; the driver's sweep trainers are {pids_sweep}; "
                f"operator types `kill {' '.join(targets)}`; "
                + "; ".join(f"{log_of(s)}'s last line {last_line(log_of(s))!r}" for s in sweeps))
        at_kill = time.time()
        op.run(f"kill {' '.join(targets)}")
        for s, pid in zip(sweeps, pids_sweep, strict=True):
            gone(pid, 30)
            r.truth(f"{s} trainer (PID {pid}) {ended(pid) if pid in exited else 'still running 30 s after the kill'}")

        # base goes on alone to its last step
        if not r.wait_for("logs/base.log", "training done", 300):
            r.truth(f"no 'training done' in base.log: its last line {last_line('base.log')!r}")
        gone(pid_base, 60)
        r.truth(f"base (PID {pid_base}): {ended(pid_base)}")
        time.sleep(5)
        r.truth("the operator looks once more: `tail -n 2 logs/base.log`")
        op.run("tail -n 2 logs/base.log")
        time.sleep(3)

        # the summary: base's pace alone, shared and alone again; the sweep runs' steps and times
        lines = steps_of(text("base.log"))
        sweep_began = [_log_time(m.group(1)) for s in sweeps if (m := re.search(CF_BEGAN, text(log_of(s))))]
        shared_from = max(sweep_began) if sweep_began else at_sweep
        end = exited[pid_base][0] if pid_base in exited else time.time()
        r.truth(f"summary base pace alone before the sweep (to its launch {_utc(at_sweep)}): "
                f"{pace_between(lines, began, at_sweep)}; {smi_between(began + 5, at_sweep)}")
        r.truth(f"summary base pace from the sweep's launch to both sweep runs training ({_utc(at_sweep)}-"
                f"{_utc(shared_from)}): {pace_between(lines, at_sweep, shared_from)}; {smi_between(at_sweep, shared_from)}")
        r.truth(f"summary base pace while all three trained ({_utc(shared_from)} to the kill {_utc(at_kill)}): "
                f"{pace_between(lines, shared_from, at_kill)}; {smi_between(shared_from, at_kill)}")
        r.truth(f"summary base pace after the kill ({_utc(at_kill)} to its exit {_utc(end)}): "
                f"{pace_between(lines, at_kill, end)}; {smi_between(at_kill + 2, end)}")
        for s, pid in (("base", pid_base), *zip(sweeps, pids_sweep, strict=True)):
            r.truth(f"summary {s}: PID {pid}; {ended(pid)}; {said(s)}; {smi_rows(pid)}")
    finally:
        env.clear()
        env.update(saved)
        _wind_down(r, "train.py --run-name", done, watcher, calib)


# ctrlc-sweep's trainer: sweep-share's train.py (large enough that one run keeps the GPU busy; --lr)
# with a graceful stop, as many real trainers have: Ctrl-C (KeyboardInterrupt) in the training loop logs
# `interrupted at step N, saving checkpoint`, saves, and the script ends normally (exit status 0). Each
# run checkpoints to a path of its own, ckpt/<run-name>.pt.
CTRLC_SWEEP_TRAIN = SWEEP_SHARE_TRAIN
_loop_at = CTRLC_SWEEP_TRAIN.index('log.info("training from step %d to step %d", step, args.max_steps)\n')
_loop = CTRLC_SWEEP_TRAIN[_loop_at:]
_old_loop = _loop.split("start = t0 = time.time()\n", 1)[1].split("if step % args.save_every:\n    save_checkpoint()\nlog.info", 1)[0]
assert _old_loop.startswith("while step < args.max_steps:\n"), _old_loop[:60]
CTRLC_SWEEP_TRAIN = CTRLC_SWEEP_TRAIN[:_loop_at] + _loop.replace(
    _old_loop,
    "try:\n" + "".join("    " + ln if ln.strip() else ln for ln in _old_loop.splitlines(keepends=True))
    + "except KeyboardInterrupt:  # Ctrl-C: keep what was trained and stop cleanly\n"
    "    log.info(\"interrupted at step %d, saving checkpoint\", step)\n"
    "    save_checkpoint()\n"
    "    sys.exit(0)\n")
for _old, _new in (
        ('"""Train a small GPT-style LM on a synthetic token stream, checkpointing to ckpt/last.pt every 2000 steps.\n',
         '"""Train a small GPT-style LM on a synthetic token stream, checkpointing to ckpt/<run-name>.pt every 2000\n'
         'steps. Ctrl-C stops it cleanly: it saves a checkpoint and exits 0.\n'),
        ("--resume --max-steps 20000     # go on from ckpt/last.pt", "--resume --max-steps 20000     # go on from ckpt/lm.pt"),
        ("import os\nimport time\n", "import os\nimport sys\nimport time\n"),
        ('p.add_argument("--ckpt", default="ckpt/last.pt")\n',
         'p.add_argument("--ckpt", default=None, help="default: ckpt/<run-name>.pt")\n'),
        ("args = p.parse_args()\n", "args = p.parse_args()\nargs.ckpt = args.ckpt or f\"ckpt/{args.run_name}.pt\"\n")):
    assert CTRLC_SWEEP_TRAIN.count(_old) == 1, _old
    CTRLC_SWEEP_TRAIN = CTRLC_SWEEP_TRAIN.replace(_old, _new)

# The driver's probe for ctrlc-sweep (a `sitecustomize` on the operator's PYTHONPATH, beside the folder,
# not in it; nothing of it in a command line or a log): for each train.py process, its start, each
# SIGINT it receives (then Python's own handler: KeyboardInterrupt, as without the probe), a sys.exit()
# and its code, an unhandled exception, and the start of a normal interpreter shutdown.
CTRLC_PROBE = r'''import atexit, os, signal, sys, time, traceback

_dir = os.environ.get("CTRLC_PROBE_DIR")
try:
    _argv = open("/proc/self/cmdline", "rb").read().split(b"\0")
except OSError:
    _argv = []
if _dir and b"train.py" in _argv:
    _path = os.path.join(_dir, f"{os.getpid()}.probe")

    def _note(what):
        with open(_path, "a") as f:
            f.write(f"{time.time():.3f} {what}\n")

    _note("start: " + " ".join(a.decode(errors="replace") for a in _argv).strip())

    def _on_sigint(signum, frame):
        _note(f"SIGINT received (in {frame.f_code.co_name if frame else '?'}, line {frame.f_lineno if frame else '?'})")
        signal.default_int_handler(signum, frame)

    _prev = signal.getsignal(signal.SIGINT)
    if _prev is signal.default_int_handler or _prev == signal.SIG_DFL:
        signal.signal(signal.SIGINT, _on_sigint)
    else:
        _note(f"SIGINT handler left as it was: {_prev!r}")
    _exit = sys.exit

    def exit(code=None):
        _note(f"sys.exit({code!r})")
        _exit(code)

    sys.exit = exit
    _hook = sys.excepthook

    def excepthook(t, v, tb):
        _note("excepthook: " + "".join(traceback.format_exception(t, v, tb)).replace("\n", "\\n"))
        _hook(t, v, tb)

    sys.excepthook = excepthook
    atexit.register(lambda: _note("atexit: normal interpreter shutdown begins"))

# the sitecustomize this one shadows (a distribution's), if any, runs as it would have
try:
    import importlib.machinery, importlib.util
    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [d for d in sys.path if os.path.abspath(d or ".") != _here])
    if _spec and _spec.loader:
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
except Exception:
    pass
'''

_PROMPT_SEEN = re.compile(rb"@gpu-node:[^\r\n]*[#$] ")
CTRLC_INTERRUPTED, CTRLC_SAVED = r"interrupted at step (\d+)", r"saved checkpoint step (\d+) to (\S+)"


# ctrlc-stops-sweep's trainer: ctrlc-sweep's train.py without its KeyboardInterrupt handler (the one
# difference): a Ctrl-C raises KeyboardInterrupt out of the training loop, unhandled; Python prints the
# traceback and, as CPython does for an unhandled KeyboardInterrupt, ends the process by SIGINT.
CTRLC_STOPS_TRAIN = CTRLC_SWEEP_TRAIN
for _old, _new in (
        ("try:\n" + "".join("    " + ln if ln.strip() else ln for ln in _old_loop.splitlines(keepends=True))
         + "except KeyboardInterrupt:  # Ctrl-C: keep what was trained and stop cleanly\n"
         "    log.info(\"interrupted at step %d, saving checkpoint\", step)\n"
         "    save_checkpoint()\n"
         "    sys.exit(0)\n", _old_loop),
        ("steps. Ctrl-C stops it cleanly: it saves a checkpoint and exits 0.\n", "steps.\n")):
    assert CTRLC_STOPS_TRAIN.count(_old) == 1, _old[:80]
    CTRLC_STOPS_TRAIN = CTRLC_STOPS_TRAIN.replace(_old, _new)
assert "KeyboardInterrupt" not in CTRLC_STOPS_TRAIN
# its probe: ctrlc-sweep's without the SIGINT handler (whose frame would show in the unhandled KeyboardInterrupt's
# traceback, in the log): the start, the excepthook (the traceback, timed) and the start of the shutdown
CTRLC_STOPS_PROBE = CTRLC_PROBE
_sigint_note = CTRLC_PROBE[CTRLC_PROBE.index("    def _on_sigint("):CTRLC_PROBE.index("    _exit = sys.exit\n")]
assert "signal.signal(signal.SIGINT, _on_sigint)" in _sigint_note
CTRLC_STOPS_PROBE = CTRLC_STOPS_PROBE.replace(_sigint_note, "")


def _probed_shell(r: Recording) -> tuple[str, str, Path, Path, dict[str, str], dict[str, str]]:
    """What the Ctrl-C scenarios share: `python3` as typed, the dry run's size flags (a tiny model on the
    CPU; the GPU path's commands carry none), the timing run's folder and the probe's (beside the incident
    folder, not in it), the operator's shell environment (the driver's probe on PYTHONPATH) and the timing
    run's."""
    probe = r.dir.parent / f"{r.name}.probe"
    env = dict(os.environ, COLUMNS="", CTRLC_PROBE_DIR=str(probe),
               PYTHONPATH=os.pathsep.join(filter(None, [str(probe), os.environ.get("PYTHONPATH")])))
    cal_env = dict(os.environ)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = cal_env["OMP_NUM_THREADS"] = "1"
    flags = "" if r.gpu else " --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 --vocab-size 1024"
    return _python3(), flags, r.dir.parent / f"{r.name}.calibrate", probe, env, cal_env


def _cf_readers(logs: Path) -> tuple[Callable[[str], str], Callable[[str], str],
                                     Callable[[str], list[tuple[float, int, float]]]]:
    """Readers of cpu-fallback-style logs in `logs`: a log's text, its last line, and the (time, step,
    tok/s) of each step line of a text."""

    def text(log: str) -> str:
        path = logs / log
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(log: str) -> str:
        lines = text(log).strip().splitlines()
        return lines[-1][:300] if lines else "(empty)"

    def steps_of(body: str) -> list[tuple[float, int, float]]:
        return [(_log_time(m.group(1)), int(m.group(2)), float(m.group(4).replace(",", "")))
                for m in re.finditer(CF_STEP, body)]

    return text, last_line, steps_of


def _ctrlc_loop(r: Recording, trainer: str, probe_code: str, handled: bool) -> None:
    """The operator's one-line foreground sweep at a `script`-recorded bash, stopped with Ctrl-C: with
    a trainer that handles it (`handled`: it saves and exits 0, so bash goes on with the next pass:
    an Enter 15 s after the first Ctrl-C, then one 25 s after it and one 15 s after that), or one that
    dies of it (bash ends the loop; one more Ctrl-C 15 s after each pass bash starts anyway)."""
    py, flags, calib, probe, env, cal_env = _probed_shell(r)
    pass_s = 180  # what one pass would take to its last step
    first_s, enter_s = 35, 15  # the first Ctrl-C after the loop's start; the Enter after it (`handled`)
    again_s = (25, 15) if handled else (15, 15)  # each later Ctrl-C after the one before, where bash went on
    lrs = ("1e-4", "3e-4", "1e-3")
    runs = tuple(f"lr-{lr}" for lr in lrs)
    text, last_line, steps_of = _cf_readers(r.dir / "logs")

    # each trainer of the incident (a python running train.py in the folder), by its --run-name, from
    # when the driver first sees it to when it has exited, read from /proc every 0.05 s (the operator's
    # bash reaps each pass at once, so its wait status is rarely there to read: the probe tells how it ended)
    name_of: dict[str, str] = {}
    exited: dict[str, tuple[float, str]] = {}
    done = threading.Event()

    def seen_one(pid: str, argv: list[bytes], fields: list[str]) -> None:
        args = [a.decode(errors="replace") for a in argv]
        r.truth(f"{name_of[pid]} trainer: PID {pid} seen (parent {fields[1]}, process group {fields[2]}, "
                f"session {fields[3]}, terminal's foreground process group {fields[5]}): "
                f"{' '.join(args).strip()!r}")

    def exited_one(pid: str) -> None:
        name = name_of[pid]
        r.truth(f"{name} trainer PID {pid} exited ({exited[pid][1]}); {name}.log's last line "
                f"{last_line(name + '.log')!r}")

    def watch() -> None:
        _watch_trainers(r, done, name_of, exited, _run_name, seen_one, exited_one)

    pid_of = functools.partial(_pid_seen, name_of)  # pid_of(name, timeout): the trainer of --run-name `name`
    gone = functools.partial(_gone, exited)

    def probed(pid: str) -> list[tuple[float, str]]:
        path = probe / f"{pid}.probe"
        notes = path.read_text(errors="replace").splitlines() if path.exists() else []
        return [(float(n.split(" ", 1)[0]), n.split(" ", 1)[1]) for n in notes if " " in n]

    def said(name: str) -> str:
        interrupted_re, saved_re = CTRLC_INTERRUPTED, CTRLC_SAVED
        body = text(name + ".log")
        lines = steps_of(body)
        began = re.search(CF_BEGAN, body)
        rates = [x[2] for x in lines[1:]]
        return (f"logs/{name}.log: {len(body.splitlines())} lines, first at {body[:23] if body.strip() else '?'}; "
                f"training from {began.group(1) if began else '?'}; "
                + (f"step lines {lines[0][1]}-{lines[-1][1]} ({len(lines)}, {_utc(lines[0][0])} to "
                   f"{_utc(lines[-1][0])}); " if lines else "no step line; ")
                + (f"tok/s after the first step line: median {statistics.median(rates):,.0f} (min {min(rates):,.0f}, "
                   f"max {max(rates):,.0f}); " if rates else "")
                + f"interrupted: {re.findall(interrupted_re, body)}; saved: "
                f"{re.findall(saved_re, body)}; 'training done' in it: "
                f"{'training done' in body}; 'Traceback' in it: {'Traceback' in body}; 'KeyboardInterrupt' in it: "
                f"{'KeyboardInterrupt' in body}; last line "
                f"{last_line(name + '.log')!r}")

    def screen() -> str:
        """What the terminal showed since the loop was typed (the last 300 characters), escapes dropped."""
        shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", t._tail.decode("utf-8", "replace"))
        return repr(shown[-300:])

    def training(n: int, planned: float) -> None:
        """Before a Ctrl-C meant for pass `n`: it has begun its training loop (else the Ctrl-C would meet
        its start-up, which catches nothing); the driver waits for that, past the planned time if need be."""
        log = runs[n - 1] + ".log"
        if "INFO training from step" in text(log):
            return
        r.truth(f"pass {n} has not begun training at the planned time {_utc(planned)}: the driver waits for "
                f"'training from step' in {log}")
        r.wait_for(f"logs/{log}", "INFO training from step", 120)

    def ctrl_c(k: int, n: int, pid: str) -> float:
        """Ctrl-C number `k`, meant for pass `n` (`pid`): the byte the terminal turns into SIGINT to its
        foreground process group."""
        r.truth(f"Ctrl-C {k}: operator presses Ctrl-C (0x03 to the terminal) during pass {n} ({runs[n - 1]}, "
                f"PID {pid}; {runs[n - 1]}.log's last line {last_line(runs[n - 1] + '.log')!r})")
        at = time.time()
        os.write(t.fd, b"\x03")
        return at

    def after_ctrl_c(k: int, n: int, pid: str, at: float) -> str:
        """Pass `n`'s end after Ctrl-C `k`, and whether bash went on with the next pass ('next'), gave its
        prompt back ('prompt') or neither within 30 s ('?')."""
        ended = gone(pid, 90)
        r.truth(f"after Ctrl-C {k}: pass {n} (PID {pid}) "
                + (f"exited {exited[pid][0] - at:.2f} s after it ({exited[pid][1]})" if ended
                   else "still running 90 s after it")
                + f"; {said(runs[n - 1])}")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if n < len(runs) and any(k2 == runs[n] for k2 in list(name_of.values())):
                nxt = pid_of(runs[n], 1)
                r.truth(f"bash went on with pass {n + 1} ({runs[n]}): PID {nxt}, seen "
                        f"{time.time() - at:.2f} s after Ctrl-C {k}; no prompt on the terminal: "
                        f"{not _PROMPT_SEEN.search(t._tail)}; the terminal shows {screen()}")
                return "next"
            if _PROMPT_SEEN.search(t._tail):
                r.truth(f"after Ctrl-C {k} the prompt came back ({time.time() - at:.2f} s after it)"
                        + ((f": FINDING: bash ended the loop instead of going on with pass {n + 1}" if handled
                            else f": bash ended the loop; pass {n + 1} ({runs[n]}) did not start") if n < len(runs)
                           else ": the loop had no values left") + f"; the terminal shows {screen()}")
                return "prompt"
            time.sleep(0.05)
        r.truth(f"30 s after Ctrl-C {k}: no pass {n + 1} and no prompt; the terminal shows {screen()}")
        return "?"

    watcher = threading.Thread(target=watch, daemon=True)
    t = None
    try:
        (r.dir / "train.py").write_text(trainer)
        shutil.rmtree(probe, ignore_errors=True)
        probe.mkdir()
        (probe / "sitecustomize.py").write_text(probe_code)
        # the pace of one run alone on this machine's GPU (the dry run: its CPU), how steady, and how busy
        # it keeps the GPU, measured before the captures start and outside the folder
        shutil.rmtree(calib, ignore_errors=True)
        calib.mkdir()
        (calib / "train.py").write_text(trainer)
        cal_steps, cal_from = (500, 100) if r.gpu else (600, 200)
        cal_argv = [sys.executable, "train.py", "--run-name", "calibrate", "--lr", "3e-4", "--max-steps",
                    str(cal_steps), "--save-every", "1000000", *flags.split()]
        r.truth(f"calibration (before the captures, in {calib}, outside the folder, in no transcript): "
                f"`{' '.join(cal_argv)}`")
        sampler = None
        if r.gpu:
            sampler = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,utilization.gpu,memory.used",
                                        "--format=csv,noheader,nounits", "-lms", "500"],
                                       stdout=open(calib / "util.csv", "w"), stderr=subprocess.DEVNULL)  # noqa: SIM115
        cal = subprocess.run(cal_argv, cwd=calib, env=cal_env, capture_output=True, text=True, timeout=240,
                             check=False)
        if sampler:
            sampler.terminate()
            sampler.wait(timeout=10)
        cal_out = cal.stdout + cal.stderr
        cal_lines = [x for x in steps_of(cal_out) if x[1] >= cal_from]
        p = ((cal_lines[-1][1] - cal_lines[0][1]) / max(1e-3, cal_lines[-1][0] - cal_lines[0][0])
             if len(cal_lines) >= 2 else 0.0)
        rates = [x[2] for x in cal_lines[1:]]
        steady = (f"tok/s over those step lines: median {statistics.median(rates):,.0f} (min {min(rates):,.0f}, "
                  f"max {max(rates):,.0f})" if rates else "no rates")
        util = "no GPU (dry run)"
        if sampler and len(cal_lines) >= 2:
            samples = []
            for ln in (calib / "util.csv").read_text().splitlines():
                f = ln.split(", ")
                try:
                    at = _smi_time(f[0])
                except (ValueError, IndexError):
                    continue
                if cal_lines[0][0] <= at <= cal_lines[-1][0]:
                    samples.append((int(f[1]), int(f[2])))
            if samples:
                us = [u for u, _ in samples]
                util = (f"GPU utilization over those steps ({len(samples)} samples, every 0.5 s): {min(us)}-{max(us)} % "
                        f"(median {statistics.median(us):g}), memory up to {max(m for _, m in samples)} MiB")
        unit = 100
        max_steps = max(10 * unit, int(round(p * pass_s / unit)) * unit) if p > 0 else (5000 if r.gpu else 10000)
        noted = "; ".join(ln[24:] for ln in cal_out.splitlines() if "WARNING" in ln or "model:" in ln)
        r.truth(f"calibration exited {cal.returncode}: {len(cal_lines)} step lines from step {cal_from}, pace "
                f"{p:.2f} steps/s ({noted[:300]}); {steady}; {util}; --max-steps {max_steps} (~{pass_s} s a pass)"
                f"{'' if cal.returncode == 0 else '; its output ends ' + repr(cal_out[-500:])}")
        shutil.rmtree(calib, ignore_errors=True)

        r.gpus_and_processes()
        watcher.start()
        r.truth("train.py is in the folder (GPT-style LM, 12 layers, width 768, block 1024, batch 16 by default; "
                "--lr; ckpt/<run-name>.pt every 2000 steps and at the end, atomically; "
                + ("Ctrl-C in its training loop: `interrupted at step N, saving checkpoint`, a save, exit 0); the "
                   f"driver's probe (a sitecustomize in {probe}, outside the folder) notes each trainer's start, "
                   "SIGINTs, sys.exit and shutdown" if handled else
                   "no KeyboardInterrupt handler: a Ctrl-C raises KeyboardInterrupt out of its training loop, "
                   f"unhandled); the driver's probe (a sitecustomize in {probe}, outside the folder, no signal "
                   "handler) notes each trainer's start, an unhandled exception (excepthook) and the start of its "
                   "shutdown"))
        t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", env)
        r.truth("operator at a script-recorded interactive bash (logs/terminal.typescript)")
        time.sleep(2)
        _typed(r, t, "date")
        loop = (f"for lr in {' '.join(lrs)}; do {py} train.py --run-name lr-$lr --lr $lr --max-steps {max_steps}"
                f"{flags} > logs/lr-$lr.log 2>&1; done")
        r.truth(f"operator types `{loop}` (one line; each pass in the foreground, the next when it ends)")
        at_loop = time.time()
        t.start(loop)
        pids = [pid_of(runs[0], 30)]
        r.truth(f"pass 1 ({runs[0]}): PID {pids[0]}")

        # Ctrl-C 1, ~35 s into pass 1: the operator means to stop the whole sweep
        time.sleep(max(0.0, at_loop + first_s - time.time()))
        training(1, at_loop + first_s)
        ats = [ctrl_c(1, 1, pids[0])]
        went = after_ctrl_c(1, 1, pids[0], ats[0])
        if not handled:
            r.truth("after Ctrl-C 1: " + ("the prompt came back; no later pass started" if went == "prompt"
                                           else "bash went on with the next pass (against the plan)" if went == "next"
                                           else "neither the prompt nor a next pass within 30 s"))
        # each pass bash goes on with: another Ctrl-C (after an Enter, the first time, where the trainer handles it)
        for gap in again_s:
            if went != "next" or len(pids) == len(runs):
                break
            pids.append(pid_of(runs[len(pids)], 5))
            n = len(pids)
            if handled and n == 2:  # Enter, ~15 s after Ctrl-C 1: is the prompt back?
                time.sleep(max(0.0, ats[0] + enter_s - time.time()))
                r.truth(f"operator presses Enter (an empty line, 0x0d to the terminal) to see whether the prompt is "
                        f"back; pass 2 (PID {pids[1]}) {'has exited' if pids[1] in exited else 'is running'}")
                at_enter = time.time()
                os.write(t.fd, b"\r")
                time.sleep(2)
                r.truth(f"2 s after the Enter: prompt on the terminal: {bool(_PROMPT_SEEN.search(t._tail))}; the "
                        f"terminal shows {screen()} ({time.time() - at_enter:.1f} s after the Enter)")
            time.sleep(max(0.0, ats[-1] + gap - time.time()))
            training(n, ats[-1] + gap)
            ats.append(ctrl_c(len(ats) + 1, n, pids[-1]))
            went = after_ctrl_c(len(ats), n, pids[-1], ats[-1])
        if went != "prompt":
            shown = t.wait_prompt(120)
            r.truth(f"the prompt came back; the terminal showed {shown[-200:]!r}")
        else:
            t.wait_prompt(30)
        r.truth(f"the loop ended {time.time() - at_loop:.1f} s after it was typed; trainers seen: "
                f"{[(n, pid) for pid, n in name_of.items()]}")

        # the operator looks
        time.sleep(3)
        looks = (("date", "ls logs", "tail -n 2 logs/lr-*.log") if handled else
                 ("echo $?", "date", "ls logs", "tail -n 3 logs/lr-*.log"))
        for cmd in (*looks, "nvidia-smi" if r.gpu else "uptime", "date"):
            shown = _typed(r, t, cmd)
            if cmd == "echo $?":
                said_status = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", shown)
                r.truth(f"`echo $?` printed {said_status.strip()[:120]!r} (the loop's status: its last command's)")
            time.sleep(1)
        r.truth("operator types `exit`")
        t.close()
        t = None

        # the summary: each pass's PID, its start and end, how it ended (the probe), its steps and saves
        for n, (name, pid) in enumerate(zip(runs, pids, strict=False), 1):
            notes = probed(pid)
            end = f"{_utc(exited[pid][0])} ({exited[pid][1]})" if pid in exited else "not seen exiting"
            r.truth(f"summary pass {n} {name}: PID {pid}; probe start {_utc(notes[0][0]) if notes else '?'}; driver "
                    f"saw it exit {end}; {said(name)}")
            for at, what in notes[1:]:
                r.truth(f"probe, pass {n} PID {pid}, {_utc(at)}: {what[:500]}")
            ended_by = ("exit status 0 (sys.exit(0) after the interrupt)" if any(w == "sys.exit(0)" for _, w in notes)
                        else "an unhandled KeyboardInterrupt (CPython then ends the process by SIGINT, default "
                        "action)" if any(w.startswith("excepthook") and "KeyboardInterrupt" in w for _, w in notes)
                        else "an unhandled exception" if any(w.startswith("excepthook") for _, w in notes)
                        else "normal end (exit status 0)" if any(w.startswith("atexit") for _, w in notes)
                        else "no shutdown noted (killed by a signal?)")
            r.truth(f"summary pass {n} {name} ended by: {ended_by}")
        for k, at in enumerate(ats, 1):
            r.truth(f"summary Ctrl-C {k} sent at {_utc(at)}")
        for name in runs[len(pids):]:
            r.truth(f"summary {name}: never started (the loop ended before it)")
    finally:
        if t is not None:
            t.close()
        _wind_down(r, "train.py --run-name lr-", done, watcher, calib)
        shutil.rmtree(probe, ignore_errors=True)


def ctrlc_sweep(r: Recording) -> None:
    _ctrlc_loop(r, CTRLC_SWEEP_TRAIN, CTRLC_PROBE, handled=True)


def ctrlc_stops_sweep(r: Recording) -> None:
    _ctrlc_loop(r, CTRLC_STOPS_TRAIN, CTRLC_STOPS_PROBE, handled=False)


# hang-ctrlc's trainer: cpu-fallback's train.py (`logging` lines with loss and tok/s every --log-every
# steps, --resume from ckpt/last.pt) reading its batches through a torch.utils.data.DataLoader
# (--num-workers, 2 by default; timeout 0, the default): batch s is a random walk seeded by step s, so a
# resumed run reads the same batches. The fault injected for the recording (a constant in train.py, in
# no command line): a worker process that reaches batch STALL_AT waits on an Event nobody sets (as a
# worker deadlocked on a lock inherited through fork would); the main process (--num-workers 0) does
# not. The loop then waits in next() on the DataLoader for good.
HANG_CTRLC_TRAIN = CPU_FALLBACK_TRAIN
_data_at = HANG_CTRLC_TRAIN.index("# data: a synthetic token stream")
_data_end = HANG_CTRLC_TRAIN.index("    return chunk[:, :-1], chunk[:, 1:]\n") + len("    return chunk[:, :-1], chunk[:, 1:]\n")
HANG_CTRLC_TRAIN = HANG_CTRLC_TRAIN[:_data_at] + r'''# Fault injected for this recording: a DataLoader worker process that reaches the batch of step
# STALL_AT blocks for good (as a worker deadlocked on a lock inherited through fork would); the main
# process (--num-workers 0) reads it as any other.
STALL_AT = @STALL_AT@


class TokenBatches(Dataset):
    """The batches of steps first..last-1: (batch, block + 1) token ids, random walks over the
    vocabulary (each id the last plus 0-15) seeded by the step, so a resumed run reads the same batches."""

    def __init__(self, first, last):
        self.first, self.n = first, max(0, last - first)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        s = self.first + i
        if s == STALL_AT and get_worker_info() is not None:
            threading.Event().wait()  # nobody ever sets it
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + s)
        start = torch.randint(0, args.vocab_size, (args.batch_size, 1), generator=g)
        return (start + torch.randint(0, 16, (args.batch_size, args.block_size + 1), generator=g).cumsum(1)) % args.vocab_size
''' + HANG_CTRLC_TRAIN[_data_end:]
for _old, _new in (
        ('"""Train a small GPT-style LM on a synthetic token stream, checkpointing to ckpt/last.pt every 2000 steps.\n',
         '"""Train a small GPT-style LM on a synthetic token stream read through a DataLoader (--num-workers worker\n'
         'processes), checkpointing to ckpt/last.pt every 2000 steps.\n'),
        ("import os\nimport time\n", "import os\nimport threading\nimport time\n"),
        ("from torch.nn import functional as F\n",
         "from torch.nn import functional as F\nfrom torch.utils.data import DataLoader, Dataset, get_worker_info\n"),
        ('p.add_argument("--seed", type=int, default=1337)\n',
         'p.add_argument("--seed", type=int, default=1337)\n'
         'p.add_argument("--num-workers", type=int, default=2, help="DataLoader worker processes")\n'),
        ("start = t0 = time.time()\nwhile step < args.max_steps:\n",
         "loader = DataLoader(TokenBatches(step, args.max_steps), batch_size=None, num_workers=args.num_workers,\n"
         "                    pin_memory=cuda)\n"
         "batches = iter(loader)\n"
         "start = t0 = time.time()\nwhile step < args.max_steps:\n"),
        ("    x, y = get_batch()\n",
         "    chunk = next(batches).to(device, non_blocking=True)\n    x, y = chunk[:, :-1], chunk[:, 1:]\n")):
    assert HANG_CTRLC_TRAIN.count(_old) == 1, _old
    HANG_CTRLC_TRAIN = HANG_CTRLC_TRAIN.replace(_old, _new)
HANG_BEGAN, CF_SAVED = r"INFO ((?:resum|no checkpoint|starting)[^\n]*)", r"saved checkpoint step (\d+)"
ANSI = r"\x1b\[[0-9;?]*[A-Za-z]"


def _worker_seen(r: Recording, runs: dict[str, int], role: dict[str, str], pid: str, argv: list[bytes],
                 fields: list[str]) -> None:
    """`_watch_trainers`' on_seen where a trainer reads through DataLoader workers (forked, the same command
    line): a train.py process whose parent is one seen before is a worker of it, else a run's main process."""
    parent = fields[1]
    role[pid] = f"DataLoader worker of {parent}" if parent in runs else "main"
    r.truth(f"run {runs[pid]} {role[pid]}: PID {pid} seen (parent {parent}, process group {fields[2]}, "
            f"terminal's foreground process group {fields[5]}): {b' '.join(argv).decode(errors='replace').strip()!r}")


def _states(pids: list[str], role: dict[str, str]) -> str:
    """Each of `pids` still there: its state, threads and main thread's wchan, CPU ticks so far."""
    out = []
    for pid in pids:
        fields = _proc_stat(pid)
        if fields:
            count, st, ticks, wchan = _threads(pid)
            out.append(f"{role[pid]} {pid}: state {fields[0]}, {count} threads {st}, wchan {wchan}, {ticks} ticks")
    return "; ".join(out) or "none alive"


def _probe_notes(probe: Path, pid: str) -> list[tuple[float, str]]:
    """What the driver's probe noted of `pid` (in `probe`): (time, note) each."""
    path = probe / f"{pid}.probe"
    notes = path.read_text(errors="replace").splitlines() if path.exists() else []
    return [(float(n.split(" ", 1)[0]), n.split(" ", 1)[1]) for n in notes if " " in n]


def _probe_and_timing(probe: Path, calib: Path) -> None:
    """The start of a scenario with the driver's probe (CTRLC_STOPS_PROBE's sitecustomize in `probe`) and a
    timing run (in `calib`): both folders made afresh."""
    shutil.rmtree(probe, ignore_errors=True)
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(CTRLC_STOPS_PROBE)
    shutil.rmtree(calib, ignore_errors=True)
    calib.mkdir()


def _runs_summary(r: Recording, runs: dict[str, int], role: dict[str, str], exited: dict[str, tuple[float, str]],
                  probe: Path) -> None:
    """The truth log's summary of the processes `_worker_seen` named: each one's run, role, PID, the probe's
    note of its start (a main process's), when and how the driver saw it exit; then the probe's later notes."""
    for pid, n in sorted(runs.items(), key=lambda x: int(x[0])):
        notes = _probe_notes(probe, pid) if role.get(pid) == "main" else []
        end = f"{_utc(exited[pid][0])} ({exited[pid][1]})" if pid in exited else "not seen exiting"
        r.truth(f"summary run {n} {role.get(pid)} PID {pid}: probe start {_utc(notes[0][0]) if notes else '-'}; "
                f"driver saw it exit {end}")
        for at, what in notes[1:]:
            r.truth(f"probe, run {n} PID {pid}, {_utc(at)}: {what[:1500]}")


def hang_ctrlc(r: Recording) -> None:
    # the operator's login shells carry the driver's probe (ctrlc-stops-sweep's: each trainer's start, an
    # unhandled exception, the start of its shutdown) on PYTHONPATH, outside the folder
    py, flags, calib, probe, env, cal_env = _probed_shell(r)
    hang_s, look_s, run2_s = 65, 90, 40  # the hang's time into run 1's training; the Ctrl-C after the last
    # step line; run 2's training
    text, last_line, steps_of = _cf_readers(r.dir / "logs")

    # each process running train.py in the folder (the trainers and their DataLoader workers, forked with
    # the same command line), from when the driver first sees it to when it has exited, read every 0.05 s
    run_of: dict[str, int] = {}
    role: dict[str, str] = {}
    exited: dict[str, tuple[float, str]] = {}
    current = [0]
    done = threading.Event()

    def exited_one(pid: str) -> None:
        r.truth(f"run {run_of[pid]} {role.get(pid, '?')} PID {pid} exited ({exited[pid][1]})")

    def watch() -> None:
        _watch_trainers(r, done, run_of, exited, lambda argv: current[0],
                        functools.partial(_worker_seen, r, run_of, role), exited_one)

    def pids(n: int, which: str) -> list[str]:
        return [p for p, k in list(run_of.items()) if k == n and (role.get(p) == "main") == (which == "main")]

    def main_of(n: int, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not pids(n, "main"):
            time.sleep(0.05)
        return (pids(n, "main") or ["?"])[0]

    def said(log: str) -> str:
        body = text(log)
        lines = steps_of(body)
        rates = [x[2] for x in lines[1:]]
        began = _last(HANG_BEGAN, body)
        saves = re.findall(CF_SAVED, body)
        return (f"logs/{log}: {len(body.splitlines())} lines; {began!r}; "
                + (f"step lines {lines[0][1]}-{lines[-1][1]} ({len(lines)}, {_utc(lines[0][0])} to "
                   f"{_utc(lines[-1][0])}); " if lines else "no step line; ")
                + (f"tok/s after the first: median {statistics.median(rates):,.0f} (min {min(rates):,.0f}, max "
                   f"{max(rates):,.0f}); " if rates else "")
                + f"saved steps {saves}; 'training done': "
                f"{'training done' in body}; 'KeyboardInterrupt': {'KeyboardInterrupt' in body}; last line "
                f"{last_line(log)!r}")

    def states(n: int) -> str:
        """Each process of run `n`: its state, threads and main thread's wchan, CPU ticks so far."""
        return _states(pids(n, "main") + pids(n, "worker"), role)

    def wait_prompt(t: InteractiveShell, timeout: float) -> str:
        try:
            return t.wait_prompt(timeout)
        except Exception as e:  # noqa: BLE001 - the truth log says what the terminal did
            r.truth(f"no prompt within {timeout:g} s: {e}")
            return ""

    watcher = threading.Thread(target=watch, daemon=True)
    t = t2 = None
    try:
        # the pace of this model with 2 workers on this machine's GPU (the dry run: its CPU), ~25 s, before
        # the captures start and outside the folder
        _probe_and_timing(probe, calib)
        (calib / "train.py").write_text(HANG_CTRLC_TRAIN.replace("@STALL_AT@", "-1"))
        cal_argv = [sys.executable, "train.py", "--run-name", "calibrate", "--max-steps", "1000000",
                    "--save-every", "1000000", *flags.split()]
        r.truth(f"calibration (before the captures, in {calib}, outside the folder, in no transcript, stopped "
                f"after 30 s): `{' '.join(cal_argv)}`")
        with open(calib / "out.log", "w") as f:
            cal = subprocess.Popen(cal_argv, cwd=calib, env=cal_env, stdout=f, stderr=subprocess.STDOUT,
                                   start_new_session=True)
            time.sleep(30)
            os.killpg(cal.pid, 9)
            cal.wait()
        cal_lines = steps_of((calib / "out.log").read_text(errors="replace"))[2:]
        p = ((cal_lines[-1][1] - cal_lines[0][1]) / max(1e-3, cal_lines[-1][0] - cal_lines[0][0])
             if len(cal_lines) >= 2 else 0.0) or 20.0
        save_every = max(100, int(round(p * 20 / 100)) * 100)
        stall_at = int(p * hang_s) // 10 * 10 + 7
        last_save = stall_at // save_every * save_every
        max_steps = max(stall_at + 100, int(round((last_save + p * run2_s) / 100)) * 100)
        r.truth(f"calibration: {len(cal_lines)} step lines, pace {p:.1f} steps/s; --save-every {save_every}, "
                f"STALL_AT {stall_at} (~{hang_s} s of training), its last checkpoint before it step {last_save}, "
                f"--max-steps {max_steps} (~{run2_s} s of training after a resume from it at that pace)")
        shutil.rmtree(calib, ignore_errors=True)

        (r.dir / "train.py").write_text(HANG_CTRLC_TRAIN.replace("@STALL_AT@", str(stall_at)))
        r.gpus_and_processes()
        watcher.start()
        r.truth(f"train.py is in the folder (GPT-style LM, `logging` lines every 20 steps with loss and tok/s; batches "
                f"through a DataLoader, --num-workers 2 by default, timeout 0; ckpt/last.pt every --save-every steps "
                f"and at the end; --resume; injected fault: a worker that reaches the batch of step {stall_at} waits "
                f"on an Event nobody sets); the driver's probe (a sitecustomize in {probe}, outside the folder) "
                "notes each trainer's start, an unhandled exception and the start of its shutdown")
        t = InteractiveShell(r.dir, r.dir / "logs" / "terminal.typescript", env)
        t2 = InteractiveShell(r.dir, r.dir / "logs" / "terminal2.typescript", env)
        r.truth("operator at two script-recorded interactive bash windows (logs/terminal.typescript, "
                "logs/terminal2.typescript)")
        _typed(r, t, "date")
        cmd = f"{py} train.py --run-name lm --max-steps {max_steps} --save-every {save_every}{flags}"
        current[0] = 1
        r.truth(f"run 1: window 1, in the foreground: `{cmd} > logs/train.log 2>&1`")
        t.start(f"{cmd} > logs/train.log 2>&1")
        pid1 = main_of(1)
        time.sleep(3)
        _typed(r, t2, "date")
        r.truth("window 2: operator types `tail -f logs/train.log` and watches it")
        t2.start("tail -f logs/train.log")
        time.sleep(2)
        r.truth(f"run 1: main PID {pid1}, workers {pids(1, 'worker')}")
        if not r.wait_for("logs/train.log", "INFO training from step", 180):
            return
        r.truth(f"run 1 began training: {_last(CF_BEGAN, text('train.log'))}; workers {pids(1, 'worker')}")

        # the hang: no new step line for 15 s
        deadline = time.monotonic() + hang_s * 4 + 120
        last_seen, since = "", time.monotonic()
        while time.monotonic() < deadline:
            now = last_line("train.log")
            if now != last_seen:
                last_seen, since = now, time.monotonic()
            elif time.monotonic() - since > 15:
                break
            if pid1 in exited:
                break
            time.sleep(0.5)
        lines = steps_of(text("train.log"))
        hung_at = lines[-1][0] if lines else time.time()
        r.truth(f"run 1's log has stopped: last step line step {lines[-1][1] if lines else '?'} at "
                f"{_utc(hung_at)} (the batch of step {stall_at} is the one a worker blocks on); {said('train.log')}; "
                f"{states(1)}")
        time.sleep(max(0.0, hung_at + 45 - time.time()))
        r.truth(f"45 s after the last step line: {states(1)}")
        time.sleep(max(0.0, hung_at + look_s - 10 - time.time()))
        r.truth("window 2: operator presses Ctrl-C to stop `tail -f`, types `date` and looks at the GPU")
        os.write(t2.fd, b"\x03")
        wait_prompt(t2, 10)
        _typed(r, t2, "date")
        _typed(r, t2, "nvidia-smi" if r.gpu else "uptime")
        time.sleep(max(0.0, hung_at + look_s - time.time()))
        ctrl_cs = []
        for k in (1, 2):
            if pid1 in exited or not _proc_stat(pid1):
                break
            r.truth(f"Ctrl-C {k}: window 1, operator presses Ctrl-C (0x03 to the terminal) "
                    f"{time.time() - hung_at:.1f} s after the last step line; {states(1)}")
            ctrl_cs.append(time.time())
            os.write(t.fd, b"\x03")
            if _gone(exited, pid1, 10):
                r.truth(f"run 1 main PID {pid1} exited {exited[pid1][0] - ctrl_cs[-1]:.2f} s after Ctrl-C {k}")
            else:
                r.truth(f"run 1 main PID {pid1} still running 10 s after Ctrl-C {k}: {states(1)}")
        shown = wait_prompt(t, 60)
        r.truth(f"window 1: the prompt came back; the terminal showed {shown[-300:]!r}")
        time.sleep(2)
        r.truth(f"run 1 after the Ctrl-C: {said('train.log')}; processes left: {states(1)}")
        status = _typed(r, t, "echo $?")
        status = re.sub(ANSI, "", status).strip()[:80]
        r.truth(f"`echo $?` printed {status!r}")
        for look in ("date", "tail -n 25 logs/train.log", "ls -l ckpt"):
            _typed(r, t, look)
            time.sleep(1)
        time.sleep(5)

        # run 2: the same command, no workers, from the last checkpoint, through tee
        current[0] = 2
        cmd2 = f"{cmd} --num-workers 0 --resume 2>&1 | tee logs/train2.log"
        r.truth(f"run 2: window 1, in the foreground: `{cmd2}`")
        at2 = time.time()
        t.start(cmd2)
        pid2 = main_of(2)
        r.truth(f"run 2: main PID {pid2}, workers {pids(2, 'worker')}")
        wait_prompt(t, 420)
        _gone(exited, pid2, 10)
        r.truth(f"run 2 ended {time.time() - at2:.1f} s after it was typed; {said('train2.log')}")
        _typed(r, t, "date")
        _typed(r, t2, "date")
        time.sleep(2)
        r.truth("operator types `exit` in both windows")
        t.close()
        t2.close()
        t = t2 = None

        # the summary: each process's PID, start and end, how the trainers ended (the probe), the hang and Ctrl-Cs
        _runs_summary(r, run_of, role, exited, probe)
        r.truth(f"summary the hang: last step line of run 1 at {_utc(hung_at)}; Ctrl-Cs at "
                f"{[_utc(a) for a in ctrl_cs]}; {said('train.log')}; {said('train2.log')}")
        if r.gpu:
            r.truth(f"summary GPU while hung: {_smi_rows(r, hung_at + 5, ctrl_cs[0] if ctrl_cs else time.time())}")
    finally:
        for shell in (t, t2):
            if shell is not None:
                shell.close()
        _wind_down(r, "train.py --run-name lm", done, watcher, calib)
        shutil.rmtree(probe, ignore_errors=True)



# hf-save-hang's trainer: HF_TRAIN with the Trainer's own log lines at info level in its explicit format
# (`[INFO|trainer.py:N] <date time,ms> >> ...`, as Hugging Face's examples set it), no TensorBoard (the operator
# watches the log), and --hang-at-save N: a callback whose on_save never returns at step N's save (as a hook
# copying the checkpoint to a stalled mount would); the process lives on, idle, its GPU memory held.
HANG_SAVE_TRAIN = (HF_TRAIN.replace("import argparse, torch\n", "import argparse, threading, torch, transformers\n")
                   .replace("a = p.parse_args()\n", 'p.add_argument("--hang-at-save", type=int, default=0)\n'
                            "a = p.parse_args()\ntransformers.utils.logging.set_verbosity_info()\n"
                            "transformers.utils.logging.enable_explicit_format()\n")
                   .replace("\n\nmodel = GPT2LMHeadModel(cfg)\n", """

class HangAtSave(TrainerCallback):
    # a save-time hook that never returns
    def on_save(self, args, state, control, **kw):
        if a.hang_at_save and state.global_step == a.hang_at_save:
            threading.Event().wait()


model = GPT2LMHeadModel(cfg)
""")
                   .replace('report_to=["tensorboard"]', 'report_to="none", log_level="info"')
                   .replace("callbacks=[Spike(), Leak()]", "callbacks=[Spike(), Leak(), HangAtSave()]"))
HF_INFO = r"\[INFO\|(\S+?)\] (\S+ \S+) >> ([^\r\n]*)"  # a line may follow a bar's refresh


def hf_save_hang(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "run" / "hf_train.py").write_text(HANG_SAVE_TRAIN)
    out, steps, hang_at, look_s = "out/run1", 500, 200, 90
    bar = rf"(\d+)/{steps} \["  # the training bar's position (a checkpoint's shard bar is over 1)
    base = f"nohup {_python3()} run/hf_train.py --out {out} --max-steps {steps}"
    cpu = "" if r.gpu else " --cpu"
    cmd1 = f"{base} --hang-at-save {hang_at}{cpu} > logs/train.log 2>&1 &"
    cmd2 = f"{base} --resume{cpu} > logs/train2.log 2>&1 &"

    def text(log: str) -> str:
        return (r.dir / "logs" / log).read_text(errors="replace")

    def said(log: str) -> str:
        body = text(log)
        info = re.findall(HF_INFO, body)
        saves = [(at, msg) for _, at, msg in info if msg.startswith("Saving model checkpoint")]
        return (f"logs/{log}: {len(body.splitlines())} lines; first info line {info[0][1] if info else '-'}, last "
                f"{info[-1][1] + ' ' + info[-1][2][:80] if info else '-'}; saves {saves}; last bar position "
                f"{_last(bar, body)}; 'train_runtime': {'train_runtime' in body}; last line {_last_line(r, log)[-160:]!r}")

    def state(pid: str) -> str:
        fields = _proc_stat(pid)
        if not fields:
            return f"PID {pid} gone"
        count, states, ticks, wchan = _threads(pid)
        return f"PID {pid}: state {fields[0]}, {count} threads {states}, main thread wchan {wchan}, {ticks} CPU ticks"

    def tail_until(pid: str, log: str, done: Callable[[], bool], every: float, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if done() or not _proc_stat(pid):
                return done()
            time.sleep(min(every, max(0.0, deadline - time.monotonic())))
            typed(f"tail -n 5 logs/{log}")
        return done()

    t, pids, typed, saved = _hf_terminal(r, out)
    try:
        r.truth(f"operator at a script-recorded terminal (logs/terminal.typescript); a Hugging Face Trainer run "
                f"(transformers {metadata.version('transformers')}, torch {metadata.version('torch')}, run/hf_train.py: "
                f"GPT-2 shape, random weights and tokens, info-level Trainer log lines with times) under nohup, "
                f"{steps} steps, a checkpoint every 100 into {out}; injected fault: a callback's on_save never returns "
                f"at step {hang_at}'s save (after the Trainer has written checkpoint-{hang_at})")
        typed("date")
        pid1 = _launch(r, t, pids, 1, cmd1)
        r.wait_for("logs/train.log", "***** Running training *****", 300)
        time.sleep(5)
        typed("tail -n 5 logs/train.log")
        ckpt1 = r.dir / out / "checkpoint-100" / "trainer_state.json"
        tail_until(pid1, "train.log", ckpt1.exists, 20, 600)
        time.sleep(3)
        typed("tail -n 5 logs/train.log")
        ckpt2 = r.dir / out / f"checkpoint-{hang_at}" / "trainer_state.json"
        if not tail_until(pid1, "train.log", ckpt2.exists, 20, 600):
            r.truth(f"checkpoint-{hang_at} never written; {said('train.log')}; {state(pid1)}")
            return
        hung_at = ckpt2.stat().st_mtime  # the on_save hook is called right after trainer_state.json is written
        r.truth(f"run 1 wrote checkpoint-{hang_at}/trainer_state.json at {_utc(hung_at)} (its mtime): the on_save "
                f"hook is called next and blocks; the hang begins; {said('train.log')}; {state(pid1)}")
        time.sleep(max(0.0, hung_at + 20 - time.time()))
        r.truth(f"20 s into the hang: {said('train.log')}; {state(pid1)}")
        typed("tail -n 5 logs/train.log")
        time.sleep(max(0.0, hung_at + 50 - time.time()))
        typed("tail -n 5 logs/train.log")
        r.truth(f"50 s into the hang: {state(pid1)}")
        time.sleep(max(0.0, hung_at + look_s - 12 - time.time()))
        typed("date")
        typed("nvidia-smi" if r.gpu else "uptime")
        typed(f"ls {out}")
        typed("pgrep -f hf_train.py")
        time.sleep(max(0.0, hung_at + look_s - time.time()))
        r.truth(f"{time.time() - hung_at:.1f} s into the hang, before the kill: {state(pid1)}")
        kills = []
        for sig in ("", "-9 "):
            typed("date")
            kills.append((time.time(), sig or "-15 (SIGTERM) "))
            typed(f"kill {sig}{pid1}")
            if _wait_gone(pid1, 10):
                r.truth(f"run 1 (PID {pid1}) gone {time.time() - kills[-1][0]:.2f} s after `kill {sig}{pid1}`")
                break
            r.truth(f"run 1 (PID {pid1}) still alive 10 s after `kill {sig}{pid1}`: {state(pid1)}")
        typed("tail -n 5 logs/train.log")
        r.truth(f"run 1 after the kill: {said('train.log')}")
        typed(f"ls {out}")
        time.sleep(4)

        typed("date")
        pid2 = _launch(r, t, pids, 2, cmd2)
        r.wait_for("logs/train2.log", "***** Running training *****", 300)
        time.sleep(5)
        resumed = re.findall(r"(?:Resuming training from|Loading model from) [^\n]*", text("train2.log"))
        r.truth(f"run 2 resumes: {resumed}")
        tail_until(pid2, "train2.log", lambda: "train_runtime" in text("train2.log"), 20, 540)
        _run_ended(r, 2, pid2, "train2.log", 120, bar, "train_runtime")
        r.truth(f"run 2 ended: {said('train2.log')}")
        time.sleep(3)
        typed("date")
        typed("tail -n 3 logs/train2.log")
        typed(f"ls {out}")
        r.truth(f"summary: run 1 PID {pid1}, hang from {_utc(hung_at)} (step {hang_at}'s save), kills "
                f"{[(_utc(at), sig.strip()) for at, sig in kills]}; run 2 PID {pid2}")
        if r.gpu:
            r.truth(f"summary GPU while hung: {_smi_rows(r, hung_at + 3, kills[0][0])}")
    finally:
        saved.set()
        r.close_shell(t, pids, f"{out}/checkpoint-*/*.safetensors")
        for state_file in (f for ext in ("pt", "pth", "bin") for f in r.dir.glob(f"{out}/checkpoint-*/*.{ext}")):
            state_file.unlink()

# spawn-oom's trainer: plain PyTorch DDP started with torch.multiprocessing.spawn (no torchrun), two
# ranks on GPU 0 with gloo (the lent machine has one GPU), a small GPT-style LM on a synthetic corpus
# whose documents are padded to the longest of each batch. One document (__BAD_DOC__, met by rank 1
# at step __FAULT_STEP__) is a dump concatenated without separators, 4,194,304 tokens: without
# --max-len its padded batch asks for far more memory than the GPU has. Rank 0 checkpoints every 100
# steps; --resume goes on from ckpt/last.pt.
TRAIN_SPAWN = r'''"""Train a small GPT-style LM with DistributedDataParallel on one machine, two processes
started with torch.multiprocessing.spawn (gloo; both ranks share GPU 0)."""
import argparse
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.Formatter.converter = time.gmtime
logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
log = logging.getLogger("train")

PAD = 0
BAD_DOC = __BAD_DOC__  # shard 7, doc 0113: a crawl dump without separators


def doc_length(i):
    """Tokens in document i of the corpus (64..512; the one dump far longer)."""
    if i == BAD_DOC:
        return 4_194_304
    return 64 + (i * 2654435761) % 449


def get_batch(step, rank, world, batch, max_len, vocab, gen):
    """Rank `rank`'s share of step `step`: `batch` documents, padded to the longest."""
    first = (step * world + rank) * batch
    lengths = [doc_length(first + j) for j in range(batch)]
    if max_len:
        lengths = [min(n, max_len) for n in lengths]
    x = torch.full((batch, max(lengths)), PAD, dtype=torch.long)
    for j, n in enumerate(lengths):
        x[j, :n] = torch.randint(1, vocab, (n,), generator=gen)
    return x


class LM(nn.Module):
    def __init__(self, vocab, hidden, layers, heads):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(hidden)
        nn.init.normal_(self.emb.weight, std=0.02)

    def forward(self, x):
        h = self.emb(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1), device=x.device)
        h = self.blocks(h, mask=mask, is_causal=True)
        return self.norm(h) @ self.emb.weight.t()


def main(rank, a):
    dist.init_process_group("gloo", rank=rank, world_size=a.world_size)
    dev = torch.device(a.device)
    log.info("[rank%d] pid %d (parent %d) on %s, world size %d, backend %s", rank, os.getpid(), os.getppid(),
             dev, a.world_size, dist.get_backend())
    torch.manual_seed(0)
    model = LM(a.vocab, a.hidden, a.layers, a.heads).to(dev)
    ddp = DDP(model, device_ids=[dev.index or 0] if dev.type == "cuda" else None)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    step = 0
    if a.resume and os.path.exists(a.ckpt):
        state = torch.load(a.ckpt, map_location=dev)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
        log.info("[rank%d] resumed from %s at step %d", rank, a.ckpt, step)
    gen = torch.Generator().manual_seed(1000 * step + rank)
    t0 = time.time()
    while step < a.steps:
        step += 1
        x = get_batch(step, rank, a.world_size, a.batch, a.max_len, a.vocab, gen).to(dev, non_blocking=True)
        logits = ddp(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, a.vocab), x[:, 1:].reshape(-1), ignore_index=PAD)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % a.log_every == 0:
            now = time.time()
            log.info("[rank%d] step %d loss %.2f %.1f it/s", rank, step, loss.item(), a.log_every / (now - t0))
            t0 = now
        if rank == 0 and step % a.save_every == 0:
            os.makedirs(os.path.dirname(a.ckpt), exist_ok=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, a.ckpt + ".tmp")
            os.replace(a.ckpt + ".tmp", a.ckpt)
            log.info("[rank0] saved checkpoint step %d", step)
    log.info("[rank%d] training done at step %d", rank, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=__STEPS__)
    p.add_argument("--max-len", type=int, default=None, help="truncate documents to this many tokens")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--vocab", type=int, default=16384)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--save-every", type=int, default=100)
    p.add_argument("--ckpt", default="ckpt/last.pt")
    p.add_argument("--resume", action="store_true")
    a = p.parse_args()
    if a.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    log.info("launching %d processes with torch.multiprocessing.spawn (pid %d)", a.world_size, os.getpid())
    mp.spawn(main, args=(a,), nprocs=a.world_size, join=True)
'''

SPAWN_STEP = r"(\S+ \S+) \[rank(\d)\] step (\d+) loss \S+ ([\d.]+) it/s"


def _spawn_steps(text: str, rank: int = 0) -> list[tuple[float, int, float]]:
    """(time, step, it/s) of rank `rank`'s step lines (their `asctime`: UTC)."""
    out = []
    for when, rk, step, rate in re.findall(SPAWN_STEP, text):
        if int(rk) == rank:
            at = dt.datetime.strptime(when, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC).timestamp()
            out.append((at, int(step), float(rate)))
    return out


def spawn_oom(r: Recording) -> None:
    py = _python()
    logs = r.dir / "logs"
    # the dry run: a tiny model on the CPU (the 4M-token batch fails there too: the CPU allocator
    # cannot give its embedding output)
    model = "" if r.gpu else " --device cpu --vocab 512 --hidden 32 --layers 1 --heads 2"
    batch = 64 if r.gpu else 4
    env = dict(os.environ, COLUMNS="") if r.gpu else dict(os.environ, COLUMNS="", OMP_NUM_THREADS="1")
    seen: dict[str, dict] = {}  # pid -> {role, ppid, at, cmd}; filled by the watcher
    exited: dict[str, tuple[float, str]] = {}
    done = threading.Event()
    folder = r.dir.resolve()
    deadline = time.monotonic() + 520  # the device call's limit is 600 s: the folder must come back

    def role(cmd: str) -> str:
        if "train_spawn.py" in cmd:
            return "parent (python train_spawn.py)"
        if "resource_tracker" in cmd:
            return "multiprocessing resource tracker"
        if "spawn_main" in cmd:
            return "spawned child (a rank)"
        return cmd[:80]

    def watch() -> None:
        """Every python process whose working directory is the folder: when the driver first saw it,
        its parent, and when it exited (with the wait status, where the driver saw it a zombie)."""
        while not done.is_set():
            for d in os.listdir("/proc"):
                if not d.isdigit() or d in seen:
                    continue
                try:
                    if not Path(os.readlink(f"/proc/{d}/cwd")).resolve().is_relative_to(folder):
                        continue
                    cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                except OSError:
                    continue
                fields = _proc_stat(d)
                if "python" not in _program(d) or "gpu_incidents.py" in cmd:
                    continue  # not a python, or the driver's own fork on its way to exec `script`
                try:  # a child between fork and exec still shows its parent's command line
                    if len(fields) > 1 and Path(f"/proc/{fields[1]}/cmdline").read_bytes().replace(
                            b"\0", b" ").decode().strip() == cmd:
                        continue
                except OSError:
                    pass
                seen[d] = {"role": role(cmd), "ppid": fields[1] if len(fields) > 1 else "?", "at": time.time(),
                           "cmd": cmd}
                r.truth(f"PID {d} seen: {seen[d]['role']}, parent {seen[d]['ppid']}: {cmd[:200]!r}")
            for pid in [p for p in seen if p not in exited]:
                fields = _proc_stat(pid)
                if fields and fields[0] != "Z":
                    continue
                exited[pid] = (time.time(), _wait_status(fields))
                r.truth(f"PID {pid} ({seen[pid]['role']}) exited: {exited[pid][1]}")
            time.sleep(0.05)

    def ranks(log: str) -> dict[int, str]:
        text = (logs / log).read_text(errors="replace") if (logs / log).exists() else ""
        return {int(k): v for k, v in re.findall(r"\[rank(\d)\] pid (\d+)", text)}

    def parent_of(log: str) -> str:
        text = (logs / log).read_text(errors="replace") if (logs / log).exists() else ""
        return _last(r"torch.multiprocessing.spawn \(pid (\d+)\)", text)

    def status() -> str:
        shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", t.run("echo ${PIPESTATUS[@]}"))
        return _last(r"(?m)^(\d+(?: \d+)*)\r?$", shown.replace("\r", ""))

    def said(n: int, log: str, shown: str) -> None:
        text = (logs / log).read_text(errors="replace")
        steps0, steps1 = _spawn_steps(text, 0), _spawn_steps(text, 1)
        rates = [x[2] for x in steps0[1:]]
        saves = re.findall(r"saved checkpoint step (\d+)", text)
        resumes = re.findall(r"resumed from \S+ at step \d+", text)
        dones = re.findall(r"\[rank\d\] training done at step \d+", text)
        screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown).strip().splitlines()[-3:]
        errors = [ln.strip() for ln in text.splitlines()
                  if re.match(r"\s*(torch\.\S+|\S+Error|\S+Exception)\S*:", ln.strip()) or "Terminating process" in ln
                  or "Unable to shutdown" in ln]
        r.truth(f"attempt {n}: {log}: {len(text.splitlines())} lines; rank 0 step lines "
                f"{steps0[0][1] if steps0 else '-'}..{steps0[-1][1] if steps0 else '-'}, rank 1 "
                f"{steps1[0][1] if steps1 else '-'}..{steps1[-1][1] if steps1 else '-'}; rank 0 it/s after its first "
                f"line: median {statistics.median(rates) if rates else 0:.1f}; checkpoints: "
                f"{saves}; resumed: {resumes}; 'training done': {dones}")
        for ln in errors:
            r.truth(f"attempt {n}: error line in {log}: {ln[:400]!r}")
        r.truth(f"attempt {n}: {log}'s last line: {_last_line(r, log)!r}; the terminal's last lines: "
                f"{screen!r}")

    def attempt(n: int, cmd: str, log: str) -> float:
        r.truth(f"attempt {n}: operator types `{cmd}`")
        at = time.time()
        t.start(cmd)
        end = time.monotonic() + 90
        while time.monotonic() < end and len(ranks(log)) < 2:
            time.sleep(0.2)
        pids = ranks(log)
        r.truth(f"attempt {n} running: parent PID {parent_of(log)}, rank 0 PID {pids.get(0, '?')}, rank 1 PID "
                f"{pids.get(1, '?')} (the ranks' own lines in {log}); parents by /proc: "
                f"{[(p, _proc_stat(p)[1:2]) for p in pids.values()]}")
        return at

    def returned(n: int, log: str, timeout: float) -> None:
        shown = t.wait_prompt(max(30.0, min(timeout, deadline - time.monotonic())))
        r.truth(f"attempt {n}: the prompt came back")
        said(n, log, shown)
        r.truth(f"attempt {n}: operator types `echo ${{PIPESTATUS[@]}}`: it prints {status()!r}")
        for pid in ranks(log).values():
            r.truth(f"attempt {n}: rank PID {pid}: {exited[pid][1] if pid in exited else 'not seen exiting'}"
                    + (f" at {_utc(exited[pid][0])}" if pid in exited else ""))

    watcher = threading.Thread(target=watch, daemon=True)
    calib = r.dir.parent / f"{r.name}.calib"
    t = None
    try:
        # the pace of the two ranks on this GPU (the dry run: CPU), measured before the captures start and
        # outside the folder, sets the fault's step and the run's length: the fault ~35 s into attempt 1,
        # attempt 3 ~40 s long
        shutil.rmtree(calib, ignore_errors=True)
        calib.mkdir()
        (calib / "train_spawn.py").write_text(TRAIN_SPAWN.replace("__BAD_DOC__", "-1").replace("__STEPS__", "60")
                                              .replace("__FAULT_STEP__", "-"))
        cal_argv = [sys.executable, "train_spawn.py", "--batch", str(batch), "--steps", "60", "--max-len", "512",
                    "--save-every", "1000000", *model.split()]
        r.truth(f"calibration (before the captures, in {calib}, outside the folder): `{' '.join(cal_argv)}`")
        began = time.time()
        cal = subprocess.run(cal_argv, cwd=calib, env=env, capture_output=True, text=True, timeout=240, check=False)
        out = cal.stdout + cal.stderr
        lines = _spawn_steps(out, 0)
        steady = [x for x in lines if x[1] >= 30]
        pace = ((steady[-1][1] - steady[0][1]) / max(1e-3, steady[-1][0] - steady[0][0])
                if len(steady) >= 2 else 0.0)
        start_s = (lines[0][0] - began - lines[0][1] / pace) if lines and pace else 10.0
        if pace <= 0:
            pace = 5.0
        fault = min(950, max(150, 100 * round((pace * (35 - start_s) - 50) / 100) + 50))
        kill_step = fault - 50 + pace * (30 - start_s)
        steps = int(kill_step // 100 * 100 + -(-pace * 40 // 100) * 100)
        bad_doc = (fault * 2 + 1) * batch + batch // 4  # in rank 1's share of step `fault`
        r.truth(f"calibration exited {cal.returncode}: {len(lines)} rank-0 step lines, pace {pace:.2f} steps/s "
                f"from step 30, start-up ~{start_s:.1f} s; so: the long document is met by rank 1 at step {fault} "
                f"(document {bad_doc}), --steps default {steps}"
                + ("" if cal.returncode == 0 else f"; its output ends {out[-600:]!r}"))
        shutil.rmtree(calib, ignore_errors=True)
        if cal.returncode != 0 or not steady:
            raise RuntimeError("the calibration run failed: no recording")
        (r.dir / "train_spawn.py").write_text(TRAIN_SPAWN.replace("__BAD_DOC__", str(bad_doc))
                                              .replace("__STEPS__", str(steps)).replace("__FAULT_STEP__", str(fault)))

        r.gpus_and_processes()
        watcher.start()
        r.truth("train_spawn.py is in the folder: DDP via torch.multiprocessing.spawn(main, nprocs=2), gloo, both "
                f"ranks on {'cuda:0' if r.gpu else 'the CPU'}; documents padded to the longest of each batch; rank 0 "
                f"saves ckpt/last.pt every 100 steps; {steps} steps; rank 1's share of step {fault} holds a "
                "4,194,304-token document (no --max-len by default)")
        t = InteractiveShell(r.dir, logs / "terminal.typescript", env)
        r.truth("operator at a script-recorded interactive bash (logs/terminal.typescript)")
        time.sleep(2)
        _typed(r, t, "date")

        # attempt 1: rank 1 meets the long document: CUDA out of memory
        base = f"{py} train_spawn.py --batch {batch}{model}"
        attempt(1, f"{base} 2>&1 | tee logs/train.log", "train.log")
        returned(1, "train.log", 300)
        time.sleep(15)
        r.truth("operator has read the traceback (~15 s); looks for the last checkpoint")
        _typed(r, t, "grep 'saved checkpoint' logs/train.log | tail -n 1")
        time.sleep(4)
        _typed(r, t, "date")

        # attempt 2: resumed, documents truncated; ~30 s in, rank 0 is SIGKILLed from outside
        at2 = attempt(2, f"{base} --resume --max-len 512 2>&1 | tee logs/train2.log", "train2.log")
        text = ""
        while time.monotonic() < deadline:
            text = (logs / "train2.log").read_text(errors="replace")
            resumed = int(_last(r"resumed from \S+ at step (\d+)", text).replace("?", "0") or 0)
            saved = [int(s) for s in re.findall(r"saved checkpoint step (\d+)", text)]
            if time.time() - at2 >= 30 and any(s > resumed for s in saved):
                break
            if re.search(r"training done|Exception", text):
                break
            time.sleep(0.2)
        pid0 = ranks("train2.log").get(0, "?")
        r.truth(f"outside the operator's view (as the host's OOM killer would), `kill -9 {pid0}` (rank 0 of "
                f"attempt 2), {time.time() - at2:.1f} s after the launch; train2.log's last line "
                f"{_last_line(r, 'train2.log')!r}")
        if pid0.isdigit() and "spawn_main" in seen.get(pid0, {}).get("cmd", ""):
            subprocess.run(["kill", "-9", pid0], check=False)
        returned(2, "train2.log", 120)
        time.sleep(8)
        r.truth("operator looks at the GPU, then relaunches the same command into a third log")
        _typed(r, t, "nvidia-smi" if r.gpu else "uptime")
        time.sleep(5)
        _typed(r, t, "date")

        # attempt 3: resumed again, to its last step
        attempt(3, f"{base} --resume --max-len 512 2>&1 | tee logs/train3.log", "train3.log")
        returned(3, "train3.log", 400)
        time.sleep(3)
        _typed(r, t, "date")
        _typed(r, t, "nvidia-smi" if r.gpu else "uptime")
        time.sleep(2)
        r.truth("operator types `exit`")
        t.close()
        t = None
        for pid, s in seen.items():
            r.truth(f"summary PID {pid}: {s['role']}, parent {s['ppid']}, seen {_utc(s['at'])}, "
                    + (f"exited {_utc(exited[pid][0])} ({exited[pid][1]})" if pid in exited else "not seen exiting"))
    finally:
        if t is not None:
            t.close()
        _wind_down(r, "train_spawn.py", done, watcher, calib)


def _wind_down(r: Recording, ours: str, done: threading.Event, watcher: threading.Thread, calib: Path) -> None:
    """The end of a scenario that timed its trainer first and watched its processes: our
    trainers stopped, the watcher joined, the timing run's folder removed, and the checkpoints
    (the trainer's state, not evidence) deleted, each named in the truth log."""
    r.stop_ours(ours)
    time.sleep(1)
    done.set()
    if watcher.is_alive():
        watcher.join(timeout=5)
    shutil.rmtree(calib, ignore_errors=True)
    for f in sorted((r.dir / "ckpt").glob("*")):
        r.truth(f"removed {f.relative_to(r.dir)} ({f.stat().st_size} bytes)")
        f.unlink()


# rotated-log's trainer: cpu-fallback's train.py (plain PyTorch, `logging` lines with loss and tok/s every
# --log-every steps, --run-name, --max-steps) made as a longer job's trainer is: a model the GPU steps
# through about 3 times a second (4 micro-batches a step), step-numbered checkpoints every 100 steps
# (--resume takes one), each step's batch drawn from its step (a resumed run reads the same batches),
# and the log through a RotatingFileHandler (logs/train.log, @MAX_BYTES@ bytes, 2 old files) in the
# machine's local time, warnings and errors also to stderr; nothing to stdout. A data check:
# --bad-step K's batch holds a sample of 0 tokens and get_batch raises ValueError, unhandled unless
# --skip-bad (then a WARNING and the batch is skipped).
ROTATED_TRAIN = r'''"""Train a GPT-style LM on a synthetic token stream, checkpointing to ckpt/step_N.pt every 100 steps.

    python3 train.py --run-name lm --max-steps 20000
    python3 train.py --run-name lm --max-steps 20000 --resume ckpt/step_1200.pt   # go on from a checkpoint

The log is logs/train.log, rotated at @MAX_BYTES@ bytes (train.log.1 and train.log.2 are kept);
warnings and errors go to stderr too.
"""
import argparse
import logging
import logging.handlers
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--run-name", default="run")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=32, help="sequences per micro-batch")
p.add_argument("--grad-accum", type=int, default=4, help="micro-batches per step")
p.add_argument("--lr", type=float, default=6e-4)
p.add_argument("--warmup", type=int, default=100, help="steps of linear warm-up")
p.add_argument("--max-steps", type=int, default=20000, help="train until this step")
p.add_argument("--resume", default=None, help="a checkpoint to go on from (ckpt/step_N.pt)")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--save-every", type=int, default=100)
p.add_argument("--log-every", type=int, default=2)
p.add_argument("--device", default="cuda")
p.add_argument("--seed", type=int, default=1337)
p.add_argument("--bad-step", type=int, default=None, help="the step whose batch holds a corrupt (empty) sample")
p.add_argument("--skip-bad", action="store_true", help="skip a batch that fails the data check instead of stopping")
args = p.parse_args()

os.makedirs("logs", exist_ok=True)
file_handler = logging.handlers.RotatingFileHandler("logs/train.log", maxBytes=@MAX_BYTES@, backupCount=2)
console = logging.StreamHandler()  # stderr: warnings and errors only
console.setLevel(logging.WARNING)
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                    handlers=[file_handler, console])
log = logging.getLogger("train")
log.info("config: %s", vars(args))

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.grad_accum * args.block_size


def get_batch(step):
    """Step `step`'s batch, the same in every run: each token the previous one plus a random step of 0-15."""
    if step == args.bad_step:  # the data check: a sample of this batch has no tokens
        raise ValueError("sample 48213 has 0 tokens (corrupt shard data/shard-0007.bin)")
    g = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + step)
    n = args.batch_size * args.grad_accum
    first = torch.randint(0, args.vocab_size, (n, 1), device=device, generator=g)
    walk = torch.randint(0, 16, (n, args.block_size + 1), device=device, generator=g).cumsum(1)
    toks = (first + walk) % args.vocab_size
    return toks[:, :-1], toks[:, 1:]


''' + GPT_MODEL + r'''
model = GPT().to(device)
log.info("model: %d layers, width %d, %.1fM parameters", args.n_layer, args.n_embd,
         sum(p.numel() for p in model.parameters()) / 1e6)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume:
    log.info("resuming from %s", args.resume)
    state = torch.load(args.resume, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resumed at step %d", step)
else:
    log.info("starting from scratch")


def save_checkpoint():
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"step_{step}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, path + ".tmp")
    os.replace(path + ".tmp", path)
    log.info("saved checkpoint %s", path)


log.info("training from step %d to step %d", step, args.max_steps)
start = t0 = time.time()
while step < args.max_steps:
    try:
        x, y = get_batch(step + 1)
    except ValueError as e:
        if not args.skip_bad:
            raise
        step += 1
        log.warning("step %d: skipping this batch: %s", step, e)
        continue
    for group in optimizer.param_groups:
        group["lr"] = args.lr * min(1.0, (step + 1) / args.warmup)
    for xs, ys in zip(x.chunk(args.grad_accum), y.chunk(args.grad_accum)):
        with ctx:
            loss = model(xs, ys) / args.grad_accum
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item() * args.grad_accum
        t1 = time.time()
        log.info("step %d | loss %.2f | %s tok/s", step, lossf, f"{args.log_every * tokens_per_step / (t1 - t0):,.0f}")
        t0 = t1
    if step % args.save_every == 0:
        save_checkpoint()
        t0 = time.time()
if step % args.save_every:
    save_checkpoint()
log.info("training done at step %d (%.0f s)", step, time.time() - start)
'''

ROTATED_STEP = r"(?m)^(\S+ \S+) INFO step (\d+) \| loss (\S+) \| ([\d,]+) tok/s$"
ROTATED_RESUMED, ROTATED_WARNING = r"INFO (resumed at step \d+)", r"[^\n]* WARNING [^\n]*"


class TtyTranscript(Transcript):
    """The operator's shell as `Transcript` keeps it (`[UTC time typed] $ command` and its output in
    logs/operator.log), each command's `bash -c` given a terminal (a pseudo-terminal as its stdin,
    stdout and stderr) as an operator's shell has: `nohup CMD &` with no redirection then appends
    CMD's output to ./nohup.out and says so, as it does at a terminal."""

    def run(self, cmd: str, timeout: float = 900, new_session: bool = False) -> tuple[str, int]:
        stamp = replay_scenarios._utc_stamp(ms=True)  # when it was typed; written once it returns
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        try:
            proc = subprocess.Popen(["bash", "-c", cmd], cwd=self.root, stdin=slave, stdout=slave, stderr=slave,
                                    start_new_session=new_session, env=replay_scenarios._SHELL_ENV)
        finally:
            os.close(slave)
        out, settle, deadline = bytearray(), None, time.monotonic() + timeout
        try:
            # read until every holder of the terminal has closed it (EIO), or 2 s after bash exits (a
            # background job that kept the terminal)
            while settle is None or time.monotonic() < settle:
                if time.monotonic() > deadline:
                    proc.kill()
                    raise subprocess.TimeoutExpired(cmd, timeout)
                if settle is None and proc.poll() is not None:
                    settle = time.monotonic() + 2.0
                if not select.select([master], [], [], 0.1)[0]:
                    continue
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            proc.wait(timeout=10)
        finally:
            os.close(master)
        output = out.decode("utf-8", "replace").replace("\r\n", "\n")
        self._write(stamp, cmd, output)
        return output, proc.pid


def _started_at(pid: str) -> float | None:
    """When `pid` started (epoch seconds), from /proc/PID/stat's start time and /proc/stat's boot time."""
    fields = _proc_stat(pid)
    try:
        btime = next(int(ln.split()[1]) for ln in Path("/proc/stat").read_text().splitlines() if ln.startswith("btime "))
        return btime + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, StopIteration):
        return None


def rotated_log(r: Recording) -> None:
    py = _python3()
    # the dry run: a small model one CPU thread steps through a few times a second
    flags = "" if r.gpu else (" --device cpu --n-layer 4 --n-head 4 --n-embd 128 --block-size 128 "
                              "--vocab-size 2048 --batch-size 16 --grad-accum 1")
    run1_s, run2_share, look_after = 60, 0.7, 20  # run 1's training; run 2's steps per run-1 step; the look
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    logs = r.dir / "logs"
    logf = logs / "train.log"
    calib = r.dir.parent / f"{r.name}.calibrate"
    side = r.dir.parent / f"{r.name}.generations"  # a hard link to each generation of logs/train.log

    def text(rel: str) -> str:
        path = r.dir / rel
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(rel: str) -> str:
        lines = text(rel).strip().splitlines()
        return lines[-1][:300] if lines else "(empty)"

    def steps_of(body: str) -> list[tuple[float, int, float, float]]:
        return [(_log_time(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4).replace(",", "")))
                for m in re.finditer(ROTATED_STEP, body)]

    def pace(lines: list[tuple[float, int, float, float]]) -> float:
        return (lines[-1][1] - lines[0][1]) / max(1e-3, lines[-1][0] - lines[0][0]) if len(lines) >= 2 else 0.0

    # the trainers (python running train.py in the folder), from when the driver first sees them to
    # their exit, and each generation of logs/train.log, read every 0.1 s
    runs: dict[str, int] = {}
    started: dict[str, float | None] = {}
    exited: dict[str, tuple[float, str]] = {}
    current = [0]
    gens: list[dict] = []
    done = threading.Event()

    def summary(body: str) -> str:
        lines = body.splitlines()
        st = steps_of(body)
        return (f"{len(lines)} lines, {len(body.encode())} bytes, first {lines[0][:110] if lines else '(none)'!r}, "
                f"last {lines[-1][:110] if lines else '(none)'!r}; step lines "
                + (f"{st[0][1]}-{st[-1][1]} ({len(st)})" if st else "none")
                + f"; 'config:' lines {body.count(' INFO config: ')}")

    def watch_log() -> None:
        try:
            st = os.stat(logf)
        except FileNotFoundError:
            return
        if not gens or gens[-1]["ino"] != st.st_ino:
            k = len(gens) + 1
            link = side / f"gen{k}.log"
            try:
                os.link(logf, link)
            except OSError as e:
                r.truth(f"logs/train.log generation {k}: cannot link it ({e})")
                gens.append({"ino": st.st_ino, "link": None, "seen": time.time(), "dropped": None, "run": current[0]})
                return
            gens.append({"ino": os.stat(link).st_ino, "link": link, "seen": time.time(), "dropped": None,
                         "run": current[0]})
            writer = [p for p, n in runs.items() if n == current[0] and p not in exited]
            if k == 1:
                r.truth(f"logs/train.log created (generation 1), by run {current[0]}'s trainer {writer}")
            else:
                old = gens[-2]
                r.truth(f"rotation {k - 1} noticed: a new logs/train.log (generation {k}), by run {current[0]}'s "
                        f"trainer {writer}; generation {k - 1} is now train.log.1: "
                        f"{summary(old['link'].read_text(errors='replace')) if old['link'] else '?'}")
        for g in gens:
            if g["link"] is not None and g["dropped"] is None and os.stat(g["link"]).st_nlink == 1:
                g["dropped"] = time.time()
                r.truth(f"generation {gens.index(g) + 1} of logs/train.log removed by that rotation (it was "
                        f"train.log.2): {summary(g['link'].read_text(errors='replace'))}")

    def seen_one(pid: str, argv: list[bytes], fields: list[str]) -> None:
        started[pid] = _started_at(pid)
        shown = b" ".join(argv).decode(errors="replace").strip()
        r.truth(f"run {current[0]} trainer: PID {pid} seen (started "
                f"{_utc(started[pid]) if started[pid] else '?'} by /proc; parent {fields[1]}, process group "
                f"{fields[2]}, session {fields[3]}): {shown!r}")

    def exited_one(pid: str) -> None:
        r.truth(f"run {runs[pid]} trainer PID {pid} exited ({exited[pid][1]}); logs/train.log's last line "
                f"{last_line('logs/train.log')!r}; nohup.out's last line {last_line('nohup.out')!r}")

    def each_round() -> None:
        try:
            watch_log()
        except OSError as e:
            r.truth(f"reading logs/train.log's generations: {e}")

    def watch() -> None:
        _watch_trainers(r, done, runs, exited, lambda argv: current[0], seen_one, exited_one, every=0.1,
                        each_round=each_round)

    pid_of = functools.partial(_pid_seen, runs)  # pid_of(n): run n's trainer
    gone = functools.partial(_gone, exited, every=0.1)
    ended = functools.partial(_ended, exited)

    def ckpts() -> list[str]:
        return sorted((f.name for f in (r.dir / "ckpt").glob("*")), key=lambda n: (len(n), n))

    watcher = threading.Thread(target=watch, daemon=True)
    op = TtyTranscript(r.dir)
    try:
        # the pace of this model on this machine's GPU (the dry run: its CPU), and the bytes of its log
        # lines, measured before the captures start and outside the folder
        shutil.rmtree(calib, ignore_errors=True)
        (calib / "logs").mkdir(parents=True)
        (calib / "train.py").write_text(ROTATED_TRAIN.replace("@MAX_BYTES@", str(1 << 30)))
        cal_argv = [sys.executable, "train.py", "--run-name", "calibrate", "--max-steps", "40", "--save-every",
                    "1000000", *flags.split()]
        r.truth(f"calibration (before the captures, in {calib}, outside the folder, in no transcript): "
                f"`{' '.join(cal_argv)}`")
        cal = subprocess.run(cal_argv, cwd=calib, env=env, capture_output=True, text=True, timeout=240, check=False)
        cal_log = (calib / "logs" / "train.log").read_text(errors="replace") if (calib / "logs" / "train.log").exists() else ""
        cal_steps = [x for x in steps_of(cal_log) if x[1] >= 10]
        p = pace(cal_steps)
        step_lines = [ln for ln in cal_log.splitlines() if re.fullmatch(ROTATED_STEP[4:], ln)]
        line_bytes = statistics.mean(len(ln) + 1 for ln in step_lines[4:]) if len(step_lines) > 4 else 66.0
        head = cal_log.split(" INFO step ", 1)[0].rsplit("\n", 1)[0] + "\n" if " INFO step " in cal_log else ""
        head_bytes = len(head.encode()) or 700
        if p <= 0:
            p = 3.0
            r.truth(f"calibration gave no pace (exit {cal.returncode}; its stderr ends {cal.stderr[-400:]!r}): 3 steps/s assumed")
        # K: 87 steps past a checkpoint (m*100, m >= 1), nearest run1_s of training; N: run 2 goes on from
        # m*100 for about run2_share of run 1's steps (so run 1's lines are more than half of the log)
        m = min(range(1, 400), key=lambda k: abs((100 * k + 87) / p - run1_s))
        bad = 100 * m + 87
        max_steps = max(bad + 20, 100 * m + int(round(run2_share * (bad - 1) / 10)) * 10)
        le = 2  # train.py's --log-every
        est1 = head_bytes + (bad - 1) // le * line_bytes + m * 45
        est2 = head_bytes + 80 + (max_steps - 100 * m) // le * line_bytes + (max_steps // 100 - m + 1) * 45 + 200
        max_bytes = int(round((est1 + est2) / 4.4 / 100)) * 100
        r.truth(f"calibration exited {cal.returncode}: {len(cal_steps)} step lines from step 10, pace {p:.2f} steps/s, "
                f"step lines {line_bytes:.1f} bytes, start lines {head_bytes} bytes; --bad-step {bad} ({bad - 100 * m} "
                f"steps past the step-{100 * m} checkpoint, ~{bad / p:.0f} s of training), --max-steps {max_steps}; "
                f"the log: ~{est1:.0f} bytes from run 1 and ~{est2:.0f} from run 2, maxBytes {max_bytes} "
                f"(~4 rotations, the first 2 files' lines lost)")
        shutil.rmtree(calib, ignore_errors=True)

        train = ROTATED_TRAIN.replace("@MAX_BYTES@", str(max_bytes))
        (r.dir / "train.py").write_text(train)
        shutil.rmtree(side, ignore_errors=True)
        side.mkdir()
        r.gpus_and_processes()
        watcher.start()
        r.truth(f"train.py is in the folder: plain PyTorch, logging through RotatingFileHandler('logs/train.log', "
                f"maxBytes={max_bytes}, backupCount=2), format '%(asctime)s %(levelname)s %(message)s' (local time: "
                f"{time.strftime('%Z %z')}, TZ={os.environ.get('TZ')!r}), warnings and errors also to stderr, nothing "
                f"to stdout; a step line every {le} steps; ckpt/step_N.pt every 100 steps and at the last; --bad-step "
                f"K: get_batch(K) raises ValueError (unhandled unless --skip-bad: a WARNING, the batch skipped)")
        time.sleep(3)
        base = f"nohup {py} train.py --run-name lm --max-steps {max_steps}"

        def launch(n: int, cmd: str) -> tuple[str, float]:
            current[0] = n
            r.truth(f"run {n}: operator types `{cmd}` (in the folder, logs/'s parent)")
            at = time.time()
            shown, _ = op.run(cmd)
            pid = pid_of(n)
            r.truth(f"run {n}: the terminal showed {shown.strip()!r}; trainer PID {pid} ({_program(pid)})")
            return pid, at

        # run 1: from scratch; dies at --bad-step
        pid1, at1 = launch(1, f"{base} --bad-step {bad}{flags} &")
        if r.wait_for("logs/train.log", "INFO training from step", 300):
            began = _log_time(re.search(r"(\S+ \S+) INFO training from step", text("logs/train.log")).group(1))
            r.truth(f"run 1 began training at {_utc(began)} (its log's time)")
        if not gone(pid1, bad / p + 240):
            r.truth(f"run 1 (PID {pid1}) still running {bad / p + 240:.0f} s later: scenario stops")
            return
        st1 = steps_of(text("logs/train.log"))
        r.truth(f"run 1 (PID {pid1}) {ended(pid1)}; its last step line in train.log: step "
                f"{st1[-1][1] if st1 else '?'} at {_utc(st1[-1][0]) if st1 else '?'}; pace {pace(st1[1:]):.2f} steps/s; "
                f"nohup.out: {summary(text('nohup.out'))}; ckpt/: {ckpts()}")
        time.sleep(max(0.0, exited[pid1][0] + look_after - time.time()))

        r.truth(f"~{look_after} s after run 1 died the operator looks: `tail -n 2 logs/train.log`, `tail -n 5 nohup.out`, "
                f"`ls ckpt/`")
        op.run("tail -n 2 logs/train.log")
        op.run("tail -n 5 nohup.out")
        shown, _ = op.run("ls ckpt/")
        found = [int(s) for s in re.findall(r"step_(\d+)\.pt\b", shown)]
        resumed = max(found) if found else 100 * m
        last = f"ckpt/step_{resumed}.pt"
        r.truth(f"`ls ckpt/` showed {sorted(found)}: the operator resumes from {last}")
        time.sleep(5)

        # run 2: run 1's command from the shell's history with --resume and --skip-bad added (--bad-step
        # stays: it stands for the corrupt sample, which is in the data whatever the flags)
        pid2, at2 = launch(2, f"{base} --bad-step {bad} --resume {last} --skip-bad{flags} &")
        if r.wait_for("logs/train.log", "INFO resumed at step", 180):
            r.truth(f"run 2: {_last(ROTATED_RESUMED, text('logs/train.log'))!r}")
        deadline = time.monotonic() + (bad - resumed) / p + 180
        while time.monotonic() < deadline and " WARNING " not in text("logs/train.log") and pid2 not in exited:
            time.sleep(0.5)
        r.truth(f"run 2 logged {_last(ROTATED_WARNING, text('logs/train.log'))!r}; nohup.out's last line "
                f"{last_line('nohup.out')!r}")
        if not gone(pid2, (max_steps - 100 * m) / p + 240):
            r.truth(f"run 2 (PID {pid2}) still running: scenario stops")
            return
        st2 = [x for x in steps_of(text("logs/train.log")) if x[0] >= at2]
        r.truth(f"run 2 (PID {pid2}) {ended(pid2)}; its step lines {st2[0][1] if st2 else '?'}-"
                f"{st2[-1][1] if st2 else '?'}, pace {pace(st2[1:]):.2f} steps/s; train.log's last line "
                f"{last_line('logs/train.log')!r}; ckpt/: {ckpts()}")
        time.sleep(8)
        smi = "nvidia-smi" if r.gpu else "uptime"
        r.truth(f"the operator looks once more: `tail -n 3 logs/train.log`, `{smi}`")
        op.run("tail -n 3 logs/train.log")
        op.run(smi)
        time.sleep(3)

        for n, pid, at in ((1, pid1, at1), (2, pid2, at2)):
            r.truth(f"summary run {n}: PID {pid}, typed at {_utc(at)}, started {_utc(started[pid]) if started.get(pid) else '?'} "
                    f"(/proc), {ended(pid)}")
        r.truth(f"summary: run 1 trained steps 1-{bad - 1} and died fetching step {bad}'s batch; run 2 resumed from "
                f"{last}, so steps {resumed + 1}-{bad - 1} ({bad - 1 - resumed}) were trained again; it skipped step "
                f"{bad} and trained to {max_steps}")
        names = {0: "train.log", 1: "train.log.1", 2: "train.log.2"}
        for i, g in enumerate(gens):
            where = names.get(len(gens) - 1 - i, "?") if g["dropped"] is None else f"removed (seen {_utc(g['dropped'])})"
            body = g["link"].read_text(errors="replace") if g["link"] else ""
            r.truth(f"summary generation {i + 1} of logs/train.log (first seen {_utc(g['seen'])}, during run {g['run']}): "
                    f"now {where}; {summary(body)}")
        r.truth(f"summary nohup.out: {summary(text('nohup.out'))}")
    finally:
        env.clear()
        env.update(saved)
        _wind_down(r, "train.py --run-name lm", done, watcher, calib)
        shutil.rmtree(side, ignore_errors=True)


# table-loop's trainer: sweep-share's train.py (a model that keeps the GPU busy alone, so that a second
# process on the GPU takes a large share of its compute), its usage showing the launch the operator types.
TABLE_LOOP_TRAIN = SWEEP_SHARE_TRAIN.replace(
    "    python3 train.py --run-name lr-1e-3 --lr 1e-3 --max-steps 20000\n",
    "    nohup python3 train.py --run-name main --max-steps 20000 > logs/train.log 2>&1 &\n")
assert TABLE_LOOP_TRAIN != SWEEP_SHARE_TRAIN
# `nvidia-smi`'s default output: the date line that opens each table, and a row of its processes section
SMI_DATE = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*$")
SMI_PROC = re.compile(r"^\|\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+(C|G|C\+G)\s+(.*?)\s+(\d+)MiB\s*\|$")


def _smi_tables(text: str) -> list[tuple[int, str, list[tuple[int, str, str, int]]]]:
    """Appended `nvidia-smi` tables: (the date line's number, its text, [(line number, PID, process name,
    MiB) of each process row])."""
    tables: list[tuple[int, str, list[tuple[int, str, str, int]]]] = []
    for i, ln in enumerate(text.splitlines(), 1):
        if SMI_DATE.match(ln):
            tables.append((i, ln.strip(), []))
        elif tables and (m := SMI_PROC.match(ln)):
            tables[-1][2].append((i, m.group(2), m.group(4), int(m.group(5))))
    return tables


def table_loop(r: Recording) -> None:
    py = _python3()
    # the dry run: a tiny model on the CPU (the GPU path's commands carry no size flags), and `uptime`
    # in nvidia-smi's place (no GPU, no nvidia-smi)
    flags = "" if r.gpu else " --n-layer 2 --n-head 2 --n-embd 64 --block-size 64 --vocab-size 1024"
    smi = "nvidia-smi" if r.gpu else "uptime"
    alone_s, shared_s = 45, 50  # main alone before the other job; from its start to the operator's look
    # ~150 s of training: 45 s alone, 50 s at about half its pace, ~80 s alone again, at the pace sweep-share's
    # calibration measured on an H200 (30.6 steps/s); the dry run's tiny model steps at ~24 a second here
    max_steps = 3800 if r.gpu else 3000
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    other_dir = r.dir.parent / f"{r.name}.other-user"  # the other user's job: its folder and log, not ours
    loop_line = f"while true; do {smi} >> logs/gpu.log; sleep 5; done"

    def text(rel: str) -> str:
        return (r.dir / rel).read_text(errors="replace") if (r.dir / rel).exists() else ""

    def last_line(rel: str) -> str:
        return (text(rel).strip().splitlines() or ["(empty)"])[-1][:300]

    def began_at(rel: str, timeout: float) -> float | None:
        """When the trainer logging to `rel` began training (its log's time), waited for up to `timeout` s."""
        found = r.wait_for(rel, "INFO training from step", timeout) and re.search(CF_BEGAN, text(rel))
        return _log_time(found.group(1)) if found else None

    def pace(t0: float, t1: float) -> tuple[float, float, str]:
        """main's steps a second and median tok/s over its step lines wholly inside [t0, t1], and in words."""
        inside = _inside([(_log_time(m.group(1)), int(m.group(2)), float(m.group(4).replace(",", "")))
                          for m in re.finditer(CF_STEP, text("logs/train.log"))], t0, t1)
        if len(inside) < 2:
            return 0.0, 0.0, f"{len(inside)} step lines in {_utc(t0)}-{_utc(t1)}: no pace"
        sps = (inside[-1][1] - inside[0][1]) / max(1e-3, inside[-1][0] - inside[0][0])
        rates = [x[2] for x in inside]
        med = statistics.median(rates)
        return sps, med, (f"steps {inside[0][1]}-{inside[-1][1]} ({len(inside)} lines, {_utc(inside[0][0])} to "
                          f"{_utc(inside[-1][0])}): {sps:.2f} steps/s, tok/s median {med:,.0f} (min {min(rates):,.0f}, "
                          f"max {max(rates):,.0f})")

    def loops() -> list[str]:
        """The operator's nvidia-smi loop: a bash in the folder running `loop_line`."""
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if (loop_line.encode() in cmdline.read_bytes()
                        and Path(os.readlink(cmdline.parent / "cwd")).is_relative_to(r.dir.resolve())):
                    found.append(cmdline.parent.name)
            except OSError:
                continue
        return found

    def tables_said(pids: dict[str, str]) -> str:
        tables = _smi_tables(text("logs/gpu.log"))
        if not tables:
            return f"logs/gpu.log: {len(text('logs/gpu.log').splitlines())} lines, no nvidia-smi table"
        parts = [f"logs/gpu.log: {len(text('logs/gpu.log').splitlines())} lines, {len(tables)} tables (date lines "
                 f"{tables[0][0]} {tables[0][1]!r} to {tables[-1][0]} {tables[-1][1]!r})"]
        for who, pid in pids.items():
            rows = [(t, row) for t in tables for row in t[2] if row[1] == pid]
            parts.append(f"{who} PID {pid}: in {len(rows)} tables" + (
                f", rows at lines {rows[0][1][0]}-{rows[-1][1][0]} (tables of {rows[0][0][1]!r} to {rows[-1][0][1]!r}), "
                f"named {sorted({row[2] for _, row in rows})}, memory {sorted({row[3] for _, row in rows})} MiB"
                if rows else ""))
        return "; ".join(parts)

    # the trainers of the incident (python train.py in the folder), by --run-name, read from /proc every 0.05 s
    name_of: dict[str, str] = {}
    exited: dict[str, tuple[float, str]] = {}
    done = threading.Event()

    def seen_one(pid: str, argv: list[bytes], fields: list[str]) -> None:
        r.truth(f"{name_of[pid]} trainer: PID {pid} seen (parent {fields[1]}, process group {fields[2]}, session "
                f"{fields[3]}): {b' '.join(argv).decode(errors='replace').strip()!r}")

    def exited_one(pid: str) -> None:
        r.truth(f"{name_of[pid]} trainer PID {pid} exited ({exited[pid][1]}); train.log's last line "
                f"{last_line('logs/train.log')!r}")

    watcher = threading.Thread(target=_watch_trainers, daemon=True,
                               args=(r, done, name_of, exited, _run_name, seen_one, exited_one))
    op = Transcript(r.dir)
    other: subprocess.Popen | None = None
    try:
        (r.dir / "train.py").write_text(TABLE_LOOP_TRAIN)
        r.ps_loop()
        watcher.start()
        r.truth("train.py is in the folder (sweep-share's trainer: GPT-style LM, 12 layers, width 768, block 1024, "
                "batch 16; a `step N | loss L | T tok/s` line every 20 steps; ckpt/last.pt every 2000 steps and at "
                "the end); the only GPU record is the operator's own nvidia-smi loop; a `ps` loop every 2 s "
                "(logs/ps.txt)")
        time.sleep(2)

        cmd = f"nohup bash -c '{loop_line}' > /dev/null 2>&1 &"
        r.truth(f"operator types `{cmd}`{'' if r.gpu else ' (dry run: uptime in nvidia-smi place)'}")
        op.run(cmd)
        found = loops()
        r.truth(f"the {smi} loop: PID {found}")
        time.sleep(3)

        cmd = f"nohup {py} train.py --run-name main --max-steps {max_steps}{flags} > logs/train.log 2>&1 &"
        r.truth(f"operator types `{cmd}`")
        op.run(cmd)
        pid_main = _pid_seen(name_of, "main")
        began = began_at("logs/train.log", 300)
        if began is None:
            return
        r.wait_for("logs/train.log", " INFO step ", 120)
        r.truth(f"main (PID {pid_main}) began training at {_utc(began)} (its log's time)")
        time.sleep(max(0.0, began + alone_s - time.time()))

        # another user's training job on the same GPU: started by the driver, in no transcript, its folder
        # and log outside the incident's
        shutil.rmtree(other_dir, ignore_errors=True)
        other_dir.mkdir()
        (other_dir / "train.py").write_text(TABLE_LOOP_TRAIN)
        other_argv = [py if py == "python3" else sys.executable, "train.py", "--run-name", "other", "--max-steps", "1000000", "--save-every",
                      "1000000", *flags.split()]
        at_other = time.time()
        with open(other_dir / "other.log", "w") as out:
            other = subprocess.Popen(other_argv, cwd=other_dir, env=dict(env),
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        r.truth(f"another user's job starts on the same GPU (no transcript): PID {other.pid}, `{' '.join(other_argv)}` "
                f"in {other_dir} (outside the folder), output to {other_dir / 'other.log'}; main's last line "
                f"{last_line('logs/train.log')!r}")
        other_began = began_at(f"../{other_dir.name}/other.log", 120) or at_other
        r.truth(f"the other job (PID {other.pid}) began training at {_utc(other_began)} (its log's time; the "
                "start if it did not)")
        time.sleep(max(0.0, at_other + shared_s - time.time()))

        # the operator notices, reads the other PID from the last table and kills it
        r.truth(f"~{shared_s} s after the other job started the operator looks: `tail -n 3 logs/train.log`, "
                f"`tail -n 25 logs/gpu.log`; {pace(other_began, time.time())[2]}")
        op.run("tail -n 3 logs/train.log")
        shown = op.run("tail -n 25 logs/gpu.log")[0]
        listed = [row[1] for t in _smi_tables(shown)[-1:] for row in t[2]]
        read = [p for p in listed if p != pid_main]
        target = read[0] if len(read) == 1 else str(other.pid)
        r.truth(f"the last table in that tail lists PIDs {listed}; main is {pid_main}, the other job {other.pid}: "
                f"operator types `kill {target}`" + ("" if read == [str(other.pid)] else
                                                    " (not read from the table: the driver's own PID of the other job)"))
        time.sleep(3)
        at_kill = time.time()
        op.run(f"kill {target}")
        try:
            rc = other.wait(timeout=30)
            r.truth(f"the other job (PID {other.pid}) exited at {_utc(time.time())}, "
                    f"{f'killed by signal {-rc}' if rc < 0 else f'exit status {rc}'}; its log's last line "
                    f"{last_line(f'../{other_dir.name}/other.log')!r}")
        except subprocess.TimeoutExpired:
            r.truth(f"the other job (PID {other.pid}) still running 30 s after `kill {target}`")

        # main goes on alone to its last step
        if not r.wait_for("logs/train.log", "training done", 400):
            r.truth(f"no 'training done' in train.log: its last line {last_line('logs/train.log')!r}")
        _gone(exited, pid_main, 60)
        r.truth(f"main (PID {pid_main}): {_ended(exited, pid_main)}")
        time.sleep(8)  # a table without it

        r.truth(f"the operator stops the {smi} loop: `pgrep -af '[w]hile true; do {smi}'`, then `kill` its PID")
        shown = op.run(f"pgrep -af '[w]hile true; do {smi}'")[0]
        listed = [ln.split()[0] for ln in shown.splitlines() if loop_line in ln]
        op.run(f"kill {' '.join(listed or found)}")
        time.sleep(1)
        r.truth(f"pgrep listed {listed}; the loop's PID(s) seen by the driver {found}; still running: {loops()}")
        r.truth("the operator looks once more: `tail -n 2 logs/train.log`, `tail -n 25 logs/gpu.log`")
        op.run("tail -n 2 logs/train.log")
        op.run("tail -n 25 logs/gpu.log")
        time.sleep(2)

        end = exited[pid_main][0] if pid_main in exited else time.time()
        before, during, after = pace(began, at_other), pace(other_began, at_kill), pace(at_kill, end)
        r.truth(f"summary main pace before the other job (from {_utc(began)} to its start {_utc(at_other)}): {before[2]}")
        r.truth(f"summary main pace while the other job trained (from {_utc(other_began)} to the kill "
                f"{_utc(at_kill)}): {during[2]}")
        r.truth(f"summary main pace after the kill (to its exit {_utc(end)}): {after[2]}")
        if before[0] and during[0]:
            r.truth(f"summary during/before: {100 * during[0] / before[0]:.1f} % of the steps a second, "
                    f"{100 * (1 - during[1] / before[1]):.1f} % lower tok/s")
        saves = re.findall(r"saved checkpoint step (\d+)", text("logs/train.log"))
        r.truth(f"summary main: PID {pid_main}; {_ended(exited, pid_main)}; saves {saves}; last line "
                f"{last_line('logs/train.log')!r}")
        r.truth(f"summary {tables_said({'main': pid_main, 'other': str(other.pid)})}")
    finally:
        env.clear()
        env.update(saved)
        for pid in loops():
            r.truth(f"the {smi} loop PID {pid} still running at the end: killed")
            os.kill(int(pid), 15)
        if other is not None and other.poll() is None:
            r.truth(f"the other job PID {other.pid} still running at the end: killed")
            other.terminate()
            other.wait(timeout=30)
        _wind_down(r, "train.py --run-name main", done, watcher, other_dir)


# bar-freeze's trainer: hang-ctrlc's train.py (a GPT-style LM, batches through a DataLoader with --num-workers
# workers, timeout 0, the same injected fault) made an epoch loop whose only output is one tqdm bar an epoch
# (`Epoch N/E`, the loss as its postfix; to stderr, redrawn at tqdm's default mininterval), a one-line banner
# and `Saved checkpoint epoch N` after each epoch (print(), flushed): no time of day, no step line. A GPT-2-small
# shape the GPU steps through 10-20 times a second; the dataset holds BATCHES_PER_EPOCH batches an epoch (set
# from the calibration); a worker that reaches batch STALL_BATCH of epoch 4 blocks for good. --resume goes on
# from ckpt/last.pt (saved after each epoch) at the start of the next epoch.
BAR_FREEZE_TRAIN = HANG_CTRLC_TRAIN
_bf_loop = BAR_FREEZE_TRAIN.index('log.info("training from step %d to step %d"')
_bf_body = BAR_FREEZE_TRAIN[BAR_FREEZE_TRAIN.index("    for group in optimizer.param_groups:\n"):
                            BAR_FREEZE_TRAIN.index("    step += 1\n") + len("    step += 1\n")]
BAR_FREEZE_TRAIN = BAR_FREEZE_TRAIN[:_bf_loop] + r'''n_params = sum(p.numel() for p in model.parameters()) / 1e6
print(f"{args.run_name}: GPT {args.n_layer} x {args.n_embd} ({n_params:.1f}M parameters) on {device}, {BATCHES_PER_EPOCH} "
      f"batches an epoch, {args.num_workers} DataLoader workers, epochs {step // BATCHES_PER_EPOCH + 1}-{args.epochs}",
      flush=True)
for epoch in range(step // BATCHES_PER_EPOCH + 1, args.epochs + 1):
    loader = DataLoader(TokenBatches(step, epoch * BATCHES_PER_EPOCH), batch_size=None,
                        num_workers=args.num_workers, pin_memory=cuda)
    bar = tqdm(loader, desc=f"Epoch {epoch}/{args.epochs}")
    for chunk in bar:
''' + "".join("    " + line for line in _bf_body.replace("next(batches)", "chunk").splitlines(True)) + r'''        bar.set_postfix(loss=f"{loss.item():.4f}", refresh=False)
    save_checkpoint()
'''
for _old, _new in (
        ('"""Train a small GPT-style LM on a synthetic token stream read through a DataLoader (--num-workers worker\n'
         'processes), checkpointing to ckpt/last.pt every 2000 steps.\n\n'
         '    python3 train.py --run-name lm --max-steps 20000\n'
         '    python3 train.py --run-name lm --resume --max-steps 20000     # go on from ckpt/last.pt\n',
         '"""Train a GPT-style LM on a synthetic token stream read through a DataLoader (--num-workers worker\n'
         'processes), a progress bar an epoch, checkpointing to ckpt/last.pt after each epoch.\n\n'
         '    python train.py --run-name det --epochs 6\n'
         '    python train.py --run-name det --epochs 6 --resume     # go on after the epoch in ckpt/last.pt\n'),
        ("import logging\n", ""),
        ("import threading\nimport time\n", "import threading\n"),
        ("from torch.utils.data import DataLoader, Dataset, get_worker_info\n",
         "from torch.utils.data import DataLoader, Dataset, get_worker_info\nfrom tqdm import tqdm\n"),
        ('"--n-layer", type=int, default=6)', '"--n-layer", type=int, default=12)'),
        ('"--n-head", type=int, default=6)', '"--n-head", type=int, default=12)'),
        ('"--n-embd", type=int, default=384)', '"--n-embd", type=int, default=768)'),
        ('"--block-size", type=int, default=256)', '"--block-size", type=int, default=512)'),
        ('"--batch-size", type=int, default=8)', '"--batch-size", type=int, default=48)'),
        ('p.add_argument("--max-steps", type=int, default=20000, help="train until this step")\n',
         'p.add_argument("--epochs", type=int, default=10)\n'),
        ('p.add_argument("--save-every", type=int, default=2000)\np.add_argument("--log-every", type=int, default=20)\n', ""),
        ('logging.Formatter.converter = time.gmtime  # UTC\n'
         'logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")\n'
         'log = logging.getLogger("train")\nlog.info("config: %s", vars(args))\n\n', ""),
        ('    log.warning("CUDA is not available, training on CPU (this will be slow)")\n',
         '    print("WARNING: CUDA is not available, training on CPU (this will be slow)", flush=True)\n'),
        ("# Fault injected for this recording: a DataLoader worker process that reaches the batch of step\n"
         "# STALL_AT blocks for good (as a worker deadlocked on a lock inherited through fork would); the main\n"
         "# process (--num-workers 0) reads it as any other.\n",
         "BATCHES_PER_EPOCH = @BATCHES@  # the dataset: this many batches an epoch\n"
         "# Fault injected for this recording: a DataLoader worker process that reaches batch STALL_BATCH of\n"
         "# epoch STALL_EPOCH (the batch of step STALL_AT) blocks for good (as a worker deadlocked on a lock\n"
         "# inherited through fork would); the main process (--num-workers 0) reads it as any other.\n"),
        ("STALL_AT = @STALL_AT@\n",
         "STALL_EPOCH, STALL_BATCH = 4, @STALL_BATCH@\nSTALL_AT = (STALL_EPOCH - 1) * BATCHES_PER_EPOCH + STALL_BATCH\n"),
        ('log.info("model: %d layers, width %d, %.1fM parameters", args.n_layer, args.n_embd,\n'
         '         sum(p.numel() for p in model.parameters()) / 1e6)\n', ""),
        ('    log.info("resuming from %s", args.ckpt)\n', ""),
        ('    log.info("resumed at step %d", step)\n', ""),
        ('elif args.resume:\n    log.info("no checkpoint at %s, starting from scratch", args.ckpt)\n'
         'else:\n    log.info("starting from scratch")\n', ""),
        ('    log.info("saved checkpoint step %d to %s", step, args.ckpt)\n',
         '    print(f"Saved checkpoint epoch {step // BATCHES_PER_EPOCH}", flush=True)\n')):
    assert BAR_FREEZE_TRAIN.count(_old) == 1, _old
    BAR_FREEZE_TRAIN = BAR_FREEZE_TRAIN.replace(_old, _new)
assert "log." not in BAR_FREEZE_TRAIN and "time." not in BAR_FREEZE_TRAIN
BAR = r"Epoch (\d+)/(\d+):\s*(\d+)%\|[^|\r\n]*\|\s*(\d+)/(\d+) \[([^\]\r\n]*)\]"  # a redraw of the bar


def _bars(text: str) -> list[tuple[int, int, int, str]]:
    """Each redraw of an `Epoch N/E` tqdm bar in `text`: (epoch, count, total, what its brackets hold)."""
    return [(int(m.group(1)), int(m.group(4)), int(m.group(5)), m.group(6)) for m in re.finditer(BAR, text)]


def bar_freeze(r: Recording) -> None:
    # the operator's login shell carries the driver's probe (hang-ctrlc's: each trainer's start, an unhandled
    # exception, the start of its shutdown) on PYTHONPATH, outside the folder
    py, flags, calib, probe, env, cal_env = _probed_shell(r)
    epoch_s, looks, kill_s = 17.5, (60, 100), 120  # an epoch's planned length; the operator's looks and the
    # kill -INT, each after the bar's last redraw
    logs = r.dir / "logs"
    runs: dict[str, int] = {}  # each process running train.py in the folder: its run
    role: dict[str, str] = {}
    exited: dict[str, tuple[float, str]] = {}
    grown: dict[str, tuple[int, float]] = {}  # each log: its size, when the driver saw it grow last
    noted: set[tuple[str, str]] = set()
    current = [0]
    done = threading.Event()
    sigint = signal.getsignal(signal.SIGINT)

    def follow() -> None:
        """Each log's growth, each epoch's first bar and each `Saved checkpoint` line, as the driver sees them."""
        for log in ("train.log", "train2.log"):
            path = logs / log
            size = path.stat().st_size if path.exists() else 0
            if size == grown.get(log, (0, 0.0))[0]:
                continue
            grown[log] = (size, time.time())
            tail = path.read_bytes()[-4096:].decode(errors="replace")
            for m in re.finditer(r"Epoch (\d+)/\d+:|Saved checkpoint epoch \d+", tail):
                what = f"epoch {m.group(1)}'s bar first drawn" if m.group(1) else m.group(0)
                if (log, what) not in noted:
                    noted.add((log, what))
                    r.truth(f"logs/{log}: {what} (seen by the driver)")

    def watch() -> None:
        _watch_trainers(r, done, runs, exited, lambda argv: current[0], functools.partial(_worker_seen, r, runs, role),
                        lambda pid: r.truth(f"run {runs[pid]} {role.get(pid, '?')} PID {pid} exited ({exited[pid][1]})"),
                        each_round=follow)

    def of_run(n: int, main: bool) -> list[str]:
        return [p for p, k in list(runs.items()) if k == n and (role.get(p) == "main") == main]

    def processes(n: int) -> str:
        return _states(of_run(n, True) + [p for p in of_run(n, False) if p not in exited], role)

    def bar(log: str) -> str:
        body = (logs / log).read_text(errors="replace") if (logs / log).exists() else ""
        shown = _bars(body)
        last, saves = shown[-1] if shown else None, re.findall(r"Saved checkpoint epoch (\d+)", body)
        return (f"logs/{log}: {len(body)} bytes, {body.count(chr(10))} newlines, {len(shown)} bar redraws, "
                f"epochs drawn {sorted({b[0] for b in shown})}, saves {saves}, "
                f"last redraw {f'epoch {last[0]} {last[1]}/{last[2]} [{last[3]}]' if last else '-'}; 'KeyboardInterrupt' "
                f"in it: {'KeyboardInterrupt' in body}")

    def run_ended(pid: str, timeout: float) -> bool:
        return _gone(exited, pid, timeout)

    def handles_sigint(pid: str) -> str:
        """How `pid` takes SIGINT, from /proc/PID/status: ignored, caught (Python's handler) or default."""
        try:
            masks = dict(re.findall(r"(Sig(?:Ign|Cgt)):\s*([0-9a-f]+)", Path(f"/proc/{pid}/status").read_text()))
        except OSError:
            return "?"
        return "ignored" if int(masks["SigIgn"], 16) & 2 else "caught" if int(masks["SigCgt"], 16) & 2 else "default"

    watcher = threading.Thread(target=watch, daemon=True)
    t = None
    try:
        if sigint == signal.SIG_IGN:  # a login shell never starts with SIGINT ignored; its processes would inherit it
            r.truth("the driver was started with SIGINT ignored (as from the background of a non-interactive shell): "
                    "set to Python's default handler, so that the operator's terminal starts with SIGINT at default")
            signal.signal(signal.SIGINT, signal.default_int_handler)
        # the pace of this model with 2 workers on this machine's GPU (the dry run: its CPU), ~30 s, before
        # the captures start and outside the folder: the bar's count as the driver reads it every 0.5 s
        _probe_and_timing(probe, calib)
        (calib / "train.py").write_text(BAR_FREEZE_TRAIN.replace("@BATCHES@", "1000000").replace("@STALL_BATCH@", "-1"))
        cal_argv = [sys.executable, "train.py", "--run-name", "calibrate", "--epochs", "1", *flags.split()]
        r.truth(f"calibration (before the captures, in {calib}, outside the folder, in no transcript, stopped "
                f"after 30 s): `{' '.join(cal_argv)}`")
        counts: list[tuple[float, int]] = []
        with open(calib / "out.log", "w") as f:
            cal = subprocess.Popen(cal_argv, cwd=calib, env=cal_env, stdout=f, stderr=subprocess.STDOUT,
                                   start_new_session=True)
            for _ in range(60):
                time.sleep(0.5)
                if shown := _bars((calib / "out.log").read_text(errors="replace")[-2000:]):
                    counts.append((time.time(), shown[-1][1]))
            os.killpg(cal.pid, 9)
            cal.wait()
        counts = [c for c in counts if counts and c[0] >= counts[0][0] + 5]
        pace = ((counts[-1][1] - counts[0][1]) / max(1e-3, counts[-1][0] - counts[0][0]) if len(counts) >= 2 else 0.0) or 10.0
        batches = min(300, max(150, round(pace * epoch_s)))
        stall = batches // 3 // 10 * 10 + 7
        r.truth(f"calibration: the bar's count read {len(counts)} times after its first 5 s, pace {pace:.1f} batches/s; "
                f"BATCHES_PER_EPOCH {batches} (~{batches / pace:.1f} s an epoch), STALL_BATCH {stall} of epoch 4 (step "
                f"{3 * batches + stall}, ~{(3 * batches + stall) / pace:.0f} s of training)")
        shutil.rmtree(calib, ignore_errors=True)

        (r.dir / "train.py").write_text(BAR_FREEZE_TRAIN.replace("@BATCHES@", str(batches))
                                        .replace("@STALL_BATCH@", str(stall)))
        r.gpus_and_processes()
        watcher.start()
        r.truth(f"train.py is in the folder (GPT-style LM; its only output: a banner line, a tqdm bar an epoch "
                f"`Epoch N/E` on stderr with the loss as postfix, `Saved checkpoint epoch N` after each epoch to "
                f"ckpt/last.pt; no time of day; {batches} batches an epoch through a DataLoader, --num-workers 2 by "
                f"default, timeout 0; --resume; injected fault: a worker that reaches batch {stall} of epoch 4 waits "
                f"on an Event nobody sets); the driver's probe (a sitecustomize in {probe}, outside the folder) notes "
                "each trainer's start, an unhandled exception and the start of its shutdown")
        t = InteractiveShell(r.dir, logs / "terminal.typescript", env)
        r.truth("operator at a script-recorded interactive bash (logs/terminal.typescript)")
        _typed(r, t, "date")
        current[0] = 1
        shown = _typed(r, t, f"nohup {py} train.py --run-name det --epochs 6{flags} > logs/train.log 2>&1 &")
        pid1 = _job_pid(shown)
        r.truth(f"run 1: bash printed {_last(JOB_STARTED, shown)!r}")
        _typed(r, t, "echo $! > logs/train.pid")
        if not r.wait_for("logs/train.log", "Epoch 1/6", 240):
            return
        began = time.time()
        r.truth(f"run 1 began training (its first bar seen); main PID {of_run(1, True)}, workers {of_run(1, False)}")

        # the operator looks twice while it trains: in epoch 2, and in epoch 3
        for k, at in enumerate((1.4, 2.5)):
            time.sleep(max(0.0, began + at * batches / pace - time.time()))
            _typed(r, t, "date")
            _typed(r, t, "tail -c 400 logs/train.log")
            if k == 0:
                _typed(r, t, "nvidia-smi" if r.gpu else "uptime")
            r.truth(f"run 1 while training: {bar('train.log')}; {processes(1)}")

        # the freeze: the log has not grown for 15 s
        deadline = time.monotonic() + 4 * batches / pace * 3 + 180
        while time.monotonic() < deadline and pid1 not in exited and time.time() - grown["train.log"][1] < 15:
            time.sleep(0.5)
        froze = grown["train.log"][1]
        r.truth(f"run 1's bar has stopped: the log last grew at {_utc(froze)} (file mtime "
                f"{_utc((logs / 'train.log').stat().st_mtime)}); {bar('train.log')}; {processes(1)}")
        time.sleep(max(0.0, froze + 45 - time.time()))
        r.truth(f"45 s after the last redraw: {processes(1)}")
        for after in looks:
            time.sleep(max(0.0, froze + after - time.time()))
            r.truth(f"~{after} s after the last redraw the operator looks")
            _typed(r, t, "date")
            _typed(r, t, "tail -c 400 logs/train.log")
            _typed(r, t, "nvidia-smi" if r.gpu else "uptime")
        time.sleep(max(0.0, froze + kill_s - time.time()))
        kills = []
        for k, line in enumerate(("kill -INT $(cat logs/train.pid)", "kill $(cat logs/train.pid)")):
            if run_ended(pid1, 0):
                break
            r.truth(f"kill {k + 1}, {time.time() - froze:.1f} s after the last redraw: main PID {pid1} takes SIGINT: "
                    f"{handles_sigint(pid1)}; {processes(1)}")
            kills.append(time.time())
            _typed(r, t, line)
            if run_ended(pid1, 10):
                r.truth(f"run 1 main PID {pid1} exited {exited[pid1][0] - kills[-1]:.2f} s after kill {k + 1}")
            else:
                r.truth(f"run 1 main PID {pid1} still running 10 s after kill {k + 1}: {processes(1)}")
        time.sleep(2)
        _typed(r, t, "ps -p $(cat logs/train.pid)")
        _typed(r, t, "date")
        r.truth(f"run 1 after the kill: {bar('train.log')}; processes left: {processes(1)}")
        time.sleep(5)

        # run 2: the same way, no workers, from the epoch-3 checkpoint
        current[0] = 2
        at2 = time.time()
        shown = _typed(r, t, f"nohup {py} train.py --run-name det --epochs 6 --num-workers 0 --resume{flags} "
                             "> logs/train2.log 2>&1 &")
        pid2 = _job_pid(shown)
        r.truth(f"run 2: bash printed {_last(JOB_STARTED, shown)!r}")
        _typed(r, t, "echo $! > logs/train.pid")
        for at in (1.2, 2.4):
            run_ended(pid2, max(0.0, at2 + 10 + at * batches / pace - time.time()))
            if pid2 in exited:
                break
            _typed(r, t, "tail -c 400 logs/train2.log")
        run_ended(pid2, 600)
        r.truth(f"run 2 ended {time.time() - at2:.1f} s after it was typed; {bar('train2.log')}")
        time.sleep(2)
        _typed(r, t, "date")
        _typed(r, t, "tail -c 400 logs/train2.log")
        time.sleep(2)
        r.truth("operator types `exit`")
        t.close()
        t = None

        # the summary: each process's PID, first seen and end, how the trainers ended (the probe), the freeze, the kills
        _runs_summary(r, runs, role, exited, probe)
        if left := [p for p in runs if p not in exited and _proc_stat(p)]:
            r.truth(f"summary still running at the end (the driver stops them): {_states(left, role)}")
        r.truth(f"summary the freeze: run 1's log last grew at {_utc(froze)}; kills at {[_utc(a) for a in kills]} "
                f"({[round(a - froze, 1) for a in kills]} s after it); {bar('train.log')}; {bar('train2.log')}; GPU "
                f"while frozen: {_smi_rows(r, froze + 5, kills[0] if kills else time.time()) if r.gpu else '-'}")
    finally:
        if t is not None:
            t.close()
        _wind_down(r, "train.py --run-name det", done, watcher, calib)
        shutil.rmtree(probe, ignore_errors=True)
        signal.signal(signal.SIGINT, signal.SIG_DFL if sigint is None else sigint)



CREEP_TRAIN = r'''"""Train a small GPT-style LM on packed synthetic sequences, with a training accuracy in the log.

    python3 train.py [--max-steps N] [--resume] [--running-acc] ...

A line every --log-every steps (its time, the step, the loss, the accuracy, the mean time of the
steps since the last line and their tokens per second); ckpt/last.pt every --save-every steps.
The accuracy: each step's predictions at --acc-tokens sampled positions are kept and the accuracy
is taken over all kept so far (--running-acc keeps two counts instead).
"""
import argparse
import logging
import os
import random
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--max-steps", type=int, default=100000)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--block-size", type=int, default=512)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--log-every", type=int, default=20)
p.add_argument("--save-every", type=int, default=1000)
p.add_argument("--acc-tokens", type=int, default=128)
p.add_argument("--running-acc", action="store_true")
p.add_argument("--resume", action="store_true")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--seed", type=int, default=1234)
args = p.parse_args()

logging.Formatter.converter = time.gmtime
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")


def batch_at(step, g):
    """Sequences that follow a hidden rule (learnable) with 10 % noise."""
    B, T, V = args.batch_size, args.block_size, args.vocab_size
    start = torch.randint(1, V, (B, 1), generator=g)
    a = torch.randint(1, 64, (B, 1), generator=g)
    x = (start + a * torch.arange(T + 1)) % (V - 1) + 1
    noise = torch.rand(B, T + 1, generator=g) < 0.1
    x[noise] = torch.randint(1, V, (int(noise.sum()),), generator=g)
    return x


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        d = args.n_embd
        self.tok, self.pos = nn.Embedding(args.vocab_size, d), nn.Embedding(args.block_size, d)
        self.blocks = nn.ModuleList(Block(d, args.n_head) for _ in range(args.n_layer))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, args.vocab_size, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


torch.manual_seed(args.seed)
device = torch.device(args.device)
log.info("config: %s", vars(args))
model = GPT().to(device)
log.info("model: %.1fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
amp = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
step = 0
if args.resume and os.path.exists(args.ckpt):
    state = torch.load(args.ckpt, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    step = state["step"]
    log.info("resumed from %s at step %d", args.ckpt, step)
g = torch.Generator().manual_seed(args.seed + step)
rng = random.Random(args.seed)
preds, labels = [], []  # every kept prediction so far, for the accuracy
correct = total = 0
t_line, tokens = time.perf_counter(), 0
log.info("training to step %d: batch %d x %d tokens", args.max_steps, args.batch_size, args.block_size)
while step < args.max_steps:
    x = batch_at(step, g).to(device, non_blocking=True)
    with amp:
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), x[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    pos = torch.tensor(rng.sample(range(x[:, 1:].numel()), args.acc_tokens), device=device)
    p_now = logits.detach().argmax(-1).flatten()[pos].tolist()
    y_now = x[:, 1:].flatten()[pos].tolist()
    if args.running_acc:
        correct += sum(a == b for a, b in zip(p_now, y_now))
        total += len(p_now)
        acc = correct / total
    else:
        preds.extend(p_now)
        labels.extend(y_now)
        acc = sum(a == b for a, b in zip(preds, labels)) / len(preds)
    step += 1
    tokens += x[:, 1:].numel()
    if step % args.log_every == 0:
        now = time.perf_counter()
        took = now - t_line
        log.info("step %d | loss %.4f | acc %.4f | %.1f ms/step | %s tok/s", step, loss.item(), acc,
                 1000 * took / args.log_every, f"{tokens / took:,.0f}")
        t_line, tokens = now, 0
    if step % args.save_every == 0:
        os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, args.ckpt + ".tmp")
        os.replace(args.ckpt + ".tmp", args.ckpt)
        log.info("saved checkpoint step %d", step)
        t_line = time.perf_counter()
log.info("training done at step %d", step)
'''


def _creep_lines(text: str) -> list[tuple[float, int, float, float]]:
    """acc-creep's step lines: (UTC epoch, step, ms/step, tok/s)."""
    out = []
    for m in re.finditer(r"(?m)^(\S+ \S+) INFO step (\d+) \| loss \S+ \| acc \S+ \| ([\d.]+) ms/step \| ([\d,]+) tok/s$",
                         text):
        t = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=dt.UTC).timestamp()
        out.append((t, int(m.group(2)), float(m.group(3)), float(m.group(4).replace(",", ""))))
    return out


def acc_creep(r: Recording) -> None:
    r.gpus_and_processes()
    (r.dir / "train.py").write_text(CREEP_TRAIN)
    # the dry run: a tiny model on one CPU thread, fewer kept predictions a step
    flags = "" if r.gpu else (" --device cpu --n-layer 2 --n-head 2 --n-embd 64 --vocab-size 1024 --block-size 64 "
                              "--batch-size 4 --acc-tokens 48")
    looks, kill_at = ((45, 100), 130) if r.gpu else ((25, 50), 65)
    py = _python3()
    env = replay_scenarios._SHELL_ENV
    saved = dict(env)
    if not r.gpu:
        env["OMP_NUM_THREADS"] = "1"
    op = Transcript(r.dir)

    def text(name: str) -> str:
        path = r.dir / "logs" / name
        return path.read_text(errors="replace") if path.exists() else ""

    def last_line(name: str) -> str:
        lines = text(name).strip().splitlines()
        return lines[-1][:200] if lines else "(empty)"

    def trainer(after: set[str], timeout: float = 30) -> str:
        """The PID of a python running train.py in this folder, not one of `after`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for pid in subprocess.run(["pgrep", "-f", "train.py --max-steps"], capture_output=True, text=True).stdout.split():
                try:
                    if (pid not in after and Path(os.readlink(f"/proc/{pid}/cwd")).is_relative_to(r.dir.resolve())
                            and "python" in _program(pid)):
                        return pid
                except OSError:
                    pass
            time.sleep(0.2)
        return "?"

    def windows(lines: list[tuple[float, int, float, float]], what: str) -> None:
        if not lines:
            r.truth(f"{what}: no step lines")
            return
        r.truth(f"{what}: {len(lines)} step lines, steps {lines[0][1]}-{lines[-1][1]}, {_utc(lines[0][0])} to "
                f"{_utc(lines[-1][0])}")
        t0, w = lines[0][0], 0
        while t0 + 20 * w <= lines[-1][0]:
            inside = [x for x in lines if t0 + 20 * w <= x[0] < t0 + 20 * (w + 1)]
            if inside:
                r.truth(f"{what}, {_utc(t0 + 20 * w)} to {_utc(t0 + 20 * (w + 1))}: steps {inside[0][1]}-{inside[-1][1]}, "
                        f"ms/step {inside[0][2]:.1f} to {inside[-1][2]:.1f}, tok/s {inside[0][3]:,.0f} to {inside[-1][3]:,.0f}")
            w += 1

    try:
        r.truth("train.py is in the folder: a GPT-style LM on packed synthetic sequences, a line every 20 steps with its "
                "time (UTC), the step, loss, a training accuracy and the mean ms/step and tok/s of the 20 steps since the "
                "last line; ckpt/last.pt every 1000 steps. The accuracy keeps each step's predictions at 128 sampled "
                "positions in two Python lists and recomputes it over everything kept, every step (pure Python): each "
                "step costs more CPU time than the one before. Nothing else injected.")
        cmd = f"nohup {py} train.py --max-steps 100000{flags} > logs/train.log 2>&1 &"
        r.truth(f"operator types {cmd!r}")
        launched = time.monotonic()
        op.run(cmd)
        pid = trainer(set())
        r.truth(f"trainer PID {pid} ({_program(pid)}), parent {_proc_stat(pid)[1] if _proc_stat(pid) else '?'}")
        if not r.wait_for("logs/train.log", "INFO step 20 |", 300):
            r.truth(f"no first step line: train.log's last line {last_line('train.log')!r}")
            return
        r.truth(f"first step line: {[x for x in text('train.log').splitlines() if ' INFO step 20 |' in x][0]!r}")
        for n, at in enumerate(looks, 1):
            time.sleep(max(0.0, launched + at - time.monotonic()))
            r.truth(f"look {n}: the operator types `tail -n 2 logs/train.log`{' and `nvidia-smi`' if n == 2 else ''} "
                    f"(train.log's last line {last_line('train.log')!r})")
            op.run("tail -n 2 logs/train.log")
            if n == 2:
                op.run("nvidia-smi" if r.gpu else "uptime")
        time.sleep(max(0.0, launched + kill_at - time.monotonic()))
        r.truth("the operator compares the rate over the run (`grep tok/s logs/train.log | awk 'NR % 25 == 1'`) and "
                "the checkpoint")
        op.run("grep tok/s logs/train.log | awk 'NR % 25 == 1'")
        op.run("ls -l --time-style=+%H:%M:%S ckpt/")
        r.truth(f"the operator kills PID {pid} (SIGTERM) (train.log's last line {last_line('train.log')!r})")
        op.run(f"kill {pid}")
        gone = _exited(pid, 30)
        r.truth(f"trainer PID {pid} {'exited (' + _wait_status(_proc_stat(pid)) + ')' if gone else 'still running'}")
        time.sleep(20)  # reads the script, finds the accuracy's list
        resumed = _creep_lines(text("train.log"))
        last_saved = max([int(m) for m in re.findall(r"saved checkpoint step (\d+)", text("train.log"))] or [0])
        target = last_saved + (2500 if r.gpu else 1200)
        cmd = (f"nohup {py} train.py --max-steps {target} --resume --running-acc{flags} > logs/train2.log 2>&1 &")
        r.truth(f"the operator relaunches with --resume (ckpt/last.pt: step {last_saved}) and --running-acc (two counts): "
                f"{cmd!r}; run 1's last step line was step {resumed[-1][1] if resumed else '?'}")
        op.run(cmd)
        pid2 = trainer({pid})
        r.truth(f"relaunch PID {pid2} ({_program(pid2)})")
        r.wait_for("logs/train2.log", "resumed from", 120)
        r.truth(f"driver sees: {[x for x in text('train2.log').splitlines() if 'resumed from' in x][:1]}")
        if not r.wait_for("logs/train2.log", "training done", 400):
            r.truth(f"no 'training done': train2.log's last line {last_line('train2.log')!r}")
        gone = _exited(pid2, 60) if pid2.isdigit() else False
        r.truth(f"relaunch PID {pid2} {'exited (' + _wait_status(_proc_stat(pid2)) + ')' if gone else 'still running'}")
        op.run("tail -n 2 logs/train2.log")
        windows(_creep_lines(text("train.log")), "run 1")
        windows(_creep_lines(text("train2.log")), "run 2")
        time.sleep(3)
    finally:
        env.clear()
        env.update(saved)
        for ckpt in r.dir.glob("ckpt/*.pt"):
            ckpt.unlink()

SCENARIOS = {
    "oom-bashx": oom_bashx, "torchrun-halt": torchrun_halt, "thread-death": thread_death,
    "nohup-crash": nohup_crash, "resume-supervisor": resume_supervisor, "crash-loop": crash_loop,
    "alternating": alternating, "clean-relaunch": clean_relaunch, "torchrun-crashloop": torchrun_crashloop,
    "tmux-history": tmux_history, "hf-oom-resume": hf_oom_resume, "pl-contention": pl_contention,
    "hf-long-eval": hf_long_eval, "watched-relaunch": watched_relaunch, "rank-logs": rank_logs,
    "sigint-ignored": sigint_ignored, "hangup": hangup, "timeout-limit": timeout_limit,
    "ctrl-z": ctrl_z, "vanished": vanished, "nccl-watchdog": nccl_watchdog, "nccl-contention": nccl_contention,
    "disk-full": disk_full, "lingering": lingering, "diverged": diverged,
    "accelerate-gpus": accelerate_gpus, "leak-oom": leak_oom, "worker-killed": worker_killed,
    "early-stop": early_stop, "make-launcher": make_launcher, "pkill-both": pkill_both,
    "debug-env": debug_env, "hf-slow-resume": hf_slow_resume, "rendezvous-wait": rendezvous_wait,
    "buffered-log": buffered_log,
    "assert-relaunch": assert_relaunch,
    "torn-checkpoint": torn_checkpoint,
    "segv-supervisor": segv_supervisor,
    "port-in-use": port_in_use,
    "resume-mismatch": resume_mismatch,
    "tb-hang": tb_hang,
    "cpu-starved": cpu_starved,
    "tee-hangup": tee_hangup,
    "noisy-healthy": noisy_healthy,
    "preempt-requeue": preempt_requeue,
    "stall-watchdog": stall_watchdog,
    "cpu-fallback": cpu_fallback,
    "sweep-share": sweep_share,
    "ctrlc-sweep": ctrlc_sweep,
    "ctrlc-stops-sweep": ctrlc_stops_sweep,
    "spawn-oom": spawn_oom,
    "rotated-log": rotated_log,
    "table-loop": table_loop,
    "hang-ctrlc": hang_ctrlc,
    "hf-save-hang": hf_save_hang,
    "bar-freeze": bar_freeze,
    "acc-creep": acc_creep,
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scenarios", nargs="+", choices=sorted(SCENARIOS))
    p.add_argument("--root", default="/tmp/incidents")
    p.add_argument("--cpu", action="store_true", help="a dry run: tiny model on the CPU, no GPU captures")
    p.add_argument("--out", default=os.environ.get("OUT"), help="where each <scenario>.tgz goes")
    args = p.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for name in args.scenarios:
        r = Recording(root, f"{_machine(args.cpu)}-{name}", gpu=not args.cpu)
        r.truth(f"scenario {name} begins (gpu={r.gpu}, {sys.executable})")
        try:
            SCENARIOS[name](r)
        except Exception as e:  # one scenario's failure must not lose the others
            r.truth(f"scenario failed: {type(e).__name__}: {e}")
        finally:
            r.finish()
        if args.out:
            with tarfile.open(Path(args.out) / f"{r.name}.tgz", "w:gz") as tar:
                # checkpoints are the trainer's state, not evidence (and hundreds of MB each); their
                # trainer_state.json stays
                tar.add(r.dir, arcname=r.name,
                        filter=lambda t: None if t.name.endswith((".pt", ".pth", ".safetensors", ".bin")) else t)
                tar.add(r.truth_path, arcname=f"{r.name}.truth")
                for extra in (root / f"{r.name}.watch.out", root / "exec.out"):
                    if extra.exists():
                        tar.add(extra, arcname=extra.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
