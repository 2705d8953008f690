"""Small helpers shared by chapters, tests and scripts."""
from __future__ import annotations

import os
import random

import numpy as np

__all__ = ["set_seed"]


def set_seed(seed: int) -> np.random.Generator:
    """Seed Python's `random`, NumPy's global state and torch (if installed); return a fresh NumPy Generator.

    Chapters call this once at the top so every run prints the same numbers. Torch is imported lazily so
    that the NumPy half of the course works without it.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)  # inherited by subprocesses (DataLoader workers)
    try:
        import torch
    except ImportError:  # the NumPy chapters run without torch
        pass
    else:
        torch.manual_seed(seed)  # seeds CPU and every CUDA device
    return np.random.default_rng(seed)
