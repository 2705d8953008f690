"""The website as a reader sees it: every built page opened in headless Chromium (tools/check_site.py).

The README's test command builds the book (-W) before pytest runs, so `_build/html` is fresh here; when it is
missing (pytest run by hand) the book is built first. Without Chromium the test fails in CI and skips
elsewhere, saying how to install it.
"""
from __future__ import annotations

import json
import os
import re
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


def test_an_exercise_has_the_same_name_on_the_website_and_in_its_colab_copy():
    """Sphinx numbers exercises across the book; tools/course_solutions.py renumbers them per page, as the
    notebooks do ("Exercise 3.6", "Exercise D.2")."""
    if not (HTML / "index.html").exists():
        pytest.skip("the site is not built (python3 tools/run.py test builds it first)")
    pages = 0
    for copy in sorted((ROOT / "colab").glob("*.ipynb")):
        cells = json.loads(copy.read_text())["cells"]
        in_notebook = [m for c in cells if c["cell_type"] == "markdown"
                       for m in re.findall(r"^#### (Exercise [A-Z0-9]+\.\d+)", "".join(c["source"]), re.M)]
        page = (HTML / "book" / copy.with_suffix(".html").name).read_text()
        on_website = re.findall(r'<p class="admonition-title"><span class="caption-number">(Exercise [^<]*?) </span>',
                                page)
        assert on_website == in_notebook, copy.name
        pages += bool(in_notebook)
    assert pages >= 10
    guide = (HTML / "book" / "workshop_guide.html").read_text()
    colab3 = "".join("".join(c["source"]) for c in json.loads((ROOT / "colab" / "03_general_attention.ipynb")
                                                               .read_text())["cells"])
    masked_softmax = re.search(r"#### (Exercise 3\.\d+): Masked softmax", colab3).group(1)
    assert masked_softmax in guide and "Exercise D.1" in guide     # the guide's agenda names it so
    assert "ex-03-" not in re.sub(r'(href|id)="[^"]*"', "", guide)


# --- Appendix D's flip books: the widgets' kernel-free twins, moved in the browser --------------------------

APPENDIX = "book/a4_widgets.html"
MAX_PAGE_BYTES = 3_000_000   # the page's HTML, with every drawing of every flip book inline

# Runs in the page. Per flip book and per control: fire the control's events without moving it (the drawing must
# stay), move it one step (a drawing must change, and load), move it back (the first drawing must return). Then
# every setting of the flip book, one after the other: each must show a drawing that decodes.
_FLIP_JS = r"""
async () => {
  const shown = book => [...book.querySelectorAll('img[data-panel]')].map(img => img.getAttribute('src'));
  const same = (a, b) => a.length === b.length && a.every((src, i) => src === b[i]);
  const fire = input => {
    for (const type of ['input', 'change']) input.dispatchEvent(new Event(type, {bubbles: true}));
  };
  const read = input => input.type === 'checkbox' ? input.checked : input.value;
  const write = (input, value) => {
    if (input.type === 'checkbox') { input.checked = value; } else { input.value = value; }
  };
  const size = input => input.type === 'checkbox' ? 2 : input.tagName === 'SELECT' ? input.options.length
                                                                                  : Number(input.max) + 1;
  const step = input => {
    if (input.type === 'checkbox') return !input.checked;
    const at = Number(input.value);
    return String(at + 1 < size(input) ? at + 1 : at - 1);
  };
  const loaded = async book => {
    for (const img of book.querySelectorAll('img[data-panel]')) {
      if (!(img.getAttribute('src') || '').startsWith('data:image/')) return false;
      try { await img.decode(); } catch (error) { return false; }
      if (!(img.naturalWidth > 0)) return false;
    }
    return true;
  };
  const books = [];
  for (const book of document.querySelectorAll('.tc-flipbook')) {
    const inputs = [...book.querySelectorAll('[data-control]')];
    const entry = {id: book.id, ready: book.getAttribute('data-ready') === '1', controls: [], settings: 0,
                   panels: book.querySelectorAll('img[data-panel]').length, broken: [], distinct: 0};
    for (const input of inputs) {
      const label = input.closest('label').textContent.trim().slice(0, 40);
      const before = shown(book), original = read(input), alt = book.querySelector('img').alt;
      fire(input);
      const kept = same(shown(book), before);
      write(input, step(input));
      fire(input);
      const after = shown(book);
      const moved = read(input) !== original, changed = !same(after, before);
      const ok = await loaded(book), altChanged = book.querySelector('img').alt !== alt;
      write(input, original);
      fire(input);
      entry.controls.push({label, kept, moved, changed, loaded: ok, altChanged, restored: same(shown(book), before)});
    }
    const originals = inputs.map(read), sizes = inputs.map(size), seen = new Set();
    const total = sizes.reduce((a, b) => a * b, 1);
    for (let n = 0; n < total; n++) {
      let rest = n;
      inputs.forEach((input, i) => {
        const k = rest % sizes[i];
        rest = Math.floor(rest / sizes[i]);
        write(input, input.type === 'checkbox' ? k === 1 : String(k));
      });
      fire(inputs[0]);
      seen.add(shown(book).join(' '));
      if (!(await loaded(book))) entry.broken.push(n);
      entry.settings += 1;
    }
    entry.distinct = seen.size;
    inputs.forEach((input, i) => write(input, originals[i]));
    fire(inputs[0]);
    books.push(entry);
  }
  return books;
}
"""


def _appendix_widgets() -> int:
    """How many live widgets the appendix notebook shows: each must have a flip book on the website."""
    cells = json.loads((ROOT / "book" / "a4_widgets.ipynb").read_text())["cells"]
    return sum("application/vnd.jupyter.widget-view+json" in output.get("data", {})
               for cell in cells for output in cell.get("outputs", []))


def _flip_book_problems(site: Path) -> tuple[list[dict], list[str]]:
    """Open Appendix D in `site` and work every flip book's controls: (what each flip book did, problems)."""
    from playwright.sync_api import sync_playwright

    with check_site.serve(site) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=check_site.find_chromium(),
                                             args=check_site.CHROMIUM_ARGS)
        page = browser.new_page()
        outside: list[str] = []
        page.on("request", lambda request: None if request.url.startswith((base, "data:"))
                else outside.append(request.url))
        page.goto(base + APPENDIX, wait_until="load")
        books = page.evaluate(_FLIP_JS)
        browser.close()
    problems = [f"requested a resource outside the site: {url}" for url in outside]
    checks = {"moved": "the control did not move", "kept": "events without a move changed the drawing",
              "changed": "moving it left the drawing as it was", "loaded": "the new drawing did not load",
              "altChanged": "the alt text does not follow", "restored": "moving it back did not restore the drawing"}
    for book in books:
        if not book["ready"]:
            problems.append(f"{book['id']}: its script did not run")
        if not book["controls"]:
            problems.append(f"{book['id']}: a flip book without controls")
        for control in book["controls"]:
            problems += [f"{book['id']}, {control['label']!r}: {what}" for key, what in checks.items()
                         if not control[key]]
        if book["broken"]:
            problems.append(f"{book['id']}: settings {book['broken'][:10]} show no drawing")
        if book["distinct"] != book["settings"]:
            problems.append(f"{book['id']}: {book['settings']} settings show {book['distinct']} distinct drawings")
    return books, problems


def test_appendix_d_flip_books_work_in_the_browser_without_a_kernel(built_site):
    """Every widget of Appendix D has a flip book on the built page; each of its controls, moved, changes the
    drawing (and fired without moving, does not); every setting shows a drawing; nothing comes from outside."""
    page_path = built_site / APPENDIX
    notebook = ROOT / "book" / "a4_widgets.ipynb"
    assert page_path.stat().st_mtime >= notebook.stat().st_mtime, \
        "the built site is older than book/a4_widgets.ipynb: rebuild it (python3 tools/run.py book)"
    assert page_path.stat().st_size < MAX_PAGE_BYTES, f"{APPENDIX}: {page_path.stat().st_size:,} bytes"
    expected = _appendix_widgets()
    assert expected >= 6
    books, problems = _flip_book_problems(built_site)
    print("\n".join(f"{b['id']}: {len(b['controls'])} controls, {b['panels']} panels, {b['settings']} settings, "
                    f"{b['distinct']} distinct views" for b in books))
    assert len(books) == expected, f"{len(books)} flip books on the page for {expected} widgets"
    assert sum(len(b["controls"]) for b in books) >= 2 * expected      # the test moved controls, many of them
    labels = [control["label"] for b in books for control in b["controls"]]
    assert any("padding mask" in label for label in labels) and any("pad on the" in label for label in labels)
    assert not problems, "\n".join(problems)


def test_the_flip_book_check_fails_on_flip_books_broken_on_purpose(built_site, tmp_path):
    """A copy of the page (alone: styles and MathJax are not needed here) with two flip books broken: the first
    ignores its controls, the second has a setting whose drawing is missing."""
    html = (built_site / APPENDIX).read_text()
    listeners = 'root.addEventListener("input", update);\n  root.addEventListener("change", update);'
    assert html.count(listeners) == _appendix_widgets()
    html = html.replace(listeners, "", 1)
    first = html.index('class="tc-flipbook-data">')
    second = html.index('class="tc-flipbook-data">', first + 1)
    at = html.index('"index":{"', second) + len('"index":{"')
    key_end = html.index('":', at)
    value_end = html.index(",", key_end)
    html = html[:key_end + 2] + "99999" + html[value_end:]                # its first setting: no such drawing
    (tmp_path / "book").mkdir()
    (tmp_path / APPENDIX).write_text(html)
    _, problems = _flip_book_problems(tmp_path)
    text = "\n".join(problems)
    assert "moving it left the drawing as it was" in text and "moving it back" not in text
    assert re.search(r"settings \[0\b.* show no drawing", text), text    # the first setting, and others like it
    assert len({problem.split(",")[0].split(":")[0] for problem in problems}) == 2, text   # only the two broken
