"""One package per source family, one module per single source; importing this package registers
every format's sniffer, in the order below (a tie between two sniffers goes to the first).
"""

from . import (  # noqa: F401  (importing registers each family's formats)
    nvidia_smi,
    pid_file,
    ps_snapshots,
    replay_results,
    training_log,
    transcript,
    wandb,
)
from .registry import FORMATS, Format, LoadContext, register, sniff

__all__ = ["FORMATS", "Format", "LoadContext", "register", "sniff"]
