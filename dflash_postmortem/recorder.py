"""`dflash-postmortem record-gpus`: sample every GPU and its processes through NVML, so that the
next incident has better evidence than whatever nvidia-smi someone remembered to run.

One JSON Lines file per recording (`nvml-<host>-<start>.jsonl`, read back by
`loaders/nvidia_smi/nvml_recording.py`): a `start` line with host, driver and the GPUs, then each interval a
`gpu` line per GPU, a `proc` line per process holding GPU memory, and an `error` line for a GPU
that stopped answering (a lost GPU is evidence, so the recorder keeps going). Each interval is
flushed and fsync'ed, so killing the recorder loses at most the interval being written.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import time
from pathlib import Path

from .errors import MissingDependencyError, NoGPUError, UsageError
from .loaders.nvidia_smi.nvml_recording import FORMAT_VERSION, RECORD_KEY

MIB = 1024 * 1024


def _nvml():
    try:
        import pynvml
    except ImportError as e:  # pragma: no cover - nvidia-ml-py is a dependency
        raise MissingDependencyError("nvidia-ml-py", "record-gpus") from e
    return pynvml


def _utc_now(clock) -> str:
    return dt.datetime.fromtimestamp(clock(), dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class _Sampler:
    """Reads one GPU's measurements; a measurement the GPU does not support is None, never 0."""

    def __init__(self, nvml, index: int):
        self.nvml = nvml
        self.index = index
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        self.uuid = _text(nvml.nvmlDeviceGetUUID(self.handle))
        self.name = _text(nvml.nvmlDeviceGetName(self.handle))

    def _try(self, fn, *args):
        try:
            return fn(self.handle, *args)
        except self.nvml.NVMLError_NotSupported:
            return None

    def sample(self) -> tuple[dict, list[dict]]:
        n = self.nvml
        mem = n.nvmlDeviceGetMemoryInfo(self.handle)  # raises for a lost GPU: the caller records it
        util = self._try(n.nvmlDeviceGetUtilizationRates)
        power = self._try(n.nvmlDeviceGetPowerUsage)
        # (named Throttle before R535's Event; nvidia-ml-py keeps both names)
        why = (getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None)
               or getattr(n, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        reasons = None if why is None else self._try(why)
        gpu = {
            "gpu": self.index, "uuid": self.uuid,
            "memory_used_mib": mem.used / MIB, "memory_total_mib": mem.total / MIB,
            "util_gpu_pct": None if util is None else util.gpu,
            "util_mem_pct": None if util is None else util.memory,
            "power_w": None if power is None else power / 1000.0,
            "temp_c": self._try(n.nvmlDeviceGetTemperature, n.NVML_TEMPERATURE_GPU),
            "sm_clock_mhz": self._try(n.nvmlDeviceGetClockInfo, n.NVML_CLOCK_SM),
            # as nvidia-smi prints clocks_event_reasons.active
            "clocks_event_reasons": None if reasons is None else f"0x{reasons:016x}",
        }
        procs = []
        for p in self._try(n.nvmlDeviceGetComputeRunningProcesses) or []:
            used = getattr(p, "usedGpuMemory", None)
            procs.append({
                "gpu": self.index, "uuid": self.uuid, "pid": int(p.pid),
                "process_name": _process_name(n, p.pid),
                "used_memory_mib": None if used is None else used / MIB,
            })
        return gpu, procs


def _process_name(nvml, pid: int) -> str | None:
    # NVML knows the name even when the PID is in another container's namespace; /proc is the
    # fallback for drivers that refuse.
    try:
        return _text(nvml.nvmlSystemGetProcessName(pid)).rsplit("/", 1)[-1] or None
    except Exception:
        try:
            return Path(f"/proc/{pid}/comm").read_text().strip() or None
        except OSError:
            return None


def record_gpus(
    out_dir,
    interval: float = 0.5,
    duration: float | None = None,
    *,
    host: str | None = None,
    nvml=None,
    clock=time.time,
    sleep=time.sleep,
    max_samples: int | None = None,
) -> Path:
    """Record NVML samples into `out_dir` until `duration` seconds have passed (or forever, until
    interrupted). Returns the path of the JSON Lines file written.

    `nvml` is the pynvml module (a stand-in can be passed for tests); `clock`/`sleep` likewise.
    """
    if interval <= 0:
        raise UsageError(f"interval must be positive, not {interval}")
    nvml = nvml or _nvml()
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        raise NoGPUError(
            f"record-gpus: cannot talk to an NVIDIA driver on this machine (NVML: {e}); "
            "it needs an NVIDIA GPU with its driver installed"
        ) from e
    try:
        return _record(Path(out_dir), interval, duration, host or socket.gethostname(), nvml, clock, sleep, max_samples)
    finally:
        nvml.nvmlShutdown()


def _record(out: Path, interval, duration, host, nvml, clock, sleep, max_samples) -> Path:
    samplers = [_Sampler(nvml, i) for i in range(nvml.nvmlDeviceGetCount())]
    if not samplers:
        raise NoGPUError("record-gpus: the NVIDIA driver is loaded but reports no GPUs")
    out.mkdir(parents=True, exist_ok=True)
    started = clock()
    stamp = dt.datetime.fromtimestamp(started, dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = out / f"nvml-{host}-{stamp}.jsonl"
    header = {
        RECORD_KEY: "start", "version": FORMAT_VERSION, "time": _utc_now(clock), "host": host,
        "driver": _text(nvml.nvmlSystemGetDriverVersion()), "interval_s": interval,
        "gpus": [{"gpu": s.index, "uuid": s.uuid, "name": s.name} for s in samplers],
    }
    with open(path, "w", encoding="utf-8") as f:
        _write(f, [header])
        n = 0
        next_tick = started
        while (duration is None or clock() - started < duration) and (max_samples is None or n < max_samples):
            now = _utc_now(clock)
            lines = []
            for s in samplers:
                try:
                    gpu, procs = s.sample()
                except nvml.NVMLError as e:
                    lines.append({RECORD_KEY: "error", "time": now, "gpu": s.index, "uuid": s.uuid,
                                  "error": type(e).__name__, "message": str(e)})
                    continue
                lines.append({RECORD_KEY: "gpu", "time": now, **gpu})
                lines.extend({RECORD_KEY: "proc", "time": now, **p} for p in procs)
            _write(f, lines)
            n += 1
            # Sleep to the next tick, not for `interval`: sampling time must not stretch the period.
            next_tick += interval
            sleep(max(0.0, next_tick - clock()))
    return path


def _write(f, records: list[dict]) -> None:
    f.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    f.flush()
    os.fsync(f.fileno())


def add_record_arguments(parser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="folder to write the recording into")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples (default 0.5)")
    parser.add_argument("--duration", type=float, default=None,
                        help="stop after this many seconds (default: run until interrupted)")
    parser.add_argument("--host", default=None, help="host name to record (default: this machine's)")


def run_record(args) -> int:
    try:
        path = record_gpus(args.out, interval=args.interval, duration=args.duration, host=args.host)
    except KeyboardInterrupt:
        print(f"record-gpus: stopped; recording in {args.out}")
        return 0
    print(f"record-gpus: wrote {path}")
    return 0
