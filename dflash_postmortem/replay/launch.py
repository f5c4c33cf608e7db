"""`dflash-postmortem launch`: start a command detached, then prove that it really started.

The incident's restart failed twice without anyone noticing for an hour: once the log path's
folder did not exist (the shell refused the redirect, nothing ran), once the trainer lived in the
operator's session and died with it. `launch` removes both: it opens the log itself (and says so
when it cannot), starts the command in its own session with stdin from /dev/null, and does not
return success before it has seen, each with its time:

    alive   the process is still running after the settle time (and until the end of the checks)
    log     the log file exists and grows
    gpu     (--expect-gpu) GPU memory is held by the process or one of its children
    step    a line matching --wait-for appears (default: the trainer's step line)

Exit status 0 when every check passed, 1 otherwise. The started process is never killed: a
failed check says what was seen and leaves the decision to the operator.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError

STEP_PATTERN = r"\bstep \d+ loss \S+ tok/s \S+"


@dataclass
class Check:
    name: str
    ok: bool | None = None  # None = still pending
    seconds: float = 0.0
    detail: str = ""

    def line(self) -> str:
        state = "ok" if self.ok else "FAIL"
        return f"launch: {self.name:<5} {state:<4} {self.seconds:6.1f}s  {self.detail}"


def add_launch_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log", required=True, type=Path, help="file that receives stdout and stderr")
    p.add_argument("--pid-file", type=Path, help="write the started PID here")
    p.add_argument("--expect-gpu", action="store_true", help="require GPU memory held by the process tree")
    p.add_argument("--wait-for", default="step", metavar="REGEX",
                   help="line that proves training runs; 'step' (default) = the trainer's step line")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for every check")
    p.add_argument("--settle", type=float, default=2.0, help="seconds the process must stay alive")
    p.add_argument("--append", action="store_true", help="append to the log instead of truncating it")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")


def run_launch(args: argparse.Namespace) -> int:
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise UsageError("launch needs a command after --")
    checks = launch(cmd, args.log, pid_file=args.pid_file, expect_gpu=args.expect_gpu,
                    wait_for=STEP_PATTERN if args.wait_for == "step" else args.wait_for,
                    timeout=args.timeout, settle=args.settle, append=args.append)
    ok = all(c.ok for c in checks)
    print(f"launch: {'started' if ok else 'FAILED'}", flush=True)
    return 0 if ok else 1


def launch(cmd: list[str], log: Path, *, pid_file: Path | None = None, expect_gpu: bool = False,
           wait_for: str = STEP_PATTERN, timeout: float = 600.0, settle: float = 2.0,
           append: bool = False, out=None) -> list[Check]:
    """Start `cmd` and run the checks; prints one verdict line per check as it is decided."""
    out = out or sys.stdout
    t0 = time.monotonic()

    def report(check: Check) -> None:
        check.seconds = time.monotonic() - t0
        print(check.line(), file=out, flush=True)

    log = Path(log).absolute()
    start = Check("start")
    if not log.parent.is_dir():
        start.ok, start.detail = False, f"log folder {log.parent} does not exist; nothing was started"
        report(start)
        return [start]
    try:
        handle = open(log, "ab" if append else "wb")
    except OSError as e:
        start.ok, start.detail = False, f"cannot open log {log}: {e.strerror}; nothing was started"
        report(start)
        return [start]
    offset = handle.tell()
    try:
        with handle:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True)
    except OSError as e:
        start.ok, start.detail = False, f"cannot run {cmd[0]!r}: {e.strerror}"
        report(start)
        return [start]
    start.ok = True
    start.detail = f"pid {proc.pid} in its own session {os.getsid(proc.pid)}, stdin /dev/null, log {log}"
    report(start)
    if pid_file:
        Path(pid_file).write_text(f"{proc.pid}\n")

    alive, grows, step = Check("alive"), Check("log"), Check("step")
    gpu = Check("gpu") if expect_gpu else None
    pending = [c for c in (alive, grows, gpu, step) if c is not None]
    pattern = re.compile(wait_for)
    nvml = _Nvml() if expect_gpu else None
    seen = b""
    while True:
        elapsed = time.monotonic() - t0
        status = proc.poll()  # before reading the log, so its last lines are read after death
        size = log.stat().st_size if log.exists() else -1
        if grows.ok is None and size > offset:
            grows.ok, grows.detail = True, f"{log} grew to {size - offset} bytes"
            report(grows)
        if gpu is not None and gpu.ok is None:
            held = nvml.memory_of(_process_tree(proc.pid))
            if nvml.error:
                gpu.ok, gpu.detail = False, nvml.error
                report(gpu)
            elif held:
                gpu.ok = True
                gpu.detail = ", ".join(f"pid {pid} holds {mib} MiB on GPU {idx}" for idx, pid, mib in held)
                report(gpu)
        if step.ok is None and size > offset:
            with open(log, "rb") as f:
                f.seek(offset + len(seen))
                seen += f.read()
            match = next((ln for ln in seen.decode(errors="replace").splitlines() if pattern.search(ln)), None)
            if match:
                step.ok, step.detail = True, f"first match: {match.strip()[:160]}"
                report(step)
        if status is not None:
            alive.ok = False
            alive.detail = f"pid {proc.pid} exited with status {status}; last log lines:" + _tail(log)
            report(alive)
            for c in pending:
                if c.ok is None:
                    c.ok, c.detail = False, "not reached: the process exited"
                    report(c)
            return [start, *pending]
        if alive.ok is None and elapsed >= settle:
            alive.ok, alive.detail = True, f"pid {proc.pid} running after {settle:g}s"
            report(alive)
        if all(c.ok for c in pending):
            return [start, *pending]
        if elapsed > timeout:
            for c in pending:
                if c.ok is None:
                    c.ok = False
                    c.detail = f"not seen within {timeout:g}s; pid {proc.pid} is still running (not killed)"
                    report(c)
            return [start, *pending]
        time.sleep(0.2)


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return "".join(f"\n    | {ln}" for ln in text) if text else " (the log is empty)"


def _process_tree(pid: int) -> set[int]:
    """pid and its descendants, from /proc (the trainer may be a child of a wrapper script)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        if p not in tree:
            tree.add(p)
            todo.extend(children.get(p, []))
    return tree


class _Nvml:
    """Compute processes per GPU through pynvml; `error` says why they cannot be read."""

    def __init__(self):
        self.error = ""
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
        except ImportError:
            self.error = "cannot check GPU memory: pynvml is not installed (pip install nvidia-ml-py)"
        except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            self.error = f"cannot check GPU memory: NVML is not available here ({e})"

    def memory_of(self, pids: set[int]) -> list[tuple[int, int, int]]:
        if self.error:
            return []
        nv, held = self.nvml, []
        for idx in range(nv.nvmlDeviceGetCount()):
            handle = nv.nvmlDeviceGetHandleByIndex(idx)
            for p in nv.nvmlDeviceGetComputeRunningProcesses(handle):
                if p.pid in pids and p.usedGpuMemory:
                    held.append((idx, p.pid, p.usedGpuMemory // 2**20))
        return held
