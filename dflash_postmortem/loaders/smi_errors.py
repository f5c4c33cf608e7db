"""What nvidia-smi prints when it cannot do its job: driver gone, no devices, NVML mismatch, a
GPU that fell off the bus. These are evidence, so they become `events` rows, never crashes.

Used on whole files (a capture that holds only the error) and line by line inside other forms
(a `-l` stream whose GPU was lost half-way through).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from ..incident import from_frames
from .registry import LoadContext

# (name, pattern) -- the name goes to the `smi_error` column; `kind` is gpu_lost or gpu_error.
_PATTERNS: list[tuple[str, re.Pattern]] = [
    # The apostrophe is sometimes U+2018 when the message was pasted through a web page.
    ("driver_unreachable", re.compile(r"NVIDIA-SMI has failed because it couldn.?t communicate with the NVIDIA driver")),
    ("no_devices", re.compile(r"^No devices were found\s*$")),
    ("nvml_init_failed", re.compile(r"^Failed to initialize NVML: (?P<why>.+?)\s*$")),
    ("device_handle", re.compile(
        r"^Unable to determine the device handle for GPU ?(?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+): (?P<why>.+?)\s*$"
    )),
    ("gpu_lost", re.compile(r"^GPU (?P<bus>[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+): GPU is lost")),
    ("invalid_field", re.compile(r'^Field "(?P<field>[^"]+)" is not a valid field to query')),
]
# Second lines nvidia-smi (or an 80-column console) adds to the error above them.
_CONTINUATION = re.compile(
    r"^(Make sure that the latest NVIDIA driver is installed and running\.?"
    r"|NVML library version: \S+"
    r"|Please run 'nvidia-smi --help-query-\S+' for more information\.?"
    r"|\s+\S.*)\s*$"
)


@dataclass
class SmiError:
    line: int
    name: str
    message: str
    bus_id: str | None = None
    lines: list[int] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "gpu_lost" if "GPU is lost" in self.message else "gpu_error"


def match_error(text: str, line: int) -> SmiError | None:
    """The error an nvidia-smi output line starts, or None."""
    for name, pat in _PATTERNS:
        m = pat.search(text)
        if m:
            bus = m.groupdict().get("bus")
            return SmiError(line=line, name=name, message=text.strip(), bus_id=bus, lines=[line])
    return None


def continues(err: SmiError | None, text: str) -> bool:
    """Whether `text` is the second line of the error just read."""
    return err is not None and bool(text.strip()) and bool(_CONTINUATION.match(text))


def extend(err: SmiError, text: str, line: int) -> None:
    err.message = f"{err.message} {text.strip()}"
    err.lines.append(line)


def events_frame(errors: list[SmiError], ctx: LoadContext, source: str, times=None) -> pd.DataFrame:
    """`events` rows for the errors read from one file; `times` gives each error's time, if known."""
    if times is None:
        times = [pd.NaT] * len(errors)
    return pd.DataFrame({
        "time": pd.to_datetime(pd.Series(times, dtype="object"), utc=True).astype("datetime64[us, UTC]"),
        "host": [ctx.host] * len(errors),
        "kind": [e.kind for e in errors],
        "message": [e.message for e in errors],
        "source": [source] * len(errors),
        "ref": [f"{source}:{e.line}" for e in errors],
        "smi_error": [e.name for e in errors],
        "pci_bus_id": [e.bus_id for e in errors],
    })


def sniff_errors(head_text: str) -> float:
    lines = [ln for ln in head_text.splitlines() if ln.strip()]
    if not lines or len(lines) > 50:
        return 0.0
    first = match_error(lines[0], 1)
    return 0.9 if first is not None else 0.0


def load_errors(path, ctx: LoadContext):
    """A file holding only nvidia-smi error output (what a cron job captured instead of a table)."""
    rep = ctx.report(path, "nvidia-smi-error")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    rep.read = len(lines)
    errors: list[SmiError] = []
    current = None
    for i, text in enumerate(lines, start=1):
        if not text.strip():
            rep.skip(i, "blank line")
            current = None
            continue
        err = match_error(text, i)
        if err is not None:
            errors.append(err)
            current = err
            rep.parsed += 1
        elif continues(current, text):
            extend(current, text, i)
            rep.parsed += 1
        else:
            rep.bad(i, "an nvidia-smi error message", text)
    if errors:
        rep.assume("error output carries no time: events have no time")
    return from_frames(rep, events=events_frame(errors, ctx, rep.path))
