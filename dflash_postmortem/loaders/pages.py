"""Memory for the frames a load fills, asked of the kernel in ordinary pages.

numpy asks Linux for transparent huge pages (`madvise(MADV_HUGEPAGE)`) for every array of 4 MiB
or more. Where the kernel's THP defrag setting is `madvise` (the default of many distributions
and cloud images, and of the machines this kit is measured on), the first touch of each such
2 MiB page may stall while the kernel compacts memory to find one: a load that fills hundreds of
MB of new arrays in a fresh process waits on that, not on the evidence. nvidia-smi's week of 1 Hz
query CSV (4.84 M rows, a 689 MB frame) loaded by a fresh process, eight runs paired with the
same load under numpy's huge pages: 1.24 s against 1.60 s (medians; the system time 0.28 s against
0.54 s), docs/benchmarks.md.

Every source a folder read, the store's ingest or the watch loads (folder.py `_load_one`), a
folder's read as a whole (the sources combined) and `load_nvidia_smi` run inside
`ordinary_pages()`; what the process does outside them is left as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


def _setter():
    # numpy 2 keeps it in np._core, numpy 1.26 in np.core; a numpy without it has no such advice
    for name in ("_core", "core"):
        setter = getattr(getattr(getattr(np, name, None), "multiarray", None), "_set_madvise_hugepage", None)
        if setter is not None:
            return setter
    return None


@contextmanager
def ordinary_pages() -> Iterator[None]:
    """numpy's huge-page advice off while the block runs, as it was after (nested blocks too)."""
    setter = _setter()
    if setter is None:
        yield
        return
    was = setter(False)
    try:
        yield
    finally:
        setter(was)
