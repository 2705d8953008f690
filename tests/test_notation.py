"""One meaning per symbol: the tables of book/notation.md against the maths of every page (tools/notation.py).

The tests read notation.md's tables and the formulas of every page's markdown cells, and fail when

(a) a symbol has two rows with different meanings: two rows of the main tables, or a row of "Symbols used on
    one page only" that gives a letter of the main tables (or of another row for the same page) another
    meaning;
(b) a page uses a symbol that is in neither the main tables nor that page's own rows;
(c) a row does not link the page that introduces it (or, for a page-local row, the page it is for), or that
    page's maths does not use the row's symbol;
(d) MyST does not parse a formula as it is written (it then shows raw TeX);
(e) a row defines a symbol that no page uses (a page-local row: that its page does not use).

What counts as a symbol (a letter with its label; $x_i$ is x, $D_h$ is D_h) is documented in tools/notation.py.
A planted page and a planted table show that the checks catch what they should.

KNOWN_CLASHES lists the letters that a page uses with a meaning other than the main tables' one. Each has its
row in the page-local table (so that notation.md tells the reader) and is a clash to fix on the page, by giving
it another letter; then its row and its entry here go. The test fails when an entry is no longer a clash.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mdit_py_plugins.dollarmath")   # the book's extra: absent from the matrix's legs
from tools import notation

ROOT = Path(__file__).resolve().parent.parent

# (page, symbol of the main tables): what the page means by it. Fix by renaming on the page.
KNOWN_CLASHES: dict[tuple[str, str], str] = {
}

# (page, cell): formulas that MyST does not read as written. Fix on the page.
KNOWN_BROKEN_FORMULAS: dict[tuple[str, int], str] = {
}

READER = notation.Reader()
ROWS = notation.parse_notation((ROOT / "book" / "notation.md").read_text(encoding="utf-8"), READER)
PAGES = [notation.read_page(path) for path in notation.book_pages(ROOT)]


def test_the_tables_are_read():
    # guards against a parser that finds nothing and so passes everything
    sections = {row.section for row in ROWS}
    assert {"Shapes", "Attention", "Training", notation.LOCAL_SECTION} <= sections, sections
    assert "Parameter shapes" not in sections      # a table without a "meaning" column restates, defines nothing
    keys = {key for row in ROWS for key in row.keys}
    assert {"D_{h}", "T_{q}", "W^{Q}", "W^{O}", r"\alpha", "S", "T", "Z", "L", "n_{look}", "X_{kv}"} <= keys
    assert all(row.meaning for row in ROWS), [row.where for row in ROWS if not row.meaning]
    assert sum(len(page.cells) for page in PAGES) > 300 and len(PAGES) >= 13


def test_no_symbol_has_two_meanings_in_the_main_tables():
    problems = notation.double_meanings(ROWS)
    assert not problems, "\n".join(problems)


def test_page_local_rows_clash_only_where_known():
    clashes = [c for c in notation.local_clashes(ROWS) if (c.page, c.key) not in KNOWN_CLASHES]
    assert not clashes, "\n".join(c.message() for c in clashes)


def test_every_known_clash_is_still_one():
    found = {(c.page, c.key) for c in notation.local_clashes(ROWS)}
    stale = sorted(set(KNOWN_CLASHES) - found)
    assert not stale, f"KNOWN_CLASHES entries that notation.md no longer shows, remove them: {stale}"


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_symbol_of_the_page_is_in_the_tables(page):
    problems = notation.unknown_symbols([page], ROWS, READER)
    assert not problems, "\n".join(problems)


def test_every_row_links_the_page_that_uses_it():
    problems = notation.bad_links(PAGES, ROWS, READER)
    assert not problems, "\n".join(problems)


def test_every_symbol_of_every_row_is_used():
    problems = notation.unused_rows(PAGES, ROWS, READER)
    assert not problems, "\n".join(problems)


def test_formulas_render_as_written():
    broken = notation.broken_formulas(PAGES)
    new = [message for page, cell, message in broken if (page, cell) not in KNOWN_BROKEN_FORMULAS]
    assert not new, "\n".join(new)
    stale = sorted(set(KNOWN_BROKEN_FORMULAS) - {(page, cell) for page, cell, _ in broken})
    assert not stale, f"KNOWN_BROKEN_FORMULAS entries that render now, remove them: {stale}"


def test_the_reader_knows_every_tex_command_of_the_book():
    reader = notation.Reader()
    for page in PAGES:
        for texs in (*page.cells.values(), *page.captions.values()):
            for tex in texs:
                reader.symbols(tex)
    assert not reader.unknown, f"TeX commands to classify in tools/notation.py (letter, word or operator): " \
                               f"{sorted(reader.unknown)}"


@pytest.mark.parametrize("tex, keys", [
    (r"D_h = D / H", ["D_{h}", "D", "H"]),
    (r"\alpha_{t,i} = \operatorname{softmax}_i(e_{t,i})", [r"\alpha", "i", "e"]),
    (r"(B, H, T_q, T_k)", ["B", "H", "T_{q}", "T_{k}"]),
    (r"\text{head}_m = \operatorname{Attention}(X W^Q_m, X W^K_m, X W^V_m) W^O", ["m", "X", "W^{Q}", "X", "W^{K}",
                                                                                "X", "W^{V}", "W^{O}"]),
    (r"d_{\text{model}}^{-0.5}, d_{ff}, n_{\text{look}}, n_r, x_{kv}", ["d_{model}", "d_{ff}", "n_{look}", "n_{r}",
                                                                        "x_{kv}"]),
    (r"\exp(x_k) / \sum_k e^{x_k} + \log 2", ["x_{k}", "k", "x_{k}"]),      # Euler's e is no symbol
    (r"\sigma^2, K^\top, \omega_i = 10000^{-2i/D}", [r"\sigma", "K", r"\omega", "i", "D"]),
    (r"\bar{W}^Q, \overline{\text{out}}, \hat{y}_{<t}, \tilde{h}_i", ["W^{Q}", r"\hat{y}", r"\tilde{h}"]),
    (r"PE_{(pos,\,2i)} = \sin(pos / 10000^{2i/D}), PE^{\text{learned}}_{pos}", ["PE", "pos", "i", "D",
                                                                                 "PE^{learned}"]),
    (r"O(n^2 \cdot d), \mathbb{R}^{T \times D}, \mathcal{V}, 2\pi", ["n", "d", "T", "D", r"\mathcal{V}"]),
    (r"y', y^{(N)}_t, q^{(i)}, \alpha^{(m)}_{ij}, E_{x_i}, (max\_len, d\_model)", ["y'", r"y^{(\cdot)}",
                                                                                   r"q^{(\cdot)}", r"\alpha^{(\cdot)}",
                                                                                   "E"]),
])
def test_symbols_are_read_as_the_notation_means(tex, keys):
    assert [symbol.key for symbol in notation.Reader().symbols(tex)] == keys


def test_index_digits_and_primes_fall_back_to_the_letter():
    beta_1, x_1, pos_prime, w_jk = notation.Reader().symbols(r"\beta_1, x_1, pos', W_{jk}")
    assert (beta_1.key, beta_1.fallbacks) == (r"\beta_{1}", (r"\beta",))
    assert (x_1.key, x_1.fallbacks) == ("x_{1}", ("x",))
    assert (pos_prime.key, pos_prime.fallbacks) == ("pos'", ("pos",))
    assert (w_jk.key, w_jk.fallbacks) == ("W_{jk}", ("W",))


def test_formulas_are_read_from_prose_not_code():
    markdown = ("Text $a_1$ and `$code$` and\n\n$$\\Omega = 1$$\n\n```python\nx = '$\\Xi$'\n```\n\n"
                "```{math}\n:label: eq\n\\zeta\n```\n\n:::{exercise}\nInside $\\eta$.\n:::\n\\$5 is money.\n")
    assert notation.formulas(markdown) == ["\\zeta", "\\Omega = 1", "a_1", "\\eta"]
    assert sorted(notation.rendered_formulas(markdown)) == sorted(notation.formulas(markdown))


def test_a_dropdown_title_is_maths_as_its_body_is():
    """A directive's title is inline Markdown: its formulas are read, and a formula that a cell writes twice,
    once in a title and once in the text, is two formulas on both sides."""
    markdown = "With $d_k = 16$ here.\n\n:::{dropdown} Why $d_k = 16$\nBody $\\eta$.\n:::\n"
    assert sorted(notation.rendered_formulas(markdown)) == sorted(notation.formulas(markdown)) == [
        "\\eta", "d_k = 16", "d_k = 16"]


PLANTED_TABLE = """# Notation

## Sizes

| symbol | meaning | introduced in |
|---|---|---|
| $T$ | target length | [chapter 99](99_planted.ipynb) |
| $T$ | temperature | [chapter 99](99_planted.ipynb) |
| $W^Q$ | query projection | [chapter 99](99_planted.ipynb) |

## Symbols used on one page only

| symbol | meaning | page |
|---|---|---|
| $W^Q$ | a weight of the planted example | [chapter 99](99_planted.ipynb) |
"""


def _planted_notebook(tmp_path: Path) -> Path:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["A length $T$ and a projection $W^Q$.\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": ["# $\\Omega$ in code is not read\n"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "$\\Psi$\n"}]},
        {"cell_type": "markdown", "metadata": {}, "source": ["Then $\\zeta_q = T W^Q$ and\n",
                                                             "$T = 1\n", "- T$ breaks.\n"]},
    ]
    path = tmp_path / "99_planted.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_planted_page_and_table_are_caught(tmp_path):
    reader = notation.Reader()
    rows = notation.parse_notation(PLANTED_TABLE, reader)
    page = notation.read_page(_planted_notebook(tmp_path))

    double = notation.double_meanings(rows)
    assert len(double) == 1 and "$T$ has two meanings" in double[0] and "'temperature'" in double[0]

    clashes = notation.local_clashes(rows)
    assert [(c.page, c.key) for c in clashes] == [("99_planted", "W^{Q}")]
    assert "'query projection'" in clashes[0].message()

    unknown = notation.unknown_symbols([page], rows, reader)
    assert len(unknown) == 1 and unknown[0].startswith("99_planted, cell 2: $\\zeta_{q}$"), unknown
    assert "Omega" not in " ".join(unknown) and "Psi" not in " ".join(unknown)        # code cells are not read

    assert notation.bad_links([page], rows, reader) == []
    other = notation.Page("98_other", {0: ["T"]})
    assert any("links 99_planted, which is not a page" in p for p in notation.bad_links([other], rows, reader))

    broken = notation.broken_formulas([page])
    assert [(name, cell) for name, cell, _ in broken] == [("99_planted", 2)]


def test_a_planted_unused_row_is_caught(tmp_path):
    """A symbol no page writes, in a main row or a page-local one, and a bar no page writes, are each reported;
    a row named by its text is not checked."""
    table = PLANTED_TABLE.replace("| $W^Q$ | query projection |", "| $W^Q$, $\\Xi$ | query projection |") + (
        "| $\\bar{w}$ | a conjugate of the planted example | [chapter 99](99_planted.ipynb) |\n"
        "| $\\eta$ | a rate of the planted example | [chapter 99](99_planted.ipynb) |\n"
        "| BLEU | a score | [chapter 99](99_planted.ipynb) |\n")
    reader = notation.Reader()
    rows = notation.parse_notation(table, reader)
    page = notation.read_page(_planted_notebook(tmp_path))
    problems = notation.unused_rows([page], rows, reader)
    assert len(problems) == 3, problems
    assert "defines $\\Xi$, which no formula on any page uses" in problems[0]
    assert "defines $\\bar{w}$, which no formula on 99_planted uses" in problems[1]
    assert "defines $\\eta$, which no formula on 99_planted uses" in problems[2]
    assert notation.unused_rows([page], notation.parse_notation(PLANTED_TABLE, reader), reader) == []


def _parameter_shape_rows() -> list[list[str]]:
    """The cells of the rows of notation.md's table "Parameter shapes"."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse((ROOT / "book" / "notation.md").read_text("utf-8"))
    rows, section, cells = [], "", []
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            section = tokens[index + 1].content.strip()
        elif token.type == "tr_open":
            cells = []
        elif token.type == "inline" and tokens[index - 1].type == "td_open":
            cells.append(token.content.strip())
        elif token.type == "tr_close" and cells and section == "Parameter shapes":
            rows.append(cells)
    return rows


def test_the_parameter_shapes_are_the_package_s():
    """Each shape of the table "Parameter shapes" is the shape of that parameter in the NumPy model, built with
    sizes that differ from one another so that a swapped axis shows."""
    import re

    import numpy as np

    from transformer_course.config import ModelConfig
    from transformer_course.numpy.transformer import init_transformer

    size = {"D": 8, "F": 12, r"\lvert\mathcal{V}_{\text{src}}\rvert": 11, r"\lvert\mathcal{V}_{\text{tgt}}\rvert": 13}
    config = ModelConfig(src_vocab_size=11, tgt_vocab_size=13, d_model=8, n_heads=2, d_ff=12, n_encoder_layers=1,
                         n_decoder_layers=1, tie_output_embedding=False)
    shapes: dict[str, set[tuple]] = {}

    def walk(tree, path):
        if isinstance(tree, dict):
            for key, value in tree.items():
                walk(value, (*path, key))
        elif isinstance(tree, list):
            for value in tree:
                walk(value, path)
        else:
            shapes.setdefault(path[-1], set()).add(tree.shape)
            shapes.setdefault("/".join(path[-2:]), set()).add(tree.shape)

    walk(init_transformer(np.random.default_rng(0), config), ())
    rows = _parameter_shape_rows()
    assert len(rows) >= 8, rows
    for cells in rows:
        names = re.findall(r"`([^`]+)`", cells[1])
        stated = [tuple(size[axis.strip()] for axis in tex.split(",") if axis.strip())
                  for tex in re.findall(r"\$\((.*?)\)\$", cells[2].split(" with ")[0])]
        if "src_embedding" in names:
            names = ["src_embedding/E", "tgt_embedding/E"]
        if len(stated) == 1:
            stated *= len(names)
        assert len(stated) == len(names), cells
        for name, shape in zip(names, stated):
            assert shapes.get(name) == {shape}, f"{name}: notation.md says {shape}, the package has {shapes.get(name)}"
