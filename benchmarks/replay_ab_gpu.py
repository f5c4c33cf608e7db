"""One-factor-at-a-time A/B of the replay loop's knobs, for an H200 (1 or 2 GPUs).

Each configuration changes one knob from the baseline and runs the trainer in a fresh process
(`python -m dflash_postmortem.replay.train`) for `--seconds` of training; steady state starts after
`--warmup-steps` drafter steps (compiles done, queue primed). Writes to `--out`:

    ab_results.json   every run's numbers (the trainer's --result-json) and the environment
    ab_table.md       the A/B table: tok/s, ratio to baseline, MFU of target and drafter
    runs/NAME.log     each trainer's log
    incident/         with --full-scenario: `dflash-postmortem replay full` at the same shapes

Shapes default to the write-up's head (vocab 248320, hidden 5120) with an 8-layer hybrid target;
`--tiny` swaps in CPU-sized shapes to test the script itself. wandb is not needed (--no-wandb).

    python benchmarks/replay_ab_gpu.py --out benchmarks/_data/ab --seconds 30
    python benchmarks/replay_ab_gpu.py --out /tmp/ab --tiny --cpu --seconds 3 --only baseline,linear-attn-fallback
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

# name -> (what changes, trainer flags); ordered by priority in case the budget runs out
CONFIGS = [
    ("baseline", "-", []),
    ("linear-attn-fallback", "linear_attn=fallback", ["--linear-attn", "fallback"]),
    ("lm-head-trainable", "lm_head_mode=trainable", ["--lm-head-mode", "trainable"]),
    ("lm-head-recompute", "lm_head_mode=recompute", ["--lm-head-mode", "recompute"]),
    ("layer-ckpt-reentrant", "draft_layer_ckpt=1, use_reentrant=1", ["--draft-layer-ckpt", "1", "--use-reentrant", "1"]),
    ("layer-ckpt-nonreentrant", "draft_layer_ckpt=1, use_reentrant=0", ["--draft-layer-ckpt", "1", "--use-reentrant", "0"]),
    ("compile-unguarded", "compile=unguarded, 2 drafter threads", ["--compile", "unguarded", "--drafter-threads", "2"]),
    ("write-up", "fallback + trainable head + ckpt non-reentrant",
     ["--linear-attn", "fallback", "--lm-head-mode", "trainable", "--draft-layer-ckpt", "1", "--use-reentrant", "0"]),
]
GPU_SHAPES = ["--vocab", "248320", "--hidden", "5120", "--layers", "8", "--heads", "40", "--seq", "2048",
              "--batch", "2", "--draft-layers", "3", "--draft-heads", "40", "--block-size", "16",
              "--num-anchors", "256", "--chunk-blocks", "32", "--dataset-tokens", "262144", "--log-every", "5"]
TINY_SHAPES = ["--vocab", "1024", "--hidden", "32", "--layers", "4", "--heads", "2", "--seq", "128",
               "--batch", "2", "--draft-layers", "2", "--draft-heads", "2", "--block-size", "4",
               "--num-anchors", "8", "--chunk-blocks", "4", "--dataset-tokens", "8192", "--log-every", "5"]
HEAD_MATMULS = {"once": 2, "recompute": 3, "trainable": 4}


def placement(args) -> list[str]:
    if args.cpu:
        return ["--cpu"]
    import torch

    n = torch.cuda.device_count()
    if n == 0:
        sys.exit("no GPU visible; use --cpu (with --tiny) to test the script")
    # flex_attention must be compiled to be fast; compiling on the main thread is the safe baseline
    return ["--target-gpus", "0", "--drafter-gpus", "1" if n >= 2 else "0", "--compile", "main-thread"]


def environment(args) -> dict:
    import torch

    env = {"torch": torch.__version__, "python": platform.python_version(), "host": platform.node(),
           "cuda": torch.version.cuda, "gpus": []}
    if not args.cpu and torch.cuda.is_available():
        env["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return env


def run_config(name: str, flags: list[str], args, common: list[str]) -> dict:
    out = Path(args.out)
    result_path, log_path = out / "runs" / f"{name}.json", out / "runs" / f"{name}.log"
    cmd = [sys.executable, "-m", "dflash_postmortem.replay.train", "--run-name", name,
           "--seconds", str(args.seconds), "--warmup-steps", str(args.warmup_steps), "--no-wandb",
           "--count-flops", "--result-json", str(result_path), *common, *flags]
    if args.peak_tflops:
        cmd += ["--peak-tflops", str(args.peak_tflops)]
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT,
                                timeout=args.seconds + args.startup_limit).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    wall = time.monotonic() - t0
    result = json.loads(result_path.read_text()) if result_path.exists() else {}
    result.update(name=name, returncode=rc, wall_s=wall, log=str(log_path))
    if rc != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-8:]
        result["failure"] = " | ".join(tail)
    print(f"{name:<24} rc={rc} wall={wall:5.0f}s tok/s={result.get('tok_per_s', float('nan')):,.0f}", flush=True)
    return result


def table(results: list[dict], changes: dict, env: dict, args) -> str:
    base = next((r.get("tok_per_s") for r in results if r["name"] == "baseline"), None)

    def pct(x):
        return f"{100 * x:.1f}%" if isinstance(x, float) else "n/a"

    rows = ["| config | change from baseline | tok/s | vs baseline | drafter steps/s | target MFU | "
            "drafter MFU | drafter wait | head matmuls/chunk | note |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        tok = r.get("tok_per_s")
        cfg = r.get("config", {})
        note = "" if r["returncode"] == 0 else f"failed ({r['returncode']}): {r.get('failure', '')[:160]}"
        rows.append(
            f"| {r['name']} | {changes[r['name']]} | {tok:,.0f} | {tok / base:.2f}x | "
            f"{r['drafter_steps_per_s']:.2f} | {pct(r.get('target_mfu'))} | {pct(r.get('drafter_mfu'))} | "
            f"{pct(r.get('drafter_wait_fraction'))} | {HEAD_MATMULS.get(cfg.get('lm_head_mode'), '?')} | {note} |"
            if tok and base else
            f"| {r['name']} | {changes[r['name']]} | n/a | n/a | n/a | n/a | n/a | n/a | "
            f"{HEAD_MATMULS.get(cfg.get('lm_head_mode'), '?')} | "
            f"{note or ('no baseline in this batch (see --merge)' if tok else 'too few steps for a steady state')} |")
    head = (f"torch {env['torch']}, CUDA {env['cuda']}, GPUs: {', '.join(env['gpus']) or 'none (CPU)'}; "
            f"{args.seconds:g} s per run, steady state after {args.warmup_steps} drafter steps; "
            f"peak {args.peak_tflops or 989:g} TFLOP/s per GPU for MFU.\n\n")
    return head + "\n".join(rows) + "\n"


def merge(args) -> int:
    """One table from batches run in separate calls (a lent GPU allows ~10 minutes per command)."""
    batches = [json.loads(f.read_text()) for f in args.merge]
    results = [r for b in batches for r in b["results"]]
    env = batches[0]["environment"]
    changes = {name: change for name, change, _ in CONFIGS}
    seconds = {r.get("config", {}).get("seconds") for r in results}
    args.seconds = seconds.pop() if len(seconds) == 1 else float("nan")
    args.out.mkdir(parents=True, exist_ok=True)
    order = {name: i for i, (name, _, _) in enumerate(CONFIGS)}
    results.sort(key=lambda r: order.get(r["name"], len(order)))
    md = table(results, changes, env, args)
    (args.out / "ab_table.md").write_text(md)
    (args.out / "ab_results.json").write_text(json.dumps({"environment": env, "results": results, "skipped": [],
                                                           "merged_from": [str(f) for f in args.merge]},
                                                          indent=2, default=str))
    print(md)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seconds", type=float, default=30.0, help="training seconds per configuration")
    p.add_argument("--warmup-steps", type=int, default=10)
    p.add_argument("--startup-limit", type=float, default=240.0, help="seconds allowed for start-up and compiles")
    p.add_argument("--budget", type=float, default=480.0, help="stop starting new configurations after this many seconds")
    p.add_argument("--only", help="comma-separated configuration names")
    p.add_argument("--tiny", action="store_true", help="CPU-sized shapes, to test this script")
    p.add_argument("--cpu", action="store_true")
    p.add_argument("--peak-tflops", type=float, default=None, help="per GPU (default 989, H200 bf16 dense)")
    p.add_argument("--shape-args", default="", help="extra trainer flags, appended after the defaults")
    p.add_argument("--full-scenario", action="store_true", help="also replay `full` into OUT/incident")
    p.add_argument("--full-seconds", type=float, default=20.0)
    p.add_argument("--merge", nargs="+", type=Path, metavar="RESULTS_JSON",
                   help="combine ab_results.json files of several batches into one table in --out; run nothing")
    args = p.parse_args()
    if args.merge:
        return merge(args)

    (args.out / "runs").mkdir(parents=True, exist_ok=True)
    shapes = (TINY_SHAPES if args.tiny else GPU_SHAPES) + shlex.split(args.shape_args)
    common = shapes + placement(args)
    if args.cpu and not args.peak_tflops:
        args.peak_tflops = None  # no MFU on CPU unless a peak is given
    wanted = set(args.only.split(",")) if args.only else None
    changes = {name: change for name, change, _ in CONFIGS}
    env = environment(args)
    start, results, skipped = time.monotonic(), [], []
    for name, _, flags in CONFIGS:
        if wanted and name not in wanted:
            continue
        if time.monotonic() - start > args.budget:
            skipped.append(name)
            continue
        results.append(run_config(name, flags, args, common))
    md = table(results, changes, env, args)
    if skipped:
        md += f"\nNot run (budget of {args.budget:g} s spent): {', '.join(skipped)}\n"
    (args.out / "ab_table.md").write_text(md)
    (args.out / "ab_results.json").write_text(json.dumps({"environment": env, "results": results,
                                                           "skipped": skipped}, indent=2, default=str))
    print(md)
    if args.full_scenario:
        cmd = [sys.executable, "-m", "dflash_postmortem.cli", "replay", "full", "--out", str(args.out / "incident"),
               "--seconds", str(args.full_seconds), "--quiet", "--trainer-args", shlex.join(common)]
        print("$ " + shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=False)
    return 0 if all(r["returncode"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
