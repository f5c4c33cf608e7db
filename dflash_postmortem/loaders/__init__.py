"""One module per source format; importing this package registers every format's sniffer."""

from . import nvidia_smi  # noqa: F401  (registers its formats)
from . import wandb_export, wandb_run  # noqa: F401  (registers the wandb formats)
from .registry import FORMATS, Format, LoadContext, register, sniff

__all__ = ["FORMATS", "Format", "LoadContext", "register", "sniff"]
