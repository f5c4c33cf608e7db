r"""Loading a day of GPU monitor samples (8 GPUs at 1 Hz) into the typed frames, against plain
pandas (and polars where it reads the form) parsing the same lines, for the two streams a user
leaves running beside training:

- `--form nvml`: `record-gpus` NVML samples (JSON Lines: a start record, then per second a gpu and
  a proc record per GPU, as dflash_postmortem/recorder.py writes them);
- `--form dmon`: `nvidia-smi dmon -o DT -s pucm` (its two header lines again every 20 samples, as
  dmon prints them).

    .venv/bin/python benchmarks/bench_monitors.py --form nvml|dmon [--hours 24] [--repeat 5]

Generates benchmarks/_data/{form}_{hours}h_8gpu.* once, then times, each in a fresh subprocess,
alternating:

- pandas: nvml `pd.read_json(lines=True)`, the gpu and proc records apart, times with
  `to_datetime`; dmon `pd.read_csv(sep=r"\s+", comment="#")`, date and time joined and parsed,
  `-` missing;
- polars: nvml `polars.read_ndjson`, the same (polars has no whitespace-separated reader: no
  dmon row; skipped where polars is not installed);
- lines: ours line by line (the loader's path for a file that is not a plain stream);
- ours: the format's loader (Arrow in one pass, the canonical frames, line numbers and the load
  report), inside `ordinary_pages()` as a folder's read runs it.

Each child reads the file's first 2,000 lines the same way first (imports and first calls are
not timed). Prints best and median seconds of each and the ratios of the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from children import alternate, arguments, cpu_seconds, warm_up

DATA = Path(__file__).resolve().parent / "_data"
UUIDS = [f"GPU-{k:08x}-da62-f773-fc0d-d705a777b8e4" for k in range(8)]


def generate(form: str, hours: int) -> Path:
    path = DATA / f"{form}_{hours}h_8gpu.{'jsonl' if form == 'nvml' else 'log'}"
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        (_nvml if form == "nvml" else _dmon)(tmp, hours)
        tmp.rename(path)
    return path


DMON_HEADER = ("#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk\n"
               "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %      %      %      %      %    MHz    MHz\n")


def _dmon(tmp: Path, hours: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    start = pd.Timestamp("2026-11-23 00:00:00")
    with open(tmp, "w") as f:
        for hour in range(hours):
            stamps = (start + pd.to_timedelta(np.arange(3600) + hour * 3600, unit="s")).strftime("%Y%m%d   %H:%M:%S")
            out = []
            for k, t in enumerate(stamps):
                if k % 20 == 0:
                    out.append(DMON_HEADER)
                for g in range(8):
                    out.append(f" {t}    {g:3d}  {rng.integers(80, 700):5d}  {rng.integers(30, 80):5d}      -  "
                               f"{rng.integers(0, 101):5d}  {rng.integers(0, 60):5d}      0      0      0      0   6250   1980\n")
            f.write("".join(out))


def _nvml(tmp: Path, hours: int) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    start = pd.Timestamp("2026-11-23 00:00:00")
    with open(tmp, "w") as f:
        f.write(json.dumps({"record": "start", "version": 1, "time": "2026-11-23T00:00:00.000000Z", "host": "node001",
                            "driver": "580.159.04", "interval_s": 1.0,
                            "gpus": [{"gpu": g, "uuid": u, "name": "NVIDIA H200"} for g, u in enumerate(UUIDS)]},
                           separators=(",", ":")) + "\n")
        for hour in range(hours):
            stamps = (start + pd.to_timedelta(np.arange(3600) + hour * 3600, unit="s")).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            out = []
            for t in stamps:
                for g, u in enumerate(UUIDS):
                    out.append(json.dumps({"record": "gpu", "time": t, "gpu": g, "uuid": u,
                                           "memory_used_mib": float(rng.integers(70000, 90000)) + 0.0625,
                                           "memory_total_mib": 143771.0, "util_gpu_pct": int(rng.integers(0, 101)),
                                           "util_mem_pct": int(rng.integers(0, 60)), "power_w": round(float(rng.uniform(80, 700)), 3),
                                           "temp_c": int(rng.integers(30, 80)), "sm_clock_mhz": 1980,
                                           "clocks_event_reasons": "0x0000000000000000"}, separators=(",", ":")))
                for g, u in enumerate(UUIDS):
                    out.append(json.dumps({"record": "proc", "time": t, "gpu": g, "uuid": u, "pid": 4000 + g,
                                           "process_name": "python3", "used_memory_mib": 70000.0}, separators=(",", ":")))
            f.write("\n".join(out) + "\n")




DMON_COLUMNS = ["date", "time", "gpu", "pwr", "gtemp", "mtemp", "sm", "mem", "enc", "dec", "jpg", "ofa", "mclk", "pclk"]


def _pandas_dmon(path: Path):
    import pandas as pd

    df = pd.read_csv(path, sep=r"\s+", comment="#", header=None, names=DMON_COLUMNS, na_values=["-"])
    df["time"] = pd.to_datetime(df["date"].astype(str) + " " + df["time"], format="%Y%m%d %H:%M:%S", utc=True)
    return len(df)


def _pandas(path: Path):
    import pandas as pd

    df = pd.read_json(path, lines=True)
    out = []
    for kind in ("gpu", "proc"):
        part = df[df["record"] == kind].dropna(axis=1, how="all").copy()
        part["time"] = pd.to_datetime(part["time"], format="ISO8601", utc=True)
        out.append(part)
    return sum(len(p) for p in out)


def _polars(path: Path):
    import polars as pl

    df = pl.read_ndjson(path, infer_schema_length=None)
    n = 0
    for kind in ("gpu", "proc"):
        part = df.filter(pl.col("record") == kind).with_columns(
            pl.col("time").str.to_datetime("%Y-%m-%dT%H:%M:%S%.fZ", time_zone="UTC"))
        n += part.height
    return n


def _ours(path: Path, columnar: bool = True):
    from dflash_postmortem.loaders.nvidia_smi import dmon, nvml_recording
    from dflash_postmortem.loaders.pages import ordinary_pages
    from dflash_postmortem.loaders.registry import LoadContext

    loader = nvml_recording if path.suffix == ".jsonl" else dmon
    if not columnar:
        loader._columnar = lambda *a: None
    with ordinary_pages():  # as a folder's read loads it
        inc = loader.load(path, LoadContext())
    rep = inc.load_report.files[0]
    rows = len(inc.gpus) + len(inc.gpu_processes)
    assert rep.balanced and rep.parsed == rows + (loader is nvml_recording), rep.summary()
    return rows


READERS = {"pandas": lambda p: (_pandas if p.suffix == ".jsonl" else _pandas_dmon)(p), "polars": _polars,
           "lines": lambda p: _ours(p, columnar=False), "ours": _ours}


def run_one(which: str, path: Path) -> dict:
    read = READERS[which]
    warm_up(read, path, which)
    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    rows = read(path)
    return {"which": which, "seconds": time.perf_counter() - t0, "cpu_seconds": cpu_seconds() - cpu0, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--form", choices=("nvml", "dmon"), default="nvml")
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=5)
    args = arguments(ap, READERS, run_one)
    path = generate(args.form, args.hours)
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB")
    readers = [w for w in READERS if not (w == "polars" and args.form == "dmon")]
    runs = alternate(__file__, readers, path, args.repeat)
    median = {w: statistics.median(r["seconds"] for r in rs) for w, rs in runs.items() if rs}
    for which, rs in runs.items():
        if rs:
            print(f"{which:8s} {rs[0]['rows']:>10,d} rows  best {min(r['seconds'] for r in rs):.2f} s, "
                  f"median {median[which]:.2f} s of {len(rs)} (cpu median {statistics.median(r['cpu_seconds'] for r in rs):.2f} s)")
    for which in median:
        if which != "ours":
            print(f"{which} / ours (medians): {median[which] / median['ours']:.2f}x")
    if "polars" not in median and args.form == "nvml":
        print("polars: not installed (pip install -e .[bench])")


if __name__ == "__main__":
    main()
