"""Checks for chapter 2 (Bahdanau attention): the additive alignment model, its weights and context vectors.

`check_additive_attention(fn)` calls the learner's `fn(s_prev, annotations, W_a, U_a, v_a) -> (e, alpha, c)` on
small fixed inputs (every axis a different size, so a swapped axis shows in the shape), compares with a
reference written out here, and recognises the usual mistakes: no tanh, v_a applied before tanh, a missing
W_a s or U_a h term, no softmax, a softmax over the wrong axis, exp without normalisation, context weighted by
raw scores.
The reference is written out in this module on purpose, independent of the package code the chapter teaches.
"""
from __future__ import annotations

import numpy as np

from ._feedback import ExerciseError, as_numpy, call_learner, compare_arrays, exercise_check, passed, softmax

__all__ = ["check_additive_attention"]


# ----------------------------------------------------------------------------------------------------------
# reference (float64) and the wrong answers that common mistakes produce
# ----------------------------------------------------------------------------------------------------------
def _scores(s_prev, annotations, W_a, U_a, v_a, tanh=True, use_query=True, use_keys=True, v_inside=False):
    """e[t, i] = v_a . tanh(s_prev[t] W_a + annotations[i] U_a), with switches that reproduce common mistakes."""
    q = s_prev @ W_a if use_query else np.zeros((s_prev.shape[0], W_a.shape[1]))   # (T, A)
    k = annotations @ U_a if use_keys else np.zeros((annotations.shape[0], U_a.shape[1]))   # (S, A)
    pre = q[:, None, :] + k[None, :, :]                                           # (T, S, A)
    if v_inside:
        return np.tanh(pre @ v_a)                                                 # (T, S)
    return (np.tanh(pre) if tanh else pre) @ v_a                                  # (T, S)


def _reference(s_prev, annotations, W_a, U_a, v_a):
    e = _scores(s_prev, annotations, W_a, U_a, v_a)    # (T, S)
    alpha = softmax(e, axis=-1)               # (T, S): each decoder step's weights sum to 1 over the source
    c = alpha @ annotations                            # (T, S) @ (S, 2h) -> (T, 2h)
    return e, alpha, c


def _inputs():
    """T = 3 decoder states of size 2, S = 5 annotations of size 4, attention size A = 6."""
    rng = np.random.default_rng(2015)
    T, S, h_dec, h_ann, A = 3, 5, 2, 4, 6
    s_prev = rng.normal(size=(T, h_dec))
    annotations = rng.normal(size=(S, h_ann))
    W_a = rng.normal(size=(h_dec, A))
    U_a = rng.normal(size=(h_ann, A))
    v_a = rng.normal(size=A)
    return s_prev, annotations, W_a, U_a, v_a




def _unpack(result):
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        kind = type(result).__name__
        size = f" of length {len(result)}" if isinstance(result, (tuple, list)) else ""
        raise ExerciseError(f"your function returned a {kind}{size}; it should return three arrays "
                            "`(e, alpha, c)`: the scores, the attention weights and the context vectors.")
    return tuple(as_numpy(x, name) for x, name in zip(result, ("e", "alpha", "c")))


# ----------------------------------------------------------------------------------------------------------
# the check
# ----------------------------------------------------------------------------------------------------------
@exercise_check
def check_additive_attention(fn):
    """Check `fn(s_prev, annotations, W_a, U_a, v_a) -> (e, alpha, c)`, Bahdanau's additive attention for T
    decoder states.

    s_prev: (T, h_dec) decoder states s_{t-1}, one per row; annotations: (S, 2h) the h_i, one per row;
    W_a: (h_dec, A); U_a: (2h, A); v_a: (A,).  e[t, i] = v_a . tanh(s_prev[t] W_a + annotations[i] U_a) (T, S);
    alpha = softmax of e over the source positions i (T, S); c = alpha @ annotations (T, 2h).
    """
    s_prev, annotations, W_a, U_a, v_a = _inputs()
    T, S = s_prev.shape[0], annotations.shape[0]
    e, alpha, c = _unpack(call_learner(fn, s_prev, annotations, W_a, U_a, v_a))
    exp_e, exp_alpha, exp_c = _reference(s_prev, annotations, W_a, U_a, v_a)

    # 1. the scores
    compare_arrays(e, exp_e, f"e (one row per decoder step t = {T}, one column per source position i = {S})",
                   hints=[
                       (_scores(s_prev, annotations, W_a, U_a, v_a, tanh=False),
                        "the tanh is missing: the scores are v_a . tanh(s W_a + h U_a); without the tanh the "
                        "score is linear and splits into a part for s and a part for h, so the decoder state "
                        "cannot change WHICH position wins."),
                       (_scores(s_prev, annotations, W_a, U_a, v_a, v_inside=True),
                        "tanh was applied after v_a: project with v_a last, v_a . tanh(s W_a + h U_a)."),
                       (_scores(s_prev, annotations, W_a, U_a, v_a, use_query=False),
                        "the decoder-state term s_{t-1} W_a is missing: every decoder step then gets the same "
                        "scores (the rows of e are equal)."),
                       (_scores(s_prev, annotations, W_a, U_a, v_a, use_keys=False),
                        "the annotation term h_i U_a is missing: every source position then gets the same "
                        "score (the columns of e are equal)."),
                   ])

    # 2. the weights
    if np.allclose(alpha.sum(axis=0), 1.0) and not np.allclose(alpha.sum(axis=1), 1.0):
        raise ExerciseError("alpha is not right yet: its COLUMNS sum to 1, so the softmax ran over the decoder "
                            "steps (axis 0). Each decoder step t distributes its attention over the source "
                            "positions: softmax over the last axis (axis=-1), so every ROW sums to 1.")
    with np.errstate(all="ignore"):
        exp_only = np.exp(exp_e)
    compare_arrays(alpha, exp_alpha, "alpha", hints=[
        (exp_e, "alpha equals e: the softmax is missing (weights must be positive and sum to 1 per row)."),
        (exp_e / exp_e.sum(axis=-1, keepdims=True),
         "e was divided by its row sum without exponentiating first: softmax is exp(e) / sum(exp(e))."),
        (exp_only, "exp(e) was not normalised: divide by the row sum of exp(e) so each row sums to 1."),
    ])

    # 3. the context vectors
    compare_arrays(c, exp_c, "c (one context vector per decoder step)", hints=[
        (exp_e @ annotations, "the annotations were weighted by the raw scores e; use the weights alpha."),
        (np.tile(annotations.mean(axis=0), (T, 1)),
         "c is the plain average of the annotations: weight them by alpha."),
        (np.tile(annotations.sum(axis=0), (T, 1)), "c is the plain sum of the annotations: weight them by alpha."),
    ])
    passed(f"scores, weights and context vectors all match for {T} decoder steps over {S} source positions.")
