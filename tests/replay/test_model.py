"""The target's linear attention: both paths compute the gated delta rule, the slow one warns."""

from __future__ import annotations

import logging

import pytest

torch = pytest.importorskip("torch")

from dflash_postmortem.replay import model  # noqa: E402
from dflash_postmortem.replay.model import (  # noqa: E402
    FALLBACK_WARNING,
    HybridTarget,
    TargetConfig,
    build_target_layer_ids,
    gated_delta_rule_fallback,
    gated_delta_rule_fast,
)


def recurrent_gated_delta_rule(q, k, v, g, beta):
    """Token-by-token definition (transformers' torch_recurrent_gated_delta_rule)."""
    q, k, v, beta, g = (x.transpose(1, 2).float() for x in (q, k, v, beta, g))
    b, h, s, dk = k.shape
    q = q / dk**0.5
    state = torch.zeros(b, h, dk, v.shape[-1])
    out = torch.zeros(b, h, s, v.shape[-1])
    for i in range(s):
        state = state * g[:, :, i].exp()[..., None, None]
        delta = (v[:, :, i] - (state * k[:, :, i, :, None]).sum(-2)) * beta[:, :, i, None]
        state = state + k[:, :, i, :, None] * delta[:, :, None, :]
        out[:, :, i] = (state * q[:, :, i, :, None]).sum(-2)
    return out.transpose(1, 2)


@pytest.fixture
def gdn_inputs():
    torch.manual_seed(0)
    b, s, h, d = 2, 100, 3, 8  # s not a multiple of the chunk: the padding path runs too
    q = torch.nn.functional.normalize(torch.randn(b, s, h, d), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(b, s, h, d), dim=-1)
    return q, k, torch.randn(b, s, h, d), -torch.rand(b, s, h) * 0.5, torch.rand(b, s, h)


@pytest.mark.parametrize("rule", [gated_delta_rule_fast, gated_delta_rule_fallback])
def test_both_linear_attention_paths_match_the_recurrence(rule, gdn_inputs):
    expected = recurrent_gated_delta_rule(*gdn_inputs)
    torch.testing.assert_close(rule(*gdn_inputs, chunk=32), expected, atol=1e-5, rtol=1e-4)


def test_fallback_warns_once_with_the_transformers_text(caplog, monkeypatch):
    monkeypatch.setattr(model, "_warned_fallback", False)
    cfg = TargetConfig(vocab=50, hidden=16, layers=4, heads=2, linear_attn="fallback")
    with caplog.at_level(logging.WARNING, logger="dflash_postmortem.replay.model"):
        HybridTarget(cfg, [1])
        HybridTarget(cfg, [1])
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [FALLBACK_WARNING]
    assert "https://github.com/fla-org/flash-linear-attention#installation" in warnings[0]


def test_fast_target_does_not_warn(caplog, monkeypatch):
    monkeypatch.setattr(model, "_warned_fallback", False)
    with caplog.at_level(logging.WARNING, logger="dflash_postmortem.replay.model"):
        HybridTarget(TargetConfig(vocab=50, hidden=16, layers=4, heads=2), [1])
    assert caplog.records == []


def test_target_is_hybrid_three_to_one_and_outputs_agree_across_paths():
    cfg = TargetConfig(vocab=64, hidden=16, layers=8, heads=2)
    assert cfg.layer_types().count("linear_attention") == 6
    assert cfg.layer_types()[3] == cfg.layer_types()[7] == "full_attention"
    ids = build_target_layer_ids(8, 2)
    torch.manual_seed(0)
    fast = HybridTarget(cfg, ids)
    slow = HybridTarget(TargetConfig(vocab=64, hidden=16, layers=8, heads=2, linear_attn="fallback"), ids)
    slow.load_state_dict(fast.state_dict())
    x = torch.randint(0, 64, (2, 70))
    with torch.no_grad():
        out = fast(x)
        torch.testing.assert_close(slow(x), out, atol=1e-5, rtol=1e-4)
    assert out.shape == (2, 70, 2 * 16)
    assert not any(p.requires_grad for p in fast.parameters())
