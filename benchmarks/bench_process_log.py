"""Training-log parsing speed and memory: one streaming pass over a large log.

Generates a DFlash-style log (a throughput line every 10 lines) under benchmarks/_data/, then in
one run measures:
  - the floor: `grep -c 'tok/s'` over the same file (MB/s),
  - the scanner: LogScanner.scan() with times resolved per batch and rows counted, not kept,
    in a child process per file size so each peak RSS is that size's own,
  - load_process_log (rows materialised into frames) on the smallest size,
  - DuckDB (a dependency the kit ships) reading the same file and keeping the `tok/s` lines with
    their six fields typed (time, run, step, loss, rate, queue) on two threads: what a scan whose
    metric lines an engine of that kind reads could reach (no events, no load report).

    .venv/bin/python benchmarks/bench_process_log.py            # 2048 MB and 256 MB
    .venv/bin/python benchmarks/bench_process_log.py --size 64  # quick: 64 MB and 8 MB
    .venv/bin/python benchmarks/bench_process_log.py --families [--family-mb 16]

`--families`: each trainer family's own lines. The corpus's training logs
(tests/fixtures/real-world/train-log/) are read once; each sample belongs to the family (a
metric pattern or field format of loaders/training_log/patterns.py) that gave most of its rows;
a family's samples are repeated into one file of `--family-mb` MB, and in one run `grep -c -F`
of the family's own keyword (its rate field or the line it is read from) is timed against the
scanner on the same file, and the scanner against itself reading every line by the general path
(the known formats' plain lines not read in bulk: loaders/training_log/bulk_lines.py).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "_data"
FILLER = (
    "{t} [bench] drafter batch {i} prefetched 3 target layers in 0.{f:03d} ms (queue depth 2)\n",
    "{t} [bench] target forward {i}: 12 blocks, 4096 positions, hidden 2048\n",
    "{t} [bench] grad sync {i} done, bucket 25 MB, 0.{f:03d} s\n",
)


def generate(path: Path, mbytes: int) -> None:
    if path.exists() and path.stat().st_size >= mbytes << 20:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    target = mbytes << 20
    written, i = 0, 0
    with open(path, "w", buffering=1 << 22) as f:
        while written < target:
            chunk = []
            for _ in range(1000):
                s = 1200 + i // 10
                t = f"2026-11-30 {5 + s // 3600 % 19:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
                if i % 10 == 9:
                    chunk.append(f"{t} [bench] step {i // 10 * 5} loss 9.{i % 9973:04d} tok/s {147000 + i % 997} queue 2\n")
                else:
                    chunk.append(FILLER[i % 3].format(t=t, i=i, f=i % 1000))
                i += 1
            text = "".join(chunk)
            f.write(text)
            written += len(text)


def scan_child(path: str, line_by_line: bool = False) -> None:
    """Runs in a child process: stream the file, print counts, seconds and peak RSS as JSON.
    `line_by_line`: the known formats' plain lines read by the general path, not in bulk."""
    import numpy as np

    from dflash_postmortem.load_report import FileReport
    from dflash_postmortem.loaders.registry import LoadContext
    from dflash_postmortem.loaders.training_log import process_log
    from dflash_postmortem.loaders.training_log.process_log import LogScanner, resolve_times

    process_log.BULK = not line_by_line

    ctx = LoadContext()
    rep = FileReport(path=path, format="training-log")
    scanner = LogScanner(Path(path), rep, default_run="bench")
    t0 = time.perf_counter()
    n_tok, total, n_rows = 0, 0.0, 0
    for rows in scanner.scan():
        cols = rows.metrics
        times = resolve_times(cols["stamp"], rep, ctx, scanner.first_date, scanner.calendar)
        n_rows += len(times)
        tok = np.asarray(cols["metric"], dtype=object) == "train/tok_per_s"
        n_tok += int(tok.sum())
        total += float(np.asarray(cols["value"], dtype=float)[tok].sum())
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(seconds=dt, tok_lines=n_tok, rows=n_rows, mean=total / max(n_tok, 1), read=rep.read,
                          parsed=rep.parsed, skipped=rep.n_skipped, peak_rss_mib=peak)))


def load_child(path: str) -> None:
    import dflash_postmortem as pm

    t0 = time.perf_counter()
    inc = pm.load_process_log(path)
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(seconds=dt, metric_rows=len(inc.metrics), peak_rss_mib=peak)))


def families(mbytes: int) -> None:
    """Each trainer family's samples repeated into a file of its own: grep -c of its keyword
    against the scanner, in one run."""
    import warnings

    import dflash_postmortem as pm
    from dflash_postmortem.loaders.training_log import patterns as lp

    keyword = {p.name: p.keyword for p in (*lp.METRIC_PATTERNS, *lp.FIELD_FORMATS)}
    corpus = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "real-world" / "train-log"
    samples: dict[str, list[Path]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in sorted(corpus.glob("*.log")):
            counts = pm.load_process_log(path).metrics["pattern"].value_counts()
            counts = counts[[name in keyword for name in counts.index]]
            if len(counts):
                samples.setdefault(str(counts.index[0]), []).append(path)
    print(f"{'family':<22}{'samples':>8}{'MB':>6}{'keyword':>30}{'grep -c MB/s':>14}{'line by line MB/s':>19}"
          f"{'scan MB/s':>11}{'x':>6}{'grep / scan':>12}{'rows':>10}")
    for name, paths in sorted(samples.items()):
        out = DATA / f"family_{name}.log"
        body = b"".join(p.read_bytes().rstrip(b"\n") + b"\n" for p in paths)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(body * max(1, (mbytes << 20) // len(body)))
        size = out.stat().st_size / 1e6
        t0 = time.perf_counter()
        subprocess.run(["grep", "-c", "-F", keyword[name].decode(), str(out)], capture_output=True, check=False)
        grep_s = time.perf_counter() - t0
        r, g = child("scan", out), child("scan", out, "--line-by-line")
        assert (r["rows"], r["parsed"], r["skipped"]) == (g["rows"], g["parsed"], g["skipped"]), (r, g)
        print(f"{name:<22}{len(paths):>8}{size:>6.0f}{keyword[name].decode()!r:>30}{size / grep_s:>14.0f}"
              f"{size / g['seconds']:>19.1f}{size / r['seconds']:>11.1f}{g['seconds'] / r['seconds']:>5.2f}x"
              f"{(size / grep_s) / (size / r['seconds']):>11.0f}x{r['rows']:>10}")


# The DFlash step line's fields, as loaders/training_log/patterns.py reads them.
DUCKDB_TYPED = r"""
WITH m AS (
  SELECT regexp_extract(line, '^(\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d) \[([^\]]+)\] step (\d+) loss ([\d.]+) tok/s (\d+) queue (\d+)$',
                        ['time', 'run', 'step', 'loss', 'tok', 'queue']) AS m
  FROM read_csv('{path}', columns={{'line': 'VARCHAR'}}, delim='\x01', quote='', escape='', header=false,
                auto_detect=false, parallel=true)
  WHERE contains(line, 'tok/s'))
SELECT strptime(m.time, '%Y-%m-%d %H:%M:%S') AS time, m.run AS run, CAST(m.step AS BIGINT) AS step,
       CAST(m.loss AS DOUBLE) AS loss, CAST(m.tok AS DOUBLE) AS tok_per_s, CAST(m.queue AS BIGINT) AS queue FROM m
"""


def duckdb_typed(path: Path) -> tuple[float, int]:
    """Seconds for DuckDB to give the file's `tok/s` lines as typed columns (Arrow), and how many."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 2")
    t0 = time.perf_counter()
    table = con.sql(DUCKDB_TYPED.format(path=str(path).replace("'", "''"))).to_arrow_table()
    return time.perf_counter() - t0, table.num_rows


def child(mode: str, path: Path, *flags: str) -> dict:
    out = subprocess.run([sys.executable, __file__, f"--{mode}", str(path), *flags], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=2048, help="MB of the large file (the small one is 1/8)")
    ap.add_argument("--scan", help=argparse.SUPPRESS)
    ap.add_argument("--load", help=argparse.SUPPRESS)
    ap.add_argument("--line-by-line", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--families", action="store_true", help="each trainer family's lines against grep -c of its keyword")
    ap.add_argument("--family-mb", type=int, default=16)
    a = ap.parse_args()
    if a.families:
        return families(a.family_mb)
    if a.scan:
        return scan_child(a.scan, a.line_by_line)
    if a.load:
        return load_child(a.load)
    sizes = [max(1, a.size // 8), a.size]
    for mb in sizes:
        generate(DATA / f"train_{mb}mb.log", mb)
    print(f"{'file':<20}{'MB':>8}{'grep -c MB/s':>14}{'scan MB/s':>11}{'ratio':>8}{'peak RSS MiB':>14}{'tok/s lines':>13}"
          f"{'duckdb MB/s':>13}{'ratio':>7}")
    for mb in sizes:
        path = DATA / f"train_{mb}mb.log"
        size = path.stat().st_size / 1e6
        t0 = time.perf_counter()
        g = subprocess.run(["grep", "-c", "tok/s", str(path)], capture_output=True, text=True, check=True)
        grep_s = time.perf_counter() - t0
        r = child("scan", path)
        assert r["tok_lines"] == int(g.stdout), (r, g.stdout)
        assert r["parsed"] + r["skipped"] == r["read"]
        duck_s, duck_rows = duckdb_typed(path)
        assert duck_rows == r["tok_lines"], (duck_rows, r["tok_lines"])
        print(f"{path.name:<20}{size:>8.0f}{size / grep_s:>14.0f}{size / r['seconds']:>11.1f}"
              f"{r['seconds'] / grep_s:>7.2f}x{r['peak_rss_mib']:>14.0f}{r['tok_lines']:>13}"
              f"{size / duck_s:>13.0f}{duck_s / grep_s:>6.1f}x")
    small = DATA / f"train_{sizes[0]}mb.log"
    r = child("load", small)
    print(f"load_process_log on {small.name}: {small.stat().st_size / 1e6 / r['seconds']:.1f} MB/s, "
          f"{r['metric_rows']} metric rows, peak RSS {r['peak_rss_mib']:.0f} MiB (rows kept: grows with rows)")


if __name__ == "__main__":
    main()
