"""The findings frame every detector returns, and how a finding cites its evidence.

A finding is one claim about the incident: what (kind, title, detail), when (start, end, and
`within_s`: how much later its start may truly be, where the source that shows it gives its time
only roughly, such as ps's minute or a transcript dated by its `date`s; 0 where exact), how bad
(severity), the numbers behind it, and `evidence`: `file:line` references into the incident's own
files, so that every claim can be checked by opening the line it cites.

Findings form a small cause graph: `caused_by` lists links, each naming its cause by `id` (another
finding's id, or `event:<file:line>` for an event such as a failed kill), why it is a cause, and
the evidence lines of that link. A finding's `id` is `kind@<UTC start>`, so detectors can name a
cause they did not produce.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from ..incident import Incident
from ..model import computed as memo
from ..schema import TIME, ref_line, ref_lines
from ..units import is_missing
from .finding_text import one_line, written
from .numbers import declared

COLUMNS = ("id", "kind", "start", "end", "within_s", "severity", "title", "detail", "evidence", "numbers", "caused_by")
SEVERITIES = ("info", "warning", "critical")


def empty() -> pd.DataFrame:
    """No findings: a frame with the columns, never None."""
    return frame([])


def frame(rows: list[dict]) -> pd.DataFrame:
    """Findings rows -> the findings frame, ordered by start time."""
    if not rows:
        return _none().copy()
    return _typed(pd.DataFrame(rows, columns=list(COLUMNS)))


@functools.cache
def _none() -> pd.DataFrame:
    """No findings, typed: built once (most detectors find nothing in most incidents)."""
    return _typed(pd.DataFrame([], columns=list(COLUMNS)))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    for col in ("start", "end"):
        df[col] = pd.to_datetime(df[col], utc=True).astype(TIME) if len(df) else pd.Series(dtype=TIME)
    df["within_s"] = pd.to_numeric(df["within_s"], errors="coerce").fillna(0.0).astype(float)
    for col in ("id", "kind", "severity", "title", "detail"):
        df[col] = df[col].astype("string")
    df["caused_by"] = [list(c) if isinstance(c, list) else [] for c in df["caused_by"]]
    for col in ("evidence", "numbers", "caused_by"):
        df[col] = df[col].astype(object)
    return df.sort_values("start", kind="stable", na_position="last").reset_index(drop=True)


def finding_id(kind: str, start) -> str:
    """The id a finding of `kind` starting at `start` gets: `kind@2026-12-01T10:31:06`."""
    return f"{kind}@{pd.Timestamp(start):%Y-%m-%dT%H:%M:%S}" if start is not None and not pd.isna(start) else f"{kind}@?"


def event_id(ref: str) -> str:
    """The id of an event as a cause: its evidence line."""
    return f"event:{ref}"


def cause(cause_id: str, why: str, evidence: list[str]) -> dict:
    """One link of the cause graph: the cause's id, why it is a cause, the lines that show it."""
    return {"id": cause_id, "why": why, "evidence": unique([e for e in evidence if isinstance(e, str) and e])}


def finding(kind: str, start, end, severity: str, evidence: list[str], numbers: dict,
            caused_by: list[dict] | None = None, within_s: float = 0.0) -> dict:
    """One finding; its title and detail are written from its numbers (finding_text.py)."""
    assert severity in SEVERITIES, severity
    # Internal invariant: every number is declared for its kind (detect/numbers.py).
    undeclared = set(numbers) - declared(kind)
    assert not undeclared, f"{kind}: numbers {sorted(undeclared)} are not declared in detect/numbers.py"
    # a number the evidence does not give is None, however the frame it came from marks it
    # missing (a string column's NaN read back as a run's name said "nan")
    numbers = {k: None if is_missing(v) else v for k, v in numbers.items()}
    title, detail = written(kind, start, end, within_s, numbers)
    return {
        "id": finding_id(kind, start), "kind": kind, "start": start, "end": end,
        "within_s": 0.0 if within_s is None or pd.isna(within_s) else float(within_s), "severity": severity,
        "title": title, "detail": detail, "evidence": unique(evidence), "numbers": numbers,
        "caused_by": list({c["id"]: c for c in caused_by or []}.values()),
    }


def refs(df: pd.DataFrame, limit: int | None = None) -> list[str]:
    """`file:line` references of a frame's rows: its `ref` column, or `source` + `line`."""
    if df is None or df.empty:
        return []
    if "ref" in df.columns:
        out = df["ref"].dropna().astype(str).tolist()
    elif "line" in df.columns and "source" in df.columns:
        ok = df.dropna(subset=["source", "line"])
        out = [f"{s}:{int(n)}" for s, n in zip(ok["source"], ok["line"], strict=True)]
    else:
        out = []
    out = unique([r for r in out if r])
    return out if limit is None else out[:limit]


def unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def in_file_order(rows: pd.DataFrame) -> pd.DataFrame:
    """One source's rows in the order its file holds them: by the line each cites, else (a wandb
    or TensorBoard run's records cite none) by step and time."""
    if "ref" not in rows.columns:
        return rows.sort_values(["step", "time"], kind="stable", na_position="first")
    return rows.iloc[np.argsort(ref_lines(rows["ref"]).fillna(0).to_numpy(), kind="stable")]


def whole(v) -> int | None:
    """A count or step as read from a frame (a float, pandas' NA) as an int, None where missing."""
    return None if is_missing(v) else int(v)


def shifted(ref: str, by: int) -> str | None:
    """The reference `by` lines after `ref` (a command's output follows its prompt line)."""
    split = ref_line(ref)
    return None if split is None else f"{split[0]}:{split[1] + by}"


def memory_by_pid(gpu_processes: pd.DataFrame) -> tuple[pd.Series, list[str]]:
    """The most GPU memory each PID held in these per-process samples (MiB), and one sample line
    citing each PID."""
    if gpu_processes.empty:
        return pd.Series(dtype=float), []
    per = gpu_processes.dropna(subset=["pid"]).groupby("pid")
    return per["used_memory_mib"].max(), [r for _, one in per for r in refs(one, 1)]


def ended_by(inc: Incident, attempt: pd.Series) -> str | None:
    """The line that ended an attempt, quoted: the command a kill came from (`kill $(cat
    run/a.pid)`), else the end's own words."""
    if attempt["end_kind"] == "kill_sent" and isinstance(attempt["end_ref"], str):
        cmd = memo.rows_where(inc, "events", "ref", attempt["end_ref"])
        cmd = cmd[cmd["kind"] == "command"]
        if len(cmd):
            return f"`{one_line(str(cmd['message'].iloc[0]))}`"
    return f"`{one_line(str(attempt['end_message']))}`" if isinstance(attempt["end_message"], str) else None
