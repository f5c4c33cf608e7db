"""A folder read as it grows (loaders/following.py) is the folder a fresh read gives, at every
moment: recorded incidents grown again line by line, read at each moment by one GrowingFolder that
keeps what it read, and compared with a fresh `read_folder` of the same files."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from support.growing import grow, moments

from dflash_postmortem import schema
from dflash_postmortem.loaders.folder import read_folder
from dflash_postmortem.loaders.following import GrowingFolder

INCIDENTS = Path(__file__).resolve().parents[2] / "data" / "incidents"


def _same(followed, fresh, when: str) -> None:
    for name in schema.FRAME_NAMES:
        pd.testing.assert_frame_equal(getattr(followed, name), getattr(fresh, name), obj=f"{name} at {when}")
    assert [_account(f) for f in followed.load_report.files] == [_account(f) for f in fresh.load_report.files], when
    assert followed.load_report.notes == fresh.load_report.notes, when
    assert followed.runs.keys() == fresh.runs.keys(), when


def _account(rep) -> dict:
    """A file's account; its assumptions in any order (a stream read on lists each where the
    chunk that first needed it was read)."""
    plain = rep.to_plain()
    plain["assumptions"] = sorted(plain["assumptions"])
    return plain


# a session with an nvidia-smi stream and rank logs; wandb run folders whose files grow inside
# them; a torchrun agent's log, whose run is named for its file
@pytest.mark.parametrize("incident", ["h200-1gpu-watched-relaunch", "h200-2gpu", "h200-1gpu-torchrun-halt", "h200-1gpu-stall-crash"])
def test_a_growing_folder_reads_as_a_fresh_read_at_every_moment(incident, tmp_path):
    src, folder = INCIDENTS / incident, tmp_path / incident
    reader = GrowingFolder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for when in [*moments(src, 5), None]:
            grow(src, folder, when)
            followed = read_folder(folder, reader=reader, sniffed=reader.sniffed)
            _same(followed, read_folder(folder), when or "the end")
    # the streams were read on from where they stopped, not again from their start
    assert reader.reads["resumed"] >= 4, reader.reads


def test_a_stream_rewritten_from_its_start_is_read_whole_again(tmp_path):
    """A capture restarted with `>` over the old one: nothing of the old file is kept."""
    src = INCIDENTS / "h200-2gpu" / "logs" / "smi_stream.csv"
    lines = src.read_text().splitlines(keepends=True)
    smi = tmp_path / "smi.csv"
    reader = GrowingFolder()
    assert len(lines) > 560
    smi.write_text("".join(lines[:300]))
    read_folder(tmp_path, reader=reader, sniffed=reader.sniffed)
    for what, kept in (("shorter than what was read", lines[300:400]), ("longer, not the same bytes", lines[250:560])):
        smi.write_text("".join([lines[0], *kept]))
        whole = reader.reads["whole"]
        _same(read_folder(tmp_path, reader=reader, sniffed=reader.sniffed), read_folder(tmp_path), what)
        assert reader.reads["whole"] == whole + 1, what
