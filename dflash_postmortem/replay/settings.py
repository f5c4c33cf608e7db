"""A replay run's settings: one dataclass, the command line's shape.

The target's and the drafter's own defaults live in their configs (`model.TargetConfig`,
`drafter.DraftConfig`); this one takes them from there, and adds placement, run length and
telemetry. `run_parts.py` turns it into the two configs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .drafter import DraftConfig
from .model import TargetConfig

_T, _D = TargetConfig(), DraftConfig()


@dataclass
class ReplayConfig:
    run_name: str = "replay"
    seconds: float = 60.0
    max_steps: int | None = None
    pid_file: str | None = None
    # placement
    target_gpus: list[int] = field(default_factory=list)  # empty = CPU
    drafter_gpus: list[int] = field(default_factory=list)
    target_threads: int = 0  # 0 = one per target device
    drafter_threads: int = 0
    transport: str = "threads"
    queue_size: int = 4
    # the share of wall time each worker thread computes: after each batch it waits the rest
    # (1.0: never waits). A CPU replay beside other work (a test suite) keeps its rates' ratios
    # at a quarter of the CPU: every thread's step slows by the same factor.
    cpu_share: float = 1.0
    # shapes (the target's and the drafter's defaults are their own configs')
    vocab: int = _T.vocab
    hidden: int = _T.hidden
    layers: int = _T.layers
    heads: int = _T.heads
    seq: int = 128
    batch: int = 2
    draft_layers: int = _D.layers
    draft_heads: int = _D.heads
    block_size: int = _D.block_size
    num_anchors: int = _D.num_anchors
    chunk_blocks: int = _D.chunk_blocks
    dtype: str = "auto"  # bf16 on GPU, fp32 on CPU
    materialize: str = "device"  # "host": target weights made on the host, moved layer by layer
    # the four knobs
    lm_head_mode: str = _D.lm_head_mode
    use_reentrant: bool = _D.use_reentrant
    draft_layer_ckpt: bool = _D.draft_layer_ckpt
    linear_attn: str = _T.linear_attn
    compile: str = _D.compile
    compile_backend: str = _D.compile_backend
    attn: str = "auto"  # flex on GPU, sdpa on CPU (flex_attention has no backward on CPU)
    # telemetry
    log_every: int = 5
    lr: float = 3e-4
    seed: int = 0
    dataset_tokens: int = 524288
    wandb: bool = True
    wandb_dir: str | None = None
    record_gpus_dir: str | None = None
    result_json: str | None = None
    warmup_steps: int = 10  # excluded from the steady-state numbers in --result-json
    count_flops: bool = False
    peak_tflops: float | None = None
    inject_error: str | None = None  # "target:N" or "drafter:N": raise in that thread at its step N
    inject_hang: str | None = None  # "target:N" or "drafter:N": block that thread forever at its step N;
    # "exit:1": the process never exits after its last line
    on_thread_error: str = "stop"  # "continue": a failed thread just dies (a naive loop), the rest wait
    # ranks (torchrun; ranks.py)
    fault_rank: int | None = None  # the faults happen on this rank only (None: every rank)
    fault_attempt: int = 0  # ... in this attempt of the launcher (its restart count; -1: every one)
    backend: str | None = None  # None: NCCL when each rank has a GPU of its own, else gloo
    pg_timeout: float = 600.0  # seconds a collective (and process-group setup) waits for the others
    # checkpoints
    checkpoint_dir: str | None = None
    checkpoint_every: int = 0  # drafter steps between checkpoints (0: none)
    resume: bool = False  # start from the newest checkpoint in checkpoint_dir, at its step
    log_per_thread: bool = False  # each drafter thread writes its own step lines and rate
