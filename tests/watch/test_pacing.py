"""When the live watch reads its folder (dflash_postmortem/watch/pacing.py): steady growth as
often as its CPU share allows, a new, waking or quiet file at once; and a watched session
replayed with the pacer on says what the live watch said, as soon as the rules promise."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from support.growing import grow

from dflash_postmortem.watch.live import Watch
from dflash_postmortem.watch.pacing import DEBT_S, WOKE_S, Pacer

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def _reads(pacer: Pacer, clock: _Clock, listings, cost: float, poll: float = 2.0) -> list[tuple[float, str]]:
    """Each listing in turn, `poll` seconds apart; a read charged `cost` where the pacer calls for one."""
    out = []
    for listing in listings:
        why = pacer.why(listing)
        if why is not None:
            out.append((clock.t, why))
            pacer.spent(cost, read=True)
        clock.t += poll
    return out


def test_a_steadily_growing_folder_is_read_as_often_as_the_share_allows():
    clock = _Clock()
    pacer = Pacer(share=0.02, clock=clock)
    steady = [{"smi.csv": (100 * k, k), "rank0.log": (50 * k, k)} for k in range(1, 1801)]  # an hour
    reads = _reads(pacer, clock, steady, cost=1.0)
    assert reads[0] == (0.0, "a new file")
    gaps = [b - a for (a, _), (b, _) in zip(reads, reads[1:], strict=False)]
    # the first read was owed (100 s: its own cost and the next one's), then 1 CPU-second at 2 %
    # of a core: 50 s apart
    assert gaps[0] == 100.0 and set(gaps[1:]) == {50.0}
    assert {why for _, why in reads[1:]} == {"the files grew"}
    assert len(reads) * 1.0 <= 0.02 * clock.t  # what was spent: within the share of the hour


def test_a_new_file_a_waking_file_and_a_quiet_one_are_read_at_once():
    clock = _Clock()
    pacer = Pacer(share=0.02, quiet_s=60.0, clock=clock)
    files = {"train.log": (10, 1), "operator.log": (5, 1)}
    assert pacer.why(files) == "a new file"
    pacer.spent(2.0, read=True)  # deep in debt for a steady read: 100 s of credit owed
    clock.t += 2
    files["train.log"] = (20, 2)
    assert pacer.why(files) is None  # steady growth waits for the credit
    clock.t += 2
    assert pacer.why({**files, "train2.log": (1, 1)}) == "a new file"
    pacer.spent(0.1, read=True)
    files["train2.log"] = (1, 1)
    clock.t += WOKE_S  # the operator's transcript has been quiet; a command is typed
    files["operator.log"] = (80, 2)
    assert pacer.why(files) == "a quiet file grew"
    pacer.spent(0.1, read=True)
    # nothing grows again: train.log (last grew at 2) and operator.log (at 14) are each read for
    # when quiet 60 s, then 120 s, then 240 s; train2.log never grew, so its quiet says nothing
    told = []
    for _ in range(200):
        clock.t += 2
        why = pacer.why(files)
        if why == "a file went quiet":
            told.append(clock.t)
            pacer.spent(0.1, read=True)
    assert told[:6] == [2 + 60, 14 + 60, 2 + 120, 14 + 120, 2 + 240, 14 + 240]


def test_reads_the_files_call_for_borrow_a_bounded_amount():
    clock = _Clock()
    pacer = Pacer(share=0.02, clock=clock)
    files = {}
    reads = []
    for k in range(100):  # a new file every poll, each read costing 1 s
        files[f"log{k}"] = (1, 1)
        why = pacer.why(files)
        if why is not None:
            reads.append(clock.t)
            pacer.spent(1.0, read=True)
        clock.t += 2
    # the debt stops at DEBT_S of time's worth of credit: then they wait for it like the rest
    assert pacer.credit >= -0.02 * DEBT_S - 1.0
    assert len(reads) < 100
    assert len(reads) <= 0.02 * clock.t + 0.02 * DEBT_S + 2


class _Charged(Pacer):
    """A pacer charged a fixed cost per read, whatever this machine's CPU took (the rules, not
    the machine, are under test)."""

    def spent(self, cpu_s: float, read: bool) -> None:
        super().spent(0.5 if read else 0.0, read)


def test_a_watched_session_replayed_with_the_pacer_says_what_was_said_live_in_time(tmp_path):
    """The H200 session the watch followed live (its README), replayed in steps of 3 s of its own
    clock (a look each) with the pacer at 2 % of a core and 0.5 CPU-s a read (a read every 25 s
    while files only grow): the same announcements in the same order as the live record, the
    failed start within a step of the line that shows it plus 15 s, the stall within its
    threshold plus 30 s, and far fewer reads than looks."""
    src, folder = INCIDENTS / "h200-1gpu-watched-relaunch", tmp_path / "incident"
    folder.mkdir()
    t = pd.Timestamp("2026-12-03 04:13:40", tz="UTC")
    pacer = _Charged(share=0.02, clock=lambda: (t - pd.Timestamp("2026-12-03", tz="UTC")).total_seconds())
    watch = Watch(folder, clock_now=lambda: t, pacer=pacer)
    said, reads = [], 0
    while t <= pd.Timestamp("2026-12-03 04:18:06", tz="UTC"):
        grow(src, folder, f"{t:%Y-%m-%d %H:%M:%S}")
        said += [(t, a) for a in watch.look()]
        reads += watch.why is not None
        watch.why = None
        t += pd.Timedelta(seconds=3)
    live = [line.split(maxsplit=3)[2:] for line in (src / "dflash-watch.log").read_text().splitlines()]
    assert [(a.job, a.text.split()[0]) for _, a in said] == [(job, text.split()[0]) for job, text in live]
    failed = [(when, a) for when, a in said if a.kind == "failed_start"]
    assert (failed[0][0] - failed[0][1].time).total_seconds() <= 3 + 15  # its line: train2.log's traceback
    stall = next((when, a) for when, a in said if a.kind == "stall")
    last_step = pd.Timestamp("2026-12-03 04:16:18", tz="UTC")  # train4.log:37, the last step before it
    assert (stall[0] - last_step).total_seconds() <= 60 + 30  # its threshold (60 s) + 30 s
    assert reads < watch.looks / 3
