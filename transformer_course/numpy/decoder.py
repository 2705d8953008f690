"""The decoder: N layers of masked self-attention, cross-attention to the encoder output (the memory), and
feed-forward, each wrapped in a residual + LayerNorm."""
from __future__ import annotations

import numpy as np

from .attention import (
    init_multi_head_attention,
    multi_head_attention_backward,
    multi_head_attention_forward,
    self_attention_backward,
    self_attention_forward,
)
from .feedforward import feedforward_backward, feedforward_forward, init_feedforward
from .layernorm import init_layernorm, layernorm_backward, layernorm_forward
from .sublayer import residual_backward, residual_forward

__all__ = ["init_decoder_layer", "decoder_layer_forward", "decoder_layer_backward", "init_decoder",
           "decoder_forward", "decoder_backward"]


def init_decoder_layer(rng: np.random.Generator, d_model: int, n_heads: int, d_ff: int, dtype=np.float32) -> dict:
    """Keys: self_attn, cross_attn, ffn, norm1, norm2, norm3 (the PyTorch DecoderLayer's submodules)."""
    return {"self_attn": init_multi_head_attention(rng, d_model, n_heads, dtype),
            "cross_attn": init_multi_head_attention(rng, d_model, n_heads, dtype),
            "ffn": init_feedforward(rng, d_model, d_ff, dtype),
            "norm1": init_layernorm(d_model, dtype), "norm2": init_layernorm(d_model, dtype),
            "norm3": init_layernorm(d_model, dtype)}


def _cross_attention_backward(dout: np.ndarray, cache: dict) -> tuple[np.ndarray, tuple[dict, np.ndarray]]:
    """The queries came from the decoder (dh), the keys and values from the memory (passed on with the grads)."""
    (dx_q, dmemory), grads = multi_head_attention_backward(dout, cache)  # (B, T, D), (B, S, D)
    return dx_q, (grads, dmemory)


def decoder_layer_forward(x: np.ndarray, memory: np.ndarray, params: dict, n_heads: int,
                          self_mask: np.ndarray | None = None, cross_mask: np.ndarray | None = None,
                          dropout: float = 0.0, attention_dropout: float = 0.0, norm_first: bool = False,
                          eps: float = 1e-5, rng: np.random.Generator | None = None,
                          training: bool = False, positional: str | None = None) -> tuple[np.ndarray, dict]:
    """x (B, T, D), memory (B, S, D), self_mask (B or 1, T or 1, T), cross_mask (B or 1, T or 1, S)
    -> (x (B, T, D), cache); cache["weights"] = (self (B, H, T, T), cross (B, H, T, S)).
    positional="rope" or "alibi" acts in the self-attention only: the decoder's queries and the memory's keys
    have no common position axis, so cross-attention gets no position term."""
    def self_attention(h):
        return self_attention_forward(h, params["self_attn"], n_heads, self_mask, attention_dropout, rng,
                                      training, positional)  # (B, T, D)

    def cross_attention(h):
        return multi_head_attention_forward(h, memory, params["cross_attn"], n_heads, cross_mask,
                                            attention_dropout, rng, training)  # (B, T, D)

    def ffn(h):
        return feedforward_forward(h, params["ffn"])     # (B, T, D)

    x, self_cache = residual_forward(x, self_attention, self_attention_backward, params["norm1"], norm_first,
                                     dropout, rng, training, eps)  # (B, T, D)
    x, cross_cache = residual_forward(x, cross_attention, _cross_attention_backward, params["norm2"], norm_first,
                                      dropout, rng, training, eps)  # (B, T, D)
    x, ffn_cache = residual_forward(x, ffn, feedforward_backward, params["norm3"], norm_first, dropout, rng,
                                    training, eps)       # (B, T, D)
    weights = (self_cache["sublayer"]["weights"], cross_cache["sublayer"]["weights"])
    return x, {"self": self_cache, "cross": cross_cache, "ffn": ffn_cache, "weights": weights}


def decoder_layer_backward(dout: np.ndarray, cache: dict) -> tuple[tuple[np.ndarray, np.ndarray], dict]:
    """Returns ((dx (B, T, D), dmemory (B, S, D)), grads)."""
    dx, dnorm3, dffn = residual_backward(dout, cache["ffn"])                  # (B, T, D)
    dx, dnorm2, (dcross, dmemory) = residual_backward(dx, cache["cross"])     # (B, T, D), (B, S, D)
    dx, dnorm1, dself = residual_backward(dx, cache["self"])                  # (B, T, D)
    grads = {"self_attn": dself, "cross_attn": dcross, "ffn": dffn, "norm1": dnorm1, "norm2": dnorm2,
             "norm3": dnorm3}
    return (dx, dmemory), grads


def init_decoder(rng: np.random.Generator, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 norm_first: bool = False, dtype=np.float32) -> dict:
    """{"layers": [layer params] * n_layers}, plus "norm" (the final LayerNorm) for a pre-LN stack."""
    params = {"layers": [init_decoder_layer(rng, d_model, n_heads, d_ff, dtype) for _ in range(n_layers)]}
    if norm_first:
        params["norm"] = init_layernorm(d_model, dtype)
    return params


def decoder_forward(x: np.ndarray, memory: np.ndarray, params: dict, n_heads: int,
                    self_mask: np.ndarray | None = None, cross_mask: np.ndarray | None = None,
                    dropout: float = 0.0, attention_dropout: float = 0.0, norm_first: bool = False,
                    eps: float = 1e-5, rng: np.random.Generator | None = None,
                    training: bool = False, positional: str | None = None) -> tuple[np.ndarray, dict]:
    """x (B, T, D), memory (B, S, D) -> (x (B, T, D), cache); cache["weights"] = {"self": [...], "cross": [...]}."""
    if norm_first != ("norm" in params):
        raise ValueError(f"params: a {'pre' if norm_first else 'post'}-LN decoder (norm_first={norm_first}) "
                         f"{'needs' if norm_first else 'has no'} a final 'norm'; got keys {sorted(params)}")
    if not isinstance(memory, np.ndarray) or memory.ndim != 3 or memory.shape[0] != x.shape[0] \
            or memory.shape[2] != x.shape[2]:
        raise ValueError(f"memory: expected shape (B={x.shape[0]}, S, d_model={x.shape[2]}), "
                         f"got {getattr(memory, 'shape', type(memory).__name__)}")
    # by keyword: seven settings, two of them dropouts, are easy to swap unnoticed in a row
    settings = dict(dropout=dropout, attention_dropout=attention_dropout, norm_first=norm_first, eps=eps, rng=rng,
                    training=training, positional=positional)
    layer_caches = []
    for layer_params in params["layers"]:
        x, layer_cache = decoder_layer_forward(x, memory, layer_params, n_heads, self_mask, cross_mask,
                                               **settings)  # (B, T, D)
        layer_caches.append(layer_cache)
    norm_cache = None
    if norm_first:
        x, norm_cache = layernorm_forward(x, params["norm"], eps)  # (B, T, D)
    weights = {"self": [c["weights"][0] for c in layer_caches], "cross": [c["weights"][1] for c in layer_caches]}
    return x, {"layers": layer_caches, "norm": norm_cache, "memory_shape": memory.shape, "weights": weights}


def decoder_backward(dout: np.ndarray, cache: dict) -> tuple[tuple[np.ndarray, np.ndarray], dict]:
    """Returns ((dx (B, T, D), dmemory (B, S, D)), grads); every layer read the memory, so dmemory sums them."""
    grads = {}
    dx = dout                                            # (B, T, D)
    if cache["norm"] is not None:
        dx, grads["norm"] = layernorm_backward(dx, cache["norm"])  # (B, T, D)
    dmemory = np.zeros(cache["memory_shape"], dtype=dout.dtype)  # (B, S, D)
    layer_grads = []
    for layer_cache in reversed(cache["layers"]):
        (dx, dmem), g = decoder_layer_backward(dx, layer_cache)  # (B, T, D), (B, S, D)
        dmemory += dmem                                  # (B, S, D)
        layer_grads.append(g)
    grads = {"layers": layer_grads[::-1], **grads}
    return (dx, dmemory), grads
