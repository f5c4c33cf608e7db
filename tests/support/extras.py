"""Optional packages a test module needs, checked without importing them: every test worker
collects every module, and an import made at collection (dask's, moto's: tenths of a second to
a second each) is paid by all of them, not only by the one that runs the tests."""

from __future__ import annotations

import importlib.util

import pytest


def needs(module: str, reason: str) -> None:
    """Skip the calling test module where `module` is not installed (`pytest.importorskip`
    without the import)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(reason, allow_module_level=True)
