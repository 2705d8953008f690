"""Prose against evidence: every figure a page quotes is printed by its code, glued, or a cited constant.

The first test runs tools/check_prose.py over every chapter notebook and page of book/; the others show that
the check finds what it should (a contradiction planted in a copy of a page) and lets through what it should.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import check_prose
from tools.book import book_pages

ROOT = Path(__file__).resolve().parent.parent

PAGES = book_pages()


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_every_quoted_figure_is_backed_by_the_page(path):
    problems = check_prose.check_page(path)
    assert not problems, "\n".join(problems)


def _notebook(tmp_path: Path, prose: str, printed: str, code: str = "print(x)", caption: str | None = None) -> Path:
    metadata = {"mystnb": {"figure": {"caption": caption}}} if caption else {}
    cells = [{"cell_type": "markdown", "metadata": {}, "source": prose},
             {"cell_type": "code", "execution_count": 1, "metadata": metadata, "source": code,
              "outputs": [{"output_type": "stream", "name": "stdout", "text": printed}]}]
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


@pytest.mark.parametrize("prose", [
    "The accuracy is 0.933.", "It rounds to 0.93 at two digits.", "That is 93% of the strings.",
    "A difference of 8.3e-11 and a rate of $8.3 \\times 10^{-11}$.", "Exactly 0.9330 as printed.",
    "The negative score $-1.2663$ is higher.",
])
def test_figures_printed_by_the_page_pass(tmp_path, prose):
    printed = "accuracy 0.933, difference 8.3e-11, score -1.2663\n"
    assert check_prose.check_page(_notebook(tmp_path, prose, printed)) == []


def test_a_planted_contradiction_is_caught(tmp_path):
    path = _notebook(tmp_path, "The loss keeps falling, to 0.0670 at the end.", "final loss 0.1070\n")
    problems = check_prose.check_page(path)
    assert len(problems) == 1 and "'0.0670'" in problems[0] and "cell 0" in problems[0]


@pytest.mark.parametrize("prose, flagged", [
    ("An accuracy of 0.94.", "0.94"),          # printed 0.933: does not round to 0.94
    ("We reached 95% accuracy.", "95%"),       # 0.933 is 93%
    ("It took 4.2 s.", "4.2"),                 # not printed anywhere
])
def test_figures_without_evidence_are_flagged(tmp_path, prose, flagged):
    problems = check_prose.check_page(_notebook(tmp_path, prose, "accuracy 0.933\n"))
    assert len(problems) == 1 and f"'{flagged}'" in problems[0]


def test_captions_are_prose_too(tmp_path):
    path = _notebook(tmp_path, "No figures here.", "0.933\n", caption="Accuracy climbs to 0.95.")
    problems = check_prose.check_page(path)
    assert len(problems) == 1 and "caption of cell 1" in problems[0]


def test_code_literals_cited_constants_and_structure_are_not_figures(tmp_path):
    prose = ("Dropout 0.3 and a threshold of 98% come from the code; the base model reached 27.3 BLEU "
             "{cite}`vaswani2017attention`. See Section 3.4, §11.4 and Python 3.10; torch 2.13.0; "
             "`lr=0.0005` is code; a rate of $d^{-0.5}$; {glue:text}`acc:.3f` is glued.")
    code = "model = build(dropout=0.3)\nassert acc >= 0.98"
    assert check_prose.check_page(_notebook(tmp_path, prose, "nothing\n", code=code)) == []


def test_hand_arithmetic_must_be_listed_and_right(tmp_path, monkeypatch):
    path = _notebook(tmp_path, "Here $(15/6)^{0.6} \\approx 1.733$.", "nothing\n")
    assert len(check_prose.check_page(path)) == 1
    monkeypatch.setitem(check_prose.ARITHMETIC, "page", {"1.733": "2.5 ** 0.6"})
    assert check_prose.check_page(path) == []
    monkeypatch.setitem(check_prose.ARITHMETIC, "page", {"1.733": "2.5 ** 0.5"})
    assert len(check_prose.check_page(path)) == 1


def test_markdown_pages_are_checked(tmp_path):
    page = tmp_path / "guide.md"
    page.write_text("Chapter 9 takes 26.4 s; the paper's base model reached 27.3 BLEU.\n")
    problems = check_prose.check_page(page)
    assert len(problems) == 1 and "'26.4'" in problems[0]


def test_every_cited_constant_names_its_source():
    for figure, source in check_prose.CITED.items():
        assert float(figure) >= 0 and len(source) > 15 and any(ch.isdigit() for ch in source), (figure, source)


def test_digits_inside_an_embedded_image_are_not_evidence(tmp_path):
    """An HTML output with a base64 image (a flip book of appendix D) holds many digits; they must not back a
    figure that the page never printed."""
    path = _notebook(tmp_path, "That is 48% of the strings.", "accuracy 0.933\n")
    nb = json.loads(path.read_text())
    image = '<img src="data:image/png;base64,iVBORw0KGgo 48 AAAA48+/48==">'.replace(" ", "")
    nb["cells"][1]["outputs"].append({"output_type": "display_data", "metadata": {},
                                      "data": {"text/html": image, "text/plain": "<FlipBook>"}})
    path.write_text(json.dumps(nb))
    problems = check_prose.check_page(path)
    assert len(problems) == 1 and "'48%'" in problems[0]
    nb["cells"][1]["outputs"][-1]["data"]["text/html"] = "<p>48 of them</p>"   # shown as text, it is evidence
    path.write_text(json.dumps(nb))
    assert check_prose.check_page(path) == []
