"""Throughput regressions on the real H200 capture and the reconstruction of the write-up."""

import shutil
import warnings

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.detect import detect, detect_throughput_regressions
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


def test_a_short_run_that_slowed_part_way_is_a_regression(tmp_path, repo_dir):
    """NiftyNet #47: iterations 3211-3221 at 1-5 s each (one of 21 s), then 64, 75 and 75 s: a 15-20x
    slowdown in one short run. Its noise is the spread of its sample-to-sample steps, not of its
    samples about one median (which the change itself makes): the drop is found, from 0.254 to
    0.0133 steps a second, at 06:07:54."""
    name = "niftynet-iter-time-4s-then-64-75s-per-iter-timestamped-slowdown.log"
    shutil.copy(repo_dir / "tests/fixtures/real-world/train-log" / name, tmp_path / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = detect(inc)
    n = _one(found)["numbers"]
    assert round(n["baseline_tok_per_s"], 3) == 0.254 and round(n["degraded_tok_per_s"], 4) == 0.0133
    assert _one(found)["start"] == pd.Timestamp("2018-02-04 06:07:54.617", tz="UTC")
    assert pm.what_happened(inc, found)[0].startswith(
        "At 06:07:54 UTC throughput fell from 0.254 steps/s to 0.0133 steps/s (0.05 of baseline)")


def _rate_log(path, rates, step_s=1.2):
    """A dated log of one rate line every `step_s` seconds, as Python's logging writes them."""
    t0 = pd.Timestamp("2026-12-07 23:59:00", tz="UTC")
    lines = [f"{t0:%Y-%m-%d %H:%M:%S},000 INFO training to step 100000: batch 16 x 64 tokens"]
    for k, r in enumerate(rates):
        t = t0 + pd.Timedelta(seconds=step_s * (k + 1))
        lines.append(f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d} INFO step {20 * (k + 1)} | loss 7.0 | "
                     f"{20 * 1024 / r * 1000 / 20:.1f} ms/step | {r:,.0f} tok/s")
    path.write_text("\n".join(lines) + "\n")


def test_a_pace_that_falls_line_after_line_is_a_regression(tmp_path):
    """Each line a little slower than the one before (0.8 % a line, with ±3 % noise): no level
    changes by 15 % at once, yet the run ends at 0.7 of its first lines' pace. Told as one
    gradual regression from its first lines' level to its last lines', beginning where the pace
    stayed 15 % below; the same noise about a steady pace is no regression."""
    noise = [0.03, -0.02, 0.01, -0.03, 0.02, 0.0, -0.01, 0.03, -0.02, 0.01]
    falling = [16_000 * 0.992**k * (1 + noise[k % 10]) for k in range(45)]
    _rate_log(tmp_path / "train.log", falling)
    inc = pm.load_incident(tmp_path)
    found = detect(inc)
    r = _one(found)
    n = r["numbers"]
    assert n["gradual"] and not n["across_runs"]
    # the first sixth's median (lines 0-6: the level of line 3, 16,000 x 0.992**3 = 15,619) and the
    # last sixth's (lines 38-44: 16,000 x 0.992**41 = 11,508)
    assert 15_400 < n["baseline_tok_per_s"] < 15_800 and 11_300 < n["degraded_tok_per_s"] < 11_800
    # 0.992**k is below 0.85 of line 3's level from k = 23: the line written at 23:59:28.8
    assert pd.Timestamp("2026-12-07 23:59:26", tz="UTC") <= r["start"] <= pd.Timestamp("2026-12-07 23:59:32", tz="UTC")
    assert pm.what_happened(inc, found)[0] == (
        "Throughput fell steadily within run train, line after line: from 15.6K tok/s at its first lines to 11.5K "
        f"tok/s at its last (0.74 of baseline), lastingly below the baseline from {r['start']:%H:%M:%S} UTC.")
    steady = tmp_path / "steady"
    steady.mkdir()
    _rate_log(steady / "train.log", [16_000 * (1 + noise[k % 10]) for k in range(45)])
    assert (detect(pm.load_incident(steady))["kind"] != "throughput_regression").all()
