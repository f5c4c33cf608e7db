"""Faults a replay switches on: a thread that raises at its step N, and one that never returns.

Shared by the threaded trainer and the distributed one, so that the same `--inject-error` and
`--inject-hang` mean the same thing in both.
"""

from __future__ import annotations

import threading


def _named(spec: str | None, role: str, step: int) -> bool:
    """Whether `spec` ("role:N", or several joined by commas) names this role's step N."""
    return bool(spec) and f"{role}:{step}" in spec.split(",")


def raise_at(spec: str | None, role: str, step: int) -> None:
    if _named(spec, role, step):
        raise RuntimeError(f"injected failure in the {role} at its step {step}")


def hang_at(spec: str | None, role: str, step: int) -> None:
    """A stall, not a crash: nothing is printed, nothing is raised, the thread just never returns
    (what a rank stuck in NCCL looks like before any watchdog fires). The other threads find the
    queue full or empty and wait; the process holds its GPU memory at ~0 % utilization."""
    if _named(spec, role, step):
        threading.Event().wait()
