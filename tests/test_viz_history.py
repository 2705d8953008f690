"""Chapter 1's figures: the timeline places every paper, the path diagrams highlight the right path."""
import matplotlib

matplotlib.use("Agg")  # tests only; notebooks keep the inline backend
import matplotlib.pyplot as plt
import pytest

from transformer_course.viz.history import plot_layer_paths, plot_timeline

RED = (0.8392156862745098, 0.15294117647058825, 0.1568627450980392, 1.0)


def test_timeline_writes_one_label_per_paper_in_date_order():
    ax = plot_timeline([(2017.4, "C", "c"), (2014.5, "A", "a"), (2015.6, "B", "b")], title="t")
    assert [text.get_text() for text in ax.texts] == ["A: a", "B: b", "C: c"]
    assert ax.get_title() == "t"
    plt.close("all")
    with pytest.raises(ValueError, match="events"):
        plot_timeline([])


def _red_arrows(ax):
    return [a for a in ax.texts if hasattr(a, "arrow_patch") and a.arrow_patch.get_edgecolor() == RED]


@pytest.mark.parametrize("n, kernel, conv_layers", [(8, 2, 3), (9, 3, 2), (10, 3, 3)])
def test_path_lengths_are_n_log_k_n_and_one(n, kernel, conv_layers):
    fig = plot_layer_paths(n, kernel)
    recurrent, convolution, attention = fig.axes
    assert len(_red_arrows(recurrent)) == n          # x_1 -> h_1, then n - 1 recurrent steps
    assert len(_red_arrows(convolution)) == conv_layers
    assert len(_red_arrows(attention)) == 1
    plt.close(fig)


def test_path_diagram_rejects_tiny_sizes():
    with pytest.raises(ValueError, match="n and kernel"):
        plot_layer_paths(1, 2)


def test_attention_diagram_gives_every_decoder_step_its_own_context():
    from transformer_course.viz.history import attention_encoder_decoder_diagram

    fig = attention_encoder_decoder_diagram(S=4, T=3)
    ax = fig.axes[0]
    labels = [text.get_text() for text in ax.texts]
    assert [f"$c_{t}$" for t in (1, 2, 3)] == [label for label in labels if label.startswith("$c_")]
    assert len(ax.lines) == 4 * 3                    # one weight line from every h_i to every c_t
    plt.close(fig)
    with pytest.raises(ValueError, match="S"):
        attention_encoder_decoder_diagram(S=0)


def test_attention_diagram_draws_one_query_arrow_into_every_context():
    from matplotlib.colors import to_rgba
    from matplotlib.patches import FancyArrowPatch

    from transformer_course.viz.history import QUERY_COLOUR, attention_encoder_decoder_diagram

    for T in (1, 3):
        fig = attention_encoder_decoder_diagram(S=2, T=T)
        ax = fig.axes[0]
        query_arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)
                        and p.get_edgecolor() == to_rgba(QUERY_COLOUR)]
        assert len(query_arrows) == T                # s_{t-1} -> c_t for t = 1 .. T
        assert "$s_0$" in [text.get_text() for text in ax.texts]
        plt.close(fig)
