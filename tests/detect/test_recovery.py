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


def test_partial_recovery_reason_cites_the_idle_gpu_samples(seed_incident, seed_dir, line_at):
    """The reconstruction judged at 100 %: 0.98 of baseline is partial, and GPU 5 (5 heavy + 3
    light) sits idle holding memory; the reason cites the GPU samples that show it."""
    rec = detect_recovery(seed_incident, fraction=1.0)
    assert rec["kind"].tolist() == ["partial_recovery"]
    r = rec.iloc[0]
    assert r["numbers"]["reasons"] == ["GPU(s) 5 hold memory but sit idle"]
    samples = [line_at(seed_dir, ref) for ref in r["evidence"] if ref.startswith("logs/gpu_query.csv:")]
    assert len(samples) == 4
    assert all(s.split(", ")[1] == "5" and s.endswith(" MiB, 0 %") for s in samples)
