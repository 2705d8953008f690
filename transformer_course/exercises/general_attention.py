"""Checks for chapter 3 (general attention): scaled dot-product attention and the masked softmax.

Each check calls the learner's function on small fixed inputs, compares with a reference computed here, and
recognises the usual mistakes (no 1/sqrt(d_k), a softmax over the wrong axis, a mask that is ignored or
inverted, NaN or uniform weights on a row with nothing to attend to, an exp that overflows).
The references are written out in this module on purpose, so the checks do not depend on the package's
own attention code that the chapter is teaching.
"""
from __future__ import annotations

import math

import numpy as np

from ._feedback import (
    ExerciseError,
    as_numpy,
    call_learner,
    compare_arrays,
    exercise_check,
    passed,
    softmax,
    split_out_weights,
)

__all__ = ["check_scaled_dot_product_attention", "check_masked_softmax"]


# ----------------------------------------------------------------------------------------------------------
# references (float64) and the wrong answers that common mistakes produce
# ----------------------------------------------------------------------------------------------------------
def _masked_softmax(scores, mask=None):
    """Softmax over the last axis; masked entries (mask False) get weight 0; a fully masked row is all zeros."""
    if mask is None:
        return softmax(scores)
    mask = np.broadcast_to(mask, scores.shape)
    filled = np.where(mask, scores, -np.inf)
    row_max = filled.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.where(mask, np.exp(filled - row_max), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _large_negative_softmax(scores, mask, fill=-1e9):
    """The common variant that fills with a large negative number: uniform weights on a fully masked row."""
    return softmax(np.where(np.broadcast_to(mask, scores.shape), scores, fill))


def _attention(q, k, v, mask=None, scale=None, axis=-1, use_mask=True, invert_mask=False):
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None and use_mask:
        weights = _masked_softmax(scores, ~mask if invert_mask else mask)
    elif axis == -1:
        weights = softmax(scores)
    else:
        weights = softmax(scores, axis=axis)
    return weights @ v, weights


# ----------------------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------------------



def _no_nan(got, name, fully_masked_rows=None):
    """Explain NaN precisely: on a fully masked row (the -inf pitfall) or elsewhere (an overflowing exp)."""
    nan = np.isnan(got)
    if not nan.any():
        return
    where = tuple(int(i) for i in np.argwhere(nan)[0])
    if fully_masked_rows is not None and bool(fully_masked_rows[where[:-1]]):
        raise ExerciseError(
            f"{name} contains NaN at index {where}, on a query row whose keys are ALL masked. With every score "
            "set to -inf, the row maximum is -inf and (-inf) - (-inf) is NaN. Give such rows all-zero weights "
            "(e.g. compute the softmax only where the row has at least one allowed key).")
    raise ExerciseError(
        f"{name} contains NaN (first at index {where}) on a row that has keys to attend to: did exp overflow? "
        "Subtract the row maximum from the scores before np.exp (it does not change the softmax).")


# ----------------------------------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------------------------------
@exercise_check
def check_scaled_dot_product_attention(fn):
    """Check `fn(q, k, v, mask=None) -> (out, weights)` = softmax(q k^T / sqrt(d_k)) v with a boolean mask.

    q: (B, Tq, Dk), k: (B, Tk, Dk), v: (B, Tk, Dv); mask: (B or 1, Tq or 1, Tk), True = may attend.
    out: (B, Tq, Dv); weights: (B, Tq, Tk), rows sum to 1, or to 0 where every key is masked.
    """
    rng = np.random.default_rng(2017)
    B, Tq, Tk, Dk, Dv = 2, 3, 4, 8, 5
    q = rng.normal(size=(B, Tq, Dk))
    k = rng.normal(size=(B, Tk, Dk))
    v = rng.normal(size=(B, Tk, Dv))

    # 1. no mask
    out, weights = split_out_weights(call_learner(fn, q, k, v), "fn(q, k, v)")
    expected_out, expected_w = _attention(q, k, v)
    hints = [
        (_attention(q, k, v, scale=1.0)[1], "the scores were not scaled: divide q @ k^T by sqrt(d_k) "
                                            "(d_k = q.shape[-1]) before the softmax."),
        (_attention(q, k, v, scale=1.0 / Dk)[1], "the scores were divided by d_k; the paper divides by the "
                                                 "SQUARE ROOT of d_k."),
        (_attention(q, k, v, axis=-2)[1], "the softmax ran over the queries (axis -2); each query's weights "
                                          "must sum to 1 over the KEYS: use the last axis."),
        (_attention(q, k, v, scale=1.0, axis=-2)[1], "the softmax ran over the queries (axis -2) and the scores "
                                                     "were not divided by sqrt(d_k)."),
    ]
    compare_arrays(weights, expected_w, "weights (no mask)", hints=hints)
    compare_arrays(out, expected_out, "out (no mask)")

    # 2. a padding mask (B, 1, Tk): the second sentence has only two real keys
    mask = np.ones((B, 1, Tk), dtype=bool)
    mask[1, 0, 2:] = False
    out, weights = split_out_weights(call_learner(fn, q, k, v, mask), "fn(q, k, v, mask)")
    expected_out, expected_w = _attention(q, k, v, mask)
    _no_nan(weights, "weights (padding mask)")
    hints = [
        (_attention(q, k, v, mask, use_mask=False)[1], "the mask was ignored: set the scores of keys where "
                                                       "mask is False to -inf before the softmax."),
        (_attention(q, k, v, mask, invert_mask=True)[1], "the mask is inverted: True means 'may attend', so "
                                                         "hide the keys where mask is False."),
    ]
    compare_arrays(weights, expected_w, "weights (padding mask)", hints=hints)
    compare_arrays(out, expected_out, "out (padding mask)")

    # 3. a query row with nothing to attend to (mask (B, Tq, Tk))
    mask = np.ones((B, Tq, Tk), dtype=bool)
    mask[0, 1, :] = False
    mask[1, :, 3] = False
    out, weights = split_out_weights(call_learner(fn, q, k, v, mask), "fn(q, k, v, mask)")
    expected_out, expected_w = _attention(q, k, v, mask)
    fully_masked = ~mask.any(axis=-1)
    _no_nan(weights, "weights (fully masked row)", fully_masked)
    _no_nan(out, "out (fully masked row)", fully_masked)
    uniform = _large_negative_softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(Dk), mask)
    compare_arrays(weights, expected_w, "weights (fully masked row)", hints=[
        (uniform, "the query row with every key masked spreads its weight uniformly over masked keys (what a "
                  "large negative fill such as -1e9 gives). A row with nothing to attend to must get all-zero "
                  "weights, and so a zero output.")])
    compare_arrays(out, expected_out, "out (fully masked row)")
    passed("softmax(q k^T / sqrt(d_k)) v, with padding masks and fully masked rows handled.")


@exercise_check
def check_masked_softmax(fn):
    """Check `fn(scores, mask) -> weights`: softmax over the last axis where mask is True, zeros elsewhere.

    scores: (B, Tq, Tk) floats; mask: boolean, broadcastable to scores (e.g. (B, 1, Tk)), True = may attend.
    A row whose keys are all masked gets all-zero weights (not NaN, not uniform).
    """
    rng = np.random.default_rng(3)
    B, Tq, Tk = 2, 3, 5
    scores = rng.normal(size=(B, Tq, Tk)) * 2.0
    scores[1, 2] += 800.0  # a row of large scores: a softmax without the max trick overflows here

    # 1. a padding mask (B, 1, Tk)
    mask = np.ones((B, 1, Tk), dtype=bool)
    mask[0, 0, 3:] = False
    got = as_numpy(call_learner(fn, scores, mask), "weights")
    expected = _masked_softmax(scores, mask)
    if got.shape != expected.shape:
        compare_arrays(got, expected, "weights")
    _no_nan(got, "weights (padding mask)")
    compare_arrays(got, expected, "weights (padding mask)", hints=[
        (softmax(scores), "the mask was ignored: entries where mask is False must get weight 0."),
        (_masked_softmax(scores, ~mask), "the mask is inverted: True means 'may attend'."),
        (softmax(np.where(mask, scores, -np.inf), axis=-2),
         "the softmax ran over axis -2 (the queries); normalise over the last axis (the keys)."),
        (np.exp(np.minimum(scores, 700.0)) * mask,
         "the exponentials were not normalised: divide by their sum over the last axis."),
    ])

    # 2. a query row with every key masked (mask (B, Tq, Tk))
    mask = np.ones((B, Tq, Tk), dtype=bool)
    mask[1, 0, :] = False
    mask[0, 2, 1] = False
    got = as_numpy(call_learner(fn, scores, mask), "weights")
    expected = _masked_softmax(scores, mask)
    _no_nan(got, "weights (fully masked row)", ~mask.any(axis=-1))
    compare_arrays(got, expected, "weights (fully masked row)", hints=[
        (_large_negative_softmax(scores, mask), "the fully masked row came out uniform (1/Tk each): that is "
                                                "what filling with a large negative number gives. A row with "
                                                "nothing to attend to must be all zeros."),
    ])
    passed("masked entries get weight 0, rows sum to 1, and a fully masked row is all zeros (no NaN).")
