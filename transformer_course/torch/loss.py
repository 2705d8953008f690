"""Cross-entropy with label smoothing, padding ignored (the same maths as the NumPy twin)."""
from __future__ import annotations

import torch

__all__ = ["cross_entropy"]


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, pad_id: int,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean over non-pad tokens of -sum_v q(v) log p(v), q = (1 - eps) onehot(target) + eps / V.

    This is torch.nn.functional.cross_entropy's smoothing (the smoothing mass is spread over all V classes,
    the target included; the paper does not say which variant it used). Equal to
    F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=pad_id, label_smoothing=eps).
    """
    if logits.dim() != 3:
        raise ValueError(f"logits: expected shape (B, T, V), got {tuple(logits.shape)}")
    B, T, V = logits.shape
    if targets.shape != (B, T):
        raise ValueError(f"targets: expected shape (B={B}, T={T}), got {tuple(targets.shape)}")
    if targets.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"targets: expected an int64 or int32 tensor, got {targets.dtype}")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing: expected a value in [0, 1), got {label_smoothing!r}")
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()                          # (B, T, V): a softmax over V needs float32's precision
    logp = torch.log_softmax(logits, dim=-1)             # (B, T, V)
    nll = -logp.gather(-1, targets.long()[..., None]).squeeze(-1)  # (B, T): -log p(target)
    loss = nll if label_smoothing == 0.0 else (1.0 - label_smoothing) * nll - label_smoothing * logp.mean(-1)  # (B, T)
    keep = targets != pad_id                             # (B, T)
    return (loss * keep).sum() / keep.sum().clamp(min=1)  # mean over real tokens; 0 when there are none
