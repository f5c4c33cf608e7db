"""Several reports in one command against one command each: `dflash-postmortem report A B C`
(the kernels start once and serve every report) paired with `report A`, `report B`, `report C`
run one after another (each starts its own), in one run.

    .venv/bin/python benchmarks/bench_reports_shared.py [--pairs 3] [INCIDENT ...]

Both start from the same warm cache of loaded incidents (a first, untimed run fills it), so the
pair differs only in how often kernels start. Prints each pair's wall and CPU seconds (the
children's: the kernels and the CLI) and the median ratio shared / separate.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "dflash_postmortem.cli", "report", "--no-progress"]
DEFAULT = ["h200-1gpu-stall", "h200-2gpu", "h200-1gpu-crash-loop"]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(commands: list[list[str]]) -> tuple[float, float]:
    """Wall and CPU seconds of the commands run one after another."""
    c0, t0 = _children_cpu(), time.perf_counter()
    for argv in commands:
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, _children_cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("incidents", nargs="*", default=DEFAULT, help="bundled incident names")
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    dirs = [str(REPO / "data" / "incidents" / n) for n in args.incidents]
    with tempfile.TemporaryDirectory() as tmp:
        shared = [[*CLI, *dirs, "-o", f"{tmp}/shared"]]
        separate = [[*CLI, d, "-o", f"{tmp}/separate/{Path(d).name}"] for d in dirs]
        _timed(shared)  # fills the cache of loaded incidents for both
        ratios = []
        for k in range(args.pairs):
            order = [("shared", shared), ("separate", separate)][:: 1 if k % 2 == 0 else -1]
            got = {name: _timed(cmds) for name, cmds in order}
            ratios.append((got["shared"][0] / got["separate"][0], got["shared"][1] / got["separate"][1]))
            print(f"pair {k + 1}: shared {got['shared'][0]:.1f} s wall {got['shared'][1]:.1f} s CPU; "
                  f"separate {got['separate'][0]:.1f} s wall {got['separate'][1]:.1f} s CPU")
    wall, cpu = statistics.median(r[0] for r in ratios), statistics.median(r[1] for r in ratios)
    print(f"{len(dirs)} reports, median ratio shared / separate: wall {wall:.2f}, CPU {cpu:.2f}")


if __name__ == "__main__":
    main()
