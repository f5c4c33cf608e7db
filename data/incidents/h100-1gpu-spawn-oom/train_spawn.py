"""Train a small GPT-style LM with DistributedDataParallel on one machine, two processes
started with torch.multiprocessing.spawn (gloo; both ranks share GPU 0)."""
import argparse
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

logging.Formatter.converter = time.gmtime
logging.basicConfig(format="%(asctime)s %(message)s", level=logging.INFO)
log = logging.getLogger("train")

PAD = 0
BAD_DOC = 19280  # shard 7, doc 0113: a crawl dump without separators


def doc_length(i):
    """Tokens in document i of the corpus (64..512; the one dump far longer)."""
    if i == BAD_DOC:
        return 4_194_304
    return 64 + (i * 2654435761) % 449


def get_batch(step, rank, world, batch, max_len, vocab, gen):
    """Rank `rank`'s share of step `step`: `batch` documents, padded to the longest."""
    first = (step * world + rank) * batch
    lengths = [doc_length(first + j) for j in range(batch)]
    if max_len:
        lengths = [min(n, max_len) for n in lengths]
    x = torch.full((batch, max(lengths)), PAD, dtype=torch.long)
    for j, n in enumerate(lengths):
        x[j, :n] = torch.randint(1, vocab, (n,), generator=gen)
    return x


class LM(nn.Module):
    def __init__(self, vocab, hidden, layers, heads):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(hidden)
        nn.init.normal_(self.emb.weight, std=0.02)

    def forward(self, x):
        h = self.emb(x)
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1), device=x.device)
        h = self.blocks(h, mask=mask, is_causal=True)
        return self.norm(h) @ self.emb.weight.t()


def main(rank, a):
    dist.init_process_group("gloo", rank=rank, world_size=a.world_size)
    dev = torch.device(a.device)
    log.info("[rank%d] pid %d (parent %d) on %s, world size %d, backend %s", rank, os.getpid(), os.getppid(),
             dev, a.world_size, dist.get_backend())
    torch.manual_seed(0)
    model = LM(a.vocab, a.hidden, a.layers, a.heads).to(dev)
    ddp = DDP(model, device_ids=[dev.index or 0] if dev.type == "cuda" else None)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    step = 0
    if a.resume and os.path.exists(a.ckpt):
        state = torch.load(a.ckpt, map_location=dev)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
        log.info("[rank%d] resumed from %s at step %d", rank, a.ckpt, step)
    gen = torch.Generator().manual_seed(1000 * step + rank)
    t0 = time.time()
    while step < a.steps:
        step += 1
        x = get_batch(step, rank, a.world_size, a.batch, a.max_len, a.vocab, gen).to(dev, non_blocking=True)
        logits = ddp(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, a.vocab), x[:, 1:].reshape(-1), ignore_index=PAD)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % a.log_every == 0:
            now = time.time()
            log.info("[rank%d] step %d loss %.2f %.1f it/s", rank, step, loss.item(), a.log_every / (now - t0))
            t0 = now
        if rank == 0 and step % a.save_every == 0:
            os.makedirs(os.path.dirname(a.ckpt), exist_ok=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, a.ckpt + ".tmp")
            os.replace(a.ckpt + ".tmp", a.ckpt)
            log.info("[rank0] saved checkpoint step %d", step)
    log.info("[rank%d] training done at step %d", rank, step)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--max-len", type=int, default=None, help="truncate documents to this many tokens")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--vocab", type=int, default=16384)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--save-every", type=int, default=100)
    p.add_argument("--ckpt", default="ckpt/last.pt")
    p.add_argument("--resume", action="store_true")
    a = p.parse_args()
    if a.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    log.info("launching %d processes with torch.multiprocessing.spawn (pid %d)", a.world_size, os.getpid())
    mp.spawn(main, args=(a,), nprocs=a.world_size, join=True)
