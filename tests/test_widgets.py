"""Workshop widgets: each static twin figure draws what its widget shows, each widget builds its controls, and
moving a control redraws (with ipywidgets 8 here; tests/test_colab_start.py runs the same probe with Colab's
ipywidgets 7.7.1, and the "floors" leg of the matrix runs this file with 7.7.1). Each widget's flip book (its
kernel-free twin for the website) has the widget's controls and a drawing for every setting; tests/test_site.py
moves its controls in a browser."""
import base64
import importlib.util
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # tests only; notebooks keep the inline backend
import matplotlib.pyplot as plt
import numpy as np
import pytest
import widget_probe

from transformer_course.viz import widgets as w
from transformer_course.viz.flipbook import Control, FlipBook, Panel

ROOT = Path(__file__).resolve().parent.parent
APPENDIX = ROOT / "book" / "a4_widgets.ipynb"
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs PyTorch")


@pytest.fixture(scope="module")
def shipped():
    """The shipped numbers-en-fr model and its vocabularies."""
    pytest.importorskip("torch")
    from transformer_course.training.checkpoint import load_pretrained

    return load_pretrained("numbers-en-fr")


def _close(fig):
    plt.close(fig)
    return True


def test_softmax_scaling_figure_shows_saturation_without_scaling():
    fig = w.softmax_scaling_figure(d_k=256, scale=False)
    right = fig.axes[1]
    scaled, raw = right.lines[0].get_ydata(), right.lines[1].get_ydata()
    # at large d_k raw dot products saturate (one key takes almost everything); scaled ones do not
    assert raw[-1] > 0.9 and scaled[-1] < 0.6
    assert _close(fig)
    # the right panel has a generator of its own: the left panel's controls never change it
    other = w.softmax_scaling_figure(d_k=1, scale=True, seed=5)
    assert np.array_equal(other.axes[1].lines[0].get_ydata(), scaled) and _close(other)
    with pytest.raises(ValueError, match="temperature > 0"):
        w.softmax_scaling_figure(temperature=0)


def test_mask_figure_marks_padding_and_future_positions():
    fig = w.mask_figure(lengths=(3,), T=4, causal=True)
    combined = fig.axes[2].images[0].get_array()
    expected = np.tril(np.ones((4, 4), dtype=bool)) & (np.arange(4) < 3)[None, :]
    assert np.array_equal(np.asarray(combined, dtype=bool), expected)
    assert fig.axes[0].get_title().startswith("sequence 1 ")     # numbered from 1, as in the book
    assert _close(fig)
    fig = w.mask_figure(lengths=(3,), T=4, causal=False)
    assert fig.axes[1].get_title().endswith("causal (off)") and _close(fig)
    with pytest.raises(ValueError, match="lengths: expected values in"):
        w.mask_figure(lengths=(5,), T=4)


def test_positional_figure_peaks_at_the_chosen_position():
    fig = w.positional_figure(max_len=40, d_model=32, position=12)
    similarity = fig.axes[1].lines[0].get_ydata()
    assert int(np.argmax(similarity)) == 12 and np.isclose(similarity[12], 1.0)
    # p is a probability in the book's notation: a position is written pos
    labels = fig.axes[1].get_xlabel() + " " + fig.axes[1].get_ylabel()
    assert "$pos$" in fig.axes[1].get_xlabel() and not re.search(r"\bp\b", labels), labels
    assert _close(fig)


def test_warmup_figure_peaks_at_the_warmup_step():
    fig = w.warmup_figure(d_model=512, warmup=4000, steps=20000)
    lr = fig.axes[0].lines[0].get_ydata()
    assert int(np.argmax(lr)) + 1 == 4000
    assert np.isclose(lr.max(), 512 ** -0.5 * 4000 ** -0.5)
    assert _close(fig)


@pytest.mark.parametrize("build", [w.softmax_scaling_widget, w.mask_widget, w.positional_widget,
                                   w.warmup_widget, pytest.param(w.decoding_widget, marks=needs_torch),
                                   pytest.param(w.padding_widget, marks=needs_torch)])
def test_widgets_build_controls_and_an_output(build):
    import ipywidgets

    box = build()
    controls, output = box.children
    assert isinstance(output, ipywidgets.Output)
    assert len(controls.children) >= 2
    plt.close("all")


@pytest.mark.parametrize("build, figure", [(w.softmax_scaling_widget, "softmax_scaling_figure"),
                                           (w.mask_widget, "mask_figure"), (w.positional_widget, "positional_figure"),
                                           (w.warmup_widget, "warmup_figure"),
                                           pytest.param(w.decoding_widget, "_decoding_figure", marks=needs_torch),
                                           pytest.param(w.padding_widget, "_padding_figure", marks=needs_torch)])
def test_moving_any_control_redraws_with_its_new_value(build, figure, monkeypatch):
    """Without a kernel: each control's callback fires once per move and draws with the moved value."""
    calls = []
    real = getattr(w, figure)

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)
    monkeypatch.setattr(w, figure, spy)
    controls = build().children[0].children
    assert len(calls) == 1, f"drawn {len(calls)} times when built, not once"
    for control in controls:
        control.value = widget_probe.step(control)
        assert len(calls) >= 2 and calls[-1] != calls[-2], f"moving {control.description!r} did not redraw"
    assert len(calls) == 1 + len(controls)
    plt.close("all")


def test_every_widget_redraws_in_a_kernel_when_a_control_moves(tmp_path, monkeypatch):
    """In a kernel, with nbclient as the front end: each output area shows a new figure after its first control
    moves (the test above moves every control without a kernel; tests/test_colab_start.py moves every one in a
    kernel with ipywidgets 7.7.1)."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from tools import execute_notebooks  # the notebook client that does not miss a widget cell's reply
    monkeypatch.delenv("MPLBACKEND", raising=False)   # the kernel's inline backend makes the figures
    from nbclient.exceptions import CellTimeoutError
    for attempt in (1, 2):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in widget_probe.cells(1)])
        try:   # the probe takes seconds; 120 s means a hang
            execute_notebooks.notebook_client(nb, timeout=120, kernel_name="python3",
                                              resources={"metadata": {"path": str(tmp_path)}}).execute()
            break
        except CellTimeoutError:
            # now and then kernel and client both go idle after a widget cell and the client waits forever (seen
            # in CI's floors leg, ipywidgets 7.7.1; tools/execute_notebooks.py retries its student runs for the
            # same reason): a fresh kernel, once
            if attempt == 2:
                raise
    found = widget_probe.report(nb.cells[-1].outputs[0]["text"])
    expected = {"softmax_scaling", "mask", "positional", "warmup"}
    if importlib.util.find_spec("torch") is not None:
        expected.add("attention_explorer")
    assert set(found["moved"]) == expected and all(len(moved) == 1 for moved in found["moved"].values()), found


def test_attention_explorer_follows_the_books_labelling_conventions():
    """Layers and heads count from 1; decoder rows are the tokens written, self-attention columns those read."""
    pytest.importorskip("torch")
    from transformer_course.training.checkpoint import load_pretrained

    model, src_vocab, tgt_vocab = load_pretrained("numbers-en-fr")
    fig = w.attention_explorer_figure(model, src_vocab, tgt_vocab, "eighty", kind="decoder_self", layer=1, head=1)
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    columns = [t.get_text() for t in ax.get_xticklabels()]
    assert rows[-1] == "<eos>" and columns[0] == "<bos>" and columns[1:] == rows[:-1]
    assert ax.get_title() == "decoder self-attention, layer 1, head 1" and ax.get_ylabel() == "word written"
    for bad in ({"layer": 0}, {"head": 0}, {"head": model.config.n_heads + 1}):
        with pytest.raises(ValueError, match="expected a value from 1"):
            w.attention_explorer_figure(model, src_vocab, tgt_vocab, "eighty", **bad)
    assert _close(fig)
    # every title names the attention as the book does, never by the model's internal key
    for kind, name in w.ATTENTION_KINDS.items():
        fig = w.attention_explorer_figure(model, src_vocab, tgt_vocab, "eighty", kind=kind, layer=2, head=3)
        assert fig.axes[0].get_title() == f"{name}, layer 2, head 3" and "_" not in fig.axes[0].get_title()
        assert _close(fig)
    assert w.ATTENTION_KINDS["decoder_cross"] == "cross-attention"


# --- the decoding widget ------------------------------------------------------------------------------------

def _possible(fig) -> tuple[int, int]:
    """(tokens possible, vocabulary size) as the decoding figure's title states them."""
    found = re.search(r"(\d+) of (\d+) tokens possible", fig.axes[0].get_title())
    return int(found.group(1)), int(found.group(2))


def test_decoding_figure_counts_the_words_sampling_may_draw(shipped):
    model, src_vocab, tgt_vocab = shipped
    V = model.config.tgt_vocab_size
    args = (model, src_vocab, tgt_vocab, "three hundred and ninety-seven")
    fig = w.decoding_figure(*args, t=6)
    bars = [patch.get_height() for patch in fig.axes[0].patches]     # the ten most probable words
    ticks = fig.axes[0].lines[0].get_ydata()                          # the model's own probabilities
    # tau = 1 and no limits: the model itself, less <pad> and <bos>, which sampling never draws (renormalised)
    assert _possible(fig) == (V - 2, V) and "<pad>" not in [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ratios = np.array(bars) / ticks
    assert np.allclose(ratios, ratios[0]) and 1.0 < ratios[0] < 1.05
    assert fig.axes[0].get_xticklabels()[0].get_text() == "dix" and "off" in fig.axes[0].get_title()
    assert _close(fig)
    fig = w.decoding_figure(*args, t=6, temperature=4.0, top_k=1)
    assert _possible(fig) == (1, V) and np.isclose(fig.axes[0].patches[0].get_height(), 1.0)   # greedy
    assert _close(fig)
    fig = w.decoding_figure(*args, t=6, temperature=2.0, top_k=V, top_p=1.0)  # k_top = V, p_top = 1: no limit
    assert _possible(fig) == (V - 2, V) and "k_top = off, p_top = off" in fig.axes[0].get_title()
    assert _close(fig)
    fig = w.decoding_figure(*args, t=6, temperature=2.0, top_k=V - 2)   # every drawable token: no limit either
    assert _possible(fig) == (V - 2, V) and "k_top = off" in fig.axes[0].get_title()
    assert _close(fig)
    with pytest.raises(ValueError, match="t: expected a value from 0"):
        w.decoding_figure(*args, t=99)


def test_padding_keeps_the_real_tokens_results_only_with_the_mask_and_right_positions(shipped):
    """Right padding with the mask: the real tokens' outputs, weights and log-probabilities do not move; without
    the mask, or padded on the left with positions counted from the row's start, they do."""
    import torch

    model, src_vocab, tgt_vocab = shipped
    sentence = "three hundred and ninety-seven"
    base = w.padded_pass(model, src_vocab, tgt_vocab, sentence)
    assert base["real"] == list(range(len(base["tokens"])))
    assert base["translation"] == "trois cent quatre-vingt-dix-sept"

    def moved(**options):
        run = w.padded_pass(model, src_vocab, tgt_vocab, sentence, reference=base["out"], **options)
        real = torch.tensor(run["real"])
        assert [run["tokens"][j] for j in run["real"]] == base["tokens"]
        return ((run["memory"][real] - base["memory"]).abs().max().item(),
                (run["weights"][0][:, real][:, :, real] - base["weights"][0]).abs().max().item(),
                (run["log_probs"] - base["log_probs"]).abs().max().item())

    assert max(moved(pads=2, side="right")) < 1e-4
    assert max(moved(pads=2, side="left", shift_positions=True)) < 1e-4
    assert min(moved(pads=2, side="right", mask=False)) > 1e-2
    assert min(moved(pads=2, side="left")) > 1e-2
    with pytest.raises(ValueError, match="side"):
        w.padded_pass(model, src_vocab, tgt_vocab, sentence, 1, side="middle")
    fig = w.padding_figure(model, src_vocab, tgt_vocab, sentence, pads=2, side="left", mask=False)
    assert fig._suptitle.get_text().startswith("2 <pad> on the left, padding mask off")
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()][:2] == ["<pad>", "<pad>"]
    assert _close(fig)


# --- flip books: the kernel-free twins ----------------------------------------------------------------------

def _lines(a: int, b: float, c: bool = True):
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [a, b], color="red" if c else "blue")
    ax.set_title(f"{a} {b} {c}")
    return fig


def test_a_flip_book_draws_every_setting_once_and_needs_no_network():
    open_before = set(plt.get_fignums())
    controls = [Control("a", "a", (1, 2, 3), default=2), Control("b", "b<sub>2</sub>", (0.5, 1.5), default=1.5,
                                                                 kind="select"),
                Control("c", "red", (False, True), default=True, kind="checkbox")]
    book = FlipBook(_lines, controls, alt="two points joined", dpi=40)
    assert book.n_settings == 12 and len(book.frames) == 12 and len(book.index[0]) == 12
    assert all(frame.startswith("data:image/") for frame in book.frames)
    assert len(set(book.frames)) == 12                                   # each setting its own drawing
    html = book.html
    assert "http://" not in html and "https://" not in html and "<script src" not in html   # all inline
    assert html.count("<img") == 1 and f'src="{book.frame()}"' in html   # opens at the defaults
    assert book.frame(a=3, b=0.5, c=False) == book.frames[book.index[0]["2|0|0"]]
    data = json.loads(re.search(r'<script type="application/json" class="tc-flipbook-data">(.*?)</script>',
                                html).group(1))
    assert data["frames"] == book.frames and data["controls"][1]["label"] == "b_2"
    assert FlipBook(_lines, controls, alt="two points joined", dpi=40).html == html   # reproducible: no random id
    bundle = book._repr_mimebundle_()
    assert set(bundle) == {"text/html", "image/png", "text/plain"}
    assert base64.b64decode(bundle["image/png"])[:8] == b"\x89PNG\r\n\x1a\n"   # slides and plain front ends
    assert set(plt.get_fignums()) == open_before                         # every drawing was closed


def test_a_flip_book_refuses_controls_that_would_do_nothing():
    with pytest.raises(ValueError, match="change no panel"):
        FlipBook(None, [Control("a", "a", (1, 2), 1), Control("b", "b", (1, 2), 1)], alt="x",
                 panels=[Panel(lambda a: _lines(a, 0), ("a",), "x")])
    with pytest.raises(ValueError, match="not one of"):
        Control("a", "a", (1, 2), default=3)
    with pytest.raises(ValueError, match="exactly two values"):
        Control("a", "a", (1, 2, 3), default=1, kind="checkbox")
    with pytest.raises(ValueError, match="at least two values"):
        Control("a", "a", (1,), default=1)


def test_the_mask_flip_book_covers_every_length_with_one_panel_per_sequence():
    book = w.mask_flipbook(T=3, lengths=(3, 2), dpi=30)
    assert book.n_settings == 3 * 3 * 2 and [len(table) for table in book.index] == [6, 6]
    assert book.frame(0, first=2, causal=False) != book.frame(0, first=3, causal=False)
    assert book.frame(1, second=2) != book.frame(0, first=2)             # titled sequence 2, not sequence 1
    plt.close("all")


def _flipbooks():
    """(live widget, its flip book) for every widget of the appendix; the model-backed ones need PyTorch."""
    pairs = [(w.softmax_scaling_widget, w.softmax_scaling_flipbook), (w.mask_widget, w.mask_flipbook),
             (w.positional_widget, w.positional_flipbook), (w.warmup_widget, w.warmup_flipbook)]
    if importlib.util.find_spec("torch") is not None:
        pairs += [(w.attention_explorer, w.attention_explorer_flipbook), (w.decoding_widget, w.decoding_flipbook),
                  (w.padding_widget, w.padding_flipbook)]
    return pairs


class _Controls:
    """Stands in for FlipBook: keeps the controls, draws nothing."""

    def __init__(self, draw, controls, **options):
        self.controls = list(controls)


def test_every_widget_has_a_flip_book_with_a_control_for_each_of_its_own(monkeypatch):
    """Control for control, in the same order: a slider becomes a slider, a tick box a tick box, and the
    explorer's text box a drop-down of sentences; both open at the same setting. (The controls only: drawing
    every page of every flip book takes a minute; the appendix's run and tests/test_site.py draw them.)"""
    import ipywidgets

    monkeypatch.setattr(w, "FlipBook", _Controls)
    kinds = {ipywidgets.Checkbox: "checkbox", ipywidgets.Dropdown: "select", ipywidgets.Text: "select"}
    for widget, flipbook in _flipbooks():
        live = widget().children[0].children
        book = flipbook(dpi=20)
        assert [kinds.get(type(c), "range") for c in live] == [c.kind for c in book.controls], flipbook.__name__
        for control, twin in zip(live, book.controls):                   # both open at the same setting
            if isinstance(control, ipywidgets.Text):
                continue                                                 # typed text: the drop-down's first
            if isinstance(control, ipywidgets.Dropdown):
                assert twin.texts[twin.start] == control.value
            elif twin.default is None:                                   # no limit: the slider at its top
                assert control.value == control.max, twin.name
            else:
                assert np.isclose(float(twin.default), float(control.value)), twin.name
        plt.close("all")


def test_the_appendix_shows_a_flip_book_after_every_widget():
    cells = [c for c in json.loads(APPENDIX.read_text())["cells"] if c["cell_type"] == "code"]
    widget_cells = [i for i, c in enumerate(cells)
                    if any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in c["outputs"])]
    for i in widget_cells:
        after = cells[i + 1]
        html = ["".join(o["data"]["text/html"]) for o in after["outputs"] if "text/html" in o.get("data", {})]
        assert html and 'class="tc-flipbook"' in "".join(html), f"code cell {i}: no flip book after the widget"
        assert "image/png" in after["outputs"][-1]["data"], f"code cell {i + 1}: no PNG for slides"
        assert {"slide", "nbval-ignore-output"} <= set(after["metadata"]["tags"])
    assert len(widget_cells) == 7

