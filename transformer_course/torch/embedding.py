"""Token embeddings, multiplied by sqrt(d_model) as in the paper (section 3.4), and the output projection that
may share (tie) the target embedding matrix (Press & Wolf 2017)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..checks import empty_batch_message, ids_message

__all__ = ["check_tokens", "Embedding", "output_projection"]


def check_tokens(tokens, vocab_size: int, name: str = "tokens") -> None:
    """Raise a clear error for a non-integer tensor, a wrong rank, an empty batch or ids outside [0, vocab_size)."""
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor of token ids, got {type(tokens).__name__}")
    if tokens.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{name}: expected an integer tensor (int64 or int32), got {tokens.dtype}")
    if tokens.dim() != 2:
        raise ValueError(f"{name}: expected shape (B, T), got {tuple(tokens.shape)}")
    if tokens.numel() == 0:
        raise ValueError(empty_batch_message(name, "(B, T)", tokens.shape))
    if not torch.compiler.is_compiling():                # a data-dependent check: skipped when compiled
        low, high = (int(bound) for bound in torch.aminmax(tokens))
        if low < 0 or high >= vocab_size:
            raise ValueError(ids_message(name, vocab_size, low, high))


class Embedding(nn.Module):
    """E[tokens] * sqrt(d_model); E (V, D) ~ N(0, d_model^-0.5), so the scaled vectors have unit-size entries.

    With weight tying the output layer reuses E: logits = y E^T.
    """

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True):
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.scale = scale
        self.E = nn.Parameter(torch.empty(vocab_size, d_model))
        nn.init.normal_(self.E, mean=0.0, std=d_model ** -0.5)

    def forward(self, tokens: torch.Tensor, name: str = "tokens") -> torch.Tensor:
        """E[tokens] * sqrt(d_model): a table lookup, (B, T) ids -> (B, T, D) vectors; `name` is the argument
        that errors about bad ids name."""
        check_tokens(tokens, self.vocab_size, name)
        factor = math.sqrt(self.d_model) if self.scale else 1.0  # a Python float keeps the dtype
        out = F.embedding(tokens, self.E) * factor       # (B, T) -> (B, T, D)
        return out


def output_projection(y: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """logits = y W^T with W (V, D): an untied W_out (nn.Linear's layout) or, with tying, the embedding E; no bias."""
    logits = F.linear(y, W)                              # (B, T, D) @ W^T with W (V, D) -> (B, T, V)
    return logits
