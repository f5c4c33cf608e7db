"""Each run against the baseline run, one factor at a time, on the real 2 x H200 capture."""

import pytest

from dflash_postmortem import Incident
from dflash_postmortem.analysis import replay_ab


def test_runs_against_the_baseline(bundled_incident):
    knobs = replay_ab.knob_settings(bundled_incident)
    assert set(knobs.columns) == {"use_reentrant", "fast_linear_attn"}  # run names, durations and paths are not knobs
    eff = replay_ab.replay_effects(bundled_incident).set_index("run")
    assert list(eff.index) == ["baseline", "regressed", "fixed"]
    assert eff.loc["regressed", ["change", "knobs_changed", "samples"]].tolist() == ["use_reentrant=0, fast_linear_attn=0", 2, 70]
    assert eff.loc["regressed", "note"] == "several knobs at once: not separable"
    assert eff.loc["regressed", "vs_baseline"] == pytest.approx(0.51)
    assert eff.loc["fixed", "note"] == "same settings as baseline" and eff.loc["fixed", "vs_baseline"] == pytest.approx(1.001)
    assert eff.loc["baseline", "p25"] < eff.loc["baseline", "median_tok_per_s"] == 146812.5 < eff.loc["baseline", "p75"]


def test_nothing_to_compare():
    assert list(replay_ab.replay_effects(Incident()).columns) == replay_ab.EFFECT_COLUMNS
