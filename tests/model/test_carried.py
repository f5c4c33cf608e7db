"""The model read again as a folder grows (the live watch): the attempts that are over are taken as
the last read computed them where their rows are unchanged, only the attempts the new rows touch
are computed again, and the model is the one a fresh read of the folder gives at every moment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dflash_postmortem.detect import detect
from dflash_postmortem.loaders.folder import read_folder
from dflash_postmortem.loaders.following import GrowingFolder
from dflash_postmortem.model import attempts, ledger, progress, states
from dflash_postmortem.model.carried import Carry, digest
from dflash_postmortem.model.ledger import ledger_parts

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.growing import grow  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


class _Reads:
    """A folder read again and again as the watch reads it: resumed where its files grew, with
    what the last read kept."""

    def __init__(self, folder: Path):
        self.folder, self.reader, self.carry = folder, GrowingFolder(), Carry()

    def __call__(self):
        inc = read_folder(self.folder, reader=self.reader, sniffed=self.reader.sniffed)
        inc.live, inc.carried = True, self.carry.next()
        self.carry = inc.carried
        return inc


def _model(inc) -> list[pd.DataFrame]:
    return [attempts(inc), states(inc), progress(inc), ledger(inc), ledger_parts(inc)]


def _fresh(folder: Path) -> list[pd.DataFrame]:
    inc = read_folder(folder)
    inc.live = True
    return _model(inc)


@pytest.mark.parametrize("name, moments", [
    # a supervisor loop's five starts in one log, four of them dead in seconds
    ("h200-1gpu-crash-loop", ["2026-12-02 04:37:10", "2026-12-02 04:37:25", "2026-12-02 04:37:40", "2026-12-02 04:38:00", None]),
    # a run, its kill, a relaunch that never started, a third start that trained
    ("h200-1gpu-watched-relaunch", ["2026-12-03 04:14:10", "2026-12-03 04:14:50", "2026-12-03 04:15:30", "2026-12-03 04:16:30", None]),
])
def test_a_growing_folder_read_with_what_the_last_read_kept_is_the_model_a_fresh_read_gives(tmp_path, name, moments):
    src = REPO / "data" / "incidents" / name
    folder = tmp_path / "inc"
    folder.mkdir()
    read = _Reads(folder)
    carried = 0
    for moment in moments:
        grow(src, folder, moment)
        got, want = _model(read()), _fresh(folder)
        for mine, fresh in zip(got, want, strict=True):
            pd.testing.assert_frame_equal(mine.reset_index(drop=True), fresh.reset_index(drop=True))
        assert got[2].attrs["notes"] == want[2].attrs["notes"]
        carried += read.carry.counts["attempt", "carried"]
    assert carried > 0  # the later reads took attempts that were over from the earlier ones


def test_a_fleet_read_as_it_grows_shares_one_carry_across_its_hosts(tmp_path):
    """Each host's view computes its own attempts and keeps them in the whole read's Carry: the
    findings and the model are a fresh read's at every moment, and a read of the finished folder
    takes the hosts' attempts that are over from the read before it."""
    src = tmp_path / "fleet"
    subprocess.run([sys.executable, str(REPO / "benchmarks" / "gen_fleet.py"), str(src), "--hosts", "3",
                    "--gpus-per-host", "2", "--hours", "0.34", "--seed", "3", "--no-prometheus", "--log-every", "30"],
                   check=True, capture_output=True)
    folder = tmp_path / "inc"
    folder.mkdir()
    read = _Reads(folder)
    for moment in ["2026-11-28 00:12:00", None, None]:
        grow(src, folder, moment)
        inc = read()
        fresh = read_folder(folder)
        fresh.live = True
        found = detect(inc)  # through each host's view
        by_views = dict(read.carry.counts)
        pd.testing.assert_frame_equal(found[["kind", "start", "title"]], detect(fresh)[["kind", "start", "title"]])
        for mine, want in zip(_model(inc), _model(fresh), strict=True):
            pd.testing.assert_frame_equal(mine.reset_index(drop=True), want.reset_index(drop=True))
    # the last read, of the folder as the one before it: the hosts' views took what they kept
    assert by_views.get(("attempt", "carried"), 0) > 0


def _loop(folder: Path, starts: int, seconds: int, more: int = 0, late_line_in: int | None = None) -> None:
    """A restart loop's one log: `starts` starts of `seconds` each (the last `more` seconds
    longer), a step a second; each but the last dies of a CUDA error (with `late_line_in`, that
    start also logged a warning dated in its own last seconds, as a log rewritten with it holds)."""
    t, lines = pd.Timestamp("2026-12-03 10:00:00"), []
    for k in range(starts):
        length = seconds + (more if k == starts - 1 else 0)
        lines.append(f"{t:%Y-%m-%d %H:%M:%S} [looped] Loading target model on cuda:0 ...")
        lines += [f"{t + pd.Timedelta(seconds=s):%Y-%m-%d %H:%M:%S} [looped] step {s} loss 3.0 tok/s 21500 queue 0"
                  for s in range(5, length)]
        if k == late_line_in:
            lines.append(f"{t + pd.Timedelta(seconds=length - 2):%Y-%m-%d %H:%M:%S} [looped] WARNING: NCCL watchdog slow")
        t += pd.Timedelta(seconds=length)
        if k < starts - 1:
            lines += ["Traceback (most recent call last):", "torch.AcceleratorError: CUDA error: an illegal memory access"]
            t += pd.Timedelta(seconds=10)
    (folder / "loop.log").write_text("\n".join(lines) + "\n")


def test_only_the_attempts_the_new_rows_touch_are_computed_again(tmp_path):
    folder = tmp_path / "inc"
    folder.mkdir()
    read = _Reads(folder)
    _loop(folder, 4, 120)
    first = _model(read())[0]
    assert len(first) == 4 and first["end"].notna().sum() == 3
    assert read.carry.counts["attempt", "computed"] == 4
    # two seconds more of the start that trains: the three dead ones are taken as they were
    _loop(folder, 4, 120, more=2)
    got = _model(read())
    assert read.carry.counts["attempt", "computed"] == 1 and read.carry.counts["attempt", "carried"] == 3
    assert read.carry.counts["states", "carried"] == 3 and read.carry.counts["progress", "carried"] == 3
    for mine, fresh in zip(got, _fresh(folder), strict=True):
        pd.testing.assert_frame_equal(mine, fresh)
    # the same log rewritten with a line inside the second start: that start is computed again,
    # and so are the ones after it (their lines moved down by one: what they cite changed)
    _loop(folder, 4, 120, more=2, late_line_in=1)
    att = attempts(read())
    assert read.carry.counts["attempt", "computed"] == 3 and read.carry.counts["attempt", "carried"] == 1
    pd.testing.assert_frame_equal(att, _fresh(folder)[0])


def test_a_folder_read_once_keeps_nothing(tmp_path):
    _loop(tmp_path, 3, 60)
    inc = read_folder(tmp_path)
    inc.carried = Carry()
    attempts(inc)
    assert inc.carried.now == {} and not inc.carried.counts  # not live: computed, never kept


def test_the_digest_of_rows_is_their_content_whatever_their_order():
    rows = pd.DataFrame({"time": pd.to_datetime(["2026-12-03 10:00:00", "2026-12-03 10:00:01"], utc=True),
                         "ref": ["loop.log:1", "loop.log:2"], "message": ["Traceback", "step 5"]})
    assert digest(rows) == digest(rows.iloc[::-1].reset_index(drop=True))
    # a record that grew (a traceback's next lines joined to its first) is not the row it was
    grown = rows.assign(message=["Traceback\nRuntimeError: CUDA error", "step 5"])
    assert digest(grown) != digest(rows)
    # values moved between rows are other rows
    swapped = rows.assign(message=["step 5", "Traceback"])
    assert digest(swapped) != digest(rows)
    assert digest(rows.iloc[:0]) == (0,)
