"""The full NumPy Transformer: gradient checks in every variant, invariants, initial loss, overfitting, errors."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy_helpers import TOL, check_layer, lively, tiny_batch, tiny_config

from transformer_course.numpy import (
    Adam,
    cross_entropy_backward,
    cross_entropy_forward,
    decoder_backward,
    decoder_forward,
    encoder_backward,
    encoder_forward,
    greedy_decode,
    init_decoder,
    init_encoder,
    init_transformer,
    transformer_backward,
    transformer_forward,
    tree_leaves,
)
from transformer_course.numpy.gradcheck import gradcheck
from transformer_course.numpy.masks import causal_mask, padding_mask

VARIANTS = list(itertools.product([False, True], ["sinusoidal", "learned"], [True, False])) + [
    (False, "rope", True), (True, "alibi", False)]        # the position terms inside self-attention


@pytest.mark.parametrize("norm_first,positional,tied", VARIANTS)
def test_full_model_gradcheck(norm_first, positional, tied):
    """Every parameter of the whole model (loss with label smoothing and padding) against central differences."""
    config = tiny_config(norm_first=norm_first, positional=positional, tie_output_embedding=tied)
    rng = np.random.default_rng(1)
    params = lively(init_transformer(rng, config, dtype=np.float64), rng)
    src, tgt_in, tgt_out = tiny_batch(config)

    def f():
        logits, _ = transformer_forward(src, tgt_in, params, config)
        return cross_entropy_forward(logits, tgt_out, config.pad_id, label_smoothing=0.1)[0]

    logits, cache = transformer_forward(src, tgt_in, params, config)
    _, loss_cache = cross_entropy_forward(logits, tgt_out, config.pad_id, label_smoothing=0.1)
    grads = transformer_backward(cross_entropy_backward(1.0, loss_cache), cache)
    assert [p for p, _ in tree_leaves(grads)] == [p for p, _ in tree_leaves(params)]
    errors = gradcheck(f, params, grads, max_entries=5, rng=rng)
    assert max(errors.values()) < TOL, {k: v for k, v in errors.items() if v >= TOL}
    # the tied embedding receives gradient from both of its uses, the learned table from both halves
    assert ("W_out" in grads) != tied
    assert ("positions" in grads) == (positional == "learned")


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_and_decoder_stacks_gradcheck(norm_first):
    rng = np.random.default_rng(2)
    D, H, F = 8, 2, 12
    enc = lively(init_encoder(rng, 2, D, H, F, norm_first, dtype=np.float64), rng)
    x = rng.standard_normal((2, 5, D))
    mask = padding_mask(np.array([[1, 2, 3, 4, 5], [1, 2, 3, 0, 0]]), 0)  # (2, 1, 5)
    check_layer(lambda x_, p: encoder_forward(x_, p, H, mask, norm_first=norm_first), encoder_backward, x, enc,
                max_entries=8)

    dec = lively(init_decoder(rng, 2, D, H, F, norm_first, dtype=np.float64), rng)
    y = rng.standard_normal((2, 4, D))
    memory = rng.standard_normal((2, 5, D))
    self_mask = causal_mask(4)                           # (1, 4, 4)

    def forward(inputs, p):
        return decoder_forward(inputs["y"], inputs["memory"], p, H, self_mask, mask, norm_first=norm_first)

    def backward(dout, cache):
        (dy, dmemory), grads = decoder_backward(dout, cache)
        return {"y": dy, "memory": dmemory}, grads

    check_layer(forward, backward, {"y": y, "memory": memory}, dec, max_entries=8)


def test_causal_outputs_ignore_future_tokens():
    config = tiny_config(tgt_vocab_size=9)
    rng = np.random.default_rng(3)
    params = lively(init_transformer(rng, config), rng)
    src, tgt_in, _ = tiny_batch(config)
    tgt_in = rng.integers(1, 9, size=tgt_in.shape)       # no padding: every position is real
    logits, _ = transformer_forward(src, tgt_in, params, config)
    for t in range(tgt_in.shape[1] - 1):
        changed = tgt_in.copy()
        changed[:, t + 1:] = rng.integers(1, 9, size=changed[:, t + 1:].shape)
        new_logits, _ = transformer_forward(src, changed, params, config)
        np.testing.assert_allclose(new_logits[:, :t + 1], logits[:, :t + 1], rtol=1e-5, atol=1e-6)


def test_padding_in_source_is_invisible():
    """Changing the token under a padded source position (with its mask kept) changes nothing."""
    config = tiny_config()
    rng = np.random.default_rng(4)
    params = init_transformer(rng, config)
    src, tgt_in, _ = tiny_batch(config)
    src_mask = padding_mask(src, config.pad_id)          # (B, 1, S)
    logits, _ = transformer_forward(src, tgt_in, params, config, src_mask=src_mask)
    other = src.copy()
    other[1, -2:] = 3                                    # a real id, but still masked
    new_logits, _ = transformer_forward(other, tgt_in, params, config, src_mask=src_mask)
    np.testing.assert_allclose(new_logits[1], logits[1], rtol=1e-5, atol=1e-6)


def test_attention_weights_are_returned_and_respect_masks():
    config = tiny_config()
    rng = np.random.default_rng(5)
    params = init_transformer(rng, config)
    src, tgt_in, _ = tiny_batch(config)
    _, cache = transformer_forward(src, tgt_in, params, config)
    w = cache["weights"]
    B, S = src.shape
    T = tgt_in.shape[1]
    assert [a.shape for a in w["encoder"]] == [(B, 2, S, S)]
    assert [a.shape for a in w["decoder_self"]] == [(B, 2, T, T)] * 2
    assert [a.shape for a in w["decoder_cross"]] == [(B, 2, T, S)] * 2
    assert np.all(w["encoder"][0][1, :, :, -2:] == 0)    # padded keys get exactly zero weight
    assert np.all(np.triu(w["decoder_self"][0][0, 0], k=1) == 0)  # the future gets exactly zero weight


@pytest.mark.parametrize("tied", [True, False])
def test_initial_loss_is_about_ln_V(tied):
    """An untrained model is nearly uniform. Its logits have variance about 1 (LayerNorm output times N(0, 1/D)
    embedding entries, or Xavier), which raises the expected loss over ln V by about var / 2."""
    config = tiny_config(tgt_vocab_size=50, d_model=32, n_heads=4, d_ff=64, max_len=32, tie_output_embedding=tied)
    rng = np.random.default_rng(6)
    params = init_transformer(rng, config)
    src = rng.integers(1, 7, size=(16, 10))
    tgt = rng.integers(1, 50, size=(16, 11))
    logits, _ = transformer_forward(src, tgt[:, :-1], params, config)
    loss, _ = cross_entropy_forward(logits, tgt[:, 1:], config.pad_id)
    assert math.log(50) - 0.1 < loss < math.log(50) + 0.8


def test_overfits_one_tiny_batch():
    config = tiny_config(d_model=16, n_heads=2, d_ff=32, n_decoder_layers=1, tgt_vocab_size=9)
    rng = np.random.default_rng(7)
    params = init_transformer(rng, config)
    src, tgt_in, tgt_out = tiny_batch(config, B=4, S=5, T=4)
    optimizer = Adam(params, lr=3e-3)
    for _ in range(150):
        logits, cache = transformer_forward(src, tgt_in, params, config)
        loss, loss_cache = cross_entropy_forward(logits, tgt_out, config.pad_id)
        optimizer.step(transformer_backward(cross_entropy_backward(1.0, loss_cache), cache))
    assert loss < 0.05
    keep = tgt_out != config.pad_id
    assert np.all(logits.argmax(-1)[keep] == tgt_out[keep])


def test_float32_stays_float32():
    config = tiny_config()
    rng = np.random.default_rng(8)
    params = init_transformer(rng, config)
    src, tgt_in, tgt_out = tiny_batch(config)
    logits, cache = transformer_forward(src, tgt_in, params, config, rng=rng, training=True)
    assert logits.dtype == np.float32
    _, loss_cache = cross_entropy_forward(logits, tgt_out, config.pad_id, 0.1)
    grads = transformer_backward(cross_entropy_backward(1.0, loss_cache), cache)
    assert {g.dtype for _, g in tree_leaves(grads)} == {np.dtype(np.float32)}


def test_dropout_needs_rng_and_changes_outputs_only_when_training():
    config = tiny_config(dropout=0.3)
    rng = np.random.default_rng(9)
    params = init_transformer(rng, config)
    src, tgt_in, _ = tiny_batch(config)
    a, _ = transformer_forward(src, tgt_in, params, config)
    b, _ = transformer_forward(src, tgt_in, params, config)
    np.testing.assert_array_equal(a, b)
    c, _ = transformer_forward(src, tgt_in, params, config, rng=np.random.default_rng(0), training=True)
    assert not np.allclose(a, c)
    with pytest.raises(ValueError, match="rng"):
        transformer_forward(src, tgt_in, params, config, training=True)


def test_greedy_decode_shapes_and_padding_after_eos():
    config = tiny_config()
    rng = np.random.default_rng(10)
    params = lively(init_transformer(rng, config), rng)
    src, _, _ = tiny_batch(config)
    out = greedy_decode(src, params, config, max_len=6, bos_id=1, eos_id=2)
    assert out.shape[0] == 2 and out.shape[1] <= 6
    for row in out:
        hits = np.flatnonzero(row == 2)
        if hits.size:
            assert np.all(row[hits[0] + 1:] == config.pad_id)


def test_bad_inputs_raise_clear_errors():
    config = tiny_config()
    rng = np.random.default_rng(11)
    params = init_transformer(rng, config)
    src, tgt_in, _ = tiny_batch(config)
    with pytest.raises(ValueError, match=r"src: expected ids in \[0, 7\), got values in \[0, 9\]"):
        transformer_forward(np.where(src == src.max(), 9, src), tgt_in, params, config)
    with pytest.raises(ValueError, match=r"tgt_in: expected shape \(B, T\)"):
        transformer_forward(src, tgt_in[0], params, config)
    with pytest.raises(TypeError, match="tgt_in: expected an integer array"):
        transformer_forward(src, tgt_in.astype(float), params, config)
    with pytest.raises(ValueError, match="max_len=8"):
        transformer_forward(np.ones((1, 9), dtype=np.int64), tgt_in[:1], params, config)
    with pytest.raises(ValueError, match=r"tgt_in: expected batch size 2"):
        transformer_forward(src, tgt_in[:1], params, config)
    with pytest.raises(ValueError, match="mask: expected shape"):
        transformer_forward(src, tgt_in, params, config, src_mask=np.ones((2, 1, 3), dtype=bool))
    with pytest.raises(ValueError, match="W_out"):
        transformer_forward(src, tgt_in, params, config.replace(tie_output_embedding=False))
