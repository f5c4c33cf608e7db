"""The frozen target: a small hybrid model shaped like Qwen3-Next / Qwen3.5.

Three of every four layers are Gated-DeltaNet-like linear attention, the fourth softmax attention
(the real 64-layer model has 48 + 16). The linear layers have two implementations of the same
recurrence:

- `fast`: the chunked form with the in-chunk triangular system solved in one call, standing in for
  the flash-linear-attention kernels;
- `fallback`: the reference PyTorch algorithm transformers falls back to when flash-linear-attention
  is missing (`torch_chunk_gated_delta_rule`: a Python loop over chunks and, inside each chunk,
  over rows). It logs the warning transformers logs, so a replayed log shows the same clue.

Both compute the same outputs (tests check against a token-by-token recurrence).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import UsageError

log = logging.getLogger(__name__)

# Word for word what transformers' modeling_qwen3_next.py logs when fla / causal-conv1d are absent.
FALLBACK_WARNING = (
    "The fast path is not available because one of the required library is not installed. "
    "Falling back to torch implementation. To install follow "
    "https://github.com/fla-org/flash-linear-attention#installation and "
    "https://github.com/Dao-AILab/causal-conv1d"
)
LINEAR_ATTN_IMPLS = ("fast", "fallback")
_warned_fallback = False


@dataclass
class TargetConfig:
    vocab: int = 3072
    hidden: int = 64
    layers: int = 8
    heads: int = 4
    mlp_ratio: float = 3.0
    linear_attn: str = "fast"
    chunk_size: int = 64  # linear-attention chunk, as in fla and transformers

    def layer_types(self) -> list[str]:
        return ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(self.layers)]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class SwiGLU(nn.Module):
    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.gate = nn.Linear(hidden, inner, bias=False)
        self.up = nn.Linear(hidden, inner, bias=False)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


def _chunk_inputs(q, k, v, g, beta, chunk):
    """[B,S,H,D] inputs -> fp32 [B,H,N,C,D] chunks, q scaled, plus the in-chunk decay terms."""
    q, k, v, beta, g = (x.transpose(1, 2).contiguous().float() for x in (q, k, v, beta, g))
    b, h, s, dk = k.shape
    pad = (chunk - s % chunk) % chunk
    q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
    beta, g = F.pad(beta, (0, pad)), F.pad(g, (0, pad))
    q = q / math.sqrt(dk)
    v_beta, k_beta = v * beta.unsqueeze(-1), k * beta.unsqueeze(-1)
    q, k, v, k_beta, v_beta = (x.reshape(b, h, -1, chunk, x.shape[-1]) for x in (q, k, v, k_beta, v_beta))
    g = g.reshape(b, h, -1, chunk).cumsum(-1)
    decay = (g.unsqueeze(-1) - g.unsqueeze(-2)).tril().exp().tril()
    return q, k, v, k_beta, v_beta, g, decay, s


def _chunk_scan(q, k, v_new_base, k_cumdecay, g, decay, s):
    """The sequential part shared by both paths: carry the [Dk,Dv] state from chunk to chunk."""
    b, h, n, c, dk = k.shape
    state = q.new_zeros(b, h, dk, v_new_base.shape[-1])
    out = torch.empty_like(v_new_base)
    causal = torch.triu(torch.ones(c, c, dtype=torch.bool, device=q.device), diagonal=1)
    for i in range(n):
        q_i, k_i = q[:, :, i], k[:, :, i]
        attn = (q_i @ k_i.transpose(-1, -2) * decay[:, :, i]).masked_fill(causal, 0)
        v_new = v_new_base[:, :, i] - k_cumdecay[:, :, i] @ state
        out[:, :, i] = (q_i * g[:, :, i, :, None].exp()) @ state + attn @ v_new
        g_last = g[:, :, i, -1, None]
        state = state * g_last[..., None].exp() + (k_i * (g_last - g[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_new
    return out.reshape(b, h, -1, out.shape[-1])[:, :, :s].transpose(1, 2)


def gated_delta_rule_fast(q, k, v, g, beta, chunk: int = 64):
    q, k, v, k_beta, v_beta, g, decay, s = _chunk_inputs(q, k, v, g, beta, chunk)
    c = k.shape[-2]
    strict = torch.triu(torch.ones(c, c, dtype=torch.bool, device=q.device), diagonal=0)
    a = ((k_beta @ k.transpose(-1, -2)) * decay).masked_fill(strict, 0)
    # (I + A)^-1 in one triangular solve: what the row loop of the fallback computes one row at a time
    eye = torch.eye(c, dtype=a.dtype, device=a.device)
    t = torch.linalg.solve_triangular(eye + a, eye.expand_as(a), upper=False, unitriangular=True)
    return _chunk_scan(q, k, t @ v_beta, t @ (k_beta * g.exp().unsqueeze(-1)), g, decay, s)


def warn_fallback_once() -> None:
    """Like transformers, warn once per process, when the layer is built."""
    global _warned_fallback
    if not _warned_fallback:
        _warned_fallback = True
        log.warning(FALLBACK_WARNING)


def gated_delta_rule_fallback(q, k, v, g, beta, chunk: int = 64):
    """transformers' torch_chunk_gated_delta_rule, row loop included."""
    q, k, v, k_beta, v_beta, g, decay, s = _chunk_inputs(q, k, v, g, beta, chunk)
    c = k.shape[-2]
    strict = torch.triu(torch.ones(c, c, dtype=torch.bool, device=q.device), diagonal=0)
    attn = -((k_beta @ k.transpose(-1, -2)) * decay).masked_fill(strict, 0)
    for i in range(1, c):
        row = attn[..., i, :i].clone()
        sub = attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    attn = attn + torch.eye(c, dtype=attn.dtype, device=attn.device)
    return _chunk_scan(q, k, attn @ v_beta, attn @ (k_beta * g.exp().unsqueeze(-1)), g, decay, s)


class GatedDeltaNet(nn.Module):
    """Linear attention with a gated delta-rule state, a short causal conv and an output gate."""

    def __init__(self, cfg: TargetConfig):
        super().__init__()
        h, self.heads = cfg.hidden, cfg.heads
        self.head_dim = h // cfg.heads
        self.impl, self.chunk = cfg.linear_attn, cfg.chunk_size
        if self.impl == "fallback":
            warn_fallback_once()
        self.qkv = nn.Linear(h, 3 * h, bias=False)
        self.conv = nn.Conv1d(3 * h, 3 * h, kernel_size=4, groups=3 * h, padding=3, bias=False)
        self.ab = nn.Linear(h, 2 * cfg.heads, bias=False)
        self.a_log = nn.Parameter(torch.zeros(cfg.heads))
        self.dt_bias = nn.Parameter(torch.ones(cfg.heads))
        self.gate = nn.Linear(h, h, bias=False)
        self.norm = RMSNorm(self.head_dim)
        self.out = nn.Linear(h, h, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        qkv = F.silu(self.conv(self.qkv(x).transpose(1, 2))[..., :s]).transpose(1, 2)
        q, k, v = (t.reshape(b, s, self.heads, self.head_dim) for t in qkv.chunk(3, dim=-1))
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        a, bb = self.ab(x).float().chunk(2, dim=-1)
        g = -self.a_log.float().exp() * F.softplus(a + self.dt_bias)
        rule = gated_delta_rule_fast if self.impl == "fast" else gated_delta_rule_fallback
        o = rule(q, k, v, g, bb.sigmoid(), self.chunk).to(x.dtype)
        o = self.norm(o) * F.silu(self.gate(x)).reshape(b, s, self.heads, self.head_dim)
        return self.out(o.reshape(b, s, -1))


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: TargetConfig):
        super().__init__()
        self.heads = cfg.heads
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden, bias=False)
        self.out = nn.Linear(cfg.hidden, cfg.hidden, bias=False)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = (t.reshape(b, s, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(o.transpose(1, 2).reshape(b, s, h))


class Block(nn.Module):
    def __init__(self, cfg: TargetConfig, kind: str):
        super().__init__()
        self.kind = kind
        self.norm1, self.norm2 = RMSNorm(cfg.hidden), RMSNorm(cfg.hidden)
        self.mixer = GatedDeltaNet(cfg) if kind == "linear_attention" else CausalSelfAttention(cfg)
        self.mlp = SwiGLU(cfg.hidden, int(cfg.hidden * cfg.mlp_ratio))

    def forward(self, x):
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def build_target_layer_ids(layers: int, n_draft_layers: int) -> list[int]:
    """Target layers whose outputs feed the drafter, spread over the depth as DFlash does."""
    if n_draft_layers == 1:
        return [layers // 2]
    # SpecForge's spacing (layer 1 to L-3), widened for targets too shallow to give distinct layers
    start, end = 1, min(layers - 1, max(layers - 3, n_draft_layers))
    return [round(start + i * (end - start) / (n_draft_layers - 1)) for i in range(n_draft_layers)]


class HybridTarget(nn.Module):
    """Frozen target. `forward` returns the concatenated hidden states of `layer_ids`."""

    def __init__(self, cfg: TargetConfig, layer_ids: list[int]):
        super().__init__()
        if cfg.linear_attn not in LINEAR_ATTN_IMPLS:
            raise UsageError(f"linear_attn must be one of {LINEAR_ATTN_IMPLS}, got {cfg.linear_attn!r}")
        if cfg.hidden % cfg.heads:
            raise UsageError(f"hidden {cfg.hidden} is not divisible by heads {cfg.heads}")
        self.cfg, self.layer_ids = cfg, list(layer_ids)
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.layers = nn.ModuleList(Block(cfg, kind) for kind in cfg.layer_types())
        self.norm = RMSNorm(cfg.hidden)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab, bias=False)
        self.requires_grad_(False)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        picked = []
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i in self.layer_ids:
                picked.append(x)
        return torch.cat(picked, dim=-1)
