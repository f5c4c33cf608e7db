"""Loading a week of 1 Hz nvidia-smi query CSV from 8 GPUs into the typed `gpus` frame.

    .venv/bin/python benchmarks/bench_smi_csv.py [--days 7] [--repeat 3]

Generates benchmarks/_data/smi_7d_8gpu.csv once (about 4.8 M rows, 210 MB: the default
`--format=csv` with units, as `nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu
-l 1` writes it), then times, each in a fresh subprocess so peak memory is its own:

- baseline: plain pandas.read_csv, unit stripping with .str, to_datetime with the fixed format;
- pandas-tight: the same with pandas' pyarrow engine, the known column names given;
- polars: polars.read_csv, the same parsing (times with the format and zone, units stripped,
  numbers typed); skipped where polars is not installed (`pip install -e .[bench]`);
- ours: pm.load_nvidia_smi (pyarrow fast path, with line accounting and the canonical schema).

Each child first reads the file's first 2,000 lines the same way, so that what is timed is the
reading, not the imports and first calls of each library. Peak memory is the rise of the
process's peak RSS (VmHWM) over its RSS before loading; the final frame is
DataFrame.memory_usage(deep=True). Prints a table and the ratio of each baseline to ours.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from children import alternate, arguments, cpu_seconds, warm_up

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




COLUMNS = ["time", "gpu", "memory_used_mib", "util_gpu_pct"]


def _pandas(path: Path, engine: str):
    import pandas as pd

    if engine == "pyarrow":  # (the pyarrow engine takes no skipinitialspace: the units' cut trims)
        df = pd.read_csv(path, engine="pyarrow", header=0, names=COLUMNS)
    else:
        df = pd.read_csv(path, skipinitialspace=True)
        df.columns = COLUMNS
    df["memory_used_mib"] = df["memory_used_mib"].str.removesuffix(" MiB").astype("float64")
    df["util_gpu_pct"] = df["util_gpu_pct"].str.removesuffix(" %").astype("float64")
    df["time"] = pd.to_datetime(df["time"], format="%Y/%m/%d %H:%M:%S.%f").dt.tz_localize("UTC")
    return df, len(df)


def _polars(path: Path):
    import polars as pl

    df = pl.read_csv(path, has_header=True, new_columns=COLUMNS).with_columns(
        pl.col("time").str.to_datetime("%Y/%m/%d %H:%M:%S%.f", time_zone="UTC"),
        pl.col("gpu").str.strip_chars().cast(pl.Int64),
        pl.col("memory_used_mib").str.strip_chars().str.strip_suffix(" MiB").cast(pl.Float64),
        pl.col("util_gpu_pct").str.strip_chars().str.strip_suffix(" %").cast(pl.Float64))
    return df, df.height


def _ours(path: Path):
    import dflash_postmortem as pm

    inc = pm.load_nvidia_smi(path)
    rep = inc.load_report.files[0]
    assert rep.balanced and rep.parsed == len(inc.gpus), rep.summary()
    return inc.gpus, len(inc.gpus)


READERS = {"baseline": lambda p: _pandas(p, "c"), "pandas-tight": lambda p: _pandas(p, "pyarrow"),
           "polars": _polars, "ours": _ours}


def _frame_mb(df) -> float:
    if hasattr(df, "estimated_size"):  # polars
        return df.estimated_size() / 2**20
    return df.memory_usage(deep=True).sum() / 2**20


def run_one(which: str, path: Path) -> dict:
    """Runs in the child process: warm up on the file's head, load once, report seconds, peak
    rise and frame size."""
    read = READERS[which]
    warm_up(read, path, which)
    before = _rss_kib("VmRSS")
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    df, rows = read(path)
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds() - cpu0
    peak = _rss_kib("VmHWM")
    return {
        "which": which, "seconds": seconds, "cpu_seconds": cpu, "rows": rows,
        "peak_rise_mb": (peak - before) / 1024, "frame_mb": _frame_mb(df),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    args = arguments(ap, READERS, run_one)
    path = generate(args.days)
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB")
    runs = alternate(__file__, READERS, path, args.repeat)
    best = {w: min(rs, key=lambda r: r["seconds"]) for w, rs in runs.items() if rs}
    median = {w: statistics.median(r["seconds"] for r in rs) for w, rs in runs.items() if rs}
    for which, r in best.items():
        print(f"{which:12s} {r['rows']:>9,d} rows  best {r['seconds']:.2f} s, median {median[which]:.2f} s "
              f"of {args.repeat} (cpu {r['cpu_seconds']:.2f} s)  "
              f"peak +{r['peak_rise_mb']:.0f} MB  frame {r['frame_mb']:.0f} MB  "
              f"peak/frame {r['peak_rise_mb'] / r['frame_mb']:.2f}")
    o = best["ours"]
    for which, b in best.items():
        if which != "ours":
            print(f"{which} / ours: {b['seconds'] / o['seconds']:.2f}x wall (medians "
                  f"{median[which] / median['ours']:.2f}x), {b['cpu_seconds'] / o['cpu_seconds']:.2f}x cpu")
    if "polars" not in best:
        print("polars: not installed (pip install -e .[bench])")


if __name__ == "__main__":
    main()
