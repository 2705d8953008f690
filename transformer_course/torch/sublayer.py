"""The residual connection around every sublayer, with the norm after (post-LN, the paper) or before (pre-LN).

    post-LN (paper):  out = LayerNorm(x + Dropout(Sublayer(x)))
    pre-LN:           out = x + Dropout(Sublayer(LayerNorm(x)))

The sublayer is passed in as a function, so the same code wraps self-attention, cross-attention and the
feed-forward network.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["residual"]


def residual(x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor], norm: nn.Module,
             norm_first: bool = False, dropout: float = 0.0, training: bool = False) -> torch.Tensor:
    """`sublayer(h) -> out` is the wrapped sublayer, `norm` its LayerNorm, `dropout` the probability of
    dropping an entry of its output while training. Returns out (B, T, D).

    Pre-LN (tensor2tensor; Baevski & Auli 2019; Wang et al. 2019; GPT-2; analysed by Xiong et al. 2020) keeps
    an un-normalised residual path, which can train without warm-up (large pre-LN models still usually use a short
    one); the stack then needs a final LayerNorm
    (Encoder / Decoder add it).
    """
    if norm_first:
        h = norm(x)                                      # (B, T, D)
        sub = sublayer(h)                                # (B, T, D)
        if training:                                     # dropout is the identity otherwise
            sub = F.dropout(sub, dropout)                # (B, T, D)
        out = x + sub                                    # (B, T, D)
    else:
        sub = sublayer(x)                                # (B, T, D)
        if training:
            sub = F.dropout(sub, dropout)                # (B, T, D)
        out = norm(x + sub)                              # (B, T, D)
    return out
