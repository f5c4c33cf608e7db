"""Prometheus metrics saved as files: real DCGM exporter scrapes as people pasted them, node
exporter's page, promtool's OpenMetrics and tsdb dumps (tests/fixtures/real-world/prometheus/),
and the damage files carry: cut-off dumps, broken sample lines, exporters' sentinels."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from support.captures import only_report, ts, write

import dflash_postmortem as pm
from dflash_postmortem.errors import SourceFormatError
from dflash_postmortem.loaders import registry
from dflash_postmortem.loaders.prometheus import exposition_files as files

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real-world" / "prometheus"


def load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(path, **kw)


def test_a_t4_scrape_without_help_lines_is_one_gpu_row():
    inc = load(REAL / "dcgm-t4-no-help-type.md")
    rep = only_report(inc)
    assert rep.format == files.TEXT and rep.parsed == 20
    (g,) = inc.gpus.to_dict("records")
    assert (g["host"], g["gpu"], g["uuid"], g["name"]) == ("t4-node01", 0, "GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469a", "Tesla T4")
    assert (g["util_gpu_pct"], g["util_mem_pct"], g["power_w"], g["temp_c"], g["sm_clock_mhz"]) == (91, 73, 68.244, 74, 660)
    # FB_USED 5120 + FB_FREE 9791 + FB_RESERVED 447: the T4's 15 GiB less what the driver hides.
    assert (g["memory_used_mib"], g["memory_total_mib"]) == (5120, 15358)
    assert pd.isna(g["time"]) and "samples carry no timestamp" in rep.assumptions[0]


def test_a_kubectl_logs_paste_with_a_fence_and_a_prompt():
    inc = load(REAL / "dcgm-l40s-kubectl-logs.md")
    rep = only_report(inc)
    assert rep.skipped["text that is not a metric line (a prompt, a Markdown fence, prose)"] == 3
    (g,) = inc.gpus.to_dict("records")
    assert (g["host"], g["memory_used_mib"], g["memory_total_mib"], g["power_w"]) == ("gpuhost-01", 0, 45459 + 608, 35.686)
    assert g["dcgm_dev_total_energy_consumption"] == 5551899580  # a counter beyond 2**31 is no sentinel


def test_the_readme_scrape_with_elisions_and_a_dcgm_blank_value():
    inc = load(REAL / "dcgm-exporter-readme-elided.txt")
    rep = only_report(inc)
    assert (rep.parsed, rep.n_skipped) == (3, 10)
    (g,) = inc.gpus.to_dict("records")
    # MEMORY_TEMP 9223372036854775794 is DCGM's "blank": missing, never a temperature.
    assert (g["sm_clock_mhz"], g["mem_clock_mhz"]) == (139, 405) and pd.isna(g["temp_mem_c"])
    assert pd.isna(g["host"])


def test_node_exporter_metrics_are_metrics_rows():
    inc = load(REAL / "node-exporter-e2e-families.prom")
    m = inc.metrics.set_index("metric")["value"]
    assert m["node_load1"] == 0.21 and m["node_boot_time_seconds"] == 1418183276 and m["node_procs_running"] == 2
    assert inc.gpus.empty


def test_promtool_openmetrics_dump_times_are_seconds():
    inc = load(REAL / "promtool-dump-openmetrics-roundtrip.om")
    rep = only_report(inc)
    assert rep.skipped["OpenMetrics end marker (# EOF)"] == 1
    up = inc.metrics[inc.metrics["metric"] == "up"].sort_values("time")
    assert up["time"].iloc[0] == ts("2023-11-17T08:44:41.366") and set(up["run"]) == {"localhost"}
    bucket = inc.metrics[inc.metrics["metric"] == 'my_histogram_bucket{le="+Inf"}'].sort_values("time")
    assert list(bucket["value"]) == [1.0267820369e10, 1.026872507e10]


def test_promtool_tsdb_dump_times_are_milliseconds():
    inc = load(REAL / "promtool-tsdb-dump-test-2.txt")
    assert only_report(inc).format == files.DUMP
    heavy = inc.metrics[inc.metrics["metric"] == 'heavy_metric{foo="foo"}']
    assert list(heavy["value"]) == [5, 4, 3, 2, 1]
    assert heavy["time"].iloc[-1] == ts("1970-01-01T00:04:00")


DCGM = 'DCGM_FI_DEV_{field}{{gpu="{gpu}",UUID="GPU-{gpu}",Hostname="node17",err_code="{code}"}} {value} {t}'


def _scrape(t_ms: int, util: int, xid: int) -> list[str]:
    return [DCGM.format(field="GPU_UTIL", gpu=g, code=0, value=util + g, t=t_ms) for g in (0, 1)] + [
        DCGM.format(field="XID_ERRORS", gpu=1, code=xid, value=xid, t=t_ms)]


def test_a_timestamped_exposition_file_in_milliseconds_with_an_xid(tmp_path):
    t0 = 1764550800000
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for i, xid in enumerate([0, 79, 79, 0, 48]):
        lines += _scrape(t0 + 15000 * i, 10 * i, xid)
    inc = load(write(tmp_path, "scrapes.txt", lines))
    assert len(inc.gpus) == 2 * 5 and inc.gpus["time"].max() == ts("2025-12-01T01:01:00")
    ev = inc.events
    # 79 appears (line 7), stays (one event), the gauge is reset, then 48 (line 16).
    assert list(ev["xid"]) == [79, 48] and list(ev["ref"]) == ["scrapes.txt:7", "scrapes.txt:16"]
    assert list(ev["time"]) == [ts("2025-12-01T01:00:15"), ts("2025-12-01T01:01:00")]
    assert ev["message"].iloc[0] == "Xid 79 on GPU 1 (GPU-1) (DCGM_FI_DEV_XID_ERRORS)"
    assert set(ev["kind"]) == {"gpu_error"} and set(ev["host"]) == {"node17"}


def test_a_cut_off_openmetrics_dump_keeps_what_was_read(tmp_path):
    lines = [f'node_load1{{instance="node17:9100"}} {i / 10} {1764550800 + 15 * i}.000' for i in range(4)]
    p = tmp_path / "dump.om"
    p.write_text("\n".join(lines) + '\nnode_load1{instance="nod')
    inc = load(p)
    rep = only_report(inc)
    assert len(inc.metrics) == 4 and list(inc.metrics["run"].unique()) == ["node17"]
    (reason,) = [r for r in rep.skipped if r.startswith("expected a sample line")]
    assert rep.skipped[reason] == 1 and rep.examples[reason] == [5]
    assert any("no '# EOF'" in n for n in rep.notes) and any("mid-line" in n for n in rep.notes)


def test_a_broken_sample_line_is_a_bad_line_under_every_policy(tmp_path):
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge", DCGM.format(field="GPU_UTIL", gpu=0, code=0, value=5, t=1),
             'DCGM_FI_DEV_GPU_UTIL{gpu="1" UUID="GPU-1"} 7', DCGM.format(field="GPU_UTIL", gpu=1, code=0, value=6, t=1)]
    p = write(tmp_path, "m.prom", lines)
    inc = load(p)
    assert len(inc.gpus) == 2 and only_report(inc).n_skipped == 2
    with pytest.raises(SourceFormatError, match=r"m.prom:3: prometheus-text: expected a sample line"):
        pm.load_incident(p, on_bad_line="raise")


def test_mig_slices_are_rows_of_their_own(tmp_path):
    lines = [f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="GPU-a",GPU_I_PROFILE="2g.20gb",GPU_I_ID="{i}",Hostname="n"}} {100 * i}'
             for i in (3, 4)]
    inc = load(write(tmp_path, "mig.prom", ["# TYPE DCGM_FI_DEV_FB_USED gauge", *lines]))
    g = inc.gpus
    assert list(g["gpu_instance_id"]) == [3, 4] and list(g["memory_used_mib"]) == [300, 400]
    assert set(g["mig_profile"]) == {"2g.20gb"} and set(g["gpu"]) == {0}


def test_sniffed_by_content_inside_an_incident_folder(tmp_path):
    (tmp_path / "out.txt").write_bytes((REAL / "dcgm-t4-no-help-type.md").read_bytes())
    (tmp_path / "notes.txt").write_text("loss 1.5\nstep 3\nnothing to see\n")
    inc = load(tmp_path)
    assert inc.load_report["out.txt"].format == files.TEXT
    assert inc.load_report["notes.txt"].format != files.TEXT
    assert len(inc.gpus) == 1


@pytest.mark.parametrize("head", [b"", b"loss 1.5\nlr 0.001\n", b"key value\n" * 10, b"# just a comment\n"])
def test_text_that_is_not_metrics_is_not_claimed(head):
    assert files.sniff_text(Path("x"), head) == 0.0 and files.sniff_dump(Path("x"), head) == 0.0
    assert registry.FORMATS[files.TEXT].sniff is files.sniff_text


def test_clock_event_reasons_from_the_bitmask_field_or_the_exporters_counts(tmp_path):
    """Why a GPU's clocks are held down, as nvidia-smi writes it: DCGM's bitmask field (either of
    its names) where it was scraped; else the reasons the exporter counted in its window, their
    bits together (a reason counted 0 times, or one the kit has no bit for, adds nothing)."""
    gpu = 'gpu="{g}",UUID="GPU-{g}",Hostname="n1"'
    lines = [
        # 10:00:00: GPU 0's mask (power cap) and its counts (hw_thermal): the mask is what holds now
        f'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{{{gpu.format(g=0)}}} 4 1764842400000',
        f'DCGM_EXP_CLOCK_EVENTS_COUNT{{{gpu.format(g=0)},clock_event="hw_thermal",window_size_in_ms="300000"}} 3 1764842400000',
        # GPU 1, counts only: sw_thermal 2, power_cap 0, one the kit does not know
        f'DCGM_EXP_CLOCK_EVENTS_COUNT{{{gpu.format(g=1)},clock_event="sw_thermal",window_size_in_ms="300000"}} 2 1764842400000',
        f'DCGM_EXP_CLOCK_EVENTS_COUNT{{{gpu.format(g=1)},clock_event="power_cap",window_size_in_ms="300000"}} 0 1764842400000',
        f'DCGM_EXP_CLOCK_EVENTS_COUNT{{{gpu.format(g=1)},clock_event="new_reason",window_size_in_ms="300000"}} 5 1764842400000',
        f'DCGM_FI_DEV_SM_CLOCK{{{gpu.format(g=1)}}} 1050 1764842400000',
        # GPU 2 by the field's name before DCGM 3.3, nothing held down
        f'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{{gpu.format(g=2)}}} 0 1764842400000',
    ]
    (tmp_path / "scrape.prom").write_text("\n".join(lines) + "\n")
    g = load(tmp_path / "scrape.prom").gpus.set_index("gpu")
    assert g["clocks_event_reasons"].to_dict() == {0: "0x0000000000000004", 1: "0x0000000000000020",
                                                   2: "0x0000000000000000"}
    assert str(g["clocks_event_reasons"].dtype) == "string" and g.loc[1, "sm_clock_mhz"] == 1050
    assert g["time"].iloc[0] == pd.Timestamp("2025-12-04 10:00:00", tz="UTC")
