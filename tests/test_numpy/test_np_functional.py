"""Softmax, ReLU, masks, the loss, the optimiser and the gradient checker itself (NumPy)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from numpy_helpers import check_layer

from transformer_course.numpy.functional import (
    log_softmax,
    log_softmax_backward,
    relu_backward,
    relu_forward,
    softmax,
    softmax_backward,
    tree_leaves,
)
from transformer_course.numpy.gradcheck import gradcheck, numerical_gradient, relative_error
from transformer_course.numpy.loss import cross_entropy_backward, cross_entropy_forward
from transformer_course.numpy.masks import causal_mask, combine_masks, lengths_to_mask, padding_mask
from transformer_course.numpy.optim import Adam, clip_grad_norm, global_norm, noam_lr


def test_softmax_and_log_softmax_are_stable_at_1e4():
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = softmax(x)
        logp = log_softmax(x)
    np.testing.assert_allclose(p, [[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)
    assert p.dtype == np.float32 and np.isfinite(logp).all()
    np.testing.assert_allclose(logp[0], [0.0, -2e4, -1e4])
    np.testing.assert_allclose(logp[1], np.log([1 / 3] * 3), rtol=1e-6)


def test_softmax_relu_backward_gradcheck():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5))
    check_layer(lambda x_, p: (softmax(x_), softmax(x_)), lambda d, y: (softmax_backward(d, y), {}), x, {})
    check_layer(lambda x_, p: (log_softmax(x_), log_softmax(x_)), lambda d, y: (log_softmax_backward(d, y), {}),
                x, {})
    check_layer(lambda x_, p: relu_forward(x_), lambda d, c: (relu_backward(d, c), {}), x, {})
    out, _ = relu_forward(np.array([-1.0, 0.0, 2.0], dtype=np.float32))
    assert out.dtype == np.float32 and out.tolist() == [0.0, 0.0, 2.0]


def test_masks():
    tokens = np.array([[5, 6, 0], [7, 0, 0]])
    np.testing.assert_array_equal(padding_mask(tokens, 0), [[[1, 1, 0]], [[1, 0, 0]]])
    np.testing.assert_array_equal(lengths_to_mask([2, 1], 3), padding_mask(tokens, 0))
    c = causal_mask(3)
    assert c.shape == (1, 3, 3) and c.dtype == bool
    np.testing.assert_array_equal(c[0], np.tril(np.ones((3, 3))))
    both = combine_masks(c, padding_mask(tokens, 0), None)
    assert both.shape == (2, 3, 3)
    np.testing.assert_array_equal(both[1], [[1, 0, 0], [1, 0, 0], [1, 0, 0]])
    assert combine_masks(None) is None
    with pytest.raises(ValueError, match=r"T: expected a positive int, got 0"):
        causal_mask(0)
    with pytest.raises(ValueError, match=r"lengths: expected values in \[0, max_len=3\], got \[1, 4\]"):
        lengths_to_mask([1, 4], 3)
    with pytest.raises(ValueError, match=r"masks\[1\]: expected a bool array"):
        combine_masks(c, np.ones((1, 3, 3)))
    with pytest.raises(ValueError, match=r"tokens: expected an integer array of shape \(B, S\)"):
        padding_mask(np.array([1, 2]), 0)


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_cross_entropy_matches_torch(eps):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 4, 6)) * 3
    targets = rng.integers(1, 6, size=(2, 4))
    targets[1, 2:] = 0                                   # padding: ignored
    loss, _ = cross_entropy_forward(logits, targets, pad_id=0, label_smoothing=eps)
    expected = torch.nn.functional.cross_entropy(torch.from_numpy(logits).view(-1, 6),
                                                 torch.from_numpy(targets).view(-1), ignore_index=0,
                                                 label_smoothing=eps)
    assert loss == pytest.approx(expected.item(), rel=1e-12)


def test_cross_entropy_gradcheck_and_padding_gets_no_gradient():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 4, 6))
    targets = rng.integers(1, 6, size=(2, 4))
    targets[0, 3] = 0
    _, cache = cross_entropy_forward(logits, targets, 0, 0.1)
    dlogits = cross_entropy_backward(1.0, cache)
    assert not dlogits[0, 3].any()
    errors = gradcheck(lambda: cross_entropy_forward(logits, targets, 0, 0.1)[0], logits, dlogits)
    assert errors["x"] < 1e-6


def test_cross_entropy_edge_cases_and_errors():
    logits = np.zeros((1, 2, 5), dtype=np.float32)
    loss, cache = cross_entropy_forward(logits, np.array([[1, 2]]), 0)
    assert loss == pytest.approx(math.log(5), rel=1e-6)
    assert cross_entropy_backward(1.0, cache).dtype == np.float32
    loss, cache = cross_entropy_forward(logits, np.zeros((1, 2), dtype=np.int64), 0)
    assert loss == 0.0 and not cross_entropy_backward(1.0, cache).any()  # all padding: 0, not NaN
    with pytest.raises(ValueError, match=r"targets: expected shape \(B=1, T=2\), got \(1, 3\)"):
        cross_entropy_forward(logits, np.ones((1, 3), dtype=np.int64), 0)
    with pytest.raises(ValueError, match=r"targets: expected ids in \[0, 5\), got values in \[1, 5\]"):
        cross_entropy_forward(logits, np.array([[1, 5]]), 0)
    with pytest.raises(ValueError, match=r"logits: expected shape \(B, T, V\), got \(2, 5\)"):
        cross_entropy_forward(logits[0], np.array([[1, 2]]), 0)
    with pytest.raises(ValueError, match=r"label_smoothing: expected a value in \[0, 1\), got 1.0"):
        cross_entropy_forward(logits, np.array([[1, 2]]), 0, 1.0)


def test_noam_lr():
    d_model, warmup = 512, 4000
    assert noam_lr(1, d_model, warmup) == pytest.approx(512 ** -0.5 * 4000 ** -1.5)
    peak = noam_lr(warmup, d_model, warmup)
    assert peak == pytest.approx(512 ** -0.5 * 4000 ** -0.5)
    assert noam_lr(warmup - 1, d_model, warmup) < peak > noam_lr(warmup + 1, d_model, warmup)
    assert noam_lr(4 * warmup, d_model, warmup) == pytest.approx(peak / 2)  # 1/sqrt(step) decay
    with pytest.raises(ValueError, match="step: expected an int >= 1"):
        noam_lr(0, d_model, warmup)


def test_adam_matches_torch_adam():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    params = {"a": rng.standard_normal((3, 4)), "b": [{"c": rng.standard_normal(5)}]}
    tensors = [torch.tensor(p, requires_grad=True) for _, p in tree_leaves(params)]
    ours = Adam(params, lr=0.01)
    theirs = torch.optim.Adam(tensors, lr=0.01, betas=(0.9, 0.98), eps=1e-9)
    for step in range(5):
        grads = {"a": rng.standard_normal((3, 4)), "b": [{"c": rng.standard_normal(5)}]}
        lr = noam_lr(step + 1, 16, 3)
        ours.step(grads, lr=lr)
        for t, (_, g) in zip(tensors, tree_leaves(grads)):
            t.grad = torch.from_numpy(g)
        for group in theirs.param_groups:
            group["lr"] = lr
        theirs.step()
    for t, (_, p) in zip(tensors, tree_leaves(params)):
        np.testing.assert_allclose(p, t.detach().numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match=r"grads\[a\]: expected shape \(3, 4\), got \(4, 3\)"):
        ours.step({"a": np.ones((4, 3)), "b": [{"c": np.ones(5)}]})


def test_clip_grad_norm():
    grads = {"a": np.full(4, 3.0, dtype=np.float32), "b": [np.full(1, 4.0, dtype=np.float32)]}
    assert global_norm(grads) == pytest.approx(math.sqrt(36 + 16))
    before = clip_grad_norm(grads, 1.0)
    assert before == pytest.approx(math.sqrt(52))
    assert global_norm(grads) == pytest.approx(1.0, rel=1e-5) and grads["a"].dtype == np.float32


def test_gradcheck_catches_a_wrong_gradient():
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(numerical_gradient(lambda: float((x ** 3).sum()), x), 3 * x ** 2, rtol=1e-8)
    assert gradcheck(lambda: float((x ** 3).sum()), x, 3 * x ** 2)["x"] < 1e-9
    assert gradcheck(lambda: float((x ** 3).sum()), x, 3 * x ** 2 + 0.01)["x"] > 1e-4
    assert relative_error(np.zeros(3), np.zeros(3)) == 0.0
    assert relative_error(np.ones(3), -np.ones(3)) == 1.0
    with pytest.raises(TypeError, match="x: expected float64"):
        numerical_gradient(lambda: 0.0, np.ones(2, dtype=np.float32))
