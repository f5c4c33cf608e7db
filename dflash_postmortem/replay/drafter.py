"""The DFlash drafter and its loss, as SpecForge trains it.

The drafter reads the target's hidden states of a few layers, concatenated and fused by
`fc + RMSNorm` into one context sequence that is injected into the keys and values of every draft
layer. It predicts blocks of `block_size` tokens: each block starts at a random anchor with the
anchor token followed by mask tokens, sees the context strictly before its anchor, and sees its
own block in both directions. The loss goes through the frozen target `lm_head` in chunks of
blocks, weighted by position in the block.

`lm_head_mode` decides how many `[rows x hidden] @ [hidden x vocab]` matmuls one loss chunk costs:

| mode        | what happens                                             | head matmuls / chunk |
| ----------- | -------------------------------------------------------- | -------------------- |
| `once`      | loss and input gradient computed in forward (Liger-like) | 2 (fwd, dgrad)       |
| `recompute` | chunk under `torch.utils.checkpoint`, frozen head        | 3 (+ recompute)      |
| `trainable` | chunk under checkpoint, head weight `requires_grad=True` | 4 (+ wgrad)          |
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.checkpoint import checkpoint

from ..errors import UsageError
from .model import RMSNorm, SwiGLU

LM_HEAD_MODES = ("once", "recompute", "trainable")
ATTN_BACKENDS = ("flex", "sdpa")
COMPILE_MODES = ("eager", "unguarded", "main-thread", "locked")
# One lock for every drafter replica: the point of `locked` is that no two threads trace at once.
_COMPILE_LOCK = threading.Lock()


@dataclass
class DraftConfig:
    layers: int = 2
    heads: int = 4
    block_size: int = 4
    num_anchors: int = 16
    chunk_blocks: int = 4  # blocks per loss chunk (SpecForge's objective_chunk_blocks)
    gamma: float = 4.0  # position weight exp(-(k-1)/gamma), k = 1..block_size-1
    lm_head_mode: str = "once"
    use_reentrant: bool = True
    draft_layer_ckpt: bool = False
    attn: str = "sdpa"
    compile: str = "eager"
    compile_backend: str = "inductor"

    def validate(self) -> None:
        for name, value, allowed in (
            ("lm_head_mode", self.lm_head_mode, LM_HEAD_MODES),
            ("attn", self.attn, ATTN_BACKENDS),
            ("compile", self.compile, COMPILE_MODES),
        ):
            if value not in allowed:
                raise UsageError(f"{name} must be one of {allowed}, got {value!r}")
        if self.block_size < 2:
            raise UsageError(f"block_size must be >= 2, got {self.block_size}")


# ---------------------------------------------------------------- anchors, labels, masks

def sample_anchors(batch: int, seq: int, cfg: DraftConfig, generator: torch.Generator | None = None):
    """`num_anchors` sorted anchor positions per sample; a block must fit inside the sequence.

    The count is constant so that attention shapes stay static and compiled kernels are reused.
    """
    last = seq - cfg.block_size  # anchor + block_size - 1 <= seq - 1
    if last < 1 or cfg.num_anchors > last:
        raise UsageError(
            f"seq {seq} is too short for {cfg.num_anchors} anchors of block {cfg.block_size}"
        )
    keys = torch.rand(batch, last, generator=generator)
    return keys.topk(cfg.num_anchors, dim=1).indices.add(1).sort(dim=1).values


def block_targets(input_ids, loss_mask, anchors, cfg: DraftConfig):
    """Labels and position weights for every draft position, in block order: [B, N*bs] each."""
    k = torch.arange(cfg.block_size, device=anchors.device)
    pos = (anchors.unsqueeze(-1) + k).flatten(1)
    labels = input_ids.gather(1, pos)
    decay = torch.exp(-(k.clamp(min=1) - 1).float() / cfg.gamma) * (k > 0)
    weights = loss_mask.gather(1, pos).float() * decay.repeat(anchors.shape[1])
    return labels, weights, pos


def dense_block_mask(anchors, seq: int, block: int):
    """SDPA twin of the flex block mask: [B, 1, Q, S+Q] booleans, True = may attend."""
    b, n = anchors.shape
    q_block = torch.arange(n * block, device=anchors.device) // block
    ctx = torch.arange(seq, device=anchors.device)
    sees_ctx = ctx.view(1, 1, -1) < anchors[:, q_block].unsqueeze(-1)
    sees_block = q_block.view(-1, 1) == q_block.view(1, -1)
    return torch.cat([sees_ctx, sees_block.expand(b, -1, -1)], dim=-1).unsqueeze(1)


def flex_block_mask(anchors, seq: int, block: int):
    from torch.nn.attention.flex_attention import create_block_mask

    n = anchors.shape[1]

    def mask_mod(b, h, q_idx, kv_idx):
        q_blk = q_idx // block
        in_ctx = (kv_idx < seq) & (kv_idx < anchors[b, q_blk])
        in_block = (kv_idx >= seq) & ((kv_idx - seq) // block == q_blk)
        return in_ctx | in_block

    return create_block_mask(mask_mod, anchors.shape[0], None, n * block, seq + n * block,
                             device=anchors.device)


# ---------------------------------------------------------------- attention kernel + compile knob

def sdpa_attention(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _flex(q, k, v, mask):
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention(q, k, v, block_mask=mask)


class AttentionKernel:
    """The drafter's attention call with the `compile` knob.

    `unguarded` compiles lazily in whichever thread calls first, exactly like a singleton
    `torch.compile(flex_attention)` reached by several drafter threads at once; `locked` takes a
    process-wide lock for the first call; `main-thread` is unguarded here and relies on the trainer
    warming every replica up on the main thread before any drafter thread starts.
    """

    def __init__(self, backend: str, compile_mode: str, compile_backend: str):
        self.raw = _flex if backend == "flex" else sdpa_attention
        self.compile_mode, self.compile_backend = compile_mode, compile_backend
        self.fn = None
        self.calls = 0

    def __call__(self, q, k, v, mask):
        if self.compile_mode == "eager":
            return self.raw(q, k, v, mask)
        if self.fn is None:
            self.fn = torch.compile(self.raw, backend=self.compile_backend, dynamic=False)
        if self.compile_mode == "locked" and self.calls == 0:
            with _COMPILE_LOCK:
                out = self.fn(q, k, v, mask)
        else:
            out = self.fn(q, k, v, mask)
        self.calls += 1
        return out


# ---------------------------------------------------------------- the drafter

def _rope(x, pos, base: float = 10000.0):
    """Rotary embedding of x [B, H, T, D] at integer positions pos [B, T]."""
    d = x.shape[-1]
    inv = base ** (-torch.arange(0, d, 2, device=x.device, dtype=torch.float32) / d)
    ang = pos.float().unsqueeze(-1) * inv
    cos, sin = ang.cos().unsqueeze(1).to(x.dtype), ang.sin().unsqueeze(1).to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class DraftLayer(nn.Module):
    """A Qwen3-style layer whose keys and values also cover the fused target context."""

    def __init__(self, hidden: int, heads: int, kernel: AttentionKernel):
        super().__init__()
        self.heads, self.kernel = heads, kernel
        self.norm1, self.norm2 = RMSNorm(hidden), RMSNorm(hidden)
        self.q = nn.Linear(hidden, hidden, bias=False)
        self.kv = nn.Linear(hidden, 2 * hidden, bias=False)
        self.o = nn.Linear(hidden, hidden, bias=False)
        self.mlp = SwiGLU(hidden, 3 * hidden)

    def forward(self, x, ctx, pos_x, pos_ctx, mask):
        b, t, h = x.shape
        hx = self.norm1(x)

        def heads(y):
            return y.reshape(b, y.shape[1], self.heads, -1).transpose(1, 2)

        q = _rope(heads(self.q(hx)), pos_x)
        k_ctx, v_ctx = self.kv(ctx).chunk(2, dim=-1)
        k_x, v_x = self.kv(hx).chunk(2, dim=-1)
        k = torch.cat([_rope(heads(k_ctx), pos_ctx), _rope(heads(k_x), pos_x)], dim=2)
        v = torch.cat([heads(v_ctx), heads(v_x)], dim=2)
        o = self.kernel(q, k, v, mask).transpose(1, 2).reshape(b, t, h)
        x = x + self.o(o)
        return x + self.mlp(self.norm2(x))


class DFlashDrafter(nn.Module):
    def __init__(self, cfg: DraftConfig, hidden: int, n_ctx_layers: int, embed_weight, head_weight,
                 mask_token_id: int):
        super().__init__()
        cfg.validate()
        self.cfg, self.mask_token_id = cfg, mask_token_id
        self.kernel = AttentionKernel(cfg.attn, cfg.compile, cfg.compile_backend)
        self.fc = nn.Linear(n_ctx_layers * hidden, hidden, bias=False)
        self.fc_norm = RMSNorm(hidden)
        self.layers = nn.ModuleList(DraftLayer(hidden, cfg.heads, self.kernel) for _ in range(cfg.layers))
        self.norm = RMSNorm(hidden)
        # Frozen copies of the target's embedding and head: the drafter may live on another GPU.
        self.embed = nn.Embedding.from_pretrained(embed_weight.detach().clone(), freeze=True)
        self.lm_head = nn.Parameter(head_weight.detach().clone(),
                                    requires_grad=cfg.lm_head_mode == "trainable")

    def trainable_parameters(self):
        """What the optimizer steps: never the head, even when `trainable` computes its gradient."""
        return [p for n, p in self.named_parameters() if p.requires_grad and n != "lm_head"]

    def forward(self, input_ids, ctx_hidden, loss_mask, anchors):
        """Weighted loss over all blocks (a scalar) and the weight total it was divided by."""
        cfg = self.cfg
        b, s = input_ids.shape
        labels, weights, pos_x = block_targets(input_ids, loss_mask, anchors, cfg)
        noise = torch.full_like(labels, self.mask_token_id)
        noise[:, :: cfg.block_size] = input_ids.gather(1, anchors)
        x = self.embed(noise)
        ctx = self.fc_norm(self.fc(ctx_hidden.to(x.dtype)))
        pos_ctx = torch.arange(s, device=x.device).expand(b, -1)
        if cfg.attn == "flex":
            mask = flex_block_mask(anchors, s, cfg.block_size)
        else:
            mask = dense_block_mask(anchors, s, cfg.block_size)
        for layer in self.layers:
            if cfg.draft_layer_ckpt:
                x = checkpoint(layer, x, ctx, pos_x, pos_ctx, mask, use_reentrant=cfg.use_reentrant)
            else:
                x = layer(x, ctx, pos_x, pos_ctx, mask)
        h = self.norm(x)
        den = weights.sum().clamp(min=1.0)
        return chunked_head_loss(h.flatten(0, 1), labels.flatten(), weights.flatten(), self.lm_head,
                                 mode=cfg.lm_head_mode, rows_per_chunk=cfg.chunk_blocks * cfg.block_size,
                                 use_reentrant=cfg.use_reentrant, den=den)


# ---------------------------------------------------------------- the loss through the head

def _chunk_loss(h, weight, labels, w, den):
    logits = F.linear(h, weight).float()
    return (F.cross_entropy(logits, labels, reduction="none") * w).sum() / den


class _GradInForwardCE(torch.autograd.Function):
    """Loss and d(loss)/dh in one pass: logits never outlive the chunk and are never recomputed."""

    @staticmethod
    def forward(ctx, h, weight, labels, w, den):
        logits = F.linear(h, weight).float()
        loss = (F.cross_entropy(logits, labels, reduction="none") * w).sum() / den
        dlogits = logits.softmax(-1)
        dlogits[torch.arange(len(labels), device=labels.device), labels] -= 1.0
        dlogits *= (w / den).unsqueeze(-1)
        ctx.save_for_backward(dlogits.to(h.dtype) @ weight)
        return loss

    @staticmethod
    def backward(ctx, grad_out):
        (grad_h,) = ctx.saved_tensors
        return grad_out * grad_h, None, None, None, None


def chunked_head_loss(h, labels, weights, head_weight, *, mode: str, rows_per_chunk: int,
                      use_reentrant: bool, den):
    total = h.new_zeros((), dtype=torch.float32)
    for start in range(0, h.shape[0], rows_per_chunk):
        sl = slice(start, start + rows_per_chunk)
        if mode == "once":
            part = _GradInForwardCE.apply(h[sl], head_weight, labels[sl], weights[sl], den)
        else:
            part = checkpoint(_chunk_loss, h[sl], head_weight, labels[sl], weights[sl], den,
                              use_reentrant=use_reentrant)
        total = total + part
    return total


class HeadMatmulCounter(TorchDispatchMode):
    """Counts matrix multiplies that touch a `vocab`-sized dimension, forward and backward.

    A dispatch mode sees what autograd and checkpoint actually run (recomputes, weight gradients),
    which neither timing nor a count of Python calls would show.
    """

    _MM = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear"}

    def __init__(self, vocab: int):
        super().__init__()
        self.vocab, self.count = vocab, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ in self._MM and any(
            isinstance(a, torch.Tensor) and self.vocab in a.shape for a in args
        ):
            self.count += 1
        return func(*args, **(kwargs or {}))


def head_matmuls_per_chunk(mode: str) -> int:
    return {"once": 2, "recompute": 3, "trainable": 4}[mode]


def n_chunks(cfg: DraftConfig, batch: int) -> int:
    """Loss chunks per step: the blocks of the whole batch, `chunk_blocks` at a time."""
    return math.ceil(batch * cfg.num_anchors / cfg.chunk_blocks)
