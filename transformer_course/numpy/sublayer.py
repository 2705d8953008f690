"""The residual connection around every sublayer, with the norm after (post-LN, the paper) or before (pre-LN).

    post-LN (paper):           out = LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN (Xiong et al. 2020): out = x + Dropout(Sublayer(LayerNorm(x)))

Pre-LN keeps an un-normalised residual path, which trains without warm-up; the stack then needs a final
LayerNorm (the encoder and decoder add it). The sublayer is passed in as a pair of functions, so the same
code wraps self-attention, cross-attention and the feed-forward network.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .dropout import dropout_backward, dropout_forward
from .layernorm import layernorm_backward, layernorm_forward

__all__ = ["residual_forward", "residual_backward"]


def residual_forward(x: np.ndarray, sublayer_forward: Callable[[np.ndarray], tuple[np.ndarray, Any]],
                     norm_params: dict, norm_first: bool = False, dropout_p: float = 0.0,
                     rng: np.random.Generator | None = None, training: bool = False,
                     eps: float = 1e-5) -> tuple[np.ndarray, tuple]:
    """`sublayer_forward(h) -> (out, cache)` is the wrapped sublayer. Returns (out (B, T, D), cache)."""
    if norm_first:
        h, norm_cache = layernorm_forward(x, norm_params, eps)  # (B, T, D)
        sub, sub_cache = sublayer_forward(h)                     # (B, T, D)
        sub, drop_cache = dropout_forward(sub, dropout_p, rng, training)  # (B, T, D)
        out = x + sub                                            # (B, T, D)
    else:
        sub, sub_cache = sublayer_forward(x)                     # (B, T, D)
        sub, drop_cache = dropout_forward(sub, dropout_p, rng, training)  # (B, T, D)
        out, norm_cache = layernorm_forward(x + sub, norm_params, eps)  # (B, T, D)
    return out, (norm_first, norm_cache, sub_cache, drop_cache)


def residual_backward(dout: np.ndarray, cache: tuple,
                      sublayer_backward: Callable[[np.ndarray, Any], tuple[np.ndarray, Any]]
                      ) -> tuple[np.ndarray, dict, Any]:
    """`sublayer_backward(dsub, sub_cache) -> (dh, rest)`; returns (dx, norm grads, rest) where `rest` is what
    the sublayer's backward returned besides dh (its grads, and e.g. the gradient of the encoder memory)."""
    norm_first, norm_cache, sub_cache, drop_cache = cache
    if norm_first:
        dsub = dropout_backward(dout, drop_cache)               # (B, T, D)
        dh, rest = sublayer_backward(dsub, sub_cache)           # (B, T, D)
        dx_norm, dnorm = layernorm_backward(dh, norm_cache)     # (B, T, D)
        dx = dout + dx_norm                                     # (B, T, D): the residual path adds dout as is
    else:
        dsum, dnorm = layernorm_backward(dout, norm_cache)      # (B, T, D): gradient of x + sub
        dsub = dropout_backward(dsum, drop_cache)               # (B, T, D)
        dh, rest = sublayer_backward(dsub, sub_cache)           # (B, T, D)
        dx = dsum + dh                                          # (B, T, D)
    return dx, dnorm, rest
