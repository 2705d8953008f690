"""Layer normalisation over the feature axis (Ba et al. 2016), the same maths as torch.nn.LayerNorm."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LayerNorm", "layernorm"]


def layernorm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """The explicit computation, line for line as in NumPy (biased variance, as torch.nn.LayerNorm)."""
    mean = x.mean(-1, keepdim=True)                      # (B, T, 1)
    var = x.var(-1, keepdim=True, unbiased=False)        # (B, T, 1)
    rstd = torch.rsqrt(var + eps)                        # (B, T, 1)
    xhat = (x - mean) * rstd                             # (B, T, D)
    return xhat * gamma + beta                           # (B, T, D)


class LayerNorm(nn.Module):
    """gamma * (x - mean) / sqrt(var + eps) + beta, computed by the fused kernel F.layer_norm (tested equal to
    the explicit `layernorm` above and to torch.nn.LayerNorm)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = d_model
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d_model))
        self.beta = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.d_model:
            raise ValueError(f"x: expected last axis d_model={self.d_model}, got shape {tuple(x.shape)}")
        return F.layer_norm(x, (self.d_model,), self.gamma, self.beta, self.eps)  # (B, T, D)
