"""The model's frames the cache of loaded incidents keeps (model/kept.py): read back equal to
what the model builds from the same frames, and a damaged copy is never taken."""

import dataclasses
import json
import warnings

import pandas as pd
import pytest
from support.bundled import INCIDENTS, loaded

from dflash_postmortem.model import attempts, states
from dflash_postmortem.model.ledger import ledger, ledger_parts
from dflash_postmortem.report import cache as report_cache
from dflash_postmortem.report import notebook

# lists of PIDs, runs and evidence, missing ends and refs, nullable numbers and flags
SHAPES = ["h200-1gpu-crash-loop", "h200-1gpu-torchrun-halt", "h200-2gpu-replay-full", "seed-8gpu-reconstruction"]


@pytest.mark.parametrize("name", SHAPES)
def test_the_model_read_back_from_the_cache_is_the_model_built(name):
    loaded(name)  # written by this call or an earlier one
    inc, _ = loaded(name)  # read back: the model comes with it
    assert {k[0] for k in inc.__dict__["_computed"]} >= {"attempts", "states", "ledger"}
    fresh = dataclasses.replace(inc)  # the same frames, nothing computed yet
    assert "_computed" not in fresh.__dict__
    for frame in (attempts, states, ledger, ledger_parts):
        pd.testing.assert_frame_equal(frame(inc), frame(fresh).reset_index(drop=True))
    att = attempts(inc)
    assert len(att) >= 2 and att["pids"].map(type).eq(list).all()


def test_a_damaged_model_in_the_cache_is_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv(report_cache.CACHE_ENV, str(tmp_path))
    folder = str(INCIDENTS / "h200-1gpu-crash-loop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first, _ = notebook.load_cached(folder)
        (entry,) = [p for p in tmp_path.iterdir() if p.is_dir()]
        doc = json.loads((entry / "incident.json").read_bytes())
        doc["data"]["model"]["attempts"]["rows"][0].pop()  # a row one value short
        (entry / "incident.json").write_text(json.dumps(doc))
        again, _ = notebook.load_cached(folder)
    assert any("not trusted" in n and "one width" in n for n in again.load_report.notes)
    pd.testing.assert_frame_equal(attempts(again), attempts(first))
