"""The residual connection around every sublayer, with the norm after (post-LN, the paper) or before (pre-LN).

    post-LN (paper):  out = LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN:           out = x + Dropout(Sublayer(LayerNorm(x)))

The sublayer is passed in as its forward and backward functions, so the same code wraps self-attention,
cross-attention and the feed-forward network, and the cache knows how to go back through it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .dropout import dropout_backward, dropout_forward
from .layernorm import layernorm_backward, layernorm_forward

__all__ = ["residual_forward", "residual_backward"]


def residual_forward(x: np.ndarray, sublayer: Callable[[np.ndarray], tuple[np.ndarray, Any]],
                     sublayer_backward: Callable[[np.ndarray, Any], tuple[np.ndarray, Any]],
                     norm: dict, norm_first: bool = False, dropout: float = 0.0,
                     rng: np.random.Generator | None = None, training: bool = False,
                     eps: float = 1e-5) -> tuple[np.ndarray, dict]:
    """`sublayer(h) -> (out, cache)` and `sublayer_backward(dout, cache) -> (dh, rest)` are the wrapped
    sublayer; `norm` holds the LayerNorm's parameters. Returns (out (B, T, D), cache)."""
    if norm_first:
        h, norm_cache = layernorm_forward(x, norm, eps)  # (B, T, D)
        sub, sub_cache = sublayer(h)                     # (B, T, D)
        sub, drop_cache = dropout_forward(sub, dropout, rng, training)  # (B, T, D)
        out = x + sub                                    # (B, T, D)
    else:
        sub, sub_cache = sublayer(x)                     # (B, T, D)
        sub, drop_cache = dropout_forward(sub, dropout, rng, training)  # (B, T, D)
        out, norm_cache = layernorm_forward(x + sub, norm, eps)  # (B, T, D)
    return out, {"norm_first": norm_first, "norm": norm_cache, "sublayer": sub_cache,
                 "sublayer_backward": sublayer_backward, "dropout": drop_cache}


def residual_backward(dout: np.ndarray, cache: dict) -> tuple[np.ndarray, dict, Any]:
    """Returns (dx, norm grads, rest) where `rest` is what the sublayer's backward returned besides dh (its
    grads, and e.g. the gradient of the encoder memory)."""
    sublayer_backward = cache["sublayer_backward"]
    if cache["norm_first"]:
        dsub = dropout_backward(dout, cache["dropout"])              # (B, T, D)
        dh, rest = sublayer_backward(dsub, cache["sublayer"])        # (B, T, D)
        dx_norm, dnorm = layernorm_backward(dh, cache["norm"])       # (B, T, D)
        dx = dout + dx_norm                                          # (B, T, D): the residual path adds dout as is
    else:
        dsum, dnorm = layernorm_backward(dout, cache["norm"])        # (B, T, D): gradient of x + sub
        dsub = dropout_backward(dsum, cache["dropout"])              # (B, T, D)
        dh, rest = sublayer_backward(dsub, cache["sublayer"])        # (B, T, D)
        dx = dsum + dh                                               # (B, T, D)
    return dx, dnorm, rest
