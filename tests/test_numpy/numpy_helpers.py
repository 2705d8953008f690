"""Shared helpers for the NumPy tests: gradient checks of layers and models in float64."""
from __future__ import annotations

import numpy as np

from transformer_course.config import ModelConfig
from transformer_course.numpy.functional import tree_map
from transformer_course.numpy.gradcheck import gradcheck

TOL = 1e-6  # the threshold on the relative error


def lively(params, rng: np.random.Generator):
    """A non-trivial initialisation: weights scaled up, every vector (biases, gamma, beta) random, so that no
    gradient is hidden by zeros, ones or symmetry."""
    def perturb(p):
        if p.ndim >= 2:
            return p * 1.5
        return p + rng.normal(0.0, 0.3, size=p.shape)
    return tree_map(perturb, params)


def check_layer(forward, backward, x, params, seed: int = 0, max_entries: int | None = None,
                returns_dx: bool = True) -> dict:
    """Gradient-check `backward` against `forward` on f = sum(forward(x, params)[0] * R), R random.

    forward(x, params) -> (out, cache); backward(dout, cache) -> (dx, grads). Returns {path: error}.
    """
    rng = np.random.default_rng(seed)
    out, cache = forward(x, params)
    R = rng.standard_normal(out.shape)                   # a random direction: no symmetric cancellation
    dx, grads = backward(R, cache)

    def f():
        return float((forward(x, params)[0] * R).sum())

    errors = gradcheck(f, {"x": x, "params": params}, {"x": dx, "params": grads}, max_entries=max_entries, rng=rng)
    assert max(errors.values()) < TOL, {k: v for k, v in errors.items() if v >= TOL}
    return errors


def tiny_config(**overrides) -> ModelConfig:
    base = dict(src_vocab_size=7, tgt_vocab_size=9, d_model=8, n_heads=2, d_ff=12, n_encoder_layers=1,
                n_decoder_layers=2, dropout=0.0, max_len=8)
    base.update(overrides)
    return ModelConfig(**base)


def tiny_batch(config: ModelConfig, B: int = 2, S: int = 5, T: int = 4, seed: int = 0):
    """src (B, S), tgt_in (B, T), tgt_out (B, T) with ids >= 1 and some right padding (pad_id 0)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(1, config.src_vocab_size, size=(B, S))
    tgt = rng.integers(1, config.tgt_vocab_size, size=(B, T + 1))
    src[1, S - 2:] = config.pad_id
    tgt[1, T - 1:] = config.pad_id
    return src, tgt[:, :-1], tgt[:, 1:]
