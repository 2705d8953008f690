"""Attention: the six score functions, masked softmax, scaled dot-product attention and multi-head attention.

Two paths compute multi-head attention. The explicit path writes out scores -> masked softmax -> weighted sum,
so the weights can be returned and plotted; the fused path calls `F.scaled_dot_product_attention` (flash /
memory-efficient kernels on GPU, a fused kernel on CPU) and never materialises the weights. `MultiHeadAttention`
takes the fused path whenever the weights are not requested; tests check that both give the same output.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["dot_scores", "scaled_dot_scores", "cosine_scores", "general_scores", "additive_scores",
           "location_scores", "masked_softmax", "attention_pooling", "scaled_dot_product_attention",
           "KVCache", "MultiHeadAttention", "set_fused_attention", "check_mask"]


# ---------------------------------------------------------------- score functions
# queries (B, Tq, dq) and keys (B, Tk, dk) -> scores (B, Tq, Tk)

def dot_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Luong's dot score q . k (needs dq == dk)."""
    return q @ k.transpose(-2, -1)                       # (B, Tq, d) @ (B, d, Tk) -> (B, Tq, Tk)


def scaled_dot_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Vaswani et al.'s q . k / sqrt(d): keeps the scores' variance near 1 whatever the width d."""
    d = q.shape[-1]
    return q @ k.transpose(-2, -1) / math.sqrt(d)        # (B, Tq, Tk); math.sqrt keeps float32 float32


def cosine_scores(q: torch.Tensor, k: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Graves et al.'s content score: the cosine of the angle between query and key (in [-1, 1])."""
    q_norm = q / (q.norm(dim=-1, keepdim=True) + eps)    # (B, Tq, d)
    k_norm = k / (k.norm(dim=-1, keepdim=True) + eps)    # (B, Tk, d)
    return q_norm @ k_norm.transpose(-2, -1)             # (B, Tq, Tk)


def general_scores(q: torch.Tensor, k: torch.Tensor, W_a: torch.Tensor) -> torch.Tensor:
    """Luong's general score q W_a k^T, with W_a of shape (dq, dk)."""
    return (q @ W_a) @ k.transpose(-2, -1)               # (B, Tq, dk) @ (B, dk, Tk) -> (B, Tq, Tk)


def additive_scores(q: torch.Tensor, k: torch.Tensor, W_a: torch.Tensor, U_a: torch.Tensor,
                    v_a: torch.Tensor) -> torch.Tensor:
    """Bahdanau's additive score v_a . tanh(q W_a + k U_a), with W_a (dq, A), U_a (dk, A), v_a (A,)."""
    q_proj = q @ W_a                                     # (B, Tq, A)
    k_proj = k @ U_a                                     # (B, Tk, A)
    hidden = torch.tanh(q_proj[:, :, None, :] + k_proj[:, None, :, :])  # (B, Tq, Tk, A)
    return hidden @ v_a                                  # (B, Tq, Tk)


def location_scores(q: torch.Tensor, W_a: torch.Tensor) -> torch.Tensor:
    """Luong's location score W_a q: the query alone decides where to look; W_a is (dq, Tk)."""
    return q @ W_a                                       # (B, Tq, dq) @ (dq, Tk) -> (B, Tq, Tk)


# ---------------------------------------------------------------- softmax and pooling

def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis where mask is True; a fully masked row gives all-zero weights, never NaN."""
    if mask is None:
        return torch.softmax(scores, dim=-1)             # (..., Tq, Tk)
    scores = scores.masked_fill(~mask, float("-inf"))    # (..., Tq, Tk)
    weights = torch.softmax(scores, dim=-1)              # (..., Tq, Tk); a row of -inf gives NaN ...
    return weights.masked_fill(~mask, 0.0)               # (..., Tq, Tk) ... which this turns into zeros


def attention_pooling(scores: torch.Tensor, values: torch.Tensor,
                      mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Turn scores into weights and average the values with them: (out, weights)."""
    weights = masked_softmax(scores, mask)               # (B, Tq, Tk)
    out = weights @ values                               # (B, Tq, Tk) @ (B, Tk, dv) -> (B, Tq, dv)
    return out, weights


def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                                 training: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(Dh)) v, written out: returns (out, weights). Dropout (if any) acts on the weights."""
    scores = scaled_dot_scores(q, k)                     # (B, H, Tq, Tk)
    weights = masked_softmax(scores, mask)               # (B, H, Tq, Tk)
    dropped = F.dropout(weights, dropout_p, training) if dropout_p > 0.0 else weights  # (B, H, Tq, Tk)
    out = dropped @ v                                    # (B, H, Tq, Tk) @ (B, H, Tk, Dh) -> (B, H, Tq, Dh)
    return out, weights


def check_mask(mask: torch.Tensor, B: int, Tq: int, Tk: int, name: str = "mask") -> None:
    """Raise a ValueError unless mask is bool of shape (B or 1, Tq or 1, Tk)."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"{name}: expected a bool tensor (True = may attend), got {got}")
    if mask.dim() != 3 or mask.shape[0] not in (1, B) or mask.shape[1] not in (1, Tq) or mask.shape[2] != Tk:
        raise ValueError(f"{name}: expected shape (B={B} or 1, Tq={Tq} or 1, Tk={Tk}), got {tuple(mask.shape)}")


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
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        """Keep rows `index` of the batch (beam search: follow the surviving beams)."""
        if self._k is not None:
            self._k = self._k.index_select(0, index)     # (B', H, capacity, Dh)
            self._v = self._v.index_select(0, index)     # (B', H, capacity, Dh)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1 .. head_H) W_o, head_h = Attention(Q W_q^h, K W_k^h, V W_v^h).

    The H heads' projections are stored together as one (D, D) matrix each (nn.Linear layout (out, in)).
    Initialisation: Xavier uniform for each projection, zero biases (the NumPy twin's).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"n_heads: expected a divisor of d_model={d_model}, got {n_heads}")
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout                           # on the attention weights
        self.use_fused = True                            # False forces the explicit path (teaching, tests)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for linear in (self.W_q, self.W_k, self.W_v, self.W_o):
            nn.init.xavier_uniform_(linear.weight)
            nn.init.zeros_(linear.bias)

    def _project_qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention: one (D, 3D) matmul instead of three (D, D) ones (better use of the matmul kernel)."""
        weight = torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight])  # (3D, D)
        bias = torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias])          # (3D,)
        return F.linear(x, weight, bias).chunk(3, dim=-1)  # (B, T, 3D) -> 3 x (B, T, D)

    def forward(self, x_q: torch.Tensor, x_kv: torch.Tensor, mask: torch.Tensor | None = None,
                need_weights: bool = False, kv_cache: KVCache | None = None,
                is_causal: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from x_q (B, Tq, D) to x_kv (B, Tk, D); returns (out (B, Tq, D), weights (B, H, Tq, Tk) or None).

        mask: bool (B or 1, Tq or 1, Tk), True = may attend. is_causal=True (with mask=None) asks for the causal
        mask without building it, so the fused kernel can skip the masked blocks. kv_cache: see KVCache.
        """
        if x_q.dim() != 3 or x_q.shape[-1] != self.d_model:
            raise ValueError(f"x_q: expected shape (B, Tq, d_model={self.d_model}), got {tuple(x_q.shape)}")
        if x_kv.dim() != 3 or x_kv.shape[-1] != self.d_model or x_kv.shape[0] != x_q.shape[0]:
            raise ValueError(f"x_kv: expected shape (B={x_q.shape[0]}, Tk, d_model={self.d_model}), "
                             f"got {tuple(x_kv.shape)}")
        B, Tq, D = x_q.shape
        H, Dh = self.n_heads, self.d_head
        if kv_cache is not None and kv_cache.static and kv_cache.k is not None:
            q = self.W_q(x_q)                            # (B, Tq, D); keys/values come from the cache
            k, v = kv_cache.k, kv_cache.v                # (B, H, S, Dh)
        else:
            if x_kv is x_q:                              # self-attention: one matmul for q, k and v
                q, k, v = self._project_qkv(x_q)         # 3 x (B, T, D)
            else:
                q = self.W_q(x_q)                        # (B, Tq, D)
                k = self.W_k(x_kv)                       # (B, Tk, D)
                v = self.W_v(x_kv)                       # (B, Tk, D)
            k = k.view(B, -1, H, Dh).transpose(1, 2)     # (B, Tk, D) -> (B, H, Tk, Dh)
            v = v.view(B, -1, H, Dh).transpose(1, 2)     # (B, Tk, D) -> (B, H, Tk, Dh)
            if kv_cache is not None:
                k, v = kv_cache.append(k, v)             # (B, H, t + Tk, Dh): the past and the new
        q = q.view(B, Tq, H, Dh).transpose(1, 2)         # (B, Tq, D) -> (B, H, Tq, Dh)
        Tk = k.shape[2]
        if mask is not None:
            check_mask(mask, B, Tq, Tk)
            mask = mask[:, None]                         # (B, Tq, Tk) -> (B, 1, Tq, Tk): same for every head
        elif is_causal:
            if Tq != Tk:
                raise ValueError(f"is_causal: needs as many queries as keys, got Tq={Tq}, Tk={Tk}; "
                                 f"pass an explicit mask instead")
            if need_weights or not self.use_fused:
                mask = torch.ones(Tq, Tk, dtype=torch.bool, device=x_q.device).tril()  # (Tq, Tk)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights or not self.use_fused:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p, self.training)  # (B, H, Tq, Dh)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p,
                                                 is_causal=is_causal and mask is None)  # (B, H, Tq, Dh)
            weights = None
        out = out.transpose(1, 2).reshape(B, Tq, D)      # (B, H, Tq, Dh) -> (B, Tq, H, Dh) -> (B, Tq, D)
        out = self.W_o(out)                              # (B, Tq, D)
        return out, (weights if need_weights else None)


def set_fused_attention(model: nn.Module, enabled: bool) -> nn.Module:
    """Switch every MultiHeadAttention inside `model` to the fused (True) or the explicit (False) path."""
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.use_fused = bool(enabled)
    return model
