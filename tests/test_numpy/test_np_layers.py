"""Positions, embeddings, LayerNorm, feed-forward, dropout and the residual sublayer blocks (NumPy)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from numpy_helpers import check_layer, lively

from transformer_course.numpy.decoder import decoder_layer_backward, decoder_layer_forward, init_decoder_layer
from transformer_course.numpy.dropout import dropout_backward, dropout_forward
from transformer_course.numpy.embedding import (
    embedding_backward,
    embedding_forward,
    init_embedding,
    output_projection_backward,
    output_projection_forward,
)
from transformer_course.numpy.encoder import encoder_layer_backward, encoder_layer_forward, init_encoder_layer
from transformer_course.numpy.feedforward import feedforward_backward, feedforward_forward, init_feedforward
from transformer_course.numpy.layernorm import init_layernorm, layernorm_backward, layernorm_forward
from transformer_course.numpy.masks import causal_mask, lengths_to_mask
from transformer_course.numpy.positional import (
    init_learned_positions,
    learned_positions_backward,
    learned_positions_forward,
    sinusoidal_encoding,
    sinusoidal_positions_forward,
)
from transformer_course.numpy.sublayer import residual_backward, residual_forward


def test_sinusoidal_encoding_is_the_papers_formula():
    pe = sinusoidal_encoding(50, 16, dtype=np.float64)
    eps = np.finfo(np.float64).eps
    for pos in (0, 1, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            # The angle may differ from NumPy's by a few ulps (the power is evaluated differently), and sin and
            # cos pass an error of the angle on unchanged (their slope is at most 1): a few ulps of the angle,
            # and of the value itself, whatever NumPy's sin and cos are.
            tol = 8 * eps * max(angle, 1.0)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), rel=8 * eps, abs=tol)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), rel=8 * eps, abs=tol)
    assert sinusoidal_encoding(5, 7).shape == (5, 7)     # odd widths work too
    assert sinusoidal_encoding(5, 8).dtype == np.float32


def test_positions_add_the_right_rows_and_reject_long_sequences():
    x = np.zeros((2, 5, 8), dtype=np.float32)
    out, _ = sinusoidal_positions_forward(x, max_len=10, offset=3)
    np.testing.assert_array_equal(out[1], sinusoidal_encoding(10, 8)[3:8])
    assert out.dtype == np.float32
    with pytest.raises(ValueError, match=r"x: expected at most max_len=4 positions .*length 5"):
        sinusoidal_positions_forward(x, max_len=4)
    params = init_learned_positions(np.random.default_rng(0), 4, 8)
    with pytest.raises(ValueError, match=r"x: expected at most max_len=4 positions"):
        learned_positions_forward(x, params)


def test_learned_positions_gradcheck():
    rng = np.random.default_rng(1)
    params = init_learned_positions(rng, 6, 4, np.float64)
    check_layer(lambda x, p: learned_positions_forward(x, p, offset=1), learned_positions_backward,
                rng.standard_normal((2, 3, 4)), params)


def test_embedding_scale_gradcheck_and_errors():
    rng = np.random.default_rng(2)
    params = init_embedding(rng, 5, 4, np.float64)
    tokens = np.array([[1, 2, 2, 4], [0, 1, 3, 2]])      # repeated ids: their gradients must add up
    out, _ = embedding_forward(tokens, params)
    np.testing.assert_allclose(out[0, 1], params["E"][2] * 2.0)  # sqrt(d_model=4) = 2

    def forward(x, p):
        return embedding_forward(tokens, p)

    def backward(d, cache):
        return {}, embedding_backward(d, cache)[1]

    check_layer(forward, backward, {}, params)
    with pytest.raises(ValueError, match=r"tokens: expected ids in \[0, 5\), got values in \[-1, 4\]"):
        embedding_forward(np.array([[-1, 4]]), params)
    with pytest.raises(ValueError, match=r"tokens: expected shape \(B, T\), got \(3,\)"):
        embedding_forward(np.array([1, 2, 3]), params)
    with pytest.raises(TypeError, match="tokens: expected an integer array, got float64"):
        embedding_forward(np.array([[1.0]]), params)


@pytest.mark.parametrize("tied", [True, False])
def test_output_projection_gradcheck(tied):
    rng = np.random.default_rng(3)
    W = rng.standard_normal((7, 4) if tied else (4, 7))
    check_layer(lambda y, p: output_projection_forward(y, p["W"], tied),
                output_projection_backward,
                rng.standard_normal((2, 3, 4)), {"W": W})


def test_layernorm_matches_torch_and_gradcheck():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    params = lively(init_layernorm(6, np.float64), rng)
    x = rng.standard_normal((2, 3, 6)) * 3 + 1
    out, _ = layernorm_forward(x, params)
    expected = torch.nn.functional.layer_norm(torch.from_numpy(x), (6,), torch.from_numpy(params["gamma"]),
                                              torch.from_numpy(params["beta"]), 1e-5)
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-12)
    check_layer(layernorm_forward, layernorm_backward, x, params)
    with pytest.raises(ValueError, match=r"x: expected last axis d_model=6, got shape \(2, 3, 5\)"):
        layernorm_forward(x[..., :5], params)


def test_feedforward_gradcheck_and_errors():
    rng = np.random.default_rng(5)
    params = lively(init_feedforward(rng, 4, 10, np.float64), rng)
    check_layer(feedforward_forward, feedforward_backward, rng.standard_normal((2, 3, 4)), params)
    with pytest.raises(ValueError, match=r"x: expected shape \(B, T, d_model=4\), got \(2, 3, 5\)"):
        feedforward_forward(np.ones((2, 3, 5)), params)


def test_init_statistics():
    rng = np.random.default_rng(6)
    p = init_feedforward(rng, 64, 256)
    limit = math.sqrt(6 / (64 + 256))
    assert p["W_1"].dtype == np.float32 and np.abs(p["W_1"]).max() <= limit
    assert p["W_1"].std() == pytest.approx(limit / math.sqrt(3), rel=0.05)  # the std of U(-a, a)
    assert not p["b_1"].any() and not p["b_2"].any()
    E = init_embedding(rng, 1000, 64)["E"]
    assert E.std() == pytest.approx(64 ** -0.5, rel=0.05)
    ln = init_layernorm(8)
    assert np.all(ln["gamma"] == 1) and np.all(ln["beta"] == 0)


def test_dropout_inverted_and_gradcheck():
    rng = np.random.default_rng(7)
    x = np.ones((200, 100), dtype=np.float32)
    out, cache = dropout_forward(x, 0.25, rng, training=True)
    assert out.dtype == np.float32
    assert set(np.unique(out)) <= {0.0, np.float32(1 / 0.75)}
    assert out.mean() == pytest.approx(1.0, abs=0.02)    # inverted: the expectation is unchanged
    assert (out == 0).mean() == pytest.approx(0.25, abs=0.01)
    np.testing.assert_array_equal(dropout_backward(np.ones_like(x), cache), out)
    same, none = dropout_forward(x, 0.25, rng, training=False)
    assert same is x and none is None
    with pytest.raises(ValueError, match=r"rng: expected a np.random.Generator"):
        dropout_forward(x, 0.25, None, training=True)
    with pytest.raises(ValueError, match=r"p: expected a probability in \[0, 1\), got 1.0"):
        dropout_forward(x, 1.0, rng, training=True)


@pytest.mark.parametrize("norm_first", [False, True])
def test_residual_block_gradcheck(norm_first):
    rng = np.random.default_rng(8)
    ffn = lively(init_feedforward(rng, 4, 6, np.float64), rng)
    norm = lively(init_layernorm(4, np.float64), rng)

    def forward(x, p):
        return residual_forward(x, lambda h: feedforward_forward(h, p["ffn"]), feedforward_backward, p["norm"],
                                norm_first, dropout=0.2, rng=np.random.default_rng(0), training=True)

    def backward(d, cache):
        dx, dnorm, dffn = residual_backward(d, cache)
        return dx, {"ffn": dffn, "norm": dnorm}

    check_layer(forward, backward, rng.standard_normal((2, 3, 4)), {"ffn": ffn, "norm": norm})


def test_residual_forms():
    """Post-LN normalises the sum; pre-LN adds the sublayer of the normalised input to the raw input."""
    rng = np.random.default_rng(9)
    norm = init_layernorm(4, np.float64)
    x = rng.standard_normal((1, 2, 4)) * 5

    def double(h):
        return 2 * h, None

    def double_backward(d, cache):
        return 2 * d, None

    post, _ = residual_forward(x, double, double_backward, norm, norm_first=False)
    pre, _ = residual_forward(x, double, double_backward, norm, norm_first=True)
    np.testing.assert_allclose(post, layernorm_forward(3 * x, norm)[0])
    np.testing.assert_allclose(pre, x + 2 * layernorm_forward(x, norm)[0])


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_layers_gradcheck(norm_first):
    rng = np.random.default_rng(10)
    enc = lively(init_encoder_layer(rng, 8, 2, 12, np.float64), rng)
    mask = lengths_to_mask([4, 3], 4)
    check_layer(lambda x, p: encoder_layer_forward(x, p, 2, mask, norm_first=norm_first), encoder_layer_backward,
                rng.standard_normal((2, 4, 8)), enc, max_entries=10)
    dec = lively(init_decoder_layer(rng, 8, 2, 12, np.float64), rng)

    def forward(x, p):
        return decoder_layer_forward(x["y"], x["memory"], p, 2, causal_mask(3), mask, norm_first=norm_first)

    def backward(d, cache):
        (dy, dmemory), grads = decoder_layer_backward(d, cache)
        return {"y": dy, "memory": dmemory}, grads

    check_layer(forward, backward, {"y": rng.standard_normal((2, 3, 8)), "memory": rng.standard_normal((2, 4, 8))},
                dec, max_entries=10)


def test_encoder_layer_matches_torch_transformer_encoder_layer():
    """Same maths as torch.nn.TransformerEncoderLayer (ReLU, post-LN and pre-LN), weights copied across."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    D, H, F = 8, 2, 16
    params = lively(init_encoder_layer(rng, D, H, F, np.float64), rng)
    x = rng.standard_normal((2, 5, D))
    mask = lengths_to_mask([5, 3], 5)                    # (B, 1, S)
    for norm_first in (False, True):
        layer = torch.nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True, norm_first=norm_first,
                                                 dtype=torch.float64).eval()
        a = params["self_attn"]
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(torch.from_numpy(np.concatenate([a["W_q"], a["W_k"], a["W_v"]], 1).T))
            layer.self_attn.in_proj_bias.copy_(torch.from_numpy(np.concatenate([a["b_q"], a["b_k"], a["b_v"]])))
            layer.self_attn.out_proj.weight.copy_(torch.from_numpy(a["W_o"].T))
            layer.self_attn.out_proj.bias.copy_(torch.from_numpy(a["b_o"]))
            layer.linear1.weight.copy_(torch.from_numpy(params["ffn"]["W_1"].T))
            layer.linear1.bias.copy_(torch.from_numpy(params["ffn"]["b_1"]))
            layer.linear2.weight.copy_(torch.from_numpy(params["ffn"]["W_2"].T))
            layer.linear2.bias.copy_(torch.from_numpy(params["ffn"]["b_2"]))
            for name in ("norm1", "norm2"):
                getattr(layer, name).weight.copy_(torch.from_numpy(params[name]["gamma"]))
                getattr(layer, name).bias.copy_(torch.from_numpy(params[name]["beta"]))
            expected = layer(torch.from_numpy(x), src_key_padding_mask=torch.from_numpy(~mask[:, 0])).numpy()
        out, _ = encoder_layer_forward(x, params, H, mask, norm_first=norm_first)
        np.testing.assert_allclose(out[0], expected[0], atol=1e-10)
        np.testing.assert_allclose(out[1, :3], expected[1, :3], atol=1e-10)  # torch's fast path may zero padding
