"""Terminal text as a terminal showed it (terminal.py)."""

from __future__ import annotations

from dflash_postmortem.loaders.terminal import screen_text


def test_screen_text_replays_what_the_terminal_showed(fixtures_dir):
    """A real `script` recording: OSC title, colours, a typo corrected with backspaces, CRLF."""
    raw = (fixtures_dir / "terminal" / "script-2020-numeric-offset-backspaces.txt").read_bytes().decode().split("\n")[1]
    assert "\x1b" in raw and "\b" in raw and raw.endswith("\r")
    assert screen_text(raw) == "usr1@host01:~/214/labs/07$ cat NameTester.rb"
    assert screen_text("epoch 1 10%\repoch 1 100%\x1b[K") == "epoch 1 100%"
