"""What nvidia-smi prints when it cannot do its job (driver gone, no devices, NVML mismatch, a GPU
that fell off the bus, WSL refusing access, the tool itself missing) and the GPUs a capture shows
in an error state (`ERR!`, `[GPU is lost]`, `[Unknown Error]`). These are evidence, so they become
`events` rows, never crashes.

Error lines are read on whole files (`error_output`: a capture that holds only the error, with the
prompt that ran it) and line by line inside other forms (a `-l` stream whose GPU was lost half-way
through).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from ..registry import LoadContext
from .fields import LOST, is_gpu_error

_BUS = r"[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+"
# (name, pattern) -- the name goes to the `smi_error` column; `kind` is gpu_lost or gpu_error.
_PATTERNS: list[tuple[str, re.Pattern]] = [
    # The apostrophe is sometimes U+2018 when the message was pasted through a web page.
    ("driver_unreachable", re.compile(r"NVIDIA-SMI has failed because it couldn.?t communicate with the NVIDIA driver")),
    ("library_not_found", re.compile(r"NVIDIA-SMI couldn.?t find libnvidia-ml\.so library")),
    ("no_devices", re.compile(r"^No devices were found\s*$")),
    ("nvml_init_failed", re.compile(r"^Failed to initialize NVML: (?P<why>.+?)\s*$")),
    # "for GPU 0000:0B:00.0", "for GPU0000:07:00.0" (newer drivers), "for GPU0: 0000:C1:00.0" (WSL).
    ("device_handle", re.compile(
        rf"^Unable to determine the device handle for [Gg][Pp][Uu] ?(?:(?P<gpu>\d+): )?(?P<bus>{_BUS}): (?P<why>.+?)\s*$"
    )),
    ("gpu_lost", re.compile(rf"^GPU (?P<bus>{_BUS}): GPU is lost")),
    ("invalid_field", re.compile(r'^Field "(?P<field>[^"]+)" is not a valid field to query')),
    ("nvml_shutdown_failed", re.compile(r"^Failed to properly shut down NVML: (?P<why>.+?)\s*$")),
    # Printed under the table when a GPU's infoROM checksum fails (an RMA candidate).
    ("inforom_corrupted", re.compile(rf"^WARNING: infoROM is corrupted at gpu (?P<bus>{_BUS})")),
    # The tool is not there at all: no driver installed on this machine or in this container.
    # What a wrapper prints in place of the answer of an nvidia-smi that never returned (a CI
    # step's retry, `timeout`): a driver or GPU that hung.
    ("timed_out", re.compile(r"^(?:Error|ERROR): (?P<why>.*\b(?:[Tt]imeout|[Tt]imed out)\b.*?)\s*$")),
    ("not_installed", re.compile(
        r"(?:^|: )nvidia-smi(?:\.exe)?: (?:command not found|not found|No such file or directory)\s*$"
        r"|^Command 'nvidia-smi' not found"
        r"|^'nvidia-smi(?:\.exe)?' is not recognized as an internal or external command"
        r"|^nvidia-smi(?:\.exe)? ?: The term 'nvidia-smi(?:\.exe)?' is not recognized"
    )),
]
# Second lines nvidia-smi (or an 80-column console) adds to the error above them.
_CONTINUATION = re.compile(
    r"^(Make sure that the latest NVIDIA driver is installed and running\.?"
    r"|This can also be happening if non-NVIDIA GPU is running as primary display.*"
    r"|NVML library version: \S+"
    r"|Failed to properly shut down NVML: .+"
    r"|Please (also )?(make sure|try adding).*"
    r"|Please run 'nvidia-smi --help-query-\S+' for more information\.?"
    r"|\s+\S.*)\s*$"
)


@dataclass
class SmiError:
    line: int
    name: str
    message: str
    bus_id: str | None = None
    gpu: int | None = None
    lines: list[int] = field(default_factory=list)
    after: int | None = None  # the line of the sample printed before it, in a stream

    @property
    def kind(self) -> str:
        return "gpu_lost" if LOST in self.message else "gpu_error"


def match_error(text: str, line: int) -> SmiError | None:
    """The error an nvidia-smi output line starts, or None. Markdown emphasis and quotes a
    person put around a pasted message are not part of it."""
    s = text.strip().strip("*_`\"'“”")
    if not s:
        return None
    for name, pat in _PATTERNS:
        m = pat.search(s)
        if m:
            g = m.groupdict()
            return SmiError(line=line, name=name, message=s, bus_id=g.get("bus"),
                            gpu=int(g["gpu"]) if g.get("gpu") and len(g["gpu"]) < 9 else None, lines=[line])
    return None


def continues(err: SmiError | None, text: str) -> bool:
    """Whether `text` is the second line of the error just read."""
    return err is not None and bool(text.strip()) and bool(_CONTINUATION.match(text))


def extend(err: SmiError, text: str, line: int) -> None:
    err.message = f"{err.message} {text.strip()}"
    err.lines.append(line)


class ErrorLines:
    """Reads nvidia-smi's error messages (and their second lines) out of a capture, one line at a
    time, inside any form: the form's loader offers each line it cannot read otherwise."""

    def __init__(self):
        self.errors: list[SmiError] = []
        self._current: SmiError | None = None

    def feed(self, text: str, line: int, after: int | None = None) -> bool:
        """Whether `text` is an error message or the continuation of the one just read."""
        if continues(self._current, text):
            extend(self._current, text, line)
            return True
        err = match_error(text, line)
        self._current = err
        if err is None:
            return False
        err.after = after
        self.errors.append(err)
        return True

    def end(self) -> None:
        """A blank line or a sample: what follows is not a second line of the last error."""
        self._current = None


def events_frame(errors: list[SmiError], ctx: LoadContext, source: str, times=None) -> pd.DataFrame:
    """`events` rows for the errors read from one file; `times` gives each error's time, if known."""
    if times is None:
        times = [pd.NaT] * len(errors)
    return pd.DataFrame({
        "time": pd.to_datetime(pd.Series(times, dtype="object"), utc=True).astype("datetime64[us, UTC]"),
        "host": pd.Series([ctx.host] * len(errors), dtype="string"),
        "kind": [e.kind for e in errors],
        "message": [e.message for e in errors],
        "source": [source] * len(errors),
        "ref": [f"{source}:{e.line}" for e in errors],
        "smi_error": [e.name for e in errors],
        "gpu": pd.array([e.gpu for e in errors], dtype="Int64"),
        "pci_bus_id": pd.Series([e.bus_id for e in errors], dtype="string"),
    })


def state_events(gpus: pd.DataFrame, source: str) -> pd.DataFrame | None:
    """`events` for GPUs a capture shows in an error state: one per GPU each time it enters one
    (or its error text changes), cited by the sample's line. Ordinary N/A is not an error."""
    if gpus.empty or "state" not in gpus.columns or not gpus["state"].notna().any():
        return None
    state = gpus["state"]
    bad = state.notna() & state.fillna("").str.contains(_ERROR_VALUE, regex=True)
    if not bad.any():
        return None
    errors_only = state.where(bad).map(_error_part, na_action="ignore")
    # A GPU's error episode starts where its error text differs from its previous sample's. A
    # GPU is its host and index, else UUID, else bus id (one capture may name them one way only).
    keys = [gpus[c].astype("string").fillna("") for c in ("host", "gpu", "uuid", "pci_bus_id") if c in gpus.columns]
    prev = errors_only.groupby(keys, sort=False).shift(1)
    start = bad & (errors_only != prev).fillna(True).astype(bool)
    rows = gpus[start].reset_index(drop=True)
    texts = list(errors_only[start])
    missing = pd.Series(pd.NA, index=rows.index, dtype="string")
    gpu = rows["gpu"] if "gpu" in rows.columns else missing
    bus = rows["pci_bus_id"] if "pci_bus_id" in rows.columns else missing
    line = rows["line"] if "line" in rows.columns else missing
    who = [f"GPU {g}" if pd.notna(g) else "GPU" for g in gpu]
    where = [f" ({b})" if isinstance(b, str) else "" for b in bus]
    return pd.DataFrame({
        "time": rows["time"],
        "host": rows["host"].astype("string"),
        "kind": ["gpu_lost" if LOST in t else "gpu_error" for t in texts],
        "message": [f"{w}{b} in an error state: {t}" for w, b, t in zip(who, where, texts, strict=True)],
        "source": source,
        "ref": [f"{source}:{n}" if pd.notna(n) else None for n in line],
        "smi_error": "value_error",
        "gpu": gpu.astype("Int64"),
        "pci_bus_id": bus.astype("string"),
        "uuid": (rows["uuid"] if "uuid" in rows.columns else missing).astype("string"),
    })


_ERROR_VALUE = "|".join(re.escape(t) for t in ("ERR!", "Unknown Error", LOST, "requires reset", "Timeout",
                                               "infoROM", "Memory Error", "Driver Not Loaded"))


def _error_part(state: str) -> str:
    """Only the error fields of a state text ("power_w=ERR!; fan_pct=ERR!"), N/A ones left out."""
    parts = [p for p in state.split("; ") if is_gpu_error(p.split("=", 1)[-1])]
    return "; ".join(parts) or state
