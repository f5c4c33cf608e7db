"""Loading a week of 1 Hz nvidia-smi query CSV from 8 GPUs into the typed `gpus` frame.

    .venv/bin/python benchmarks/bench_smi_csv.py [--days 7] [--repeat 3]

Generates benchmarks/_data/smi_7d_8gpu.csv once (about 4.8 M rows, 210 MB: the default
`--format=csv` with units, as `nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu
-l 1` writes it), then times, each in a fresh subprocess so peak memory is its own:

- baseline: plain pandas.read_csv, unit stripping with .str, to_datetime with the fixed format;
- ours: pm.load_nvidia_smi (pyarrow fast path, with line accounting and the canonical schema).

Peak memory is the rise of the process's peak RSS (VmHWM) over its RSS before loading; the final
frame is DataFrame.memory_usage(deep=True). Prints a table and the speed ratio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "_data"
HEADER = "timestamp, index, memory.used [MiB], utilization.gpu [%]"


def generate(days: int, gpus: int = 8) -> Path:
    import numpy as np
    import pandas as pd

    path = DATA / f"smi_{days}d_{gpus}gpu.csv"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    start = pd.Timestamp("2026-11-23 00:00:00")
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(HEADER + "\n")
        for hour in range(days * 24):
            secs = np.arange(3600) + hour * 3600
            # nvidia-smi stamps each GPU a few ms apart within one sample.
            stamps = (start + pd.to_timedelta(np.repeat(secs, gpus), unit="s")
                      + pd.to_timedelta(np.tile(np.arange(gpus) * 3 + 701, len(secs)), unit="ms"))
            text = stamps.strftime("%Y/%m/%d %H:%M:%S.%f").str[:-3]
            idx = np.tile(np.arange(gpus), len(secs))
            mem = rng.integers(70000, 90000, len(idx))
            util = rng.integers(0, 101, len(idx))
            f.write("".join(f"{t}, {i}, {m} MiB, {u} %\n" for t, i, m, u in zip(text, idx, mem, util, strict=True)))
    tmp.rename(path)
    return path


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(field)


def _cpu() -> float:
    """User + system CPU seconds of this process, all threads (steadier than wall time on a
    machine shared with other work)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_one(which: str, path: Path) -> dict:
    """Runs in the child process: load once, report seconds, peak rise and frame size."""
    import pandas as pd

    import dflash_postmortem as pm

    before = _rss_kib("VmRSS")
    cpu0 = _cpu()
    t0 = time.perf_counter()
    if which == "baseline":
        df = pd.read_csv(path, skipinitialspace=True)
        df.columns = ["time", "gpu", "memory_used_mib", "util_gpu_pct"]
        df["memory_used_mib"] = df["memory_used_mib"].str.removesuffix(" MiB").astype("float64")
        df["util_gpu_pct"] = df["util_gpu_pct"].str.removesuffix(" %").astype("float64")
        df["time"] = pd.to_datetime(df["time"], format="%Y/%m/%d %H:%M:%S.%f").dt.tz_localize("UTC")
    else:
        inc = pm.load_nvidia_smi(path)
        df = inc.gpus
        rep = inc.load_report.files[0]
        assert rep.balanced and rep.parsed == len(df), rep.summary()
    seconds = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    peak = _rss_kib("VmHWM")
    return {
        "which": which, "seconds": seconds, "cpu_seconds": cpu, "rows": len(df),
        "peak_rise_mb": (peak - before) / 1024, "frame_mb": df.memory_usage(deep=True).sum() / 2**20,
    }


def measure(which: str, path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", which, "--path", str(path)],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", choices=("baseline", "ours"))
    ap.add_argument("--path", type=Path)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.path)))
        return
    path = generate(args.days)
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB")
    best = {}
    for which in ("baseline", "ours"):
        runs = [measure(which, path) for _ in range(args.repeat)]
        best[which] = min(runs, key=lambda r: r["seconds"])
        r = best[which]
        print(f"{which:9s} {r['rows']:>9,d} rows  best {r['seconds']:.2f} s of {args.repeat} "
              f"(cpu {r['cpu_seconds']:.2f} s)  "
              f"peak +{r['peak_rise_mb']:.0f} MB  frame {r['frame_mb']:.0f} MB  "
              f"peak/frame {r['peak_rise_mb'] / r['frame_mb']:.2f}")
    b, o = best["baseline"], best["ours"]
    print(f"speed-up: {b['seconds'] / o['seconds']:.2f}x wall, {b['cpu_seconds'] / o['cpu_seconds']:.2f}x cpu")


if __name__ == "__main__":
    main()
