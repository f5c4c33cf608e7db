"""The Parquet store (store/): ingest and a one-hour window over all GPUs, against plain pandas
on the same CSV files, paired in one run, for fleets of growing size.

    .venv/bin/python benchmarks/bench_store.py [--sizes 8x6,64x6,8x72] [--data /tmp/store_bench]
        [--jobs 2] [--workers N] [--json OUT]
    .venv/bin/python benchmarks/bench_store.py --read-only /tmp/fleet_bench/fleet_64x72h

A size is HOSTSxHOURS (8 GPUs per host, 1 Hz). benchmarks/gen_fleet.py writes each fleet once
under --data (no Prometheus dump: per host one nvidia-smi query CSV, eight rank logs). Then, each
in a fresh subprocess so that its memory is its own:

- ingest: `pm.ingest(folder)` into a new store (the folder's `.dflash-store`; default workers:
  a spawn pool of one process per CPU); rows are every frame's rows in the store;
- window: `load_window(store, window=...)`, the middle hour of the fleet over all hosts and GPUs
  as the five canonical frames (schema dtypes, direct-load order, the whole load report), and
  `pm.load_incident(folder, window=...)`, which first checks every source against the manifest;
- pandas: for each host's smi.csv, `pd.read_csv` + `pd.to_datetime` on the timestamp + a boolean
  mask for the same hour, one file at a time (the least memory plain pandas can do it in), the
  window's rows kept. Its window row count is checked against the store's `gpus` rows of the
  smi.csv sources. (It leaves the unit-suffixed columns as text; the loader types them all.)

Peak RSS: the whole process tree, summed, sampled every 20 ms from /proc (the pool's workers run
side by side), and getrusage's ru_maxrss of the process (RUSAGE_SELF) and of its largest child
(RUSAGE_CHILDREN). Seconds are wall clock; CPU seconds (user + system, children included) are
steadier on a shared machine. Prints one table and the growth factors; the numbers go into
docs/benchmarks.md ("Fleet store: ingest and windows").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GPUS_PER_HOST = 8


class TreePeak:
    """The largest summed RSS of this process and all its descendants, sampled in a thread."""

    def __init__(self, every_s: float = 0.02):
        self.every_s, self.peak_kib = every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, sum(_rss_kib(p) for p in _tree(os.getpid())))
            self._stop.wait(self.every_s)


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass  # it ended between two reads
    return out


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _usage() -> dict:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
            "self_peak_mib": me.ru_maxrss / 1024, "child_peak_mib": kids.ru_maxrss / 1024}


def _measured(work, then=None) -> dict:
    """Run `work()` (-> dict; or anything, made a dict by `then` after the clock stops) with
    wall and CPU time and the peaks around it."""
    cpu0 = _usage()["cpu_s"]
    with TreePeak() as peak:
        t0 = time.perf_counter()
        result = work()
        seconds = time.perf_counter() - t0
    use = _usage()
    if then is not None:
        result = then(result)
    return {**result, "seconds": seconds, "cpu_s": use["cpu_s"] - cpu0, "tree_peak_mib": peak.peak_kib / 1024,
            "self_peak_mib": use["self_peak_mib"], "child_peak_mib": use["child_peak_mib"]}


def _hour(folder: Path) -> tuple[str, str]:
    """The fleet's middle hour, from its truth.json (the generator's start and end)."""
    import pandas as pd

    truth = json.loads((folder / "truth.json").read_text())
    start, end = pd.Timestamp(truth["start"]), pd.Timestamp(truth["end"])
    mid = (start + (end - start) / 2 - pd.Timedelta(minutes=30)).floor("min")
    return mid.isoformat(), (mid + pd.Timedelta(hours=1)).isoformat()


def child_ingest(folder: Path, workers: int | None) -> dict:
    import warnings

    import dflash_postmortem as pm
    from dflash_postmortem import schema
    from dflash_postmortem.store import views

    warnings.simplefilter("ignore")
    store = folder / ".dflash-store"
    shutil.rmtree(store, ignore_errors=True)
    result = _measured(lambda: {"converted": len(pm.ingest(folder, workers=workers).converted)})
    con = views.connect(str(store))
    rows = {f: con.execute(f"SELECT count(*) FROM {f}").fetchone()[0] for f in schema.FRAME_NAMES}
    size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
    return {**result, "rows": rows, "store_gb": size / 1e9}


def child_window(folder: Path) -> dict:
    import warnings

    import dflash_postmortem as pm
    from dflash_postmortem.config import read_config
    from dflash_postmortem.store.window import load_window

    warnings.simplefilter("ignore")
    window = _hour(folder)
    cfg = read_config(folder / "incident.toml")
    query = _measured(lambda: load_window(str(folder / ".dflash-store"), window=window, root=folder, config=cfg), _frames)
    whole = _measured(lambda: pm.load_incident(folder, window=window), _frames)
    return {"query": query, "load_incident": whole, "window": window}


def child_query(folder: Path) -> dict:
    """The window through `load_window` only: reads the store and writes nothing (another
    benchmark's fleet and store, --read-only)."""
    import warnings

    from dflash_postmortem.config import read_config
    from dflash_postmortem.store.window import load_window

    warnings.simplefilter("ignore")
    window = _hour(folder)
    cfg = read_config(folder / "incident.toml")
    runs = [_measured(lambda: load_window(str(folder / ".dflash-store"), window=window, root=folder, config=cfg),
                      _frames) for _ in range(2)]
    return {"cold": runs[0], "warm": runs[1], "window": window}


def _frames(inc) -> dict:
    """What a window gave, counted after its clock stopped."""
    smi = int(inc.gpus["source"].str.endswith("/smi.csv").sum())
    return {"rows": {f: len(df) for f, df in inc.frames().items()}, "smi_rows": smi}


def child_pandas(folder: Path) -> dict:
    import pandas as pd

    start, end = (pd.Timestamp(t).tz_localize(None) for t in _hour(folder))

    def work() -> dict:
        kept, read = [], 0
        for path in sorted(folder.glob("*/smi.csv")):
            df = pd.read_csv(path, skipinitialspace=True)
            df["timestamp"] = pd.to_datetime(df["timestamp"], format="%Y/%m/%d %H:%M:%S.%f")
            read += len(df)
            kept.append(df[(df["timestamp"] >= start) & (df["timestamp"] < end)])
            del df
        window = pd.concat(kept, ignore_index=True)
        return {"rows_read": read, "window_rows": len(window)}

    return _measured(work)


def run_child(kind: str, folder: Path, *extra: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, str(folder), *extra],
                         capture_output=True, text=True)
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def prepare(data: Path, hosts: int, hours: float, jobs: int) -> Path:
    folder = data / f"fleet_{hosts}x{hours:g}h"
    if not (folder / "truth.json").exists():
        subprocess.run([sys.executable, str(HERE / "gen_fleet.py"), str(folder), "--hosts", str(hosts),
                        "--hours", str(hours), "--no-prometheus", "--jobs", str(jobs)], check=True,
                       stdout=subprocess.DEVNULL)
    return folder


def measure(data: Path, size: str, jobs: int, workers: int | None) -> dict:
    hosts, hours = size.split("x")
    folder = prepare(data, int(hosts), float(hours), jobs)
    csv_gb = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and ".dflash-store" not in p.parts) / 1e9
    row = {"size": size, "gpus": int(hosts) * GPUS_PER_HOST, "hours": float(hours), "input_gb": csv_gb,
           "ingest": run_child("ingest", folder, str(workers or 0))}
    row["window"] = run_child("window", folder)
    row["pandas"] = run_child("pandas", folder)
    return row


def print_table(rows: list[dict]) -> None:
    print("| fleet | input GB | rows | ingest s (CPU s) | rows/s | peak RSS: tree (parent, child) | store GB "
          "| pandas read+mask s (CPU s) | pandas rows/s | pandas peak RSS | window s: query / load_incident "
          "| window rows (gpus) | window peak RSS | window rows = pandas |")
    print("| --- " * 14 + "|")
    for r in rows:
        i, w, p = r["ingest"], r["window"], r["pandas"]
        if "error" in i or "error" in w or "error" in p:
            print(f"| {r['size']} | error: {i.get('error') or w.get('error') or p.get('error')} |")
            continue
        total = sum(i["rows"].values())
        q, whole = w["query"], w["load_incident"]
        print(f"| {r['gpus']} GPUs x {r['hours']:g} h | {r['input_gb']:.2f} | {total / 1e6:.1f} M "
              f"| {i['seconds']:.1f} ({i['cpu_s']:.0f}) | {total / i['seconds'] / 1e3:.0f} K "
              f"| {i['tree_peak_mib']:.0f} MiB ({i['self_peak_mib']:.0f}, {i['child_peak_mib']:.0f}) "
              f"| {i['store_gb']:.2f} | {p['seconds']:.1f} ({p['cpu_s']:.0f}) | {p['rows_read'] / p['seconds'] / 1e3:.0f} K "
              f"| {p['tree_peak_mib']:.0f} MiB | {q['seconds']:.2f} / {whole['seconds']:.2f} "
              f"| {q['rows']['gpus'] / 1e6:.2f} M | {q['tree_peak_mib']:.0f} MiB "
              f"| {q['smi_rows'] == p['window_rows']} ({q['smi_rows']} / {p['window_rows']}) |", flush=True)


def print_growth(rows: list[dict]) -> None:
    """Each measure's factor between sizes that differ in GPUs only or in hours only."""
    ok = [r for r in rows if not any("error" in r[k] for k in ("ingest", "window", "pandas"))]
    for a in ok:
        for b in ok:
            same_hours = a["hours"] == b["hours"] and b["gpus"] > a["gpus"]
            same_gpus = a["gpus"] == b["gpus"] and b["hours"] > a["hours"]
            if not (same_hours or same_gpus):
                continue

            def x(*keys, a=a, b=b):
                va, vb = a, b
                for k in keys:
                    va, vb = va[k], vb[k]
                return f"{vb / va:.1f}x"

            data = (b["gpus"] * b["hours"]) / (a["gpus"] * a["hours"])
            print(f"{a['size']} -> {b['size']} (data {data:.0f}x): ingest s {x('ingest', 'seconds')}, "
                  f"ingest peak RSS {x('ingest', 'tree_peak_mib')}, window query s {x('window', 'query', 'seconds')}, "
                  f"load_incident window s {x('window', 'load_incident', 'seconds')}, "
                  f"pandas s {x('pandas', 'seconds')}, pandas peak RSS {x('pandas', 'tree_peak_mib')}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="8x6,64x6,8x72", help="HOSTSxHOURS,... (8 GPUs per host)")
    ap.add_argument("--data", type=Path, default=Path("/tmp/store_bench"))
    ap.add_argument("--jobs", type=int, default=2, help="hosts gen_fleet.py writes in parallel")
    ap.add_argument("--workers", type=int, default=0, help="ingest's workers (0: its default)")
    ap.add_argument("--json", type=Path, help="also write every measurement here")
    ap.add_argument("--read-only", type=Path, metavar="FOLDER",
                    help="an ingested fleet this run must not write to: only the window (load_window, cold "
                         "then warm) and the pandas side")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, folder, *extra = args.child
        folder = Path(folder)
        if kind == "ingest":
            result = child_ingest(folder, int(extra[0]) or None)
        else:
            result = {"window": child_window, "pandas": child_pandas, "query": child_query}[kind](folder)
        print(json.dumps(result, default=str))
        return 0
    if args.read_only:
        result = {"window": run_child("query", args.read_only), "pandas": run_child("pandas", args.read_only)}
        print(json.dumps(result, default=str))
        return 0
    rows = []
    for size in args.sizes.split(","):
        rows.append(measure(args.data, size, args.jobs, args.workers or None))
        print(json.dumps(rows[-1], default=str), file=sys.stderr, flush=True)
    print_table(rows)
    print_growth(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
