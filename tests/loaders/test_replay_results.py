"""The real A/B measurements (data/incidents/h200-2gpu-replay-ab) load with their knob settings."""

import json
from pathlib import Path

import pytest

import dflash_postmortem as pm
from dflash_postmortem.analysis import replay_ab

# The repository root (this file is one level below tests/). Not imported from conftest: notebooks/ has
# a conftest.py too, and pytest puts both folders on sys.path.
REPO = Path(__file__).resolve().parents[2]

AB = REPO / "data" / "incidents" / "h200-2gpu-replay-ab"


@pytest.fixture(scope="module")
def inc():
    return pm.load_incident(AB, on_bad_line="raise")


def test_every_run_has_its_settings_and_numbers(inc):
    rep = inc.load_report["ab_results.json"]
    assert rep.format == "replay-ab-results" and rep.read == rep.parsed == 8
    assert inc.runs["lm-head-trainable"].config["lm_head_mode"] == "trainable"
    assert inc.runs["write-up"].config["linear_attn"] == "fallback"
    assert inc.runs["baseline"].summary["tok_per_s"] == pytest.approx(18530, abs=1)
    assert inc.runs["write-up"].summary["tok_per_s"] / inc.runs["baseline"].summary["tok_per_s"] == pytest.approx(0.63, abs=0.01)


def test_log_series_match_the_steady_state_numbers(inc):
    tok = inc.metrics[inc.metrics["metric"] == "train/tok_per_s"]
    med = tok.groupby("run")["value"].median()
    assert set(med.index) == set(inc.runs)
    # The log's step lines and the script's steady-state rate tell the same story.
    for run, info in inc.runs.items():
        assert med[run] == pytest.approx(info.summary["tok_per_s"], rel=0.05), run


def test_knob_effects_group_runs_by_setting(inc):
    knobs = replay_ab.knob_settings(inc)
    assert {"lm_head_mode", "linear_attn", "use_reentrant", "draft_layer_ckpt", "compile"} <= set(knobs.columns)
    assert "result_json" not in knobs.columns and "run_name" not in knobs.columns
    eff = replay_ab.replay_effects(inc).set_index("run")
    assert eff.index[0] == "baseline" and eff.loc["baseline", "vs_baseline"] == 1.0
    # one factor at a time: each run is read against the baseline, not pooled with other runs
    assert eff.loc["lm-head-trainable", "change"] == "lm_head_mode=trainable"
    assert eff.loc["lm-head-trainable", "vs_baseline"] == pytest.approx(0.69, abs=0.02)
    assert eff.loc["linear-attn-fallback", "vs_baseline"] == pytest.approx(0.99, abs=0.02)
    assert eff.loc["write-up", "knobs_changed"] == 4 and "not separable" in eff.loc["write-up", "note"]


def test_cut_results_file_is_a_clear_error(tmp_path):
    text = (AB / "ab_results.json").read_text()
    (tmp_path / "ab_results.json").write_text(text[: len(text) // 2])
    with pytest.raises(pm.SourceFormatError) as e:
        pm.load_incident(tmp_path, on_bad_line="raise")
    assert "complete JSON document" in str(e.value)
    # sniffed as the A/B format even when cut, and reported, not dropped, under the lenient policy
    assert json.loads(text)["results"]
    inc = pm.load_incident(tmp_path, on_bad_line="skip")
    assert "complete JSON document" in inc.load_report["ab_results.json"].error


def test_fallback_costs_throughput_only_when_the_target_is_the_bottleneck():
    drafter_bound = pm.load_incident(AB)
    target_bound = pm.load_incident(REPO / "data" / "incidents" / "h200-2gpu-replay-ab-target-bound")
    for inc, expected in ((drafter_bound, 0.99), (target_bound, 0.82)):
        eff = replay_ab.replay_effects(inc).set_index("run")
        assert eff.loc["linear-attn-fallback", "change"] == "linear_attn=fallback"
        assert eff.loc["linear-attn-fallback", "vs_baseline"] == pytest.approx(expected, abs=0.03)
    # the reason: who waits for whom
    assert drafter_bound.runs["baseline"].summary["drafter_wait_fraction"] < 0.01
    assert target_bound.runs["baseline"].summary["target_busy_fraction"] > 0.99
