"""A large incident as the `fleet` command reads it: the fleet detectors (detect/fleet.py) over
the whole Parquet store, on a dask cluster where one is given, then each incident window they find
loaded from the store with its hosts and judged by the incident detectors.

`windows(findings)` turns findings into the incident windows (time span and hosts) to hand to the
existing detectors through `load_incident(store, window=..., hosts=...)`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..config import incident_config
from ..detect import detect
from ..detect.fleet import Fleet
from ..units import clock
from .cluster import query_on_cluster
from .ingest import ingest
from .load import load_incident
from .views import connect

WINDOW_PAD = pd.Timedelta(minutes=10)  # context on each side of an incident window


def on_cluster(store: str, scheduler):
    """The fleet's one scan of the GPU samples as tasks on `scheduler`'s cluster, one per group of
    the store's Parquet parts (Fleet's `scan`)."""
    return functools.partial(query_on_cluster, store, "gpus", scheduler=scheduler)


def windows(found: pd.DataFrame, pad: pd.Timedelta = WINDOW_PAD) -> pd.DataFrame:
    """Incident windows from fleet findings: each finding's [start - pad, end + pad], overlapping
    ones merged; with the hosts and kinds inside. Hand each to `load_incident(store, window=...,
    hosts=...)` and the existing detectors."""
    cols = ["start", "end", "hosts", "kinds"]
    if found.empty:
        return pd.DataFrame(columns=cols)
    f = found.assign(host=[n.get("host") if isinstance(n, dict) else None for n in found["numbers"]])
    f = f.assign(lo=f["start"] - pad, hi=f["end"].fillna(f["start"]) + pad).sort_values("lo")
    out: list[dict] = []
    for r in f.itertuples():
        if out and r.lo <= out[-1]["end"]:
            w = out[-1]
            w["end"] = max(w["end"], r.hi)
        else:
            w = {"start": r.lo, "end": r.hi, "hosts": [], "kinds": []}
            out.append(w)
        if r.host is not None and r.host not in w["hosts"]:
            w["hosts"].append(r.host)
        if r.kind not in w["kinds"]:
            w["kinds"].append(r.kind)
    return pd.DataFrame(out, columns=cols)


@dataclass
class FleetInvestigation:
    """A large incident as `dflash-postmortem fleet` reads it: the fleet-wide findings over the
    whole store, and for each incident window the existing detectors' findings on just it."""

    store: str
    found: pd.DataFrame
    windows: list[tuple[pd.Series, pd.DataFrame]]

    def lines(self) -> list[str]:
        out = [f"Fleet findings over the whole store ({len(self.found)}):"]
        out += [f"  {clock(r.start, date=True)}  {r.kind}: {r.title}" for r in self.found.itertuples()] or ["  none"]
        for w, found in self.windows:
            hosts = ", ".join(w["hosts"]) or "every host"
            out.append(f"Window {clock(w['start'], date=True)} .. {clock(w['end'], date=True)} UTC on {hosts}: "
                       f"{len(found)} finding(s) from the incident detectors")
            out += [f"  {clock(r.start)}  {r.kind}: {r.title}" for r in found.itertuples()]
        return out


def investigate(folder, store: str | None = None, *, scheduler=None, workers: int | None = None) -> FleetInvestigation:
    """Ingest `folder` (only what changed), run the fleet detectors over the whole store (on
    `scheduler`'s cluster when given), then load each incident window with its hosts and run the
    incident detectors on it."""
    folder = Path(folder)
    done = ingest(folder, store, scheduler=scheduler, workers=workers)
    cfg = incident_config(folder)
    scan = on_cluster(done.store, scheduler) if scheduler is not None else None
    found = Fleet(connect(done.store), config=cfg, scan=scan).detect()
    looked = []
    for w in windows(found).to_dict("records"):
        inc = load_incident(folder, window=(w["start"], w["end"]), hosts=w["hosts"] or None)
        # the window's own findings: the fleet's, over the whole store, are told above
        looked.append((pd.Series(w), detect(inc, fleet=False)))
    return FleetInvestigation(done.store, found, looked)
