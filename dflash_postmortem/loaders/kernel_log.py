"""Kernel messages pasted on their own (dmesg, `dmesg -T`, `dmesg --time-format iso`, `dmesg -x`,
journalctl -k, /var/log/syslog or kern.log, RFC 5424 syslog, `talosctl dmesg`, each also behind a
markdown quote `> `; journal/syslog months in the locale's words, `kwi 15`, `4月 15`). The OOM killer's
choices and kills, NVIDIA Xid errors (with the GPU's UUID when the driver printed it before them)
and GPUs that fell off the bus become events: the file is read like a terminal session without
prompts, by the transcript loader (`transcript/process_control.py` reads the lines); lines that
state none of these are counted as skipped.
"""

from __future__ import annotations

from pathlib import Path

from ..incident import Incident
from ..shell_words import match_prompt
from . import registry
from .registry import LoadContext
from .terminal import screen_lines
from .transcript import process_control
from .transcript.shell_transcript import load_transcript

FORMAT = "kernel-log"
_KERNEL_KINDS = {"oom_kill", "oom_chosen", "oom_invoked", "oom_reaped", "oom_memcg", "xid", "gpu_lost"}


def pasted_lines(head: bytes) -> list[str]:
    """The non-blank lines of a paste as the terminal showed them; none when a prompt with a
    command is among them (a session is a transcript: it reads these lines too)."""
    lines = [s for s in screen_lines(head) if s.strip()]
    if any(p is not None and p.command and not p.trace_depth for p in map(match_prompt, lines)):
        return []
    return lines


def sniff_kernel_log(path: Path, head: bytes) -> float:
    lines = pasted_lines(head)
    if not lines:
        return 0.0
    # (a kernel fact comes only from a line with a kernel's word: the others are not read)
    facts = [f for f in map(process_control.read_line, filter(process_control.says_kernel, lines))
             if f is not None and f["kind"] in _KERNEL_KINDS]
    if not facts:
        return 0.0
    # The prefixes the transcript reader cuts off kernel lines (one list of stamp forms for both).
    prefixed = sum(1 for ln in lines if process_control.kernel_prefix(ln))
    return 0.8 if prefixed / len(lines) >= 0.3 else 0.45


@registry.format(
    FORMAT, sniff=sniff_kernel_log, phase=1,
    doc="kernel messages (dmesg, dmesg -T, journalctl -k, syslog): OOM kills, NVIDIA Xid errors, GPUs off the bus",
)
def load_kernel_log(path: Path, ctx: LoadContext) -> Incident:
    return load_transcript(path, ctx, fmt=FORMAT, loose="kernel log line with no process fact")
