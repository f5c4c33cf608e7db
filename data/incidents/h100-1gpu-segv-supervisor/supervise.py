"""Keep train.py running: restart it from its last checkpoint if it dies, up to 3 attempts."""
import logging
import signal
import subprocess
import sys
import time

MAX_ATTEMPTS = 3
RESTART_DELAY = 10  # seconds
CMD = [sys.executable, "-X", "faulthandler", "train.py", "--resume", "ckpt/last.pt", "--batch-size", "16"]

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                    handlers=[logging.FileHandler("logs/supervisor.log"), logging.StreamHandler()])
log = logging.getLogger("supervisor")


def describe(rc):
    if rc < 0:
        try:
            return f"returncode {rc} ({signal.Signals(-rc).name})"
        except ValueError:
            pass
    return f"returncode {rc}"


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
