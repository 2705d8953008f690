"""NumPy vs PyTorch for the twins the layer and model tests do not reach: the score functions, the pooling,
the checks, the residual wiring and the model's masks, encode and decode. Each test names the pairs it
compares (`pytest.mark.twins`); tests/test_twins.py fails if a pair of twins is compared by no test."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from parity_helpers import assert_same_verdict, assert_trees_close, grads_as_numpy, randomise, t

from transformer_course import ModelConfig
from transformer_course.numpy import attention as npa
from transformer_course.numpy import embedding as npe
from transformer_course.numpy import layernorm as npl
from transformer_course.numpy import masks as npm
from transformer_course.numpy import positional as npp
from transformer_course.numpy import sublayer as nps
from transformer_course.numpy import transformer as npt
from transformer_course.torch import attention as tha
from transformer_course.torch import embedding as the
from transformer_course.torch import layernorm as thl
from transformer_course.torch import masks as thm
from transformer_course.torch import positional as thp
from transformer_course.torch import sublayer as ths
from transformer_course.torch.convert import torch_to_numpy
from transformer_course.torch.feedforward import FeedForward
from transformer_course.torch.layernorm import LayerNorm
from transformer_course.torch.transformer import Transformer


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _grads(out: torch.Tensor, dout: np.ndarray, *inputs: torch.Tensor) -> list[torch.Tensor]:
    return list(torch.autograd.grad(out, inputs, t(dout)))


# ---------------------------------------------------------------- the score functions and the pooling

def _score_inputs():
    q, k = _x(2, 3, 4, seed=1), _x(2, 5, 4, seed=2)
    return q, k, _x(2, 3, 5, seed=3)                    # dscores (B, Tq, Tk)


@pytest.mark.parametrize("name", [
    pytest.param("dot_scores", marks=pytest.mark.twins("attention.dot_scores")),
    pytest.param("scaled_dot_scores", marks=pytest.mark.twins("attention.scaled_dot_scores")),
    pytest.param("cosine_scores", marks=pytest.mark.twins("attention.cosine_scores"))])
def test_scores_without_weights(name):
    q, k, dscores = _score_inputs()
    scores_np, cache = getattr(npa, f"{name}_forward")(q, k)
    dq_np, dk_np = getattr(npa, f"{name}_backward")(dscores, cache)
    qt, kt = t(q, grad=True), t(k, grad=True)
    scores = getattr(tha, name)(qt, kt)
    assert_trees_close(scores, scores_np)
    assert_trees_close(_grads(scores, dscores, qt, kt), [dq_np, dk_np])


@pytest.mark.twins("attention.general_scores", "attention.additive_scores")
def test_scores_with_weights():
    q, k, dscores = _score_inputs()
    W_a, U_a, v_a = _x(4, 4, seed=4), _x(4, 6, seed=5), _x(6, seed=6)
    W_a_add = _x(4, 6, seed=7)
    qt, kt = t(q, grad=True), t(k, grad=True)
    Wt, Ut, vt, Wt_add = (t(a, grad=True) for a in (W_a, U_a, v_a, W_a_add))

    scores_np, cache = npa.general_scores_forward(q, k, W_a)
    scores = tha.general_scores(qt, kt, Wt)
    assert_trees_close(scores, scores_np)
    dq, dk, dparams = npa.general_scores_backward(dscores, cache)
    assert_trees_close(_grads(scores, dscores, qt, kt, Wt), [dq, dk, dparams["W_a"]])

    scores_np, cache = npa.additive_scores_forward(q, k, W_a_add, U_a, v_a)
    scores = tha.additive_scores(qt, kt, Wt_add, Ut, vt)
    assert_trees_close(scores, scores_np)
    dq, dk, dparams = npa.additive_scores_backward(dscores, cache)
    assert_trees_close(_grads(scores, dscores, qt, kt, Wt_add, Ut, vt),
                       [dq, dk, dparams["W_a"], dparams["U_a"], dparams["v_a"]])


@pytest.mark.twins("attention.location_scores")
def test_location_scores():
    q, W_a, dscores = _x(2, 3, 4, seed=1), _x(4, 5, seed=2), _x(2, 3, 5, seed=3)
    scores_np, cache = npa.location_scores_forward(q, W_a)
    qt, Wt = t(q, grad=True), t(W_a, grad=True)
    scores = tha.location_scores(qt, Wt)
    assert_trees_close(scores, scores_np)
    dq, dparams = npa.location_scores_backward(dscores, cache)
    assert_trees_close(_grads(scores, dscores, qt, Wt), [dq, dparams["W_a"]])


def _mask(B, Tq, Tk):
    """A boolean (B, Tq, Tk) mask with a fully masked row (its weights are zero on both sides)."""
    mask = np.random.default_rng(9).random((B, Tq, Tk)) > 0.3
    mask[0, 0] = False
    mask[:, :, 0] |= np.arange(Tq)[None, :] > 0        # every other row keeps a key
    return mask


@pytest.mark.twins("attention.masked_softmax", "attention.attention_pooling")
def test_masked_softmax_and_pooling():
    scores, values, mask = _x(2, 3, 5, seed=1), _x(2, 5, 4, seed=2), _mask(2, 3, 5)
    assert_trees_close(tha.masked_softmax(t(scores), t(mask)), npa.masked_softmax(scores, mask))
    assert_trees_close(tha.masked_softmax(t(scores)), npa.masked_softmax(scores))
    out_np, cache = npa.attention_pooling_forward(scores, values, mask)
    st, vt = t(scores, grad=True), t(values, grad=True)
    out, weights = tha.attention_pooling(st, vt, t(mask))
    assert_trees_close(out, out_np)
    assert_trees_close(weights, cache["weights"])
    dout = _x(2, 3, 4, seed=3)
    assert_trees_close(_grads(out, dout, st, vt), list(npa.attention_pooling_backward(dout, cache)))


@pytest.mark.twins("attention.scaled_dot_product_attention")
@pytest.mark.parametrize("with_bias", [False, True])
def test_scaled_dot_product_attention(with_bias):
    q, k, v = _x(2, 2, 3, 4, seed=1), _x(2, 2, 5, 4, seed=2), _x(2, 2, 5, 4, seed=3)  # (B, H, T, Dh)
    mask = _mask(2, 3, 5)[:, None]                       # (B, 1, Tq, Tk)
    bias = npp.alibi_bias(2, 3, 5, 0, np.float64) if with_bias else None
    out_np, cache = npa.scaled_dot_product_attention_forward(q, k, v, mask, bias=bias)
    qt, kt, vt = (t(a, grad=True) for a in (q, k, v))
    out, weights = tha.scaled_dot_product_attention(qt, kt, vt, t(mask), bias=None if bias is None else t(bias))
    assert_trees_close(out, out_np)
    assert_trees_close(weights, cache["weights"])
    dout = _x(*out_np.shape, seed=4)
    assert_trees_close(_grads(out, dout, qt, kt, vt), list(npa.scaled_dot_product_attention_backward(dout, cache)))


# ---------------------------------------------------------------- embedding, norm, residual

@pytest.mark.twins("embedding.output_projection")
@pytest.mark.parametrize("tied", [False, True])
def test_output_projection(tied):
    y, W = _x(2, 3, 4, seed=1), _x(7, 4, seed=2)        # W (V, D): the embedding, or nn.Linear's layout
    logits_np, cache = npe.output_projection_forward(y, W if tied else W.T, tied)
    yt, Wt = t(y, grad=True), t(W, grad=True)
    logits = the.output_projection(yt, Wt)
    assert_trees_close(logits, logits_np)
    dlogits = _x(2, 3, 7, seed=3)
    dy, dparams = npe.output_projection_backward(dlogits, cache)
    dy_t, dW_t = _grads(logits, dlogits, yt, Wt)
    assert_trees_close([dy_t, dW_t if tied else dW_t.T], [dy, dparams["W"]])


@pytest.mark.twins("layernorm.layernorm")
def test_layernorm_function():
    ln = randomise(LayerNorm(6))
    x, dout = _x(2, 3, 6, seed=1), _x(2, 3, 6, seed=2)
    out_np, cache = npl.layernorm_forward(x, torch_to_numpy(ln), eps=1e-3)
    xt = t(x, grad=True)
    out = thl.layernorm(xt, ln.gamma, ln.beta, eps=1e-3)
    assert_trees_close(out, out_np)
    dx, dparams = npl.layernorm_backward(dout, cache)
    assert_trees_close(_grads(out, dout, xt, ln.gamma, ln.beta), [dx, dparams["gamma"], dparams["beta"]])


@pytest.mark.twins("sublayer.residual")
@pytest.mark.parametrize("norm_first", [False, True])
def test_residual(norm_first):
    from transformer_course.numpy.feedforward import feedforward_backward, feedforward_forward
    ffn, norm = randomise(FeedForward(6, 8), seed=1), randomise(LayerNorm(6), seed=2)
    x, dout = _x(2, 3, 6, seed=3), _x(2, 3, 6, seed=4)
    ffn_np, norm_np = torch_to_numpy(ffn), torch_to_numpy(norm)
    out_np, cache = nps.residual_forward(x, lambda h: feedforward_forward(h, ffn_np), feedforward_backward,
                                         norm_np, norm_first)
    xt = t(x, grad=True)
    out = ths.residual(xt, ffn, norm, norm_first)
    assert_trees_close(out, out_np)
    dx, dnorm, dffn = nps.residual_backward(dout, cache)
    out.backward(t(dout))
    assert_trees_close([xt.grad, grads_as_numpy(norm), grads_as_numpy(ffn)], [dx, dnorm, dffn])


# ---------------------------------------------------------------- masks and positions

@pytest.mark.twins("masks.lengths_to_mask")
def test_lengths_to_mask():
    lengths = np.array([3, 1, 4])
    np.testing.assert_array_equal(thm.lengths_to_mask(t(lengths), 5).numpy(), npm.lengths_to_mask(lengths, 5))


@pytest.mark.twins("positional.sinusoidal_positions")
def test_sinusoidal_positions():
    x = _x(2, 4, 8)
    assert_trees_close(thp.SinusoidalPositions(8, 16)(t(x), offset=3), npp.sinusoidal_positions_forward(x, 16, 3)[0])


@pytest.mark.twins("positional.rotary_angles", "positional.alibi_slopes")
def test_rotary_angles_and_alibi_slopes():
    positions = np.arange(2, 9)
    assert_trees_close(thp.rotary_angles(t(positions), 8).double(), npp.rotary_angles(positions, 8))
    for n_heads in (1, 4, 6, 8):                          # a power of two and not
        assert_trees_close(thp.alibi_slopes(n_heads).double(), npp.alibi_slopes(n_heads))


def _error(call) -> tuple[str, str] | None:
    try:
        call()
    except Exception as err:
        return type(err).__name__, str(err)
    return None


@pytest.mark.twins("embedding.check_tokens", "masks.check_mask", "positional.check_length")
@pytest.mark.parametrize("case", range(4))
def test_the_checks_accept_and_refuse_alike(case):
    """The same verdict and, when refused, the same exception and message on both sides."""
    tokens = [np.array([[1, 2], [3, 0]]), np.array([[1, 9]]), np.array([1, 2]), np.array([[1.0, 2.0]])][case]
    mask = [np.ones((2, 3, 4), bool), np.ones((2, 3, 5), bool), np.ones((3, 4), bool), np.ones((2, 3, 4))][case]
    x, offset = [(_x(1, 3, 2), 0), (_x(1, 3, 2), 6), (_x(3, 2), 0), (_x(1, 8, 2), 0)][case]
    for np_call, torch_call in (
            (lambda: npe.check_tokens(tokens, 5), lambda: the.check_tokens(t(tokens), 5)),
            (lambda: npm.check_mask(mask, 2, 3, 4), lambda: thm.check_mask(t(mask), 2, 3, 4)),
            (lambda: npp.check_length(x, offset, 8), lambda: thp.check_length(t(x), offset, 8))):
        # the same verdict and, when refused, the same exception and message, word for word, but for what each
        # library calls its arrays and how it prints a dtype or a shape; and PyTorch's embedding takes two
        # integer types only, which its message names
        ours, theirs = (None if verdict is None else (verdict[0], verdict[1].replace("torch.", "")
                        .replace("Size(", "(").replace("tensor", "array").replace(" (int64 or int32)", ""))
                        for verdict in (_error(np_call), _error(torch_call)))
        assert_same_verdict(ours, theirs)


# ---------------------------------------------------------------- the model's masks, encode and decode

CONFIG = ModelConfig(src_vocab_size=13, tgt_vocab_size=11, d_model=16, n_heads=4, d_ff=24, n_encoder_layers=2,
                     n_decoder_layers=2, dropout=0.0, max_len=20)


@pytest.mark.twins("transformer.make_src_mask", "transformer.make_tgt_mask", "transformer.encode",
                   "transformer.decode")
def test_model_masks_encode_and_decode():
    model = randomise(Transformer(CONFIG), seed=5).eval()
    params = torch_to_numpy(model)
    src = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
    tgt_in = np.array([[1, 4, 5], [1, 6, 0]])
    np.testing.assert_array_equal(model.make_src_mask(t(src)).numpy(), npt.make_src_mask(src, CONFIG))
    np.testing.assert_array_equal(model.make_tgt_mask(t(tgt_in)).numpy(), npt.make_tgt_mask(tgt_in, CONFIG))
    memory_np, _enc_cache = npt.encode_forward(src, params, CONFIG)
    memory = model.encode(t(src))
    assert_trees_close(memory, memory_np)
    logits_np, dec_cache = npt.decode_forward(tgt_in, memory_np, params, CONFIG,
                                              src_mask=npt.make_src_mask(src, CONFIG))
    memory_t = t(memory_np, grad=True)
    logits = model.decode(t(tgt_in), memory_t, model.make_src_mask(t(src)))
    assert_trees_close(logits, logits_np)
    dlogits = _x(*logits_np.shape, seed=6)
    dmemory, _ = npt.decode_backward(dlogits, dec_cache)
    assert_trees_close(_grads(logits, dlogits, memory_t), [dmemory])
