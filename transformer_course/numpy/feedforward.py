"""The position-wise feed-forward network FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (paper eq. 2)."""
from __future__ import annotations

import numpy as np

from .functional import relu_backward, relu_forward, xavier_uniform

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
    pre = x @ params["W_1"] + params["b_1"]              # (B, T, D) -> (B, T, F)
    h, relu_cache = relu_forward(pre)                    # (B, T, F)
    out = h @ params["W_2"] + params["b_2"]              # (B, T, F) -> (B, T, D)
    return out, (x, h, relu_cache, params)


def feedforward_backward(dout: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    x, h, relu_cache, params = cache
    D, F = params["W_1"].shape
    dW_2 = h.reshape(-1, F).T @ dout.reshape(-1, D)      # (F, D)
    db_2 = dout.reshape(-1, D).sum(axis=0)               # (D,)
    dh = dout @ params["W_2"].T                          # (B, T, F)
    dpre = relu_backward(dh, relu_cache)                 # (B, T, F)
    dW_1 = x.reshape(-1, D).T @ dpre.reshape(-1, F)      # (D, F)
    db_1 = dpre.reshape(-1, F).sum(axis=0)               # (F,)
    dx = dpre @ params["W_1"].T                          # (B, T, D)
    return dx, {"W_1": dW_1, "b_1": db_1, "W_2": dW_2, "b_2": db_2}
