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
    across_runs: bool  # the drop came with a new start (another run, or the same run started again)
    baseline_end: pd.Timestamp  # the baseline's last sample
    degraded_min: float
    degraded_max: float
    run_after_launch: pd.Timestamp | None
    flag_differences: list[str]  # the launch command's flags when it has any, else the run's config
    candidates: list[str]
    other_pids: list[int]  # processes that shared the run's GPUs while it was slow
    levels_tok_per_s: list[float]
    gradual: bool  # it fell line after line, no one change (its levels: its first lines', its last lines')
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
    sustained_samples: int  # consecutive samples at or above the floor that make a recovery


class PartialRecovery(_Episode):
    level_tok_per_s: float
    ratio: float
    run: Any
    reasons: list[str]
    other_pids: list[int]  # processes on the run's GPUs that were there before it
    relaunch: bool  # a run started after the drop, below the floor from its start


class _Launch(TypedDict):
    checks: dict
    run: Any
    attempt: Any  # the model's label of the start: `A3`
    pid: int | None


class FailedRestart(_Launch):
    reason: str
    why: str  # the reason with what shows it: the title takes it up to its first colon
    checks_seen: list[str]  # what each check saw, one observation each
    first_start: bool  # the incident's first start: no restart
    log_path: str | None
    launcher: str | None
    gave_up: str | None  # its supervisor's word that it stopped restarting it (`gave up: seat4 entered FATAL state`), as quoted
    gave_up_at: pd.Timestamp | None  # when it said so


class SlowStart(_Launch):
    checks_seen: list[str]
    first_step_after_s: float | None  # None: still starting when the evidence ends


class VerifiedStart(_Launch):
    log_path: str | None
    launcher_said: str  # the launcher's own check lines, joined


class NeverTrained(TypedDict):
    run: Any
    attempt: Any  # the model's label of the start: `A3`
    pid: int | None
    last_stage: str
    last_stage_time: pd.Timestamp
    seconds_in_stage: float
    memory_mib: list  # (time, MiB) points of the creep
    memory_from: tuple | None  # (time, MiB): the first and last GPU memory reading of the wait
    memory_to: tuple | None
    memory_growing: bool  # the last reading was the highest
    gone: bool  # its process had ended by the finding's end (else: still no step then)


class TrainingDied(TypedDict):
    run: Any
    script: str | None
    attempt: Any  # the model's label: `A2`
    started: pd.Timestamp
    started_by: str
    first_step_time: pd.Timestamp
    end_message: str | None  # the line that said it was over, where not the error itself
    next_attempt: Any
    pid: int | None
    last_step_time: pd.Timestamp | None
    error: str | None  # the first error line after the last step
    error_rank: int | None  # the rank that wrote it, where the line names one
    silent_s: float | None  # from the last step line to the error
    hung: bool  # that silence was long (five usual gaps between step lines, 10 s at least): a hang, then the error
    silent_logs: list  # of a hang: the attempt's logs (each rank's own) with no line after the last step, where another's error ended it
    stopped_ranks: list  # of a hang: the ranks the launcher stopped with a signal that logged no error of their own
    stopped_pids: list  # the PIDs its launcher's own lines say it stopped as it gave up (`Killing subprocess N`)
    thread: str | None  # the thread whose traceback alone ends it, nothing showing its process gone (told so)
    doing: str  # "saving" where a traceback as it died has a frame that saves (a checkpoint), "evaluating"
    # where one evaluates or its last bar was an evaluation's, else "training"
    memory_before: dict | None  # of a CUDA out-of-memory death: its GPU memory from its first step to the error (`climbed`, from/to MiB and times, refs)
    disk_full: str | None  # of a death that wrote: the full file system a `df` near it showed
    disk_full_at: pd.Timestamp | None  # when that `df` ran
    saved: list | None  # [step, time] of the checkpoint its logs say it saved from what ended it to its end (a stop signal it handled)
    waited_s: float | None  # what went wrong was a collective's watchdog: how long the collective had waited
    collective: int | None  # and its number in its group
    out_of_step: list | None  # [rank, collective, number] of each rank where the ranks' watchdogs name different ones
    lent_at: str | None  # the watchdog's line took its time from the line before it (ISO): written then or later
    ended: pd.Timestamp  # when the attempt was over (the agent's or shell's last word on it)
    restarted_at: pd.Timestamp | None
    restarted_by: str | None  # operator, supervisor, agent, scheduler, container, unknown
    resumed_step: int | None  # the step the next attempt resumed at, from a checkpoint (reached_step None: its resume line, at or past the last step this one logged)
    redone_steps: int  # steps the next attempt did again (they had been done before the death)
    reached_step: int | None  # the last step the dead attempt logged
    bar_stopped: list | None  # of a death no line told: [count, total] of its training bar, short of its total
    gave_up: str | None  # its supervisor's word that it stopped restarting it (`giving up after 3 attempts`), as quoted
    gave_up_at: pd.Timestamp | None  # when it said so


class ProcessDied(TypedDict):
    source: str  # the log that holds it, with nothing of the process's start or training
    error: str  # what went wrong: the first error line of those that tell an end
    error_kind: str  # its event kind (nccl_timeout, oom, traceback, exit, ...)
    pid: int | None  # the process the error's line names (the OOM killer's victim)
    process: str | None  # that process's name, where the line gives it
    killed: list  # the processes the OOM killer killed in this death, `PID 15784 (python3)`, in its order
    command: str | None  # the command a shell's report of the death says it ran (`line 6:  3842 Killed  python x.py`)
    why_unknown: bool  # its only words are a launcher stopping its workers: no line says what failed
    ctrl_c: bool  # a terminal's `^C` is glued before one of its lines: Ctrl-C was pressed just before it
    launcher_signalled: bool  # the error is the launcher's word that a signal told it to stop (torchrun's
    # `Received 1 death signal, shutting down workers`): nothing of its workers failed first
    stopped_pids: list  # the PIDs its launcher's own lines say it stopped as it gave up
    end_message: str | None  # the last line that said a process ended, where not the error itself
    ended: pd.Timestamp | None
    ranks: list  # the ranks those lines name
    exit_code: int | None
    signal: str | None  # of the last line that told its end
    died_of: str | None  # the signal the line that says what went wrong names (`Killed`: SIGKILL)
    memory_said: list | None  # [line, ref] of the log's own word that the machine's memory ran out (a SIGKILL's likely sender)
    started_again: list | None  # [line, ref] of the first start its log says came after it (a launcher's restart)
    held_by: str | None  # a CUDA OOM's holders (`118636: 71.62 GiB`) where one held more than the process itself
    own_mib: float | None  # and the process's own share (MiB)
    others_mib: float | None  # where it names no holder: capacity less free less its own share, held by others (MiB)
    waited_s: float | None  # a collective's watchdog: how long the collective had waited (`ran for N ms`)
    collective: int | None  # and its number in its group (`SeqNum=1`: the first)
    out_of_step: list | None  # [rank, collective, number] of each rank where the ranks' watchdogs name different ones
    lent_at: str | None  # the watchdog's line took its time from the line before it (ISO): written then or later
    steps_logged: int  # the distinct steps its log holds (no attempt placed them: nothing dates them)
    last_step: int | None
    bar_ran_s: float | None  # the most time its progress bar says it had run (tqdm's elapsed)
    doing: str | None  # "saving" where the error's traceback has a frame that saves (a checkpoint),
    # "evaluating" where one evaluates or the last bar before it was an evaluation's


class LossNotFinite(TypedDict):
    source: str
    run: str | None
    metric: str  # train/loss or train/grad_norm
    step: int | None  # the step of its first line that is not a number
    value: str  # nan, inf or -inf
    last_finite_step: int | None  # the line before it that still was
    last_finite_value: float | None
    lines_not_finite: int
    lines_after: int  # lines of the metric after the first that is not a number
    finite_after: bool  # a finite value came back (a skipped step), else it stayed so
    loss_scaled: bool | None  # where one came back: the log shows its run scaling its loss (fp16, a loss scale)
    loss_learning: dict | None  # a grad norm that stayed so beside a loss that stayed a number and moved:
    # {from, to, from_step, to_step} of that loss from its line on (a norm not measured, not a diverged run)
    resumed_step: int | None  # its log resumed from a checkpoint of this step, saved after the same run's
    broke_at_step: int | None  # metric had stopped being a number at this step (an earlier finding): it carried it
    ended_at: pd.Timestamp | None  # where it stayed so: the end of the attempt that trained on it, where
    end_kind: str | None  # it was `killed` (a kill sent to it) or `stopped` by itself; None: otherwise
    ended_by: str | None  # the line that ended it, quoted (the kill's command)
    ended_ref: str | None
    again_at: pd.Timestamp | None  # the same run's metric a number again, in a later log (a start after it)
    again_step: int | None
    again_value: float | None
    again_ref: str | None
    again_started: pd.Timestamp | None  # the start of the attempt that wrote it
    again_resumed_step: int | None  # the checkpoint step that start resumed from, where its log says


class StaleProcess(TypedDict):
    pid: int
    command: str
    launch: pd.Timestamp
    first_seen: pd.Timestamp
    counted_at: pd.Timestamp | None  # the operator's process count that counted it


class KillFailed(TypedDict):
    pid: int
    group: bool  # the kill named a process group (`kill -- -N`)
    run: Any
    message: str
    refused: bool  # the kill itself said it failed (else: it said nothing, and its target lived on)
    process_group: int | None  # the group the PID is in, where a listing shows it
    still: list[str]  # how the target was seen alive after it
    until: pd.Timestamp | None
    signal: str | None
    aimed_again_at: pd.Timestamp | None  # a later kill aimed at the same process


class Survivor(TypedDict):
    pid: int
    run: Any
    until: pd.Timestamp
    memory_mib_by_gpu: dict[int, float]
    still: list[str]  # how it was seen alive after the kill


class Stall(TypedDict):
    seconds: float
    processes_alive: int
    gpus: list[int]  # the GPUs that held memory through the silence
    holders: list[int]
    holder_mib: dict[int, float]  # the memory each holder had
    last_step_time: pd.Timestamp | None
    traceback: str | None
    run: Any
    idle: bool  # the GPUs sat at ~0 % utilization through most of it
    alive: str  # who was alive: `PID 4242` or `its process`
    max_memory_mib: float | None
    util_pct_mostly: float | None  # utilization at most this in `idle_share` of the samples
    idle_share: float
    cause: str | None  # a thread or rank that died before the silence, or what shows the job stopped
    stopped: bool  # the job was stopped (Ctrl-Z, SIGSTOP): its shell's `[1]+  Stopped`, or a listing's state T
    saving: bool  # a checkpoint save begun as the steps stopped never finished (`cause` says which)
    # where no step's time shows the silence, the line that says it (a watchdog's `train.log not
    # written for 64s`: model/states.py)
    said_silent: str | None
    # where the operator's interrupt ended it (a KeyboardInterrupt after the silence began, the
    # attempt's end): where its traceback shows it waited (said.waiting_in), "" where it shows no wait
    interrupted: str | None
    killed: str | None  # the kill sent to it that ended it (`kill sent SIGTERM to PID 537`), where it lasted to it


class Lingering(TypedDict):
    run: Any
    attempt: Any
    pid: int | None
    seconds: float  # from its last line after its stop line to the end of its process
    stop_line: str  # what its own last word was: `its own last word was ...`
    end_kind: str | None  # how its process ended (a kill sent, a signal...), None: not known (the finding ends where it was last seen alive)
    end_message: str | None
    holder_mib: dict[int, float]  # the GPU memory its PIDs held meanwhile, per PID
    gpus: list[int]
    idle: bool  # the GPUs it held sat at ~0 % utilization through most of it
    util_pct_mostly: float | None


class InterruptWentOn(TypedDict):
    command: str | None  # the loop as it was typed
    passes: int | None  # the values its text holds (None: a glob, a variable: not known)
    ran: int  # the passes that started
    # each interrupt the loop went on after: the pass it stopped (run, pid, stopped_at, said: the
    # trainer's word, last_step, handled: it caught the interrupt, or it ended in a KeyboardInterrupt
    # traceback, None: not known) and the pass that began then (next_run, next_pid, next_start)
    went_on: list[dict]
    ended: dict | None  # the interrupt that stopped the last pass (run, pid, stopped_at, said, last_step)
    key_presses: int  # the terminal's echoes of Ctrl-C (`^C`) under the loop's command


class RoleMismatch(TypedDict):
    host: Any
    host_named: bool  # the title names the host (a fleet, or an incident of several hosts)
    expected_roles: dict[str, list[int]]  # incident.toml's roles: role -> its GPUs
    expected_heavy: list[int]
    expected_light: list[int]
    observed_heavy: list[int]
    observed_light: list[int]
    observed_classes: dict[int, str]  # GPU -> heavy, light or empty, where known
    gpus_out_of_place: list[int]
    memory_mib: dict
    processes: dict
    holders_by_gpu: dict  # GPU -> [(PID, name, MiB)] of the out-of-place GPUs


class IdleAllocatedGpu(TypedDict):
    host: Any
    host_named: bool
    beside_busy: bool  # judged against the other GPUs being busy at the same time
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
    peers_sm_clock_mhz: float | None  # the host's other GPUs holding memory, each reading a median
    power_w: float | None
    peers_power_w: float | None
    temp_c: float | None
    peers_temp_c: float | None
    shown_by: str  # "clock": its SM clock against its peers'; "utilization": its peers waiting
    clock_reasons: list  # why its clocks were held down in the run (detect/clock_reasons.py), where captured
    peers_clock_reasons: list
    fleet_sm_clock_mhz: float
    tok_per_s_before: float | None
    tok_per_s_during: float | None
    fleet_tok_per_s: float | None
    host_tok_per_s: float | None  # a whole host behind: its job's pace and the fleet's median
    fleet_median_tok_per_s: float | None
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
    lost: bool  # `[GPU is lost]` or a log line that says so
    events: int  # the error events that name it
    message: str | None  # the first of them


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
    "training_died": TrainingDied, "time_limit": TrainingDied, "stopped_by_signal": TrainingDied, "process_died": ProcessDied,
    "loss_not_finite": LossNotFinite,
    "kill_failed": KillFailed, "survivor": Survivor, "stall": Stall, "lingering": Lingering,
    "interrupt_went_on": InterruptWentOn,
    "role_mismatch": RoleMismatch,
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
