"""dflash-postmortem: reconstruct, measure and report incidents in multi-GPU training runs."""

from .analysis.timeline import Timeline, timeline
from .detect import detect
from .errors import (
    IncidentConfigError,
    MissingDependencyError,
    NoGPUError,
    PostmortemError,
    SourceFormatError,
)
from .incident import Incident, RunInfo
from .load_report import FileReport, LoadReport
from .loaders.nvidia_smi import load_nvidia_smi
from .loaders.prometheus.api import load_prometheus
from .loaders.ps_snapshots import load_ps_snapshots
from .loaders.training_log import load_process_log
from .loaders.transcript import load_shell_transcript
from .loaders.wandb import load_wandb_run
from .model import attempts, ledger
from .present.sentences import what_happened
from .store.load import load_incident

__version__ = "0.1.0"


def __getattr__(name: str):
    # Start-up time: the Parquet store brings DuckDB and fsspec (~0.2 s), which only `ingest`
    # and windowed loads need; `pm.ingest` imports them on first use.
    if name == "ingest":
        from .store.ingest import ingest  # start-up time: see above

        return ingest
    raise AttributeError(f"module 'dflash_postmortem' has no attribute {name!r}")

__all__ = [
    "FileReport",
    "Incident",
    "IncidentConfigError",
    "LoadReport",
    "MissingDependencyError",
    "NoGPUError",
    "PostmortemError",
    "RunInfo",
    "SourceFormatError",
    "Timeline",
    "attempts",
    "detect",
    "ingest",
    "ledger",
    "load_incident",
    "load_nvidia_smi",
    "load_prometheus",
    "load_process_log",
    "load_ps_snapshots",
    "load_shell_transcript",
    "load_wandb_run",
    "timeline",
    "what_happened",
]
