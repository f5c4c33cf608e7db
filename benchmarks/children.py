"""A reader timed in a fresh interpreter, for the benchmarks that pair readers in one run
(bench_smi_csv.py, bench_monitors.py): each child's peak memory and first calls are its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def measure(script: str, which: str, path: Path) -> dict | None:
    """`script --child WHICH --path PATH` run by this interpreter: the JSON of its last line, or
    None where the reader's library (polars) is not installed."""
    out = subprocess.run([sys.executable, script, "--child", which, "--path", str(path)],
                         capture_output=True, text=True)
    if out.returncode:
        if "No module named 'polars'" in out.stderr:
            return None
        raise RuntimeError(out.stderr.strip().splitlines()[-1])
    return json.loads(out.stdout.strip().splitlines()[-1])


def warm_up(read, path: Path, which: str, lines: int = 2000) -> None:
    """`read` once on the file's first lines (a sibling file, removed after): what is timed next
    is the reading, not the imports and first calls of each library."""
    head = path.with_name(f".head-{which}{path.suffix}")
    with open(path, "rb") as f:
        head.write_bytes(b"".join(f.readline() for _ in range(lines)))
    try:
        read(head)
    finally:
        head.unlink()


def cpu_seconds() -> float:
    """User + system CPU seconds of this process, all threads (steadier than wall time on a
    machine shared with other work)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def alternate(script: str, readers, path: Path, repeat: int) -> dict[str, list[dict]]:
    """Each reader measured `repeat` times, taking turns (a busy moment of the machine falls on
    every reader); a reader whose library is not installed has no runs."""
    runs: dict[str, list] = {w: [] for w in readers}
    for _ in range(repeat):
        for which in readers:
            r = measure(script, which, path)
            if r is not None:
                runs[which].append(r)
    return runs


def arguments(ap, readers, run_one):
    """The benchmark's arguments, with the child's own two; in a child (`--child WHICH --path
    P`), runs that reader, prints what it measured as JSON and exits."""
    ap.add_argument("--child", choices=tuple(readers))
    ap.add_argument("--path", type=Path)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.path)))
        raise SystemExit(0)
    return args
