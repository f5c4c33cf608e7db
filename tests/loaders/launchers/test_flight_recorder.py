"""Flight Recorder dumps: the JSON form read entry by entry (a real gloo dump of a rank whose fifth
collective never completed, fixtures/README.md); the default pickle form recognised and never
opened."""

from __future__ import annotations

import pickle

import pandas as pd

from dflash_postmortem.loaders.launchers.flight_recorder import (
    PICKLE_SKIPPED,
    load_flight_recorder,
    sniff_flight_recorder,
)
from dflash_postmortem.loaders.registry import LoadContext, read_head

from .conftest import FIXTURES

DUMPS = FIXTURES / "torchrun-record-flight-recorder" / "fr"


def _load(path):
    return load_flight_recorder(path, LoadContext(root=path.parent))


def test_json_dump_gives_each_collective():
    path = DUMPS / "fr_trace_rank_1.json"
    assert sniff_flight_recorder(path, read_head(path)) == 0.9
    inc = _load(path)
    ev = inc.events
    assert ev["seq"].tolist() == [1, 2, 3, 4, 5] and (ev["kind"] == "collective").all()
    assert ev["op"].tolist() == ["gloo:all_reduce"] * 3 + ["gloo:barrier", "gloo:all_reduce"]
    assert (ev["rank"] == 1).all() and (ev["timeout_ms"] == 5000).all() and (ev["pg"] == "0 default_pg").all()
    assert ev["time"].iloc[-1] == pd.Timestamp("2026-12-02 01:56:40.309339", tz="UTC")  # 1796176600309339445 ns
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.read == 5
    assert "process group 0: last completed 4, enqueued 5, started -1" in rep.notes
    assert any("rank 1 from the file name" in a for a in rep.assumptions)


def test_pickle_dump_is_never_unpickled(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("evidence was unpickled")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    path = DUMPS / "fr_trace_rank_1"
    assert sniff_flight_recorder(path, read_head(path)) == 0.9
    inc = _load(path)
    rep = inc.load_report.files[0]
    assert inc.events.empty and rep.balanced and dict(rep.skipped) == {PICKLE_SKIPPED: 1}


def test_other_pickles_and_json_are_not_dumps(tmp_path):
    other = tmp_path / "state.pkl"
    other.write_bytes(pickle.dumps({"weights": [1, 2]}))
    assert sniff_flight_recorder(other, read_head(other)) == 0.0
    config = tmp_path / "c.json"
    config.write_text('{"entries": [], "name": "x"}')
    assert sniff_flight_recorder(config, read_head(config)) == 0.0
