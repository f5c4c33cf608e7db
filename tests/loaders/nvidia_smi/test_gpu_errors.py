"""What nvidia-smi prints when a GPU cannot be read: error lines inside a stream become events,
values it prints instead of numbers are missing and named, one event per episode, N/A is no error."""

from __future__ import annotations

import pandas as pd
from support.captures import only_report, write

import dflash_postmortem as pm

LOST = "Unable to determine the device handle for GPU 00000000:00:07.0: GPU is lost.  Reboot the system to recover this GPU"


def test_gpu_lost_mid_stream_becomes_an_event(tmp_path, stream):
    p = write(tmp_path, "lost.csv", stream[:5] + [LOST, LOST] + stream[5:7])
    inc = pm.load_nvidia_smi(p, host="node17")
    rep = only_report(inc)
    assert len(inc.gpus) == 6 and rep.parsed == 8
    ev = inc.events
    assert list(ev["kind"]) == ["gpu_lost", "gpu_lost"]
    assert list(ev["ref"]) == ["lost.csv:6", "lost.csv:7"] or list(ev["ref"]) == [f"{p}:6", f"{p}:7"]
    assert ev.iloc[0]["time"] == pd.Timestamp("2026-11-30 05:20:21.720", tz="UTC")  # the sample before
    assert ev.iloc[0]["pci_bus_id"] == "00000000:00:07.0" and ev.iloc[0]["host"] == "node17"


def test_gpu_that_stops_answering_is_one_event_per_episode(tmp_path, stream):
    """ERR!/Unknown Error/GPU is lost in a stream: values missing and named, rows kept, and an
    event each time GPU 0 enters an error state (not one per sample)."""
    lines = list(stream[:13])
    for k in (3, 5, 7):  # GPU 0's samples at lines 4, 6, 8
        lines[k] = lines[k].rsplit(", ", 1)[0] + ", [Unknown Error]"
    for k in (11,):
        cells = lines[k].split(", ")
        cells[3:] = ["[GPU is lost]"] * (len(cells) - 3)
        lines[k] = ", ".join(cells)
    inc = pm.load_nvidia_smi(write(tmp_path, "errors.csv", lines), host="node7")
    rep = only_report(inc)
    assert len(inc.gpus) == 12 and rep.parsed == 12
    sick = inc.gpus[inc.gpus["line"] == 4].iloc[0]
    assert pd.isna(sick["power_w"]) and sick["temp_c"] == 32 and sick["state"] == "power_w=[Unknown Error]"
    ev = inc.events.sort_values("ref").reset_index(drop=True)
    assert list(ev["kind"]) == ["gpu_lost", "gpu_error"]
    lost, err = ev.iloc[0], ev.iloc[1]
    assert err["ref"].endswith("errors.csv:4") and err["gpu"] == 0 and err["host"] == "node7"
    assert err["time"] == inc.gpus[inc.gpus["line"] == 4]["time"].iloc[0]
    assert "power_w=[Unknown Error]" in err["message"]
    assert lost["ref"].endswith("errors.csv:12") and "memory_used_mib=[GPU is lost]" in lost["message"]


def test_ordinary_na_is_a_state_but_not_an_event(bundled_dir):
    inc = pm.load_nvidia_smi(bundled_dir / "snap" / "query_with_na.csv")
    assert (inc.gpus["state"] == "fan_pct=[N/A]").all() and inc.events.empty


def test_a_stream_of_plain_numbers_has_no_state_column(bundled_dir):
    assert "state" not in pm.load_nvidia_smi(bundled_dir / "logs" / "smi_stream.csv").gpus.columns
