"""Checks for chapter 4 (self-attention): learned single-head self-attention and the causal mask.

Each check runs the learner's function on small fixed inputs, compares with a reference written out here
(on purpose independent of the package's attention code that the chapter teaches), and recognises the usual
mistakes: scores not scaled or scaled by the wrong width, values that were not projected, keys made with the
query matrix, a softmax over the wrong axis; a causal mask that is inverted, transposed or misses the diagonal.
"""
from __future__ import annotations

import math

import numpy as np

from ..utils import to_numpy
from ._feedback import (
    ExerciseError,
    call_learner,
    compare_arrays,
    exercise_check,
    passed,
    softmax,
    split_out_weights,
)

__all__ = ["check_self_attention", "check_causal_mask"]


# ----------------------------------------------------------------------------------------------------------
# references (float64) and the wrong answers that common mistakes produce
# ----------------------------------------------------------------------------------------------------------
def _self_attention(x, W_q, W_k, W_v, mask=None, scale=None, axis=-1, project_values=True, keys_with_q=False):
    """softmax(x W_q (x W_k)^T / sqrt(d_k)) x W_v with a boolean mask (True = may attend); (out, weights)."""
    q = x @ W_q                                          # (B, T, Dk)
    k = x @ (W_q if keys_with_q else W_k)                # (B, T, Dk)
    v = x @ W_v if project_values else x                 # (B, T, Dv) or (B, T, D)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale          # (B, T, T)
    if mask is not None:
        mask = np.broadcast_to(mask, scores.shape)       # (B, T, T)
        scores = np.where(mask, scores, 0.0)             # masked entries are zeroed after the softmax below
    weights = softmax(scores, axis=axis)                # (B, T, T)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)           # (B, T, T): only the allowed keys keep weight
        total = weights.sum(axis=axis, keepdims=True)
        weights = weights / np.where(total == 0.0, 1.0, total)   # a row with no allowed key stays all zeros
    return weights @ v, weights


def _causal(T):
    return np.tril(np.ones((T, T), dtype=bool))          # (T, T): True on and below the diagonal





# ----------------------------------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------------------------------
@exercise_check
def check_self_attention(fn):
    """Check `fn(x, W_q, W_k, W_v, mask=None) -> (out, weights)`: one head of learned self-attention.

    x: (B, T, D); W_q, W_k: (D, Dk); W_v: (D, Dv); mask: bool (T, T) or (B, T, T), True = may attend.
    out: (B, T, Dv); weights: (B, T, T), every row sums to 1, except a row with no allowed key: all zeros.
    """
    rng = np.random.default_rng(4)
    B, T, D, Dk, Dv = 2, 5, 6, 3, 4
    x = rng.normal(size=(B, T, D))
    W_q = rng.normal(size=(D, Dk))
    W_k = rng.normal(size=(D, Dk))
    W_v = rng.normal(size=(D, Dv))

    # 1. no mask
    out, weights = split_out_weights(call_learner(fn, x, W_q, W_k, W_v), "fn(x, W_q, W_k, W_v)")
    expected_out, expected_w = _self_attention(x, W_q, W_k, W_v)
    hints = [
        (_self_attention(x, W_q, W_k, W_v, scale=1.0)[1],
         "the scores were not scaled: divide the scores by sqrt(d_k), where d_k = W_q.shape[1]."),
        (_self_attention(x, W_q, W_k, W_v, scale=1.0 / math.sqrt(D))[1],
         "the scores were divided by sqrt(d_model) = sqrt(x.shape[-1]); the width that matters is the width of "
         "the queries and keys, d_k = W_q.shape[1]."),
        (_self_attention(x, W_q, W_k, W_v, axis=-2)[1],
         "the softmax ran over the queries (axis -2); each query's weights must sum to 1 over the keys, the last "
         "axis."),
        (_self_attention(x, W_q, W_k, W_v, keys_with_q=True)[1],
         "the keys were made with W_q: the keys are x @ W_k (with W_q the scores matrix is symmetric)."),
    ]
    compare_arrays(weights, expected_w, "weights (no mask)", hints=hints)
    if out.shape == (B, T, D) and np.allclose(out, _self_attention(x, W_q, W_k, W_v, project_values=False)[0]):
        raise ExerciseError("out is a weighted sum of the raw inputs x; in learned self-attention the values are "
                            "projected first: v = x @ W_v, then out = weights @ v.")
    compare_arrays(out, expected_out, "out (no mask)")

    # 2. a causal mask: position t may only look at positions 0..t
    mask = _causal(T)
    out, weights = split_out_weights(call_learner(fn, x, W_q, W_k, W_v, mask=mask), "fn(x, W_q, W_k, W_v, mask=mask)")
    expected_out, expected_w = _self_attention(x, W_q, W_k, W_v, mask)
    if np.isnan(weights).any():
        raise ExerciseError("weights (causal mask) contain NaN: with the causal mask every row keeps its diagonal, "
                            "so NaN means the mask was inverted (rows with nothing allowed) or exp overflowed.")
    compare_arrays(weights, expected_w, "weights (causal mask)", hints=[
        (_self_attention(x, W_q, W_k, W_v)[1], "the mask was ignored: set the scores where mask is False to -inf "
                                                "before the softmax."),
    ])
    compare_arrays(out, expected_out, "out (causal mask)")

    # 3. a padding mask that leaves one query with no key at all (the course's rule: all-zero weights, no NaN)
    mask = np.ones((B, T, T), dtype=bool)
    mask[1, :, 3:] = False                               # sentence 1 has 3 real tokens: keys 3 and 4 are padding
    mask[1, 4, :] = False                                # and query 4 may attend to nothing
    out, weights = split_out_weights(call_learner(fn, x, W_q, W_k, W_v, mask=mask), "fn(x, W_q, W_k, W_v, mask=mask)")
    expected_out, expected_w = _self_attention(x, W_q, W_k, W_v, mask)
    if np.isnan(weights).any() or np.isnan(out).any():
        raise ExerciseError("a query whose keys are all masked got NaN: softmax over a row of -inf is 0 / 0. In this "
                            "course such a row gets all-zero weights (chapter 3's masked softmax: "
                            "transformer_course.numpy.attention.masked_softmax), so its output is a zero vector.")
    compare_arrays(weights, expected_w, "weights (padding mask with an empty row)")
    compare_arrays(out, expected_out, "out (padding mask with an empty row)")
    passed("self-attention projects x into queries, keys and values, scales by sqrt(d_k) and respects the mask, "
           "empty rows included.")


@exercise_check
def check_causal_mask(fn):
    """Check `fn(T) -> mask`: a bool (T, T) array, True where query t may attend to key s (s <= t)."""
    for T in (4, 1, 7):
        got = call_learner(fn, T)
        got = to_numpy(got)
        if got.ndim == 3 and got.shape[0] == 1:
            got = got[0]                                 # (1, T, T) is fine too: the package's layout
        expected = _causal(T)
        if got.dtype != bool:
            if got.shape == expected.shape and np.isin(got, (0, 1)).all() and (got.astype(bool) == expected).all():
                raise ExerciseError(f"fn({T}) has the right pattern but dtype {got.dtype}: return a boolean array "
                                    "(e.g. `.astype(bool)`), because masks mean True = may attend.")
            raise ExerciseError(f"fn({T}) returned dtype {got.dtype}; expected a boolean mask (True = may attend).")
        hints = [
            (np.triu(np.ones((T, T), dtype=bool)), "the mask is transposed: query t (row t) may look at keys "
                                                   "0..t, which lie on and BELOW the diagonal (np.tril)."),
            (~expected, "the mask is inverted: it marks the future (the positions to hide) as True, but in this "
                        "course True means 'may attend', so the past and the present are True and the future False."),
            (np.tril(np.ones((T, T), dtype=bool), k=-1), "the diagonal is missing: a position may attend to "
                                                         "itself (use np.tril with k=0)."),
        ]
        compare_arrays(got, expected, f"fn({T})", hints=hints)
    passed("row t is True for keys 0..t and False for the future.")
