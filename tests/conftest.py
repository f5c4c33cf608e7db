"""Shared test fixtures: where the real data lives, and skipping cleanly when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BUNDLED = REPO / "data" / "incidents" / "h200-2gpu"


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session")
def bundled_dir() -> Path:
    """The real 2 x H200 capture committed in the repository."""
    return BUNDLED


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} is absent (shared reference data is not part of the repository)")
    return SHARED


@pytest.fixture(scope="session")
def fixtures_dir(shared_dir) -> Path:
    d = shared_dir / "fixtures" / "real-world"
    if not d.is_dir():
        pytest.skip(f"{d} is absent")
    return d


@pytest.fixture(scope="session")
def capture_dir(shared_dir) -> Path:
    d = shared_dir / "data" / "h200-2gpu-incident"
    if not d.is_dir():
        pytest.skip(f"{d} is absent")
    return d
