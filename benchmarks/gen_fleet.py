"""A synthetic GPU fleet with a planted incident, in the formats real fleets leave on disk.

    .venv/bin/python benchmarks/gen_fleet.py OUT --hosts 64 [--gpus-per-host 8] --hours 6 \
        [--start 2026-11-28T00:00:00] [--seed 0] [--no-prometheus] [--jobs 2]

Writes, per host, what the kit reads (issue #16 item 6):

- `HOST/smi.csv`: `nvidia-smi --query-gpu=timestamp,index,uuid,name,memory.used,memory.total,
  utilization.gpu,utilization.memory,power.draw,temperature.gpu,clocks.sm --format=csv -l 1`,
  with units, as nvidia-smi prints it (one row per GPU per second);
- `HOST/train_rankN.log`: one log per rank of the host's synchronous DFlash job, in the DFlash
  trainer's format (`YYYY-mm-dd HH:MM:SS [run] step N loss X tok/s Y queue Q`), every rank
  printing the job's throughput;
- `prometheus/dcgm.om`: the same GPUs as the DCGM exporter exposes them, as
  `promtool tsdb dump-openmetrics` prints a TSDB (`--no-prometheus` skips it for big runs);
- `incident.toml` (hosts, roles, and the host of every file: nothing in an nvidia-smi CSV or a
  log line names its host) and `truth.json`, the planted faults.

Each host runs its own synchronous job: target model on GPUs 0..5, drafter on 6..7 (DFlash), so
every step waits for the slowest GPU of the host. Three faults are planted on three different
hosts chosen by the seed:

- straggler: from `--straggler-at` one GPU throttles (HW thermal slowdown: SM clock ~1050 MHz,
  90 C) and stays at 100 % utilization while it sets the pace; the host's other GPUs wait at
  ~55 % and the job's tok/s falls to ~55 % on every rank of the host. With `--straggler-in
  clocks` the fault shows only in its clock and power (SM clock ~1050 MHz, ~290 W, at 100 %):
  the other GPUs keep their utilization, spinning in NCCL as they wait, as a synchronous job's do;
- gpu_lost: from `--lost-at` one GPU fell off the bus: nvidia-smi prints `[GPU is lost]` / `ERR!`
  in its rows, the kernel log has Xid 79, DCGM reports DCGM_FI_DEV_XID_ERRORS 79 and stops its
  other metrics; the host's job hangs in NCCL (the other GPUs at 100 % util, steps stop) until
  the watchdog times out 10 minutes later, prints it on every surviving rank and exits (0 MiB);
- restart_never_came_up: at `--restart-at` the operator stops the host's job (0 MiB from then on)
  and relaunches it 30 s later (`operator.log`, a shell transcript); the relaunch never comes up:
  no process, no log line, GPUs at 0 MiB to the end.

Writing is streaming and vectorised: an hour of one host at a time, formatted by Arrow compute
kernels and written from the string buffer (no Python string per row), hosts in parallel with
`--jobs`. Deterministic for a given seed and arguments. 512 GPUs x 3 days (132.7 M rows, 18.8 GB
of CSV, 19.9 GB in all) took 753 s with `--jobs 2` on the shared 2-core machine, without the
Prometheus dump (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

# --straggler-in clocks: `clocks_event_reasons.active` too, the throttled GPU's HW thermal slowdown.
REASONS_FIELD = ", clocks_event_reasons.active"
HW_THERMAL, NO_REASON = "0x0000000000000040", "0x0000000000000000"
HEADER = ("timestamp, index, uuid, name, memory.used [MiB], memory.total [MiB], utilization.gpu [%], "
          "utilization.memory [%], power.draw [W], temperature.gpu, clocks.sm [MHz]")
MODEL = "NVIDIA H200"
TOTAL_MIB = 143771
RESERVED_MIB = 479  # what DCGM's FB_FREE leaves out besides FB_USED
MAX_SM_MHZ = 1980
IDLE_SM_MHZ = 345
# HGX H200 bus ids by GPU index (the kernel log names a GPU by its bus).
BUS_IDS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
TARGET_GPUS = (0, 1, 2, 3, 4, 5)  # the frozen target model: heavy memory, busy
TOKENS_PER_STEP = 16384
BASE_TOK_PER_S = 21500.0
STRAGGLER_PACE = 0.55  # the throttled GPU runs at ~1050/1980 of its clock: the job at ~55 %
NCCL_TIMEOUT_S = 600  # torch's default collective timeout: how long a hung job holds its GPUs
RELAUNCH_AFTER_S = 30
CHUNK_S = 3600  # one hour of one host in memory at a time (8 GPUs: 28,800 rows, ~4 MB of text)
LOST = "[GPU is lost]"
PROM_METRICS = ("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL",
                "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_XID_ERRORS")  # sorted: the dump's series order


@dataclass(frozen=True)
class Fault:
    kind: str  # straggler | gpu_lost | restart_never_came_up
    host: str
    gpu: int | None
    start: str  # ISO UTC
    note: str


@dataclass(frozen=True)
class Plan:
    out: str
    hosts: int
    gpus: int
    seconds: int
    start: pd.Timestamp
    seed: int
    prometheus: bool
    prom_every: int
    log_every: int
    straggler: tuple[int, int, int]  # host index, gpu, second
    lost: tuple[int, int, int]
    restart: tuple[int, int]  # host index, second of the relaunch
    straggler_in: str = "util"  # util: the others wait at ~55 %; clocks: only its clock and power show it

    def host(self, h: int) -> str:
        return f"node{h + 1:03d}"


def _uuid(rng: np.random.Generator) -> str:
    x = rng.integers(0, 16, 32)
    s = "".join("0123456789abcdef"[i] for i in x)
    return f"GPU-{s[:8]}-{s[8:12]}-{s[12:16]}-{s[16:20]}-{s[20:]}"


def _text(values) -> pa.Array:
    return pc.cast(pa.array(np.asarray(values).ravel()), pa.string())


def _with(col: pa.Array, suffix: str) -> pa.Array:
    return pc.binary_join_element_wise(col, suffix, "") if suffix else col


def _centi(values: np.ndarray) -> pa.Array:
    """Watts with the two decimals nvidia-smi always prints (`78.84`, `700.00`)."""
    c = np.rint(np.asarray(values).ravel() * 100).astype(np.int64)
    frac = pc.utf8_lpad(_text(c % 100), 2, "0")
    return pc.binary_join_element_wise(_text(c // 100), frac, ".")


def _write_rows(f, cols: list[pa.Array]) -> None:
    """Join columns with ", ", end each row with a newline, write the Arrow string buffer as is."""
    rows = pc.binary_join_element_wise(pc.binary_join_element_wise(*cols, ", "), "", "\n")
    if isinstance(rows, pa.ChunkedArray):
        rows = rows.combine_chunks()
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int32)[rows.offset: rows.offset + len(rows) + 1]
    f.write(memoryview(rows.buffers()[2])[offsets[0]: offsets[-1]])


class HostSeries:
    """One host's GPU readings and job throughput, second by second, chunk after chunk."""

    def __init__(self, plan: Plan, h: int):
        self.plan, self.h = plan, h
        self.rng = np.random.default_rng([plan.seed, h])
        g = plan.gpus
        self.uuids = [_uuid(self.rng) for _ in range(g)]
        target = np.array([i in TARGET_GPUS for i in range(g)])
        self.mem = np.where(target, 121344, 38912) + self.rng.integers(-64, 64, g)
        self.util = np.where(target, 96.0, 88.0)
        self.mem_util = np.where(target, 45.0, 30.0)
        self.power = np.where(target, 620.0, 480.0)
        self.temp = 58 + self.rng.integers(0, 8, g)
        self.ms_offset = int(self.rng.integers(0, 900))  # where in the second this host's -l 1 loop ticks
        self.tok = BASE_TOK_PER_S * (1 + 0.01 * self.rng.standard_normal())

    def chunk(self, t0: int, n: int) -> dict[str, np.ndarray]:
        """Readings for seconds [t0, t0 + n): arrays of shape (n, gpus)."""
        p, g, rng = self.plan, self.plan.gpus, self.rng
        t = np.arange(t0, t0 + n)[:, None]
        shape = (n, g)
        r = {
            "mem": np.broadcast_to(self.mem, shape) + rng.integers(0, 3, shape),
            "util": np.clip(np.rint(self.util + 2.5 * rng.standard_normal(shape)), 0, 100),
            "mem_util": np.clip(np.rint(self.mem_util + 3 * rng.standard_normal(shape)), 0, 100),
            "power": self.power + 15 * rng.standard_normal(shape),
            "temp": np.broadcast_to(self.temp, shape) + rng.integers(0, 3, shape),
            "clock": np.full(shape, MAX_SM_MHZ) - 15 * (rng.random(shape) < 0.05),
            "lost": np.zeros(shape, dtype=bool),
        }
        if p.straggler_in == "clocks":
            r["reasons"] = np.zeros(shape, dtype=bool)  # HW thermal slowdown, per GPU and second
        pace = np.ones(n)
        sh, sg, st = p.straggler
        if self.h == sh:
            slow = (t >= st)[:, 0]
            others = np.arange(g) != sg
            if p.straggler_in == "clocks":
                r["util"][slow, sg] = 100  # the slow one works flat out; the others' waiting spins
                r["clock"][slow, sg] = 1050 + 15 * rng.integers(-1, 2, slow.sum())
                r["power"][slow, sg] = 290 + 10 * rng.standard_normal(slow.sum())
                r["reasons"][slow, sg] = True
            else:
                r["util"][slow] = np.where(others, np.clip(np.rint(55 + 4 * rng.standard_normal((slow.sum(), g))), 0, 100),
                                           100)
                r["clock"][slow, sg] = 1050 + 15 * rng.integers(-1, 2, slow.sum())
                r["temp"][slow, sg] = 89 + rng.integers(0, 3, slow.sum())
                r["power"][slow] = np.where(others, 380 + 15 * rng.standard_normal((slow.sum(), g)), 450)
            pace[slow] = STRAGGLER_PACE
        lh, lg, lt = p.lost
        if self.h == lh:
            hung = ((t >= lt) & (t < lt + NCCL_TIMEOUT_S))[:, 0]
            r["util"][hung] = 100  # NCCL kernels spin, waiting for the lost rank
            r["power"][hung] = 330 + 10 * rng.standard_normal((hung.sum(), g))
            self._idle(r, (t >= lt + NCCL_TIMEOUT_S)[:, 0])
            r["lost"][(t >= lt)[:, 0], lg] = True
            pace[(t >= lt)[:, 0]] = 0
        rh, rt = p.restart
        if self.h == rh:
            stopped = (t >= rt - RELAUNCH_AFTER_S)[:, 0]
            self._idle(r, stopped)
            pace[stopped] = 0
        r["pace"] = pace
        return r

    def _idle(self, r: dict, rows: np.ndarray) -> None:
        k = int(rows.sum())
        if not k:
            return
        g = self.plan.gpus
        r["mem"][rows] = 0
        r["util"][rows] = 0
        r["mem_util"][rows] = 0
        r["power"][rows] = 76 + 2 * self.rng.random((k, g))
        r["temp"][rows] = 33 + self.rng.integers(0, 3, (k, g))
        r["clock"][rows] = IDLE_SM_MHZ

    def stamps_ms(self, t0: int, n: int) -> np.ndarray:
        """Epoch ms of each row: the loop's tick, a few ms further for each GPU it queries."""
        base = self.plan.start.value // 1_000_000 + 1000 * np.arange(t0, t0 + n)[:, None] + self.ms_offset
        return base + 2 * np.arange(self.plan.gpus)[None, :] + self.rng.integers(0, 4, (n, self.plan.gpus))


def write_csv_chunk(f, s: HostSeries, t0: int, r: dict) -> None:
    n, g = r["util"].shape
    ms = s.stamps_ms(t0, n)
    stamps = pc.strftime(pa.array(ms.ravel()).cast(pa.timestamp("ms")), format="%Y/%m/%d %H:%M:%S")
    lost = pa.array(r["lost"].ravel())
    cols = [
        stamps,
        _text(np.broadcast_to(np.arange(g), (n, g))),
        pc.cast(pa.array(np.broadcast_to(np.array(s.uuids, dtype=object), (n, g)).ravel()), pa.string()),
        pa.array([MODEL] * (n * g)),
        _with(_text(r["mem"]), " MiB"),
        _with(_text(np.full(n * g, TOTAL_MIB)), " MiB"),
        _with(_text(r["util"].astype(np.int64)), " %"),
        _with(_text(r["mem_util"].astype(np.int64)), " %"),
        _with(_centi(r["power"]), " W"),
        _text(r["temp"]),
        _with(_text(r["clock"].astype(np.int64)), " MHz"),
    ]
    if "reasons" in r:
        cols.append(pc.cast(pa.array(np.where(r["reasons"].ravel(), HW_THERMAL, NO_REASON)), pa.string()))
    if r["lost"].any():
        # A GPU off the bus: NVML answers nothing for it; nvidia-smi still enumerates its index.
        for i in range(2, len(cols)):
            bad = "ERR!" if i in (8, 9) else LOST
            cols[i] = pc.if_else(lost, bad, cols[i])
    _write_rows(f, cols)


def _log_line(when: pd.Timestamp, run: str, text: str) -> str:
    return f"{when:%Y-%m-%d %H:%M:%S} [{run}] {text}\n"


class RankLogs:
    """The host's per-rank training logs: the same step and job throughput on every rank."""

    def __init__(self, plan: Plan, h: int, folder: Path):
        self.plan, self.h = plan, h
        self.ranks = [h * plan.gpus + i for i in range(plan.gpus)]
        self.files = [open(folder / f"train_rank{r}.log", "w") for r in self.ranks]
        self.runs = [f"{plan.host(h)}-rank{r}" for r in self.ranks]
        self.rng = np.random.default_rng([plan.seed, h, 1])
        self.step = 0.0
        for f, run, i in zip(self.files, self.runs, range(plan.gpus), strict=True):
            role = "target" if i in TARGET_GPUS else "drafter"
            f.write(_log_line(plan.start, run, f"Loading {role} on cuda:{i} ..."))
            f.write(_log_line(plan.start, run, "Starting training threads"))

    def chunk(self, t0: int, tok_per_s: float, pace: np.ndarray) -> None:
        p = self.plan
        rate = tok_per_s * pace / TOKENS_PER_STEP  # steps per second
        steps = self.step + np.cumsum(rate)
        self.step = float(steps[-1])
        at = np.arange(t0, t0 + len(pace))
        every = (at % p.log_every == p.log_every - 1) & (pace > 0)
        if not every.any():
            return
        idx = np.flatnonzero(every)
        tok = tok_per_s * pace[idx] * (1 + 0.01 * self.rng.standard_normal(len(idx)))
        loss = 2.2 + 0.8 * np.exp(-at[idx] / 20000) + 0.05 * self.rng.standard_normal(len(idx))
        when = pd.DatetimeIndex(p.start + pd.to_timedelta(at[idx] + 1, unit="s")).strftime("%Y-%m-%d %H:%M:%S")
        body = [f"step {int(st)} loss {lo:.4f} tok/s {int(tk)} queue 2\n"
                for st, lo, tk in zip(steps[idx], loss, tok, strict=True)]
        for f, run in zip(self.files, self.runs, strict=True):
            f.write("".join(f"{w} [{run}] {b}" for w, b in zip(when, body, strict=True)))

    def watchdog(self, when: pd.Timestamp, lost_gpu: int, seq: int) -> None:
        for i, (f, run, rank) in enumerate(zip(self.files, self.runs, self.ranks, strict=True)):
            if i == lost_gpu:
                continue  # the rank on the lost GPU hangs in the driver and prints nothing
            f.write(_log_line(when, run, f"[Rank {rank}] Watchdog caught collective operation timeout: "
                                         f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                                         f"Timeout(ms)={NCCL_TIMEOUT_S * 1000}) ran for {NCCL_TIMEOUT_S * 1000 + 37} "
                                         f"milliseconds before timing out."))

    def close(self) -> None:
        for f in self.files:
            f.close()


def _prom_labels(plan: Plan, h: int, gpu: int, uuid: str) -> str:
    # Labels in the order Prometheus sorts them, with its `, ` separator (labels.Labels.String).
    return (f'{{Hostname="{plan.host(h)}", UUID="{uuid}", device="nvidia{gpu}", gpu="{gpu}", '
            f'instance="{plan.host(h)}:9400", job="dcgm-exporter", modelName="{MODEL}"}}')


def write_prometheus_part(plan: Plan, h: int, s: HostSeries, scraped: dict[str, np.ndarray], path: Path) -> None:
    """This host's series of the dump, in the dump's order (Hostname, then UUID, then metric name)."""
    t = scraped["t"]
    secs = (plan.start.value // 1_000_000_000 + t + 0.25).astype(np.float64)  # scrapes land 250 ms in
    ts = [f"{x:.3f}" for x in secs]
    with open(path, "w") as f:
        for gpu in sorted(range(plan.gpus), key=lambda i: s.uuids[i]):
            lost = scraped["lost"][:, gpu]
            labels = _prom_labels(plan, h, gpu, s.uuids[gpu])
            values = {
                "DCGM_FI_DEV_FB_FREE": TOTAL_MIB - RESERVED_MIB - scraped["mem"][:, gpu],
                "DCGM_FI_DEV_FB_USED": scraped["mem"][:, gpu],
                "DCGM_FI_DEV_GPU_UTIL": scraped["util"][:, gpu],
                "DCGM_FI_DEV_POWER_USAGE": np.round(scraped["power"][:, gpu], 3),
                "DCGM_FI_DEV_XID_ERRORS": np.where(lost, 79, 0),
            }
            for name in PROM_METRICS:
                # DCGM cannot read a GPU off the bus: only its last Xid is still exported.
                keep = np.ones(len(t), dtype=bool) if name == "DCGM_FI_DEV_XID_ERRORS" else ~lost
                f.write("".join(f"{name}{labels} {v:g} {x}\n" for v, x, k in zip(values[name], ts, keep, strict=True) if k))


def write_host(plan: Plan, h: int) -> dict:
    """Everything one host leaves on disk; returns its UUIDs (for truth.json)."""
    out = Path(plan.out)
    folder = out / plan.host(h)
    folder.mkdir(parents=True, exist_ok=True)
    s = HostSeries(plan, h)
    logs = RankLogs(plan, h, folder)
    scraped: dict[str, list] = {k: [] for k in ("t", "mem", "util", "power", "lost")}
    with open(folder / "smi.csv", "wb") as f:
        # the clocks mode also prints why the driver holds each GPU's clocks down
        f.write((HEADER + (REASONS_FIELD if plan.straggler_in == "clocks" else "") + "\n").encode())
        for t0 in range(0, plan.seconds, CHUNK_S):
            n = min(CHUNK_S, plan.seconds - t0)
            r = s.chunk(t0, n)
            write_csv_chunk(f, s, t0, r)
            logs.chunk(t0, s.tok, r["pace"])
            if plan.prometheus:
                at = np.arange(t0, t0 + n)
                keep = at % plan.prom_every == 0
                scraped["t"].append(at[keep])
                for k in ("mem", "util", "power", "lost"):
                    scraped[k].append(r[k][keep])
    lh, lg, lt = plan.lost
    if h == lh and lt + NCCL_TIMEOUT_S < plan.seconds:
        logs.watchdog(plan.start + pd.Timedelta(seconds=lt + NCCL_TIMEOUT_S), lg, seq=int(logs.step))
    logs.close()
    if h == lh:
        when = plan.start + pd.Timedelta(seconds=lt)
        bus = BUS_IDS[lg % len(BUS_IDS)]
        with open(folder / "kern.log", "w") as f:
            f.write(f"{when:%Y-%m-%dT%H:%M:%S}.{when.microsecond:06d}+00:00 {plan.host(h)} kernel: NVRM: "
                    f"Xid (PCI:0000:{bus}:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n")
    rh, rt = plan.restart
    if h == rh:
        write_operator_log(plan, h, folder / "operator.log")
    if plan.prometheus:
        part = {k: np.concatenate(v) for k, v in scraped.items()}
        write_prometheus_part(plan, h, s, part, out / "prometheus" / f".{plan.host(h)}.part")
    return {"host": plan.host(h), "uuids": s.uuids}


def write_operator_log(plan: Plan, h: int, path: Path) -> None:
    """The restart of the host's job, as the operator's shell transcript shows it."""
    rt = plan.restart[1]
    stop = plan.start + pd.Timedelta(seconds=rt - RELAUNCH_AFTER_S)
    relaunch = plan.start + pd.Timedelta(seconds=rt)
    log = f"/srv/dflash/logs/train_rank{h * plan.gpus}.log"

    def stamp(t: pd.Timestamp) -> str:
        return f"[{t:%Y-%m-%dT%H:%M:%S}.{t.microsecond // 1000:03d}Z]"

    path.write_text(
        f"{stamp(stop)} $ kill -TERM $(cat /srv/dflash/run/train.pid)\n"
        f"{stamp(relaunch)} $ cd /srv/dflash && setsid nohup torchrun --nproc-per-node {plan.gpus} train.py "
        f"--run-name {plan.host(h)}-restart >> {log} 2>&1 < /dev/null & disown; echo launched\n"
        "launched\n"
    )


def write_incident_toml(plan: Plan, path: Path) -> None:
    hosts = [plan.host(h) for h in range(plan.hosts)]
    drafter = [i for i in range(plan.gpus) if i not in TARGET_GPUS]
    lines = [
        f'title = "SYNTHETIC fleet: {plan.hosts} hosts x {plan.gpus} GPUs, {plan.seconds / 3600:g} h (gen_fleet.py, seed {plan.seed})"',
        'timezone = "UTC"',
        f"hosts = {json.dumps(hosts)}",
        f"expected_tok_per_s = {BASE_TOK_PER_S:g}",
        'ignore = ["truth.json"]  # the answer key, not evidence',
        "",
        "[roles]",
        f"target = {json.dumps([i for i in TARGET_GPUS if i < plan.gpus])}",
        f"drafter = {json.dumps(drafter)}",
    ]
    lh, rh = plan.lost[0], plan.restart[0]
    for h, host in enumerate(hosts):
        files = ["smi.csv"] + [f"train_rank{h * plan.gpus + i}.log" for i in range(plan.gpus)]
        files += ["kern.log"] if h == lh else []
        files += ["operator.log"] if h == rh else []
        for name in files:
            lines += ["", "[[sources]]", f'path = "{host}/{name}"', f'host = "{host}"']
    path.write_text("\n".join(lines) + "\n")


def make_plan(args) -> Plan:
    seconds = int(round(args.hours * 3600))
    if args.hosts < 3:
        raise SystemExit(f"--hosts: the three faults need three hosts, got {args.hosts}")
    if not 2 <= args.gpus_per_host <= len(BUS_IDS):
        raise SystemExit(f"--gpus-per-host: expected 2..{len(BUS_IDS)}, got {args.gpus_per_host}")
    if seconds < 1200:
        raise SystemExit(f"--hours: expected at least 20 minutes (0.34), got {args.hours}")
    rng = np.random.default_rng([args.seed, 12345])
    sh, lh, rh = (int(x) for x in rng.choice(args.hosts, 3, replace=False))
    sg, lg = (int(x) for x in rng.integers(0, args.gpus_per_host, 2))

    def at(hours, default_fraction):
        s = int(round((hours if hours is not None else default_fraction * args.hours) * 3600))
        if not 0 < s < seconds:
            raise SystemExit(f"a fault time must fall inside the run (0, {args.hours} h), got {s / 3600:g} h")
        return s

    return Plan(
        out=str(args.out), hosts=args.hosts, gpus=args.gpus_per_host, seconds=seconds,
        start=pd.Timestamp(args.start, tz="UTC") if pd.Timestamp(args.start).tzinfo is None
        else pd.Timestamp(args.start).tz_convert("UTC"),
        seed=args.seed, prometheus=not args.no_prometheus, prom_every=args.prom_every, log_every=args.log_every,
        straggler=(sh, sg, at(args.straggler_at, 0.25)), lost=(lh, lg, at(args.lost_at, 0.4)),
        restart=(rh, at(args.restart_at, 0.6)), straggler_in=args.straggler_in,
    )


def truth(plan: Plan, uuids: dict[str, list[str]]) -> dict:
    def iso(s: int) -> str:
        return (plan.start + pd.Timedelta(seconds=s)).isoformat()

    sh, sg, st = plan.straggler
    lh, lg, lt = plan.lost
    rh, rt = plan.restart
    faults = [
        Fault("straggler", plan.host(sh), sg, iso(st),
              f"SM clock ~1050 MHz at 100 % util; the host's other GPUs wait at ~55 %, its tok/s x{STRAGGLER_PACE}"
              if plan.straggler_in == "util" else
              f"SM clock ~1050 MHz and ~290 W; every GPU's utilization unchanged; its tok/s x{STRAGGLER_PACE}"),
        Fault("gpu_lost", plan.host(lh), lg, iso(lt),
              f"[GPU is lost] rows, Xid 79; the host's job hangs in NCCL and exits {NCCL_TIMEOUT_S} s later"),
        Fault("restart_never_came_up", plan.host(rh), None, iso(rt),
              f"job stopped {RELAUNCH_AFTER_S} s before the relaunch; no log line or GPU memory after it"),
    ]
    return {
        "hosts": plan.hosts, "gpus_per_host": plan.gpus, "start": plan.start.isoformat(),
        "end": iso(plan.seconds), "seed": plan.seed, "tokens_per_step": TOKENS_PER_STEP,
        "faults": [asdict(f) for f in faults],
        "uuids": uuids,
    }


def generate(plan: Plan, jobs: int = 1) -> dict:
    out = Path(plan.out)
    out.mkdir(parents=True, exist_ok=True)
    if plan.prometheus:
        (out / "prometheus").mkdir(exist_ok=True)
    if jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            done = list(pool.map(write_host, [plan] * plan.hosts, range(plan.hosts)))
    else:
        done = [write_host(plan, h) for h in range(plan.hosts)]
    if plan.prometheus:
        with open(out / "prometheus" / "dcgm.om", "wb") as dump:
            for h in range(plan.hosts):  # host names sort as their indices: the dump's series order
                part = out / "prometheus" / f".{plan.host(h)}.part"
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, dump, 1 << 22)
                part.unlink()
            dump.write(b"# EOF\n")
    write_incident_toml(plan, out / "incident.toml")
    t = truth(plan, {d["host"]: d["uuids"] for d in done})
    (out / "truth.json").write_text(json.dumps(t, indent=2) + "\n")
    return t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--gpus-per-host", type=int, default=8)
    ap.add_argument("--hours", type=float, required=True)
    ap.add_argument("--start", default="2026-11-28T00:00:00", help="UTC start of the captures")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--straggler-at", type=float, help="hours from the start (default: a quarter in)")
    ap.add_argument("--straggler-in", choices=("util", "clocks"), default="util",
                    help="what shows the straggler: the others' utilization too, or only its clock and power")
    ap.add_argument("--lost-at", type=float, help="hours from the start (default: 0.4 of the run)")
    ap.add_argument("--restart-at", type=float, help="hours from the start of the relaunch (default: 0.6)")
    ap.add_argument("--no-prometheus", action="store_true", help="skip the DCGM dump (big runs)")
    ap.add_argument("--prom-every", type=int, default=15, help="scrape interval, s")
    ap.add_argument("--log-every", type=int, default=10, help="seconds between a rank's step lines")
    ap.add_argument("--jobs", type=int, default=1, help="hosts written in parallel")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    t = generate(make_plan(args), jobs=args.jobs)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{args.out}: {t['hosts']} hosts x {t['gpus_per_host']} GPUs, {args.hours:g} h, {size / 1e9:.2f} GB "
          f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    for f in t["faults"]:
        print(f"  {f['kind']}: {f['host']} gpu {f['gpu']} from {f['start']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
