"""Where the watcher's announcements and status go: the terminal (`Terminal`), a chat webhook
(`Webhook`), a command of the user's (`Exec`), a Prometheus endpoint (`Metrics`), or several at
once (`Sinks`).

Every sink has the same three methods: `announce(a)` for one change, `status(jobs)` for each job
now (called often; only the terminal and the metrics show it), `close()` at the end. A sink that
talks to the outside never raises into the watcher: a webhook that is down or a command that
fails is said on stderr and the watcher goes on following the run. What leaves the machine is
masked first (present/redact.py): command lines in the evidence carry tokens.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from typing import Protocol, TextIO

import pandas as pd

from ..errors import UsageError
from ..model.pace import UNITS
from ..present.redact import MASK, redact
from ..present.sentences import one_line
from ..present.terminal_view import TERMINAL_WIDTH
from ..shell_words import exit_meaning
from .announcements import KINDS, STATES, Announcement, JobStatus, status_line

CLEAR_LINE = "\r\x1b[K"  # back to the first column, erase to the end of the line


class Sink(Protocol):
    def announce(self, a: Announcement) -> None: ...

    def status(self, jobs: list[JobStatus]) -> None: ...

    def close(self) -> None: ...


def _complain(what: str, reason: str) -> None:
    # The watcher's own terminal, not an exception: one sink down must not stop the others, nor
    # the following of the run. sys.stderr as it is now (a test or the CLI may have replaced it).
    print(f"{what}: {reason}", file=sys.stderr, flush=True)


class Terminal:
    """One line per announcement on `stream`, each at most `width` columns (None: the terminal's
    width, `shutil.get_terminal_size`, asked again each time, so that a resized window is
    followed). On a terminal the status line stays at the bottom, redrawn in place, and
    announcements print above it; elsewhere (a file, a pipe) the status is a plain line, written
    only when it changes."""

    def __init__(self, stream: TextIO | None = None, width: int | None = None):
        self.stream = sys.stdout if stream is None else stream
        self.width = width
        self.tty = _isatty(self.stream)
        self._status = ""  # the status line as last drawn (a terminal) or written (elsewhere)

    def announce(self, a: Announcement) -> None:
        line = a.line(self._columns())
        if self.tty and self._status:
            # The status line is cleared, the announcement takes its place and the status is
            # drawn again under it: announcements scroll up, the status stays at the bottom.
            self._write(f"{CLEAR_LINE}{line}\n{self._status}")
        else:
            self._write(line + "\n")

    def status(self, jobs: list[JobStatus]) -> None:
        if self.tty:
            # One column short of the edge: a line that fills the last column leaves many
            # terminals waiting to wrap, and the next `\r` would then land on a new line.
            self._status = status_line(jobs, max(1, self._columns() - 1))
            self._write(CLEAR_LINE + self._status)
            return
        line = status_line(jobs, self._columns())
        if line != self._status:
            self._status = line
            self._write(line + "\n")

    def close(self) -> None:
        if self.tty and self._status:
            self._write("\n")  # the last status stays on the screen; the prompt starts under it
            self._status = ""

    def _columns(self) -> int:
        if self.width is not None:
            return max(1, self.width)
        return shutil.get_terminal_size((TERMINAL_WIDTH, 24)).columns

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # not a file, or a closed one
        return False


class Webhook:
    """Each announcement POSTed as JSON to `url`: `format` "text" `{"text": ...}` (what Slack's
    incoming webhooks, Mattermost and Rocket.Chat take), "discord" `{"content": ...}`, "json" the
    announcement's fields (`Announcement.as_dict`). Status lines are not posted: a chat channel
    wants changes, not a ticker. A failed delivery is one line on stderr, counted in `failures`."""

    FORMATS = ("text", "discord", "json")
    DISCORD_CHARS = 2000  # Discord refuses a longer message

    def __init__(self, url: str, format: str = "text", timeout_s: float = 5):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise UsageError(f"webhook {shown_url(url)}: not an http:// or https:// URL")
        if format not in self.FORMATS:
            raise UsageError(f"webhook format {format!r} is not one of {', '.join(self.FORMATS)}")
        self.url = url
        self.format = format
        self.timeout_s = timeout_s
        self.failures = 0
        self._headers = {"Content-Type": "application/json", "User-Agent": "dflash-postmortem-watch"}
        self._target = url
        if parts.username is not None:
            # urllib would take `user:password@host` for a host name: the credentials go in the
            # Authorization header instead, as a browser or curl sends them.
            credentials = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(credentials.encode()).decode()
            self._target = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))

    def body(self, a: Announcement) -> dict[str, str]:
        """What is posted for `a`, masked."""
        a = a.redacted()
        if self.format == "json":
            return a.as_dict()
        if self.format == "discord":
            return {"content": a.line(self.DISCORD_CHARS)}
        return {"text": a.line()}

    def announce(self, a: Announcement) -> None:
        # imported here: HTTP with TLS is ~2 MiB of a watch's memory, which most watches never post
        import http.client
        import urllib.error
        import urllib.request

        request = urllib.request.Request(self._target, data=json.dumps(self.body(a)).encode(), method="POST",
                                         headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                answer.read()
            return
        except urllib.error.HTTPError as e:  # before URLError: it is one
            reason = f"HTTP {e.code} {e.reason}"
        except urllib.error.URLError as e:
            reason = self._reason(e.reason)
        except (OSError, http.client.HTTPException) as e:  # a timeout or a reset while reading the answer
            reason = self._reason(e)
        self.failures += 1
        _complain(f"webhook {shown_url(self.url)}", reason)

    def _reason(self, error) -> str:
        if isinstance(error, TimeoutError):
            return f"no answer within {self.timeout_s:g} s"
        return redact(getattr(error, "strerror", None) or str(error)) or type(error).__name__

    def status(self, jobs: list[JobStatus]) -> None:
        pass

    def close(self) -> None:
        pass


def shown_url(url: str) -> str:
    """`url` as it may be shown: credentials, the query and every path segment after the first
    masked. Chat webhooks carry their secret in the path (Slack's /services/T…/B…/secret,
    Discord's /api/webhooks/id/token), which no pattern of redact.py could tell from a path."""
    parts = urllib.parse.urlsplit(url)
    user, at, host = parts.netloc.rpartition("@")
    segments = parts.path.split("/")
    path = "/".join(segments[:2]) + (f"/{MASK}" if any(segments[2:]) else "")
    return redact(f"{parts.scheme}://{MASK + at if user else ''}{host}{path}{'?' + MASK if parts.query else ''}")


class Exec:
    """`command` run through the shell for each announcement, one at a time and in order, with
    DFLASH_KIND, DFLASH_JOB, DFLASH_TEXT, DFLASH_TIME (ISO 8601) and DFLASH_EVIDENCE in its
    environment and the announcement as JSON on its stdin, all masked. Its output is not shown
    (it would break into the terminal's status line); a nonzero exit, or a command still running
    after `timeout_s` (it is killed, with whatever it started), is one line on stderr with the
    last line the command wrote there."""

    ENV_CHARS = 8192  # an environment string has a size limit; the whole text is on stdin

    def __init__(self, command: str, timeout_s: float = 30):
        self.command = command
        self.timeout_s = timeout_s
        self.failures = 0

    def announce(self, a: Announcement) -> None:
        fields = a.redacted().as_dict()
        env = dict(os.environ)
        for name in ("kind", "job", "text", "time", "evidence"):
            # no NUL, which an environment cannot hold
            env[f"DFLASH_{name.upper()}"] = fields[name].replace("\0", " ")[: self.ENV_CHARS]
        what = f"exec {one_line(redact(self.command), 60)}"
        try:
            # A session of its own, so that a timeout kills what the command started too.
            proc = subprocess.Popen(self.command, shell=True, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as e:
            self.failures += 1
            _complain(what, e.strerror or str(e))
            return
        try:
            _, err = proc.communicate(json.dumps(fields).encode(), timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            reason = f"still running after {self.timeout_s:g} s, killed"
        else:
            if proc.returncode == 0:
                return
            reason = f"exit {proc.returncode} ({exit_meaning(proc.returncode)[1]})"
        self.failures += 1
        said = err.decode(errors="replace").strip().splitlines()
        _complain(what, reason + (f": {one_line(redact(said[-1]), 200)}" if said else ""))

    def status(self, jobs: list[JobStatus]) -> None:
        pass

    def close(self) -> None:
        pass


class Metrics:
    """A Prometheus endpoint on `host`:`port` (0: a free port, then in `.port`) with its own
    registry: `dflash_job_state{job,state}` (1 for the job's state now, 0 for every other state,
    so that an alert can test `== 1`), `dflash_job_pace{job,unit}` and
    `dflash_job_goodput_ratio{job}` (absent while not known), `dflash_announcements_total{kind}`
    and `dflash_watch_last_update_timestamp_seconds`. Scrape it with `honor_labels: true`: else
    Prometheus renames the training job's `job` label `exported_job` and puts its scrape job's
    name in its place."""

    def __init__(self, port: int, host: str = "127.0.0.1"):
        # imported here: only a watch asked for an endpoint holds it in memory
        from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

        self.registry = CollectorRegistry()
        self._state = Gauge("dflash_job_state", "1 for the job's state now, 0 for the others",
                            ["job", "state"], registry=self.registry)
        self._pace = Gauge("dflash_job_pace", "the job's pace now, in its unit", ["job", "unit"],
                           registry=self.registry)
        self._goodput = Gauge("dflash_job_goodput_ratio", "the fraction of the job's GPU time that trained",
                              ["job"], registry=self.registry)
        self._announcements = Counter("dflash_announcements", "announcements made, by kind", ["kind"],
                                      registry=self.registry)
        self._updated = Gauge("dflash_watch_last_update_timestamp_seconds",
                              "when the watcher last announced or updated a status", registry=self.registry)
        for kind in KINDS:  # every kind from 0, so that increase() sees the first one
            self._announcements.labels(kind)
        try:
            self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as e:
            raise UsageError(f"cannot serve metrics on {host}:{port}: {e.strerror or e}") from e
        self.host = host
        self.port = self._server.server_port

    def announce(self, a: Announcement) -> None:
        self._announcements.labels(a.kind).inc()
        self._updated.set(time.time())

    def status(self, jobs: list[JobStatus]) -> None:
        for j in jobs:
            job = redact(j.job)
            for state in STATES:
                self._state.labels(job, state).set(1 if state == j.state else 0)
            for unit in UNITS.values():
                if unit == j.unit and pd.notna(j.pace):
                    self._pace.labels(job, unit).set(j.pace)
                else:
                    self._pace.remove(job, unit)
            if pd.notna(j.goodput):
                self._goodput.labels(job).set(j.goodput)
            else:
                self._goodput.remove(job)
        self._updated.set(time.time())

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = None


class Sinks(list):
    """Several sinks as one: each announcement and status goes to every sink, in order."""

    def announce(self, a: Announcement) -> None:
        for sink in self:
            sink.announce(a)

    def status(self, jobs: list[JobStatus]) -> None:
        for sink in self:
            sink.status(jobs)

    def close(self) -> None:
        for sink in self:
            sink.close()
