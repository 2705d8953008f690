"""Helpers for NumPy <-> PyTorch parity: float64 everywhere, gradients in the NumPy layout, tree comparison."""
from __future__ import annotations

import copy

import numpy as np
import torch

from transformer_course.torch.convert import torch_to_numpy

TOL = 1e-10


def randomise(module: torch.nn.Module, seed: int = 0, scale: float = 0.3) -> torch.nn.Module:
    """float64 and non-trivial values everywhere (biases, gamma and beta too), so nothing is tested at zero."""
    module = module.double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale)
    return module


def grads_as_numpy(module: torch.nn.Module) -> dict:
    """The .grad of every parameter, arranged (and transposed) exactly like the NumPy parameter tree."""
    holder = copy.deepcopy(module)
    with torch.no_grad():
        for p_holder, p in zip(holder.parameters(), module.parameters()):
            p_holder.copy_(p.grad if p.grad is not None else torch.zeros_like(p))
    return torch_to_numpy(holder)


def assert_trees_close(ours, ref, tol: float = TOL, path: str = "") -> None:
    """Same keys / list lengths and every array within tol (absolute, relative to the largest entry if > 1)."""
    if isinstance(ref, dict):
        assert isinstance(ours, dict) and set(ours) == set(ref), f"{path}: keys {sorted(ours)} != {sorted(ref)}"
        for key in ref:
            assert_trees_close(ours[key], ref[key], tol, f"{path}[{key!r}]")
    elif isinstance(ref, (list, tuple)):
        assert len(ours) == len(ref), f"{path}: lengths {len(ours)} != {len(ref)}"
        for i, (a, b) in enumerate(zip(ours, ref)):
            assert_trees_close(a, b, tol, f"{path}[{i}]")
    else:
        a = ours.detach().numpy() if isinstance(ours, torch.Tensor) else np.asarray(ours)
        b = ref.detach().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
        assert a.shape == b.shape, f"{path}: shapes {a.shape} != {b.shape}"
        scale = max(1.0, float(np.abs(b).max()) if b.size else 1.0)
        err = float(np.abs(a - b).max()) if a.size else 0.0
        assert err <= tol * scale, f"{path}: max |difference| {err:.3e} > {tol * scale:.1e}"


def t(x: np.ndarray, grad: bool = False) -> torch.Tensor:
    """A float64 (or integer) torch copy of a NumPy array."""
    out = torch.from_numpy(np.array(x))
    return out.requires_grad_(True) if grad else out


def assert_same_verdict(ours, theirs) -> None:
    """Two twins' answers that are not arrays (a check's verdict: None, or the exception's name and message)."""
    assert ours == theirs, (ours, theirs)
