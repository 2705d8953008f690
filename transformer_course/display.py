"""Show the package's own source inside chapters: `show_source(obj)` and `show_diff(numpy_obj, torch_obj)`.

Chapters never paste package code; they display it from the installed package, so the book and the code
cannot drift apart (nbval fails when the code changes and the stored output does not).
Both return small objects with an HTML view (syntax-highlighted, inline styles, so the static site needs no
extra CSS) and a plain-text view (what nbval compares, and what a terminal shows).
"""
from __future__ import annotations

import difflib
import html
import inspect
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

__all__ = ["show_source", "show_diff", "SourceView", "DiffView"]

_PACKAGE_ROOT = Path(__file__).resolve().parent


def _source_and_location(obj) -> tuple[str, str]:
    """Source text of a function, class, method or module, and 'module.py, lines a-b' relative to the package."""
    if isinstance(obj, property):
        obj = obj.fget
    if callable(obj) and not inspect.isclass(obj):
        obj = inspect.unwrap(obj)  # a decorated function (e.g. @torch.no_grad): the file of the function itself
    try:
        lines, start = inspect.getsourcelines(obj)
        path = Path(inspect.getsourcefile(obj)).resolve()
    except (TypeError, OSError) as err:
        raise TypeError(f"obj: expected a function, class or module with Python source, got {obj!r}") from err
    try:
        shown = path.relative_to(_PACKAGE_ROOT.parent).as_posix()
    except ValueError:  # defined outside the package (e.g. in a notebook): show the file name only
        shown = path.name
    start = max(start, 1)
    location = f"{shown}, lines {start}-{start + len(lines) - 1}"
    return "".join(lines).rstrip("\n"), location


def _highlight(code: str) -> str:
    formatter = HtmlFormatter(noclasses=True, nowrap=False, style="default")
    return highlight(code, PythonLexer(), formatter)


class SourceView:
    """The source of one object, rendered as highlighted HTML in notebooks and as plain text elsewhere."""

    def __init__(self, code: str, location: str):
        self.code = code
        self.location = location

    def __repr__(self) -> str:
        return f"# {self.location}\n{self.code}"

    def _repr_html_(self) -> str:
        caption = f'<div style="font-size:0.8em;color:#555">{html.escape(self.location)}</div>'
        return f'<div class="tc-source">{caption}{_highlight(self.code)}</div>'


class DiffView:
    """Two sources side by side, lines aligned, differing lines tinted."""

    def __init__(self, left: SourceView, right: SourceView):
        self.left = left
        self.right = right

    def __repr__(self) -> str:
        diff = difflib.unified_diff(self.left.code.splitlines(), self.right.code.splitlines(),
                                    fromfile=self.left.location, tofile=self.right.location, lineterm="")
        return "\n".join(diff)

    def _repr_html_(self) -> str:
        left_lines = self.left.code.splitlines()
        right_lines = self.right.code.splitlines()
        matcher = difflib.SequenceMatcher(a=left_lines, b=right_lines, autojunk=False)
        rows = []
        for tag, a0, a1, b0, b1 in matcher.get_opcodes():
            span = max(a1 - a0, b1 - b0)
            for k in range(span):
                left = left_lines[a0 + k] if a0 + k < a1 else ""
                right = right_lines[b0 + k] if b0 + k < b1 else ""
                tint = "" if tag == "equal" else ' style="background:#fff3cd"'
                rows.append(f"<tr{tint}><td><code>{html.escape(left)}</code></td>"
                            f"<td><code>{html.escape(right)}</code></td></tr>")
        head = (f"<tr><th>{html.escape(self.left.location)}</th>"
                f"<th>{html.escape(self.right.location)}</th></tr>")
        style = ("border-collapse:collapse;font-size:0.78em;white-space:pre;"
                 "font-family:monospace;text-align:left")
        return f'<table class="tc-diff" style="{style}">{head}{"".join(rows)}</table>'


def show_source(obj) -> SourceView:
    """Display the source of a package function, class or module (highlighted in notebooks and on the site)."""
    code, location = _source_and_location(obj)
    return SourceView(code, location)


def show_diff(numpy_obj, torch_obj) -> DiffView:
    """Put two implementations (typically the NumPy and the PyTorch twin) side by side, line against line."""
    return DiffView(show_source(numpy_obj), show_source(torch_obj))
