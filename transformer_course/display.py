"""What chapters show besides their own computations.

- `show_source(obj)` and `show_diff(numpy_obj, torch_obj)`: the package's own source. Chapters never paste
  package code; they display it from the installed package, so the book and the code cannot drift apart
  (nbval fails when the code changes and the stored output does not). Both return small objects with an HTML
  view (syntax-highlighted, inline styles, so the static site needs no extra CSS) and a plain-text view (what
  nbval compares, and what a terminal shows). `show_diff` pairs the lines of the two twins by similarity, so
  the same step written in NumPy and in PyTorch sits on one row.
- `glue(name, value)`: hand a computed number to the page's prose (myst-nb's glue when the book is built;
  nothing at all where myst-nb is not installed, as in Colab or a NumPy-only install).
- `load_results(name)`: read a results file written by a script in `benchmarks/` (experiments too slow for a
  chapter). The files ship with the package (`transformer_course/results/`), so Colab reads them too.
"""
from __future__ import annotations

import ast
import difflib
import html
import inspect
import json
import re
import textwrap
from importlib import resources
from pathlib import Path
from typing import Any

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

__all__ = ["show_source", "show_diff", "SourceView", "DiffView", "glue", "load_results"]

_PACKAGE_ROOT = Path(__file__).resolve().parent


def _source_and_location(obj) -> tuple[str, str]:
    """Source text of a function, class, method or module, and its file relative to the package's folder.

    No line numbers: an edit elsewhere in the same file must not change what a chapter stored for this object."""
    if isinstance(obj, property):
        obj = obj.fget
    if callable(obj) and not inspect.isclass(obj):
        obj = inspect.unwrap(obj)  # a decorated function (e.g. @torch.no_grad): the file of the function itself
    try:
        lines, _ = inspect.getsourcelines(obj)
        path = Path(inspect.getsourcefile(obj)).resolve()
    except (TypeError, OSError) as err:
        raise TypeError(f"obj: expected a function, class or module with Python source, got {obj!r}") from err
    try:
        shown = path.relative_to(_PACKAGE_ROOT.parent).as_posix()
    except ValueError:  # defined outside the package (e.g. in a notebook): show the file name only
        shown = path.name
    return "".join(lines).rstrip("\n"), shown


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
    """Two sources side by side: lines paired by similarity, differences marked within each line.

    The plain text lists the rows one after the other: "  " a line both sides share, "- " / "+ " a NumPy /
    PyTorch line (a pair of them, one after the other, is the same step written twice).
    """

    def __init__(self, left: SourceView, right: SourceView):
        self.left = left
        self.right = right
        self.rows = _align(left.code.splitlines(), right.code.splitlines())  # [(left or None, right or None)]

    def __repr__(self) -> str:
        lines = [f"--- {self.left.location}", f"+++ {self.right.location}"]
        for a, b in self.rows:
            if _same(a, b):
                lines.append("  " + a)
                continue
            lines += (["- " + a] if a is not None else []) + (["+ " + b] if b is not None else [])
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cell = '<td style="padding:0 0.6em;vertical-align:top">{}</td>'
        rows = []
        for a, b in self.rows:
            if _same(a, b):
                tint, left, right = "", html.escape(a), html.escape(b)
            elif a is not None and b is not None:
                tint, (left, right) = _CHANGED, _mark_changes(a, b)
            else:
                tint = _ONLY_LEFT if b is None else _ONLY_RIGHT
                left, right = html.escape(a or ""), html.escape(b or "")
            rows.append(f"<tr{tint}>{cell.format(left)}{cell.format(right)}</tr>")
        head = (f'<tr><th style="text-align:left">{html.escape(self.left.location)}</th>'
                f'<th style="text-align:left">{html.escape(self.right.location)}</th></tr>')
        style = "border-collapse:collapse;font-size:0.78em;white-space:pre;font-family:monospace;text-align:left"
        return f'<table class="tc-diff" style="{style}">{head}{"".join(rows)}</table>'


_CHANGED = ' style="background:#fff8e1"'                 # the same step, written differently
_ONLY_LEFT = ' style="background:#fdecea"'               # a line only the left (NumPy) side has
_ONLY_RIGHT = ' style="background:#e8f5e9"'              # a line only the right (PyTorch) side has
_MARK = '<span style="background:#ffd54f">{}</span>'


def _same(a: str | None, b: str | None) -> bool:
    """Two lines that differ at most in spacing (e.g. where a shape comment starts)."""
    return a is not None and b is not None and a.split() == b.split()


_TWIN_IDIOMS = [  # how the same step is spelt in NumPy and in PyTorch, taken out before lines are compared
    (re.compile(r",\s*(?:\w*cache\w*|_)(?=\s*=[^=])"), ""),    # NumPy's extra outputs: "y, cache = f(x)"
    (re.compile(r"params\[\"(\w+)\"\]"), r"\1"),              # params["W_1"]      -> W_1
    (re.compile(r"self\.W_(\w+)\.weight"), r"W_\1"),           # self.W_1.weight    -> W_1
    (re.compile(r"self\.W_(\w+)\.bias"), r"b_\1"),             # self.W_1.bias      -> b_1
    (re.compile(r"\b(?:self|np|torch|F|model)\."), ""),         # namespaces
    (re.compile(r"(\w+)_forward\b"), r"\1"),                    # linear_forward(    -> linear(
]


def _code_of(line: str) -> str:
    """A line without its comment, spacing and the twins' idioms: what decides how alike two lines are."""
    code = re.sub(r"\s+#.*$", "", line) if not line.lstrip().startswith("#") else line
    for pattern, replacement in _TWIN_IDIOMS:
        code = pattern.sub(replacement, code)
    return re.sub(r"\s+", "", code)


def _similarity(a: str, b: str) -> float:
    a, b = _code_of(a), _code_of(b)
    if not a or not b:                                   # blank lines: pair them, but let code decide the rows
        return 0.1 if a == b else 0.0
    if a == b:
        return 1.0
    tokens_a, tokens_b = re.findall(r"\w+|[^\w\s]", a), re.findall(r"\w+|[^\w\s]", b)
    return difflib.SequenceMatcher(None, tokens_a, tokens_b, autojunk=False).ratio()


def _align(left: list[str], right: list[str], threshold: float = 0.5) -> list[tuple[str | None, str | None]]:
    """Pair the lines of two sources in order so that the paired lines are as alike as possible (a global
    alignment: dynamic programming over both sequences); lines less alike than `threshold` stay unpaired."""
    n, m = len(left), len(right)
    best = [[0.0] * (m + 1) for _ in range(n + 1)]      # best[i][j]: the best total for left[i:] and right[j:]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            similarity = _similarity(left[i], right[j])
            paired = best[i + 1][j + 1] + similarity if similarity >= threshold else -1.0
            best[i][j] = max(paired, best[i + 1][j], best[i][j + 1])
    rows, i, j = [], 0, 0
    while i < n or j < m:
        if i < n and j < m and _similarity(left[i], right[j]) >= threshold \
                and best[i][j] == best[i + 1][j + 1] + _similarity(left[i], right[j]):
            rows.append((left[i], right[j]))
            i, j = i + 1, j + 1
        elif i < n and (j == m or best[i][j] == best[i + 1][j]):
            rows.append((left[i], None))
            i += 1
        else:
            rows.append((None, right[j]))
            j += 1
    return rows


def _mark_changes(a: str, b: str) -> tuple[str, str]:
    """Both lines as HTML, the words that differ highlighted."""
    words_a, words_b = re.findall(r"\w+|\s+|[^\w\s]", a), re.findall(r"\w+|\s+|[^\w\s]", b)
    out_a, out_b = [], []
    for tag, a0, a1, b0, b1 in difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).get_opcodes():
        piece_a, piece_b = html.escape("".join(words_a[a0:a1])), html.escape("".join(words_b[b0:b1]))
        changed = tag != "equal"
        out_a.append(_MARK.format(piece_a) if changed and piece_a.strip() else piece_a)
        out_b.append(_MARK.format(piece_b) if changed and piece_b.strip() else piece_b)
    return "".join(out_a), "".join(out_b)


def _without_docstrings(code: str) -> str:
    """The source without the docstrings of its functions and classes (a diff of the code itself)."""
    tree = ast.parse(code)
    drop = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            drop.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    return "\n".join(line for number, line in enumerate(code.splitlines(), 1) if number not in drop)


def show_source(obj) -> SourceView:
    """Display the source of a package function, class or module (highlighted in notebooks and on the site)."""
    code, location = _source_and_location(obj)
    return SourceView(code, location)


def show_diff(numpy_obj, torch_obj, docstrings: bool = False) -> DiffView:
    """Put two implementations (typically the NumPy and the PyTorch twin) side by side, line against line.

    Methods are compared at the indentation of a function; docstrings are left out unless `docstrings=True`
    (the chapters show them with `show_source`), so the rows are the code itself.
    """
    views = []
    for obj in (numpy_obj, torch_obj):
        view = show_source(obj)
        code = textwrap.dedent(view.code)
        views.append(SourceView(code if docstrings else _without_docstrings(code), view.location))
    return DiffView(*views)


def _check_name(name: str) -> None:
    """A glue key or a results file's stem: what a page can reference and a file can be named."""
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"name: expected letters, digits, '-' or '_', got {name!r}")


def glue(name: str, value: Any, decimals: int | None = None, display: bool = False) -> None:
    """Store `value` under `name` for the page's prose to quote (`{glue:text}`name:.3f``).

    When the book is built, myst-nb replaces the reference with the value as this cell computed it, so the text
    can never disagree with the code. A float needs `decimals`, the precision the prose shows: it is stored
    rounded to it, because its last digits differ from one processor (or thread count) to the next, and a
    stored output must be what any learner's machine computes. Without myst-nb (Colab, a NumPy-only install)
    nothing is stored: the chapter still runs. Returns None, so a `glue(...)` ending a cell displays nothing.
    """
    _check_name(name)
    # A NumPy scalar is stored as its repr, "np.float64(0.81)" under NumPy 2, which a format spec such as
    # `name:.2f` cannot read: the build warns and prints nothing. Its Python twin is stored as "0.81".
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, float):
        if decimals is None:
            raise TypeError(f"decimals: glue({name!r}, ...) got a float, {value!r}: pass decimals=, the number of "
                            "decimals the prose shows (a float's last digits depend on the processor)")
        # 9, not 9.0, for `:.0f` (int(): a NumPy 1.x float64 rounds to a float64)
        value = round(value, decimals) if decimals > 0 else int(round(value))  # noqa: RUF046
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        return
    myst_glue(name, value, display=display)


def load_results(name: str) -> dict | None:
    """The JSON results file `transformer_course/results/<name>.json`, or None when no benchmark wrote it."""
    _check_name(name)
    path = resources.files("transformer_course") / "results" / f"{name}.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))
