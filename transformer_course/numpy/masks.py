"""Attention masks: boolean arrays, True = may attend (the same semantics as the PyTorch twin).

Shapes are (B or 1, Tq or 1, Tk): a padding mask is the same for every query (Tq axis 1), a causal mask the
same for every sequence (B axis 1). Multi-head attention inserts the head axis itself: (B, 1, Tq, Tk).
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["padding_mask", "lengths_to_mask", "causal_mask", "combine_masks", "check_mask"]


def padding_mask(tokens: np.ndarray, pad_id: int) -> np.ndarray:
    """True where the key is a real token, so nothing attends to padding."""
    if not isinstance(tokens, np.ndarray) or tokens.ndim != 2:
        got = tokens.shape if isinstance(tokens, np.ndarray) else type(tokens).__name__
        raise ValueError(f"tokens: expected an integer array of shape (B, S), got {got}")
    mask = tokens != pad_id                              # (B, S)
    return mask[:, None, :]                              # (B, S) -> (B, 1, S)


def lengths_to_mask(lengths: np.ndarray, max_len: int) -> np.ndarray:
    """True at positions 0 .. length-1 of each row: the mask of right-padded sequences of these lengths."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        raise ValueError(f"lengths: expected shape (B,), got {lengths.shape}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > max_len):
        raise ValueError(f"lengths: expected values in [0, max_len={max_len}], got "
                         f"[{lengths.min()}, {lengths.max()}]")
    positions = np.arange(max_len)                       # (S,)
    mask = positions[None, :] < lengths[:, None]         # (B, S)
    return mask[:, None, :]                              # (B, S) -> (B, 1, S)


def causal_mask(T: int) -> np.ndarray:
    """True on and below the diagonal: query i sees keys 0 .. i and never the future."""
    if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T <= 0:   # int or NumPy int
        raise ValueError(f"T: expected a positive int, got {T!r}")
    mask = np.tril(np.ones((T, T), dtype=bool))          # (T, T)
    return mask[None]                                    # (T, T) -> (1, T, T)


def combine_masks(*masks: np.ndarray | None) -> np.ndarray | None:
    """Logical AND of masks of shape (B or 1, Tq or 1, Tk), broadcast over the leading axes; None is skipped."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    for i, m in enumerate(present):
        if not isinstance(m, np.ndarray) or m.dtype != bool or m.ndim != 3:
            got = f"{m.dtype} {m.shape}" if isinstance(m, np.ndarray) else type(m).__name__
            raise ValueError(f"masks[{i}]: expected a bool array of shape (B or 1, Tq or 1, Tk), got {got}")
    out = present[0]
    for m in present[1:]:
        out = out & m                                    # (B, Tq, Tk)
    return out


def check_mask(mask, B: int, Tq: int, Tk: int, name: str = "mask") -> None:
    """Raise a ValueError unless mask is bool of shape (B or 1, Tq or 1, Tk)."""
    if not isinstance(mask, np.ndarray) or mask.dtype != bool:
        got = mask.dtype if isinstance(mask, np.ndarray) else type(mask).__name__
        raise ValueError(f"{name}: expected a bool array (True = may attend), got {got}")
    if mask.ndim != 3 or mask.shape[0] not in (1, B) or mask.shape[1] not in (1, Tq) or mask.shape[2] != Tk:
        raise ValueError(f"{name}: expected shape (B={B} or 1, Tq={Tq} or 1, Tk={Tk}), got {mask.shape}")
