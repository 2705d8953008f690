"""The workshop build option: `tools/run.py book --hide-solutions` leaves every solution out of the site."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools import book

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("jupyter_book")

CHAPTER = "book/03_general_attention"
# The README's test command builds the whole book (-W) before pytest runs: the normal build's page is there.
BUILT_PAGE = ROOT / "_build" / "html" / f"{CHAPTER}.html"


def _build(tmp_path: Path, config: Path) -> str:
    """The whole book built with `config` (the intro and the references link every chapter, so no page can be
    left out without a broken link); the chapter's HTML."""
    out = tmp_path / "site"
    result = subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT),
                             "--config", str(config), "--path-output", str(out), "-W", "-n", "--keep-going"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    html = (out / "_build" / "html" / f"{CHAPTER}.html").read_text()
    return html


def _text(html: str) -> str:
    """The page's text with tags removed (highlighted code is split into many spans)."""
    return re.sub(r"<[^>]+>", "", html)


def test_hidden_build_has_exercises_but_no_solutions(tmp_path):
    config = tmp_path / "_config_hidden.yml"
    config.write_text(book.config_without_solutions())
    page = _build(tmp_path, config)
    assert 'class="exercise' in page
    assert 'class="solution' not in page
    # the learner's stub cell stays; the reference solution (a gated solution around code cells) is gone
    assert _text(page).count("check_scaled_dot_product_attention(my_attention)") == 1


def _is_fresh(page: Path) -> bool:
    sources = [ROOT / f"{CHAPTER}.ipynb", ROOT / "_config.yml", ROOT / "_toc.yml"]
    return page.exists() and all(page.stat().st_mtime >= source.stat().st_mtime for source in sources)


def test_normal_build_keeps_the_solutions(tmp_path):
    # the full build's page when it is newer than its sources; a reduced build otherwise (pytest run by hand)
    page = BUILT_PAGE.read_text() if _is_fresh(BUILT_PAGE) else _build(tmp_path, ROOT / "_config.yml")
    assert 'class="solution' in page
    assert _text(page).count("check_scaled_dot_product_attention(my_attention)") == 2
