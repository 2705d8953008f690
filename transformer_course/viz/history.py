"""Figures for chapter 1: a timeline of papers, and how far information travels in three kinds of layer."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt

# the encoder-decoder diagram beside which the attention version is drawn: same boxes, colours and helpers
from .diagrams import FILL, _arrow, _box, _canvas, _count, _note, _rnn_encoder

__all__ = ["plot_timeline", "plot_layer_paths", "attention_encoder_decoder_diagram"]

_GREY = "#bbbbbb"
_PATH = "#d62728"
QUERY_COLOUR = "0.55"  # the decoder state s_{t-1} read as the query


def plot_timeline(events, ax=None, title=None):
    """Draw papers on a time axis, one row each, oldest at the top.

    `events` is a list of (year as a float, short label, one-line contribution). Returns the axes.
    """
    events = sorted(events, key=lambda event: event[0])
    if not events:
        raise ValueError("events: expected at least one (year, label, note) triple, got none")
    if ax is None:
        _, ax = plt.subplots(figsize=(8.0, 0.45 * len(events) + 1.2))
    years = [event[0] for event in events]
    first, last = math.floor(min(years)), math.ceil(max(years))
    middle = (first + last) / 2
    for row, (year, label, note) in enumerate(events):
        y = len(events) - 1 - row
        ax.plot([first, year], [y, y], color=_GREY, lw=0.8, zorder=1)
        ax.scatter([year], [y], s=40, color=_PATH, zorder=3)
        right = year < middle  # early papers: text on the right of the dot; late ones: on the left
        ax.text(year + (0.06 if right else -0.06), y, f"{label}: {note}", ha="left" if right else "right",
                va="center", fontsize=8.5, zorder=4,
                bbox=dict(facecolor="white", edgecolor="none", pad=1.0))
    ax.set_xlim(first, last + 0.1)
    ax.set_xticks(range(first, last + 1))
    ax.set_ylim(-0.7, len(events) - 0.3)
    ax.set_yticks([])
    ax.grid(axis="y", visible=False)
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("first public version (arXiv, else the conference), in years")
    if title:
        ax.set_title(title)
    return ax


def _nodes(ax, xs, y, color="white"):
    ax.scatter(xs, [y] * len(xs), s=90, facecolor=color, edgecolor="#333333", zorder=3)


def _edge(ax, a, b, on_path=False):
    ax.annotate("", xy=b, xytext=a, zorder=2 if on_path else 1,
                arrowprops=dict(arrowstyle="-|>", color=_PATH if on_path else _GREY,
                                lw=2.0 if on_path else 0.8, shrinkA=6, shrinkB=6))


def plot_layer_paths(n: int = 8, kernel: int = 2):
    """Three panels: the path from input 1 to output n in a recurrent layer, a stack of dilated causal
    convolutions with kernel width `kernel` (the book's κ), and a self-attention layer. Path edges are red;
    returns the figure."""
    if n < 2 or kernel < 2:
        raise ValueError(f"n and kernel: expected n >= 2 and kernel >= 2, got n={n}, kernel={kernel}")
    n_conv_layers = max(1, math.ceil(math.log(n) / math.log(kernel) - 1e-9))
    fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.4))
    xs = list(range(n))

    # recurrent: x_i -> h_i, h_i -> h_{i+1}
    ax = axes[0]
    _nodes(ax, xs, 0)
    _nodes(ax, xs, 1, color="#e8e8ff")
    for i in xs:
        _edge(ax, (i, 0), (i, 1), on_path=(i == 0))
        if i + 1 < n:
            _edge(ax, (i, 1), (i + 1, 1), on_path=True)
    ax.set_title(f"recurrent: {n} steps")

    # dilated causal convolutions: layer l reads positions j, j - kernel**(l-1), ..., j - (kernel-1) kernel**(l-1)
    ax = axes[1]
    for layer in range(n_conv_layers + 1):
        _nodes(ax, xs, layer, color="white" if layer == 0 else "#e8ffe8")
    on_path = {(n_conv_layers, n - 1)}                  # walk down from the last output to input 0
    for layer in range(n_conv_layers, 0, -1):
        dilation = kernel ** (layer - 1)
        for j in xs:
            for m in range(kernel):
                src = j - m * dilation
                if src < 0:
                    continue
                # the path subtracts one base-kernel digit of n - 1 per layer
                path = (layer, j) in on_path and src == (n - 1) % (kernel ** (layer - 1))
                _edge(ax, (src, layer - 1), (j, layer), on_path=path)
                if path:
                    on_path.add((layer - 1, src))
    ax.set_title(f"dilated convolutions ($\\kappa$ = {kernel}): {n_conv_layers} layers")

    # self-attention: every output reads every input
    ax = axes[2]
    _nodes(ax, xs, 0)
    _nodes(ax, xs, 1, color="#fff0e0")
    for i in xs:
        for j in xs:
            if not (i == 0 and j == n - 1):
                _edge(ax, (i, 0), (j, 1))
    _edge(ax, (0, 0), (n - 1, 1), on_path=True)
    ax.set_title("self-attention: 1 layer")

    for ax in axes:
        ax.set_xticks(xs)
        ax.set_xticklabels([str(i + 1) for i in xs])
        ax.set_xlabel("position")
        ax.set_yticks([])
        ax.grid(False)
        ax.margins(x=0.08, y=0.15)
        for side in ("left", "right", "top"):
            ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def attention_encoder_decoder_diagram(S: int = 4, T: int = 3):
    """The encoder-decoder of `encoder_decoder_diagram` with attention: every encoder state h_i stays in a
    memory, and each decoder step t reads its own context c_t, a weighted average of all of them (thin lines:
    the weights alpha_{t,i}), with the decoder's previous state s_{t-1} as the query (grey arrows, from s_0 on).
    Returns the figure."""
    S, T = _count("S", S), _count("T", T)
    step = 0.78
    x_enc = [0.55 + i * step for i in range(S)]
    x_dec = [x_enc[-1] + 1.25 + t * step for t in range(T)]
    fig, ax = _canvas(max(x_dec[-1] + 0.75, 5.6), 3.9)
    y_in, y_rnn, y_ctx, y_out, w, h = 0.35, 1.55, 2.55, 3.2, 0.52, 0.40
    _rnn_encoder(ax, x_enc, y_in, y_rnn, w, h)
    for t, x in enumerate(x_dec):
        x_c = x - 0.16                                  # c_t sits above its decoder step, left of the output
        for x_h in x_enc:                               # one weight alpha_{t,i} per line
            ax.plot([x_h, x_c], [y_rnn + h / 2, y_ctx - 0.14], color="#cb181d", lw=0.6, alpha=0.55, zorder=1)
        _box(ax, x_c, y_ctx, 0.36, 0.28, f"$c_{t + 1}$", FILL["context"], size=9)
        # the query: the state before this step, s_t in 0-based t (s_0 has no box: a note left of s_1)
        query_from = (x_dec[t - 1] + w / 2, y_rnn + h / 2) if t else (x - 0.62, y_rnn + 0.12)
        _arrow(ax, query_from, (x_c - 0.18, y_ctx - 0.08), colour=QUERY_COLOUR)
        _arrow(ax, (x_c, y_ctx - 0.14), (x_c, y_rnn + h / 2), colour="#cb181d")
        _box(ax, x, y_rnn, w, h, f"$s_{t + 1}$", FILL["rnn"])
        reads = r"$\langle$bos$\rangle$" if t == 0 else f"$y_{t}$"
        _note(ax, x, y_in, reads)
        _arrow(ax, (x, y_in + 0.15), (x, y_rnn - h / 2))
        _arrow(ax, (x + 0.16, y_rnn + h / 2), (x + 0.16, y_out - 0.12))
        _note(ax, x + 0.16, y_out, f"$y_{t + 1}$")
        if t:
            _arrow(ax, (x_dec[t - 1] + w / 2, y_rnn), (x - w / 2, y_rnn))
    _note(ax, x_dec[0] - 0.62, y_rnn, "$s_0$")
    _arrow(ax, (x_dec[0] - 0.5, y_rnn), (x_dec[0] - w / 2, y_rnn))
    _note(ax, (x_enc[0] + x_enc[-1]) / 2, 3.65, "encoder: keeps $h_1, \\dots, h_S$", weight="bold")
    _note(ax, (x_dec[0] + x_dec[-1]) / 2, 3.65, "decoder: a new $c_t$ at every step", weight="bold")
    return fig
