"""Train a small GPT-style LM on packed token shards, checkpointing to ckpt/last.pt.

    python3 train.py --resume ckpt/last.pt

Batches are read by the fast tokenizer extension's record reader (native buffers, read through
ctypes): shard s holds --records-per-shard packed records, one batch each, and global step i reads
record i % R of shard i // R.
"""
import argparse
import ctypes
import logging
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--resume", default=None, help="checkpoint to resume from (if it exists)")
p.add_argument("--ckpt", default="ckpt/last.pt", help="where to save checkpoints")
p.add_argument("--save-every", type=int, default=200, help="steps between checkpoints")
p.add_argument("--device", default="cuda")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--max-steps", type=int, default=100000)
p.add_argument("--log-every", type=int, default=10)
p.add_argument("--records-per-shard", type=int, default=50)
p.add_argument("--skip-bad-shard", action="store_true",
               help="check each shard's record index when it is opened and skip a shard with a bad entry")
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")
log.info("config: %s", vars(args))

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)


# --- the fast tokenizer extension's record reader (packed records in native memory) ---------------
class Record(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("n_tokens", ctypes.c_uint32), ("flags", ctypes.c_uint32)]


TAG = 32  # bytes of a record's header: its source tag
# index entries the packer left zeroed (shard -> record numbers): its job died while writing them
_PACKER_HOLES = {9: (0,)}


class Shard:
    """One packed shard: a native buffer of int32 token ids and its record index."""

    def __init__(self, n):
        self.n = n
        R, B, T = args.records_per_shard, args.batch_size, args.block_size + 1
        g = torch.Generator().manual_seed(10_000 + n)
        # a synthetic token stream: each token the previous one plus a random step of 0-15
        start = torch.randint(0, args.vocab_size, (R, B, 1), generator=g)
        toks = ((start + torch.randint(0, 16, (R, B, T), generator=g).cumsum(-1)) % args.vocab_size).to(torch.int32)
        size = TAG + B * T * 4  # a record: its NUL-terminated source tag, then its token ids
        self.buf = ctypes.create_string_buffer(R * size)
        base = ctypes.addressof(self.buf)
        self.index = (Record * R)()
        for i in range(R):
            ctypes.memmove(base + i * size, f"shard-{n:05d}/{i:05d}".encode(), 17)
            ctypes.memmove(base + i * size + TAG, toks[i].data_ptr(), B * T * 4)
            self.index[i].data = base + i * size
            self.index[i].n_tokens = B * T
        for i in _PACKER_HOLES.get(n, ()):
            self.index[i].data = None

    def bad_records(self):
        return [i for i, rec in enumerate(self.index) if not rec.data]

    def read(self, i):
        rec = self.index[i]
        tag = ctypes.string_at(rec.data)  # the record's source tag (NUL-terminated)
        raw = ctypes.string_at(rec.data + TAG, rec.n_tokens * 4)  # the extension's copy of the token ids
        assert tag.startswith(b"shard-"), tag
        return torch.frombuffer(bytearray(raw), dtype=torch.int32).view(args.batch_size, args.block_size + 1)


shard, skipped = None, 0


def get_batch(i):
    global shard, skipped
    n = i // args.records_per_shard + skipped
    while shard is None or shard.n != n:
        log.info("loading shard %d (records of steps %d-%d)", n, (n - skipped) * args.records_per_shard,
                 (n - skipped + 1) * args.records_per_shard - 1)
        shard = Shard(n)
        if args.skip_bad_shard and (bad := shard.bad_records()):
            log.warning("shard %d: bad index entries %s (NULL data pointer), skipping the shard", n, bad)
            skipped += 1
            n += 1
    chunk = shard.read(i % args.records_per_shard).to(device, dtype=torch.long, non_blocking=True)
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

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


model = GPT().to(device)
log.info("model: %.1fM parameters", sum(p.numel() for p in model.parameters()) / 1e6)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume and os.path.exists(args.resume):
    state = torch.load(args.resume, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resuming from %s at step %d", args.resume, step)
elif args.resume:
    log.info("no checkpoint at %s, starting from scratch", args.resume)


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    tmp = args.ckpt + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, tmp)
    os.replace(tmp, args.ckpt)
    log.info("saved checkpoint step %d", step)


t0 = time.time()
while step < args.max_steps:
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
        log.info("step %d loss %.4f tok/s %.0f", step, lossf, args.log_every * args.batch_size * args.block_size / (t1 - t0))
        t0 = t1
    if step % args.save_every == 0 or step == args.max_steps:
        save_checkpoint()
        t0 = time.time()
log.info("training done at step %d", step)
