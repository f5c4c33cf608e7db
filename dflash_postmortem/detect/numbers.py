"""The numbers each kind of finding carries: declared once, here, for the detectors that write
them and for the tables, sentences and plots that read them.

`findings.finding` checks every finding's `numbers` against its kind's declaration, so a key
misspelled on either side fails where it is written, not as a silent `None` on a page.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pandas as pd


# Levels are in the job's pace (model/pace.py): `unit` says which, "tok/s" or "steps/s" (a trainer
# that logs no tokens); the `_tok_per_s` keys keep their name for the findings already written.
class Regression(TypedDict):
    baseline_tok_per_s: float
    degraded_tok_per_s: float  # the first degraded level, the drop itself
    ratio: float
    run_before: Any
    run_after: Any
    across_runs: bool
    degraded_min: float
    degraded_max: float
    run_after_launch: pd.Timestamp | None
    flag_differences: list[str]  # the launch command's flags when it has any, else the run's config
    candidates: list[str]
    levels_tok_per_s: list[float]
    unit: str


class _Episode(TypedDict):
    baseline_tok_per_s: float
    recovery_fraction: float
    regression_start: pd.Timestamp
    episode: str  # "regression" or "stall"
    unit: str


class NoRecovery(_Episode):
    pass


class Recovery(_Episode):
    level_tok_per_s: float
    ratio: float
    run: Any
    time_to_recover_s: float


class PartialRecovery(_Episode):
    level_tok_per_s: float
    ratio: float
    run: Any
    reasons: list[str]
    other_pids: list[int]  # processes on the run's GPUs that were there before it


class _Launch(TypedDict):
    checks: dict
    run: Any
    pid: int | None


class FailedRestart(_Launch):
    reason: str
    log_path: str | None
    launcher: str | None


class SlowStart(_Launch):
    pass


class VerifiedStart(_Launch):
    log_path: str | None


class NeverTrained(TypedDict):
    run: Any
    pid: int | None
    last_stage: str
    last_stage_time: pd.Timestamp
    seconds_in_stage: float
    memory_mib: list  # (time, MiB) points of the creep


class TrainingDied(TypedDict):
    run: Any
    pid: int | None
    last_step_time: pd.Timestamp | None
    error: str | None  # the first error line after the last step
    error_rank: int | None  # the rank that wrote it, where the line names one
    silent_s: float | None  # from the last step line to the error
    hung: bool  # that silence was long (five usual gaps between step lines, 10 s at least): a hang, then the error
    ended: pd.Timestamp  # when the attempt was over (the agent's or shell's last word on it)
    restarted_at: pd.Timestamp | None
    restarted_by: str | None  # operator, supervisor, agent, scheduler, container, unknown
    resumed_step: int | None  # the step the next attempt resumed at, from a checkpoint
    redone_steps: int  # steps the next attempt did again (they had been done before the death)
    reached_step: int | None  # the last step the dead attempt logged


class StaleProcess(TypedDict):
    pid: int
    command: str
    launch: pd.Timestamp


class KillFailed(TypedDict):
    pid: int
    group: bool  # the kill named a process group (`kill -- -N`)
    run: Any
    message: str


class Survivor(TypedDict):
    pid: int
    run: Any
    until: pd.Timestamp
    memory_mib_by_gpu: dict[int, float]


class Stall(TypedDict):
    seconds: float
    processes_alive: int
    gpus: list[int]  # the GPUs that held memory through the silence
    holders: list[int]
    last_step_time: pd.Timestamp | None
    traceback: str | None


class RoleMismatch(TypedDict):
    host: Any
    expected_heavy: list[int]
    expected_light: list[int]
    observed_heavy: list[int]
    observed_light: list[int]
    gpus_out_of_place: list[int]
    memory_mib: dict
    processes: dict


class IdleAllocatedGpu(TypedDict):
    host: Any
    gpu: int
    memory_mib: float
    max_util_pct: float
    minutes: float


class Straggler(TypedDict):
    host: Any
    gpu: int | None  # None: the whole host is behind the fleet, no GPU of its own sets the pace
    util_pct: float
    peers_util_pct: float  # the host's other GPUs, waiting
    fleet_util_pct: float
    sm_clock_mhz: float
    fleet_sm_clock_mhz: float
    tok_per_s_before: float | None
    tok_per_s_during: float | None
    fleet_tok_per_s: float | None
    ratio: float | None
    minutes: float


class GpuError(TypedDict):
    host: Any
    gpu: int | None
    uuid: str | None
    samples_missing: int
    minutes: float
    event_kinds: list[str]
    last_reading: pd.Timestamp | None


class RestartNeverCameUp(TypedDict):
    host: Any
    relaunch: pd.Timestamp
    last_step_time: pd.Timestamp | None
    minutes_watched: float
    gpu_memory_after_mib: float | None  # None: the host reported no GPU sample after the relaunch
    step_lines_after: int
    command: str | None


BY_KIND: dict[str, type] = {
    "throughput_regression": Regression, "recovery": Recovery, "partial_recovery": PartialRecovery,
    "no_recovery": NoRecovery, "failed_restart": FailedRestart, "slow_start": SlowStart,
    "verified_start": VerifiedStart, "never_trained": NeverTrained, "stale_process": StaleProcess,
    "training_died": TrainingDied,
    "kill_failed": KillFailed, "survivor": Survivor, "stall": Stall, "role_mismatch": RoleMismatch,
    "idle_allocated_gpu": IdleAllocatedGpu,
    # fleet-wide (store/fleet.py)
    "straggler": Straggler, "gpu_error": GpuError, "restart_never_came_up": RestartNeverCameUp,
}


# Keys a finding of any kind may carry in a fleet (detect/per_host.py): the host it was judged
# on, and the other hosts where a finding of the same kind overlaps it in time.
ON_EVERY_KIND = frozenset({"host", "also_on_hosts"})


def declared(kind: str) -> set[str]:
    """The keys a finding of `kind` may carry."""
    spec = BY_KIND[kind]
    return (set(spec.__annotations__) | {k for base in spec.__mro__ for k in getattr(base, "__annotations__", {})}
            | ON_EVERY_KIND)
