"""Positional information: the paper's fixed sinusoids (default) or learned position vectors (an option)."""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["sinusoidal_encoding", "SinusoidalPositions", "LearnedPositions"]


def sinusoidal_encoding(max_len: int, d_model: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i / d_model)), PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model)).

    Computed in float64 (so it equals the NumPy table to the last bit), returned in `dtype`.
    """
    if max_len <= 0 or d_model <= 0:
        raise ValueError(f"max_len, d_model: expected positive ints, got {max_len}, {d_model}")
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]          # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)           # (ceil(D / 2),)
    angle = pos / torch.pow(10000.0, two_i / d_model)                  # (max_len, ceil(D / 2))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)            # (max_len, D)
    pe[:, 0::2] = torch.sin(angle)                                     # even columns
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])                  # odd columns
    return pe.to(dtype)                                                # (max_len, D)


def _check_length(x: torch.Tensor, offset: int, max_len: int) -> None:
    if x.dim() != 3:
        raise ValueError(f"x: expected shape (B, T, D), got {tuple(x.shape)}")
    if offset + x.shape[1] > max_len:
        raise ValueError(f"x: expected at most max_len={max_len} positions (offset {offset} + length "
                         f"{x.shape[1]}); raise ModelConfig.max_len")


class SinusoidalPositions(nn.Module):
    """Adds the fixed sinusoidal table: x + PE[offset : offset + T] (offset > 0 while decoding with a cache)."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.max_len = max_len
        # a buffer (moves with .to(device)) that is not saved: it is a function of (max_len, d_model)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_length(x, offset, self.max_len)
        B, T, D = x.shape
        if x.dtype == torch.float64:                     # float64 checks: a table not rounded to float32
            pe = sinusoidal_encoding(offset + T, D, torch.float64).to(x.device)  # (offset + T, D)
        else:
            pe = self.pe                                 # (max_len, D); float32 (MPS has no float64)
        return x + pe[offset:offset + T].to(x.dtype)     # (B, T, D) + (T, D) -> (B, T, D)


class LearnedPositions(nn.Module):
    """Adds a learned vector per position, P (max_len, D), initialised N(0, d_model^-0.5) like the embeddings.

    An option (Gehring et al. 2017); the paper found it about as good as the sinusoids.
    """

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.max_len = max_len
        self.P = nn.Parameter(torch.empty(max_len, d_model))
        nn.init.normal_(self.P, mean=0.0, std=d_model ** -0.5)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        _check_length(x, offset, self.max_len)
        T = x.shape[1]
        return x + self.P[offset:offset + T]             # (B, T, D) + (T, D) -> (B, T, D)
