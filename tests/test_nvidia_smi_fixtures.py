"""Every real nvidia-smi capture under tests/fixtures/real-world/smi-*: it loads (or fails with
a SourceFormatError naming file and line), every line is accounted for, and a few values per file
are what the file says."""

from __future__ import annotations

import math
import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem import SourceFormatError, schema

NAN = float("nan")

# file -> (frame, row, expected values); NaN means "the source said N/A / - / Not Supported".
EXPECTED = {
    "smi-apps/compute-apps-vgpu-host-uuid-name.csv": ("gpu_processes", 1, {
        "uuid": "GPU-777ead31-954e-837f-590f-6c4974d8e571", "process_name": "vgpu", "pid": None}),
    "smi-apps/h100-mig-590-load-compute-apps.csv": ("gpu_processes", 2, {
        "time": pd.Timestamp("2026-07-14 09:00:44.742", tz="UTC"), "pid": 21198,
        "process_name": "./gpu_burn", "used_memory_mib": 7484, "pci_bus_id": "00000000:00:09.0"}),
    "smi-csv/gtx650-410.78-util-gpu-not-supported.csv": ("gpus", 0, {"util_gpu_pct": NAN}),
    "smi-csv/gtx650-410.78-util-memory-not-supported.csv": ("gpus", 0, {"util_mem_pct": NAN}),
    "smi-csv/h100-mig-590-query-gpu-allfields.csv": ("gpus", 0, {
        "time": pd.Timestamp("2026-07-14 09:00:27.792", tz="UTC"), "gpu": 0, "memory_used_mib": 59,
        "memory_total_mib": 81559, "util_gpu_pct": NAN, "power_w": 71.15, "power_instant_w": 70.72,
        "temp_c": 42, "temp_mem_c": 48, "sm_clock_mhz": 345, "fan_pct": NAN, "name": "NVIDIA H100 80GB HBM3"}),
    "smi-csv/rtx2080super-465.27-allfields.csv": ("gpus", 0, {
        "uuid": "GPU-1937b558-347d-0f30-105b-893b98985668", "memory_used_mib": 344, "power_w": 30.37,
        "fan_pct": 38, "util_mem_pct": 10, "temp_mem_c": NAN, "sm_clock_mhz": 300}),
    "smi-csv/rtx2080super-windows-471.11-wddm-allfields.csv": ("gpus", 0, {
        "memory_total_mib": 8192, "memory_used_mib": 876, "util_gpu_pct": 2, "sm_clock_mhz": 111,
        "power_w": 32.70, "temp_mem_c": NAN}),
    "smi-dmon/dmon-all-metrics-old-format.txt": ("gpus", 1, {
        "gpu": 0, "power_w": 14, "temp_c": 59, "util_gpu_pct": 0, "util_mem_pct": 4, "mem_clock_mhz": 405,
        "gr_clock_mhz": 26, "memory_used_mib": 145, "dmon_pviol": 100, "dmon_sbecc": NAN}),
    "smi-dmon/dmon-s-u-utilization-only-2020.txt": ("gpus", 8, {"util_gpu_pct": 0, "power_w": NAN}),
    "smi-dmon/h100-mig-590-dmon-load.txt": ("gpus", 0, {
        "power_w": 438, "temp_c": 55, "temp_mem_c": 61, "util_gpu_pct": NAN, "gr_clock_mhz": 1980,
        "mem_clock_mhz": 2619}),
    "smi-dmon/h100-mig-590-pmon-load.txt": ("gpu_processes", 2, {
        "gpu": 0, "pid": 21198, "type": "C", "process_name": "gpu_burn", "sm_pct": NAN}),
    "smi-dmon/rtx4080super-595-dmon-load-mtemp-dash.txt": ("gpus", 0, {
        "temp_mem_c": NAN, "mem_clock_mhz": 11251, "dmon_enc": 69, "power_w": 83}),
    "smi-dmon/rtx4080super-595-pmon-load-cg-types.txt": ("gpu_processes", 5, {
        "pid": 5021, "type": "C", "process_name": "ffmpeg", "sm_pct": 0, "enc_pct": 15, "dec_pct": NAN}),
    "smi-list/L-a100-7x1g10gb-535.txt": ("gpus", 0, {
        "gpu": 0, "uuid": "GPU-7fdaf0a5-179b-f636-d15d-daf243e3ff16", "name": "NVIDIA A100-SXM4-80GB"}),
    "smi-list/L-a100x4-mixed-mig.txt": ("gpus", 3, {
        "gpu": 3, "uuid": "GPU-69ec2344-ebac-b028-f88f-452abb3d7f11", "mig_uuids": ""}),
    "smi-q/h100-mig-590-idle-q.txt": ("gpus", 0, {
        "time": pd.Timestamp("2026-07-14 09:00:27", tz="UTC"), "uuid": "GPU-00000000-0000-0000-0000-000000000000",
        "memory_used_mib": 59, "memory_total_mib": 81559, "util_gpu_pct": NAN, "power_w": 71.27,
        "temp_c": 42, "temp_mem_c": 48, "sm_clock_mhz": 345, "name": "NVIDIA H100 80GB HBM3"}),
    "smi-q/q-d-utilization-375.66-bogus-duration-excerpt.txt": ("gpus", 0, {
        "time": pd.Timestamp("2017-08-15 16:56:23", tz="UTC"), "pci_bus_id": "0000:01:00.0",
        "util_gpu_pct": 38, "util_mem_pct": 3}),
    "smi-q/q-gtx780-450.66-head-excerpt.txt": ("gpus", 0, {
        "name": "GeForce GTX 780", "uuid": "GPU-a230e637-c9e1-1b61-3830-a437b874d88d", "memory_used_mib": NAN}),
    "smi-table/a100-sxm4-40gb-550.144.03.txt": ("gpus", 0, {
        "memory_used_mib": 1, "memory_total_mib": 40960, "power_w": 52, "power_limit_w": 400, "temp_c": 32}),
    "smi-table/gh200x4-590.48.01.txt": ("gpus", 2, {
        "gpu": 2, "pci_bus_id": "00000029:01:00.0", "power_w": 100, "power_limit_w": 900,
        "memory_total_mib": 97871, "name": "NVIDIA GH200 120GB",
        "time": pd.Timestamp("2026-05-04 15:18:49", tz="UTC")}),
    "smi-table/grid-k520-346.46-2017-truncated.txt": ("gpus", 0, {
        "memory_used_mib": 10, "memory_total_mib": 4095, "power_w": 35, "temp_c": 37, "util_gpu_pct": 0}),
    "smi-table/gtx-titan-x3-325.15-2014-MB-truncated.txt": ("gpus", 2, {
        "gpu": 2, "memory_used_mib": 14, "memory_total_mib": 6143, "power_w": NAN, "util_gpu_pct": NAN,
        "fan_pct": 30, "temp_c": 31, "pci_bus_id": "0000:84:00.0"}),
    "smi-table/h100-mig-590-idle.txt": ("gpus", 0, {"memory_used_mib": 59, "util_gpu_pct": NAN, "power_w": 98}),
    "smi-table/h100-mig-590-load-procs.txt": ("gpu_processes", 0, {
        "gpu": 0, "gpu_instance_id": 2, "compute_instance_id": 0, "pid": 21180,
        "process_name": "/root/tools/memhog", "used_memory_mib": 2296}),
    "smi-table/h100x8-550.127.05-modded-nanogpt.txt": ("gpus", 7, {
        "gpu": 7, "memory_used_mib": 3216, "power_w": 121, "pci_bus_id": "00000000:6D:00.0"}),
    "smi-table/h200x8-570.133.20.txt": ("gpus", 0, {
        "memory_total_mib": 143771, "memory_used_mib": 0, "pci_bus_id": "00000000:8D:00.0", "power_w": 76}),
    "smi-table/old-format-processes-block-mixed-mig-a100.txt": ("gpu_processes", 0, {
        "gpu": 0, "gpu_instance_id": None, "pid": 55111, "process_name": "tritonserver", "used_memory_mib": 20481}),
    "smi-table/rtx2080super-windows-wddm-591.86.txt": ("gpu_processes", 1, {
        "pid": 4680, "type": "C+G", "process_name": "...e Experience\\NVIDIA Share.exe", "used_memory_mib": NAN}),
    "smi-table/rtx4090x2-580.126.09-procs.txt": ("gpu_processes", 9, {
        "gpu": 1, "pid": 11553, "process_name": "...m-studio/.internal/utils/node", "used_memory_mib": 386}),
    "smi-table/tesla-k80-410.104-gce-truncated.txt": ("gpus", 0, {
        "util_gpu_pct": 100, "power_w": 84, "power_limit_w": 149, "memory_total_mib": 11441}),
    "smi-table/tesla-m40x2-smi-390.48-vs-driver-390.59-truncated.txt": ("gpus", 1, {
        "memory_used_mib": 558, "util_gpu_pct": 78, "driver_version": "390.59"}),
    "smi-table/tesla-p100-470.82.01-old-format.txt": ("gpus", 0, {
        "name": "Tesla P100-PCIE...", "memory_total_mib": 12198, "power_w": 23, "fan_pct": NAN}),
    "smi-xml/telegraf-a100-sxm4-80gb-mig-535.xml": ("gpus", 0, {
        "uuid": "GPU-513536b6-7d19-9063-b049-1e69664bb298", "memory_used_mib": 50, "memory_total_mib": 81920,
        "util_gpu_pct": NAN, "power_w": 67.03, "temp_c": 27, "sm_clock_mhz": 1275,
        "time": pd.Timestamp("2023-08-04 11:44:30", tz="UTC")}),
    "smi-xml/telegraf-grid-p4-1q-vgpu-windows-513.xml": ("gpu_processes", 12, {
        "pid": 15104, "process_name": "C:\\Windows\\explorer.exe", "used_memory_mib": NAN}),
    "smi-xml/telegraf-gtx1070ti-v10-trimmed.xml": ("gpus", 0, {
        "fan_pct": 100, "memory_used_mib": 42, "power_w": NAN, "util_gpu_pct": 0, "time": pd.NaT}),
}

# (file, event kind, smi_error, message start, bus id)
ERRORS = {
    "smi-error/device-handle-gpu-lost-windows-wrapped.txt": ("gpu_lost", "device_handle", "Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot the system to recover this GPU", "0000:03:00.0"),
    "smi-error/device-handle-unknown-error-2015.txt": ("gpu_error", "device_handle", "Unable to determine", "0000:0B:00.0"),
    "smi-error/device-handle-unknown-error-3digit-domain.txt": ("gpu_error", "device_handle", "Unable to determine", "000:BA:80.0"),
    "smi-error/device-handle-unknown-error-nospace.txt": ("gpu_error", "device_handle", "Unable to determine", "0000:07:00.0"),
    "smi-error/failed-communicate-driver-2line-curly-quote.txt": ("gpu_error", "driver_unreachable", "NVIDIA-SMI has failed", None),
    "smi-error/failed-communicate-driver.txt": ("gpu_error", "driver_unreachable", "NVIDIA-SMI has failed", None),
    "smi-error/no-devices-found-rtx5090.txt": ("gpu_error", "no_devices", "No devices were found", None),
    "smi-error/no-devices-found-trailing-spaces.txt": ("gpu_error", "no_devices", "No devices were found", None),
    "smi-error/nvml-mismatch-old.txt": ("gpu_error", "nvml_init_failed", "Failed to initialize NVML: Driver/library version mismatch", None),
    "smi-error/nvml-mismatch-with-library-version-550.txt": ("gpu_error", "nvml_init_failed", "Failed to initialize NVML: Driver/library version mismatch NVML library version: 550.144", None),
    "smi-error/nvml-mismatch-with-library-version-570.txt": ("gpu_error", "nvml_init_failed", "Failed to initialize NVML: Driver/library version mismatch NVML library version: 570.124", None),
}

# Header-less files whose field list the content cannot give: an error naming file and line
# without it, values with it.
NEEDS_FIELDS = {
    "smi-csv/noheader-nounits-fan-NA-newer.csv": (
        ["memory.total", "memory.free", "memory.used", "temperature.gpu", "fan.speed", "utilization.gpu", "utilization.memory"],
        0, {"memory_total_mib": 2004, "memory_used_mib": 0, "temp_c": 44, "fan_pct": NAN}),
    "smi-csv/noheader-nounits-fan-not-supported-older.csv": (
        ["memory.total", "memory.free", "memory.used", "temperature.gpu", "fan.speed", "utilization.gpu", "utilization.memory"],
        0, {"memory_free_mib": 2004, "fan_pct": NAN, "util_gpu_pct": 0}),
    "smi-csv/pdsh-cluster-name-memtotal-noheader-excerpt.csv": (
        ["name", "memory.total"], 16, {"host": "node073", "name": "Tesla K20m", "memory_total_mib": 4743}),
}


def _same(got, want) -> bool:
    if want is None or want is pd.NaT:
        return got is None or pd.isna(got)
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, float):
        return got == pytest.approx(want)
    return got == want


def _check(inc, frame, row, expected):
    df = getattr(inc, frame)
    assert len(df) > row, f"{frame} has {len(df)} rows"
    r = df.iloc[row]
    wrong = {k: (r.get(k, "<no column>"), v) for k, v in expected.items() if not _same(r.get(k), v)}
    assert not wrong, wrong
    schema.validate(frame, df)


def _accounted(inc):
    for rep in inc.load_report.files:
        assert rep.balanced, rep.summary()


def test_every_fixture_is_covered(fixtures_dir):
    files = {p.relative_to(fixtures_dir).as_posix() for p in fixtures_dir.glob("smi-*/*")}
    covered = set(EXPECTED) | set(ERRORS) | set(NEEDS_FIELDS) | {"smi-apps/h100-mig-590-idle-compute-apps-header-only.csv", "smi-dmon/h100-mig-590-pmon-idle-no-procs.txt"}
    assert files <= covered, sorted(files - covered)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_fixture_values(fixtures_dir, rel):
    frame, row, expected = EXPECTED[rel]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean capture raises no bad-line warning
        inc = pm.load_nvidia_smi(fixtures_dir / rel)
    _check(inc, frame, row, expected)
    _accounted(inc)


@pytest.mark.parametrize("rel", sorted(ERRORS))
def test_error_outputs_become_events(fixtures_dir, rel):
    kind, name, message, bus = ERRORS[rel]
    inc = pm.load_nvidia_smi(fixtures_dir / rel)
    assert len(inc.events) == 1 and inc.gpus.empty
    ev = inc.events.iloc[0]
    assert (ev["kind"], ev["smi_error"]) == (kind, name)
    assert ev["message"].startswith(message)
    assert _same(ev["pci_bus_id"], bus)
    assert ev["ref"].endswith(f"{rel.split('/')[-1]}:1")
    schema.validate("events", inc.events)
    _accounted(inc)


@pytest.mark.parametrize("rel", sorted(NEEDS_FIELDS))
def test_headerless_needs_fields(fixtures_dir, rel):
    fields, row, expected = NEEDS_FIELDS[rel]
    with pytest.raises(SourceFormatError) as e:
        pm.load_nvidia_smi(fixtures_dir / rel)
    assert e.value.line == 1 and rel.split("/")[-1] in str(e.value) and "fields" in str(e.value)
    inc = pm.load_nvidia_smi(fixtures_dir / rel, fields=fields)
    _check(inc, "gpus", row, expected)
    _accounted(inc)


def test_empty_forms(fixtures_dir):
    header_only = pm.load_nvidia_smi(fixtures_dir / "smi-apps/h100-mig-590-idle-compute-apps-header-only.csv")
    rep = header_only.load_report.files[0]
    assert header_only.gpu_processes.empty and (rep.read, rep.skipped["header line"]) == (1, 1)
    idle = pm.load_nvidia_smi(fixtures_dir / "smi-dmon/h100-mig-590-pmon-idle-no-procs.txt")
    rep = idle.load_report.files[0]
    assert idle.gpu_processes.empty and rep.skipped["pmon row with no process on the GPU"] == 5


def test_list_maps_index_uuid_name_and_mig(fixtures_dir):
    inc = pm.load_nvidia_smi(fixtures_dir / "smi-list/L-a100x4-mixed-mig.txt")
    assert list(inc.gpus["gpu"]) == [0, 1, 2, 3]
    assert inc.gpus.iloc[0]["mig_uuids"].split(",")[0] == "MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a"
    assert len(inc.gpus.iloc[0]["mig_uuids"].split(",")) == 4


def test_table_pasted_into_training_log(fixtures_dir):
    """The table's GPUs are read; every log line around it is counted as outside the table."""
    path = fixtures_dir / "train-log" / "modded-nanogpt-8xh100-head-with-smi.log"
    inc = pm.load_nvidia_smi(path)
    rep = inc.load_report.files[0]
    assert list(inc.gpus["gpu"]) == list(range(8))
    assert inc.gpus.iloc[0]["memory_used_mib"] == 7746
    assert rep.skipped["line outside the nvidia-smi table"] > 0 and rep.balanced


def test_fixture_folder_loads_as_incident(fixtures_dir, tmp_path):
    """load_incident sniffs each form by content, whatever the file is called."""
    for rel in ["smi-table/gh200x4-590.48.01.txt", "smi-xml/telegraf-gtx1070ti-v10-trimmed.xml",
                "smi-error/device-handle-gpu-lost-windows-wrapped.txt", "smi-list/L-a100x4-mixed-mig.txt",
                "smi-q/h100-mig-590-idle-q.txt", "smi-dmon/rtx4080super-595-pmon-load-cg-types.txt"]:
        (tmp_path / rel.replace("/", "__").rsplit(".", 1)[0]).write_bytes((fixtures_dir / rel).read_bytes())
    inc = pm.load_incident(tmp_path)
    formats = sorted(f.format for f in inc.load_report.files)
    assert formats == ["nvidia-smi-error", "nvidia-smi-list", "nvidia-smi-pmon", "nvidia-smi-q",
                       "nvidia-smi-table", "nvidia-smi-xml"]
    assert (inc.events["kind"] == "gpu_lost").sum() == 1
