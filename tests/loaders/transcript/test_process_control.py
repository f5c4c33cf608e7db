"""What one line of a terminal session says about a process (process_control.py): the shell's job
and status reports, the kernel's OOM killer, NVIDIA Xid errors and GPUs off the bus."""

from __future__ import annotations

import warnings

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.loaders.transcript.process_control import read_line

T = lambda s: pd.Timestamp(s, tz="UTC")  # noqa: E731


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_shell_transcript(path, **kw)


def test_status_lines_with_pid_and_core_dumps():
    f = read_line("./train.sh: line 1:  7364 Killed                  python3 train_Donly.py --name=D0")
    assert (f["kind"], f["pid"], f["signal"]) == ("killed", 7364, "SIGKILL")
    f = read_line("Segmentation fault (core dumped)")
    assert (f["kind"], f["signal"], f["core_dumped"]) == ("killed", "SIGSEGV", True)
    f = read_line("[1]  + 19310 suspended  top")  # zsh's job line carries the PID
    assert (f["kind"], f["pid"], f["job"]) == ("job_stopped", 19310, 1)
    f = read_line("zsh: killed     python train.py")
    assert (f["kind"], f["job_command"]) == ("killed", "python train.py")
    assert read_line("exit=137")["signal"] == "SIGKILL"


def test_oom_killer_lines_in_their_forms(fixtures_dir):
    iso = _load(fixtures_dir / "terminal" / "oom-perl-killed-then-dmesg-iso.txt").events
    k = iso[iso["kind"] == "oom_kill"].iloc[0]
    assert (k["pid"], k["process_name"], k["time"]) == (1440763, "perl", T("2024-04-29 12:55:41.679700"))
    assert k["anon_rss_kib"] == 60356340.0 and k["constraint"] == "CONSTRAINT_NONE"  # the oom-kill: line merged in
    wrapped = _load(fixtures_dir / "terminal" / "dmesg-terminal-wrapped-oom-python3.txt").events
    assert wrapped.loc[wrapped["kind"] == "oom_kill", "total_vm_kib"].tolist() == [53312244.0]
    old = read_line("[Thu Mar 14 01:57:54 2019] Out of memory: Kill process 89746 (python) score 1031 or sacrifice child")
    assert (old["kind"], old["pid"], old["score"]) == ("oom_chosen", 89746, 1031)


def test_nvidia_xid_and_a_gpu_off_the_bus(fixtures_dir):
    f = read_line("[ 4711.123456] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.")
    assert (f["kind"], f["xid"], f["pid"], f["process_name"]) == ("xid", 79, 1234, "python")
    ev = _load(fixtures_dir / "terminal" / "dmesg-nvrm-gpu-fallen-off-bus-no-xid.txt").events
    assert ev["kind"].tolist() == ["gpu_lost"] and ev["bus"].tolist() == ["0000:b3:00.0"]
