"""Training the NumPy Transformer: the paper's recipe (Adam 0.9 / 0.98 / 1e-9, warm-up schedule, label
smoothing) on batches of NumPy arrays, with gradient clipping. Small on purpose: the chapters read it whole.

Library code does not print: the callbacks (`callbacks.py`, the same events as the PyTorch trainer's) show a
progress bar or log.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from ..config import ModelConfig, TrainConfig
from ..numpy.loss import cross_entropy_backward, cross_entropy_forward
from ..numpy.optim import Adam, clip_grad_norm, noam_lr
from ..numpy.transformer import transformer_backward, transformer_forward
from .callbacks import ProgressBar, emit
from .history import TrainingDiverged, new_history

__all__ = ["train_step", "train_numpy"]


def train_step(params: dict, config: ModelConfig, optimizer: Adam, src: np.ndarray, tgt_in: np.ndarray,
               tgt_out: np.ndarray, lr: float, label_smoothing: float = 0.0, clip_norm: float = 0.0,
               rng: np.random.Generator | None = None) -> tuple[float, float]:
    """One optimiser step on one batch: forward, loss, backward, clip, Adam. Returns (loss, gradient norm)."""
    logits, cache = transformer_forward(src, tgt_in, params, config, rng=rng, training=True)  # (B, T, V)
    loss, loss_cache = cross_entropy_forward(logits, tgt_out, config.pad_id, label_smoothing)
    grads = transformer_backward(cross_entropy_backward(1.0, loss_cache), cache)
    grad_norm = clip_grad_norm(grads, clip_norm)         # the norm before clipping (0 disables clipping)
    optimizer.step(grads, lr=lr)
    return loss, grad_norm


# TrainConfig fields that change how the PyTorch trainer trains and that this trainer does not implement; the
# others it does not read (batch_size: the batches are given; eval_every, monitor: it does not evaluate; device,
# num_workers) change nothing here
NOT_IMPLEMENTED = ("weight_decay", "precision", "compile", "patience", "stop_when_perfect", "average_last")


def _check_supported(train_config: TrainConfig) -> None:
    defaults = TrainConfig()
    changed = [name for name in NOT_IMPLEMENTED if getattr(train_config, name) != getattr(defaults, name)]
    if changed:
        raise ValueError(f"train_config: the NumPy trainer does not implement {', '.join(changed)}; expected "
                         f"their defaults ({', '.join(f'{n}={getattr(defaults, n)!r}' for n in changed)})")


def train_numpy(params: dict, config: ModelConfig, batches: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
                train_config: TrainConfig = TrainConfig(), *, rng: np.random.Generator | None = None,
                optimizer: Adam | None = None,
                callbacks: Sequence[Callable[[dict], None]] | None = None) -> dict:
    """Train `params` (updated in place) until the optimiser's step count reaches train_config.max_steps (the
    ceiling, as for the PyTorch trainer: a continued run counts its earlier steps), `batches` runs out, or
    train_config.max_minutes of training have passed (when it is not 0).

    batches yields (src (B, S), tgt_in (B, T), tgt_out (B, T)) integer arrays. The learning rate at step k is
    lr_factor * noam_lr(k, d_model, warmup_steps). Used from train_config: max_steps, warmup_steps, lr_factor,
    adam_beta1/2, adam_eps, label_smoothing, clip_grad_norm, max_minutes, seed (for dropout when `rng` is None).
    `callbacks` receive the events of `callbacks.py` ("start", "step", "end"; default: a progress bar shown
    in a terminal). Pass your own `optimizer` to continue a previous run (its step count continues the schedule).
    A setting that it does not implement (NOT_IMPLEMENTED: weight decay, precision, ...) raises ValueError.

    Returns the history of `history.py`, as the PyTorch trainer does ("eval" stays empty: this trainer does not
    evaluate), with stop_reason "max_steps", "data_exhausted" or "time_budget" (history.STOP_REASONS).
    """
    tc = train_config
    _check_supported(tc)
    rng = rng if rng is not None else np.random.default_rng(tc.seed)
    if optimizer is None:
        optimizer = Adam(params, lr=0.0, betas=(tc.adam_beta1, tc.adam_beta2), eps=tc.adam_eps)
    history = {**new_history(), "stop_reason": "max_steps"}
    callbacks = [ProgressBar(desc="numpy train")] if callbacks is None else list(callbacks)
    emit(callbacks, event="start", step=optimizer.t, max_steps=tc.max_steps, rank=0)
    start = time.perf_counter()
    iterator = iter(batches)
    while optimizer.t < tc.max_steps:
        try:
            src, tgt_in, tgt_out = next(iterator)
        except StopIteration:
            history["stop_reason"] = "data_exhausted"
            break
        step = optimizer.t + 1
        lr = noam_lr(step, config.d_model, tc.warmup_steps, tc.lr_factor)
        loss, grad_norm = train_step(params, config, optimizer, src, tgt_in, tgt_out, lr,
                                     tc.label_smoothing, tc.clip_grad_norm, rng)
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            raise TrainingDiverged(f"training diverged at step {step}: loss {loss}, gradient norm {grad_norm}")
        record = {"step": step, "loss": loss, "lr": lr, "grad_norm": grad_norm}
        for key, value in record.items():
            history[key].append(value)
        emit(callbacks, event="step", **record)
        if tc.max_minutes and time.perf_counter() - start >= 60.0 * tc.max_minutes:
            history["stop_reason"] = "time_budget"
            break
    history["time_s"] = time.perf_counter() - start
    emit(callbacks, event="end", step=optimizer.t,
         **{key: history[key] for key in ("stop_reason", "best", "averaged")})
    return history
