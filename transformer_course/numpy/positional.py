"""Positional information: the paper's fixed sinusoids (default) or learned position vectors (an option), both
added to the token embeddings; or, inside self-attention, rotary position embeddings (RoPE) or ALiBi's linear
biases.

Attention is blind to order (permuting the tokens permutes its outputs). The paper adds a vector that depends
on the position to every token embedding. RoPE (Su et al. 2021) instead rotates each query and key by an angle
proportional to its position, so that their dot product depends on the offset between the two positions only;
ALiBi (Press et al. 2022) adds -rho_m |pos_q - pos_k| to head m's score of a query at pos_q for a key at pos_k, a
penalty that grows with the distance. Both act in self-attention only: a query of the decoder and a key of the
encoder's memory have no common position axis, so cross-attention gets no position term.
"""
from __future__ import annotations

import functools

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["sinusoidal_encoding", "check_length", "sinusoidal_positions_forward", "sinusoidal_positions_backward",
           "init_learned_positions", "learned_positions_forward", "learned_positions_backward",
           "rotary_angles", "rotary_positions_forward", "rotary_positions_backward", "alibi_slopes", "alibi_bias"]


@functools.lru_cache(maxsize=16)
def _sinusoidal_table(max_len: int, d_model: int, dtype_name: str) -> np.ndarray:
    table = sinusoidal_encoding(max_len, d_model, dtype_name)  # (max_len, D)
    table.flags.writeable = False                        # shared between calls: nobody may modify it
    return table


def sinusoidal_encoding(max_len: int, d_model: int, dtype: DTypeLike = np.float32) -> np.ndarray:
    """PE[pos, 2i] = sin(pos / 10000^(2i / d_model)), PE[pos, 2i + 1] = cos(pos / 10000^(2i / d_model)).

    Computed in float64 (so it equals the PyTorch table to the last bit), returned as `dtype`; a fresh copy.
    """
    if not isinstance(max_len, (int, np.integer)) or not isinstance(d_model, (int, np.integer)) \
            or max_len <= 0 or d_model <= 0:
        raise ValueError(f"max_len, d_model: expected positive ints, got {max_len!r}, {d_model!r}")
    pos = np.arange(max_len, dtype=np.float64)[:, None]  # (max_len, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)   # (ceil(D / 2),): the even column indices 2i
    angle = pos / np.power(10000.0, two_i / d_model)     # (max_len, ceil(D / 2))
    pe = np.zeros((max_len, d_model), dtype=np.float64)  # (max_len, D)
    pe[:, 0::2] = np.sin(angle)                          # even columns
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])       # odd columns
    return pe.astype(dtype)                              # (max_len, D)


def check_length(x: np.ndarray, offset: int, max_len: int) -> None:
    """x (B, T, D) must fit positions offset .. offset + T - 1 below max_len (the longest sequence accepted)."""
    if not isinstance(x, np.ndarray) or x.ndim != 3:
        raise ValueError(f"x: expected shape (B, T, D), got {getattr(x, 'shape', type(x).__name__)}")
    if offset + x.shape[1] > max_len:
        raise ValueError(f"x: expected at most max_len={max_len} positions (offset {offset} + length "
                         f"{x.shape[1]}); raise ModelConfig.max_len")


def sinusoidal_positions_forward(x: np.ndarray, max_len: int, offset: int = 0) -> tuple[np.ndarray, None]:
    """x + PE[offset : offset + T] (offset > 0 when decoding one position at a time). No parameters."""
    check_length(x, offset, max_len)
    B, T, D = x.shape
    pe = _sinusoidal_table(max_len, D, x.dtype.name)     # (max_len, D), cached per (max_len, D, dtype)
    return x + pe[offset:offset + T], None               # (B, T, D) + (T, D) -> (B, T, D)


def sinusoidal_positions_backward(dout: np.ndarray, cache: None) -> np.ndarray:
    """The table is a constant: the gradient passes through unchanged."""
    return dout                                          # (B, T, D)


def init_learned_positions(rng: np.random.Generator, max_len: int, d_model: int, dtype=np.float32) -> dict:
    """P (max_len, D) ~ N(0, d_model^-0.5), like the embeddings. An option (Gehring et al. 2017)."""
    return {"P": rng.normal(0.0, d_model ** -0.5, size=(max_len, d_model)).astype(dtype)}  # (max_len, D)


def learned_positions_forward(x: np.ndarray, params: dict, offset: int = 0) -> tuple[np.ndarray, tuple]:
    """x + P[offset : offset + T]."""
    P = params["P"]
    check_length(x, offset, P.shape[0])
    B, T, D = x.shape
    if P.shape[1] != D:
        raise ValueError(f"x: expected last axis d_model={P.shape[1]}, got shape {x.shape}")
    return x + P[offset:offset + T], (P.shape, offset, T)  # (B, T, D) + (T, D) -> (B, T, D)


def learned_positions_backward(dout: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    """Row offset + t of P received dout[:, t] from every sequence of the batch; other rows get zeros."""
    shape, offset, T = cache
    dP = np.zeros(shape, dtype=dout.dtype)               # (max_len, D)
    dP[offset:offset + T] = dout.sum(axis=0)             # (T, D)
    return dout, {"P": dP}


# ---------------------------------------------------------------- rotary position embeddings (Su et al. 2021)

def _check_rotary_base(base) -> None:
    if isinstance(base, bool) or not isinstance(base, (int, float, np.integer, np.floating)) or not base > 1:
        raise ValueError(f"base: expected a number greater than 1 (the paper's 10000; schemes for longer inputs "
                         f"raise it), got {base!r}")


def rotary_angles(positions: np.ndarray, d_head: int, base: float = 10000.0) -> np.ndarray:
    """phi[pos, i] = pos * omega_i, omega_i = base^(-2i / Dh), for each position pos and pair i = 0 .. Dh/2 - 1:
    the angle by which pair (2i, 2i + 1) of a query or key at position pos is rotated. Float64 (the PyTorch
    twin's table agrees). `base` is 10000 in Su et al.; stretching RoPE to longer inputs raises it."""
    if not isinstance(d_head, (int, np.integer)) or d_head <= 0 or d_head % 2:
        raise ValueError(f"d_head: rotary embeddings rotate pairs of dimensions, so the head width must be a "
                         f"positive even number; got {d_head!r}")
    _check_rotary_base(base)
    inverse_frequency = np.power(float(base), -np.arange(0, d_head, 2, dtype=np.float64) / d_head)  # (Dh/2,)
    return np.asarray(positions, dtype=np.float64)[:, None] * inverse_frequency  # (T, Dh/2)


def rotary_positions_forward(x: np.ndarray, offset: int = 0, base: float = 10000.0) -> tuple[np.ndarray, tuple]:
    """Rotate each pair (x[..., 2i], x[..., 2i+1]) of x (B, H, T, Dh) by the angle of its position offset + t
    (frequencies omega_i = base^(-2i / Dh), see `rotary_angles`).

    As complex numbers, pair i becomes (x_2i + j x_2i+1) e^(j pos omega_i), so a query at position pos_q and a key
    at pos_k score Re(sum_i q^(i) conj(k^(i)) e^(j (pos_q - pos_k) omega_i)): a function of the offset only.
    """
    if not isinstance(x, np.ndarray) or x.ndim != 4:
        raise ValueError(f"x: expected shape (B, H, T, Dh), got {getattr(x, 'shape', type(x).__name__)}")
    T, Dh = x.shape[2], x.shape[3]
    angles = rotary_angles(np.arange(offset, offset + T), Dh, base)  # (T, Dh/2)
    cos, sin = np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)  # (T, Dh/2) each
    even, odd = x[..., 0::2], x[..., 1::2]              # (B, H, T, Dh/2) each
    rotated = np.stack([even * cos - odd * sin,          # the 2-D rotation of every pair ...
                        even * sin + odd * cos], axis=-1)  # (B, H, T, Dh/2, 2)
    return rotated.reshape(x.shape), (cos, sin)          # ... interleaved back: (B, H, T, Dh)


def rotary_positions_backward(dout: np.ndarray, cache: tuple) -> np.ndarray:
    """A rotation's transpose is the rotation by the opposite angle: the gradient is rotated back."""
    cos, sin = cache
    deven, dodd = dout[..., 0::2], dout[..., 1::2]      # (B, H, T, Dh/2) each
    dx = np.stack([deven * cos + dodd * sin,             # the transposed rotation of every pair
                   -deven * sin + dodd * cos], axis=-1)  # (B, H, T, Dh/2, 2)
    return dx.reshape(dout.shape)                        # (B, H, T, Dh)


# ---------------------------------------------------------------- ALiBi (Press et al. 2022)

def alibi_slopes(n_heads: int) -> np.ndarray:
    """The slope rho_m of head m = 1 .. H (entry m - 1): for H a power of two rho_m = 2^(-8m / H), Press et al.'s
    geometric slopes (1/2, 1/4, ..., 1/256 for H = 8). For other H their released code takes the slopes for the
    power of two below H, then every other slope for twice that power (m = 1, 3, 5, ...) for the remaining
    heads; so does this function."""
    if not isinstance(n_heads, (int, np.integer)) or n_heads <= 0:
        raise ValueError(f"n_heads: expected a positive int, got {n_heads!r}")
    power = 2 ** int(np.floor(np.log2(n_heads)))        # the largest power of two <= H
    slopes = [2.0 ** (-8.0 * h / power) for h in range(1, power + 1)]
    if power < n_heads:
        slopes += [2.0 ** (-8.0 * h / (2 * power)) for h in range(1, 2 * power + 1, 2)][:n_heads - power]
    return np.array(slopes, dtype=np.float64)            # (H,)


def alibi_bias(n_heads: int, n_queries: int, n_keys: int, offset: int = 0, dtype: DTypeLike = np.float32) -> np.ndarray:
    """bias[m - 1, q, k] = -rho_m |pos_q - pos_k| for head m, query q at pos_q = offset + q and key k at pos_k = k:
    added to head m's scores, it lowers a key's score linearly with its distance from the query. In the decoder
    the causal mask hides pos_k > pos_q, so this is Press et al.'s -rho_m (pos_q - pos_k); in the encoder, which
    they did not use, both directions are penalised alike (the course's choice). No parameters."""
    slopes = alibi_slopes(n_heads)                       # (H,)
    distance = np.abs(np.arange(offset, offset + n_queries)[:, None] - np.arange(n_keys)[None, :])  # (Tq, Tk)
    return (-slopes[:, None, None] * distance).astype(dtype)  # (H, Tq, Tk)
