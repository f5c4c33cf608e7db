"""What the kit writes to read back later (the store's load reports and runs, the cache of loaded
incidents) is plain data: JSON documents that name their kind and version, and Parquet tables.
Never pickle: a store or a cache travels with an incident folder, and unpickling a file someone
else could write runs whatever code they put in it.

`json` builds only dicts, lists, strings, numbers and booleans; a few tagged objects stand for
what JSON has no word for (times, dates, dicts whose keys are not text). `read` refuses a
document of another kind or version, or one whose fields are not of the declared types
(`Untrusted`): the caller treats it as missing and rebuilds it from the evidence.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from .errors import PostmortemError

# Documents larger than this are not what the kit writes (a fleet's combined load report is a
# few MiB): refused unread, so a planted file cannot make a reader hold gigabytes.
MAX_BYTES = 256 << 20
_TAGS = ("$time", "$date", "$items", "$repr")


class Untrusted(PostmortemError):
    """A stored document the kit cannot take as its own: another kind or version, damaged, or
    holding values of the wrong type. Never fatal: what it held is rebuilt from the evidence."""


def encode(value):
    """`value` as JSON-ready plain data (times, dates, numpy scalars and non-text keys tagged)."""
    if value is None or value is pd.NaT or value is pd.NA or isinstance(value, (bool, str)):
        return None if value is pd.NaT or value is pd.NA else value
    if isinstance(value, (int, float)) and not isinstance(value, np.generic):
        return value
    if isinstance(value, np.generic):
        return encode(value.item())
    if isinstance(value, pd.Timestamp):
        return None if pd.isna(value) else {"$time": value.isoformat()}
    if isinstance(value, dt.datetime):
        return {"$time": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"$items": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple, set, frozenset, np.ndarray)):
        return [encode(v) for v in value]
    # Not a value the kit's own records hold: kept as its text, never as an object to rebuild.
    return {"$repr": repr(value)}


def decode(value):
    """Plain data back to values (`encode`'s inverse; `$repr` comes back as its text)."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (tag, inner), = value.items()
        if tag == "$time" and isinstance(inner, str):
            return _time(inner)
        if tag == "$date" and isinstance(inner, str):
            return dt.date.fromisoformat(inner)
        if tag == "$items" and isinstance(inner, list):
            if not all(isinstance(kv, list) and len(kv) == 2 for kv in inner):
                raise Untrusted("$items: expected [key, value] pairs")
            return {_key(decode(k)): decode(v) for k, v in inner}
        if tag == "$repr" and isinstance(inner, str):
            return inner
    if any(k in _TAGS for k in value):
        raise Untrusted(f"a tagged value of the wrong form: {sorted(value)[:3]}")
    return {k: decode(v) for k, v in value.items()}


def _time(text: str) -> pd.Timestamp:
    try:
        return pd.Timestamp(text)
    except ValueError as e:
        raise Untrusted(f"$time: not a time: {text[:40]!r}") from e


def _key(k):
    # A key must be hashable: a list (from a tuple key) becomes a tuple again.
    return tuple(_key(x) for x in k) if isinstance(k, list) else k


def dumps(kind: str, version: int, data) -> bytes:
    """A document: {"kind", "version", "data"} as UTF-8 JSON."""
    return json.dumps({"kind": kind, "version": version, "data": encode(data)},
                      ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def loads(kind: str, version: int, raw: bytes):
    """The data of a document `dumps` wrote for this kind and version; `Untrusted` otherwise."""
    if len(raw) > MAX_BYTES:
        raise Untrusted(f"{len(raw):,} bytes: larger than any {kind} the kit writes")
    try:
        doc = json.loads(raw.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise Untrusted(f"not a JSON document ({type(e).__name__})") from e
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        found = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        raise Untrusted(f"expected a {kind} document, found {str(found)[:40]!r}")
    if doc.get("version") != version:
        raise Untrusted(f"{kind} version {doc.get('version')!r}, this kit reads version {version}")
    try:
        return decode(doc.get("data"))
    except RecursionError as e:
        raise Untrusted("nested deeper than any document the kit writes") from e


# Field checks for the records read back (LoadReport, RunInfo, ...): each takes the decoded value
# and returns it, or raises Untrusted naming the field.
Check = Callable[[str, object], object]


def fields(where: str, data, spec: dict[str, Check]) -> dict:
    """`data` (a dict) with each field of `spec` checked; unknown or missing fields refused."""
    if not isinstance(data, dict):
        raise Untrusted(f"{where}: expected an object, found {type(data).__name__}")
    if set(data) != set(spec):
        odd = sorted(set(data) ^ set(spec))[:5]
        raise Untrusted(f"{where}: fields differ from this version's: {odd}")
    return {name: check(f"{where}.{name}", data[name]) for name, check in spec.items()}


def _of(*types, what: str) -> Check:
    def check(where: str, value):
        # (a boolean is an int to isinstance: an integer field must not take one; a field of
        # any value must)
        if isinstance(value, bool) and bool not in types and object not in types:
            raise Untrusted(f"{where}: expected {what}, found a boolean")
        if not isinstance(value, types):
            raise Untrusted(f"{where}: expected {what}, found {type(value).__name__}")
        return value
    return check


text = _of(str, what="text")
integer = _of(int, what="an integer")
number = _of(int, float, what="a number")
boolean = _of(bool, what="a boolean")
time = _of(pd.Timestamp, what="a time")
anything = _of(object, what="a value")


def optional(check: Check) -> Check:
    return lambda where, value: None if value is None else check(where, value)


def list_of(check: Check) -> Check:
    def checked(where: str, value):
        if not isinstance(value, list):
            raise Untrusted(f"{where}: expected a list, found {type(value).__name__}")
        return [check(f"{where}[{i}]", v) for i, v in enumerate(value)]
    return checked


def map_of(check: Check) -> Check:
    def checked(where: str, value):
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise Untrusted(f"{where}: expected an object with text keys")
        return {k: check(f"{where}[{k!r}]", v) for k, v in value.items()}
    return checked

