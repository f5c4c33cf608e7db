"""Which host each row of an incident came from, and one host's share of an incident.

The gpus, gpu_processes, events and processes frames carry a `host` column; metrics do not (a
value belongs to a run, and one run spans every host of the job). A metric row's host is its
file's: the one host the other rows read from the same file name (a training log's events), or
the one incident.toml's `[[sources]]` gives it. A file that names several hosts (a pdsh
fan-out) gives its metrics none.

An incident with at most one named host is one machine: rows that name no host are that
machine's. With two or more, each host is judged on its own rows (`views`), and rows that name
no host are a share of their own: evidence nobody placed on a host is never lent to every host.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident

HOSTED = ("gpus", "gpu_processes", "events", "processes")


def source_hosts(inc: Incident) -> dict[str, str]:
    """source -> host, for every file whose rows (or whose `[[sources]]` entry) name one host."""
    pairs = [df[["source", "host"]].dropna() for df in (getattr(inc, n) for n in HOSTED) if len(df)]
    out: dict[str, str] = {}
    if pairs:
        both = pd.concat(pairs, ignore_index=True)
        # Grouping, not drop_duplicates: a fleet's gpus frame has millions of rows of few pairs.
        per = both.groupby(["source", "host"], observed=True, sort=False).size().reset_index()
        one = per[~per["source"].duplicated(keep=False)]
        out = dict(zip(one["source"].astype(str), one["host"].astype(str), strict=True))
    for s in inc.config.sources:
        if isinstance(s.get("host"), str):
            out.setdefault(str(s["path"]), s["host"])
    return out


def metric_hosts(inc: Incident) -> pd.Series:
    """The host of each metrics row (its file's), NA where no host is known."""
    m = inc.metrics
    known = source_hosts(inc)
    return m["source"].map(known).astype("string") if len(m) else pd.Series(dtype="string")


def hosts(inc: Incident) -> list[str]:
    """Every host named in the incident, sorted."""
    names: set[str] = set()
    for n in HOSTED:
        df = getattr(inc, n)
        if len(df):
            names |= {str(h) for h in df["host"].dropna().unique()}
    # A metric's host is one of these or a [[sources]] host: only a new one needs the files' map
    # (what keeps the check cheap for every incident of one machine).
    given = {s["host"] for s in inc.config.sources if isinstance(s.get("host"), str)} - names
    if given and len(inc.metrics):
        names |= {str(h) for h in metric_hosts(inc).dropna().unique()}
    return sorted(names)


def view(inc: Incident, host: str | None, metric_host: pd.Series | None = None) -> Incident:
    """The rows of `host` (None: the rows that name no host) as an Incident of their own, with
    the incident's load report, runs and configuration."""
    frames = {}
    for n in HOSTED:
        df = getattr(inc, n)
        keep = df["host"].isna() if host is None else df["host"] == host
        frames[n] = df[keep.fillna(False).astype(bool)]
    mh = metric_hosts(inc) if metric_host is None else metric_host
    keep = mh.isna() if host is None else mh == host
    frames["metrics"] = inc.metrics[keep.fillna(False).astype(bool)] if len(inc.metrics) else inc.metrics
    # (read live, a host's view is live too, and keeps what it computes in the whole's Carry)
    return Incident(**frames, load_report=inc.load_report, runs=inc.runs, config=inc.config, root=inc.root,
                    live=inc.live, carried=inc.carried)


def views(inc: Incident) -> list[tuple[str | None, Incident]]:
    """(host, its share) for each host, and (None, the rows that name no host) when there are
    any; an incident of one machine is its own single share, unchanged."""
    names = hosts(inc)
    if len(names) < 2:
        return [(names[0] if names else None, inc)]
    mh = metric_hosts(inc)
    out = [(h, view(inc, h, mh)) for h in names]
    rest = view(inc, None, mh)
    if any(len(getattr(rest, n)) for n in (*HOSTED, "metrics")):
        out.append((None, rest))
    return out
