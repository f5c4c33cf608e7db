"""The incident timeline and its impact, on the real capture and the reconstruction."""

import pandas as pd

from dflash_postmortem import Incident, timeline
from dflash_postmortem.analysis.timeline import impact


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


def test_no_findings_no_timeline():
    tl = timeline(Incident())
    assert tl.events.empty and tl.impact["first_sign"] is None and tl.impact["gpu_hours_lost"] is None


def test_a_stall_is_recovered_when_training_steps_again():
    """The real crash-stall capture: no throughput drop around the stall, so it ends with the first
    step after it; the baseline is the stalled run's own level, and the cost is the stall's."""
    import warnings
    from pathlib import Path

    import pandas as pd

    import dflash_postmortem as pm
    from dflash_postmortem.analysis.timeline import impact
    from dflash_postmortem.detect import detect
    from dflash_postmortem.present.sentences import what_happened

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-1gpu-stall-crash")
    f = detect(inc)
    imp = impact(inc, f)
    T = lambda x: pd.Timestamp(f"2026-11-30 {x}", tz="UTC")  # noqa: E731
    assert imp["recovered"] == T("09:45:31")  # the relaunch's `step 5` line
    assert imp["mitigated"] == T("09:45:14.153")  # the `launch` command
    assert imp["time_to_recover_s"] == 62.0 and imp["baseline_from"] == "throughput before the stall"
    tok = inc.metrics[(inc.metrics["metric"] == "train/tok_per_s") & (inc.metrics["source"] == "logs/train.log")]
    # the same level as the trainer's own log lines say (the series may take wandb's values)
    assert abs(imp["baseline_tok_per_s"] / tok["value"].tail(20).median() - 1) < 0.005
    assert 0.7 < imp["mean_shortfall"] < 1.0  # 39 s at zero, then the relaunch's start-up
    from dflash_postmortem.analysis.timeline import timeline

    rows = timeline(inc, f).events
    rec = rows[rows["phase"] == "recovery"].iloc[0]
    assert rec["time"] == T("09:45:31") and rec["evidence"][0] == "logs/train_opt2.log:13"
    lines = what_happened(inc, f, imp)
    assert lines[0].startswith("At 09:44:29 UTC training stalled: no step for 43 s at ~0 % GPU utilization, after "
                               "RuntimeError: injected failure in the drafter at its step 100, until a kill stopped it at "
                               "09:45:11 UTC (kill sent SIGTERM to PID 467 (/tmp/stall/incident/run/stalled.pid)); PID 467 "
                               "held its memory.")
    assert lines[1].startswith("Throughput recovered to 20.0K tok/s (1.00 of baseline) at 09:45:31 UTC, "
                               "62 s after the stall began; lost:")
