"""An incident folder as users really have it: nothing in it can abort the load, block it, or go
missing from the load report. Every entry below is built for real (a FIFO, a socket, link loops,
a file name that is not UTF-8, a UTF-16 capture written the way PowerShell writes it) and, for
permissions, read by an unprivileged user, because root reads everything."""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.errors import LoadError
from dflash_postmortem.loaders import registry

SMI_CSV = "logs/smi_stream.csv"


@pytest.fixture
def incident(tmp_path, bundled_dir) -> Path:
    """A folder holding one real capture (the bundled nvidia-smi stream) plus whatever a test adds."""
    folder = tmp_path / "incident"
    folder.mkdir()
    shutil.copy(bundled_dir / SMI_CSV, folder / "smi.csv")
    return folder


@pytest.fixture
def no_hang():
    """Fail instead of hanging forever if anything opens a FIFO."""
    def _timeout(signum, frame):
        raise TimeoutError("load_incident blocked")
    old = signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _entry(inc, path):
    return inc.load_report[path]


def _gpu_rows_loaded(inc) -> None:
    assert len(inc.gpus) == 580 and set(inc.gpus["source"]) == {"smi.csv"}


def test_fifo_and_socket_are_listed_never_opened(incident, no_hang):
    os.mkfifo(incident / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(incident / "agent.sock"))
    try:
        inc = pm.load_incident(incident)
    finally:
        sock.close()
    _gpu_rows_loaded(inc)
    assert "named pipe (FIFO): not read" in _entry(inc, "pipe").notes[0]
    assert _entry(inc, "agent.sock").notes == ["a socket: not read"]
    assert inc.load_report.failed == []


def test_link_loops_and_dangling_links_are_entries(incident):
    os.symlink("b", incident / "a")
    os.symlink("a", incident / "b")
    os.symlink("gone.log", incident / "dangling")
    (incident / "sub").mkdir()
    os.symlink("..", incident / "sub" / "up")  # a folder loop: the incident contains itself
    inc = pm.load_incident(incident)
    _gpu_rows_loaded(inc)
    assert _entry(inc, "a").error == "symbolic link loop: not read"
    assert _entry(inc, "dangling").error == "dangling symbolic link to gone.log: not read"
    assert _entry(inc, "sub/up/").notes == ["link to ./, read there"]
    assert sorted(f.path for f in inc.load_report.failed) == ["a", "b", "dangling"]


def test_linked_folder_is_read_once_under_its_own_name(incident, tmp_path, bundled_dir):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(bundled_dir / "logs" / "train.log", elsewhere / "train.log")
    os.symlink(elsewhere, incident / "logs")
    inc = pm.load_incident(incident)
    assert _entry(inc, "logs/train.log").format == "training-log"
    assert (inc.metrics["source"] == "logs/train.log").sum() > 0


def test_name_that_is_not_utf8_is_loaded_and_said(incident, bundled_dir):
    raw = os.fsencode(incident) + b"/caf\xe9.csv"
    with open(raw, "wb") as f:
        f.write((bundled_dir / SMI_CSV).read_bytes())
    inc = pm.load_incident(incident)
    rep = _entry(inc, "caf\ufffd.csv")
    assert rep.format == "nvidia-smi-query-csv" and rep.error is None
    assert "file name is not valid UTF-8: shown with U+FFFD in its place" in rep.notes
    assert (inc.gpus["source"] == "caf\ufffd.csv").sum() == 580


def test_a_loader_that_raises_fails_its_file_only(incident, bundled_dir, monkeypatch):
    shutil.copy(bundled_dir / "logs" / "train.log", incident / "train.log")
    fmt = registry.FORMATS["training-log"]

    def boom(path, ctx):
        raise KeyError("no such column")

    monkeypatch.setitem(registry.FORMATS, "training-log", dataclasses.replace(fmt, load=boom))
    inc = pm.load_incident(incident)
    _gpu_rows_loaded(inc)
    rep = _entry(inc, "train.log")
    assert rep.error == "training-log could not read it: KeyError: 'no such column'"
    assert "Traceback" in rep.trace and "boom" in rep.trace
    with pytest.raises(LoadError, match="train.log: training-log failed: KeyError"):
        pm.load_incident(incident, on_bad_line="raise")


def test_a_sniffer_that_raises_is_noted_and_others_decide(incident, monkeypatch):
    fmt = registry.FORMATS["nvidia-smi-table"]

    def broken(path, head):
        raise IndexError("list index out of range")

    monkeypatch.setitem(registry.FORMATS, "nvidia-smi-table", dataclasses.replace(fmt, sniff=broken))
    inc = pm.load_incident(incident)
    _gpu_rows_loaded(inc)
    assert _entry(inc, "smi.csv").format == "nvidia-smi-query-csv"
    assert "smi.csv: sniffer nvidia-smi-table failed: IndexError: list index out of range" in inc.load_report.notes


def test_strict_stops_at_the_first_unreadable_entry(incident):
    os.symlink("gone.log", incident / "dangling")
    with pytest.raises(LoadError, match="dangling: dangling symbolic link to gone.log"):
        pm.load_incident(incident, on_bad_line="raise")


def test_powershell_utf16_capture_reads_like_the_original(incident, bundled_dir):
    """Windows PowerShell 5's `nvidia-smi ... > smi.csv` writes UTF-16LE with a BOM and CRLF."""
    text = (bundled_dir / SMI_CSV).read_text(encoding="utf-8").replace("\n", "\r\n")
    (incident / "smi.csv").write_bytes(text.encode("utf-16"))
    (incident / "bom.csv").write_bytes(b"\xef\xbb\xbf" + (bundled_dir / SMI_CSV).read_bytes())
    inc = pm.load_incident(incident)
    utf16, bom = _entry(inc, "smi.csv"), _entry(inc, "bom.csv")
    assert utf16.format == bom.format == "nvidia-smi-query-csv"
    assert "read as UTF-16-LE (byte order mark)" in utf16.assumptions
    assert "UTF-8 byte order mark dropped" in bom.assumptions
    first = inc.gpus[inc.gpus["source"] == "smi.csv"].iloc[0]
    assert first["time"] == pd.Timestamp("2026-11-30 05:20:20.701", tz="UTC")
    assert first["uuid"] == "GPU-a5691722-9f4e-bdd3-1ccc-b9d63fef5239"
    assert (inc.gpus["source"] == "smi.csv").sum() == (inc.gpus["source"] == "bom.csv").sum() == 580
    assert utf16.balanced and bom.balanced


def test_nul_bytes_in_a_log_head_are_removed_and_counted(incident, bundled_dir):
    data = (bundled_dir / "logs" / "train.log").read_bytes()
    cut = data.index(b"\n", 200) + 1
    (incident / "train.log").write_bytes(data[:cut] + b"\x00" * 7 + data[cut:])
    inc = pm.load_incident(incident)
    rep = _entry(inc, "train.log")
    assert rep.format == "training-log"
    assert "7 NUL bytes removed (a writer killed mid-block leaves them)" in rep.notes
    clean = pm.load_incident(bundled_dir / "logs" / "train.log")
    assert len(inc.metrics) == len(clean.metrics)


def test_a_log_quoted_whole_reads_like_the_original(incident, bundled_dir):
    """A log pasted into an issue as a quote (GitHub's "Quote reply": `> ` before every line, `>`
    alone on a blank one): its marks are taken off each line, the lines keep their numbers."""
    lines = (bundled_dir / "logs" / "train.log").read_text().splitlines()
    (incident / "quoted.log").write_text("".join(f"> {ln}\n" if ln.strip() else ">\n" for ln in lines))
    inc = pm.load_incident(incident)
    rep = _entry(inc, "quoted.log")
    assert rep.format == "training-log"
    assert "a quote's marks (`> `) taken off each line: a paste quoted as a whole" in rep.assumptions
    clean = pm.load_incident(bundled_dir / "logs" / "train.log")
    mine = inc.metrics[inc.metrics["source"] == "quoted.log"]
    assert len(mine) == len(clean.metrics) > 500
    assert mine["ref"].tolist() == [r.replace("train.log", "quoted.log") for r in clean.metrics["ref"]]
    assert mine["value"].tolist() == clean.metrics["value"].tolist()


def test_a_quote_mark_straddling_two_chunks_is_taken_off(tmp_path):
    """The transcoder reads a file a chunk at a time: a line's marks cut by a chunk's end are
    taken off as whole ones, a `>>>` line (Python's prompt) is no quote and stays."""
    from dflash_postmortem.loaders import encoding

    body = "".join(f"> > line {i:07d} of a quote within a quote\n" for i in range(40_000))  # > 1 MiB
    src = tmp_path / "q.txt"
    src.write_text(body + ">>> print(1)\n")
    enc = encoding.plan(src, src.read_bytes()[:65536])
    assert enc.unquote
    out = encoding.transcode(src, tmp_path / "out.txt", enc).path.read_text().splitlines()
    assert out[:2] == ["line 0000000 of a quote within a quote", "line 0000001 of a quote within a quote"]
    assert len(out) == 40_001 and all(ln.startswith("line ") for ln in out[:-1]) and out[-1] == ">>> print(1)"


_UNPRIVILEGED = os.geteuid() != 0 or shutil.which("setpriv") is not None


def _as_unprivileged(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]


@pytest.mark.skipif(not _UNPRIVILEGED, reason="running as root without setpriv: permissions cannot be denied")
def test_unreadable_file_and_folder_are_entries(bundled_dir):
    # Not under pytest's tmp_path: its parent is private to root, so the unprivileged user could
    # not reach the incident at all.
    top = Path(tempfile.mkdtemp(prefix="dflash-perm-"))
    try:
        top.chmod(0o755)
        folder = top / "incident"
        folder.mkdir()
        folder.chmod(0o755)
        shutil.copy(bundled_dir / SMI_CSV, folder / "smi.csv")
        (folder / "smi.csv").chmod(0o644)
        shutil.copy(bundled_dir / "logs" / "train.log", folder / "secret.log")
        (folder / "secret.log").chmod(0o000)
        (folder / "private").mkdir()
        (folder / "private" / "x.log").write_text("x\n")
        (folder / "private").chmod(0o000)
        code = ("import dflash_postmortem as pm, sys; inc = pm.load_incident(sys.argv[1]); "
                "print(len(inc.gpus)); [print(f.path, '|', f.error) for f in inc.load_report.failed]")
        r = subprocess.run(_as_unprivileged([sys.executable, "-c", code, str(folder)]),
                           capture_output=True, text=True, cwd="/", timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines() == [
            "580", "private/ | folder could not be listed: Permission denied",
            "secret.log | could not be read: Permission denied",
        ]
    finally:
        for p in (top / "incident" / "private", top / "incident" / "secret.log"):
            if p.exists():
                p.chmod(0o755)
        shutil.rmtree(top)
