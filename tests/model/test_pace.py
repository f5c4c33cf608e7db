"""The job's pace (model/pace.py) on incidents recorded on an H200: tokens per second where the
trainer logs them; steps per second from the step counter where it does not, checked against
the rate the trainer's own progress bar printed."""

from __future__ import annotations

import numpy as np
from support.bundled import loaded

from dflash_postmortem.model.pace import PACE_S, _counted, model_changed, pace_rows, step_grew, unit
from dflash_postmortem.model.progress import falling, progress
from dflash_postmortem.model.step_lines import step_lines
from dflash_postmortem.schema import STEPS_PER_S, TOK_PER_S


def test_a_trainer_that_logs_tokens_is_measured_in_tokens():
    inc = loaded("h200-1gpu-stall")[0]
    rows = pace_rows(inc)
    assert unit(inc) == "tok/s"
    logged = inc.metrics[(inc.metrics["metric"] == TOK_PER_S) & inc.metrics["value"].notna()]
    assert len(rows) == len(logged) > 0
    assert set(rows["metric"]) == {TOK_PER_S}


def test_a_trainer_that_logs_steps_only_is_measured_from_its_step_counter():
    # transformers.Trainer under accelerate: a tqdm bar of steps (its it/s printed), a loss every
    # 10 steps, TensorBoard; no tokens anywhere
    inc = loaded("h200-1gpu-hf-oom-resume")[0]
    assert unit(inc) == "steps/s"
    rows = pace_rows(inc)
    assert set(rows["metric"]) == {STEPS_PER_S}
    log = rows[rows["source"] == "logs/hf_train.log"]
    # one row per interval of at least PACE_S, each closing on a later step than the one before
    gaps = log["time"].diff().dt.total_seconds().dropna()
    assert (gaps >= PACE_S).all() and log["step"].is_monotonic_increasing
    # the counted pace agrees with the bar's own it/s (the bar smooths; the counter does not)
    bar = inc.metrics[(inc.metrics["source"] == "logs/hf_train.log") & (inc.metrics["metric"] == "train/it_per_s")]
    assert abs(np.median(log["value"]) / np.median(bar["value"]) - 1) < 0.1
    # and the attempts' levels are in it: the first run and its resume, both about 8 steps/s
    levels = progress(inc).groupby("attempt")["level"].median()
    assert len(levels) == 2 and ((levels > 6) & (levels < 10)).all()


def test_a_counter_that_goes_back_starts_a_new_interval():
    # the two runs' bars as one log would hold them (a supervisor appending both to one file): the
    # resume's bar starts again at 200 after the first run reached 249; no interval spans the two
    inc = loaded("h200-1gpu-hf-oom-resume")[0]
    lines = step_lines(inc)
    both = lines[lines["source"].isin(["logs/hf_train.log", "logs/hf_resume.log"])].assign(source="logs/one.log")
    rates = _counted(both)
    # one spanning the 50 s between the runs would count 226 -> 244 as 0.4 steps/s
    assert rates["time"].diff().dt.total_seconds().max() > 45
    assert ((rates["value"] > 4) & (rates["value"] < 10)).all()


def test_a_steps_size_is_read_from_the_settings_that_size_it():
    """A step's work by its batch and the batches it accumulates, as the launch flags name them
    (dashes or underscores, any prefix): half the batch and twice the accumulation is the same
    step; a size one launch names and the other leaves to the program's default is unknown."""
    hf = {"--per_device_train_batch_size": "8", "--gradient_accumulation_steps": "1", "--bf16": "true"}
    assert step_grew(hf, {**hf, "--per_device_train_batch_size": "4", "--gradient_accumulation_steps": "2",
                          "--gradient_checkpointing": "true"}) == 1.0
    assert step_grew({"--batch-size": "32"}, {"--batch_size": "64"}) == 2.0
    assert step_grew({"--bs": "16", "--lr": "1e-4"}, {"--bs": "16", "--lr": "3e-4"}) == 1.0
    assert step_grew({"--patience": "3"}, {"--patience": "10", "--batch": "2097152"}) is None
    assert step_grew({"--batch": "auto"}, {"--batch": "8"}) is None
    assert step_grew(None, {"--batch": "8"}) == step_grew({}, {"--batch": "8"}) == 1.0  # no launch known


def test_a_change_of_model_is_read_from_the_settings_that_size_it():
    """Two starts of unlike models (a wider `--n-embd`, more `--draft-layers`, Hugging Face's
    `--model_name_or_path`): their tokens a second compare unlike work. How a layer runs
    (`--draft-layer-ckpt`), the learning rate or a batch size the pace weighs apart size no model."""
    nano = {"--n-layer": "12", "--n-embd": "768", "--lr": "3e-4"}
    assert model_changed(nano, {**nano, "--n-embd": "1024"})
    assert model_changed({"--draft-layers": "1"}, {"--draft_layers": "2"})
    assert model_changed({"--model_name_or_path": "gpt2"}, {"--model_name_or_path": "gpt2-medium"})
    assert not model_changed({"--draft-layer-ckpt": "0"}, {"--draft-layer-ckpt": "1"})
    assert not model_changed(nano, {**nano, "--lr": "1e-4", "--batch-size": "64"})
    assert not model_changed(None, nano) and not model_changed({"--n-embd": "768"}, {"--n_embd": "768"})


def test_a_steps_size_on_a_real_launch_line_leaves_the_evaluations_batch_out(fixtures_dir):
    """DeepSpeed-Chat's launch as its launcher printed it (train-log/deepspeed-sigkill-return-code-9-opt125m.log
    line 2: `--per_device_train_batch_size 2 --per_device_eval_batch_size 8
    --gradient_accumulation_steps 1`): a relaunch with another evaluation batch trains the same
    steps; one with twice the training batch, steps twice the size. LightningCLI's dotted keys
    name the same settings."""
    import ast

    from dflash_postmortem.shell_words import flags_of

    line = (fixtures_dir / "train-log" / "deepspeed-sigkill-return-code-9-opt125m.log").read_text().splitlines()[1]
    argv = ast.literal_eval(line[line.index("['"):line.index("']") + 2])  # the command as a list
    flags = flags_of(" ".join(argv[3:]))
    assert flags["--per_device_train_batch_size"] == "2" and flags["--per_device_eval_batch_size"] == "8"
    assert step_grew(flags, {**flags, "--per_device_eval_batch_size": "16"}) == 1.0
    assert step_grew(flags, {**flags, "--per_device_train_batch_size": "4"}) == 2.0
    assert step_grew({"--data.batch_size": "32", "--trainer.accumulate_grad_batches": "1"},
                     {"--data.batch_size": "32", "--trainer.accumulate_grad_batches": "4"}) == 4.0


def test_falling_tells_a_slide_from_a_step_and_from_noise():
    """progress.falling on rates in time order: 40 lines that lose 1 % each (a slide: the line
    through them fits better than one step; it had fallen 15 % below its first lines' level by line
    17 or so), 20 at 50K then 20 at 40K (one step, at line 20), the same step with a start's first
    interval at 300K before it (held within the rest's spread: no step there), the same noise
    about one level (nothing), and a slide of 10 % in all (less than min_drop: nothing)."""
    noise = np.array([0.02, -0.01, 0.015, -0.02, 0.0, 0.01, -0.015, 0.02, -0.005, -0.01] * 4)
    slide = falling(50_000 * 0.99 ** np.arange(40) * (1 + noise), 0.15)
    assert slide.gradual and 16 <= slide.at <= 20
    assert 48_000 < slide.before < 50_000 and 34_000 < slide.after < 36_000
    step = falling(np.r_[np.full(20, 50_000.0), np.full(20, 40_000.0)] * (1 + noise), 0.15)
    assert not step.gradual and step.at == 20 and round(step.before, -3) == 50_000 and round(step.after, -3) == 40_000
    burst = np.r_[300_000.0, np.full(19, 50_000.0), np.full(20, 40_000.0)] * (1 + noise)
    assert falling(burst, 0.15).at == 20
    assert falling(50_000 * (1 + noise), 0.15) is None
    assert falling(50_000 * np.linspace(1, 0.9, 40) * (1 + noise), 0.15) is None
