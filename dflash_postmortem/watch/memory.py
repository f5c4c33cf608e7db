"""What the live watch does so that hours of reads cost one read's memory: Arrow's buffers from the
system allocator, big blocks as mappings of their own, free pages given back between reads."""

from __future__ import annotations

import functools

# glibc's mallopt parameter for the size from which an allocation is a mapping of its own.
_M_MMAP_THRESHOLD = -3


def lean_memory() -> None:
    """Give a read's memory back when it is done: a watch reads for hours, and each read's frames
    and temporaries are freed before the next. Arrow's buffers (the frames' text columns) come
    from the system allocator (Arrow's default, mimalloc, keeps their pages), and with glibc
    every block of 128 KiB or more is a mapping of its own (glibc raises that bound as blocks are
    freed, after which big arrays stay in its heap). At an hour of 8 GPUs, benchmarks/bench_watch.py
    hour: peak RSS 294 -> 252 MiB with the first, then (the last read let go before the next,
    live.py) 210 MiB with the second, 194 MiB between reads."""
    import pyarrow as pa  # pandas' own dependency here

    pa.set_memory_pool(pa.system_memory_pool())
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)


def give_back() -> None:
    """Return the heap's free pages to the system (glibc's `malloc_trim`), as the watch does once
    it let go of its last read and before it builds the next: the frees of a read leave pages
    that the next read's blocks do not fit back into (benchmarks/bench_watch.py hour: 2 MiB of
    the peak)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.cache
def _glibc():
    """glibc, where it is the C library (others keep their own ways): None elsewhere."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    return libc if libc is not None and hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
