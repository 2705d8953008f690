"""Score functions, masked softmax, attention pooling, scaled dot-product and multi-head attention (NumPy)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from numpy_helpers import TOL, check_layer, lively

from transformer_course.numpy.attention import (
    additive_scores_backward,
    additive_scores_forward,
    attention_pooling_backward,
    attention_pooling_forward,
    cosine_scores_backward,
    cosine_scores_forward,
    dot_scores_backward,
    dot_scores_forward,
    general_scores_backward,
    general_scores_forward,
    init_additive_scores,
    init_general_scores,
    init_location_scores,
    init_multi_head_attention,
    location_scores_backward,
    location_scores_forward,
    masked_softmax,
    multi_head_attention_backward,
    multi_head_attention_forward,
    scaled_dot_product_attention_backward,
    scaled_dot_product_attention_forward,
    scaled_dot_scores_backward,
    scaled_dot_scores_forward,
    self_attention_backward,
    self_attention_forward,
)
from transformer_course.numpy.masks import causal_mask, combine_masks, lengths_to_mask, padding_mask

RNG = np.random.default_rng(0)
B, TQ, TK, DQ, DK = 2, 3, 4, 5, 6


def _qk(dk=DQ):
    rng = np.random.default_rng(1)
    return rng.standard_normal((B, TQ, DQ)), rng.standard_normal((B, TK, dk))


def _check_scores(forward, backward, inputs, params=None):
    """Gradient check of a score function wrapped as forward(x, params) / backward(dout, cache)."""
    check_layer(forward, backward, inputs, params if params is not None else {})


def _scores(forward, *args):
    scores, _ = forward(*args)
    return scores


def test_dot_and_scaled_dot_gradcheck_and_scale():
    q, k = _qk()
    for forward, backward in ((dot_scores_forward, dot_scores_backward),
                              (scaled_dot_scores_forward, scaled_dot_scores_backward)):
        _check_scores(lambda x, p: forward(x["q"], x["k"]),  # noqa: B023  (called in this iteration)
                      lambda d, cache: (dict(zip("qk", backward(d, cache))), {}),  # noqa: B023
                      {"q": q, "k": k})
    np.testing.assert_allclose(_scores(scaled_dot_scores_forward, q, k),
                               _scores(dot_scores_forward, q, k) / math.sqrt(DQ))


def test_cosine_scores_in_range_and_gradcheck():
    q, k = _qk()
    s = _scores(cosine_scores_forward, q, k)
    assert s.shape == (B, TQ, TK) and np.all(np.abs(s) <= 1 + 1e-12)
    np.testing.assert_allclose(_scores(cosine_scores_forward, 3.0 * q, k), s, atol=1e-7)  # scale-free: content only
    _check_scores(lambda x, p: cosine_scores_forward(x["q"], x["k"]),
                  lambda d, cache: (dict(zip("qk", cosine_scores_backward(d, cache))), {}),
                  {"q": q, "k": k})


def test_general_scores_gradcheck():
    q, k = _qk(DK)
    params = lively(init_general_scores(RNG, DQ, DK, np.float64), RNG)

    def backward(d, cache):
        dq, dk, grads = general_scores_backward(d, cache)
        return {"q": dq, "k": dk}, grads

    _check_scores(lambda x, p: general_scores_forward(x["q"], x["k"], p["W_a"]), backward, {"q": q, "k": k}, params)


def test_additive_scores_gradcheck_and_formula():
    q, k = _qk(DK)
    params = lively(init_additive_scores(RNG, DQ, DK, 7, np.float64), RNG)
    s = _scores(additive_scores_forward, q, k, params["W_a"], params["U_a"], params["v_a"])
    # v_a^T tanh(W_a s + U_a h) for one query-key pair, written with column vectors as in the paper
    one = params["v_a"] @ np.tanh(params["W_a"].T @ q[1, 2] + params["U_a"].T @ k[1, 3])
    np.testing.assert_allclose(s[1, 2, 3], one)

    def backward(d, cache):
        dq, dk, grads = additive_scores_backward(d, cache)
        return {"q": dq, "k": dk}, grads

    _check_scores(lambda x, p: additive_scores_forward(x["q"], x["k"], **p), backward, {"q": q, "k": k}, params)


def test_location_scores_use_the_query_alone():
    q, _ = _qk()
    params = lively(init_location_scores(RNG, DQ, TK, np.float64), RNG)
    assert _scores(location_scores_forward, q, params["W_a"]).shape == (B, TQ, TK)
    check_layer(lambda x, p: location_scores_forward(x, p["W_a"]), location_scores_backward, q, params)


def test_masked_softmax_zero_weight_and_empty_rows_without_warnings():
    scores = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    mask = np.array([[[1, 1, 0, 1]], [[0, 0, 0, 0]]], dtype=bool)  # (2, 1, 4): row 2 fully masked
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # any RuntimeWarning (0/0, exp overflow) fails
        w = masked_softmax(scores, mask)
        out, pooling_cache = attention_pooling_forward(scores, np.ones((2, 4, 5), np.float32), mask)
    w2 = pooling_cache["weights"]
    assert w.dtype == np.float32 and not np.isnan(w).any()
    assert np.all(w[0, :, 2] == 0)
    np.testing.assert_allclose(w[0].sum(-1), 1.0, rtol=1e-6)
    assert np.all(w[1] == 0) and np.all(out[1] == 0)
    np.testing.assert_array_equal(w, w2)


def test_masked_softmax_huge_scores():
    scores = np.array([[[1e4, -1e4, 0.0]]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = masked_softmax(scores, np.array([[[True, True, True]]]))
    np.testing.assert_allclose(w, [[[1.0, 0.0, 0.0]]])


def test_attention_pooling_gradcheck():
    rng = np.random.default_rng(3)
    scores, values = rng.standard_normal((B, TQ, TK)), rng.standard_normal((B, TK, 5))
    mask = lengths_to_mask([4, 2], TK)                   # (B, 1, Tk)

    def forward(x, p):
        return attention_pooling_forward(x["scores"], x["values"], mask)

    def backward(d, cache):
        dscores, dvalues = attention_pooling_backward(d, cache)
        return {"scores": dscores, "values": dvalues}, {}

    errors = check_layer(forward, backward, {"scores": scores, "values": values}, {})
    assert errors["x.scores"] < TOL


def test_scaled_dot_product_attention_gradcheck_with_causal_and_padding_mask():
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((2, 3, 4, 5)) for _ in range(3))  # (B, H, T, Dh)
    mask = combine_masks(causal_mask(4), padding_mask(np.array([[1, 1, 1, 1], [1, 1, 1, 0]]), 0))[:, None]

    def forward(x, p):
        return scaled_dot_product_attention_forward(x["q"], x["k"], x["v"], mask)

    def backward(d, cache):
        return dict(zip("qkv", scaled_dot_product_attention_backward(d, cache))), {}

    check_layer(forward, backward, {"q": q, "k": k, "v": v}, {})


@pytest.mark.parametrize("self_attention", [True, False])
def test_multi_head_attention_gradcheck(self_attention):
    rng = np.random.default_rng(5)
    D, H = 8, 2
    params = lively(init_multi_head_attention(rng, D, H, np.float64), rng)
    x_q = rng.standard_normal((2, 3, D))
    if self_attention:
        mask = causal_mask(3)
        check_layer(lambda x, p: self_attention_forward(x, p, H, mask), self_attention_backward, x_q, params)
    else:
        x_kv = rng.standard_normal((2, 5, D))
        mask = lengths_to_mask([5, 3], 5)

        def backward(d, cache):
            (dx_q, dx_kv), grads = multi_head_attention_backward(d, cache)
            return {"q": dx_q, "kv": dx_kv}, grads

        check_layer(lambda x, p: multi_head_attention_forward(x["q"], x["kv"], p, H, mask), backward,
                    {"q": x_q, "kv": x_kv}, params)


def test_multi_head_attention_gradcheck_with_attention_dropout():
    """With a fixed dropout mask (same seed every call) the function is deterministic and checkable."""
    rng = np.random.default_rng(6)
    params = lively(init_multi_head_attention(rng, 8, 2, np.float64), rng)
    x = rng.standard_normal((2, 4, 8))

    def forward(x_, p):
        return multi_head_attention_forward(x_, x_, p, 2, None, 0.3, np.random.default_rng(0), training=True)

    check_layer(forward, self_attention_backward, x, params)


def test_multi_head_weights_shape_masks_and_equals_per_head_loop():
    rng = np.random.default_rng(7)
    D, H = 8, 2
    params = init_multi_head_attention(rng, D, H)
    x = rng.standard_normal((2, 4, D)).astype(np.float32)
    mask = padding_mask(np.array([[5, 5, 5, 5], [5, 5, 0, 0]]), 0)  # (B, 1, T)
    out, cache = multi_head_attention_forward(x, x, params, H, mask)
    w = cache["weights"]
    assert out.dtype == np.float32 and w.shape == (2, H, 4, 4)
    assert np.all(w[1, :, :, 2:] == 0)
    # the same thing one head at a time, as the paper writes it
    Dh = D // H
    heads = []
    for h in range(H):
        cols = slice(h * Dh, (h + 1) * Dh)
        q = x @ params["W_q"][:, cols]
        k = x @ params["W_k"][:, cols]
        v = x @ params["W_v"][:, cols]
        heads.append(masked_softmax(q @ k.transpose(0, 2, 1) / math.sqrt(Dh), mask) @ v)
    expected = np.concatenate(heads, axis=-1) @ params["W_o"]
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_self_attention_is_permutation_equivariant():
    rng = np.random.default_rng(8)
    params = init_multi_head_attention(rng, 8, 2, np.float64)
    x = rng.standard_normal((2, 5, 8))
    perm = rng.permutation(5)
    out, _ = multi_head_attention_forward(x, x, params, 2)
    out_perm, _ = multi_head_attention_forward(x[:, perm], x[:, perm], params, 2)
    np.testing.assert_allclose(out_perm, out[:, perm], atol=1e-12)


def test_attention_bad_inputs():
    rng = np.random.default_rng(9)
    params = init_multi_head_attention(rng, 8, 2)
    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    with pytest.raises(ValueError, match=r"n_heads: expected a divisor of d_model=8, got 3"):
        init_multi_head_attention(rng, 8, 3)
    with pytest.raises(ValueError, match=r"n_heads: expected a divisor of d_model=8, got 3"):
        multi_head_attention_forward(x, x, params, 3)
    with pytest.raises(ValueError, match=r"x_q: expected shape \(B, Tq, d_model=8\), got \(2, 4, 6\)"):
        multi_head_attention_forward(x[..., :6], x, params, 2)
    with pytest.raises(ValueError, match=r"x_q: expected shape \(B, Tq, d_model=8\), got \(4, 8\)"):
        multi_head_attention_forward(x[0], x, params, 2)
    with pytest.raises(ValueError, match=r"x_kv: expected shape \(B=2, Tk, d_model=8\), got \(1, 4, 8\)"):
        multi_head_attention_forward(x, x[:1], params, 2)
    with pytest.raises(ValueError, match=r"mask: expected shape \(B=2 or 1, Tq=4 or 1, Tk=4\), got \(2, 1, 3\)"):
        multi_head_attention_forward(x, x, params, 2, mask=np.ones((2, 1, 3), dtype=bool))
    with pytest.raises(ValueError, match="mask: expected a bool array"):
        multi_head_attention_forward(x, x, params, 2, mask=np.ones((2, 1, 4)))
    with pytest.raises(ValueError, match=r"k: expected last axis 5"):
        dot_scores_forward(np.ones((1, 2, 5)), np.ones((1, 3, 4)))
    with pytest.raises(ValueError, match=r"W_a: expected shape \(dq=5, dk=4\)"):
        general_scores_forward(np.ones((1, 2, 5)), np.ones((1, 3, 4)), np.ones((4, 5)))


def test_masked_softmax_refuses_masks_that_are_not_bool_or_do_not_fit():
    from transformer_course.numpy.attention import masked_softmax, scaled_dot_product_attention_forward

    scores = np.zeros((2, 3, 4))
    with pytest.raises(ValueError, match="mask: expected a bool array"):
        masked_softmax(scores, np.ones((2, 3, 4), dtype=int))
    with pytest.raises(ValueError, match=r"mask: shape \(3, 1, 4\) does not broadcast"):
        masked_softmax(scores, np.ones((3, 1, 4), dtype=bool))
    q = np.zeros((2, 3, 4))
    kv = np.zeros((2, 5, 4))
    with pytest.raises(ValueError, match=r"mask: shape \(2, 3, 4\) does not broadcast"):
        scaled_dot_product_attention_forward(q, kv, kv, np.ones((2, 3, 4), dtype=bool))
