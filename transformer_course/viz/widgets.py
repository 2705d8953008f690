"""Interactive widgets for workshops, each with a static twin figure and a flip book.

Every widget `<name>_widget()` is a box of ipywidgets controls above a plot that redraws when a control moves;
its twin `<name>_figure(...)` draws the same plot for fixed settings and returns the matplotlib figure. (The
attention explorer's are `attention_explorer()` and `attention_explorer_figure(...)`.)

- softmax_scaling: softmax temperature, and what dividing by sqrt(d_k) does to the weights as d_k grows.
- masks: padding, causal and combined masks for a batch of given lengths.
- positional: the sinusoidal table and the similarity of one position to all others.
- warmup: the paper's learning-rate schedule for chosen d_model and warm-up steps.
- attention_explorer: type a source, pick a layer and head of the shipped trained model, see the map and
  the translation.
- padding: the shipped model on a source padded on the right or left, with the padding mask on or off.
- decoding: temperature, top-k and top-p applied to the shipped model's next-word distribution.

Each widget also has a flip book, `<name>_flipbook(...)` (see flipbook.py): its figure drawn in advance for a few
values of every control, in an HTML block whose controls swap the drawing. The static website has no kernel to
run the live widgets, so Appendix D shows each widget and, right after it, its flip book, which opens at the
widget's default setting (and carries a PNG of it for the slides).
"""
from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import numpy as np

from ..numpy.functional import softmax
from ..numpy.masks import causal_mask, combine_masks, lengths_to_mask
from .attention import plot_attention
from .flipbook import Control, FlipBook, Panel
from .positional import plot_positional_heatmap

__all__ = ["translate_with_weights", "SATURATION_DIMS", "saturation_curves",
           "softmax_scaling_figure", "softmax_scaling_widget", "softmax_scaling_flipbook",
           "mask_figure", "mask_widget", "mask_flipbook", "positional_figure", "positional_widget",
           "positional_flipbook", "warmup_figure", "warmup_widget", "warmup_flipbook", "ATTENTION_KINDS",
           "attention_explorer_figure", "attention_explorer", "attention_explorer_flipbook", "next_word_logits",
           "decoding_figure", "decoding_widget", "decoding_flipbook", "PAD_SIDES", "padded_pass",
           "padding_figure", "padding_widget", "padding_flipbook"]


def _interactive(draw, controls: dict):
    """Controls above an Output area that `draw(**values)` redraws (the figure is shown, then closed).

    Only what ipywidgets 7.7 and 8 share is used here: Google Colab runs ipywidgets 7.7.1, other front ends 8.
    `interactive_output` draws right away, then again each time a control's value changes."""
    import ipywidgets as widgets

    output = widgets.Output()

    def redraw(**values):
        with output:
            output.clear_output(wait=True)
            fig = draw(**values)
            plt.show()
            plt.close(fig)

    widgets.interactive_output(redraw, controls)
    return widgets.VBox([widgets.HBox(list(controls.values())), output])


# --- softmax temperature and sqrt(d_k) scaling ------------------------------------------------------------

SATURATION_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)   # the d_k of the right panel of the softmax figure


@functools.lru_cache(maxsize=64)
def saturation_curves(n_keys: int = 8, temperature: float = 1.0, n_trials: int = 2000, seed: int = 1):
    """The mean largest softmax weight against d_k (SATURATION_DIMS), scores divided by sqrt(d_k) or not.

    Each of the n_trials draws its own query and its own n_keys keys, from a generator of its own (`seed`): the
    curves depend on n_keys and the temperature only, never on what the left panel of the figure drew.
    Returns (scaled, raw), each a tuple of len(SATURATION_DIMS) means."""
    rng = np.random.default_rng(seed)
    peak = {True: [], False: []}
    for d in SATURATION_DIMS:
        qs = rng.standard_normal((n_trials, 1, d))                 # (N, 1, d): one query per trial
        ks = rng.standard_normal((n_trials, n_keys, d))            # (N, n_keys, d): its own keys per trial
        s = (ks * qs).sum(-1)                                      # (N, n_keys): variance d
        for scaled in (True, False):
            w = softmax(s / (np.sqrt(d) if scaled else 1.0) / temperature, axis=-1)  # (N, n_keys)
            peak[scaled].append(float(w.max(-1).mean()))
    return tuple(peak[True]), tuple(peak[False])


def softmax_scaling_figure(d_k: int = 64, temperature: float = 1.0, scale: bool = True, n_keys: int = 8,
                           seed: int = 0):
    """Left: weights of one query over n_keys random keys (drawn with `seed`). Right: the mean largest weight
    against d_k, scaled or not, averaged over many queries and key sets (saturation_curves: a seed of its own,
    so the right panel moves with the temperature only)."""
    if d_k < 1 or n_keys < 2 or temperature <= 0:
        raise ValueError(f"d_k >= 1, n_keys >= 2, temperature > 0 expected; got {d_k}, {n_keys}, {temperature}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)                                   # (d_k,): entries of variance 1
    k = rng.standard_normal((n_keys, d_k))                         # (n_keys, d_k)
    scores = k @ q                                                 # (n_keys,): variance d_k
    divisor = np.sqrt(d_k) if scale else 1.0
    weights = softmax(scores / divisor / temperature)              # (n_keys,)

    dims = np.array(SATURATION_DIMS)
    scaled_curve, raw_curve = saturation_curves(n_keys, float(temperature))
    peak = {True: scaled_curve, False: raw_curve}

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    left.bar(range(n_keys), weights, color="#1f77b4")
    left.set_ylim(0, 1)
    left.set_xlabel("key")
    left.set_ylabel("attention weight")
    left.set_title(f"d_k={d_k}, τ={temperature:g}, {'divided by √d_k' if scale else 'not scaled'}")
    right.semilogx(dims, peak[True], "o-", label="scores / √d_k")
    right.semilogx(dims, peak[False], "s--", label="raw dot products")
    right.axhline(1 / n_keys, color="grey", lw=0.8, ls=":", label="uniform")
    right.axvline(d_k, color="black", lw=0.8)
    right.set_ylim(0, 1.05)
    right.set_xlabel("d_k")
    right.set_ylabel("mean largest weight")
    right.legend(loc="center right")
    right.set_title("saturation of the softmax")
    fig.tight_layout()
    return fig


def softmax_scaling_widget():
    import ipywidgets as widgets

    controls = {
        "d_k": widgets.IntSlider(value=64, min=1, max=512, step=1, description="d_k"),
        # powers of 2 from 1/4 to 16: tau = 16 = sqrt(256) undoes the scaling at d_k = 256 (an exercise)
        "temperature": widgets.FloatLogSlider(value=1.0, base=2, min=-2, max=4, step=0.5,
                                              description="temperature"),
        "scale": widgets.Checkbox(value=True, description="divide by √d_k"),
    }
    return _interactive(softmax_scaling_figure, controls)


def softmax_scaling_flipbook(d_ks=(1, 16, 64, 256), temperatures=(0.25, 1.0, 4.0, 16.0), dpi: int = 78):
    """The softmax widget's flip book: its figure for every d_k, temperature and scaling given."""
    controls = [Control("d_k", "d<sub>k</sub>", tuple(d_ks), default=64),
                Control("temperature", "temperature τ", tuple(temperatures), default=1.0),
                Control("scale", "divide by √d<sub>k</sub>", (False, True), default=True, kind="checkbox",
                        shown=("no", "yes"))]
    return FlipBook(softmax_scaling_figure, controls, dpi=dpi, colours=16, name="softmax_scaling_figure",
                    alt="bar chart of one query's weights over eight random keys, and the mean largest weight "
                        "against d_k with and without the scaling")


# --- masks --------------------------------------------------------------------------------------------------

def mask_figure(lengths=(6, 4, 2), T: int = 6, causal: bool = True, first_index: int = 1):
    """One row per sequence: its padding mask, the causal mask and their combination (True = may attend).

    Rows are titled "sequence first_index", "sequence first_index + 1", ...: numbered from 1 as in the book, and a
    figure of one row can stand for any sequence of a batch (the flip book draws each row on its own). With
    causal False the middle panel lets every query see every key and is titled "causal (off)"."""
    lengths = [int(n) for n in lengths]
    if not lengths or min(lengths) < 1 or max(lengths) > T:
        raise ValueError(f"lengths: expected values in [1, T={T}], got {lengths}")
    padding = np.broadcast_to(lengths_to_mask(np.array(lengths), T), (len(lengths), T, T))  # (B, T, T)
    causal_part = causal_mask(T) if causal else None                                       # (1, T, T)
    combined = combine_masks(padding, causal_part)                                         # (B, T, T)
    middle = np.broadcast_to(causal_mask(T), padding.shape) if causal else np.ones_like(padding)  # (B, T, T)
    panels = [("padding", padding), ("causal" if causal else "causal (off)", middle), ("combined", combined)]
    fig, axes = plt.subplots(len(lengths), 3, figsize=(7.5, 2.3 * len(lengths)), squeeze=False)
    for b, n in enumerate(lengths):
        for c, (name, mask) in enumerate(panels):
            ax = axes[b, c]
            ax.imshow(mask[b], cmap="Greens", vmin=0, vmax=1.3)
            ax.grid(False)
            ax.set_xticks(range(T))
            ax.set_yticks(range(T))
            for i in range(T):
                for j in range(T):
                    ax.text(j, i, "✓" if mask[b, i, j] else "·", ha="center", va="center", fontsize=8)
            ax.set_title(f"sequence {first_index + b} (length {n}): {name}", fontsize=9)
            ax.set_xlabel("key position")
            ax.set_ylabel("query position")
    fig.tight_layout()
    return fig


def mask_widget():
    import ipywidgets as widgets

    controls = {
        "first": widgets.IntSlider(value=6, min=1, max=8, description="sequence 1 length"),
        "second": widgets.IntSlider(value=3, min=1, max=8, description="sequence 2 length"),
        "causal": widgets.Checkbox(value=True, description="causal"),
    }
    return _interactive(lambda first, second, causal: mask_figure((first, second), T=8, causal=causal), controls)


def mask_flipbook(T: int = 8, lengths=(6, 3), dpi: int = 78):
    """The masks widget's flip book: every length from 1 to T for both sequences, causal mask on and off; it
    opens at `lengths`, causal.

    Each sequence's row depends on its own length only, so the rows are drawn apart, as two panels: 2 x 2T
    drawings cover all (T x T x 2) settings."""
    first, second = lengths
    choices = tuple(range(1, T + 1))
    controls = [Control("first", "sequence 1 length", choices, default=first),
                Control("second", "sequence 2 length", choices, default=second),
                Control("causal", "causal", (False, True), default=True, kind="checkbox", shown=("off", "on"))]
    alt = "padding, causal and combined masks of sequence {} as grids of ticks, one tick per key a query may see"
    panels = [Panel(lambda first, causal: mask_figure((first,), T=T, causal=causal, first_index=1),
                    ("first", "causal"), alt.format(1)),
              Panel(lambda second, causal: mask_figure((second,), T=T, causal=causal, first_index=2),
                    ("second", "causal"), alt.format(2))]
    # eight colours: greens, white and the black of the text are all a mask figure draws
    return FlipBook(None, controls, panels=panels, figure=lambda: mask_figure(lengths, T=T, causal=True), dpi=dpi,
                    colours=8, name="mask_figure", alt="padding, causal and combined masks of two sequences")


# --- positional encodings -----------------------------------------------------------------------------------

def positional_figure(max_len: int = 64, d_model: int = 64, position: int = 10):
    """Left: the sinusoidal table PE (positions x dimensions). Right: PE_position . PE_pos for every position pos,
    divided by D/2 so that it is 1 at pos = position."""
    from ..numpy.positional import sinusoidal_encoding

    if not 0 <= position < max_len:
        raise ValueError(f"position: expected a value in [0, max_len={max_len}), got {position}")
    pe = sinusoidal_encoding(max_len, d_model)                     # (max_len, D)
    similarity = pe @ pe[position] / (d_model / 2)                 # (max_len,): 1 at pos = position
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.4), gridspec_kw={"width_ratios": [1.3, 1]})
    plot_positional_heatmap(pe, ax=left, title=f"PE for d_model={d_model}")  # the heat map of chapter 6
    left.set_xlabel("column")   # j is a key position in the book's notation
    left.axhline(position, color="black", lw=0.8)
    right.plot(np.arange(max_len), similarity, "-", color="#1f77b4")
    right.axvline(position, color="black", lw=0.8)
    right.set_xlabel("position $pos$")   # p is a probability in the book's notation
    right.set_ylabel(f"$PE_{{{position}}} \\cdot PE_{{pos}}\\,/\\,(D/2)$")
    right.set_title(f"similarity to position {position}")
    fig.tight_layout()
    return fig


def positional_widget():
    import ipywidgets as widgets

    controls = {
        "d_model": widgets.IntSlider(value=64, min=8, max=256, step=8, description="d_model"),
        "position": widgets.IntSlider(value=10, min=0, max=63, description="position"),
    }
    return _interactive(lambda d_model, position: positional_figure(64, d_model, position), controls)


def positional_flipbook(d_models=(16, 64, 256), positions=(0, 5, 10, 20, 40, 63), dpi: int = 78):
    """The positional widget's flip book: the table and the similarity curve for the widths and positions given."""
    controls = [Control("d_model", "d<sub>model</sub>", tuple(d_models), default=64),
                Control("position", "position", tuple(positions), default=10)]
    return FlipBook(lambda d_model, position: positional_figure(64, d_model, position), controls, dpi=dpi,
                    colours=32, name="positional_figure",
                    alt="heat map of sine and cosine stripes whose wavelength grows with the dimension, with one "
                        "position marked, and the similarity of that position to every other one")


# --- the warm-up schedule -----------------------------------------------------------------------------------

def warmup_figure(d_model: int = 512, warmup: int = 4000, steps: int = 20000, factor: float = 1.0):
    """The paper's schedule lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)."""
    from ..numpy.optim import noam_lr

    step = np.arange(1, steps + 1)
    lr = np.array([noam_lr(int(s), d_model, warmup, factor) for s in step])
    paper = np.array([noam_lr(int(s), 512, 4000) for s in step])
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.plot(step, lr, label=f"d_model={d_model}, warmup={warmup}, factor={factor:g}")
    ax.plot(step, paper, "--", color="grey", lw=1, label="paper: d_model=512, warmup=4000")
    ax.axvline(warmup, color="black", lw=0.8, ls=":")
    ax.set_xlabel("training step")
    ax.set_ylabel("learning rate")
    ax.set_title(f"peak {lr.max():.2e} at step {int(step[lr.argmax()])}")
    ax.legend()
    fig.tight_layout()
    return fig


def warmup_widget():
    import ipywidgets as widgets

    controls = {
        "d_model": widgets.IntSlider(value=512, min=64, max=1024, step=64, description="d_model"),
        "warmup": widgets.IntSlider(value=4000, min=100, max=16000, step=100, description="warmup"),
        "factor": widgets.FloatSlider(value=1.0, min=0.1, max=4.0, step=0.1, description="factor"),
    }
    return _interactive(lambda d_model, warmup, factor: warmup_figure(d_model, warmup, 20000, factor), controls)


def warmup_flipbook(d_models=(512, 1024), warmups=(1000, 2000, 4000, 8000), factors=(0.5, 1.0, 2.0),
                    dpi: int = 78):
    """The warm-up widget's flip book: the schedule for every width, warm-up length and factor given."""
    controls = [Control("d_model", "d<sub>model</sub>", tuple(d_models), default=512),
                Control("warmup", "warmup", tuple(warmups), default=4000),
                Control("factor", "factor", tuple(factors), default=1.0)]
    return FlipBook(lambda d_model, warmup, factor: warmup_figure(d_model, warmup, 20000, factor), controls,
                    dpi=dpi, colours=16, name="warmup_figure",
                    alt="a learning-rate curve rising linearly to its peak at the end of the warm-up and decaying "
                        "afterwards, with the paper's curve dashed for comparison")


# --- attention explorer for the shipped trained model -------------------------------------------------------

# The model's names for its three kinds of attention, and how the book calls them.
ATTENTION_KINDS = {"decoder_cross": "cross-attention", "encoder": "encoder self-attention",
                   "decoder_self": "decoder self-attention"}


def _default_model(model, src_vocab, tgt_vocab):
    if model is None:
        from ..training.checkpoint import load_pretrained

        return load_pretrained("numbers-en-fr")
    return model, src_vocab, tgt_vocab


def translate_with_weights(model, src_vocab, tgt_vocab, sentence: str):
    """Greedy translation of one sentence, then one teacher-forced pass over it to collect every weight map:
    (translation, source tokens, output tokens, weights as `model(..., need_weights=True)` returns them)."""
    from .._optional import torch  # an ImportError that names the extra to install
    from ..torch.decoding import greedy_decode

    ids = src_vocab.encode(sentence)  # unknown words become <unk>: the map still shows where the model looked
    src = torch.tensor([ids])                                      # (1, S)
    with torch.no_grad():
        out = greedy_decode(model, src)                            # (1, L)
        out_ids = [i for i in out[0].tolist() if i != model.config.pad_id]
        bos = torch.tensor([[1] + out_ids[:-1]]) if out_ids else torch.tensor([[1]])  # (1, T): shifted right
        _, weights = model(src, bos, need_weights=True)
    src_tokens = [src_vocab.id_to_token(i) for i in ids]
    tgt_tokens = [tgt_vocab.id_to_token(i) for i in out_ids] or ["<eos>"]
    return tgt_vocab.decode(out_ids), src_tokens, tgt_tokens, weights


def _explorer_figure(sentence: str, translated, kind: str, layer: int, head: int):
    """The map of one head, from translate_with_weights' result (the flip book translates each sentence once)."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"kind: expected one of {tuple(ATTENTION_KINDS)}, got {kind!r}")
    translation, src_tokens, tgt_tokens, weights = translated
    layers = weights[kind]
    if not 1 <= layer <= len(layers):
        raise ValueError(f"layer: expected a value from 1 to {len(layers)}, got {layer}")
    n_heads = layers[layer - 1].shape[1]
    if not 1 <= head <= n_heads:
        raise ValueError(f"head: expected a value from 1 to {n_heads}, got {head}")
    matrix = layers[layer - 1][0, head - 1]                        # (Tq, Tk)
    read = ["<bos>", *tgt_tokens[:-1]]                             # what the decoder reads: shifted right
    keys = {"encoder": src_tokens, "decoder_cross": src_tokens, "decoder_self": read}[kind]
    queries = src_tokens if kind == "encoder" else tgt_tokens
    fig, ax = plt.subplots(figsize=(0.42 * len(keys) + 3.0, 0.42 * len(queries) + 1.8))
    plot_attention(matrix, keys, queries, ax=ax, title=f"{ATTENTION_KINDS[kind]}, layer {layer}, head {head}")
    if kind != "encoder":  # decoder row t reads the tokens before t and writes word t: label it by that
        ax.set_ylabel("word written")
        ax.set_xlabel("source token read" if kind == "decoder_cross" else "token read")
    fig.suptitle(f"“{sentence}” → “{translation}”", fontsize=10)
    fig.tight_layout()
    return fig


def attention_explorer_figure(model, src_vocab, tgt_vocab, sentence: str, kind: str = "decoder_cross",
                              layer: int = 1, head: int = 1):
    """The weight map of one head of one layer of the trained model on `sentence`, titled with its output.

    kind: "decoder_cross", "encoder" or "decoder_self" (the keys of ATTENTION_KINDS; the title uses the book's
    names). Layers and heads are numbered from 1, as on every page of the book. Decoder rows are labelled by the
    word written at that step; the columns of the decoder's self-attention by the tokens read (<bos> first).
    """
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"kind: expected one of {tuple(ATTENTION_KINDS)}, got {kind!r}")
    return _explorer_figure(sentence, translate_with_weights(model, src_vocab, tgt_vocab, sentence), kind, layer,
                            head)


def attention_explorer(model=None, src_vocab=None, tgt_vocab=None, sentence: str = "three hundred and forty-two"):
    """Type a source, pick layer, head and kind of attention; defaults to the shipped numbers-en-fr model."""
    import ipywidgets as widgets

    model, src_vocab, tgt_vocab = _default_model(model, src_vocab, tgt_vocab)
    n_layers = max(model.config.n_encoder_layers, model.config.n_decoder_layers)
    by_name = {name: kind for kind, name in ATTENTION_KINDS.items()}
    controls = {
        "sentence": widgets.Text(value=sentence, description="source", continuous_update=False),
        # the book's names as options (plain strings: ipywidgets 7.7 and 8 treat them alike)
        "kind": widgets.Dropdown(options=list(by_name), description="attention"),
        "layer": widgets.IntSlider(value=1, min=1, max=n_layers, description="layer"),
        "head": widgets.IntSlider(value=1, min=1, max=model.config.n_heads, description="head"),
    }

    def draw(sentence, kind, layer, head):
        return attention_explorer_figure(model, src_vocab, tgt_vocab, sentence, by_name[kind], layer, head)

    return _interactive(draw, controls)


def attention_explorer_flipbook(model=None, src_vocab=None, tgt_vocab=None,
                                sentences=("three hundred and ninety-seven", "seventy-eight"),
                                kind: str = "decoder_cross", layer: int = 1, head: int = 1, dpi: int = 78):
    """The explorer's flip book: every kind of attention, layer and head for each sentence given (a drop-down
    of sentences stands in for the text box). kind, layer and head: the drawing shown first."""
    model, src_vocab, tgt_vocab = _default_model(model, src_vocab, tgt_vocab)
    translated = {s: translate_with_weights(model, src_vocab, tgt_vocab, s) for s in sentences}  # once each
    n_layers = max(model.config.n_encoder_layers, model.config.n_decoder_layers)
    controls = [Control("sentence", "source", tuple(sentences), default=sentences[0], kind="select"),
                Control("kind", "attention", tuple(ATTENTION_KINDS), default=kind, kind="select",
                        shown=tuple(ATTENTION_KINDS.values())),
                Control("layer", "layer", tuple(range(1, n_layers + 1)), default=layer),
                Control("head", "head", tuple(range(1, model.config.n_heads + 1)), default=head)]
    return FlipBook(lambda sentence, kind, layer, head: _explorer_figure(sentence, translated[sentence], kind,
                                                                         layer, head),
                    controls, dpi=dpi, colours=16, name="attention_explorer_figure",
                    alt="attention map of one head of the shipped model, rows the queries and columns the keys")


# --- padding: what the padding mask protects ------------------------------------------------------------------

PAD_SIDES = ("right", "left")


def padded_pass(model, src_vocab, tgt_vocab, sentence: str, pads: int = 0, side: str = "right",
                mask: bool = True, shift_positions: bool = False, reference=None):
    """The model on `sentence` with `pads` <pad> tokens added on the `side` of its source row.

    mask False gives the encoder and the cross-attention an all-True source mask: the pads are attended to like
    words. shift_positions (left padding only) counts positions from the first real token, as position ids built
    from the mask do; without it the real tokens sit at positions pads, pads + 1, ... reference: the output
    tokens to teacher-force (default: this pass's own greedy translation).

    Returns a dict: "tokens" (the padded source), "real" (their indices that are not padding), "memory"
    (S', D), "weights" (one (H, S', S') encoder self-attention map per layer), "translation" (greedy),
    "out" (the greedy output ids, <eos> last) and "log_probs" ((T, V), teacher-forced on `reference`)."""
    from .._optional import torch
    from ..data.vocab import BOS_ID, EOS_ID, PAD_ID
    from ..torch.decoding import eval_mode

    if side not in PAD_SIDES:
        raise ValueError(f"side: expected one of {PAD_SIDES}, got {side!r}")
    if pads < 0:
        raise ValueError(f"pads: expected a count >= 0, got {pads}")
    ids = src_vocab.encode(sentence)
    padded = [PAD_ID] * pads + ids if side == "left" else ids + [PAD_ID] * pads
    real = list(range(pads, pads + len(ids))) if side == "left" else list(range(len(ids)))
    src = torch.tensor([padded])                                   # (1, S'): S' = S + pads
    S = src.shape[1]
    src_mask = model.make_src_mask(src) if mask else torch.ones(1, 1, S, dtype=torch.bool)   # (1, 1, S')
    with eval_mode(model), torch.no_grad():
        x = model.src_embedding(src, "src")                        # (1, S', D)
        if shift_positions and side == "left":
            if not hasattr(model.positions, "pe"):
                raise ValueError("shift_positions needs a model with sinusoidal positions")
            position = (torch.arange(S) - pads).clamp(min=0)       # (S',): pads at 0, real tokens from 0
            x = x + model.positions.pe[position]                   # (1, S', D)
        else:
            x = model._add_positions(x)                            # (1, S', D): positions 0 .. S' - 1
        memory, weights = model.encoder(x, src_mask, True)         # (1, S', D), [(1, H, S', S') per layer]
        ys = torch.tensor([[BOS_ID]])                              # (1, 1)
        for _ in range(S + 50):                                    # greedy, as greedy_decode without a cache
            next_id = int(model.decode(ys, memory, src_mask)[0, -1].argmax())
            ys = torch.cat([ys, torch.tensor([[next_id]])], dim=1)   # (1, t + 1)
            if next_id == EOS_ID:
                break
        out = ys[0, 1:].tolist()
        ref = out if reference is None else list(reference)
        tgt_in = torch.tensor([[BOS_ID] + ref[:-1]])               # (1, T): shifted right
        log_probs = torch.log_softmax(model.decode(tgt_in, memory, src_mask)[0], dim=-1)   # (T, V)
    return {"tokens": [src_vocab.id_to_token(i) for i in padded], "real": real, "memory": memory[0],
            "weights": [w[0] for w in weights], "translation": tgt_vocab.decode(out), "out": out,
            "log_probs": log_probs}


def _padding_figure(sentence: str, pads: int, side: str, mask: bool, base, padded, layer: int, head: int):
    """Left: one encoder head's map on the padded source. Right: how far each real token's encoder output
    moved from the unpadded run's (base), on a log axis."""
    from .._optional import torch

    real = padded["real"]
    moved = (padded["memory"][real] - base["memory"]).abs().amax(-1).numpy()   # (S,): max over D per token
    shown = np.maximum(moved, 1e-9)                                # exact zeros on the log axis' floor
    n = len(padded["tokens"])
    # 64 dpi: the live widget's drawing is stored in the notebook (the flip book sets its own resolution)
    fig, (ax, right) = plt.subplots(1, 2, figsize=(9.6, 4.2), dpi=64, gridspec_kw={"width_ratios": [1.15, 1]})
    matrix = padded["weights"][layer - 1][head - 1]                # (S + pads, S + pads)
    plot_attention(matrix, padded["tokens"], padded["tokens"], ax=ax,
                   title=f"encoder self-attention, layer {layer}, head {head}")
    for j in range(n):
        if j not in real:                                          # the pad's column and row, shaded
            ax.axvspan(j - 0.5, j + 0.5, color="#d62728", alpha=0.25, lw=0)
            ax.axhspan(j - 0.5, j + 0.5, color="#d62728", alpha=0.25, lw=0)
    keys = torch.tensor(real)
    change = (matrix[keys][:, keys] - base["weights"][layer - 1][head - 1]).abs().max().item()   # real x real
    ax.set_xlabel(f"key; real rows over real keys: largest weight change {change:.0e}")
    # bars rise from the axis' floor, not from 0: on a log axis a bar from 0 is a path to -infinity, clipped on the
    # page but reaching past the slide's edge in a browser's layout
    right.bar(range(len(real)), shown - 1e-9, bottom=1e-9, color="#1f77b4")
    right.set_yscale("log")
    right.set_ylim(1e-9, 10)
    right.yaxis.set_minor_locator(plt.NullLocator())
    right.axhline(1e-5, color="grey", ls="--", lw=1)
    right.set_xticks(range(len(real)), base["tokens"], rotation=60, ha="right")
    right.set_ylabel("largest change of its D numbers")
    right.set_xlabel("dashed: 1e-5, above float32 rounding")
    right.set_title("encoder output of each real token vs. no padding", fontsize=10)
    same = "the same" if padded["translation"] == base["translation"] else "changed"
    fig.suptitle(f"{pads} <pad> on the {side}, padding mask {'on' if mask else 'off'}: "
                 f"“{padded['translation']}” ({same})", fontsize=10)
    fig.tight_layout()
    return fig


def padding_figure(model, src_vocab, tgt_vocab, sentence: str = "three hundred and ninety-seven", pads: int = 3,
                   side: str = "right", mask: bool = True, layer: int = 2, head: int = 1):
    """The shipped model's encoder on `sentence` padded with `pads` <pad> tokens on the `side` given, with or
    without the padding mask: one head's map, and how far each real token's output moved from the unpadded run."""
    base = padded_pass(model, src_vocab, tgt_vocab, sentence)
    padded = padded_pass(model, src_vocab, tgt_vocab, sentence, pads, side, mask, reference=base["out"])
    return _padding_figure(sentence, pads, side, mask, base, padded, layer, head)


def padding_widget(model=None, src_vocab=None, tgt_vocab=None, sentence: str = "three hundred and ninety-seven",
                   layer: int = 2, head: int = 1):
    """Pad the source row with pads <pad> tokens on the right or left, with the padding mask on or off."""
    import ipywidgets as widgets

    model, src_vocab, tgt_vocab = _default_model(model, src_vocab, tgt_vocab)
    base = padded_pass(model, src_vocab, tgt_vocab, sentence)      # the unpadded run, once
    controls = {
        "pads": widgets.IntSlider(value=3, min=1, max=4, description="pads"),
        "side": widgets.Dropdown(options=list(PAD_SIDES), description="pad on the"),
        "mask": widgets.Checkbox(value=True, description="padding mask"),
    }

    def draw(pads, side, mask):
        padded = padded_pass(model, src_vocab, tgt_vocab, sentence, pads, side, mask, reference=base["out"])
        return _padding_figure(sentence, pads, side, mask, base, padded, layer, head)

    return _interactive(draw, controls)


def padding_flipbook(model=None, src_vocab=None, tgt_vocab=None, sentence: str = "three hundred and ninety-seven",
                     pad_counts=(1, 3), layer: int = 2, head: int = 1, dpi: int = 60):
    """The padding widget's flip book: every count of pads given, on either side, with the mask on and off."""
    model, src_vocab, tgt_vocab = _default_model(model, src_vocab, tgt_vocab)
    base = padded_pass(model, src_vocab, tgt_vocab, sentence)

    def draw(pads, side, mask):
        padded = padded_pass(model, src_vocab, tgt_vocab, sentence, pads, side, mask, reference=base["out"])
        return _padding_figure(sentence, pads, side, mask, base, padded, layer, head)

    controls = [Control("pads", "pads", tuple(pad_counts), default=pad_counts[-1]),
                Control("side", "pad on the", PAD_SIDES, default="right", kind="select"),
                Control("mask", "padding mask", (False, True), default=True, kind="checkbox", shown=("off", "on"))]
    return FlipBook(draw, controls, dpi=dpi, colours=16, figure_dpi=64, name="padding_figure",
                    alt="encoder attention map of a padded source with the pad columns marked, and a log-scale bar "
                        "chart of how far each real token's encoder output moved from the unpadded run")


# --- decoding: temperature, top-k and top-p -----------------------------------------------------------------

def next_word_logits(model, src_vocab, tgt_vocab, sentence: str, t: int):
    """The model's logits for word `t` (the decoding step, counted from 0 as code indexes) of its greedy
    translation of `sentence`, given the words before it: (logits (V,), the text written before it, the whole
    greedy translation)."""
    from .._optional import torch
    from ..data.vocab import BOS_ID
    from ..torch.decoding import greedy_decode

    src = torch.tensor([src_vocab.encode(sentence)])               # (1, S)
    with torch.no_grad():
        out = greedy_decode(model, src)                            # (1, L), ends with <eos>
        if not 0 <= t < out.shape[1]:
            raise ValueError(f"t: expected a value from 0 to {out.shape[1] - 1}, got {t}")
        tgt_in = torch.cat([torch.full((1, 1), BOS_ID), out[:, :t]], dim=1)   # (1, t + 1): <bos> first
        logits = model(src, tgt_in)[0, -1]                         # (V,)
    return logits, tgt_vocab.decode(out[0, :t].tolist()), tgt_vocab.decode(out[0].tolist())


def _shipped_smoothing(model, label_smoothing):
    """The label smoothing the figure draws: the one given, else the shipped model's (when no model is given)."""
    if label_smoothing is None and model is None:
        from ..training.checkpoint import pretrained_info

        return pretrained_info("numbers-en-fr")["metadata"]["train_config"]["label_smoothing"]
    return label_smoothing


def _decoding_figure(sentence: str, logits, before, tgt_vocab, temperature: float, top_k: int | None,
                     top_p: float | None, n_shown: int, label_smoothing: float | None = None):
    from ..data.vocab import BOS_ID, PAD_ID
    from ..torch.decoding import sampling_probs

    V = logits.shape[-1]
    never = (PAD_ID, BOS_ID)                                       # as sample_decode: never drawn
    top_k = None if top_k is None or top_k >= V - len(never) else top_k   # every drawable token: no limit
    top_p = None if top_p is None or top_p >= 1 else top_p         # p_top = 1 keeps every word: no limit
    model_p = sampling_probs(logits).numpy()                       # (V,): tau = 1, no limits
    # (V,): as sample_decode draws, <pad> and <bos> excluded
    shaped = sampling_probs(logits, temperature, top_k, top_p, exclude=never).numpy()
    drawable_p = np.where(np.isin(np.arange(V), never), -1.0, model_p)   # (V,): never-drawn tokens ranked last
    order = np.argsort(-drawable_p, kind="stable")[:n_shown]       # (n_shown,): the model's most probable first
    words = [tgt_vocab.id_to_token(int(i)) for i in order]
    fig, (ax, log_ax) = plt.subplots(1, 2, figsize=(10.4, 3.6))
    ax.bar(range(n_shown), shaped[order], color="#1f77b4", label="distribution sampled from")
    ax.plot(range(n_shown), model_p[order], "_", color="black", ms=18, mew=2, label="the model's (τ = 1)")
    ax.set_xticks(range(n_shown), words, rotation=45, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("probability of the next word")
    k_text = "off" if top_k is None else top_k
    p_text = "off" if top_p is None else f"{top_p:g}"
    ax.set_title(f"τ = {temperature:g}, k_top = {k_text}, p_top = {p_text}: "
                 f"{int((shaped > 0).sum())} of {V} tokens possible", fontsize=10)
    # right: every drawable token on a log axis, ranked as top-k and top-p rank them (after τ, before the cuts)
    measured = sampling_probs(logits, temperature, exclude=never).numpy()   # (V,): what top-k and top-p cut
    ranked = np.argsort(-measured, kind="stable")[:V - len(never)]          # (V - 2,): most probable first
    x = np.arange(1, len(ranked) + 1)                              # (V - 2,): rank from 1
    drawn = shaped[ranked] > 0                                     # (V - 2,): kept by top-k and top-p
    log_ax.plot(x[drawn], shaped[ranked][drawn], "o", color="#1f77b4", ms=5, mfc="none",   # hollow: dashes show
                label="kept: sampled from")
    log_ax.plot(x, model_p[ranked], "_", color="black", ms=7, mew=1.5, label="the model's (τ = 1)")
    if label_smoothing:
        log_ax.axhline(label_smoothing / V, color="grey", ls="--", lw=1,
                       label=f"$\\varepsilon_{{\\mathrm{{ls}}}}/|\\mathcal{{V}}|$ = {label_smoothing:g}/{V}: "
                             "label smoothing's target")
    log_ax.set_yscale("log")
    log_ax.set_ylim(1e-6, 1.5)
    log_ax.yaxis.set_minor_locator(plt.NullLocator())              # decades only: minor ticks slow the drawing
    log_ax.set_xlim(0, len(ranked) + 1)
    log_ax.set_xlabel("drawable tokens, ranked after τ")
    log_ax.set_ylabel("probability (log scale)")
    mass = log_ax.twinx()                                          # the mass top-p measures, on a linear axis
    mass.step(x, np.cumsum(measured[ranked]), where="mid", color="#ff7f0e", lw=1.2,
              label="cumulative mass after τ (right axis)")
    if top_p is not None:
        mass.axhline(top_p, color="#ff7f0e", ls=":", lw=1.2, label="p_top")
    mass.set_ylim(0, 1.05)
    mass.set_ylabel("cumulative mass")
    ax.legend(loc="upper right", fontsize=7)                       # each panel its own legend
    handles, labels = log_ax.get_legend_handles_labels()
    h, lab = mass.get_legend_handles_labels()
    mass.legend(handles + h, labels + lab, loc="lower right", fontsize=6)   # on top of the twin axis
    fig.suptitle(f"“{sentence}”: the word after “{before or '<bos>'}”", fontsize=10)
    fig.subplots_adjust(left=0.07, right=0.93, bottom=0.22, top=0.84, wspace=0.22)   # tight_layout: 3 times slower
    return fig


def decoding_figure(model, src_vocab, tgt_vocab, sentence: str = "three hundred and ninety-seven", t: int = 0,
                    temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None,
                    n_shown: int = 10, label_smoothing: float | None = None):
    """The distribution sampling draws word `t` (from 0) from (chapter 8's sampling_probs, with <pad> and <bos>
    excluded as sample_decode excludes them), as bars over the n_shown words the model finds most probable,
    with the model's own probabilities (tau = 1, no limits) as ticks. Right: every drawable token on a log axis,
    with label smoothing's target for a wrong token, label_smoothing / V (drawn when given), and the cumulative
    mass that top-p measures.

    top_k None (or the vocabulary size) and top_p None (or 1) mean no limit."""
    logits, before, _ = next_word_logits(model, src_vocab, tgt_vocab, sentence, t)
    return _decoding_figure(sentence, logits, before, tgt_vocab, temperature, top_k, top_p, n_shown,
                            label_smoothing)


def decoding_widget(model=None, src_vocab=None, tgt_vocab=None, sentence: str = "three hundred and ninety-seven",
                    t: int = 0, label_smoothing: float | None = None):
    """Temperature, k_top and p_top on the shipped model's next-word distribution for one source and decoding
    step t (from 0). label_smoothing: the model's, for the figure's floor line (None: the shipped model's when
    no model is given, else no line)."""
    import ipywidgets as widgets

    label_smoothing = _shipped_smoothing(model, label_smoothing)
    model, src_vocab, tgt_vocab = _default_model(model, src_vocab, tgt_vocab)
    logits, before, _ = next_word_logits(model, src_vocab, tgt_vocab, sentence, t)  # the model runs once
    V = logits.shape[-1]
    controls = {
        "temperature": widgets.FloatLogSlider(value=1.0, base=2, min=-2, max=3, step=0.5, description="τ"),
        "top_k": widgets.IntSlider(value=V, min=1, max=V, description="k_top"),          # V: no limit
        "top_p": widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="p_top"),  # 1: none
    }
    return _interactive(lambda temperature, top_k, top_p: _decoding_figure(sentence, logits, before, tgt_vocab,
                                                                           temperature, top_k, top_p, 10,
                                                                           label_smoothing),
                        controls)


def decoding_flipbook(model=None, src_vocab=None, tgt_vocab=None, sentence: str = "three hundred and ninety-seven",
                      t: int = 0, temperatures=(0.5, 1.0, 2.0, 4.0), top_ks=(1, 3, None), top_ps=(0.5, 0.9, None),
                      dpi: int = 78, label_smoothing: float | None = None):
    """The decoding widget's flip book: every temperature, k_top and p_top given (None: no limit)."""
    label_smoothing = _shipped_smoothing(model, label_smoothing)
    model, src_vocab, tgt_vocab = _default_model(model, src_vocab, tgt_vocab)
    logits, before, _ = next_word_logits(model, src_vocab, tgt_vocab, sentence, t)
    controls = [Control("temperature", "temperature τ", tuple(temperatures), default=1.0),
                Control("top_k", "k<sub>top</sub>", tuple(top_ks), default=None,
                        shown=tuple("off" if k is None else str(k) for k in top_ks)),
                Control("top_p", "p<sub>top</sub>", tuple(top_ps), default=None,
                        shown=tuple("off" if p is None else f"{p:g}" for p in top_ps))]
    return FlipBook(lambda temperature, top_k, top_p: _decoding_figure(sentence, logits, before, tgt_vocab,
                                                                       temperature, top_k, top_p, 10,
                                                                       label_smoothing),
                    controls, dpi=dpi, colours=16, name="decoding_figure",
                    alt="left, bar chart of the probabilities of the ten words the model finds most likely "
                        "next, after temperature, top-k and top-p, with the model's own probabilities as ticks; "
                        "right, every drawable token on a log axis with label smoothing's target as a dashed "
                        "line and the cumulative mass as a step line")
