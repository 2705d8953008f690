"""Checks for chapter 5 (multi-head attention): splitting into heads, merging them, and the whole layer.

The reshape/transpose that turns (B, T, D) into (B, H, T, Dh) is where most learners trip: a reshape straight to
(B, H, T, Dh) has the right shape and the wrong numbers, a reshape to (B, T, Dh, H) interleaves the heads. The
checks recognise those answers and say which step went wrong. References are written out here, independent of
the package's code that the chapter teaches.
"""
from __future__ import annotations

import math

import numpy as np

from ._feedback import ExerciseError, as_numpy, call_learner, compare_arrays, exercise_check, passed, softmax

__all__ = ["check_split_heads", "check_merge_heads", "check_multi_head_attention", "check_multi_head_loop"]


# ----------------------------------------------------------------------------------------------------------
# references (float64) and the wrong answers that common mistakes produce
# ----------------------------------------------------------------------------------------------------------
def _split(x, H):
    B, T, D = x.shape
    return x.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)   # (B, T, D) -> (B, T, H, Dh) -> (B, H, T, Dh)


def _merge(x):
    B, H, T, Dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)      # (B, H, T, Dh) -> (B, T, H, Dh) -> (B, T, D)


def _mha(x, params, H, scale_width=None, use_W_o=True, split=_split, merge=_merge):
    """Multi-head self-attention with (D, D) projections stored (in, out), biases included; returns out."""
    q = split(x @ params["W_q"] + params["b_q"], H)          # (B, H, T, Dh)
    k = split(x @ params["W_k"] + params["b_k"], H)          # (B, H, T, Dh)
    v = split(x @ params["W_v"] + params["b_v"], H)          # (B, H, T, Dh)
    width = q.shape[-1] if scale_width is None else scale_width
    weights = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(width))  # (B, H, T, T)
    heads = merge(weights @ v)                               # (B, T, D)
    return heads @ params["W_o"] + params["b_o"] if use_W_o else heads


def _layer_inputs(rng, B, T, D):
    """x (B, T, D) and a layer's (D, D) projections with biases, drawn from rng."""
    x = rng.normal(size=(B, T, D))
    params = {}
    for name in ("q", "k", "v", "o"):
        params[f"W_{name}"] = rng.normal(size=(D, D)) / math.sqrt(D)
        params[f"b_{name}"] = rng.normal(size=D) * 0.1
    return x, params


def _inputs(seed=5, B=2, T=3, D=8):
    return np.random.default_rng(seed).normal(size=(B, T, D))


# ----------------------------------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------------------------------
@exercise_check
def check_split_heads(fn):
    """Check `fn(x, n_heads) -> (B, H, T, Dh)`: head h holds columns h*Dh .. (h+1)*Dh - 1 of every position."""
    B, T, D, H = 2, 3, 8, 4
    Dh = D // H
    x = _inputs(B=B, T=T, D=D)
    got = as_numpy(call_learner(fn, x, H), "fn(x, n_heads)")
    expected = _split(x, H)
    if got.shape == (B, T, H, Dh):
        raise ExerciseError(f"fn(x, n_heads) has shape {got.shape} = (B, T, H, Dh): the reshape is right, but the "
                            "head axis must come before the time axis. Add `.transpose(0, 2, 1, 3)` to get "
                            f"(B, H, T, Dh) = {expected.shape}.")
    if got.shape == (B, H, Dh, T):
        raise ExerciseError(f"fn(x, n_heads) has shape {got.shape} = (B, H, Dh, T): the last two axes are swapped; "
                            "transpose with (0, 2, 1, 3), not (0, 2, 3, 1).")
    compare_arrays(got, expected, "fn(x, n_heads)", hints=[
        (x.reshape(B, H, T, Dh), "the shape is right but the numbers are scrambled: a reshape straight to (B, H, T, "
                                 "Dh) cuts the flat memory of x in the wrong places, mixing positions inside a "
                                 "head. Reshape to (B, T, H, Dh) first (split the last axis only), THEN transpose "
                                 "axes 1 and 2."),
        (x.reshape(B, T, Dh, H).transpose(0, 3, 1, 2), "the heads are interleaved: reshaping to (B, T, Dh, H) gives "
                                                       "head h the columns h, h+H, h+2H, ...; each head must own a "
                                                       "contiguous block of Dh columns: reshape to (B, T, H, Dh)."),
    ])
    # a second call with other sizes, so that hard-coded numbers are caught
    x2 = _inputs(seed=6, B=1, T=5, D=6)
    compare_arrays(as_numpy(call_learner(fn, x2, 3), "fn(x2, 3)"), _split(x2, 3), "fn(x2, 3) (B=1, T=5, D=6, H=3)")
    passed("(B, T, D) -> (B, T, H, Dh) -> (B, H, T, Dh), each head a contiguous block of Dh columns.")


@exercise_check
def check_merge_heads(fn):
    """Check `fn(x) -> (B, T, H*Dh)` for x of shape (B, H, T, Dh): the exact inverse of splitting the heads."""
    B, H, T, Dh = 2, 4, 3, 2
    x = np.random.default_rng(7).normal(size=(B, H, T, Dh))
    got = as_numpy(call_learner(fn, x), "fn(x)")
    expected = _merge(x)
    compare_arrays(got, expected, "fn(x)", hints=[
        (x.reshape(B, T, H * Dh), "the shape is right but positions are mixed: a reshape alone reads the heads' "
                                  "memory in (H, T) order. Transpose back to (B, T, H, Dh) first, then reshape to "
                                  "(B, T, D)."),
        (x.transpose(0, 2, 3, 1).reshape(B, T, H * Dh), "the heads are interleaved: transpose to (B, T, H, Dh) "
                                                        "(axes 0, 2, 1, 3) so that each head's Dh values stay "
                                                        "together before the reshape."),
    ])
    # a second call with other sizes, so that hard-coded numbers are caught
    x2 = np.random.default_rng(9).normal(size=(1, 3, 5, 2))
    compare_arrays(as_numpy(call_learner(fn, x2), "fn(x2)"), _merge(x2), "fn(x2) (B=1, H=3, T=5, Dh=2)")
    passed("(B, H, T, Dh) -> (B, T, H, Dh) -> (B, T, D): heads side by side, in order.")


@exercise_check
def check_multi_head_attention(fn):
    """Check `fn(x, params, n_heads) -> out (B, T, D)`: multi-head self-attention, no mask.

    params: W_q, W_k, W_v, W_o of shape (D, D) stored (in, out), biases b_q, b_k, b_v, b_o of shape (D,).
    """
    B, T, D, H = 2, 4, 8, 2
    x, params = _layer_inputs(np.random.default_rng(8), B=B, T=T, D=D)
    got = as_numpy(call_learner(fn, x, {k: v.copy() for k, v in params.items()}, H), "fn(x, params, n_heads)")
    expected = _mha(x, params, H)
    compare_arrays(got, expected, "out", hints=[
        (_mha(x, params, H, use_W_o=False), "the heads were concatenated but not mixed: finish with the output "
                                            "projection out = concat @ W_o + b_o."),
        (_mha(x, params, H, scale_width=D), "the scores were divided by sqrt(d_model); each head's scores are dot "
                                            "products of Dh-wide vectors: divide by sqrt(Dh) = sqrt(D / n_heads)."),
        (_mha(x, params, H, scale_width=1), "the scores were not scaled: divide by sqrt(Dh) = sqrt(D / n_heads)."),
        (_mha(x, params, H, split=lambda a, h: a.reshape(a.shape[0], h, a.shape[1], -1)),
         "the heads were made with a reshape straight to (B, H, T, Dh), which mixes positions; reshape to "
         "(B, T, H, Dh) and transpose axes 1 and 2."),
        (_mha(x, params, 1), "this is single-head attention over the full width: split the projected queries, "
                             "keys and values into n_heads heads of Dh = D / n_heads columns."),
    ])
    # a second call with other sizes (B=1, T=5, D=6, H=3), so that hard-coded numbers are caught
    x2, params2 = _layer_inputs(np.random.default_rng(10), B=1, T=5, D=6)
    got2 = as_numpy(call_learner(fn, x2, {k: v.copy() for k, v in params2.items()}, 3), "fn(x2, params2, 3)")
    compare_arrays(got2, _mha(x2, params2, 3), "fn(x2, params2, 3) (B=1, T=5, D=6, n_heads=3)")
    passed("split into heads, scaled dot-product attention per head, heads merged and projected by W_o.")


def _loop(x, params, H, order=None, scale_width=None, use_W_o=True, interleaved=False):
    """Multi-head self-attention written as a loop over heads, with the mistakes a loop invites; returns out."""
    B, T, D = x.shape
    Dh = D // H
    heads = []
    for m in range(H):
        cols = slice(m, D, H) if interleaved else slice(m * Dh, (m + 1) * Dh)   # head m's columns
        q, k, v = (x @ params[f"W_{n}"][:, cols] + params[f"b_{n}"][cols] for n in "qkv")   # (B, T, Dh) each
        width = Dh if scale_width is None else scale_width
        heads.append(softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(width)) @ v)            # (B, T, Dh)
    concat = np.concatenate([heads[m] for m in (order or range(H))], axis=-1)              # (B, T, D)
    return concat @ params["W_o"] + params["b_o"] if use_W_o else concat


@exercise_check
def check_multi_head_loop(fn):
    """Check `fn(x, params, n_heads) -> out (B, T, D)`, written as a loop over heads, against the package's layer.

    params as in `check_multi_head_attention`. The reference is the package's `multi_head_attention_forward`.
    """
    from transformer_course.numpy.attention import multi_head_attention_forward

    B, T, D, H = 2, 4, 8, 4
    x, params = _layer_inputs(np.random.default_rng(11), B=B, T=T, D=D)
    got = as_numpy(call_learner(fn, x, {k: v.copy() for k, v in params.items()}, H), "fn(x, params, n_heads)")
    expected = multi_head_attention_forward(x, x, params, n_heads=H)[0]
    compare_arrays(got, expected, "out", hints=[
        (_loop(x, params, H, order=range(H - 1, -1, -1)), "the heads were concatenated in reverse order: head m "
                                                          "must sit in columns m*Dh .. (m+1)*Dh - 1 of the "
                                                          "concatenation, where W_o's row block for head m reads it."),
        (_loop(x, params, H, use_W_o=False), "the heads were concatenated but not mixed: finish with the output "
                                             "projection out = concat @ W_o + b_o."),
        (_loop(x, params, H, scale_width=D), "the scores were divided by sqrt(D); each head's scores are dot "
                                             "products of Dh-wide vectors: divide by sqrt(Dh) = sqrt(D / n_heads)."),
        (_loop(x, params, H, scale_width=1), "the scores were not scaled: divide by sqrt(Dh) = sqrt(D / n_heads)."),
        (_loop(x, params, H, interleaved=True), "the heads got interleaved columns (m, m + H, ...); head m owns the "
                                                "contiguous block of columns m*Dh .. (m+1)*Dh - 1 of W_q, W_k, W_v."),
        (_loop(x, params, 1), "this is single-head attention over the full width: loop over n_heads heads, each "
                              "on its own Dh = D / n_heads columns."),
    ])
    # a second call with other sizes (B=1, T=5, D=6, H=3), so that hard-coded numbers are caught
    x2, params2 = _layer_inputs(np.random.default_rng(12), B=1, T=5, D=6)
    got2 = as_numpy(call_learner(fn, x2, {k: v.copy() for k, v in params2.items()}, 3), "fn(x2, params2, 3)")
    compare_arrays(got2, multi_head_attention_forward(x2, x2, params2, n_heads=3)[0],
                   "fn(x2, params2, 3) (B=1, T=5, D=6, n_heads=3)")
    passed("one single-head attention per column block, concatenated in order and mixed by W_o: equal to the "
           "package's multi_head_attention_forward.")
