"""The book's own structure: the table of contents and the files agree, chapters are in the course's order,
every notebook passes the static hygiene checks, the repository URL lives in one place."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools import book, check_notebooks

ROOT = Path(__file__).resolve().parent.parent

# The course's chapter order, the order of _toc.yml: file stems start with their number.
CHAPTER_ORDER = ["attention_history", "bahdanau", "general_attention", "self_attention", "multi_head",
                 "positional", "encoder", "decoder", "training", "real_sentences"]


def toc_files() -> list[str]:
    """Every `file:` and `root:` entry of _toc.yml, in order (read as the tools read it)."""
    return book.toc_docnames(ROOT)


def resolve(entry: str) -> Path | None:
    for suffix in ("", ".md", ".ipynb"):
        candidate = ROOT / f"{entry}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def test_every_toc_entry_exists():
    missing = [entry for entry in toc_files() if resolve(entry) is None]
    assert not missing, f"_toc.yml lists files that do not exist: {missing}"


def test_every_book_page_is_in_the_toc():
    listed = {resolve(entry) for entry in toc_files()}
    pages = {p for p in (ROOT / "book").glob("*") if p.suffix in (".md", ".ipynb")}
    orphans = sorted(p.name for p in pages - listed)
    assert not orphans, f"pages in book/ missing from _toc.yml (they would not be built): {orphans}"


def test_intro_notation_and_references_are_present():
    entries = toc_files()
    assert entries[0] == "book/intro"
    assert "book/notation" in entries and entries[-1] == "book/references"


def test_chapters_follow_the_course_order():
    chapters = [Path(e).name for e in toc_files() if re.match(r"\d\d_", Path(e).name)]
    numbers = [int(name[:2]) for name in chapters]
    assert numbers == sorted(numbers), f"chapters out of order in _toc.yml: {chapters}"
    for name in chapters:
        number = int(name[:2])
        assert CHAPTER_ORDER[number - 1] in name, (
            f"chapter file {name}: chapter {number} of the course is {CHAPTER_ORDER[number - 1]!r}")


def test_exactly_one_bibliography_directive():
    pages = [p for p in (ROOT / "book").glob("*") if p.suffix in (".md", ".ipynb")]
    count = sum(p.read_text().count("{bibliography}") for p in pages)
    assert count == 1, f"expected exactly one {{bibliography}} directive in the book, found {count}"


# The entries book/references.md names as having no link; every other entry links to a copy or a DOI.
UNLINKED_REFERENCES = {"chollet2021deep", "rothman2022transformers", "hochreiter2001gradient", "gage1994new"}


def test_every_reference_links_to_a_copy_or_a_doi():
    bib = (ROOT / "book" / "references.bib").read_text()
    entries = re.findall(r"^@\w+\{([^,]+),(.*?)^\}", bib, flags=re.S | re.M)
    assert len(entries) == len(re.findall(r"^@", bib, flags=re.M)), "an entry of references.bib was not read"
    unlinked = {key for key, body in entries if not re.search(r"^\s*(url|doi)\s*=", body, flags=re.M)}
    assert unlinked == UNLINKED_REFERENCES, (
        f"entries without url or doi: {sorted(unlinked)}; book/references.md names {sorted(UNLINKED_REFERENCES)}")


def test_repository_url_is_a_github_url():
    url = check_notebooks.repository_url()
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url), url


NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_hygiene(path):
    problems = check_notebooks.check_notebook(path)
    assert not problems, "\n".join(problems)


def _write_nb(path: Path, cells: list[dict]) -> Path:
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _code(source, count, outputs=(), tags=()):
    return {"cell_type": "code", "execution_count": count, "metadata": {"tags": list(tags)},
            "outputs": list(outputs), "source": source}


def test_hygiene_check_catches_each_problem(tmp_path):
    url = check_notebooks.repository_url()
    colab = _code(check_notebooks.colab_cell_source(url), 1, tags=["remove-cell"])
    good = [colab, _code("from transformer_course import set_seed\nrng = set_seed(0)", 2),
            _code("print(1)", 3, [{"output_type": "stream", "name": "stdout", "text": "1\n"}])]
    assert check_notebooks.check_notebook(_write_nb(tmp_path / "good.ipynb", good), url) == []

    no_install = good[1:]
    assert any("Colab install" in p for p in
               check_notebooks.check_notebook(_write_nb(tmp_path / "a.ipynb", no_install), url))
    wrong_url = [_code(check_notebooks.colab_cell_source("https://github.com/other/repo"), 1,
                       tags=["remove-cell"]), *good[1:]]
    assert any("not the Colab install cell" in p for p in
               check_notebooks.check_notebook(_write_nb(tmp_path / "b.ipynb", wrong_url), url))
    unexecuted = [colab, good[1], _code("print(1)", None)]
    assert any("never executed" in p for p in
               check_notebooks.check_notebook(_write_nb(tmp_path / "c.ipynb", unexecuted), url))
    no_seed = [colab, _code("import numpy", 2), _code("x = 1", 3), _code("print(1)", 4)]
    assert any("seeds" in p for p in
               check_notebooks.check_notebook(_write_nb(tmp_path / "d.ipynb", no_seed), url))
    abs_path = [*good[:2], _code("open('/work/main/x')", 3)]
    assert any("absolute path" in p for p in
               check_notebooks.check_notebook(_write_nb(tmp_path / "e.ipynb", abs_path), url))
    error = [*good[:2], _code("1/0", 3, [{"output_type": "error", "ename": "ZeroDivisionError",
                                          "evalue": "", "traceback": []}])]
    assert any("stored an error" in p for p in
               check_notebooks.check_notebook(_write_nb(tmp_path / "f.ipynb", error), url))


def _glued_values(nb: dict) -> dict[str, str]:
    """Every value a notebook glued, as stored (its text/plain), by name."""
    values = {}
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            for mime, text in output.get("data", {}).items():
                if mime.startswith("application/papermill.record/text/plain"):
                    values[output["metadata"]["scrapbook"]["name"]] = "".join(text)
    return values


def _significant_digits(number: str) -> int:
    mantissa = number.lower().split("e")[0].lstrip("-").replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) if "." not in number.split("e")[0] else len(mantissa)


@pytest.mark.parametrize("path", sorted((ROOT / "book").glob("*.ipynb")), ids=lambda p: p.name)
def test_glued_floats_are_stored_at_the_precision_the_prose_shows(path):
    # A float's last digits differ from one processor to the next: stored in full, they fail strict nbval on a
    # learner's machine. Glued at the precision of the text (glue's `decimals`), they are what any machine shows.
    nb = json.loads(path.read_text())
    prose = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    shown = {}                                               # name -> the most decimals a `{glue}` reference shows
    for name, decimals in re.findall(r"\{glue:?\w*\}`([\w-]+):\.(\d+)f`", prose):
        shown[name] = max(shown.get(name, 0), int(decimals))
    floats = {name: text for name, text in _glued_values(nb).items()
              if re.fullmatch(r"-?\d+\.\d+(e-?\d+)?|-?\d+e-?\d+", text)}
    too_long = {name: text for name, text in floats.items() if _significant_digits(text) > 4}
    assert not too_long, f"glued floats with more than 4 significant digits (pass glue(..., decimals=N)): {too_long}"
    finer = {name: text for name, text in floats.items()
             if name in shown and "e" not in text and len(text.split(".")[1]) > shown[name]}
    assert not finer, f"glued floats stored with more decimals than the text shows ({shown}): {finer}"


def test_significant_digits_counts_what_a_reader_would():
    assert [_significant_digits(t) for t in ("0.8761880490497608", "99.85", "0.05", "6e-06", "1.0", "46.7")] == \
        [16, 4, 1, 1, 2, 3]
