"""PELT on the l2 cost (model/changepoints.py) against ruptures' KernelCPD with a linear kernel,
the C implementation the kit used before: the same breakpoints on noisy step signals, and on
the bundled incidents' own throughput series."""

from __future__ import annotations

import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import dflash_postmortem as pm
from dflash_postmortem.detect import throughput
from dflash_postmortem.model import changepoints

# ruptures is imported where it is used: its import (~1.1 s) would otherwise be paid by every test
# worker, each of which collects this module
if importlib.util.find_spec("ruptures") is None:
    pytest.skip("ruptures (the dev extra) is the reference these tests compare with", allow_module_level=True)

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"


def _steps(rng: np.random.Generator) -> np.ndarray:
    n = int(rng.integers(6, 1500))
    levels = rng.normal(0, 1, size=int(rng.integers(1, 8)))
    cuts = sorted(rng.choice(np.arange(1, n), size=len(levels) - 1, replace=False)) if len(levels) > 1 else []
    x = np.concatenate([np.full(b - a, lv) for a, b, lv in zip([0, *cuts], [*cuts, n], levels, strict=True)])
    return x + rng.normal(0, rng.uniform(0.05, 1.0), n)


def _ruptures(x: np.ndarray, pen: float, min_size: int) -> list[int]:
    import ruptures as rpt

    return [int(b) for b in rpt.KernelCPD(kernel="linear", min_size=min_size).fit(x.reshape(-1, 1)).predict(pen=pen)]


def test_same_breakpoints_as_ruptures_on_noisy_steps():
    rng = np.random.default_rng(7)
    compared = 0
    for _ in range(150):
        x = _steps(rng)
        pen, min_size = float(rng.uniform(0.5, 20.0)), int(rng.integers(1, 6))
        if len(x) < 2 * min_size:
            continue
        assert changepoints.breakpoints(x, pen, min_size, max_points=10**9) == _ruptures(x, pen, min_size)
        compared += 1
    assert compared > 100


@pytest.mark.parametrize("name", ["h200-2gpu", "h200-1gpu-survivor"])
def test_same_breakpoints_on_a_bundled_throughput_series(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = throughput.series(pm.load_incident(INCIDENTS / name))
    signal = np.log(s["value"].to_numpy(dtype=float))
    pen = throughput.PENALTY * 0.01**2 * math.log(len(signal))
    found = changepoints.breakpoints(signal, pen, throughput.MIN_SIZE, throughput.SEARCH_POINTS)
    assert len(signal) < 2 * throughput.SEARCH_POINTS  # searched at every sample, as ruptures does
    assert found == _ruptures(signal, pen, throughput.MIN_SIZE)
    assert len(found) > 1  # the drop is a change point


def test_a_long_series_on_a_grid_finds_each_step_to_the_sample():
    # 100 000 samples: a grid of 2 000 points, each breakpoint refined to its sample
    rng = np.random.default_rng(3)
    x = np.log(np.r_[np.full(41_237, 21_500.0), np.full(30_011, 12_400.0), np.full(28_752, 21_000.0)]
               * rng.lognormal(0, 0.02, 100_000))
    assert changepoints.breakpoints(x, 50.0, 3, 2000) == [41_237, 71_248, 100_000]


def test_one_segment_when_nothing_changes():
    x = np.random.default_rng(1).normal(0, 0.01, 5000)
    assert changepoints.breakpoints(x, 1.0, 3, 2000) == [5000]
