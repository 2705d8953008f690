"""Device and precision: pick CUDA, MPS or CPU; autocast in bf16/fp16; optional torch.compile. The one home of
these helpers: the trainer, evaluation and the benchmarks use them.

Nothing in the package is tied to one device: modules follow `.to(device)`, masks and positions are created
on the device of their inputs.
"""
from __future__ import annotations

import contextlib

import torch
from torch import nn

__all__ = ["pick_device", "autocast", "needs_grad_scaler", "maybe_compile", "PRECISIONS"]

PRECISIONS = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def _mps_available() -> bool:
    return getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()


def pick_device(name: str | torch.device = "auto") -> torch.device:
    """"auto" -> cuda if available, else mps, else cpu; or an explicit "cpu", "cuda", "cuda:1", "mps"."""
    if isinstance(name, torch.device):
        name = str(name)
    if not isinstance(name, str):
        raise TypeError(f"name: expected a device name such as 'auto', 'cpu', 'cuda', 'cuda:0', 'mps', "
                        f"got {type(name).__name__}")
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise ValueError(f"name: expected 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps', got {name!r}") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"name: {name!r} requested but CUDA is not available here; use 'auto' or 'cpu'")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ValueError(f"name: {name!r} requested but only {torch.cuda.device_count()} CUDA device(s) exist")
    if device.type == "mps" and not _mps_available():
        raise ValueError("name: 'mps' requested but MPS is not available here; use 'auto' or 'cpu'")
    return device


def autocast(device: torch.device | str, precision: str = "fp32"):
    """A context that runs matmuls in bf16/fp16 ("fp32": a no-op). Works on CPU (bf16/fp16), CUDA and MPS."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision: expected one of {sorted(PRECISIONS)}, got {precision!r}")
    dtype = PRECISIONS[precision]
    if dtype is None:
        return contextlib.nullcontext()
    device_type = torch.device(device).type
    return torch.autocast(device_type=device_type, dtype=dtype)


def needs_grad_scaler(precision: str) -> bool:
    """fp16 gradients underflow without loss scaling; bf16 has fp32's exponent range and needs none."""
    return precision == "fp16"


def maybe_compile(model: nn.Module, enabled: bool = True, **kwargs) -> nn.Module:
    """torch.compile(model) when enabled (the compiled wrapper shares the parameters); otherwise the model."""
    if not enabled:
        return model
    return torch.compile(model, **kwargs)
