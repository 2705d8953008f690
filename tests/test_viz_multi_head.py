"""The multi-head figures draw without error and refuse sizes they cannot label."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from transformer_course.viz.multi_head import plot_head_split, plot_multi_head_flow


def test_head_split_draws_every_cell():
    fig = plot_head_split(T=3, D=8, n_heads=2)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels.count("27") == 5            # (T, D), (T, H, Dh), (H, T, Dh), and the wrong way twice
    plt.close(fig)


def test_head_split_refuses_bad_sizes():
    with pytest.raises(ValueError, match="n_heads"):
        plot_head_split(T=3, D=8, n_heads=3)
    with pytest.raises(ValueError, match="T, D"):
        plot_head_split(T=12, D=8, n_heads=2)


def test_flow_shows_concrete_shapes():
    fig = plot_multi_head_flow(2, 5, 512, 8)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "(2, 8, 5, 64)" in texts and "(2, 8, 5, 5)" in texts
    plt.close(fig)
