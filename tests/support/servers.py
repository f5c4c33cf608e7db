"""Real servers on loopback for the tests (Prometheus, JupyterLab): a free port, and waiting
until the server answers or has died."""

import socket
import subprocess
import time
import urllib.request

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_ready(url: str, proc, what: str, log, timeout_s: float = 60) -> None:
    """Until `url` answers 200; fail with the server's own words (`log()`) if it exits first or
    takes longer than `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what} did not become ready: {log()[-2000:]}")
        time.sleep(0.1)


def stop(proc, timeout_s: float = 15) -> None:
    """Terminate a server started for a test, killing it if it will not go."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
