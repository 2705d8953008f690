"""Attention masks: boolean tensors, True = may attend (the same semantics as the NumPy twin).

Shapes are (B or 1, Tq or 1, Tk); multi-head attention inserts the head axis itself.
"""
from __future__ import annotations

import torch

__all__ = ["padding_mask", "lengths_to_mask", "causal_mask", "combine_masks"]


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """True where the key is a real token, so nothing attends to padding."""
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
        raise ValueError(f"tokens: expected an integer tensor of shape (B, S), got "
                         f"{tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__}")
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
    """True on and below the diagonal: position t sees positions 0 .. t and never the future."""
    if not isinstance(T, int) or T <= 0:
        raise ValueError(f"T: expected a positive int, got {T!r}")
    mask = torch.ones(T, T, dtype=torch.bool, device=device).tril()  # (T, T)
    return mask[None]                                    # (T, T) -> (1, T, T)


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of masks that broadcast over their leading axes (B or 1, Tq or 1, Tk); None entries are skipped."""
    present = [m for m in masks if m is not None]
    if not present:
        return None
    for i, m in enumerate(present):
        if m.dtype != torch.bool or m.dim() != 3:
            raise ValueError(f"masks[{i}]: expected a bool tensor of shape (B or 1, Tq or 1, Tk), got "
                             f"{m.dtype} {tuple(m.shape)}")
    out = present[0]
    for m in present[1:]:
        out = out & m                                    # (B, Tq, Tk)
    return out
