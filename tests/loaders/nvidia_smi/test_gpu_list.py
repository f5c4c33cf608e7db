"""`nvidia-smi -L`: index, UUID, name and MIG devices."""

from __future__ import annotations

import dflash_postmortem as pm


def test_list_maps_index_uuid_name_and_mig(fixtures_dir):
    inc = pm.load_nvidia_smi(fixtures_dir / "smi-list/L-a100x4-mixed-mig.txt")
    assert list(inc.gpus["gpu"]) == [0, 1, 2, 3]
    assert inc.gpus.iloc[0]["mig_uuids"].split(",")[0] == "MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a"
    assert len(inc.gpus.iloc[0]["mig_uuids"].split(",")) == 4


def test_gpus_named_again_are_one_row(fixtures_dir):
    """`nvlink -s` then `nvlink -info` name each GPU in -L form twice: one row per GPU, and a
    header cut after "UUID:" keeps its name without the cut text."""
    inc = pm.load_nvidia_smi(fixtures_dir / "smi-list/gb200-nvlink-s-and-info-per-gpu-headers-elided-cut.txt")
    assert list(inc.gpus["gpu"]) == [0, 1, 2] and set(inc.gpus["name"]) == {"NVIDIA GB200"}
    assert inc.load_report.files[0].skipped["GPU listed again (same index and UUID)"] == 2


def test_list_pasted_twice_keeps_mig_devices_once(tmp_path):
    lines = [
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)",
        "  MIG 3g.20gb     Device  0: (UUID: MIG-7a1bb9b8-6d3e-5a2c-9a5b-1f7f33c6f0a1)",
    ]
    p = tmp_path / "L.txt"
    p.write_text("\n".join(lines + lines) + "\n")
    inc = pm.load_nvidia_smi(p)
    assert len(inc.gpus) == 1 and inc.gpus.iloc[0]["mig_uuids"] == "MIG-7a1bb9b8-6d3e-5a2c-9a5b-1f7f33c6f0a1"
