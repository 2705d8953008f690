"""Token embeddings, multiplied by sqrt(d_model) as in the paper (section 3.4)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Embedding", "check_tokens"]


def check_tokens(tokens: torch.Tensor, vocab_size: int, name: str = "tokens") -> None:
    """Raise a clear error for a non-integer tensor, a wrong rank or ids outside [0, vocab_size)."""
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor of token ids, got {type(tokens).__name__}")
    if tokens.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{name}: expected an int64 or int32 tensor, got {tokens.dtype}")
    if tokens.dim() != 2:
        raise ValueError(f"{name}: expected shape (B, T), got {tuple(tokens.shape)}")
    if tokens.numel() and not torch.compiler.is_compiling():  # a data-dependent check: skipped when compiled
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= vocab_size:
            raise ValueError(f"{name}: expected ids in [0, {vocab_size}), got values in [{low}, {high}]")


class Embedding(nn.Module):
    """E[tokens] * sqrt(d_model); E (V, D) ~ N(0, d_model^-0.5), so the scaled vectors have unit-size entries.

    With weight tying the output layer reuses E: logits = x E^T.
    """

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True):
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.scale = scale
        self.E = nn.Parameter(torch.empty(vocab_size, d_model))
        nn.init.normal_(self.E, mean=0.0, std=d_model ** -0.5)

    def forward(self, tokens: torch.Tensor, name: str = "tokens") -> torch.Tensor:
        """tokens (B, T) -> (B, T, D); `name` is the argument that errors about bad ids name."""
        check_tokens(tokens, self.vocab_size, name)
        x = F.embedding(tokens, self.E)                  # (B, T) -> (B, T, D)
        if self.scale:
            x = x * math.sqrt(self.d_model)              # (B, T, D); a Python float keeps the dtype
        return x
