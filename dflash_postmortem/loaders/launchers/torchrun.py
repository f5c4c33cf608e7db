"""Where torchrun (torchelastic) puts a job's files, and what the place says about them.

With `--log-dir DIR` every worker's output and error file lands in

    DIR/<run id>_<random>/attempt_<n>/<local rank>/stdout.log | stderr.log | error.json

(torch 1.9 on: the run's folder is `tempfile.mkdtemp(prefix=f"{run_id}_")`, so its name is the
run id, `_` and eight random characters; `n` is the restart count; the rank folder is the
worker's local rank, which is its rank on a single node). The folders name the file's job,
attempt and rank; nothing in the files does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# What torchrun writes in a rank's folder; another file there is the user's own.
LOG_DIR_FILES = ("stdout.log", "stderr.log", "error.json")
_ATTEMPT = re.compile(r"attempt_(?P<n>\d+)")
_RANK = re.compile(r"\d+")
# mkdtemp's suffix: eight of [a-z0-9_] after the prefix's own `_`
_RUN_FOLDER = re.compile(r"(?P<run_id>.+)_[a-z0-9_]{8}")


@dataclass(frozen=True)
class LogDirPlace:
    """A file's place in a torchrun log folder: its job (the run id), attempt and local rank."""

    job: str
    attempt: int
    local_rank: int

    @property
    def run(self) -> str:
        """The run of lines that name none: one per job attempt, never one per file name."""
        return f"{self.job} attempt {self.attempt}"


def job_of_run_folder(name: str) -> str:
    """The run id of a run's log folder (`none_ghgeo4qi` -> `none`)."""
    m = _RUN_FOLDER.fullmatch(name)
    return m.group("run_id") if m else name


def log_dir_place(path: str | Path) -> LogDirPlace | None:
    """The job, attempt and local rank a file's folders name, or None outside that layout."""
    parts = Path(path).parts
    if len(parts) < 4:
        return None
    run_folder, attempt, rank, name = parts[-4:]
    m = _ATTEMPT.fullmatch(attempt)
    if name not in LOG_DIR_FILES or m is None or not _RANK.fullmatch(rank):
        return None
    return LogDirPlace(job_of_run_folder(run_folder), int(m.group("n")), int(rank))
