"""Gradient checking: compare a hand-written backward pass with central differences, in float64.

    df/dx_i ~ (f(x + h e_i) - f(x - h e_i)) / (2 h)      (error O(h^2), against O(h) for one-sided)

With h = 1e-6 in float64, the truncation error (~h^2) and the rounding error (~1e-16 / h) are both around
1e-10, so a correct backward pass agrees to a relative error far below 1e-6; a wrong one rarely does.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .functional import tree_leaves

__all__ = ["numerical_gradient", "relative_error", "gradcheck"]


def numerical_gradient(f: Callable[[], float], x: np.ndarray, eps: float = 1e-6,
                       indices: np.ndarray | None = None) -> np.ndarray:
    """Central differences of the scalar f() with respect to the array x, perturbed in place and restored.

    `f` takes no argument: it must read x (e.g. through a closure over the parameter dict). With `indices`
    (flat positions), only those entries are estimated; the others stay 0.
    """
    if x.dtype != np.float64:
        raise TypeError(f"x: expected float64 for gradient checking (float32 rounding swamps the differences), "
                        f"got {x.dtype}")
    grad = np.zeros_like(x)
    flat_x, flat_g = x.reshape(-1), grad.reshape(-1)     # views: writing them writes x and grad
    for i in (range(x.size) if indices is None else indices):
        old = flat_x[i]
        flat_x[i] = old + eps
        f_plus = f()
        flat_x[i] = old - eps
        f_minus = f()
        flat_x[i] = old                                  # restore exactly
        flat_g[i] = (f_plus - f_minus) / (2.0 * eps)
    return grad


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """|a - b| / (|a| + |b|) with Euclidean norms: 0 when equal, 1 when opposite; 0 when both are zero."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    denom = np.linalg.norm(a) + np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / denom) if denom > 0 else 0.0


def gradcheck(f: Callable[[], float], params, grads, eps: float = 1e-6, max_entries: int | None = None,
              rng: np.random.Generator | None = None, zero_tol: float = 1e-8) -> dict[str, float]:
    """Relative error between `grads` (analytic) and central differences of f() for every leaf of `params`.

    `params` and `grads` are arrays or nested dicts/lists of arrays with the same nesting. With `max_entries`,
    at most that many randomly chosen entries per leaf are compared (fast checks of big trees).
    Some gradients are exactly zero in theory (the key bias b_k: softmax ignores a shift shared by all keys);
    the relative error of two zeros is rounding noise over rounding noise, so a leaf where both gradients are
    below `zero_tol` everywhere counts as agreeing (error 0). A central difference cannot resolve less than one
    rounding step of f over 2 eps, so the numeric side's zero is at least 10 times that. Returns {path: error}.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    numeric_zero = max(zero_tol, 10 * abs(f()) * np.finfo(np.float64).eps / (2 * eps))
    p_leaves, g_leaves = tree_leaves(params), tree_leaves(grads)
    if [p for p, _ in p_leaves] != [g for g, _ in g_leaves]:
        raise ValueError(f"grads: expected the nesting of params {[p for p, _ in p_leaves]}, "
                         f"got {[g for g, _ in g_leaves]}")
    errors = {}
    for (path, x), (_, g) in zip(p_leaves, g_leaves):
        if g.shape != x.shape:
            raise ValueError(f"grads[{path}]: expected shape {x.shape}, got {g.shape}")
        indices = None
        if max_entries is not None and x.size > max_entries:
            indices = rng.choice(x.size, size=max_entries, replace=False)
        numeric = numerical_gradient(f, x, eps, indices)
        analytic = g.reshape(-1) if indices is None else g.reshape(-1)[indices]
        numeric = numeric.reshape(-1) if indices is None else numeric.reshape(-1)[indices]
        both_zero = np.abs(analytic).max(initial=0.0) < zero_tol and np.abs(numeric).max(initial=0.0) < numeric_zero
        errors[path or "x"] = 0.0 if both_zero else relative_error(analytic, numeric)
    return errors
