"""Write data/incidents/seed-8gpu-reconstruction/: the write-up's incident, rebuilt from its figures.

This is a SYNTHETIC RECONSTRUCTION, not a capture. Nobody recorded that night; the write-up
published a handful of numbers and verbatim outputs, and this script puts them back on a clock in
the same file formats the real tools write (the ones the loaders read), so that every detector can
be exercised on the shape of the original incident. Everything the write-up quotes is reproduced
verbatim; everything between the quotes (noise, timings, PIDs, memory ramps) is invented and
marked as such in the README.

Run: .venv/bin/python scripts/make_seed_reconstruction.py [OUT_DIR]
The output is deterministic (fixed seed): running it twice gives identical files.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "data" / "incidents" / "seed-8gpu-reconstruction"
DAY = dt.date(2026, 5, 9)
HOST = "pve-gpu8"
N_GPUS = 8
MEM_TOTAL_MIB = 97887  # RTX PRO 6000 Blackwell (96 GB)

# The published figures.
BASELINE_TOK_S = 21_500
DEGRADED_TOK_S = 12_400
# `nvidia-smi --query-gpu=index,memory.used,utilization.gpu` 60 s after the ssh relaunch.
RELAUNCH_SNAPSHOT = [(87069, 9), (72649, 12), (84829, 18), (58155, 9), (60835, 9), (8725, 0),
                     (11145, 0), (11145, 0)]

# Invented between the published points (documented in the README).
RECOVERED_TOK_S = 20_900
TOKENS_PER_STEP = 16_384
LOG_EVERY_STEPS = 25
STALE_PID, BASELINE_PID, OPT_PID, RELAUNCH_PID = 2231, 30517, 41877, 48213
TRAIN = "python3 train_dflash.py --config configs/qwen3.6-27b-dflash.yaml --target-gpus 0,1,2,3,4,5 --drafter-gpus 6,7"
BASE_FLAGS = "--use-reentrant True --lm-head-opt 1 --compile-flex 0"
OPT_FLAGS = "--use-reentrant False --lm-head-opt 1 --compile-flex 1 --drafter-threads 4"
FLA_WARNING = (
    "The fast path is not available because one of the required library is not installed. "
    "Falling back to torch implementation. To install follow "
    "https://github.com/fla-org/flash-linear-attention#installation and "
    "https://github.com/Dao-AILab/causal-conv1d"
)


def t(hms: str) -> dt.datetime:
    return dt.datetime.combine(DAY, dt.time.fromisoformat(hms))


# The night, in order (all UTC).
STALE_STARTED = t("18:51:07")
BASELINE_LAUNCH = t("19:02:10")
BASELINE_KILL = t("20:14:30")
OPT_LAUNCH = t("20:16:05")
OPT_KILL = t("21:31:40")
RESTART_PCT = t("21:32:05")
CHECK = t("21:33:10")
RELAUNCH_SSH = t("21:36:30")
SNAPSHOT = RELAUNCH_SSH + dt.timedelta(seconds=60)
CAPTURE_START, CAPTURE_END = t("18:58:00"), t("22:30:00")


def stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S")


class Run:
    """One trainer process: its log lines, and when it held which GPU memory."""

    def __init__(self, name, pid, launch, flags, level, noise, stop, rng, *, warnings=(), crash=None,
                 killed_message=None, memory=None):
        self.name, self.pid, self.launch, self.flags, self.stop = name, pid, launch, flags, stop
        self.lines: list[str] = []
        self.memory = memory
        at = launch + dt.timedelta(seconds=4)
        self.say(at, "Loading dataset ...")
        at += dt.timedelta(seconds=17)
        self.say(at, "Dataset ready: 187432960 tokens")
        self.say(at, "Loading target model on cuda:0,1,2,3,4,5 ...")
        self.loading = at
        at += dt.timedelta(seconds=109)
        self.say(at, "Target ready: 27.36B params")
        for w in warnings:
            self.say(at, f"WARNING {w}")
        self.say(at, "Loading drafter on cuda:6,7 ...")
        at += dt.timedelta(seconds=21)
        self.say(at, "Drafter ready")
        self.say(at, "Starting training threads")
        self.training = at
        step, loss = 0, 6.1
        crash_at = None if crash is None else at + dt.timedelta(seconds=crash[0])
        while True:
            step += LOG_EVERY_STEPS
            ramp = 0.55 if step == LOG_EVERY_STEPS else 1.0  # first interval includes warm-up
            tok_s = level * ramp * (1 + noise * rng.standard_normal())
            at += dt.timedelta(seconds=LOG_EVERY_STEPS * TOKENS_PER_STEP / tok_s)
            if at >= stop:
                break
            loss = max(2.2, loss - 0.0009 * LOG_EVERY_STEPS * (1 + 0.3 * rng.standard_normal()))
            self.say(at, f"step {step} loss {loss + 0.08 * rng.standard_normal():.4f} tok/s {tok_s:.0f} queue 2")
            if crash_at is not None and at >= crash_at:
                self.lines.extend(crash[1])
                crash_at = None
        if killed_message:
            for msg in killed_message(step):
                self.say(stop, msg)
        self.first_step = self.training

    def say(self, when: dt.datetime, text: str) -> None:
        self.lines.append(f"{stamp(when)} [{self.name}] {text}")


COMPILE_RACE = [
    "Exception in thread drafter-2:",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/threading.py", line 1075, in _bootstrap_inner',
    "    self.run()",
    '  File "/workspace/train_dflash.py", line 412, in drafter_worker',
    "    out = flex_attention(q, k, v, block_mask=mask)",
    '  File "/usr/local/lib/python3.12/dist-packages/torch/_dynamo/eval_frame.py", line 655, in _fn',
    "    return fn(*args, **kwargs)",
    "torch._dynamo.exc.InternalTorchDynamoError: RuntimeError: dictionary changed size during iteration "
    "(torch.compile(flex_attention) traced concurrently from 4 drafter threads)",
]


def gpu_memory(when: dt.datetime, runs: list[Run], rng) -> list[tuple[float, float]]:
    """(memory.used MiB, utilization %) of each GPU at `when`: the run alive then, ramping while it loads."""
    alive = [r for r in runs if r.loading <= when < r.stop]
    if not alive:
        return [(0.0, 0.0)] * N_GPUS
    r = alive[-1]
    steady, util = r.memory
    if r.launch <= SNAPSHOT < r.stop:
        # the relaunch: memory ramps up to exactly the published snapshot, then stays there
        if when < SNAPSHOT:
            frac = (when - r.loading).total_seconds() / (SNAPSHOT - r.loading).total_seconds()
            return [(float(round(m * frac)), 0.0) for m, _ in RELAUNCH_SNAPSHOT]
        if when == SNAPSHOT:
            return [(float(m), float(u)) for m, u in RELAUNCH_SNAPSHOT]
        frac = 1.0
    else:
        frac = min(1.0, (when - r.loading).total_seconds() / 150)
    out = []
    for g in range(N_GPUS):
        mem = steady[g] * frac + (rng.integers(-40, 40) if frac == 1.0 else 0)
        busy = util[g] + rng.integers(-6, 6) if when >= r.training and util[g] else 0
        out.append((float(max(0, round(mem))), float(max(0, min(100, busy)))))
    return out


def ps_line(pid, start: dt.datetime, now: dt.datetime, cpu, rss, stat, command) -> str:
    cpu_s = int(cpu / 100 * (now - start).total_seconds())
    return (f"root     {pid:>6} {cpu:>5.1f} {100 * rss / 792e6:>4.1f} {rss * 9:>8} {rss:>6} ?        "
            f"{stat:<4} {start:%H:%M} {cpu_s // 60:>6}:{cpu_s % 60:02d} {command}")


def main(out: Path) -> None:
    rng = np.random.default_rng(20260509)
    baseline_mem = ([86210, 83918, 85507, 84016, 83877, 82964, 24811, 24811], [72, 70, 74, 69, 71, 68, 88, 88])
    opt_mem = ([85904, 83602, 85311, 83790, 83540, 82713, 31407, 31407], [41, 40, 43, 39, 40, 38, 46, 46])
    relaunch_mem = ([m for m, _ in RELAUNCH_SNAPSHOT], [63, 61, 66, 58, 60, 0, 84, 84])
    runs = [
        Run("baseline", BASELINE_PID, BASELINE_LAUNCH, BASE_FLAGS, BASELINE_TOK_S, 0.008, BASELINE_KILL, rng,
            memory=baseline_mem,
            killed_message=lambda s: ["received SIGTERM, saving checkpoint", f"checkpoint saved at step {s}"]),
        Run("opt", OPT_PID, OPT_LAUNCH, OPT_FLAGS, DEGRADED_TOK_S, 0.02, OPT_KILL, rng, memory=opt_mem,
            warnings=[FLA_WARNING,
                      "48 of 64 target layers use the torch fallback for linear attention (flash-linear-attention not installed)",
                      "lm_head optimisation inactive: 4 redundant 248320 x 5120 lm_head matmuls per chunk"],
            crash=(340, COMPILE_RACE)),
        Run("opt2", RELAUNCH_PID, RELAUNCH_SSH, BASE_FLAGS, RECOVERED_TOK_S, 0.01, CAPTURE_END, rng,
            memory=relaunch_mem),
    ]

    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for r, name in zip(runs, ("train.log", "train_opt.log", "train_opt2.log"), strict=True):
        (logs / name).write_text("\n".join(r.lines) + "\n")

    # nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu --format=csv,noheader -l 30
    smi = []
    when = CAPTURE_START
    while when <= CAPTURE_END:
        ms = int(rng.integers(0, 900))
        for g, (mem, util) in enumerate(gpu_memory(when, runs, rng)):
            smi.append(f"{when:%Y/%m/%d %H:%M:%S}.{ms + 3 * g:03d}, {g}, {mem:.0f} MiB, {util:.0f} %")
        when += dt.timedelta(seconds=30)
        # one sample lands exactly on the operator's check 60 s after the relaunch
        if when - dt.timedelta(seconds=30) < SNAPSHOT < when:
            when = SNAPSHOT
    (logs / "gpu_query.csv").write_text("\n".join(smi) + "\n")

    # ps aux filtered to python, one block a minute, headed by the UTC time of the snapshot.
    ps = []
    when = CAPTURE_START
    while when <= CAPTURE_END:
        ps.append(f"# {when:%Y-%m-%dT%H:%M:%SZ}")
        ps.append("USER        PID %CPU %MEM      VSZ    RSS TTY      STAT START   TIME COMMAND")
        ps.append(ps_line(STALE_PID, STALE_STARTED, when, 0.0, 61240, "S", "python3 /workspace/tools/shard_watch.py --dir /workspace/hidden_states"))
        for r in runs:
            if r.launch + dt.timedelta(seconds=2) <= when < r.stop:
                ps.append(ps_line(r.pid, r.launch, when, 312.0, 18_400_000, "Rl", f"{TRAIN} {r.flags}"))
        when += dt.timedelta(seconds=60)
    (logs / "ps_aux_snapshots.txt").write_text("\n".join(ps) + "\n")

    def cmd(when, text, *output):
        return [f"[{when:%Y-%m-%dT%H:%M:%S}.{rng.integers(0, 999):03d}Z] $ {text}", *output]

    op = []
    op += cmd(BASELINE_LAUNCH, f"pct exec 101 -- tmux new -d -s train 'cd /workspace && {TRAIN} {BASE_FLAGS} 2>&1 | tee /workspace/train.log'")
    op += cmd(BASELINE_KILL, f"pct exec 101 -- kill -TERM {BASELINE_PID}")
    op += cmd(OPT_LAUNCH, f"pct exec 101 -- tmux new -d -s opt 'cd /workspace && {TRAIN} {OPT_FLAGS} 2>&1 | tee /workspace/train_opt.log'")
    op += cmd(OPT_KILL, f"pct exec 101 -- kill -TERM {OPT_PID}")
    op += cmd(RESTART_PCT, f"pct exec 101 -- bash -c 'cd /workspace && nohup {TRAIN} {BASE_FLAGS} > /workspace/train_opt2.log 2>&1 &'")
    op += cmd(CHECK, "ps aux | grep python3 | grep -v grep | wc -l", "1")
    op += cmd(CHECK + dt.timedelta(seconds=6), "nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader",
              *[f"{g}, 0 MiB, 0 %" for g in range(N_GPUS)])
    op += cmd(CHECK + dt.timedelta(seconds=14), "cat /workspace/train_opt2.log",
              "cat: /workspace/train_opt2.log: No such file or directory")
    op += cmd(RELAUNCH_SSH, f"ssh root@10.10.0.101 'cd /workspace && nohup {TRAIN} {BASE_FLAGS} > /workspace/train_opt2.log 2>&1 < /dev/null & disown; sleep 3; pgrep -f train_dflash.py'",
              str(RELAUNCH_PID))
    op += cmd(SNAPSHOT, "nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader",
              *[f"{g}, {m} MiB, {u} %" for g, (m, u) in enumerate(RELAUNCH_SNAPSHOT)])
    tail_at = SNAPSHOT + dt.timedelta(minutes=4)
    shown = [line for line in runs[2].lines if line[:19] <= stamp(tail_at)][-1]
    op += cmd(tail_at, "tail -n 1 /workspace/train_opt2.log", shown)
    (logs / "operator.log").write_text("\n".join(op) + "\n")

    (out / "incident.toml").write_text(INCIDENT_TOML)
    (out / "README.md").write_text(README)


INCIDENT_TOML = f'''title = "SYNTHETIC RECONSTRUCTION of the write-up's incident: DFlash drafter on 8 x RTX PRO 6000 Blackwell, 21.5K -> 12.4K tok/s"
timezone = "UTC"
date = "{DAY.isoformat()}"
hosts = ["{HOST}"]
expected_tok_per_s = {BASELINE_TOK_S}
recovery_fraction = 0.9

[roles]
target = [0, 1, 2, 3, 4, 5]
drafter = [6, 7]

[[sources]]
path = "logs/gpu_query.csv"
format = "nvidia-smi-query-csv"
fields = ["timestamp", "index", "memory.used", "utilization.gpu"]
host = "{HOST}"
'''

README = f"""# seed-8gpu-reconstruction: a SYNTHETIC RECONSTRUCTION, not a capture

Generated by `scripts/make_seed_reconstruction.py` (deterministic; rerun it to regenerate). No
file here was recorded on a real machine. The write-up of the original incident published a few
figures and verbatim outputs; this folder puts them on one clock in the formats the real tools
write, so that the kit's loaders and detectors can be exercised on the incident's shape.

## Published figures reproduced verbatim
- 8 x 96 GB GPUs (RTX PRO 6000 Blackwell, {MEM_TOTAL_MIB} MiB each); intended split 6 target
  (GPUs 0-5) + 2 drafter (GPUs 6, 7).
- DFlash drafter throughput {BASELINE_TOK_S} tok/s, falling to about {DEGRADED_TOK_S} tok/s after a
  relaunch. Causes under investigation, each left as evidence in `logs/train_opt.log` / the
  launch command: lm_head optimisation inactive (four redundant 248K x 5120 matmuls per chunk);
  `use_reentrant` flipped True -> False; flash-linear-attention missing (48 of 64 target layers on
  the slow path); a multi-threaded `torch.compile(flex_attention)` tracing race crashing a
  drafter thread.
- A restart with `nohup` inside `pct exec`; the process did not survive the exec session.
- The operator's check: `ps aux | grep python3 | grep -v grep | wc -l` -> `1`, all eight GPUs at
  `0 MiB`, `cat: /workspace/train_opt2.log: No such file or directory`.
- A relaunch through one ssh command chaining nohup, disown and a check; 60 s later
  `nvidia-smi --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader` shows
  {", ".join(f"`{g}, {m} MiB, {u} %`" for g, (m, u) in enumerate(RELAUNCH_SNAPSHOT))}.

## Invented (not in the write-up)
The date ({DAY}), every time of day, the PIDs, the noise on throughput (about 1-2 %), the
memory and utilization of each GPU outside the published snapshot, the stale process's command
(`shard_watch.py`, PID {STALE_PID}, the one python3 process the check counted), the log
wording of stages, warnings and the traceback, the command-line flags, the launch via
`tmux` for the first two runs, and the throughput after the relaunch ({RECOVERED_TOK_S} tok/s,
about {RECOVERED_TOK_S / BASELINE_TOK_S:.2f} of baseline, with GPU 5 holding little memory and
idle: the 5 heavy + 3 light split persists).

## Timeline (UTC, as generated)
| time | what |
| --- | --- |
| {STALE_STARTED:%H:%M:%S} | stale `python3 shard_watch.py` (PID {STALE_PID}) already running |
| {BASELINE_LAUNCH:%H:%M:%S} | run `baseline` launched in tmux; ~{BASELINE_TOK_S} tok/s |
| {BASELINE_KILL:%H:%M:%S} | `baseline` stopped to apply the optimisations |
| {OPT_LAUNCH:%H:%M:%S} | run `opt` launched with `{OPT_FLAGS}`; ~{DEGRADED_TOK_S} tok/s |
| {OPT_KILL:%H:%M:%S} | operator notices, kills `opt` |
| {RESTART_PCT:%H:%M:%S} | restart with nohup inside `pct exec`: never comes up |
| {CHECK:%H:%M:%S} | check: 1 python3 process, all GPUs 0 MiB, log missing |
| {RELAUNCH_SSH:%H:%M:%S} | relaunch via ssh (nohup, disown, pgrep) as run `opt2` |
| {SNAPSHOT:%H:%M:%S} | nvidia-smi: 5 heavy + 3 light GPUs |

## Files (formats as the real tools write them)
| path | form |
| --- | --- |
| `logs/train.log`, `logs/train_opt.log`, `logs/train_opt2.log` | trainer stdout: `YYYY-MM-DD HH:MM:SS [run] step N loss L tok/s T queue Q` |
| `logs/operator.log` | shell transcript: `[UTC ISO time] $ command`, then its output |
| `logs/gpu_query.csv` | `nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu --format=csv,noheader -l 30` (field list in `incident.toml`) |
| `logs/ps_aux_snapshots.txt` | `ps aux` filtered to python every 60 s, each block headed `# <UTC ISO time>` |
"""


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
