"""The `nvidia-smi -q -x` XML report, whole and cut mid-write."""

from __future__ import annotations

import pandas as pd
import pytest
from support.captures import only_report, rows, ts, write

import dflash_postmortem as pm
from dflash_postmortem import SourceFormatError

GPU0 = "GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239"
GPU1 = "GPU-fe57adda-7632-14c9-a200-8dd58612daeb"


def test_q_xml_report(incident):
    x = rows(incident.gpus, "snap/q_busy.xml")
    assert list(x["uuid"]) == [GPU0, GPU1]
    assert list(x["util_gpu_pct"]) == [66, 99] and list(x["memory_used_mib"]) == [4439, 4155]
    assert list(x["power_w"]) == [456.74, 689.27] and list(x["sm_clock_mhz"]) == [1980, 1860]
    assert list(x["temp_c"]) == [46, 59]
    xp = rows(incident.gpu_processes, "snap/q_busy.xml")
    assert list(xp["used_memory_mib"]) == [4430, 4146] and list(xp["uuid"]) == [GPU0, GPU1]


def test_truncated_xml_keeps_what_was_written(tmp_path, bundled_dir):
    text = (bundled_dir / "snap" / "q_busy.xml").read_text()
    second = text.index('<gpu id="00000000:00:07.0">')
    p = tmp_path / "cut.xml"
    p.write_text(text[: second + 400])
    inc = pm.load_nvidia_smi(p)
    rep = only_report(inc)
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


def test_report_with_email_escaped_tags(fixtures_dir):
    """A report pasted through an e-mail reply (`<timestamp&gt;...</timestamp&gt;`, `&nbsp;`
    indentation) is read as the report it was, cut where the reply cut it."""
    inc = pm.load_nvidia_smi(fixtures_dir / "smi-xml/wsl-rtx4090-591.74-email-reply-html-escaped-tags-cut.xml")
    rep = only_report(inc)
    assert any("&gt;" in a for a in rep.assumptions)
    gpu = inc.gpus.iloc[0]
    assert (gpu["name"], gpu["driver_version"], gpu["pci_bus_id"]) == ("NVIDIA GeForce RTX 4090", "591.74", "00000000:01:00.0")
    assert gpu["time"] == ts("2026-02-17 22:43:40")


def test_escaped_text_inside_a_clean_report_is_left_alone(tmp_path):
    p = write(tmp_path, "r.xml", [
        '<?xml version="1.0" ?>', "<nvidia_smi_log>", "<timestamp>Mon Nov 30 05:24:18 2026</timestamp>",
        '<gpu id="00000000:00:06.0">', "<product_name>a&lt;b&gt;</product_name>", "</gpu>", "</nvidia_smi_log>",
    ])
    inc = pm.load_nvidia_smi(p)
    assert inc.gpus.iloc[0]["name"] == "a<b>" and not any("&gt;" in a for a in only_report(inc).assumptions)
