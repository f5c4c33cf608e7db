"""The replay A/B script's `ab_results.json`: each run's knob settings and measured numbers.

The runs' own logs (`runs/NAME.log`) carry the tok/s series; this file adds what the logs do not
say: the full configuration of every run, so that knob effects can be grouped by setting.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import SourceFormatError
from ..incident import Incident, RunInfo
from . import registry
from .registry import LoadContext

# Measured numbers the A/B script writes per run; kept as the run's summary.
SUMMARY_KEYS = (
    "tok_per_s", "drafter_steps_per_s", "target_batches_per_s", "target_mfu", "drafter_mfu",
    "drafter_wait_fraction", "target_busy_fraction", "steady_window_s", "steady_steps", "steps",
    "compiled_graphs", "returncode", "torch",
)


def sniff_ab_results(path: Path, head: bytes) -> float:
    text = head.lstrip()
    if not text.startswith(b"{"):
        return 0.0
    return 0.9 if b'"environment"' in head and b'"results"' in head and b'"config"' in head else 0.0


REPLAY_AB_RESULTS_FORMAT = "replay-ab-results"


@registry.format(
    REPLAY_AB_RESULTS_FORMAT, sniff=sniff_ab_results,
    doc="benchmarks/replay_ab_gpu.py's ab_results.json: knob settings and numbers per replay run",
)
def load_ab_results(path: Path, ctx: LoadContext) -> Incident:
    rep = ctx.report(path, REPLAY_AB_RESULTS_FORMAT, unit="record")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        # A cut file is a run killed mid-write: nothing in it can be trusted piecemeal.
        raise SourceFormatError(path, getattr(e, "lineno", None), "a complete JSON document", str(e), fmt=rep.format) from e
    results = doc.get("results")
    if not isinstance(results, list):
        raise SourceFormatError(path, None, "a 'results' list", type(results).__name__, fmt=rep.format)
    inc = Incident()
    rep.read = len(results)
    for i, r in enumerate(results):
        if not isinstance(r, dict) or "name" not in r or not isinstance(r.get("config"), dict):
            rep.bad(None, "a result with a name and a config", f"results[{i}]")
            continue
        inc.runs[r["name"]] = RunInfo(
            run=r["name"], name=r["name"], config=dict(r["config"]),
            summary={k: r[k] for k in SUMMARY_KEYS if k in r}, source=rep.path,
        )
        rep.parsed += 1
    env = doc.get("environment", {})
    if env:
        rep.notes.append(f"measured on {', '.join(env.get('gpus', [])) or 'CPU'} with torch {env.get('torch', '?')}")
    inc.load_report.add(rep)
    return inc
