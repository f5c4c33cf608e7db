"""wandb's keys and value encodings: what every wandb reader (the .wandb log's decoders, the
files of a run folder, the exports, the API) agrees on, in one leaf module that imports none of
them.

- keys: a history/summary/config item's key (a nested key joined with dots), the history keys
  wandb adds itself (`_step`, `_timestamp`, `_runtime`), and the kit's metric key for a trainer's
  throughput key;
- values: wandb stores each value as JSON text (`value_json`), or, in newer SDKs, in typed fields;
  both decode here.
"""

from __future__ import annotations

import json

from ...metric_keys import THROUGHPUT_ALIASES
from ...schema import TOK_PER_S

# Keys wandb adds to every history row: not metrics.
HISTORY_SPECIAL = ("_step", "_timestamp", "_runtime")


def canonical_metric(key: str) -> str:
    """The kit's metric key for a trainer's key (throughput aliases -> train/tok_per_s)."""
    return TOK_PER_S if key in THROUGHPUT_ALIASES else key


def item_key(item) -> str:
    """A HistoryItem/SummaryItem/ConfigItem's key; a nested key is joined with dots."""
    return ".".join(item.nested_key) if item.nested_key else item.key


def typed_value_json(item) -> str:
    """History items written with typed fields instead of value_json (newer SDKs may)."""
    which = item.WhichOneof("value")
    if which is None or which == "none":
        return "null"
    if which in ("text", "json"):
        return item.json if which == "json" else json.dumps(item.text)
    return json.dumps(getattr(item, which))


def bulk_json(texts: list[str]) -> list:
    """Decode many JSON values in one call; fall back per value only if one is malformed."""
    if not texts:
        return []
    try:
        return json.loads("[" + ",".join(texts) + "]")
    except ValueError:
        out = []
        for t in texts:
            try:
                out.append(json.loads(t))
            except ValueError:
                out.append(None)
        return out


def json_values(raw: dict[str, str]) -> dict:
    """{key: value_json} -> {key: value}."""
    if not raw:
        return {}
    return dict(zip(raw, bulk_json(list(raw.values())), strict=True))
