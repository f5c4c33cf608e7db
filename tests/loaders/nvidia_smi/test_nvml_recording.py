"""The real NVML capture the recorder made on 2 x H200 (data/recordings/h200-nvml-2gpu)."""

from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm

# The repository root (this file is two levels below tests/). Not imported from conftest: notebooks/ has
# a conftest.py too, and pytest puts both folders on sys.path.
REPO = Path(__file__).resolve().parents[3]

CAPTURE = REPO / "data" / "recordings" / "h200-nvml-2gpu"


def test_real_h200_recording_loads_with_its_values():
    inc = pm.load_incident(CAPTURE)
    rep = [f for f in inc.load_report.files if f.path.endswith(".jsonl")][0]
    assert rep.format == "nvml-recording" and rep.read == 157 and rep.balanced
    gpus = inc.gpus
    assert set(gpus["gpu"]) == {0, 1}
    assert set(gpus["uuid"]) == {"GPU-cfbc4be8-da62-f773-fc0d-d705a777b8e4", "GPU-6cc3183d-6f4f-ceec-6ad2-6ac77f40aa44"}
    assert gpus["memory_total_mib"].eq(143771).all()
    peak = gpus.groupby("gpu")[["util_gpu_pct", "power_w", "sm_clock_mhz"]].max()
    assert (peak["util_gpu_pct"] == 100).all() and (peak["sm_clock_mhz"] == 1980).all()
    assert peak["power_w"].between(690, 700).all()
    assert gpus["time"].min() == pd.Timestamp("2026-11-30 06:41:36.802679", tz="UTC")
    # one process, one thread per GPU, seen on both
    procs = inc.gpu_processes.groupby(["gpu", "pid"])["used_memory_mib"].max()
    assert procs.to_dict() == {(0, 643): 966.0, (1, 643): 966.0}


def test_gpu0_went_idle_before_gpu1():
    gpus = pm.load_incident(CAPTURE).gpus
    busy = gpus[gpus["util_gpu_pct"] > 50].groupby("gpu")["time"].max()
    assert busy[1] - busy[0] == pytest.approx(pd.Timedelta(seconds=6), abs=pd.Timedelta(seconds=1.5))


def test_each_sample_cites_its_record():
    import json

    inc = pm.load_incident(CAPTURE)
    lines = next(CAPTURE.glob("*.jsonl")).read_text().splitlines()
    for frame, kind in ((inc.gpus, "gpu"), (inc.gpu_processes, "proc")):
        assert frame["line"].notna().all()
        for _, row in frame.sample(5, random_state=0).iterrows():
            rec = json.loads(lines[int(row["line"]) - 1])
            assert rec["record"] == kind and rec["gpu"] == row["gpu"]
            assert pd.Timestamp(rec["time"]) == row["time"]
