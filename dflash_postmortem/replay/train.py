"""Reference DFlash drafter training loop, readable top to bottom.

A frozen hybrid target produces the hidden states of a few layers; a DFlash drafter trains on
them. Target threads push `(input_ids, loss_mask, hidden)` through a bounded queue to drafter
threads (`--transport threads`), or target and drafter run as separate processes connected by
torch.distributed (`--transport dist`: NCCL on GPUs, gloo on CPU).

Each suspected root cause of the 21.5K -> 12.4K tok/s incident is one knob:

  --lm-head-mode once|recompute|trainable   2 / 3 / 4 head matmuls per loss chunk
  --use-reentrant 0|1                        checkpoint flavour of the loss chunks (and draft layers)
  --linear-attn fast|fallback                target linear attention: chunked vs transformers' loop
  --compile eager|unguarded|main-thread|locked   how flex_attention gets compiled with many threads

tok/s, as logged every `--log-every` steps: input tokens (batch x seq, no padding here) of the
samples whose drafter optimizer step completed since the previous step line, divided by the wall
time since that line, summed over all drafter threads. `queue` is the queue depth at that moment.

    python -m dflash_postmortem.replay.train --run-name baseline --seconds 60 --pid-file run/b.pid
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
import threading
import time
import traceback
from dataclasses import asdict
from pathlib import Path

import torch

from ..metric_keys import LOSS, TOK_PER_S
from .dist import train_distributed
from .drafter import ATTN_BACKENDS, COMPILE_MODES, LM_HEAD_MODES, sample_anchors, sdpa_attention
from .faults import hang_at, raise_at
from .model import LINEAR_ATTN_IMPLS
from .ranks import Ranks
from .run_parts import TokenData, build_drafter, build_target, device_of, drafter_step, param_count
from .settings import ReplayConfig
from .telemetry import RunLog, format_step, gpu_recording, open_wandb, route_library_warnings

# ---------------------------------------------------------------- command line

def _flag01(text: str) -> bool:
    if text not in ("0", "1"):
        raise argparse.ArgumentTypeError(f"expected 0 or 1, got {text!r}")
    return text == "1"


def _gpu_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _share(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a share of wall time is in (0, 1], not {text}")
    return value


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    d = ReplayConfig()
    p.add_argument("--run-name", default=d.run_name)
    p.add_argument("--seconds", type=float, default=d.seconds, help="training time after start-up")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--pid-file", help="written once start-up is done, like the capture's trainer")
    g = p.add_argument_group("placement")
    g.add_argument("--target-gpus", type=_gpu_list, default=None, help="e.g. 0 or 0,1 (default: GPU 0; CPU without GPUs)")
    g.add_argument("--drafter-gpus", type=_gpu_list, default=None, help="e.g. 1 (default: GPU 1 if there are two, else 0)")
    g.add_argument("--cpu", action="store_true", help="run on CPU even if GPUs exist")
    g.add_argument("--target-threads", type=int, default=d.target_threads)
    g.add_argument("--drafter-threads", type=int, default=d.drafter_threads)
    g.add_argument("--transport", choices=("threads", "dist"), default=d.transport)
    g.add_argument("--queue-size", type=int, default=d.queue_size)
    g.add_argument("--cpu-share", type=_share, default=d.cpu_share,
                   help="share of wall time each worker thread computes, waiting the rest after each batch "
                        "(default 1: never waits); every rate scales by it, their ratios stay")
    g = p.add_argument_group("shapes")
    for name in ("vocab", "hidden", "layers", "heads", "seq", "batch", "draft_layers", "draft_heads",
                 "block_size", "num_anchors", "chunk_blocks"):
        g.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(d, name))
    g.add_argument("--dtype", choices=("auto", "bf16", "fp32"), default=d.dtype)
    g.add_argument("--materialize", choices=("device", "host"), default=d.materialize,
                   help="host: make the target's weights on the CPU and move them layer by layer, as "
                        "from_pretrained + .to(device) does (a large target then takes minutes to load "
                        "while its GPU memory creeps up)")
    g = p.add_argument_group("knobs (one per suspected root cause)")
    g.add_argument("--lm-head-mode", choices=LM_HEAD_MODES, default=None)
    g.add_argument("--lm-head-opt", type=_flag01, default=None,
                   help="capture's trainer flag: 1 = once, 0 = trainable (4 head matmuls per chunk)")
    g.add_argument("--use-reentrant", type=_flag01, default=d.use_reentrant)
    g.add_argument("--draft-layer-ckpt", type=_flag01, default=d.draft_layer_ckpt)
    g.add_argument("--linear-attn", choices=LINEAR_ATTN_IMPLS, default=None)
    g.add_argument("--fast-linear-attn", type=_flag01, default=None,
                   help="capture's trainer flag: 1 = fast, 0 = fallback")
    g.add_argument("--compile", choices=COMPILE_MODES, default=d.compile)
    g.add_argument("--compile-backend", default=d.compile_backend)
    g.add_argument("--attn", choices=("auto",) + ATTN_BACKENDS, default=d.attn)
    g = p.add_argument_group("telemetry")
    g.add_argument("--log-every", type=int, default=d.log_every)
    g.add_argument("--lr", type=float, default=d.lr)
    g.add_argument("--seed", type=int, default=d.seed)
    g.add_argument("--dataset-tokens", type=int, default=d.dataset_tokens)
    g.add_argument("--no-wandb", action="store_true")
    g.add_argument("--wandb-dir", help="parent folder of the offline run (default: the current folder)")
    g.add_argument("--record-gpus-dir", help="sample GPUs into this folder with the kit's NVML recorder")
    g.add_argument("--result-json", help="write steady-state numbers here at the end")
    g.add_argument("--warmup-steps", type=int, default=d.warmup_steps)
    g.add_argument("--count-flops", action="store_true", help="count model FLOPs once, for MFU")
    g.add_argument("--peak-tflops", type=float, default=None, help="per GPU; default 989 (H200 bf16 dense) on GPU")
    g.add_argument("--inject-error", help="target:N or drafter:N, to test that a thread failure stops the run")
    g.add_argument("--on-thread-error", choices=("stop", "continue"), default=d.on_thread_error,
                   help="stop the run when a thread fails (default), or let that thread die and the others "
                        "wait, as a loop without the guard does: the run then stalls")
    g.add_argument("--inject-hang", help="target:N or drafter:N: that thread blocks for good at its step N, as in a "
                                         "collective that never returns (the process lives on, holding its memory); "
                                         "init:A: a rank blocks before joining the process group in attempt A; "
                                         "exit:1: the process never exits after its last line (as one waiting "
                                         "on a worker or thread that never ends)")
    g.add_argument("--log-per-thread", action="store_true",
                   help="each drafter thread writes its own step lines with its own rate (per-thread logging)")
    g = p.add_argument_group("ranks (under torchrun: one data-parallel rank per process)")
    g.add_argument("--fault-rank", type=int, default=d.fault_rank, help="the injected faults happen on this rank only")
    g.add_argument("--fault-attempt", type=int, default=d.fault_attempt,
                   help="... in this attempt of the launcher (TORCHELASTIC_RESTART_COUNT; default 0, the first; "
                        "-1: every attempt)")
    g.add_argument("--backend", choices=("gloo", "nccl"), default=d.backend,
                   help="default: NCCL when each rank has a GPU of its own, else gloo")
    g.add_argument("--pg-timeout", type=float, default=d.pg_timeout,
                   help="seconds a collective and process-group setup wait for the other ranks")
    g = p.add_argument_group("checkpoints")
    g.add_argument("--checkpoint-dir", help="save the drafter here (step_N.pt)")
    g.add_argument("--checkpoint-every", type=int, default=d.checkpoint_every, help="drafter steps between checkpoints")
    g.add_argument("--resume", action="store_true", help="start from the newest checkpoint in --checkpoint-dir")


def config_from_args(args: argparse.Namespace) -> ReplayConfig:
    gpus = 0 if args.cpu else torch.cuda.device_count()
    target_gpus = args.target_gpus if args.target_gpus is not None else ([0] if gpus else [])
    drafter_gpus = args.drafter_gpus if args.drafter_gpus is not None else (
        [1] if gpus >= 2 else [0] if gpus else [])
    if args.cpu:
        target_gpus, drafter_gpus = [], []
    lm_head_mode = args.lm_head_mode or (
        ("once" if args.lm_head_opt else "trainable") if args.lm_head_opt is not None else "once")
    linear_attn = args.linear_attn or (
        ("fast" if args.fast_linear_attn else "fallback") if args.fast_linear_attn is not None else "fast")
    names = {f for f in ReplayConfig.__dataclass_fields__} & set(vars(args))
    cfg = ReplayConfig(**{n: getattr(args, n) for n in names})
    cfg.target_gpus, cfg.drafter_gpus = target_gpus, drafter_gpus
    cfg.lm_head_mode, cfg.linear_attn = lm_head_mode, linear_attn
    cfg.wandb = not args.no_wandb
    return cfg


def count_model_flops(cfg: ReplayConfig, target, drafter, data: TokenData) -> dict:
    """FLOPs of one target forward and one *minimal* drafter step (head once, no recompute,
    dense attention), counted by torch's FlopCounterMode on one sample and scaled to the batch.

    MFU divides these by time; the extra matmuls a knob adds (recompute, weight gradient) are
    work the model did not need, so they lower MFU instead of inflating it.
    """
    from dataclasses import replace

    from torch.utils.flop_counter import FlopCounterMode

    device = next(drafter.parameters()).device
    ids, mask = (t[:1].to(device) for t in data.sample(torch.Generator().manual_seed(0)))
    saved = (drafter.cfg, drafter.kernel.compile_mode, drafter.lm_head.requires_grad, drafter.kernel.raw)
    # FlopCounterMode cannot see inside flex_attention's BlockMask: count the SDPA twin, which does
    # the same attention arithmetic (dense, so an upper bound on what flex actually computes).
    drafter.cfg = replace(drafter.cfg, lm_head_mode="once", draft_layer_ckpt=False, attn="sdpa")
    drafter.kernel.compile_mode = "eager"
    drafter.kernel.raw = sdpa_attention
    drafter.lm_head.requires_grad_(False)
    try:
        with FlopCounterMode(display=False) as fc:
            with torch.no_grad():
                hidden = target(ids.to(next(target.parameters()).device)).to(device)
        target_flops = fc.get_total_flops()
        with FlopCounterMode(display=False) as fc:
            anchors = sample_anchors(1, ids.shape[1], drafter.cfg, torch.Generator().manual_seed(0))
            drafter(ids, hidden, mask, anchors.to(device)).backward()
        drafter_flops = fc.get_total_flops()
    finally:
        drafter.cfg, drafter.kernel.compile_mode, drafter.kernel.raw = saved[0], saved[1], saved[3]
        drafter.lm_head.requires_grad_(saved[2])
        drafter.zero_grad(set_to_none=True)
    return {"target_flops_per_batch": target_flops * cfg.batch,
            "drafter_flops_per_step": drafter_flops * cfg.batch}


# ---------------------------------------------------------------- throughput bookkeeping

class Meter:
    """Counts completed drafter steps from every thread and writes the step lines: one rate for
    all drafter threads, or (`--log-per-thread`) each thread its own line and its own rate."""

    def __init__(self, cfg: ReplayConfig, log: RunLog, run, depth=lambda: 0, step: int = 0):
        self.cfg, self.log, self.run, self.depth = cfg, log, run, depth
        self.lock = threading.Lock()
        self.step = step
        self.since: dict[int | None, list] = {}  # thread (None: all) -> [tokens, steps, time] since its line
        self.history: list[tuple[float, int, int]] = []  # (time, step, tokens), for --result-json

    def completed(self, tokens: int, loss: float, thread: int = 0) -> int:
        with self.lock:
            self.step += 1
            now = time.perf_counter()
            self.history.append((now, self.step, tokens))
            key = thread if self.cfg.log_per_thread else None
            since = self.since.setdefault(key, [0, 0, now])
            since[0] += tokens
            since[1] += 1
            due = since[1] % self.cfg.log_every == 0 if key is not None else self.step % self.cfg.log_every == 0
            if due:
                tok_s = since[0] / max(now - since[2], 1e-9)
                depth = self.depth()
                self.log.info(format_step(self.step, loss, tok_s, depth))
                self.run.log({"train/step": self.step, LOSS: loss, TOK_PER_S: tok_s,
                              "queue/depth": depth}, step=self.step)
                self.since[key] = [0, 0 if key is None else since[1], now]
            return self.step


def newest_checkpoint(folder: str | None) -> Path | None:
    found = sorted(Path(folder).glob("step_*.pt"), key=lambda p: int(p.stem[5:])) if folder else []
    return found[-1] if found else None


def _set_device(device: torch.device) -> None:
    # A new thread starts on cuda:0 whatever the main thread chose; flex/Triton kernels launched
    # on the wrong current device fail (pytorch/pytorch#141010).
    if device.type == "cuda":
        torch.cuda.set_device(device)


# ---------------------------------------------------------------- the run

def train(cfg: ReplayConfig, stream=None) -> int:
    """Run the loop; returns the process exit status (0 ok, 1 a thread or rank failed)."""
    if cfg.transport == "dist":
        return train_distributed(cfg, stream)
    log = RunLog(cfg.run_name, stream)
    route_library_warnings(stream)
    ranks = Ranks.from_env()
    if ranks.many:
        # One rank per process, on its local rank's GPU (ranks share one where there are fewer).
        gpu = ranks.device()
        cfg.target_gpus = cfg.drafter_gpus = [gpu] if gpu is not None else []
        cfg.drafter_threads = 1
        ranks.join(cfg, log, shared_gpu=gpu is not None and ranks.world > torch.cuda.device_count())
    if not ranks.faulty(cfg):
        cfg.inject_error = cfg.inject_hang = None  # `init:A` has done its work in join()
    target_devs = [device_of(g) for g in cfg.target_gpus] or [device_of(None)]
    drafter_devs = [device_of(g) for g in cfg.drafter_gpus] or [device_of(None)]
    n_target = cfg.target_threads or len(target_devs)
    n_drafter = cfg.drafter_threads or len(drafter_devs)

    log.info("Loading dataset ...")
    data = TokenData(cfg)
    log.info(f"Dataset ready: {data.tokens.numel()} tokens")

    log.info(f"Loading target model on {', '.join(map(str, target_devs))} ...")
    targets = {d: build_target(cfg, d) for d in target_devs}
    n_params = sum(p.numel() for p in next(iter(targets.values())).parameters())
    log.info(f"Target ready: {param_count(n_params)} params")

    log.info(f"Loading drafter on {', '.join(map(str, drafter_devs))} ...")
    any_target = next(iter(targets.values()))
    drafters = []
    for i in range(n_drafter):
        dev = drafter_devs[i % len(drafter_devs)]
        drafters.append((dev, *build_drafter(cfg, targets.get(dev, any_target), dev)))
    log.info("Drafter ready")

    flops = count_model_flops(cfg, any_target, drafters[0][1], data) if cfg.count_flops else {}
    if cfg.compile == "main-thread":
        # Compile every replica here, before any drafter thread exists: the threads then only hit
        # compiled code and never trace concurrently.
        g = torch.Generator().manual_seed(cfg.seed)
        for dev, drafter, _ in drafters:
            ids, mask = (t.to(dev) for t in data.sample(g))
            with torch.no_grad():
                hidden = any_target(ids.to(target_devs[0])).to(dev)
            anchors = sample_anchors(ids.shape[0], ids.shape[1], drafter.cfg, g).to(dev)
            drafter(ids, hidden, mask, anchors).backward()
            drafter.zero_grad(set_to_none=True)
        log.info("Compiled attention on the main thread")

    first_step = 0
    if cfg.checkpoint_dir:
        Path(cfg.checkpoint_dir).mkdir(parents=True, exist_ok=True)
    saved = newest_checkpoint(cfg.checkpoint_dir) if cfg.resume else None
    if saved is not None:
        # Every drafter replica starts from the saved one; step numbers go on from its step, so
        # the steps after it that the last run had done are done again.
        state = torch.load(saved, map_location="cpu")
        for _, drafter, _ in drafters:
            drafter.load_state_dict(state["drafter"], strict=False)  # the frozen parts come from the target
        first_step = state["step"]
        log.info(f"Resumed from checkpoint {saved} at step {first_step}")
    elif cfg.resume:
        log.info(f"No checkpoint in {cfg.checkpoint_dir}: starting from step 0")

    run = open_wandb(cfg.run_name, asdict(cfg), Path(cfg.wandb_dir) if cfg.wandb_dir else None,
                     cfg.wandb and ranks.rank == 0)
    q: queue.Queue = queue.Queue(maxsize=cfg.queue_size)
    meter = Meter(cfg, log, run, depth=q.qsize, step=first_step)
    stop = threading.Event()
    # the time limit or step count reached: set by the main loop, then the ranks stop together
    # (ranks.mean) after the same step; alone, at once
    stopping = threading.Event()
    failures: list[tuple[str, str]] = []
    busy = {"target_s": 0.0, "target_batches": 0, "drafter_wait_s": 0.0}

    def guarded(body):
        def run_body(*args):
            try:
                body(*args)
            except BaseException:
                if cfg.on_thread_error == "continue":
                    raise  # threading prints "Exception in thread ..." and the thread is gone
                failures.append((threading.current_thread().name, traceback.format_exc()))
                stop.set()  # one thread down stops the run: a silent stall is the worst outcome
        return run_body

    def pace(since: float) -> None:
        """Wait out the rest of this batch's share of wall time (cfg.cpu_share)."""
        if cfg.cpu_share < 1:
            stop.wait((time.perf_counter() - since) * (1 / cfg.cpu_share - 1))

    @guarded
    def target_worker(i: int, device: torch.device):
        _set_device(device)
        model, g = targets[device], torch.Generator().manual_seed(cfg.seed + 100 + i)
        step = 0
        while not stop.is_set():
            step += 1
            raise_at(cfg.inject_error, "target", step)
            hang_at(cfg.inject_hang, "target", step)
            t0 = time.perf_counter()
            ids, mask = data.sample(g)
            with torch.no_grad():
                hidden = model(ids.to(device, non_blocking=True))
            if device.type == "cuda":
                torch.cuda.current_stream(device).synchronize()  # the batch is ready before it is handed over
            busy["target_s"] += time.perf_counter() - t0
            busy["target_batches"] += 1
            pace(t0)
            while not stop.is_set():
                try:
                    q.put((ids, mask, hidden), timeout=0.1)
                    break
                except queue.Full:
                    continue

    @guarded
    def drafter_worker(i: int):
        device, drafter, opt = drafters[i]
        _set_device(device)
        g = torch.Generator().manual_seed(cfg.seed + 200 + i)
        step = 0
        while not stop.is_set():
            t0 = time.perf_counter()
            try:
                ids, mask, hidden = q.get(timeout=0.1)
            except queue.Empty:
                busy["drafter_wait_s"] += time.perf_counter() - t0
                continue
            busy["drafter_wait_s"] += time.perf_counter() - t0
            step += 1
            raise_at(cfg.inject_error, "drafter", step)
            hang_at(cfg.inject_hang, "drafter", step)
            t_step = time.perf_counter()
            ids, mask = ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)
            loss = drafter_step(drafter, opt, ids, mask, hidden.to(device, non_blocking=True), g)
            # .item() is a CPU-GPU sync point: a step's tokens count only once it has really run;
            # the mean over ranks is the job's one collective (a rank that stops stops the others)
            mean, agreed = ranks.mean(loss.item(), device, stopping.is_set())
            pace(t_step)
            done = meter.completed(ids.numel(), mean, thread=i)
            if agreed:
                stop.set()
            if cfg.checkpoint_every and done % cfg.checkpoint_every == 0 and i == 0 and ranks.rank == 0:
                path = Path(cfg.checkpoint_dir) / f"step_{done}.pt"
                # the trainable weights only: the frozen embedding and head are the target's
                trainable = {n for n, p in drafter.named_parameters() if p.requires_grad}
                torch.save({"step": done, "drafter": {k: v for k, v in drafter.state_dict().items() if k in trainable}},
                           path)
                log.info(f"Saved checkpoint at step {done}: {path}")

    threads = [threading.Thread(target=target_worker, args=(i, target_devs[i % len(target_devs)]),
                                name=f"target-{i}", daemon=True) for i in range(n_target)]
    threads += [threading.Thread(target=drafter_worker, args=(i,), name=f"drafter-{i}", daemon=True)
                for i in range(n_drafter)]
    log.info("Starting training threads")
    if cfg.pid_file:
        Path(cfg.pid_file).write_text(str(os.getpid()))
    record_dir = Path(cfg.record_gpus_dir) if cfg.record_gpus_dir and torch.cuda.is_available() else None
    with gpu_recording(record_dir, log):
        start = time.perf_counter()
        for t in threads:
            t.start()
        while not stop.is_set() and time.perf_counter() - start < cfg.seconds:
            if cfg.max_steps is not None and meter.step >= cfg.max_steps:
                break
            stop.wait(0.05)
        stopping.set()
        if ranks.many:  # the drafters' next all-reduce tells every rank; a rank gone never answers
            stop.wait(cfg.pg_timeout)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        elapsed = time.perf_counter() - start

    if failures:
        for name, tb in failures:
            log.info(f"Thread {name} failed:")
            log.raw(tb)
        log.info("Training failed")
        run.finish(exit_code=1)
        return 1  # no leave(): the group's other ranks are stuck or gone, a barrier would wait
    ranks.leave()
    log.info("Training stopped")
    run.finish()
    if cfg.result_json:
        write_result(cfg, meter, busy, elapsed, flops, n_target, n_drafter)
    hang_at(cfg.inject_hang, "exit", 1)
    return 0


def write_result(cfg, meter: Meter, busy: dict, elapsed: float, flops: dict, n_target: int, n_drafter: int):
    """Steady-state numbers: the window starts after `warmup_steps` drafter steps."""
    hist = meter.history
    from torch._dynamo.utils import counters

    # graphs compiled over the run: more than one per attention shape means recompiles
    result = {"config": asdict(cfg), "steps": meter.step, "elapsed_s": elapsed,
              "torch": torch.__version__, "compiled_graphs": counters["stats"]["unique_graphs"], **flops}
    if len(hist) > cfg.warmup_steps + 1:
        t0 = hist[cfg.warmup_steps][0]
        window = hist[cfg.warmup_steps + 1:]
        span = window[-1][0] - t0
        steps_per_s = len(window) / span
        result.update(steady_window_s=span, steady_steps=len(window),
                      tok_per_s=sum(n for _, _, n in window) / span, drafter_steps_per_s=steps_per_s,
                      target_batches_per_s=busy["target_batches"] / elapsed,
                      target_busy_fraction=busy["target_s"] / (elapsed * n_target),
                      drafter_wait_fraction=busy["drafter_wait_s"] / (elapsed * n_drafter))
        peak = cfg.peak_tflops or (989.0 if cfg.target_gpus else None)
        if flops and peak:
            # target MFU: its FLOPs at the rate the drafters consumed batches (what was useful)
            n_tgpu, n_dgpu = max(1, len(cfg.target_gpus)), max(1, len(cfg.drafter_gpus))
            result["target_mfu"] = flops["target_flops_per_batch"] * steps_per_s / (peak * 1e12 * n_tgpu)
            result["drafter_mfu"] = flops["drafter_flops_per_step"] * steps_per_s / (peak * 1e12 * n_dgpu)
            result["peak_tflops"] = peak
    Path(cfg.result_json).write_text(json.dumps(result, indent=2, default=str))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dflash_postmortem.replay.train",
                                     description=__doc__.split("\n\n")[0])
    add_train_arguments(parser)
    args = parser.parse_args(argv)
    try:
        cfg = config_from_args(args)
    except ValueError as e:
        parser.error(str(e))
    return train(cfg)


if __name__ == "__main__":
    sys.exit(main())
