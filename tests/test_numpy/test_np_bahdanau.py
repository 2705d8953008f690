"""GRU cell, Bahdanau's bidirectional GRU encoder and decoder step (NumPy), against torch and central differences."""
from __future__ import annotations

import numpy as np
import pytest
from numpy_helpers import check_layer

from transformer_course.numpy.bahdanau import (
    bahdanau_decoder_step_backward,
    bahdanau_decoder_step_forward,
    bahdanau_encoder_backward,
    bahdanau_encoder_forward,
    gru_cell_backward,
    gru_cell_forward,
    init_bahdanau_decoder_step,
    init_bahdanau_encoder,
    init_gru_cell,
)


def _load_gru(module, params, suffix=""):
    import torch
    with torch.no_grad():
        getattr(module, "weight_ih" + suffix).copy_(torch.from_numpy(params["W_ih"].T))
        getattr(module, "weight_hh" + suffix).copy_(torch.from_numpy(params["W_hh"].T))
        getattr(module, "bias_ih" + suffix).copy_(torch.from_numpy(params["b_ih"]))
        getattr(module, "bias_hh" + suffix).copy_(torch.from_numpy(params["b_hh"]))


def test_gru_cell_matches_torch_and_gradcheck():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    params = init_gru_cell(rng, 3, 4, np.float64)
    x, h = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    cell = torch.nn.GRUCell(3, 4, dtype=torch.float64)
    _load_gru(cell, params)
    expected = cell(torch.from_numpy(x), torch.from_numpy(h)).detach().numpy()
    np.testing.assert_allclose(gru_cell_forward(x, h, params)[0], expected, atol=1e-12)

    def backward(d, cache):
        (dx, dh), grads = gru_cell_backward(d, cache)
        return {"x": dx, "h": dh}, grads

    check_layer(lambda xs, p: gru_cell_forward(xs["x"], xs["h"], p), backward, {"x": x, "h": h}, params)
    with pytest.raises(ValueError, match=r"h: expected shape \(B=2, hidden=4\), got \(2, 5\)"):
        gru_cell_forward(x, np.ones((2, 5)), params)


def test_bahdanau_encoder_matches_packed_torch_gru_and_gradcheck():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    params = init_bahdanau_encoder(rng, 3, 4, np.float64)
    x = rng.standard_normal((2, 5, 3))
    lengths = [5, 3]
    mask = np.arange(5)[None, :] < np.array(lengths)[:, None]  # (B, S)
    out, _ = bahdanau_encoder_forward(x, params, mask)
    gru = torch.nn.GRU(3, 4, batch_first=True, bidirectional=True, dtype=torch.float64)
    _load_gru(gru, params["forward"], "_l0")
    _load_gru(gru, params["backward"], "_l0_reverse")
    packed = torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(x), lengths, batch_first=True)
    expected, _ = torch.nn.utils.rnn.pad_packed_sequence(gru(packed)[0], batch_first=True, total_length=5)
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-12)
    check_layer(lambda x_, p: bahdanau_encoder_forward(x_, p, mask), bahdanau_encoder_backward, x, params)


def test_bahdanau_decoder_step_gradcheck_and_weights():
    rng = np.random.default_rng(2)
    params = init_bahdanau_decoder_step(rng, emb=3, hidden=4, annotation_size=8, attn_size=5, dtype=np.float64)
    y_prev, s_prev = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    annotations = rng.standard_normal((2, 6, 8))
    mask = np.arange(6)[None, :] < np.array([[6], [4]])  # (B, S)
    s_new, cache = bahdanau_decoder_step_forward(y_prev, s_prev, annotations, params, mask)
    assert s_new.shape == (2, 4) and cache["weights"].shape == (2, 6) and cache["context"].shape == (2, 8)
    np.testing.assert_allclose(cache["weights"].sum(-1), 1.0)
    assert np.all(cache["weights"][1, 4:] == 0)

    def forward(xs, p):
        return bahdanau_decoder_step_forward(xs["y"], xs["s"], xs["h"], p, mask)

    def backward(d, c):
        (dy, ds, dh), grads = bahdanau_decoder_step_backward(d, c)
        return {"y": dy, "s": ds, "h": dh}, grads

    check_layer(forward, backward, {"y": y_prev, "s": s_prev, "h": annotations}, params)
