"""Bahdanau et al. (2015), the model attention was invented for: a GRU cell, the bidirectional GRU encoder that
gives every source position an annotation, and one decoder step with additive attention.

The PyTorch twin (`transformer_course.torch.bahdanau`) has the same encoder and decoder step as modules, and
the whole model (embeddings, the initial state, the output layer) around them.

The GRU follows torch.nn.GRU's equations and gate order (reset r, update z, new n), so weights convert directly
(NumPy stores W_ih (in, 3D) = weight_ih.T, W_hh (D, 3D) = weight_hh.T, columns [r | z | n]):

    r = sigmoid(x W_ir + b_ir + h W_hr + b_hr)
    z = sigmoid(x W_iz + b_iz + h W_hz + b_hz)
    n = tanh(x W_in + b_in + r * (h W_hn + b_hn))
    h' = (1 - z) * n + z * h
"""
from __future__ import annotations

import math

import numpy as np

from .attention import (
    additive_scores_backward,
    additive_scores_forward,
    init_additive_scores,
    masked_softmax,
    masked_softmax_backward,
)
from .functional import linear_backward, linear_forward, sigmoid

__all__ = ["init_gru_cell", "gru_cell_forward", "gru_cell_backward", "init_bahdanau_encoder",
           "bahdanau_encoder_forward", "bahdanau_encoder_backward", "init_bahdanau_decoder_step",
           "bahdanau_decoder_step_forward", "bahdanau_decoder_step_backward"]


def init_gru_cell(rng: np.random.Generator, input_size: int, hidden_size: int, dtype=np.float32) -> dict:
    """torch.nn.GRU's initialisation: every weight and bias U(-1/sqrt(D), 1/sqrt(D))."""
    a = 1.0 / math.sqrt(hidden_size)
    h3 = 3 * hidden_size
    return {"W_ih": rng.uniform(-a, a, size=(input_size, h3)).astype(dtype),   # (in, 3D)
            "W_hh": rng.uniform(-a, a, size=(hidden_size, h3)).astype(dtype),  # (D, 3D)
            "b_ih": rng.uniform(-a, a, size=h3).astype(dtype),                 # (3D,)
            "b_hh": rng.uniform(-a, a, size=h3).astype(dtype)}                 # (3D,)


def gru_cell_forward(x: np.ndarray, h: np.ndarray, params: dict) -> tuple[np.ndarray, tuple]:
    """x (B, in), h (B, hidden) -> (h' (B, hidden), cache)."""
    hidden = params["W_hh"].shape[0]
    if not isinstance(x, np.ndarray) or x.ndim != 2 or x.shape[1] != params["W_ih"].shape[0]:
        raise ValueError(f"x: expected shape (B, input_size={params['W_ih'].shape[0]}), "
                         f"got {getattr(x, 'shape', None)}")
    if not isinstance(h, np.ndarray) or h.shape != (x.shape[0], hidden):
        raise ValueError(f"h: expected shape (B={x.shape[0]}, hidden={hidden}), got {getattr(h, 'shape', None)}")
    gi, x_cache = linear_forward(x, params["W_ih"], params["b_ih"])  # (B, 3D): the input's share of all three gates
    gh, h_cache = linear_forward(h, params["W_hh"], params["b_hh"])  # (B, 3D): the state's share
    i_r, i_z, i_n = np.split(gi, 3, axis=1)              # 3 x (B, D)
    h_r, h_z, h_n = np.split(gh, 3, axis=1)              # 3 x (B, D)
    r = sigmoid(i_r + h_r)                               # (B, D): how much of the state the candidate sees
    z = sigmoid(i_z + h_z)                               # (B, D): how much of the state is kept
    n = np.tanh(i_n + r * h_n)                           # (B, D): the candidate state
    h_new = (1.0 - z) * n + z * h                        # (B, D)
    return h_new, (h, r, z, n, h_n, x_cache, h_cache)


def gru_cell_backward(dh_new: np.ndarray, cache: tuple) -> tuple[tuple[np.ndarray, np.ndarray], dict]:
    """Returns ((dx (B, in), dh (B, hidden)), grads)."""
    h, r, z, n, h_n, x_cache, h_cache = cache
    dn = dh_new * (1.0 - z)                              # (B, D)
    dz = dh_new * (h - n)                                # (B, D)
    dh = dh_new * z                                      # (B, D): the direct path
    dpre_n = dn * (1.0 - n * n)                          # (B, D): through tanh
    dh_n = dpre_n * r                                    # (B, D)
    dr = dpre_n * h_n                                    # (B, D)
    dpre_z = dz * z * (1.0 - z)                          # (B, D): through sigmoid
    dpre_r = dr * r * (1.0 - r)                          # (B, D)
    dgi = np.concatenate([dpre_r, dpre_z, dpre_n], axis=1)  # (B, 3D)
    dgh = np.concatenate([dpre_r, dpre_z, dh_n], axis=1)    # (B, 3D)
    dx, dW_ih, db_ih = linear_backward(dgi, x_cache)     # (B, in)
    dh_gates, dW_hh, db_hh = linear_backward(dgh, h_cache)  # (B, D)
    dh = dh + dh_gates                                   # (B, D)
    return (dx, dh), {"W_ih": dW_ih, "W_hh": dW_hh, "b_ih": db_ih, "b_hh": db_hh}


def init_bahdanau_encoder(rng: np.random.Generator, input_size: int, hidden_size: int, dtype=np.float32) -> dict:
    """Two independent GRU cells: "forward" reads left to right, "backward" right to left."""
    return {"forward": init_gru_cell(rng, input_size, hidden_size, dtype),
            "backward": init_gru_cell(rng, input_size, hidden_size, dtype)}


def _run_direction(x: np.ndarray, mask: np.ndarray, params: dict, reverse: bool):
    """One direction over time; at padding (mask False) the state is carried over unchanged and the output is 0,
    so the backward direction effectively starts at each sequence's last real token (as packed sequences)."""
    B, S, _ = x.shape
    hidden = params["W_hh"].shape[0]
    h = np.zeros((B, hidden), dtype=x.dtype)             # (B, D): h_0 = 0
    outputs = np.zeros((B, S, hidden), dtype=x.dtype)    # (B, S, D)
    caches = []
    for t in (range(S - 1, -1, -1) if reverse else range(S)):
        h_new, cache = gru_cell_forward(x[:, t], h, params)  # (B, D)
        m = mask[:, t, None]                             # (B, 1)
        h = np.where(m, h_new, h)                        # (B, D)
        outputs[:, t] = h * m                            # (B, D)
        caches.append((t, cache))
    return outputs, caches


def bahdanau_encoder_forward(x: np.ndarray, params: dict, mask: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """x (B, S, in), mask (B, S) True at real tokens -> (annotations h_i = [fwd_i; bwd_i] (B, S, 2D), cache)."""
    if not isinstance(x, np.ndarray) or x.ndim != 3:
        raise ValueError(f"x: expected shape (B, S, input_size), got {getattr(x, 'shape', type(x).__name__)}")
    B, S, _ = x.shape
    if mask is None:
        mask = np.ones((B, S), dtype=bool)               # (B, S)
    elif mask.shape != (B, S) or mask.dtype != bool:
        raise ValueError(f"mask: expected a bool array of shape (B={B}, S={S}), got {mask.dtype} {mask.shape}")
    fwd, fwd_caches = _run_direction(x, mask, params["forward"], reverse=False)   # (B, S, D)
    bwd, bwd_caches = _run_direction(x, mask, params["backward"], reverse=True)   # (B, S, D)
    annotations = np.concatenate([fwd, bwd], axis=-1)    # (B, S, 2D)
    return annotations, {"x_shape": x.shape, "mask": mask, "fwd": fwd_caches, "bwd": bwd_caches}


def _direction_backward(dout: np.ndarray, mask: np.ndarray, caches: list, dx: np.ndarray) -> dict:
    """Backpropagation through time for one direction; adds into dx and returns the cell's grads."""
    B, S, hidden = dout.shape
    dh = np.zeros((B, hidden), dtype=dout.dtype)         # (B, D): gradient reaching the current state
    grads = None
    for t, cache in reversed(caches):
        m = mask[:, t, None]                             # (B, 1)
        dh = dh + dout[:, t] * m                         # (B, D): the output at t was h (or 0 at padding)
        (dx_t, dh_prev), g = gru_cell_backward(dh * m, cache)  # only real steps went through the cell
        dx[:, t] += dx_t
        dh = np.where(m, dh_prev, dh)                    # (B, D): padding carried the state over unchanged
        grads = g if grads is None else {k: grads[k] + g[k] for k in grads}
    return grads


def bahdanau_encoder_backward(dannotations: np.ndarray, cache: dict) -> tuple[np.ndarray, dict]:
    """Returns (dx (B, S, in), {"forward": grads, "backward": grads})."""
    hidden = dannotations.shape[-1] // 2
    dx = np.zeros(cache["x_shape"], dtype=dannotations.dtype)  # (B, S, in)
    g_fwd = _direction_backward(dannotations[..., :hidden], cache["mask"], cache["fwd"], dx)
    g_bwd = _direction_backward(dannotations[..., hidden:], cache["mask"], cache["bwd"], dx)
    return dx, {"forward": g_fwd, "backward": g_bwd}


def init_bahdanau_decoder_step(rng: np.random.Generator, emb: int, hidden: int, annotation_size: int,
                               attn_size: int | None = None, dtype=np.float32) -> dict:
    """W_a (D, A), U_a (2D, A), v_a (A,) of the additive score, and "cell": a GRU cell reading [E y_{t-1}; c_t]."""
    A = attn_size or hidden
    return {**init_additive_scores(rng, hidden, annotation_size, A, dtype),
            "cell": init_gru_cell(rng, emb + annotation_size, hidden, dtype)}


def bahdanau_decoder_step_forward(y_prev: np.ndarray, s_prev: np.ndarray, annotations: np.ndarray, params: dict,
                                  mask: np.ndarray | None = None) -> tuple[np.ndarray, dict]:
    """One step t of Bahdanau's decoder: y_prev = E y_{t-1} (B, emb), s_prev = s_{t-1} (B, D), annotations
    h_i (B, S, 2D), mask (B, S) -> (s_t (B, D), cache) with cache["weights"] alpha_ti (B, S), cache["context"] c_t.

        e_ti = v_a^T tanh(W_a s_{t-1} + U_a h_i);  alpha_t = softmax(e_t);  c_t = sum_i alpha_ti h_i;
        s_t = GRU([E y_{t-1}; c_t], s_{t-1})
    """
    scores, scores_cache = additive_scores_forward(s_prev[:, None, :], annotations, params["W_a"], params["U_a"],
                                                   params["v_a"])  # (B, 1, S)
    weights = masked_softmax(scores[:, 0], mask)         # (B, S)
    context = (weights[:, None, :] @ annotations)[:, 0]  # (B, 1, S) @ (B, S, 2D) -> (B, 2D)
    cell_in = np.concatenate([y_prev, context], axis=-1)  # (B, emb + 2D)
    s_new, cell_cache = gru_cell_forward(cell_in, s_prev, params["cell"])  # (B, D)
    cache = {"emb": y_prev.shape[-1], "annotations": annotations, "scores": scores_cache, "weights": weights,
             "context": context, "cell": cell_cache}
    return s_new, cache


def bahdanau_decoder_step_backward(ds_new: np.ndarray, cache: dict
                                   ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], dict]:
    """Returns ((dy_prev, ds_prev, dannotations), grads)."""
    annotations, weights = cache["annotations"], cache["weights"]
    (dcell_in, ds_prev), dcell = gru_cell_backward(ds_new, cache["cell"])  # (B, emb + 2D), (B, D)
    dy_prev, dcontext = dcell_in[:, :cache["emb"]], dcell_in[:, cache["emb"]:]  # (B, emb), (B, 2D)
    dweights = (annotations @ dcontext[:, :, None])[:, :, 0]  # (B, S, 2D) @ (B, 2D, 1) -> (B, S)
    dannotations = weights[:, :, None] * dcontext[:, None, :]  # (B, S, 2D)
    dscores = masked_softmax_backward(dweights, weights)  # (B, S)
    dq, dk, dattn = additive_scores_backward(dscores[:, None, :], cache["scores"])  # (B, 1, h), (B, S, 2D)
    ds_prev = ds_prev + dq[:, 0]                         # (B, D)
    dannotations = dannotations + dk                     # (B, S, 2D)
    return (dy_prev, ds_prev, dannotations), {**dattn, "cell": dcell}
