"""Positional-encoding figures: shapes are checked, the similarity matrix is right, one curve per dimension."""
import matplotlib

matplotlib.use("Agg")  # tests only; notebooks keep the inline backend
import numpy as np
import pytest

from transformer_course.viz.positional import (
    cosine_similarity_matrix,
    plot_encoding_curves,
    plot_position_similarity,
    plot_positional_heatmap,
)


def _table(P=20, D=8):
    angle = np.arange(P)[:, None] / 10000 ** (np.arange(0, D, 2) / D)
    pe = np.zeros((P, D))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def test_heatmap_draws_the_table_with_symmetric_limits():
    ax = plot_positional_heatmap(_table(), title="PE")
    image = ax.images[0]
    assert image.get_array().shape == (20, 8)
    low, high = image.get_clim()
    assert low == -high and ax.get_title() == "PE"
    with pytest.raises(ValueError, match=r"pe: expected a \(positions, d_model\) table"):
        plot_positional_heatmap(np.zeros(5))


def test_similarity_matrix_is_cosine_and_plotted():
    pe = _table()
    sim = cosine_similarity_matrix(pe)
    assert np.allclose(np.diag(sim), 1.0)
    assert np.isclose(sim[2, 7], pe[2] @ pe[7] / np.linalg.norm(pe[2]) / np.linalg.norm(pe[7]))
    assert np.allclose(cosine_similarity_matrix(np.zeros((2, 3))), 0.0)  # zero rows: no NaN
    ax = plot_position_similarity(pe)
    assert ax.images[0].get_array().shape == (20, 20)


def test_curves_one_line_per_dimension_and_bad_dims_rejected():
    ax = plot_encoding_curves(_table(), dims=[0, 1, 6])
    assert len(ax.lines) == 3
    assert "cos" in ax.lines[1].get_label()
    with pytest.raises(ValueError, match="dims: expected column indices"):
        plot_encoding_curves(_table(), dims=[8])
