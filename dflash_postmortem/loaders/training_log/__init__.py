"""Training logs: whatever a trainer, its launcher and its libraries print, read as metrics and
events (`load_process_log`; the format `training-log`).

`process_log` is the loader (a streaming scanner and its sniffer), `patterns` the table of what
lines say, `line_metrics` the metrics one record gives, `bars` progress bars (their states, the
training bar's step, elapsed time and rate, a resume), `rows` the rows a pass finds, `times` the
timestamps near a line's start, `blocks` what spans lines (tracebacks, ChildFailedError tables),
`launcher_lines` the attempts a launcher's lines name.
"""

from .process_log import load_process_log

__all__ = ["load_process_log"]
