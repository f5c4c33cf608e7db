"""The store's ingest of a fleet's nvidia-smi files against plain pandas doing the same parsing.

    .venv/bin/python benchmarks/bench_ingest_smi.py [--size 64x6] [--pairs 3] [--data /tmp/store_bench]

`benchmarks/gen_fleet.py` writes the fleet once (HOSTSxHOURS, 8 GPUs a host at 1 Hz: per host an
nvidia-smi query CSV with units, eleven fields, and rank logs); its `smi.csv` files are linked into
a folder of their own, so what is timed is the nvidia-smi files alone (the rank logs are another
reader's cost: bench_process_log.py). Then, alternating in fresh child processes, `--pairs` times:

- ingest: `pm.ingest(folder, store)` into a new store (its default workers: one process per CPU);
  rows = the store's `gpus` rows;
- pandas, the same parsing: for each host's file, `pd.read_csv(skipinitialspace=True)`, the
  timestamp through `pd.to_datetime(format=..., utc=True)`, each unit-suffixed column cut and made
  a number, the temperature a number (every field typed, as the loader types them); one file at a
  time, its frame let go after (the least memory and work plain pandas can parse them in).

Each side's wall and CPU seconds (children included) and the peak RSS of its whole process tree
(bench_store.py's sampler). The figure is the ratio of the walls, pair by pair: ingest / pandas.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_store import _measured, prepare  # noqa: E402

UNITS = {"memory.used [MiB]": "MiB", "memory.total [MiB]": "MiB", "utilization.gpu [%]": "%",
         "utilization.memory [%]": "%", "power.draw [W]": "W", "clocks.sm [MHz]": "MHz"}


def smi_only(fleet: Path) -> Path:
    """The fleet's nvidia-smi files alone, linked (not copied) into a folder beside it."""
    out = fleet.with_name(fleet.name + "-smi")
    for src in sorted(fleet.glob("*/smi.csv")):
        dst = out / src.parent.name / src.name
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.link(src, dst)
    return out


def child_ingest(folder: Path) -> dict:
    import warnings

    import dflash_postmortem as pm
    from dflash_postmortem.store import views

    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        store = Path(tmp) / "store"
        result = _measured(lambda: {"converted": len(pm.ingest(folder, store).converted)})
        result["rows"] = int(views.connect(str(store)).sql("SELECT count(*) FROM gpus").fetchall()[0][0])
    return result


def child_pandas(folder: Path) -> dict:
    import pandas as pd

    def work() -> dict:
        rows = 0
        for path in sorted(folder.glob("*/smi.csv")):
            df = pd.read_csv(path, skipinitialspace=True)
            df["timestamp"] = pd.to_datetime(df["timestamp"], format="%Y/%m/%d %H:%M:%S.%f", utc=True)
            for col, unit in UNITS.items():
                df[col] = pd.to_numeric(df[col].str.removesuffix(unit).str.strip(), errors="coerce")
            df["temperature.gpu"] = pd.to_numeric(df["temperature.gpu"], errors="coerce")
            rows += len(df)
            del df
        return {"rows": rows}

    return _measured(work)


def run_child(kind: str, folder: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(folder)], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{kind} failed: {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="64x6", help="HOSTSxHOURS (8 GPUs per host)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--data", type=Path, default=Path("/tmp/store_bench"))
    ap.add_argument("--jobs", type=int, default=2, help="hosts gen_fleet.py writes in parallel")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, folder = args.child
        print(json.dumps({"ingest": child_ingest, "pandas": child_pandas}[kind](Path(folder))))
        return
    hosts, hours = args.size.split("x")
    folder = smi_only(prepare(args.data, int(hosts), float(hours), args.jobs))
    gb = sum(p.stat().st_size for p in folder.rglob("smi.csv")) / 1e9
    print(f"{args.size}: {int(hosts) * 8} GPUs x {hours} h, {len(list(folder.glob('*/smi.csv')))} nvidia-smi files, "
          f"{gb:.2f} GB; load average {os.getloadavg()[0]:.1f}")
    print("| pair | ingest s (CPU s) | ingest peak RSS (tree) | pandas s (CPU s) | pandas peak RSS | rows (both) | ingest / pandas |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    ratios = []
    for k in range(args.pairs):
        ing, pan = run_child("ingest", folder), run_child("pandas", folder)
        assert ing["rows"] == pan["rows"], (ing["rows"], pan["rows"])
        ratios.append(ing["seconds"] / pan["seconds"])
        print(f"| {k + 1} | {ing['seconds']:.1f} ({ing['cpu_s']:.1f}) | {ing['tree_peak_mib']:.0f} MiB "
              f"| {pan['seconds']:.1f} ({pan['cpu_s']:.1f}) | {pan['tree_peak_mib']:.0f} MiB | {ing['rows']:,} "
              f"| {ratios[-1]:.2f} |", flush=True)
    print(f"median ingest / pandas (wall): {statistics.median(ratios):.2f}; load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
