"""The workshop kit (`python3 tools/run.py workshop`, tools/workshop.py), built for two chapters: a student
edition without solutions, an instructor edition with them, the website without solutions, the slides (opened
in Chromium), and a zip per edition."""
from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytest.importorskip("jupyter_book")
pytest.importorskip("myst_nb")
from tools import check_site, workshop  # noqa: E402

CHAPTERS = ["03_general_attention", "06_positional_encoding"]


@pytest.fixture(scope="module")
def kit(tmp_path_factory) -> Path:
    if not list(workshop.slides.SHARE.glob("reveal.js-*.tgz")):   # fetched by `tools/run.py setup` (npm)
        message = f"reveal.js is missing from {workshop.slides.SHARE}: run `python3 tools/run.py setup` (needs npm)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    out = tmp_path_factory.mktemp("workshop")
    parts = workshop.build(out, CHAPTERS)
    assert [name for name, _, _ in parts] == ["student", "instructor", "slides", "website",
                                              "transformer-course-student.zip", "transformer-course-instructor.zip"]
    return out


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _text(cell) -> str:
    return "".join(cell["source"])


def test_student_edition_has_the_exercises_without_solutions(kit):
    for name in CHAPTERS:
        book = _cells(ROOT / "book" / f"{name}.ipynb")
        student = _cells(kit / "student" / f"{name}.ipynb")
        instructor = _cells(kit / "instructor" / f"{name}.ipynb")
        student_text = "\n".join(_text(c) for c in student)
        assert "<details>" not in student_text and "Solution to" not in student_text
        assert "#### Exercise" in student_text
        assert sum("<details>" in _text(c) for c in instructor) > 0
        stubs = [_text(c) for c in book if c["cell_type"] == "code" and "NotImplementedError" in _text(c)
                 and re.search(r"check_\w+\(", _text(c))]           # a learner's stub with its check call
        student_code = [_text(c) for c in student if c["cell_type"] == "code"]
        assert stubs and all(stub in student_code for stub in stubs)   # every stub and its check stays
        # no solution code: the student's code cells are the instructor's (solutions there are Markdown)
        assert student_code == [_text(c) for c in instructor if c["cell_type"] == "code"]


def test_website_without_solutions_and_zips(kit):
    page = (kit / "website" / "book" / f"{CHAPTERS[0]}.html").read_text()
    assert 'class="exercise' in page and 'class="solution' not in page
    assert not (kit / "website" / "book" / "09_training.html").exists()   # the reduced table of contents
    for edition, folders in workshop.EDITIONS.items():
        with zipfile.ZipFile(kit / f"transformer-course-{edition}.zip") as archive:
            tops = {Path(name).parts[1] for name in archive.namelist()}
        assert tops == set(folders), edition


def test_the_kit_has_a_deck_per_chapter(kit):
    decks = sorted(p.name for p in (kit / "slides").glob("*.html") if p.name != "index.html")
    assert decks == [f"{name}.html" for name in CHAPTERS]


def test_every_deck_opens_offline_with_maths_and_figures(kit, tmp_path):
    """All the book's decks (quick to make), each opened in Chromium with a screenshot."""
    if check_site.find_chromium() is None:
        message = "Chromium is needed for the slides' browser check: apt-get install -y chromium"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    pytest.importorskip("playwright")
    decks = workshop.slides.build(tmp_path / "slides")
    problems, report = check_site.check_slides(tmp_path / "slides", ROOT / "_build" / "slides-check")
    print("\n".join(report))
    assert not problems, "\n".join(problems)
    assert len(report) - 1 == len(decks) == len(workshop.slides.chapter_notebooks(workshop.slides.build_site(ROOT)))
    for line in report[1:]:
        _name, slides, _maths, images = line.split()
        assert int(slides) >= 4 and int(images) > 0, line     # title, objectives, tagged figures, exercises
    assert len(list((ROOT / "_build" / "slides-check").glob("*.png"))) >= len(decks)


def test_unknown_chapter_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"--chapters: not in _toc.yml: book/99_nothing"):
        workshop.build(tmp_path / "kit", ["99_nothing"])
