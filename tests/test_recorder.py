"""The NVML recorder: no driver -> NoGPUError; with a fake NVML (this machine has no GPU) the
writer's output is read back by the loader with the values the fake reported."""

from __future__ import annotations

import types

import pandas as pd
import pynvml
import pytest

import dflash_postmortem as pm
from dflash_postmortem import NoGPUError, cli
from dflash_postmortem.recorder import record_gpus

MIB = 1024 * 1024
UUIDS = ["GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239", "GPU-fe57adda-7632-14c9-a200-8dd58612daeb"]


class FakeNVML:
    """A stand-in for the pynvml module: two H200s, GPU 1 reports no power, and optionally falls
    off the bus at a given sample. Raises pynvml's own error classes."""

    NVMLError = pynvml.NVMLError
    NVMLError_NotSupported = pynvml.NVMLError_NotSupported
    NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM

    def __init__(self, lose_gpu1_at: int | None = None):
        self.lose_gpu1_at = lose_gpu1_at
        self.samples = 0
        self.shut = False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut = True

    def nvmlSystemGetDriverVersion(self):
        return "580.159.04"

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUUID(self, h):
        return UUIDS[h]

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"

    def nvmlDeviceGetMemoryInfo(self, h):
        if h == 0:
            self.samples += 1
        if h == 1 and self.lose_gpu1_at is not None and self.samples >= self.lose_gpu1_at:
            raise pynvml.NVMLError_GpuIsLost()
        return types.SimpleNamespace(total=143771 * MIB, used=(4000 + 100 * self.samples + h) * MIB, free=0)

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=90 + h, memory=40)

    def nvmlDeviceGetPowerUsage(self, h):
        if h == 1:
            raise pynvml.NVMLError_NotSupported()
        return 456740  # mW

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 50 + h

    def nvmlDeviceGetClockInfo(self, h, clock):
        return 1980

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return 0x40 if h == 1 else 0  # GPU 1 in HW thermal slowdown

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [types.SimpleNamespace(pid=1391, usedGpuMemory=4430 * MIB if h == 0 else None)]

    def nvmlSystemGetProcessName(self, pid):
        return b"/usr/bin/python3"


class FakeClock:
    def __init__(self, start=1796016020.0):  # 2026-11-30 05:20:20 UTC
        self.now = start
        self.seen: list[int] = []
        self.path = None

    def __call__(self):
        return self.now

    def sleep(self, s):
        self.now += s


def record(tmp_path, nvml, samples=3, clock=None, **kw):
    clock = clock or FakeClock()
    return record_gpus(tmp_path / "rec", interval=0.5, host="h200-box", nvml=nvml, clock=clock,
                       sleep=clock.sleep, max_samples=samples, **kw)


def test_no_driver_is_no_gpu_error(tmp_path):
    # This machine has no NVIDIA driver: the real pynvml raises NVMLError_LibraryNotFound.
    with pytest.raises(NoGPUError, match="NVML Shared Library Not Found"):
        record_gpus(tmp_path / "rec", duration=1)
    assert not (tmp_path / "rec").exists()


def test_cli_without_driver_exits_nonzero(tmp_path, capsys):
    code = cli.main(["record-gpus", "--out", str(tmp_path / "rec"), "--duration", "1"])
    assert code != 0
    err = capsys.readouterr().err
    assert "NVIDIA driver" in err and "Traceback" not in err


def test_recording_reads_back(tmp_path):
    nvml = FakeNVML()
    path = record(tmp_path, nvml)
    assert nvml.shut and path.name == "nvml-h200-box-20261130T052020Z.jsonl"
    inc = pm.load_nvidia_smi(path)
    (rep,) = inc.load_report.files
    assert rep.format == "nvml-recording" and rep.balanced and rep.read == 1 + 3 * 4
    g = inc.gpus
    assert len(g) == 6 and list(g["uuid"][:2]) == UUIDS and (g["host"] == "h200-box").all()
    assert list(g["time"].drop_duplicates()) == [
        pd.Timestamp("2026-11-30 05:20:20", tz="UTC"), pd.Timestamp("2026-11-30 05:20:20.5", tz="UTC"),
        pd.Timestamp("2026-11-30 05:20:21", tz="UTC")]
    assert list(g["memory_used_mib"][:2]) == [4100, 4101] and g.iloc[0]["memory_total_mib"] == 143771
    assert g.iloc[0]["power_w"] == pytest.approx(456.74)
    assert pd.isna(g.iloc[1]["power_w"])  # not supported -> missing, not 0
    assert list(g["util_gpu_pct"][:2]) == [90, 91] and list(g["temp_c"][:2]) == [50, 51]
    assert list(g["clocks_event_reasons"][:2]) == ["0x0000000000000000", "0x0000000000000040"]  # as nvidia-smi prints it
    p = inc.gpu_processes
    assert len(p) == 6 and (p["pid"] == 1391).all() and (p["process_name"] == "python3").all()
    assert p.iloc[0]["used_memory_mib"] == 4430 and pd.isna(p.iloc[1]["used_memory_mib"])
    assert list(p["gpu"][:2]) == [0, 1]


def test_lost_gpu_is_recorded_as_event_and_recording_goes_on(tmp_path):
    path = record(tmp_path, FakeNVML(lose_gpu1_at=2))
    inc = pm.load_nvidia_smi(path)
    assert list(inc.gpus["gpu"]) == [0, 1, 0, 0]
    ev = inc.events
    assert list(ev["kind"]) == ["gpu_lost", "gpu_lost"] and ev.iloc[0]["uuid"] == UUIDS[1]
    assert ev.iloc[0]["time"] == pd.Timestamp("2026-11-30 05:20:20.5", tz="UTC")
    assert ev.iloc[0]["ref"].endswith(".jsonl:8")  # start, then gpu+proc lines of GPU 0 and 1, then GPU 0 again


def test_each_interval_is_on_disk_before_the_next(tmp_path):
    """A kill between intervals loses nothing already sampled: the file grows every interval."""
    clock = FakeClock()
    sizes = []

    def sleep(s):
        files = list((tmp_path / "rec").glob("*.jsonl"))
        sizes.append(len(files[0].read_text().splitlines()))
        clock.sleep(s)

    record_gpus(tmp_path / "rec", interval=0.5, host="h", nvml=FakeNVML(), clock=clock, sleep=sleep, max_samples=3)
    assert sizes == [5, 9, 13]


def test_killed_mid_write_keeps_earlier_intervals(tmp_path):
    path = record(tmp_path, FakeNVML())
    text = path.read_text()
    path.write_text(text[: len(text) - 40])  # the last line cut as a kill would leave it
    with pytest.warns(UserWarning, match="truncated last line"):
        inc = pm.load_nvidia_smi(path)
    (rep,) = inc.load_report.files
    assert rep.balanced and rep.n_skipped == 1 and len(inc.gpus) == 6 and len(inc.gpu_processes) == 5
