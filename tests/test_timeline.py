"""The incident timeline and its impact, on the real capture and the reconstruction."""

import pandas as pd

from dflash_postmortem import Incident, timeline
from dflash_postmortem.timeline import format_for_terminal, impact


def test_bundled_timeline_order_and_impact(bundled_incident, bundled_findings):
    tl = timeline(bundled_incident, bundled_findings)
    assert tl.events["time"].is_monotonic_increasing
    phases = tl.events["phase"].tolist()
    for p in ("first sign", "detection", "failed restart", "stale process", "mitigation", "recovery"):
        assert p in phases
    assert phases.index("first sign") < phases.index("detection") < phases.index("mitigation") < phases.index("recovery")
    i = tl.impact
    assert i["first_sign"] == pd.Timestamp("2026-11-30 05:22:17", tz="UTC")
    assert i["detected"] == pd.Timestamp("2026-11-30 05:22:57.687", tz="UTC")  # the kill
    assert i["mitigated"] == pd.Timestamp("2026-11-30 05:23:16.774", tz="UTC")  # the good relaunch
    assert i["time_to_recover_s"] == 91.0
    assert i["gpus_held"] == 2
    # 91 s on 2 GPUs: ~40 s at about half speed, then ~50 s with nothing training
    assert 0.025 < i["gpu_hours_lost"] < i["gpu_hours_held"] == 2 * 91 / 3600
    assert 5e6 < i["tokens_lost"] < 146_812 * 91


def test_seed_impact(seed_incident, seed_findings):
    i = impact(seed_incident, seed_findings)
    assert i["baseline_tok_per_s"] == 21_500  # incident.toml expected_tok_per_s
    assert i["gpus_held"] == 8
    assert 60 * 60 < i["time_to_detect_s"] < 75 * 60  # nobody noticed for an hour
    assert i["time_to_recover_s"] > i["time_to_mitigate_s"] > i["time_to_detect_s"]
    # ~71 min at 0.42 shortfall + ~8 min down on 8 GPUs: about 5 GPU-hours
    assert 4.0 < i["gpu_hours_lost"] < 6.0


def test_terminal_text(seed_incident, seed_findings):
    text = format_for_terminal(seed_incident, seed_findings)
    assert "failed_restart" in text and "time to detect 1h11m" in text and "GPU-hours lost" in text


def test_no_findings_no_timeline():
    tl = timeline(Incident())
    assert tl.events.empty and tl.impact["first_sign"] is None and tl.impact["gpu_hours_lost"] is None
