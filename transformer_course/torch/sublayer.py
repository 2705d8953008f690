"""The residual connection around every sublayer, with the norm after (post-LN, the paper) or before (pre-LN)."""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

__all__ = ["residual"]


def residual(x: torch.Tensor, sublayer_fn: Callable[[torch.Tensor], torch.Tensor], norm: nn.Module,
             dropout: nn.Module, norm_first: bool = False) -> torch.Tensor:
    """Post-LN: LayerNorm(x + Dropout(Sublayer(x))) (paper). Pre-LN: x + Dropout(Sublayer(LayerNorm(x))).

    Pre-LN (Xiong et al. 2020) keeps an un-normalised residual path, which trains without warm-up; the stack
    then needs a final LayerNorm (Encoder / Decoder add it).
    """
    if norm_first:
        return x + dropout(sublayer_fn(norm(x)))         # (B, T, D)
    return norm(x + dropout(sublayer_fn(x)))             # (B, T, D)
