"""Inverted dropout (Srivastava et al. 2014): zero each entry with probability p while training and scale the
survivors by 1 / (1 - p), so that evaluation needs no rescaling at all."""
from __future__ import annotations

import numpy as np

__all__ = ["dropout_forward", "dropout_backward"]


def dropout_forward(x: np.ndarray, p: float, rng: np.random.Generator | None = None,
                    training: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Returns (out, cache); the cache is the scaled keep-mask (None when nothing was dropped)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"p: expected a probability in [0, 1), got {p!r}")
    if not training or p == 0.0:
        return x, None                                   # identity: evaluation, or dropout switched off
    if rng is None:
        raise ValueError("rng: expected a np.random.Generator when training with dropout p > 0, got None")
    keep = rng.random(x.shape, dtype=np.float32) >= p    # (...,) bool: each entry survives with prob. 1 - p
    scale = keep.astype(x.dtype) * (1.0 / (1.0 - p))     # (...,) 0 or 1/(1-p); a Python float keeps x's dtype
    return x * scale, scale


def dropout_backward(dout: np.ndarray, cache: np.ndarray | None) -> np.ndarray:
    """The gradient flows only through the kept entries, scaled as they were."""
    return dout if cache is None else dout * cache       # (...,)
