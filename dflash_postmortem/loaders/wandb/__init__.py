"""wandb runs at full resolution: offline `.wandb` logs, run folders and their files, CSV exports,
the online API (`load_wandb_run`).

Importing the package registers its formats, in this order: the CSV exports (`export`), a run's
own files (`files`), its debug logs and terminal output (`messages`), the transaction log, the run
folder and its bookkeeping links (`run`).
"""

from . import export, files, messages  # noqa: F401  (importing registers their formats)
from .run import load_wandb_run

__all__ = ["load_wandb_run"]
