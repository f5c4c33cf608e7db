"""GPU monitors other than nvidia-smi whose output people paste: gpustat (its one line per GPU) and nvitop (`nvitop -1` / `--once`). Each becomes `gpus` rows (and
`gpu_processes` rows where the tool lists processes), as nvidia-smi's forms do.

Importing this package registers each format, in this order (a tie goes to the first).
"""

# isort: off
from . import (  # noqa: F401  (importing registers each format)
    gpustat,
    nvitop,
)
# isort: on
