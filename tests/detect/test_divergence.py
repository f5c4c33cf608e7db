"""A loss or gradient norm that stops being a number (detect/divergence.py), on public samples
the story told before as if nothing had gone wrong with the training itself."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import dflash_postmortem as pm

REAL_WORLD = Path(__file__).resolve().parents[1] / "fixtures" / "real-world"


def _told(tmp_path, name):
    shutil.copy(REAL_WORLD / name, tmp_path / Path(name).name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    return inc, found, found[found["kind"] == "loss_not_finite"]


def test_a_loss_that_became_nan_and_stayed(tmp_path):
    """nanoGPT on a phone: `iter 425: loss nan` and every line after; it was 3.502 at 420."""
    inc, found, lost = _told(tmp_path, "train-log/nanogpt-termux-mfu-sentinel-nan.log")
    assert len(lost) == 1
    f = lost.iloc[0]
    n = f["numbers"]
    assert (n["metric"], n["step"], n["value"], n["last_finite_step"], n["finite_after"]) == (
        "train/loss", 425, "nan", 420, False)
    assert n["last_finite_value"] == 3.5023 and n["lines_after"] == 5 and f["severity"] == "critical"
    assert f["evidence"] == ["nanogpt-termux-mfu-sentinel-nan.log:104", "nanogpt-termux-mfu-sentinel-nan.log:103",
                             "nanogpt-termux-mfu-sentinel-nan.log:109"]
    assert pm.what_happened(inc, found) == [
        "The loss of run nanogpt-termux-mfu-sentinel-nan stopped being a number at step 425 (it was 3.502 at step 420) and "
        "stayed so to the end of the log (5 more lines)."]
    # its `mfu -100.00%` (a sentinel read as NaN) is no such metric
    assert set(lost["numbers"].map(lambda x: x["metric"])) == {"train/loss"}


def test_a_grad_norm_that_is_nan_beside_a_zero_loss(tmp_path):
    """LLaMA-Factory's `{'loss': 0.0, 'grad_norm': nan, ...}` from its second line on."""
    _, _, lost = _told(tmp_path, "train-log/llamafactory-v091-glm4-gradnorm-nan.log")
    n = lost.iloc[0]["numbers"]
    assert (n["metric"], n["value"], n["lines_not_finite"], n["finite_after"]) == ("train/grad_norm", "nan", 3, False)
    assert lost.iloc[0]["evidence"][0] == "llamafactory-v091-glm4-gradnorm-nan.log:2"


def test_finite_losses_say_nothing(tmp_path):
    _, _, lost = _told(tmp_path, "train-log/detectron2-balloon-maskrcnn-plain.log")
    assert lost.empty


def test_a_grad_norm_that_is_nan_beside_a_loss_that_learns_is_no_divergence(tmp_path):
    """A gradient norm that stays NaN while the loss stays a number and falls (a norm a sharded or
    offloaded optimizer does not measure, or overflows the scaler skips) is a warning and told so;
    beside a loss stuck at 0.0 (LLaMA-Factory's, above) it is the run broken."""
    (tmp_path / "hf").mkdir()
    log = tmp_path / "hf" / "hf.log"
    log.write_text("".join(
        f"{{'loss': {loss}, 'grad_norm': {gn}, 'learning_rate': 1e-05, 'epoch': {e}}}\n"
        for loss, gn, e in (("2.61", "3.5", "0.1"), ("2.55", "nan", "0.2"), ("2.52", "nan", "0.3"), ("2.47", "nan", "0.4"))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path / "hf")
    found = pm.detect(inc)
    lost = found[found["kind"] == "loss_not_finite"]
    assert len(lost) == 1 and lost.iloc[0]["severity"] == "warning"
    n = lost.iloc[0]["numbers"]
    assert n["metric"] == "train/grad_norm" and n["loss_learning"]["from"] == 2.55 and n["loss_learning"]["to"] == 2.47
    told = pm.what_happened(inc, found)[0]
    assert "but its loss stayed a number and moved on, 2.55" in told and "not a diverged one" in told
    (tmp_path / "zero").mkdir()
    _, _, zero = _told(tmp_path / "zero", "train-log/llamafactory-v091-glm4-gradnorm-nan.log")
    assert zero.iloc[0]["severity"] == "critical" and zero.iloc[0]["numbers"]["loss_learning"] is None


def _written(tmp_path, text: str):
    (tmp_path / "train.log").write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc = pm.load_incident(tmp_path)
    found = pm.detect(inc)
    return inc, found, found[found["kind"] == "loss_not_finite"]


_MEGATRON = (" iteration {i}/ 100 | consumed samples: {s} | elapsed time per iteration (ms): 1234.5 | lm loss: {loss} | "
             "loss scale: {scale} |\n")


def test_a_number_that_came_back_is_an_overflows_skipped_step_only_where_the_run_scales_its_loss(tmp_path):
    """A loss that is `nan` on one line and a number after it: where the log shows its run scaling
    its loss (Megatron's `loss scale`, halved at the overflow), the step was skipped as an fp16
    overflow skips it; where nothing does (Lightning's bars of BGU-CS-VIL/DeepDPM #51, a `nan` in
    epoch 0 and `0` in epoch 44), nothing says why (it said "skipped steps, as an fp16 overflow
    skips them" of a run with no fp16 in it)."""
    lines = [_MEGATRON.format(i=i, s=i * 64, loss=loss, scale=scale)
             for i, loss, scale in ((10, "2.1", "1024.0"), (20, "nan", "512.0"), (30, "2.0", "512.0"))]
    scaled = tmp_path / "scaled"
    scaled.mkdir()
    inc, found, lost = _written(scaled, "".join(lines))
    n = lost.iloc[0]["numbers"]
    assert (n["step"], n["finite_after"], n["loss_scaled"]) == (20, True, True)
    assert pm.what_happened(inc, found)[0].endswith("stopped being a number at step 20 (it was 2.1 at step 10): a "
                                                    "finite value came back later (skipped steps).")
    plain = tmp_path / "plain"
    plain.mkdir()
    inc, found, lost = _told(plain, "train-log/lightning-deepdpm-mnist-loss-nan-stuck-at-epoch-44.log")
    n = lost.iloc[0]["numbers"]
    assert (n["finite_after"], n["loss_scaled"]) == (True, False)
    assert pm.what_happened(inc, found)[0].endswith("stopped being a number at step 547: a finite value came back later.")
    assert "fp16" not in lost.iloc[0]["detail"]
