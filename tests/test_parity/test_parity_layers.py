"""NumPy vs PyTorch, layer by layer: with converted weights (float64), outputs and gradients agree to 1e-10."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from parity_helpers import assert_trees_close, grads_as_numpy, randomise, t

from transformer_course.torch.attention import MultiHeadAttention
from transformer_course.torch.convert import torch_to_numpy
from transformer_course.torch.embedding import Embedding
from transformer_course.torch.feedforward import FeedForward
from transformer_course.torch.layernorm import LayerNorm
from transformer_course.torch.masks import causal_mask, combine_masks, padding_mask
from transformer_course.torch.positional import LearnedPositions, sinusoidal_encoding

D, H, FF = 16, 4, 24
rng = np.random.default_rng(0)


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _backward(out: torch.Tensor, dout: np.ndarray) -> None:
    out.backward(t(dout))


@pytest.mark.twins("masks.padding_mask", "masks.causal_mask", "masks.combine_masks")
def test_masks_are_identical():
    from transformer_course.numpy import masks as npm
    tokens = np.array([[5, 6, 0], [7, 0, 0]])
    np.testing.assert_array_equal(npm.padding_mask(tokens, 0), padding_mask(t(tokens), 0).numpy())
    np.testing.assert_array_equal(npm.causal_mask(4), causal_mask(4).numpy())
    np.testing.assert_array_equal(npm.combine_masks(npm.causal_mask(3), npm.padding_mask(tokens, 0)),
                                  combine_masks(causal_mask(3), padding_mask(t(tokens), 0)).numpy())


@pytest.mark.twins("positional.sinusoidal_encoding")
def test_sinusoidal_table_is_identical():
    from transformer_course.numpy.positional import sinusoidal_encoding as np_sinusoidal
    np.testing.assert_allclose(np_sinusoidal(40, 16, dtype=np.float64), sinusoidal_encoding(40, 16).double(),
                               atol=1e-7)              # the torch table is stored in float32
    np.testing.assert_array_equal(np_sinusoidal(40, 16), sinusoidal_encoding(40, 16).numpy())


@pytest.mark.twins("attention.multi_head_attention")
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("self_attention", [True, False])
def test_multi_head_attention(fused, self_attention):
    from transformer_course.numpy.attention import multi_head_attention_backward, multi_head_attention_forward
    mha = randomise(MultiHeadAttention(D, H, fused=fused))
    x_q = _x(3, 5, D, seed=1)
    x_kv = x_q if self_attention else _x(3, 7, D, seed=2)
    tokens = np.full((3, x_kv.shape[1]), 4)
    tokens[1, -2:] = 0
    mask = np.asarray(padding_mask(t(tokens), 0))
    if self_attention:
        mask = mask & causal_mask(5).numpy()
    params = torch_to_numpy(mha)
    out_np, cache = multi_head_attention_forward(x_q, x_kv, params, H, mask)
    q = t(x_q, grad=True)
    kv = q if self_attention else t(x_kv, grad=True)
    out, weights = mha(q, kv, t(mask), need_weights=not fused)    # fused: the kernel that never forms weights
    assert (weights is None) == fused
    assert_trees_close(out, out_np)
    dout = _x(*out_np.shape, seed=3)
    (dx_q, dx_kv), grads_np = multi_head_attention_backward(dout, cache)
    _backward(out, dout)
    if self_attention:
        assert_trees_close(q.grad, dx_q + dx_kv)
    else:
        assert_trees_close(q.grad, dx_q)
        assert_trees_close(kv.grad, dx_kv)
    assert_trees_close(grads_as_numpy(mha), grads_np)


def test_layernorm():
    from transformer_course.numpy.layernorm import layernorm_backward, layernorm_forward
    ln = randomise(LayerNorm(D))
    x = _x(2, 3, D)
    out_np, cache = layernorm_forward(x, torch_to_numpy(ln))
    xt = t(x, grad=True)
    out = ln(xt)
    assert_trees_close(out, out_np)
    dout = _x(2, 3, D, seed=4)
    dx, grads = layernorm_backward(dout, cache)
    _backward(out, dout)
    assert_trees_close(xt.grad, dx)
    assert_trees_close(grads_as_numpy(ln), grads)


@pytest.mark.twins("feedforward.feedforward")
def test_feedforward():
    from transformer_course.numpy.feedforward import feedforward_backward, feedforward_forward
    ffn = randomise(FeedForward(D, FF))
    x = _x(2, 3, D)
    out_np, cache = feedforward_forward(x, torch_to_numpy(ffn))
    xt = t(x, grad=True)
    out = ffn(xt)
    assert_trees_close(out, out_np)
    dout = _x(2, 3, D, seed=5)
    dx, grads = feedforward_backward(dout, cache)
    _backward(out, dout)
    assert_trees_close(xt.grad, dx)
    assert_trees_close(grads_as_numpy(ffn), grads)


@pytest.mark.twins("embedding.embedding", "positional.learned_positions")
def test_embedding_and_learned_positions():
    from transformer_course.numpy.embedding import embedding_backward, embedding_forward
    from transformer_course.numpy.positional import learned_positions_backward, learned_positions_forward
    emb = randomise(Embedding(11, D))
    tokens = np.array([[1, 2, 2, 10], [0, 3, 1, 1]])
    out_np, cache = embedding_forward(tokens, torch_to_numpy(emb))
    out = emb(t(tokens))
    assert_trees_close(out, out_np)
    dout = _x(2, 4, D, seed=6)
    _, grads = embedding_backward(dout, cache)
    _backward(out, dout)
    assert_trees_close(grads_as_numpy(emb), grads)
    pos = randomise(LearnedPositions(D, 10))
    x = _x(2, 4, D)
    out_np, cache = learned_positions_forward(x, torch_to_numpy(pos), offset=3)
    xt = t(x, grad=True)
    out = pos(xt, offset=3)
    assert_trees_close(out, out_np)
    dx, grads = learned_positions_backward(dout, cache)
    _backward(out, dout)
    assert_trees_close(xt.grad, dx)
    assert_trees_close(grads_as_numpy(pos), grads)


@pytest.mark.twins("encoder.encoder")
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_and_stack(norm_first):
    np_encoder = pytest.importorskip("transformer_course.numpy.encoder")
    from transformer_course.torch.encoder import Encoder
    enc = randomise(Encoder(2, D, H, FF, norm_first=norm_first))
    x = _x(3, 5, D)
    tokens = np.full((3, 5), 4)
    tokens[2, -3:] = 0
    mask = padding_mask(t(tokens), 0).numpy()
    params = torch_to_numpy(enc)
    out_np, cache = np_encoder.encoder_forward(x, params, H, mask, norm_first=norm_first)
    xt = t(x, grad=True)
    out, _ = enc(xt, t(mask))
    assert_trees_close(out, out_np)
    dout = _x(3, 5, D, seed=7)
    dx, grads = np_encoder.encoder_backward(dout, cache)
    _backward(out, dout)
    assert_trees_close(xt.grad, dx)
    assert_trees_close(grads_as_numpy(enc), grads)


@pytest.mark.twins("decoder.decoder")
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_and_stack(norm_first):
    np_decoder = pytest.importorskip("transformer_course.numpy.decoder")
    from transformer_course.torch.decoder import Decoder
    dec = randomise(Decoder(2, D, H, FF, norm_first=norm_first))
    y, memory = _x(3, 5, D), _x(3, 6, D, seed=8)
    src = np.full((3, 6), 4)
    src[1, -2:] = 0
    tgt = np.full((3, 5), 4)
    tgt[2, -1:] = 0
    self_mask = combine_masks(causal_mask(5), padding_mask(t(tgt), 0)).numpy()
    cross_mask = padding_mask(t(src), 0).numpy()
    params = torch_to_numpy(dec)
    out_np, cache = np_decoder.decoder_forward(y, memory, params, H, self_mask, cross_mask, norm_first=norm_first)
    yt, mt = t(y, grad=True), t(memory, grad=True)
    out, _ = dec(yt, mt, t(self_mask), t(cross_mask))
    assert_trees_close(out, out_np)
    dout = _x(3, 5, D, seed=9)
    (dy, dmemory), grads = np_decoder.decoder_backward(dout, cache)
    _backward(out, dout)
    assert_trees_close(yt.grad, dy)
    assert_trees_close(mt.grad, dmemory)
    assert_trees_close(grads_as_numpy(dec), grads)


@pytest.mark.twins("encoder.encoder_layer", "decoder.decoder_layer")
@pytest.mark.parametrize("norm_first", [False, True])
def test_single_encoder_and_decoder_layers(norm_first):
    np_encoder = pytest.importorskip("transformer_course.numpy.encoder")
    np_decoder = pytest.importorskip("transformer_course.numpy.decoder")
    from transformer_course.torch.decoder import DecoderLayer
    from transformer_course.torch.encoder import EncoderLayer
    enc = randomise(EncoderLayer(D, H, FF, norm_first=norm_first), seed=3)
    dec = randomise(DecoderLayer(D, H, FF, norm_first=norm_first), seed=4)
    x, memory = _x(2, 4, D, seed=10), _x(2, 5, D, seed=11)
    self_mask = causal_mask(4).numpy()
    out_np, cache = np_encoder.encoder_layer_forward(memory, torch_to_numpy(enc), H, norm_first=norm_first)
    mt = t(memory, grad=True)
    out, _ = enc(mt)
    assert_trees_close(out, out_np)
    dout = _x(2, 5, D, seed=12)
    dx, grads = np_encoder.encoder_layer_backward(dout, cache)
    _backward(out, dout)
    assert_trees_close(mt.grad, dx)
    assert_trees_close(grads_as_numpy(enc), grads)
    out_np, cache = np_decoder.decoder_layer_forward(x, memory, torch_to_numpy(dec), H, self_mask,
                                                     norm_first=norm_first)
    xt, mt = t(x, grad=True), t(memory, grad=True)
    out, _ = dec(xt, mt, t(self_mask))
    assert_trees_close(out, out_np)
    dout = _x(2, 4, D, seed=13)
    (dx, dmemory), grads = np_decoder.decoder_layer_backward(dout, cache)
    _backward(out, dout)
    assert_trees_close(xt.grad, dx)
    assert_trees_close(mt.grad, dmemory)
    assert_trees_close(grads_as_numpy(dec), grads)


@pytest.mark.twins("positional.rotary_positions", "positional.alibi_bias")
def test_rotary_positions_and_alibi_bias():
    from transformer_course.numpy.positional import alibi_bias as np_alibi_bias
    from transformer_course.numpy.positional import rotary_positions_forward
    from transformer_course.torch.positional import RotaryPositions, alibi_bias
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 8))
    assert_trees_close(RotaryPositions(8, max_len=16)(t(x), 4), rotary_positions_forward(x, 4)[0])
    assert_trees_close(alibi_bias(6, 3, 5, offset=2, dtype=torch.float64), np_alibi_bias(6, 3, 5, 2, np.float64))
