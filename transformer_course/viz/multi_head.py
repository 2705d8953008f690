"""Figures for multi-head attention: where each number goes when (B, T, D) is split into heads, and the shape of
every array on the way through the layer. Functions return figures; they never call plt.show()."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, Rectangle

__all__ = ["plot_head_split", "plot_multi_head_flow"]

_HEAD_COLOURS = ["#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fc9272", "#d9d9d9", "#c7e9c0", "#fdd0a2"]


def _grid(ax, values, heads, x0, y0):
    """Draw a (rows, cols) block of cells with their numbers; top-left corner at (x0, y0), y grows downwards."""
    rows, cols = values.shape
    for r in range(rows):
        for c in range(cols):
            colour = _HEAD_COLOURS[int(heads[r, c]) % len(_HEAD_COLOURS)]
            ax.add_patch(Rectangle((x0 + c, y0 + r), 1, 1, facecolor=colour, edgecolor="white", linewidth=1.5))
            ax.text(x0 + c + 0.5, y0 + r + 0.5, f"{int(values[r, c]):02d}", ha="center", va="center", fontsize=7)


def _arrow(ax, start, end, text):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color="0.3", linewidth=1.2))
    ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 - 0.4, text, ha="center", va="bottom", fontsize=8)


def plot_head_split(T: int = 3, D: int = 8, n_heads: int = 2):
    """One sequence (B = 1) of queries q[p, f] = 10 p + f, split into heads the right way and the wrong way.

    Cell colour = the head a feature belongs to (f // Dh); the two-digit label = (position p, feature f), both
    counted from 0 as array indices; heads are labelled from 1, as in the book.
    Top: (T, D) -> reshape (T, H, Dh) -> transpose (H, T, Dh). Bottom: a reshape straight to (H, T, Dh).
    """
    if D % n_heads:
        raise ValueError(f"n_heads: expected a divisor of D={D}, got {n_heads}")
    if T > 10 or D > 10:
        raise ValueError(f"T, D: the labels 10 p + f need T <= 10 and D <= 10, got T={T}, D={D}")
    H, Dh = n_heads, D // n_heads
    q = 10 * np.arange(T)[:, None] + np.arange(D)[None, :]          # (T, D)
    head_of = np.broadcast_to(np.arange(D) // Dh, (T, D))          # (T, D)
    split = q.reshape(T, H, Dh).transpose(1, 0, 2)                 # (H, T, Dh)
    split_heads = head_of.reshape(T, H, Dh).transpose(1, 0, 2)     # (H, T, Dh)
    wrong = q.reshape(H, T, Dh)                                    # (H, T, Dh): the classic mistake
    wrong_heads = head_of.reshape(H, T, Dh)                        # (H, T, Dh)

    gap = 0.5                                                      # between heads
    x_a, x_b = 0.0, D + 3.5
    x_c = x_b + D + (H - 1) * gap + 3.5
    stack = H * T + (H - 1) * gap                                  # height of H stacked (T, Dh) blocks
    top = (stack - T) / 2                                          # vertical centring of the (T, D) blocks
    y_w = stack + 2.5                                              # where the wrong way starts, below
    x_max, y_min, y_max = x_c + Dh + 2.5, -2.0, y_w + stack + 1.0
    fig, ax = plt.subplots(figsize=(10.0, 10.0 * (y_max - y_min) / (x_max + 0.5) + 0.3))
    _grid(ax, q, head_of, x_a, top)
    ax.text(x_a + D / 2, top - 0.5, f"q = x W_q\n(B, T, D) = (1, {T}, {D})", ha="center", va="bottom", fontsize=9)
    for h in range(H):                                             # (T, H, Dh): the same memory, cut in H blocks
        _grid(ax, q[:, h * Dh:(h + 1) * Dh], head_of[:, h * Dh:(h + 1) * Dh], x_b + h * (Dh + gap), top)
    ax.text(x_b + (D + (H - 1) * gap) / 2, top - 0.5, f"(B, T, H, Dh) = (1, {T}, {H}, {Dh})\nno number moves",
            ha="center", va="bottom", fontsize=9)
    for h in range(H):                                             # (H, T, Dh): one (T, Dh) matrix per head
        _grid(ax, split[h], split_heads[h], x_c, h * (T + gap))
        ax.text(x_c + Dh + 0.3, h * (T + gap) + T / 2, f"head {h + 1}", va="center", fontsize=8)
    ax.text(x_c + Dh / 2, -0.5, f"(B, H, T, Dh) = (1, {H}, {T}, {Dh})", ha="center", va="bottom", fontsize=9)
    _arrow(ax, (x_a + D + 0.4, top + T / 2), (x_b - 0.4, top + T / 2), "reshape")
    _arrow(ax, (x_b + D + (H - 1) * gap + 0.4, top + T / 2), (x_c - 0.4, top + T / 2), "transpose\n(0, 2, 1, 3)")

    _grid(ax, q, head_of, x_a, y_w + top)
    for h in range(H):
        _grid(ax, wrong[h], wrong_heads[h], x_c, y_w + h * (T + gap))
        ax.text(x_c + Dh + 0.3, y_w + h * (T + gap) + T / 2, f"'head {h + 1}'", va="center", fontsize=8,
                color="#b2182b")
    _arrow(ax, (x_a + D + 0.4, y_w + top + T / 2), (x_c - 0.4, y_w + top + T / 2),
           "reshape straight to (B, H, T, Dh): WRONG")
    ax.text(x_a + D / 2, y_w + top + T + 0.3, "labels: position p, feature f (10 p + f); colour: head of the feature",
            ha="center", va="top", fontsize=8, color="0.3")
    ax.set_xlim(-0.5, x_max)
    ax.set_ylim(y_max, y_min)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    return fig


def plot_multi_head_flow(B="B", T="T", D="D", H="H"):
    """The shape of every array in multi-head self-attention, from x (B, T, D) to the output (B, T, D), in NumPy's
    syntax (the NumPy code of chapter 5; PyTorch writes q.transpose(1, 2))."""
    Dh = f"{D}/{H}" if isinstance(D, str) or isinstance(H, str) else D // H
    steps = [
        ("x", f"({B}, {T}, {D})", "input"),
        ("q = x W_q (same for k, v)", f"({B}, {T}, {D})", "all heads in one matmul"),
        ("q.reshape(B, T, H, Dh)", f"({B}, {T}, {H}, {Dh})", "cut D into H blocks"),
        ("q.transpose(0, 2, 1, 3)", f"({B}, {H}, {T}, {Dh})", "heads become a batch axis"),
        ("q @ k.swapaxes(-1, -2) / sqrt(Dh)", f"({B}, {H}, {T}, {T})", "scores, per head"),
        ("softmax(scores) @ v", f"({B}, {H}, {T}, {Dh})", "one average per head"),
        ("heads.transpose(0, 2, 1, 3)", f"({B}, {T}, {H}, {Dh})", "positions first again"),
        ("reshape(B, T, D)", f"({B}, {T}, {D})", "concatenate the heads"),
        ("concat @ W_o", f"({B}, {T}, {D})", "mix the heads"),
    ]
    fig, ax = plt.subplots(figsize=(7.0, 0.55 * len(steps) + 0.4))
    for i, (code, shape, note) in enumerate(steps):
        y = len(steps) - 1 - i
        kind = 1 if 3 <= i <= 5 else 0                            # the per-head part of the computation
        ax.add_patch(Rectangle((0, y + 0.1), 4.2, 0.8, facecolor=["#deebf7", "#fdd0a2"][kind], edgecolor="0.5"))
        ax.text(0.1, y + 0.5, code, va="center", fontsize=9, family="monospace")
        ax.text(4.4, y + 0.5, shape, va="center", fontsize=10, family="monospace", weight="bold")
        ax.text(6.6, y + 0.5, note, va="center", fontsize=9, color="0.3")
        if i:
            ax.annotate("", xy=(2.1, y + 0.9), xytext=(2.1, y + 1.1), arrowprops=dict(arrowstyle="-|>", color="0.4"))
    ax.set_xlim(0, 9.5)
    ax.set_ylim(0, len(steps))
    ax.axis("off")
    fig.tight_layout()
    return fig
