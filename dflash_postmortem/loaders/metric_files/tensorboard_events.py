"""TensorBoard event files (`events.out.tfevents.<time>.<host>.<pid>.<n>`), read through the
`tensorboard` package's own reader (an optional dependency: the `tensorboard` extra).

The file is a sequence of TFRecord-framed `Event` protobufs (length, CRC, bytes, CRC): the
reader (`RawEventFileLoader`, TensorFlow's record reader or tensorboard's pure-Python stand-in)
checks the framing, and each record is parsed by protobuf alone; nothing in the file is
executed or unpickled. The first record names the file version; each later one has a
`wall_time` (epoch seconds, UTC) and a `step`, and a summary of tagged values. Scalars, written
as `simple_value` (tf.summary v1, torch's SummaryWriter, Lightning) or as a rank-0 tensor under
the `scalars` plugin (tf.summary v2), become `metrics` rows at their wall time under canonical
keys (naming.metric_key). Histograms, images, audio, text, graphs and hparams are counted, not
read. A record cut by a crash or a failed CRC ends the read there, with its reason.

The file's name says which process wrote it (`<host>.<pid>` as TensorFlow's and torch's writers
name it): its file-version record becomes a `run_start` event at the writer's creation with that
PID, so the attempt model joins the file to the process that wrote it.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pandas as pd

from ...errors import MissingDependencyError
from ...incident import from_frames
from ...schema import TIME
from .. import registry
from ..registry import LoadContext
from .metric_rows import MetricRows
from .naming import metric_key, run_of

FORMAT = "tensorboard-events"
EXTRA = "tensorboard"
_VERSION = b"brain.Event:"
# events.out.tfevents.<epoch>.<host>.<pid>.<n>[.v2] (a host name may hold dots)
_WRITER = re.compile(r"^events\.out\.tfevents\.\d+\.(?P<host>.+)\.(?P<pid>\d{1,10})\.\d+(?:\.v2)?$")
_SCALAR_DTYPES = {1: "float32", 2: "float64", 3: "int32", 9: "int64"}  # DataType enum: DT_FLOAT, DT_DOUBLE, ...


def sniff(path: Path, head: bytes) -> float:
    # The first record: an 8-byte length, its 4-byte CRC, then the Event holding the file version.
    if len(head) < 16:
        return 0.0
    (length,) = struct.unpack("<Q", head[:8])
    return 0.95 if 0 < length < 4096 and _VERSION in head[12:12 + length] else 0.0


def _reader():
    """tensorboard's record reader and Event message, or MissingDependencyError."""
    try:
        from tensorboard.backend.event_processing.event_file_loader import (  # optional dependency
            RawEventFileLoader,
        )
        from tensorboard.compat.proto import event_pb2  # optional dependency
        from tensorboard.util import tensor_util  # optional dependency
    except ImportError as e:
        raise MissingDependencyError("tensorboard", "reading TensorBoard event files", extra=EXTRA) from e
    return RawEventFileLoader, event_pb2.Event, tensor_util


@registry.format(FORMAT, sniff=sniff, doc="TensorBoard event file (events.out.tfevents.*): scalars")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT, unit="record")
    try:
        loader, event_type, tensor_util = _reader()
    except MissingDependencyError:
        rep.unit = "file"
        rep.read = 1
        rep.skip(None, f"the tensorboard package is not installed (pip install 'dflash-postmortem[{EXTRA}]')")
        return from_frames(rep)
    from google.protobuf.message import DecodeError  # protobuf comes with tensorboard

    run = run_of(path, ctx)
    rows = MetricRows()
    n = consumed = 0
    m = _WRITER.match(path.name)
    writer = int(m["pid"]) if m and int(m["pid"]) < 2**31 else None
    started: dict | None = None  # the writer's run_start event
    records = loader(str(path)).Load()
    while True:
        try:
            raw = next(records)
        except StopIteration:
            break
        except (OSError, MemoryError) as e:  # a length no file holds, an unreadable file
            rep.read += 1
            rep.bad(n + 1, "a TFRecord-framed Event", f"{type(e).__name__}: {e}")
            break
        n += 1
        rep.read += 1
        consumed += len(raw) + 16  # length, its CRC, the record, its CRC
        try:
            event = event_type.FromString(raw)
        except DecodeError as e:
            rep.bad(n, "an Event protobuf", f"{len(raw)} bytes ({e})")
            continue
        what = event.WhichOneof("what")
        if what == "file_version" and writer is not None and event.wall_time and started is None:
            started = dict(time=event.wall_time, kind="run_start", run=run, pid=writer,
                           message=f"TensorBoard writer of PID {writer} opened {path.name}", ref=f"{rep.path}:{n}")
            rep.parsed += 1
            continue
        if what != "summary":
            rep.skip(n, {"file_version": "file version record", "graph_def": "graph", "session_log": "session log",
                         "meta_graph_def": "graph", "log_message": "log message", "tagged_run_metadata": "run metadata"}
                     .get(what or "", "record without a summary"))
            continue
        for value in event.summary.value:
            v = _scalar(value, tensor_util)
            if v is not None:  # ref: the record's number, as .wandb logs cite theirs
                rows.add(event.step, metric_key(value.tag), v, n, event.wall_time)
        rows.close(rep, n, "summary without a scalar (histogram, image, audio, text, hparams)")
    rest = path.stat().st_size - consumed
    if rest > 0:
        # The reader stops quietly at a record cut short or failing its CRC: what follows is lost.
        rep.read += 1
        rep.skip(n + 1, "record cut short or failing its CRC: the read stops there")
        rep.notes.append(f"{rest:,} bytes after the last whole record (a writer killed mid-record?)")
    wall = pd.Series(rows.times, dtype="float64")
    frame = rows.frame(rep.path, run, pd.to_datetime((wall * 1e6).round(), unit="us", utc=True).astype(TIME))
    if started is None:
        return from_frames(rep, metrics=frame)
    events = pd.DataFrame([started]).assign(source=rep.path, host=ctx.host)
    events["time"] = pd.to_datetime((events["time"] * 1e6).round(), unit="us", utc=True).astype(TIME)
    events["pid"] = events["pid"].astype("Int64")
    return from_frames(rep, metrics=frame, events=events)


def _scalar(value, tensor_util) -> float | None:
    """A summary value's number, if it is a scalar (v1 simple_value, or a rank-0 numeric tensor)."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind != "tensor" or value.tensor.tensor_shape.dim or value.tensor.dtype not in _SCALAR_DTYPES:
        return None
    plugin = value.metadata.plugin_data.plugin_name
    if plugin not in ("", "scalars"):
        return None
    try:
        return float(tensor_util.make_ndarray(value.tensor))
    except (ValueError, TypeError):
        return None
