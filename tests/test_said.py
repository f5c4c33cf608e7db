"""said.error_text: the words of an error as a sentence quotes them."""

from dflash_postmortem.said import error_text

# torch's message for a checkpoint cut short (h200-1gpu-hangup's logs/train2.log), 345 characters
CUT_CHECKPOINT = (
    "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory. This is an "
    "internal miniz error. If you are seeing this error, there is a high likelihood that your checkpoint file is "
    "corrupted. This can happen if the checkpoint was not saved properly, was transferred incorrectly, or the file "
    "was modified after saving.")


def test_a_long_error_is_cut_at_a_word_and_says_so():
    traceback = "Traceback (most recent call last):\n  File \"x.py\", line 1\n" + CUT_CHECKPOINT
    assert error_text(traceback, "traceback") == CUT_CHECKPOINT  # whole, under the default 600
    said = error_text(traceback, "traceback", limit=300)
    assert len(CUT_CHECKPOINT) > 300 and len(said) <= 300
    assert said == CUT_CHECKPOINT[:said.index("…")] + "…"
    assert said.endswith("not saved properly, was…")


def test_a_short_error_is_whole():
    assert error_text("[E ProcessGroupNCCL.cpp:464] Watchdog caught collective operation timeout") == \
        "Watchdog caught collective operation timeout"
    assert error_text("x" * 600) == "x" * 600
    assert error_text("x" * 601).endswith("…") and len(error_text("x" * 601)) == 600  # no word to cut at
