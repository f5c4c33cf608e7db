"""Memory for the frames a load fills, asked of the kernel in ordinary pages.

numpy asks Linux for transparent huge pages (`madvise(MADV_HUGEPAGE)`) for every array of 4 MiB
or more. Where the kernel's THP defrag setting is `madvise` (the default of many distributions
and cloud images, and of the machines this kit is measured on), the first touch of each such
2 MiB page may stall while the kernel compacts memory to find one: a load that fills hundreds of
MB of new arrays in a fresh process waits on that, not on the evidence. nvidia-smi's week of 1 Hz
query CSV (4.84 M rows, a 689 MB frame) loaded by a fresh process, eight runs paired with the
same load under numpy's huge pages: 1.24 s against 1.60 s (medians; the system time 0.28 s against
0.54 s), docs/benchmarks.md.

Arrow does the same by another road: pyarrow's default pool on Linux is mimalloc, which asks
for huge pages for its arenas (the stall its maintainers trace to THP, microsoft/mimalloc#1323).
The same week of samples, the numpy advice already off, loaded in 0.61 s or in 1.74 s from one
run to the next, the difference all system time; under Arrow's jemalloc (or, in a build without
it, the C library's allocator), which touches ordinary pages, a steady 0.73-0.78 s over six runs
(the C library's 0.76-0.88 s). So a load also takes that pool while it runs, unless the process
chose a pool of its own (anything but mimalloc), which is left alone.

Every source a folder read, the store's ingest or the watch loads (folder.py `_load_one`), a
folder's read as a whole (the sources combined) and `load_nvidia_smi` run inside
`ordinary_pages()`; what the process does outside them is left as it was.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa


def _setter():
    # numpy 2 keeps it in np._core, numpy 1.26 in np.core; a numpy without it has no such advice
    for name in ("_core", "core"):
        setter = getattr(getattr(getattr(np, name, None), "multiarray", None), "_set_madvise_hugepage", None)
        if setter is not None:
            return setter
    return None


class _ArrowPool:
    """Which Arrow pool was the default before the first of the loads now running took the
    steady one; the last of them to finish puts it back (a folder loads its sources in threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loads = 0
        self.before: pa.MemoryPool | None = None

    def take(self) -> None:
        with self.lock:
            if self.loads == 0:
                self.before = pa.default_memory_pool()
                if self.before.backend_name == "mimalloc":
                    pa.set_memory_pool(_steady_pool())
            self.loads += 1

    def give_back(self) -> None:
        with self.lock:
            self.loads -= 1
            if self.loads == 0:
                pa.set_memory_pool(self.before)


def _steady_pool() -> pa.MemoryPool:
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc (Windows, some conda builds)
        return pa.system_memory_pool()


_ARROW_POOL = _ArrowPool()


@contextmanager
def ordinary_pages() -> Iterator[None]:
    """numpy's huge-page advice off and Arrow's steady pool while the block runs, both as they
    were after (nested blocks too)."""
    setter = _setter()
    was = setter(False) if setter is not None else None
    _ARROW_POOL.take()
    try:
        yield
    finally:
        _ARROW_POOL.give_back()
        if setter is not None:
            setter(was)
