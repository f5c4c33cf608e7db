"""The one place that knows about clocks: time zones, offsets between sources, dates.

Loaders parse wall-clock text into naive datetimes and hand them here; everything leaving this
module is UTC.
"""

from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pandas as pd

from ..schema import TIME, TOK_PER_S
from . import host_skew
from .hosts import hosts, metric_hosts, source_hosts

# Zone abbreviations with one meaning in practice. CST (US or China), IST (India, Ireland,
# Israel), BST, AST are left out on purpose: those are read in the incident's zone.
ZONE_OFFSETS_MIN = {
    "UTC": 0, "GMT": 0, "Z": 0, "UT": 0, "WET": 0, "WEST": 60, "CET": 60, "CEST": 120, "MEZ": 60,
    "MESZ": 120, "EET": 120, "EEST": 180, "MSK": 180, "JST": 540, "KST": 540, "HKT": 480, "SGT": 480,
    "AEST": 600, "AEDT": 660, "ACST": 570, "AWST": 480, "NZST": 720, "NZDT": 780, "EST": -300,
    "EDT": -240, "CDT": -300, "MST": -420, "MDT": -360, "PST": -480, "PDT": -420, "AKST": -540,
    "AKDT": -480, "HST": -600,
}
_OFFSET = re.compile(r"^(?:UTC|GMT)?(?P<sign>[+-])(?P<h>\d{2}):?(?P<m>\d{2})?$")


def localize(times: pd.Series | pd.DatetimeIndex, timezone: str = "UTC") -> pd.Series:
    """Read naive wall-clock times in `timezone` and return them as UTC.

    Times that are already zone-aware are converted, not re-read. Wall-clock times that do not
    exist or are ambiguous (DST changes) become NaT rather than a guess.
    """
    s = pd.Series(times)
    if not pd.api.types.is_datetime64_any_dtype(s.dtype):
        s = pd.to_datetime(s, errors="coerce")
    if isinstance(s.dtype, pd.DatetimeTZDtype):
        return s.dt.tz_convert("UTC").astype(TIME)
    if timezone in ("UTC", "utc", "Z"):
        return s.dt.tz_localize("UTC").astype(TIME)
    return (
        s.dt.tz_localize(timezone, ambiguous="NaT", nonexistent="NaT")
        .dt.tz_convert("UTC")
        .astype(TIME)
    )


def zone_offset(token: str) -> int | None:
    """Minutes east of UTC for `+0100`, `-05:00`, `UTC`, `CET`...; None when not unambiguous."""
    token = token.strip()
    if token.upper() in ZONE_OFFSETS_MIN:
        return ZONE_OFFSETS_MIN[token.upper()]
    m = _OFFSET.match(token)
    if m:
        minutes = int(m["h"]) * 60 + int(m["m"] or 0)
        return minutes if m["sign"] == "+" else -minutes
    return None


def date_times_of_day(
    seconds, dates=None, *, slack_s: float, start: dt.date | str | None = None, stated=None,
) -> np.ndarray:
    """The date of each reading of one clock read in order, where some readings are a time of
    day only (dmon -o T, a log line's `[12:34:56]`, a prompt's clock): every loader dates those
    here.

    `seconds` is each reading's time of day in seconds; `dates` the date a reading states itself
    (a full timestamp), NaT for a time of day only (default: none states one). A time of day
    takes the date of the nearest reading before it that states one (readings before the first
    such take the first's), one day later for each time the clock went back by more than
    `slack_s` between a time of day and the reading before it: a midnight passed. A reading with
    no time of day (NaN) passes no midnight, nor does the one after it. When no reading states a
    date, the dates count from `start`; without it they are NaT. `stated` marks readings that
    state a date even where it is unreadable (NaT in `dates`): the readings dated from those are
    NaT too. Returns datetime64[D].
    """
    secs = np.asarray(seconds, dtype=float)
    n = len(secs)
    days = (np.full(n, np.datetime64("NaT"), dtype="datetime64[D]") if dates is None
            else np.asarray(dates, dtype="datetime64[D]"))
    stated = ~np.isnat(days) if stated is None else np.asarray(stated, dtype=bool)
    back = np.zeros(n, dtype=np.int64)
    if n > 1:
        back[1:] = (secs[1:] < secs[:-1] - slack_s) & ~stated[1:]
    midnights = np.cumsum(back)
    if not stated.any():
        if start is None:
            return days
        return np.datetime64(start, "D") + midnights
    at = np.where(stated, np.arange(n), -1)
    anchor = np.maximum.accumulate(at)
    anchor[anchor < 0] = np.flatnonzero(stated)[0]
    return days[anchor] + (midnights - midnights[anchor])


def zone_assumption(timezone: str) -> str:
    """The load-report wording for a source whose times carry no zone."""
    return f"no time zone in file, read as {timezone}"


def shift(df: pd.DataFrame, seconds: float, columns=("time",)) -> pd.DataFrame:
    """Add a clock offset to the time columns of a frame."""
    if not seconds:
        return df
    out = df.copy()
    delta = pd.Timedelta(seconds=seconds)
    for c in columns:
        if c in out.columns:
            out[c] = out[c] + delta
    return out


_TIMED = ("gpus", "gpu_processes", "metrics", "events")


def apply_offsets(inc, offsets: dict[str, float]) -> None:
    """Add manual clock offsets (incident.toml `[offsets]`, seconds by source path; a prefix names
    a folder) to every time of the matching sources, and record them in the load report."""
    for src, seconds in offsets.items():
        delta = pd.Timedelta(seconds=seconds)
        for name in (*_TIMED, "processes"):
            df = getattr(inc, name)
            _shift(df, df["source"].fillna("").str.startswith(src), delta)
        inc.load_report.offsets[src] = seconds


def _shift(df: pd.DataFrame, hit: pd.Series, delta: pd.Timedelta) -> None:
    """Add `delta` to every time of the rows `hit` selects: each tz-aware column (a frame's own
    `time`, a process's first and last listing and start, what a loader adds)."""
    hit = hit.fillna(False).astype(bool)
    if not hit.any():
        return
    for col in df.columns:
        if isinstance(df[col].dtype, pd.DatetimeTZDtype):
            df.loc[hit, col] = df.loc[hit, col] + delta


OFFSET_COLUMNS = ("source", "reference", "seconds", "samples", "method")


def estimate_offsets(inc, *, metric: str = TOK_PER_S, loading_pattern: str = r"[Ll]oading .*model") -> pd.DataFrame:
    """Clock offsets between sources that record the same moment, to report (not apply).

    - the same throughput value of the same run logged by two sources (a log line and wandb
      record one measurement; wandb's `_step` is not the trainer's step): median time difference;
    - a "loading model" log line against the first rise of GPU memory after it (the model's
      weights arrive a few seconds later: a large or negative gap means the clocks disagree).
    `seconds` is what to add to `source` to put it on `reference`'s clock.
    """
    rows = []
    m = inc.metrics[(inc.metrics["metric"] == metric) & inc.metrics["value"].notna()]
    # logs print rounded numbers: compare at the log's precision
    m = m.assign(value=m["value"].round()).drop_duplicates(subset=["source", "run", "value"], keep=False)
    srcs = m["source"].dropna().unique().tolist()
    for i, a in enumerate(srcs):
        for b in srcs[i + 1:]:
            j = m[m["source"] == a].merge(m[m["source"] == b], on=["run", "value"], suffixes=("_a", "_b"))
            if len(j):
                diff = (j["time_b"] - j["time_a"]).dt.total_seconds()
                rows.append({"source": a, "reference": b, "seconds": float(diff.median()),
                             "samples": int(len(j)), "method": f"same {metric} value of the same run"})
    ev = inc.events
    loads = ev[(ev["kind"] == "stage") & ev["message"].fillna("").str.contains(loading_pattern)]
    g = inc.gpus.dropna(subset=["memory_used_mib"])
    for src, gs in g.groupby("source"):
        gs = gs.sort_values("time")
        if gs["time"].nunique() < 20:
            continue  # a snapshot, not a series: it cannot say when memory rose
        idle = gs["memory_used_mib"] < 100
        rises = gs[~idle & idle.groupby(gs["gpu"]).shift(1, fill_value=True).to_numpy()]
        gaps = []
        for t in loads["time"]:
            if not gs["time"].iloc[0] < t < gs["time"].iloc[-1]:
                continue
            after = rises[(rises["time"] >= t - pd.Timedelta(seconds=60))
                          & (rises["time"] <= t + pd.Timedelta(seconds=120))]
            if len(after):
                gaps.append((after["time"].iloc[0] - t).total_seconds())
        if gaps and loads["source"].nunique():
            rows.append({"source": loads["source"].iloc[0], "reference": src,
                         "seconds": float(pd.Series(gaps).median()), "samples": len(gaps),
                         "method": "model-loading line vs first GPU memory rise"})
    return pd.DataFrame(rows, columns=list(OFFSET_COLUMNS))


# host_clocks = "auto" applies an estimated skew only when it is at least this large and this
# many times its uncertainty. Below 2 s no detector's judgement changes (their windows are tens
# of seconds and more; samples come at 1 Hz) while a wrong shift could move a host's lines past
# another's; and two whole-second stamps of one moment already differ by up to 1 s.
AUTO_MIN_S = 2.0
AUTO_SIGMAS = 4.0


def align_host_clocks(inc) -> None:
    """Estimate each host's clock skew from the moments it shares with the others
    (`host_skew.estimate`), record every estimate in the load report (`host_clocks`), and put
    the hosts on the reference host's clock where incident.toml's `host_clocks` says so:
    "auto" (the default) when the skew is large and well supported (AUTO_MIN_S, AUTO_SIGMAS),
    "apply" for every estimate, "estimate" never. A host whose clock incident.toml's `[offsets]`
    already sets keeps that offset: an explicit offset wins over an estimate. One host: nothing."""
    if len(hosts(inc)) < 2:
        return
    est = host_skew.estimate(inc)
    if est.empty:
        return
    mode = inc.config.host_clocks
    by_source = source_hosts(inc)
    explicit = {h for src in inc.config.offsets for s, h in by_source.items() if s.startswith(src)}
    mh = metric_hosts(inc)
    for r in est.to_dict("records"):
        host, seconds, unc = r["host"], float(r["seconds"]), float(r["uncertainty_s"])
        if host in explicit:
            applied, why = False, "incident.toml [offsets] sets this host's clock"
        elif mode == "estimate":
            applied, why = False, 'incident.toml host_clocks = "estimate"'
        elif mode == "apply":
            applied, why = bool(seconds), 'incident.toml host_clocks = "apply"'
        else:
            applied = abs(seconds) >= AUTO_MIN_S and abs(seconds) >= AUTO_SIGMAS * unc
            why = ("large and well supported" if applied else
                   f"not applied: under {AUTO_MIN_S:g} s or under {AUTO_SIGMAS:g} x its uncertainty")
        text = (f"clock of host {host} is {-seconds:+.1f} s (+-{unc:.1f} s) from host {r['reference']}'s, "
                f"estimated from {r['pairs']} moments both logged ({', '.join(r['methods'])})")
        if applied:
            _shift_host(inc, host, seconds, mh)
            for rep in inc.load_report.files:
                if by_source.get(rep.path) == host:
                    rep.assume(f"{text}: shifted by {seconds:+.1f} s onto host {r['reference']}'s clock")
        else:
            inc.load_report.notes.append(f"{text}; {why}")
        inc.load_report.host_clocks[host] = dict(r, applied=applied, why=why)


def _shift_host(inc, host: str, seconds: float, metric_host: pd.Series) -> None:
    """Add `seconds` to every time of the rows that came from `host`."""
    delta = pd.Timedelta(seconds=seconds)
    for name in (*_TIMED, "processes"):
        df = getattr(inc, name)
        _shift(df, (metric_host == host) if name == "metrics" else (df["host"] == host), delta)
