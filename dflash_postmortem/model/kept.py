"""The model's frames as the cache of loaded incidents keeps them (report_cache): built once
where the incident is loaded, read back by every page that asks, instead of each page building
the attempts, states and ledger again (half a second to a second a page).

A frame is kept as its columns, their dtypes and its rows of values, which the cache writes as
plain data (plain_data): it reads back equal to what was built, lists and missing values included.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from ..incident import Incident
from . import computed
from .attempts import READS as ATTEMPTS_READ
from .attempts import attempts
from .ledger import READS as LEDGER_READ
from .ledger import ledger, ledger_parts
from .states import READS as STATES_READ
from .states import states


def frames(inc: Incident) -> dict[str, dict]:
    """The model's frames of `inc` (built now where they are not yet), for plain_data to write."""
    built = {"attempts": attempts(inc), "states": states(inc), "ledger": ledger(inc),
             "ledger parts": ledger_parts(inc)}
    return {name: _plain(df) for name, df in built.items()}


def restore(inc: Incident, kept: dict[str, dict]) -> None:
    """Take the frames `frames` gave as `inc`'s model, as if built from its frames now. Raises
    KeyError, TypeError or ValueError on a document that is not what `frames` writes."""
    back = {name: _frame(kept[name]) for name in ("attempts", "states", "ledger", "ledger parts")}
    computed.cached(inc, "attempts", ATTEMPTS_READ, lambda: back["attempts"])
    computed.cached(inc, "states", STATES_READ, lambda: back["states"])
    computed.cached(inc, "ledger", LEDGER_READ, lambda: (back["ledger"], back["ledger parts"]))


def carry(source: Incident, shown: Incident, through: Callable[[pd.DataFrame], pd.DataFrame]) -> None:
    """Give `shown` (`source` as it is shown: its text masked) the model already built from
    `source`, each frame passed `through` (the masking): the model is read from the evidence as
    it was written, as the findings are; only what is shown of it is masked. Building it again
    from the masked frames cost a report as much as its detection's model."""
    for name, reads in (("attempts", ATTEMPTS_READ), ("states", STATES_READ), ("ledger", LEDGER_READ)):
        built = computed.known(source, name, reads)
        if built is not None:
            # (the ledger is kept as its two frames)
            masked = tuple(map(through, built)) if isinstance(built, tuple) else through(built)
            computed.cached(shown, name, reads, lambda masked=masked: masked)


def _plain(df: pd.DataFrame) -> dict:
    return {"columns": [str(c) for c in df.columns], "dtypes": [str(t) for t in df.dtypes],
            "rows": [list(row) for row in df.itertuples(index=False, name=None)]}


def _frame(doc: dict) -> pd.DataFrame:
    columns, dtypes, rows = doc["columns"], doc["dtypes"], doc["rows"]
    if not (isinstance(columns, list) and isinstance(dtypes, list) and isinstance(rows, list)
            and len(columns) == len(dtypes) and all(isinstance(r, list) and len(r) == len(columns) for r in rows)):
        raise ValueError("a kept model frame is not columns, dtypes and rows of one width")
    # object first: pandas would otherwise read a text column's None as NaN
    df = pd.DataFrame(rows, columns=columns, dtype=object)
    for c, t in zip(columns, dtypes, strict=True):
        if str(df[c].dtype) != t:
            df[c] = df[c].astype(t)
    return df
