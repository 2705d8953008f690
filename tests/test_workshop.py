"""The workshop kit (`python3 tools/run.py workshop`, tools/workshop.py), built for two chapters: a student
edition without solutions, an instructor edition with them, the website without solutions, the slides (opened
in Chromium), and a zip per edition; nothing a student receives holds a solution (with a planted leak that the
search must find), and the student zip installs and runs at home, offline."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import sysconfig
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
    assert [name for name, _, _ in parts] == ["student", "instructor", "slides", "wheels", "website",
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
        assert "<summary>Solution" not in student_text and "Solution to" not in student_text
        assert "#### Exercise" in student_text
        assert sum("<summary>Solution" in _text(c) for c in instructor) > 0
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
    for edition, names in workshop.EDITIONS.items():
        with zipfile.ZipFile(kit / f"transformer-course-{edition}.zip") as archive:
            tops = {Path(name).parts[1] for name in archive.namelist()}
        assert tops == set(names), edition


def test_the_student_website_offers_no_route_to_a_solution(kit):
    """No page sources (the whole chapter notebooks), no download button, no repository link; every Colab
    button opens a student copy, which exists."""
    site = kit / "website"
    assert not (site / "_sources").exists() and not list(site.rglob("*.ipynb"))
    for name in CHAPTERS:
        page = (site / "book" / f"{name}.html").read_text()
        for route in ("btn-download", "_sources", "btn-source-repository-button", "/blob/main/book/"):
            assert route not in page, (name, route)
        colab = re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page)
        assert colab and all(link.endswith(f"/colab/student/{name}.ipynb") for link in colab), colab
        assert (ROOT / "colab" / "student" / f"{name}.ipynb").is_file()


def _snippets() -> dict[str, str]:
    return workshop.solution_snippets(sorted((ROOT / "colab").glob("*.ipynb")))


def test_a_dropdown_is_not_a_solution(tmp_path):
    """Only a solution's collapsed block ("Solution to ...") holds solution snippets: a page's dropdown, also a
    <details> block in the Colab copies, is what every student reads."""
    detour = "the detour explains how the kernel width is chosen by leaving one sample out"
    answer = "the answer divides every score by the square root of the key width"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": text} for text in (
        f"<details>\n<summary>Why the width</summary>\n\n{detour}.\n\n</details>",
        f"<details>\n<summary>Solution to Exercise 3.1</summary>\n\n{answer}.\n\n</details>")]
    copy = tmp_path / "03_general_attention.ipynb"
    copy.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    snippets = workshop.solution_snippets([copy])
    assert answer in snippets and detour not in snippets


def test_nothing_a_student_receives_holds_a_solution(kit):
    """Every code line of 25 characters or more and every sentence of six words or more that only a solution
    holds, searched in the student notebooks, the student website (pages and search index), the student zip
    and the student Colab copies of every chapter. The build searched its own kit already; this searches
    again, with the solutions of every chapter."""
    snippets = _snippets()
    assert len(snippets) > 200             # every chapter's solutions, code and prose
    files = workshop.student_files([kit / "student", kit / "website", kit / "transformer-course-student.zip",
                                    ROOT / "colab" / "student"])
    assert any(name.endswith("searchindex.js") for name in files)
    assert sum(name.endswith(".ipynb") for name in files) >= 2 * len(CHAPTERS) + 10
    assert workshop.find_leaks(snippets, files) == []


def test_a_planted_solution_is_found(kit, tmp_path):
    """The control: a solution code line in a student notebook, a solution sentence in a page of the student
    website and one inside the zip are each reported, with the file and the solution they come from."""
    snippets = _snippets()
    chapter3 = {snippet: where for snippet, where in snippets.items() if where.startswith(CHAPTERS[0])}
    instructor = json.loads((kit / "instructor" / f"{CHAPTERS[0]}.ipynb").read_text())
    solution = next(workshop._DETAILS.search(c) for c in ("".join(c["source"]) for c in instructor["cells"])
                    if workshop._DETAILS.search(c))
    code_line = next(line for language, code in workshop._FENCE.findall(solution.group(1)) if language == "python"
                     for line in code.splitlines() if workshop.words(line) in chapter3)
    prose = workshop._FENCE.sub("\n\n", solution.group(1))
    sentence = next(s for s in re.split(r"(?<=[.!?])\s+|\n\s*\n", prose)
                    if workshop.words(s) in chapter3 and len(s.split()) >= 10)
    planted = tmp_path / "kit"
    shutil.copytree(kit / "student", planted / "student")
    shutil.copytree(kit / "website" / "book", planted / "website")
    notebook = planted / "student" / f"{CHAPTERS[0]}.ipynb"
    nb = json.loads(notebook.read_text())
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": f"    {code_line.strip()}\n"})
    notebook.write_text(json.dumps(nb))
    page = planted / "website" / f"{CHAPTERS[1]}.html"
    page.write_text(page.read_text().replace("</body>", f"<p><em>{sentence}</em></p></body>"))
    with zipfile.ZipFile(planted / "kit.zip", "w") as archive:
        archive.writestr("transformer-course-workshop/notes.md", f"A hint: {code_line}")
    leaks = workshop.find_leaks(snippets, workshop.student_files(
        [planted / "student", planted / "website", planted / "kit.zip"]))
    assert len(leaks) == 3, leaks
    assert {line.split(":")[0].rsplit("/", 1)[-1] for line in leaks} == {notebook.name, page.name, "kit.zip"}
    assert all(f"the solution in {CHAPTERS[0]}.ipynb, cell" in line for line in leaks)


def _installed_packages_except_the_course(tmp_path: Path) -> Path:
    """A folder that shows this environment's installed packages, the course's own excepted (links, no copies)."""
    site_packages = Path(sysconfig.get_paths()["purelib"])
    overlay = tmp_path / "site-packages-overlay"
    overlay.mkdir()
    for entry in site_packages.iterdir():
        if not entry.name.startswith(("transformer_course", "__editable__")) and entry.suffix != ".pth":
            (overlay / entry.name).symlink_to(entry)
    return overlay


def test_the_student_zip_installs_and_runs_at_home(kit, tmp_path):
    """Unzipped into an empty folder, its README's Linux steps without a network, as written, with one
    addition: the new virtual environment also sees this test environment's installed packages (a .pth file),
    so the wheelhouse needs only the course's own wheel. The package installs from the zip's wheel, imports
    from outside any checkout, and an exercise check runs."""
    with zipfile.ZipFile(kit / "transformer-course-student.zip") as archive:
        archive.extractall(tmp_path)
    home = tmp_path / "transformer-course-workshop"
    readme = (home / "README.md").read_text()
    offline = readme.split("**Linux, without a network**", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    steps = offline.strip().splitlines()
    assert steps[0] == "python3 -m venv .venv" and "doctor" in steps[2] and steps[3].endswith("jupyter lab student")
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    subprocess.run(["bash", "-c", steps[0].replace("python3", sys.executable)], cwd=home, check=True)
    venv_site = next((home / ".venv" / "lib").glob("python3*/site-packages"))
    # venv's own old setuptools gives way to this environment's newer one (PyTorch needs it), as a wheelhouse's would
    for bundled in venv_site.iterdir():
        if bundled.is_dir() and bundled.name.startswith(("setuptools", "pkg_resources", "_distutils_hack")):
            shutil.rmtree(bundled)
        elif bundled.name == "distutils-precedence.pth":
            bundled.unlink()
    (venv_site / "test-environment.pth").write_text(f"{_installed_packages_except_the_course(tmp_path)}\n")
    install = steps[1].replace("WHEELHOUSE", str(wheelhouse))
    assert install.startswith(".venv/bin/python -m pip install --no-index ")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONPATH": ""}
    result = subprocess.run(["bash", "-c", install], cwd=home, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    probe = ("import pathlib, transformer_course\nfrom transformer_course.exercises import check_masked_softmax\n"
             "print(pathlib.Path(transformer_course.__file__).parent)\n"
             "def my_masked_softmax(scores, mask):\n    raise NotImplementedError\n"
             "check_masked_softmax(my_masked_softmax)\n")
    result = subprocess.run([str(home / ".venv" / "bin" / "python"), "-c", probe], cwd=home, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert str(home / ".venv") in result.stdout and str(ROOT) not in result.stdout.splitlines()[0]
    assert "not attempted yet" in result.stdout
    notebooks = sorted(p.name for p in (home / "student").glob("*.ipynb"))
    assert notebooks == [f"{name}.ipynb" for name in CHAPTERS]


def test_the_kit_has_a_deck_per_chapter(kit):
    decks = sorted(p.name for p in (kit / "slides").glob("*.html") if p.name != "index.html")
    assert decks == [f"{name}.html" for name in CHAPTERS]


def test_every_deck_opens_offline_with_maths_and_figures(kit, tmp_path):
    """All the book's decks (quick to make), every slide shown in Chromium at 1280x800 and 1920x1080 with a
    screenshot: nothing cut, no raw TeX, at most 60 words, no "the cell below" (tools/check_site.py)."""
    if check_site.find_chromium() is None:
        message = "Chromium is needed for the slides' browser check: apt-get install -y chromium"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    pytest.importorskip("playwright")
    decks = workshop.slides.build(tmp_path / "slides")
    shutil.rmtree(ROOT / "_build" / "slides-check", ignore_errors=True)
    problems, report = check_site.check_slides(tmp_path / "slides", ROOT / "_build" / "slides-check")
    print("\n".join(report))
    assert not problems, "\n".join(problems)
    assert len(report) - 1 == len(decks) == len(workshop.slides.chapter_notebooks(workshop.slides.build_site(ROOT)))
    slides_in_all = 0
    for line in report[1:]:
        _name, slides, _maths, figures, words, label_px, _script_px = line.split()
        assert int(slides) >= 4 and int(figures) > 0, line    # title, objectives, tagged figures, exercises
        assert 0 < int(words) <= check_site.SLIDE_WORD_LIMIT, line
        assert float(label_px) >= check_site.SLIDE_LABEL_PX - 0.05, line   # measured at 1280x800
        slides_in_all += int(slides)
    # every slide at both sizes, the screenshots kept
    shots = list((ROOT / "_build" / "slides-check").glob("*_s[0-9][0-9].jpg"))
    assert len(shots) >= slides_in_all * len(check_site.SLIDE_SIZES)


def test_the_slide_check_finds_a_slide_spoilt_on_purpose(kit, tmp_path):
    """The control: raw TeX (and "\\_" inside \\text{}), 70 words, a pointer to "the cell below", a box wider than
    the screen and a figure whose label is 10 px on the screen, planted in one slide of a deck, are each reported
    at both sizes (the label is 13 px at 1920x1080); a raster image planted in another deck is reported; the
    other slides are not."""
    if check_site.find_chromium() is None:
        pytest.skip("Chromium is needed for the slides' browser check")
    shutil.copytree(kit / "slides", tmp_path / "slides")
    deck = tmp_path / "slides" / f"{CHAPTERS[0]}.html"
    filler = " ".join(["word"] * 60)
    planted = (f"<section><h3>Planted</h3><p>Why divide by $\\sqrt{{d_k}}$? The cell below shows it. {filler} "
               "\\(\\text{warm\\_up}\\)</p>"
               '<div style="width: 2000px; height: 20px; background: red"></div>'
               '<svg class="figure" role="img" aria-label="planted" width="200" height="50" viewBox="0 0 200 50">'
               '<text x="10" y="30" style="font-size: 10.4px">tiny label</text></svg></section>\n')
    deck.write_text(deck.read_text().replace("<section>", planted + "<section>", 1))
    raster = tmp_path / "slides" / f"{CHAPTERS[1]}.html"
    raster.write_text(raster.read_text().replace("</section>", '<img src="data:image/png;base64,iVBORw0KGgo'
                                                 'AAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0g'
                                                 'AAAABJRU5ErkJggg==" alt="planted raster"></section>', 1))
    for other in (tmp_path / "slides").glob("*.html"):
        if other not in (deck, raster, tmp_path / "slides" / "index.html"):
            other.unlink()
    problems, _ = check_site.check_slides(tmp_path / "slides", tmp_path / "shots")
    in_deck = [line for line in problems if line.startswith(deck.name)]
    assert all(", slide 0 ('Planted" in line for line in in_deck), in_deck
    for size in ("1280x800", "1920x1080"):
        found = " ".join(line for line in in_deck if f" at {size}," in line)
        assert "words (at most 60)" in found and "raw TeX" in found and "points into the notebook" in found
        assert "warm\\\\_up" in found                        # a macro MathJax typeset as typed, inside \text{}
        assert "cut at the edge of the screen" in found
        assert "a figure's text 'tiny label' is" in found
        assert [line for line in problems if line.startswith(f"{raster.name} at {size}: 1 raster images")]
    assert not [line for line in problems if line.startswith(raster.name) and "raster" not in line], problems


def test_unknown_chapter_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"--chapters: not in _toc.yml: book/99_nothing"):
        workshop.build(tmp_path / "kit", ["99_nothing"])


def test_a_book_build_keeps_the_workshop_kit(tmp_path):
    """`run.py book`, `book --hide-solutions` and `test` empty _build/ before building, except the kit."""
    run = pytest.importorskip("tools.run")
    for folder in ("html", ".doctrees", "workshop/website"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "page.html").write_text("x")
    (tmp_path / "_config_hide_solutions.yml").write_text("x")
    run.clean_build_folder(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in sorted(tmp_path.rglob("*"))] == [
        "workshop", "workshop/website", "workshop/website/page.html"]


def test_a_dropdown_is_folded_in_colab_and_left_out_of_the_walk_through():
    """A page's dropdown (a detour) becomes a collapsed <details> block in the Colab copies, and the workshop's
    walk-through counts only the words outside it (the study times count all of them)."""
    from tools import agenda, colab

    site = colab.build_site(ROOT)
    context = colab.Context(site, "book/03_general_attention", solutions=False)
    folded = colab.convert_markdown("Main line.\n\n:::{dropdown} Why it works\nA long detour here.\n:::\n", context)
    assert "<details>\n<summary>Why it works</summary>" in folded and "A long detour here." in folded
    assert agenda.main_line(folded).split() == ["Main", "line."]
    # Colab renders no Markdown inside <summary>: the title's emphasis becomes a tag, its maths stays for MathJax
    titled = colab.convert_markdown(":::{dropdown} German *null* and $x_i$ with $y_j$\nText.\n:::\n", context)
    assert "<summary>German <em>null</em> and $x_i$ with $y_j$</summary>" in titled


def test_the_agendas_are_up_to_date_and_leave_slack():
    """The guide's agendas (tools/agenda.py, included from book/generated/) are what the decks, the student
    copies and the measured run times give now; the full day leaves at least 45 minutes of slack, the half day
    at least 15, and every timed block names exercises that exist."""
    from tools import agenda

    chapters = agenda.chapters()
    text, slack = agenda.render(chapters)
    assert agenda.OUT.read_text(encoding="utf-8") == text, "stale: run `.venv/bin/python -m tools.agenda`"
    assert slack["full day"] >= 45 and slack["half day"] >= 15, slack
    assert "{include} generated/workshop_agenda.md" in (ROOT / "book" / "workshop_guide.md").read_text()
    # the rule, checked on one block by hand: chapter 3 with one widget question and one coding exercise
    block = agenda.Block("03_general_attention", "", ("ex-ad-softmax", "ex-03-masked-softmax"))
    chapter = chapters["03_general_attention"]
    parts = agenda.block_minutes(block, chapters)
    assert parts["lecture"] == chapter.slides and parts["exercises"] == 5 + 15
    assert parts["code"] == math.ceil(chapter.seconds * 4 / 60) and parts["walk-through"] > 0
    assert parts["total"] % 5 == 0 and parts["total"] - 5 < sum(v for k, v in parts.items() if k != "total")
