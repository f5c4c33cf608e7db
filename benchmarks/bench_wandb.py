"""Reading a large offline wandb run: our reader vs the SDK's own (`wandb leet inspect --json`).

    .venv/bin/python benchmarks/bench_wandb.py [--steps 200000] [--repeat 3]

Writes a 200 000-step offline run with the real SDK (WANDB_MODE=offline, five metrics a step)
under benchmarks/_data/ once, then measures in the same process:

- baseline: `wandb leet inspect --json FILE` (the SDK's Go reader) piped into pandas: its JSON
  lines parsed and the history records turned into a long metrics frame;
- ours: `load_wandb_run(FILE)`, from bytes on disk to the final, schema-conformed metrics frame
  (plus system stats, console events, config and summary).

Both rates are records of the .wandb file per second; the script prints the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "_data" / "wandb"
WANDB_CLI = Path(sys.executable).with_name("wandb")


def write_run(steps: int) -> Path:
    """A real offline run written by the installed SDK; reused when already there."""
    done = DATA / f"steps-{steps}.done"
    if done.exists():
        return Path(done.read_text().strip())
    DATA.mkdir(parents=True, exist_ok=True)
    code = f"""
import math, wandb
run = wandb.init(project="bench", name="bench-{steps}", dir={str(DATA)!r},
                 config={{"steps": {steps}}}, settings=wandb.Settings(console="off"))
for i in range({steps}):
    run.log({{"train/loss": 10.0 * math.exp(-i / {steps}), "train/tok_per_s": 21500.0 + (i % 97),
             "train/lr": 3e-4, "queue/depth": i % 5, "train/step": i}})
run.finish()
print(run.dir)
"""
    env = dict(os.environ, WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(DATA))
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
    files_dir = Path(out.stdout.strip().splitlines()[-1])
    log = next(files_dir.parent.glob("run-*.wandb"))
    print(f"wrote {log} ({log.stat().st_size / 2**20:.1f} MiB) in {time.perf_counter() - t0:.0f} s")
    done.write_text(str(log))
    return log


def baseline(path: Path) -> tuple[int, pd.DataFrame]:
    """The SDK's reader, as a user would script it today: JSON lines into a long frame."""
    with tempfile.TemporaryDirectory() as wd:
        env = dict(os.environ, WANDB_DIR=wd)
        out = subprocess.run(
            [str(WANDB_CLI), "leet", "inspect", "--json", str(path)],
            env=env, cwd=wd, check=True, capture_output=True,
        ).stdout
    records = [json.loads(line) for line in out.splitlines()]
    rows = []
    for r in records:
        if r.get("type") == "history":
            item = r["history"]["item"]
            step, ts = item.get("_step"), item.get("_timestamp")
            for k, v in item.items():
                if not k.startswith("_") and isinstance(v, (int, float)):
                    rows.append((ts, step, k, float(v)))
    df = pd.DataFrame(rows, columns=["time", "step", "metric", "value"])
    df["time"] = pd.to_datetime(df["time"], unit="s", utc=True)
    return len(records), df


def ours(path: Path):
    from dflash_postmortem import load_wandb_run

    return load_wandb_run(path)


def best(fn, repeat):
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    path = write_run(args.steps)

    t_base, (n_records, base_df) = best(lambda: baseline(path), args.repeat)
    t_ours, inc = best(lambda: ours(path), args.repeat)
    rep = inc.load_report.files[0]
    assert rep.read == n_records, (rep.read, n_records)
    hist = inc.metrics[~inc.metrics["metric"].str.startswith("system/")]
    assert len(hist) == len(base_df), (len(hist), len(base_df))

    size = path.stat().st_size / 2**20
    print(f"file: {path.name}, {size:.1f} MiB, {n_records} records, {args.steps} steps")
    print(f"baseline  wandb leet inspect --json | pandas: {t_base:6.2f} s  {n_records / t_base:10,.0f} records/s")
    print(f"ours      load_wandb_run -> metrics frame:    {t_ours:6.2f} s  {n_records / t_ours:10,.0f} records/s")
    print(f"ratio: {t_base / t_ours:.1f}x  (target >= 5x); metrics rows {len(inc.metrics):,}")


if __name__ == "__main__":
    main()
