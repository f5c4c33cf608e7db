"""What the nvidia-smi tests read: the bundled 2 x H200 capture, loaded once, and its query stream
as lines (inputs are cut from it)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def incident(bundled_incident):
    return bundled_incident


@pytest.fixture(scope="module")
def stream(bundled_dir) -> list[str]:
    return (bundled_dir / "logs" / "smi_stream.csv").read_text().splitlines()
