"""Cross-entropy with label smoothing, padding ignored: the training loss of the paper (section 5.4).

Label smoothing follows torch.nn.functional.cross_entropy(label_smoothing=eps): the target distribution is
q = (1 - eps) * onehot(target) + eps / V, the smoothing mass spread over all V classes, the target included
(the paper does not say which variant it used). The loss is the mean over the real (non-pad) target tokens.
"""
from __future__ import annotations

import numpy as np

from ..checks import empty_batch_message, ids_message
from .functional import log_softmax

__all__ = ["cross_entropy_forward", "cross_entropy_backward"]


def cross_entropy_forward(logits: np.ndarray, targets: np.ndarray, pad_id: int,
                          label_smoothing: float = 0.0) -> tuple[float, dict]:
    """logits (B, T, V), targets (B, T) -> (loss: float, cache). Mean of -sum_v q(v) log p(v) over non-pad tokens."""
    if not isinstance(logits, np.ndarray) or logits.ndim != 3:
        raise ValueError(f"logits: expected shape (B, T, V), got {getattr(logits, 'shape', type(logits).__name__)}")
    B, T, V = logits.shape
    if not isinstance(targets, np.ndarray) or targets.shape != (B, T):
        raise ValueError(f"targets: expected shape (B={B}, T={T}), "
                         f"got {getattr(targets, 'shape', type(targets).__name__)}")
    if not np.issubdtype(targets.dtype, np.integer):
        raise TypeError(f"targets: expected an integer array, got {targets.dtype}")
    if targets.size == 0:
        raise ValueError(empty_batch_message("targets", "(B, T)", targets.shape))
    if targets.min() < 0 or targets.max() >= V:
        raise ValueError(ids_message("targets", V, int(targets.min()), int(targets.max())))
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing: expected a value in [0, 1), got {label_smoothing!r}")
    logp = log_softmax(logits)                           # (B, T, V)
    nll = -np.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]  # (B, T): -log p(target)
    if label_smoothing > 0.0:
        per_token = (1.0 - label_smoothing) * nll - label_smoothing * logp.mean(-1)  # (B, T)
    else:
        per_token = nll                                  # (B, T)
    keep = targets != pad_id                             # (B, T)
    n_tokens = max(int(keep.sum()), 1)                   # 0 real tokens: loss 0, not 0 / 0
    loss = float((per_token * keep).sum(dtype=np.float64) / n_tokens)
    return loss, {"logp": logp, "targets": targets, "keep": keep, "n_tokens": n_tokens, "eps": label_smoothing}


def cross_entropy_backward(dloss: float, cache: dict) -> np.ndarray:
    """dlogits = dloss * (softmax(logits) - q) / n_tokens at real tokens, 0 at padding (dloss = 1.0 when the
    loss is the objective itself)."""
    logp, targets, keep = cache["logp"], cache["targets"], cache["keep"]
    eps = cache["eps"]
    V = logp.shape[-1]
    dlogits = np.exp(logp)                               # (B, T, V): p
    if eps > 0.0:
        dlogits -= eps / V                               # (B, T, V): p - eps / V everywhere ...
    at_target = np.take_along_axis(dlogits, targets[..., None], axis=-1)   # (B, T, 1)
    np.put_along_axis(dlogits, targets[..., None], at_target - (1.0 - eps), axis=-1)  # ... and - (1 - eps) there
    scale = dloss / cache["n_tokens"]                    # Python float: keeps the dtype
    dlogits *= (keep * scale)[..., None].astype(dlogits.dtype)  # (B, T, V): padding gets no gradient
    return dlogits
