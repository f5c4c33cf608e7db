"""What the kit says about every bundled incident, as reviewed: the findings (id, title, causes),
what happened, and the impact numbers. A change here is a change in what users are told: it must
be deliberate. After reviewing one, rewrite the expectations with

    DFLASH_UPDATE_EXPECTED=1 .venv/bin/python -m pytest tests/test_bundled_findings.py
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
from support.bundled import keep

import dflash_postmortem as pm
from dflash_postmortem.analysis.timeline import impact

REPO = Path(__file__).resolve().parents[1]
EXPECTED = REPO / "tests" / "bundled_findings.json"
INCIDENTS = sorted(p.name for p in (REPO / "data" / "incidents").iterdir() if p.is_dir())
_NUMBERS = ("time_to_detect_s", "time_to_mitigate_s", "time_to_recover_s", "baseline_tok_per_s",
            "gpu_hours_lost", "tokens_lost")


def _said(name: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(REPO / "data" / "incidents" / name)
    found = pm.detect(inc)
    cost = impact(inc, found)
    keep(name, inc, found)  # for this incident's report test, next on this worker (support/bundled.py)
    return {
        "findings": [{"id": r["id"], "title": r["title"], "caused_by": [c["id"] for c in r["caused_by"]]}
                     for _, r in found.iterrows()],
        "what_happened": pm.what_happened(inc, found, cost),
        "impact": {k: (None if cost.get(k) is None else round(float(cost[k]), 2)) for k in _NUMBERS},
    }


@pytest.fixture(scope="module")
def expected() -> dict:
    return json.loads(EXPECTED.read_text(encoding="utf-8")) if EXPECTED.exists() else {}


@pytest.mark.parametrize("name", INCIDENTS)
def test_the_kit_says_what_was_reviewed(name, expected):
    got = _said(name)
    if os.environ.get("DFLASH_UPDATE_EXPECTED"):
        current = json.loads(EXPECTED.read_text(encoding="utf-8")) if EXPECTED.exists() else {}
        current[name] = got
        EXPECTED.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        pytest.skip("expectations rewritten")
    assert name in expected, f"{name}: no reviewed expectations (see this file's docstring)"
    assert got == expected[name]
