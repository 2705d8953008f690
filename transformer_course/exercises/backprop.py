"""Checks for appendix A (backpropagation by hand): the backward passes of softmax, of LayerNorm, of masked
scaled dot-product attention and of label-smoothed cross-entropy, and the softmax's backward written one
primitive at a time (`check_softmax_walk`, which names the first wrong line of the walk); and the linear layer
and the embedding look-up (`check_linear_backward`, `check_embedding_backward`).

Each check calls the learner's function on small fixed float64 inputs, compares it with a reference written
out here (not the package's, which the appendix is teaching), and recognises the usual mistakes: a missing
correction term, a sum or mean over the wrong axis, a sign error, a forgotten gamma or 1/sigma factor.
When the answer matches none of them, it reports two properties every correct answer has (the rows of the
gradient sum to zero; it is orthogonal to the output / to the normalised input), which often shows where to
look. The linear and embedding checks instead compare with the package's backward, itself confirmed inside the
check by central differences, and name the transposed weight, the bias gradient not summed over every position,
and the repeated token rows overwritten instead of accumulated. The capstone, `check_encoder_layer_backward`,
checks a whole pre-LN encoder layer composed from those backward passes against the package's
`encoder_layer_backward` and central differences, and names a missing residual gradient and a LayerNorm
back-propagated with the wrong gradient or the wrong cache. `check_merge_heads_backward` checks the gradient of
merging the heads against the package's and names a reshape without its transpose, the wrong axes transposed,
D split as (Dh, H), and an answer in the shape of the merge's output.
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
    split_arrays,
)

__all__ = ["check_softmax_backward", "check_layernorm_backward", "check_attention_backward",
           "check_label_smoothing_backward", "check_softmax_walk", "check_linear_backward",
           "check_embedding_backward", "check_encoder_layer_backward", "check_merge_heads_backward"]


# ----------------------------------------------------------------------------------------------------------
# references (float64) and the wrong answers that common mistakes produce
# ----------------------------------------------------------------------------------------------------------
def _softmax_backward(dout, y, axis=-1, sign=1.0, correction=True):
    """dx = y * (dout - sum(dout * y)): the Jacobian diag(y) - y y^T applied to dout."""
    inner = (dout * y).sum(axis=axis, keepdims=True) if correction else 0.0
    return sign * y * (dout - inner)


def _layernorm_parts(x, eps, axis=-1):
    mean = x.mean(axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    return (x - mean) * rstd, rstd


def _layernorm_backward(dout, x, gamma, eps=1e-5, axis=-1, mean_term=True, var_term=True, sign=1.0,
                        use_gamma=True, use_rstd=True):
    """dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dout * gamma, means over the feature axis."""
    xhat, rstd = _layernorm_parts(x, eps)
    g = dout * gamma if use_gamma else dout
    out = g.copy()
    if mean_term:
        out = out - sign * g.mean(axis, keepdims=True)
    if var_term:
        out = out - sign * xhat * (g * xhat).mean(axis, keepdims=True)
    return out * rstd if use_rstd else out




def _explain_rows(got, name, other=None, other_name="", why=""):
    """Fallback feedback: the invariants every correct answer satisfies, and which of them fails.

    Rows of dx sum to 0 for both layers (adding a constant to a row of x changes nothing); for LayerNorm they
    are also (up to eps) orthogonal to xhat (scaling a row's deviations changes nothing).
    """
    facts = []
    row_sums = np.abs(got.sum(-1)).max()
    if row_sums > 1e-8:
        facts.append(f"each row of {name} should sum to 0 (adding a constant to a row of x does not change the "
                     f"output), but the largest |row sum| is {row_sums:.3g}")
    if other is not None:
        dots = np.abs((got * other).sum(-1)).max()
        if dots > 1e-4:
            facts.append(f"each row of {name} should be orthogonal to the matching row of {other_name} ({why}), "
                         f"but the largest |dot product| is {dots:.3g}")
    return "; ".join(facts)


# ----------------------------------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------------------------------
@exercise_check
def check_softmax_backward(fn):
    """Check `fn(dout, y) -> dx`, the gradient through y = softmax(x) over the LAST axis.

    dout and y have shape (B, T, V); y's rows sum to 1. dx must have the same shape.
    """
    rng = np.random.default_rng(1706)
    B, T, V = 2, 3, 5                                    # T != V, so a wrong axis gives a wrong answer
    y = softmax(rng.normal(size=(B, T, V)) * 1.5)      # (B, T, V)
    dout = rng.normal(size=(B, T, V))                   # (B, T, V)
    got = call_learner(fn, dout, y)
    expected = _softmax_backward(dout, y)
    got_arr = as_numpy(got, "dx")
    if got_arr.shape == (B, T, V) and not np.allclose(got_arr, expected, atol=1e-8):
        hints = [
            (_softmax_backward(dout, y, correction=False),
             "you returned y * dout, the diagonal of the Jacobian only. Every output y_j depends on every input "
             "x_i (through the normalising sum), so subtract the term y * sum(dout * y)."),
            (_softmax_backward(dout, y, sign=-1.0),
             "the sign is flipped: dx = y * (dout - sum(dout * y)), not y * (sum(dout * y) - dout)."),
            (_softmax_backward(dout, y, axis=-2),
             "the sum ran over axis -2 (the T axis); the softmax normalised over the LAST axis, so sum over "
             "axis=-1 with keepdims=True."),
            (_softmax_backward(dout, y, axis=0),
             "the sum ran over axis 0 (the batch); the softmax normalised over the LAST axis, so sum over "
             "axis=-1 with keepdims=True."),
            (dout - (dout * y).sum(-1, keepdims=True),
             "the leading factor y is missing: dx_i = y_i * (dout_i - sum_j dout_j y_j)."),
            (y * (dout - dout.sum(-1, keepdims=True)),
             "the correction term must weight dout by y: sum(dout * y, axis=-1), not sum(dout)."),
            (np.einsum("btij,btj->bti", y[..., :, None] * y[..., None, :], dout),
             "you applied only the y y^T part of the Jacobian; the full Jacobian is diag(y) - y y^T."),
        ]
        for wrong, explanation in hints:
            if np.allclose(got_arr, wrong, atol=1e-8):
                raise ExerciseError(f"dx is not right yet: {explanation}")
        detail = _explain_rows(got_arr, "dx")
        if detail:
            raise ExerciseError(f"dx is not right yet: {detail}.")
    compare_arrays(got, expected, "dx", atol=1e-8, rtol=1e-6)
    return passed("dx = y * (dout - sum(dout * y, axis=-1)), the softmax Jacobian applied without building it.")


@exercise_check
def check_layernorm_backward(fn):
    """Check `fn(dout, x, gamma, eps_ln=1e-5) -> dx` for out = gamma * (x - mean) / sqrt(var + eps_ln) + beta.

    Means and the (biased) variance are over the LAST axis. dout and x: (B, T, D); gamma: (D,).
    """
    rng = np.random.default_rng(2016)
    B, T, D = 2, 3, 6                                    # T != D, so a wrong axis gives a wrong answer
    x = rng.normal(size=(B, T, D)) * 2.0 + 0.5          # (B, T, D): not already normalised
    gamma = rng.uniform(0.5, 1.5, size=D)               # (D,): not 1, so forgetting it is visible
    dout = rng.normal(size=(B, T, D))                   # (B, T, D)
    eps = 1e-5
    got = call_learner(fn, dout, x, gamma, eps)            # positional: any name for eps works
    expected = _layernorm_backward(dout, x, gamma, eps)
    got_arr = as_numpy(got, "dx")
    if got_arr.shape == (B, T, D) and not np.allclose(got_arr, expected, atol=1e-8):
        hints = [
            (_layernorm_backward(dout, x, gamma, eps, mean_term=False, var_term=False),
             "you treated the mean and the variance as constants (dx = gamma * dout / sigma_tilde). Both depend on "
             "every x in the row: subtract the mean term mean(dxhat) and the variance term xhat * mean(dxhat * xhat), "
             "with dxhat = dout * gamma."),
            (_layernorm_backward(dout, x, gamma, eps, mean_term=False),
             "the mean correction is missing: subtract mean(dxhat, axis=-1) (dxhat = dout * gamma), the gradient that "
             "flows through the row mean mu."),
            (_layernorm_backward(dout, x, gamma, eps, var_term=False),
             "the variance correction is missing: subtract xhat * mean(dxhat * xhat, axis=-1) (dxhat = dout * gamma), "
             "the gradient that flows through sigma_tilde."),
            (_layernorm_backward(dout, x, gamma, eps, sign=-1.0),
             "a sign error: the two correction terms are SUBTRACTED, "
             "dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sigma_tilde."),
            (_layernorm_backward(dout, x, gamma, eps, axis=-2),
             "the correction means ran over axis -2 (the T axis); LayerNorm normalises over the LAST axis "
             "(the features), so take the means over axis=-1 with keepdims=True."),
            (_layernorm_backward(dout, x, gamma, eps, axis=0),
             "the correction means ran over axis 0 (the batch): that is batch norm's backward. LayerNorm "
             "normalises over the LAST axis, so use axis=-1 with keepdims=True."),
            (_layernorm_backward(dout, x, gamma, eps, use_gamma=False),
             "gamma is missing: the gradient reaching xhat is dxhat = dout * gamma, and the corrections use "
             "dxhat too."),
            (_layernorm_backward(dout, x, gamma, eps, use_rstd=False),
             "the final factor 1 / sqrt(var + eps_ln) is missing: xhat = (x - mean) / sigma_tilde, so every term "
             "of dx is divided by sigma_tilde."),
            (_layernorm_backward(dout, x, gamma, eps) * D,
             "dx is D times too large: the corrections are MEANS over the D features (sum / D), not sums."),
        ]
        for wrong, explanation in hints:
            if np.allclose(got_arr, wrong, atol=1e-8):
                raise ExerciseError(f"dx is not right yet: {explanation}")
        xhat, _ = _layernorm_parts(x, eps)
        detail = _explain_rows(got_arr, "dx", xhat, "xhat",
                               "scaling a row's deviations from its mean does not change xhat")
        if detail:
            raise ExerciseError(f"dx is not right yet: {detail}.")
    compare_arrays(got, expected, "dx", atol=1e-8, rtol=1e-6)
    return passed("dx = (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)) / sigma_tilde with dxhat = dout * gamma: "
                  "both corrections.")


# ----------------------------------------------------------------------------------------------------------
# masked scaled dot-product attention
# ----------------------------------------------------------------------------------------------------------
def _attention_backward(dout, q, k, v, mask, use_mask=True, forward_scale=True, backward_scale=-0.5,
                        dv_transposed=True, da_transposed=False, dq_transposed=False, dk_transposed=True,
                        correction=True, axis=-1):
    """(dq, dk, dv) of out = softmax(mask(q k^T / sqrt(Dh))) v; the keywords produce the common mistakes.

    backward_scale is the power of Dh in the backward of the scores: -0.5 is right (1 / sqrt(Dh)), 0 forgets
    it, 0.5 multiplies by sqrt(Dh). The *_transposed flags say whether a product uses the transpose.
    """
    Dh = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2)                                      # (B, T, T)
    if forward_scale:
        scores = scores / math.sqrt(Dh)
    if use_mask:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)                                                # (B, T, T)
    weights_t = np.swapaxes(weights, -1, -2)                                 # (B, T, T)
    dv = (weights_t if dv_transposed else weights) @ dout                    # (B, T, Dh)
    dweights = dout @ np.swapaxes(v, -1, -2)                                 # (B, T, T)
    if da_transposed:
        dweights = np.swapaxes(dweights, -1, -2)
    inner = (dweights * weights).sum(axis=axis, keepdims=True) if correction else 0.0
    dscores = weights * (dweights - inner) * Dh ** backward_scale            # (B, T, T)
    dscores_t = np.swapaxes(dscores, -1, -2)                                 # (B, T, T)
    dq = (dscores_t if dq_transposed else dscores) @ k                       # (B, T, Dh)
    dk = (dscores_t if dk_transposed else dscores) @ q                       # (B, T, Dh)
    return dq, dk, dv


_ATTENTION_MISTAKES = [
    (dict(use_mask=False),
     "gradient leaks to masked keys: the mask was not applied. Set the masked scores to -inf before the softmax; "
     "their weights are then exactly 0, and so are the gradients that reach those keys and values."),
    (dict(forward_scale=False),
     "the forward pass forgot 1 / sqrt(Dh): the weights are softmax(q k^T / sqrt(Dh)), so recompute them from "
     "the scaled scores."),
    (dict(backward_scale=0.0),
     "the factor 1 / sqrt(Dh) is missing: the scores were q k^T / sqrt(Dh), so the backward of that product "
     "carries it too: dq = dscores @ k / sqrt(Dh), dk = dscores^T @ q / sqrt(Dh)."),
    (dict(backward_scale=0.5),
     "you multiplied by sqrt(Dh) where the forward divided by it: dq = dscores @ k / sqrt(Dh), "
     "dk = dscores^T @ q / sqrt(Dh)."),
    (dict(backward_scale=-1.0),
     "you divided by Dh; the scores were divided by its SQUARE ROOT, so divide by sqrt(Dh)."),
    (dict(dv_transposed=False),
     "a product is not transposed: dv = weights^T @ dout (value j collects the output gradient of every query i, "
     "weighted by weights[i, j]), not weights @ dout."),
    (dict(da_transposed=True),
     "the gradient of the weights is transposed: it is dout @ v^T (row i: query i, column j: key j)."),
    (dict(dk_transposed=False),
     "a product is not transposed: dk = dscores^T @ q / sqrt(Dh) (key j collects the gradients of column j of "
     "the scores), not dscores @ q."),
    (dict(dq_transposed=True),
     "a product is transposed: dq = dscores @ k / sqrt(Dh) (query i owns row i of the scores), not "
     "dscores^T @ k."),
    (dict(correction=False),
     "the softmax backward is incomplete: dscores = weights * (dweights - sum(dweights * weights, axis=-1)); you "
     "kept only the diagonal of its Jacobian, weights * dweights."),
    (dict(axis=-2),
     "the softmax backward summed over axis -2 (the queries); each query's weights sum to 1 over the keys, so "
     "sum over axis=-1 with keepdims=True."),
]


@exercise_check
def check_attention_backward(fn):
    """Check `fn(dout, q, k, v, mask) -> (dq, dk, dv)` for out = softmax(q k^T / sqrt(Dh), masked) v.

    dout, q, k, v: (B, T, Dh); mask: (B, T, T) boolean, True = may attend (no row is fully masked).
    dq, dk, dv: (B, T, Dh). They are checked in the reverse order of the forward: dv, then dk, then dq.
    """
    rng = np.random.default_rng(1986)
    B, T, Dh = 2, 5, 4                                   # T != Dh: a product of the wrong arrays fails on shapes
    q = rng.normal(size=(B, T, Dh))                      # (B, T, Dh)
    k = rng.normal(size=(B, T, Dh))                      # (B, T, Dh)
    v = rng.normal(size=(B, T, Dh))                      # (B, T, Dh)
    dout = rng.normal(size=(B, T, Dh))                   # (B, T, Dh)
    mask = np.tril(np.ones((T, T), dtype=bool))[None].repeat(B, axis=0)   # (B, T, T): causal
    mask[1, :, 3:] = False                               # sequence 1: keys 3 and 4 are padding
    got = split_arrays(call_learner(fn, dout, q, k, v, mask), ("dq", "dk", "dv"), "your function",
                       "the three gradients, in that order")
    expected = _attention_backward(dout, q, k, v, mask)
    wrongs = [(_attention_backward(dout, q, k, v, mask, **kw), why) for kw, why in _ATTENTION_MISTAKES]
    for i, name in ((2, "dv"), (1, "dk"), (0, "dq")):
        if got[i].shape == expected[i].shape and not np.allclose(got[i], expected[i], atol=1e-8):
            for wrong, why in wrongs:
                if np.allclose(got[i], wrong[i], atol=1e-8):
                    raise ExerciseError(f"{name} is not right yet: {why}")
            leak = np.abs(got[i][1, 3:]).max()           # rows of the two padded keys of sequence 1
            if name in ("dk", "dv") and leak > 1e-12:
                raise ExerciseError(f"{name} is not right yet: gradient leaks to masked keys. Keys 3 and 4 of "
                                    f"sequence 1 are masked for every query, so their rows of {name} must be 0, "
                                    f"but one entry is {leak:.3g}.")
            key_sum = np.abs(got[i].sum(axis=1)).max()   # (B, Dh) summed over the keys
            if name == "dk" and key_sum > 1e-8:
                raise ExerciseError("dk is not right yet: summed over the keys it should be 0 (adding one vector "
                                    "to every key shifts all of a query's scores by the same amount, which the "
                                    f"softmax ignores), but the largest |sum| is {key_sum:.3g}.")
        compare_arrays(got[i], expected[i], name, atol=1e-8, rtol=1e-6)
    return passed("dv = A^T dout, dA = dout v^T, the softmax backward, then dq = dZ k / sqrt(Dh) and "
                  "dk = dZ^T q / sqrt(Dh); masked keys get no gradient.")


# ----------------------------------------------------------------------------------------------------------
# cross-entropy with label smoothing
# ----------------------------------------------------------------------------------------------------------
def _label_smoothing_backward(logits, targets, eps_ls, pad_id, smooth="V", zero_pad=True, denom="real",
                              sign=1.0, axis=-1, mask_pad_id=None):
    """dlogits of the mean over real tokens of -sum_w q_ls(w) log p_w, q_ls = (1 - eps_ls) [w = y] + eps_ls / V.

    The keywords produce the common mistakes: smooth="none" (one-hot), "V-1" (eps_ls over the V - 1 wrong
    classes), "off-target" (eps_ls / V only off the target, so q_ls sums to 1 - eps_ls / V); denom "all"
    (B * T) or "none"; zero_pad=False; sign=-1; axis (the softmax's); mask_pad_id (padding taken to be that id).
    """
    B, T, V = logits.shape
    p = softmax(logits, axis=axis)                                           # (B, T, V)
    one_hot = np.eye(V)[targets]                                             # (B, T, V)
    if smooth == "V":
        q = (1.0 - eps_ls) * one_hot + eps_ls / V
    elif smooth == "V-1":
        q = (1.0 - eps_ls) * one_hot + eps_ls / (V - 1) * (1.0 - one_hot)
    elif smooth == "off-target":
        q = (1.0 - eps_ls) * one_hot + eps_ls / V * (1.0 - one_hot)
    else:
        q = one_hot
    keep = targets != (pad_id if mask_pad_id is None else mask_pad_id)       # (B, T)
    n = {"real": max(int(keep.sum()), 1), "all": B * T, "none": 1}[denom]
    grad = sign * (p - q) / n                                                # (B, T, V)
    return grad * keep[..., None] if zero_pad else grad


_LABEL_SMOOTHING_MISTAKES = [
    (dict(smooth="none"),
     "this is the gradient for a one-hot target: eps_ls was ignored. The target is q_ls = (1 - eps_ls) on the "
     "correct class plus eps_ls / V on every class, so dlogits = (p - q_ls) / n_tok."),
    (dict(smooth="V-1"),
     "you spread eps_ls over the V - 1 wrong classes. This package (like PyTorch) spreads it over all V classes, "
     "the correct one included: q_ls = 1 - eps_ls + eps_ls / V on the target, eps_ls / V elsewhere."),
    (dict(smooth="off-target"),
     "the target class also receives its share eps_ls / V: q_ls = 1 - eps_ls + eps_ls / V there, so that q_ls "
     "sums to 1."),
    (dict(sign=-1.0),
     "the sign is flipped: dlogits = (p - q_ls) / n_tok, probabilities minus targets (the target's logit must go "
     "up to lower the loss, so its gradient is negative)."),
    (dict(zero_pad=False, denom="all"),
     "padding took part: you averaged over all B * T positions. Padded positions are not in the loss: zero "
     "their rows and divide by n_tok, the number of real (non-pad) targets."),
    (dict(zero_pad=False),
     "the rows of padded positions must be 0: they do not enter the loss. Multiply by (targets != pad_id)."),
    (dict(denom="all"),
     "you divided by all B * T positions; the loss is the mean over the n_tok real (non-pad) targets, so "
     "divide by n_tok = (targets != pad_id).sum()."),
    (dict(denom="none"),
     "the division by n_tok is missing: the loss is a MEAN over the n_tok real targets, so every row of "
     "dlogits is divided by n_tok."),
    (dict(axis=-2),
     "the softmax ran over axis -2 (the positions T); p is a distribution over the vocabulary, the LAST axis."),
    (dict(axis=0),
     "the softmax ran over axis 0 (the batch); p is a distribution over the vocabulary, the LAST axis."),
    (dict(mask_pad_id=0),
     "padding was taken to be id 0; use the argument pad_id (here it is not 0, and id 0 is a real token)."),
]


@exercise_check
def check_label_smoothing_backward(fn):
    """Check `fn(logits, targets, eps_ls, pad_id) -> dlogits` for the label-smoothed cross-entropy.

    The loss is the mean over the n_tok real targets (targets != pad_id) of -sum_w q_ls(w) log softmax(logits)_w,
    with q_ls = 1 - eps_ls + eps_ls / V on the target and eps_ls / V on every other class. logits: (B, T, V)
    floats; targets: (B, T) ints; dlogits: (B, T, V). Two inputs of different sizes are checked.
    """
    rng = np.random.default_rng(2015)
    cases = []
    for B, T, V, eps_ls, pad_id in ((2, 3, 5, 0.1, 0), (3, 4, 7, 0.2, 3)):   # T != V: a wrong axis fails
        logits = rng.normal(size=(B, T, V)) * 2.0                            # (B, T, V)
        targets = rng.integers(0, V, size=(B, T))                            # (B, T)
        targets[targets == pad_id] = (pad_id + 1) % V                        # no accidental padding ...
        targets[0, 0] = 0 if pad_id else 1                                   # (id 0 is real when pad_id != 0)
        targets[1, T - 1:] = pad_id                                          # ... only at the end of sequence 1
        if B > 2:
            targets[2, T - 2:] = pad_id                                      # and of sequence 2
        cases.append((logits, targets, eps_ls, pad_id))
    for n, (logits, targets, eps_ls, pad_id) in enumerate(cases):
        B, T, V = logits.shape
        where = (f"on input {n + 1} (B={B}, T={T}, V={V}, eps_ls={eps_ls}, pad_id={pad_id}, "
                 f"n_tok={int((targets != pad_id).sum())})")
        got = as_numpy(call_learner(fn, logits, targets, eps_ls, pad_id), "dlogits")
        expected = _label_smoothing_backward(logits, targets, eps_ls, pad_id)
        hints = [(_label_smoothing_backward(logits, targets, eps_ls, pad_id, **kw), why)
                 for kw, why in _LABEL_SMOOTHING_MISTAKES]
        known = [expected] + [wrong for wrong, _ in hints]
        if got.shape == expected.shape and not any(np.allclose(got, a, atol=1e-10, rtol=1e-7) for a in known):
            # no known mistake: say which property of a correct answer fails, before the generic message
            keep = targets != pad_id
            pad_rows = np.abs(got[~keep]).max()
            if pad_rows > 0:
                raise ExerciseError(f"dlogits is not right yet {where}: the rows of padded positions must be 0, "
                                    f"but one entry is {pad_rows:.3g}.")
            row_sums = np.abs(got[keep].sum(-1)).max()
            if row_sums > 1e-10:
                raise ExerciseError(f"dlogits is not right yet {where}: each real row should sum to 0 (p and q_ls "
                                    f"both sum to 1), but the largest |row sum| is {row_sums:.3g}.")
        compare_arrays(got, expected, f"dlogits {where}", atol=1e-10, rtol=1e-7, hints=hints)
    return passed("dlogits = (softmax(logits) - q_ls) / n_tok at real targets and 0 at padding, with "
                  "q_ls = (1 - eps_ls) one_hot + eps_ls / V.")


# ----------------------------------------------------------------------------------------------------------
# softmax, primitive by primitive (the backprop-ninja style walk)
# ----------------------------------------------------------------------------------------------------------
_WALK_KEYS = ("dr", "ds", "de", "dz", "dm", "dx")      # checked in this order: the reverse of the forward pass
_ROW_KEYS = ("dr", "ds", "dm")                         # gradients of one number per row: shape (B, T, 1)
_WALK_WHAT = {"dr": "r = 1 / s", "ds": "s = sum(e)", "de": "e = exp(z)", "dz": "z = x - m", "dm": "m = max(x)",
              "dx": "x"}


def _softmax_walk(dout, x):
    """The forward pass in primitives and every intermediate gradient of the backward walk, as a dict."""
    m = x.max(axis=-1, keepdims=True)                    # (B, T, 1)
    z = x - m                                            # (B, T, V)
    e = np.exp(z)                                        # (B, T, V)
    s = e.sum(axis=-1, keepdims=True)                    # (B, T, 1)
    r = 1.0 / s                                          # (B, T, 1)
    dr = (dout * e).sum(axis=-1, keepdims=True)          # (B, T, 1): p = e * r, the r side (r is shared)
    ds = -dr / s ** 2                                    # (B, T, 1): r = 1 / s
    de = dout * r + ds                                   # (B, T, V): both uses of e, p = e * r and s = sum(e)
    dz = de * e                                          # (B, T, V): e = exp(z)
    dm = -dz.sum(axis=-1, keepdims=True)                 # (B, T, 1): z = x - m, the m side
    dx = dz + (x == m) * dm                              # (B, T, V): the x side, plus m = max(x)
    return {"m": m, "z": z, "e": e, "s": s, "r": r, "p": e * r,
            "dr": dr, "ds": ds, "de": de, "dz": dz, "dm": dm, "dx": dx}


def _walk_mistakes(dout, x, ref):
    """(wrong value, explanation) pairs per gradient: what the usual mistakes at that line produce."""
    e, s, r, z, p = ref["e"], ref["s"], ref["r"], ref["z"], ref["p"]
    dr, ds, de, dz = ref["dr"], ref["ds"], ref["de"], ref["dz"]
    return {
        "dr": [((dout * p).sum(-1, keepdims=True),
                "in p = e * r the factor next to r is e, not p: dr = sum(dout * e, axis=-1, keepdims=True)."),
               (dout.sum(-1, keepdims=True),
                "the gradient of r in p = e * r is dout times the OTHER factor, e: dr = sum(dout * e) over the row.")],
        "ds": [(dr / s ** 2, "the sign is flipped: d(1/s)/ds = -1/s**2, so ds = -dr / s**2."),
               (-dr / s, "d(1/s)/ds is -1/s**2, not -1/s: ds = -dr / s**2."),
               (-1.0 / s ** 2, "the chain rule multiplies the local derivative -1/s**2 by the gradient arriving "
                "from above, dr: ds = -dr / s**2."),
               (-dr * s ** 2, "you multiplied by s**2; the local derivative of 1/s is -1/s**2: ds = -dr / s**2.")],
        "de": [(dout * r, "e is used twice, in p = e * r and in s = sum(e): add the second use's gradient, ds "
                "copied to every entry of the row (the backward of a sum), to dout * r."),
               (np.broadcast_to(ds, e.shape), "the first use of e is missing: p = e * r gives dout * r, to which "
                "the sum adds ds."),
               (dout * r + ds * e, "the backward of s = sum(e) copies ds to every entry (each e_j enters the sum "
                "with weight 1): add ds, not ds * e."),
               (dout * r + ds / e.shape[-1], "s is a sum, not a mean: its backward copies ds unchanged, without "
                "1 / V.")],
        "dz": [(de, "the local derivative of exp is missing: d exp(z)/dz = exp(z) = e, so dz = de * e."),
               (de * z, "the derivative of exp(z) is exp(z) = e, not z: dz = de * e."),
               (de * np.exp(x), "e = exp(z) = exp(x - m), not exp(x): multiply by e, the array the forward pass "
                "computed.")],
        "dm": [],
        "dx": [(-dz, "the sign is flipped: z = x - m passes dz to x unchanged (it is m that gets the minus).")],
    }


@exercise_check
def check_softmax_walk(fn):
    """Check `fn(dout, x) -> dict` for the softmax over the LAST axis written as primitives:

        m = max(x) (keepdims), z = x - m, e = exp(z), s = sum(e) (keepdims), r = 1 / s, p = e * r.

    The dict holds the gradient of every intermediate: "dr", "ds", "dm" (B, T, 1) and "de", "dz", "dx" (B, T, V).
    They are checked in the order of the backward walk, dr, ds, de, dz, dm, dx; the first wrong one is named.
    """
    rng = np.random.default_rng(2022)
    B, T, V = 2, 3, 5                                    # T != V, so a wrong axis gives a wrong shape or value
    x = rng.normal(size=(B, T, V)) * 1.5                 # (B, T, V): one maximum per row (no ties)
    dout = rng.normal(size=(B, T, V))                    # (B, T, V)
    ref = _softmax_walk(dout, x)
    got = call_learner(fn, dout, x)
    if not isinstance(got, dict):
        raise ExerciseError(f"your function returned a {type(got).__name__}; it should return a dict with the keys "
                            f"{', '.join(_WALK_KEYS)}.")
    mistakes = _walk_mistakes(dout, x, ref)
    for key in _WALK_KEYS:
        if key not in got:
            raise ExerciseError(f'the dict has no key "{key}": return all of {", ".join(_WALK_KEYS)}.')
        value = as_numpy(got[key], key)
        what = f"{key} (the gradient of {_WALK_WHAT[key]})"
        if key in _ROW_KEYS and value.shape != (B, T, 1):
            if value.shape == (B, T, V):
                raise ExerciseError(f"{what} has shape {value.shape}, expected {(B, T, 1)}: it is one number per "
                                    "row, used by all V entries of the row, so by the sum rule its gradient is the "
                                    "SUM of theirs: .sum(axis=-1, keepdims=True).")
            if value.shape == (B, T):
                raise ExerciseError(f"{what} has shape {value.shape}, expected {(B, T, 1)}: sum with "
                                    "keepdims=True, so that it broadcasts against the (B, T, V) arrays.")
        compare_arrays(value, ref[key], what, atol=1e-10, rtol=1e-7, hints=mistakes[key])
    formula = ref["p"] * (dout - (dout * ref["p"]).sum(-1, keepdims=True))   # (B, T, V): the collapsed form
    assert np.allclose(ref["dx"], formula, atol=1e-12)
    return passed("every line of the walk. dm is 0 up to rounding (below 1e-10): shifting a row by its maximum "
                  "does not change p, so the max needs no gradient, and dx equals the formula "
                  "p * (dout - sum(dout * p)).")


# ----------------------------------------------------------------------------------------------------------
# the linear layer and the embedding: checked against the package's backward AND central differences
# ----------------------------------------------------------------------------------------------------------
def _central_differences(loss, x, eps=1e-6):
    """d loss() / dx by central differences (x perturbed in place and restored), float64."""
    grad = np.zeros_like(x)
    flat_x, flat_g = x.reshape(-1), grad.reshape(-1)
    for i in range(x.size):
        old = flat_x[i]
        flat_x[i] = old + eps
        plus = loss()
        flat_x[i] = old - eps
        flat_g[i] = (plus - loss()) / (2 * eps)
        flat_x[i] = old
    return grad


def _linear_case(rng, B, T, D_in, D_out):
    """Inputs of one linear check and its expected (dx, dW, db): the package's backward, confirmed here by
    central differences of L = sum(out * dout) (so a bug in the package could not pass a learner's bug)."""
    from transformer_course.numpy import linear_backward, linear_forward

    x = rng.normal(size=(B, T, D_in))                    # (B, T, D_in)
    W = rng.normal(size=(D_in, D_out))                   # (D_in, D_out): stored (in, out)
    b = rng.normal(size=D_out)                           # (D_out,)
    dout = rng.normal(size=(B, T, D_out))                # (B, T, D_out)
    expected = linear_backward(dout, linear_forward(x, W, b)[1])

    def loss():
        return float(((x @ W + b) * dout).sum())

    for arr, grad in zip((x, W, b), expected):
        assert np.allclose(_central_differences(loss, arr), grad, atol=1e-6), "package and finite differences differ"
    return x, W, dout, expected


@exercise_check
def check_linear_backward(fn):
    """Check `fn(dout, x, W) -> (dx, dW, db)` for out = x @ W + b.

    x: (B, T, D_in), W: (D_in, D_out) (stored in, out, as in the package), dout: (B, T, D_out).
    dx: (B, T, D_in), dW: (D_in, D_out), db: (D_out,). Two inputs: a square W (D_in = D_out, where a transposed
    product still runs) and a rectangular one. The expected gradients are the package's `linear_backward`,
    confirmed by central differences.
    """
    rng = np.random.default_rng(1958)
    for n, (B, T, D_in, D_out) in enumerate(((2, 3, 4, 4), (2, 3, 4, 5)), start=1):
        x, W, dout, (dx, dW, db) = _linear_case(rng, B, T, D_in, D_out)
        got = split_arrays(call_learner(fn, dout, x, W), ("dx", "dW", "db"), "your function",
                           "the gradients of x, W and b, in that order")
        where = f"input {n} (D_in = {D_in}, D_out = {D_out})"
        flat_d = dout.reshape(-1, D_out)                                           # (B*T, D_out)
        compare_arrays(got[0], dx, f"dx, {where},", atol=1e-8, rtol=1e-6, hints=[
            (dout @ W if D_in == D_out else None,                                  # only runs when W is square
             "the weight is not transposed: out = x @ W, so dx = dout @ W.T (shape (..., D_in))."),
            (dx / (B * T), "dx is divided by the number of positions: each position's dx is its own "
                           "dout @ W.T, nothing is averaged.")])
        if got[1].shape == (D_out, D_in) and np.allclose(got[1], dW.T, atol=1e-8):
            raise ExerciseError(f"dW, {where}, is transposed: dW = x.T @ dout (positions flattened), shape "
                                f"(D_in, D_out) like W, not dout.T @ x.")
        if got[1].shape == (B, D_in, D_out):
            raise ExerciseError(f"dW, {where}, has one matrix per batch entry {got[1].shape}: W is shared by every "
                                "position of every sequence, so sum over all of them: flatten x and dout to "
                                "(B*T, D) rows first, then dW = x.T @ dout.")
        compare_arrays(got[1], dW, f"dW, {where},", atol=1e-8, rtol=1e-6, hints=[
            (x[0].T @ dout[0], "only batch entry 0 contributed: W is used at every position of every sequence, "
                               "so dW sums over all B*T of them (flatten x and dout to rows first)."),
            (dW / (B * T), "dW is the SUM over positions, not the mean: L already averages where it should.")])
        if got[2].shape == (B, T, D_out) or got[2].shape == (T, D_out) or got[2].shape == (B, D_out):
            raise ExerciseError(f"db, {where}, has shape {got[2].shape}, expected {(D_out,)}: the bias was "
                                "broadcast to every position of every sequence in the forward pass, so its "
                                "gradient is dout summed over ALL leading axes: dout.reshape(-1, D_out).sum(axis=0).")
        compare_arrays(got[2], db, f"db, {where},", atol=1e-8, rtol=1e-6, hints=[
            (flat_d.mean(axis=0), "db is the SUM of dout over the positions, not the mean."),
            (dout[0].sum(axis=0), "only batch entry 0 contributed: sum dout over every leading axis.")])
    return passed("dx = dout @ W.T, dW = x.T @ dout and db = dout summed over every position (the sum rule): "
                  "the package's linear_backward and central differences agree with you.")


@exercise_check
def check_embedding_backward(fn):
    """Check `fn(dout, tokens, V) -> dE` for out = E[tokens] * sqrt(D) (the package's scaled look-up).

    tokens: (B, T) ids in [0, V), with repeats; dout: (B, T, D); dE: (V, D). The expected gradient is the
    package's `embedding_backward`, confirmed by central differences.
    """
    from transformer_course.numpy import embedding_backward, embedding_forward

    rng = np.random.default_rng(1603)
    V, D = 7, 4
    tokens = np.array([[3, 1, 3, 5], [3, 0, 1, 6]])     # (B=2, T=4): token 3 three times, token 1 twice; 2, 4 unused
    E = rng.normal(size=(V, D))                          # (V, D)
    dout = rng.normal(size=(2, 4, D))                    # (B, T, D)
    out, cache = embedding_forward(tokens, {"E": E})
    expected = embedding_backward(dout, cache)[1]["E"]   # (V, D)
    fd = _central_differences(lambda: float((embedding_forward(tokens, {"E": E})[0] * dout).sum()), E)
    assert np.allclose(fd, expected, atol=1e-6), "package and finite differences differ"
    got = as_numpy(call_learner(fn, dout, tokens, V), "dE")
    factor = math.sqrt(D)
    overwrite = np.zeros((V, D))
    overwrite[tokens.reshape(-1)] = dout.reshape(-1, D) * factor            # what dE[tokens] += ... does
    if got.shape == expected.shape and not np.allclose(got, expected, atol=1e-8):
        if np.allclose(got, overwrite, atol=1e-8) or np.allclose(got, overwrite / factor, atol=1e-8):
            raise ExerciseError("dE is not right yet: the rows of repeated tokens (3 appears three times, 1 twice) "
                                "hold ONE position's gradient instead of the sum of all of them. "
                                "`dE[tokens] += ...` is buffered: a repeated index is written once, not "
                                "accumulated. Use np.add.at(dE, tokens.reshape(-1), dout.reshape(-1, D) * sqrt(D)).")
        if np.allclose(got, expected / factor, atol=1e-8):
            raise ExerciseError("dE is sqrt(D) times too small: the forward pass multiplied E[tokens] by sqrt(D), "
                                "so the backward multiplies dout by sqrt(D) too.")
        if np.allclose(got, expected / D, atol=1e-8):
            raise ExerciseError("dE is not right yet: you divided by sqrt(D) where the forward pass multiplied "
                                "by it; multiply dout by sqrt(D).")
        unused = np.abs(got[[2, 4]]).max()
        if unused > 0:
            raise ExerciseError(f"dE is not right yet: tokens 2 and 4 do not occur in the batch, so their rows "
                                f"must be 0, but one entry is {unused:.3g}.")
    compare_arrays(got, expected, "dE", atol=1e-8, rtol=1e-6)
    return passed("each position's dout * sqrt(D) is added into the row of its token, repeats accumulated "
                  "(np.add.at): the package's embedding_backward and central differences agree with you.")


# ----------------------------------------------------------------------------------------------------------
# the capstone: a whole pre-LN encoder layer, composed from the backward passes of the appendix
# ----------------------------------------------------------------------------------------------------------
_ENCODER_BLOCKS = ("self_attn", "norm1", "ffn", "norm2")


def _encoder_layer_variant(dout, c, skip_ffn=False, skip_attn=False, norm_first_in_backward=False,
                           swap_norms=False, post_ln=False, blocks_reversed=False):
    """(dx, grads) of the pre-LN layer x1 = x + SelfAttn(LN1(x)), out = x1 + FFN(LN2(x1)) from the flat cache
    `c`; the keywords produce the common mistakes (skip_*: a block's identity path dropped;
    norm_first_in_backward: LayerNorm's backward applied to dout before the sublayer's; swap_norms: each
    LayerNorm back-propagated with the other's cache; post_ln: the post-LN block's backward; blocks_reversed:
    the attention block undone first)."""
    from transformer_course.numpy import feedforward_backward, layernorm_backward, self_attention_backward

    norm_1, norm_2 = (c["norm2"], c["norm1"]) if swap_norms else (c["norm1"], c["norm2"])

    def block(d, sublayer_backward, sub_cache, norm_cache, skip):
        if post_ln:                                          # out = LN(x + Sublayer(x)): the wrong block
            dsum, dnorm = layernorm_backward(d, norm_cache)  # (B, T, D)
            dh, dsub = sublayer_backward(dsum, sub_cache)    # (B, T, D)
            return dsum + dh, dnorm, dsub
        if norm_first_in_backward:
            dn, dnorm = layernorm_backward(d, norm_cache)    # (B, T, D): the wrong gradient goes in
            dbranch, dsub = sublayer_backward(dn, sub_cache)
        else:
            dh, dsub = sublayer_backward(d, sub_cache)       # (B, T, D): gradient at LN's output
            dbranch, dnorm = layernorm_backward(dh, norm_cache)   # (B, T, D): at LN's input
        return (dbranch if skip else d + dbranch), dnorm, dsub

    attn = (self_attention_backward, c["self_attn"], norm_1, skip_attn)
    ffn = (feedforward_backward, c["ffn"], norm_2, skip_ffn)
    if blocks_reversed:
        d, dnorm1, dattn = block(dout, *attn)
        dx, dnorm2, dffn = block(d, *ffn)
    else:
        d, dnorm2, dffn = block(dout, *ffn)
        dx, dnorm1, dattn = block(d, *attn)
    return dx, {"self_attn": dattn, "ffn": dffn, "norm1": dnorm1, "norm2": dnorm2}


_ENCODER_MISTAKES = [
    (dict(skip_ffn=True, skip_attn=True),
     "both residual gradients are missing: out = x1 + FFN(LN2(x1)) uses x1 twice, so by the sum rule dx1 = dout + "
     "(the gradient through LN2 and the FFN); the same for x in the attention block. Add the incoming gradient to "
     "the branch's."),
    (dict(skip_ffn=True),
     "the feed-forward block's residual gradient is missing: out = x1 + FFN(LN2(x1)), so dx1 = dout + (the "
     "gradient through the FFN and LN2), not that gradient alone. The identity path adds dout as it is."),
    (dict(skip_attn=True),
     "the attention block's residual gradient is missing: x1 = x + SelfAttn(LN1(x)), so dx = dx1 + (the gradient "
     "through the attention and LN1), not that gradient alone. The identity path adds dx1 as it is."),
    (dict(norm_first_in_backward=True),
     "LayerNorm's backward ran on the wrong gradient: in the forward the norm comes BEFORE the sublayer, so in "
     "the backward it comes AFTER it. Run the sublayer's backward on the incoming gradient first, then "
     "layernorm_backward on the gradient it returns (the gradient at the norm's output)."),
    (dict(swap_norms=True),
     "each LayerNorm was back-propagated with the other one's cache: cache['norm2'] holds the x-hat and 1/sigma "
     "of x1, the input of the feed-forward block's norm; cache['norm1'] those of x. Use the cache of the norm "
     "you are going through."),
    (dict(post_ln=True),
     "that is the post-LN block's backward (LayerNorm after the sum). This layer is pre-LN, "
     "out = x + Sublayer(LayerNorm(x)): the identity path skips the norm, dx = dout + layernorm_backward(dh)."),
    (dict(blocks_reversed=True),
     "the blocks were undone in the wrong order: the forward ran attention, then the feed-forward network, so "
     "the backward starts with the feed-forward block (its output is the layer's output) and ends with attention."),
]


def _encoder_layer_case():
    """A small pre-LN encoder layer in float64 with non-trivial biases, gains and a padded key; the package's
    forward, its backward (confirmed here by central differences) and the flat cache the learner receives."""
    from transformer_course.numpy import encoder_layer_backward, encoder_layer_forward, init_encoder_layer

    rng = np.random.default_rng(1762)
    B, T, D, H, F = 2, 4, 8, 2, 16
    params = init_encoder_layer(rng, D, H, F, dtype=np.float64)
    for block in params.values():                            # biases, gains and shifts away from 0 and 1
        for key in block:
            if key.startswith("b") or key == "beta":
                block[key] = rng.normal(size=block[key].shape) * 0.3
            elif key == "gamma":
                block[key] = rng.uniform(0.5, 1.5, size=block[key].shape)
    mask = np.ones((B, 1, T), dtype=bool)                    # (B, 1, T): every query sees the same keys
    mask[1, 0, -1] = False                                   # sentence 2 has a padded last position
    x = rng.normal(size=(B, T, D))                           # (B, T, D)
    dout = rng.normal(size=(B, T, D))                        # (B, T, D)
    _, cache = encoder_layer_forward(x, params, H, mask, norm_first=True)
    expected = encoder_layer_backward(dout, cache)           # (dx, grads)

    def loss():
        return float((encoder_layer_forward(x, params, H, mask, norm_first=True)[0] * dout).sum())

    for arr, grad in ((x, expected[0]), (params["norm1"]["gamma"], expected[1]["norm1"]["gamma"]),
                      (params["self_attn"]["W_q"], expected[1]["self_attn"]["W_q"]),
                      (params["ffn"]["b_1"], expected[1]["ffn"]["b_1"])):
        assert np.allclose(_central_differences(loss, arr), grad, atol=1e-6), "package and finite differences differ"
    flat = {"self_attn": cache["attn"]["sublayer"], "norm1": cache["attn"]["norm"],
            "ffn": cache["ffn"]["sublayer"], "norm2": cache["ffn"]["norm"]}
    return dout, flat, expected


def _same(got, wrong, name):
    """True when the learner's quantity `name` ("dx" or "self_attn", ...) equals the mistake's."""
    if name == "dx":
        return got[0].shape == wrong[0].shape and np.allclose(got[0], wrong[0], atol=1e-8)
    return all(np.shape(got[1][name][k]) == np.shape(v) and np.allclose(got[1][name][k], v, atol=1e-8)
               for k, v in wrong[1][name].items())


@exercise_check
def check_encoder_layer_backward(fn):
    """Check `fn(dout, cache) -> (dx, grads)` for the pre-LN encoder layer
    x1 = x + SelfAttn(LN1(x)), out = x1 + FFN(LN2(x1)).

    cache: {"self_attn", "norm1", "ffn", "norm2"}, the caches of the package's self_attention_forward,
    layernorm_forward and feedforward_forward; dout, dx: (B, T, D). grads: {"self_attn": {...}, "ffn": {...},
    "norm1": {...}, "norm2": {...}} shaped like the layer's parameters. The expected answer is the package's
    `encoder_layer_backward`, confirmed inside the check by central differences.
    """
    dout, flat, expected = _encoder_layer_case()
    wrongs = [(_encoder_layer_variant(dout, flat, **kw), why) for kw, why in _ENCODER_MISTAKES]
    got = call_learner(fn, dout, flat)
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[1], dict)):
        raise ExerciseError("return a pair (dx, grads), where grads is a dict with the keys "
                            f"{', '.join(map(repr, _ENCODER_BLOCKS))}.")
    dx, grads = as_numpy(got[0], "dx"), got[1]
    missing = [key for key in _ENCODER_BLOCKS if key not in grads]
    if missing:
        raise ExerciseError(f"grads has no {', '.join(map(repr, missing))}: return the gradients of every "
                            "sublayer and LayerNorm, keyed like the layer's parameters (layernorm_backward, "
                            "self_attention_backward and feedforward_backward each return theirs).")
    for name in _ENCODER_BLOCKS:
        for key in expected[1][name]:
            if key not in grads[name]:
                raise ExerciseError(f"grads[{name!r}] has no {key!r}: return the whole dict the backward "
                                    f"function of {name} returned.")
    got = (dx, {name: {k: as_numpy(grads[name][k], f"grads[{name!r}][{k!r}]") for k in expected[1][name]}
                for name in _ENCODER_BLOCKS})
    order = ("ffn", "norm2", "self_attn", "norm1", "dx")              # the order the backward computes them
    for name in order:
        if _same(got, expected, name):
            continue
        label = name if name == "dx" else f"grads[{name!r}]"
        for wrong, why in wrongs:                                     # a mistake that explains everything first,
            if all(_same(got, wrong, n) for n in order):
                raise ExerciseError(f"{label} is not right yet: {why}")
        for wrong, why in wrongs:                                     # then one that explains this quantity
            if _same(got, wrong, name):
                raise ExerciseError(f"{label} is not right yet: {why}")
        if name == "dx":
            compare_arrays(dx, expected[0], "dx", atol=1e-8, rtol=1e-6)
        for key, value in expected[1][name].items():
            compare_arrays(got[1][name][key], value, f"grads[{name!r}][{key!r}]", atol=1e-8, rtol=1e-6)
    return passed("the FFN block's backward, then the attention block's, each: the sublayer's backward, then "
                  "layernorm_backward on its input gradient, plus the identity path's gradient. The package's "
                  "encoder_layer_backward and central differences agree with you.")


# ----------------------------------------------------------------------------------------------------------
# merging the heads: the backward of a reshape and a transpose
# ----------------------------------------------------------------------------------------------------------
def _mha_identity_output(D, n_heads):
    """A float64 multi-head layer whose output projection is the identity (W_o = I, b_o = 0), so that the
    gradient reaching the merged heads is exactly the gradient of the layer's output."""
    from transformer_course.numpy import init_multi_head_attention

    params = init_multi_head_attention(np.random.default_rng(1990), D, n_heads, dtype=np.float64)
    params["W_o"], params["b_o"] = np.eye(D), np.zeros(D)
    return params


def _package_merge_backward(d_merged, n_heads):
    """d_heads (B, H, T, Dh) as the package's multi_head_attention_backward computes it from d_merged (B, T, D).

    The package writes the merge and its backward inline, so the array is recorded where it enters the
    attention's backward; it is then confirmed by central differences of the package's forward, with the
    attention's output replaced by the heads being perturbed (L = sum(out * d_merged), out = merge(heads)).
    """
    import unittest.mock

    import transformer_course.numpy.attention as attention_module

    B, T, D = d_merged.shape
    params = _mha_identity_output(D, n_heads)
    x = np.random.default_rng(1991).normal(size=(B, T, D))                   # (B, T, D)
    _, cache = attention_module.multi_head_attention_forward(x, x, params, n_heads)
    recorded = []
    original = attention_module.scaled_dot_product_attention_backward

    def record(d_heads, attn_cache):
        recorded.append(d_heads.copy())                                     # (B, H, T, Dh)
        return original(d_heads, attn_cache)

    with unittest.mock.patch.object(attention_module, "scaled_dot_product_attention_backward", record):
        attention_module.multi_head_attention_backward(d_merged, cache)
    d_heads = recorded[0]                                                   # (B, H, T, Dh)

    heads = np.random.default_rng(1992).normal(size=d_heads.shape)          # (B, H, T, Dh): perturbed below

    def loss():
        with unittest.mock.patch.object(attention_module, "scaled_dot_product_attention_forward",
                                        lambda *args, **kwargs: (heads.copy(), {"weights": None})):
            out = attention_module.multi_head_attention_forward(x, x, params, n_heads)[0]   # (B, T, D)
        return float((out * d_merged).sum())

    assert np.allclose(_central_differences(loss, heads), d_heads, atol=1e-6), "package and finite differences differ"
    return d_heads


def _heads_sizes(d_merged, n_heads):
    B, T, D = d_merged.shape
    return B, T, n_heads, D // n_heads


def _reshape_only(d_merged, n_heads):
    B, T, H, Dh = _heads_sizes(d_merged, n_heads)
    return d_merged.reshape(B, H, T, Dh)                                    # (B, H, T, Dh), entries scrambled


def _swap_t_and_dh(d_merged, n_heads):
    B, T, H, Dh = _heads_sizes(d_merged, n_heads)
    return d_merged.reshape(B, T, H, Dh).transpose(0, 2, 3, 1)              # (B, H, Dh, T)


def _interleaved(d_merged, n_heads):
    B, T, H, Dh = _heads_sizes(d_merged, n_heads)
    return d_merged.reshape(B, T, Dh, H).transpose(0, 3, 1, 2)              # (B, H, T, Dh), heads interleaved


def _split_without_transpose(d_merged, n_heads):
    B, T, H, Dh = _heads_sizes(d_merged, n_heads)
    return d_merged.reshape(B, T, H, Dh)                                    # (B, T, H, Dh)


def _merged_shape(d_merged, n_heads):
    return d_merged                                                         # (B, T, D): the forward's output shape


_MERGE_BACKWARD_MISTAKES = [
    (_reshape_only,
     "the shape is right but the entries are scrambled: a plain reshape of d_merged to (B, H, T, Dh) cuts its "
     "memory in the wrong places, so a head receives the gradients of other positions. The merge was a "
     "transpose THEN a reshape; undo them in reverse order: reshape to (B, T, H, Dh), then transpose axes 1 and 2."),
    (_swap_t_and_dh,
     "the wrong axes were transposed: the result is (B, H, Dh, T), with T and Dh swapped. After the reshape to "
     "(B, T, H, Dh), swap axes 1 and 2 only: transpose(0, 2, 1, 3)."),
    (_interleaved,
     "the heads are interleaved: D was split as (Dh, H), which gives head h the features h, h + H, h + 2H, ... "
     "The merge put each head's Dh features side by side, so split D as (H, Dh): reshape to (B, T, H, Dh)."),
    (_split_without_transpose,
     "the transpose is missing: (B, T, H, Dh) is the split stopped halfway. The heads had the head axis before "
     "the time axis, and so must their gradient: add .transpose(0, 2, 1, 3)."),
    (_merged_shape,
     "you returned the gradient in the shape of the merge's OUTPUT, (B, T, D). A gradient has the shape of what "
     "it differentiates: the merge's input, the heads (B, H, T, Dh)."),
]


@exercise_check
def check_merge_heads_backward(fn):
    """Check `fn(d_merged, n_heads) -> d_heads` for the merge heads (B, H, T, Dh) -> merged (B, T, D),
    merged = heads.transpose(0, 2, 1, 3).reshape(B, T, D) with D = H * Dh.

    d_merged: (B, T, D), the gradient at the merged heads; d_heads: (B, H, T, Dh). Two inputs of different
    sizes. The expected answer is the gradient the package's multi_head_attention_backward computes, confirmed
    inside the check by central differences of the package's forward.
    """
    rng = np.random.default_rng(1989)
    for n, (B, T, H, Dh) in enumerate(((2, 4, 3, 5), (1, 3, 2, 4)), start=1):   # B, T, H, Dh all different
        d_merged = rng.normal(size=(B, T, H * Dh))                          # (B, T, D)
        expected = _package_merge_backward(d_merged, H)                     # (B, H, T, Dh)
        where = f"input {n} (B={B}, T={T}, H={H}, Dh={Dh})"
        got = as_numpy(call_learner(fn, d_merged, H), f"d_heads, {where},")
        for mistake, why in _MERGE_BACKWARD_MISTAKES:
            wrong = mistake(d_merged, H)
            if got.shape == wrong.shape and np.allclose(got, wrong, atol=1e-12) and \
                    not (got.shape == expected.shape and np.allclose(got, expected, atol=1e-12)):
                raise ExerciseError(f"d_heads, {where}, is not right yet: {why}")
        if got.shape != expected.shape:
            raise ExerciseError(f"d_heads, {where}, has shape {got.shape}, expected (B, H, T, Dh) = "
                                f"{expected.shape}: the gradient of the heads has the shape of the heads.")
        compare_arrays(got, expected, f"d_heads, {where},", atol=1e-12, rtol=1e-12)
    return passed("d_heads = d_merged.reshape(B, T, H, Dh).transpose(0, 2, 1, 3): the backward of the merge is "
                  "the split. The package's multi_head_attention_backward and central differences agree with you.")
