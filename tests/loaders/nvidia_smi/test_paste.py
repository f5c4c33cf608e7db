"""Captures as people save them (paste.py): a colour prompt recorded by `script`, output kept as
`# ` comments in a script, a notebook's cell output."""

from __future__ import annotations

import pandas as pd
from support.captures import only_report, write

import dflash_postmortem as pm


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
