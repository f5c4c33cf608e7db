"""A log that prints no time, dated by its bars (clock/untimed.py), read on a recorded incident:
h100-1gpu-bar-freeze, whose trainer writes only tqdm bars (one line per epoch, `\\r` between its
redraws) and `Saved checkpoint epoch N` lines, and whose README gives what really happened."""

import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import dflash_postmortem as pm
from dflash_postmortem import load_incident
from dflash_postmortem.schema import BAR_ELAPSED_S

FOLDER = Path(__file__).resolve().parents[2] / "data" / "incidents" / "h100-1gpu-bar-freeze"


def _at(hms: str) -> pd.Timestamp:
    return pd.Timestamp(f"2026-12-07 {hms}", tz="UTC")


@pytest.fixture(scope="module")
def inc():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_incident(FOLDER)


def _line(refs: pd.Series) -> pd.Series:
    return refs.str.rsplit(":", n=1).str[-1].astype(int)


def test_the_bar_begins_where_its_gpu_went_busy_not_at_a_sample_taken_as_it_was_launched(inc):
    """`smi.csv` line 2 (19:32:58.432, 96 %) is the calibration run's last sample, 18 ms after the
    launch typed at 19:32:58.414: no work of the new process. Its GPU was idle from line 3 to
    line 14 (19:33:10.543) and busy at line 15 (19:33:11.543); the driver saw the first bar at
    19:33:08.708 and the first steps come after it."""
    rep = next(f for f in inc.load_report.files if f.path == "logs/train.log")
    assert any("the bar began at 2026-12-07 19:33:10 UTC (where GPU 0, idle at the launch, went busy: idle at "
               "19:33:10, busy at 19:33:11)" in a for a in rep.assumptions), rep.assumptions


def test_each_redraw_on_one_line_has_its_own_time(inc):
    """Epoch 1's bar is line 3 alone: its redraws from `0/300 [00:00<?` to `300/300 [00:17<00:00`
    are 17 s apart by its own elapsed field, not all at the line's last."""
    m = inc.metrics
    el = m[(m["source"] == "logs/train.log") & (m["metric"] == BAR_ELAPSED_S)]
    first = el[_line(el["ref"]) == 3]
    assert first["time"].min() == _at("19:33:10.543")
    assert first["time"].max() - first["time"].min() == pd.Timedelta(seconds=17)
    # (each drawing at the bar's start plus the seconds it shows)
    assert ((first["time"] - first["time"].min()).dt.total_seconds() == first["value"]).all()
    assert first["time"].nunique() == 17


def test_times_after_an_epochs_end_are_the_earliest_and_the_line_after_the_last_bar_is_lent(inc):
    """The seconds between epochs (each `Saved checkpoint`, each new pair of workers) are in no
    bar's elapsed time: from epoch 2's bar (line 5) on, each time may be later. The traceback the
    `kill -INT` printed (line 10) has no time of its own: its bar lends it one, the earliest."""
    m = inc.metrics
    mine = m[m["source"] == "logs/train.log"]
    approx = mine["time_approx"].fillna(False).astype(bool)
    lines = _line(mine["ref"])
    assert not approx[lines == 3].any() and approx[lines >= 5].all()
    ev = inc.events
    tb = ev[(ev["source"] == "logs/train.log") & (ev["kind"] == "traceback")].iloc[0]
    assert tb["ref"] == "logs/train.log:10" and bool(tb["time_earliest"]) and bool(tb["time_approx"])
    # (epoch 4's last step, 107, is dated before the GPU last worked at 19:34:06.563: the states
    # move the stall's start there, tests/detect/test_recorded_incidents.py)
    last = mine[(lines == 9) & (mine["metric"] == BAR_ELAPSED_S)]
    assert last["step"].max() == 1007 and last["time"].max() < _at("19:34:06.563")  # (107 of epoch 4: 3 x 300 + 107)


def test_a_stall_begins_where_its_gpu_last_worked_only_where_it_then_sat_idle(tmp_path):
    """The stall's start moves from the earliest its last step can be (19:34:02.543, the bar
    clock without the seconds between epochs) to the GPU's last busy sample only where the GPU
    was idle after it: a collective that spins while it waits keeps a GPU busy with no step. The
    same folder with the frozen stretch's samples (`smi.csv` lines 71-203) at 100 % keeps the
    clock's time; the recording as it is moves to 19:34:06.563 (tests/detect/test_recorded_incidents.py)."""
    folder = tmp_path / "spin"
    shutil.copytree(FOLDER, folder)
    smi = (folder / "logs" / "smi.csv").read_text(encoding="utf-8").split("\n")
    smi[70:203] = [line.replace(", 0 %,", ", 100 %,") for line in smi[70:203]]
    (folder / "logs" / "smi.csv").write_text("\n".join(smi), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spun = load_incident(folder)
    found = pm.detect(spun)
    stall = found[found["kind"] == "stall"].iloc[0]
    assert stall["start"] == _at("19:34:02.543")
