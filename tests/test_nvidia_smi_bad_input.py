"""Bad and odd nvidia-smi input: every line is parsed or counted with a reason, errors name file and
line, and N/A never becomes 0. Inputs are cut from the bundled H200 capture."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem import SourceFormatError

LOST = "Unable to determine the device handle for GPU 00000000:00:07.0: GPU is lost.  Reboot the system to recover this GPU"


@pytest.fixture(scope="module")
def stream(bundled_dir) -> list[str]:
    return (bundled_dir / "logs" / "smi_stream.csv").read_text().splitlines()


def write(tmp_path, name, lines) -> object:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def report(inc):
    (rep,) = inc.load_report.files
    assert rep.balanced, rep.summary()
    return rep


def test_garbage_is_a_source_format_error(tmp_path):
    p = write(tmp_path, "junk.bin", ["\x00\x01 total garbage {{{", "more"])
    with pytest.raises(SourceFormatError) as e:
        pm.load_nvidia_smi(p)
    assert e.value.line == 1 and "junk.bin:1" in str(e.value)


def test_truncated_last_line_is_counted(tmp_path, stream):
    cut = stream[:11] + [stream[11][:40]]
    p = write(tmp_path, "cut.csv", cut)
    with pytest.warns(UserWarning, match="cut.csv:12"):
        inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert len(inc.gpus) == 10 and rep.parsed == 10
    assert rep.examples["expected 9 comma-separated fields"] == [12]
    with pytest.raises(SourceFormatError) as e:
        pm.load_nvidia_smi(p, on_bad_line="raise")
    assert e.value.line == 12 and "truncated last line" in e.value.found


def test_gpu_lost_mid_stream_becomes_an_event(tmp_path, stream):
    p = write(tmp_path, "lost.csv", stream[:5] + [LOST, LOST] + stream[5:7])
    inc = pm.load_nvidia_smi(p, host="node17")
    rep = report(inc)
    assert len(inc.gpus) == 6 and rep.parsed == 8
    ev = inc.events
    assert list(ev["kind"]) == ["gpu_lost", "gpu_lost"]
    assert list(ev["ref"]) == ["lost.csv:6", "lost.csv:7"] or list(ev["ref"]) == [f"{p}:6", f"{p}:7"]
    assert ev.iloc[0]["time"] == pd.Timestamp("2026-11-30 05:20:21.720", tz="UTC")  # the sample before
    assert ev.iloc[0]["pci_bus_id"] == "00000000:00:07.0" and ev.iloc[0]["host"] == "node17"


def test_table_pasted_into_a_stream_is_counted_not_dropped(tmp_path, stream, bundled_dir):
    table = (bundled_dir / "snap" / "table_busy.txt").read_text().splitlines()
    p = write(tmp_path, "mixed.csv", stream[:3] + table[1:9] + stream[3:5])
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert len(inc.gpus) == 4
    assert rep.skipped["not a CSV line (an nvidia-smi table or other output pasted into the capture)"] == 8


def test_na_is_never_zero_and_bad_values_are_reported(tmp_path, stream):
    header = stream[0]
    row = stream[1].split(", ")
    na = row.copy()
    na[3] = "[N/A]"  # memory.used
    na[8] = "[Not Supported]"  # power.draw
    bad = row.copy()
    bad[5] = "lots"  # utilization.gpu
    p = write(tmp_path, "na.csv", [header, ", ".join(na), ", ".join(bad), stream[2]])
    with pytest.warns(UserWarning, match="na.csv:3"):
        inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert len(inc.gpus) == 2 and rep.skipped["expected values of the header's fields"] == 1
    first = inc.gpus.iloc[0]
    assert pd.isna(first["memory_used_mib"]) and pd.isna(first["power_w"])
    assert first["memory_total_mib"] == 143771


def test_unknown_fields_are_kept_and_reported(tmp_path):
    p = write(tmp_path, "unk.csv", [
        "timestamp, index, memory.used [MiB], clocks_event_reasons.hw_slowdown, some.new_field [W]",
        "2026/11/30 05:20:20.625, 0, 12 MiB, Not Active, 3.5 W",
    ])
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert any("clocks_event_reasons.hw_slowdown, some.new_field [W]" in n for n in rep.notes)
    assert inc.gpus.iloc[0]["smi_clocks_event_reasons_hw_slowdown"] == "Not Active"
    assert inc.gpus.iloc[0]["smi_some_new_field"] == "3.5 W"
    assert inc.gpus.iloc[0]["memory_used_mib"] == 12


def test_headerless_with_bad_field_list(tmp_path):
    p = write(tmp_path, "nohdr.csv", ["0, 12"])
    with pytest.raises(SourceFormatError, match="nvidia-smi query field names"):
        pm.load_nvidia_smi(p, fields=["index", "memory used!"])
    inc = pm.load_nvidia_smi(p, fields=["index", "memory.used"])
    assert inc.gpus.iloc[0]["memory_used_mib"] == 12
    assert any("field list taken from" in a for a in report(inc).assumptions)


def test_apps_stream_with_small_ints_is_not_guessed(tmp_path):
    """timestamp, uuid, 0, name, MiB could be --query-gpu=timestamp,uuid,index,name,memory.used."""
    p = write(tmp_path, "ambiguous.csv", [
        "2026/11/30 05:20:36.981, GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239, 0, NVIDIA H200, 1226 MiB",
    ])
    with pytest.raises(SourceFormatError):
        pm.load_nvidia_smi(p)


def test_dmon_truncated_and_midnight(tmp_path, bundled_dir):
    lines = (bundled_dir / "logs" / "dmon_um.txt").read_text().splitlines()
    late = [ln.replace(" 05:", " 23:", 1) for ln in lines[2:6]]
    early = [ln.replace(" 05:", " 00:", 1) for ln in lines[6:8]]
    p = write(tmp_path, "dmon.txt", lines[:2] + late + early + [lines[8][:20]])
    with pytest.warns(UserWarning, match="dmon.txt:9"):
        inc = pm.load_nvidia_smi(p, date=dt.date(2026, 11, 29))
    rep = report(inc)
    assert rep.parsed == 6
    assert inc.gpus.iloc[0]["time"] == pd.Timestamp("2026-11-29 23:20:20", tz="UTC")
    assert inc.gpus.iloc[-1]["time"] == pd.Timestamp("2026-11-30 00:20:22", tz="UTC")
    assert any("midnight" in a for a in rep.assumptions)


def test_truncated_xml_keeps_complete_gpus(tmp_path, bundled_dir):
    text = (bundled_dir / "snap" / "q_busy.xml").read_text()
    second = text.index('<gpu id="00000000:00:07.0">')
    p = tmp_path / "cut.xml"
    p.write_text(text[: second + 400])
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert list(inc.gpus["util_gpu_pct"]) == [66]
    assert rep.skipped["truncated XML after the last complete <gpu> element"] > 0
    q = tmp_path / "head.xml"
    q.write_text(text[:300])
    with pytest.raises(SourceFormatError, match="head.xml"):
        pm.load_nvidia_smi(q)


def test_garbage_inside_a_table(tmp_path, bundled_dir):
    lines = (bundled_dir / "snap" / "table_busy.txt").read_text().splitlines()
    lines[9] = "| N/A   50C    P0   garbled beyond reading |"
    p = write(tmp_path, "t.txt", lines)
    with pytest.warns(UserWarning, match="t.txt:10"):
        inc = pm.load_nvidia_smi(p)
    report(inc)
    # GPU 0 keeps what its first line said; its measurements are missing, not zero.
    assert pd.isna(inc.gpus.iloc[0]["memory_used_mib"]) and inc.gpus.iloc[1]["memory_used_mib"] == 4155


def test_impossible_timestamp_is_a_bad_line_not_a_shifted_time(tmp_path, stream):
    """Feb 30 has the fixed width of a good stamp: the fast path refuses it, the line path names it."""
    lines = list(stream)
    lines[5] = "2026/02/30" + lines[5][10:]
    p = write(tmp_path, "feb30.csv", lines)
    with pytest.warns(UserWarning, match="feb30.csv:6"):
        inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert rep.read == len(lines) and rep.parsed == len(lines) - 2 and len(inc.gpus) == len(lines) - 2
    assert inc.gpus["time"].notna().all()


def test_blank_line_at_the_end_is_counted(tmp_path, stream):
    p = write(tmp_path, "trailing.csv", [*stream, ""])
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert rep.read == len(stream) + 1 and rep.skipped.get("blank line") == 1
    assert len(inc.gpus) == len(stream) - 1
