"""Loading evidence never runs code and never reaches the network on its own (docs/security.md).

A crafted pickle (its reduce opens a marker file for writing) is planted in every place the kit
reads back what it wrote earlier: the store's documents and parts, the manifest, the cache of
loaded incidents; loads, windows, `inspect` and a report then run as usual. The marker never
appears, the incident loads from its evidence, and the load report says what was rebuilt.
A server that incident.toml names is contacted only when the user asks (`online`)."""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import stat
import threading
import warnings
from pathlib import Path

import pytest

from dflash_postmortem import schema
from dflash_postmortem.cli import main
from dflash_postmortem.loaders.prometheus.api import NEEDS_NETWORK
from dflash_postmortem.report import cache as report_cache
from dflash_postmortem.report import notebook
from dflash_postmortem.store import layout
from dflash_postmortem.store.ingest import ingest
from dflash_postmortem.store.load import load_incident
from dflash_postmortem.store.manifest import Manifest

# A small real incident (a crash loop recorded on an H200): what is planted, not how much, is the point.
SMALL = Path(__file__).resolve().parents[1] / "data" / "incidents" / "h200-1gpu-crash-loop"
WINDOW = ("2026-12-02T04:30:00Z", "2026-12-02T05:00:00Z")


class _Planted:
    """What an attacker puts where the kit keeps its own results: unpickling it opens `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def planted(marker) -> bytes:
    return pickle.dumps(_Planted(marker))


@pytest.fixture
def incident(tmp_path):
    folder = tmp_path / "incident"
    shutil.copytree(SMALL, folder)
    return folder


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


def _notes(inc) -> str:
    return "\n".join(inc.load_report.notes)


def test_a_store_planted_with_pickles_is_rebuilt_never_run(incident, tmp_path):
    marker = tmp_path / "ran"
    first = _quiet(load_incident, incident, window=WINDOW)
    store = incident / layout.DEFAULT_NAME
    documents = sorted((store / layout.RESULTS).glob("*.json"))
    assert len(documents) > 3 and not list(store.rglob("*.pkl"))  # the store keeps no pickle at all
    for doc in documents:  # every source's report and runs, the folder walk, the combined report
        doc.write_bytes(planted(marker))
    # what stores of earlier versions held, beside them: never opened
    (store / layout.RESULTS / "combined.pkl").write_bytes(planted(marker))
    again = _quiet(load_incident, incident, window=WINDOW)
    assert not marker.exists()
    assert "not trusted" in _notes(again) and "converted again" in _notes(again)
    for frame in schema.FRAME_NAMES:
        assert len(getattr(again, frame)) == len(getattr(first, frame)), frame
    assert [f.path for f in again.load_report.files] == [f.path for f in first.load_report.files]
    # inspect through the store, as a user would
    assert _quiet(main, ["inspect", str(incident), "--window", ",".join(WINDOW)]) == 0
    assert not marker.exists()


def test_a_planted_part_or_manifest_is_rebuilt(incident, tmp_path):
    marker = tmp_path / "ran"
    first = _quiet(load_incident, incident, window=WINDOW)
    store = incident / layout.DEFAULT_NAME
    part = next(store.glob("gpus/**/*.parquet"))
    part.write_bytes(planted(marker))  # a part is read by DuckDB: not Parquet, so the store is rebuilt
    again = _quiet(load_incident, incident, window=WINDOW)
    assert not marker.exists() and "could not be read back" in _notes(again)
    assert len(again.gpus) == len(first.gpus)
    # a manifest that names a file outside the store is not followed
    manifest = (store / layout.MANIFEST).read_text()
    outside = manifest.replace('"results/', '"../../results/', 1)
    (store / layout.MANIFEST).write_text(outside)
    with pytest.raises(Exception, match="not a document of the store"):
        Manifest.read(*layout.filesystem(str(store)))
    third = _quiet(load_incident, incident, window=WINDOW)
    assert "store manifest not trusted" in _notes(third) and len(third.gpus) == len(first.gpus)
    (store / layout.MANIFEST).write_bytes(planted(marker))
    fourth = _quiet(load_incident, incident, window=WINDOW)
    assert not marker.exists() and "store manifest not trusted" in _notes(fourth)


@pytest.mark.usefixtures("cli_report_kernels")
def test_the_cache_planted_with_pickles_is_rebuilt_never_run(incident, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    cache = tmp_path / "cache"
    monkeypatch.setenv(report_cache.CACHE_ENV, str(cache))
    inc, findings = _quiet(notebook.load_cached, str(incident), masked=True)
    entries = sorted(p for p in cache.iterdir() if p.is_dir())
    assert len(entries) == 2  # the incident as read, and masked
    for entry in entries:
        for f in entry.iterdir():
            f.write_bytes(planted(marker))
        # an entry of an earlier version, beside it
        entry.with_suffix(".pickle").write_bytes(planted(marker))
    again, found_again = _quiet(notebook.load_cached, str(incident), masked=True)
    assert not marker.exists()
    assert "not trusted" in _notes(again) and "loaded again from the evidence" in _notes(again)
    assert found_again["id"].tolist() == findings["id"].tolist()
    assert len(again.events) == len(inc.events)
    # and the report, whose pages read the cache (an entry planted again after the load above),
    # written under a umask that keeps everything to the user: no file of it is widened
    for entry in entries:
        (entry / "incident.json").write_bytes(planted(marker))
    out = tmp_path / "report"
    old = os.umask(0o077)
    try:
        assert _quiet(main, ["report", str(incident), "-o", str(out), "--only", "01", "--no-progress"]) == 0
    finally:
        os.umask(old)
    assert not marker.exists() and (out / "index.html").is_file()
    written = list(out.rglob("*"))
    assert len(written) > 5 and not [p for p in written if p.stat().st_mode & 0o077]


def test_a_cache_folder_others_can_write_is_not_used(incident, tmp_path, monkeypatch):
    cache = tmp_path / "shared-cache"
    cache.mkdir()
    cache.chmod(0o777)
    monkeypatch.setenv(report_cache.CACHE_ENV, str(cache))
    inc, _ = _quiet(notebook.load_cached, str(incident))
    assert list(cache.iterdir()) == []
    assert "can be written by other users (mode 777): not used" in _notes(inc)
    # the user's own folder: the entry is the user's alone
    own = tmp_path / "own-cache"
    monkeypatch.setenv(report_cache.CACHE_ENV, str(own))
    _quiet(notebook.load_cached, str(incident))
    assert stat.S_IMODE(own.stat().st_mode) == 0o700
    for entry in own.iterdir():
        assert stat.S_IMODE(entry.stat().st_mode) == 0o700


def test_the_store_and_cache_follow_the_users_umask(incident, tmp_path, monkeypatch):
    monkeypatch.setenv(report_cache.CACHE_ENV, str(tmp_path / "cache"))
    old = os.umask(0o077)
    try:
        _quiet(ingest, incident)
        _quiet(notebook.load_cached, str(incident))
    finally:
        os.umask(old)
    written = [p for top in (incident / layout.DEFAULT_NAME, tmp_path / "cache") for p in top.rglob("*")]
    assert len(written) > 20
    loose = [p for p in written if p.stat().st_mode & 0o077]
    assert not loose, loose[:5]


class _Listener:
    """A TCP listener on a loopback port that counts the connections made to it (answering none)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self):
        self.sock.close()


@pytest.fixture
def listener():
    lst = _Listener()
    yield lst
    lst.close()


def test_a_server_named_in_incident_toml_is_not_contacted_unless_asked(tmp_path, listener, capsys):
    url = f"http://127.0.0.1:{listener.port}"
    (tmp_path / "incident.toml").write_text(f'[prometheus]\nurl = "{url}"\n'
                                            'window = ["2025-12-01T01:00:00Z", "2025-12-01T01:10:00Z"]\ntimeout = 2\n')
    (tmp_path / "smi.csv").write_text("timestamp, index, memory.used [MiB]\n2025/12/01 01:00:00.000, 0, 1024 MiB\n")
    inc = _quiet(load_incident, tmp_path)
    assert listener.connections == 0 and len(inc.gpus) == 1
    (rep,) = [f for f in inc.load_report.files if f.path == f"prometheus:{url}"]
    assert rep.notes == [NEEDS_NETWORK] and rep.error is None
    assert _quiet(main, ["inspect", str(tmp_path), "-v"]) == 0
    assert listener.connections == 0 and "needs the network" in capsys.readouterr().out
    # asked: the server is queried (this listener answers nothing, so the source is an error)
    inc = _quiet(load_incident, tmp_path, online=True)
    assert listener.connections >= 1
    (rep,) = [f for f in inc.load_report.files if f.path == f"prometheus:{url}"]
    assert rep.error
