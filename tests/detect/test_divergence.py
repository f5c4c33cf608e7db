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
