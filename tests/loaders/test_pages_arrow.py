"""A load allocates Arrow's buffers from a pool that does not ask for transparent huge pages
(loaders/pages.py), and gives the process its own pool back afterwards, also when loads overlap
in threads."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

import dflash_postmortem as pm
from dflash_postmortem.loaders import pages
from dflash_postmortem.loaders.nvidia_smi import query_csv


@pytest.fixture
def mimalloc_default():
    before = pa.default_memory_pool()
    try:
        pa.set_memory_pool(pa.mimalloc_memory_pool())
    except NotImplementedError:
        pytest.skip("this pyarrow has no mimalloc")
    yield
    pa.set_memory_pool(before)


def test_a_read_takes_the_steady_pool_and_gives_it_back(mimalloc_default, bundled_dir, monkeypatch):
    seen = []
    real = query_csv.read_fast
    monkeypatch.setattr(query_csv, "read_fast", lambda *a: seen.append(pa.default_memory_pool().backend_name) or real(*a))
    inc = pm.load_nvidia_smi(bundled_dir / "logs" / "smi_stream.csv")
    assert len(inc.gpus) == 580
    assert seen and seen[0] in ("jemalloc", "system")
    assert pa.default_memory_pool().backend_name == "mimalloc"


def test_overlapping_reads_restore_the_pool_once_the_last_ends(mimalloc_default):
    first_in, second_out = threading.Event(), threading.Event()
    inside = []

    def long_read():
        with pages.ordinary_pages():
            first_in.set()
            second_out.wait(10)
            inside.append(pa.default_memory_pool().backend_name)

    t = threading.Thread(target=long_read)
    t.start()
    first_in.wait(10)
    with pages.ordinary_pages():
        pass  # a short read ends while the long one still runs
    second_out.set()
    t.join()
    assert inside[0] != "mimalloc"
    assert pa.default_memory_pool().backend_name == "mimalloc"


def test_a_pool_the_caller_chose_is_left_alone():
    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        with pages.ordinary_pages():
            assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(before)
