"""Real nvidia-smi captures under tests/fixtures/real-world/smi-*, beyond what their manifest
entries (tests/fixtures/expected/smi-*.toml, checked by test_corpus.py) assert: errors for
header-less files without a field list, MIG UUIDs, forms read inside other files."""

from __future__ import annotations

import warnings

import pytest

import dflash_postmortem as pm
from dflash_postmortem import SourceFormatError, schema

# Header-less files whose field list the content cannot give: an error naming file and line
# without it (their manifest entries load them with the list in incident.toml).
NEEDS_FIELDS = [
    "smi-csv/noheader-nounits-fan-NA-newer.csv",
    "smi-csv/noheader-nounits-fan-not-supported-older.csv",
    "smi-csv/pdsh-cluster-name-memtotal-noheader-excerpt.csv",
]


@pytest.mark.parametrize("rel", NEEDS_FIELDS)
def test_headerless_without_fields_is_a_clear_error(fixtures_dir, rel):
    with pytest.raises(SourceFormatError) as e:
        pm.load_nvidia_smi(fixtures_dir / rel)
    assert e.value.line == 1 and rel.split("/")[-1] in str(e.value) and "fields" in str(e.value)


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


def test_empty_forms(fixtures_dir):
    header_only = pm.load_nvidia_smi(fixtures_dir / "smi-apps/h100-mig-590-idle-compute-apps-header-only.csv")
    rep = header_only.load_report.files[0]
    assert header_only.gpu_processes.empty and (rep.read, rep.skipped["header line"]) == (1, 1)
    idle = pm.load_nvidia_smi(fixtures_dir / "smi-dmon/h100-mig-590-pmon-idle-no-procs.txt")
    rep = idle.load_report.files[0]
    assert idle.gpu_processes.empty and rep.skipped["pmon row with no process on the GPU"] == 5


def test_list_maps_index_uuid_name_and_mig(fixtures_dir):
    inc = pm.load_nvidia_smi(fixtures_dir / "smi-list/L-a100x4-mixed-mig.txt")
    assert list(inc.gpus["gpu"]) == [0, 1, 2, 3]
    assert inc.gpus.iloc[0]["mig_uuids"].split(",")[0] == "MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a"
    assert len(inc.gpus.iloc[0]["mig_uuids"].split(",")) == 4


def test_table_pasted_into_training_log(fixtures_dir):
    """The table's GPUs are read; every log line around it is counted as outside the table."""
    path = fixtures_dir / "train-log" / "modded-nanogpt-8xh100-head-with-smi.log"
    inc = pm.load_nvidia_smi(path)
    rep = inc.load_report.files[0]
    assert list(inc.gpus["gpu"]) == list(range(8))
    assert inc.gpus.iloc[0]["memory_used_mib"] == 7746
    assert rep.skipped["line outside the nvidia-smi table"] > 0 and rep.balanced


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
