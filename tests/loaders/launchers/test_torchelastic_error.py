"""torchelastic's error.json: one traceback event at the file's own time, its job, attempt and rank
from torchrun's log folder (a real file written by `@record`, fixtures/README.md), and the forms a
parent's copy and a signal leave."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dflash_postmortem.errors import SourceFormatError
from dflash_postmortem.loaders.launchers.torchelastic_error import load_error_file, sniff_error_file
from dflash_postmortem.loaders.registry import LoadContext, read_head

from .conftest import FIXTURES

ERROR_FILE = FIXTURES / "torchrun-record-flight-recorder" / "9fe537d2-9f62-43a2-915a-6fed07f22ce9__g3w5nen" / "attempt_0" / "1" / "error.json"


def _load(path):
    return load_error_file(path, LoadContext(root=path.parent))


def test_a_workers_error_file():
    assert sniff_error_file(ERROR_FILE, read_head(ERROR_FILE)) == 0.9
    inc = _load(ERROR_FILE)
    ev = inc.events.iloc[0]
    assert (ev["kind"], ev["pattern"], ev["time"]) == ("traceback", "RuntimeError", pd.Timestamp("2026-12-02 01:56:45", tz="UTC"))
    assert ev["message"].startswith("Traceback (most recent call last):")
    assert ev["message"].endswith("RuntimeError: giving up after the timed-out all_reduce")
    assert (ev["job"], ev["attempt"], ev["rank"]) == ("9fe537d2-9f62-43a2-915a-6fed07f22ce9", 0, 1)
    assert ev["run"] == "9fe537d2-9f62-43a2-915a-6fed07f22ce9 attempt 0"
    assert inc.load_report.files[0].balanced


def test_a_parents_copy_and_a_signal(tmp_path):
    parent = tmp_path / "error.json"
    doc = json.loads(ERROR_FILE.read_text())
    doc["message"]["errorCode"] = 1  # the agent's copy for its own error file
    parent.write_text(json.dumps(doc))
    ev = _load(parent).events.iloc[0]
    assert ev["exit_code"] == 1
    signal = tmp_path / "signal.json"
    signal.write_text('{"message": "Signal 9 (SIGKILL) received by PID 4242", "errorCode": 9}')
    assert sniff_error_file(signal, read_head(signal)) == 0.9
    inc = _load(signal)
    ev = inc.events.iloc[0]
    assert ev["message"] == "Signal 9 (SIGKILL) received by PID 4242" and pd.isna(ev["time"])
    assert any("no timestamp" in a for a in inc.load_report.files[0].assumptions)


def test_a_cut_file_is_a_clear_error(tmp_path):
    cut = tmp_path / "error.json"
    cut.write_bytes(ERROR_FILE.read_bytes()[:200])
    with pytest.raises(SourceFormatError, match="a complete JSON document"):
        _load(cut)


def test_other_json_is_not_an_error_file(tmp_path):
    other = tmp_path / "config.json"
    other.write_text('{"message": "hello", "lr": 0.1}')
    assert sniff_error_file(other, read_head(other)) == 0.0
