"""Figures for the course: functions return matplotlib figures/axes and never call plt.show()."""
from .attention import plot_attention, plot_attention_heads
from .style import use_course_style

__all__ = ["use_course_style", "plot_attention", "plot_attention_heads"]
