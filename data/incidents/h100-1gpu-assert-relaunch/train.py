"""Train a small GPT-style language model on synthetic token ids.

    python3 train.py --max-steps N [--vocab-size V] [--data-vocab D] [--device cpu] ...

The sampler follows a frequency curriculum: the first steps draw only the most frequent ids, and
the range widens to the whole data vocabulary over --vocab-warmup-steps.
"""
import argparse
import logging
import math
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--vocab-size", type=int, default=32000, help="model vocabulary (embedding rows)")
p.add_argument("--data-vocab", type=int, default=50304, help="ids the sampler draws from (tokenizer size, padded)")
p.add_argument("--vocab-warmup-steps", type=int, default=1200)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--min-lr", type=float, default=3e-5)
p.add_argument("--warmup-steps", type=int, default=100)
p.add_argument("--max-steps", type=int, default=5000)
p.add_argument("--log-every", type=int, default=20)
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.block_size


def batch_ids(step, data_vocab, batch_size, block_size, seed, warmup, first_ids=1024):
    """One step's token ids, (batch_size, block_size + 1): random walks (each id the last plus 0-15)
    over the ids the curriculum allows at this step, from the `first_ids` most frequent ones up to
    all `data_vocab` of them at step `warmup`."""
    first = min(first_ids, data_vocab)
    hi = first + int((data_vocab - first) * min(1.0, step / warmup))
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    start = torch.randint(0, hi, (batch_size, 1), generator=g)
    walk = torch.randint(0, 16, (batch_size, block_size), generator=g).cumsum(1)
    return torch.cat([start, start + walk], 1) % hi


def get_batch(step):
    ids = batch_ids(step, args.data_vocab, args.batch_size, args.block_size, args.seed, args.vocab_warmup_steps)
    ids = ids.to(device)
    return ids[:, :-1], ids[:, 1:]


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
        self.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            torch.nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def get_lr(step):
    if step < args.warmup_steps:
        return args.lr * (step + 1) / args.warmup_steps
    progress = (step - args.warmup_steps) / max(1, args.max_steps - args.warmup_steps)
    return args.min_lr + 0.5 * (1 + math.cos(math.pi * min(1.0, progress))) * (args.lr - args.min_lr)


model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1,
                              fused=device.startswith("cuda"))
log.info(f"model: {args.n_layer} layers, {args.n_head} heads, {args.n_embd} wide, vocab {args.vocab_size}, "
         f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M params on {device}")
log.info(f"data: synthetic ids < {args.data_vocab}, {tokens_per_step:,} tokens/step "
         f"({args.batch_size} x {args.block_size}), id range widening over {args.vocab_warmup_steps} steps")
log.info(f"training for {args.max_steps} steps, lr {args.lr:.1e}, warmup {args.warmup_steps}")

iter_num = 0
start = t0 = time.time()
while iter_num < args.max_steps:
    lr = get_lr(iter_num)
    for group in optimizer.param_groups:
        group["lr"] = lr
    X, Y = get_batch(iter_num)
    with ctx:
        _, loss = model(X, Y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    if iter_num % args.log_every == 0:
        lossf = loss.item()
        t1 = time.time()
        dt = (t1 - t0) / args.log_every
        t0 = t1
        log.info(f"step {iter_num} | loss {lossf:.2f} | lr {lr:.1e} | {dt * 1000:.1f} ms/step | "
                 f"{tokens_per_step / dt:,.0f} tok/s")

log.info(f"done: {iter_num} steps in {time.time() - start:.1f} s")
