"""Throughput regressions on the real H200 capture and the reconstruction of the write-up."""

import pandas as pd

from dflash_postmortem.detect import detect_throughput_regressions
from dflash_postmortem.detect.throughput import segments, series
from dflash_postmortem.shell_words import invocation


def _one(findings):
    reg = findings[findings["kind"] == "throughput_regression"]
    assert len(reg) == 1, reg["title"].tolist()
    return reg.iloc[0]


def test_bundled_regression_begins_with_run_regressed(bundled_findings, bundled_incident):
    r = _one(bundled_findings)
    n = r["numbers"]
    assert 145_000 < n["baseline_tok_per_s"] < 149_000
    assert 64_000 <= n["degraded_tok_per_s"] <= 78_000
    assert (n["run_before"], n["run_after"]) == ("baseline", "regressed")
    first = bundled_incident.metrics.query("run == 'regressed' and metric == 'train/tok_per_s'")["time"].min()
    assert first <= r["start"] <= first + pd.Timedelta(seconds=2)  # the warm-up sample at most
    assert n["run_after_launch"] == pd.Timestamp("2026-11-30 05:21:42.681", tz="UTC")


def test_bundled_flag_differences_are_candidates(bundled_findings):
    n = _one(bundled_findings)["numbers"]
    assert n["flag_differences"] == ["--fast-linear-attn 0", "--use-reentrant 0"]
    assert "--fast-linear-attn 0 --use-reentrant 0" in " ".join(n["candidates"])
    # --seconds and --run-name differ too, but name or bound the run: not candidates
    assert "--seconds" not in " ".join(n["candidates"])


def test_seed_regression_ratio_and_causes(seed_findings):
    r = _one(seed_findings)
    n = r["numbers"]
    assert abs(n["ratio"] - 12_400 / 21_500) < 0.02
    assert (n["run_before"], n["run_after"]) == ("baseline", "opt")
    assert "--use-reentrant False" in n["flag_differences"]
    labels = [c.split(":")[0] for c in n["candidates"]]
    assert {"fast path missing", "compile error", "thread crash"} <= set(labels)


def test_warm_up_is_dropped_and_levels_merge(bundled_incident):
    s = series(bundled_incident)
    base = s[s["run"] == "baseline"]
    assert base["value"].iloc[0] == 148_292  # the 11958 tok/s first interval (step 5) is warm-up
    segs = segments(s)
    # baseline and fixed are one level each; the noisy regressed run may split, always far below
    assert abs(segs["level"].iloc[-1] / segs["level"].iloc[0] - 1) < 0.01
    assert 146_000 < segs["level"].iloc[0] < 148_000
    assert segs["level"].iloc[1:-1].between(50_000, 80_000).all()


def test_within_run_drop_found(seed_incident):
    """A drop inside one run (no relaunch) is a regression too."""
    m = seed_incident.metrics
    one = m[m["run"] == "baseline"].copy()
    tok = one["metric"] == "train/tok_per_s"
    late = one["time"] > one["time"].quantile(0.6)
    one.loc[tok & late, "value"] *= 0.6
    inc = type(seed_incident)(metrics=one, config=seed_incident.config)
    r = _one(detect_throughput_regressions(inc))
    assert not r["numbers"]["across_runs"]
    assert abs(r["numbers"]["ratio"] - 0.6) < 0.03


def test_invocation_parses_flags():
    script, flags = invocation(
        "cd /w && setsid nohup python3 /srv/t/trainer.py --run-name x --use-reentrant 0 --fast > /l 2>&1 &")
    assert script == "trainer.py"
    assert flags == {"--run-name": "x", "--use-reentrant": "0", "--fast": "true"}
