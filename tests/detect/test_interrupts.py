"""An interrupt that stopped one pass of a loop, and the loop that went on (detect/interrupts.py),
on a real capture: tests/model/fixtures/ctrlc-sweep-cpu (README there)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem.detect import detect_interrupted_loops
from dflash_postmortem.model import attempts

CTRL_C = Path(__file__).parents[1] / "model" / "fixtures" / "ctrlc-sweep-cpu"


def test_each_ctrl_c_stopped_one_pass_and_the_loop_went_on():
    inc = pm.load_incident(CTRL_C)
    f = detect_interrupted_loops(inc)
    assert f["kind"].tolist() == ["interrupt_went_on"]
    row = f.iloc[0]
    n = row["numbers"]
    assert row["start"] == pd.Timestamp("2026-12-06 23:24:26.434", tz="UTC")
    assert row["end"] == pd.Timestamp("2026-12-06 23:25:06.447", tz="UTC")
    assert [(p["run"], p["pid"], p["next_run"], p["next_pid"]) for p in n["went_on"]] == [
        ("lr-1e-4", 31095, "lr-3e-4", 31489), ("lr-3e-4", 31489, "lr-1e-3", 31779)]
    assert [p["next_start"].strftime("%H:%M:%S") for p in n["went_on"]] == ["23:24:26", "23:24:51"]
    assert [p["said"] for p in n["went_on"]] == ["interrupted at step 1376, saving checkpoint",
                                                 "interrupted at step 897, saving checkpoint"]
    assert (n["ended"]["run"], n["ended"]["pid"], n["ended"]["last_step"]) == ("lr-1e-3", 31779, 300)
    assert (n["passes"], n["ran"], n["key_presses"]) == (3, 3, 3)
    # the typed loop, each interrupt line, and the terminal's `^C` echoes (one line holds two)
    for ref in ("logs/terminal.typescript:4", "logs/lr-1e-4.log:74", "logs/lr-3e-4.log:50", "logs/lr-1e-3.log:21",
                "logs/terminal.typescript:5", "logs/terminal.typescript:6"):
        assert ref in row["evidence"]


def test_the_story_tells_the_loop_that_went_on():
    inc = pm.load_incident(CTRL_C)
    told = " ".join(pm.what_happened(inc, pm.detect(inc)))
    assert "At 23:24:26 UTC an interrupt stopped run lr-1e-4 (PID 31095)" in told
    assert "the loop went on with run lr-3e-4 (PID 31489) at 23:24:26" in told
    assert "the loop went on with run lr-1e-3 (PID 31779) at 23:24:51" in told
    assert "the interrupt at 23:25:06 stopped run lr-1e-3 (PID 31779)" in told and "no pass was left" in told


def test_a_loop_whose_passes_ended_by_themselves_is_no_finding():
    # tests/model/fixtures/foreground-loop-cpu: both passes stopped by themselves (`Training stopped`)
    inc = pm.load_incident(Path(__file__).parents[1] / "model" / "fixtures" / "foreground-loop-cpu")
    assert detect_interrupted_loops(inc).empty


def test_a_run_stopped_by_an_interrupt_and_nothing_else_is_told_so(tmp_path):
    # pass 1 of tests/model/fixtures/ctrlc-sweep-cpu alone: its log, its trainer's interrupt line
    # the last of its training; no loop went on, nothing went wrong, and the run did not finish
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "lr-1e-4.log").write_bytes((CTRL_C / "logs" / "lr-1e-4.log").read_bytes())
    inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    assert found.empty
    told = pm.what_happened(inc, found)
    assert told[0].startswith("Nothing went wrong that the evidence shows between 23:23:52 UTC and 23:24:26 UTC")
    assert told[0].endswith("; run lr-1e-4 was stopped by an interrupt at 23:24:26 UTC "
                            "(`interrupted at step 1376, saving checkpoint`).")


def test_a_trainer_that_dies_of_ctrl_c_ends_its_loop_and_no_pass_goes_on():
    # tests/model/fixtures/ctrlc-stops-sweep-cpu (README there): pass 1 (PID 27994) died of the
    # Ctrl-C at 03:08:59.023 (its traceback ends in KeyboardInterrupt), bash ended the loop, and
    # passes 2 and 3 never started: no loop went on; the story says the run and the loop stopped
    inc = pm.load_incident(Path(__file__).parents[1] / "model" / "fixtures" / "ctrlc-stops-sweep-cpu")
    att = attempts(inc)
    assert att["run"].tolist() == ["lr-1e-4"] and att["pids"].tolist() == [[27994]]
    assert att["end_kind"].tolist() == ["interrupt"]
    assert abs(att["end"].iloc[0] - pd.Timestamp("2026-12-07 03:08:59.023", tz="UTC")) <= pd.Timedelta(seconds=1)
    found = pm.detect(inc)
    assert found.empty
    told = pm.what_happened(inc, found)
    assert told[0].endswith("run lr-1e-4 was stopped by an interrupt at 03:08:58 UTC (`KeyboardInterrupt`), and with it "
                            "the loop it ran in: 1 of its 3 passes had started.")
