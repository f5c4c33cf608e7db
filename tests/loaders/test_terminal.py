"""Terminal text as a terminal showed it (terminal.py)."""

from __future__ import annotations

import pytest

from dflash_postmortem.loaders.terminal import ESCAPES, screen_text


def test_screen_text_replays_what_the_terminal_showed(fixtures_dir):
    """A real `script` recording: OSC title, colours, a typo corrected with backspaces, CRLF."""
    raw = (fixtures_dir / "terminal" / "script-2020-numeric-offset-backspaces.txt").read_bytes().decode().split("\n")[1]
    assert "\x1b" in raw and "\b" in raw and raw.endswith("\r")
    assert screen_text(raw) == "usr1@host01:~/214/labs/07$ cat NameTester.rb"
    assert screen_text("epoch 1 10%\repoch 1 100%\x1b[K") == "epoch 1 100%"


@pytest.mark.parametrize("raw, text", [
    ("\x1b[1;31mError\x1b[0m: CUDA out of memory", "Error: CUDA out of memory"),  # colours (CSI)
    ("\x1b[?25l 45%|####5     | 450/1000\x1b[?25h", " 45%|####5     | 450/1000"),  # cursor hidden, shown
    ("\x1b]0;user@host: ~/train\x07$ nohup python train.py", "$ nohup python train.py"),  # title, BEL
    ("see \x1b]8;;file:///tmp/x.log\x1b\\x.log\x1b]8;;\x1b\\ now", "see x.log now"),  # hyperlink, ESC \
    ("\x1b=\x1b>step 10", "step 10"),  # keypad modes (two-byte)
    ("cut off \x1b]0;title that never ends", "cut off "),  # an OSC the line's end cut
])
def test_escapes_drop_every_sequence_and_keep_the_text(raw, text):
    assert ESCAPES.sub("", raw) == text
