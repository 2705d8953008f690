"""Token embeddings, multiplied by sqrt(d_model) as in the paper (section 3.4), and the output projection that
may share (tie) the target embedding matrix (Press & Wolf 2017)."""
from __future__ import annotations

import math

import numpy as np

from ..checks import empty_batch_message, ids_message
from .functional import linear_backward, linear_forward

__all__ = ["init_embedding", "check_tokens", "embedding_forward", "embedding_backward",
           "output_projection_forward", "output_projection_backward"]


def init_embedding(rng: np.random.Generator, vocab_size: int, d_model: int, dtype=np.float32) -> dict:
    """E (V, D) ~ N(0, d_model^-0.5), so that the scaled vectors E[t] * sqrt(D) have entries of size about 1."""
    return {"E": rng.normal(0.0, d_model ** -0.5, size=(vocab_size, d_model)).astype(dtype)}  # (V, D)


def check_tokens(tokens, vocab_size: int, name: str = "tokens") -> None:
    """Raise a clear error for a non-integer array, a wrong rank, an empty batch or ids outside [0, vocab_size)."""
    if not isinstance(tokens, np.ndarray):
        raise TypeError(f"{name}: expected a numpy array of token ids, got {type(tokens).__name__}")
    if not np.issubdtype(tokens.dtype, np.integer):
        raise TypeError(f"{name}: expected an integer array, got {tokens.dtype}")
    if tokens.ndim != 2:
        raise ValueError(f"{name}: expected shape (B, T), got {tokens.shape}")
    if tokens.size == 0:
        raise ValueError(empty_batch_message(name, "(B, T)", tokens.shape))
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(ids_message(name, vocab_size, low, high))


def embedding_forward(tokens: np.ndarray, params: dict, scale: bool = True,
                      name: str = "tokens") -> tuple[np.ndarray, tuple]:
    """E[tokens] * sqrt(d_model): a table lookup, (B, T) ids -> (B, T, D) vectors."""
    E = params["E"]
    V, D = E.shape
    check_tokens(tokens, V, name)
    factor = math.sqrt(D) if scale else 1.0              # a Python float keeps float32 float32
    out = E[tokens] * factor                             # (B, T) -> (B, T, D)
    return out, (tokens, E.shape, factor)


def embedding_backward(dout: np.ndarray, cache: tuple) -> tuple[None, dict]:
    """Scatter-add each position's gradient into the row of its token (a token used twice gets both)."""
    tokens, shape, factor = cache
    V, D = shape
    dE = np.zeros(shape, dtype=dout.dtype)               # (V, D)
    np.add.at(dE, tokens.reshape(-1), dout.reshape(-1, D) * factor)  # (B*T, D) rows added into (V, D)
    return None, {"E": dE}                               # token ids have no gradient


def output_projection_forward(y: np.ndarray, W: np.ndarray, tied: bool) -> tuple[np.ndarray, tuple]:
    """logits = y W_out with W (D, V), or with tying logits = y E^T (W is the embedding E (V, D)); no bias."""
    logits, linear_cache = linear_forward(y, W.T if tied else W)  # (B, T, D) @ (D, V) -> (B, T, V)
    return logits, (tied, linear_cache)


def output_projection_backward(dlogits: np.ndarray, cache: tuple) -> tuple[np.ndarray, dict]:
    """Returns (dy, {"W": dW}) with dW shaped like W ((V, D) when tied: the caller adds it to the embedding's)."""
    tied, linear_cache = cache
    dy, dW, _ = linear_backward(dlogits, linear_cache)   # (B, T, D), (D, V)
    return dy, {"W": dW.T if tied else dW}
