"""Change points of a signal's mean: PELT on the l2 cost, in numpy.

The l2 cost of a segment is its sum of squared deviations from its own mean; the best
segmentation minimizes the sum of segment costs plus `pen` per change point (Killick, Fearnhead
& Eckley 2012). This is the search `ruptures.KernelCPD(kernel="linear").predict(pen=...)` does
(the kit used it until the import of ruptures and scipy.stats, ~1.8 s, became most of a
report's start-up); tests/detect/test_changepoints.py checks both give the same breakpoints. The
best single step of a signal (`best_step`) is the same cost's, for the pace that fell from a
start's first lines to its last (progress.py `falling`).

A long signal is searched on a grid of every `jump`-th sample (the exact l2 cost of the samples
between grid points, from cumulative sums), then each breakpoint is moved to the sample within
one grid step that splits its neighbours best: the search stays ~`max_points` steps whatever
the length of the signal.
"""

from __future__ import annotations

import numpy as np


def breakpoints(signal: np.ndarray, pen: float, min_size: int, max_points: int) -> list[int]:
    """End indices of the segments (the last is `len(signal)`), PELT with penalty `pen`,
    segments of at least `min_size` samples; grid then local refinement past `2 * max_points`
    samples."""
    x = np.asarray(signal, dtype=float)
    # Costs are differences of cumulative sums: centring first keeps them from cancelling out.
    x = x - x.mean() if len(x) else x
    n = len(x)
    jump = max(1, n // max_points)
    csum = np.concatenate([[0.0], np.cumsum(x)])
    csq = np.concatenate([[0.0], np.cumsum(x * x)])
    grid = np.unique(np.append(np.arange(0, n, jump), n))
    bkps = _pelt(grid, csum, csq, pen, max(min_size, jump))
    if jump > 1:
        bkps = _refine(csum, csq, bkps, jump, min_size)
    return bkps


def best_step(signal: np.ndarray, min_size: int) -> tuple[int, float]:
    """The one breakpoint that splits the signal best, each side `min_size` samples at the least
    (`len(signal) >= 2 * min_size`): its index and the l2 cost of the two sides."""
    x = np.asarray(signal, dtype=float)
    x = x - x.mean()
    n = len(x)
    csum = np.concatenate([[0.0], np.cumsum(x)])
    csq = np.concatenate([[0.0], np.cumsum(x * x)])
    at = np.arange(min_size, n - min_size + 1)
    costs = _cost(csum, csq, 0, at) + _cost(csum, csq, at, n)
    return int(at[np.argmin(costs)]), float(costs.min())


def _cost(csum: np.ndarray, csq: np.ndarray, a, b):
    """l2 cost of samples [a, b): sum of squares less n times the squared mean."""
    total = csum[b] - csum[a]
    return csq[b] - csq[a] - total * total / (b - a)


def _pelt(grid: np.ndarray, csum: np.ndarray, csq: np.ndarray, pen: float, min_size: int) -> list[int]:
    """Optimal partition of the samples with breakpoints on `grid` (sample indices, 0 and n
    included). A candidate start s is dropped once F(s) + cost(s, t) >= F(t): no later end can
    prefer it (the l2 cost of a segment is never less than that of its two halves)."""
    m = len(grid)
    best = np.zeros(m)  # F: least penalized cost of the samples before grid[i]
    last = np.zeros(m, dtype=int)  # the grid index where that segmentation's last segment starts
    best[0] = -pen
    alive = np.empty(0, dtype=int)  # grid indices of candidate starts still worth trying
    waiting = 0  # the next grid index not yet a candidate (its segment is still too short)
    for i in range(1, m):
        t = grid[i]
        while waiting < i and t - grid[waiting] >= min_size:
            if waiting == 0 or grid[waiting] >= min_size:  # the first segment is min_size long too
                alive = np.append(alive, waiting)
            waiting += 1
        if not len(alive):
            # no split can leave both parts min_size long: one segment from the start
            best[i] = _cost(csum, csq, 0, t) if t else 0.0
            last[i] = 0
            continue
        starts = grid[alive]
        total = best[alive] + _cost(csum, csq, starts, t)
        k = int(np.argmin(total))  # the first of equal minima, as ruptures takes it
        best[i] = total[k] + pen
        last[i] = alive[k]
        alive = alive[total < best[i]]
    out = []
    i = m - 1
    while i > 0:
        out.append(int(grid[i]))
        i = last[i]
    return out[::-1]


def _refine(csum: np.ndarray, csq: np.ndarray, bkps: list[int], jump: int, min_size: int) -> list[int]:
    """Move each breakpoint found on the grid to the sample within one grid step that splits its
    two neighbouring segments with the least squared error."""
    out = list(bkps)
    for k in range(len(out) - 1):
        lo = out[k - 1] if k else 0
        hi = out[k + 1]
        cands = np.arange(max(lo + min_size, out[k] - jump), min(hi - min_size, out[k] + jump) + 1)
        if len(cands):
            split = _cost(csum, csq, lo, cands) + _cost(csum, csq, cands, hi)
            out[k] = int(cands[int(np.argmin(split))])
    return out
