"""Train a GPT-style LM on a synthetic token stream, checkpointing to ckpt/step_N.pt every 100 steps.

    python3 train.py --run-name lm --max-steps 20000
    python3 train.py --run-name lm --max-steps 20000 --resume ckpt/step_1200.pt   # go on from a checkpoint

The log is logs/train.log, rotated at 2700 bytes (train.log.1 and train.log.2 are kept);
warnings and errors go to stderr too.
"""
import argparse
import logging
import logging.handlers
import os
import time

import torch
import torch.nn as nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
p.add_argument("--run-name", default="run")
p.add_argument("--n-layer", type=int, default=12)
p.add_argument("--n-head", type=int, default=12)
p.add_argument("--n-embd", type=int, default=768)
p.add_argument("--block-size", type=int, default=1024)
p.add_argument("--vocab-size", type=int, default=32768)
p.add_argument("--batch-size", type=int, default=32, help="sequences per micro-batch")
p.add_argument("--grad-accum", type=int, default=4, help="micro-batches per step")
p.add_argument("--lr", type=float, default=6e-4)
p.add_argument("--warmup", type=int, default=100, help="steps of linear warm-up")
p.add_argument("--max-steps", type=int, default=20000, help="train until this step")
p.add_argument("--resume", default=None, help="a checkpoint to go on from (ckpt/step_N.pt)")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--save-every", type=int, default=100)
p.add_argument("--log-every", type=int, default=2)
p.add_argument("--device", default="cuda")
p.add_argument("--seed", type=int, default=1337)
p.add_argument("--bad-step", type=int, default=None, help="the step whose batch holds a corrupt (empty) sample")
p.add_argument("--skip-bad", action="store_true", help="skip a batch that fails the data check instead of stopping")
args = p.parse_args()

os.makedirs("logs", exist_ok=True)
file_handler = logging.handlers.RotatingFileHandler("logs/train.log", maxBytes=2700, backupCount=2)
console = logging.StreamHandler()  # stderr: warnings and errors only
console.setLevel(logging.WARNING)
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s",
                    handlers=[file_handler, console])
log = logging.getLogger("train")
log.info("config: %s", vars(args))

torch.manual_seed(args.seed)
torch.backends.cuda.matmul.allow_tf32 = True
device = args.device
cuda = device.startswith("cuda")
ctx = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)
tokens_per_step = args.batch_size * args.grad_accum * args.block_size


def get_batch(step):
    """Step `step`'s batch, the same in every run: each token the previous one plus a random step of 0-15."""
    if step == args.bad_step:  # the data check: a sample of this batch has no tokens
        raise ValueError("sample 48213 has 0 tokens (corrupt shard data/shard-0007.bin)")
    g = torch.Generator(device=device).manual_seed(args.seed * 1_000_003 + step)
    n = args.batch_size * args.grad_accum
    first = torch.randint(0, args.vocab_size, (n, 1), device=device, generator=g)
    walk = torch.randint(0, 16, (n, args.block_size + 1), device=device, generator=g).cumsum(1)
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
log.info("model: %d layers, width %d, %.1fM parameters", args.n_layer, args.n_embd,
         sum(p.numel() for p in model.parameters()) / 1e6)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1, fused=cuda)

step = 0
if args.resume:
    log.info("resuming from %s", args.resume)
    state = torch.load(args.resume, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    step = state["step"]
    log.info("resumed at step %d", step)
else:
    log.info("starting from scratch")


def save_checkpoint():
    os.makedirs(args.ckpt_dir, exist_ok=True)
    path = os.path.join(args.ckpt_dir, f"step_{step}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
                "config": vars(args)}, path + ".tmp")
    os.replace(path + ".tmp", path)
    log.info("saved checkpoint %s", path)


log.info("training from step %d to step %d", step, args.max_steps)
start = t0 = time.time()
while step < args.max_steps:
    try:
        x, y = get_batch(step + 1)
    except ValueError as e:
        if not args.skip_bad:
            raise
        step += 1
        log.warning("step %d: skipping this batch: %s", step, e)
        continue
    for group in optimizer.param_groups:
        group["lr"] = args.lr * min(1.0, (step + 1) / args.warmup)
    for xs, ys in zip(x.chunk(args.grad_accum), y.chunk(args.grad_accum)):
        with ctx:
            loss = model(xs, ys) / args.grad_accum
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    step += 1
    if step % args.log_every == 0:
        lossf = loss.item() * args.grad_accum
        t1 = time.time()
        log.info("step %d | loss %.2f | %s tok/s", step, lossf, f"{args.log_every * tokens_per_step / (t1 - t0):,.0f}")
        t0 = t1
    if step % args.save_every == 0:
        save_checkpoint()
        t0 = time.time()
if step % args.save_every:
    save_checkpoint()
log.info("training done at step %d (%.0f s)", step, time.time() - start)
