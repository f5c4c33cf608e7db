"""Each host judged on its own: a real capture as host `a` in a fleet of 8 hosts, the other seven
made from the same real files cut before the incident began (another job on each, started 7 s
after the one before, so that at every second of host a's stall some other host is busy): what is
found on host a is what is found on it alone, named with it, and nothing is found on the others."""

from __future__ import annotations

import datetime as dt
import warnings
from pathlib import Path

import pandas as pd
import pytest
from support.fleet import copy_capture, write_config

import dflash_postmortem as pm
from dflash_postmortem.detect import detect_stalls

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"
HEALTHY = "bcdefgh"


def _load(folder: Path) -> pm.Incident:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the load report lists what was assumed
        return pm.load_incident(folder)


def _fleet(tmp: Path, name: str, cut: dt.datetime, run: str, extra: str = "") -> tuple[pm.Incident, pm.Incident]:
    """(the fleet, host a alone)."""
    src = INCIDENTS / name
    alone = tmp / "alone"
    write_config(alone, {"a": copy_capture(src, alone, "a")}, extra)
    fleet = tmp / "fleet"
    paths = {"a": copy_capture(src, fleet, "a")}
    for k, h in enumerate(HEALTHY, 1):
        paths[h] = copy_capture(src, fleet, h, until=cut, shift_s=7.0 * k, rename={run: f"job-{h}"})
    write_config(fleet, paths, extra)
    return _load(fleet), _load(alone)


def _said(found) -> list[tuple]:
    return [(r["id"], r["title"], [c["id"] for c in r["caused_by"]]) for _, r in found.iterrows()]


@pytest.fixture(scope="module")
def stall_fleet(tmp_path_factory):
    return _fleet(tmp_path_factory.mktemp("stall"), "h200-1gpu-stall", dt.datetime(2026, 11, 30, 9, 28, 54),
                  "stalled", "[detect]\nstall_s = 37.5")


@pytest.fixture(scope="module")
def regression_fleet(tmp_path_factory):
    return _fleet(tmp_path_factory.mktemp("full"), "h200-2gpu-replay-full", dt.datetime(2026, 11, 30, 7, 7, 17),
                  "baseline")


def _as_on_host(alone, host: str) -> list[tuple]:
    """What host a alone says, as the fleet says it of host a."""
    return [(f"{i}@{host}", f"host {host}: {t}", [c if c.startswith("event:") else f"{c}@{host}" for c in causes])
            for i, t, causes in _said(alone)]


def test_the_healthy_hosts_are_busy_during_the_stall(stall_fleet):
    """The premise: read as one machine, some GPU of the fleet is busy at every second of host a's
    stall, which is what hid it."""
    fleet, _ = stall_fleet
    g = fleet.gpus
    during = g[(g["time"] >= "2026-11-30 09:29:00+00:00") & (g["time"] <= "2026-11-30 09:29:30+00:00")]
    busiest = during.assign(t=during["time"].dt.floor("s")).groupby("t")["util_gpu_pct"].max()
    assert len(busiest) == 30 and busiest.min() >= 20
    assert set(during["host"]) == {"a", *HEALTHY}


def test_a_stall_of_one_host_is_found_and_named(stall_fleet, line_at):
    fleet, alone = stall_fleet
    found = pm.detect(fleet)
    assert _said(found) == _as_on_host(pm.detect(alone), "a")
    assert [k for k in found["kind"]] == ["stall", "verified_start", "partial_recovery"]
    assert {n["host"] for n in found["numbers"]} == {"a"}
    stall = found.iloc[0]
    assert stall["numbers"]["holders"] == [474] and stall["numbers"]["also_on_hosts"] == []
    assert stall["numbers"]["gpus"] == [0]
    assert stall["title"].startswith("host a: stall:")
    assert line_at(fleet.root, "a/logs/train.log:41").endswith("[stalled] step 145 loss 11.8771 tok/s 30412 queue 0")
    assert "a/logs/train.log:41" in stall["evidence"]


def test_the_stall_detector_alone_judges_each_host(stall_fleet):
    fleet, _ = stall_fleet
    st = detect_stalls(fleet)
    assert list(st["id"]) == ["stall@2026-11-30T09:28:53@a"]
    assert st.iloc[0]["numbers"]["seconds"] == pytest.approx(56.69, abs=0.01)  # last step -> last sign of life


def test_a_regression_and_failed_restarts_of_one_host_are_found_and_named(regression_fleet):
    fleet, alone = regression_fleet
    found = pm.detect(fleet)
    assert _said(found) == _as_on_host(pm.detect(alone), "a")
    assert list(found["kind"]) == ["throughput_regression", "failed_restart", "failed_restart", "verified_start",
                                   "recovery"]
    reg = found.iloc[0]
    assert reg["title"] == "host a: throughput fell from 21.2K to 13.2K tok/s (0.62 of baseline)"
    assert {n["host"] for n in found["numbers"]} == {"a"}


def test_the_same_finding_on_two_hosts_says_so(stall_fleet):
    """Host a's capture twice (as a and z): each stall names the other host as stalled with it."""
    fleet, _ = stall_fleet
    twin = type(fleet)(config=fleet.config, root=fleet.root)
    for name in ("gpus", "gpu_processes", "events", "processes", "metrics"):
        df = getattr(fleet, name)
        mine = df[df["source"].str.startswith("a/")]
        copy = mine.assign(source="z/" + mine["source"].str.slice(2))
        if "host" in copy.columns:
            copy = copy.assign(host="z")
        if "ref" in copy.columns:
            copy = copy.assign(ref="z/" + copy["ref"].str.slice(2))
        setattr(twin, name, pd.concat([mine, copy], ignore_index=True))
    st = detect_stalls(twin)
    assert list(st["id"]) == ["stall@2026-11-30T09:28:53@a", "stall@2026-11-30T09:28:53@z"]
    assert [n["also_on_hosts"] for n in st["numbers"]] == [["z"], ["a"]]
    assert st.iloc[0]["detail"].endswith("The same at the same time on host(s) z.")
