"""Interactive widgets for workshops, each with a static twin figure.

Every widget `<name>_widget()` is a box of ipywidgets controls above a plot that redraws when a control moves;
its twin `<name>_figure(...)` draws the same plot for fixed settings and returns the matplotlib figure, so the
static website (which shows no live widgets) teaches the same thing. Chapters show the widget and, right
after it, the figure for the default settings.

- softmax_scaling: softmax temperature, and what dividing by sqrt(d_k) does to the weights as d_k grows.
- masks: padding, causal and combined masks for a batch of given lengths.
- positional: the sinusoidal table and the similarity of one position to all others.
- warmup: the paper's learning-rate schedule for chosen d_model and warm-up steps.
- attention_explorer: type a source, pick a layer and head of the shipped trained model, see the map and
  the translation.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..numpy.functional import softmax
from ..numpy.masks import causal_mask, combine_masks, lengths_to_mask
from .attention import plot_attention
from .positional import plot_positional_heatmap

__all__ = ["translate_with_weights", "softmax_scaling_figure", "softmax_scaling_widget", "mask_figure", "mask_widget",
           "positional_figure", "positional_widget", "warmup_figure", "warmup_widget",
           "attention_explorer_figure", "attention_explorer"]


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

def softmax_scaling_figure(d_k: int = 64, temperature: float = 1.0, scale: bool = True, n_keys: int = 8,
                           seed: int = 0):
    """Left: weights of one query over n_keys random keys. Right: max weight against d_k, scaled or not."""
    if d_k < 1 or n_keys < 2 or temperature <= 0:
        raise ValueError(f"d_k >= 1, n_keys >= 2, temperature > 0 expected; got {d_k}, {n_keys}, {temperature}")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)                                   # (d_k,): entries of variance 1
    k = rng.standard_normal((n_keys, d_k))                         # (n_keys, d_k)
    scores = k @ q                                                 # (n_keys,): variance d_k
    divisor = np.sqrt(d_k) if scale else 1.0
    weights = softmax(scores / divisor / temperature)              # (n_keys,)

    dims = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    peak = {True: [], False: []}
    for d in dims:                                                 # average over 200 random queries per d
        qs = rng.standard_normal((200, d))                         # (200, d)
        ks = rng.standard_normal((n_keys, d))                      # (n_keys, d)
        s = qs @ ks.T                                              # (200, n_keys)
        for scaled in (True, False):
            w = softmax(s / (np.sqrt(d) if scaled else 1.0) / temperature, axis=-1)  # (200, n_keys)
            peak[scaled].append(w.max(-1).mean())

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
        "temperature": widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                                              description="temperature"),
        "scale": widgets.Checkbox(value=True, description="divide by √d_k"),
    }
    return _interactive(softmax_scaling_figure, controls)


# --- masks --------------------------------------------------------------------------------------------------

def mask_figure(lengths=(6, 4, 2), T: int = 6, causal: bool = True):
    """One row per sequence: its padding mask, the causal mask and their combination (True = may attend)."""
    lengths = [int(n) for n in lengths]
    if not lengths or min(lengths) < 1 or max(lengths) > T:
        raise ValueError(f"lengths: expected values in [1, T={T}], got {lengths}")
    padding = np.broadcast_to(lengths_to_mask(np.array(lengths), T), (len(lengths), T, T))  # (B, T, T)
    causal_part = causal_mask(T) if causal else None                                       # (1, T, T)
    combined = combine_masks(padding, causal_part)                                         # (B, T, T)
    panels = [("padding", padding), ("causal", np.broadcast_to(causal_mask(T), padding.shape) if causal
                                     else np.ones_like(padding)), ("combined", combined)]
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
            ax.set_title(f"sequence {b} (length {n}): {name}", fontsize=9)
            ax.set_xlabel("key position")
            ax.set_ylabel("query position")
    fig.tight_layout()
    return fig


def mask_widget():
    import ipywidgets as widgets

    controls = {
        "first": widgets.IntSlider(value=6, min=1, max=8, description="length 0"),
        "second": widgets.IntSlider(value=3, min=1, max=8, description="length 1"),
        "causal": widgets.Checkbox(value=True, description="causal"),
    }
    return _interactive(lambda first, second, causal: mask_figure((first, second), T=8, causal=causal), controls)


# --- positional encodings -----------------------------------------------------------------------------------

def positional_figure(max_len: int = 64, d_model: int = 64, position: int = 10):
    """Left: the sinusoidal table PE (positions x dimensions). Right: PE(position) . PE(p) for every p."""
    from ..numpy.positional import sinusoidal_encoding

    if not 0 <= position < max_len:
        raise ValueError(f"position: expected a value in [0, max_len={max_len}), got {position}")
    pe = sinusoidal_encoding(max_len, d_model)                     # (max_len, D)
    similarity = pe @ pe[position] / (d_model / 2)                 # (max_len,): 1 at p = position
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.4), gridspec_kw={"width_ratios": [1.3, 1]})
    plot_positional_heatmap(pe, ax=left, title=f"PE for d_model={d_model}")  # the heat map of chapter 6
    left.axhline(position, color="black", lw=0.8)
    right.plot(np.arange(max_len), similarity, "-", color="#1f77b4")
    right.axvline(position, color="black", lw=0.8)
    right.set_xlabel("position p")
    right.set_ylabel("PE(pos) · PE(p) / (d_model/2)")
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


# --- attention explorer for the shipped trained model -------------------------------------------------------

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


def attention_explorer_figure(model, src_vocab, tgt_vocab, sentence: str, kind: str = "decoder_cross",
                              layer: int = 1, head: int = 1):
    """The weight map of one head of one layer of the trained model on `sentence`, titled with its output.

    Layers and heads are numbered from 1, as on every page of the book. Decoder rows are labelled by the token
    written at that step; the columns of the decoder's self-attention by the tokens read (<bos> first).
    """
    kinds = ("encoder", "decoder_self", "decoder_cross")
    if kind not in kinds:
        raise ValueError(f"kind: expected one of {kinds}, got {kind!r}")
    translation, src_tokens, tgt_tokens, weights = translate_with_weights(model, src_vocab, tgt_vocab, sentence)
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
    plot_attention(matrix, keys, queries, ax=ax, title=f"{kind}, layer {layer}, head {head}")
    if kind != "encoder":  # decoder row t reads the tokens before t and writes token t: label it by that
        ax.set_ylabel("token written")
        ax.set_xlabel("source token read" if kind == "decoder_cross" else "token read")
    fig.suptitle(f"“{sentence}” → “{translation}”", fontsize=10)
    fig.tight_layout()
    return fig


def attention_explorer(model=None, src_vocab=None, tgt_vocab=None, sentence: str = "three hundred and forty-two"):
    """Type a source, pick layer, head and kind of attention; defaults to the shipped numbers-en-fr model."""
    import ipywidgets as widgets

    if model is None:
        from ..training.checkpoint import load_pretrained

        model, src_vocab, tgt_vocab = load_pretrained("numbers-en-fr")
    n_layers = max(model.config.n_encoder_layers, model.config.n_decoder_layers)
    controls = {
        "sentence": widgets.Text(value=sentence, description="source", continuous_update=False),
        "kind": widgets.Dropdown(options=["decoder_cross", "encoder", "decoder_self"], description="attention"),
        "layer": widgets.IntSlider(value=1, min=1, max=n_layers, description="layer"),
        "head": widgets.IntSlider(value=1, min=1, max=model.config.n_heads, description="head"),
    }

    def draw(sentence, kind, layer, head):
        return attention_explorer_figure(model, src_vocab, tgt_vocab, sentence, kind, layer, head)

    return _interactive(draw, controls)
