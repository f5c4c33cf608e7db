"""A capture holding only nvidia-smi's error output (`nvidia-smi-error`): what a cron job saved
instead of a table when the driver was gone, no device answered or a GPU fell off the bus. The
messages themselves are read by `gpu_errors`.
"""

from __future__ import annotations

from ...incident import from_frames
from ...shell_words import match_prompt
from .. import registry
from ..registry import LoadContext
from .gpu_errors import ErrorLines, events_frame, match_error
from .paste import COMMAND, read_paste, unwrap_head

FORMAT = "nvidia-smi-error"


def sniff(path, head: bytes) -> float:
    """A short file whose content (prompt lines and fences aside) starts with an error message,
    or in which nvidia-smi was run and answered with one."""
    paste = unwrap_head(head)
    content = paste.content()
    if not content or len(content) > 50:
        return 0.0
    first = [i for i, s in content if match_error(s, i) is not None]
    if not first:
        return 0.0
    # A session that ran other commands too is that session's paste, unless a transcript's form
    # (stamped prompts, 0.9) says it is a transcript with nvidia-smi's error one line of it.
    prompts = [p.command for p in map(match_prompt, paste.lines) if p is not None and p.command]
    others = any("nvidia-smi" not in c for c in prompts)
    before = [k for k in range(first[0] - 1) if paste.lines[k].strip()]
    ran = before and (paste.wrapping[before[-1]] == COMMAND
                      or "nvidia-smi" in ((p := match_prompt(paste.lines[before[-1]].strip())) and p.command or ""))
    if first[0] == content[0][0] or ran:
        return 0.7 if others else 0.9  # (below a session's 0.75: the transcript reads each command's answer)
    return 0.6 if len(first) * 4 >= len(content) else 0.0


@registry.format(FORMAT, sniff=sniff, doc="nvidia-smi error output (driver unreachable, no devices, NVML mismatch, GPU lost)")
def load(path, ctx: LoadContext):
    """A file holding only nvidia-smi error output (what a cron job captured instead of a table),
    with the prompt lines and fences of a paste around it."""
    rep = ctx.report(path, FORMAT)
    paste = read_paste(path)
    rep.read = len(paste.lines)
    found = ErrorLines()
    for i, (text, wrap) in enumerate(zip(paste.lines, paste.wrapping, strict=True), start=1):
        if wrap is not None or not text.strip():
            rep.skip(i, wrap or "blank line")
            found.end()
        elif found.feed(text, i):
            rep.parsed += 1
        else:
            # A paste's prose, a prompt's path line, `docker pull` progress: not nvidia-smi's.
            rep.skip(i, "text around the error output")
    errors = found.errors
    paste.note(rep)
    if errors:
        rep.assume("error output carries no time: events have no time")
    return from_frames(rep, events=events_frame(errors, ctx, rep.path))
