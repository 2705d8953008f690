"""Attention masks: boolean tensors, True = may attend (the same semantics as the NumPy twin).

Shapes are (B or 1, Tq or 1, Tk): a padding mask is the same for every query (Tq axis 1), a causal mask the
same for every sequence (B axis 1). Multi-head attention inserts the head axis itself: (B, 1, Tq, Tk).
"""
from __future__ import annotations

import numbers

import torch

__all__ = ["padding_mask", "lengths_to_mask", "causal_mask", "combine_masks", "check_mask"]


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """True where the key is a real token, so nothing attends to padding."""
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
        got = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
        raise ValueError(f"tokens: expected an integer tensor of shape (B, S), got {got}")
    mask = tokens != pad_id                              # (B, S)
    return mask[:, None, :]                              # (B, S) -> (B, 1, S)


def lengths_to_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """True at positions 0 .. length-1 of each row: the mask of right-padded sequences of these lengths."""
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1:
        raise ValueError(f"lengths: expected shape (B,), got {tuple(lengths.shape)}")
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > max_len):
        raise ValueError(f"lengths: expected values in [0, max_len={max_len}], got "
                         f"[{int(lengths.min())}, {int(lengths.max())}]")
    positions = torch.arange(max_len, device=lengths.device)  # (S,)
    mask = positions[None, :] < lengths[:, None]         # (B, S)
    return mask[:, None, :]                              # (B, S) -> (B, 1, S)


def causal_mask(T: int, device=None) -> torch.Tensor:
    """True on and below the diagonal: query i sees keys 0 .. i and never the future."""
    if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T <= 0:   # int or NumPy int
        raise ValueError(f"T: expected a positive int, got {T!r}")
    mask = torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)
    return mask[None]                                    # (T, T) -> (1, T, T)


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of masks of shape (B or 1, Tq or 1, Tk), broadcast over the leading axes; None is skipped."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    for i, m in enumerate(present):
        if not isinstance(m, torch.Tensor) or m.dtype != torch.bool or m.dim() != 3:
            got = f"{m.dtype} {tuple(m.shape)}" if isinstance(m, torch.Tensor) else type(m).__name__
            raise ValueError(f"masks[{i}]: expected a bool tensor of shape (B or 1, Tq or 1, Tk), got {got}")
    out = present[0]
    for m in present[1:]:
        out = out & m                                    # (B, Tq, Tk)
    return out


def check_mask(mask, B: int, Tq: int, Tk: int, name: str = "mask") -> None:
    """Raise a ValueError unless mask is bool of shape (B or 1, Tq or 1, Tk)."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"{name}: expected a bool tensor (True = may attend), got {got}")
    if mask.dim() != 3 or mask.shape[0] not in (1, B) or mask.shape[1] not in (1, Tq) or mask.shape[2] != Tk:
        raise ValueError(f"{name}: expected shape (B={B} or 1, Tq={Tq} or 1, Tk={Tk}), got {tuple(mask.shape)}")
