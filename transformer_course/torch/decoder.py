"""The decoder: N layers of masked self-attention, cross-attention to the encoder output, and feed-forward."""
from __future__ import annotations

import torch
from torch import nn

from .attention import KVCache, MultiHeadAttention
from .feedforward import FeedForward
from .layernorm import LayerNorm
from .sublayer import residual

__all__ = ["DecoderLayer", "Decoder", "DecoderCache"]


class DecoderCache:
    """What incremental decoding keeps: per layer, the self-attention keys/values of every past position
    (grown by one position per step) and the cross-attention keys/values of the source (computed once)."""

    def __init__(self, n_layers: int):
        self.layers = [(KVCache(static=False), KVCache(static=True)) for _ in range(n_layers)]
        self.length = 0                                  # positions decoded so far: the next position's index

    def reorder(self, index: torch.Tensor, include_static: bool = False) -> None:
        """Keep batch rows `index` (beam search follows its surviving beams). The cross-attention keys depend
        on the source only, so they are copied only when asked (once, to go from one row per source to K)."""
        for self_cache, cross_cache in self.layers:
            self_cache.reorder(index)
            if include_static:
                cross_cache.reorder(index)


class DecoderLayer(nn.Module):
    """Submodules: self_attn, cross_attn, ffn, norm1, norm2, norm3 (the NumPy twin's parameter keys)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 attention_dropout: float = 0.0, norm_first: bool = False, eps: float = 1e-5,
                 positional: str | None = None, max_len: int = 512, fused: bool = True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, attention_dropout, positional, max_len, fused)
        # no position term: the decoder's queries and the memory's keys have no common position axis
        self.cross_attn = MultiHeadAttention(d_model, n_heads, attention_dropout, fused=fused)
        self.ffn = FeedForward(d_model, d_ff)
        self.norm1 = LayerNorm(d_model, eps)
        self.norm2 = LayerNorm(d_model, eps)
        self.norm3 = LayerNorm(d_model, eps)
        self.dropout = dropout                           # on each sublayer's output (paper section 5.4)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                cross_mask: torch.Tensor | None = None, need_weights: bool = False,
                cache: tuple[KVCache, KVCache] | None = None
                ) -> tuple[torch.Tensor, tuple[torch.Tensor | None, torch.Tensor | None]]:
        """x (B, T, D), memory (B, S, D), self_mask (B or 1, T or 1, T), cross_mask (B or 1, T or 1, S)
        -> (x (B, T, D), (self weights (B, H, T, T), cross weights (B, H, T, S)) or (None, None)).
        With `cache` (this layer's self- and cross-attention caches, while generating) x holds the new
        positions only."""
        self_cache, cross_cache = cache or (None, None)
        self_weights = cross_weights = None

        def self_attention(h):
            nonlocal self_weights
            out, self_weights = self.self_attn(h, h, self_mask, need_weights, self_cache)  # (B, T, D)
            return out

        def cross_attention(h):
            nonlocal cross_weights
            out, cross_weights = self.cross_attn(h, memory, cross_mask, need_weights, cross_cache)  # (B, T, D)
            return out

        x = residual(x, self_attention, self.norm1, self.norm_first, self.dropout, self.training)   # (B, T, D)
        x = residual(x, cross_attention, self.norm2, self.norm_first, self.dropout, self.training)  # (B, T, D)
        x = residual(x, self.ffn, self.norm3, self.norm_first, self.dropout, self.training)         # (B, T, D)
        return x, (self_weights, cross_weights)


class Decoder(nn.Module):
    """A stack of n_layers DecoderLayers; pre-LN stacks end with a LayerNorm (`norm`)."""

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 attention_dropout: float = 0.0, norm_first: bool = False, eps: float = 1e-5,
                 positional: str | None = None, max_len: int = 512, fused: bool = True):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(d_model, n_heads, d_ff, dropout=dropout,
                                                  attention_dropout=attention_dropout, norm_first=norm_first,
                                                  eps=eps, positional=positional, max_len=max_len, fused=fused)
                                     for _ in range(n_layers)])
        self.norm = LayerNorm(d_model, eps) if norm_first else None

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                cross_mask: torch.Tensor | None = None, need_weights: bool = False,
                cache: DecoderCache | None = None) -> tuple[torch.Tensor, dict | None]:
        """x (B, T, D), memory (B, S, D) -> (x (B, T, D), {"self": [...], "cross": [...]} or None). With `cache`
        (while generating) x holds the positions after those cached, and the cache counts them."""
        if memory.dim() != 3 or memory.shape[0] != x.shape[0] or memory.shape[2] != x.shape[2]:
            raise ValueError(f"memory: expected shape (B={x.shape[0]}, S, d_model={x.shape[2]}), "
                             f"got {tuple(memory.shape)}")
        self_weights, cross_weights = [], []
        for i, layer in enumerate(self.layers):
            layer_cache = None if cache is None else cache.layers[i]
            x, (w_self, w_cross) = layer(x, memory, self_mask, cross_mask, need_weights, layer_cache)  # (B, T, D)
            self_weights.append(w_self)
            cross_weights.append(w_cross)
        if self.norm is not None:
            x = self.norm(x)                             # (B, T, D)
        if cache is not None:
            cache.length += x.shape[1]
        return x, ({"self": self_weights, "cross": cross_weights} if need_weights else None)
