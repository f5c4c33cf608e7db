"""Preemption watcher: on the instance's preemption notice, SIGTERM the job's process and give it
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
