"""The model read again as a folder grows (the live watch keeps a `Carried` across its looks): an
attempt whose signals and evidence rows did not change keeps its row, the others are computed
again, and the attempts are those a fresh build gives."""

import shutil
import warnings
from pathlib import Path

import pandas as pd

from dflash_postmortem.loaders.folder import read_folder
from dflash_postmortem.model import attempts
from dflash_postmortem.model.computed import Carried, carry

CRASH_LOOP = Path(__file__).resolve().parents[2] / "data" / "incidents" / "h200-1gpu-crash-loop"


def _read(folder: Path, carried: Carried | None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = read_folder(folder)
    inc.live = True
    if carried is not None:
        carry(inc, carried)
        carried.begin()
    found = attempts(inc)
    if carried is not None:
        carried.settle()
    return found


def test_a_read_again_recomputes_only_the_attempts_whose_evidence_changed(tmp_path):
    """The crash loop's five attempts (four crashes under the supervisor loop, then the fixed
    launch) read while the fixed run's log still lacks its last two lines; then with its step 115
    written: only A5 (PID 879, logs/train_fixed.log) is computed again."""
    folder = tmp_path / "crash-loop"
    shutil.copytree(CRASH_LOOP, folder)
    log = folder / "logs" / "train_fixed.log"
    lines = log.read_text().splitlines(keepends=True)
    assert lines[-2].startswith("2026-12-02 04:38:04 [looped-fixed] step 115 ")
    log.write_text("".join(lines[:-2]))

    carried = Carried()
    first = _read(folder, carried)
    assert list(first["attempt"]) == ["A1", "A2", "A3", "A4", "A5"]
    assert (carried.reused, carried.computed) == (0, 5)

    again = _read(folder, carried)  # nothing written since
    assert (carried.reused, carried.computed) == (5, 0)
    pd.testing.assert_frame_equal(again, first)

    with log.open("a") as f:
        f.write(lines[-2])
    grown = _read(folder, carried)
    assert (carried.reused, carried.computed) == (4, 1)
    pd.testing.assert_frame_equal(grown, _read(folder, None))
    a5 = grown.set_index("attempt").loc["A5"]
    assert a5["pids"] == [879] and a5["sources"] == ["logs/train_fixed.log"]
    assert a5["last_alive"] == pd.Timestamp("2026-12-02 04:38:04", tz="UTC")
    assert a5["last_alive"] > first.set_index("attempt").loc["A5", "last_alive"]
