"""The second transport: target and drafter as separate processes joined by torch.distributed.

Ranks 0..T-1 are targets, T..T+D-1 drafters (T = len(--target-gpus), D = len(--drafter-gpus), one
each on CPU); target t serves drafter t mod D, so T >= D. Drafters pull: a drafter sends its target
a one-element control tensor (1 = send a batch, 0 = stop) and receives `input_ids, loss_mask,
hidden`. A target computes its next batch before it waits for the request, so target and drafter
overlap by one batch, the same depth-one prefetch a queue of size 1 gives.

NCCL on GPUs, gloo on CPU. The first drafter writes the step lines; tokens are summed over all
drafters at every step line, and the same all-reduce carries the stop decision so that every rank
stops at the same step. A rank that raises takes the whole run down (torch.multiprocessing kills
the others), and its traceback goes to the log.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist

from ..errors import UsageError
from ..metric_keys import LOSS, TOK_PER_S
from .drafter import DFlashDrafter
from .faults import hang_at, raise_at
from .model import build_target_layer_ids
from .run_parts import (
    TokenData,
    build_target,
    device_of,
    draft_config,
    drafter_step,
    dtype_of,
    param_count,
)
from .telemetry import RunLog, format_step, open_wandb, route_library_warnings


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _layout(cfg):
    targets = cfg.target_gpus or [None]
    drafters = cfg.drafter_gpus or [None]
    if len(targets) < len(drafters):
        raise UsageError(f"--transport dist needs at least as many targets ({len(targets)}) as drafters ({len(drafters)})")
    return targets, drafters


def train_distributed(cfg, stream=None) -> int:
    import torch.multiprocessing as mp

    targets, drafters = _layout(cfg)
    log = RunLog(cfg.run_name, stream)
    ctx = mp.start_processes(_rank_main, args=(cfg, _free_port()), nprocs=len(targets) + len(drafters),
                             join=False, start_method="spawn")
    try:
        while not ctx.join():
            pass
    except mp.ProcessRaisedException as e:
        log.info(f"Rank {e.error_index} failed:")
        log.raw(str(e))
        log.info("Training failed")
        return 1
    except mp.ProcessExitedException as e:
        log.info(f"Rank {e.error_index} exited with {e.exit_code}")
        log.info("Training failed")
        return 1
    return 0


def _rank_main(rank: int, cfg, port: int) -> None:
    targets, drafters = _layout(cfg)
    n_t = len(targets)
    is_target = rank < n_t
    device = device_of(targets[rank] if is_target else drafters[rank - n_t])
    if device.type == "cuda":
        torch.cuda.set_device(device)
    else:  # ranks share the cores; oversubscribed CPU ranks crawl
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // (n_t + len(drafters))))
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                            init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=n_t + len(drafters))
    drafter_group = dist.new_group(list(range(n_t, n_t + len(drafters))))  # every rank must call it
    route_library_warnings()
    log = RunLog(cfg.run_name)
    try:
        if is_target:
            _serve_target(cfg, rank, n_t, len(drafters), device, log)
        else:
            _run_drafter(cfg, rank - n_t, n_t, len(drafters), device, log, drafter_group)
    finally:
        dist.destroy_process_group()


def _serve_target(cfg, i: int, n_t: int, n_d: int, device, log: RunLog) -> None:
    dst = n_t + i % n_d
    if i == 0:
        log.info("Loading dataset ...")
    data = TokenData(cfg)
    if i == 0:
        log.info(f"Dataset ready: {data.tokens.numel()} tokens")
        log.info(f"Loading target model on {device} ...")
    model = build_target(cfg, device)
    if i == 0:
        log.info(f"Target ready: {param_count(sum(p.numel() for p in model.parameters()))} params")
    if i < n_d:  # the drafter's first source hands it the frozen embedding and head
        dist.send(model.embed.weight.data.contiguous(), dst)
        dist.send(model.lm_head.weight.data.contiguous(), dst)
    g = torch.Generator().manual_seed(cfg.seed + 100 + i)
    ctrl = torch.zeros(1, dtype=torch.long, device=device)
    step = 0
    while True:
        step += 1
        raise_at(cfg.inject_error, "target", step)
        hang_at(cfg.inject_hang, "target", step)
        ids, mask = (t.to(device) for t in data.sample(g))
        with torch.no_grad():
            hidden = model(ids)
        dist.recv(ctrl, src=dst)
        if ctrl.item() == 0:
            return
        for t in (ids, mask, hidden):
            dist.send(t.contiguous(), dst)


def _run_drafter(cfg, j: int, n_t: int, n_d: int, device, log: RunLog, group) -> None:
    lead = j == 0
    sources = [t for t in range(n_t) if t % n_d == j]
    dtype = dtype_of(cfg)
    n_ctx = len(build_target_layer_ids(cfg.layers, cfg.draft_layers))
    if lead:
        log.info(f"Loading drafter on {device} ...")
    embed = torch.empty(cfg.vocab, cfg.hidden, dtype=dtype, device=device)
    head = torch.empty_like(embed)
    dist.recv(embed, src=sources[0])
    dist.recv(head, src=sources[0])
    torch.manual_seed(cfg.seed + 1)
    with torch.device(device):
        drafter = DFlashDrafter(draft_config(cfg, device), cfg.hidden, n_ctx, embed, head,
                                mask_token_id=cfg.vocab - 1).to(dtype)
    opt = torch.optim.AdamW(drafter.trainable_parameters(), lr=cfg.lr)
    ids = torch.empty(cfg.batch, cfg.seq, dtype=torch.long, device=device)
    mask = torch.empty(cfg.batch, cfg.seq, device=device)
    hidden = torch.empty(cfg.batch, cfg.seq, n_ctx * cfg.hidden, dtype=dtype, device=device)
    want, done = (torch.full((1,), v, dtype=torch.long, device=device) for v in (1, 0))
    run = open_wandb(cfg.run_name, asdict(cfg), Path(cfg.wandb_dir) if cfg.wandb_dir else None,
                     cfg.wandb and lead)
    if lead:
        log.info("Drafter ready")
        log.info("Starting training processes")
        if cfg.pid_file:  # the process an operator would signal is the launcher, our parent
            Path(cfg.pid_file).write_text(str(os.getppid()))
    g = torch.Generator().manual_seed(cfg.seed + 200 + j)
    start = line_time = time.perf_counter()
    step, tokens = 0, 0
    while True:
        src = sources[step % len(sources)]
        dist.send(want, src)
        for t in (ids, mask, hidden):
            dist.recv(t, src=src)
        step += 1
        raise_at(cfg.inject_error, "drafter", step)
        hang_at(cfg.inject_hang, "drafter", step)
        loss = drafter_step(drafter, opt, ids, mask, hidden, g).item()
        tokens += ids.numel()
        if step % cfg.log_every:
            continue
        out_of_time = time.perf_counter() - start >= cfg.seconds
        out_of_steps = cfg.max_steps is not None and step * n_d >= cfg.max_steps
        stats = torch.tensor([tokens, float(out_of_time or out_of_steps)], dtype=torch.float64, device=device)
        dist.all_reduce(stats, group=group)
        now = time.perf_counter()
        if lead:
            tok_s = stats[0].item() / (now - line_time)
            # no queue between processes: the depth shown is 0
            log.info(format_step(step * n_d, loss, tok_s, 0))
            run.log({"train/step": step * n_d, LOSS: loss, TOK_PER_S: tok_s,
                     "queue/depth": 0}, step=step * n_d)
        tokens, line_time = 0, now
        if stats[1].item() > 0:
            break
    for src in sources:
        dist.send(done, src)
    if lead:
        log.info("Training stopped")
    run.finish()
    hang_at(cfg.inject_hang, "exit", 1)
