"""Schematic diagrams of the course's architectures, drawn by code in the book's notation (book/notation.md).

Every function returns a matplotlib Figure (it never calls plt.show()), with tensor shapes written next to the
arrows. The Transformer diagrams take a `ModelConfig`, so a preset's real sizes appear (D, H, D_h, F, N); with
`config=None` they show the letters instead. `retina(fig)` turns a figure into a PNG of twice the pixels, shown
at the figure's own size, which keeps the lines and text crisp on high-density screens.

Layout unit: the axes cover the whole figure with one data unit per inch, so a box of height 0.3 is 0.3 inch
(30 px on the website at 100 dpi) and font sizes in points keep their meaning.
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib import patheffects
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

from ..config import ModelConfig

__all__ = ["encoder_decoder_diagram", "rnnsearch_diagram", "soft_lookup_diagram",
           "scaled_dot_product_attention_diagram", "multi_head_attention_diagram", "transformer_diagram",
           "encoder_layer_diagram", "decoder_layer_diagram", "teacher_forcing_diagram", "kv_cache_diagram",
           "retina"]

FILL = {"rnn": "#deebf7", "attention": "#fdd9b5", "ffn": "#c7e9c0", "norm": "#fff2ae", "embed": "#f2d7ee",
        "linear": "#dadaeb", "io": "#f0f0f0", "context": "#fcbba1", "new": "#fdae6b"}
TEXT_SIZE = 10       # points: 13.9 px at 100 dpi
SHAPE_SIZE = 9       # the shape labels on the arrows: 12.5 px
EDGE = "0.35"
SHAPE_COLOUR = "#08519c"
MAX_TOKENS = 6       # more boxes in a row no longer fit the page width at a readable size


# ----------------------------------------------------------------------------------------------- validation
@dataclass(frozen=True)
class _Sizes:
    """The sizes a diagram writes: numbers from a ModelConfig, or the notation's letters."""

    D: str
    H: str
    Dh: str
    F: str
    N_enc: str
    N_dec: str
    drop: str = "$P_{\\mathrm{drop}}$"      # the dropout rate on every sublayer's output

    @property
    def legend(self) -> str:
        # the letters in maths (italic, as on the pages), the numbers upright
        layers = (f"$N$ = {self.N_enc}" if self.N_enc == self.N_dec
                  else f"$N_{{\\mathrm{{enc}}}}$ = {self.N_enc}, $N_{{\\mathrm{{dec}}}}$ = {self.N_dec}")
        return f"$D$ = {self.D}, $H$ = {self.H}, $D_h$ = {self.Dh}, $F$ = {self.F}, {layers}"


def _sizes(config) -> _Sizes:
    if config is None:
        return _Sizes("D", "H", "$D_h$", "F", "N", "N")
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config: expected a ModelConfig (for example get_preset('course')) or None for the "
                        f"letters of the notation, got {type(config).__name__}")
    return _Sizes(str(config.d_model), str(config.n_heads), str(config.d_head), str(config.d_ff),
                  str(config.n_encoder_layers), str(config.n_decoder_layers),
                  f"$P_{{\\mathrm{{drop}}}}$ = {config.dropout:g}")


def _count(name: str, value, low: int = 1, high: int = MAX_TOKENS) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: expected an integer in [{low}, {high}], got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"{name}: expected an integer in [{low}, {high}], got {value}")
    return value


def _flag(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name}: expected True or False, got {type(value).__name__}")
    return value


# ------------------------------------------------------------------------------------------ drawing helpers
def _canvas(width: float, height: float):
    """A figure of width x height inches whose axes cover it, one data unit per inch, on an opaque white
    background (the website's dark theme shows images on their own background)."""
    fig = plt.figure(figsize=(width, height), facecolor="white")
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    return fig, ax


def _box(ax, x, y, w, h, text, fill, size=TEXT_SIZE, **text_kw):
    """A rounded box centred on (x, y) with its text; returns (left, bottom, right, top)."""
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.06",
                                facecolor=fill, edgecolor=EDGE, linewidth=1.0))
    ax.text(x, y, text, ha="center", va="center", fontsize=size, **text_kw)
    return x - w / 2, y - h / 2, x + w / 2, y + h / 2


def _arrow(ax, start, end, colour=EDGE, style="-|>", **kw):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=11, color=colour, linewidth=1.1,
                                 shrinkA=0, shrinkB=0, **kw))



def _rnn_encoder(ax, x_enc, y_in: float, y_rnn: float, w: float, h: float) -> None:
    """An RNN encoder drawn left to right: one state box h_i over each input x_i, the recurrence as arrows."""
    for i, x in enumerate(x_enc):
        _box(ax, x, y_rnn, w, h, f"$h_{i + 1}$", FILL["rnn"])
        _note(ax, x, y_in, f"$x_{i + 1}$")
        _arrow(ax, (x, y_in + 0.15), (x, y_rnn - h / 2))
        if i:
            _arrow(ax, (x_enc[i - 1] + w / 2, y_rnn), (x - w / 2, y_rnn))

def _shape(ax, x, y, text, ha="left", va="center", size=SHAPE_SIZE):
    """A tensor shape written next to an arrow, on white so that it stays legible over lines."""
    ax.text(x, y, text, ha=ha, va=va, fontsize=size, color=SHAPE_COLOUR,
            bbox=dict(boxstyle="square,pad=0.08", facecolor="white", edgecolor="none"))


def _note(ax, x, y, text, ha="center", va="center", size=TEXT_SIZE, **kw):
    kw.setdefault("color", "0.15")
    ax.text(x, y, text, ha=ha, va=va, fontsize=size, **kw)


@dataclass
class _Step:
    """One element of a vertical stack, bottom to top: a box, a residual addition, or the start of a residual.

    kind: "box" | "add" (a circle, or a box if `text` is given, that the residual enters) | "branch".
    shape: the shape written on the arrow that enters the element from below.
    """

    kind: str
    text: str = ""
    fill: str = FILL["io"]
    shape: str = ""
    height: float = 0.34
    name: str = ""
    width: float | None = None     # a box narrower than the stack's width (None: the stack's width)
    gap: float | None = None       # the arrow's length below the element (None: the stack's gap)


def _stack(ax, x, y, steps, width, gap=0.34, residual_dx=0.22, first_arrow=True, side=-1):
    """Draw `steps` upwards from y, centred on x; return (top y, {name: (left, bottom, right, top)}).

    Without `first_arrow` the first element sits on y itself (its inputs are drawn by the caller). Residual
    paths run on the left (side=-1) or on the right (side=1)."""
    where, branch_y, cursor = {}, None, y - (0 if first_arrow else gap)
    for index, step in enumerate(steps):
        if step.kind == "branch":
            branch_y = cursor + gap / 2            # the residual leaves the next arrow halfway up
            continue
        bottom = cursor + (step.gap or gap)
        if first_arrow or index:
            _arrow(ax, (x, cursor), (x, bottom))
        if step.shape:                             # on the side away from the residual paths
            _shape(ax, x - side * 0.08, cursor + gap / 2, step.shape, ha="left" if side < 0 else "right")
        if step.kind == "add" and not step.text:
            radius = 0.12
            ax.add_patch(Circle((x, bottom + radius), radius, facecolor="white", edgecolor=EDGE, linewidth=1.1))
            ax.text(x, bottom + radius, "+", ha="center", va="center", fontsize=12)
            top, entry = bottom + 2 * radius, (x + side * radius, bottom + radius)
        else:
            box = _box(ax, x, bottom + step.height / 2, step.width or width, step.height, step.text, step.fill)
            top, entry = box[3], (box[2] if side > 0 else box[0], bottom + step.height / 2)
            if step.name:
                where[step.name] = box
        if step.kind == "add":
            if branch_y is None:
                raise ValueError("a residual addition needs a branch below it")
            outer = x + side * (width / 2 + residual_dx)
            ax.plot([x, outer, outer], [branch_y, branch_y, entry[1]], color=EDGE, linewidth=1.1)
            _arrow(ax, (outer, entry[1]), entry)
            branch_y = None
        cursor = top
    return cursor, where


def retina(fig: Figure, scale: int = 2):
    """The figure as an IPython PNG image with `scale` times the pixels, displayed at the figure's own size.

    The figure is closed, so a notebook shows the diagram once. Jupyter Book keeps the display width that the
    image carries, so the page shows a figure of width * dpi CSS pixels drawn with scale times as many.
    """
    from IPython.display import Image

    if not isinstance(fig, Figure):
        raise TypeError(f"fig: expected a matplotlib Figure, got {type(fig).__name__}")
    _count("scale", scale, low=1, high=4)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=scale * fig.dpi, facecolor=fig.get_facecolor())
    width = round(fig.get_figwidth() * fig.dpi)
    plt.close(fig)
    image = Image(data=buffer.getvalue(), format="png", width=width)
    image.figure = fig   # closed, kept so that the workshop slides can save it again as SVG (tools/slide_figures.py)
    return image


# ------------------------------------------------------------------------------------ 1. the bottleneck
def encoder_decoder_diagram(S: int = 4, T: int = 3) -> Figure:
    """An RNN encoder-decoder without attention: S encoder steps squeezed into one context vector c that the
    decoder reads at each of its T steps (Cho et al. 2014; Sutskever et al. 2014 use it as the first state)."""
    S, T = _count("S", S), _count("T", T)
    step = 0.78
    x_enc = [0.55 + i * step for i in range(S)]
    x_c = x_enc[-1] + 1.05
    x_dec = [x_c + 1.05 + t * step for t in range(T)]
    width = x_dec[-1] + 0.55
    fig, ax = _canvas(max(width, 5.6), 3.5)
    y_in, y_rnn, y_out, w, h = 0.35, 1.55, 2.75, 0.52, 0.40
    _rnn_encoder(ax, x_enc, y_in, y_rnn, w, h)
    _shape(ax, x_enc[0] + 0.06, (y_in + y_rnn - h / 2) / 2 + 0.07, "(B, E)")
    _box(ax, x_c, y_rnn, 0.5, 0.5, "$c$", FILL["context"], size=12)
    _arrow(ax, (x_enc[-1] + w / 2, y_rnn), (x_c - 0.25, y_rnn))
    _shape(ax, (x_enc[-1] + x_c) / 2 + 0.04, y_rnn + 0.2, "(B, D)", ha="center")
    _note(ax, x_c, y_rnn - 0.55, "the bottleneck:\none vector for the\nwhole sentence", va="top", size=9)
    y_bus = y_rnn + 0.62                             # c reaches every decoder step along this line
    ax.plot([x_c, x_c, x_dec[-1] - 0.12], [y_rnn + 0.25, y_bus, y_bus], color="#cb181d", linewidth=1.1)
    for t, x in enumerate(x_dec):
        _box(ax, x, y_rnn, w, h, f"$s_{t + 1}$", FILL["rnn"])
        reads = r"$\langle$bos$\rangle$" if t == 0 else f"$y_{t}$"
        _note(ax, x, y_in, reads)
        _arrow(ax, (x, y_in + 0.15), (x, y_rnn - h / 2))
        _arrow(ax, (x - 0.12, y_bus), (x - 0.12, y_rnn + h / 2), colour="#cb181d")
        _arrow(ax, (x + 0.12, y_rnn + h / 2), (x + 0.12, y_out - 0.15))
        _note(ax, x, y_out, f"$y_{t + 1}$")
        if t:
            _arrow(ax, (x_dec[t - 1] + w / 2, y_rnn), (x - w / 2, y_rnn))
    _shape(ax, x_dec[0] - 0.3, y_out, "p: (B, V)", ha="right")
    _note(ax, (x_enc[0] + x_enc[-1]) / 2, 3.2, "encoder: reads $x_1, \\dots, x_S$", weight="bold")
    _note(ax, (x_dec[0] + x_dec[-1]) / 2, 3.2, "decoder: writes $y_1, \\dots, y_T$", weight="bold")
    return fig


# ------------------------------------------------------------------------------------- 2. RNNsearch
def rnnsearch_diagram(S: int = 4) -> Figure:
    """Bahdanau et al.'s RNNsearch at decoder step t: the bidirectional encoder (every x_i feeds both
    directions; the annotation h_i is the pair of states, outlined), the alignment model a(s_{t-1}, h_i) on
    every annotation, the softmax weights, the context c_t from all annotations, the decoder update s_t and
    the output g(y_{t-1}, s_t, c_t); s_0 is computed from the backward state of the first word."""
    S = _count("S", S)
    step, w, h, margin = 0.8, 0.5, 0.36, 0.08
    w_fwd, fwd_shift = 0.36, -0.07                       # the forward box leaves room on its right for x_i's wire
    xs = [0.92 + i * step for i in range(S)]
    enc_mid, enc_right = (xs[0] + xs[-1]) / 2, xs[-1] + w / 2 + margin
    x_prev, x_cur = enc_right + 0.85, enc_right + 2.0
    fig, ax = _canvas(max(x_cur + 1.55, 5.6), 5.3)
    y_x, y_fwd, y_bwd, y_a, y_soft = 0.3, 1.0, 1.62, 3.05, 3.95
    col_bottom, col_top = y_fwd - h / 2 - margin, y_bwd + h / 2 + margin
    bridge = [patheffects.withStroke(linewidth=4, foreground="white")]   # a wire that passes over another
    for i, x in enumerate(xs):
        ax.add_patch(FancyBboxPatch((x - w / 2 - margin, col_bottom), w + 2 * margin, col_top - col_bottom,
                                    boxstyle="round,pad=0,rounding_size=0.08", facecolor="none",
                                    edgecolor=SHAPE_COLOUR, linewidth=1.0, linestyle="--"))
        _note(ax, x, col_top + 0.2, f"$h_{i + 1}$")
        _box(ax, x + fwd_shift, y_fwd, w_fwd, h, f"$\\overrightarrow{{h}}_{i + 1}$", FILL["rnn"])
        _box(ax, x, y_bwd, w, h, f"$\\overleftarrow{{h}}_{i + 1}$", FILL["rnn"])
        _note(ax, x, y_x, f"$x_{i + 1}$")
        _arrow(ax, (x + fwd_shift, y_x + 0.15), (x + fwd_shift, y_fwd - h / 2))       # x_i feeds both directions
        x_wire = x + fwd_shift + w_fwd / 2 + 0.08
        _arrow(ax, (x_wire, y_x + 0.15), (x_wire, y_bwd - h / 2), path_effects=bridge, zorder=3)
        _arrow(ax, (x, col_top + 0.3), (x, y_a - 0.2))                                   # every h_i is scored
        if i:
            _arrow(ax, (xs[i - 1] + fwd_shift + w_fwd / 2, y_fwd), (x + fwd_shift - w_fwd / 2, y_fwd))
            _arrow(ax, (x - w / 2, y_bwd), (xs[i - 1] + w / 2, y_bwd))
    _shape(ax, xs[0] - w / 2 - margin - 0.04, y_x + 0.3, "(B, E)", ha="right")
    _shape(ax, xs[0] - w / 2 - margin - 0.04, (y_fwd + y_bwd) / 2, "(B, D)", ha="right")
    _shape(ax, xs[0] + 0.05, (col_top + 0.3 + y_a - 0.2) / 2, "(B, 2D)")
    span = xs[-1] - xs[0] + w + 0.2
    _box(ax, enc_mid, y_a, span, 0.4, "alignment model  $e_{t,i} = a(s_{t-1}, h_i)$", FILL["attention"])
    _box(ax, enc_mid, y_soft, span, 0.4, "softmax over $i$:  $\\alpha_{t,i}$", FILL["attention"])
    _arrow(ax, (enc_mid, y_a + 0.2), (enc_mid, y_soft - 0.2))
    _shape(ax, enc_mid + 0.08, (y_a + y_soft) / 2, "$e_{t,\\cdot}$: (B, S)")
    # the decoder: s_{t-1} asks, c_t answers, s_t and the output g(y_{t-1}, s_t, c_t) follow
    _box(ax, x_prev, y_bwd, 0.62, h, "$s_{t-1}$", FILL["rnn"])
    _box(ax, x_cur, y_bwd, 0.62, h, "$s_t$", FILL["rnn"])
    _arrow(ax, (x_prev + 0.31, y_bwd), (x_cur - 0.31, y_bwd))
    _arrow(ax, (x_prev, y_bwd + h / 2), (enc_mid + span / 2, y_a - 0.05))
    _shape(ax, x_prev - 0.45, y_bwd + h / 2 + 0.62, "(B, D)")
    _note(ax, x_prev, y_x + 0.05, "at $t = 1$:\n$s_0 = \\tanh(W_s \\overleftarrow{h}_1)$", size=SHAPE_SIZE)
    _arrow(ax, (x_prev, y_x + 0.32), (x_prev, y_bwd - h / 2), style="-|>", linestyle=":")
    _note(ax, x_cur, y_x, "$E y_{t-1}$")
    _arrow(ax, (x_cur, y_x + 0.15), (x_cur, y_bwd - h / 2))
    _shape(ax, x_cur + 0.06, (y_x + y_fwd) / 2 - 0.05, "(B, E)")
    x_g = x_cur + 0.92
    _arrow(ax, (x_cur + 0.25, y_x), (x_g - 0.05, y_a - 0.25 - 0.55), connectionstyle="angle,angleA=0,angleB=90,rad=0")
    x_ctx = (x_prev + x_cur) / 2
    _box(ax, x_ctx, y_soft, 1.0, 0.5, "$c_t = \\sum_i \\alpha_{t,i} h_i$", FILL["context"], size=9)
    _arrow(ax, (enc_mid + span / 2, y_soft), (x_ctx - 0.5, y_soft))
    _shape(ax, (enc_mid + span / 2 + x_ctx - 0.5) / 2, y_soft + 0.2, "(B, S)", ha="center")
    # the context reads every annotation: one line from all the outlined h_i
    y_all = col_top + 0.06                               # a line joining the tops of all the outlined annotations
    ax.plot([xs[0] - w / 2 - margin, enc_right], [y_all, y_all], color=SHAPE_COLOUR, lw=1.0, ls="--")
    for x in xs:
        ax.plot([x - w / 2 - margin + 0.04] * 2, [col_top, y_all], color=SHAPE_COLOUR, lw=1.0)
    _arrow(ax, (enc_right, y_all), (x_ctx - 0.25, y_soft - 0.25), colour=SHAPE_COLOUR,
           connectionstyle="angle,angleA=0,angleB=90,rad=0")
    # beside the wire where it rises to c_t, clear of the s_{t-1} arrow that crosses the wire lower down
    _shape(ax, x_ctx - 0.32, (y_a + y_soft) / 2, "all $h_i$: (B, S, 2D)", ha="right")
    _arrow(ax, (x_ctx + 0.1, y_soft - 0.25), (x_cur - 0.15, y_bwd + h / 2))
    _shape(ax, x_ctx + 0.2, y_a - 0.35, "$c_t$: (B, 2D)", ha="left")
    _box(ax, x_g, y_a - 0.55, 0.95, 0.5, "$g(y_{t-1}, s_t, c_t)$\nsoftmax", FILL["linear"], size=9)
    _arrow(ax, (x_cur + 0.2, y_bwd + h / 2), (x_g - 0.2, y_a - 0.8))
    _arrow(ax, (x_ctx + 0.5, y_soft), (x_g, y_a - 0.3))
    _arrow(ax, (x_g + 0.3, y_a - 0.3), (x_g + 0.3, y_soft + 0.2))
    _note(ax, x_g, y_soft + 0.35, "$p(y_t \\mid y_{<t}, x)$", ha="center")
    _shape(ax, x_g, y_soft + 0.6, "(B, V)", ha="center")
    _note(ax, 0.1, 4.95, "bidirectional encoder, then one decoder step $t$", ha="left", weight="bold")
    return fig


# ------------------------------------------------------------------------------------ 3. soft look-up
def soft_lookup_diagram(n_keys: int = 4) -> Figure:
    """Attention as a soft look-up for one query: scores e_j = q . k_j, weights alpha = softmax(e), output the
    weighted average of the values. Vectors are rows, so one query is (1, d_k)."""
    n = _count("n_keys", n_keys)
    row = 0.52
    height = 1.25 + n * row
    fig, ax = _canvas(7.2, height)
    ys = [height - 0.95 - i * row for i in range(n)]
    mid = (ys[0] + ys[-1]) / 2
    x_q, x_k, x_e, x_soft, x_a, x_v, x_sum, x_o = 0.45, 1.55, 2.55, 3.35, 4.15, 5.0, 5.85, 6.6
    _box(ax, x_q, mid, 0.5, 0.4, "$q$", FILL["attention"], size=12)
    _box(ax, x_soft, mid, 0.48, n * row - 0.1, "softmax", FILL["attention"], rotation=90)
    ax.add_patch(Circle((x_sum, mid), 0.17, facecolor="white", edgecolor=EDGE, linewidth=1.1))
    ax.text(x_sum, mid, "$\\sum$", ha="center", va="center", fontsize=12)
    for i, y in enumerate(ys):
        _box(ax, x_k, y, 0.55, 0.36, f"$k_{i + 1}$", FILL["io"])
        _box(ax, x_e, y, 0.55, 0.36, f"$e_{i + 1}$", "white")
        _box(ax, x_a, y, 0.55, 0.36, f"$\\alpha_{i + 1}$", "white")
        _box(ax, x_v, y, 0.55, 0.36, f"$v_{i + 1}$", FILL["io"])
        _arrow(ax, (x_q + 0.25, mid), (x_k - 0.28, y))
        _arrow(ax, (x_k + 0.28, y), (x_e - 0.28, y))
        _arrow(ax, (x_e + 0.28, y), (x_soft - 0.24, y))
        _arrow(ax, (x_soft + 0.24, y), (x_a - 0.28, y))
        ax.text((x_a + x_v) / 2, y, "×", ha="center", va="center", fontsize=11)
        _arrow(ax, (x_v + 0.28, y), (x_sum - 0.15, mid + (y - mid) * 0.15))
    _box(ax, x_o, mid, 0.62, 0.4, "$o$", FILL["context"], size=12)
    _arrow(ax, (x_sum + 0.17, mid), (x_o - 0.31, mid))
    top = ys[0] + 0.3
    labels = [(x_q, "query\n$(1, d_k)$"), (x_k, "keys $K$\n$(T_k, d_k)$"), (x_e, "scores $q \\cdot k_j$\n$(1, T_k)$"),
              (x_a, "weights\n$(1, T_k)$"), (x_v, "values $V$\n$(T_k, d_v)$"), (x_o, "output\n$(1, d_v)$")]
    for x, text in labels:
        ax.text(x, top, text, ha="center", va="bottom", fontsize=SHAPE_SIZE, color=SHAPE_COLOUR)
    _note(ax, 3.6, 0.22, "$o = \\sum_j \\alpha_j v_j$,  $\\alpha = \\mathrm{softmax}(e)$: "
          "positive weights that sum to 1", size=TEXT_SIZE)
    return fig


# ------------------------------------------------------------------ 4. scaled dot-product attention
def scaled_dot_product_attention_diagram(config: ModelConfig | None = None, mask: bool = True) -> Figure:
    """The paper's Figure 2 (left): MatMul, Scale, Mask (optional), SoftMax, MatMul, with every shape.

    Without a config the shapes are those of one attention, (B, T_q, d_k); with one they are per head,
    (B, H, T_q, D_h), with the config's H and D_h.
    """
    mask = _flag("mask", mask)
    heads = ""
    if config is not None:
        sizes = _sizes(config)
        heads, dk, dv, scale = f"{sizes.H}, ", sizes.Dh, sizes.Dh, f"$1 / \\sqrt{{{config.d_head}}}$"
    else:
        dk, dv, scale = "$d_k$", "$d_v$", "$1 / \\sqrt{d_k}$"
    fig, ax = _canvas(5.6, 6.1 if mask else 5.4)
    x, w = 2.6, 2.0
    # Q and K meet in the first MatMul; V joins at the second.
    _note(ax, x - 0.55, 0.3, "$Q$")
    _note(ax, x + 0.55, 0.3, "$K$")
    _shape(ax, x - 0.75, 0.65, f"(B, {heads}$T_q$, {dk})", ha="right")
    _shape(ax, x + 0.75, 0.65, f"(B, {heads}$T_k$, {dk})", ha="left")
    _arrow(ax, (x - 0.55, 0.45), (x - 0.3, 0.95))
    _arrow(ax, (x + 0.55, 0.45), (x + 0.3, 0.95))
    steps = [_Step("box", "MatMul  $Q K^\\top$", FILL["linear"], height=0.38),
             _Step("box", f"Scale  × {scale}", FILL["norm"], f"(B, {heads}$T_q$, $T_k$)", 0.38)]
    if mask:
        steps.append(_Step("box", "Mask (optional)\n$-\\infty$ where $M$ is False", FILL["io"],
                           f"(B, {heads}$T_q$, $T_k$)", 0.55, name="mask"))
    steps += [_Step("box", "SoftMax over the keys", FILL["attention"], f"(B, {heads}$T_q$, $T_k$)", 0.38),
              _Step("box", "MatMul  $A V$", FILL["linear"], f"$A$: (B, {heads}$T_q$, $T_k$)", 0.38, name="out")]
    top, where = _stack(ax, x, 0.95, steps, w, gap=0.42, first_arrow=False)
    _arrow(ax, (x, top), (x, top + 0.4))
    _shape(ax, x + 0.08, top + 0.2, f"$O$: (B, {heads}$T_q$, {dv})")
    _note(ax, x, top + 0.6, "$\\mathrm{Attention}(Q, K, V) = \\mathrm{softmax}(Q K^\\top / \\sqrt{d_k})\\, V$")
    out = where["out"]
    x_v = out[2] + 0.75
    _note(ax, x_v, 0.3, "$V$")
    ax.plot([x_v, x_v], [0.45, (out[1] + out[3]) / 2], color=EDGE, linewidth=1.1)
    _arrow(ax, (x_v, (out[1] + out[3]) / 2), (out[2], (out[1] + out[3]) / 2))
    _shape(ax, x_v + 0.08, 1.4, f"(B, {heads}$T_k$, {dv})")
    if mask:
        m = where["mask"]
        mask_shapes = "$M$: (B, 1, $T_k$),\n(1, $T_q$, $T_k$) or\n(B, $T_q$, $T_k$)"
        _shape(ax, m[0] - 0.1, (m[1] + m[3]) / 2, mask_shapes, ha="right")
    return fig


# ---------------------------------------------------------------------------- 5. multi-head attention
def multi_head_attention_diagram(config: ModelConfig | None = None) -> Figure:
    """The paper's Figure 2 (right): three linear maps, the split into H heads, H scaled dot-product
    attentions side by side, the merge, and W^O, with the split and merge reshapes spelled out."""
    z = _sizes(config)
    fig, ax = _canvas(7.0, 6.6)
    xs = {"Q": 1.3, "K": 3.5, "V": 5.7}
    y_in, y_lin, y_split, y_att, y_merge, y_out = 0.3, 1.05, 2.05, 3.35, 4.55, 5.45
    for name, x in xs.items():
        rows = "$T_q$" if name == "Q" else "$T_k$"
        source = "x_q" if name == "Q" else "x_{kv}"      # queries from x_q, keys and values from x_kv
        _note(ax, x, y_in, f"${source}$")
        _shape(ax, x + 0.12, (y_in + y_lin) / 2, f"(B, {rows}, {z.D})")
        _arrow(ax, (x, y_in + 0.15), (x, y_lin - 0.19))
        _box(ax, x, y_lin, 1.75, 0.38, f"Linear  ${source} W^{name}$", FILL["linear"])
        _arrow(ax, (x, y_lin + 0.19), (x, y_split - 0.3))
        _shape(ax, x + 0.08, (y_lin + y_split) / 2 - 0.05, f"(B, {rows}, {z.D})")
        _box(ax, x, y_split, 1.95, 0.6, f"split heads: reshape\n(B, {rows}, {z.H}, {z.Dh}), transpose", FILL["io"],
             size=9)
        _arrow(ax, (x, y_split + 0.3), (x, y_att - 0.45))
        _shape(ax, x + 0.08, (y_split + y_att) / 2 - 0.08, f"(B, {z.H}, {rows}, {z.Dh})")
    for offset in (0.12, 0.06):                          # the H attentions, drawn as a stack of sheets
        ax.add_patch(Rectangle((0.45 + offset, y_att - 0.45 + offset), 6.1, 0.9, facecolor=FILL["attention"],
                               edgecolor=EDGE, linewidth=0.8))
    _box(ax, 3.5, y_att, 6.1, 0.9, f"scaled dot-product attention, $H$ = {z.H} heads in parallel\n"
         f"weights: (B, {z.H}, $T_q$, $T_k$), one map per head", FILL["attention"])
    _arrow(ax, (3.5, y_att + 0.45), (3.5, y_merge - 0.3))
    _shape(ax, 3.58, (y_att + y_merge) / 2 + 0.05, f"(B, {z.H}, $T_q$, {z.Dh})")
    _box(ax, 3.5, y_merge, 3.4, 0.6, f"merge heads: transpose (B, $T_q$, {z.H}, {z.Dh}),\n"
         f"reshape (concatenate)", FILL["io"], size=9)
    _arrow(ax, (3.5, y_merge + 0.3), (3.5, y_out - 0.19))
    _shape(ax, 3.58, (y_merge + y_out) / 2 + 0.03, f"(B, $T_q$, {z.D})")
    _box(ax, 3.5, y_out, 2.4, 0.38, "Linear  $W^O$", FILL["linear"])
    _arrow(ax, (3.5, y_out + 0.19), (3.5, y_out + 0.6))
    _shape(ax, 3.58, y_out + 0.42, f"output: (B, $T_q$, {z.D})")
    _note(ax, 0.15, 6.4, f"$D$ = {z.D}, $H$ = {z.H}, $D_h$ = {z.Dh}", ha="left", size=9)   # the sizes this layer has
    return fig


# ------------------------------------------------------------------- 6 and 7. layers and the Transformer
QKV_GAP = 0.64         # the arrow into a self-attention box: room above its shape label for the Q, K, V fan


def _qkv_fan(ax, x, box, spread=0.7, rise=0.3):
    """Three arrows into a self-attention box from one point of its input: queries, keys and values all come
    from the same x."""
    split = box[1] - rise
    for dx, letter in ((-spread, "$Q$"), (0.0, "$K$"), (spread, "$V$")):
        if dx:                       # the middle arrow is the stack's own
            _arrow(ax, (x, split), (x + dx, box[1]))
        _note(ax, x + dx + (0.06 if dx >= 0 else -0.06), box[1] - 0.1, letter, ha="left" if dx >= 0 else "right",
              size=SHAPE_SIZE)


def _layer_steps(kind: str, z: _Sizes, norm_first: bool, compact: bool) -> list[_Step]:
    """The sublayers of an encoder or decoder layer, bottom to top, each wrapped in its residual connection."""
    L = "S" if kind == "encoder" else "T"
    heads = f"$H$ = {z.H} heads of $D_h$ = {z.Dh}"
    if kind == "encoder":
        sublayers = [(f"Multi-head self-attention\n{heads}\nmask $M_{{\\mathrm{{src}}}}$: (B, 1, S)", FILL["attention"],
                      "attention")]
    else:
        sublayers = [(f"Masked multi-head self-attention\n{heads}\nmask: causal AND padding, (B, T, T)",
                      FILL["attention"], "self"),
                     ("Multi-head cross-attention\nqueries from below; keys, values\nfrom the memory, "
                      "mask $M_{\\mathrm{src}}$", FILL["attention"], "cross")]
    sublayers.append((f"Feed-forward network\nReLU, inner (B, {L}, {z.F})", FILL["ffn"], "ffn"))
    stream = f"(B, {L}, {z.D})"
    steps: list[_Step] = []
    for text, fill, name in sublayers:
        height = 0.62 if "\n" in text and text.count("\n") == 2 else 0.46
        if compact:
            height -= 0.12
            text = {"attention": f"Self-attention\n{heads}", "self": f"Masked self-attention\n{heads}",
                    "cross": "Cross-attention\nK, V from the memory", "ffn": "Feed-forward network"}[name]
        steps.append(_Step("branch"))
        if norm_first:
            steps.append(_Step("box", "LayerNorm", FILL["norm"], stream, 0.28))
        fan = QKV_GAP if not compact and name in ("attention", "self") else None
        steps.append(_Step("box", text, fill, stream, height, name=name, gap=fan))
        if not compact:                # the wrapper's dropout, on the sublayer's output before the addition
            steps.append(_Step("box", f"Dropout, {z.drop}", FILL["io"], stream, 0.26, width=1.9))
        if norm_first or not compact:
            steps.append(_Step("add", shape=stream))
        if not norm_first:
            steps.append(_Step("add", "Add & Norm", FILL["norm"], stream, 0.28) if compact
                         else _Step("box", "LayerNorm", FILL["norm"], stream, 0.28))
    return steps


def _norm_placement(config, norm_first) -> bool:
    if norm_first is None:
        return config.norm_first if config is not None else False
    return _flag("norm_first", norm_first)


def _layer_diagram(kind: str, config, norm_first) -> Figure:
    z = _sizes(config)
    norm_first = _norm_placement(config, norm_first)
    L = "S" if kind == "encoder" else "T"
    steps = _layer_steps(kind, z, norm_first, compact=False)
    height = 1.35 + sum(s.height if s.kind == "box" else 0.24 * (s.kind == "add") for s in steps) + \
        sum(s.gap or 0.34 for s in steps if s.kind != "branch")
    fig, ax = _canvas(6.4, height + 0.3)                 # 0.3: the title's line above the legend
    x, w = 2.75, 3.0
    _note(ax, x, 0.25, f"input $x$ (layer $\\ell - 1$ or the embeddings): (B, {L}, {z.D})", size=9)
    top, where = _stack(ax, x, 0.42, steps, w)
    _arrow(ax, (x, top), (x, top + 0.3))
    _shape(ax, x + 0.08, top + 0.15, f"(B, {L}, {z.D})")
    name = "post-LN (the paper)" if not norm_first else "pre-LN (the stack ends with one more LayerNorm)"
    _note(ax, x, top + 0.48, "to layer $\\ell + 1$", size=9)
    _note(ax, 0.1, height + 0.1, f"{kind} layer, {name}", ha="left", size=9, weight="bold")   # the title
    _note(ax, 0.1, height - 0.2, z.legend, ha="left", size=9)
    _qkv_fan(ax, x, where["attention" if kind == "encoder" else "self"])
    if kind == "decoder":
        cross = where["cross"]
        y = (cross[1] + cross[3]) / 2
        _arrow(ax, (cross[2] + 0.9, y), (cross[2], y))
        _note(ax, cross[2] + 0.95, y, "memory\n(encoder\noutput)", ha="left", size=9)
        _shape(ax, cross[2] + 0.1, y + 0.17, f"(B, S, {z.D})")
    return fig


def encoder_layer_diagram(config: ModelConfig | None = None, norm_first: bool | None = None) -> Figure:
    """One encoder layer: self-attention and the feed-forward network, each in a residual connection with
    LayerNorm after the addition (post-LN) or before the sublayer (pre-LN; default: config.norm_first)."""
    return _layer_diagram("encoder", config, norm_first)


def decoder_layer_diagram(config: ModelConfig | None = None, norm_first: bool | None = None) -> Figure:
    """One decoder layer: masked self-attention, cross-attention to the encoder's memory, the feed-forward
    network, each in a residual connection (post-LN or pre-LN; default: config.norm_first)."""
    return _layer_diagram("decoder", config, norm_first)


def transformer_diagram(config: ModelConfig | None = None, norm_first: bool | None = None) -> Figure:
    """The whole encoder-decoder (the paper's Figure 1): embeddings and positions, N encoder and N decoder
    layers, the output layer; post-LN as in the paper or pre-LN (default: config.norm_first)."""
    z = _sizes(config)
    norm_first = _norm_placement(config, norm_first)
    columns = {}
    for kind in ("encoder", "decoder"):
        L = "S" if kind == "encoder" else "T"
        layer = _layer_steps(kind, z, norm_first, compact=True)
        final = [_Step("box", "final LayerNorm", FILL["norm"], f"(B, {L}, {z.D})", 0.28)] if norm_first else []
        columns[kind] = (layer, final)
    gap = 0.3

    def extent(steps):
        return sum((s.height if s.kind == "box" or s.text else 0.24) + gap for s in steps if s.kind != "branch")

    # the decoder column is the taller one: a third sublayer per layer, and the output layer on top
    dec_h = 0.34 + gap + extent(columns["decoder"][0]) + extent(columns["decoder"][1]) + 2 * (0.3 + gap)
    height = dec_h + 1.35
    fig, ax = _canvas(7.2, height)
    w, x_enc, x_dec = 2.3, 2.05, 5.05
    tops = {}
    for kind, x in (("encoder", x_enc), ("decoder", x_dec)):
        L = "S" if kind == "encoder" else "T"
        layer, final = columns[kind]
        reads = ("source tokens $x$" if kind == "encoder"
                 else "target tokens, shifted right")
        _note(ax, x, 0.22, f"{reads}: (B, {L})", size=9)
        emb_top, _ = _stack(ax, x, 0.38, [_Step("box", "Embedding $E$ × $\\sqrt{D}$ + $PE_{pos}$",
                                                FILL["embed"], f"(B, {L})", 0.34)], w, gap=gap)
        side = -1 if kind == "encoder" else 1
        top, where = _stack(ax, x, emb_top, layer, w, gap=gap, side=side)
        frame_left = x - w / 2 - (0.34 if kind == "encoder" else 0.12)    # room for the residual paths
        # the frame starts above the shape label of the layer's input, which sits in the gap under it
        ax.add_patch(FancyBboxPatch((frame_left, emb_top + gap * 0.85), w + 0.46, top - emb_top - gap * 0.75,
                                    boxstyle="round,pad=0,rounding_size=0.1", facecolor="none", edgecolor="0.55",
                                    linewidth=1.0, linestyle="--"))
        label_x = frame_left - 0.06 if kind == "encoder" else frame_left + w + 0.46 + 0.06
        _note(ax, label_x, (emb_top + top) / 2, f"{z.N_enc if kind == 'encoder' else z.N_dec} ×",
              ha="right" if kind == "encoder" else "left", size=11, weight="bold")
        top, _ = _stack(ax, x, top, final, w, gap=gap) if final else (top, {})
        tops[kind] = (top, where)
    # the memory: the encoder's output feeds every decoder layer's cross-attention
    enc_top = tops["encoder"][0]
    cross = tops["decoder"][1]["cross"]
    y_cross = (cross[1] + cross[3]) / 2
    turn = enc_top + 0.35
    x_turn = (x_enc + x_dec) / 2
    ax.plot([x_enc, x_enc, x_turn], [enc_top, turn, turn], color="#cb181d", linewidth=1.2)
    ax.plot([x_turn] * 2, [turn, y_cross], color="#cb181d", linewidth=1.2)
    _arrow(ax, (x_turn, y_cross), (cross[0], y_cross), colour="#cb181d")
    _shape(ax, x_enc - 0.1, turn + 0.2, f"memory: (B, S, {z.D})", ha="center")
    top = tops["decoder"][0]
    head = [_Step("box", "Linear (tied to $E$): logits $z$", FILL["linear"], f"(B, T, {z.D})", 0.3),
            _Step("box", "Softmax", FILL["attention"], "(B, T, V)", 0.3)]
    top, _ = _stack(ax, x_dec, top, head, w, gap=gap)
    _arrow(ax, (x_dec, top), (x_dec, top + 0.28))
    _note(ax, x_dec, top + 0.45, "$p(y_t \\mid y_{<t}, x)$: (B, T, V)", size=9)
    _note(ax, 0.1, height - 0.22, z.legend, ha="left", size=9)
    _note(ax, 0.1, height - 0.5, "post-LN (the paper)" if not norm_first else "pre-LN", ha="left", size=9,
          weight="bold")
    return fig


# ---------------------------------------------------------------------------------- 8. teacher forcing
def teacher_forcing_diagram(target: Sequence[str] = ("$y_1$", "$y_2$", "$y_3$")) -> Figure:
    """Teacher forcing: the decoder reads the target shifted right (<bos> first) and, at every position t at
    once, predicts the next token y_t (<eos> last); the causal mask keeps position t from reading y_t."""
    if isinstance(target, str) or not isinstance(target, Sequence) or not all(isinstance(w, str) for w in target):
        raise TypeError(f"target: expected a sequence of token strings, got {type(target).__name__}")
    _count("len(target)", len(target), high=MAX_TOKENS - 1)
    bos, eos = r"$\langle$bos$\rangle$", r"$\langle$eos$\rangle$"
    reads, writes = [bos, *target], [*target, eos]
    T = len(reads)
    step = 0.95
    xs = [1.95 + t * step for t in range(T)]
    fig, ax = _canvas(max(xs[-1] + 1.45, 5.6), 3.9)
    y_tgt, y_in, y_dec, y_out, y_lab = 0.3, 1.2, 2.05, 2.85, 3.55
    _note(ax, 0.1, y_tgt, "target $y$", ha="left", size=9)
    _note(ax, 0.1, y_in, "decoder reads", ha="left", size=9)
    _note(ax, 0.1, y_out, "it predicts", ha="left", size=9)
    _note(ax, 0.1, y_lab, "position $t$", ha="left", size=9)
    for t, x in enumerate(xs):
        _note(ax, x, y_lab, f"{t + 1}")
        if t < len(target):                                   # shift right: y_t moves to position t + 1
            _note(ax, x, y_tgt, writes[t])
            _arrow(ax, (x + 0.12, y_tgt + 0.15), (xs[t + 1] - 0.12, y_in - 0.17), colour="#cb181d")
        else:
            _note(ax, x, y_tgt, writes[t], color="0.55")
        _box(ax, x, y_in, 0.8, 0.34, reads[t], FILL["embed"] if t else FILL["new"], size=9)
        _arrow(ax, (x, y_in + 0.17), (x, y_dec - 0.3))
        _arrow(ax, (x, y_dec + 0.3), (x, y_out - 0.17))
        _box(ax, x, y_out, 0.8, 0.34, writes[t], FILL["ffn"], size=9)
    _box(ax, (xs[0] + xs[-1]) / 2, y_dec, xs[-1] - xs[0] + 0.9, 0.6,
         "decoder: all T positions in one pass;\nthe causal mask lets position $t$ read positions $\\leq t$",
         FILL["attention"], size=9)
    _shape(ax, xs[-1] + 0.45, (y_in + y_dec) / 2 - 0.05, "(B, T)")
    _shape(ax, xs[-1] + 0.45, (y_dec + y_out) / 2 + 0.05, "logits (B, T, V)")
    _shape(ax, xs[-1] + 0.45, y_out + 0.05, "labels (B, T)")
    return fig


# ---------------------------------------------------------------------------- 9. the key/value cache
def kv_cache_diagram(config: ModelConfig | None = None, steps: int = 3) -> Figure:
    """Incremental decoding with a key/value cache: at step t each decoder layer's self-attention computes the
    key and value of the new token only, appends them to its cache (B, H, t, D_h), and attends from one query;
    the cross-attention's keys and values come from the memory and are computed once."""
    z = _sizes(config)
    steps = _count("steps", steps)
    cell = 0.42
    fig, ax = _canvas(7.2, 1.6 + steps * 0.75)
    x_read, x_k, x_v = 1.0, 1.85, 1.85 + steps * cell + 0.5    # the read box clear of the "step t" labels
    x_shape = x_v + steps * cell + 0.35
    for t in range(1, steps + 1):
        y = 1.6 + (steps - t) * 0.75 - 0.1
        reads = r"$\langle$bos$\rangle$" if t == 1 else f"$\\hat{{y}}_{t - 1}$"   # its own last output
        _note(ax, 0.1, y, f"step {t}", ha="left", size=9)
        _box(ax, x_read, y, 0.65, 0.36, reads, FILL["embed"], size=9)
        _arrow(ax, (x_read + 0.33, y), (x_k - 0.06, y))
        for j in range(1, t + 1):
            fill = FILL["new"] if j == t else FILL["rnn"]       # the new entry; the rest come from the cache
            for x0, letter in ((x_k, "k"), (x_v, "v")):
                ax.add_patch(Rectangle((x0 + (j - 1) * cell, y - 0.18), cell, 0.36, facecolor=fill,
                                       edgecolor=EDGE, linewidth=0.9))
                ax.text(x0 + (j - 0.5) * cell, y, f"${letter}_{j}$", ha="center", va="center", fontsize=9)
        _shape(ax, x_shape, y + 0.1, f"K, V: (B, {z.H}, {t}, {z.Dh})", size=SHAPE_SIZE)
        _shape(ax, x_shape, y - 0.14, f"one query; scores: (B, {z.H}, 1, {t})")
    top = 1.6 + (steps - 1) * 0.75 + 0.25
    _note(ax, x_k + steps * cell / 2, top, "keys (cache)", size=9)
    _note(ax, x_v + steps * cell / 2, top, "values (cache)", size=9)
    _note(ax, 0.1, top + 0.35, f"self-attention of one decoder layer;  {z.legend}", ha="left", size=9)
    _note(ax, 0.1, 0.55, f"orange: computed at this step; blue: read from the cache. Each of the "
          f"{z.N_dec} decoder layers has its own cache.", ha="left", size=9)
    _note(ax, 0.1, 0.25, f"Cross-attention: keys and values of the memory, (B, {z.H}, S, {z.Dh}), "
          "computed once, when decoding starts.", ha="left", size=9)
    return fig
