"""One module per source format; importing this package registers every format's sniffer."""

from . import (  # noqa: F401  (registers the wandb formats)
    nvidia_smi,  # noqa: F401  (registers its formats)
    pid_file,  # noqa: F401
    process_log,  # noqa: F401
    ps_snapshots,  # noqa: F401
    replay_results,  # noqa: F401
    shell_transcript,  # noqa: F401
    wandb_export,
    wandb_run,
)
from .registry import FORMATS, Format, LoadContext, register, sniff

__all__ = ["FORMATS", "Format", "LoadContext", "register", "sniff"]
