"""The position-wise feed-forward network FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (paper eq. 2)."""
from __future__ import annotations

import numpy as np

from .functional import linear_backward, linear_forward, relu_backward, relu_forward, xavier_uniform

__all__ = ["init_feedforward", "feedforward_forward", "feedforward_backward"]


def init_feedforward(rng: np.random.Generator, d_model: int, d_ff: int, dtype=np.float32) -> dict:
    """W_1 (D, F), W_2 (F, D) Xavier uniform; zero biases."""
    return {"W_1": xavier_uniform(rng, d_model, d_ff, dtype), "b_1": np.zeros(d_ff, dtype=dtype),
            "W_2": xavier_uniform(rng, d_ff, d_model, dtype), "b_2": np.zeros(d_model, dtype=dtype)}


def feedforward_forward(x: np.ndarray, params: dict) -> tuple[np.ndarray, tuple]:
    """The same two-layer network applied to every position alone. No dropout inside: the paper puts it on
    the sublayer's output (see `sublayer.residual_forward`)."""
    D = params["W_1"].shape[0]
    if not isinstance(x, np.ndarray) or x.ndim != 3 or x.shape[-1] != D:
        raise ValueError(f"x: expected shape (B, T, d_model={D}), got {getattr(x, 'shape', type(x).__name__)}")
    pre, cache_1 = linear_forward(x, params["W_1"], params["b_1"])  # (B, T, D) -> (B, T, F)
    h, relu_cache = relu_forward(pre)                    # (B, T, F)
    out, cache_2 = linear_forward(h, params["W_2"], params["b_2"])  # (B, T, F) -> (B, T, D)
    return out, (cache_1, relu_cache, cache_2)


def feedforward_backward(dout: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    cache_1, relu_cache, cache_2 = cache
    dh, dW_2, db_2 = linear_backward(dout, cache_2)      # (B, T, F)
    dpre = relu_backward(dh, relu_cache)                 # (B, T, F)
    dx, dW_1, db_1 = linear_backward(dpre, cache_1)      # (B, T, D)
    return dx, {"W_1": dW_1, "b_1": db_1, "W_2": dW_2, "b_2": db_2}
