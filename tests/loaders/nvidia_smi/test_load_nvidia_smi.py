"""load_nvidia_smi and the family's forms: every nvidia-smi file of the bundled 2 x H200 capture and of
the corpus sniffed by content, accounted for line by line, and citing its lines."""

from __future__ import annotations

import datetime as dt
import warnings

import pandas as pd
import pytest
from support.captures import ts, write

import dflash_postmortem as pm
from dflash_postmortem import SourceFormatError, schema


def test_every_smi_file_is_loaded_and_accounted(incident):
    formats = {f.path: f.format for f in incident.load_report.files}
    assert formats["logs/smi_stream.csv"] == "nvidia-smi-query-csv"
    assert formats["logs/smi_apps_stream.csv"] == "nvidia-smi-query-csv"
    assert formats["logs/dmon_um.txt"] == "nvidia-smi-dmon"
    assert formats["snap/table_idle.txt"] == "nvidia-smi-table"
    assert formats["snap/table_busy.txt"] == "nvidia-smi-table"
    assert formats["snap/q_mem_util_idle.txt"] == "nvidia-smi-q"
    assert formats["snap/q_busy.xml"] == "nvidia-smi-xml"
    assert formats["snap/pmon_um.txt"] == "nvidia-smi-pmon"
    assert formats["snap/query_with_na.csv"] == "nvidia-smi-query-csv"
    assert formats["snap/apps_busy.csv"] == "nvidia-smi-query-csv"
    empty = incident.load_report["snap/apps_idle_noheader.csv"]
    assert empty.read == 0 and "empty file" in empty.notes
    for f in incident.load_report.files:
        if f.format and f.format.startswith("nvidia-smi"):
            assert f.balanced, f.summary()
            assert f.error is None, f.error
    schema.validate("gpus", incident.gpus)
    schema.validate("gpu_processes", incident.gpu_processes)


def test_load_nvidia_smi_direct(bundled_dir):
    inc = pm.load_nvidia_smi(bundled_dir / "logs" / "smi_stream.csv", host="h200-box", timezone="Europe/Berlin")
    assert (inc.gpus["host"] == "h200-box").all()
    # Read as Berlin wall-clock time (UTC+1 in November).
    assert inc.gpus.iloc[0]["time"] == ts("2026-11-30 04:20:20.701")
    empty = pm.load_nvidia_smi(bundled_dir / "snap" / "apps_idle_noheader.csv")
    assert empty.gpu_processes.empty and empty.load_report.files[0].read == 0
    dmon = pm.load_nvidia_smi(bundled_dir / "logs" / "dmon_um.txt")
    assert len(dmon.gpus) == 576 and dmon.gpus["time"].isna().all()
    dated = pm.load_nvidia_smi(bundled_dir / "logs" / "dmon_um.txt", date=dt.date(2026, 11, 30))
    assert dated.gpus.iloc[-1]["time"] == ts("2026-11-30 05:25:10")
    assert any("no date known" in a for a in dmon.load_report.files[0].assumptions)


def test_every_gpu_sample_cites_its_line(incident, bundled_dir, line_at):
    """Query CSV, dmon, pmon and table rows carry the line they came from, for findings to cite."""
    from dflash_postmortem.detect.findings import refs

    checked = set()
    for frame in (incident.gpus, incident.gpu_processes):
        for source, rows in frame.groupby("source"):
            source = str(source)
            if not source.endswith((".csv", "_um.txt", "table_busy.txt", "table_idle.txt")):
                continue
            assert rows["line"].notna().all(), source
            ends = rows.iloc[[0, -1]]
            for ref, (_, row) in zip(refs(ends), ends.iterrows(), strict=True):
                text, gpu = line_at(bundled_dir, ref), str(int(row["gpu"])) if pd.notna(row["gpu"]) else None
                if pd.notna(row.get("pid")):
                    assert str(int(row['pid'])) in text.replace(',', ' ').split(), (ref, text)  # pmon, apps CSV, table
                elif source.endswith(".csv"):
                    assert text.split(", ")[1] == gpu, (ref, text)  # timestamp, index, ...
                elif source.endswith("dmon_um.txt"):
                    assert text.split()[1] == gpu, (ref, text)  # time, gpu, ...
                else:
                    assert text.split()[:2] == ["|", gpu] and "NVIDIA H200" in text, (ref, text)
                checked.add(source)
    assert {"logs/smi_stream.csv", "logs/smi_apps_stream.csv", "logs/dmon_um.txt", "snap/pmon_um.txt",
            "snap/table_busy.txt"} <= checked


def test_garbage_is_a_source_format_error(tmp_path):
    p = write(tmp_path, "junk.bin", ["\x00\x01 total garbage {{{", "more"])
    with pytest.raises(SourceFormatError) as e:
        pm.load_nvidia_smi(p)
    assert e.value.line == 1 and "junk.bin:1" in str(e.value)


def test_clean_captures_raise_no_warning(fixtures_dir):
    """Values nvidia-smi prints instead of numbers are states, not bad lines: no warning."""
    for rel in ["smi-csv/h100-mig-590-query-gpu-allfields.csv", "smi-q/h100-mig-590-idle-q.txt",
                "smi-xml/telegraf-grid-p4-1q-vgpu-windows-513.xml", "smi-table/rtx2080super-windows-wddm-591.86.txt",
                "smi-dmon/rtx4080super-595-pmon-load-cg-types.txt"]:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            inc = pm.load_nvidia_smi(fixtures_dir / rel)
        for frame in ("gpus", "gpu_processes"):
            schema.validate(frame, getattr(inc, frame))


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


@pytest.mark.parametrize("sample", ["h100-mig-590-query-gpu-allfields.csv", "rtx2080super-465.27-allfields.csv",
                                    "rtx2080super-610.57.04-r610-allfields-load.csv",
                                    "rtx2080super-windows-471.11-wddm-allfields.csv"])
def test_the_clocks_event_reasons_bitmask_names_what_the_captures_own_reason_fields_mark_active(sample, fixtures_dir):
    """Real `--query-gpu=...` captures of every field print the bitmask (`clocks_event_reasons.active`,
    `clocks_throttle_reasons.active` before R535) beside one Active / Not Active field per reason:
    the column keeps the bitmask, and its bits are the names of the fields marked Active."""
    from dflash_postmortem.detect.clock_reasons import REASONS, reason_names

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = pm.load_incident(fixtures_dir / "smi-csv" / sample).gpus
    assert "clocks_event_reasons" in g.columns
    for _, row in g.iterrows():
        active = {c.split("_reasons_", 1)[1] for c in g.columns
                  if c.startswith(("smi_clocks_event_reasons_", "smi_clocks_throttle_reasons_"))
                  and c.split("_reasons_", 1)[1] in REASONS.values() and row[c] == "Active"}
        assert set(reason_names(int(row["clocks_event_reasons"], 16))) == active
