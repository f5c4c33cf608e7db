"""Recovery (full and partial) after a throughput regression."""

import pandas as pd

from dflash_postmortem.detect import detect_recovery


def test_bundled_recovery_time(bundled_findings):
    rec = bundled_findings[bundled_findings["kind"] == "recovery"]
    assert len(rec) == 1
    n = rec.iloc[0]["numbers"]
    assert 145_000 < n["level_tok_per_s"] < 150_000
    assert n["run"] == "fixed"
    assert f"{rec.iloc[0]['start']:%H:%M:%S}" == "05:23:48"
    assert n["time_to_recover_s"] == 91.0  # from the first degraded sample at 05:22:17


def test_seed_recovery_start(seed_findings):
    rec = seed_findings[seed_findings["kind"] == "recovery"]
    assert len(rec) == 1
    r = rec.iloc[0]
    assert r["numbers"]["run"] == "opt2"
    assert pd.Timestamp("2026-05-09 21:39", tz="UTC") <= r["start"] <= pd.Timestamp("2026-05-09 21:41", tz="UTC")
    assert r["numbers"]["ratio"] > 0.9


def test_partial_recovery_when_below_fraction(bundled_incident):
    """The same capture judged against a stricter bar: 147K is not 'recovered' at 1.05 x baseline."""
    rec = detect_recovery(bundled_incident, fraction=1.05)
    assert rec["kind"].tolist() == ["partial_recovery"]
    assert 0.95 < rec.iloc[0]["numbers"]["ratio"] < 1.05
