"""`dflash-postmortem replay SCENARIO --out DIR`: replay an incident into an incident folder.

Every action is a real shell command run through `bash -c` and written to `logs/operator.log` in
the capture's form (`[2026-11-30T05:20:22.676Z] $ command`, then its output). Beside it, the
scenario leaves what a real night leaves: trainer logs (`logs/train*.log`), PID files (`run/`),
wandb offline runs (`wandb/wandb/offline-run-*`), `ps aux` snapshots (`logs/ps_aux_snapshots.txt`,
blocks headed `# <UTC ISO time>`), and on machines with GPUs nvidia-smi query streams and NVML
recordings.

    regression      baseline, then the same run with a cause switched on (--cause)
    failed-restart  a restart whose session is torn down during start-up, one whose log folder
                    does not exist (each followed by the operator's checks), then `launch`
    full            baseline -> regression (killed by the operator) -> both failed restarts ->
                    recovery through `launch`: the write-up's story
    stall           a run whose drafter thread blocks for good, or (--stall-by crash) dies while the
                    loop runs on without it: alive, memory held, ~0 % utilization, no step for
                    --stall-seconds; the operator checks, kills it, relaunches
    survivor        another operator, at an interactive terminal (`logs/terminal.log`, recorded by
                    `script`, dated only by the `date`s typed): baseline -> regression started
                    through a wrapper script -> `kill -TERM -- -$(cat pid_file)` fails (the PID
                    file names a process, not a group) -> a relaunch under `timeout -s KILL 2`
                    dies in start-up -> a relaunch that trains beside the survivor
                    -> the survivor killed by its PID -> full speed
    never-trains    a target too large for its start-up (`--big-args`: made on the host, moved
                    block by block): stage lines stop at loading, GPU memory creeps up, no step;
                    the operator checks three times, kills it by name, relaunches the right size
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..errors import PostmortemError
from .interactive_shell import InteractiveShell

SCENARIOS = ("regression", "failed-restart", "full", "stall", "survivor", "never-trains")
# trainer flags per suspected cause; `all` is the write-up's regressed configuration
CAUSES = {
    "linear-attn": ["--fast-linear-attn", "0"],
    "reentrant": ["--use-reentrant", "0", "--draft-layer-ckpt", "1"],
    "lm-head": ["--lm-head-opt", "0"],
    "compile": ["--compile", "unguarded", "--drafter-threads", "2"],
}
CAUSES["all"] = CAUSES["linear-attn"] + CAUSES["reentrant"] + CAUSES["lm-head"]
SMI_QUERY = ("timestamp,index,uuid,memory.used,memory.total,utilization.gpu,utilization.memory,"
             "temperature.gpu,power.draw")
SMI_APPS = "timestamp,gpu_uuid,pid,process_name,used_memory"
TRAINER_MODULE = "dflash_postmortem.replay.train"
# The wrapper script the survivor scenario's operator starts runs with: its PID is not the trainer's.
WRAPPER = """#!/usr/bin/env bash
# start a training run; arguments go to the trainer
cd "$(dirname "$0")"
{python} -m {module} "$@"
"""


def _utc_stamp(ms: bool) -> str:
    now = dt.datetime.now(dt.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z" if ms else now.strftime("%Y-%m-%dT%H:%M:%SZ")


class Transcript:
    """The operator's shell: runs each command with `bash -c` and writes it with its output."""

    def __init__(self, root: Path, echo=None):
        self.root, self.echo = root, echo
        self.path = root / "logs" / "operator.log"
        self._lock = threading.Lock()

    def _write(self, stamp: str, cmd: str, output: str) -> None:
        entry = f"[{stamp}] $ {cmd}\n{output}"
        entry = entry if entry.endswith("\n") else entry + "\n"
        with self._lock, open(self.path, "a") as f:
            f.write(entry)
        if self.echo:
            print(entry, end="", file=self.echo, flush=True)

    def run(self, cmd: str, timeout: float = 900, new_session: bool = False) -> tuple[str, int]:
        """Run `cmd`; returns its output and its process id (= its process group with
        `new_session`, as the shell of an agent or an SSH login has)."""
        stamp = _utc_stamp(ms=True)  # when it was typed; written once it returns
        # Output goes to a file, not a pipe: `cd X && setsid nohup CMD > log & disown` keeps a
        # subshell holding the shell's stdout until CMD ends, and a pipe reader would wait for it.
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen(["bash", "-c", cmd], cwd=self.root, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=new_session, env=_SHELL_ENV)
            proc.wait(timeout=timeout)
            # a background subshell may still be writing (a failed redirect's error comes from it)
            size, deadline = -1, time.monotonic() + 2.0
            while size != os.fstat(out.fileno()).st_size and time.monotonic() < deadline:
                size = os.fstat(out.fileno()).st_size
                time.sleep(0.3)
            out.seek(0)
            output = out.read()
        self._write(stamp, cmd, output)
        return output, proc.pid


# An operator's interactive bash keeps COLUMNS unexported; with it exported (pytest, some CI
# runners) `ps aux` cuts command lines at that width and `| grep MODULE` counts nothing.
_SHELL_ENV = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


class Background:
    """What was recording all night: ps snapshots and, with GPUs, nvidia-smi streams."""

    def __init__(self, root: Path, ps_interval: float):
        self.root, self.ps_interval = root, ps_interval
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.procs: list[subprocess.Popen] = []

    def __enter__(self):
        self.threads.append(threading.Thread(target=self._ps, daemon=True))
        if shutil.which("nvidia-smi"):
            out = open(self.root / "logs" / "smi_stream.csv", "w")
            self.procs.append(subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={SMI_QUERY}", "--format=csv,nounits", "-l", "1"],
                stdout=out, stderr=subprocess.DEVNULL))
            self.threads.append(threading.Thread(target=self._apps, daemon=True))
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for p in self.procs:
            p.terminate()
            p.wait(timeout=10)
        for t in self.threads:
            t.join(timeout=30)

    def _ps(self):
        # This incident's python processes: its trainers and wrappers name its folder (their PID
        # files, their `cd`); other jobs on the machine (replays beside it) are not its evidence.
        mine = str(self.root)
        with open(self.root / "logs" / "ps_aux_snapshots.txt", "w") as f:
            while True:
                lines = subprocess.run(["ps", "auxww"], stdout=subprocess.PIPE, text=True).stdout.splitlines()
                keep = [lines[0]] + [ln for ln in lines[1:] if "python" in ln and mine in ln]
                f.write(f"# {_utc_stamp(ms=False)}\n" + "\n".join(keep) + "\n")
                f.flush()
                if self.stop.wait(self.ps_interval):
                    return

    def _apps(self):
        with open(self.root / "logs" / "smi_apps_stream.csv", "w") as f:
            while not self.stop.wait(2.0):
                out = subprocess.run(["nvidia-smi", f"--query-compute-apps={SMI_APPS}", "--format=csv,noheader"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
                f.write(out)
                f.flush()


class Scenario:
    def __init__(self, root: Path, *, seconds: float, cause: str, trainer_args: list[str], ps_interval: float,
                 echo=None, stall_seconds: float = 90.0, stall_at_step: int = 20, stall_by: str = "hang",
                 big_args: list[str] = ()):
        self.root, self.seconds, self.cause = root, seconds, cause
        self.stall_seconds, self.stall_at_step, self.stall_by = stall_seconds, stall_at_step, stall_by
        self.trainer_args, self.big_args = trainer_args, list(big_args)
        self.ps_interval = ps_interval
        self.gpus = shutil.which("nvidia-smi") is not None
        self.sh = Transcript(root, echo)
        for sub in ("logs", "run", "wandb"):
            (root / sub).mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------ building blocks
    def trainer_flags(self, run: str, seconds: float, extra: list[str] = ()) -> list[str]:
        args = ["--run-name", run, "--seconds", f"{seconds:g}",
                "--pid-file", f"{self.root}/run/{run}.pid", "--wandb-dir", f"{self.root}/wandb",
                *self.trainer_args, *extra]
        if self.gpus:
            args += ["--record-gpus-dir", f"{self.root}/nvml"]
        return args

    @property
    def count(self) -> str:
        """The operator's process count: the trainers of this incident, which name its run folder
        in their PID files (a count of every trainer on the machine counts other people's jobs)."""
        return f"ps aux | grep {self.root}/run/ | grep -v grep | wc -l"

    def trainer(self, run: str, seconds: float, extra: list[str] = ()) -> str:
        return shlex.join([sys.executable, "-m", TRAINER_MODULE, *self.trainer_flags(run, seconds, extra)])

    def detached(self, run: str, log: str, seconds: float, extra: list[str] = ()) -> None:
        self.sh.run(f"cd {self.root} && setsid nohup {self.trainer(run, seconds, extra)} > {self.root}/logs/{log} "
                    "2>&1 < /dev/null & disown; echo launched")

    def wait_for(self, log: str, pattern: str, timeout: float) -> None:
        path, deadline = self.root / "logs" / log, time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.exists() and re.search(pattern, path.read_text(errors="replace"), re.M):
                return
            time.sleep(0.25)
        raise PostmortemError(f"replay: {path} did not show {pattern!r} within {timeout:g}s")

    def wait_silent(self, log: str, seconds: float, timeout: float) -> None:
        """Until the log has not grown for `seconds` (what an operator waiting on a stuck run sees)."""
        path, deadline = self.root / "logs" / log, time.monotonic() + timeout
        size, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now_size = path.stat().st_size if path.exists() else -1
            if now_size != size:
                size, since = now_size, time.monotonic()
            elif time.monotonic() - since >= seconds:
                return
            time.sleep(0.25)
        raise PostmortemError(f"replay: {path} never went {seconds:g}s without a line within {timeout:g}s")

    def checks(self, log_path: str) -> None:
        self.sh.run(self.count)
        if self.gpus:
            self.sh.run("nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader")
        self.sh.run(f"tail -n 3 {log_path}")

    # ------------------------------------------------------------ the acts
    def baseline(self) -> None:
        self.detached("baseline", "train.log", self.seconds)
        self.wait_for("train.log", r"Training (stopped|failed)$", self.seconds + 300)

    def regression(self, kill: bool) -> None:
        seconds = self.seconds * 10 if kill else self.seconds
        self.detached("regressed", "train_opt.log", seconds, CAUSES[self.cause])
        if not kill:
            self.wait_for("train_opt.log", r"Training (stopped|failed)$", seconds + 300)
            return
        self.wait_for("train_opt.log", r"\] step \d+ ", 300)  # killed while visibly training
        time.sleep(self.seconds)
        self.sh.run(f"kill -TERM $(cat {self.root}/run/regressed.pid); sleep 2; "
                    + self.count)

    def failed_restarts(self) -> None:
        # 1: started inside the operator's session, which ends while the trainer is starting up
        log = f"{self.root}/logs/train_restart.log"
        _, pgid = self.sh.run(
            f"cd {self.root} && nohup {self.trainer('fixed', self.seconds)} > {log} 2>&1 & echo launched",
            new_session=True)
        self.wait_for("train_restart.log", r"Loading", 120)
        self.sh.run(f"kill -KILL -- -{pgid}; echo session {pgid} closed")
        self.checks(log)
        # 2: the log redirect names a folder that does not exist; the shell never starts python
        missing = f"{self.root}/workspace/train_opt2.log"
        self.sh.run(f"cd {self.root} && nohup {self.trainer('fixed', self.seconds)} > {missing} 2>&1 &")
        time.sleep(1)
        self.checks(missing)

    def recovery(self) -> None:
        launch = [sys.executable, "-m", "dflash_postmortem.cli", "launch", "--log",
                  f"{self.root}/logs/train_opt2.log", "--timeout", "600"]
        if self.gpus:
            launch.append("--expect-gpu")
        self.sh.run(f"cd {self.root} && {shlex.join(launch)} -- {self.trainer('fixed', self.seconds)}")
        self.wait_for("train_opt2.log", r"Training (stopped|failed)$", self.seconds + 300)
        self.sh.run(f"tail -n 2 {self.root}/logs/train_opt2.log")

    def stall(self) -> None:
        # Runs far longer than the scenario: only the operator's kill ends it.
        at = f"drafter:{self.stall_at_step}"
        how = (["--inject-hang", at] if self.stall_by == "hang"
               else ["--inject-error", at, "--on-thread-error", "continue"])
        self.detached("stalled", "train.log", self.stall_seconds * 20 + 600, how)
        self.wait_for("train.log", r"\] step \d+ ", 300)
        # Left alone until the log has been silent that long: on a loaded machine the steps before
        # the stall take longer, and a fixed sleep from the first step would cut the stall short.
        self.wait_silent("train.log", self.stall_seconds, self.stall_seconds * 20 + 300)
        self.checks(f"{self.root}/logs/train.log")
        self.sh.run(f"kill -TERM $(cat {self.root}/run/stalled.pid); sleep 2; "
                    + self.count)

    def survivor(self) -> None:
        wrapper = self.root / "run_train.sh"
        wrapper.write_text(WRAPPER.format(python=sys.executable, module=TRAINER_MODULE))
        wrapper.chmod(0o755)
        t = InteractiveShell(self.root, self.root / "logs" / "terminal.log", _SHELL_ENV)
        try:
            t.run("date")
            t.run(f"nohup ./run_train.sh {shlex.join(self.trainer_flags('baseline', self.seconds))} > logs/train.log 2>&1 &")
            self.wait_for("train.log", r"Training (stopped|failed)$", self.seconds + 300)
            t.run("date")
            regressed = self.trainer_flags("regressed", self.seconds * 40, CAUSES[self.cause])
            t.run(f"nohup ./run_train.sh {shlex.join(regressed)} > logs/train_opt.log 2>&1 &")
            self.wait_for("train_opt.log", r"\] step \d+ ", 300)
            time.sleep(self.seconds)
            t.run("date")
            # Meant for the run's whole process group; the PID file names the trainer, a child of
            # the wrapper whose PID is the group's: no such group.
            t.run("kill -TERM -- -$(cat run/regressed.pid)")
            # A quick start check: SIGKILL after 2 s, to timeout's own process group (itself too).
            t.run(f"timeout -s KILL 2 {self.trainer('fixed', self.seconds)} > logs/train_fix.log 2>&1; echo exit=$?")
            t.run("date")
            t.run(self.count)
            t.run("ls -l logs/train_fix.log")
            fixed = self.trainer_flags("fixed", self.seconds * 4)
            t.run(f"nohup ./run_train.sh {shlex.join(fixed)} > logs/train_fix2.log 2>&1 &")
            self.wait_for("train_fix2.log", r"\] step \d+ ", 300)
            time.sleep(self.seconds * 1.5)
            t.run("date")
            if self.gpus:
                # The forms an operator reaches for, one after another.
                for cmd in ("nvidia-smi", "nvidia-smi -L",
                            "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                            "nvidia-smi --query-gpu=index,memory.used,memory.total,utilization.gpu --format=csv,noheader",
                            "nvidia-smi -q -d MEMORY,UTILIZATION | head -n 60",
                            "nvidia-smi dmon -c 3", "nvidia-smi pmon -c 2",
                            "nvidia-smi -q -x > logs/smi_snapshot.xml"):
                    t.run(cmd)
            else:
                t.run("free -m")
            t.run(f"ps -eo pid,ppid,pgid,lstart,etimes,args | grep '[r]eplay.train' | grep -F {self.root}/run/")
            t.run("kill $(cat run/regressed.pid)")
            time.sleep(2)
            t.run(self.count)
            self.wait_for("train_fix2.log", r"Training (stopped|failed)$", self.seconds * 4 + 300)
            t.run("date")
            t.run("tail -n 2 logs/train_fix2.log")
        finally:
            t.close()

    def never_trains(self) -> None:
        log = f"{self.root}/logs/train.log"
        self.detached("big", "train.log", self.seconds, self.big_args)
        self.wait_for("train.log", r"Loading target model", 300)
        for _ in range(3):
            time.sleep(self.stall_seconds / 3)
            self.checks(log)
        # No PID file yet (it is written once start-up is done): killed by its command line. The
        # bracket keeps pkill from matching the shell that runs it.
        self.sh.run(f"pkill -TERM -f '{self.root}/run/[b]ig.pid'; sleep 3; {self.count}")
        self.recovery()

    def write_manifest(self, name: str) -> None:
        utc = time.localtime().tm_gmtoff == 0
        cause = {"stall": {"hang": "a drafter thread that never returns",
                           "crash": "a drafter thread that died, unguarded"}[self.stall_by],
                 "survivor": "a failed group kill left the regressed run on the GPUs",
                 "never-trains": "a target too large to finish loading"}.get(name, self.cause)
        text = (f'title = "replay: {name} (cause: {cause})"\n'
                # the trainer writes local time; say which zone that is
                f'timezone = "{"UTC" if utc else _local_zone()}"\n')
        if name == "stall":
            # judge the replay's short stall by a threshold below its length (default 300 s)
            text += f"\n[detect]\nstall_s = {max(self.stall_seconds / 2, 1):g}\n"
        (self.root / "incident.toml").write_text(text)

    def play(self, name: str) -> None:
        self.write_manifest(name)
        with Background(self.root, self.ps_interval):
            if name in ("regression", "full"):
                self.baseline()
                self.regression(kill=name == "full")
            if name in ("failed-restart", "full"):
                self.failed_restarts()
                self.recovery()
            if name == "stall":
                self.stall()
                self.recovery()
            if name == "survivor":
                self.survivor()
            if name == "never-trains":
                self.never_trains()


def _local_zone() -> str:
    tz = os.environ.get("TZ")
    if tz:
        return tz
    link = Path("/etc/localtime")
    if link.is_symlink() and "zoneinfo/" in str(link.resolve()):
        return str(link.resolve()).split("zoneinfo/", 1)[1]
    raise PostmortemError("replay: cannot tell this machine's time zone; set TZ (e.g. TZ=UTC)")


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", choices=SCENARIOS)
    p.add_argument("--out", type=Path, required=True, help="incident folder to write (must be empty or new)")
    p.add_argument("--seconds", type=float, default=20.0, help="training seconds per run")
    p.add_argument("--cause", choices=tuple(CAUSES), default="all", help="what the regressed run switches on")
    p.add_argument("--ps-interval", type=float, default=2.0, help="seconds between ps snapshots")
    p.add_argument("--stall-seconds", type=float, default=90.0, help="stall: how long the stuck run is left alone")
    p.add_argument("--stall-at-step", type=int, default=20, help="stall: the drafter's step at which it stops")
    p.add_argument("--stall-by", choices=("hang", "crash"), default="hang",
                   help="stall: the drafter thread blocks for good (hang), or raises and dies while the "
                        "loop runs on without it (crash: the trainer's --on-thread-error continue)")
    p.add_argument("--trainer-args", default="", help="extra trainer flags, e.g. '--hidden 32 --seq 64'")
    p.add_argument("--big-args", default="--materialize host --hidden 1024 --layers 64",
                   help="never-trains: the flags that make the first start too large to reach training")
    p.add_argument("--quiet", action="store_true", help="do not echo the transcript")


def run_replay(args: argparse.Namespace) -> int:
    out = args.out.absolute()
    if out.exists() and any(out.iterdir()):
        raise PostmortemError(f"replay: {out} is not empty; choose a new folder")
    out.mkdir(parents=True, exist_ok=True)
    Scenario(out, seconds=args.seconds, cause=args.cause, trainer_args=shlex.split(args.trainer_args),
             ps_interval=args.ps_interval, echo=None if args.quiet else sys.stdout,
             stall_seconds=args.stall_seconds, stall_at_step=args.stall_at_step,
             stall_by=args.stall_by, big_args=shlex.split(args.big_args)).play(args.scenario)
    print(f"replay: {args.scenario} written to {out}")
    return 0

