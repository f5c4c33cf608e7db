"""Series -> frames: one gpus row per GPU and time with a column per DCGM field, the memory total,
DCGM's "no value" sentinels, the Xid events, and the metrics rows of everything else."""

from __future__ import annotations

import math

from dflash_postmortem.loaders.prometheus.dcgm_fields import host_of
from dflash_postmortem.loaders.prometheus.series_frames import Series, build, metric_key

GPU = {"gpu": "3", "UUID": "GPU-c", "Hostname": "node18"}


def test_fields_of_one_gpu_and_time_are_one_row():
    series = [Series("DCGM_FI_DEV_GPU_UTIL", GPU, [60.0, 75.0], [97.0, 12.0]),
              Series("DCGM_FI_DEV_FB_TOTAL", GPU, [60.0, 75.0], [81559.0, 81559.0]),
              Series("DCGM_FI_DEV_FB_USED", GPU, [60.0, 75.0], [1000.0, 2000.0]),
              Series("DCGM_FI_DEV_FB_FREE", GPU, [60.0, 75.0], [9.0, 9.0])]
    g = build(series, "s")["gpus"]
    assert list(g["util_gpu_pct"]) == [97.0, 12.0] and list(g["gpu"]) == [3, 3]
    # A total the exporter reports wins over used + free.
    assert list(g["memory_total_mib"]) == [81559.0, 81559.0]


def test_dcgm_blank_sentinels_are_missing_but_large_counters_are_kept():
    series = [Series("DCGM_FI_DEV_GPU_TEMP", GPU, [1.0], [2147483632.0]),
              Series("DCGM_FI_DEV_POWER_USAGE", GPU, [1.0], [140737488355328.0]),
              Series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", GPU, [1.0], [2147483640.0])]
    (row,) = build(series, "s")["gpus"].to_dict("records")
    assert math.isnan(row["temp_c"]) and math.isnan(row["power_w"])
    assert row["dcgm_dev_total_energy_consumption"] == 2147483640.0


def test_a_new_xid_code_is_an_event_and_a_repeated_one_is_not():
    xid = Series("DCGM_FI_DEV_XID_ERRORS", {**GPU, "err_msg": "GPU has fallen off the bus"},
                 [0.0, 15.0, 30.0, 45.0], [0.0, 79.0, 79.0, 13.0], [4, 9, 14, 19])
    ev = build([xid], "dump.txt")["events"]
    assert list(ev["xid"]) == [79, 13] and list(ev["ref"]) == ["dump.txt:9", "dump.txt:19"]
    assert ev["message"].iloc[0] == "Xid 79 on GPU 3 (GPU-c): GPU has fallen off the bus (DCGM_FI_DEV_XID_ERRORS)"


def test_other_series_are_metrics_of_their_host():
    s = Series("node_network_receive_bytes_total", {"device": "eth0", "instance": "node18:9100", "job": "node"},
               [1.0], [5.0])
    (row,) = build([s], "s")["metrics"].to_dict("records")
    assert (row["run"], row["metric"], row["value"]) == ("node18", 'node_network_receive_bytes_total{device="eth0"}', 5.0)
    assert metric_key("up", {"job": "node"}) == "up"


def test_hosts_from_labels():
    assert host_of({"Hostname": "a", "instance": "b:1"}) == "a"
    assert host_of({"instance": "node17:9400"}) == "node17"
    assert host_of({"instance": "[fe80::1]:9100"}) == "fe80::1"
    assert host_of({"job": "x"}) is None
