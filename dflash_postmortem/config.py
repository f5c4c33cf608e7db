"""`incident.toml`: what the user knows that the files cannot say.

Every key is optional. Example:

    title = "DFlash drafter run, night of 2026-11-29"
    timezone = "Europe/Berlin"          # for sources whose times carry no zone
    date = "2026-11-30"                 # for time-of-day-only sources (dmon -o T)
    hosts = ["node17"]
    expected_tok_per_s = 21500
    recovery_fraction = 0.9
    host_clocks = "auto"                # skew between hosts: "auto", "estimate" (report only), "apply"

    [roles]                             # which GPUs should hold what, on every host
    target = [0, 1, 2, 3, 4, 5]
    drafter = [6, 7]

    [roles.node18]                      # a host with a split of its own
    drafter = [0, 1, 2, 3, 4, 5, 6, 7]

    [[sources]]                         # formats sniffing cannot guess
    path = "smi.csv"
    format = "nvidia-smi-query-csv"
    fields = ["index", "memory.used", "utilization.gpu"]
    host = "node17"

    [offsets]                           # seconds to add to a source's clock
    "logs/train.log" = -3.5

    [[patterns]]                        # extra throughput patterns for training logs
    name = "mytrainer"
    regex = 'it (?P<step>\\d+) speed (?P<value>[\\d.]+) tok/s'
    metric = "train/tok_per_s"

    [prometheus]                        # GPU telemetry from a Prometheus server (DCGM exporter)
    url = "http://prometheus.internal:9090"
    window = ["2026-11-30T01:00:00Z", "2026-11-30T07:00:00Z"]   # no zone: the incident's timezone
    step = "15s"                        # Prometheus durations (500ms, 15s, 1m, 1h30m) or seconds
    metrics = ["DCGM_FI_DEV_GPU_UTIL"]  # optional: default the DCGM fields and node metrics
    matchers = ['Hostname=~"node1[78]"']  # optional: label matchers added to every query
    timeout = 30                        # optional: seconds per HTTP request
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import IncidentConfigError

CONFIG_NAME = "incident.toml"
_KNOWN = {
    "title", "timezone", "date", "hosts", "expected_tok_per_s", "recovery_fraction", "roles",
    "sources", "offsets", "patterns", "ignore", "detect", "host_clocks", "prometheus",
}


@dataclass
class PrometheusConfig:
    """The `[prometheus]` table: which server to ask, for which window, at which resolution."""

    url: str
    start: dt.datetime  # without a zone: read in the incident's timezone
    end: dt.datetime
    step_s: float = 15.0
    metrics: list[str] = field(default_factory=list)  # empty: the DCGM fields and node metrics
    matchers: list[str] = field(default_factory=list)
    timeout_s: float = 30.0


@dataclass
class IncidentConfig:
    title: str | None = None
    timezone: str = "UTC"
    date: dt.date | None = None
    hosts: list[str] = field(default_factory=list)
    expected_tok_per_s: float | None = None
    recovery_fraction: float = 0.9
    roles: dict[str, list[int]] = field(default_factory=dict)
    host_roles: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    sources: list[dict] = field(default_factory=list)
    offsets: dict[str, float] = field(default_factory=dict)
    patterns: list[dict] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    detect: dict = field(default_factory=dict)
    host_clocks: str = "auto"  # what to do with the skew estimated between hosts (clock/align.py)
    prometheus: PrometheusConfig | None = None
    path: Path | None = None

    def roles_for(self, host) -> dict[str, list[int]]:
        """The split expected on `host`: its own `[roles.HOST]` table, else the common `[roles]`."""
        return self.host_roles.get(str(host), self.roles) if isinstance(host, str) else self.roles

    @property
    def has_roles(self) -> bool:
        return bool(self.roles or self.host_roles)

    def source_options(self, relpath: str) -> dict:
        """The `[[sources]]` entry naming this file, or {}."""
        for s in self.sources:
            if s.get("path") == relpath:
                return s
        return {}


def check_timezone(name: str, where: str = "timezone") -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise IncidentConfigError(f"{where}: unknown time zone {name!r} (use an IANA name such as 'UTC' or 'Europe/Berlin')") from e
    return name


def incident_config(root: Path, timezone: str | None = None) -> IncidentConfig:
    """The configuration of the incident at `root` (a folder, or a file read alone): its
    `incident.toml` where it has one, with `timezone` (the caller's choice) over the file's."""
    path = root / CONFIG_NAME
    cfg = read_config(path) if root.is_dir() and path.is_file() else IncidentConfig()
    if timezone:
        cfg.timezone = check_timezone(timezone)
    return cfg


def read_config(path: Path) -> IncidentConfig:
    """Parse `incident.toml`; unknown keys and wrong types are one-line errors naming the key,
    the type expected and the value found."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as e:
        raise IncidentConfigError(f"{path}: not valid TOML: {e}") from e
    except UnicodeDecodeError as e:
        raise IncidentConfigError(f"{path}: not UTF-8 text (byte {e.start}): save it as UTF-8") from e
    except OSError as e:
        raise IncidentConfigError(f"{path}: could not be read: {e.strerror or e}") from e
    unknown = set(raw) - _KNOWN
    if unknown:
        raise IncidentConfigError(f"{path}: unknown key(s) {sorted(unknown)}; known keys are {sorted(_KNOWN)}")
    cfg = IncidentConfig(path=path)
    if "title" in raw:
        cfg.title = _text(path, "title", raw["title"])
    if "timezone" in raw:
        cfg.timezone = check_timezone(_text(path, "timezone", raw["timezone"]), f"{path}: timezone")
    if "date" in raw:
        d = raw["date"]
        if isinstance(d, str):
            try:
                d = dt.date.fromisoformat(d)
            except ValueError as e:
                raise IncidentConfigError(f"{path}: date: expected a date YYYY-MM-DD, found {raw['date']!r}") from e
        if isinstance(d, dt.datetime) or not isinstance(d, dt.date):
            raise IncidentConfigError(f"{path}: date: expected a date YYYY-MM-DD, found {_shown(d)}")
        cfg.date = d
    if "hosts" in raw:
        cfg.hosts = _texts(path, "hosts", raw["hosts"])
    if "expected_tok_per_s" in raw:
        cfg.expected_tok_per_s = _number(path, "expected_tok_per_s", raw["expected_tok_per_s"])
    if "recovery_fraction" in raw:
        f = _number(path, "recovery_fraction", raw["recovery_fraction"])
        if not 0 < f <= 1:
            raise IncidentConfigError(f"{path}: recovery_fraction: expected a number in (0, 1], found {f}")
        cfg.recovery_fraction = f
    if "roles" in raw:
        roles = _table(path, "roles", raw["roles"], "a table like target = [0, 1]")
        cfg.roles = _role_lists(path, "roles", {k: v for k, v in roles.items() if not isinstance(v, dict)})
        cfg.host_roles = {host: _role_lists(path, f"roles.{host}", v) for host, v in roles.items() if isinstance(v, dict)}
    for key in ("sources", "patterns"):
        if key in raw:
            items = raw[key]
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise IncidentConfigError(f"{path}: {key}: expected [[{key}]] tables, found {_shown(items)}")
            setattr(cfg, key, items)
    for i, s in enumerate(cfg.sources):
        _check_source(path, i, s)
    for i, p in enumerate(cfg.patterns):
        _check_pattern(path, i, p)
    if "offsets" in raw:
        offsets = _table(path, "offsets", raw["offsets"], 'a table of seconds like "logs/train.log" = -3.5')
        cfg.offsets = {str(k): _number(path, f"offsets.{k}", v) for k, v in offsets.items()}
    if "ignore" in raw:
        cfg.ignore = _texts(path, "ignore", raw["ignore"])
    if "detect" in raw:
        cfg.detect = _check_detect(path, _table(path, "detect", raw["detect"], "a [detect] table"))
    if "host_clocks" in raw:
        cfg.host_clocks = _text(path, "host_clocks", raw["host_clocks"])
        if cfg.host_clocks not in HOST_CLOCKS:
            raise IncidentConfigError(f"{path}: host_clocks: expected one of {list(HOST_CLOCKS)}, "
                                      f"found {_shown(raw['host_clocks'])}")
    if "prometheus" in raw:
        cfg.prometheus = _check_prometheus(path, _table(path, "prometheus", raw["prometheus"], "a [prometheus] table"))
    return cfg


_PROMETHEUS_KEYS = ("url", "window", "step", "metrics", "matchers", "timeout")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")
_DURATION_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def _check_prometheus(path: Path, table: dict) -> PrometheusConfig:
    unknown = sorted(set(table) - set(_PROMETHEUS_KEYS))
    if unknown:
        raise IncidentConfigError(f"{path}: prometheus: unknown key(s) {unknown}; known keys are {list(_PROMETHEUS_KEYS)}")
    for key in ("url", "window"):
        if key not in table:
            raise IncidentConfigError(f"{path}: prometheus.{key}: missing (a [prometheus] table needs url and window)")
    url = _text(path, "prometheus.url", table["url"])
    if not re.match(r"^https?://[^/\s]+", url):
        raise IncidentConfigError(f"{path}: prometheus.url: expected an http:// or https:// URL, found {_shown(url)}")
    window = table["window"]
    if not isinstance(window, list) or len(window) != 2:
        raise IncidentConfigError(f"{path}: prometheus.window: expected [start, end] (two date-times), found {_shown(window)}")
    start, end = (_datetime(path, f"prometheus.window[{i}]", v) for i, v in enumerate(window))
    if (start.tzinfo is None) != (end.tzinfo is None):
        raise IncidentConfigError(f"{path}: prometheus.window: give both times with a zone or both without, found {_shown(window)}")
    if not start < end:
        raise IncidentConfigError(f"{path}: prometheus.window: expected start before end, found {_shown(window)}")
    cfg = PrometheusConfig(url=url.rstrip("/"), start=start, end=end)
    if "step" in table:
        cfg.step_s = _duration(path, "prometheus.step", table["step"])
    if "metrics" in table:
        cfg.metrics = _texts(path, "prometheus.metrics", table["metrics"])
    if "matchers" in table:
        cfg.matchers = _texts(path, "prometheus.matchers", table["matchers"])
    if "timeout" in table:
        cfg.timeout_s = _number(path, "prometheus.timeout", table["timeout"])
        if cfg.timeout_s <= 0:
            raise IncidentConfigError(f"{path}: prometheus.timeout: expected a number of seconds above 0, found {cfg.timeout_s}")
    return cfg


def _datetime(path: Path, key: str, value) -> dt.datetime:
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError as e:
            raise IncidentConfigError(f"{path}: {key}: expected a date-time like 2026-11-30T01:00:00Z, found {_shown(value)}") from e
    if not isinstance(value, dt.datetime):
        raise IncidentConfigError(f"{path}: {key}: expected a date-time like 2026-11-30T01:00:00Z, found {_shown(value)}")
    return value


def _duration(path: Path, key: str, value) -> float:
    """A Prometheus duration ("15s", "1m30s", "500ms") or a number of seconds, above 0."""
    if isinstance(value, str):
        parts = _DURATION.findall(value)
        if parts and "".join(n + u for n, u in parts) == value:
            seconds = sum(float(n) * _DURATION_S[u] for n, u in parts)
            if seconds > 0:
                return seconds
    elif not isinstance(value, bool) and isinstance(value, int | float) and value > 0:
        return float(value)
    raise IncidentConfigError(f"{path}: {key}: expected a duration like \"15s\", \"1m\" or a number of seconds above 0, "
                              f"found {_shown(value)}")


# host_clocks: apply the skew estimated between hosts when large and well supported, never
# (estimate and report only), or whenever estimated.
HOST_CLOCKS = ("auto", "estimate", "apply")


# [detect] options and the type each takes (the detectors read them with these names).
_DETECT_NUMBERS = ("min_drop", "min_regression_s", "stall_s", "restart_grace_s", "roles_min_minutes")
_DETECT_TEXTS = ("heavy_roles",)


def _check_detect(path: Path, detect: dict) -> dict:
    for key, value in detect.items():
        if key in _DETECT_NUMBERS:
            _number(path, f"detect.{key}", value)
        elif key in _DETECT_TEXTS:
            _texts(path, f"detect.{key}", value)
        else:
            known = sorted(_DETECT_NUMBERS + _DETECT_TEXTS)
            raise IncidentConfigError(f"{path}: detect.{key}: unknown option; known: {known}")
    return dict(detect)


_SOURCE_TEXTS = ("path", "format", "host", "timezone", "run")


def _check_source(path: Path, i: int, s: dict) -> None:
    if "path" not in s:
        raise IncidentConfigError(f"{path}: sources[{i}]: a [[sources]] entry needs a path, found {_shown(s)}")
    where = f"sources[{s['path']}]"
    for key in _SOURCE_TEXTS:
        if key in s:
            _text(path, f"{where}.{key}", s[key])
    if "fields" in s:
        _texts(path, f"{where}.fields", s["fields"])
    if "timezone" in s:
        check_timezone(s["timezone"], f"{path}: {where}.timezone")


def _check_pattern(path: Path, i: int, p: dict) -> None:
    name = p.get("name", f"pattern{i}")
    where = f"patterns[{name}]"
    for key in ("name", "keyword"):
        if key in p:
            _text(path, f"{where}.{key}", p[key])
    for key in ("regex", "metric"):
        if key not in p:
            raise IncidentConfigError(f"{path}: {where}.{key}: missing (a pattern needs regex and metric)")
        _text(path, f"{where}.{key}", p[key])
    try:
        rx = re.compile(p["regex"])
    except re.error as e:
        raise IncidentConfigError(f"{path}: {where}.regex: not a valid regular expression: {e}") from e
    if "value" not in rx.groupindex:
        raise IncidentConfigError(f"{path}: {where}.regex: needs a (?P<value>...) group, found {p['regex']!r}")


def _shown(value) -> str:
    """A value found in the file, with its TOML type: `'12' (a string)`."""
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
             dict: "a table", dt.datetime: "a date-time", dt.date: "a date", dt.time: "a time"}
    kind = next((v for t, v in kinds.items() if type(value) is t), type(value).__name__)
    text = repr(value)
    return f"{text if len(text) <= 60 else text[:57] + '...'} ({kind})"


def _text(path: Path, key: str, value) -> str:
    if not isinstance(value, str):
        raise IncidentConfigError(f"{path}: {key}: expected a string, found {_shown(value)}")
    return value


def _texts(path: Path, key: str, value) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise IncidentConfigError(f"{path}: {key}: expected an array of strings, found {_shown(value)}")
    return list(value)


def _table(path: Path, key: str, value, expected: str) -> dict:
    if not isinstance(value, dict):
        raise IncidentConfigError(f"{path}: {key}: expected {expected}, found {_shown(value)}")
    return value


def _number(path: Path, key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IncidentConfigError(f"{path}: {key}: expected a number, found {_shown(value)}")
    return float(value)


def _role_lists(path, key: str, roles: dict) -> dict[str, list[int]]:
    for name, gpus in roles.items():
        if not isinstance(gpus, list) or not all(isinstance(g, int) and not isinstance(g, bool) for g in gpus):
            raise IncidentConfigError(f"{path}: {key}.{name}: expected an array of GPU indices "
                                      f"(or a [roles.HOST] table), found {_shown(gpus)}")
    return {k: list(v) for k, v in roles.items()}
