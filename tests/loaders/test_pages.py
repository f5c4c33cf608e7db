"""Loads ask for ordinary pages (loaders/pages.py): numpy's huge-page advice is off while a source
loads and as it was once the load is over, whatever it was before and however the load ends."""

from __future__ import annotations

import numpy as np
import pytest

from dflash_postmortem.loaders import pages
from dflash_postmortem.loaders.folder import read_folder

SET = pages._setter()
pytestmark = pytest.mark.skipif(SET is None, reason="this numpy gives no huge-page advice to turn off")


@pytest.fixture
def advice():
    was = SET(True)
    yield
    SET(was)


def _advised() -> bool:
    now = SET(True)  # the setter answers the value it replaces
    SET(now)
    return now


def test_a_folder_loads_without_the_advice_and_gives_it_back(advice, tmp_path, monkeypatch):
    (tmp_path / "smi.csv").write_text("timestamp, index, memory.used [MiB]\n"
                                      "2026/12/04 06:00:00.000, 0, 10 MiB\n")
    seen = []
    real = np.arange

    def watching(*args, **kwargs):  # the nvidia-smi reader numbers its lines with np.arange
        seen.append(_advised())
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "arange", watching)
    inc = read_folder(tmp_path)
    monkeypatch.undo()
    assert len(inc.gpus) == 1 and seen and not any(seen)
    assert _advised()


def test_the_advice_comes_back_after_a_load_that_raises_and_in_nested_blocks(advice):
    with pytest.raises(RuntimeError), pages.ordinary_pages():
        assert not _advised()
        raise RuntimeError("a loader's bug")
    assert _advised()
    SET(False)
    with pages.ordinary_pages():
        with pages.ordinary_pages():
            assert not _advised()
        assert not _advised()
    assert not _advised()
