"""PID files: one process id, the file name names the run."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.errors import SourceFormatError
from dflash_postmortem.loaders.pid_file import load_pid_file
from dflash_postmortem.loaders.registry import LoadContext


@pytest.mark.parametrize("content", [b"1391\n", b"  1391\r\n", b"99999999999\n", b"", b"\xff\xfe1\x002\x00", b"12\n13\n"])
def test_pid_files_never_raise_anything_but_source_format_error(tmp_path, content):
    """A PID file in an incident without ps data aborted load_incident with a TypeError."""
    p = tmp_path / "fixed.pid"
    p.write_bytes(content)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inc = load_pid_file(p, LoadContext(root=tmp_path))
    except SourceFormatError:
        return
    rep = inc.load_report.files[0]
    assert rep.balanced
    if content.strip().isdigit() and int(content) < 2**31:
        e = inc.events.iloc[0]
        assert (e["pid"], e["run"], e["kind"]) == (1391, "fixed", "pid_file") and pd.isna(e["time"])


def test_a_pid_file_alone_loads_through_load_incident(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "fixed.pid").write_text("1391\n")
    inc = pm.load_incident(tmp_path)
    assert inc.events["pid"].tolist() == [1391] and not inc.load_report.failed
