"""dflash-postmortem: reconstruct, measure and report incidents in multi-GPU training runs."""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

from .errors import (
    IncidentConfigError,
    MissingDependencyError,
    NoGPUError,
    PostmortemError,
    SourceFormatError,
)

__version__ = "0.1.0"

# The public API, each name imported from its module when first asked for. Start-up time: the
# processes that run only a part of the kit (the replay trainer and every rank torchrun starts,
# the `launch` wrapper) import the package first, and pandas, the loaders and the model behind
# these names cost them ~0.5 s of CPU each; DuckDB and fsspec (`ingest`) another 0.2.
_API = {
    "Timeline": ".analysis.timeline", "timeline": ".analysis.timeline",
    "detect": ".detect",
    "Incident": ".incident", "RunInfo": ".incident",
    "FileReport": ".load_report", "LoadReport": ".load_report",
    "load_nvidia_smi": ".loaders.nvidia_smi",
    "load_prometheus": ".loaders.prometheus.api",
    "load_ps_snapshots": ".loaders.ps_snapshots",
    "load_process_log": ".loaders.training_log",
    "load_shell_transcript": ".loaders.transcript",
    "load_wandb_run": ".loaders.wandb",
    "what_happened": ".present.sentences",
    "load_incident": ".store.load",
    "ingest": ".store.ingest",
    "attempts": ".model", "ledger": ".model",
}

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from .analysis.timeline import Timeline, timeline
    from .detect import detect
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
    from .store.ingest import ingest
    from .store.load import load_incident


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'dflash_postmortem' has no attribute {name!r}")
    value = getattr(importlib.import_module(_API[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    """`dflash_postmortem.detect` is a subpackage and the function it exports: importing the
    subpackage sets its name on the package, where `pm.detect` must stay the function."""

    def __setattr__(self, name: str, value) -> None:
        if name == "detect" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

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
