"""The main job against its floor: `dflash-postmortem report` on a bundled incident, and five
trivial two-cell notebooks run by papermill and exported by nbconvert one after another (the
least any five-page report made this way costs), paired in one run.

    .venv/bin/python benchmarks/bench_report.py [--incident data/incidents/h200-2gpu] [--pairs 3]

Each pair runs both, in alternating order; the report starts from an empty cache of loaded
incidents (it loads and detects). The script prints each time, the ratio per pair, the median
ratio (<= 1.0: the report costs no more than its floor), each page's first cell (imports,
setup, load: from the cache the parent filled) and a warm report (the incident already cached). It also prints
`load_incident` + `detect` per MB of input for every bundled incident.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "dflash_postmortem.cli"]

TRIVIAL = """{
 "cells": [
  {"cell_type": "code", "execution_count": null, "metadata": {"tags": ["parameters"]}, "outputs": [],
   "source": ["x = 1"]},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": ["print(x + 1)"]}
 ],
 "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
 "nbformat": 4, "nbformat_minor": 5
}
"""

FLOOR = """
import sys, pathlib, papermill, nbformat
from nbconvert import HTMLExporter
out = pathlib.Path(sys.argv[1])
for i in range(5):
    nb = out / f"trivial_{i}.ipynb"
    nb.write_text(sys.argv[2])
    done = out / f"done_{i}.ipynb"
    papermill.execute_notebook(str(nb), str(done), parameters={"x": i}, progress_bar=False)
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(str(done), as_version=4))
    (out / f"page_{i}.html").write_text(body)
"""


def timed_run(argv: list[str], env: dict | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def report_once(incident: Path, cache: str | None = None) -> tuple[float, list[float]]:
    """One report, cold (an empty cache of loaded incidents) unless `cache` is given; the time
    and each page's first code cell (imports, setup, load) as the kernel timed it."""
    with tempfile.TemporaryDirectory(prefix="bench-report-") as out, \
            tempfile.TemporaryDirectory(prefix="bench-cache-") as empty:
        env = {**os.environ, "DFLASH_POSTMORTEM_CACHE": cache or empty}
        took = timed_run([*CLI, "report", str(incident), "-o", out, "--no-progress"], env)
        return took, first_cells(Path(out) / "executed")


def first_cells(executed: Path) -> list[float]:
    cells = []
    for nb in sorted(executed.glob("*.ipynb")):
        code = [c for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code"]
        # the cell after the parameters (and papermill's injected ones): imports, setup(), load()
        first = next(c for c in code if "load(" in "".join(c["source"]))
        run = first["metadata"]["execution"]  # nbclient's timestamps of the cell
        cells.append((datetime.fromisoformat(run["shell.execute_reply"]) -
                      datetime.fromisoformat(run["iopub.execute_input"])).total_seconds())
    return cells


def floor_once() -> float:
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as out:
        return timed_run([sys.executable, "-c", FLOOR, out, TRIVIAL])


def folder_and_page_load(incident: Path) -> None:
    """The report folder's size, and each page's load time in headless Chromium (navigation start
    to the load event, figures drawn), the first page fetching plotly.min.js from disk."""
    import shutil

    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="bench-pages-") as out:
        subprocess.run([*CLI, "report", str(incident), "-o", out, "--no-progress"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        files = [f for f in Path(out).rglob("*") if f.is_file() and "executed" not in f.parts]
        total = sum(f.stat().st_size for f in files)
        js = (Path(out) / "plotly.min.js").stat().st_size
        print(f"report folder (without executed/): {total / 1e6:.1f} MB, of which plotly.min.js {js / 1e6:.1f} MB; "
              f"{len(files)} files")
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            for html in sorted(Path(out).glob("*.html")):
                page.goto(html.as_uri())
                page.wait_for_load_state("load")
                if "Plotly.newPlot(" in page.content():
                    page.wait_for_selector(".js-plotly-plot .main-svg")
                ms = page.evaluate("() => { const t = performance.getEntriesByType('navigation')[0];"
                                   " return t.loadEventEnd - t.startTime; }")
                print(f"  {html.name:<24} {html.stat().st_size / 1e3:7.0f} kB  load {ms:6.0f} ms")
            browser.close()


def load_and_detect_per_mb() -> None:
    import dflash_postmortem as pm

    for folder in sorted((REPO / "data" / "incidents").iterdir()):
        if not folder.is_dir():
            continue
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            inc = pm.load_incident(folder)
            t1 = time.perf_counter()
            pm.detect(inc)
            t2 = time.perf_counter()
        mb = size / 1e6
        print(f"  {folder.name:<36} {mb:6.2f} MB  load {t1 - t0:5.2f} s ({(t1 - t0) / mb:5.2f} s/MB)  "
              f"detect {t2 - t1:5.2f} s ({(t2 - t1) / mb:5.2f} s/MB)")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--incident", type=Path, default=REPO / "data" / "incidents" / "h200-2gpu")
    p.add_argument("--pairs", type=int, default=3)
    args = p.parse_args()
    ratios = []
    for i in range(args.pairs):
        if i % 2:
            floor = floor_once()
            report, cells = report_once(args.incident)
        else:
            report, cells = report_once(args.incident)
            floor = floor_once()
        ratios.append(report / floor)
        print(f"pair {i + 1}: report {report:6.2f} s  floor {floor:6.2f} s  ratio {report / floor:.2f}  "
              f"(first cell per page: {', '.join(f'{c:.2f}' for c in cells)} s)")
    print(f"median ratio report / floor (cold cache): {statistics.median(ratios):.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as cache:
        report_once(args.incident, cache)  # fills the cache, as an earlier report or Lab session does
        warm, cells = report_once(args.incident, cache)
    print(f"warm report (incident already loaded): {warm:.2f} s; first cell per page: "
          f"{', '.join(f'{c:.2f}' for c in cells)} s")
    folder_and_page_load(args.incident)
    print("load_incident + detect per MB of input:")
    load_and_detect_per_mb()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
