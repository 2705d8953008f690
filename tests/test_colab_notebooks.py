"""The Colab copies of the chapters (colab/ and, without solutions, colab/student/, written by tools/colab.py):
plain CommonMark, up to date, reached by every chapter page's Colab button (the student copies from the website
without solutions), and with no solution left to run on *Runtime → Run all*."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
yaml = pytest.importorskip("yaml")
markdown_it = pytest.importorskip("markdown_it")
dollarmath = pytest.importorskip("mdit_py_plugins.dollarmath")
pytest.importorskip("myst_nb")
from tools import book, colab, course_colab  # noqa: E402
from tools.book import cell_source  # noqa: E402

FIX = "run `python3 tools/run.py colab` and commit colab/"
EDITIONS = {False: "with solutions", True: "student"}     # colab_path(docname, student)
CHAPTERS = [docname for docname in book.toc_docnames() if (ROOT / f"{docname}.ipynb").exists()]
# what MyST leaves in CommonMark's rendering when it is not converted
_LEFTOVER_TEXT = re.compile(r"\{(cite|numref|ref|eq|doc|glue|term|download)[\w:-]*\}|^\([\w.:-]+\)=|:::|\{\{")


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def myst_leftovers(markdown: str) -> list[str]:
    """MyST constructs left in `markdown` as CommonMark renders it (maths and code are not prose: skipped)."""
    parser = markdown_it.MarkdownIt("commonmark").use(dollarmath.dollarmath_plugin)
    found = []

    def visit(tokens):
        for token in tokens:
            if token.type == "fence" and token.info.strip().startswith("{"):
                found.append(f"directive fence ```{token.info.strip()}")
            elif token.type in ("text", "html_inline", "html_block"):
                found.extend(m.group(0) for m in _LEFTOVER_TEXT.finditer(token.content))
            if token.children:
                visit(token.children)
    visit(parser.parse(markdown))
    return found


def test_the_leftover_check_sees_myst():
    """The check below would catch each construct, and leaves maths and code alone."""
    for myst in ["See {cite}`vaswani2017attention`.", "```{exercise}\n:label: x\nText.\n```",
                 "(my-label)=\n## Title", ":::{note}\nText\n:::", "{numref}`fig-1` shows", "{{ name }}",
                 "{glue:text}`acc:.2f`"]:
        assert myst_leftovers(myst), myst
    assert myst_leftovers("$\\text{ref}$, $$\\frac{1}{{2}}$$ and `{cite}` in code") == []


@pytest.mark.parametrize("student", EDITIONS, ids=EDITIONS.values())
def test_colab_markdown_has_no_myst_left(student):
    problems = []
    for docname in CHAPTERS:
        path = ROOT / course_colab.colab_path(docname, student)
        if not path.exists():
            problems.append(f"{path.name}: missing ({FIX})")
            continue
        for index, cell in enumerate(_load(path)["cells"]):
            if cell["cell_type"] == "markdown":
                problems += [f"{path.name}, cell {index}: {left}" for left in myst_leftovers(cell_source(cell))]
    assert not problems, "\n".join(problems)


def test_committed_colab_notebooks_are_up_to_date(tmp_path):
    written = {p.relative_to(tmp_path) for p in colab.write_colab_copies(tmp_path)}
    assert written == {p.relative_to(ROOT / colab.COLAB_DIR) for p in (ROOT / colab.COLAB_DIR).rglob("*.ipynb")}, FIX
    assert len(written) == 2 * len(CHAPTERS)
    stale = [str(p) for p in written if (tmp_path / p).read_bytes() != (ROOT / colab.COLAB_DIR / p).read_bytes()]
    assert not stale, f"stale Colab notebooks {stale}: {FIX}"


def _theme_colab_url(docname: str) -> str:
    """The Colab URL sphinx-book-theme builds for a page (header_buttons/launch.py), from _config.yml."""
    config = book.load_config()
    org, repo = config["repository"]["url"].rstrip("/").split("github.com/")[1].split("/")[:2]
    book_path = config["repository"].get("path_to_book", "").strip("/")
    path = f"{book_path}/{docname}" if book_path else docname
    colab_url = config["launch_buttons"]["colab_url"].strip("/")
    return f"{colab_url}/github/{org}/{repo}/blob/{config['repository']['branch']}/{path}.ipynb"


def _committed(paths: list[str]) -> set[str]:
    result = subprocess.run(["git", "ls-files", "--", *paths], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip("not a git checkout: cannot tell which files are committed")
    return set(result.stdout.split())


@pytest.mark.parametrize("student", EDITIONS, ids=EDITIONS.values())
def test_every_chapter_colab_button_opens_a_committed_copy(student):
    config = book.load_config()
    assert "tools.course_colab" in config["sphinx"]["local_extensions"], "_config.yml must load tools/course_colab.py"
    assert course_colab.COLAB_DIR in config["exclude_patterns"], "the book build must skip colab/"
    branch = config["repository"]["branch"]
    targets = {}
    for docname in CHAPTERS:
        url = course_colab.rewrite_colab_url(_theme_colab_url(docname), docname, student)
        targets[docname] = url.split(f"/blob/{branch}/", 1)[1]
        assert targets[docname] != f"{docname}.ipynb", f"{docname}: the button still opens the chapter itself"
        assert targets[docname].startswith("colab/student/") == student, targets[docname]
    committed = _committed(sorted(targets.values()))
    missing = {doc: path for doc, path in targets.items() if path not in committed}
    assert not missing, f"Colab buttons open notebooks that are not committed: {missing} ({FIX})"


def test_rewrite_refuses_an_unexpected_url():
    with pytest.raises(ValueError, match="url"):
        course_colab.rewrite_colab_url("https://colab.research.google.com/github/o/r/blob/main/other.ipynb",
                                       "book/03_general_attention")


def test_built_site_buttons_open_colab_copies():
    """When a built site is there (the test command builds one first), its Colab links open colab/."""
    html = ROOT / "_build" / "html"
    if not html.is_dir():
        pytest.skip("no built site in _build/html")
    links = []
    for docname in CHAPTERS:
        page = html / f"{docname}.html"
        if page.exists():
            links += re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', page.read_text())
    if not links:
        pytest.skip("the built site has no Colab links (built without launch buttons?)")
    wrong = [link for link in links if f"/{course_colab.COLAB_DIR}/" not in link
             or not (ROOT / course_colab.COLAB_DIR / link.rsplit("/", 1)[1]).exists()]
    assert not wrong, f"Colab links that do not open a Colab copy: {wrong}"


def _solution_cells(nb: dict) -> set[int]:
    """Indices of the code cells between a `solution-start` and its `solution-end` (sphinx-exercise gating)."""
    inside, found = False, set()
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            for marker in re.findall(r"\{solution-(start|end)\}", cell_source(cell)):
                inside = marker == "start"
        elif inside:
            found.add(index)
    return found


@pytest.mark.parametrize("docname", CHAPTERS)
def test_no_solution_runs_and_every_stub_and_check_stays(docname):
    book = _load(ROOT / f"{docname}.ipynb")
    copy = _load(ROOT / course_colab.colab_path(docname))
    solutions = _solution_cells(book)
    solution_sources = {cell_source(book["cells"][i]) for i in solutions}
    copy_code = [cell_source(c) for c in copy["cells"] if c["cell_type"] == "code"]
    assert not solution_sources & set(copy_code), f"{docname}: a solution is still a code cell ({FIX})"
    kept = [cell_source(c) for i, c in enumerate(book["cells"]) if c["cell_type"] == "code" and i not in solutions
            and ("remove-cell" not in c["metadata"].get("tags", []) or colab._is_colab_only_cell(c))]
    if kept and "PACKAGE_URL" in kept[0]:   # the copy's install cell installs the release (see below)
        kept[0] = course_colab.pin_install_cell(kept[0], _release_url())
    # every other code cell stays, in order: the learner's stubs and their check_* calls among them
    assert copy_code == kept, f"{docname}: the Colab copy's code cells differ from the chapter's ({FIX})"
    if solutions:  # each solution is readable in a collapsed block instead
        details = [c for c in copy["cells"] if c["cell_type"] == "markdown" and "<details>" in cell_source(c)]
        assert all(any(s.strip() in cell_source(c) for c in details) for s in solution_sources)
    assert "PACKAGE_URL" in copy_code[0], f"{docname}: the install cell must be the first code cell"


@pytest.mark.parametrize("docname", CHAPTERS)
def test_the_student_copy_is_the_copy_without_its_solutions(docname):
    copy = _load(ROOT / course_colab.colab_path(docname))
    student = _load(ROOT / course_colab.colab_path(docname, student=True))
    code = [[cell_source(c) for c in nb["cells"] if c["cell_type"] == "code"] for nb in (copy, student)]
    assert code[0] == code[1]           # the same stubs and checks, the same install cell
    text = "\n".join(cell_source(c) for c in student["cells"] if c["cell_type"] == "markdown")
    # a <details> block of the student copy is a folded detour (a {dropdown}), never a solution
    assert "<summary>Solution" not in text and "Solution to" not in text
    assert ("<summary>Solution" in "\n".join(cell_source(c) for c in copy["cells"])) == ("#### Exercise" in text)


# ------------------------------------------------------------------------------------------ the release pin

def _release_url() -> str:
    """What every Colab copy's install cell installs: the repository at the tag of pyproject.toml's version."""
    return course_colab.package_url(book.load_config()["repository"]["url"], course_colab.project_version())


def test_every_colab_copy_installs_the_current_release():
    """A notebook meets the package of its own release (`@v{version}`), never a newer default branch."""
    url = _release_url()
    assert url.endswith(f"@v{course_colab.project_version()}") and url.startswith("git+https://github.com/")
    wrong = {}
    for path in sorted((ROOT / course_colab.COLAB_DIR).rglob("*.ipynb")):      # both editions
        code = [cell_source(c) for c in _load(path)["cells"] if c["cell_type"] == "code"]
        if not code or f'os.environ.get("TC_PACKAGE_URL", "{url}")' not in code[0]:
            wrong[path.name] = re.findall(r'"(git\+[^"]*)"', code[0]) if code else "no code cell"
    assert not wrong, f"Colab copies that do not install {url}: {wrong} ({FIX})"


@pytest.mark.parametrize("text", ['[project]\nname = "x"\nversion = "1.2.3"\n[tool.x]\nversion = "9"\n',
                                  '[build-system]\nrequires = []\n\n[project]\nversion = \'1.2.3\'\n'])
def test_project_version_reads_the_project_table(tmp_path, text, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(text)
    assert course_colab.project_version(tmp_path) == "1.2.3"
    # Python 3.10 has no tomllib: the regular expression gives the same answer
    monkeypatch.setitem(sys.modules, "tomllib", None)
    assert course_colab.project_version(tmp_path) == "1.2.3"


def test_pin_install_cell_refuses_a_cell_without_the_url_line():
    with pytest.raises(ValueError, match="PACKAGE_URL"):
        course_colab.pin_install_cell("%pip install something", "git+https://example.org/r@v1")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def test_release_tags_only_a_clean_tree_whose_copies_install_the_version(tmp_path, capsys, monkeypatch):
    """`python3 tools/run.py release` in a throwaway repository: refused while the tree is dirty or a copy
    installs another version, then the annotated tag `v{version}` and the push command."""
    run = pytest.importorskip("tools.run")
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("no git")
    for variable in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(variable, "Test")
    for variable in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(variable, "test@example.org")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)   # no signing or hooks of the machine's own settings
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "repo"
    (repo / "colab").mkdir(parents=True)
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2.5.0"\n')
    cell = course_colab.pin_install_cell(
        'PACKAGE_URL = os.environ.get("TC_PACKAGE_URL", "git+https://github.com/o/r")\n', "git+https://github.com/o/r@v2.4.0")
    (repo / "colab" / "a.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": cell}]}))
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "x")
    no_python = tmp_path / "no-python"      # skips the regeneration check (tools/colab.py of this checkout)
    assert run.release(repo, no_python) == 1
    assert "does not install v2.5.0" in capsys.readouterr().out
    (repo / "colab" / "a.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": cell.replace(
        "@v2.4.0", "@v2.5.0")}]}))
    assert run.release(repo, no_python) == 1
    assert "uncommitted changes" in capsys.readouterr().out
    _git(repo, "commit", "-q", "-am", "y")
    assert run.release(repo, no_python) == 0
    assert "git push origin v2.5.0" in capsys.readouterr().out
    assert _git(repo, "cat-file", "-t", "v2.5.0").strip() == "tag"      # annotated
    assert run.release(repo, no_python) == 1
    assert "exists already" in capsys.readouterr().out
