"""How `detect` grows with the evidence: the bundled incident repeated 1, 10 and 100 times.

    .venv/bin/python benchmarks/bench_detect.py [--incident data/incidents/h200-2gpu] [--times 1 10 100]

The incident is loaded once; copy k of it is the same frames with every time shifted by k x (its
span + 10 minutes), its runs, PIDs and sources renamed, so that k copies are k incidents one
after another on one clock, as a long night with many restarts looks. `detect` runs on each
size; the growth exponent between the two largest sizes is log(t2 / t1) / log(n2 / n1) (1.0 is
linear). The same process also times `load_incident` once, per MB of input, as the baseline the
detection cost is compared with.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from pathlib import Path

import pandas as pd

import dflash_postmortem as pm
from dflash_postmortem import schema
from dflash_postmortem.incident import Incident, RunInfo

REPO = Path(__file__).resolve().parents[1]


def repeated(inc: Incident, k: int) -> Incident:
    """`k` copies of an incident, one after another on one clock."""
    first, last = inc.span()
    step = (last - first) + pd.Timedelta(minutes=10)
    out = Incident(config=inc.config, root=inc.root)
    for name in schema.FRAME_NAMES:
        df = getattr(inc, name)
        parts = []
        for i in range(k):
            c = df.copy()
            for col in ("time", "first_seen", "last_seen", "started"):
                if col in c.columns:
                    c[col] = c[col] + step * i
            if i:
                # Copy i's files lie in a folder of their own (file names, which launches are
                # matched by, stay the same); its runs get a suffix.
                if "run" in c.columns:
                    c["run"] = c["run"].astype("string") + f"~{i}"
                for col in ("source", "ref", "command_ref", "launch_ref"):
                    if col in c.columns:
                        c[col] = f"copy{i}/" + c[col].astype("string")
                for col in ("pid", "ppid", "pgid", "target_pid"):
                    if col in c.columns:
                        c[col] = c[col] + 100_000 * i
            parts.append(c)
        setattr(out, name, schema.conform(name, pd.concat(parts, ignore_index=True)))
    for i in range(k):
        for key, info in inc.runs.items():
            new = key if not i else f"{key}~{i}"
            out.runs[new] = RunInfo(**{**info.__dict__, "run": new})
    return out


def timed(fn, *a):
    t0 = time.perf_counter()
    result = fn(*a)
    return result, time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--incident", default=str(REPO / "data" / "incidents" / "h200-2gpu"))
    p.add_argument("--times", type=int, nargs="+", default=[1, 10, 100])
    args = p.parse_args()
    folder = Path(args.incident)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inc, load_s = timed(pm.load_incident, folder)
    print(f"{folder.name}: {size / 1e6:.2f} MB, load_incident {load_s:.2f} s ({size / 1e6 / load_s:.2f} MB/s)")
    rows = []
    for k in args.times:
        big = repeated(inc, k)
        n = sum(len(getattr(big, f)) for f in schema.FRAME_NAMES)
        found, s = timed(pm.detect, big)
        rows.append((k, n, s, len(found)))
        same = "" if len(found) == k * rows[0][3] // rows[0][0] else "  (NOT k x the findings of one copy)"
        print(f"x{k:<4} {n:>9} rows  detect {s:7.2f} s  {len(found):4d} findings  {s / k * 1000:7.1f} ms per copy{same}")
    if len(rows) >= 2:
        (k1, n1, t1, _), (k2, n2, t2, _) = rows[-2], rows[-1]
        print(f"growth exponent x{k1} -> x{k2}: {math.log(t2 / t1) / math.log(n2 / n1):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
