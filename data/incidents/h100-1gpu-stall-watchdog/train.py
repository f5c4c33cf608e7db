"""Train a small GPT-style LM on a synthetic token stream.

    python3 train.py --max-steps 1500 >> logs/train.log 2>&1 &      (watchdog.sh starts it so)

Batches are made by a prefetch thread, up to --prefetch ahead of the loop, through a bounded queue.
A checkpoint goes to ckpt/step_NNNNNN.pt every --ckpt-every steps and at the end; --resume goes on
from the newest one. On SIGTERM it stops after the current step and saves a checkpoint.
"""
import argparse
import glob
import math
import os
import queue
import signal
import sys
import threading
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--max-steps", type=int, default=1500)
p.add_argument("--resume", action="store_true", help="go on from the newest checkpoint in --ckpt-dir")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--ckpt-every", type=int, default=200)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=20)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--warmup", type=int, default=100)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--prefetch", type=int, default=8, help="batches the prefetch thread may run ahead")
p.add_argument("--seed", type=int, default=1337)
p.add_argument("--fault-at-step", type=int, default=-1,
               help="testing: force a reshuffle of the data order before the batch of this step")
args = p.parse_args()

torch.manual_seed(args.seed)
device = args.device
cuda = device.startswith("cuda")
torch.backends.cuda.matmul.allow_tf32 = True
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.block_size


def make_batch(i, order_seed):
    """The batch of step i, (batch, block + 1) token ids: random walks over the vocabulary (each id
    the last plus 0-15), seeded by the data order and the step, so a resumed run sees the same batches."""
    g = torch.Generator().manual_seed(order_seed * 1_000_003 + i)
    start = torch.randint(0, args.vocab_size, (args.batch_size, 1), generator=g)
    walk = (start + torch.randint(0, 16, (args.batch_size, args.block_size + 1), generator=g).cumsum(1)) % args.vocab_size
    return walk.pin_memory() if cuda else walk


class Prefetcher:
    """Makes the batches of steps first, first + 1, ... in a background thread, `depth` ahead."""

    def __init__(self, first, depth):
        self.batches = queue.Queue(maxsize=depth)
        self.lock = threading.Lock()  # guards the cursor and the data order
        self.next_step = first
        self.order_seed = args.seed
        threading.Thread(target=self.run, name="prefetch", daemon=True).start()

    def reshuffle(self, seed):
        with self.lock:
            self.order_seed = seed

    def run(self):
        while True:
            with self.lock:
                i = self.next_step
                self.next_step += 1
                if i == args.fault_at_step:
                    self.reshuffle(args.seed + i)
                seed = self.order_seed
            self.batches.put(make_batch(i, seed))

    def get(self):
        return self.batches.get()


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln_1 = nn.LayerNorm(n_embd)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(args.vocab_size, args.n_embd)
        self.wpe = nn.Embedding(args.block_size, args.n_embd)
        self.h = nn.ModuleList(Block(args.n_embd, args.n_head) for _ in range(args.n_layer))
        self.ln_f = nn.LayerNorm(args.n_embd)
        self.lm_head = nn.Linear(args.n_embd, args.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)
print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, {tokens_per_step} tokens "
      f"per step, device {device}", flush=True)

step = 0
if args.resume:
    found = sorted(glob.glob(os.path.join(args.ckpt_dir, "step_*.pt")))
    if found:
        state = torch.load(found[-1], map_location=device, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        print(f"resumed from {found[-1]} (step {step})", flush=True)
    else:
        print(f"--resume: no checkpoint in {args.ckpt_dir}/, starting from scratch", flush=True)
else:
    print("starting from scratch", flush=True)


def lr_at(s):
    if s < args.warmup:
        return args.lr * (s + 1) / args.warmup
    frac = min(1.0, (s - args.warmup) / max(1, args.max_steps - args.warmup))
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))


def save_checkpoint():
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"step_{step:06d}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, path + ".tmp")
    os.replace(path + ".tmp", path)
    print(f"checkpoint saved: {path}", flush=True)


stop_requested = False


def on_sigterm(signum, frame):
    global stop_requested
    stop_requested = True
    print("received SIGTERM, will stop after this step", flush=True)


signal.signal(signal.SIGTERM, on_sigterm)
data = Prefetcher(step, args.prefetch)

saved = step
t0 = time.time()
while step < args.max_steps and not stop_requested:
    lr = lr_at(step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    chunk = data.get().to(device, non_blocking=True)
    with ctx:
        loss = model(chunk[:, :-1], chunk[:, 1:])
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        print(f"step {step}/{args.max_steps} loss {lossf:.3f} lr {lr:.1e} "
              f"tok/s {args.log_every * tokens_per_step / (t1 - t0):.0f}", flush=True)
        t0 = t1
    if step % args.ckpt_every == 0 or step == args.max_steps:
        save_checkpoint()
        saved = step
        t0 = time.time()
if stop_requested:
    if saved != step:
        save_checkpoint()
    print(f"stopped at step {step} (SIGTERM)", flush=True)
    sys.exit(128 + signal.SIGTERM)
print(f"done: {step} steps", flush=True)
