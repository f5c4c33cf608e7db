"""What the model says it assumed, on the incidents recorded on an H200."""

from __future__ import annotations

from dflash_postmortem.model import reading_notes

from .test_ledger import _load


def test_the_reading_notes_say_what_was_assumed():
    halt = reading_notes(_load("h200-1gpu-torchrun-halt"))
    assert "attempt A1 (ddp-drafter): its 2 ranks each log their own tok/s: the job's throughput is their sum" in halt
    # the step interval between distinct times: two ranks logging together count once
    assert ("attempt A1 (ddp-drafter): stalled after 60 s without a step (max(3 x its median step interval of "
            "1.0 s, 60 s); [detect] stall_s in incident.toml sets it)") in halt
    stall = reading_notes(_load("h200-1gpu-stall"))  # its incident.toml sets stall_s = 37.5
    assert "attempt A1 (stalled): stalled after 38 s without a step ([detect] stall_s in incident.toml)" in stall
    two_threads = reading_notes(_load("h200-1gpu-alternating"))
    assert any(n.startswith("attempt A1 (two-threads): its lines' tok/s swing by 17% of their median") for n in two_threads)
