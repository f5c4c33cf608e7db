"""How often Python looks for unreachable cycles while the kit works.

Loading and judging an incident builds many small frames and series; each allocation counts
towards CPython's cyclic collector, which at its default pace (every 700 net allocations) walks
the young objects again and again, and every few rounds the old ones too: the imported modules
of pandas, numpy, pyarrow and the kit, which live as long as the process. Frozen once the imports
are done, and looked at every 50,000 allocations, the collector cost less: load, detect and story
of every bundled incident took 0.954 of the CPU (farm-bench, 4 pairs, ratio 0.93-0.96) at the same
peak memory (docs/benchmarks.md). Reference counting frees almost everything the kit builds; the
collector is for the few cycles, which wait a little longer.
"""

from __future__ import annotations

import gc

# Net allocations between looks at the youngest generation (CPython's default: 700), and how
# many of those looks before each older generation is looked at (default 10 and 10).
THRESHOLDS = (50_000, 20, 20)


def tune() -> None:
    """Move what the process holds now (its imports) out of the collector's reach, and set its
    pace (THRESHOLDS): at the start of a command, in a report's kernel, in a test process once
    its tests are collected; once (a process that calls the CLI again and again, as the tests
    do, freezes only what it held the first time)."""
    if gc.get_threshold() == THRESHOLDS:
        return
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
