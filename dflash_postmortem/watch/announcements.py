"""What the watcher says: an `Announcement` of one change as it happens, a `JobStatus` of each
job now, and `status_line`, the one line that sums the jobs up. The sinks (sinks.py) decide
where these go; how they read is decided here, once, so the terminal, a chat channel and a
command of the user's all say the same thing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd

from ..errors import UsageError
from ..loaders.terminal import ESCAPES
from ..model.pace import UNITS
from ..present.redact import redact
from ..present.terminal_view import ELLIPSIS
from ..units import clock, count, is_missing, percent, rate

# What changed. The watcher announces a change of an attempt or a job, never a reading: "stall"
# once when it begins, "recovered" once when the pace is back.
# "watch_error" is the watch's own: a read of the folder that raised (it tries again).
KINDS = ("attempt_started", "first_step", "throughput_fell", "stall", "kill_failed", "partial_recovery",
         "failed_start", "not_starting", "recovered", "ended", "loss_not_finite", "straggler", "gpu_error",
         "watch_error")
# A job's state now: the model's states (model/states.py) as a live reader can tell them.
STATES = ("starting", "training", "degraded", "stalled", "exited", "killed", "never_trained")
UNKNOWN = "?"  # a number not known yet (no step seen, no GPU sample): never "nan"


@dataclass(frozen=True)
class Announcement:
    """One change, at `time` (UTC), of `job`: `kind` (one of KINDS), `text` the sentence, and
    `evidence` the line behind it as `file:line  the line's text` (empty where there is none)."""

    time: pd.Timestamp
    job: str
    kind: str
    text: str
    evidence: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise UsageError(f"announcement kind {self.kind!r} is not one of {', '.join(KINDS)}")
        t = pd.Timestamp(self.time)
        # A naive time could be any zone's; the kit's clock is UTC everywhere (clock/align.py).
        if t.tzinfo is None:
            raise UsageError(f"announcement time {t} has no time zone; the watcher's times are UTC")
        object.__setattr__(self, "time", t.tz_convert("UTC"))

    def redacted(self) -> Announcement:
        """The announcement with its secrets masked: what every sink sends or shows, masked before
        it is cut to a width (a mask cut in half would show part of the secret)."""
        return dataclasses.replace(self, job=redact(self.job), text=redact(self.text),
                                   evidence=redact(self.evidence))

    def line(self, width: int | None = None) -> str:
        """One line as it is shown, `05:22:17  r1  stall  — train.log:812  step 4100 ...`: masked,
        then cut to at most `width` characters (with an ellipsis; None: whole)."""
        text = f"{clock(self.time)}  {_printable(self.job)}  {_printable(self.text)}"
        if evidence := _printable(self.evidence):
            text += f"  — {evidence}"
        return _fit(text, width)

    def as_dict(self) -> dict[str, str]:
        """The announcement as JSON takes it: the time in ISO 8601 with `Z`."""
        return {"time": self.time.isoformat().replace("+00:00", "Z"), "job": self.job, "kind": self.kind,
                "text": self.text, "evidence": self.evidence}


@dataclass(frozen=True)
class JobStatus:
    """A job now: its `state` (one of STATES), its `pace` in `unit` (`tok/s` or `steps/s`, the
    model's measure: model/pace.py) and its `goodput`, the fraction 0..1 of its GPU time that
    trained; None (or NaN) where not known yet."""

    job: str
    state: str
    pace: float | None = None
    unit: str = "tok/s"
    goodput: float | None = None

    def __post_init__(self):
        if self.state not in STATES:
            raise UsageError(f"job state {self.state!r} is not one of {', '.join(STATES)}")
        if self.unit not in UNITS.values():
            raise UsageError(f"pace unit {self.unit!r} is not one of {', '.join(UNITS.values())}")
        if not is_missing(self.goodput) and not 0 <= self.goodput <= 1:
            raise UsageError(f"goodput {self.goodput!r} is not a fraction between 0 and 1")

    def summary(self) -> str:
        """`r1 training 21.5K tok/s 97 %`; `r2 starting` while neither number is known."""
        text = f"{_printable(self.job)} {self.state.replace('_', ' ')}"
        if is_missing(self.pace) and is_missing(self.goodput):
            return text
        pace = f"{UNKNOWN} {self.unit}" if is_missing(self.pace) else rate(self.pace, self.unit)
        goodput = f"{UNKNOWN} %" if is_missing(self.goodput) else percent(self.goodput)
        return f"{text} {pace} {goodput}"


def status_line(jobs: list[JobStatus], width: int) -> str:
    """The jobs in one line of at most `width` characters:
    `watching 2 jobs · r1 training 21.5K tok/s 97 % · r2 starting` (masked, like every line shown)."""
    return _fit(" · ".join([f"watching {count(len(jobs), 'job')}"] + [j.summary() for j in jobs]), width)


def _printable(text: str) -> str:
    # A log line can carry colour codes, a carriage return of a progress bar or a bell: on the
    # user's terminal they would recolour it or move the cursor over the status line. Masked
    # first, while a secret is still whole; runs of spaces kept (`file:line  text`, aligned
    # columns of a log).
    text = ESCAPES.sub("", redact(text or ""))
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return "".join(c if c.isprintable() else " " for c in text).strip()


def _fit(text: str, width: int | None) -> str:
    if width is None or len(text) <= width:
        return text
    return text[: max(0, width - 1)] + ELLIPSIS
