"""One matplotlib style for every figure in the course, so chapters look like one book."""
from __future__ import annotations

import matplotlib as mpl

__all__ = ["COURSE_STYLE", "use_course_style", "ATTENTION_CMAP", "DIVERGING_CMAP"]

ATTENTION_CMAP = "viridis"   # attention weights lie in [0, 1]: a sequential map
DIVERGING_CMAP = "RdBu_r"    # signed quantities (positional encodings, gradients): zero is white

COURSE_STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "image.cmap": ATTENTION_CMAP,
    "axes.prop_cycle": mpl.cycler(color=["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]),
}


def use_course_style() -> None:
    """Apply the course's matplotlib settings (call once at the top of a chapter)."""
    mpl.rcParams.update(COURSE_STYLE)
