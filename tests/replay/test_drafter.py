"""The DFlash drafter: head matmuls per lm_head_mode are counted, not timed; all modes agree."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dflash_postmortem.replay.drafter import (  # noqa: E402
    LM_HEAD_MODES,
    DFlashDrafter,
    DraftConfig,
    HeadMatmulCounter,
    block_targets,
    dense_block_mask,
    flex_block_mask,
    head_matmuls_per_chunk,
    n_chunks,
    sample_anchors,
)
from dflash_postmortem.replay.model import HybridTarget, TargetConfig  # noqa: E402

VOCAB, HIDDEN, SEQ, BATCH = 997, 32, 64, 2  # a vocab no other dimension equals


@pytest.fixture(scope="module")
def batch():
    torch.manual_seed(0)
    target = HybridTarget(TargetConfig(vocab=VOCAB, hidden=HIDDEN, layers=4, heads=2), [0, 2])
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    with torch.no_grad():
        hidden = target(ids)
    mask = torch.ones(BATCH, SEQ)
    mask[:, :8] = 0
    return target, ids, hidden, mask


def run_step(batch, **knobs):
    target, ids, hidden, mask = batch
    cfg = DraftConfig(heads=2, block_size=4, num_anchors=6, chunk_blocks=4, **knobs)
    torch.manual_seed(1)
    drafter = DFlashDrafter(cfg, HIDDEN, 2, target.embed.weight, target.lm_head.weight, VOCAB - 1)
    anchors = sample_anchors(BATCH, SEQ, cfg, torch.Generator().manual_seed(2))
    with HeadMatmulCounter(VOCAB) as counter:
        loss = drafter(ids, hidden, mask, anchors)
        loss.backward()
    grads = {n: p.grad.clone() for n, p in drafter.named_parameters() if n != "lm_head" and p.grad is not None}
    return loss.detach(), grads, counter.count / n_chunks(cfg, BATCH), drafter


@pytest.mark.parametrize("use_reentrant", [True, False])
@pytest.mark.parametrize("mode", LM_HEAD_MODES)
def test_head_matmuls_per_chunk(batch, mode, use_reentrant):
    _, _, per_chunk, drafter = run_step(batch, lm_head_mode=mode, use_reentrant=use_reentrant)
    assert per_chunk == head_matmuls_per_chunk(mode) == {"once": 2, "recompute": 3, "trainable": 4}[mode]
    # the trainable head really received a weight gradient; the others never did
    assert (drafter.lm_head.grad is not None) == (mode == "trainable")


def test_losses_and_gradients_equal_across_modes(batch):
    ref_loss, ref_grads, _, _ = run_step(batch, lm_head_mode="once")
    assert len(ref_grads) > 10
    for mode in LM_HEAD_MODES:
        for reentrant in (True, False):
            for layer_ckpt in (False, True):
                loss, grads, _, _ = run_step(batch, lm_head_mode=mode, use_reentrant=reentrant,
                                             draft_layer_ckpt=layer_ckpt)
                torch.testing.assert_close(loss, ref_loss, atol=1e-6, rtol=1e-6)
                assert grads.keys() == ref_grads.keys()
                for name in grads:
                    torch.testing.assert_close(grads[name], ref_grads[name], atol=1e-6, rtol=1e-4,
                                               msg=lambda m, n=name, c=(mode, reentrant, layer_ckpt): f"{c} {n}: {m}")


def test_block_mask_sees_context_before_anchor_and_own_block():
    anchors = torch.tensor([[3, 9]])
    mask = dense_block_mask(anchors, seq=12, block=2)[0, 0]
    assert mask.shape == (4, 12 + 4)
    # block 0 (anchor 3): context 0..2, its own two positions, nothing of block 1
    assert mask[0, :12].nonzero().flatten().tolist() == [0, 1, 2]
    assert mask[1, 12:].tolist() == [True, True, False, False]
    assert mask[2, :12].nonzero().flatten().tolist() == list(range(9))
    assert mask[3, 12:].tolist() == [False, False, True, True]


@pytest.mark.filterwarnings("ignore:.*flex_attention called without torch.compile")
def test_flex_mask_matches_sdpa_twin_in_forward(batch):
    """flex_attention has no backward on CPU, but its forward runs: the two backends agree."""
    target, ids, hidden, mask = batch
    loss_sdpa, _, _, _ = run_step(batch, attn="sdpa")
    cfg = DraftConfig(heads=2, block_size=4, num_anchors=6, chunk_blocks=4, attn="flex")
    torch.manual_seed(1)
    drafter = DFlashDrafter(cfg, HIDDEN, 2, target.embed.weight, target.lm_head.weight, VOCAB - 1)
    anchors = sample_anchors(BATCH, SEQ, cfg, torch.Generator().manual_seed(2))
    with torch.no_grad():
        loss_flex = drafter(ids, hidden, mask, anchors)
    torch.testing.assert_close(loss_flex, loss_sdpa, atol=1e-5, rtol=1e-5)
    assert flex_block_mask(anchors, SEQ, 4).shape[-2:] == (6 * 4, SEQ + 6 * 4)


def test_labels_and_position_weights():
    cfg = DraftConfig(block_size=4, num_anchors=2, gamma=4.0)
    ids = torch.arange(20).unsqueeze(0)
    mask = torch.ones(1, 20)
    mask[0, 6] = 0
    labels, weights, _ = block_targets(ids, mask, torch.tensor([[5, 12]]), cfg)
    assert labels.tolist() == [[5, 6, 7, 8, 12, 13, 14, 15]]
    decay = torch.exp(-torch.arange(3.0) / 4.0).tolist()
    expected = [0.0, 0.0, decay[1], decay[2], 0.0, *decay]  # anchor slot never counts; pos 6 masked
    torch.testing.assert_close(weights[0], torch.tensor(expected))


def test_anchors_are_static_in_count_and_leave_room_for_a_block():
    cfg = DraftConfig(block_size=4, num_anchors=10)
    a = sample_anchors(3, 20, cfg, torch.Generator().manual_seed(0))
    assert a.shape == (3, 10)
    assert a.min() >= 1 and a.max() <= 20 - 4
    with pytest.raises(ValueError, match="too short"):
        sample_anchors(1, 8, cfg)
