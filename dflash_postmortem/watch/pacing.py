"""When the live watch reads its folder again: as often as its share of one core allows while the
files only grow steadily, and at once when they show what a steady run does not.

A look that reads costs CPU that grows with the incident (the model and the detectors run over
all of it: about a second at an hour of 8 GPUs, docs/benchmarks.md), while a listing of the
folder costs next to nothing. So the watch lists the folder at every poll and reads it when:

- a file appeared, or one is shorter than before (a new log, a new listing, a capture restarted):
  a start, and a start that fails, show this way;
- a file that had been quiet grew (an operator typed in a recorded shell, a launcher wrote);
- a file that grew has been quiet for the shortest stall threshold (a log that stopped: the first
  moment a stall can be told), and again at each doubling of its silence while it stays quiet;
- the log of an attempt that waits for its first step grew ("is it starting?" is answered by
  its next lines);
- otherwise, while files grow, when its credit allows: each second adds `share` CPU-seconds
  (2 % of a core by default), each look spends what it cost (listings too), and a steady read
  waits until the credit covers what the last read cost: a read that cost C seconds is followed
  by the next steady one about C / share later (50 C at 2 %).

The reads the files call for may borrow a bounded amount ahead of the credit (`DEBT_S` of time's
worth), so a burst of them cannot hold the watch over its share for long; the credit saved while
nothing changes is bounded the same way.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

# What a file that had been quiet this long and grows again says: something other than the
# steady stream of a running trainer (which writes every second or every few).
WOKE_S = 10.0
# How much time's worth of credit may be borrowed by reads the files call for, or saved while
# nothing changes.
DEBT_S = 900.0


@dataclass
class _File:
    size: int
    mtime_ns: int
    changed_at: float  # when it was first seen, or last seen changing
    grew: bool = False  # seen growing since it was first seen
    quiet_reads: int = 0  # reads made for its present quiet spell


@dataclass
class Pacer:
    """Decides, from a listing of the folder, whether the watch reads it now (`why`), and keeps
    the CPU credit (`spent`). `clock` gives seconds (monotonic); tests and benchmarks pass theirs."""

    share: float = 0.02
    quiet_s: float = 60.0  # the shortest stall threshold (model/states.py MIN_STALL_S)
    clock: object = time.monotonic
    credit: float = 0.0
    files: dict[str, _File] = field(default_factory=dict)
    pending: bool = False  # the files changed since the last read
    last_read_s: float = 0.0  # what the last look that read cost
    _at: float | None = None

    def why(self, listing: dict[str, tuple[int, int]], starting: Iterable[str] = ()) -> str | None:
        """Why the folder should be read now (None: not now). `listing`: each file's path in the
        folder -> (size, modification time in ns), as the folder stands; `starting`: the files
        (or folders) of the attempts that wait for their first step, whose next lines answer the
        question of the moment."""
        now = self.clock()
        self._accrue(now)
        starting = tuple(starting)
        reasons, started = [], False
        for path, (size, mtime) in listing.items():
            f = self.files.get(path)
            if f is None:
                self.files[path] = _File(size, mtime, now)
                reasons.append("a new file")
                continue
            if (size, mtime) != (f.size, f.mtime_ns):
                if size < f.size:
                    reasons.append("a file rewritten")
                elif now - f.changed_at >= WOKE_S:
                    reasons.append("a quiet file grew")
                self.pending = True
                started = started or any(path == p or path.startswith(p.rstrip("/") + "/") for p in starting)
                f.size, f.mtime_ns, f.changed_at, f.grew, f.quiet_reads = size, mtime, now, True, 0
            elif f.grew and now - f.changed_at >= self.quiet_s * 2 ** f.quiet_reads:
                # at the shortest threshold, then at each doubling of the silence: a job whose
                # threshold is longer (slow steps) is told within one more doubling
                f.quiet_reads += 1
                reasons.append("a file went quiet")
        for gone in set(self.files) - set(listing):
            del self.files[gone]
            reasons.append("a file removed")
        if reasons:
            self.pending = True
        elif started:
            reasons.append("a starting attempt's log grew")
        if reasons and self.credit > -self.share * DEBT_S:
            return reasons[0]
        # a steady read waits until the credit covers what the last one cost: steady reads
        # never borrow
        if self.pending and self.credit >= self.last_read_s:
            return "the files grew"
        return None

    def spent(self, cpu_s: float, read: bool) -> None:
        """A look cost `cpu_s` CPU-seconds (all of it: listing, reading, judging, announcing);
        `read`: it read the folder."""
        self._accrue(self.clock())
        self.credit -= cpu_s
        if read:
            self.pending, self.last_read_s = False, cpu_s

    def _accrue(self, now: float) -> None:
        if self._at is not None:
            self.credit = min(self.credit + self.share * (now - self._at), self.share * DEBT_S)
        self._at = now
