"""Train a small GPT-style LM on a synthetic token stream, checkpointing to ckpt/last.pt.

    python3 train.py --run-name NAME [--resume] [--seconds S]

A line every --log-every steps, ckpt/last.pt every --save-every steps and when --seconds of
training are up; --resume goes on from ckpt/last.pt.
"""
import argparse
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--run-name", default="run")
p.add_argument("--resume", action="store_true", help="go on from --ckpt if it exists")
p.add_argument("--seconds", type=float, default=24 * 3600, help="stop after this many seconds of training")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--save-every", type=int, default=100)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()


def now():
    return time.strftime("%Y-%m-%d %H:%M:%S")


print(f"{now()} run {args.run_name}: {vars(args)}", flush=True)
torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)


def get_batch(step):
    """Step `step`'s batch, the same in every run: each token the previous one plus 0-15."""
    g = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + step)
    first = torch.randint(0, args.vocab_size, (args.batch_size, 1), device=device, generator=g)
    walk = torch.randint(0, 16, (args.batch_size, args.block_size + 1), device=device, generator=g).cumsum(1)
    toks = (first + walk) % args.vocab_size
    return toks[:, :-1], toks[:, 1:]


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
print(f"{now()} model: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters on {device}", flush=True)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume and os.path.exists(args.ckpt):
    state = torch.load(args.ckpt, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    print(f"{now()} resumed from {args.ckpt} at step {step}", flush=True)
elif args.resume:
    print(f"{now()} no checkpoint at {args.ckpt}, starting from step 0", flush=True)


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "args": vars(args)}, args.ckpt + ".tmp")
    os.replace(args.ckpt + ".tmp", args.ckpt)
    print(f"{now()} saved checkpoint step {step}", flush=True)


print(f"{now()} training from step {step} for {args.seconds:g} s", flush=True)
start = t0 = time.time()
while time.time() - start < args.seconds:
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
        t1 = time.time()
        tok_s = args.log_every * args.batch_size * args.block_size / (t1 - t0)
        print(f"{now()} step {step} loss {lossf:.2f} tok/s {tok_s:,.0f}", flush=True)
        t0 = t1
    if step % args.save_every == 0:
        save_checkpoint()
        t0 = time.time()
if step % args.save_every:
    save_checkpoint()
print(f"{now()} done: step {step} after {time.time() - start:.0f} s of training", flush=True)
