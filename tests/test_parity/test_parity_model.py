"""NumPy vs PyTorch for the whole model and the loss: same logits, same loss, same gradients (float64, 1e-10)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from parity_helpers import assert_trees_close, grads_as_numpy, randomise, t

from transformer_course.config import ModelConfig
from transformer_course.torch.convert import numpy_to_torch, torch_to_numpy
from transformer_course.torch.loss import cross_entropy
from transformer_course.torch.transformer import Transformer

CONFIG = ModelConfig(src_vocab_size=13, tgt_vocab_size=11, d_model=16, n_heads=4, d_ff=24, n_encoder_layers=2,
                     n_decoder_layers=2, dropout=0.0, max_len=20)


def _batch():
    g = np.random.default_rng(0)
    src = g.integers(4, 13, size=(3, 6))
    tgt = g.integers(4, 11, size=(3, 6))
    src[1, -2:] = 0
    tgt[2, -3:] = 0
    return src, tgt[:, :-1], tgt[:, 1:]


@pytest.mark.twins("loss.cross_entropy")
@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_loss(eps):
    np_loss = pytest.importorskip("transformer_course.numpy.loss")
    g = np.random.default_rng(1)
    logits = g.standard_normal((3, 5, 11))
    targets = g.integers(0, 11, size=(3, 5))
    targets[0, :2] = 0
    loss_np, cache = np_loss.cross_entropy_forward(logits, targets, pad_id=0, label_smoothing=eps)
    lt = t(logits, grad=True)
    loss = cross_entropy(lt, t(targets), pad_id=0, label_smoothing=eps)
    assert_trees_close(loss, loss_np)
    loss.backward()
    assert_trees_close(lt.grad, np_loss.cross_entropy_backward(1.0, cache))


@pytest.mark.parametrize("overrides", [{}, {"norm_first": True},
                                       {"positional": "learned", "tie_output_embedding": False},
                                       {"positional": "rope"}, {"positional": "alibi", "norm_first": True}],
                         ids=["post-LN", "pre-LN", "learned-untied", "rope", "alibi-pre-LN"])
@pytest.mark.twins("transformer.transformer")
def test_full_model_logits_loss_and_gradients(overrides):
    np_transformer = pytest.importorskip("transformer_course.numpy.transformer")
    np_loss = pytest.importorskip("transformer_course.numpy.loss")
    config = CONFIG.replace(**overrides)
    torch.manual_seed(0)
    model = randomise(Transformer(config), scale=0.4)
    params = torch_to_numpy(model)
    src, tgt_in, tgt_out = _batch()
    logits_np, cache = np_transformer.transformer_forward(src, tgt_in, params, config)
    logits = model(t(src), t(tgt_in))
    assert_trees_close(logits, logits_np)
    loss_np, loss_cache = np_loss.cross_entropy_forward(logits_np, tgt_out, pad_id=0, label_smoothing=0.1)
    loss = cross_entropy(logits, t(tgt_out), pad_id=0, label_smoothing=0.1)
    assert_trees_close(loss, loss_np)
    grads_np = np_transformer.transformer_backward(np_loss.cross_entropy_backward(1.0, loss_cache), cache)
    loss.backward()
    assert_trees_close(grads_as_numpy(model), grads_np)


def test_weights_from_numpy_init_run_in_torch():
    np_transformer = pytest.importorskip("transformer_course.numpy.transformer")
    params = np_transformer.init_transformer(np.random.default_rng(0), CONFIG)
    model = numpy_to_torch(params, Transformer(CONFIG).double())
    src, tgt_in, _ = _batch()
    logits_np, _ = np_transformer.transformer_forward(src, tgt_in, params, CONFIG)
    assert_trees_close(model(t(src), t(tgt_in)), logits_np.astype(np.float64), tol=1e-5)  # float32 init
    assert_trees_close(torch_to_numpy(model, dtype=np.float32), params, tol=0.0)


@pytest.mark.twins("decoding.greedy_decode")
@pytest.mark.parametrize("positional", ["sinusoidal", "rope", "alibi"])
def test_greedy_decoding_gives_the_same_tokens(positional):
    np_decoding = pytest.importorskip("transformer_course.numpy.decoding")
    from transformer_course.torch.decoding import greedy_decode
    torch.manual_seed(0)
    model = randomise(Transformer(CONFIG.replace(tie_output_embedding=False, positional=positional)),
                      scale=0.8).eval()
    params = torch_to_numpy(model)
    src, _, _ = _batch()
    ours = greedy_decode(model, t(src), max_len=10, bos_id=1, eos_id=2)
    ref = np_decoding.greedy_decode(src, params, model.config, max_len=10, bos_id=1, eos_id=2)
    np.testing.assert_array_equal(ours.numpy(), ref)
