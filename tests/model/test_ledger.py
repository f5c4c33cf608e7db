"""The goodput ledger on the incidents recorded on an H200 (their READMEs say what was done):
every GPU-second in one class, the classes summing to the window, each class where the
recording put it."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from support.bundled import NAMES, loaded

import dflash_postmortem as pm
from dflash_postmortem.model import ledger
from dflash_postmortem.model.ledger import CLASSES, SHOWN_S, accounted, ledger_parts

REPO = Path(__file__).resolve().parents[2]
BUNDLED = NAMES


def _load(name: str):
    return loaded(name)[0]


def _seconds(a: str, b: str) -> float:
    return (pd.Timestamp(f"2026-12-02 {b}") - pd.Timestamp(f"2026-12-02 {a}")).total_seconds()


@pytest.mark.parametrize("name", BUNDLED)
def test_every_gpu_second_is_in_one_class(name):
    inc = _load(name)
    led = ledger(inc)
    att = accounted(inc)
    if led.empty:  # no GPU in the evidence (a replay's results): nothing to account
        assert inc.gpus.empty and not any(att["gpus"])
        return
    window = (pd.concat([att["last_alive"], att["end"]]).max() - att["start"].min()).total_seconds()
    assert (led["total"] - window).abs().max() < 1e-6
    assert (led[list(CLASSES)].sum(axis=1) - led["total"]).abs().max() < 1e-6
    assert (led[list(CLASSES)] >= 0).all().all()
    assert not led.duplicated(["host", "gpu"]).any()
    # the same seconds by attempt: each class sums to the GPUs' (parts under half a second are
    # not listed), and every part cites a line
    parts = ledger_parts(inc)
    for c in CLASSES:
        assert abs(parts.loc[parts["class"] == c, "seconds"].sum() - led[c].sum()) < SHOWN_S * len(att) + 1e-6, c
    assert parts["evidence"].map(len).gt(0).all(), parts[parts["evidence"].map(len) == 0]


def test_a_dead_thread_stalls_the_gpu_until_the_kill():
    (row,) = [r for _, r in ledger(_load("h200-1gpu-thread-death")).iterrows()]
    # the last step line 02:35:23, the kill at 02:35:59.677 (the typescript dates it 02:36:02)
    assert abs(row["stalled"] - _seconds("02:35:23", "02:36:00")) <= 3
    # between the kill (02:35:59.677: the process gone, not bash's `Terminated` at the next
    # prompt) and the relaunch's start (02:36:02.682, README; the typescript dates it 02:36:05,
    # ps a second before the `date` it was typed after: that `date`'s moment)
    assert abs(row["restarting"] - _seconds("02:35:59.677", "02:36:02.682")) <= 1 and row["down"] == 0


def test_a_resume_redoes_the_steps_since_its_checkpoint():
    (row,) = [r for _, r in ledger(_load("h200-1gpu-resume-supervisor")).iterrows()]
    # `Resumed from checkpoint ... at step 120` at 02:47:44; its first step line, 125 (the step
    # the dead attempt had logged last), at 02:47:46
    assert row["redone"] == pytest.approx(_seconds("02:47:44", "02:47:46"))
    # the trainer raised at 02:47:28 and had exited when the loop printed its status at 02:47:30
    # (`trainer exited with status 1`); the supervisor started the next at 02:47:35 (ps: 02:47:34)
    assert abs(row["restarting"] - _seconds("02:47:30", "02:47:35")) <= 2


def test_two_clean_runs_leave_the_gap_between_them_restarting():
    (row,) = [r for _, r in ledger(_load("h200-1gpu-clean-relaunch")).iterrows()]
    # the first logged `Training stopped` at 02:49:31 and its process 3307 (the one nvidia-smi's
    # process list showed on the GPU from its start-up on: the start's own) still held 5,622 MiB
    # at 02:49:31.874 (smi_apps.csv:17); the same command ran again at 02:49:40.634
    assert row["restarting"] == pytest.approx(_seconds("02:49:31.874", "02:49:40.634"))
    assert row["stalled"] == 0 and row["redone"] == 0
    # start-up from each command to its first step: 02:48:55.841 -> 02:49:10, 02:49:40.634 -> 02:49:51
    assert row["starting"] == pytest.approx(_seconds("02:48:55.841", "02:49:10") + _seconds("02:49:40.634", "02:49:51"))



def test_each_part_of_the_gpu_time_is_an_attempts_and_cites_its_lines(bundled_dir):
    """The bundled 2-GPU capture: the regressed run (A2) trained slower than the baseline run from
    its first step line (train_opt.log:8; its own windows swing 60-79K tok/s, no lasting drop
    of its own after that, so no later line is cited); the operator killed it (operator.log:5) and relaunched into a folder that does
    not exist (A3, operator.log:8, never started); the relaunch that trained (A4, operator.log:17)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = ledger_parts(pm.load_incident(bundled_dir))
    said = {(a if isinstance(a, str) else f"after {p}", c): e
            for a, p, c, e in zip(parts["attempt"], parts["after"], parts["class"], parts["evidence"], strict=True)}
    assert said[("A2", "degraded")] == ["logs/train_opt.log:8"]
    assert said[("after A2", "restarting")] == ["logs/operator.log:5", "logs/operator.log:8"]
    assert said[("A4", "starting")] == ["logs/operator.log:17", "logs/train_opt2.log:8"]
    assert ("A3", "starting") not in said  # it held no GPU
    assert list(parts["job"].drop_duplicates()) == ["job 1", "job 2", "job 3"]


def test_a_run_a_day_before_the_gpu_was_sampled_is_not_accounted():
    """h100-1gpu-port-in-use keeps an older run's log (2026-12-05 15:21:20-15:21:47, README: made by
    the driver for the operator to misread); the GPU was sampled from 10:44:20 the next day. Its 19
    hours until then were counted as restarting on GPU 0 (69,758 of 69,889 s)."""
    (row,) = [r for _, r in ledger(_load("h100-1gpu-port-in-use")).iterrows()]
    # run 1's start (10:44:20.500) to run 3's last sign of life (10:46:08.574)
    assert row["total"] == pytest.approx(_seconds("10:44:20.500", "10:46:08.574"), abs=1)
    assert row["restarting"] < 10
