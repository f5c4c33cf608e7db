"""What launchers and schedulers write beside a training run: torchrun's (torchelastic's) log
folder layout and error files, PyTorch's Flight Recorder dumps, Slurm's listings (`sacct`,
`squeue`, `scontrol show job`, the job-completion log) and its vocabulary.

Their lines inside a trainer's output (torchrun's agent, slurmstepd, srun) are read with the
training log (`training_log/patterns.py`, `training_log/launcher_lines.py`), which uses `torchrun`
and `slurm` here for what those lines and a file's place mean.
"""

from . import flight_recorder, slurm_listing, torchelastic_error  # noqa: F401  (registers the formats)
