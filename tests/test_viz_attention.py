"""Attention heatmaps: shapes are checked, labels land on the axes, one panel per head."""
import matplotlib

matplotlib.use("Agg")  # tests only; notebooks keep the inline backend
import numpy as np
import pytest

from transformer_course.viz import plot_attention, plot_attention_heads


def test_plot_attention_labels_queries_and_keys():
    ax = plot_attention(np.full((2, 3), 1 / 3), key_labels=["a", "b", "c"], query_labels=["x", "y"],
                        annotate=True, title="t")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y"]
    assert ax.get_title() == "t"
    assert len(ax.texts) == 6  # one annotation per weight


def test_plot_attention_rejects_bad_shapes_and_label_counts():
    with pytest.raises(ValueError, match=r"weights: expected a \(T_q, T_k\) matrix"):
        plot_attention(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="key_labels: expected 3 labels"):
        plot_attention(np.zeros((2, 3)), key_labels=["a"])


def test_plot_attention_heads_draws_one_panel_per_head():
    fig = plot_attention_heads(np.random.default_rng(0).random((5, 3, 4)), ncols=4)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == 5
    with pytest.raises(ValueError, match=r"expected \(H, T_q, T_k\)"):
        plot_attention_heads(np.zeros((3, 4)))


def test_plot_attention_heads_colorbar_is_optional_shared_and_fixed_at_0_to_1():
    weights = np.random.default_rng(0).random((5, 3, 4)) * 0.5          # the data never reach 1
    assert len(plot_attention_heads(weights, ncols=4).axes) == 8          # default: panels only, no bar
    fig = plot_attention_heads(weights, ncols=4, colorbar=True)
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(fig.axes) == 9 and len(bars) == 1                          # one bar for all the panels
    assert bars[0].get_ylim() == (0.0, 1.0)
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in fig.axes if ax.images)
