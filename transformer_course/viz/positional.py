"""Figures for chapter 6: the positional-encoding table as a heat map, and how similar positions are."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .attention import as_matrix
from .style import DIVERGING_CMAP

__all__ = ["plot_positional_heatmap", "plot_position_similarity", "plot_encoding_curves", "cosine_similarity_matrix"]


def _as_table(pe, name: str = "pe") -> np.ndarray:
    return as_matrix(pe, name, "a (positions, d_model) table")


def plot_positional_heatmap(pe, ax=None, title=None, colorbar=True):
    """Draw a (positions, d_model) table: one row per position, one column per dimension; returns the axes.

    A diverging colour map centred on 0 (values of the sinusoidal table lie in [-1, 1]).
    """
    pe = _as_table(pe)
    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 3.6))
    limit = max(float(np.abs(pe).max()), 1e-12)
    image = ax.imshow(pe, cmap=DIVERGING_CMAP, vmin=-limit, vmax=limit, aspect="auto", interpolation="nearest")
    ax.grid(False)
    ax.set_xlabel("dimension j")
    ax.set_ylabel("position pos")
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def cosine_similarity_matrix(pe) -> np.ndarray:
    """(max_len, max_len) cosine similarities between the rows of a (max_len, D) table (a zero row gives 0)."""
    pe = _as_table(pe)
    norms = np.linalg.norm(pe, axis=1, keepdims=True)   # (max_len, 1)
    unit = np.divide(pe, norms, out=np.zeros_like(pe), where=norms > 0)  # (max_len, D)
    return unit @ unit.T                                 # (max_len, max_len)


def plot_position_similarity(pe, ax=None, title=None, colorbar=True):
    """Cosine similarity between every pair of positions of a (positions, d_model) table; returns the axes."""
    sim = cosine_similarity_matrix(pe)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.4, 3.6))
    image = ax.imshow(sim, cmap=DIVERGING_CMAP, vmin=-1.0, vmax=1.0, interpolation="nearest")
    ax.grid(False)
    ax.set_xlabel("position")
    ax.set_ylabel("position")
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def plot_encoding_curves(pe, dims, ax=None, title=None):
    """Plot columns `dims` of a (positions, d_model) table against the position (one curve each); returns ax."""
    pe = _as_table(pe)
    dims = list(dims)
    bad = [j for j in dims if not 0 <= j < pe.shape[1]]
    if bad:
        raise ValueError(f"dims: expected column indices in [0, {pe.shape[1]}), got {bad}")
    if ax is None:
        _, ax = plt.subplots(figsize=(6.4, 3.0))
    positions = np.arange(pe.shape[0])
    for j in dims:
        kind = "sin" if j % 2 == 0 else "cos"
        ax.plot(positions, pe[:, j], lw=1.4, label=f"j = {j} ({kind})")
    ax.set_xlabel("position pos")
    ax.set_ylabel("PE[pos, j]")
    ax.legend(loc="upper right", fontsize=8, ncol=2)
    if title:
        ax.set_title(title)
    return ax
