"""A wandb run's console: the trainer's stdout and stderr as the SDK kept them (`output` records of
the .wandb log, files/output.log), as lines, and what went wrong as those lines say it.

The console is the trainer's own log, kept inside the run: a traceback, CUDA's out of memory or a
NCCL timeout in it is read by the training-log patterns, as it would be in a log file beside the
run (a crashed run's exit record says only `exit_code: 1`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from ...schema import PROBLEM_EVENTS
from ..registry import LoadContext
from ..training_log.process_log import load_log
from .decoding import Decoded
from .frames import to_time

# What went wrong, of the kinds a log's lines give (a warning line is no fault of the run's).
PROBLEMS = tuple(k for k in PROBLEM_EVENTS if k != "warning")
# What a console line's event keeps of the line: where and when it was written, and whose it was.
_OF_THE_LINE = ("time", "host", "run", "pid", "source", "ref")


def console_lines(chunks: list[tuple[int, int, str, str]]):
    """Raw console chunks (text and newlines arrive as separate records) -> whole lines.

    Yields (record number, µs, stream, line); a carriage return keeps what a terminal would show
    (the text after the last one), with the number and time of the chunk that text began in: a
    progress bar redrawn for minutes, then a traceback written over it, is a line of the
    traceback's time, not of the bar's first draw.
    """
    open_: dict[str, list] = {}  # stream -> [number, µs, parts, whether the text shown begins with the next part]
    for num, t, stream, text in chunks:
        parts = text.split("\n")
        for j, part in enumerate(parts):
            buf = open_.get(stream)
            if buf is None:
                buf = open_[stream] = [num, t, [], False]
            elif part and (buf[3] or not any(buf[2]) or "\r" in part.rstrip("\r")):
                # the line's text (what a terminal shows of it) begins in this chunk: its first
                # text after the newline before it, or the text after a carriage return
                buf[0], buf[1] = num, t
            if part:
                buf[3] = part.endswith("\r")
            buf[2].append(part)
            if j < len(parts) - 1:
                line = "".join(buf[2]).rstrip("\r").rsplit("\r", 1)[-1]
                del open_[stream]
                if line.strip():
                    yield buf[0], buf[1], stream, line
    for stream, (num, t, parts, _) in open_.items():
        line = "".join(parts).rstrip("\r").rsplit("\r", 1)[-1]
        if line.strip():
            yield num, t, stream, line


def console_events(d: Decoded, run: str, host, source: str) -> pd.DataFrame:
    lines = list(console_lines(d.console))
    if not lines:
        return pd.DataFrame()
    nums, times, streams, texts = zip(*lines, strict=True)
    return pd.DataFrame(
        {
            "time": to_time(times),
            "host": host,
            "run": run,
            "kind": "console",
            "message": list(texts),
            "source": source,
            "ref": [f"{source}:{n}" for n in nums],
            "stream": list(streams),
        }
    )


def read_console(console: pd.DataFrame, ctx: LoadContext) -> pd.DataFrame:
    """`console` (console events, in the order written) with what went wrong read from its lines
    as a log file's would be (by the training-log reader): each such event placed at the time
    and ref of its first console line, with that line's run, host and PID, in place of the console
    lines it was read from (a traceback's lines are one event, as in a log). The other lines stay
    console events."""
    if console.empty:
        return console
    with tempfile.TemporaryDirectory(prefix="dflash-console-") as scratch:
        log = Path(scratch) / "console.log"
        log.write_text("\n".join(console["message"].astype(str)) + "\n", encoding="utf-8")
        found = load_log(log, LoadContext(timezone=ctx.timezone, config=ctx.config, date=ctx.date)).events
    line_of = found["ref"].str.rsplit(":", n=1).str[1].astype(int) - 1
    found = found[found["kind"].isin(PROBLEMS) & line_of.between(0, len(console) - 1)]
    if found.empty:
        return console
    at = line_of[found.index].to_numpy()
    spans = found["lines"].fillna(1).astype(int).to_numpy() if "lines" in found.columns else np.ones(len(at), int)
    read = np.zeros(len(console), dtype=bool)
    for first, n in zip(at, spans, strict=True):
        read[first:first + max(n, 1)] = True
    line = console.iloc[at]
    kept = {c: line[c].array for c in _OF_THE_LINE if c in line.columns}
    events = found.drop(columns=[c for c in _OF_THE_LINE if c in found.columns and c not in kept]).assign(**kept)
    # in the order written: each event where its first line was
    both = pd.concat([console[~read].assign(_at=np.flatnonzero(~read)), events.assign(_at=at)], ignore_index=True)
    return both.sort_values("_at", kind="stable", ignore_index=True).drop(columns="_at")
