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

__all__ = ["check_self_attention", "check_causal_mask", "check_causal_head"]


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

    # 2. a causal mask: position i may only look at positions 0..i
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
            (np.triu(np.ones((T, T), dtype=bool)), "the mask is transposed: query i (row i) may look at keys "
                                                   "0..i, which lie on and BELOW the diagonal (np.tril)."),
            (~expected, "the mask is inverted: it marks the future (the positions to hide) as True, but in this "
                        "course True means 'may attend', so the past and the present are True and the future False."),
            (np.tril(np.ones((T, T), dtype=bool), k=-1), "the diagonal is missing: a position may attend to "
                                                         "itself (use np.tril with k=0)."),
        ]
        compare_arrays(got, expected, f"fn({T})", hints=hints)
    passed("row i is True for keys 0..i and False for the future.")


def _head_weight(head, name: str, W: np.ndarray, torch):
    """Copy the check's W (D, d) into the learner's head.name: an nn.Linear (weight (d, D)) or a tensor (D, d)."""
    what = getattr(head, name, None)
    D, d = W.shape
    if isinstance(what, torch.nn.Linear):
        if what.bias is not None:
            raise ExerciseError(f"{name} is an nn.Linear with a bias: the head's projections have none "
                                f"(nn.Linear({D}, {d}, bias=False)).")
        if tuple(what.weight.shape) != (d, D):
            raise ExerciseError(f"{name}.weight has shape {tuple(what.weight.shape)}; nn.Linear(in, out) stores "
                                f"(out, in), so {name} = nn.Linear({D}, {d}, bias=False) has shape {(d, D)}.")
        target, value = what.weight, W.T
    elif isinstance(what, torch.Tensor):
        if tuple(what.shape) != (D, d):
            raise ExerciseError(f"{name} has shape {tuple(what.shape)}; as a parameter it should be {(D, d)}, so "
                                f"that x @ {name} maps (B, T, {D}) to (B, T, {d}).")
        target, value = what, W
    else:
        raise ExerciseError(f"the head has no {name}: make it an nn.Linear(d_model, ..., bias=False) or an "
                            "nn.Parameter of shape (d_model, ...), set in __init__ as self." + name + ".")
    with torch.no_grad():
        target.copy_(torch.as_tensor(value, dtype=target.dtype))


@exercise_check
def check_causal_head(cls):
    """Check `cls(d_model, d_k, d_v, max_len)`: one head of causal self-attention as a torch nn.Module.

    The module holds W_q, W_k (d_model -> d_k) and W_v (d_model -> d_v), each an nn.Linear without bias or an
    nn.Parameter of shape (d_model, d), and the causal mask (max_len, max_len) as a buffer (register_buffer).
    forward(x) takes x (B, T, d_model) with T <= max_len and returns (out (B, T, d_v), weights (B, T, T)).
    The check loads its own projection weights into the module and compares with a float64 reference.
    """
    import torch

    rng = np.random.default_rng(40)
    B, T, D, Dk, Dv, max_len = 2, 5, 6, 3, 4, 8
    x = rng.normal(size=(B, T, D))                       # (B, T, D)
    weights_in = {"W_q": rng.normal(size=(D, Dk)), "W_k": rng.normal(size=(D, Dk)), "W_v": rng.normal(size=(D, Dv))}

    head = call_learner(cls, D, Dk, Dv, max_len)
    if not isinstance(head, torch.nn.Module):
        raise ExerciseError(f"{getattr(cls, '__name__', 'cls')}(d_model, d_k, d_v, max_len) made a "
                            f"{type(head).__name__}; the head should be a torch.nn.Module subclass.")
    # 1. what the module holds: three projections, no other parameter, the mask as a buffer
    for name, W in weights_in.items():
        _head_weight(head, name, W, torch)
    n_expected = D * (2 * Dk + Dv)
    extra = {name: tuple(p.shape) for name, p in head.named_parameters()}
    if sum(p.numel() for p in head.parameters()) != n_expected:
        raise ExerciseError(f"the head has {sum(p.numel() for p in head.parameters())} trainable numbers, expected "
                            f"d_model (2 d_k + d_v) = {n_expected}; its parameters are {extra}. A bias, or a mask "
                            "made an nn.Parameter (the optimiser would change it), is one too many: keep the mask "
                            "with self.register_buffer('mask', ...).")
    square = [name for name, b in head.named_buffers() if b.shape[-2:] == (max_len, max_len)]
    if not square:
        raise ExerciseError(f"the head has no ({max_len}, {max_len}) buffer: build the causal mask once in "
                            "__init__ and keep it with self.register_buffer('mask', torch.tril(...)), so that it "
                            "moves with head.to(device) and is saved in the state_dict, but is not trained.")
    dtype = next(head.parameters()).dtype
    as_torch = lambda a: torch.as_tensor(a, dtype=dtype)   # noqa: E731

    # 2. a full-length sequence, then a shorter one (the buffer must be cut to T x T)
    call_learner(head, as_torch(rng.normal(size=(B, max_len, D))))
    try:
        result = call_learner(head, as_torch(x))
    except ExerciseError as err:
        raise ExerciseError(f"forward works with T = max_len = {max_len} but fails with T = {T}: cut the buffer to "
                            f"the sequence, self.mask[:T, :T]. ({err})") from err
    out, weights = split_out_weights(result, "head(x)")
    expected_out, expected_w = _self_attention(x, *weights_in.values(), mask=_causal(T))
    for got, expected, name in ((out, expected_out, "out"), (weights, expected_w, "weights")):
        if got.shape != expected.shape:
            compare_arrays(got, expected, f"{name} for x of shape (B, T, d_model) = {x.shape}")
    # 3. the mask: no weight on the future, rows that sum to 1, no output that moves when the future changes
    above = np.triu(np.ones((T, T), dtype=bool), k=1)     # (T, T): key after query
    if np.abs(weights[:, above]).max() > 1e-6:
        transposed = np.abs(weights[:, above.T]).max() <= 1e-6
        raise ExerciseError("the mask leaks the future: query i gives weight to keys j > i (above the diagonal). "
                            + ("The mask is transposed: keep the keys 0..i of row i, on and below the diagonal "
                               "(torch.tril). " if transposed else "")
                            + "Set the masked scores to -inf before the softmax (masked_fill(~mask, -inf)); "
                              "filling them with 0 leaves them exp(0) = 1.")
    # each row of weights is a distribution over the allowed keys
    sums = weights.sum(axis=-1)                            # (B, T)
    if not np.allclose(sums, 1.0, atol=1e-5):
        b, i = np.unravel_index(int(np.argmax(np.abs(sums - 1.0))), sums.shape)
        raise ExerciseError(f"the rows of weights do not sum to 1 (row {i} of sequence {b} sums to {sums[b, i]:.4f}). "
                            "Mask the scores before the softmax, not the weights after it, and take the softmax over "
                            "the keys (dim=-1).")
    x_future = x.copy()
    x_future[:, 3:] = rng.normal(size=x_future[:, 3:].shape)   # new tokens after position 2
    out_future = split_out_weights(call_learner(head, as_torch(x_future)), "head(x)")[0]   # (B, T, d_v)
    if not np.allclose(out_future[:, :3], out[:, :3], atol=1e-5):
        raise ExerciseError("the mask leaks the future: changing the tokens after position 2 changes the outputs at "
                            "positions 0..2, though the weights look causal; is out computed from the masked "
                            "weights, weights @ v?")
    # 4. the values
    compare_arrays(weights, expected_w, "weights", atol=1e-5, rtol=1e-4, hints=[
        (_self_attention(x, *weights_in.values(), mask=_causal(T), scale=1.0)[1],
         "the scores were not scaled: divide them by sqrt(d_k)."),
        (_self_attention(x, *weights_in.values(), mask=_causal(T), scale=1.0 / math.sqrt(D))[1],
         "the scores were divided by sqrt(d_model); the width that matters is d_k, the width of the queries."),
        (_self_attention(x, *weights_in.values(), mask=_causal(T), keys_with_q=True)[1],
         "the keys were made with W_q: k = W_k(x)."),
    ])
    compare_arrays(out, expected_out, "out", atol=1e-5, rtol=1e-4)
    passed("the head holds W_q, W_k, W_v and a causal buffer, its weights are causal rows that sum to 1, and its "
           "outputs match the reference.")
