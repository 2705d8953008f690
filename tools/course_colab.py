"""Sphinx extension: every chapter page's Colab button opens the chapter's Colab copy, `colab/NAME.ipynb`, or on
the website without solutions (`course_hide_solutions`, the workshop's student website) the student copy,
`colab/student/NAME.ipynb`, which has no solutions either.

sphinx-book-theme builds the Colab URL from `repository.url`, the branch and the page's own path
(`.../blob/main/book/NAME.ipynb`). The chapters in `book/` hold MyST markup that Colab shows as raw text, and
their solution cells would run on *Run all*; `tools/colab.py` writes a Colab-ready copy of each chapter to
`colab/`, and this extension points the button there. A page whose copy is missing is a build warning (which
fails `-W`): run `python3 tools/run.py colab`.

The module imports nothing from Sphinx at the top, so tools/colab.py and the tests can use its path mapping,
and only the standard library, so tools/run.py can use the install cell's release pin (`release`).
"""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

COLAB_DIR = "colab"
STUDENT_DIR = "student"     # colab/student/: the copies without solutions
ROOT = Path(__file__).resolve().parent.parent


def colab_path(docname: str, student: bool = False) -> str:
    """The repository path of a page's Colab copy: "book/06_positional_encoding" -> "colab/06_....ipynb", or
    with student=True "colab/student/06_....ipynb"."""
    folder = f"{COLAB_DIR}/{STUDENT_DIR}" if student else COLAB_DIR
    return f"{folder}/{PurePosixPath(docname).name}.ipynb"


def project_version(root: Path = ROOT) -> str:
    """The package's version, `[project] version` of pyproject.toml (tomllib on Python 3.11+, else a regex)."""
    text = (root / "pyproject.toml").read_text()
    try:
        import tomllib
    except ModuleNotFoundError:   # Python 3.10: the [project] table's own `version = "..."` line
        table = re.search(r"^\[project\][ \t]*$(.*?)(?=^\[|\Z)", text, flags=re.MULTILINE | re.DOTALL)
        match = table and re.search(r"^version\s*=\s*[\"']([^\"']+)[\"']", table.group(1), flags=re.MULTILINE)
        if not match:
            raise ValueError("pyproject.toml: no `version = \"...\"` in the [project] table") from None
        return match.group(1)
    return tomllib.loads(text)["project"]["version"]


def package_url(repository_url: str, version: str) -> str:
    """What Colab's install cell installs: the repository at the release's tag, `git+URL@v0.1.0`."""
    return f"git+{repository_url.rstrip('/')}@v{version}"


_INSTALL_URL = re.compile(r'(PACKAGE_URL = os\.environ\.get\("TC_PACKAGE_URL", )"[^"]*"')


def pin_install_cell(source: str, url: str) -> str:
    """The install cell's source with the package URL it falls back to (outside a test) replaced by `url`."""
    pinned, count = _INSTALL_URL.subn(lambda match: f'{match.group(1)}"{url}"', source)
    if count != 1:
        raise ValueError('the install cell has no `PACKAGE_URL = os.environ.get("TC_PACKAGE_URL", "...")` line '
                         "(tools/check_notebooks.py --fix-colab-cell writes it)")
    return pinned


def rewrite_colab_url(url: str, docname: str, student: bool = False) -> str:
    """The theme's Colab URL for page `docname`, pointed at the page's Colab copy instead of the chapter.

    The theme ends the URL with the page's path relative to the repository (`path_to_book` is empty here);
    a URL that does not end so raises ValueError, since the button would silently open the wrong file.
    """
    source = f"/{docname}.ipynb"
    if not url.endswith(source):
        raise ValueError(f"url: expected a Colab URL ending in {source!r}, got {url!r}")
    return url[: -len(source)] + "/" + colab_path(docname, student)


def _point_colab_button_at_copy(app, pagename, templatename, context, doctree):
    from sphinx.util import logging

    student = bool(getattr(app.config, "course_hide_solutions", False))   # tools/course_solutions.py's switch
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if button.get("text") != "Colab":
                continue
            button["url"] = rewrite_colab_url(button["url"], pagename, student)
            copy = colab_path(pagename, student)
            if not (Path(app.srcdir) / copy).is_file():
                logging.getLogger(__name__).warning(
                    f"{pagename}: no Colab copy {copy} (run `python3 tools/run.py colab`)")


def setup(app):
    # the theme adds the launch buttons at priority 501; the template renders them after every handler
    app.connect("html-page-context", _point_colab_button_at_copy, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
