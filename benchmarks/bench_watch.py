"""What the live watch costs and how soon it speaks (dflash_postmortem/watch/live.py).

    .venv/bin/python benchmarks/bench_watch.py delays [--incident data/incidents/h200-1gpu-watched-relaunch] [--step 2] [--cpu-share 0.02]
    .venv/bin/python benchmarks/bench_watch.py cost [--gpus 8] [--minutes 5 15 30 60] [--poll 2]
    .venv/bin/python benchmarks/bench_watch.py hour [--gpus 8] [--minutes 60] [--poll 2] [--cpu-share 0.02] [--drop-min 40]
    .venv/bin/python benchmarks/bench_watch.py attempts [--attempts 30] [--minutes 5]
    .venv/bin/python benchmarks/bench_watch.py wandb [--steps 20000] [--more 100] [--repeat 5]

`delays`: a recorded incident replayed into a folder one step of its own clock at a time, as the
tests grow one (tests/support/growing.py: each
file cut at its first line stamped later), the watch looking after each step with its clock set
to that moment, paced as the command paces it (watch/pacing.py) on that clock. Each announcement's delay is the incident time of the look that made it minus the
time of the line that shows it (for "not starting": the moment its budget ran out). What this
measures is how much evidence each finding needs, plus the step; the wall-clock delays of a real
run are in the incident's README (h200-1gpu-watched-relaunch: the watch ran live on the H200).

`cost`: a synthetic training folder (an nvidia-smi query stream of N GPUs at 1 Hz and one log per
rank with a step line a second) written up to each length; at each, the CPU time of one look after
the files changed (a reload) and of one look at an unchanged folder (a listing), against plain
pandas reading the same nvidia-smi file in the same run (the baseline of the ratio): what one read costs at each length, the
figure the pacer spaces the command's steady reads by.

`hour`: the whole run followed as the command follows it, on a simulated clock: a look every
poll, the folder read when the pacer calls for it; the watch's CPU over the run, its peak RSS,
how far apart the reads fell, and each announcement's delay (a drop in tok/s at `--drop-min`).

`attempts`: a crash loop's log of many starts, the last still training: one look with what the
last read kept of the attempts that are over (model/carried.py) against the same look rebuilding
every attempt, in one run (the ratio), and the same findings from both.

`wandb`: an offline run written by the SDK (bench_wandb.py's, `--steps` steps of five metrics)
followed while its `.wandb` log grows by its last `--more` records: the read that decodes on from
the record the read before stopped at (loaders/wandb/decoding.py) against a fresh read of the same
bytes, alternating in one run (the ratio of their CPU seconds), the same frames from both.
"""

from __future__ import annotations

import argparse
import re
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))  # the incident grown again as the tests grow it

from support.growing import grow  # noqa: E402

from dflash_postmortem.loaders.folder import read_folder  # noqa: E402
from dflash_postmortem.model.carried import Carry  # noqa: E402
from dflash_postmortem.watch.live import Watch  # noqa: E402
from dflash_postmortem.watch.memory import lean_memory  # noqa: E402
from dflash_postmortem.watch.pacing import Pacer  # noqa: E402

STAMP = re.compile(r"(\d{4})[-/](\d\d)[-/](\d\d)[ T](\d\d):(\d\d):(\d\d)")


def delays(args) -> None:
    src = Path(args.incident)
    stamps = [tuple(map(int, m.groups())) for f in src.rglob("*") if f.is_file() and f.suffix in (".log", ".txt", ".csv", ".jsonl")
              for m in STAMP.finditer(f.read_text(errors="replace"))]
    first, last = min(stamps), max(stamps)
    t, end = pd.Timestamp(*first, tz="UTC"), pd.Timestamp(*last, tz="UTC") + pd.Timedelta(seconds=args.step)
    now = {"t": t}
    rows = []
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folder = Path(tmp) / "incident"
        folder.mkdir()
        # paced as the watch command paces it, on the replay's clock
        pacer = Pacer(share=args.cpu_share, clock=lambda: now["t"].timestamp())
        watch = Watch(folder, clock_now=lambda: now["t"], pacer=pacer)
        cpu = 0.0
        while t <= end:
            now["t"] = t
            grow(src, folder, f"{t:%Y-%m-%d %H:%M:%S}")
            c0 = time.process_time()
            for a in watch.look():
                shown = a.time
                if a.kind == "not_starting":  # said when its budget ran out: the look's own time
                    waited = re.search(r"no step after ([\d,]+) s \(budget ([\d,]+) s", a.text)
                    shown = t - pd.Timedelta(seconds=float(waited[1].replace(",", ""))) \
                        + pd.Timedelta(seconds=float(waited[2].replace(",", "")))
                rows.append((a.kind, a.job, shown, t, (t - shown).total_seconds(), a.text[:70]))
            cpu += time.process_time() - c0
            t += pd.Timedelta(seconds=args.step)
    print(f"# {src.name}: replayed in steps of {args.step:g} s of its clock; the watch's CPU {cpu:.1f} s over "
          f"{len(rows)} announcements")
    print("| announcement | job | shown by | said at | delay |")
    print("| --- | --- | --- | --- | --- |")
    for kind, job, shown, said, delay, text in rows:
        print(f"| {kind}: {text} | {job} | {shown:%H:%M:%S} | {said:%H:%M:%S} | {delay:.0f} s |")


def write_stream(folder: Path, gpus: int, since: int, until: int, start: pd.Timestamp,
                 drop_at: int | None = None) -> None:
    """Seconds [since, until) of an nvidia-smi query stream of `gpus` GPUs at 1 Hz and one log per
    rank, appended to what is there (a rank logs a step a second from its fifth second; from
    `drop_at` at 12.4K tok/s instead of 21.5K)."""
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    with open(folder / "logs" / "smi.csv", "a") as smi:
        if since == 0:
            smi.write("timestamp, index, uuid, memory.used [MiB], memory.total [MiB], utilization.gpu [%], power.draw [W]\n")
        for s in range(since, until):
            t = start + pd.Timedelta(seconds=s)
            for g in range(gpus):
                smi.write(f"{t:%Y/%m/%d %H:%M:%S}.{s % 1000:03d}, {g}, GPU-0000000{g}-aaaa-bbbb-cccc-dddddddddddd, "
                          f"{70000 + g} MiB, 143771 MiB, {90 + (s + g) % 7} %, {500 + g}.00 W\n")
    for rank in range(gpus):
        with open(folder / "logs" / f"rank{rank}.log", "a") as log:
            if since == 0:
                log.write(f"{start:%Y-%m-%d %H:%M:%S} [r{rank}] Loading target model on cuda:{rank} ...\n")
            for s in range(max(5, since), until):
                t = start + pd.Timedelta(seconds=s)
                level = 12400 if drop_at is not None and s >= drop_at else 21500
                log.write(f"{t:%Y-%m-%d %H:%M:%S} [r{rank}] step {s} loss {10 - s / 10000:.4f} tok/s {level + (s * 7 + rank) % 300} "
                          "queue 0\n")


def cost(args) -> None:
    start = pd.Timestamp("2026-12-03 10:00:00", tz="UTC")
    print(f"# {args.gpus} GPUs at 1 Hz and {args.gpus} rank logs, growing; at each length, one look after "
          f"{args.poll:g} s more of them (CPU seconds of this process)")
    print("| length | files | look: read | look: model and findings | a fresh read of the folder | "
          "plain pandas (smi.csv) | RSS after |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    looks = {}
    now = {"t": start}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folder = Path(tmp) / "live"
        watch = Watch(folder, clock_now=lambda: now["t"])
        written = 0
        for minutes in args.minutes:
            write_stream(folder, args.gpus, written, minutes * 60, start)
            written = minutes * 60
            now["t"] = start + pd.Timedelta(seconds=written)
            watch.look()  # catch up with the minutes written at once (not measured)
            write_stream(folder, args.gpus, written, written + int(args.poll), start)
            written += int(args.poll)
            now["t"] = start + pd.Timedelta(seconds=written)
            watch.look()
            read_s, judge_s = watch.spent["read"], watch.spent["judge"]
            size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
            c0 = time.process_time()
            read_folder(folder)
            fresh_s = time.process_time() - c0
            c0 = time.process_time()
            pd.read_csv(folder / "logs" / "smi.csv", skipinitialspace=True)
            plain_s = time.process_time() - c0
            looks[minutes] = read_s + judge_s
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"| {minutes} min | {size / 2**20:.1f} MiB | {read_s:.3f} s | {judge_s:.3f} s | {fresh_s:.2f} s | "
                  f"{plain_s:.3f} s | {rss:.0f} MiB |")
    # the folder grows linearly over the hour: the mean look is about the mean over the lengths
    mean = sum(looks.values()) / len(looks)
    print(f"\nmean read over the lengths measured: {mean:.3f} s; read at every poll of {args.poll:g} s it would take "
          f"about {min(1.0, mean / args.poll):.1%} of one core: the command paces its reads instead (`hour`)")


def hour(args) -> None:
    """The watch followed through a whole synthetic run, second by second on a simulated clock,
    as `follow` does live: a look every poll, the folder read when the pacer calls for it. The
    run's tok/s falls at `--drop-min`. (A stall needs evidence this stream does not carry, a
    process alive after its log stopped: `delays` measures one on a recorded session.)"""
    start = pd.Timestamp("2026-12-03 10:00:00", tz="UTC")
    drop, length = args.drop_min * 60, args.minutes * 60
    sim = {"s": 0}
    said, reads, cpu = [], [], 0.0
    lean_memory()  # as the watch command does
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        folder = Path(tmp) / "live"
        folder.mkdir()
        pacer = Pacer(share=args.cpu_share, clock=lambda: float(sim["s"]))
        watch = Watch(folder, clock_now=lambda: start + pd.Timedelta(seconds=sim["s"]), pacer=pacer)
        for s in range(0, length, int(args.poll)):
            write_stream(folder, args.gpus, s, s + int(args.poll), start, drop)
            sim["s"] = s + int(args.poll)
            c0 = time.process_time()
            out = watch.look()
            watch.status()  # what the status line and the metrics endpoint ask at every look
            cpu += time.process_time() - c0
            if watch.why is not None:
                reads.append((sim["s"], watch.why, watch.spent["read"] + watch.spent["judge"]))
                watch.why = None
            said += [(sim["s"], a) for a in out]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gaps = [b[0] - a[0] for a, b in zip(reads, reads[1:], strict=False)]
    late = [g for (t, _, _), g in zip(reads[1:], gaps, strict=False) if t > length * 0.75]
    print(f"# {args.gpus} GPUs at 1 Hz and {args.gpus} rank logs for {args.minutes} min on a simulated clock, a look "
          f"every {args.poll:g} s, the pacer's share {args.cpu_share:g}; tok/s falls at {args.drop_min} min")
    print(f"the watch's CPU {cpu:.1f} s over {length} s: {cpu / length:.2%} of one core; RSS {rss:.0f} MiB")
    print(f"{len(reads)} reads ({', '.join(f'{n} {why}' for why, n in pd.Series([w for _, w, _ in reads]).value_counts().items())}); "
          f"a read's cost {min(c for *_, c in reads):.2f}-{max(c for *_, c in reads):.2f} s; "
          f"steady reads {min(late):.0f}-{max(late):.0f} s apart in the last quarter" if late else "")
    print("| announcement | shown by | said at | delay |")
    print("| --- | --- | --- | --- |")
    for t, a in said:
        shown = (a.time - start).total_seconds()
        print(f"| {a.kind}: {a.text[:60]} | {shown / 60:.1f} min | {t / 60:.1f} min | {t - shown:.0f} s |")


def write_loop(folder: Path, attempts: int, minutes: int, start: pd.Timestamp, extra_s: int = 0) -> pd.Timestamp:
    """A supervisor loop's one log: `attempts` starts of `minutes` each (a step line a second),
    each but the last ending in a CUDA error, and the last going on `extra_s` seconds more;
    returns the time of the last line written. The file is written whole each call."""
    lines, t = [], start
    for k in range(attempts):
        lines.append(f"{t:%Y-%m-%d %H:%M:%S} [looped] Loading target model on cuda:0 ...")
        length = minutes * 60 + (extra_s if k == attempts - 1 else 0)
        for s in range(5, length):
            u = t + pd.Timedelta(seconds=s)
            lines.append(f"{u:%Y-%m-%d %H:%M:%S} [looped] step {s} loss {10 - s / 10000:.4f} tok/s {21500 + (s * 7) % 300} queue 0")
        t = t + pd.Timedelta(seconds=length)
        if k < attempts - 1:
            lines += ["Traceback (most recent call last):", '  File "train.py", line 258, in train',
                      "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"]
            t += pd.Timedelta(seconds=10)  # the loop's pause before the next start
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    (folder / "logs" / "loop.log").write_text("\n".join(lines) + "\n")
    return t


def attempts(args) -> None:
    """One look at a crash loop's folder (`--attempts` starts of `--minutes` each in one log, the
    last still training) after two more seconds of it, with what the last read kept of the
    attempts that are over (model/carried.py) against the same look without it, in one run."""
    start = pd.Timestamp("2026-12-03 10:00:00", tz="UTC")
    print(f"# a crash loop of {args.attempts} starts of {args.minutes} min in one log, the last one training; "
          "one look after 2 s more of it (CPU seconds of the model and the findings; median of 5)")
    warnings.simplefilter("ignore")
    spent = {}
    for keep in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "live"
            now = {"t": write_loop(folder, args.attempts, args.minutes, start)}
            watch = Watch(folder, clock_now=lambda now=now: now["t"])
            watch.look()
            times = []
            for k in range(1, 6):
                if not keep:
                    watch.carry = Carry()  # as if every read rebuilt the model from scratch
                now["t"] = write_loop(folder, args.attempts, args.minutes, start, extra_s=2 * k)
                watch.look()
                times.append(watch.spent["judge"])
            spent[keep] = sorted(times)[2]
            found = watch.findings[["kind", "start", "title"]].to_string()
            spent[keep, "found"] = found
    assert spent[True, "found"] == spent[False, "found"], "the kept attempts changed the findings"
    print(f"| rebuilt at every read | attempts that are over taken as they were | ratio |\n| --- | --- | --- |\n"
          f"| {spent[False]:.3f} s | {spent[True]:.3f} s | {spent[False] / spent[True]:.2f}x |")


def wandb(args) -> None:
    import shutil

    import bench_wandb

    from dflash_postmortem import schema
    from dflash_postmortem.loaders.following import GrowingFolder
    from dflash_postmortem.loaders.wandb import log as wandb_log

    log = bench_wandb.write_run(args.steps)
    data = log.read_bytes()
    scan = wandb_log.scan(data)
    cut = scan.offsets[-args.more]  # where the last `--more` records begin
    on, whole = [], []
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / log.parent.name
        for _ in range(args.repeat):
            shutil.rmtree(run, ignore_errors=True)
            shutil.copytree(log.parent, run)
            (run / log.name).write_bytes(data[:cut])
            reader = GrowingFolder()
            read_folder(run.parent, reader=reader, sniffed=reader.sniffed)
            (run / log.name).write_bytes(data)
            c0 = time.process_time()
            a = read_folder(run.parent, reader=reader, sniffed=reader.sniffed)
            c1 = time.process_time()
            b = read_folder(run.parent)
            c2 = time.process_time()
            on.append(c1 - c0)
            whole.append(c2 - c1)
            for name in schema.FRAME_NAMES:
                pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
            (kept,) = reader.kept.values()
            assert kept.fresh == args.more, (kept.fresh, args.more)
    on_s, whole_s = sorted(on)[len(on) // 2], sorted(whole)[len(whole) // 2]
    print(f"{log.name}: {len(data) / 2**20:.1f} MiB, {len(scan.records):,} records, grown by the last {args.more}")
    print(f"read on from the last record: {on_s:.3f} CPU-s (median of {args.repeat}: {min(on):.3f}-{max(on):.3f})")
    print(f"read whole again:             {whole_s:.3f} CPU-s ({min(whole):.3f}-{max(whole):.3f})")
    print(f"ratio: {whole_s / on_s:.2f}x")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    d = sub.add_parser("delays")
    d.add_argument("--incident", default=str(REPO / "data" / "incidents" / "h200-1gpu-watched-relaunch"))
    d.add_argument("--step", type=float, default=2.0)
    d.add_argument("--cpu-share", type=float, default=0.02)
    c = sub.add_parser("cost")
    c.add_argument("--gpus", type=int, default=8)
    c.add_argument("--minutes", type=int, nargs="+", default=[5, 15, 30, 60])
    c.add_argument("--poll", type=float, default=2.0)
    h = sub.add_parser("hour")
    h.add_argument("--gpus", type=int, default=8)
    h.add_argument("--minutes", type=int, default=60)
    h.add_argument("--poll", type=float, default=2.0)
    h.add_argument("--cpu-share", type=float, default=0.02)
    h.add_argument("--drop-min", type=int, default=40)
    a = sub.add_parser("attempts")
    a.add_argument("--attempts", type=int, default=30)
    a.add_argument("--minutes", type=int, default=5)
    w = sub.add_parser("wandb")
    w.add_argument("--steps", type=int, default=20_000)
    w.add_argument("--more", type=int, default=100)
    w.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    {"delays": delays, "cost": cost, "hour": hour, "attempts": attempts, "wandb": wandb}[args.what](args)


if __name__ == "__main__":
    main()
