"""A run on a wandb server, read through `wandb.Api()` only when the user names one.

Full resolution is the default: `scan_history` (which in wandb >= 0.2x reads the server's parquet
history export through a local cache) or, on older SDKs whose `scan_history` pages through
GraphQL, `beta_scan_history`. The sampled `run.history()` (500 rows by default) is used only with
`sampled=True`, and the load report then says "sampled".
"""

from __future__ import annotations

import inspect

import pandas as pd

from ...incident import RunInfo, from_frames
from ...load_report import FileReport
from .frames import history_frame

SAMPLED_ROWS = 500  # run.history()'s own default


def _full_history(run):
    """(rows, how): every history row, by the fastest full-resolution path the SDK offers."""
    scan = getattr(run, "scan_history", None)
    beta = getattr(run, "beta_scan_history", None)
    # In wandb >= 0.2x scan_history takes use_cache and reads the parquet export itself;
    # beta_scan_history there is only a deprecated alias of it.
    if scan is not None and "use_cache" in inspect.signature(scan).parameters:
        return scan(), "scan_history (full resolution)"
    if beta is not None:
        return beta(), "beta_scan_history (full resolution, parquet export)"
    return scan(), "scan_history (full resolution, paged)"


def load_online_run(run_path: str, *, api=None, sampled: bool = False, on_bad_line: str = "warn"):
    """Read `entity/project/run_id` from the server into an Incident."""
    if api is None:
        import wandb  # here, not at the top: start-up time (the SDK takes a second to import)

        api = wandb.Api()
    run = api.run(run_path)
    rep = FileReport(path=f"wandb:{run_path}", format="wandb-api", unit="row", on_bad_line=on_bad_line)
    if sampled:
        rows, how = run.history(samples=SAMPLED_ROWS, pandas=False), "history()"
        rep.notes.append(f"sampled: run.history() returns at most {SAMPLED_ROWS} rows spread over the "
                         "run, not every logged row")
    else:
        rows, how = _full_history(run)
    key, value, row, stepnum = [], [], [], []
    for i, item in enumerate(rows):
        rep.read += 1
        if not isinstance(item, dict):
            rep.bad(i + 1, "a history row (dict)", type(item).__name__)
            continue
        key.extend(item)
        value.extend(item.values())
        row.extend([len(stepnum)] * len(item))
        stepnum.append(item.get("_step", len(stepnum)))
        rep.parsed += 1
    rep.notes.append(f"read with {how}; system metrics are not fetched (the API serves them sampled)")
    name = getattr(run, "name", None) or run.id
    metrics = history_frame(row, key, value, stepnum, name, rep.path, rep)

    meta = getattr(run, "metadata", None) or {}
    created = getattr(run, "created_at", None)
    started = pd.Timestamp(created, tz="UTC") if created and not str(created).endswith("Z") else (
        pd.Timestamp(created) if created else None
    )
    state = getattr(run, "state", None)
    info = RunInfo(
        run=name, id=run.id, name=getattr(run, "name", None), project=getattr(run, "project", None),
        host=meta.get("host"), started=started, config=dict(getattr(run, "config", {}) or {}),
        summary=dict(getattr(run, "summary", {}) or {}), source=rep.path,
        command=" ".join([meta.get("program", "")] + list(meta.get("args", []))).strip() or None,
    )
    # The server knows a state, not whether the exit record arrived: leave exit_record unknown.
    rep.notes.append(f"server state: {state}")
    inc = from_frames(rep, metrics=metrics)
    inc.runs[name] = info
    return inc
