"""The paper's learning-rate schedule (Vaswani et al. 2017, eq. 3) as a `torch.optim.lr_scheduler.LambdaLR`.

    lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)

It rises linearly for `warmup` steps, then decays as 1/sqrt(step). The optimiser's own lr is set to 1 so
the multiplier *is* the learning rate. Steps count from 1 (step 0 would divide by zero).
"""
from __future__ import annotations

import math

from .._optional import torch  # without PyTorch: an ImportError that names the extra to install
from ..numpy.optim import noam_lr  # one definition of the formula, shared with the NumPy trainer

__all__ = ["NoamSchedule", "noam_lr", "make_scheduler"]


class NoamSchedule:
    """Callable multiplier for `LambdaLR`; an object (not a lambda) so the scheduler's state_dict saves it."""

    def __init__(self, d_model: int, warmup: int, factor: float = 1.0):
        if d_model <= 0 or warmup <= 0:
            raise ValueError(f"d_model/warmup: expected positive ints, got {d_model}, {warmup}")
        self.d_model, self.warmup, self.factor = d_model, warmup, factor

    def __call__(self, epoch: int) -> float:
        # LambdaLR calls this with the number of scheduler steps taken so far (0 at construction), so the
        # k-th optimiser step uses the paper's rate for step k + 1.
        return noam_lr(epoch + 1, self.d_model, self.warmup, self.factor)

    @property
    def peak_lr(self) -> float:
        return self.factor * self.d_model ** -0.5 * self.warmup ** -0.5

    def __repr__(self) -> str:
        return f"NoamSchedule(d_model={self.d_model}, warmup={self.warmup}, factor={self.factor})"


def make_scheduler(optimizer: torch.optim.Optimizer, d_model: int, warmup: int,
                   factor: float = 1.0) -> torch.optim.lr_scheduler.LambdaLR:
    """`LambdaLR` following the paper's schedule; the optimiser's base lr must be 1.0."""
    for group in optimizer.param_groups:
        if not math.isclose(group.get("initial_lr", group["lr"]), 1.0):
            raise ValueError(f"optimizer: expected base lr 1.0 (the schedule gives the absolute rate), "
                             f"got {group['lr']}")
    return torch.optim.lr_scheduler.LambdaLR(optimizer, NoamSchedule(d_model, warmup, factor))
