"""Prometheus' HTTP API as a source: `query_range` over the DCGM exporter's fields and
node_exporter's node metrics for an incident's window, one metric per query and paged by time,
so that no answer holds more than `page_points` samples (a week of 512 GPUs at 15 s is 20 M
samples per metric) nor more than the 11,000 points per series Prometheus itself allows.

Only the standard library's urllib: no new dependency. Called only when the user configured a
server (`[prometheus]` in incident.toml, or a direct call): nothing here runs on its own.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import socket
from collections.abc import Iterator

import pandas as pd

from ...clock import align
from ...config import IncidentConfig
from ...errors import PrometheusError, UsageError
from ...incident import Incident, from_frames
from ...load_report import FileReport
from . import dcgm_fields as F
from .series_frames import Series, build

FORMAT = "prometheus-api"
MAX_POINTS_PER_SERIES = 11_000  # Prometheus refuses a query_range with more points per series
DEFAULT_PAGE_POINTS = 250_000  # samples in one answer, all series together
_FIRST_PAGE_STEPS = 60  # the first page of a metric is small: it tells how many series there are


def default_metrics() -> list[str]:
    """What is asked for when the user names no metrics: every DCGM field the kit maps, and
    the node metrics."""
    return list(F.DCGM_FIELDS) + list(F.NODE_METRICS)


def selector(metric: str, matchers: list[str] | tuple[str, ...] = ()) -> str:
    """`DCGM_FI_DEV_GPU_UTIL{Hostname=~"node1.*"}`: a metric with the user's label matchers."""
    return f"{metric}{{{','.join(matchers)}}}" if matchers else metric


def query_range(url: str, query: str, start: float, end: float, step_s: float, timeout_s: float) -> list[dict]:
    """One `/api/v1/query_range` call: the matrix of series it returns, or PrometheusError."""
    # imported here: HTTP with TLS is ~2 MiB of memory, and a server is asked only with `online`
    import urllib.error
    import urllib.parse
    import urllib.request

    params = urllib.parse.urlencode({"query": query, "start": _stamp(start), "end": _stamp(end), "step": f"{step_s:g}"})
    request = urllib.request.Request(f"{url}/api/v1/query_range", data=params.encode(), method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - the user's own server
            body = answer.read()
    except urllib.error.HTTPError as e:
        # Prometheus explains a refused query in a JSON body (400 bad_data, 422 execution, 503 timeout).
        detail = _error_text(e.read())
        raise PrometheusError(url, query, f"HTTP {e.code} {e.reason}" + (f": {detail}" if detail else "")) from e
    except TimeoutError as e:
        raise PrometheusError(url, query, f"no answer within {timeout_s:g} s (timeout)") from e
    except urllib.error.URLError as e:
        why = e.reason if not isinstance(e.reason, OSError) else (e.reason.strerror or str(e.reason))
        if isinstance(e.reason, TimeoutError | socket.timeout):
            why = f"no answer within {timeout_s:g} s (timeout)"
        raise PrometheusError(url, query, f"server unreachable: {why}") from e
    except OSError as e:
        raise PrometheusError(url, query, f"connection failed: {e.strerror or e}") from e
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise PrometheusError(url, query, f"the answer is not JSON: {body[:80]!r}") from e
    if not isinstance(data, dict) or data.get("status") != "success":
        raise PrometheusError(url, query, _error_text(body) or f"unexpected answer {body[:80]!r}")
    result = data.get("data", {})
    if not isinstance(result, dict) or result.get("resultType") != "matrix" or not isinstance(result.get("result"), list):
        raise PrometheusError(url, query, f"expected a matrix result, found {str(result)[:80]!r}")
    return result["result"]


def _stamp(seconds: float) -> str:
    return f"{seconds:.3f}"


def _error_text(body: bytes) -> str:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return body[:120].decode("utf-8", "replace").strip()
    if isinstance(data, dict) and data.get("status") == "error":
        return f"status error ({data.get('errorType', '?')}): {data.get('error', '')}"
    return ""


def pages(url: str, query: str, start: float, end: float, step_s: float, timeout_s: float,
          page_points: int = DEFAULT_PAGE_POINTS, series_hint: int = 0) -> Iterator[list[dict]]:
    """The answers for `query` over [start, end], page by page on the step grid: each page as
    many steps as keep (series seen so far) x steps under `page_points`, and under Prometheus'
    11,000 points per series. Until a page has said how many series there are, `series_hint`
    (the previous metric's count) sizes it, or a first page of 60 steps."""
    steps = _FIRST_PAGE_STEPS if series_hint <= 0 else _steps(page_points, series_hint)
    steps = min(steps, _FIRST_PAGE_STEPS)
    t = start
    while t <= end + 1e-9:
        page_end = min(end, t + (steps - 1) * step_s)
        result = query_range(url, query, t, page_end, step_s, timeout_s)
        yield result
        steps = _steps(page_points, len(result))
        t = page_end + step_s


def _steps(page_points: int, series: int) -> int:
    return max(1, min(MAX_POINTS_PER_SERIES, page_points // max(series, 1)))


def _epoch(when, timezone: str) -> float:
    stamp = align.localize(pd.Series([pd.Timestamp(when)]), timezone).iloc[0]
    if pd.isna(stamp):
        raise UsageError(f"{when}: not a time that exists in {timezone}")
    return stamp.timestamp()


def load_prometheus(
    url: str,
    window: tuple,
    *,
    step_s: float = 15.0,
    metrics: list[str] | None = None,
    matchers: list[str] | None = None,
    timeout_s: float = 30.0,
    timezone: str = "UTC",
    host: str | None = None,
    page_points: int = DEFAULT_PAGE_POINTS,
) -> Incident:
    """GPU telemetry (and node metrics) for `window` = (start, end) from the Prometheus server
    at `url`, as an Incident with its `gpus`, `events` (Xid errors) and `metrics` frames and a
    load report counting the samples received. A time without a zone is read in `timezone`.
    Raises PrometheusError when the server cannot answer."""
    if step_s <= 0 or not math.isfinite(step_s):
        raise UsageError(f"step_s must be a number of seconds above 0, not {step_s!r}")
    url = url.rstrip("/")
    start, end = (_epoch(w, timezone) for w in window)
    if not start < end:
        raise UsageError(f"window: start {window[0]} is not before end {window[1]}")
    rep = FileReport(path=f"prometheus:{url}", format=FORMAT, unit="sample", abs_path=url)
    found: dict[tuple, Series] = {}
    series = 0
    for metric in metrics or default_metrics():
        query = selector(metric, matchers or [])
        for result in pages(url, query, start, end, step_s, timeout_s, page_points, series):
            series = max(series, len(result)) if result else series
            for item in result:
                _add(found, item, metric, rep)
    if not found:
        rep.notes.append("no samples in the window for the metrics asked")
    rep.assume(f"query_range every {step_s:g} s from {_iso(start)} to {_iso(end)}: the values Prometheus "
               "holds at each step (the last scrape within its lookback), not every scrape")
    return from_frames(rep, **build(list(found.values()), rep.path, host))


def _add(found: dict[tuple, Series], item: dict, metric: str, rep: FileReport) -> None:
    labels = dict(item.get("metric") or {})
    name = labels.pop("__name__", metric)
    values = item.get("values") or []
    rep.read += len(values)
    if F.role(name, labels) == "ignored":
        rep.skip(None, F.SELF_MONITORING_REASON, len(values))
        return
    key = (name, tuple(sorted(labels.items())))
    series = found.get(key)
    if series is None:
        series = found[key] = Series(name, labels)
    for t, v in values:
        series.times.append(float(t))
        series.values.append(float(v))
    rep.parsed += len(values)


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat().replace("+00:00", "Z")


# What the load report says of a server named in incident.toml that a load was not asked to reach.
NEEDS_NETWORK = ("needs the network: a server named in incident.toml is queried only when asked "
                 "(--online on the command line, online=True in Python)")


def from_config(config: IncidentConfig, on_bad_line: str = "raise", *, online: bool = True) -> Incident:
    """What the incident's `[prometheus]` table asks for (an empty Incident when it has none).

    For `load_incident`: an incident folder may come from anyone, and its incident.toml alone
    never makes the kit reach a host: without `online` the server is only listed in the load
    report as needing the network. Unless `on_bad_line` is "raise", a server that cannot answer
    is a load-report error (like a file that cannot be read), and the rest of the incident loads."""
    p = config.prometheus
    if p is None:
        return Incident()
    if not online:
        inc = Incident()
        inc.load_report.add(FileReport(path=f"prometheus:{p.url}", format=FORMAT, unit="sample", notes=[NEEDS_NETWORK]))
        return inc
    try:
        return load_prometheus(p.url, (p.start, p.end), step_s=p.step_s, metrics=p.metrics or None,
                               matchers=p.matchers or None, timeout_s=p.timeout_s, timezone=config.timezone)
    except PrometheusError as e:
        if on_bad_line == "raise":
            raise
        inc = Incident()
        inc.load_report.add(FileReport(path=f"prometheus:{p.url}", format=FORMAT, unit="sample", error=str(e)))
        return inc
