"""What chapters show besides their own computations.

- `show_source(obj)` and `show_diff(numpy_obj, torch_obj)`: the package's own source. Chapters never paste
  package code; they display it from the installed package, so the book and the code cannot drift apart
  (nbval fails when the code changes and the stored output does not). Both return small objects with an HTML
  view (syntax-highlighted, inline styles, so the static site needs no extra CSS) and a plain-text view (what
  nbval compares, and what a terminal shows).
- `glue(name, value)`: hand a computed number to the page's prose (myst-nb's glue when the book is built;
  nothing at all where myst-nb is not installed, as in Colab or a NumPy-only install).
- `load_results(name)`: read a results file written by a script in `benchmarks/` (experiments too slow for a
  chapter), or None where the repository's `benchmarks/results/` is not at hand.
"""
from __future__ import annotations

import difflib
import html
import inspect
import json
from pathlib import Path
from typing import Any

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

__all__ = ["show_source", "show_diff", "SourceView", "DiffView", "glue", "load_results"]

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


def glue(name: str, value: Any, display: bool = False) -> None:
    """Store `value` under `name` for the page's prose to quote (`{glue:text}`name:.3f``).

    When the book is built, myst-nb replaces the reference with the value as this cell computed it, so the text
    can never disagree with the code. Without myst-nb (Colab, a NumPy-only install) nothing is stored: the
    chapter still runs. Returns None, so a `glue(...)` on the last line of a cell displays nothing.
    """
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"name: expected letters, digits, '-' or '_', got {name!r}")
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    myst_glue(name, value, display=display)


def results_dir(start: Path | None = None) -> Path | None:
    """`benchmarks/results` of the repository that contains `start` (default: the working directory), if any."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "benchmarks" / "results"
        if candidate.is_dir():
            return candidate
    return None


def load_results(name: str, start: Path | None = None) -> dict | None:
    """The JSON results file `benchmarks/results/<name>.json`, or None if this is not a checkout of the
    repository (for example in Colab, where only the package is installed)."""
    folder = results_dir(start)
    path = folder / f"{name}.json" if folder is not None else None
    if path is None or not path.is_file():
        return None
    return json.loads(path.read_text())
