"""The history and summary items of many wandb records, decoded in a few protobuf calls.

Reading items through the SDK's upb messages costs one Python wrapper per item (~3 µs), most of
a large run's load time. Here the same bytes are parsed with *view* messages that reuse the
SDK's field numbers with cheaper types:

- `RecordView`: `Record`'s oneof with every member as `bytes`. It classifies a record exactly as
  `Record` does (same numbers, same oneof: the last member on the wire wins) without decoding
  the body;
- `ItemsView`: a HistoryRecord/SummaryRecord body with `item`/`update`/`remove` as `repeated
  bytes`, i.e. each item's own serialized bytes, in order;
- `FlatItem`: HistoryItem/SummaryItem with every field `repeated`. Parsing the concatenation of
  many items merges them, so one parse yields every key and value of a batch, in order.

The flat lists line up with the items only when each item has exactly the fields assumed, so
every batch is checked byte for byte: the encoding rebuilt from the flat lists must equal the
items' own bytes, item by item. Items of any other shape (typed values, several nested keys,
empty strings, long keys) are decoded one at a time with the SDK's own classes. Anything the
views cannot account for raises `Unverified`, and the caller decodes record by record instead.
"""

from __future__ import annotations

from functools import cache
from itertools import chain, repeat

import numpy as np
import pandas as pd

from .keys import item_key, typed_value_json

# Record's oneof members (wandb 0.31's wandb_internal.proto): a view must list them all, or a
# record of an unlisted kind would be classified by whatever member came before it.
RECORD_KINDS = {
    "history": 2, "summary": 3, "output": 4, "config": 5, "files": 6, "stats": 7, "artifact": 8,
    "tbrecord": 9, "alert": 10, "telemetry": 11, "metric": 12, "output_raw": 13, "run": 17,
    "exit": 18, "final": 20, "header": 21, "footer": 22, "preempting": 23,
    "noop_link_artifact": 24, "use_artifact": 25, "environment": 26, "output_logger": 27,
    "request": 100,
}
_KEY_TAG, _NESTED_TAG, _VALUE_TAG = b"\x0a", b"\x12", b"\x82\x01"  # fields 1, 2, 16 (wire type 2)
# One length byte per size: the canonical encodings below only cover strings under 128 bytes.
_LEN_BYTE = [bytes([n]) for n in range(128)]
# Closes each body in a joined batch: an item whose bytes (0xff) no real item can equal, since a
# single 0xff byte is not a complete protobuf field.
_SEP_ITEM = b"\xff"
_SEP_ENTRY = _KEY_TAG + b"\x01" + _SEP_ITEM


class Unverified(Exception):
    """The fast path cannot prove it read these records as the SDK would."""


@cache
def views():
    """(RecordView, ItemsView, FlatItem) classes, built once from a descriptor made here."""
    # here, not at the top: start-up time (only .wandb logs need protobuf)
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(
        name="dflash_postmortem/wandb_views.proto", package="dflash_postmortem.wandb_views", syntax="proto3"
    )

    def message(name, fields, oneof=None):
        m = fd.message_type.add(name=name)
        if oneof:
            m.oneof_decl.add(name=oneof)
        for fname, number, ftype, repeated in fields:
            f = m.field.add(name=fname, number=number, type=ftype,
                            label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if oneof:
                f.oneof_index = 0

    message("RecordView", [(k, n, F.TYPE_BYTES, False) for k, n in RECORD_KINDS.items()], "record_type")
    message("ItemsView", [("item", 1, F.TYPE_BYTES, True), ("remove", 2, F.TYPE_BYTES, True)])
    message("FlatItem", [("key", 1, F.TYPE_BYTES, True), ("nested_key", 2, F.TYPE_BYTES, True),
                         ("value_json", 16, F.TYPE_BYTES, True)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return tuple(
        message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{fd.package}.{name}"))
        for name in ("RecordView", "ItemsView", "FlatItem")
    )


def parse(cls, data: bytes):
    from google.protobuf.message import DecodeError  # start-up time: only .wandb logs need protobuf

    msg = cls()
    try:
        msg.ParseFromString(data)
    except DecodeError as e:
        raise Unverified(str(e)) from e
    return msg


def items_of(bodies: list[bytes], *, per_body: bool = True) -> tuple[list[bytes], np.ndarray | None, list[bytes]]:
    """Every item of HistoryRecord/SummaryRecord bodies: (item bytes, items per body, field 2).

    Field 2 is `step` in a HistoryRecord, `remove` items in a SummaryRecord, all bodies together.
    One parse of the bodies joined (merged), with a separator item after each when `per_body`.
    """
    _, ItemsView, _ = views()
    if not per_body:
        view = parse(ItemsView, b"".join(bodies))
        return list(view.item), None, list(view.remove)
    joined = b"".join(chain.from_iterable(zip(bodies, repeat(_SEP_ENTRY))))
    view = parse(ItemsView, joined)
    items = list(view.item)
    lens = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    short = np.flatnonzero(lens == 1)
    ends = short[[items[i] == _SEP_ITEM for i in short]] if len(short) else short
    if len(ends) != len(bodies) or (len(items) and ends[-1] != len(items) - 1):
        raise Unverified("an item equal to the separator")
    counts = np.diff(ends, prepend=-1) - 1
    keep = np.ones(len(items), dtype=bool)
    keep[ends] = False
    real = np.asarray(items, dtype=object)[keep].tolist() if len(items) else []
    return real, counts, list(view.remove)


def _flat_pairs(items: list[bytes], tag: bytes) -> tuple[list[bytes], list[bytes]] | None:
    """(keys, values) when every item is exactly `tag name, value_json value`, else None."""
    _, _, FlatItem = views()
    joined = b"".join(items)
    flat = parse(FlatItem, joined)
    names = flat.nested_key if tag == _NESTED_TAG else flat.key
    other = flat.key if tag == _NESTED_TAG else flat.nested_key
    names, values = list(names), list(flat.value_json)
    n = len(items)
    if len(other) or len(names) != n or len(values) != n:
        return None
    name_len = np.fromiter(map(len, names), dtype=np.int64, count=n)
    value_len = np.fromiter(map(len, values), dtype=np.int64, count=n)
    if n and (name_len.max() > 127 or value_len.max() > 127):
        return None
    item_len = np.fromiter(map(len, items), dtype=np.int64, count=n)
    if not np.array_equal(item_len, name_len + value_len + 5):
        return None
    # The canonical encoding, four pieces an item, interleaved by slice assignment (C loops).
    heads = [tag + b for b in _LEN_BYTE]
    value_heads = [_VALUE_TAG + b for b in _LEN_BYTE]
    parts: list = [b""] * (4 * n)
    parts[0::4] = [heads[k] for k in name_len.tolist()]
    parts[1::4] = names
    parts[2::4] = [value_heads[k] for k in value_len.tolist()]
    parts[3::4] = values
    if b"".join(parts) != joined:
        return None
    return names, values


def item_pairs(items: list[bytes], sdk_item) -> tuple[list[str], list[str]]:
    """(key, value_json) per serialized item, as the SDK's `sdk_item` class would read them.

    A nested key is joined with dots. Items the flat parse cannot verify are parsed one by one
    with `sdk_item` (typed values become JSON text); raises Unverified if one does not parse.
    """
    for tag in (_NESTED_TAG, _KEY_TAG):
        if items and items[0][:1] == tag and (pairs := _flat_pairs(items, tag)) is not None:
            return _texts(*pairs)
    # Mixed shapes: verify each group of like-shaped items on its own, the rest one by one.
    # A shape is the first tag and the tag after the first field (b"\x12\x82": nested key, value).
    shapes = [x[:1] + x[2 + x[1] : 3 + x[1]] if len(x) > 1 else b"" for x in items]
    codes, uniques = pd.factorize(np.asarray(shapes, dtype=object))
    arr = np.asarray(items, dtype=object)
    keys = np.empty(len(items), dtype=object)
    values = np.empty(len(items), dtype=object)
    for code, shape in enumerate(uniques):
        idx = np.flatnonzero(codes == code)
        group = arr[idx].tolist()
        pairs = None
        if shape in (_NESTED_TAG + b"\x82", _KEY_TAG + b"\x82"):
            pairs = _flat_pairs(group, shape[:1])
        k, v = _texts(*pairs) if pairs is not None else _one_by_one(group, sdk_item)
        keys[idx], values[idx] = k, v
    return keys.tolist(), values.tolist()


def _texts(names: list[bytes], values: list[bytes]) -> tuple[list[str], list[str]]:
    """Bytes -> str, strictly (the SDK rejects invalid UTF-8 in string fields)."""
    try:
        uniq = {k: k.decode() for k in set(names)}
        texts = b"\0".join(values).decode().split("\0") if values else []
        if len(texts) != len(values):  # a value holding a NUL byte
            texts = [v.decode() for v in values]
    except UnicodeDecodeError as e:
        raise Unverified(str(e)) from e
    return list(map(uniq.__getitem__, names)), texts


def _one_by_one(items: list[bytes], sdk_item) -> tuple[list[str], list[str]]:
    keys, values = [], []
    for x in items:
        it = parse(sdk_item, x)
        keys.append(item_key(it))
        typed = "value" in it.DESCRIPTOR.oneofs_by_name  # HistoryItem only
        values.append(it.value_json or typed_value_json(it) if typed else it.value_json)
    return keys, values


def last_items(items: list[bytes], last: dict, start: int = 0) -> None:
    """Summary update items (numbered on from `start`) applied to `last`: for each key, its last
    item and that item's number. The caller must have checked that all items parse (their values
    are not read here); `summary_of` gives the summary they make.

    Only the last item of each key matters. An item that is exactly `key field, value_json
    field` (lengths under 128) has its key in its first field, so items are grouped by the bytes
    of that field; any other item is its own group (equal bytes: equal key and value).
    """
    heads = [
        x[: 2 + x[1]]
        if len(x) > 4 and x[1] < 128 and x[0] in (10, 18) and len(x) > 4 + x[1] and x[4 + x[1]] < 128
        and x[2 + x[1] : 4 + x[1]] == _VALUE_TAG and len(x) == 5 + x[1] + x[4 + x[1]]
        else x
        for x in items
    ]
    last.update(zip(heads, zip(range(start, start + len(items)), items, strict=True), strict=True))


def summary_of(last: dict, sdk_item) -> dict[str, str]:
    """{key: value_json} after every update item of `last` (last_items), the last one winning:
    only each group's last item is decoded. Groups of the same key (`key` vs one `nested_key`)
    are applied in the order of their last item, so the latest still wins."""
    keys, values = _one_by_one([x for _, x in sorted(last.values(), key=lambda v: v[0])], sdk_item)
    return dict(zip(keys, values, strict=True))
