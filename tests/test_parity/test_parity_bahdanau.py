"""NumPy vs PyTorch for Bahdanau's model: GRU cell, the bidirectional encoder (packed sequences vs masking) and
one attention decoder step, forward and backward, with weights converted by `convert`."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from parity_helpers import assert_trees_close, grads_as_numpy, randomise, t

from transformer_course.torch.bahdanau import BahdanauSeq2Seq
from transformer_course.torch.convert import numpy_to_torch, torch_to_numpy

np_bahdanau = pytest.importorskip("transformer_course.numpy.bahdanau")


def _model(attention=True):
    torch.manual_seed(0)
    return randomise(BahdanauSeq2Seq(12, 14, emb=6, hidden=8, attention=attention), scale=0.5)


def _src():
    src = np.random.default_rng(0).integers(4, 12, size=(3, 5))
    src[1, 3:] = 0
    return src


def test_convert_round_trip_for_recurrent_layers():
    model = _model()
    params = torch_to_numpy(model)
    assert set(params["encoder"]) == {"forward", "backward"}
    assert params["encoder"]["forward"]["W_ih"].shape == (6, 24)          # (in, 3h)
    assert params["decoder"]["cell"]["W_hh"].shape == (8, 24) and params["tgt_embedding"]["E"].shape == (14, 6)
    other = numpy_to_torch(params, BahdanauSeq2Seq(12, 14, emb=6, hidden=8).double())
    for (name, a), (_, b) in zip(model.state_dict().items(), other.state_dict().items()):
        assert torch.equal(a, b), name


def test_gru_cell():
    cell = randomise(torch.nn.GRUCell(5, 7))
    g = np.random.default_rng(1)
    x, h = g.standard_normal((4, 5)), g.standard_normal((4, 7))
    h_np, cache = np_bahdanau.gru_cell_forward(x, h, torch_to_numpy(cell))
    xt, ht = t(x, grad=True), t(h, grad=True)
    h_new = cell(xt, ht)
    assert_trees_close(h_new, h_np)
    dh = g.standard_normal((4, 7))
    (dx, dh_prev), grads = np_bahdanau.gru_cell_backward(dh, cache)
    h_new.backward(t(dh))
    assert_trees_close(xt.grad, dx)
    assert_trees_close(ht.grad, dh_prev)
    assert_trees_close(grads_as_numpy(cell), grads)


@pytest.mark.twins("bahdanau.bahdanau_encoder")
def test_encoder_annotations_and_gradients():
    model = _model()
    src = _src()
    params = torch_to_numpy(model)
    x = params["src_embedding"]["E"][src]                # (B, S, emb)
    ann_np, cache = np_bahdanau.bahdanau_encoder_forward(x, params["encoder"], src != 0)
    annotations = model.encoder(model.src_embedding(t(src)), t(src != 0))
    assert_trees_close(annotations, ann_np)
    assert_trees_close(model.encode(t(src))[0], ann_np)
    dann = np.random.default_rng(2).standard_normal(ann_np.shape) * (src != 0)[..., None]
    _, grads = np_bahdanau.bahdanau_encoder_backward(dann, cache)
    annotations.backward(t(dann))
    assert_trees_close(grads_as_numpy(model)["encoder"], grads)


@pytest.mark.twins("bahdanau.bahdanau_decoder_step")
def test_attention_decoder_step():
    model = _model()
    src = _src()
    params = torch_to_numpy(model)
    annotations, context, s0, mask = model.encode(t(src))
    annotations = annotations.detach().requires_grad_(True)
    s0 = s0.detach().requires_grad_(True)
    y_prev = torch.tensor([1, 5, 7])
    e = params["tgt_embedding"]["E"][y_prev.numpy()]     # (B, emb)
    s_np, cache = np_bahdanau.bahdanau_decoder_step_forward(e, s0.detach().numpy(), annotations.detach().numpy(),
                                                            params["decoder"], mask.numpy())
    model.zero_grad()
    s, context, weights = model.decoder(t(e), s0, annotations, mask)
    assert_trees_close(s, s_np)
    assert_trees_close(weights, cache["weights"])
    assert_trees_close(context, cache["context"])
    _, s_model, _ = model.decode_step(y_prev, s0, annotations, model.decoder.project_keys(annotations), context,
                                       mask)  # the same step inside the model
    assert_trees_close(s_model, s_np)
    ds = np.random.default_rng(3).standard_normal(s_np.shape)
    (_, ds_prev, dann), grads = np_bahdanau.bahdanau_decoder_step_backward(ds, cache)
    s.backward(t(ds))
    assert_trees_close(s0.grad, ds_prev)
    assert_trees_close(annotations.grad, dann)
    assert_trees_close(grads_as_numpy(model)["decoder"], grads)
