"""`launch` catches the incident's two failed restarts and survives the end of its session."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dflash_postmortem.cli import main

# A stand-in trainer: a start-up line, then capture-form step lines; starts in well under a second.
TRAINER = [sys.executable, "-c", (
    "import time\n"
    "print('2026-11-30 05:20:28 [t] Loading dataset ...', flush=True)\n"
    "for i in range(1, 600):\n"
    "    time.sleep(0.2)\n"
    "    print(f'2026-11-30 05:20:58 [t] step {5 * i} loss 11.9 tok/s 100 queue 2', flush=True)\n"
)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes (its parent has not reaped it yet)
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.fixture
def started():
    pids: list[int] = []
    yield pids
    for pid in pids:  # only what the test started, by id
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_healthy_start_passes_every_check(tmp_path, capsys, started):
    pid_file = tmp_path / "run.pid"
    rc = main(["launch", "--log", str(tmp_path / "train.log"), "--pid-file", str(pid_file),
               "--settle", "0.5", "--timeout", "30", "--", *TRAINER])
    started.append(int(pid_file.read_text()))
    out = capsys.readouterr().out
    assert rc == 0, out
    verdicts = {line.split()[1]: line.split()[2] for line in out.splitlines() if line.startswith("launch: ") and len(line.split()) > 3}
    assert verdicts == {"start": "ok", "log": "ok", "alive": "ok", "step": "ok"}
    assert "first match: 2026-11-30 05:20:58 [t] step 5 loss" in out
    assert os.getsid(started[0]) == started[0]  # its own session
    assert out.rstrip().endswith("launch: started")


def test_a_log_folder_that_does_not_exist_is_refused_before_starting(tmp_path, capsys):
    """Restart attempt 1 of the incident: `> /workspace/train_opt2.log` into a missing folder."""
    rc = main(["launch", "--log", str(tmp_path / "workspace" / "train_opt2.log"), "--", *TRAINER])
    out = capsys.readouterr().out
    assert rc == 1
    assert "launch: start FAIL" in out
    assert f"log folder {tmp_path / 'workspace'} does not exist; nothing was started" in out


def test_a_process_that_dies_during_start_up_fails(tmp_path, capsys):
    crash = [sys.executable, "-c", "print('Loading target model on cuda:0 ...', flush=True); raise SystemExit(3)"]
    rc = main(["launch", "--log", str(tmp_path / "t.log"), "--settle", "5", "--", *crash])
    out = capsys.readouterr().out
    assert rc == 1
    assert "exited with status 3; last log lines:" in out
    assert "| Loading target model on cuda:0 ..." in out
    assert "launch: step  FAIL" in out


def test_expect_gpu_says_why_it_cannot_check(tmp_path, capsys, started):
    try:
        import pynvml

        pynvml.nvmlInit()
        pytest.skip("this machine has NVML; the message under test is for machines without it")
    except Exception:
        pass
    pid_file = tmp_path / "p"
    rc = main(["launch", "--expect-gpu", "--settle", "0.2", "--timeout", "2", "--pid-file", str(pid_file),
               "--log", str(tmp_path / "t.log"), "--", *TRAINER])
    started.append(int(pid_file.read_text()))
    out = capsys.readouterr().out
    assert rc == 1
    assert "launch: gpu   FAIL" in out and "cannot check GPU memory" in out


def test_launch_survives_the_end_of_its_session_and_nohup_does_not(tmp_path, started):
    """Restart attempt 2 of the incident: a trainer started inside the operator's session dies
    when that session is torn down; the one `launch` started lives on."""
    cli = [sys.executable, "-m", "dflash_postmortem.cli"]
    session = subprocess.Popen(
        ["bash", "-c", f"nohup {' '.join(map(shlex.quote, TRAINER))} > {tmp_path}/nohup.log 2>&1 & echo $!; "
                       f"{' '.join(cli)} launch --settle 0.5 --timeout 60 --log {tmp_path}/launch.log "
                       f"--pid-file {tmp_path}/launch.pid -- {' '.join(map(shlex.quote, TRAINER))}; sleep 300"],
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    nohup_pid = int(session.stdout.readline())
    started.append(nohup_pid)
    deadline = time.monotonic() + 60
    while not (tmp_path / "launch.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    launched = int((tmp_path / "launch.pid").read_text())
    started.append(launched)
    assert alive(nohup_pid) and alive(launched)
    os.killpg(session.pid, signal.SIGKILL)  # the session ends: everything in its process group goes
    session.wait()
    time.sleep(0.5)
    assert not alive(nohup_pid)
    assert alive(launched)
