"""Positional information: the paper's fixed sinusoids (default) or learned position vectors (an option).

Attention is blind to order (permuting the tokens permutes its outputs), so a vector that depends on the
position is added to every token embedding.
"""
from __future__ import annotations

import functools

import numpy as np


__all__ = ["sinusoidal_encoding", "sinusoidal_positions_forward", "sinusoidal_positions_backward",
           "init_learned_positions", "learned_positions_forward", "learned_positions_backward"]


@functools.lru_cache(maxsize=16)
def _sinusoidal_table(max_len: int, d_model: int, dtype_name: str) -> np.ndarray:
    table = sinusoidal_encoding(max_len, d_model, dtype_name)  # (max_len, D)
    table.flags.writeable = False                        # shared between calls: nobody may modify it
    return table


def sinusoidal_encoding(max_len: int, d_model: int, dtype=np.float32) -> np.ndarray:
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


def _check_length(x: np.ndarray, offset: int, max_len: int) -> None:
    if not isinstance(x, np.ndarray) or x.ndim != 3:
        raise ValueError(f"x: expected shape (B, T, D), got {getattr(x, 'shape', type(x).__name__)}")
    if offset + x.shape[1] > max_len:
        raise ValueError(f"x: expected at most max_len={max_len} positions (offset {offset} + length "
                         f"{x.shape[1]}); raise ModelConfig.max_len")


def sinusoidal_positions_forward(x: np.ndarray, max_len: int, offset: int = 0) -> tuple[np.ndarray, None]:
    """x + PE[offset : offset + T] (offset > 0 when decoding one position at a time). No parameters."""
    _check_length(x, offset, max_len)
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
    _check_length(x, offset, P.shape[0])
    B, T, D = x.shape
    if D != P.shape[1]:
        raise ValueError(f"x: expected last axis d_model={P.shape[1]}, got shape {x.shape}")
    return x + P[offset:offset + T], (P.shape, offset, T)  # (B, T, D) + (T, D) -> (B, T, D)


def learned_positions_backward(dout: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    """Row offset + t of P received dout[:, t] from every sequence of the batch; other rows get zeros."""
    shape, offset, T = cache
    dP = np.zeros(shape, dtype=dout.dtype)               # (max_len, D)
    dP[offset:offset + T] = dout.sum(axis=0)             # (T, D)
    return dout, {"P": dP}
