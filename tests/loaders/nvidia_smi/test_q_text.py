"""The `nvidia-smi -q` text report."""

from __future__ import annotations

import pytest
from support.captures import rows, ts


def test_q_text_report(incident):
    q = rows(incident.gpus, "snap/q_mem_util_idle.txt")
    assert q.iloc[0]["time"] == ts("2026-11-30 05:20:20")
    assert list(q["pci_bus_id"]) == ["00000000:00:06.0", "00000000:00:07.0"]
    assert q.iloc[0]["memory_reserved_mib"] == 616 and q.iloc[0]["memory_total_mib"] == 143771
    assert q.iloc[0]["power_w"] == pytest.approx(78.83)
    assert q.iloc[0]["power_instant_w"] == pytest.approx(78.70)
