"""The default nvidia-smi table: the bundled captures, garbage inside a table, a table inside a training log."""

from __future__ import annotations

import pandas as pd
import pytest
from support.captures import only_report, rows, ts, write

import dflash_postmortem as pm


def test_tables(incident):
    idle = rows(incident.gpus, "snap/table_idle.txt")
    assert list(idle["power_w"]) == [78, 76] and list(idle["temp_c"]) == [32, 34]
    assert idle.iloc[0]["time"] == ts("2026-11-30 05:20:20")
    assert incident.load_report["snap/table_idle.txt"].skipped["no running processes"] == 1
    busy = rows(incident.gpus, "snap/table_busy.txt")
    assert list(busy["memory_used_mib"]) == [4439, 4155]
    assert list(busy["util_gpu_pct"]) == [74, 99]
    assert list(busy["power_w"]) == [460, 684]
    assert list(busy["pci_bus_id"]) == ["00000000:00:06.0", "00000000:00:07.0"]
    assert busy.iloc[0]["driver_version"] == "580.159.04"
    procs = rows(incident.gpu_processes, "snap/table_busy.txt")
    assert list(procs["gpu"]) == [0, 1] and list(procs["pid"]) == [1391, 1391]
    assert list(procs["used_memory_mib"]) == [4430, 4146]
    assert procs.iloc[0]["time"] == ts("2026-11-30 05:24:18")


def test_garbage_inside_a_table(tmp_path, bundled_dir):
    lines = (bundled_dir / "snap" / "table_busy.txt").read_text().splitlines()
    lines[9] = "| N/A   50C    P0   garbled beyond reading |"
    p = write(tmp_path, "t.txt", lines)
    with pytest.warns(UserWarning, match="t.txt:10"):
        inc = pm.load_nvidia_smi(p)
    only_report(inc)
    # GPU 0 keeps what its first line said; its measurements are missing, not zero.
    assert pd.isna(inc.gpus.iloc[0]["memory_used_mib"]) and inc.gpus.iloc[1]["memory_used_mib"] == 4155


def test_table_pasted_into_training_log(fixtures_dir):
    """The table's GPUs are read; every log line around it is counted as outside the table."""
    path = fixtures_dir / "train-log" / "modded-nanogpt-8xh100-head-with-smi.log"
    inc = pm.load_nvidia_smi(path)
    rep = inc.load_report.files[0]
    assert list(inc.gpus["gpu"]) == list(range(8))
    assert inc.gpus.iloc[0]["memory_used_mib"] == 7746
    assert rep.skipped["line outside the nvidia-smi table"] > 0 and rep.balanced
