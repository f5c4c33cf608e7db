"""The fleet detectors (store/fleet.py, DuckDB over the Parquet store) against plain pandas doing
the same queries on the same data, paired in one run, for fleets of growing size.

    .venv/bin/python benchmarks/bench_fleet.py [--sizes 8x6,64x6,8x72,64x72] [--data /tmp/fleet_bench]
        [--pandas-max-rows 40e6] [--jobs 2]

A size is HOSTSxHOURS (8 GPUs per host, 1 Hz). For each, benchmarks/gen_fleet.py writes the fleet
(no Prometheus dump) under --data once and `pm.ingest` builds its store once; then, each in a
fresh subprocess so that peak memory is its own:

- ours: `views.connect(store)` + `Fleet(con, config=...).detect()`: every detector, with the one
  scan of the GPU samples; the findings are checked against truth.json (every planted fault found
  with its host and GPU, nothing else);
- baseline: pandas reads the same Parquet parts (only the columns the queries need) and does the
  same core queries: per-minute means/extremes per GPU, the host's and fleet's medians per
  minute, the straggler and silent-GPU masks, runs of flagged minutes. It checks that it finds the
  same straggler and lost GPU. Skipped above --pandas-max-rows (its frame alone is ~45 bytes a
  row before the groupby's copies; the machine is shared).

Peak memory is the process's VmHWM; time is wall clock of the whole query including connecting.
Prints one table; the numbers go into docs/benchmarks.md ("Fleet detectors").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _expected(folder: Path) -> list[tuple]:
    kinds = {"straggler": "straggler", "gpu_lost": "gpu_error", "restart_never_came_up": "restart_never_came_up"}
    truth = json.loads((folder / "truth.json").read_text())
    return sorted((kinds[f["kind"]], f["host"], f["gpu"]) for f in truth["faults"])


def child_ours(folder: Path, store: Path) -> dict:
    import dflash_postmortem.detect.fleet as fleet
    from dflash_postmortem.config import read_config
    from dflash_postmortem.store import views

    t0 = time.perf_counter()
    con = views.connect(str(store))
    found = fleet.Fleet(con, config=read_config(folder / "incident.toml")).detect()
    seconds = time.perf_counter() - t0
    got = sorted((r.kind, r.numbers["host"], r.numbers.get("gpu")) for r in found.itertuples())
    return {"seconds": seconds, "peak_mib": _peak_mib(), "correct": got == _expected(folder), "found": got}


def child_pandas(folder: Path, store: Path) -> dict:
    import pandas as pd

    from dflash_postmortem.store import layout

    t0 = time.perf_counter()
    fs, root = layout.filesystem(str(store))
    files = sorted(fs.glob(layout.frame_glob(root, "gpus")))
    parts = []
    for f in files:
        # The host is the part's partition folder (host=NAME), as in the views.
        host = next(p.split("=", 1)[1] for p in Path(f).parts if p.startswith("host="))
        df = pd.read_parquet(f, columns=["time", "gpu", "util_gpu_pct", "memory_used_mib", "sm_clock_mhz"])
        df["host"] = pd.Categorical([host] * len(df))
        parts.append(df)
    g = pd.concat(parts, ignore_index=True)
    del parts
    rows = len(g)
    g["b"] = pd.DatetimeIndex(g["time"]).as_unit("us").asi8 // 60_000_000
    g["silent"] = g["util_gpu_pct"].isna() & g["memory_used_mib"].isna()
    per = g.groupby(["host", "gpu", "b"], observed=True).agg(
        n=("silent", "size"), n_silent=("silent", "sum"), util=("util_gpu_pct", "mean"),
        util_max=("util_gpu_pct", "max"), clk=("sm_clock_mhz", "mean"), mem=("memory_used_mib", "mean"),
        mem_min=("memory_used_mib", "min"), mem_max=("memory_used_mib", "max")).reset_index()
    del g
    host_util = per.groupby(["host", "b"], observed=True)["util"].median().rename("host_util")
    fleet = per[per["mem"] >= 1024].groupby("b")["util"].median()
    fleet = fleet.rolling(61, center=True, min_periods=1).median().rename("fleet_util")
    per = per.join(host_util, on=["host", "b"]).join(fleet, on="b")
    busy = (per["util"] >= 90) & (per["mem"] >= 1024) & (per["host_util"] <= per["fleet_util"] - 25) \
        & (per["host_util"] <= per["util"] - 25)
    silent = per["n_silent"] > 0

    def runs(mask: pd.Series, need: int) -> list[tuple]:
        f = per.loc[mask, ["host", "gpu", "b"]].sort_values(["host", "gpu", "b"])
        island = f["b"] - f.groupby(["host", "gpu"], observed=True).cumcount()
        sizes = f.groupby([f["host"], f["gpu"], island], observed=True).size()
        return sorted({(str(h), int(gpu)) for (h, gpu, _), n in sizes.items() if n >= need})

    stragglers = runs(busy, 5)
    lost = runs(silent, 1)
    seconds = time.perf_counter() - t0
    exp = _expected(folder)
    ok = stragglers == [(h, g) for k, h, g in exp if k == "straggler"] and lost == [(h, g) for k, h, g in exp if k == "gpu_error"]
    return {"seconds": seconds, "peak_mib": _peak_mib(), "correct": bool(ok), "rows": int(rows),
            "found": {"straggler": stragglers, "lost": lost}}


def run_child(kind: str, folder: Path, store: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(folder), str(store)],
                         capture_output=True, text=True)
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def prepare(data: Path, hosts: int, hours: float, jobs: int, ingest_workers: int) -> tuple[Path, Path, dict]:
    folder = data / f"fleet_{hosts}x{hours:g}h"
    store = folder / ".dflash-store"
    info = {}
    if not (folder / "truth.json").exists():
        t0 = time.perf_counter()
        subprocess.run([sys.executable, str(HERE / "gen_fleet.py"), str(folder), "--hosts", str(hosts),
                        "--hours", str(hours), "--no-prometheus", "--jobs", str(jobs)], check=True)
        info["generate_s"] = time.perf_counter() - t0
    if not store.exists():
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sys, warnings; warnings.simplefilter('ignore'); "
                        "import dflash_postmortem as pm; pm.ingest(sys.argv[1], workers=int(sys.argv[2]))",
                        str(folder), str(ingest_workers)], check=True)
        info["ingest_s"] = time.perf_counter() - t0
    info["csv_gb"] = sum(p.stat().st_size for p in folder.glob("*/smi.csv")) / 1e9
    return folder, store, info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="8x6,64x6,8x72,64x72", help="HOSTSxHOURS,... (8 GPUs per host)")
    ap.add_argument("--data", type=Path, default=Path("/tmp/fleet_bench"))
    ap.add_argument("--pandas-max-rows", type=float, default=40e6)
    ap.add_argument("--jobs", type=int, default=2, help="hosts generated in parallel")
    ap.add_argument("--ingest-workers", type=int, default=1,
                    help="pm.ingest workers (1: in this process; its spawn pool hung here twice, see docs/benchmarks.md)")
    ap.add_argument("--child", nargs=3, metavar=("KIND", "FOLDER", "STORE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, folder, store = args.child
        result = (child_ours if kind == "ours" else child_pandas)(Path(folder), Path(store))
        print(json.dumps(result, default=str))
        return 0
    print("| fleet | GPU samples | CSV GB | fleet detectors (DuckDB) | peak RSS | pandas, same queries | peak RSS | ratio | correct (ours / pandas) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for size in args.sizes.split(","):
        hosts, hours = size.split("x")
        hosts, hours = int(hosts), float(hours)
        folder, store, info = prepare(args.data, hosts, hours, args.jobs, args.ingest_workers)
        rows = hosts * 8 * int(hours * 3600)
        ours = run_child("ours", folder, store)
        if rows <= args.pandas_max_rows:
            base = run_child("pandas", folder, store)
        else:
            base = {"error": f"not run: {rows / 1e6:.0f} M rows > --pandas-max-rows"}
        ratio = (f"{base['seconds'] / ours['seconds']:.1f}x" if "seconds" in base and "seconds" in ours else "-")

        def cell(r, key, fmt):
            return fmt.format(r[key]) if key in r else r.get("error", "-")

        print(f"| {hosts * 8} GPUs x {hours:g} h | {rows / 1e6:.1f} M | {info['csv_gb']:.2f} | "
              f"{cell(ours, 'seconds', '{:.1f} s')} | {cell(ours, 'peak_mib', '{:.0f} MiB')} | "
              f"{cell(base, 'seconds', '{:.1f} s')} | {cell(base, 'peak_mib', '{:.0f} MiB')} | {ratio} | "
              f"{ours.get('correct', '-')} / {base.get('correct', '-')} |", flush=True)
        extra = {k: round(v, 1) for k, v in info.items()}
        if extra:
            print(f"  (prepared: {extra})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
