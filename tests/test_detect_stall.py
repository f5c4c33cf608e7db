"""Stalls: memory held, utilization ~0, no step progress."""

import pandas as pd

from dflash_postmortem.detect import detect_stalls


def test_no_stall_in_the_captures(bundled_findings, seed_findings):
    assert (bundled_findings["kind"] != "stall").all()
    assert (seed_findings["kind"] != "stall").all()


def test_stall_when_steps_stop_and_gpus_idle(seed_incident):
    """Cut the relaunched run's steps after 22:00 and zero its utilization: a stall appears."""
    cut = pd.Timestamp("2026-05-09 22:00", tz="UTC")
    g = seed_incident.gpus.copy()
    g.loc[g["time"] >= cut, "util_gpu_pct"] = 0.0
    m = seed_incident.metrics
    inc = type(seed_incident)(gpus=g, metrics=m[m["time"] < cut], processes=seed_incident.processes,
                              config=seed_incident.config)
    st = detect_stalls(inc)
    assert len(st) == 1
    assert cut <= st.iloc[0]["start"] <= cut + pd.Timedelta(seconds=30)
    assert st.iloc[0]["numbers"]["processes_alive"] >= 1
