"""Cross-entropy with label smoothing, padding ignored: the training loss of the paper (section 5.4).

Label smoothing follows torch.nn.functional.cross_entropy(label_smoothing=eps): the target distribution is
q = (1 - eps) * onehot(target) + eps / V, the smoothing mass spread over all V classes, the target included
(the paper does not say which variant it used). The loss is the mean over the real (non-pad) target tokens.

`cross_entropy` writes the maths out, line for line as the NumPy twin; `fast_cross_entropy` is what the
trainer runs: torch's fused kernel, tested equal to it.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..checks import empty_batch_message, ids_message

__all__ = ["cross_entropy", "fast_cross_entropy"]


def _check_loss_inputs(logits, targets, label_smoothing: float) -> None:
    """The checks of the NumPy twin's cross_entropy_forward, with the same words."""
    if not isinstance(logits, torch.Tensor) or logits.dim() != 3:
        raise ValueError(f"logits: expected shape (B, T, V), got "
                         f"{tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__}")
    B, T, V = logits.shape
    if not isinstance(targets, torch.Tensor) or targets.shape != (B, T):
        raise ValueError(f"targets: expected shape (B={B}, T={T}), got "
                         f"{tuple(targets.shape) if isinstance(targets, torch.Tensor) else type(targets).__name__}")
    if targets.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"targets: expected an integer tensor (int64 or int32), got {targets.dtype}")
    if targets.numel() == 0:
        raise ValueError(empty_batch_message("targets", "(B, T)", targets.shape))
    if not torch.compiler.is_compiling():                # a data-dependent check: skipped when compiled
        low, high = (int(bound) for bound in torch.aminmax(targets))
        if low < 0 or high >= V:
            raise ValueError(ids_message("targets", V, low, high))
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing: expected a value in [0, 1), got {label_smoothing!r}")


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, pad_id: int,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    """logits (B, T, V), targets (B, T) -> loss (a 0-dim tensor). Mean of -sum_v q(v) log p(v) over non-pad
    tokens."""
    _check_loss_inputs(logits, targets, label_smoothing)
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()                          # (B, T, V): a softmax over V needs float32's precision
    logp = torch.log_softmax(logits, dim=-1)             # (B, T, V)
    nll = -logp.gather(-1, targets.long()[..., None])[..., 0]  # (B, T): -log p(target)
    if label_smoothing > 0.0:
        per_token = (1.0 - label_smoothing) * nll - label_smoothing * logp.mean(-1)  # (B, T)
    else:
        per_token = nll                                  # (B, T)
    keep = targets != pad_id                             # (B, T)
    n_tokens = keep.sum().clamp(min=1)                   # 0 real tokens: loss 0, not 0 / 0
    return (per_token * keep).sum() / n_tokens


def fast_cross_entropy(logits: torch.Tensor, targets: torch.Tensor, pad_id: int,
                       label_smoothing: float = 0.0) -> torch.Tensor:
    """`cross_entropy` computed by F.cross_entropy's fused kernel (log-softmax and the loss in one pass)."""
    _check_loss_inputs(logits, targets, label_smoothing)
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()                          # (B, T, V)
    total = F.cross_entropy(logits.flatten(0, 1), targets.flatten().long(), ignore_index=pad_id,
                            label_smoothing=label_smoothing, reduction="sum")  # (B*T, V), (B*T,) -> padding adds 0
    n_tokens = (targets != pad_id).sum().clamp(min=1)    # 0 real tokens: loss 0, not 0 / 0
    return total / n_tokens
