"""
Train a small GPT (nanoGPT-style, one GPU, no DDP) on a synthetic token stream.

$ python3 train_plain.py --max-iters 5000
"""
import argparse
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
p.add_argument("--vocab-size", type=int, default=50304)
p.add_argument("--batch-size", type=int, default=12)
p.add_argument("--learning-rate", type=float, default=6e-4)
p.add_argument("--warmup-iters", type=int, default=100)
p.add_argument("--max-iters", type=int, default=5000)
p.add_argument("--eval-interval", type=int, default=500)
p.add_argument("--eval-iters", type=int, default=20)
p.add_argument("--log-interval", type=int, default=10)
p.add_argument("--compile", action="store_true")
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device = args.device
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if "cuda" in device else torch.autocast("cpu", enabled=False)
tokens_per_iter = args.batch_size * args.block_size
print(f"tokens per iteration will be: {tokens_per_iter:,}")

# data: a synthetic token stream, 90% train / 10% val
n_tokens = 20_000_000 if "cuda" in device else 1_000_000
g = torch.Generator().manual_seed(42)
data = (torch.randint(0, 16, (n_tokens,), generator=g).cumsum(0) % args.vocab_size).to(device)
split = int(0.9 * n_tokens)
train_data, val_data = data[:split], data[split:]


def get_batch(which):
    d = train_data if which == "train" else val_data
    ix = torch.randint(len(d) - args.block_size - 1, (args.batch_size,), device=device)
    offs = ix[:, None] + torch.arange(args.block_size + 1, device=device)
    chunk = d[offs]
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

    def estimate_mfu(self, fwdbwd_per_iter, dt):
        N = sum(p.numel() for p in self.parameters())
        L, H, Q, T = args.n_layer, args.n_head, args.n_embd // args.n_head, args.block_size
        flops_per_iter = (6 * N + 12 * L * H * Q * T) * T * fwdbwd_per_iter
        return flops_per_iter / dt / 312e12  # A100 bfloat16 peak flops is 312 TFLOPS


print("Initializing a new model from scratch")
model = GPT().to(device)
print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")
optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, betas=(0.9, 0.95), weight_decay=0.1,
                              fused="cuda" in device)
print(f"using fused AdamW: {'cuda' in device}")
if args.compile:
    print("compiling the model... (takes a ~minute)")
    model = torch.compile(model)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for which in ("train", "val"):
        losses = torch.zeros(args.eval_iters)
        for k in range(args.eval_iters):
            X, Y = get_batch(which)
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()
        out[which] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < args.warmup_iters:
        return args.learning_rate * (it + 1) / (args.warmup_iters + 1)
    return args.learning_rate


iter_num = 0
t0 = time.time()
while True:
    for group in optimizer.param_groups:
        group["lr"] = get_lr(iter_num)
    if iter_num % args.eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        t0 = time.time()
    X, Y = get_batch("train")
    with ctx:
        logits, loss = model(X, Y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    iter_num += 1
    if iter_num % args.log_interval == 0:
        lossf = loss.item()
        t1 = time.time()
        dt = (t1 - t0) / args.log_interval
        t0 = t1
        mfu = model.estimate_mfu(args.batch_size, dt)
        print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms, mfu {mfu * 100:.2f}%")
    if iter_num >= args.max_iters:
        break

print("training done")
