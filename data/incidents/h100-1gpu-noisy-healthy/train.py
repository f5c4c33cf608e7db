"""Fine-tune a small GPT-style LM on variable-length examples (SFT-style: no packing).

    python3 train.py [--seconds S] [--batch-size B] ...

Each batch holds examples of about one length (a length-grouped sampler): its length is drawn from
--min-len..--max-len and the batch is padded to a multiple of 64. One line a step, an eval every
--eval-every steps, ckpt/last.pt every --save-every steps; stops after --seconds of training.
"""
import argparse
import logging
import math
import os
import random
import time

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, Sampler

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=3600)
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--min-len", type=int, default=128)
p.add_argument("--max-len", type=int, default=2048)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--eval-every", type=int, default=300)
p.add_argument("--eval-iters", type=int, default=200)
p.add_argument("--save-every", type=int, default=500)
p.add_argument("--num-workers", type=int, default=2)
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--seed", type=int, default=1234)
args = p.parse_args()

logging.Formatter.converter = time.gmtime
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
PAD = 0


class Examples(Dataset):
    """Synthetic instruction data: each example follows a hidden rule of its own (learnable), with noise."""

    def __init__(self, vocab, seed):
        self.vocab, self.seed = vocab, seed

    def __len__(self):
        return 1 << 30

    def __getitem__(self, key):
        i, n = key
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        a, b = torch.randint(1, 64, (2,), generator=g).tolist()
        x = torch.empty(n, dtype=torch.long)
        x[0] = torch.randint(1, self.vocab, (1,), generator=g)
        steps = torch.arange(1, n)
        x[1:] = (x[0] + a * steps + b * (steps // 7)) % (self.vocab - 1) + 1
        noise = torch.rand(n, generator=g) < 0.1
        x[noise] = torch.randint(1, self.vocab, (int(noise.sum()),), generator=g)
        return x


class LengthGrouped(Sampler):
    """Batches of examples of about one length, the length drawn per batch (log-uniform)."""

    def __init__(self, batch, lo, hi, seed):
        self.batch, self.lo, self.hi, self.rng = batch, lo, hi, random.Random(seed)

    def __iter__(self):
        i = 0
        while True:
            top = int(math.exp(self.rng.uniform(math.log(self.lo), math.log(self.hi))))
            out = []
            for _ in range(self.batch):
                out.append((i, self.rng.randint(max(self.lo, int(top * 0.75)), top)))
                i += 1
            yield out


def collate(examples):
    longest = max(len(x) for x in examples)
    seq = -(-longest // 64) * 64
    batch = torch.full((len(examples), seq + 1), PAD, dtype=torch.long)
    for j, x in enumerate(examples):
        batch[j, :len(x)] = x
    return batch, sum(len(x) for x in examples)


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, max_len, layers, heads, d):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1), ignore_index=PAD)


def loader(seed, lo, hi):
    return DataLoader(Examples(args.vocab_size, seed), batch_sampler=LengthGrouped(args.batch_size, lo, hi, seed),
                      collate_fn=collate, num_workers=args.num_workers, pin_memory=device.type == "cuda",
                      persistent_workers=args.num_workers > 0)


@torch.no_grad()
def evaluate():
    model.eval()
    t0 = time.perf_counter()
    it, total = iter(val), 0.0
    for _ in range(args.eval_iters):
        batch, _ = next(it)
        batch = batch.to(device, non_blocking=True)
        with amp:
            total += model(batch[:, :-1], batch[:, 1:]).item()
    model.train()
    return total / args.eval_iters, time.perf_counter() - t0


def save(step):
    t0 = time.perf_counter()
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, args.ckpt + ".tmp")
    os.replace(args.ckpt + ".tmp", args.ckpt)
    log.info("saved checkpoint step %d (%.1f s)", step, time.perf_counter() - t0)


torch.manual_seed(args.seed)
device = torch.device(args.device)
log.info("config: %s", vars(args))
model = GPT(args.vocab_size, args.max_len + 64, args.n_layer, args.n_head, args.n_embd).to(device)
log.info("model: %.1fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1, fused=device.type == "cuda")
amp = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
train = iter(loader(args.seed, args.min_len, args.max_len))
val = loader(args.seed + 1, args.max_len // 2, args.max_len)
log.info("training for %g s: batch %d, lengths %d-%d padded to a multiple of 64", args.seconds, args.batch_size,
         args.min_len, args.max_len)
step, start = 0, time.perf_counter()
while True:
    t0 = time.perf_counter()
    batch, tokens = next(train)
    batch = batch.to(device, non_blocking=True)
    with amp:
        loss = model(batch[:, :-1], batch[:, 1:])
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    lv = loss.item()  # waits for the GPU
    dt = time.perf_counter() - t0
    step += 1
    log.info("step %d | loss %.2f | seq %d | %.1f ms | %s tok/s", step, lv, batch.shape[1] - 1, 1000 * dt,
             f"{tokens / dt:,.0f}")
    if step % args.eval_every == 0:
        vl, took = evaluate()
        log.info("eval step %d | val_loss %.2f | %.1f s", step, vl, took)
    if step % args.save_every == 0:
        save(step)
    if time.perf_counter() - start >= args.seconds:
        break
log.info("training done at step %d", step)
