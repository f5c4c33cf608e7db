"""Root-cause candidates of each throughput drop, ranked by how many evidence lines back them.

The throughput detector names its candidates (a warning it quotes, a configuration that differs)
and cites evidence lines; a candidate is as strong as the cited lines that say it.
"""

from __future__ import annotations

import pandas as pd

from ..incident import Incident

COLUMNS = ["drop", "candidate", "evidence lines", "evidence"]


def rank_causes(inc: Incident, findings: pd.DataFrame) -> pd.DataFrame:
    """One row per candidate of each regression finding, most evidence lines first (stable)."""
    regs = findings[findings["kind"] == "throughput_regression"]
    said = _lines_by_ref(inc)
    rows = []
    for r in regs.itertuples():
        for c in r.numbers.get("candidates", []):
            cited = [e for e in r.evidence if _backs(c, said.get(e))]
            rows.append({"drop": r.title, "candidate": c, "evidence lines": len(cited), "evidence": cited})
    out = pd.DataFrame(rows, columns=COLUMNS)
    return out.sort_values("evidence lines", ascending=False, kind="stable").reset_index(drop=True)


def _lines_by_ref(inc: Incident) -> dict[str, tuple[str, str]]:
    ev = inc.events.dropna(subset=["ref"])
    return {ref: (str(kind), str(msg)) for ref, kind, msg in zip(ev["ref"], ev["kind"], ev["message"].fillna(""), strict=True)}


def _backs(candidate: str, line: tuple[str, str] | None) -> bool:
    """An evidence line backs a candidate when the candidate quotes it, or names the launch it is."""
    if line is None:
        return False
    kind, message = line
    if candidate.startswith("configuration differs"):
        return kind == "launch"
    first = message.strip().splitlines()[0] if message.strip() else ""
    return bool(first) and (first in candidate or candidate.split(": ", 1)[-1][:60] in message)
