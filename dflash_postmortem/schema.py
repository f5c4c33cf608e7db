"""The five canonical frames: the one contract between loaders, detectors and reports.

Every loader hands its frames to `conform`, which puts the columns in order, casts them to the
dtypes below and refuses naive or non-UTC times. Extra columns a source knows more about (a GPU's
name, a process state) are kept after the canonical ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# One unit for every time column: merge_asof and concat refuse to mix units or zones.
TIME = "datetime64[us, UTC]"
STR = "string"
INT = "Int64"  # nullable: a PID or GPU index the source did not give is <NA>, never 0
FLOAT = "float64"  # missing measurements are NaN, never 0


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str
    doc: str


FRAMES: dict[str, tuple[Column, ...]] = {
    "gpus": (
        Column("time", TIME, "sample time"),
        Column("host", STR, "host name the sample came from"),
        Column("gpu", INT, "GPU index as nvidia-smi numbers it"),
        Column("uuid", STR, "GPU UUID (GPU-xxxxxxxx-...)"),
        Column("memory_used_mib", FLOAT, "framebuffer memory used, MiB"),
        Column("memory_total_mib", FLOAT, "framebuffer memory total, MiB"),
        Column("util_gpu_pct", FLOAT, "GPU (SM busy) utilization, %"),
        Column("util_mem_pct", FLOAT, "memory controller utilization, %"),
        Column("power_w", FLOAT, "power draw, W"),
        Column("temp_c", FLOAT, "GPU temperature, degrees C"),
        Column("sm_clock_mhz", FLOAT, "SM clock, MHz"),
        Column("source", STR, "file the row came from, relative to the incident"),
    ),
    "gpu_processes": (
        Column("time", TIME, "sample time"),
        Column("host", STR, "host name"),
        Column("gpu", INT, "GPU index"),
        Column("uuid", STR, "GPU UUID"),
        Column("pid", INT, "process id"),
        Column("process_name", STR, "process name as the source gives it"),
        Column("used_memory_mib", FLOAT, "GPU memory held by the process, MiB"),
        Column("source", STR, "file the row came from"),
    ),
    "metrics": (
        Column("time", TIME, "when the value was logged"),
        Column("run", STR, "run name or id"),
        Column("step", INT, "training step, where known"),
        Column("metric", STR, "metric key, group/name (train/tok_per_s, train/loss, ...)"),
        Column("value", FLOAT, "value"),
        Column("source", STR, "file the row came from"),
        Column("rank", INT, "global rank that logged it, where known (torchrun's [rankN]:, a rank's own file)"),
        Column("job", STR, "the launcher's job: torchrun run id, Slurm job id, pod, container, where known"),
        Column("attempt", INT, "the launcher's attempt of that job (torchrun restart count, requeue), where known"),
    ),
    "events": (
        Column("time", TIME, "when it happened"),
        Column("host", STR, "host name"),
        Column("pid", INT, "process id, where known"),
        Column("run", STR, "run name, where known"),
        Column("kind", STR, "event kind (launch, command, warning, traceback, stage, ...)"),
        Column("message", STR, "what happened, in the source's words"),
        Column("source", STR, "file the event came from"),
        Column("ref", STR, "evidence reference, file:line"),
        Column("rank", INT, "global rank it concerns, where known"),
        Column("job", STR, "the launcher's job (torchrun run id, Slurm job id, pod, container), where known"),
        Column("attempt", INT, "the launcher's attempt of that job, where known"),
    ),
    "processes": (
        Column("host", STR, "host name"),
        Column("pid", INT, "process id"),
        Column("ppid", INT, "parent process id: the first listing's (a process whose parent ended is listed under init after)"),
        Column("pgid", INT, "process group id"),
        Column("sid", INT, "session id"),
        Column("user", STR, "owner"),
        Column("command", STR, "command line"),
        Column("first_seen", TIME, "first snapshot that shows it"),
        Column("last_seen", TIME, "last snapshot that shows it"),
        Column("started", TIME, "start time, from elapsed time or START"),
        Column("source", STR, "file the row came from"),
    ),
}

FRAME_NAMES = tuple(FRAMES)

# Metric keys that more than one module reads (metric_keys.py: the replay trainer logs under them too).
from .metric_keys import BAR_ELAPSED_S, LOSS, STEPS_PER_S, TOK_PER_S  # noqa: E402, F401

# The event kinds the attempt model reads (model/), whatever source wrote them. A loader that
# knows one of these things says it with this kind; columns beyond the canonical ones that the
# model reads are named here too. Other kinds (console, gpu_query, ...) are evidence to show.
EVENT_KINDS: dict[str, str] = {
    # starts
    "launch": "a command that starts training, typed, traced (`bash -x`, `set -x`) or in shell history; "
              "columns: program, log_path, launcher",
    "attempt_start": "a launcher, scheduler or container runtime starting an attempt of a job (torchrun's worker "
                     "group, a restart of it, a Slurm job or requeue, a container (re)start, a systemd unit start); "
                     "columns: job, attempt, by (torchrun, slurm, kubernetes, docker, systemd, supervisor), rank, pid",
    "run_start": "a tracked run begins (wandb)",
    "training_start": "the trainer says training begins",
    "stage": "a start-up stage line (`Loading target model ...`)",
    "pid_file": "a PID file names a process",
    "resumed": "a start that goes on from a checkpoint (the step it names, where it does)",
    # ends
    "attempt_end": "a launcher, scheduler or container runtime saying an attempt ended: failed, cancelled, timed "
                   "out, OOM-killed, completed; columns: job, attempt, by, rank, pid, exit_code, signal, reason",
    "exit": "a process exited; columns: pid, exit_code, signal",
    "killed": "a process was killed by a signal; columns: pid, signal",
    "oom_kill": "the kernel's (or a cgroup's) OOM killer killed a process; columns: pid",
    "oom": "CUDA (or host) out of memory in the trainer; columns: holders (PIDs the message names)",
    "timeout": "a wait ran out: a collective (NCCL, gloo), a store or rendezvous, a scheduler's time limit; "
               "columns: what, timeout_ms",
    "nccl_timeout": "NCCL's watchdog gave up on a collective; columns: seq, op, timeout_ms",
    "traceback": "a Python traceback; its last line in the message",
    "stack_dump": "a live process's stacks as a profiler dumped them (py-spy dump): where each thread waited, "
                  "no death; columns: pid, command, threads, frames (the main thread's, outermost first)",
    "run_end": "a tracked run ended (wandb exit record)",
    "training_stop": "the trainer says training stopped",
    "kill_sent": "the operator sent a signal, or a log says something sent one (`sent SIGTERM to pid 669`); columns: target_pid, target_is_group, target_pattern, target_expr, "
                 "target_session, target_job (a scheduler's job: `scancel 1234`)",
    "kill_failed": "a kill that did not reach its target",
    "hung_task": "the kernel's hung-task detector: a process in uninterruptible sleep (state D) past its timeout "
                 "(`task python:4242 blocked for more than 120 seconds`); columns: pid, process_name",
    "gave_up": "a supervisor saying it stops restarting its program (supervisord's `gave up: train entered FATAL "
               "state`, systemd's `Start request repeated too quickly.`, a loop's `giving up after 3 attempts`); "
               "columns: program, by, reason",
}

# Event kinds that say something went wrong, in the sources' own words: what a reader must see
# near a drop, and where the throughput detector looks for its cause.
PROBLEM_EVENTS = (
    "warning", "error", "traceback", "exception", "thread_crash", "compile_error", "signal",
    "nccl_timeout", "nccl_error", "oom", "oom_kill", "killed", "kill_failed", "gpu_error", "gpu_lost",
    "xid", "elastic_restart", "timeout", "attempt_end", "hung_task",
)


def columns(frame: str) -> list[str]:
    return [c.name for c in FRAMES[frame]]


def column(df: pd.DataFrame, name: str) -> pd.Series:
    """A frame's optional column (one a source may not give), or one of NA where it has none."""
    return df[name] if name in df.columns else pd.Series(pd.NA, index=df.index, dtype=object)


_EMPTY: dict[str, pd.DataFrame] = {}


def ref_line(ref: str) -> tuple[str, int] | None:
    """Split a `ref`, 'file:line' (the file name itself may hold colons); None for another form."""
    path, _, line = str(ref).rpartition(":")
    return (path, int(line)) if path and line.isdigit() else None


def ref_lines(refs: pd.Series) -> pd.Series:
    """The line each of `refs` names (ref_line), NaN where one names none."""
    return pd.Series([(ref_line(r) or ("", float("nan")))[1] if isinstance(r, str) else float("nan") for r in refs],
                     index=refs.index, dtype=float)


def empty(frame: str) -> pd.DataFrame:
    """A frame with no rows and the canonical columns and dtypes: 'nothing' is never None.

    Built once per frame and copied: every Incident starts with five of them, and building a
    frame from typed Series costs far more than copying an empty one."""
    if frame not in _EMPTY:
        _EMPTY[frame] = pd.DataFrame({c.name: pd.Series(dtype=c.dtype) for c in FRAMES[frame]})
    return _EMPTY[frame].copy()


def _as_utc(series: pd.Series, frame: str, name: str) -> pd.Series:
    if not isinstance(series.dtype, pd.DatetimeTZDtype):
        if series.isna().all():
            return series.astype(TIME)
        # A naive time here means a loader skipped align.localize: a bug, not bad input.
        raise AssertionError(f"{frame}.{name}: times must be tz-aware UTC, got {series.dtype}")
    if str(series.dt.tz) != "UTC":
        series = series.dt.tz_convert("UTC")
    return series.astype(TIME)


def conform(frame: str, df: pd.DataFrame) -> pd.DataFrame:
    """Return `df` with the canonical columns first, in canonical dtypes.

    Missing canonical columns are added as missing values; extra columns are kept after them.
    """
    if frame not in FRAMES:
        raise AssertionError(f"unknown frame {frame!r}; frames are {FRAME_NAMES}")
    spec = FRAMES[frame]
    out = {}
    n = len(df)
    # One index for every column: a frame cut from a larger one keeps its row labels
    if not (isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1):
        df = df.reset_index(drop=True)
    for col in spec:
        if col.name in df.columns:
            s = df[col.name]
            if col.dtype == TIME:
                s = _as_utc(s, frame, col.name)
            elif str(s.dtype) == col.dtype:
                pass  # already canonical: to_numeric/astype would copy millions of values
            elif col.dtype in (INT, FLOAT):
                s = pd.to_numeric(s, errors="raise").astype(col.dtype)
            else:
                s = s.astype(col.dtype)
            out[col.name] = _one_chunk(s)
        else:
            out[col.name] = pd.Series([pd.NA] * n, dtype=col.dtype) if col.dtype != FLOAT else (
                pd.Series([float("nan")] * n, dtype=FLOAT)
            )
    # the extra columns after them, in the one frame built (a column set on a built frame
    # costs as much as building it again)
    out.update({c: _one_chunk(df[c]) for c in df.columns if c not in out})
    # columns are already fresh Series: no second copy; all on `df`'s index, named so that the
    # frame is not aligned column by column (a fifth of the cost of conforming a frame)
    return pd.DataFrame(out, index=df.index, copy=False)


def _one_chunk(s: pd.Series) -> pd.Series:
    """An Arrow-backed column (pandas' strings) in one chunk. A frame concatenated from many
    files has a chunk per file in each such column, and every row selection (`iloc`, a sort)
    then costs in proportion to the chunks: detecting over a long night's many files grew faster
    than its evidence. One copy here, once per frame."""
    arrow = getattr(s.array, "__arrow_array__", None)
    if arrow is None:
        return s
    chunked = arrow()
    if getattr(chunked, "num_chunks", 1) <= 1:
        return s
    return pd.Series(pd.array(chunked.combine_chunks(), dtype=s.dtype), index=s.index, name=s.name)


def validate(frame: str, df: pd.DataFrame) -> None:
    """Raise AssertionError when `df` breaks the contract (used by tests and by `Incident`)."""
    for col in FRAMES[frame]:
        assert col.name in df.columns, f"{frame}: column {col.name!r} missing"
        got = str(df[col.name].dtype)
        assert got == col.dtype, f"{frame}.{col.name}: dtype {got}, expected {col.dtype}"
