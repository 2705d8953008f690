"""The encoder: N identical layers of self-attention and feed-forward, each wrapped in a residual + LayerNorm."""
from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadAttention
from .feedforward import FeedForward
from .layernorm import LayerNorm
from .sublayer import residual

__all__ = ["EncoderLayer", "Encoder"]


class EncoderLayer(nn.Module):
    """x -> residual(self-attention) -> residual(feed-forward). Submodules: self_attn, ffn, norm1, norm2.
    positional="rope" or "alibi" puts the position term in the self-attention (see `MultiHeadAttention`)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 attention_dropout: float = 0.0, norm_first: bool = False, eps: float = 1e-5,
                 positional: str | None = None, max_len: int = 512, fused: bool = True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, attention_dropout, positional, max_len, fused)
        self.ffn = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model, eps)
        self.norm2 = LayerNorm(d_model, eps)
        self.dropout = dropout                           # on each sublayer's output (paper section 5.4)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, S, D), mask (B or 1, S or 1, S) -> (x (B, S, D), self-attention weights (B, H, S, S) or None)."""
        weights = None

        def self_attention(h):                           # keeps the weights for the caller
            nonlocal weights
            out, weights = self.self_attn(h, h, mask, need_weights)  # (B, S, D)
            return out

        x = residual(x, self_attention, self.norm1, self.norm_first, self.dropout, self.training)  # (B, S, D)
        x = residual(x, self.ffn, self.norm2, self.norm_first, self.dropout, self.training)        # (B, S, D)
        return x, weights


class Encoder(nn.Module):
    """A stack of n_layers EncoderLayers; pre-LN stacks end with a LayerNorm (`norm`), as torch does."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 attention_dropout: float = 0.0, norm_first: bool = False, eps: float = 1e-5,
                 positional: str | None = None, max_len: int = 512, fused: bool = True):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(d_model, n_heads, d_ff, dropout=dropout,
                                                  attention_dropout=attention_dropout, norm_first=norm_first,
                                                  eps=eps, positional=positional, max_len=max_len, fused=fused)
                                     for _ in range(n_layers)])
        self.norm = LayerNorm(d_model, eps) if norm_first else None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                need_weights: bool = False) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """x (B, S, D) -> (memory (B, S, D), [weights (B, H, S, S) per layer] or None)."""
        all_weights = []
        for layer in self.layers:
            x, weights = layer(x, mask, need_weights)    # (B, S, D)
            all_weights.append(weights)
        if self.norm is not None:
            x = self.norm(x)                             # (B, S, D)
        return x, (all_weights if need_weights else None)
