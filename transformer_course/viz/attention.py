"""Attention heatmaps: rows are queries (what is being computed), columns are keys (what is looked at).

The book's conventions (see its notation page): heads are numbered from 1 in labels, as the paper's
head_1 .. head_h; a decoder's rows are labelled by the token it writes at that step, its columns by the tokens
it reads.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..utils import to_numpy
from .style import ATTENTION_CMAP

__all__ = ["plot_attention", "plot_attention_heads"]


def as_matrix(value, name: str = "weights", expected: str = "a (T_q, T_k) matrix") -> np.ndarray:
    """A NumPy array or torch tensor as a float64 2-D array; anything else is refused, naming the argument."""
    value = to_numpy(value).astype(np.float64)
    if value.ndim != 2:
        raise ValueError(f"{name}: expected {expected}, got shape {value.shape}")
    return value


def plot_attention(weights, key_labels=None, query_labels=None, ax=None, title=None, annotate=False,
                   colorbar=True, vmax=1.0):
    """Draw one (T_q, T_k) attention matrix; returns the axes. Labels are token strings (optional)."""
    weights = as_matrix(weights)
    n_queries, n_keys = weights.shape
    for labels, size, what in ((key_labels, n_keys, "key_labels"), (query_labels, n_queries, "query_labels")):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{what}: expected {size} labels to match weights {weights.shape}, got {len(labels)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.45 * n_keys + 2.0, 0.45 * n_queries + 1.2))
    image = ax.imshow(weights, cmap=ATTENTION_CMAP, vmin=0.0, vmax=vmax, aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(n_keys))
    ax.set_yticks(range(n_queries))
    if key_labels is not None:
        ax.set_xticklabels(key_labels, rotation=60, ha="right")
    if query_labels is not None:
        ax.set_yticklabels(query_labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query")
    if annotate:
        for i in range(n_queries):
            for j in range(n_keys):
                shade = "white" if weights[i, j] < 0.6 * vmax else "black"
                ax.text(j, i, f"{weights[i, j]:.2f}", ha="center", va="center", fontsize=7, color=shade)
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def plot_attention_heads(weights, key_labels=None, query_labels=None, titles=None, ncols=4, size=2.6,
                         colorbar: bool = False):
    """Draw a (H, T_q, T_k) stack of attention maps side by side (one per head, titled "head 1" to "head H");
    returns the figure. `colorbar=True` adds one colour bar for all panels, which share the scale 0 to 1."""
    weights = to_numpy(weights).astype(np.float64)
    if weights.ndim != 3:
        raise ValueError(f"weights: expected (H, T_q, T_k), got shape {weights.shape}")
    n_heads = weights.shape[0]
    ncols = min(ncols, n_heads)
    nrows = int(np.ceil(n_heads / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, size * nrows), squeeze=False)
    for h, ax in enumerate(axes.flat):
        if h >= n_heads:
            ax.axis("off")
            continue
        title = titles[h] if titles is not None else f"head {h + 1}"   # heads are numbered from 1
        plot_attention(weights[h], key_labels, query_labels if h % ncols == 0 else None, ax=ax, title=title,
                       colorbar=False)
        if h % ncols:
            ax.set_ylabel("")
            ax.set_yticklabels([])
    fig.tight_layout()
    if colorbar:                       # every panel is drawn with vmin 0 and vmax 1, so one bar serves them all
        fig.colorbar(axes.flat[0].images[0], ax=axes.ravel().tolist(), fraction=0.02, pad=0.02)
    return fig
