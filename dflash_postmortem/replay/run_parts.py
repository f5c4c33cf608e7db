"""What a replay run is made of: its synthetic data, its target and drafter on their devices,
and one drafter optimizer step. Shared by the threaded trainer (`train.py`) and the distributed
one (`dist.py`).
"""

from __future__ import annotations

import torch

from .drafter import DFlashDrafter, DraftConfig, sample_anchors
from .model import Block, HybridTarget, TargetConfig, build_target_layer_ids
from .settings import ReplayConfig

# ---------------------------------------------------------------- data

class TokenData:
    """Synthetic text with learnable structure: each token usually follows from the previous one
    through a fixed random permutation, so the drafter's loss really falls."""

    def __init__(self, cfg: ReplayConfig):
        g = torch.Generator().manual_seed(cfg.seed)
        rows = max(cfg.batch, cfg.dataset_tokens // cfg.seq)
        follow = torch.randperm(cfg.vocab, generator=g)
        tokens = torch.empty(rows, cfg.seq, dtype=torch.long)
        tokens[:, 0] = torch.randint(cfg.vocab, (rows,), generator=g)
        for i in range(1, cfg.seq):
            jump = torch.rand(rows, generator=g) < 0.3
            tokens[:, i] = torch.where(jump, torch.randint(cfg.vocab, (rows,), generator=g), follow[tokens[:, i - 1]])
        self.tokens, self.batch = tokens, cfg.batch
        # no loss on a "prompt" prefix, as chat data masks the user turn
        self.loss_mask = torch.ones(cfg.batch, cfg.seq)
        self.loss_mask[:, : cfg.seq // 8] = 0

    def sample(self, g: torch.Generator):
        rows = torch.randint(len(self.tokens), (self.batch,), generator=g)
        return self.tokens[rows], self.loss_mask


# ---------------------------------------------------------------- models

def param_count(n: int) -> str:
    """`0.81B` as the capture's trainer writes it; millions for models too small for that."""
    return f"{n / 1e9:.2f}B" if n >= 1e8 else f"{n / 1e6:.2f}M"


def device_of(gpu: int | None) -> torch.device:
    return torch.device("cpu") if gpu is None else torch.device("cuda", gpu)


def dtype_of(cfg: ReplayConfig) -> torch.dtype:
    if cfg.dtype == "auto":
        return torch.bfloat16 if cfg.target_gpus or cfg.drafter_gpus else torch.float32
    return {"bf16": torch.bfloat16, "fp32": torch.float32}[cfg.dtype]


def build_target(cfg: ReplayConfig, device: torch.device) -> HybridTarget:
    tcfg = TargetConfig(vocab=cfg.vocab, hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads,
                        linear_attn=cfg.linear_attn)
    torch.manual_seed(cfg.seed)  # every replica of the target gets the same weights
    layer_ids = build_target_layer_ids(cfg.layers, cfg.draft_layers)
    if cfg.materialize == "host":
        return _build_target_on_host(tcfg, layer_ids, device, dtype_of(cfg))
    with torch.device(device):
        target = HybridTarget(tcfg, layer_ids)
    return target.to(dtype_of(cfg)).eval()


def _build_target_on_host(tcfg: TargetConfig, layer_ids: list[int], device: torch.device,
                          dtype: torch.dtype) -> HybridTarget:
    """The shape of a checkpoint load: the skeleton has no storage, each block is made on the CPU
    (single-threaded random init, as slow as reading weights from disk) and moved as soon as it
    exists. Host memory stays at one block; device memory grows block by block."""
    with torch.device("meta"):
        target = HybridTarget(tcfg, layer_ids)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one loader thread, as a checkpoint read from disk has
    try:
        for name in ("embed", "norm", "lm_head"):
            fresh = type(getattr(target, name))(*_module_args(tcfg, name))
            setattr(target, name, fresh.to(device=device, dtype=dtype))
        for i, kind in enumerate(tcfg.layer_types()):
            target.layers[i] = Block(tcfg, kind).to(device=device, dtype=dtype)
    finally:
        torch.set_num_threads(threads)
    return target.requires_grad_(False).eval()


def _module_args(tcfg: TargetConfig, name: str) -> tuple:
    return {"embed": (tcfg.vocab, tcfg.hidden), "norm": (tcfg.hidden,),
            "lm_head": (tcfg.hidden, tcfg.vocab, False)}[name]


def draft_config(cfg: ReplayConfig, device: torch.device) -> DraftConfig:
    attn = cfg.attn if cfg.attn != "auto" else ("flex" if device.type == "cuda" else "sdpa")
    return DraftConfig(layers=cfg.draft_layers, heads=cfg.draft_heads, block_size=cfg.block_size,
                       num_anchors=cfg.num_anchors, chunk_blocks=cfg.chunk_blocks,
                       lm_head_mode=cfg.lm_head_mode, use_reentrant=cfg.use_reentrant,
                       draft_layer_ckpt=cfg.draft_layer_ckpt, attn=attn, compile=cfg.compile,
                       compile_backend=cfg.compile_backend)


def build_drafter(cfg: ReplayConfig, target: HybridTarget, device: torch.device):
    torch.manual_seed(cfg.seed + 1)
    with torch.device(device):
        drafter = DFlashDrafter(draft_config(cfg, device), cfg.hidden, len(target.layer_ids),
                                target.embed.weight.to(device), target.lm_head.weight.to(device),
                                mask_token_id=cfg.vocab - 1)
    drafter.to(dtype_of(cfg))
    opt = torch.optim.AdamW(drafter.trainable_parameters(), lr=cfg.lr)
    return drafter, opt


def drafter_step(drafter, opt, ids, mask, hidden, g: torch.Generator) -> torch.Tensor:
    """One optimizer step; returns the loss (still on the device)."""
    anchors = sample_anchors(ids.shape[0], ids.shape[1], drafter.cfg, g).to(ids.device)
    loss = drafter(ids, hidden, mask, anchors)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(drafter.trainable_parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss
