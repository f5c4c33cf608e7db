"""Operator terminal sessions: commands, launches and what their outputs say about processes
(`load_shell_transcript`; the format `shell-transcript`).

`shell_transcript` is the loader: `session` splits a session into commands, `session_clock` dates
them, `command_output` reads what their outputs say (nvidia-smi, listings, facts about processes,
the launcher's verdicts); `shell_history` reads a shell's history with times the same way
(format `shell-history`); `process_control` reads what one output line says about a process (a
kill that failed, a job killed by a signal, the OOM killer, an exit status).
"""

from . import shell_history  # noqa: F401  (importing registers the format)
from .shell_transcript import load_shell_transcript

__all__ = ["load_shell_transcript"]
