"""Every finding's title and detail are written from its numbers (detect/finding_text.py): change
a number and the sentence follows; every declared kind has its sentences."""

from __future__ import annotations

import pytest
from support.bundled import loaded

from dflash_postmortem.detect import finding_text, numbers


def test_every_declared_kind_has_its_sentences():
    assert finding_text.KINDS == set(numbers.BY_KIND)


def _one(name: str, kind: str):
    _, found = loaded(name)
    return found[found["kind"] == kind].iloc[0]


def test_the_title_says_what_the_numbers_say():
    f = _one("h200-2gpu-replay-full", "throughput_regression")
    title, detail = finding_text.written(f["kind"], f["start"], f["end"], f["within_s"], f["numbers"])
    assert (title, detail) == (f["title"], f["detail"])
    assert title == "throughput fell from 21.2K to 13.2K tok/s (0.62 of baseline)"
    halved = dict(f["numbers"], degraded_tok_per_s=10_600.0, ratio=0.5, candidates=[])
    title, detail = finding_text.written(f["kind"], f["start"], f["end"], f["within_s"], halved)
    assert title == "throughput fell from 21.2K to 10.6K tok/s (0.50 of baseline)"
    assert detail.endswith("No root-cause candidate in the evidence.")


def test_a_start_known_roughly_says_so_in_its_title():
    f = _one("h200-2gpu", "failed_restart")
    title, _ = finding_text.written(f["kind"], f["start"], f["end"], 60.0, f["numbers"])
    assert title.startswith("restart at 05:23:01 (up to 60 s later) never came up: ")


def test_a_sentence_cannot_read_a_number_its_kind_does_not_declare():
    f = _one("h200-1gpu-stall", "stall")
    with pytest.raises(AttributeError, match="stall declares no number 'reasons'"):
        _ = finding_text._Finding("stall", f["start"], f["end"], 0.0, f["numbers"]).reasons
