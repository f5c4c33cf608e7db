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


def test_list_pasted_above_the_table_gives_the_table_its_uuids(fixtures_dir):
    """`nvidia-smi -L; nvidia-smi` in one paste is read as the table (the measurement), and the
    list's lines name each index's GPU instead of being skipped."""
    inc = pm.load_nvidia_smi(fixtures_dir / "smi-table/quadro-rtx4000x2-535.129.03-L-then-table-root-prompt-cut.txt")
    rep = only_report(inc)
    assert rep.format == "nvidia-smi-table" and "line outside the nvidia-smi table" not in rep.skipped
    assert list(inc.gpus["uuid"]) == ["GPU-c7b57be0-94ff-d352-a59b-d0ee00aeed43", "GPU-d6de6afc-bdfe-75c4-5273-0544439153fc"]
    assert list(inc.gpus["power_w"]) == [10, 1]


def test_list_lines_without_uuid_do_not_name_gpus(tmp_path, bundled_dir):
    lines = ["GPU 0: NVIDIA H200 (S/N: 1234)", *(bundled_dir / "snap" / "table_busy.txt").read_text().splitlines()]
    inc = pm.load_nvidia_smi(write(tmp_path, "t.txt", lines))
    assert only_report(inc).skipped["line outside the nvidia-smi table"] == 1
    assert inc.gpus["uuid"].isna().all()


def test_processes_heading_cut_mid_word_is_a_heading(fixtures_dir):
    rel = "smi-table/rtx-a6000-515.48.07-ctr-run-wrapped-command-processes-heading-cut.txt"
    rep = only_report(pm.load_nvidia_smi(fixtures_dir / rel, on_bad_line="raise"))
    assert rep.skipped["table heading"] == 5


def test_cuda_version_na_is_missing(fixtures_dir):
    rel = "smi-table/quadro-p400-vgpu-unlock-460.32.04-glued-prompt-timestamp-vgpu-s-list-cut.txt"
    inc = pm.load_nvidia_smi(fixtures_dir / rel)
    assert pd.isna(inc.gpus.iloc[0]["cuda_version"]) and inc.gpus.iloc[0]["driver_version"] == "460.32.04"
