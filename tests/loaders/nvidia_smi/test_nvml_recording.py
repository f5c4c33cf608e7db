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


def _variants(lines: list[str]) -> dict[str, tuple[str, bool]]:
    """Recordings made from the real one as a user's file may be: (text, read by the columnar path)."""
    import json

    head, gpu, rest = lines[0], lines[1], lines[2:]
    rec = json.loads(gpu)
    lost = json.dumps({"record": "error", "time": rec["time"], "gpu": 1, "uuid": rec["uuid"],
                       "error": "NVMLError_GpuIsLost", "message": "GPU is lost"}, separators=(",", ":"))
    null_power = gpu.replace(f'"power_w":{rec["power_w"]}', '"power_w":null')
    no_power = gpu.replace(f',"power_w":{rec["power_w"]}', "")
    extra = gpu[:-1] + ',"fan_pct":40}'
    appended = head.replace('"interval_s":0.5', '"interval_s":1')
    return {
        # the recorder killed mid-write, a blank line in the middle
        "killed": ("\n".join([head, gpu, "", *rest]) + "\n" + rest[0][:40], True),
        "nulls_and_a_missing_field": ("\n".join([head, null_power, no_power, *rest]) + "\n", True),
        "gpu_lost_and_appended": ("\n".join([head, gpu, lost, appended, *rest]) + "\n", True),
        "unknown_kind": ("\n".join([head, gpu.replace('"record":"gpu"', '"record":"fan"'), *rest]) + "\n", False),
        "non_ascii_name": ("\n".join([head, *rest]).replace('"process_name":"python3"', '"process_name":"pythön"') + "\n", False),
        "extra_field": ("\n".join([head, gpu, extra, *rest]) + "\n", False),
        "no_final_newline": ("\n".join([head, gpu, *rest]), False),
        "type_change": ("\n".join([head, gpu.replace('"gpu":0', '"gpu":"0"'), *rest]) + "\n", False),
        "empty": ("", True),
    }


@pytest.mark.parametrize("variant", ["killed", "nulls_and_a_missing_field", "gpu_lost_and_appended", "unknown_kind",
                                     "non_ascii_name", "extra_field", "no_final_newline", "type_change", "empty"])
def test_columnar_read_equals_the_line_by_line_read(variant, tmp_path, monkeypatch):
    """Arrow's JSON reader takes the recorder's regular files; every frame and the load report
    are what one json.loads per line gives, and an irregular file goes line by line."""
    from support.captures import columnar_and_lines

    from dflash_postmortem.loaders.nvidia_smi import nvml_recording
    from dflash_postmortem.loaders.registry import LoadContext

    lines = next(CAPTURE.glob("*.jsonl")).read_text().splitlines()
    text, columnar = _variants(lines)[variant]
    path = tmp_path / "nvml-vm-20261130T064136Z.jsonl"
    path.write_text(text, encoding="utf-8")
    fast, took = columnar_and_lines(nvml_recording, path, LoadContext, monkeypatch)
    assert took == columnar
    rep = fast.load_report.files[0]
    if variant == "killed":
        assert rep.read == len(lines) + 2
        assert rep.skipped == {"blank line": 1, "expected one JSON record per line": 1}
        assert len(fast.gpus) == sum('"record":"gpu"' in ln for ln in lines) and rep.parsed == len(lines)
    if variant == "gpu_lost_and_appended":
        lost = fast.events.iloc[0]
        assert (lost["kind"], lost["gpu_index"], lost["message"]) == ("gpu_lost", 1, "GPU is lost")
        assert lost["ref"].endswith(":3") and rep.notes[-1] == "recorded with driver 580.159.04, every 1 s"
    if variant == "nulls_and_a_missing_field":
        assert fast.gpus["power_w"].iloc[:2].isna().all() and fast.gpus["power_w"].iloc[2:].notna().all()
