"""What the container readers find, as event rows: the lifecycle kinds of `schema.EVENT_KINDS`
(attempt_start, attempt_end, oom_kill, kill_sent, exit, killed) with the job (pod or container)
and attempt (restart count) where the output gives them, and the frame they become.

Many of these outputs state when things happened only as an age (`5m`, `Exited (1) 2 hours
ago`): `anchor` reads the ages against the time the command ran (a transcript's prompt or `date`),
else against the newest absolute time the same output states (it was printed no earlier), else
keeps them relative (`age_s`, no time) and the load report says which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pandas as pd

from ...clock import align
from ...incident import Incident, from_frames
from ...shell_words import match_prompt
from ..clock_text import parse_wall_clock
from ..terminal import read_lines
from ..training_log.patterns import integer

# Integer columns the readers fill beyond the canonical ones (nullable: missing is <NA>).
INT_COLUMNS = ("exit_code", "restart_count", "count", "target_pid")
_BOOL_COLUMNS = ("time_approx", "core_dumped")


@dataclass
class Found:
    """Event rows of one output, each with the line (1-based, in the file) that states it."""

    rows: list[dict] = field(default_factory=list)

    def add(self, time, kind: str, message: str, line: int, **extra) -> dict:
        row = dict(time=time, kind=kind, message=message, line=line, **{k: v for k, v in extra.items() if v is not None})
        self.rows.append(row)
        return row

    def times(self) -> list[pd.Timestamp]:
        """The absolute times the output states (ages not read yet)."""
        return [r["time"] for r in self.rows if not pd.isna(r["time"]) and "age_s" not in r]


class Lines:
    """Counts each line of an output in the file's report: parsed, or skipped with its reason.
    Inside a transcript, which counts its own lines, it counts nothing (`counted=False`)."""

    def __init__(self, rep, counted: bool = True):
        self.rep, self.counted = rep, counted

    def parsed(self, n: int = 1) -> None:
        if self.counted:
            self.rep.parsed += n

    def skip(self, line: int, reason: str) -> None:
        if self.counted:
            self.rep.skip(line, reason)


_FENCE = ("```", "~~~")


def framing(line: str) -> str | None:
    """Why a line of a paste is not the tool's output (blank, a markdown fence, the prompt and
    command that printed it), or None when it may be."""
    s = line.strip()
    if not s:
        return "blank line"
    if s.startswith(_FENCE):
        return "markdown fence"
    p = match_prompt(s)
    if p is not None and p.command:
        return "shell prompt line"
    return None


def table_rows(lines: list[str], first: int, count: Lines, header, columns_of, before: str, headless=None):
    """(line number, line, columns) of each line after a whitespace-aligned table's header
    (`header` matches it stripped; `columns_of(header line)` gives its columns): blank lines,
    fences and the prompt line are skipped as `framing` says, the header as a header, any line
    before it with the reason `before`, unless it is a row the header was cut from (a paste
    that kept rows only: `headless(line)` says so), whose columns are None."""
    columns = None
    for i, raw in enumerate(lines, first):
        why = framing(raw)
        if why is not None:
            count.skip(i, why)
        elif header.match(raw.strip()):
            columns = columns_of(raw.rstrip())
            count.skip(i, "header line")
        elif columns is None and headless is not None and headless(raw):
            yield i, raw, None
        elif columns is None:
            count.skip(i, before)
        else:
            yield i, raw, columns


@lru_cache(maxsize=4)
def is_session(head: bytes) -> bool:
    """Two or more prompts with a command: a terminal session, which the transcript loader reads
    (it hands each container command's answer to these readers). Asked of the same head by each
    container format's sniffer: answered once per head."""
    lines = head.decode("utf-8", "replace").splitlines()[:400]
    return sum(1 for ln in lines if (p := match_prompt(ln.strip())) is not None and p.command) >= 2


def stated_time(text: str, ctx, rep) -> pd.Timestamp:
    """A time as these tools print it (`Mon, 13 Nov 2023 03:50:57 +0100`, RFC 3339 with nanoseconds,
    `2024-01-02 03:04:05 +0000 UTC`); a time without a zone is read in the incident's zone. Go's
    zero time (`0001-01-01T00:00:00Z`) and the epoch that some kubectl versions print for
    "never" are missing."""
    wall = parse_wall_clock(text.strip())
    if wall is None or wall.naive.year <= 1970:
        return pd.NaT
    if wall.offset_min is not None:
        return wall.utc()
    rep.assume(align.zone_assumption(ctx.timezone))
    return align.localize(pd.Series([wall.naive]), ctx.timezone).iloc[0]


def anchor(found: Found, now, rep, what: str) -> None:
    """Give rows that carry only an age (`age_s`, seconds before the output was printed) a time:
    `now` (when the command ran, where a transcript says it), else the newest absolute time of
    the output; otherwise they keep no time. `what` names the output in the load report."""
    aged = [r for r in found.rows if "age_s" in r and pd.isna(r["time"])]
    if not aged:
        return
    if now is None or pd.isna(now):
        stated = found.times()
        if not stated:
            rep.notes.append(f"{what}: ages ({len(aged)} rows) kept relative in age_s: nothing says when the output "
                             "was printed")
            return
        now = max(stated)
        rep.assume(f"{what}: ages read against the newest time the output states ({now:%Y-%m-%d %H:%M:%S} UTC): "
                   "it was printed no earlier, so those times are the earliest they can be")
    else:
        rep.assume(f"{what}: ages read against the time the command ran ({now:%Y-%m-%d %H:%M:%S} UTC)")
    for r in aged:
        r["time"] = now - pd.Timedelta(seconds=r["age_s"])
        r["time_approx"] = True
        if r.get("first_age_s") is not None:
            r["first_seen"] = now - pd.Timedelta(seconds=r["first_age_s"])


def events_frame(found: Found, rep, ctx) -> pd.DataFrame:
    """The rows as an events frame: typed columns, `source`, `ref` (file:line) and host."""
    df = pd.DataFrame(found.rows)
    if df.empty:
        return df
    df["time"] = pd.Series(pd.to_datetime(df["time"], utc=True, errors="coerce"), dtype="datetime64[us, UTC]")
    if "first_seen" in df:
        df["first_seen"] = pd.Series(pd.to_datetime(df["first_seen"], utc=True, errors="coerce"),
                                     dtype="datetime64[us, UTC]")
    df["source"] = rep.path
    df["ref"] = [f"{rep.path}:{n}" for n in df.pop("line")]
    if "host" not in df:
        df["host"] = ctx.host
    df["host"] = df["host"].where(df["host"].notna(), ctx.host)
    for col in (*INT_COLUMNS, "pid", "attempt"):
        if col in df:
            df[col] = pd.array([integer(v) for v in df[col]], dtype="Int64")
    for col in _BOOL_COLUMNS:
        if col in df:
            df[col] = df[col].astype("boolean")
    return df



def load_output(path: Path, ctx, fmt: str, read, what: str) -> Incident:
    """A file holding one tool's output: `read(lines, first, ctx, rep, found)` finds the rows (a
    reader of a document answers False when the file holds none: its lines are then skipped),
    ages are anchored, and the rows become the events frame."""
    path = Path(path)
    rep = ctx.report(path, fmt)
    lines = read_lines(path, fmt)
    rep.read = len(lines)
    found = Found()
    if read(lines, 1, ctx, rep, found) is False:
        for i, ln in enumerate(lines, 1):
            rep.skip(i, framing(ln) or f"no {what} in the file")
    anchor(found, None, rep, what)
    return from_frames(rep, events=events_frame(found, rep, ctx))
