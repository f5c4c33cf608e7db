"""The default `nvidia-smi` table as a source (`nvidia-smi-table`): a capture holding one or more
tables, as saved or pasted. The table's lines are read by `table_lines`; a GPU nvidia-smi could not
read, and error lines printed around the tables, become `events` rows.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...incident import from_frames
from .. import registry
from ..registry import LoadContext
from .fields import find_ctime
from .gpu_errors import events_frame, state_events
from .paste import COMMAND, read_paste, unwrap_head
from .table_lines import VERSION, is_gpu_line1, parse_table_lines, table_cells

FORMAT = "nvidia-smi-table"


def sniff(path: Path, head: bytes) -> float:
    paste = unwrap_head(head)
    content = paste.content()
    if not content:
        return 0.0
    text = [s.strip() for _, s in content]
    has_header = any(VERSION.search(s) for s in text) or any(s.startswith("| Processes:") for s in text)
    gpu_rows = sum(1 for s in text if s.startswith("|") and is_gpu_line1(table_cells(s)))
    if not has_header and not gpu_rows:
        return 0.0
    inside = sum(1 for s in text if s.startswith(("|", "+")) or find_ctime(s))
    if inside >= 0.6 * len(text):
        return 0.9
    if has_header and inside >= 5 and COMMAND in paste.wrapping:
        # A terminal paste whose nvidia-smi answered with its table: the table is the evidence,
        # other commands around it are context.
        return 0.75
    return 0.5 if inside >= 5 else 0.3


@registry.format(FORMAT, sniff=sniff, doc="nvidia-smi default table view (all generations), with its processes block")
def load(path: Path, ctx: LoadContext):
    rep = ctx.report(path, FORMAT)
    paste = read_paste(path)
    gpus, procs, errors = parse_table_lines(paste, rep, ctx)
    paste.note(rep)
    frames = {"gpus": gpus, "gpu_processes": procs}
    events = [e for e in (state_events(gpus, rep.path), _error_events(errors, ctx, rep, gpus)) if e is not None]
    if events:
        frames["events"] = pd.concat(events, ignore_index=True)
    return from_frames(rep, **frames)


def _error_events(errors, ctx: LoadContext, rep, gpus: pd.DataFrame) -> pd.DataFrame | None:
    """Error lines printed with the tables (a GPU nvidia-smi could not reach), each at the time of
    the table above it."""
    if not errors:
        return None
    times = gpus["time"] if not gpus.empty else pd.Series(dtype="datetime64[us, UTC]")
    when = [times.iloc[-1] if len(times) else pd.NaT for _ in errors]
    return events_frame(errors, ctx, rep.path, when)
