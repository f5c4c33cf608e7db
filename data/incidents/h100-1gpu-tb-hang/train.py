"""Train a small GPT-style LM on a synthetic token stream; metrics go to TensorBoard.

    nohup python3 train.py --run-name lm-a > nohup.out 2>&1 &
    tensorboard --logdir runs

Batches are made by a producer thread and handed over through a bounded queue (a prefetcher).
A checkpoint goes to ckpt/last.pt every --ckpt-every steps; --resume goes on from it, logging into
the same runs/<run-name>. On SIGTERM it saves a checkpoint after the current step and exits.
"""
import argparse
import math
import os
import queue
import signal
import threading
import time

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.tensorboard import SummaryWriter

p = argparse.ArgumentParser()
p.add_argument("--run-name", required=True, help="TensorBoard logs go to runs/<run-name>")
p.add_argument("--resume", action="store_true", help="go on from --ckpt")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--ckpt-every", type=int, default=100)
p.add_argument("--seconds", type=float, default=3600, help="training time budget")
p.add_argument("--max-steps", type=int, default=20000)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=16)
p.add_argument("--n-embd", type=int, default=1024)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--warmup", type=int, default=100)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--prefetch", type=int, default=8, help="batches the producer may run ahead")
p.add_argument("--seed", type=int, default=1337)
p.add_argument("--hang-at", type=int, default=-1,
               help="testing: the producer blocks for good before the batch of this step")
args = p.parse_args()

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.block_size


def make_batch(i):
    """The batch of step i, (batch, block + 1) token ids: random walks over the vocabulary (each id
    the last plus 0-15), seeded by the step, so a resumed run sees the same batches."""
    g = torch.Generator().manual_seed(args.seed * 1_000_003 + i)
    start = torch.randint(0, args.vocab_size, (args.batch_size, 1), generator=g)
    walk = (start + torch.randint(0, 16, (args.batch_size, args.block_size + 1), generator=g).cumsum(1)) % args.vocab_size
    return walk.pin_memory() if cuda else walk


batches = queue.Queue(maxsize=args.prefetch)


def producer(first):
    i = first
    while True:
        if i == args.hang_at:
            threading.Event().wait()  # nobody ever sets it
        batches.put(make_batch(i))
        i += 1


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
print(f"{args.run_name}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
      f"{tokens_per_step} tokens per step, TensorBoard logs in runs/{args.run_name}", flush=True)

step = 0
if args.resume:
    state = torch.load(args.ckpt, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    print(f"resumed from {args.ckpt} at step {step}", flush=True)

writer = SummaryWriter(log_dir=os.path.join("runs", args.run_name), flush_secs=5)


def lr_at(s):
    if s < args.warmup:
        return args.lr * (s + 1) / args.warmup
    frac = min(1.0, (s - args.warmup) / max(1, args.max_steps - args.warmup))
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, args.ckpt + ".tmp")
    os.replace(args.ckpt + ".tmp", args.ckpt)
    print(f"saved checkpoint step {step} to {args.ckpt}", flush=True)


stop_requested = False


def on_sigterm(signum, frame):
    global stop_requested
    stop_requested = True
    print("SIGTERM: saving a checkpoint and stopping after this step", flush=True)


signal.signal(signal.SIGTERM, on_sigterm)
threading.Thread(target=producer, args=(step,), name="producer", daemon=True).start()

saved = step
t_start = t0 = time.time()
while step < args.max_steps and time.time() - t_start < args.seconds and not stop_requested:
    lr = lr_at(step)
    for group in optimizer.param_groups:
        group["lr"] = lr
    chunk = batches.get().to(device, non_blocking=True)
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
        writer.add_scalar("train/loss", lossf, step)
        writer.add_scalar("train/tokens_per_sec", args.log_every * tokens_per_step / (t1 - t0), step)
        writer.add_scalar("train/lr", lr, step)
        t0 = t1
    if step % args.ckpt_every == 0:
        save_checkpoint()
        saved = step
        t0 = time.time()
if saved != step:
    save_checkpoint()
writer.close()
print(f"training done at step {step}", flush=True)
