"""Building blocks: stable softmax / log-softmax, sigmoid, ReLU, the linear map every learned projection of the
package goes through, Xavier initialisation, and helpers that walk nested parameter dicts.

Convention of the whole package: a layer has `<name>_forward(x, ..., params, ...) -> (out, cache)` and
`<name>_backward(dout, cache) -> (dx, grads)`; a parameter-free layer's backward returns dx alone. Softmax,
log-softmax and the masked softmax are the exception that proves the rule: their output is all their
backward needs, so they return it alone and their backward takes (dout, output).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["softmax", "softmax_backward", "log_softmax", "log_softmax_backward", "sigmoid", "relu_forward",
           "relu_backward", "linear_forward", "linear_backward", "xavier_uniform", "tree_map", "tree_leaves",
           "tree_zeros_like"]


# ---------------------------------------------------------------- softmax

def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x) / sum exp(x), computed as exp(x - max x) so that no exponent exceeds 0 (no overflow at 1e4)."""
    shifted = x - x.max(axis=axis, keepdims=True)        # (..., V): largest entry is 0
    e = np.exp(shifted)                                  # (..., V): in (0, 1]
    return e / e.sum(axis=axis, keepdims=True)           # (..., V): rows sum to 1


def softmax_backward(dout: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Gradient through y = softmax(x): dx = y * (dout - sum(dout * y)) (the Jacobian diag(y) - y y^T, applied)."""
    return y * (dout - (dout * y).sum(axis=axis, keepdims=True))  # (..., V)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """x - log sum exp(x), via the max shift; more accurate than log(softmax(x)) for very negative entries."""
    shifted = x - x.max(axis=axis, keepdims=True)        # (..., V)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))  # (..., V)


def log_softmax_backward(dout: np.ndarray, logp: np.ndarray, axis: int = -1) -> np.ndarray:
    """Gradient through logp = log_softmax(x): dx = dout - softmax(x) * sum(dout)."""
    return dout - np.exp(logp) * dout.sum(axis=axis, keepdims=True)  # (..., V)


# ---------------------------------------------------------------- sigmoid, ReLU and linear maps

def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) written as (1 + tanh(x / 2)) / 2, which never overflows."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def relu_forward(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """max(0, x); the cache is where x was positive (the gradient passes only there)."""
    positive = x > 0                                     # (...,) bool
    return x * positive, positive                        # multiplying keeps x's dtype


def relu_backward(dout: np.ndarray, cache: np.ndarray) -> np.ndarray:
    return dout * cache                                  # (...,)


def linear_forward(x: np.ndarray, W: np.ndarray, b: np.ndarray | None = None) -> tuple[np.ndarray, tuple]:
    """y = x W + b with W stored (in, out), for x of any leading shape (..., in)."""
    out = x @ W                                          # (..., in) @ (in, out) -> (..., out)
    if b is not None:
        out += b                                         # (..., out)
    return out, (x, W, b is not None)


def linear_backward(dout: np.ndarray, cache: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Returns (dx, dW, db): every leading position contributed to W, so dW sums over all of them."""
    x, W, has_bias = cache
    d_in, d_out = W.shape
    dx = dout @ W.T                                      # (..., out) @ (out, in) -> (..., in)
    dW = x.reshape(-1, d_in).T @ dout.reshape(-1, d_out)  # (in, B*T) @ (B*T, out) -> (in, out)
    db = dout.reshape(-1, d_out).sum(axis=0) if has_bias else None  # (out,)
    return dx, dW, db


def xavier_uniform(rng: np.random.Generator, fan_in: int, fan_out: int, dtype=np.float32) -> np.ndarray:
    """Glorot & Bengio (2010): U(-a, a), a = sqrt(6 / (fan_in + fan_out)); keeps activations' variance steady."""
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(dtype)  # (in, out)


# ---------------------------------------------------------------- nested parameter dicts

def tree_map(fn: Callable, *trees):
    """Apply fn leaf by leaf to trees of the same nesting (dicts, lists, arrays) and rebuild the nesting."""
    first = trees[0]
    if isinstance(first, dict):
        return {key: tree_map(fn, *(t[key] for t in trees)) for key in first}
    if isinstance(first, (list, tuple)):
        return [tree_map(fn, *items) for items in zip(*trees)]
    return fn(*trees)


def tree_leaves(tree, prefix: str = "") -> list[tuple[str, np.ndarray]]:
    """[(path, array)] in a fixed order, e.g. ("encoder.layers.0.self_attn.W_q", array)."""
    if isinstance(tree, dict):
        items = tree.items()
    elif isinstance(tree, (list, tuple)):
        items = ((str(i), value) for i, value in enumerate(tree))
    else:
        return [(prefix, tree)]
    leaves = []
    for key, value in items:
        leaves.extend(tree_leaves(value, f"{prefix}.{key}" if prefix else str(key)))
    return leaves


def tree_zeros_like(tree):
    """A tree of zero arrays with the nesting, shapes and dtypes of `tree`."""
    return tree_map(np.zeros_like, tree)
