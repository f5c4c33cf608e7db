"""The query CSV form (`--query-gpu` / `--query-compute-apps`, snapshots and `-l` streams), on the
bundled 2 x H200 capture and on inputs cut from it: every line parsed or counted with a reason, errors
name file and line, N/A never becomes 0."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from support.captures import only_report, rows, ts, write

import dflash_postmortem as pm
from dflash_postmortem import SourceFormatError

GPU0 = "GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239"
GPU1 = "GPU-fe57adda-7632-14c9-a200-8dd58612daeb"
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


def test_stream_cut_mid_line_keeps_what_was_written(tmp_path, stream):
    cut = stream[:11] + [stream[11][:40]]  # "2026/11/30 05:20:25.721, 0, GPU-a5691722"
    p = write(tmp_path, "cut.csv", cut)
    inc = pm.load_nvidia_smi(p)
    rep = only_report(inc)
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


def test_table_pasted_into_a_stream_is_read_as_a_table(tmp_path, stream, bundled_dir):
    table = (bundled_dir / "snap" / "table_busy.txt").read_text().splitlines()
    p = write(tmp_path, "mixed.csv", stream[:3] + table[1:9] + stream[3:5])
    inc = pm.load_nvidia_smi(p)
    rep = only_report(inc)
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
    rep = only_report(inc)
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
    rep = only_report(inc)
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
    assert any("field list taken from" in a for a in only_report(inc).assumptions)


def test_apps_stream_with_small_ints_is_not_guessed(tmp_path):
    """timestamp, uuid, 0, name, MiB could be --query-gpu=timestamp,uuid,index,name,memory.used."""
    p = write(tmp_path, "ambiguous.csv", [
        "2026/11/30 05:20:36.981, GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239, 0, NVIDIA H200, 1226 MiB",
    ])
    with pytest.raises(SourceFormatError):
        pm.load_nvidia_smi(p)


def test_impossible_timestamp_is_missing_not_a_shifted_time(tmp_path, stream):
    """Feb 30 has the fixed width of a good stamp: the fast path refuses it, the line path keeps
    the sample's values and leaves its time missing, named in state."""
    lines = list(stream)
    lines[5] = "2026/02/30" + lines[5][10:]
    p = write(tmp_path, "feb30.csv", lines)
    inc = pm.load_nvidia_smi(p)
    rep = only_report(inc)
    assert rep.read == len(lines) and rep.parsed == len(lines) - 1 and len(inc.gpus) == len(lines) - 1
    cut = inc.gpus[inc.gpus["line"] == 6].iloc[0]
    assert pd.isna(cut["time"]) and cut["state"].startswith("time=2026/02/30 ")
    assert inc.gpus["time"].notna().sum() == len(lines) - 2


def test_blank_line_at_the_end_is_counted(tmp_path, stream):
    p = write(tmp_path, "trailing.csv", [*stream, ""])
    inc = pm.load_nvidia_smi(p)
    rep = only_report(inc)
    assert rep.read == len(stream) + 1 and rep.skipped.get("blank line") == 1
    assert len(inc.gpus) == len(stream) - 1


# Header-less files whose field list the content cannot give: an error naming file and line
# without it (their manifest entries load them with the list in incident.toml).
NEEDS_FIELDS = [
    "smi-csv/noheader-nounits-fan-NA-newer.csv",
    "smi-csv/noheader-nounits-fan-not-supported-older.csv",
    "smi-csv/pdsh-cluster-name-memtotal-noheader-excerpt.csv",
    "smi-csv/gtx1080ti-x7-gtx1080-windows-noheader-units-unknown-error-fan.csv",
]


@pytest.mark.parametrize("rel", NEEDS_FIELDS)
def test_headerless_without_fields_is_a_clear_error(fixtures_dir, rel):
    with pytest.raises(SourceFormatError) as e:
        pm.load_nvidia_smi(fixtures_dir / rel)
    # The first line of data: a pasted sample's fence line comes before it.
    first = next(n for n, s in enumerate((fixtures_dir / rel).read_text().splitlines(), 1) if not s.startswith("```"))
    assert e.value.line == first and rel.split("/")[-1] in str(e.value) and "fields" in str(e.value)


def test_empty_forms(fixtures_dir):
    header_only = pm.load_nvidia_smi(fixtures_dir / "smi-apps/h100-mig-590-idle-compute-apps-header-only.csv")
    rep = header_only.load_report.files[0]
    assert header_only.gpu_processes.empty and (rep.read, rep.skipped["header line"]) == (1, 1)
    idle = pm.load_nvidia_smi(fixtures_dir / "smi-dmon/h100-mig-590-pmon-idle-no-procs.txt")
    rep = idle.load_report.files[0]
    assert idle.gpu_processes.empty and rep.skipped["pmon row with no process on the GPU"] == 5


H200_0 = "GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239"


def test_captures_with_other_fields_appended_to_one_file(tmp_path, stream, bundled_dir):
    """`>>` of two different queries into one log: each header's rows read with its own fields."""
    other = (bundled_dir / "snap" / "query_with_na.csv").read_text().splitlines()
    p = write(tmp_path, "appended.csv", stream[:4] + other)
    inc = pm.load_nvidia_smi(p)
    rep = only_report(inc)
    assert rep.skipped["header line"] == 2 and len(inc.gpus) == 3 + len(other) - 1
    first, later = inc.gpus.iloc[0], inc.gpus.iloc[3]
    assert first["uuid"] == H200_0 and first["power_w"] == 78.84
    assert later["name"] == "NVIDIA H200" and pd.isna(later["fan_pct"]) and later["state"] == "fan_pct=[N/A]"


def test_noheader_answer_takes_its_fields_from_the_command_line_above_it(tmp_path, stream):
    """A paste of `nvidia-smi --query-gpu=... --format=csv,noheader` with its prompt line: the
    command says what the columns are (quoted field names as some shells pass them)."""
    command = ('user@node:~$ nvidia-smi --query-gpu "timestamp","index","uuid","memory.used","memory.total",'
               '"utilization.gpu","utilization.memory","temperature.gpu","power.draw" --format=csv,noheader -l 1')
    p = write(tmp_path, "paste.txt", ["```", command, *stream[1:5], "```"])
    inc = pm.load_incident(p)
    (rep,) = [f for f in inc.load_report.files if f.path == "paste.txt"]
    assert rep.format == "nvidia-smi-query-csv" and rep.balanced and rep.parsed == 4
    assert any("field list taken from the nvidia-smi command line" in a for a in rep.assumptions)
    first = inc.gpus.iloc[0]
    assert (first["gpu"], first["uuid"], first["memory_total_mib"], first["power_w"]) == (0, H200_0, 143771, 78.84)
    # Without the command line the same rows are a clear error naming file and line.
    with pytest.raises(pm.SourceFormatError, match="bare.csv:1"):
        pm.load_nvidia_smi(write(tmp_path, "bare.csv", stream[1:5]))


def test_headerless_row_with_an_error_value_is_still_a_query_answer(tmp_path):
    """`[Unknown Error]` stands where a value would be: the row is still claimed and read, the
    value is missing and named as an error state, and the power limits keep their units."""
    p = write(tmp_path, "rig.csv", [
        "GeForce GTX 1080 Ti, 53 %, 84, 123.00 W, [Unknown Error], 300.00 W, 250.00 W",
        "GeForce GTX 1080, 83 %, 70, 181.22 W, 71 %, 216.00 W, 200.00 W",
    ])
    fields = ["name", "utilization.gpu", "temperature.gpu", "power.draw", "fan.speed", "power.max_limit",
              "power.default_limit"]
    inc = pm.load_nvidia_smi(p, fields=fields)
    only_report(inc)
    first, second = inc.gpus.iloc[0], inc.gpus.iloc[1]
    assert pd.isna(first["fan_pct"]) and second["fan_pct"] == 71
    assert (first["power_max_limit_w"], first["power_default_limit_w"]) == (300, 250)
    assert list(inc.events["kind"]) == ["gpu_error"]
    with pytest.raises(SourceFormatError, match="fields"):
        pm.load_nvidia_smi(p)  # claimed as a header-less answer, whose field list must be given


def test_bare_numbers_typed_by_the_reader_and_a_late_na_read_again(tmp_path, monkeypatch):
    """A `nounits` stream: the head's bare numbers are typed by the CSV reader itself; an `[N/A]`
    far below the head fails that read and the file is read again as text, still without the
    line path, with the same frame as a read that types nothing."""
    from dflash_postmortem.loaders.nvidia_smi import query_csv

    header = "timestamp, index, memory.used [MiB], power.draw [W]"
    lines = [header] + [f"2026/11/30 05:{k // 120:02d}:{k // 2 % 60:02d}.{k % 2 * 3 + 701}, {k % 2}, "
                        f"{1000 + k}, {k / 4}" for k in range(400)]
    clean = write(tmp_path, "clean.csv", lines)
    late = list(lines)
    late[351] = late[351].rsplit(", ", 2)[0] + ", [N/A], 3.5"
    na = write(tmp_path, "late_na.csv", late)

    reads = []
    real_read = query_csv.csv.read_csv
    monkeypatch.setattr(query_csv.csv, "read_csv", lambda *a, **k: reads.append(
        sorted(str(t) for t in k["convert_options"].column_types.values())) or real_read(*a, **k))
    monkeypatch.setattr(query_csv, "read_lines", lambda *a, **k: pytest.fail("took the line path"))
    got = pm.load_nvidia_smi(clean).gpus
    assert reads == [["double", "double", "int64", "string"]]  # one read, three columns typed
    assert got["gpu"].tolist()[:3] == [0, 1, 0] and got["memory_used_mib"].iloc[-1] == 1399
    assert got["power_w"].iloc[3] == 0.75 and str(got["gpu"].dtype) == "Int64"

    reads.clear()
    late_inc = pm.load_nvidia_smi(na)
    assert reads == [["double", "double", "int64", "string"], ["string"] * 4]
    row = late_inc.gpus[late_inc.gpus["line"] == 352].iloc[0]
    assert pd.isna(row["memory_used_mib"]) and row["state"] == "memory_used_mib=[N/A]" and row["power_w"] == 3.5

    # Both frames as a read that types nothing gives them.
    monkeypatch.setattr(query_csv, "_bare_numbers", lambda *a: {})
    pd.testing.assert_frame_equal(got, pm.load_nvidia_smi(clean).gpus)
    pd.testing.assert_frame_equal(late_inc.gpus, pm.load_nvidia_smi(na).gpus)


def test_numbers_read_by_arrow_are_what_to_numeric_reads():
    """parse_numbers' floats (Arrow's cast for decimal text, pandas for the rest) against
    pd.to_numeric on text of every shape nvidia-smi and its tools print, and some they do not."""
    import numpy as np

    from dflash_postmortem.loaders.nvidia_smi.fields import parse_numbers

    rng = np.random.default_rng(7)
    texts = ([str(v) for v in rng.integers(-10**6, 10**12, 2000)] + [f"{v:.6f}" for v in rng.uniform(-1e6, 1e6, 2000)]
             + [repr(float(v)) for v in rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000)]
             + ["-", "[N/A]", "ERR!", "nan", "inf", "-inf", "1e", ".5", "5.", "+3", "00012", "1_000", "0x10",
                "12345678901234567890123", "1e400", "", None, "87012 MiB"])
    text = pd.Series(texts, dtype="string")
    nums, odd = parse_numbers(text, "MiB", 1.0)
    cut = text.str.strip().str.removesuffix("MiB").str.removesuffix("MB").str.strip()
    want = pd.to_numeric(cut, errors="coerce").astype("float64")
    pd.testing.assert_series_equal(nums, want, check_names=False)
    assert odd.notna().sum() == want.isna().sum() - text.isna().sum()
