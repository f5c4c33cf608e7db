"""nvidia-smi loaders on the bundled 2 x H200 capture: every smi file there, with real values."""

from __future__ import annotations

import datetime as dt
import math

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem import schema

GPU0 = "GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239"
GPU1 = "GPU-fe57adda-7632-14c9-a200-8dd58612daeb"
UTC = "UTC"


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text, tz=UTC)


@pytest.fixture(scope="module")
def incident(bundled_dir):
    return pm.load_incident(bundled_dir)


def rows(df: pd.DataFrame, source: str) -> pd.DataFrame:
    return df[df["source"] == source].reset_index(drop=True)


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


def test_query_stream(incident):
    df = rows(incident.gpus, "logs/smi_stream.csv")
    rep = incident.load_report["logs/smi_stream.csv"]
    assert (rep.read, rep.parsed, dict(rep.skipped)) == (581, 580, {"header line": 1})
    assert len(df) == 580
    first = df.iloc[0]
    assert first["time"] == ts("2026-11-30 05:20:20.701")
    assert (first["gpu"], first["uuid"]) == (0, GPU0)
    assert (first["memory_used_mib"], first["memory_total_mib"], first["power_w"], first["temp_c"]) == (0, 143771, 78.84, 32)
    last = df.iloc[-1]
    assert last["time"] == ts("2026-11-30 05:25:09.804")
    assert (last["gpu"], last["uuid"], last["memory_used_mib"], last["util_gpu_pct"], last["util_mem_pct"]) == (1, GPU1, 4155, 81, 52)
    assert last["power_w"] == pytest.approx(683.98)
    assert "no time zone in file, read as UTC" in rep.assumptions


def test_headerless_apps_stream_fields_inferred(incident):
    df = rows(incident.gpu_processes, "logs/smi_apps_stream.csv")
    rep = incident.load_report["logs/smi_apps_stream.csv"]
    assert (rep.read, rep.parsed) == (220, 220)
    assert any("fields inferred from content as timestamp, gpu_uuid, pid, process_name, used_gpu_memory" in a
               for a in rep.assumptions)
    first = df.iloc[0]
    assert first["time"] == ts("2026-11-30 05:20:36.981")
    assert (first["uuid"], first["pid"], first["process_name"], first["used_memory_mib"]) == (GPU0, 598, "python3", 1226)
    # The index comes from the query stream, which knows which UUID is GPU 0 and which is GPU 1.
    assert first["gpu"] == 0
    last = df.iloc[-1]
    assert (last["uuid"], last["gpu"], last["pid"], last["used_memory_mib"]) == (GPU1, 1, 1391, 4146)


def test_dmon_time_of_day_takes_date_from_incident(incident):
    df = rows(incident.gpus, "logs/dmon_um.txt")
    rep = incident.load_report["logs/dmon_um.txt"]
    assert rep.read == 604 and rep.skipped["repeated header line"] == 26 and rep.parsed == 576
    assert any("date 2026-11-30" in a for a in rep.assumptions)
    assert df.iloc[0]["time"] == ts("2026-11-30 05:20:20")
    last = df.iloc[-1]
    assert last["time"] == ts("2026-11-30 05:25:10")
    assert (last["gpu"], last["util_gpu_pct"], last["util_mem_pct"], last["memory_used_mib"], last["dmon_bar1"]) == (1, 81, 55, 4155, 4156)


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


def test_q_text_and_xml(incident):
    q = rows(incident.gpus, "snap/q_mem_util_idle.txt")
    assert q.iloc[0]["time"] == ts("2026-11-30 05:20:20")
    assert list(q["pci_bus_id"]) == ["00000000:00:06.0", "00000000:00:07.0"]
    assert q.iloc[0]["memory_reserved_mib"] == 616 and q.iloc[0]["memory_total_mib"] == 143771
    assert q.iloc[0]["power_w"] == pytest.approx(78.83)
    assert q.iloc[0]["power_instant_w"] == pytest.approx(78.70)
    x = rows(incident.gpus, "snap/q_busy.xml")
    assert list(x["uuid"]) == [GPU0, GPU1]
    assert list(x["util_gpu_pct"]) == [66, 99] and list(x["memory_used_mib"]) == [4439, 4155]
    assert list(x["power_w"]) == [456.74, 689.27] and list(x["sm_clock_mhz"]) == [1980, 1860]
    assert list(x["temp_c"]) == [46, 59]
    xp = rows(incident.gpu_processes, "snap/q_busy.xml")
    assert list(xp["used_memory_mib"]) == [4430, 4146] and list(xp["uuid"]) == [GPU0, GPU1]


def test_pmon_query_with_na_and_apps_snapshot(incident):
    pmon = rows(incident.gpu_processes, "snap/pmon_um.txt")
    assert list(pmon["gpu"]) == [0, 1, 0, 1]
    assert list(pmon["used_memory_mib"]) == [4430, 4146, 4430, 4146]
    assert list(pmon["sm_pct"]) == [63, 92, 62, 91]
    assert pmon["enc_pct"].isna().all()  # '-' is missing, not 0
    na = rows(incident.gpus, "snap/query_with_na.csv")
    assert na["fan_pct"].isna().all()
    assert list(na["memory_total_mib"]) == [143771, 143771]
    assert list(na["ecc_uncorrected_volatile"]) == [0, 0]
    apps = rows(incident.gpu_processes, "snap/apps_busy.csv")
    assert list(apps["used_memory_mib"]) == [4430, 4146] and apps["time"].isna().all()


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


def test_fast_and_line_paths_agree(bundled_dir, tmp_path):
    """The pyarrow path and the line path give identical frames; a blank line forces nothing."""
    src = (bundled_dir / "logs" / "smi_stream.csv").read_text()
    fast = pm.load_nvidia_smi(bundled_dir / "logs" / "smi_stream.csv").gpus
    odd = tmp_path / "odd.csv"
    lines = src.splitlines()
    odd.write_text("\n".join(lines[:3] + ["this is not a sample"] + lines[3:]) + "\n")
    with pytest.warns(UserWarning, match="odd.csv:4"):
        slow_inc = pm.load_nvidia_smi(odd)
    slow = slow_inc.gpus
    pd.testing.assert_frame_equal(fast.drop(columns=["source", "line"]), slow.drop(columns=["source", "line"]))
    # each row keeps its own line: after the inserted line 4, the line path's numbers are one on
    assert fast["line"].tolist()[:3] == [2, 3, 4] and slow["line"].tolist()[:3] == [2, 3, 5]
    assert (slow["line"].iloc[2:].to_numpy() == fast["line"].iloc[2:].to_numpy() + 1).all()
    rep = slow_inc.load_report.files[0]
    assert rep.read == 582 and rep.parsed == 580 and rep.n_skipped == 2


def test_missing_is_nan_never_zero(bundled_dir):
    inc = pm.load_nvidia_smi(bundled_dir / "snap" / "query_with_na.csv")
    assert all(math.isnan(v) for v in inc.gpus["fan_pct"])
    assert (inc.gpus["util_gpu_pct"] == 0).all()  # the source said 0 here, and 0 it stays


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
