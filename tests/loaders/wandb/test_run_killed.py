"""A wandb run killed by SIGTERM seconds after `wandb.init`, written by the real SDK offline.

Its .wandb log holds no timestamped record yet while its output.log already has a console line
with a time: the log's end has no time, and loading must say so instead of failing; the SDK's own
debug logs, which stop without a finish line, date the end instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm

pytest.importorskip("wandb")

CHILD = textwrap.dedent("""
    import sys, time, wandb
    wandb.init(project="killed", dir=sys.argv[1], config={"lr": 0.1})
    print(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()) + " [killed] Loading dataset ...", flush=True)
    time.sleep(120)
""")


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("killed")
    env = dict(os.environ, WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DISABLE_GIT="true")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE,
                             text=True, env=env, cwd=root)
    try:
        first = child.stdout.readline()  # printed right after init returned
        # The SDK copies console output to files/output.log within a second or two but writes
        # its .wandb log in batches (about 15 s); kill between the two, as a crash would.
        _wait_for_console_line(root, "Loading dataset", timeout=60)
        child.send_signal(signal.SIGTERM)
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "Loading dataset" in first
    folders = list((root / "wandb").glob("offline-run-*"))
    assert len(folders) == 1 and list(folders[0].glob("run-*.wandb"))
    return folders[0]


def _wait_for_console_line(root: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for log in root.glob("wandb/offline-run-*/files/output.log"):
            if text in log.read_text(errors="replace"):
                return
        time.sleep(0.2)
    raise AssertionError(f"the wandb SDK did not copy {text!r} to files/output.log in {timeout} s")


def test_killed_run_loads_with_unknown_end(killed_run):
    inc = pm.load_wandb_run(killed_run)
    ev = inc.events
    assert str(ev["time"].dtype) == "datetime64[us, UTC]"
    end = ev[ev["kind"] == "run_end"]
    # The .wandb log holds no timed record; the SDK's debug logs stop without a finish line, and
    # their last line is the latest the run is known to have been alive.
    assert len(end) == 1 and "without a finish line" in end["message"].iloc[0]
    assert end["source"].iloc[0].endswith(".log") and pd.notna(end["time"].iloc[0])
    console = ev[ev["kind"] == "console"]
    assert console["message"].str.contains(r"\[killed\] Loading dataset").any()
    assert console["time"].notna().all()
    rep = next(f for f in inc.load_report.files if f.format == "wandb-log")
    assert any("run end time unknown" in a for a in rep.assumptions)
    assert rep.parsed + rep.n_skipped == rep.read


def test_killed_run_in_an_incident_folder(killed_run):
    inc = pm.load_incident(killed_run.parent.parent)
    assert (inc.events["kind"] == "run_end").sum() == 1
