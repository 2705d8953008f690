"""The encoder: N identical layers of self-attention and feed-forward, each wrapped in a residual + LayerNorm."""
from __future__ import annotations

import numpy as np

from .attention import init_multi_head_attention, self_attention_backward, self_attention_forward
from .feedforward import feedforward_backward, feedforward_forward, init_feedforward
from .layernorm import init_layernorm, layernorm_backward, layernorm_forward
from .sublayer import residual_backward, residual_forward

__all__ = ["init_encoder_layer", "encoder_layer_forward", "encoder_layer_backward", "init_encoder",
           "encoder_forward", "encoder_backward"]


def init_encoder_layer(rng: np.random.Generator, d_model: int, n_heads: int, d_ff: int, dtype=np.float32) -> dict:
    """Keys: self_attn, ffn, norm1, norm2 (the PyTorch EncoderLayer's submodules)."""
    return {"self_attn": init_multi_head_attention(rng, d_model, n_heads, dtype),
            "ffn": init_feedforward(rng, d_model, d_ff, dtype),
            "norm1": init_layernorm(d_model, dtype), "norm2": init_layernorm(d_model, dtype)}


def encoder_layer_forward(x: np.ndarray, params: dict, n_heads: int, mask: np.ndarray | None = None,
                          dropout: float = 0.0, attention_dropout: float = 0.0, norm_first: bool = False,
                          eps: float = 1e-5, rng: np.random.Generator | None = None,
                          training: bool = False, positional: str | None = None) -> tuple[np.ndarray, dict]:
    """x (B, S, D), mask (B or 1, S or 1, S) -> (x (B, S, D), cache); cache["weights"] is (B, H, S, S).
    positional="rope" or "alibi" puts the position term in the self-attention (see `multi_head_attention_forward`)."""
    def self_attention(h):
        return self_attention_forward(h, params["self_attn"], n_heads, mask, attention_dropout, rng,
                                      training, positional)  # (B, S, D)

    def ffn(h):
        return feedforward_forward(h, params["ffn"])     # (B, S, D)

    x, attn_cache = residual_forward(x, self_attention, self_attention_backward, params["norm1"], norm_first,
                                     dropout, rng, training, eps)  # (B, S, D)
    x, ffn_cache = residual_forward(x, ffn, feedforward_backward, params["norm2"], norm_first, dropout, rng,
                                    training, eps)       # (B, S, D)
    return x, {"attn": attn_cache, "ffn": ffn_cache, "weights": attn_cache["sublayer"]["weights"]}


def encoder_layer_backward(dout: np.ndarray, cache: dict) -> tuple[np.ndarray, dict]:
    dx, dnorm2, dffn = residual_backward(dout, cache["ffn"])   # (B, S, D)
    dx, dnorm1, dattn = residual_backward(dx, cache["attn"])   # (B, S, D)
    return dx, {"self_attn": dattn, "ffn": dffn, "norm1": dnorm1, "norm2": dnorm2}


def init_encoder(rng: np.random.Generator, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 norm_first: bool = False, dtype=np.float32) -> dict:
    """{"layers": [layer params] * n_layers}, plus "norm" (the final LayerNorm) for a pre-LN stack."""
    params = {"layers": [init_encoder_layer(rng, d_model, n_heads, d_ff, dtype) for _ in range(n_layers)]}
    if norm_first:
        params["norm"] = init_layernorm(d_model, dtype)
    return params


def encoder_forward(x: np.ndarray, params: dict, n_heads: int, mask: np.ndarray | None = None,
                    dropout: float = 0.0, attention_dropout: float = 0.0, norm_first: bool = False,
                    eps: float = 1e-5, rng: np.random.Generator | None = None,
                    training: bool = False, positional: str | None = None) -> tuple[np.ndarray, dict]:
    """x (B, S, D) -> (memory (B, S, D), cache); cache["weights"] is [(B, H, S, S) per layer]."""
    if norm_first != ("norm" in params):
        raise ValueError(f"params: a {'pre' if norm_first else 'post'}-LN encoder (norm_first={norm_first}) "
                         f"{'needs' if norm_first else 'has no'} a final 'norm'; got keys {sorted(params)}")
    # by keyword: seven settings, two of them dropouts, are easy to swap unnoticed in a row
    settings = dict(dropout=dropout, attention_dropout=attention_dropout, norm_first=norm_first, eps=eps, rng=rng,
                    training=training, positional=positional)
    layer_caches = []
    for layer_params in params["layers"]:
        x, layer_cache = encoder_layer_forward(x, layer_params, n_heads, mask, **settings)  # (B, S, D)
        layer_caches.append(layer_cache)
    norm_cache = None
    if norm_first:
        x, norm_cache = layernorm_forward(x, params["norm"], eps)  # (B, S, D)
    return x, {"layers": layer_caches, "norm": norm_cache, "weights": [c["weights"] for c in layer_caches]}


def encoder_backward(dout: np.ndarray, cache: dict) -> tuple[np.ndarray, dict]:
    grads = {}
    dx = dout                                            # (B, S, D)
    if cache["norm"] is not None:
        dx, grads["norm"] = layernorm_backward(dx, cache["norm"])  # (B, S, D)
    layer_grads = []
    for layer_cache in reversed(cache["layers"]):
        dx, g = encoder_layer_backward(dx, layer_cache)  # (B, S, D)
        layer_grads.append(g)
    grads = {"layers": layer_grads[::-1], **grads}       # same order as params
    return dx, grads
