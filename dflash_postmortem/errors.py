"""One exception hierarchy for everything the kit raises on purpose.

Bad user input raises a subclass of both `PostmortemError` and `ValueError`, so callers can catch
either; `assert` is kept for internal invariants only.
"""

from __future__ import annotations

from pathlib import Path


class PostmortemError(Exception):
    """Root of every error the kit raises deliberately."""


class SourceFormatError(PostmortemError, ValueError):
    """A file does not hold what its format promises.

    Carries where (path, line), what the parser expected and what it found, so that the message
    alone is enough to open the file at the right line.
    """

    def __init__(self, path, line: int | None, expected: str, found: str, *, fmt: str | None = None):
        self.path = Path(path) if path is not None else None
        self.line = line
        self.expected = expected
        self.found = found
        self.format = fmt
        where = f"{self.path}" if self.path is not None else "<input>"
        if line is not None:
            where += f":{line}"
        what = f"{fmt}: " if fmt else ""
        shown = found if len(found) <= 120 else found[:117] + "..."
        super().__init__(f"{where}: {what}expected {expected}, found {shown!r}")


class UsageError(PostmortemError, ValueError):
    """An argument given to the kit, on the command line or in Python, is not one it takes."""


class LoadError(PostmortemError):
    """A source could not be read at all (unreadable, a link loop, a loader that failed); raised
    only under `on_bad_line="raise"` (`--strict`), otherwise a load-report entry."""

    def __init__(self, path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class IncidentConfigError(PostmortemError, ValueError):
    """`incident.toml` or an argument describing the incident is wrong."""


class MissingDependencyError(PostmortemError, ImportError):
    """An optional package is needed for this feature and is not installed."""

    def __init__(self, package: str, feature: str, extra: str | None = None):
        self.package = package
        self.feature = feature
        self.extra = extra
        hint = (
            f"pip install 'dflash-postmortem[{extra}]'" if extra else f"pip install {package}"
        )
        super().__init__(f"{feature} needs the '{package}' package; install it with: {hint}")


class NoGPUError(PostmortemError, RuntimeError):
    """A feature that reads the NVIDIA driver ran on a machine without one."""


class PrometheusError(PostmortemError):
    """A Prometheus server could not answer a query: unreachable, an HTTP error, a `status:
    error` body, or an answer that is not the API's JSON. Carries the server, the query and why."""

    def __init__(self, url: str, query: str | None, reason: str):
        self.url = url
        self.query = query
        self.reason = reason
        what = f" query {query!r}" if query else ""
        super().__init__(f"Prometheus at {url}:{what}: {reason}")
