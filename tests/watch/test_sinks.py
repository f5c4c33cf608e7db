"""Where the watcher's announcements go (watch/sinks.py), each against the real thing: a pseudo-
terminal and a file, an HTTP server on loopback, a shell, and Prometheus scraping the endpoint."""

import base64
import http.server
import io
import json
import os
import select
import shutil
import socket
import subprocess
import termios
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pandas as pd
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.servers import free_port, stop, wait_until_ready

from dflash_postmortem.errors import PostmortemError
from dflash_postmortem.loaders.terminal import screen_text
from dflash_postmortem.watch.announcements import (
    KINDS,
    STATES,
    Announcement,
    JobStatus,
    status_line,
)
from dflash_postmortem.watch.sinks import CLEAR_LINE, Exec, Metrics, Sinks, Terminal, Webhook

SECRET = "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123"
WHEN = pd.Timestamp("2026-11-30 05:22:17", tz="UTC")
FELL = Announcement(WHEN, "r1", "throughput_fell", "throughput fell from 21.5K to 12.4K tok/s",
                    "train.log:812  step 4100 | loss 2.31 | 12.4K tok/s")
NOT_STARTING = Announcement(WHEN + pd.Timedelta(minutes=6), "r2", "not_starting",
                            f"not starting: process alive, 0 MiB on its GPUs, no step after 6 min; last log line: {SECRET}",
                            f"launch.sh:3  {SECRET} torchrun --nproc-per-node 6 train.py")
TRAINING = [JobStatus("r1", "training", 21_480.0, "tok/s", 0.97), JobStatus("r2", "starting")]
DEGRADED = [JobStatus("r1", "degraded", 12_400.0, "tok/s", 0.91), JobStatus("r2", "starting")]


# --- the terminal ---------------------------------------------------------------------------------

def test_not_a_terminal_one_line_each_and_the_status_only_when_it_changes():
    out = io.StringIO()
    t = Terminal(out, width=60)
    assert not t.tty
    t.status(TRAINING)
    t.status(TRAINING)  # the same: not written again
    t.announce(FELL)
    t.status(DEGRADED)
    t.close()
    assert out.getvalue().splitlines() == [
        "watching 2 jobs · r1 training 21.5K tok/s 97 % · r2 starting",
        "05:22:17  r1  throughput fell from 21.5K to 12.4K tok/s  — …",
        "watching 2 jobs · r1 degraded 12.4K tok/s 91 % · r2 starting",
    ]
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_the_width_is_the_terminals_when_none_is_given(monkeypatch):
    monkeypatch.setenv("COLUMNS", "32")  # what shutil.get_terminal_size reads first
    out = io.StringIO()
    t = Terminal(out)
    t.announce(NOT_STARTING)
    t.status(TRAINING)
    lines = out.getvalue().splitlines()
    assert lines == ["05:28:17  r2  not starting: pro…", "watching 2 jobs · r1 training 2…"]
    assert all(len(line) <= 32 for line in lines) and lines[0].endswith("…")


def _pty():
    master, slave = os.openpty()
    # No output processing: what the test reads from the master is what the sink wrote.
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    return master, open(slave, "w", encoding="utf-8")  # noqa: SIM115 - closed by the test


def _read_all(master: int) -> str:
    data = b""
    while select.select([master], [], [], 2)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the slave side is closed and everything has been read
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    return data.decode("utf-8")


def test_on_a_terminal_the_status_is_redrawn_in_place_under_the_announcements():
    master, slave = _pty()
    with slave:
        t = Terminal(slave, width=140)
        assert t.tty
        t.status(TRAINING)
        t.announce(FELL)
        t.announce(NOT_STARTING)
        t.status(DEGRADED)
        t.close()
    raw = _read_all(master)
    s1, s2 = status_line(TRAINING, 139), status_line(DEGRADED, 139)
    assert raw == (CLEAR_LINE + s1 + CLEAR_LINE + FELL.line(140) + "\n" + s1
                   + CLEAR_LINE + NOT_STARTING.line(140) + "\n" + s1 + CLEAR_LINE + s2 + "\n")
    # What the screen shows once the terminal has drawn it: the two announcements, and the status
    # once, at the bottom, as it is now.
    screen = [screen_text(line) for line in raw.split("\n")][:-1]
    assert screen == [FELL.line(140), NOT_STARTING.line(140), s2]
    assert screen[0].startswith("05:22:17  r1  throughput fell") and "HF_TOKEN=[REDACTED]" in screen[1]
    assert "hf_abc" not in raw and all(len(line) <= 140 for line in screen)
    assert len(NOT_STARTING.line(None)) > 140 and screen[1].endswith("…")


def test_on_a_terminal_the_status_stops_a_column_short_of_the_edge():
    master, slave = _pty()
    with slave:
        t = Terminal(slave, width=30)
        t.status(TRAINING)
        t.announce(FELL)
    screen = [screen_text(line) for line in _read_all(master).split("\n")]
    assert screen == [FELL.line(30), status_line(TRAINING, 29)]
    assert len(screen[0]) == 30 and len(screen[1]) == 29


# --- the webhook --------------------------------------------------------------------------------

class _Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, self.headers["Content-Type"], json.loads(body)))
        self.server.authorization.append(self.headers.get("Authorization"))
        self.send_response(self.server.answer)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def hook_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.received, server.authorization, server.answer = [], [], 200
    server.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


def test_each_format_posts_its_body_masked(hook_server, capsys):
    for fmt in ("text", "discord", "json"):
        hook = Webhook(f"{hook_server.url}/{fmt}", format=fmt)
        hook.announce(NOT_STARTING)
        hook.status(TRAINING)  # not posted
        hook.close()
        assert hook.failures == 0
    line = ("05:28:17  r2  not starting: process alive, 0 MiB on its GPUs, no step after 6 min; last log line: "
            "HF_TOKEN=[REDACTED]  — launch.sh:3  HF_TOKEN=[REDACTED] torchrun --nproc-per-node 6 train.py")
    assert hook_server.received == [
        ("/text", "application/json", {"text": line}),
        ("/discord", "application/json", {"content": line}),
        ("/json", "application/json", {
            "time": "2026-11-30T05:28:17Z", "job": "r2", "kind": "not_starting",
            "text": "not starting: process alive, 0 MiB on its GPUs, no step after 6 min; last log line: HF_TOKEN=[REDACTED]",
            "evidence": "launch.sh:3  HF_TOKEN=[REDACTED] torchrun --nproc-per-node 6 train.py"}),
    ]
    assert "hf_abc" not in json.dumps(hook_server.received)
    assert capsys.readouterr().err == ""


def test_credentials_in_the_url_are_sent_as_basic_authorization(hook_server):
    hook = Webhook(hook_server.url.replace("//", "//bot:p%40ss@") + "/auth")
    hook.announce(FELL)
    assert hook.failures == 0 and hook_server.received[0][0] == "/auth"
    assert hook_server.authorization == ["Basic " + base64.b64encode(b"bot:p@ss").decode()]


def test_a_server_error_is_counted_and_said_once_per_failure(hook_server, capsys):
    hook_server.answer = 500
    hook = Webhook(f"{hook_server.url}/hook")
    hook.announce(FELL)
    hook.announce(FELL)
    assert hook.failures == 2 and len(hook_server.received) == 2
    assert capsys.readouterr().err.splitlines() == [f"webhook {hook_server.url}/hook: HTTP 500 Internal Server Error"] * 2


def test_a_closed_port_is_a_failure_said_without_the_urls_secrets(capsys):
    port = free_port()  # nothing listens there
    hook = Webhook(f"http://bot:hunter2@127.0.0.1:{port}/services/T000/B000/XXXXSECRETXXXX?token=abc", "discord")
    hook.announce(FELL)
    assert hook.failures == 1
    err = capsys.readouterr().err
    assert err == f"webhook http://[REDACTED]@127.0.0.1:{port}/services/[REDACTED]?[REDACTED]: Connection refused\n"


def test_a_server_that_never_answers_is_a_failure_after_the_timeout(capsys):
    with socket.socket() as listener:  # accepts connections (the backlog) and never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        hook = Webhook(f"http://127.0.0.1:{listener.getsockname()[1]}/hook", timeout_s=0.3)
        hook.announce(FELL)
    assert hook.failures == 1
    assert capsys.readouterr().err.endswith(": no answer within 0.3 s\n")


@pytest.mark.parametrize("url, fmt", [("file:///etc/passwd", "text"), ("http://127.0.0.1/hook", "teams")])
def test_a_webhook_refuses_what_it_cannot_post(url, fmt):
    with pytest.raises(PostmortemError):
        Webhook(url, format=fmt)


# --- a command ----------------------------------------------------------------------------------

def test_a_command_gets_the_announcement_in_its_environment_and_on_stdin(tmp_path):
    cmd = f"env | grep -E '^DFLASH_(KIND|JOB|TEXT|TIME|EVIDENCE)=' | sort >> {tmp_path}/env; cat >> {tmp_path}/stdin; echo >> {tmp_path}/stdin"
    run = Exec(cmd)
    run.announce(FELL)
    run.announce(NOT_STARTING)
    run.status(TRAINING)
    run.close()
    assert run.failures == 0
    env = (tmp_path / "env").read_text().splitlines()
    assert env == [
        "DFLASH_EVIDENCE=train.log:812  step 4100 | loss 2.31 | 12.4K tok/s", "DFLASH_JOB=r1",
        "DFLASH_KIND=throughput_fell", "DFLASH_TEXT=throughput fell from 21.5K to 12.4K tok/s",
        "DFLASH_TIME=2026-11-30T05:22:17Z",
        "DFLASH_EVIDENCE=launch.sh:3  HF_TOKEN=[REDACTED] torchrun --nproc-per-node 6 train.py", "DFLASH_JOB=r2",
        "DFLASH_KIND=not_starting",
        "DFLASH_TEXT=not starting: process alive, 0 MiB on its GPUs, no step after 6 min; last log line: HF_TOKEN=[REDACTED]",
        "DFLASH_TIME=2026-11-30T05:28:17Z",
    ]
    stdin = [json.loads(line) for line in (tmp_path / "stdin").read_text().splitlines()]
    assert stdin == [FELL.as_dict(), NOT_STARTING.redacted().as_dict()]  # in order, masked
    assert stdin[1]["kind"] == "not_starting" and "hf_abc" not in json.dumps(stdin)


def test_a_failing_command_is_said_on_stderr_not_raised(capsys):
    run = Exec("echo 'no route to the pager' >&2; exit 3")
    run.announce(FELL)
    assert run.failures == 1
    assert capsys.readouterr().err == "exec echo 'no route to the pager' >&2; exit 3: exit 3 (failed): no route to the pager\n"


def test_a_command_past_its_timeout_is_killed_with_what_it_started(capsys):
    # The background sleep keeps the output pipe open: only killing the whole group ends it.
    run = Exec("sleep 30 & wait", timeout_s=0.3)
    run.announce(FELL)
    assert run.failures == 1
    assert capsys.readouterr().err == "exec sleep 30 & wait: still running after 0.3 s, killed\n"


# --- Prometheus ---------------------------------------------------------------------------------

def _scrape(port: int) -> dict[tuple, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_endpoint_serves_each_jobs_state_pace_goodput_and_the_announcements():
    metrics = Metrics(0)
    try:
        metrics.status(TRAINING)
        metrics.announce(FELL)
        metrics.status(DEGRADED)
        got = _scrape(metrics.port)
        state = {(labels[0][1], labels[1][1]): v for (name, labels), v in got.items() if name == "dflash_job_state"}
        assert state == {(job, s): float(s == now) for job, now in (("r1", "degraded"), ("r2", "starting")) for s in STATES}
        assert {k: v for k, v in got.items() if k[0] == "dflash_job_pace"} == {
            ("dflash_job_pace", (("job", "r1"), ("unit", "tok/s"))): 12_400.0}
        assert {k: v for k, v in got.items() if k[0] == "dflash_job_goodput_ratio"} == {
            ("dflash_job_goodput_ratio", (("job", "r1"),)): 0.91}
        counts = {labels[0][1]: v for (name, labels), v in got.items() if name == "dflash_announcements_total"}
        assert counts == {k: float(k == "throughput_fell") for k in KINDS}
        assert got[("dflash_watch_last_update_timestamp_seconds", ())] > 1.7e9
        # A pace in another unit replaces the old series; one not known is no series at all.
        metrics.status([JobStatus("r1", "training", 8.41, "steps/s", None)])
        got = _scrape(metrics.port)
        assert {k: v for k, v in got.items() if k[0] in ("dflash_job_pace", "dflash_job_goodput_ratio")} == {
            ("dflash_job_pace", (("job", "r1"), ("unit", "steps/s"))): 8.41}
    finally:
        metrics.close()
    with pytest.raises(urllib.error.URLError):
        _scrape(metrics.port)
    metrics.close()  # twice is harmless


def test_a_port_in_use_is_one_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(PostmortemError, match=r"cannot serve metrics on 127\.0\.0\.1:\d+"):
            Metrics(taken.getsockname()[1])


def test_prometheus_scrapes_the_endpoint(tmp_path):
    prometheus = shutil.which("prometheus")
    if not prometheus:
        pytest.skip("no prometheus on PATH (Debian: apt-get install prometheus; `make prometheus`)")
    metrics = Metrics(0)
    metrics.status([JobStatus("r1", "stalled", None, "tok/s", 0.62), JobStatus("r2", "training", 21_500.0, "tok/s", 0.99)])
    # honor_labels: the endpoint's own `job` label (the training job) is kept, not renamed
    # exported_job in favour of the scrape job's name.
    config = tmp_path / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: dflash-watch\n    honor_labels: true\n"
                      f"    static_configs:\n      - targets: ['127.0.0.1:{metrics.port}']\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "prometheus.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_ready(f"{url}/-/ready", proc, "prometheus", log.read_text, 30)
        query = urllib.parse.urlencode({"query": 'dflash_job_state{state="stalled"}'})
        deadline = time.monotonic() + 30
        while True:  # until the first scrape is in
            with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=5) as r:
                stalled = {s["metric"].get("job"): s["value"][1] for s in json.load(r)["data"]["result"]}
            if stalled.get("r1") == "1" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert stalled == {"r1": "1", "r2": "0"}, log.read_text()[-2000:]
    finally:
        stop(proc)
        metrics.close()


# --- several at once ----------------------------------------------------------------------------

def test_sinks_pass_everything_to_each_sink_in_order(tmp_path):
    out = io.StringIO()
    metrics = Metrics(0)
    sinks = Sinks([Terminal(out, width=200), Exec(f"cat >> {tmp_path}/stdin; echo >> {tmp_path}/stdin"), metrics])
    sinks.status(TRAINING)
    sinks.announce(FELL)
    sinks.announce(NOT_STARTING)
    got = _scrape(metrics.port)
    sinks.close()
    assert out.getvalue().splitlines() == [status_line(TRAINING, 200), FELL.line(200), NOT_STARTING.line(200)]
    assert [json.loads(x)["kind"] for x in (tmp_path / "stdin").read_text().splitlines()] == ["throughput_fell", "not_starting"]
    assert got[("dflash_announcements_total", (("kind", "not_starting"),))] == 1.0
    assert got[("dflash_job_state", (("job", "r1"), ("state", "training")))] == 1.0
    with pytest.raises(urllib.error.URLError):  # closed with the others
        _scrape(metrics.port)
