"""The detectors on the real `full` replay captured on 2 x H200 (data/incidents/h200-2gpu-replay-full).

What was staged is in its README (from logs/operator.log): baseline, a regressed run with every
suspected cause on, a restart whose session the operator killed, one whose log folder did not
exist, and a relaunch through `dflash-postmortem launch` that verified its own start.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import dflash_postmortem as pm
from dflash_postmortem.detect import detect

# The repository root (tests/ is one level down). Not imported from conftest: notebooks/ has
# a conftest.py too, and pytest puts both folders on sys.path.
REPO = Path(__file__).resolve().parents[2]

ROOT = REPO / "data" / "incidents" / "h200-2gpu-replay-full"


@pytest.fixture(scope="module")
def incident():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(ROOT)


@pytest.fixture(scope="module")
def found(incident):
    return detect(incident)


def _kind(f, kind):
    return f[f["kind"] == kind]


def _cited(ref: str) -> str:
    path, _, n = ref.rpartition(":")
    lines = (ROOT / path).read_text(encoding="utf-8", errors="replace").splitlines()
    assert n.isdigit() and 1 <= int(n) <= len(lines), f"{ref}: no such line"
    return lines[int(n) - 1]


def test_regression_levels_and_candidates(found):
    reg = _kind(found, "throughput_regression")
    assert len(reg) == 1
    r = reg.iloc[0]
    n = r["numbers"]
    assert 20_500 < n["baseline_tok_per_s"] < 22_000
    assert 12_500 < n["degraded_tok_per_s"] < 14_000
    assert n["ratio"] == pytest.approx(0.62, abs=0.02)
    assert (n["run_before"], n["run_after"]) == ("baseline", "regressed")
    assert {"--fast-linear-attn 0", "--use-reentrant 0", "--draft-layer-ckpt 1",
            "--lm-head-opt 0"} <= set(n["flag_differences"])
    warn = [c for c in n["candidates"] if c.startswith("fast path missing")]
    assert warn and "fast path is not available" in warn[0]
    cited = [_cited(ref) for ref in r["evidence"]]
    assert any("--lm-head-opt 0" in c for c in cited)
    # the warning cited is in the regressed run's log, before its first degraded sample
    fast = [ref for ref in r["evidence"] if "fast path is not available" in _cited(ref)]
    assert fast and fast[0].startswith("logs/train_opt.log:")
    assert f"{r['start']:%H:%M:%S}" == "07:07:38"


def test_restart_killed_with_its_session(found):
    fr = _kind(found, "failed_restart")
    r = fr[fr["start"].dt.strftime("%H:%M:%S") == "07:08:05"].iloc[0]
    assert r["numbers"]["reason"] == "launching session killed"
    assert r["title"].endswith("launching session killed / process died during start-up")
    assert r["numbers"]["pid"] == 3491
    assert r["numbers"]["checks"] == {"process": True, "log": True, "gpu_memory": False, "first_step": False}
    cited = [_cited(ref) for ref in r["evidence"]]
    assert any(c.endswith("$ kill -KILL -- -3489; echo session 3489 closed") for c in cited)
    assert "0" in [c.strip() for c in cited]  # the ps | wc -l answer after the kill
    assert [c for c in cited if c.endswith(", 0 MiB, 0 %")] == ["0, 0 MiB, 0 %", "1, 0 MiB, 0 %"]
    assert "2026-11-30 07:08:09 [fixed] Loading dataset ..." in cited  # the log's only line
    assert "after 1 line(s)" in r["detail"]


def test_restart_into_missing_folder(found):
    fr = _kind(found, "failed_restart")
    assert [f"{t:%H:%M:%S}" for t in fr["start"]] == ["07:08:05", "07:08:11"]
    r = fr.iloc[1]
    assert r["numbers"]["reason"] == "redirect target missing"
    assert "log path does not exist, process never started" in r["title"]
    assert r["numbers"]["checks"] == {"process": False, "log": False, "gpu_memory": False, "first_step": False}
    cited = [_cited(ref) for ref in r["evidence"]]
    assert "bash: line 1: /tmp/full/incident/workspace/train_opt2.log: No such file or directory" in cited


def test_verified_launch_is_the_mitigation(incident, found):
    ok = _kind(found, "verified_start")
    assert len(ok) == 1
    v = ok.iloc[0]
    assert f"{v['start']:%H:%M:%S}" == "07:08:13" and v["numbers"]["pid"] == 3626
    cited = [_cited(ref) for ref in v["evidence"]]
    assert any(c.startswith("launch: gpu   ok") and "pid 3626 holds 3350 MiB on GPU 0" in c for c in cited)
    assert any(c.startswith("launch: step  ok") and "first match:" in c for c in cited)
    assert "launch: started" in cited
    launch = incident.events[(incident.events["kind"] == "launch") & (incident.events["ref"] == "logs/operator.log:27")]
    assert launch["log_path"].tolist() == ["/tmp/full/incident/logs/train_opt2.log"]
    assert launch["pid"].tolist() == [3626]
    tl = pm.timeline(incident, found)
    mit = tl.events[tl.events["phase"] == "mitigation"]
    assert len(mit) == 1 and f"{mit['time'].iloc[0]:%H:%M:%S}" == "07:08:13"
    assert "logs/operator.log:31" in mit["evidence"].iloc[0]
    assert "dflash_postmortem.cli launch" in mit["what"].iloc[0]


def test_recovery(found):
    rec = _kind(found, "recovery")
    assert len(rec) == 1
    n = rec.iloc[0]["numbers"]
    assert f"{rec.iloc[0]['start']:%H:%M:%S}" == "07:08:31"
    assert n["run"] == "fixed" and n["level_tok_per_s"] > 0.9 * n["baseline_tok_per_s"]
    assert n["time_to_recover_s"] == pytest.approx(53, abs=2)


def test_no_spurious_findings(found):
    assert set(found["kind"]) == {"throughput_regression", "failed_restart", "verified_start", "recovery"}


def test_every_evidence_ref_resolves(found):
    for _, f in found.iterrows():
        assert f["evidence"], f["title"]
        for ref in f["evidence"]:
            assert _cited(ref).strip(), ref
