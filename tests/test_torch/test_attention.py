"""Attention: score functions, masked softmax, both attention kernels, torch.nn.MultiheadAttention parity, cache."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_course.torch.attention import (
    KVCache,
    MultiHeadAttention,
    additive_scores,
    attention_pooling,
    cosine_scores,
    dot_scores,
    general_scores,
    location_scores,
    masked_softmax,
    scaled_dot_product_attention,
    scaled_dot_scores,
)
from transformer_course.torch.masks import causal_mask, combine_masks, lengths_to_mask, padding_mask

torch.set_default_dtype(torch.float32)


def _rand(*shape, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


def test_score_functions_agree_with_their_definitions():
    q, k = _rand(2, 3, 4, seed=1), _rand(2, 5, 4, seed=2)
    B, Tq, Tk = 2, 3, 5
    torch.testing.assert_close(dot_scores(q, k), torch.einsum("bqd,bkd->bqk", q, k))
    torch.testing.assert_close(scaled_dot_scores(q, k), dot_scores(q, k) / 2.0)
    cos = cosine_scores(q, k)
    torch.testing.assert_close(cos[1, 2, 3], F.cosine_similarity(q[1, 2], k[1, 3], dim=0))
    assert cos.abs().max() <= 1.0 + 1e-12
    torch.testing.assert_close(general_scores(q, k, torch.eye(4, dtype=q.dtype)), dot_scores(q, k))
    W_a, U_a, v_a = _rand(4, 6, seed=3), _rand(4, 6, seed=4), _rand(6, seed=5)
    add = additive_scores(q, k, W_a, U_a, v_a)
    assert add.shape == (B, Tq, Tk)
    torch.testing.assert_close(add[1, 2, 4], torch.tanh(q[1, 2] @ W_a + k[1, 4] @ U_a) @ v_a)
    W_loc = _rand(4, Tk, seed=6)
    assert location_scores(q, W_loc).shape == (B, Tq, Tk)


def test_scores_keep_float32():
    q = torch.randn(2, 3, 8)
    for scores in (scaled_dot_scores(q, q), cosine_scores(q, q)):
        assert scores.dtype == torch.float32


def test_masked_softmax_rows_sum_to_one_and_fully_masked_rows_are_zero():
    scores = _rand(2, 3, 4)
    mask = torch.ones(2, 3, 4, dtype=torch.bool)
    mask[0, 1] = False
    mask[1, :, 2:] = False
    weights = masked_softmax(scores, mask)
    assert not torch.isnan(weights).any()
    assert torch.all(weights[0, 1] == 0)
    assert torch.all(weights[1, :, 2:] == 0)
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(3, dtype=weights.dtype))
    out, _w = attention_pooling(scores, _rand(2, 4, 5), mask)
    assert out.shape == (2, 3, 5) and torch.all(out[0, 1] == 0)


def test_masks():
    tokens = torch.tensor([[5, 6, 0], [7, 0, 0]])
    pm = padding_mask(tokens, 0)
    assert pm.shape == (2, 1, 3) and pm.tolist() == [[[True, True, False]], [[True, False, False]]]
    assert torch.equal(lengths_to_mask(torch.tensor([2, 1]), 3), pm)
    cm = causal_mask(3)
    assert cm.shape == (1, 3, 3) and cm[0].tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert combine_masks(cm, pm).shape == (2, 3, 3)
    assert combine_masks(None, None) is None
    with pytest.raises(ValueError, match="lengths"):
        lengths_to_mask(torch.tensor([4]), 3)
    with pytest.raises(ValueError, match="T: expected a positive int"):
        causal_mask(0)


def _mha_pair(d_model=16, n_heads=4, dtype=torch.float64, seed=0):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, n_heads).to(dtype)
    with torch.no_grad():                                # non-zero biases so they are tested too
        for p in ours.parameters():
            if p.dim() == 1:
                p.normal_()
    ref = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True).to(dtype)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        ref.out_proj.weight.copy_(ours.W_o.weight)
        ref.out_proj.bias.copy_(ours.W_o.bias)
    return ours, ref


def _with_both_kernels(ours: MultiHeadAttention) -> dict[str, MultiHeadAttention]:
    """`ours` (built with the fused kernel) and a twin with the same weights that writes attention out."""
    explicit = MultiHeadAttention(ours.d_model, ours.n_heads, ours.dropout, ours.positional, fused=False)
    explicit.to(next(ours.parameters()).dtype).load_state_dict(ours.state_dict())
    return {"fused": ours, "explicit": explicit}


@pytest.mark.parametrize("self_attention", [True, False])
def test_multi_head_attention_equals_torch_multihead_attention(self_attention):
    ours, ref = _mha_pair()
    x = _rand(3, 5, 16, seed=1)
    x_kv = x if self_attention else _rand(3, 7, 16, seed=2)
    S = x_kv.shape[1]
    key_padding = torch.zeros(3, S, dtype=torch.bool)
    key_padding[1, -2:] = True                           # torch: True = ignore
    mask = ~key_padding[:, None, :]                      # ours: True = may attend, (B, 1, S)
    ref_out, ref_w = ref(x, x_kv, x_kv, key_padding_mask=key_padding, need_weights=True, average_attn_weights=False)
    for mha in _with_both_kernels(ours).values():
        for need_weights in (True, False):
            out, w = mha(x, x_kv, mask, need_weights=need_weights)
            torch.testing.assert_close(out, ref_out, atol=1e-12, rtol=1e-12)
            if need_weights or not mha.fused:
                torch.testing.assert_close(w, ref_w, atol=1e-12, rtol=1e-12)
            else:
                assert w is None                         # the fused kernel never forms the weights


def test_multi_head_attention_causal_equals_torch():
    ours, ref = _mha_pair()
    x = _rand(2, 6, 16, seed=3)
    ref_out, _ = ref(x, x, x, attn_mask=~causal_mask(6)[0], need_weights=False)
    for mha in _with_both_kernels(ours).values():
        for need_weights in (True, False):
            out, _ = mha(x, x, causal_mask(6), need_weights=need_weights)
            torch.testing.assert_close(out, ref_out, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 1e-4)])
def test_both_kernels_are_equal_with_masks_in_value_and_gradient(dtype, tol):
    """The fused kernel == attention written out (fused=False) == the weights requested, outputs and gradients."""
    ours, _ = _mha_pair(dtype=dtype)
    kernels = _with_both_kernels(ours)
    x = _rand(3, 6, 16, seed=4, dtype=dtype)
    tokens = torch.tensor([[4, 4, 4, 4, 4, 4], [4, 4, 4, 0, 0, 0], [4, 4, 4, 4, 4, 0]])
    masks = [None, padding_mask(tokens, 0), causal_mask(6), combine_masks(causal_mask(6), padding_mask(tokens, 0))]
    runs = [(kernels["fused"], False), (kernels["fused"], True), (kernels["explicit"], False)]
    for mask in masks:
        results = []
        for mha, need_weights in runs:
            xg = x.clone().requires_grad_(True)
            out, _ = mha(xg, xg, mask, need_weights=need_weights)
            out.pow(2).sum().backward()
            results.append((out.detach(), [xg.grad] + [p.grad.clone() for p in mha.parameters()]))
            mha.zero_grad()
        for other in results[1:]:
            torch.testing.assert_close(other[0], results[0][0], atol=tol, rtol=tol)
            for g_other, g_first in zip(other[1], results[0][1]):
                torch.testing.assert_close(g_other, g_first, atol=tol, rtol=tol)


def test_fully_masked_query_rows_give_zero_output_and_finite_gradients_with_both_kernels():
    ours, _ = _mha_pair()
    mask = torch.ones(2, 1, 4, dtype=torch.bool)
    mask[1] = False                                      # the second sequence is all padding
    for mha in _with_both_kernels(ours).values():
        for need_weights in (True, False):
            x = _rand(2, 4, 16, seed=5).requires_grad_(True)
            out, _ = mha(x, x, mask, need_weights=need_weights)
            expected = mha.W_o.bias.expand(4, 16)        # zero attention output, then + b_o
            torch.testing.assert_close(out[1], expected)
            out.sum().backward()
            assert torch.isfinite(x.grad).all()


def test_kv_cache_gives_the_same_output_as_full_causal_attention():
    ours, _ = _mha_pair()
    x = _rand(2, 5, 16, seed=6)
    full, _ = ours(x, x, causal_mask(5))
    for mha in _with_both_kernels(ours).values():
        mha.eval()
        cache = KVCache()
        steps = [mha(x[:, t:t + 1], x[:, t:t + 1], need_weights=False, cache=cache)[0] for t in range(5)]
        torch.testing.assert_close(torch.cat(steps, 1), full)
        assert cache.k.shape == (2, 4, 5, 4)
    memory = _rand(2, 7, 16, seed=7)
    static = KVCache(static=True)
    first, _ = ours(x, memory, need_weights=False, cache=static)
    keys = static.k
    second, _ = ours(x, memory * 0, need_weights=False, cache=static)  # memory is ignored once cached
    assert static.k is keys
    torch.testing.assert_close(first, second)
    torch.testing.assert_close(first, ours(x, memory)[0])  # no cache
    ours.train()
    with pytest.raises(ValueError, match="cache: decoding with a key/value cache needs eval mode"):
        ours(x, x, cache=KVCache())


def test_kv_cache_grows_past_its_capacity_and_follows_reordered_rows():
    cache = KVCache()
    keys = _rand(3, 2, 40, 4, seed=8)                    # (B, H, t, Dh)
    values = _rand(3, 2, 40, 4, seed=9)
    chunks = [(0, 3)] + [(t, t + 1) for t in range(3, 40)]  # one chunk of 3 positions, then one at a time
    for start, end in chunks:
        k, v = cache.append(keys[:, :, start:end], values[:, :, start:end])
        assert k.shape == (3, 2, end, 4) and cache.length == end
        torch.testing.assert_close(k, keys[:, :, :end], rtol=0, atol=0)
        torch.testing.assert_close(v, values[:, :, :end], rtol=0, atol=0)
    index = torch.tensor([2, 2, 0])
    cache.reorder(index)
    torch.testing.assert_close(cache.k, keys[index], rtol=0, atol=0)
    torch.testing.assert_close(cache.v, values[index], rtol=0, atol=0)


def test_scaled_dot_product_attention_matches_torch_sdpa():
    q, k, v = _rand(2, 3, 4, 8, seed=1), _rand(2, 3, 6, 8, seed=2), _rand(2, 3, 6, 8, seed=3)
    mask = torch.rand(2, 1, 4, 6, generator=torch.Generator().manual_seed(0)) > 0.3
    mask[..., 0] = True
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 4, dtype=q.dtype))


def test_bad_inputs_raise_clear_errors():
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(2, 5, 16)
    with pytest.raises(ValueError, match=r"mask: expected shape \(B=2 or 1, Tq=5 or 1, Tk=5\), got \(2, 5, 4\)"):
        mha(x, x, torch.ones(2, 5, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask: expected a bool tensor"):
        mha(x, x, torch.ones(2, 1, 5))
    with pytest.raises(ValueError, match=r"x_q: expected shape \(B, Tq, d_model=16\), got \(2, 5, 8\)"):
        mha(torch.randn(2, 5, 8), x)
    with pytest.raises(ValueError, match="n_heads: expected a divisor of d_model=16, got 3"):
        MultiHeadAttention(16, 3)


def test_attention_dropout_only_in_training():
    mha = MultiHeadAttention(16, 4, dropout=0.5)
    x = torch.randn(2, 5, 16)
    mha.eval()
    a, _ = mha(x, x, need_weights=False)
    b, _ = mha(x, x)
    torch.testing.assert_close(a, b)
    mha.train()
    c, _ = mha(x, x, need_weights=False)
    d, _ = mha(x, x)
    assert not torch.allclose(a, c) and not torch.allclose(a, d)
    assert math.isfinite(float(c.detach().sum()))
