"""The levels a page names, on the real 2 x H200 capture: baseline, the regression and the
recovery, the changes across the baseline band, and the window the incident ended in."""

import pandas as pd

from dflash_postmortem import Incident
from dflash_postmortem.analysis import throughput_levels as levels
from dflash_postmortem.analysis.timeline import impact as timeline_impact
from dflash_postmortem.detect import detect, throughput

T = lambda x: pd.Timestamp(f"2026-11-30 {x}", tz="UTC")  # noqa: E731


def test_crossings_of_the_baseline_band(bundled_incident):
    segments = throughput.segments(throughput.series(bundled_incident))
    crossed = levels.band_crossings(segments)
    assert crossed.values.tolist() == [[T("05:22:17"), 146812.5, 74918.0], [T("05:23:48"), 74918.0, 146969.5]]
    # with a band 60 % under the baseline the drop to 0.51 stays inside it: no crossing
    assert levels.band_crossings(segments, min_drop=0.6).empty
    assert levels.band_crossings(segments.iloc[:1]).empty


def test_regression_recovery_and_baseline(bundled_incident, bundled_findings, seed_incident, seed_findings):
    assert levels.regression(bundled_findings)["title"] == "throughput fell from 146.8K to 74.9K tok/s (0.51 of baseline)"
    assert levels.recovery(bundled_findings)["title"] == "throughput recovered to 147.7K tok/s (1.01 of baseline)"
    assert levels.baseline(bundled_incident, bundled_findings) == 146812.5  # the regression's own
    # one baseline for every page and the cost: incident.toml's expected 21,500 when given,
    # over the regression's measured 21,492
    assert levels.baseline(seed_incident, seed_findings) == 21_500.0
    assert levels.regression(seed_findings)["numbers"]["baseline_tok_per_s"] == 21_492.0
    assert seed_incident.config.expected_tok_per_s == 21_500
    assert timeline_impact(seed_incident, seed_findings)["baseline_tok_per_s"] == 21_500.0
    nothing = detect(Incident())
    assert levels.regression(nothing) is None and levels.recovery(nothing) is None
    assert levels.baseline(Incident(), nothing) is None


def test_the_window_the_incident_ended_in(bundled_incident, bundled_findings):
    # the recovery finding's stretch
    assert levels.recovery_window(bundled_incident, bundled_findings) == (T("05:23:48"), T("05:25:11"))
    # without findings: the last run that logged throughput (fixed), its first to its last sample
    assert levels.recovery_window(bundled_incident, bundled_findings.iloc[:0]) == (T("05:23:48"), T("05:25:11"))
    assert levels.recovery_window(Incident(), detect(Incident())) == (None, None)
