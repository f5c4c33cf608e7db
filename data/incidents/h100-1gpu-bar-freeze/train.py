"""Train a GPT-style LM on a synthetic token stream read through a DataLoader (--num-workers worker
processes), a progress bar an epoch, checkpointing to ckpt/last.pt after each epoch.

    python train.py --run-name det --epochs 6
    python train.py --run-name det --epochs 6 --resume     # go on after the epoch in ckpt/last.pt
"""
import argparse
import os
import threading

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, get_worker_info
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--run-name", default="run")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=512)
p.add_argument("--vocab-size", type=int, default=4096)
p.add_argument("--batch-size", type=int, default=48)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--warmup", type=int, default=100, help="steps of linear warm-up")
p.add_argument("--epochs", type=int, default=10)
p.add_argument("--resume", action="store_true", help="go on from --ckpt")
p.add_argument("--ckpt", default="ckpt/last.pt")
p.add_argument("--seed", type=int, default=1337)
p.add_argument("--num-workers", type=int, default=2, help="DataLoader worker processes")
args = p.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
if device == "cpu":
    print("WARNING: CUDA is not available, training on CPU (this will be slow)", flush=True)
torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
cuda = device == "cuda"
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

BATCHES_PER_EPOCH = 300  # the dataset: this many batches an epoch
# Fault injected for this recording: a DataLoader worker process that reaches batch STALL_BATCH of
# epoch STALL_EPOCH (the batch of step STALL_AT) blocks for good (as a worker deadlocked on a lock
# inherited through fork would); the main process (--num-workers 0) reads it as any other.
STALL_EPOCH, STALL_BATCH = 4, 107
STALL_AT = (STALL_EPOCH - 1) * BATCHES_PER_EPOCH + STALL_BATCH


class TokenBatches(Dataset):
    """The batches of steps first..last-1: (batch, block + 1) token ids, random walks over the
    vocabulary (each id the last plus 0-15) seeded by the step, so a resumed run reads the same batches."""

    def __init__(self, first, last):
        self.first, self.n = first, max(0, last - first)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        s = self.first + i
        if s == STALL_AT and get_worker_info() is not None:
            threading.Event().wait()  # nobody ever sets it
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + s)
        start = torch.randint(0, args.vocab_size, (args.batch_size, 1), generator=g)
        return (start + torch.randint(0, 16, (args.batch_size, args.block_size + 1), generator=g).cumsum(1)) % args.vocab_size


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

step = 0
if args.resume and os.path.exists(args.ckpt):
    state = torch.load(args.ckpt, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]


def save_checkpoint():
    os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
    tmp = args.ckpt + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, tmp)
    os.replace(tmp, args.ckpt)
    print(f"Saved checkpoint epoch {step // BATCHES_PER_EPOCH}", flush=True)


n_params = sum(p.numel() for p in model.parameters()) / 1e6
print(f"{args.run_name}: GPT {args.n_layer} x {args.n_embd} ({n_params:.1f}M parameters) on {device}, {BATCHES_PER_EPOCH} "
      f"batches an epoch, {args.num_workers} DataLoader workers, epochs {step // BATCHES_PER_EPOCH + 1}-{args.epochs}",
      flush=True)
for epoch in range(step // BATCHES_PER_EPOCH + 1, args.epochs + 1):
    loader = DataLoader(TokenBatches(step, epoch * BATCHES_PER_EPOCH), batch_size=None,
                        num_workers=args.num_workers, pin_memory=cuda)
    bar = tqdm(loader, desc=f"Epoch {epoch}/{args.epochs}")
    for chunk in bar:
        for group in optimizer.param_groups:
            group["lr"] = args.lr * min(1.0, (step + 1) / args.warmup)
        chunk = chunk.to(device, non_blocking=True)
        x, y = chunk[:, :-1], chunk[:, 1:]
        with ctx:
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        bar.set_postfix(loss=f"{loss.item():.4f}", refresh=False)
    save_checkpoint()
