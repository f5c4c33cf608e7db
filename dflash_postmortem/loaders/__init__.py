"""One package per source family, one module per single source; importing this package registers
every format's sniffer, in the order below (a tie between two sniffers goes to the first).

Loaders read files and nothing else. May import: the contracts, clock/ (docs/architecture.md,
"Who may import whom").
"""

# The order of these imports is the registry's: kept out of import sorting.
# isort: off
from . import (  # noqa: F401  (importing registers each family's formats)
    nvidia_smi,
    pid_file,
    launchers,
    training_log,
    ps_snapshots,
    replay_results,
    transcript,  # reads container answers in sessions: importing it registers `containers` first
    containers,
    kernel_log,
    systemd_journal,
    wandb,
    prometheus,
    metric_files,
    gpu_monitors,
    source_code,
)
# isort: on
from .registry import FORMATS, Format, LoadContext, register, sniff

__all__ = ["FORMATS", "Format", "LoadContext", "register", "sniff"]
