"""Train a small GPT-style LM on a synthetic token stream, on a preemptible (spot) slot.

    python3 train.py --resume auto --max-steps 1500

Checkpoints go to ckpt/step_N.pt every --save-every steps (the newest --keep-last are kept). On SIGTERM
(the scheduler's preemption notice) it finishes the step it is in, saves a checkpoint and exits with 0,
and requeue.sh starts it again: `--resume auto` goes on from the newest checkpoint. When it reaches
--max-steps it writes logs/DONE, which tells requeue.sh that the run is over.
"""
import argparse
import glob
import logging
import math
import os
import re
import signal
import sys
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--resume", default=None, help="a checkpoint, or 'auto': the newest in --ckpt-dir (if any)")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--save-every", type=int, default=200)
p.add_argument("--keep-last", type=int, default=3)
p.add_argument("--max-steps", type=int, default=1500)
p.add_argument("--log-every", type=int, default=25)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--lr", type=float, default=6e-4)
p.add_argument("--warmup-steps", type=int, default=100)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.Formatter.converter = time.gmtime
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
log = logging.getLogger("train")

# Preemption: the scheduler sends SIGTERM and kills the job when its grace period is over. Finish
# the step, save, and exit 0: requeue.sh starts the job again.
preempted = False


def on_sigterm(signum, frame):
    global preempted
    preempted = True


signal.signal(signal.SIGTERM, on_sigterm)

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.block_size


def get_batch(step):
    # each token the previous one plus a random step of 0-15 (mod the vocabulary); seeded by the step,
    # so that a resumed run reads the batches the first one would have read
    g = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + step)
    start = torch.randint(0, args.vocab_size, (args.batch_size, 1), generator=g, device=device)
    walk = torch.randint(0, 16, (args.batch_size, args.block_size + 1), generator=g, device=device).cumsum(1)
    chunk = (start + walk) % args.vocab_size
    return chunk[:, :-1], chunk[:, 1:]


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
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            torch.nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def get_lr(step):
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = (step - args.warmup_steps) / max(1, args.max_steps - args.warmup_steps)
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress))))


def checkpoints():
    found = []
    for path in glob.glob(os.path.join(args.ckpt_dir, "step_*.pt")):
        m = re.fullmatch(r"step_(\d+)\.pt", os.path.basename(path))
        if m:
            found.append((int(m.group(1)), path))
    return sorted(found)


def save_checkpoint(step):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"step_{step}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, path + ".tmp")
    os.replace(path + ".tmp", path)
    log.info("saved checkpoint %s", os.path.basename(path))
    for _, old in checkpoints()[:-args.keep_last]:
        os.remove(old)


model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)
log.info("model: %.1fM parameters | batch %d x %d tokens | %d steps | pid %d",
         sum(p.numel() for p in model.parameters()) / 1e6, args.batch_size, args.block_size, args.max_steps,
         os.getpid())

step = 0
resume = args.resume
if resume == "auto":
    found = checkpoints()
    resume = found[-1][1] if found else None
    if resume is None:
        log.info("no checkpoint found, starting from scratch")
if resume:
    state = torch.load(resume, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resuming from %s at step %d", os.path.basename(resume), step)

model.train()
t0, last = time.time(), step
while step < args.max_steps:
    for group in optimizer.param_groups:
        group["lr"] = get_lr(step)
    x, y = get_batch(step)
    with ctx:
        loss = model(x, y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item()
        dt = (time.time() - t0) / (step - last)
        log.info("step %d | loss %.2f | %.1f ms/step | %s tok/s", step, lossf, 1000 * dt,
                 f"{tokens_per_step / dt:,.0f}")
        t0, last = time.time(), step
    if preempted:
        log.warning("received SIGTERM (preemption notice), saving checkpoint at step %d", step)
        save_checkpoint(step)
        log.info("checkpoint saved, exiting for requeue")
        sys.exit(0)
    if step % args.save_every == 0 or step == args.max_steps:
        save_checkpoint(step)
        t0, last = time.time(), step

os.makedirs("logs", exist_ok=True)
with open("logs/DONE", "w") as f:
    f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} step {step}\n")
log.info("training complete: %d steps", step)
