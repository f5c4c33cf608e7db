"""nvidia-smi values that are not numbers, and the forms captures take on their way to an
incident folder, on real captures (the bundled 2 x H200 stream and corpus samples) re-shaped the
way real tools and people re-shape them: a spreadsheet's locale dates, `date +%s` stamps, a colour
prompt recorded by `script`, captures appended to one file, a GPU that stopped answering."""

from __future__ import annotations

import pandas as pd
import pytest

import dflash_postmortem as pm

H200_0 = "GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239"


@pytest.fixture(scope="module")
def stream(bundled_dir) -> list[str]:
    return (bundled_dir / "logs" / "smi_stream.csv").read_text().splitlines()


def write(tmp_path, name, lines, newline="\n"):
    p = tmp_path / name
    p.write_bytes((newline.join(lines) + newline).encode())
    return p


def only_report(inc):
    (rep,) = inc.load_report.files
    assert rep.balanced, rep.summary()
    return rep


def restamp(stream: list[str], fmt) -> list[str]:
    """The stream with its timestamp column rewritten by `fmt(Timestamp) -> str`."""
    out = [stream[0]]
    for line in stream[1:]:
        stamp, rest = line.split(", ", 1)
        out.append(f"{fmt(pd.Timestamp(stamp.replace('/', '-')))}, {rest}")
    return out


@pytest.mark.parametrize("form, fmt, zoned", [
    ("the form '%d.%m.%Y %H:%M:%S'", lambda t: t.strftime("%d.%m.%Y %H:%M:%S"), False),  # a German spreadsheet
    ("the form '%m/%d/%Y %I:%M:%S %p'", lambda t: t.strftime("%m/%d/%Y %I:%M:%S %p"), False),  # a US one
    ("ISO 8601", lambda t: t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3], False),
    ("epoch seconds (UTC)", lambda t: str(int(t.tz_localize("UTC").timestamp())), True),  # date +%s
    ("epoch milliseconds (UTC)", lambda t: str(int(t.tz_localize("UTC").timestamp() * 1000)), True),
])
def test_timestamp_forms(tmp_path, stream, form, fmt, zoned):
    p = write(tmp_path, "restamped.csv", restamp(stream, fmt))
    inc = pm.load_nvidia_smi(p, timezone="Europe/Berlin")
    rep = only_report(inc)
    assert len(inc.gpus) == len(stream) - 1 and inc.gpus["time"].notna().all()
    assert f"timestamps read as {form}" in rep.assumptions
    first = pd.Timestamp("2026-11-30 05:20:20", tz="Europe/Berlin" if not zoned else "UTC").tz_convert("UTC")
    assert inc.gpus["time"].iloc[0].floor("s") == first
    # A zone the stamp carries (epoch) is not overridden by the incident's.
    assert (("no time zone in file, read as Europe/Berlin" in rep.assumptions) is not zoned)


def test_a_stamp_outside_the_columns_form_is_missing_and_named(tmp_path, stream):
    lines = restamp(stream[:6], lambda t: t.strftime("%d.%m.%Y %H:%M:%S"))
    lines[3] = "yesterday" + lines[3][len("30.11.2026 05:20:21"):]
    inc = pm.load_nvidia_smi(write(tmp_path, "one-odd.csv", lines))
    only_report(inc)
    odd = inc.gpus[inc.gpus["line"] == 4].iloc[0]
    assert pd.isna(odd["time"]) and odd["state"] == "time=yesterday" and odd["memory_total_mib"] == 143771


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


def test_colour_prompt_recorded_by_script(tmp_path, fixtures_dir):
    """`script` records the prompt's colour codes: the table reads as it does without them."""
    rel = "smi-table/p100x8-440.33.01-fenced-prompt-2line-blocks.txt"
    plain = (fixtures_dir / rel).read_text().splitlines()
    coloured = [
        "\x1b[01;32muser000@gpuhost01\x1b[00m:\x1b[01;34m~\x1b[00m$ nvidia-smi" if ln.endswith("$ nvidia-smi") else ln
        for ln in plain
    ] + ["\x1b]0;user000@gpuhost01: ~\x07\x1b[01;32muser000@gpuhost01\x1b[00m:\x1b[01;34m~\x1b[00m$ "]
    inc = pm.load_nvidia_smi(write(tmp_path, "typescript", coloured, newline="\r\n"))
    rep = only_report(inc)
    base = pm.load_nvidia_smi(fixtures_dir / rel)
    cols = ["gpu", "memory_used_mib", "power_w", "temp_c", "time"]
    pd.testing.assert_frame_equal(inc.gpus[cols], base.gpus[cols])
    assert rep.skipped["command line that ran nvidia-smi (prompt, watch header)"] == 1
    assert rep.skipped["shell prompt with no command"] == 1
    assert "ANSI colour/cursor codes removed" in rep.assumptions
    assert "Windows (CRLF) line ends" in rep.assumptions


def test_quoted_paste_of_an_error(tmp_path, fixtures_dir):
    """A '> ' quoted reply that quotes the error keeps its event and bus id."""
    text = (fixtures_dir / "smi-error/device-handle-unknown-error-nospace.txt").read_text().splitlines()
    p = write(tmp_path, "reply.md", ["> I get this after the job died:", ">", *[f"> {ln}" for ln in text]])
    inc = pm.load_nvidia_smi(p)
    only_report(inc)
    (ev,) = inc.events.itertuples()
    assert ev.smi_error == "device_handle" and ev.pci_bus_id == "0000:07:00.0" and ev.ref.endswith("reply.md:3")


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


def test_table_kept_as_comments_in_a_script(tmp_path, fixtures_dir):
    """Install scripts keep the expected output as '# ' comments under the command."""
    rel = "smi-table/v100s-pcie-x8-535.171.04-one-python-proc.txt"
    table = (fixtures_dir / rel).read_text().splitlines()
    script = ["#!/bin/bash", "sudo apt install -y nvidia-driver-535", "nvidia-smi",
              "# This should result in a console output shown below:", *[f"# {ln}".rstrip() for ln in table]]
    inc = pm.load_nvidia_smi(write(tmp_path, "install.sh", script))
    rep = only_report(inc)
    base = pm.load_nvidia_smi(fixtures_dir / rel)
    cols = ["gpu", "pci_bus_id", "memory_used_mib", "power_w", "time"]
    pd.testing.assert_frame_equal(inc.gpus[cols], base.gpus[cols])
    assert list(inc.gpu_processes["pid"]) == [3472395]
    assert "'# ' comment markers removed" in rep.assumptions


def test_table_in_a_notebook_cell_output(tmp_path, fixtures_dir):
    """A Colab/Jupyter notebook saved with the output of its `!nvidia-smi` cell: the output lines
    are JSON strings, one per line, as nbformat writes them."""
    import json

    rel = "smi-table/a40x8-525.60.13-err-gpu4-gsp-timeout.txt"
    table = (fixtures_dir / rel).read_text().splitlines(keepends=True)
    nb = {"cells": [{"cell_type": "code", "execution_count": 1, "metadata": {}, "source": ["!nvidia-smi"],
                     "outputs": [{"name": "stdout", "output_type": "stream", "text": table}]}],
          "metadata": {"accelerator": "GPU"}, "nbformat": 4, "nbformat_minor": 0}
    p = tmp_path / "train.ipynb"
    p.write_text(json.dumps(nb, indent=1))
    inc = pm.load_incident(p)
    (rep,) = [f for f in inc.load_report.files if f.path == "train.ipynb"]
    assert rep.format == "nvidia-smi-table" and rep.balanced
    base = pm.load_nvidia_smi(fixtures_dir / rel)
    cols = ["gpu", "memory_used_mib", "power_w", "state", "time"]
    pd.testing.assert_frame_equal(inc.gpus[cols], base.gpus[cols])
    assert list(inc.events["kind"]) == ["gpu_error"] and inc.events["ref"].iloc[0].startswith("train.ipynb:")
