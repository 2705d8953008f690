"""The position-wise feed-forward network FFN(x) = max(0, x W_1 + b_1) W_2 + b_2 (paper eq. 2)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["FeedForward"]


class FeedForward(nn.Module):
    """Two linear maps with a ReLU between, applied to every position alone; Xavier uniform, zero biases.

    No dropout inside: the paper puts dropout on the sublayer's output (see `sublayer.residual`).
    """

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.W_1 = nn.Linear(d_model, d_ff)
        self.W_2 = nn.Linear(d_ff, d_model)
        for linear in (self.W_1, self.W_2):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The same two-layer network applied to every position alone: x (B, T, D) -> (B, T, D)."""
        if x.dim() != 3 or x.shape[-1] != self.W_1.in_features:
            raise ValueError(f"x: expected shape (B, T, d_model={self.W_1.in_features}), got {tuple(x.shape)}")
        pre = F.linear(x, self.W_1.weight, self.W_1.bias)  # (B, T, D) -> (B, T, F)
        h = F.relu(pre)                                  # (B, T, F)
        out = F.linear(h, self.W_2.weight, self.W_2.bias)  # (B, T, F) -> (B, T, D)
        return out
