"""Shell histories with times, as real shells write them: bash (HISTTIMEFORMAT, `history -a` at
each prompt), zsh's extended history, and bash's own `history` listing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import warnings

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders import sniff
from dflash_postmortem.replay.interactive_shell import InteractiveShell

LAUNCH = "nohup python3 train.py --run-name first > logs/first.log 2>&1 &"


def _load(folder):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(folder)


def test_bash_writes_its_history_and_each_command_is_read_at_its_time(tmp_path):
    """An operator's bash that keeps its history with times: the launch and the kill of a tmux
    session are read from it at the second they were typed, every line counted."""
    folder = tmp_path / "incident"
    (folder / "logs").mkdir(parents=True)
    history = folder / "logs" / "bash_history"
    shell = InteractiveShell(folder, tmp_path / "tty.log", dict(os.environ, COLUMNS=""), history=history)
    try:
        # bash stamps its history with time(), which reads the kernel's coarse clock: up to a
        # tick (a few ms) behind this one, a second behind across a second's boundary
        before = (pd.Timestamp.now(tz="UTC") - pd.Timedelta(milliseconds=50)).floor("s")
        shell.run("cd .")
        shell.run(LAUNCH)
        time.sleep(1.1)
        shell.run("tmux kill-session -t train")
        after = pd.Timestamp.now(tz="UTC").ceil("s")
    finally:
        shell.close()
    text = history.read_text()
    assert re.match(r"#\d{10}\n", text), text  # bash's own form: the epoch, then the command
    assert sniff(history)[0].name == "shell-history"
    inc = _load(folder)
    ev = inc.events
    launch = ev[ev["kind"] == "launch"].iloc[0]
    assert (launch["log_path"], launch["run"], launch["ref"]) == ("logs/first.log", "first", "logs/bash_history:4")
    kill = ev[ev["kind"] == "kill_sent"].iloc[0]
    assert (kill["target_session"], kill["signal"], kill["ref"]) == ("train", "SIGHUP", "logs/bash_history:6")
    assert before <= launch["time"] <= kill["time"] <= after
    assert (kill["time"] - launch["time"]).total_seconds() >= 1
    f = inc.load_report.files[0]
    assert (f.format, f.read, f.parsed, sum(f.skipped.values())) == ("shell-history", len(text.splitlines()),
                                                                     len(text.splitlines()), 0)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh here (make shells installs it)")
def test_zsh_extended_history_with_a_command_over_two_lines(tmp_path):
    history = tmp_path / "zsh_history"
    typed = ("setopt extended_history inc_append_history\n"
             "nohup python3 train.py --run-name z \\\n  --lr 3e-4 > z.log 2>&1 &\n"
             "pkill -f 'run-name z'\n")
    env = {k: v for k, v in os.environ.items() if k != "HISTFILE"} | {"ZDOTDIR": str(tmp_path)}
    (tmp_path / ".zshrc").write_text(f"HISTFILE={history}\nSAVEHIST=100\nHISTSIZE=100\n")
    t0 = pd.Timestamp.now(tz="UTC").floor("s")
    subprocess.run(["zsh", "-i"], input=typed, text=True, capture_output=True, env=env, cwd=tmp_path, timeout=30)
    assert history.read_text().startswith(": ")
    inc = _load(tmp_path)
    ev = inc.events
    launch = ev[ev["kind"] == "launch"].iloc[0]
    assert (launch["run"], launch["log_path"]) == ("z", "z.log")
    assert "--lr 3e-4" in launch["args"]  # the second line belongs to the command
    assert ev[ev["kind"] == "kill_sent"]["target_pattern"].tolist() == ["run-name z"]
    assert (launch["time"] - t0).total_seconds() < 30


def test_bash_history_listing_is_read_in_the_incident_zone(tmp_path):
    """`history` as bash prints it with HISTTIMEFORMAT='%F %T ' (local time: the incident's
    zone), and a history without times is not taken for one."""
    (tmp_path / "incident.toml").write_text('timezone = "Europe/Berlin"\n')
    (tmp_path / "history.txt").write_text(
        "  501  2026-12-02 05:40:01 cd /w\n"
        f"  502  2026-12-02 05:40:05 {LAUNCH}\n"
        "  503  2026-12-02 05:41:00 kill %1\n")
    inc = _load(tmp_path)
    launch = inc.events[inc.events["kind"] == "launch"].iloc[0]
    assert launch["time"] == pd.Timestamp("2026-12-02 04:40:05", tz="UTC")
    plain = tmp_path / "plain_history"
    plain.write_text("cd /w\nls\nnohup python3 train.py &\n")
    assert sniff(plain)[0] is None or sniff(plain)[0].name != "shell-history"
