"""Train a small GPT-style LM on text tokenized on the fly.

The corpus is raw text; each sample is cleaned and tokenized when the DataLoader asks for it (a
BERT-style basic tokenizer and WordPiece, in pure Python), in --num-workers worker processes.
"""
import argparse
import logging
import math
import random
import time
import unicodedata

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--seconds", type=float, default=600, help="training time budget")
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--block-size", type=int, default=512)
p.add_argument("--n-layer", type=int, default=6)
p.add_argument("--n-head", type=int, default=8)
p.add_argument("--n-embd", type=int, default=512)
p.add_argument("--vocab-size", type=int, default=8192)
p.add_argument("--lr", type=float, default=6e-4)
p.add_argument("--num-workers", type=int, default=4)
p.add_argument("--log-interval", type=int, default=100)
p.add_argument("--device", default="cuda")
p.add_argument("--seed", type=int, default=1337)
args = p.parse_args()

logging.Formatter.converter = time.gmtime
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
log = logging.getLogger("train")

# ---------------------------------------------------------------------------------------------
# the corpus: documents of words drawn (Zipf) from a lexicon of syllable words
SYLLABLES = [c + v + e for c in "bdfgklmnprstvz" for v in "aeiou" for e in ("", "n", "r", "s")]
_rng = random.Random(0)
LEXICON = sorted({"".join(_rng.choices(SYLLABLES, k=_rng.choice((1, 2, 2, 3, 3, 4)))) for _ in range(30000)})
_rng.shuffle(LEXICON)
CUM_WEIGHTS = list(__import__("itertools").accumulate(1.0 / (r + 10) for r in range(len(LEXICON))))
ACCENTED = {"e": "é", "a": "à", "o": "ö", "u": "ü", "n": "ñ"}


def document(index):
    """The raw text of document `index` (a few thousand characters)."""
    rng = random.Random(index)
    sentences = []
    for _ in range(rng.randint(30, 40)):
        words = rng.choices(LEXICON, cum_weights=CUM_WEIGHTS, k=rng.randint(6, 18))
        if rng.random() < 0.3:
            i = rng.randrange(len(words))
            words[i] = "".join(ACCENTED.get(ch, ch) if rng.random() < 0.3 else ch for ch in words[i])
        s = " ".join(words)
        sentences.append(s[0].upper() + s[1:] + rng.choice((".", ".", ".", "!", "?", ";", ",")))
    return "  ".join(sentences)


# ---------------------------------------------------------------------------------------------
# the tokenizer: basic (clean, accents, punctuation) then WordPiece, as BERT's reference code


def _is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch):
    return ch not in "\t\n\r" and unicodedata.category(ch).startswith("C")


def _is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class Tokenizer:
    def __init__(self, vocab_size):
        pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
        pieces += [chr(c) for c in range(33, 127)] + ["##" + chr(c) for c in range(97, 123)]
        pieces += SYLLABLES + ["##" + s for s in SYLLABLES]
        pieces += LEXICON
        self.vocab = {}
        for piece in pieces:
            if len(self.vocab) == vocab_size:
                break
            self.vocab.setdefault(piece, len(self.vocab))
        self.unk = self.vocab["[UNK]"]

    def basic(self, text):
        out = []
        for ch in text:
            if ord(ch) == 0 or ord(ch) == 0xFFFD or _is_control(ch):
                continue
            out.append(" " if _is_whitespace(ch) else ch)
        words = []
        for word in "".join(out).strip().split():
            word = unicodedata.normalize("NFD", word.lower())
            word = "".join(ch for ch in word if unicodedata.category(ch) != "Mn")
            current = []
            for ch in word:
                if _is_punctuation(ch):
                    if current:
                        words.append("".join(current))
                        current = []
                    words.append(ch)
                else:
                    current.append(ch)
            if current:
                words.append("".join(current))
        return words

    def wordpiece(self, word):
        ids, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            ids.append(found)
            start = end
        return ids

    def encode(self, text):
        ids = []
        for word in self.basic(text):
            ids.extend(self.wordpiece(word))
        return ids


class Documents(Dataset):
    """Sample i: the first block_size + 1 token ids of document i, tokenized when it is asked for."""

    def __init__(self, tokenizer, block_size, seed):
        self.tok, self.block_size, self.seed = tokenizer, block_size, seed

    def __len__(self):
        return 10**9

    def __getitem__(self, i):
        ids, part = [2], 0
        while len(ids) < self.block_size + 1:
            ids.extend(self.tok.encode(document(self.seed * 10**9 + i * 8 + part)))
            ids.append(3)
            part += 1
        return torch.tensor(ids[: self.block_size + 1], dtype=torch.long)


# ---------------------------------------------------------------------------------------------
# the model


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
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, d):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def main():
    torch.manual_seed(args.seed)
    log.info("config: %s", vars(args))
    device = torch.device(args.device)
    tok = Tokenizer(args.vocab_size)
    data = Documents(tok, args.block_size, args.seed)
    loader = DataLoader(data, batch_size=args.batch_size, num_workers=args.num_workers,
                        pin_memory=device.type == "cuda", persistent_workers=args.num_workers > 0)
    model = GPT(len(tok.vocab), args.block_size, args.n_layer, args.n_head, args.n_embd).to(device)
    log.info("model: %.1fM parameters, vocab %d; data: %d DataLoader workers, batch %d x %d tokens",
             sum(p.numel() for p in model.parameters()) / 1e6, len(tok.vocab), args.num_workers,
             args.batch_size, args.block_size)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    amp = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    tokens = args.batch_size * args.block_size
    step, waited, start = 0, 0.0, None
    it = iter(loader)
    t_log = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        batch = next(it)
        waited += time.perf_counter() - t0
        batch = batch.to(device, non_blocking=True)
        with amp:
            loss = model(batch[:, :-1], batch[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if start is None:  # the clock starts after the first step (workers started, kernels warm)
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = t_log = time.perf_counter()
            waited = 0.0
            log.info("first step done, training for %g s", args.seconds)
            continue
        if step % args.log_interval == 0:
            lv = loss.item()  # waits for the GPU
            now = time.perf_counter()
            n = args.log_interval
            log.info("step %d | loss %.3f | %.1f ms/step | %s tok/s | data %.1f ms", step, lv,
                     1000 * (now - t_log) / n, f"{tokens * n / (now - t_log):,.0f}", 1000 * waited / n)
            t_log, waited = now, 0.0
            if now - start >= args.seconds:
                break
            if not math.isfinite(lv):
                log.error("loss is %s, stopping", lv)
                break
    log.info("training done, %d steps", step)


if __name__ == "__main__":
    main()
