"""A `.wandb` log's records as flat Python lists (`Decoded`): history and summary items in a few
bulk calls where the batch decoder can vouch for them (records.py), else record by record through
the SDK's classes; and, for a log that grows while it is followed (the live watch), decoded on
from the record the last read stopped at (`decode_log` with a `kept` mapping), not from the first.

A log read on must give the lists a read from its first record gives: the bytes read before are
checked (a digest of them), the records before are not decoded again, and what depends on their
order is kept so that the later records apply on top of it as they would in one pass (the
summary's last item per key, the config and identity, the console in record order). A log the
batch decoder could not vouch for (a damaged record, a summary that removes keys) is decoded whole
at every read.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...errors import MissingDependencyError
from ...load_report import FileReport
from . import records as wandb_records
from .keys import item_key, typed_value_json


@functools.cache
def protobuf_messages():
    """wandb's generated protobuf module for `Record`, imported without the SDK: `import wandb`
    (~1.1 s: settings, pydantic models, artifacts) runs before its `proto` package, which is
    generated code that needs only protobuf (0.06 s). Unless the SDK is already imported, a bare
    package stands for `wandb` during this import only, and every `wandb.*` module it loaded is
    forgotten after it: a later `import wandb` runs the SDK as usual (protobuf hands it the same
    message classes)."""
    if "wandb" in sys.modules:
        return importlib.import_module("wandb.proto.wandb_internal_pb2")
    spec = importlib.util.find_spec("wandb")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("wandb", "reading .wandb run logs")
    bare = types.ModuleType("wandb")
    bare.__path__ = list(spec.submodule_search_locations)
    before = set(sys.modules)
    sys.modules["wandb"] = bare
    try:
        return importlib.import_module("wandb.proto.wandb_internal_pb2")
    finally:
        for name in set(sys.modules) - before:
            if name == "wandb" or name.startswith("wandb."):
                del sys.modules[name]


def _us(ts) -> int:
    """A protobuf Timestamp as integer microseconds since the epoch."""
    return ts.seconds * 1_000_000 + ts.nanos // 1000


# --------------------------------------------------------------------------------------------
# records -> flat lists


@dataclass
class Decoded:
    """What a run's records say, still as flat Python lists (columns are built once, later)."""

    hist_row: list[int] | np.ndarray = field(default_factory=list)
    hist_key: list[str] = field(default_factory=list)
    hist_val: list[str] = field(default_factory=list)  # value_json text, decoded in bulk
    # HistoryRecord.step per row, or a function giving it for the rows asked (read lazily)
    hist_stepnum: list[int] | Callable[[np.ndarray], list[int]] = field(default_factory=list)
    n_hist: int = 0
    stats_row: list[int] = field(default_factory=list)
    stats_key: list[str] = field(default_factory=list)
    stats_val: list[str] = field(default_factory=list)
    stats_time: list[int] = field(default_factory=list)  # µs, per stats record
    console: list[tuple[int, int, str, str]] = field(default_factory=list)  # num, µs, stream, text
    summary: dict[str, str] = field(default_factory=dict)  # key -> latest value_json
    config: dict[str, object] = field(default_factory=dict)
    identity: dict[str, object] = field(default_factory=dict)
    environment: dict[str, object] = field(default_factory=dict)
    exit: tuple[int, float] | None = None
    last_us: int | None = None
    # Only the batch decoder's lists can be decoded on (records after these applied on top):
    batched: bool = False
    hist_bodies: list[bytes] = field(default_factory=list)  # each HistoryRecord's bytes (its step)
    summary_items: int = 0  # summary items applied so far
    summary_last: dict = field(default_factory=dict)  # records.last_items: each key's last item


@dataclass
class _Kept:
    """What a read of a growing log keeps for the next: the bytes it read (their size and
    digest) and the lists of the records in them."""

    size: int
    digest: bytes
    records: int
    decoded: Decoded
    fresh: int  # records decoded by the read that made it (the rest were kept from the one before)


def decode_log(data: bytes, records: list[bytes], rep: FileReport, kept: dict | None = None,
               key=None) -> Decoded:
    """The lists of a log's `records` (framed from its bytes `data`). With `kept` (a mapping the
    caller holds from one read of the same file to the next, `key` naming the file), a log whose
    bytes only grew since the last read is decoded on from the first record that read did not
    decode."""
    was = kept.pop(key, None) if kept is not None else None
    seal = hashlib.sha1(memoryview(data)[: was.size]) if was is not None and len(data) >= was.size else None
    d = None
    if seal is not None and seal.digest() == was.digest and len(records) >= was.records:
        try:
            d = _decode_batched(records[was.records:], was.decoded, start=was.records)
        except wandb_records.Unverified:
            d = None  # the new records need the one-by-one decoder: all of them are decoded again
    if d is not None:
        rep.parsed += len(records)
        fresh, done = len(records) - was.records, was.size
    else:
        d, fresh, seal, done = _decode(records, rep), len(records), hashlib.sha1(), 0
    if kept is not None and d.batched:
        seal.update(memoryview(data)[done:])  # the digest of every byte read: one pass over them
        kept[key] = _Kept(len(data), seal.digest(), len(records), d, fresh)
    return d


def _decode(records: list[bytes], rep: FileReport) -> Decoded:
    """All records, through the batch decoder when it can vouch for them, else one by one."""
    try:
        d = _decode_batched(records, Decoded(batched=True))
    except wandb_records.Unverified:
        return _decode_each(records, rep)
    rep.parsed += len(records)
    return d


def _decode_batched(records: list[bytes], d: Decoded, start: int = 0) -> Decoded:
    """`d` with `records` (numbered from `start` + 1) applied on top: history and summary items
    in a few bulk calls (records.py), other kinds one by one.

    Raises wandb_records.Unverified (`d` then half changed: the caller drops it) when a record
    needs the per-record decoder: one that does not parse, a summary that removes keys, an item
    that does not parse.
    """
    pb = protobuf_messages()
    RecordView, _, _ = wandb_records.views()
    view, rec = RecordView(), pb.Record()
    hist_bodies, sum_bodies = [], []
    from google.protobuf.message import DecodeError  # start-up time: only .wandb logs need protobuf

    parse, which = view.ParseFromString, view.WhichOneof  # bound once: 600 000 calls a run
    add_hist, add_sum = hist_bodies.append, sum_bodies.append
    for num, payload in enumerate(records, start + 1):
        try:
            parse(payload)
        except DecodeError as e:
            raise wandb_records.Unverified(str(e)) from e
        kind = which("record_type")
        if kind == "history":
            add_hist(view.history)
        elif kind == "summary":
            add_sum(view.summary)
        elif kind in _OTHER_KINDS:
            try:
                rec.ParseFromString(payload)
            except DecodeError as e:
                raise wandb_records.Unverified(str(e)) from e
            _decode_other(rec, kind, num, d)
    if hist_bodies:
        items, counts, steps = wandb_records.items_of(hist_bodies)
        wandb_records.parse(pb.HistoryStep, b"".join(steps))  # every step parses, as in Record
        keys, values = wandb_records.item_pairs(items, pb.HistoryItem)
        rows = np.repeat(np.arange(d.n_hist, d.n_hist + len(hist_bodies)), counts)
        d.hist_key, d.hist_val = d.hist_key + keys, d.hist_val + values
        d.hist_row = np.concatenate([np.asarray(d.hist_row, dtype=rows.dtype), rows])
        bodies = d.hist_bodies = d.hist_bodies + hist_bodies
        d.hist_stepnum = lambda rows: [  # HistoryRecord.step, only for rows without `_step`
            wandb_records.parse(pb.HistoryRecord, bodies[r]).step.num for r in rows
        ]
        d.n_hist += len(hist_bodies)
    if sum_bodies:
        items, _, removes = wandb_records.items_of(sum_bodies, per_body=False)
        if removes:
            raise wandb_records.Unverified("summary records remove keys: order matters")
        wandb_records.parse(pb.SummaryRecord, b"".join(sum_bodies))  # all parse, as in Record
        wandb_records.last_items(items, d.summary_last, start=d.summary_items)
        d.summary_items += len(items)
        d.summary = wandb_records.summary_of(d.summary_last, pb.SummaryItem)
    return d


def _decode_each(records: list[bytes], rep: FileReport) -> Decoded:
    from google.protobuf.message import DecodeError  # start-up time: only .wandb logs need protobuf

    pb = protobuf_messages()
    d = Decoded()
    rec = pb.Record()
    hist_row, hist_key, hist_val, hist_stepnum = d.hist_row, d.hist_key, d.hist_val, d.hist_stepnum
    summary = d.summary
    n_hist = 0
    for num, payload in enumerate(records, 1):
        try:
            rec.ParseFromString(payload)
        except DecodeError as e:
            rep.bad(num, "a wandb Record protobuf", f"{len(payload)} bytes ({e})")
            continue
        kind = rec.WhichOneof("record_type")
        if kind == "history":
            items = rec.history.item
            for it in items:
                hist_key.append(it.nested_key and ".".join(it.nested_key) or it.key)
                hist_val.append(it.value_json or typed_value_json(it))
            hist_row.extend([n_hist] * len(items))
            hist_stepnum.append(rec.history.step.num)
            n_hist += 1
            d.n_hist = n_hist
        elif kind == "summary":
            for it in rec.summary.update:
                summary[item_key(it)] = it.value_json
            for it in rec.summary.remove:
                summary.pop(item_key(it), None)
        elif kind in _OTHER_KINDS:
            _decode_other(rec, kind, num, d)
        rep.parsed += 1
    return d


_OTHER_KINDS = {"output_raw", "output", "stats", "run", "config", "environment", "exit"}


def _decode_other(rec, kind: str, num: int, d: Decoded) -> None:
    """The record kinds other than history and summary (few in a run: read through the SDK)."""
    from google.protobuf.json_format import (
        MessageToDict,  # start-up time: only .wandb logs need protobuf
    )

    if kind == "output_raw" or kind == "output":
        o = getattr(rec, kind)
        t = _us(o.timestamp)
        d.console.append((num, t, "stderr" if o.output_type == 0 else "stdout", o.line))
        d.last_us = t
    elif kind == "stats":
        t = _us(rec.stats.timestamp)
        row = len(d.stats_time)
        d.stats_time.append(t)
        for it in rec.stats.item:
            d.stats_row.append(row)
            d.stats_key.append(it.key)
            d.stats_val.append(it.value_json)
        d.last_us = t
    elif kind == "run":
        r = rec.run
        d.identity.setdefault("num", num)
        d.identity.update(
            id=r.run_id or None, name=r.display_name or None, project=r.project or None,
            entity=r.entity or None, host=r.host or None,
            started=_us(r.start_time) if r.HasField("start_time") else None,
        )
        for it in r.config.update:
            d.config[item_key(it)] = it.value_json
    elif kind == "config":
        for it in rec.config.update:
            d.config[item_key(it)] = it.value_json
        for it in rec.config.remove:
            d.config.pop(item_key(it), None)
    elif kind == "environment":
        d.environment.update(MessageToDict(rec.environment, preserving_proto_field_name=True))
    elif kind == "exit":
        d.exit = (rec.exit.exit_code, float(rec.exit.runtime))
