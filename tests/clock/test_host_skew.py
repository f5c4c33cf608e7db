"""Clocks across hosts (align.align_host_clocks, host_skew): the real stall capture copied to
several hosts whose clocks run ahead or behind by a known amount (every stamp rewritten as that
clock would have written it; a whole-second stamp at a moment drawn within its second). The
estimate must hold the truth within the uncertainty it reports: +-0.5 s, half the resolution of
the logs' whole-second stamps, which is all that two such stamps of one moment can say."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from support.fleet import copy_capture, write_config

import dflash_postmortem as pm
from dflash_postmortem.detect import detect_stalls
from dflash_postmortem.errors import IncidentConfigError

STALL = Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-1gpu-stall"
# host -> how far its clock runs ahead of host a's, seconds
AHEAD = {"b": 7.3, "c": -3.0, "d": 0.0, "e": 95.6}


def _load(folder: Path) -> pm.Incident:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the load report lists what was assumed
        return pm.load_incident(folder)


def _fleet(folder: Path, ahead: dict[str, float], extra: str = "", **only) -> pm.Incident:
    paths = {"a": copy_capture(STALL, folder, "a")}
    for h, s in ahead.items():
        paths[h] = copy_capture(STALL, folder, h, shift_s=s)
    for h, skip in only.items():
        paths[h] = copy_capture(STALL, folder, h, skip=skip)
    write_config(folder, paths, extra)
    return _load(folder)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    # Host f has only its NVML recordings: no moment it shares with the others.
    return _fleet(tmp_path_factory.mktemp("skew"), AHEAD, "[detect]\nstall_s = 37.5", f=("wandb", "logs", "run"))


def _steps(inc: pm.Incident, host: str):
    m = inc.metrics
    m = m[m["source"] == f"{host}/logs/train.log"]
    return m.drop_duplicates("step").set_index("step")["time"]


def test_each_skew_is_recovered_within_its_uncertainty(fleet):
    clocks = fleet.load_report.host_clocks
    assert sorted(clocks) == ["b", "c", "d", "e"]  # f shares nothing: no estimate
    for host, ahead in AHEAD.items():
        c = clocks[host]
        assert c["reference"] == "a" and c["uncertainty_s"] == 0.5
        assert abs(c["seconds"] - (-ahead)) <= c["uncertainty_s"], (host, c)
        # every step of train.log and train_opt2.log, the relaunch's command line and the launch
        assert c["pairs"] == 59 and c["methods"] == ["launch", "training step"]


def test_large_skews_are_applied_and_reported(fleet):
    clocks = fleet.load_report.host_clocks
    assert {h: c["applied"] for h, c in clocks.items()} == {"b": True, "c": True, "d": False, "e": True}
    a = _steps(fleet, "a")
    for host in "bce":
        gap = (_steps(fleet, host) - a).dt.total_seconds()
        assert len(gap) == 29 and gap.abs().max() <= 1.0, host
    said = fleet.load_report["b/logs/train.log"].assumptions
    assert any(s.startswith("clock of host b is +7.0 s (+-0.5 s) from host a's, estimated from 59 moments")
               and s.endswith("shifted by -7.0 s onto host a's clock") for s in said)
    assert any(n.startswith("clock of host d is") and "not applied" in n for n in fleet.load_report.notes)


def test_the_stalls_line_up_once_the_clocks_agree(fleet):
    """The same stall on every host (f's own NVML recordings show it too): once their clocks
    agree, it starts at the same second on each, and each names the others."""
    st = detect_stalls(fleet)
    assert sorted(n["host"] for n in st["numbers"]) == list("abcdef")
    # where the logs are, a stall begins at the last step; f has only GPU samples, whose stall
    # begins when its GPU went idle, the two seconds the GPU took to drain after that step
    logged = st[[n["host"] != "f" for n in st["numbers"]]]
    assert (logged["start"].max() - logged["start"].min()).total_seconds() <= 1.0
    assert 0 <= (st["start"].max() - logged["start"].min()).total_seconds() <= 3.0
    assert all(sorted([n["host"], *n["also_on_hosts"]]) == list("abcdef") for n in st["numbers"])


def test_an_explicit_offset_wins(tmp_path):
    inc = _fleet(tmp_path, {"b": 7.3}, '[offsets]\n"b/" = -7.0')
    c = inc.load_report.host_clocks["b"]
    assert c["applied"] is False and "[offsets]" in c["why"]
    assert inc.load_report.offsets == {"b/": -7.0}
    assert abs(c["seconds"]) <= 0.5  # what is left after the offset incident.toml gave
    gap = (_steps(inc, "b") - _steps(inc, "a")).dt.total_seconds()
    assert gap.abs().max() <= 1.0


def test_estimate_only(tmp_path):
    inc = _fleet(tmp_path, {"b": 7.3}, 'host_clocks = "estimate"')
    c = inc.load_report.host_clocks["b"]
    assert c["applied"] is False and abs(c["seconds"] + 7.3) <= 0.5
    gap = (_steps(inc, "b") - _steps(inc, "a")).dt.total_seconds()
    assert gap.min() >= 7.0  # left as its own clock wrote it


def test_one_host_gets_no_skew(bundled_incident):
    assert bundled_incident.load_report.host_clocks == {}


def test_a_bad_policy_is_one_clear_error(tmp_path):
    (tmp_path / "incident.toml").write_text('host_clocks = "always"\n', encoding="utf-8")
    with pytest.raises(IncidentConfigError, match=r"host_clocks: expected one of \['auto', 'estimate', 'apply'\], "
                                                  r"found 'always' \(a string\)"):
        pm.load_incident(tmp_path)
