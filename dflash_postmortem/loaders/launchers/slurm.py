"""Slurm's vocabulary, shared by the readers of its listings (`sacct`, `squeue`, `scontrol show
job`, the job-completion log) and of its lines in a job's output: job states and their short
forms, exit codes `code:signal`, job ids with their steps, array tasks and het components,
durations, and the name sbatch gives a job's output file.
"""

from __future__ import annotations

import re

from ...shell_words import SIGNALS

# Every job state (sacct, scontrol) and squeue's short forms of them.
SHORT_STATES = {
    "BF": "BOOT_FAIL", "CA": "CANCELLED", "CD": "COMPLETED", "CF": "CONFIGURING", "CG": "COMPLETING",
    "DL": "DEADLINE", "F": "FAILED", "NF": "NODE_FAIL", "OOM": "OUT_OF_MEMORY", "PD": "PENDING",
    "PR": "PREEMPTED", "R": "RUNNING", "RD": "RESV_DEL_HOLD", "RF": "REQUEUE_FED", "RH": "REQUEUE_HOLD",
    "RQ": "REQUEUED", "RS": "RESIZING", "RV": "REVOKED", "SI": "SIGNALING", "SE": "SPECIAL_EXIT",
    "SO": "STAGE_OUT", "ST": "STOPPED", "S": "SUSPENDED", "TO": "TIMEOUT",
}
STATES = frozenset(SHORT_STATES.values())
# States in which the job (or step) has ended: the attempt is over. A requeued job's earlier
# attempt ends REQUEUED (sacct --duplicates lists each attempt).
ENDED = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                   "PREEMPTED", "REQUEUED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT"})
# A state a fixed-width listing cut short ends with `+` (`OUT_OF_ME+`, `CANCELLED+` for
# `CANCELLED by 1000`).
TRUNCATED = "+"
_BY = re.compile(r"^(?P<state>[A-Z_]+)(?: by (?P<by>\S+))?$")
_EXIT = re.compile(r"^(?P<code>\d+):(?P<signal>\d+)$")
_JOB_ID = re.compile(r"^(?P<job>\d+(?:[_+][\w\[\]%-]+)?)(?:\.(?P<step>[\w+]+))?$")
_DURATION = re.compile(r"^(?:(?P<days>\d+)-)?(?:(?P<hours>\d+):)??(?P<minutes>\d+):(?P<seconds>\d+)$")
_NO_TIME = frozenset({"", "Unknown", "None", "N/A", "(null)"})
# sbatch's default output names: `slurm-%j.out`, and `slurm-%A_%a.out` for an array task
_OUTPUT_NAME = re.compile(r"^slurm-(?P<job>\d+(?:_\d+)?)\.out$")


def state(text: str) -> tuple[str | None, str | None]:
    """(state, who) of a state as listed: `CANCELLED by 1000` -> (CANCELLED, 1000), `TO` ->
    TIMEOUT, a truncated `OUT_OF_ME+` -> OUT_OF_MEMORY when one state starts so; (None, None)
    for text that is no state."""
    text = text.strip()
    if text in SHORT_STATES:
        return SHORT_STATES[text], None
    if text.endswith(TRUNCATED):
        head = text[:-1]
        found = [s for s in STATES if s.startswith(head)]
        return (found[0] if len(found) == 1 else None), None
    m = _BY.match(text)
    if m is None or m.group("state") not in STATES:
        return None, None
    return m.group("state"), m.group("by")


def exit_code(text: str) -> tuple[int | None, str | None]:
    """`0:9` -> (0, SIGKILL): the exit code and the signal that ended it, as Slurm prints them."""
    m = _EXIT.match(text.strip())
    if m is None:
        return None, None
    signal = int(m.group("signal"))
    return int(m.group("code")), (SIGNALS.get(signal) if signal else None)


def job_and_step(text: str) -> tuple[str | None, str | None]:
    """`123.batch` -> (123, batch), `123_4.0` -> (123_4, 0), `123+1` -> (123+1, None); a step
    cut short by a fixed-width listing keeps what was printed (`3007056.bat+` -> bat+)."""
    m = _JOB_ID.match(text.strip())
    if m is None:
        return None, None
    return m.group("job"), m.group("step")


def duration_ms(text: str) -> int | None:
    """A Slurm duration in milliseconds: `1-02:03:04`, `02:03:04`, `03:04` (minutes and
    seconds); None for UNLIMITED, Partition_Limit or anything else."""
    m = _DURATION.match(text.strip())
    if m is None:
        return None
    days, hours = int(m.group("days") or 0), int(m.group("hours") or 0)
    return (((days * 24 + hours) * 60 + int(m.group("minutes"))) * 60 + int(m.group("seconds"))) * 1000


def minutes_ms(text: str) -> int | None:
    """The job-completion log's `TimeLimit=60` (minutes) in milliseconds."""
    text = text.strip()
    return int(text) * 60_000 if text.isdigit() else duration_ms(text)


def time_text(text: str) -> str | None:
    """A time Slurm printed (`2024-01-02T03:04:05`, local, no zone) or None (`Unknown`, `None`)."""
    text = text.strip()
    return None if text in _NO_TIME else text


def single_host(nodes: str) -> str | None:
    """The host of a one-node node list (`c0662`); None for ranges (`c[1-4]`), lists, `None assigned`."""
    nodes = nodes.strip()
    return nodes if nodes and re.fullmatch(r"[\w.-]+", nodes) and nodes not in ("None", "(null)") else None


def job_of_output_name(name: str) -> str | None:
    """The job whose output sbatch wrote to a file of this name by default (`slurm-123.out`)."""
    m = _OUTPUT_NAME.match(name)
    return m.group("job") if m else None
