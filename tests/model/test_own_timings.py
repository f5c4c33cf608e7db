"""The step times a run wrote itself (model/own_timings.py), read from public samples whose
lines carry no time of day: Keras's epoch lines, an Ultralytics bar."""

from __future__ import annotations

import shutil
import warnings

import pytest

import dflash_postmortem as pm
from conftest import REAL_WORLD, REPO
from dflash_postmortem.model.own_timings import largest_change, step_seconds
from dflash_postmortem.present import sentences as text

LOGS = REAL_WORLD / "train-log"


def _load(tmp_path, name: str):
    shutil.copy(LOGS / name, tmp_path / name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(tmp_path)


def test_an_epochs_seconds_over_its_batches_are_its_steps_time(tmp_path):
    """keras-team/keras #6503: `1464/1464 [====] - 3943s - loss: ...` then 239-240 s epochs: a step of
    the first epoch took 3943/1464 s, of the next three 239/1464 to 240/1464 s; the first epoch,
    1464 steps, is no start-up."""
    inc = _load(tmp_path, "keras-fit-generator-first-epoch-3943s-then-240s.log")
    s = step_seconds(inc)
    assert s["step"].tolist() == [1464, 2928, 4392, 5856]
    assert s["seconds"].tolist() == pytest.approx([3943 / 1464, 239 / 1464, 240 / 1464, 240 / 1464])
    c = largest_change(inc)
    assert (c.how, c.rows_before, c.rows_after, c.at_step) == ("stated", 1, 3, 2928)
    assert 1 / c.ratio == pytest.approx(3943 / 240)
    assert c.at_ref.endswith(":4") and c.first_ref.endswith(":2")


def test_a_slower_stretch_is_told_from_where_it_began(tmp_path):
    """tensorflow #44050: epochs of 2287 s, then 3974, 3562 and 3572 s once the cache was read from
    disk: a step took 1.6x as long from the second epoch (step 6396, line 4) on."""
    inc = _load(tmp_path, "tf-keras-disk-cache-epochs-after-first-slower.log")
    c = largest_change(inc)
    assert c.at_step == 6396 and c.at_ref.endswith(":4")
    assert c.before == pytest.approx(2287 / 3198) and c.after == pytest.approx(3572 / 3198)
    said = text.what_happened(inc, pm.detect(inc))
    assert said[0].endswith(
        "What its own step times show: from step 6396 (tf-keras-disk-cache-epochs-after-first-slower.log:4) on, a "
        "step took 1.12 s, against 0.715 s before (tf-keras-disk-cache-epochs-after-first-slower.log:2): 1.6x as long "
        "(as its lines state them).")


def test_a_bar_that_stood_still_is_told_by_its_elapsed_time(tmp_path):
    """ultralytics #673: epoch 80's bar ran 351 steps in 04:18; epoch 81's stood at 9 of 351 after
    13:44:50 (a worker of its data loader froze), then the interrupt's traceback. No line has a
    time of day; the bars' own seconds show the stop."""
    inc = _load(tmp_path, "ultralytics-yolov8-epoch-81-stalls-13h-at-9-of-351-then-traceback.log")
    s = step_seconds(inc)
    assert s["how"].tolist() == ["bar", "bar"] and s["covers"].tolist() == [351, 9]
    assert s["seconds"].tolist() == pytest.approx([258 / 351, (13 * 3600 + 44 * 60 + 50) / 9])
    said = text.what_happened(inc, pm.detect(inc))[0]
    assert "at step 9 (ultralytics-yolov8-epoch-81-stalls-13h-at-9-of-351-then-traceback.log:7), the last it shows, " \
           "a step had taken 5,499 s, against 0.735 s before" in said
    assert "7,481x as long (by its bar's elapsed time)" in said and "`for i, batch in pbar:`" in said


def test_steps_that_took_about_the_same_show_no_change(tmp_path):
    """tensorflow #60425's epochs at 345, 319 and 296 ms a step (1.17x), and keras #13710's three fits of
    233-240 s: no change a reader names; the story says the pace cannot be judged, as before."""
    for name in ("tf-keras-generated-data-epochs-345ms-per-step-slow-start.log",
                 "keras-incremental-fit-233s-to-240s-per-step-new-model-object-each-loop.log"):
        case = tmp_path / name.split("-")[1]
        case.mkdir()
        inc = _load(case, name)
        assert len(step_seconds(inc)) == 3 and largest_change(inc) is None
        assert text.what_happened(inc, pm.detect(inc))[0].split(" (where")[0].endswith("cannot be judged")


def _bar_log(tmp_path, name: str, lines: list[str]):
    case = tmp_path / name
    case.mkdir()
    (case / "train.log").write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pm.load_incident(case)


def test_a_bars_interval_that_held_a_save_is_no_pace_of_its_steps(tmp_path):
    """A Trainer's bar (no time of day) at 0.1 s a step, then 100 steps over 40 s across the
    `Saving model checkpoint` line between two of its states: the save's seconds, not a slower
    pace (the same bar without the save line is told 4x as long from step 400)."""
    bar = "{pct}%|##   | {n}/1000 [{el}<05:00,  9.99it/s]"
    states = [bar.format(pct=n // 10, n=n, el=el) for n, el in ((100, "00:10"), (200, "00:20"), (300, "00:30"))]
    last = bar.format(pct=40, n=400, el="01:10")
    saved = _bar_log(tmp_path, "saved", [*states, "Saving model checkpoint to out/run1/checkpoint-300", last])
    assert step_seconds(saved)["seconds"].tolist() == pytest.approx([0.1, 0.1, 0.1])
    assert largest_change(saved) is None
    plain = _bar_log(tmp_path, "plain", [*states, last])
    c = largest_change(plain)
    assert (c.how, c.at_step, c.before, c.after) == ("bar", 400, pytest.approx(0.1), pytest.approx(0.4))


def test_a_start_twice_as_slow_as_what_followed_is_a_warm_up(tmp_path):
    """A first 200 steps at 0.2 s then 0.1 s (allocator, autotuning, workers warming up): no
    change told; 0.4 s then 0.1 s (4x) is."""
    bar = "{pct}%|##   | {n}/1000 [{el}<05:00,  9.99it/s]"

    def states(first_s):
        el = [100 * first_s, 200 * first_s, 200 * first_s + 10, 200 * first_s + 20, 200 * first_s + 30]
        return [bar.format(pct=n // 10, n=n, el=f"{int(e) // 60:02d}:{int(e) % 60:02d}")
                for n, e in zip((100, 200, 300, 400, 500), el, strict=True)]
    assert largest_change(_bar_log(tmp_path, "warm", states(0.2))) is None
    c = largest_change(_bar_log(tmp_path, "slow", states(0.4)))
    assert (c.at_step, c.before, c.after) == (300, pytest.approx(0.4), pytest.approx(0.1))


def test_a_resume_in_a_log_of_its_own_is_compared_with_the_run_before(tmp_path):
    """h200-1gpu-hf-slow-resume without the operator's transcript (nothing dates the logs then):
    run 1 (`logs/hf_train.log`, steps 1-229) and its resume with gradient checkpointing
    (`logs/hf_train2.log`, from 201) each time their steps by their bars; the README measures run
    1 2.24 times as fast (median 14.79 it/s against 6.60). The resume's pace is told against the
    run before it, from where its log begins."""
    folder = tmp_path / "hf-slow-resume"
    shutil.copytree(REPO / "data" / "incidents" / "h200-1gpu-hf-slow-resume", folder,
                    ignore=shutil.ignore_patterns("terminal.typescript"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(folder)
    c = largest_change(inc)
    assert c.first_ref.startswith("logs/hf_train.log:") and c.at_ref.startswith("logs/hf_train2.log:")
    assert 2.0 <= c.ratio <= 2.5
    assert 201 <= c.at_step <= 300
    said = text.what_happened(inc, pm.detect(inc))[0]
    assert f"What its own step times show: from step {c.at_step:.0f} ({c.at_ref}) on, a step took" in said


def test_a_few_dated_lines_whose_steps_grow_slower_are_no_all_clear(tmp_path):
    """MnemonicReader #4: four dated lines, iterations 0, 3, 6 and 9 at 15:14:46, 15:15:16,
    15:17:34 and 15:23:43 (10 s, 46 s, then 123 s an iteration), too few for the pace's windows;
    it had said "Nothing went wrong". The times between the lines are read; the slowdown grows
    at every line, so the few steps each covers are no noise of one save. Each interval stands at
    the line that closes it, as a bar's does: the slower stretch from iteration 6's line."""
    inc = _load(tmp_path, "mnemonicreader-drqa-style-iter-elapsed-13s-to-550s-slowdown.log")
    said = text.what_happened(inc, pm.detect(inc))[0]
    assert said.startswith("Training seen between 15:14:46 UTC and 15:23:43 UTC (4 dated step lines), too few to judge "
                           "its pace by windows of them; the times between them show it: from step 6 (")
    assert "a step took 84.5 s, against 10 s before (" in said and "8.4x as long (by the times of its lines)" in said


def test_a_few_dated_lines_at_one_pace_are_an_all_clear(tmp_path):
    """The same four lines at 10 s an iteration throughout: nothing to tell."""
    line = "08/11/2018 03:{} PM: [ train: Epoch = 0 | iter = {}/23 | loss = 11.33 | elapsed time = 1.0 (s) ]\n"
    (tmp_path / "steady.log").write_text("".join(line.format(at, it) for at, it in (
        ("14:46", 0), ("15:16", 3), ("15:46", 6), ("16:16", 9))), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    assert text.what_happened(inc, pm.detect(inc))[0].startswith("Nothing went wrong that the evidence shows between "
                                                                  "15:14:46 UTC and 15:16:16 UTC")


def test_an_interval_that_held_an_evaluation_is_no_pace_of_the_few_dated_lines(tmp_path):
    """BasicSR at iterations 3800-4200: 60 s a hundred iterations, then an hour's validation
    (its PSNR logged at 14:29:46, line 5) before iteration 4100, then 27.5 min a hundred: the
    interval that held the validation is left out, the slowdown after it is 16.7 s against 0.599 s
    an iteration."""
    inc = _load(tmp_path, "basicsr-style-100iter-2min-then-25min-after-validation-at-bsn.log")
    said = text.what_happened(inc, pm.detect(inc))[0]
    assert "the times between them show it: at step 4200 (" in said
    assert "the last it shows, a step had taken 16.7 s, against 0.599 s before (" in said and "27.9x as long" in said
