"""Layer normalisation over the feature axis (Ba et al. 2016), the same maths as torch.nn.LayerNorm."""
from __future__ import annotations

import numpy as np

__all__ = ["init_layernorm", "layernorm_forward", "layernorm_backward"]


def init_layernorm(d_model: int, dtype=np.float32) -> dict:
    """gamma = 1, beta = 0: the layer starts as a pure normalisation."""
    return {"gamma": np.ones(d_model, dtype=dtype), "beta": np.zeros(d_model, dtype=dtype)}  # (D,), (D,)


def layernorm_forward(x: np.ndarray, params: dict, eps: float = 1e-5) -> tuple[np.ndarray, tuple]:
    """gamma * (x - mean) / sqrt(var + eps) + beta, over the last axis (biased variance, as torch)."""
    gamma, beta = params["gamma"], params["beta"]
    if not isinstance(x, np.ndarray) or x.shape[-1] != gamma.shape[0]:
        raise ValueError(f"x: expected last axis d_model={gamma.shape[0]}, got shape {getattr(x, 'shape', None)}")
    mean = x.mean(-1, keepdims=True)                     # (B, T, 1)
    centred = x - mean                                   # (B, T, D)
    var = (centred * centred).mean(-1, keepdims=True)    # (B, T, 1)
    rstd = 1.0 / np.sqrt(var + eps)                      # (B, T, 1)
    xhat = centred * rstd                                # (B, T, D)
    out = xhat * gamma + beta                            # (B, T, D)
    return out, (xhat, rstd, gamma)


def layernorm_backward(dout: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    xhat, rstd, gamma = cache
    D = xhat.shape[-1]
    dgamma = (dout * xhat).reshape(-1, D).sum(axis=0)    # (D,)
    dbeta = dout.reshape(-1, D).sum(axis=0)              # (D,)
    dxhat = dout * gamma                                 # (B, T, D)
    # the mean and variance depend on every x in the row, hence the two correction terms
    dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(-1, keepdims=True))  # (B, T, D)
    return dx, {"gamma": dgamma, "beta": dbeta}
