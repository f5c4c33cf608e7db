"""`nvidia-smi -L`: index, UUID, name and MIG devices."""

from __future__ import annotations

import dflash_postmortem as pm


def test_list_maps_index_uuid_name_and_mig(fixtures_dir):
    inc = pm.load_nvidia_smi(fixtures_dir / "smi-list/L-a100x4-mixed-mig.txt")
    assert list(inc.gpus["gpu"]) == [0, 1, 2, 3]
    assert inc.gpus.iloc[0]["mig_uuids"].split(",")[0] == "MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a"
    assert len(inc.gpus.iloc[0]["mig_uuids"].split(",")) == 4
