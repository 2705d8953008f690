"""Adam with the paper's settings (beta1 0.9, beta2 0.98, eps 1e-9), the warm-up schedule of the paper, and
gradient clipping by global norm. The optimiser owns its state (the moment estimates and the step count)."""
from __future__ import annotations

import math

import numpy as np

from .functional import tree_leaves, tree_map

__all__ = ["Adam", "noam_lr", "global_norm", "clip_grad_norm"]


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5) (paper eq. 3); steps count from 1.

    It rises linearly for `warmup` steps, then decays as 1 / sqrt(step).
    """
    if step < 1:
        raise ValueError(f"step: expected an int >= 1 (the paper counts from 1), got {step!r}")
    if d_model <= 0 or warmup <= 0:
        raise ValueError(f"d_model, warmup: expected positive ints, got {d_model!r}, {warmup!r}")
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def global_norm(grads) -> float:
    """sqrt of the sum of squares of every gradient entry (all leaves together)."""
    return math.sqrt(sum(float(np.vdot(g, g)) for _, g in tree_leaves(grads)))


def clip_grad_norm(grads, max_norm: float) -> float:
    """Scale all gradients in place so that their global norm is at most max_norm; returns the norm before."""
    norm = global_norm(grads)
    if max_norm > 0 and norm > max_norm:
        factor = max_norm / (norm + 1e-6)
        for _, g in tree_leaves(grads):
            g *= factor                                  # a Python float keeps the dtype
    return norm


class Adam:
    """Adam (Kingma & Ba 2015) on a nested dict of arrays, updated in place.

        m <- b1 m + (1 - b1) g;  v <- b2 v + (1 - b2) g^2;  p <- p - lr * m_hat / (sqrt(v_hat) + eps)

    with the bias corrections m_hat = m / (1 - b1^t), v_hat = v / (1 - b2^t).
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.98), eps: float = 1e-9):
        if lr < 0:
            raise ValueError(f"lr: expected a value >= 0, got {lr!r}")
        if not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"betas: expected two values in [0, 1), got {betas!r}")
        self.params = params
        self.lr = lr
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.t = 0                                       # steps taken
        self.m = tree_map(np.zeros_like, params)         # first moment, same nesting as params
        self.v = tree_map(np.zeros_like, params)         # second moment

    def step(self, grads, lr: float | None = None) -> None:
        """One update with `grads` (same nesting as params); `lr` overrides the stored rate for this step."""
        lr = self.lr if lr is None else lr
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        # fold both bias corrections into one step size (Kingma & Ba, end of section 2), Python floats
        # throughout; eps is rescaled so the update equals m_hat / (sqrt(v_hat) + eps) exactly, as torch.optim.Adam
        step_size = lr * math.sqrt(1.0 - b2 ** self.t) / (1.0 - b1 ** self.t)
        eps_hat = self.eps * math.sqrt(1.0 - b2 ** self.t)
        params, ms, vs, gs = (tree_leaves(t) for t in (self.params, self.m, self.v, grads))  # [(path, array)]
        if [path for path, _ in gs] != [path for path, _ in params]:
            raise ValueError(f"grads: expected the nesting of params ({len(params)} arrays, e.g. {params[0][0]!r}), "
                             f"got {len(gs)} arrays (e.g. {gs[0][0] if gs else None!r})")
        for (_, p), (_, m), (_, v), (gpath, g) in zip(params, ms, vs, gs):
            if g.shape != p.shape:
                raise ValueError(f"grads[{gpath}]: expected shape {p.shape}, got {g.shape}")
            m *= b1
            m += (1.0 - b1) * g                          # first moment
            v *= b2
            v += (1.0 - b2) * (g * g)                    # second moment
            p -= step_size * m / (np.sqrt(v) + eps_hat)  # in place: every holder of `p` sees the update
