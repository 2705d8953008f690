"""The website as a reader sees it: every built page opened in headless Chromium (tools/check_site.py).

The README's test command builds the book (-W) before pytest runs, so `_build/html` is fresh here; when it is
missing (pytest run by hand) the book is built first. Without Chromium the test fails in CI and skips
elsewhere, saying how to install it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import check_site

ROOT = Path(__file__).resolve().parent.parent
HTML = ROOT / "_build" / "html"

pytest.importorskip("playwright")  # the browser check's driver (requirements.txt installs it)


@pytest.fixture(scope="module")
def built_site() -> Path:
    if check_site.find_chromium() is None:
        message = "Chromium is needed for the browser check: apt-get install -y chromium (or set TC_CHROMIUM)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    if not (HTML / "index.html").exists():
        pytest.importorskip("jupyter_book")
        subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", "."], cwd=ROOT, check=True,
                       capture_output=True)
    return HTML


def test_every_page_renders_for_a_reader(built_site):
    # Without screenshots: full-page screenshots of every page in both themes take two thirds of the check's
    # time and assert nothing (`python -m tools.check_site` makes them for a person to look at).
    problems, report = check_site.check_site(built_site, ROOT / "_build" / "site-check", screenshots=False)
    print("\n".join(report))
    assert not problems, "\n".join(problems)


def _break_copy(site: Path, tmp_path: Path) -> tuple[Path, str]:
    """A copy of the site with one page broken on purpose in six ways."""
    from PIL import Image

    copy = tmp_path / "html"
    shutil.copytree(site, copy)
    Image.new("RGBA", (40, 20), (0, 0, 0, 0)).save(copy / "_images" / "see-through.png")
    Image.new("RGB", (400, 20), "white").save(copy / "_images" / "wide-diagram.png")
    page = "book/notation.html"
    html = (copy / page).read_text()
    html = html.replace("tex-chtml.js", "missing-mathjax.js")  # MathJax fails to load: maths stays raw TeX
    broken = ('<img src="../_images/no-such-figure.png" alt="gone">'
              '<img src="../_images/see-through.png" alt="a figure without a background">'
              # declared 2000 px wide: the text column shrinks it far below its declared width
              '<img src="../_images/wide-diagram.png" alt="a wide diagram" style="width: 2000px;">'
              '<div class="cell"><div class="output traceback"><pre>Traceback (most recent call last)\n'
              'ZeroDivisionError: division by zero</pre></div></div>'
              '<a href="intro.html#no-such-anchor">a dead anchor</a>')
    html = html.replace('<section id="shapes">', broken + '<section id="shapes">', 1)
    (copy / page).write_text(html)
    return copy, page


def test_the_check_fails_on_a_page_broken_on_purpose(built_site, tmp_path):
    copy, page = _break_copy(built_site, tmp_path)
    problems, _ = check_site.check_site(copy, tmp_path / "out", pages=[page])
    text = "\n".join(problems)
    assert "raw TeX left unrendered" in text
    assert "no-such-figure.png did not load" in text
    assert "error output shown to readers" in text and "ZeroDivisionError" in text
    assert "no element with id 'no-such-anchor'" in text
    assert "see-through.png has a transparent background" in text
    assert "wide-diagram.png is shown" in text and "its text falls under 10 px" in text
    assert "the dark theme was not applied" not in text
    # the screenshots a person looks at: one per theme, and the contact sheet
    assert (tmp_path / "out" / "contact_sheet.png").stat().st_size > 0
    assert len(list((tmp_path / "out" / "screenshots-dark").glob("*.png"))) == 1


def test_every_page_states_the_licence():
    if not (HTML / "index.html").exists():
        pytest.skip("the site is not built (python3 tools/run.py test builds it first)")
    pages = sorted(HTML.glob("book/*.html")) + [HTML / "search.html"]
    missing = [str(page.relative_to(HTML)) for page in pages
               if "creativecommons.org/licenses/by/4.0/" not in page.read_text() or "MIT" not in page.read_text()]
    assert not missing, f"pages without the licence in their footer: {missing}"
