"""What the replay loop leaves on disk, in the forms real runs leave and the loaders read.

- Log lines `YYYY-mm-dd HH:MM:SS [run] message` on stdout (local time), as in the capture's
  `logs/train.log`; step lines are `step N loss X tok/s Y queue Q`.
- A wandb offline run (`WANDB_MODE=offline`) with the run's config and the history keys the
  capture has (`train/step`, `train/loss`, `train/tok_per_s`, `queue/depth`), or a do-nothing run
  when wandb is absent or switched off.
- GPU samples through the kit's NVML recorder, when it is importable and GPUs exist.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from pathlib import Path

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
WANDB_PROJECT = "dflash-replay"


def format_step(step: int, loss: float, tok_per_s: float, queue: int) -> str:
    return f"step {step} loss {loss:.4f} tok/s {tok_per_s:.0f} queue {queue}"


class RunLog:
    """Thread-safe line logger: one whole line per write, flushed, so `tail -f` and a launcher
    polling the file see complete lines as soon as they happen."""

    def __init__(self, run_name: str, stream=None):
        self.run_name = run_name
        self.stream = stream if stream is not None else sys.stdout
        self._lock = threading.Lock()

    def info(self, message: str) -> None:
        line = f"{time.strftime(TIME_FORMAT)} [{self.run_name}] {message}\n"
        with self._lock:
            self.stream.write(line)
            self.stream.flush()

    def raw(self, text: str) -> None:
        """Unprefixed text (tracebacks), the way Python prints them to stderr."""
        with self._lock:
            self.stream.write(text if text.endswith("\n") else text + "\n")
            self.stream.flush()


def route_library_warnings(stream=None) -> None:
    """Library warnings (the linear-attention fallback) go to the log as bare lines, as
    transformers' default logging prints them."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("dflash_postmortem.replay")
    logger.handlers[:] = [handler]
    logger.propagate = False


class NullRun:
    """Stands in for a wandb run so the loop never asks whether wandb is there."""

    def log(self, data: dict, step: int | None = None) -> None:
        pass

    def finish(self, exit_code: int | None = None) -> None:
        pass


def open_wandb(run_name: str, config: dict, directory: Path | None, enabled: bool = True):
    """An offline wandb run under `directory` (wandb adds its own `wandb/` folder), or NullRun."""
    if not enabled:
        return NullRun()
    try:
        import wandb
    except ImportError:
        return NullRun()
    return wandb.init(project=WANDB_PROJECT, name=run_name, config=config, mode="offline",
                      dir=str(directory) if directory else None, reinit="finish_previous")


@contextlib.contextmanager
def gpu_recording(out_dir: Path | None, log: RunLog):
    """Sample GPUs with the kit's recorder for the duration of the block, when that is possible.

    The recorder is optional: without it, without NVML or without GPUs the block runs unrecorded
    and the log says why, once.
    """
    if out_dir is None:
        yield
        return
    try:  # a bare GPU machine may run the trainer without the kit's loaders (pandas) installed
        from ..recorder import record_gpus
    except ImportError:
        log.info("GPU recording skipped: dflash_postmortem.recorder is not available")
        yield
        return
    stop = threading.Event()
    failure: list[str] = []

    class Stopped(Exception):
        pass

    def sleep(seconds: float) -> None:
        # the recorder flushes every sample, so ending it from its sleep loses nothing
        if stop.wait(seconds):
            raise Stopped

    def sample():
        try:
            record_gpus(out_dir, interval=1.0, sleep=sleep)
        except Stopped:
            pass
        except Exception as e:  # a recorder problem must never stop training
            failure.append(f"{type(e).__name__}: {e}")

    thread = threading.Thread(target=sample, name="gpu-recorder", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        if failure:
            log.info(f"GPU recording stopped: {failure[0]}")
