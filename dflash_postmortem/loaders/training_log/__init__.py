"""Training logs: whatever a trainer, its launcher and its libraries print, read as metrics and
events (`load_process_log`; the format `training-log`).

`process_log` is the loader (a streaming scanner and its sniffer), `patterns` the table of what
lines say, `times` the timestamps near a line's start, `blocks` what spans lines (tracebacks,
ChildFailedError tables).
"""

from .process_log import load_process_log

__all__ = ["load_process_log"]
