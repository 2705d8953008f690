"""Attention in PyTorch: the six score functions, masked softmax, attention pooling, scaled dot-product attention
and multi-head attention; the twin of `transformer_course.numpy.attention`, without the backward passes
(autograd computes them).

`MultiHeadAttention` has one `forward`, line for line its NumPy twin's: project, split into heads, position
term, attention, merge, output projection. Only the attention kernel has two forms, and the module's kernel is set
when it is built (as nanoGPT sets its flash flag): `fused=True` calls `F.scaled_dot_product_attention` (flash /
memory-efficient kernels on GPU, a fused kernel on CPU), which never forms the weights; `fused=False` runs
`scaled_dot_product_attention` below, the scores, masked softmax and weighted sum written out. A call that asks
for the weights runs the written-out form whatever the kernel: a module called on its own does by default (so a
chapter can draw the map); the encoder and decoder layers ask only when their caller wants the maps. Decoding
passes a `KVCache`, which keeps the keys and values of the positions already generated; tests check that every
form gives the same output.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ATTENTION_POSITIONAL
from .masks import check_mask
from .positional import RotaryPositions, alibi_bias

__all__ = ["dot_scores", "scaled_dot_scores", "cosine_scores", "general_scores", "additive_scores",
           "location_scores", "masked_softmax", "attention_pooling", "scaled_dot_product_attention",
           "KVCache", "MultiHeadAttention"]


def _check_qk(q, k, same_width: bool) -> None:
    if not isinstance(q, torch.Tensor) or q.dim() < 3:
        raise ValueError(f"q: expected shape (B, Tq, dq), got {tuple(getattr(q, 'shape', ())) or type(q).__name__}")
    if not isinstance(k, torch.Tensor) or k.dim() != q.dim() or k.shape[:-2] != q.shape[:-2]:
        raise ValueError(f"k: expected shape ({', '.join(map(str, q.shape[:-2]))}, Tk, dk), "
                         f"got {tuple(getattr(k, 'shape', ())) or type(k).__name__}")
    if same_width and k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k: expected last axis {q.shape[-1]} (the width of q), got shape {tuple(k.shape)}")


# ---------------------------------------------------------------- dot and scaled dot (Luong; Vaswani et al.)
# queries (B, Tq, dq) and keys (B, Tk, dk) -> scores (B, Tq, Tk)

def dot_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Luong's dot score q . k (needs dq == dk)."""
    _check_qk(q, k, same_width=True)
    scores = q @ k.transpose(-2, -1)                     # (B, Tq, d) @ (B, d, Tk) -> (B, Tq, Tk)
    return scores


def scaled_dot_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Vaswani et al.'s q . k / sqrt(d): keeps the scores' variance near 1 whatever the width d."""
    _check_qk(q, k, same_width=True)
    d = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)      # (B, Tq, Tk); math.sqrt keeps float32 float32
    return scores


# ---------------------------------------------------------------- content-based (cosine; Graves et al. 2014)

def cosine_scores(q: torch.Tensor, k: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """The cosine of the angle between query and key (in [-1, 1]); eps guards against zero vectors."""
    _check_qk(q, k, same_width=True)
    q_norm = q / (q.norm(dim=-1, keepdim=True) + eps)    # (B, Tq, d)
    k_norm = k / (k.norm(dim=-1, keepdim=True) + eps)    # (B, Tk, d)
    scores = q_norm @ k_norm.transpose(-2, -1)           # (B, Tq, Tk)
    return scores


# ---------------------------------------------------------------- general / bilinear (Luong et al. 2015)

def general_scores(q: torch.Tensor, k: torch.Tensor, W_a: torch.Tensor) -> torch.Tensor:
    """Luong's general score q W_a k^T, with W_a of shape (dq, dk): queries and keys may differ in width."""
    _check_qk(q, k, same_width=False)
    if W_a.shape != (q.shape[-1], k.shape[-1]):
        raise ValueError(f"W_a: expected shape (dq={q.shape[-1]}, dk={k.shape[-1]}), got {tuple(W_a.shape)}")
    qW = q @ W_a                                         # (B, Tq, dq) -> (B, Tq, dk)
    scores = qW @ k.transpose(-2, -1)                    # (B, Tq, dk) @ (B, dk, Tk) -> (B, Tq, Tk)
    return scores


# ---------------------------------------------------------------- additive (Bahdanau et al. 2015)

def additive_scores(q: torch.Tensor, k: torch.Tensor, W_a: torch.Tensor, U_a: torch.Tensor,
                    v_a: torch.Tensor) -> torch.Tensor:
    """Bahdanau's v_a^T tanh(W_a s + U_a h), written for row vectors: tanh(q W_a + k U_a) v_a."""
    _check_qk(q, k, same_width=False)
    q_proj = q @ W_a                                     # (B, Tq, A)
    k_proj = k @ U_a                                     # (B, Tk, A)
    hidden = torch.tanh(q_proj[:, :, None, :] + k_proj[:, None, :, :])  # (B, Tq, Tk, A): every query-key pair
    scores = hidden @ v_a                                # (B, Tq, Tk)
    return scores


# ---------------------------------------------------------------- location-based (Luong et al. 2015)

def location_scores(q: torch.Tensor, W_a: torch.Tensor) -> torch.Tensor:
    """Luong's location score W_a s: the query alone decides where to look, so the number of keys Tk is fixed
    by W_a (dq, Tk); the keys' contents are never consulted."""
    if not isinstance(q, torch.Tensor) or q.dim() != 3 or q.shape[-1] != W_a.shape[0]:
        raise ValueError(f"q: expected shape (B, Tq, dq={W_a.shape[0]}), "
                         f"got {tuple(getattr(q, 'shape', ())) or type(q).__name__}")
    scores = q @ W_a                                     # (B, Tq, dq) -> (B, Tq, Tk)
    return scores


# ---------------------------------------------------------------- from scores to weights to outputs

def _check_fits_scores(x: torch.Tensor, scores_shape: torch.Size, name: str, expected: str) -> None:
    """x must broadcast to the scores without enlarging them (nothing silently broadcasts)."""
    try:
        fits = torch.broadcast_shapes(x.shape, scores_shape) == scores_shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"{name}: shape {tuple(x.shape)} does not broadcast to the scores' shape "
                         f"{tuple(scores_shape)} (expected {expected})")


def _check_mask_fits(mask, scores_shape: torch.Size, name: str = "mask") -> None:
    """A mask must be boolean and fit the scores."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"{name}: expected a bool tensor (True = may attend), got {got}")
    _check_fits_scores(mask, scores_shape, name, "(B or 1, Tq or 1, Tk), heads inserted as axis 1")


def _check_bias_fits(bias, scores_shape: torch.Size) -> None:
    """An additive score bias (ALiBi's) must be a float tensor that fits the scores."""
    if not isinstance(bias, torch.Tensor) or not bias.is_floating_point():
        raise ValueError(f"bias: expected a float tensor, got {getattr(bias, 'dtype', type(bias).__name__)}")
    _check_fits_scores(bias, scores_shape, "bias", "(H, Tq, Tk)")


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis where mask is True (mask broadcasts against scores).

    Masked scores become -inf, so exp gives exactly 0. A fully masked row would give 0 / 0 (NaN); its
    weights are set to zero instead.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)             # (..., Tq, Tk)
    _check_mask_fits(mask, scores.shape)
    scores = scores.masked_fill(~mask, float("-inf"))    # (..., Tq, Tk)
    weights = torch.softmax(scores, dim=-1)              # (..., Tq, Tk); a row of -inf gives NaN ...
    return weights.masked_fill(~mask, 0.0)               # (..., Tq, Tk) ... which this turns into zeros


def attention_pooling(scores: torch.Tensor, values: torch.Tensor,
                      mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Turn scores into weights and average the values with them: (out, weights (B, Tq, Tk))."""
    weights = masked_softmax(scores, mask)               # (B, Tq, Tk)
    out = weights @ values                               # (B, Tq, Tk) @ (B, Tk, dv) -> (B, Tq, dv)
    return out, weights


# ---------------------------------------------------------------- scaled dot-product attention

def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                                 training: bool = False,
                                 bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(Dh) + bias) v, for q (..., Tq, Dh), k and v (..., Tk, Dh); `mask` and `bias` (ALiBi's
    (H, Tq, Tk), a constant) broadcast to the scores.

    Dropout (if any) acts on the weights; the weights returned are those before dropout (for plots).
    """
    scores = scaled_dot_scores(q, k)                     # (B, H, Tq, Tk)
    if bias is not None:
        _check_bias_fits(bias, scores.shape)
        scores = scores + bias                           # (B, H, Tq, Tk)
    weights = masked_softmax(scores, mask)               # (B, H, Tq, Tk)
    dropped = F.dropout(weights, dropout_p, training)    # (B, H, Tq, Tk)
    out = dropped @ v                                    # (B, H, Tq, Tk) @ (B, H, Tk, Dh) -> (B, H, Tq, Dh)
    return out, weights


# ---------------------------------------------------------------- multi-head attention

class KVCache:
    """Keys and values of one attention layer, kept between decoding steps.

    static=False (decoder self-attention): each step writes the new positions' keys and values after the
    cached ones, into buffers allocated ahead (capacity doubled when full), so a step copies only its new rows
    instead of concatenating the whole past into a fresh tensor.
    static=True (cross-attention): keys and values of the encoder output are computed once, then reused.
    """

    def __init__(self, static: bool = False):
        self.static = static
        self.length = 0                                  # positions stored
        self._k: torch.Tensor | None = None              # (B, H, capacity, Dh)
        self._v: torch.Tensor | None = None              # (B, H, capacity, Dh)

    @property
    def k(self) -> torch.Tensor | None:
        if self.static or self._k is None:
            return self._k
        return self._k[:, :, :self.length]               # (B, H, t, Dh): the filled part of the buffer

    @property
    def v(self) -> torch.Tensor | None:
        if self.static or self._v is None:
            return self._v
        return self._v[:, :, :self.length]               # (B, H, t, Dh)

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store k, v (B, H, Tk, Dh) after the cached positions; return all of them (B, H, t + Tk, Dh)."""
        if self.static:                                  # computed once: keep the tensors themselves
            self._k, self._v, self.length = k, v, k.shape[2]
            return k, v
        B, H, Tk, Dh = k.shape
        end = self.length + Tk
        if self._k is None or end > self._k.shape[2]:
            capacity = max(end, 16, 2 * (0 if self._k is None else self._k.shape[2]))
            grown_k = k.new_empty(B, H, capacity, Dh)    # (B, H, capacity, Dh)
            grown_v = v.new_empty(B, H, capacity, Dh)    # (B, H, capacity, Dh)
            if self._k is not None:
                grown_k[:, :, :self.length] = self.k
                grown_v[:, :, :self.length] = self.v
            self._k, self._v = grown_k, grown_v
        self._k[:, :, self.length:end] = k
        self._v[:, :, self.length:end] = v
        self.length = end
        return self._k[:, :, :end], self._v[:, :, :end]  # (B, H, t + Tk, Dh)

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows `index` of the batch (beam search: follow the surviving beams)."""
        if self._k is not None:
            self._k = self._k.index_select(0, index)     # (B', H, capacity, Dh)
            self._v = self._v.index_select(0, index)     # (B', H, capacity, Dh)


class MultiHeadAttention(nn.Module):
    """MultiHead(x_q, x_kv) = Concat(head_1 .. head_H) W_o, head_m = Attention(x_q W_q^m, x_kv W_k^m, x_kv W_v^m).

    The H heads' projections are stored together as one (D, D) matrix each (nn.Linear layout (out, in)) and
    applied with F.linear, as the NumPy twin applies its own with `linear_forward`. Initialisation: Xavier
    uniform for each projection, zero biases (the NumPy twin's). `dropout` acts on the attention weights.
    `positional` is the position term of self-attention: "rope" rotates queries and keys by their positions
    (up to `max_len`), "alibi" adds -rho_m |i - j| to head m's scores; None (cross-attention, and models that add
    positions to the embeddings) adds nothing. `fused` picks the attention kernel (see the module's docstring).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, positional: str | None = None,
                 max_len: int = 512, fused: bool = True):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"n_heads: expected a divisor of d_model={d_model}, got {n_heads}")
        if positional not in (None, *ATTENTION_POSITIONAL):
            raise ValueError(f"positional: expected None, 'rope' or 'alibi', got {positional!r}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.positional = positional
        self.fused = fused
        self.rotary = RotaryPositions(self.d_head, max_len) if positional == "rope" else None
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for linear in (self.W_q, self.W_k, self.W_v, self.W_o):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def forward(self, x_q: torch.Tensor, x_kv: torch.Tensor, mask: torch.Tensor | None = None,
                need_weights: bool = True, cache: KVCache | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x_q (B, Tq, D) attends to x_kv (B, Tk, D) (the same tensor for self-attention); mask (B or 1, Tq or 1,
        Tk), True = may attend. Returns (out (B, Tq, D), weights (B, H, Tq, Tk), or None when need_weights is
        False and the fused kernel ran).

        With a `cache` (decoding, eval mode; see `_decoding_step`), x_q holds only the new positions."""
        self._check_inputs(x_q, x_kv, mask, cache)
        B, Tq, D = x_q.shape
        H, Dh = self.n_heads, self.d_head
        q = F.linear(x_q, self.W_q.weight, self.W_q.bias)    # (B, Tq, D)
        q = q.view(B, Tq, H, Dh).transpose(1, 2)         # (B, Tq, D) -> (B, H, Tq, Dh)
        if cache is None:
            k, v = self._project_kv(x_kv)                # (B, H, Tk, Dh) each
            if self.positional == "rope":                # rotate queries and keys by their positions
                q, k = self.rotary(q), self.rotary(k)    # (B, H, Tq, Dh), (B, H, Tk, Dh)
        else:
            q, k, v = self._decoding_step(q, x_kv, cache)  # the cached past joined: (B, H, t, Dh)
        Tk = k.shape[2]
        bias = None
        if self.positional == "alibi":                   # a linear penalty on the distance, added to the scores
            bias = alibi_bias(H, Tq, Tk, Tk - Tq, q.device, q.dtype)  # (H, Tq, Tk): the queries are the last Tq
        if mask is not None:
            check_mask(mask, B, Tq, Tk)
            mask = mask[:, None]                         # (B, Tq, Tk) -> (B, 1, Tq, Tk): same for every head
        if need_weights or not self.fused:
            heads, weights = scaled_dot_product_attention(q, k, v, mask, self.dropout, self.training,
                                                          bias)  # (B, H, Tq, Dh), (B, H, Tq, Tk)
        else:
            heads, weights = self._fused_attention(q, k, v, mask, bias), None  # (B, H, Tq, Dh)
        merged = heads.transpose(1, 2).reshape(B, Tq, D)  # (B, H, Tq, Dh) -> (B, Tq, H, Dh) -> (B, Tq, D)
        out = F.linear(merged, self.W_o.weight, self.W_o.bias)  # (B, Tq, D)
        return out, weights

    def _decoding_step(self, q: torch.Tensor, x_kv: torch.Tensor,
                       cache: KVCache) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Decoding with a key/value cache: q (B, H, Tq, Dh) holds the new positions only. Self-attention (a cache
        with static=False): the new keys and values, rotated at their own positions for RoPE, join the cache, and
        the queries attend to all of it. Cross-attention (static=True): the memory's keys and values are projected
        at the first step and reused after. Returns q, k, v (B, H, t, Dh)."""
        if cache.static and cache.k is not None:
            return q, cache.k, cache.v                   # (B, H, S, Dh): the memory's, projected at the first step
        k, v = self._project_kv(x_kv)                    # (B, H, Tk, Dh): the new positions only
        if self.positional == "rope":                    # the new positions follow the cached ones
            q, k = self.rotary(q, cache.length), self.rotary(k, cache.length)
        k, v = cache.append(k, v)                        # (B, H, t, Dh): the past and the new
        return q, k, v

    def _project_kv(self, x_kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of x_kv (B, Tk, D), split into heads: (B, H, Tk, Dh) each."""
        B, H, Dh = x_kv.shape[0], self.n_heads, self.d_head
        k = F.linear(x_kv, self.W_k.weight, self.W_k.bias)   # (B, Tk, D)
        v = F.linear(x_kv, self.W_v.weight, self.W_v.bias)   # (B, Tk, D)
        k = k.view(B, -1, H, Dh).transpose(1, 2)         # (B, Tk, D) -> (B, H, Tk, Dh)
        v = v.view(B, -1, H, Dh).transpose(1, 2)         # (B, Tk, D) -> (B, H, Tk, Dh)
        return k, v

    def _fused_attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                         bias: torch.Tensor | None) -> torch.Tensor:
        """What `scaled_dot_product_attention` computes, by PyTorch's fused kernel; a mask and ALiBi's bias go in
        as one float mask (the bias, and -inf where attending is forbidden)."""
        if bias is not None:
            mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))  # (B or 1, H, Tq, Tk)
        dropout_p = self.dropout if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (B, H, Tq, Dh)

    def _check_inputs(self, x_q, x_kv, mask, cache) -> None:
        D = self.d_model
        if not isinstance(x_q, torch.Tensor) or x_q.dim() != 3 or x_q.shape[-1] != D:
            raise ValueError(f"x_q: expected shape (B, Tq, d_model={D}), got {tuple(getattr(x_q, 'shape', ()))}")
        if not isinstance(x_kv, torch.Tensor) or x_kv.dim() != 3 or x_kv.shape[-1] != D \
                or x_kv.shape[0] != x_q.shape[0]:
            raise ValueError(f"x_kv: expected shape (B={x_q.shape[0]}, Tk, d_model={D}), "
                             f"got {tuple(getattr(x_kv, 'shape', ()))}")
        if cache is not None and self.training:
            raise ValueError("cache: decoding with a key/value cache needs eval mode (no dropout); call "
                             "model.eval() first")
