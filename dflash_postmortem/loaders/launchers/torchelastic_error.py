"""torchelastic's error file (`error.json`): what a worker wrapped in `@record` died of.

    {"message": {"message": "RuntimeError: ...", "extraInfo": {"py_callstack": "Traceback ...",
     "timestamp": "1796176605"}}}

(the agent copies a worker's file to its own and may add `"errorCode"`; the plain form, torch's
"new error file format", is `{"message": "...", "timestamp": 12}`). One `traceback` event at the file's
timestamp (seconds since the epoch, UTC); a file in torchrun's `--log-dir` folder
(`<run id>_x/attempt_<n>/<local rank>/error.json`) names its job, attempt and rank.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from ...errors import SourceFormatError
from ...incident import Incident, from_frames
from .. import registry
from ..registry import LoadContext
from .torchrun import log_dir_place

FORMAT = "torchelastic-error-file"
MAX_BYTES = 16 << 20  # a traceback is kilobytes; a larger file is not this
_HEAD = re.compile(rb'^\s*\{\s*"message"\s*:')
_PLAIN_KEYS = {"message", "timestamp", "errorCode"}
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?(?P<name>\w+(?:Error|Exception|Interrupt|Exit|Failure))\b")


def sniff_error_file(path: Path, head: bytes) -> float:
    if not _HEAD.match(head):
        return 0.0
    if b'"py_callstack"' in head or b'"extraInfo"' in head or b'"errorCode"' in head:
        return 0.9
    # the plain form, `{"message": "...", "timestamp": 12}`: a whole file of those keys alone
    try:
        doc = json.loads(head)
    except (ValueError, RecursionError):
        return 0.0
    return 0.9 if isinstance(doc, dict) and set(doc) <= _PLAIN_KEYS and isinstance(doc.get("timestamp"), int) else 0.0


def epoch_seconds(stamp) -> pd.Timestamp:
    """`"1796176605"` (text or number) -> that UTC instant; NaT for anything else."""
    if isinstance(stamp, bool) or not isinstance(stamp, str | int) or not str(stamp).isdigit():
        return pd.NaT
    try:
        return pd.Timestamp(int(stamp), unit="s", tz="UTC")
    except (ValueError, OverflowError, pd.errors.OutOfBoundsDatetime):
        return pd.NaT


@registry.format(FORMAT, sniff=sniff_error_file,
                 doc="torchelastic's error.json: the exception a worker died of, its traceback and time")
def load_error_file(path: Path, ctx: LoadContext) -> Incident:
    path = Path(path)
    rep = ctx.report(path, FORMAT, unit="record")
    rep.read = 1
    if path.stat().st_size > MAX_BYTES:
        rep.skip(None, f"larger than {MAX_BYTES >> 20} MiB: not an error file")
        return from_frames(rep)
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as e:  # cut by a crash, not UTF-8, nested too deep
        raise SourceFormatError(path, getattr(e, "lineno", None), "a complete JSON document", str(e)[:200], fmt=FORMAT) from e
    message = doc.get("message") if isinstance(doc, dict) else None
    if isinstance(message, str):  # the plain form: its timestamp beside the message
        info, text, callstack = doc, message, None
    elif isinstance(message, dict) and isinstance(message.get("message"), str):
        info = message.get("extraInfo") if isinstance(message.get("extraInfo"), dict) else {}
        text = message["message"]
        callstack = info.get("py_callstack") if isinstance(info.get("py_callstack"), str) else None
    else:
        rep.bad(1, 'a "message" (text, or an object with its own "message")', type(message).__name__)
        return from_frames(rep)
    rep.parsed = 1
    time = epoch_seconds(info.get("timestamp"))
    if pd.isna(time):
        rep.assume("the file gives no timestamp: the event has no time")
    exception = _EXCEPTION.match(text)
    row = dict(host=ctx.host, kind="traceback", message=(callstack or text).rstrip("\n"), source=rep.path,
               ref=f"{rep.path}:1", pattern=exception.group("name") if exception else "traceback",
               error=text, by="torchrun")
    if isinstance(message, dict) and isinstance(message.get("errorCode"), int):
        row["exit_code"] = message["errorCode"]
    place = log_dir_place(ctx.aliases.get(path, path))
    if place is not None:
        row.update(job=place.job, attempt=place.attempt, rank=place.local_rank, run=place.run)
        rep.assume(f"job {place.job!r}, attempt {place.attempt} and rank {place.local_rank} from the file's "
                   "torchrun log folder (<run id>/attempt_<n>/<local rank>/)")
    events = pd.DataFrame([row])
    events.insert(0, "time", pd.Series([time], dtype="datetime64[us, UTC]"))
    return from_frames(rep, events=events)
