"""Rotary position embeddings and ALiBi in the NumPy twin: the rotation, its backward, the slopes, the bias, and
multi-head attention with each, gradient-checked."""
from __future__ import annotations

import numpy as np
import pytest
from numpy_helpers import TOL, check_layer, lively

from transformer_course.numpy.attention import (
    init_multi_head_attention,
    multi_head_attention_backward,
    multi_head_attention_forward,
    self_attention_backward,
    self_attention_forward,
)
from transformer_course.numpy.gradcheck import gradcheck
from transformer_course.numpy.masks import causal_mask
from transformer_course.numpy.positional import (
    alibi_bias,
    alibi_slopes,
    rotary_angles,
    rotary_positions_backward,
    rotary_positions_forward,
)


def _rotate_by_complex_numbers(x: np.ndarray, offset: int = 0) -> np.ndarray:
    """An independent statement of RoPE: pair i of position p, read as x_2i + j x_2i+1, times e^(j p theta_i)."""
    T, Dh = x.shape[-2], x.shape[-1]
    theta = 10000.0 ** (-np.arange(Dh // 2) * 2.0 / Dh)                  # (Dh/2,)
    phase = np.exp(1j * np.arange(offset, offset + T)[:, None] * theta)  # (T, Dh/2)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * phase                       # (..., T, Dh/2)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def test_rotation_is_multiplication_by_a_unit_complex_number():
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 8))           # (B, H, T, Dh)
    for offset in (0, 4):
        out, _ = rotary_positions_forward(x, offset)
        np.testing.assert_allclose(out, _rotate_by_complex_numbers(x, offset), atol=1e-12)
        # a rotation keeps every pair's length
        np.testing.assert_allclose(np.hypot(out[..., 0::2], out[..., 1::2]), np.hypot(x[..., 0::2], x[..., 1::2]))


def test_rotated_scores_depend_on_the_offset_only():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((1, 1, 1, 16)), rng.standard_normal((1, 1, 1, 16))

    def score(m, n):
        return (rotary_positions_forward(q, m)[0] @ rotary_positions_forward(k, n)[0].swapaxes(-1, -2)).item()

    assert score(7, 3) == pytest.approx(score(4, 0), abs=1e-12) == pytest.approx(score(29, 25), abs=1e-12)
    assert score(7, 3) != pytest.approx(score(3, 7), abs=1e-6)          # the sign of the offset matters


def test_rotary_backward_gradcheck_and_bad_width():
    x = np.random.default_rng(2).standard_normal((2, 2, 4, 6))
    check = check_layer(lambda x_, p: rotary_positions_forward(x_, 3),
                        lambda d, c: (rotary_positions_backward(d, c), {}), x, {})
    assert max(check.values()) < TOL
    with pytest.raises(ValueError, match=r"d_head: .* positive even number; got 5"):
        rotary_angles(np.arange(3), 5)


def test_alibi_slopes_follow_press_et_al():
    np.testing.assert_array_equal(alibi_slopes(8), [2.0 ** -k for k in range(1, 9)])  # 1/2 .. 1/256
    np.testing.assert_array_equal(alibi_slopes(4), [2.0 ** -k for k in (2, 4, 6, 8)])
    # 6 heads: the 4-head slopes, then the 1st and 3rd of the 8-head ones
    np.testing.assert_array_equal(alibi_slopes(6), [2.0 ** -k for k in (2, 4, 6, 8, 1, 3)])
    with pytest.raises(ValueError, match="n_heads: expected a positive int, got 0"):
        alibi_slopes(0)


def test_alibi_bias_is_minus_slope_times_distance():
    bias = alibi_bias(2, 3, 5, offset=2, dtype=np.float64)              # (H, Tq, Tk)
    assert bias.shape == (2, 3, 5)
    # two heads: slopes 2^-4 and 2^-8; the first query sits at position 2
    np.testing.assert_array_equal(bias[0, 0], [-(2.0 ** -4) * d for d in (2, 1, 0, 1, 2)])
    np.testing.assert_array_equal(bias[1, 2], [-(2.0 ** -8) * d for d in (4, 3, 2, 1, 0)])


@pytest.mark.parametrize("positional", ["rope", "alibi"])
def test_self_attention_with_a_position_term_gradcheck(positional):
    rng = np.random.default_rng(3)
    D, H = 8, 2
    params = lively(init_multi_head_attention(rng, D, H, dtype=np.float64), rng)
    x = rng.standard_normal((2, 5, D))
    errors = check_layer(lambda x_, p: self_attention_forward(x_, p, H, causal_mask(5), positional=positional),
                         self_attention_backward, x, params)
    assert max(errors.values()) < TOL, errors


@pytest.mark.parametrize("positional", ["rope", "alibi"])
def test_position_terms_break_permutation_equivariance(positional):
    """Without a position term self-attention is permutation-equivariant; with RoPE or ALiBi it is not."""
    rng = np.random.default_rng(4)
    D, H = 8, 2
    params = init_multi_head_attention(rng, D, H, dtype=np.float64)
    x = rng.standard_normal((1, 6, D))
    perm = rng.permutation(6)
    plain, _ = self_attention_forward(x, params, H)
    plain_perm, _ = self_attention_forward(x[:, perm], params, H)
    np.testing.assert_allclose(plain_perm, plain[:, perm], atol=1e-12)
    out, _ = self_attention_forward(x, params, H, positional=positional)
    out_perm, _ = self_attention_forward(x[:, perm], params, H, positional=positional)
    assert np.abs(out_perm - out[:, perm]).max() > 1e-3


def test_cross_attention_with_a_position_term_gradcheck():
    """The functions accept a position term for x_q != x_kv too (the model never asks for it)."""
    rng = np.random.default_rng(5)
    D, H = 8, 2
    params = lively(init_multi_head_attention(rng, D, H, dtype=np.float64), rng)
    x_q, x_kv = rng.standard_normal((2, 3, D)), rng.standard_normal((2, 4, D))

    def f():
        return float((multi_head_attention_forward(x_q, x_kv, params, H, positional="alibi")[0] ** 2).sum())

    out, cache = multi_head_attention_forward(x_q, x_kv, params, H, positional="alibi")
    _, grads = multi_head_attention_backward(2 * out, cache)
    errors = gradcheck(f, params, grads, rng=rng)
    assert max(errors.values()) < TOL, errors
    with pytest.raises(ValueError, match="positional: expected None, 'rope' or 'alibi', got 'rotary'"):
        multi_head_attention_forward(x_q, x_kv, params, H, positional="rotary")
