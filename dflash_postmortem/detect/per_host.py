"""Each host judged on its own, then the fleet summarised.

A fleet read as one machine hides what one host did: the highest utilization over all hosts at
each second shows no stall while one host sat at 0 % for twenty minutes, and a regression of
one host's throughput drowns in the others'. So a detector given an incident with two or more
hosts runs on each host's share (`hosts.views`), every finding it makes names its host (title,
`numbers["host"]`, and an id of its own: `kind@start@host`), and the summary across hosts says,
for each finding, on which other hosts a finding of the same kind overlaps it in time
(`numbers["also_on_hosts"]`): one host's stall and a stall of the whole job read differently.
An incident of one machine goes through unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pandas as pd

from ..clock import hosts as host_rows
from ..incident import Incident
from ..model import computed as memo
from . import findings


def hosts(inc: Incident) -> list[str]:
    """The incident's hosts, once per detect() scope."""
    return memo.cached(inc, "hosts", (*host_rows.HOSTED, "metrics"), lambda: host_rows.hosts(inc))


def judged(detector: Callable[..., pd.DataFrame]) -> Callable[..., pd.DataFrame]:
    """Make `detector` judge each host of a fleet on its own and name the host in its findings."""

    @functools.wraps(detector)
    def per_host(inc: Incident, *args, **kwargs) -> pd.DataFrame:
        if len(hosts(inc)) < 2:
            return detector(inc, *args, **kwargs)
        parts = []
        for host, share in host_rows.views(inc):
            parts.append(named(detector(share, *args, **kwargs), host))
        return summarised(parts)

    return per_host


def named(found: pd.DataFrame, host: str | None) -> pd.DataFrame:
    """One host's findings with the host in their title, numbers and ids (links between them
    follow the new ids)."""
    if found.empty:
        return found
    rows = found.to_dict("records")
    renamed = {r["id"]: f"{r['id']}@{host}" for r in rows} if host is not None else {}
    for r in rows:
        r["id"] = renamed.get(r["id"], r["id"])
        r["caused_by"] = [dict(c, id=renamed.get(c["id"], c["id"])) for c in r["caused_by"]]
        r["numbers"] = dict(r["numbers"], host=host)
        if host is not None and not str(r["title"]).startswith(f"host {host}: "):
            r["title"] = f"host {host}: {r['title']}"
    return findings.frame(rows)


def summarised(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The hosts' findings as one frame, each saying where else the same kind overlaps it."""
    rows = [r for p in parts if len(p) for r in p.to_dict("records")]
    by_kind: dict[str, list[dict]] = {}
    for r in rows:
        by_kind.setdefault(r["kind"], []).append(r)
    for r in rows:
        start, end = _span(r)
        others = sorted({str(o["numbers"]["host"]) for o in by_kind[r["kind"]]
                         if o["numbers"]["host"] is not None and o["numbers"]["host"] != r["numbers"]["host"]
                         and _span(o)[0] <= end and _span(o)[1] >= start})
        r["numbers"] = dict(r["numbers"], also_on_hosts=others)
        if others:
            r["detail"] = f"{r['detail']} The same at the same time on host(s) {', '.join(others)}."
    return findings.frame(rows)


def _span(r: dict) -> tuple[pd.Timestamp, pd.Timestamp]:
    """A finding's interval; one without an end (a recovery that never came) is its start."""
    return r["start"], r["start"] if pd.isna(r["end"]) else r["end"]
