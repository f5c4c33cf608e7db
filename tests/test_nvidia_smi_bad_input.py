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


def test_stream_cut_mid_line_keeps_what_was_written(tmp_path, stream):
    cut = stream[:11] + [stream[11][:40]]  # "2026/11/30 05:20:25.721, 0, GPU-a5691722"
    p = write(tmp_path, "cut.csv", cut)
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert len(inc.gpus) == 11 and rep.parsed == 11 and rep.n_skipped == 1
    last = inc.gpus.iloc[-1]
    assert last["time"] == pd.Timestamp("2026-11-30 05:20:25.721", tz="UTC") and last["gpu"] == 0
    # The UUID was cut mid-write: not a UUID, so missing, and state says what was there.
    assert pd.isna(last["uuid"]) and last["state"] == "uuid=GPU-a5691722 (cut off)"
    assert pd.isna(last["memory_used_mib"]) and last["line"] == 12
    assert any("cut off mid-write" in a for a in rep.assumptions)
    # A line that is short anywhere but at the end is a bad line, named by file and line.
    mid = write(tmp_path, "mid.csv", cut[:5] + [cut[11]] + cut[5:11])
    with pytest.raises(SourceFormatError) as e:
        pm.load_nvidia_smi(mid, on_bad_line="raise")
    assert e.value.line == 6 and "mid.csv:6" in str(e.value)


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


def test_table_pasted_into_a_stream_is_read_as_a_table(tmp_path, stream, bundled_dir):
    table = (bundled_dir / "snap" / "table_busy.txt").read_text().splitlines()
    p = write(tmp_path, "mixed.csv", stream[:3] + table[1:9] + stream[3:5])
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert rep.read == 13 and rep.parsed == 6 and rep.skipped["table border"] == 3
    samples = inc.gpus[inc.gpus["time"].notna()]
    assert len(samples) == 4 and list(samples["line"]) == [2, 3, 12, 13]
    # The table fragment (its header and GPU 0's first line) keeps what it says about GPU 0.
    pasted = inc.gpus[inc.gpus["line"] == 11].iloc[0]
    assert (pasted["gpu"], pasted["name"], pasted["pci_bus_id"]) == (0, "NVIDIA H200", "00000000:00:06.0")
    assert pasted["driver_version"] == "580.159.04" and pd.isna(pasted["memory_used_mib"])


def test_na_is_never_zero_and_a_bad_value_keeps_its_row(tmp_path, stream):
    header = stream[0]
    row = stream[1].split(", ")
    na = row.copy()
    na[3] = "[N/A]"  # memory.used
    na[8] = "[Not Supported]"  # power.draw
    bad = row.copy()
    bad[5] = "lots"  # utilization.gpu
    p = write(tmp_path, "na.csv", [header, ", ".join(na), ", ".join(bad), stream[2]])
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert len(inc.gpus) == 3 and rep.parsed == 3 and rep.n_skipped == 1
    first, second, third = (inc.gpus.iloc[k] for k in range(3))
    assert pd.isna(first["memory_used_mib"]) and pd.isna(first["power_w"])
    assert first["memory_total_mib"] == 143771
    assert first["state"] == "memory_used_mib=[N/A]; power_w=[Not Supported]"
    # One field that is not a number is missing, named in state; the rest of the row stays.
    assert pd.isna(second["util_gpu_pct"]) and second["state"] == "util_gpu_pct=lots"
    assert second["memory_total_mib"] == 143771 and second["time"] == pd.Timestamp("2026-11-30 05:20:20.701", tz="UTC")
    assert pd.isna(third["state"]) and inc.events.empty  # N/A is not a GPU error


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
    p = write(tmp_path, "dmon.txt", lines[:2] + late + early + [lines[8][:20]])  # " 05:20:23       0   "
    inc = pm.load_nvidia_smi(p, date=dt.date(2026, 11, 29))
    rep = report(inc)
    assert rep.parsed == 7
    cut = inc.gpus.iloc[-1]  # the killed capture's last line keeps its time and GPU
    assert (cut["gpu"], cut["line"]) == (0, 9) and pd.isna(cut["util_gpu_pct"])
    assert inc.gpus.iloc[0]["time"] == pd.Timestamp("2026-11-29 23:20:20", tz="UTC")
    assert inc.gpus.iloc[-2]["time"] == pd.Timestamp("2026-11-30 00:20:22", tz="UTC")
    assert any("midnight" in a for a in rep.assumptions)


def test_truncated_xml_keeps_what_was_written(tmp_path, bundled_dir):
    text = (bundled_dir / "snap" / "q_busy.xml").read_text()
    second = text.index('<gpu id="00000000:00:07.0">')
    p = tmp_path / "cut.xml"
    p.write_text(text[: second + 400])
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    # The second GPU was cut after its first fields: it keeps them, the rest is missing.
    assert inc.gpus["util_gpu_pct"].iloc[0] == 66 and pd.isna(inc.gpus["util_gpu_pct"].iloc[1])
    assert list(inc.gpus["pci_bus_id"]) == ["00000000:00:06.0", "00000000:00:07.0"]
    assert rep.skipped["XML cut off mid-write (the elements before the cut are kept)"] > 0
    # Cut inside the first GPU's name: the GPU and its bus id are still evidence.
    q = tmp_path / "head.xml"
    q.write_text(text[:300])
    head = pm.load_nvidia_smi(q).gpus
    assert list(head["pci_bus_id"]) == ["00000000:00:06.0"] and pd.isna(head["memory_used_mib"].iloc[0])
    # Cut before any GPU: nothing to keep, and the error says where and what was expected.
    r = tmp_path / "nogpu.xml"
    r.write_text(text[: text.index("<gpu ")])
    with pytest.raises(SourceFormatError, match="nogpu.xml:8: .*<gpu>"):
        pm.load_nvidia_smi(r)


def test_garbage_inside_a_table(tmp_path, bundled_dir):
    lines = (bundled_dir / "snap" / "table_busy.txt").read_text().splitlines()
    lines[9] = "| N/A   50C    P0   garbled beyond reading |"
    p = write(tmp_path, "t.txt", lines)
    with pytest.warns(UserWarning, match="t.txt:10"):
        inc = pm.load_nvidia_smi(p)
    report(inc)
    # GPU 0 keeps what its first line said; its measurements are missing, not zero.
    assert pd.isna(inc.gpus.iloc[0]["memory_used_mib"]) and inc.gpus.iloc[1]["memory_used_mib"] == 4155


def test_impossible_timestamp_is_missing_not_a_shifted_time(tmp_path, stream):
    """Feb 30 has the fixed width of a good stamp: the fast path refuses it, the line path keeps
    the sample's values and leaves its time missing, named in state."""
    lines = list(stream)
    lines[5] = "2026/02/30" + lines[5][10:]
    p = write(tmp_path, "feb30.csv", lines)
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert rep.read == len(lines) and rep.parsed == len(lines) - 1 and len(inc.gpus) == len(lines) - 1
    cut = inc.gpus[inc.gpus["line"] == 6].iloc[0]
    assert pd.isna(cut["time"]) and cut["state"].startswith("time=2026/02/30 ")
    assert inc.gpus["time"].notna().sum() == len(lines) - 2


def test_blank_line_at_the_end_is_counted(tmp_path, stream):
    p = write(tmp_path, "trailing.csv", [*stream, ""])
    inc = pm.load_nvidia_smi(p)
    rep = report(inc)
    assert rep.read == len(stream) + 1 and rep.skipped.get("blank line") == 1
    assert len(inc.gpus) == len(stream) - 1
