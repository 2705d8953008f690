"""Attention in NumPy: six alignment score functions, the masked softmax, attention pooling, scaled dot-product
attention and multi-head attention, each with its backward pass.

Score functions map queries q (B, Tq, dq) and keys k (B, Tk, dk) to scores (B, Tq, Tk) (dot and scaled dot
also accept extra leading axes, e.g. heads). Like every layer of the package they return (scores, cache),
and their backward functions take (dscores, cache) and return the gradients of the inputs (and of W_a etc.,
as a dict). Learned projections go through `linear_forward` / `linear_backward`.
"""
from __future__ import annotations

import math

import numpy as np

from ..config import ATTENTION_POSITIONAL
from .dropout import dropout_backward, dropout_forward
from .functional import linear_backward, linear_forward, softmax_backward, xavier_uniform
from .masks import check_mask
from .positional import alibi_bias, rotary_positions_backward, rotary_positions_forward

__all__ = ["dot_scores_forward", "dot_scores_backward", "scaled_dot_scores_forward", "scaled_dot_scores_backward",
           "cosine_scores_forward", "cosine_scores_backward", "init_general_scores", "general_scores_forward",
           "general_scores_backward", "init_additive_scores", "additive_scores_forward", "additive_scores_backward",
           "init_location_scores", "location_scores_forward", "location_scores_backward", "masked_softmax",
           "masked_softmax_backward", "attention_pooling_forward", "attention_pooling_backward",
           "scaled_dot_product_attention_forward", "scaled_dot_product_attention_backward",
           "init_multi_head_attention", "multi_head_attention_forward", "multi_head_attention_backward",
           "self_attention_forward", "self_attention_backward"]


def _T(x: np.ndarray) -> np.ndarray:
    """Swap the last two axes: the batched transpose."""
    return x.swapaxes(-1, -2)


def _check_qk(q, k, same_width: bool) -> None:
    if not isinstance(q, np.ndarray) or q.ndim < 3:
        raise ValueError(f"q: expected shape (B, Tq, dq), got {getattr(q, 'shape', type(q).__name__)}")
    if not isinstance(k, np.ndarray) or k.ndim != q.ndim or k.shape[:-2] != q.shape[:-2]:
        raise ValueError(f"k: expected shape ({', '.join(map(str, q.shape[:-2]))}, Tk, dk), "
                         f"got {getattr(k, 'shape', type(k).__name__)}")
    if same_width and k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k: expected last axis {q.shape[-1]} (the width of q), got shape {k.shape}")


# ---------------------------------------------------------------- dot and scaled dot (Luong; Vaswani et al.)

def dot_scores_forward(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Luong's dot score q . k (needs dq == dk)."""
    _check_qk(q, k, same_width=True)
    scores = q @ _T(k)                                   # (B, Tq, d) @ (B, d, Tk) -> (B, Tq, Tk)
    return scores, (q, k)


def dot_scores_backward(dscores: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Returns (dq, dk)."""
    q, k = cache
    dq = dscores @ k                                     # (B, Tq, Tk) @ (B, Tk, d) -> (B, Tq, d)
    dk = _T(dscores) @ q                                 # (B, Tk, Tq) @ (B, Tq, d) -> (B, Tk, d)
    return dq, dk


def scaled_dot_scores_forward(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Vaswani et al.'s q . k / sqrt(d): keeps the scores' variance near 1 whatever the width d."""
    _check_qk(q, k, same_width=True)
    d = q.shape[-1]
    scores = q @ _T(k) / math.sqrt(d)                    # (B, Tq, Tk); math.sqrt keeps float32 float32
    return scores, (q, k)


def scaled_dot_scores_backward(dscores: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Returns (dq, dk)."""
    q, k = cache
    scale = 1.0 / math.sqrt(q.shape[-1])
    dq = dscores @ k * scale                             # (B, Tq, d)
    dk = _T(dscores) @ q * scale                         # (B, Tk, d)
    return dq, dk


# ---------------------------------------------------------------- content-based (cosine; Graves et al. 2014)

def cosine_scores_forward(q: np.ndarray, k: np.ndarray, eps: float = 1e-8) -> tuple[np.ndarray, tuple]:
    """The cosine of the angle between query and key (in [-1, 1]); eps guards against zero vectors."""
    _check_qk(q, k, same_width=True)
    q_norm = q / (np.linalg.norm(q, axis=-1, keepdims=True) + eps)  # (B, Tq, d)
    k_norm = k / (np.linalg.norm(k, axis=-1, keepdims=True) + eps)  # (B, Tk, d)
    scores = q_norm @ _T(k_norm)                         # (B, Tq, Tk)
    return scores, (q, k, q_norm, k_norm, eps)


def _normalise_backward(du: np.ndarray, x: np.ndarray, eps: float) -> np.ndarray:
    """Gradient through u = x / (|x| + eps): du/(|x|+eps) minus the part along x (the length is fixed)."""
    n = np.linalg.norm(x, axis=-1, keepdims=True)        # (..., 1)
    denom = n + eps                                      # (..., 1)
    along = (du * x).sum(-1, keepdims=True) / (denom * denom * np.maximum(n, 1e-30))  # (..., 1)
    return du / denom - x * along                        # (..., d)


def cosine_scores_backward(dscores: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Returns (dq, dk)."""
    q, k, q_norm, k_norm, eps = cache
    dq_norm = dscores @ k_norm                           # (B, Tq, d)
    dk_norm = _T(dscores) @ q_norm                       # (B, Tk, d)
    return _normalise_backward(dq_norm, q, eps), _normalise_backward(dk_norm, k, eps)


# ---------------------------------------------------------------- general / bilinear (Luong et al. 2015)

def init_general_scores(rng: np.random.Generator, d_q: int, d_k: int, dtype=np.float32) -> dict:
    return {"W_a": xavier_uniform(rng, d_q, d_k, dtype)}  # (dq, dk)


def general_scores_forward(q: np.ndarray, k: np.ndarray, W_a: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Luong's general score q W_a k^T, with W_a of shape (dq, dk): queries and keys may differ in width."""
    _check_qk(q, k, same_width=False)
    if W_a.shape != (q.shape[-1], k.shape[-1]):
        raise ValueError(f"W_a: expected shape (dq={q.shape[-1]}, dk={k.shape[-1]}), got {W_a.shape}")
    qW, q_cache = linear_forward(q, W_a)                 # (B, Tq, dq) -> (B, Tq, dk)
    scores = qW @ _T(k)                                  # (B, Tq, dk) @ (B, dk, Tk) -> (B, Tq, Tk)
    return scores, (k, qW, q_cache)


def general_scores_backward(dscores: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, dict]:
    """Returns (dq, dk, {"W_a": dW_a})."""
    k, qW, q_cache = cache
    dqW = dscores @ k                                    # (B, Tq, Tk) @ (B, Tk, dk) -> (B, Tq, dk)
    dk = _T(dscores) @ qW                                # (B, Tk, Tq) @ (B, Tq, dk) -> (B, Tk, dk)
    dq, dW_a, _ = linear_backward(dqW, q_cache)          # (B, Tq, dq), (dq, dk)
    return dq, dk, {"W_a": dW_a}


# ---------------------------------------------------------------- additive (Bahdanau et al. 2015)

def init_additive_scores(rng: np.random.Generator, d_q: int, d_k: int, d_attn: int, dtype=np.float32) -> dict:
    """W_a (dq, A), U_a (dk, A) Xavier uniform; v_a (A,) ~ N(0, 1/A) (as the PyTorch Bahdanau model)."""
    return {"W_a": xavier_uniform(rng, d_q, d_attn, dtype),                    # (dq, A)
            "U_a": xavier_uniform(rng, d_k, d_attn, dtype),                    # (dk, A)
            "v_a": rng.normal(0.0, d_attn ** -0.5, size=d_attn).astype(dtype)}  # (A,)


def additive_scores_forward(q: np.ndarray, k: np.ndarray, W_a: np.ndarray, U_a: np.ndarray,
                            v_a: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Bahdanau's v_a^T tanh(W_a s + U_a h), written for row vectors: tanh(q W_a + k U_a) v_a."""
    _check_qk(q, k, same_width=False)
    q_proj, q_cache = linear_forward(q, W_a)             # (B, Tq, A)
    k_proj, k_cache = linear_forward(k, U_a)             # (B, Tk, A)
    hidden = np.tanh(q_proj[:, :, None, :] + k_proj[:, None, :, :])  # (B, Tq, Tk, A): every query-key pair
    scores = hidden @ v_a                                # (B, Tq, Tk)
    return scores, (hidden, v_a, q_cache, k_cache)


def additive_scores_backward(dscores: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, dict]:
    """Returns (dq, dk, {"W_a": dW_a, "U_a": dU_a, "v_a": dv_a})."""
    hidden, v_a, q_cache, k_cache = cache
    dv_a = np.einsum("bqk,bqka->a", dscores, hidden)     # (A,)
    dpre = dscores[..., None] * v_a * (1.0 - hidden * hidden)  # (B, Tq, Tk, A): through v_a, then tanh
    dq_proj = dpre.sum(axis=2)                           # (B, Tq, A): each query met every key
    dk_proj = dpre.sum(axis=1)                           # (B, Tk, A)
    dq, dW_a, _ = linear_backward(dq_proj, q_cache)      # (B, Tq, dq), (dq, A)
    dk, dU_a, _ = linear_backward(dk_proj, k_cache)      # (B, Tk, dk), (dk, A)
    return dq, dk, {"W_a": dW_a, "U_a": dU_a, "v_a": dv_a}


# ---------------------------------------------------------------- location-based (Luong et al. 2015)

def init_location_scores(rng: np.random.Generator, d_q: int, n_keys: int, dtype=np.float32) -> dict:
    return {"W_a": xavier_uniform(rng, d_q, n_keys, dtype)}  # (dq, Tk)


def location_scores_forward(q: np.ndarray, W_a: np.ndarray) -> tuple[np.ndarray, tuple]:
    """Luong's location score W_a s: the query alone decides where to look, so the number of keys Tk is fixed
    by W_a (dq, Tk); the keys' contents are never consulted."""
    if not isinstance(q, np.ndarray) or q.ndim != 3 or q.shape[-1] != W_a.shape[0]:
        raise ValueError(f"q: expected shape (B, Tq, dq={W_a.shape[0]}), got {getattr(q, 'shape', type(q))}")
    scores, q_cache = linear_forward(q, W_a)             # (B, Tq, dq) -> (B, Tq, Tk)
    return scores, q_cache


def location_scores_backward(dscores: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    """Returns (dq, {"W_a": dW_a})."""
    dq, dW_a, _ = linear_backward(dscores, cache)        # (B, Tq, dq), (dq, Tk)
    return dq, {"W_a": dW_a}


# ---------------------------------------------------------------- from scores to weights to outputs

def _check_fits_scores(x, scores_shape: tuple, name: str, expected: str) -> None:
    """x must broadcast to the scores without enlarging them (nothing silently broadcasts)."""
    try:
        fits = np.broadcast_shapes(x.shape, scores_shape) == tuple(scores_shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name}: shape {x.shape} does not broadcast to the scores' shape "
                         f"{tuple(scores_shape)} (expected {expected})")


def _check_mask_fits(mask, scores_shape: tuple, name: str = "mask") -> None:
    """A mask must be boolean and fit the scores."""
    if not isinstance(mask, np.ndarray) or mask.dtype != bool:
        got = mask.dtype if isinstance(mask, np.ndarray) else type(mask).__name__
        raise ValueError(f"{name}: expected a bool array (True = may attend), got {got}")
    _check_fits_scores(mask, scores_shape, name, "(B or 1, Tq or 1, Tk), heads inserted as axis 1")


def _check_bias_fits(bias, scores_shape: tuple) -> None:
    """An additive score bias (ALiBi's) must be a float array that fits the scores."""
    if not isinstance(bias, np.ndarray) or not np.issubdtype(bias.dtype, np.floating):
        raise ValueError(f"bias: expected a float array, got {getattr(bias, 'dtype', type(bias).__name__)}")
    _check_fits_scores(bias, scores_shape, "bias", "(H, Tq, Tk)")


def masked_softmax(scores: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Softmax over the last axis where mask is True (mask broadcasts against scores).

    Masked scores become -inf, so exp gives exactly 0. A fully masked row would give 0 / 0; its max is
    replaced by 0 and its sum by 1, so the row's weights are all zeros, with no NaN and no warning.
    """
    if mask is not None:
        _check_mask_fits(mask, scores.shape)
        scores = np.where(mask, scores, -np.inf)         # (..., Tq, Tk): -inf is a weak scalar, dtype kept
    top = scores.max(axis=-1, keepdims=True)             # (..., Tq, 1)
    if mask is not None:
        top = np.where(top == -np.inf, 0.0, top)         # (..., Tq, 1): fully masked rows
    e = np.exp(scores - top)                             # (..., Tq, Tk): exp(-inf) = 0 exactly
    total = e.sum(axis=-1, keepdims=True)                # (..., Tq, 1)
    if mask is not None:
        total = np.where(total == 0.0, 1.0, total)       # (..., Tq, 1)
    return e / total                                     # (..., Tq, Tk)


def masked_softmax_backward(dweights: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Masked entries have weight 0, so softmax's backward already gives them (and empty rows) zero gradient."""
    return softmax_backward(dweights, weights)           # (..., Tq, Tk)


def attention_pooling_forward(scores: np.ndarray, values: np.ndarray,
                              mask: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """Turn scores into weights and average the values with them: (out, cache); cache["weights"] (B, Tq, Tk)."""
    weights = masked_softmax(scores, mask)               # (B, Tq, Tk)
    out = weights @ values                               # (B, Tq, Tk) @ (B, Tk, dv) -> (B, Tq, dv)
    return out, {"weights": weights, "values": values}


def attention_pooling_backward(dout: np.ndarray, cache: dict) -> tuple[np.ndarray, np.ndarray]:
    """Returns (dscores, dvalues)."""
    weights, values = cache["weights"], cache["values"]
    dweights = dout @ _T(values)                         # (B, Tq, dv) @ (B, dv, Tk) -> (B, Tq, Tk)
    dvalues = _T(weights) @ dout                         # (B, Tk, Tq) @ (B, Tq, dv) -> (B, Tk, dv)
    return masked_softmax_backward(dweights, weights), dvalues


# ---------------------------------------------------------------- scaled dot-product attention

def scaled_dot_product_attention_forward(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                                         mask: np.ndarray | None = None, dropout_p: float = 0.0,
                                         rng: np.random.Generator | None = None,
                                         training: bool = False,
                                         bias: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """softmax(q k^T / sqrt(Dh) + bias) v, for q (..., Tq, Dh), k and v (..., Tk, Dh); `mask` and `bias` (ALiBi's
    (H, Tq, Tk), a constant) broadcast to the scores.

    Dropout (if any) acts on the weights; cache["weights"] holds the weights before dropout (for plots).
    """
    scores, scores_cache = scaled_dot_scores_forward(q, k)  # (B, H, Tq, Tk)
    if bias is not None:
        _check_bias_fits(bias, scores.shape)
        scores = scores + bias                           # (B, H, Tq, Tk): a constant, so dscores passes through
    weights = masked_softmax(scores, mask)               # (B, H, Tq, Tk)
    dropped, drop_cache = dropout_forward(weights, dropout_p, rng, training)  # (B, H, Tq, Tk)
    out = dropped @ v                                    # (B, H, Tq, Tk) @ (B, H, Tk, Dh) -> (B, H, Tq, Dh)
    cache = {"scores": scores_cache, "v": v, "weights": weights, "dropped": dropped, "drop": drop_cache}
    return out, cache


def scaled_dot_product_attention_backward(dout: np.ndarray,
                                          cache: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns (dq, dk, dv), the gradients of the forward's inputs in their order; computed in the reverse order
    of the forward (the output's product with v first, the scores last)."""
    v, weights, dropped = cache["v"], cache["weights"], cache["dropped"]
    ddropped = dout @ _T(v)                              # (B, H, Tq, Dh) @ (B, H, Dh, Tk) -> (B, H, Tq, Tk)
    dv = _T(dropped) @ dout                              # (B, H, Tk, Tq) @ (B, H, Tq, Dh) -> (B, H, Tk, Dh)
    dweights = dropout_backward(ddropped, cache["drop"])  # (B, H, Tq, Tk)
    dscores = masked_softmax_backward(dweights, weights)  # (B, H, Tq, Tk)
    dq, dk = scaled_dot_scores_backward(dscores, cache["scores"])  # (B, H, Tq, Dh), (B, H, Tk, Dh)
    return dq, dk, dv


# ---------------------------------------------------------------- multi-head attention

def init_multi_head_attention(rng: np.random.Generator, d_model: int, n_heads: int, dtype=np.float32) -> dict:
    """W_q, W_k, W_v, W_o (D, D) Xavier uniform (all H heads side by side), zero biases."""
    if d_model % n_heads != 0:
        raise ValueError(f"n_heads: expected a divisor of d_model={d_model}, got {n_heads}")
    params = {}
    for name in ("q", "k", "v", "o"):
        params[f"W_{name}"] = xavier_uniform(rng, d_model, d_model, dtype)  # (D, D)
        params[f"b_{name}"] = np.zeros(d_model, dtype=dtype)                # (D,)
    return params


def _check_inputs(x_q, x_kv, D: int, n_heads: int, positional: str | None) -> None:
    """multi_head_attention_forward's arguments, checked before anything runs (the twin's `_check_inputs`)."""
    if positional not in (None, *ATTENTION_POSITIONAL):
        raise ValueError(f"positional: expected None, 'rope' or 'alibi', got {positional!r}")
    if not isinstance(x_q, np.ndarray) or x_q.ndim != 3 or x_q.shape[-1] != D:
        raise ValueError(f"x_q: expected shape (B, Tq, d_model={D}), got {getattr(x_q, 'shape', type(x_q))}")
    if not isinstance(x_kv, np.ndarray) or x_kv.ndim != 3 or x_kv.shape[-1] != D or x_kv.shape[0] != x_q.shape[0]:
        raise ValueError(f"x_kv: expected shape (B={x_q.shape[0]}, Tk, d_model={D}), "
                         f"got {getattr(x_kv, 'shape', type(x_kv))}")
    if D % n_heads != 0:
        raise ValueError(f"n_heads: expected a divisor of d_model={D}, got {n_heads}")


def multi_head_attention_forward(x_q: np.ndarray, x_kv: np.ndarray, params: dict, n_heads: int,
                                 mask: np.ndarray | None = None, dropout: float = 0.0,
                                 rng: np.random.Generator | None = None, training: bool = False,
                                 positional: str | None = None) -> tuple[np.ndarray, dict]:
    """MultiHead(x_q, x_kv) = Concat(head_1 .. head_H) W_o, head_m = Attention(x_q W_q^m, x_kv W_k^m, x_kv W_v^m).

    x_q (B, Tq, D) attends to x_kv (B, Tk, D) (the same array for self-attention); mask (B or 1, Tq or 1, Tk),
    True = may attend; dropout acts on the attention weights. `positional` is the position term of
    self-attention: "rope" rotates queries and keys by their positions, "alibi" adds -rho_m |i - j| to head m's scores;
    None (cross-attention, and models that add positions to the embeddings) adds nothing.
    Returns (out (B, Tq, D), cache); cache["weights"] is (B, H, Tq, Tk).
    """
    _check_inputs(x_q, x_kv, params["W_q"].shape[0], n_heads, positional)
    B, Tq, D = x_q.shape
    Tk = x_kv.shape[1]
    H, Dh = n_heads, D // n_heads
    q, q_cache = linear_forward(x_q, params["W_q"], params["b_q"])   # (B, Tq, D)
    k, k_cache = linear_forward(x_kv, params["W_k"], params["b_k"])  # (B, Tk, D)
    v, v_cache = linear_forward(x_kv, params["W_v"], params["b_v"])  # (B, Tk, D)
    q = q.reshape(B, Tq, H, Dh).transpose(0, 2, 1, 3)    # (B, Tq, D) -> (B, H, Tq, Dh)
    k = k.reshape(B, Tk, H, Dh).transpose(0, 2, 1, 3)    # (B, Tk, D) -> (B, H, Tk, Dh)
    v = v.reshape(B, Tk, H, Dh).transpose(0, 2, 1, 3)    # (B, Tk, D) -> (B, H, Tk, Dh)
    rope_caches = bias = None
    if positional == "rope":                             # rotate queries and keys by their positions
        q, q_rope = rotary_positions_forward(q)          # (B, H, Tq, Dh)
        k, k_rope = rotary_positions_forward(k)          # (B, H, Tk, Dh)
        rope_caches = (q_rope, k_rope)
    elif positional == "alibi":                          # a linear penalty on the distance, added to the scores
        bias = alibi_bias(H, Tq, Tk, dtype=q.dtype)      # (H, Tq, Tk)
    if mask is not None:
        check_mask(mask, B, Tq, Tk)
        mask = mask[:, None]                             # (B, Tq, Tk) -> (B, 1, Tq, Tk): same for every head
    heads, attn_cache = scaled_dot_product_attention_forward(q, k, v, mask, dropout, rng, training,
                                                             bias)  # (B, H, Tq, Dh)
    merged = heads.transpose(0, 2, 1, 3).reshape(B, Tq, D)  # (B, H, Tq, Dh) -> (B, Tq, H, Dh) -> (B, Tq, D)
    out, o_cache = linear_forward(merged, params["W_o"], params["b_o"])  # (B, Tq, D)
    cache = {"shape": (B, Tq, Tk, H), "keys": list(params), "q": q_cache, "k": k_cache, "v": v_cache,
             "rope": rope_caches, "attn": attn_cache, "o": o_cache, "weights": attn_cache["weights"]}
    return out, cache


def multi_head_attention_backward(dout: np.ndarray, cache: dict) -> tuple[tuple[np.ndarray, np.ndarray], dict]:
    """Returns ((dx_q, dx_kv), grads); for self-attention `self_attention_backward` adds dx_q and dx_kv."""
    B, Tq, Tk, H = cache["shape"]
    D = dout.shape[-1]
    Dh = D // H
    grads = {}
    dmerged, grads["W_o"], grads["b_o"] = linear_backward(dout, cache["o"])  # (B, Tq, D)
    dheads = dmerged.reshape(B, Tq, H, Dh).transpose(0, 2, 1, 3)  # (B, Tq, D) -> (B, H, Tq, Dh)
    dq, dk, dv = scaled_dot_product_attention_backward(dheads, cache["attn"])  # (B, H, T*, Dh)
    if cache["rope"] is not None:                        # undo the rotations: rotate the gradients back
        dq = rotary_positions_backward(dq, cache["rope"][0])  # (B, H, Tq, Dh)
        dk = rotary_positions_backward(dk, cache["rope"][1])  # (B, H, Tk, Dh)
    dq = dq.transpose(0, 2, 1, 3).reshape(B, Tq, D)      # (B, H, Tq, Dh) -> (B, Tq, D)
    dk = dk.transpose(0, 2, 1, 3).reshape(B, Tk, D)      # (B, H, Tk, Dh) -> (B, Tk, D)
    dv = dv.transpose(0, 2, 1, 3).reshape(B, Tk, D)      # (B, H, Tk, Dh) -> (B, Tk, D)
    dx_q, grads["W_q"], grads["b_q"] = linear_backward(dq, cache["q"])   # (B, Tq, D)
    dx_k, grads["W_k"], grads["b_k"] = linear_backward(dk, cache["k"])   # (B, Tk, D)
    dx_v, grads["W_v"], grads["b_v"] = linear_backward(dv, cache["v"])   # (B, Tk, D)
    dx_kv = dx_k + dx_v                                  # (B, Tk, D): keys and values both came from x_kv
    grads = {key: grads[key] for key in cache["keys"]}   # same key order as params
    return (dx_q, dx_kv), grads


def self_attention_forward(x: np.ndarray, params: dict, n_heads: int, mask: np.ndarray | None = None,
                           dropout: float = 0.0, rng: np.random.Generator | None = None,
                           training: bool = False, positional: str | None = None) -> tuple[np.ndarray, dict]:
    """Multi-head attention of x (B, T, D) to itself: queries, keys and values all come from x (and, with
    positional="rope" or "alibi", the position term lives here)."""
    return multi_head_attention_forward(x, x, params, n_heads, mask, dropout, rng, training,
                                        positional)  # (B, T, D)


def self_attention_backward(dout: np.ndarray, cache: dict) -> tuple[np.ndarray, dict]:
    """x fed both the queries and the keys/values, so its gradient is the sum of the two. Returns (dx, grads)."""
    (dx_q, dx_kv), grads = multi_head_attention_backward(dout, cache)  # (B, T, D) each
    return dx_q + dx_kv, grads
