"""`incident.toml`: what the user knows that the files cannot say.

Every key is optional. Example:

    title = "DFlash drafter run, night of 2026-11-29"
    timezone = "Europe/Berlin"          # for sources whose times carry no zone
    date = "2026-11-30"                 # for time-of-day-only sources (dmon -o T)
    hosts = ["node17"]
    expected_tok_per_s = 21500
    recovery_fraction = 0.9

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
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import IncidentConfigError

CONFIG_NAME = "incident.toml"
_KNOWN = {
    "title", "timezone", "date", "hosts", "expected_tok_per_s", "recovery_fraction", "roles",
    "sources", "offsets", "patterns", "ignore", "detect",
}


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


def read_config(path: Path) -> IncidentConfig:
    """Parse `incident.toml`; unknown keys and wrong types are errors that name the key."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise IncidentConfigError(f"{path}: not valid TOML: {e}") from e
    unknown = set(raw) - _KNOWN
    if unknown:
        raise IncidentConfigError(f"{path}: unknown key(s) {sorted(unknown)}; known keys are {sorted(_KNOWN)}")
    cfg = IncidentConfig(path=path)
    if "title" in raw:
        cfg.title = str(raw["title"])
    if "timezone" in raw:
        cfg.timezone = check_timezone(str(raw["timezone"]), f"{path}: timezone")
    if "date" in raw:
        d = raw["date"]
        if isinstance(d, str):
            try:
                d = dt.date.fromisoformat(d)
            except ValueError as e:
                raise IncidentConfigError(f"{path}: date: expected YYYY-MM-DD, found {raw['date']!r}") from e
        if not isinstance(d, dt.date):
            raise IncidentConfigError(f"{path}: date: expected YYYY-MM-DD, found {d!r}")
        cfg.date = d
    if "hosts" in raw:
        cfg.hosts = [str(h) for h in raw["hosts"]]
    if "expected_tok_per_s" in raw:
        cfg.expected_tok_per_s = _number(path, "expected_tok_per_s", raw["expected_tok_per_s"])
    if "recovery_fraction" in raw:
        f = _number(path, "recovery_fraction", raw["recovery_fraction"])
        if not 0 < f <= 1:
            raise IncidentConfigError(f"{path}: recovery_fraction: expected a number in (0, 1], found {f}")
        cfg.recovery_fraction = f
    if "roles" in raw:
        roles = raw["roles"]
        if not isinstance(roles, dict):
            raise IncidentConfigError(f"{path}: roles: expected a table like target = [0, 1], found {roles!r}")
        cfg.roles = _role_lists(path, "roles", {k: v for k, v in roles.items() if not isinstance(v, dict)})
        cfg.host_roles = {host: _role_lists(path, f"roles.{host}", v) for host, v in roles.items() if isinstance(v, dict)}
    for key in ("sources", "patterns"):
        if key in raw:
            items = raw[key]
            if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
                raise IncidentConfigError(f"{path}: {key}: expected [[{key}]] tables")
            setattr(cfg, key, items)
    for s in cfg.sources:
        if "path" not in s:
            raise IncidentConfigError(f"{path}: a [[sources]] entry has no path: {s!r}")
        if "timezone" in s:
            check_timezone(str(s["timezone"]), f"{path}: sources[{s['path']}].timezone")
    if "offsets" in raw:
        cfg.offsets = {str(k): _number(path, f"offsets.{k}", v) for k, v in raw["offsets"].items()}
    if "ignore" in raw:
        cfg.ignore = [str(p) for p in raw["ignore"]]
    if "detect" in raw:
        cfg.detect = dict(raw["detect"])
    return cfg


def _number(path: Path, key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IncidentConfigError(f"{path}: {key}: expected a number, found {value!r}")
    return float(value)


def _role_lists(path, key: str, roles: dict) -> dict[str, list[int]]:
    for name, gpus in roles.items():
        if not isinstance(gpus, list) or not all(isinstance(g, int) for g in gpus):
            raise IncidentConfigError(f"{path}: {key}.{name}: expected a list of GPU indices "
                                      f"(or a [roles.HOST] table), found {gpus!r}")
    return {k: list(v) for k, v in roles.items()}
