"""Positional information: the paper's fixed sinusoids (default) or learned position vectors (an option), both
added to the token embeddings; or, inside self-attention, rotary position embeddings (RoPE, Su et al. 2021) or
ALiBi's linear biases (Press et al. 2022). Cross-attention gets no position term (see the NumPy twin)."""
from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["sinusoidal_encoding", "check_length", "SinusoidalPositions", "LearnedPositions", "rotary_angles",
           "RotaryPositions", "alibi_slopes", "alibi_bias"]


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


def check_length(x: torch.Tensor, offset: int, max_len: int) -> None:
    """x (B, T, D) must fit positions offset .. offset + T - 1 below max_len (the longest sequence accepted)."""
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
        check_length(x, offset, self.max_len)
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
        check_length(x, offset, self.max_len)
        T = x.shape[1]
        return x + self.P[offset:offset + T]             # (B, T, D) + (T, D) -> (B, T, D)


# ---------------------------------------------------------------- rotary position embeddings (Su et al. 2021)

def _check_rotary_base(base) -> None:
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not base > 1:
        raise ValueError(f"base: expected a number greater than 1 (the paper's 10000; schemes for longer inputs "
                         f"raise it), got {base!r}")


def rotary_angles(positions: torch.Tensor, d_head: int, base: float = 10000.0) -> torch.Tensor:
    """phi[pos, i] = pos * base^(-2i / Dh): the angle by which pair (2i, 2i + 1) at position pos is rotated
    (float64, as the NumPy twin). `base` is 10000 in Su et al.; stretching RoPE to longer inputs raises it."""
    if not isinstance(d_head, int) or d_head <= 0 or d_head % 2:
        raise ValueError(f"d_head: rotary embeddings rotate pairs of dimensions, so the head width must be a "
                         f"positive even number; got {d_head!r}")
    _check_rotary_base(base)
    inverse_frequency = torch.pow(float(base), -torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (Dh/2,)
    return positions.to(torch.float64)[:, None] * inverse_frequency  # (T, Dh/2)


class RotaryPositions(nn.Module):
    """Rotates each pair (x[..., 2i], x[..., 2i+1]) of queries or keys x (B, H, T, Dh) by the angle of its
    position offset + t; a query at pos_q and a key at pos_k then score a function of pos_q - pos_k only.
    No parameters."""

    def __init__(self, d_head: int, max_len: int, base: float = 10000.0):
        super().__init__()
        self.max_len, self.base = max_len, base
        angles = rotary_angles(torch.arange(max_len), d_head, base)  # (max_len, Dh/2)
        # buffers (they move with .to(device)) that are not saved: functions of (max_len, d_head)
        self.register_buffer("cos", torch.cos(angles).float(), persistent=False)  # (max_len, Dh/2)
        self.register_buffer("sin", torch.sin(angles).float(), persistent=False)  # (max_len, Dh/2)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        T = x.shape[2]
        if offset + T > self.max_len:
            raise ValueError(f"x: expected at most max_len={self.max_len} positions (offset {offset} + length "
                             f"{T}); raise ModelConfig.max_len")
        if x.dtype == torch.float64:                     # float64 checks: angles not rounded to float32
            angles = rotary_angles(torch.arange(offset, offset + T), x.shape[-1], self.base).to(x.device)  # (T, Dh/2)
            cos, sin = torch.cos(angles), torch.sin(angles)
        else:
            cos = self.cos[offset:offset + T].to(x.dtype)  # (T, Dh/2)
            sin = self.sin[offset:offset + T].to(x.dtype)  # (T, Dh/2)
        even, odd = x[..., 0::2], x[..., 1::2]           # (B, H, T, Dh/2) each
        rotated = torch.stack([even * cos - odd * sin,   # the 2-D rotation of every pair ...
                               even * sin + odd * cos], dim=-1)  # (B, H, T, Dh/2, 2)
        return rotated.flatten(-2)                       # ... interleaved back: (B, H, T, Dh)


# ---------------------------------------------------------------- ALiBi (Press et al. 2022)

def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The slope rho_m of head m = 1 .. H (entry m - 1): rho_m = 2^(-8m / H) for H a power of two (Press et al.);
    for other H, the slopes for the power of two below H, then every other slope for twice that power
    (m = 1, 3, 5, ...): their released code's rule, as in the NumPy twin."""
    if not isinstance(n_heads, int) or n_heads <= 0:
        raise ValueError(f"n_heads: expected a positive int, got {n_heads!r}")
    power = 2 ** math.floor(math.log2(n_heads))            # the largest power of two <= H
    slopes = [2.0 ** (-8.0 * h / power) for h in range(1, power + 1)]
    if power < n_heads:
        slopes += [2.0 ** (-8.0 * h / (2 * power)) for h in range(1, 2 * power + 1, 2)][:n_heads - power]
    return torch.tensor(slopes, dtype=torch.float64)    # (H,)


def alibi_bias(n_heads: int, n_queries: int, n_keys: int, offset: int = 0, device: torch.device | None = None,
               dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """bias[m - 1, q, k] = -rho_m |pos_q - pos_k| (H, Tq, Tk) for head m, query q at pos_q = offset + q and key k
    at pos_k = k, added to head m's scores: a key's score falls linearly with its distance from the query. The
    decoder's causal mask hides pos_k > pos_q (Press et al.'s -rho_m (pos_q - pos_k)); the encoder penalises
    both directions alike (the course's choice). No parameters."""
    # slopes 2^(-8m/H) times whole distances: exact in float32 when H is a power of two up to 8 (the slopes are then
    # powers of two); float32 either way, since MPS has no float64; float64 kept for checks
    work = torch.float64 if dtype == torch.float64 else torch.float32
    slopes = alibi_slopes(n_heads).to(work).to(device)  # (H,)
    queries = torch.arange(offset, offset + n_queries, device=device)  # (Tq,)
    keys = torch.arange(n_keys, device=device)           # (Tk,)
    distance = (queries[:, None] - keys[None, :]).abs().to(work)  # (Tq, Tk)
    return (-slopes[:, None, None] * distance).to(dtype)  # (H, Tq, Tk)
