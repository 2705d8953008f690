"""Checks for chapter 7 (the encoder): layer normalisation and the position-wise feed-forward network.

Each check calls the learner's function on small fixed float64 inputs, compares with a reference written out
here (independent of the package code the chapter teaches), and recognises the usual slips: normalising over
the wrong axis, the unbiased variance, a forgotten epsilon or gain/bias; a missing or misplaced ReLU, missing
biases in the feed-forward network.
"""
from __future__ import annotations

import numpy as np

from ._feedback import ExerciseError, as_numpy, call_learner, compare_arrays, exercise_check, passed

__all__ = ["check_layer_norm", "check_feed_forward"]


# ----------------------------------------------------------------------------------------------------------
# references and the wrong answers that common mistakes produce
# ----------------------------------------------------------------------------------------------------------
def _layer_norm(x, gamma, beta, eps=1e-5, axis=-1, ddof=0, use_eps=True, affine=True, eps_outside=False):
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, keepdims=True, ddof=ddof)
    if eps_outside:
        xhat = (x - mean) / (np.sqrt(var) + eps)
    else:
        xhat = (x - mean) / np.sqrt(var + (eps if use_eps else 0.0))
    return xhat * gamma + beta if affine else xhat


def _relu(x):
    return np.maximum(x, 0.0)


def _feed_forward(x, W_1, b_1, W_2, b_2, relu_inside=True, relu_outside=False, biases=True,
                  relu_before_bias=False):
    b_1 = b_1 if biases else 0.0
    b_2 = b_2 if biases else 0.0
    if relu_before_bias:
        h = _relu(x @ W_1) + b_1
    else:
        h = x @ W_1 + b_1
        h = _relu(h) if relu_inside else h
    out = h @ W_2 + b_2
    return _relu(out) if relu_outside else out




# ----------------------------------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------------------------------
@exercise_check
def check_layer_norm(fn):
    """Check `fn(x, gamma, beta, eps=1e-5)` = gamma * (x - mean) / sqrt(var + eps) + beta over the last axis.

    x: (B, T, D); gamma, beta: (D,); the variance is the biased one (divide by D), as in torch.nn.LayerNorm.
    """
    rng = np.random.default_rng(2016)
    B, T, D = 2, 3, 6
    x = rng.normal(size=(B, T, D))
    x[0, 1] = 0.5 + 0.004 * rng.normal(size=D)     # a row with a tiny variance: there eps matters
    gamma = rng.uniform(0.5, 1.5, size=D)
    beta = rng.normal(scale=0.3, size=D)
    eps = 1e-5
    got = as_numpy(call_learner(fn, x, gamma, beta, eps=eps), "fn(x, gamma, beta, eps)")
    expected = _layer_norm(x, gamma, beta, eps)
    hints = [
        (_layer_norm(x, gamma, beta, eps, axis=0), "the statistics were taken over axis 0 (the batch): "
                                                   "LayerNorm normalises each position's vector over its D "
                                                   "features, the LAST axis (mean(-1, keepdims=True))."),
        (_layer_norm(x, gamma, beta, eps, axis=1), "the statistics were taken over axis 1 (the positions): "
                                                   "LayerNorm normalises over the D features of one position, "
                                                   "the LAST axis."),
        (_layer_norm(x, gamma, beta, eps, axis=(0, 1)), "the statistics were shared by all positions of the "
                                                        "batch, as BatchNorm does; LayerNorm computes one mean "
                                                        "and variance per position, over the last axis."),
        (_layer_norm(x, gamma, beta, eps, ddof=1), "this is the UNBIASED variance (divided by D - 1). "
                                                   "LayerNorm uses the biased one, divided by D: np.var's "
                                                   "default (ddof=0), or unbiased=False in torch."),
        (_layer_norm(x, gamma, beta, eps, use_eps=False), "eps is missing: divide by sqrt(var + eps), which "
                                                          "keeps a (nearly) constant row from dividing by "
                                                          "(nearly) zero. Look at row [0, 1] of x."),
        (_layer_norm(x, gamma, beta, eps, eps_outside=True), "eps was added to the standard deviation; "
                                                             "torch.nn.LayerNorm adds it to the VARIANCE: "
                                                             "(x - mean) / sqrt(var + eps)."),
        (_layer_norm(x, gamma, beta, eps, affine=False), "the normalisation is right but gamma and beta were "
                                                         "not applied: return xhat * gamma + beta."),
        (_layer_norm(x, gamma, beta, eps) - beta, "beta is missing: return xhat * gamma + beta."),
        (_layer_norm(x, gamma, beta, eps, affine=False) + beta, "gamma is missing: return xhat * gamma + beta."),
    ]
    compare_arrays(got, expected, "your layer norm", atol=1e-7, rtol=1e-6, hints=hints)
    means = (got - beta) / gamma
    if not np.allclose(means.mean(-1), 0.0, atol=1e-6):
        raise ExerciseError("before gamma and beta, every row should have mean 0.")
    passed("every position's vector is normalised over its features (biased variance, eps inside the "
           "square root), then scaled by gamma and shifted by beta.")


@exercise_check
def check_feed_forward(fn):
    """Check `fn(x, W_1, b_1, W_2, b_2)` = max(0, x W_1 + b_1) W_2 + b_2, applied at every position.

    x: (B, T, D); W_1: (D, F); b_1: (F,); W_2: (F, D); b_2: (D,). Vectors are rows: x @ W_1, not W_1 @ x.
    """
    rng = np.random.default_rng(2017)
    B, T, D, F = 2, 4, 3, 12
    x = rng.normal(size=(B, T, D))
    W_1 = rng.normal(scale=0.7, size=(D, F))
    b_1 = rng.normal(scale=0.5, size=F)
    W_2 = rng.normal(scale=0.5, size=(F, D))
    b_2 = rng.normal(scale=0.5, size=D)
    try:
        result = call_learner(fn, x, W_1, b_1, W_2, b_2)
    except ValueError as err:
        raise ExerciseError(f"your function raised ValueError: {err}. Shapes: x (B, T, D) = {x.shape}, "
                            f"W_1 (D, F) = {W_1.shape}, W_2 (F, D) = {W_2.shape}; vectors are rows, so the "
                            "first product is x @ W_1.") from err
    got = as_numpy(result, "fn(x, W_1, b_1, W_2, b_2)")
    expected = _feed_forward(x, W_1, b_1, W_2, b_2)
    hints = [
        (_feed_forward(x, W_1, b_1, W_2, b_2, relu_inside=False), "there is no ReLU: without it the two "
                                                                  "linear maps collapse into one. Apply "
                                                                  "max(0, .) to x @ W_1 + b_1."),
        (_feed_forward(x, W_1, b_1, W_2, b_2, relu_outside=True), "a ReLU was applied to the OUTPUT too; the "
                                                                  "paper's FFN has one ReLU, between the two "
                                                                  "linear maps, and returns h @ W_2 + b_2 as "
                                                                  "is (it may be negative)."),
        (_feed_forward(x, W_1, b_1, W_2, b_2, relu_inside=False, relu_outside=True),
         "the ReLU is in the wrong place: it belongs between the layers, max(0, x @ W_1 + b_1) @ W_2 + b_2."),
        (_feed_forward(x, W_1, b_1, W_2, b_2, biases=False), "the biases b_1 and b_2 are missing."),
        (_feed_forward(x, W_1, b_1, W_2, b_2, relu_before_bias=True), "b_1 was added after the ReLU; add it "
                                                                      "before: max(0, x @ W_1 + b_1)."),
        (_feed_forward(x, W_1, b_1, W_2, 0.0 * b_2), "b_2 is missing: the second layer is h @ W_2 + b_2."),
        (_feed_forward(x, W_1, 0.0 * b_1, W_2, b_2), "b_1 is missing: the first layer is x @ W_1 + b_1."),
    ]
    compare_arrays(got, expected, "your feed-forward output", atol=1e-8, rtol=1e-7, hints=hints)
    passed("max(0, x W_1 + b_1) W_2 + b_2, the same two-layer network at every position.")
