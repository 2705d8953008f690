#!/usr/bin/env python3
"""Check the built website as a reader sees it: every page opened in headless Chromium (via Playwright).

For every page of `_build/html` it asserts on the rendered DOM:
- maths rendered by the locally served MathJax (no raw `\\(`, `\\[` or `$$` left in the text);
- every image loaded (natural width > 0) and described (alt text or a figure caption);
- no error or traceback output, except in cells tagged `raises-exception`;
- chapter pages: the Colab launch link, exercise boxes, solutions present and collapsed;
- headings in order (one H1, no skipped level); every internal link and #anchor resolves;
and that the search page returns results for "attention". The site is served from 127.0.0.1 only, and
Chromium runs with background networking off, so the check also proves that pages need no network.

A second pass opens every page with images in the theme's dark mode and asserts that the dark theme is applied,
that every image is opaque (its corners carry no transparency that the dark page would show through), and that
an image with a declared display width (the 2x diagrams) is not shrunk below 80% of it, which would take their
smallest text (9 pt at 100 dpi, 12.5 px) under 10 px.

Artefacts under OUT (default `_build/site-check/`): a screenshot per page (light theme), one per page with
images in the dark theme (screenshots-dark/), a contact sheet of all pages, and report.txt (page weights, the
dark pass's image widths, problems).

    python -m tools.check_site [--html _build/html] [--out _build/site-check]
    python -m tools.check_site --slides _build/workshop/slides [--out _build/slides-check]   # the workshop's decks
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import itertools
import os
import re
import shutil
import sys
import threading
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                 "--disable-background-networking", "--disable-component-update"]
CHAPTER_PAGE = re.compile(r"^book/(\d\d_|a\d_)")  # numbered chapters and appendices (notebooks)


def find_chromium() -> str | None:
    """The system Chromium (Debian's `chromium`), or TC_CHROMIUM if set."""
    if os.environ.get("TC_CHROMIUM"):
        return os.environ["TC_CHROMIUM"]
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class _IdCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)


@functools.cache
def _ids_of(path: Path) -> frozenset[str]:
    parser = _IdCollector()
    parser.feed(path.read_text(errors="replace"))
    return frozenset(parser.ids)


@contextmanager
def serve(directory: Path):
    """Serve `directory` on 127.0.0.1 on a free port for the duration of the block."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output readable
        pass


_REDIRECT = re.compile(r'http-equiv="refresh"\s+content="\d+;\s*url=([^"]+)"', re.IGNORECASE)


def site_pages(html_dir: Path) -> list[str]:
    """Every content page of the site (relative paths); redirect stubs (index.html) are left out."""
    pages = []
    for path in sorted(html_dir.rglob("*.html")):
        relative = path.relative_to(html_dir)
        if relative.parts[0].startswith("_") or relative.name in ("genindex.html", "search.html"):
            continue
        if _REDIRECT.search(path.read_text(errors="replace")[:2000]):
            continue
        pages.append(relative.as_posix())
    return pages


def check_redirects(html_dir: Path) -> list[str]:
    """Redirect stubs must point at a page that exists."""
    problems = []
    for path in html_dir.glob("*.html"):
        match = _REDIRECT.search(path.read_text(errors="replace")[:2000])
        if match and not (path.parent / match.group(1).split("#")[0]).exists():
            problems.append(f"{path.name}: redirects to a missing page {match.group(1)!r}")
    return problems


# A macro that MathJax typesets as the characters typed: inside \text{} it reads text only, so "\_" stays "\_"
# (a backslash among a text's characters, each an <mjx-c> named by its code point, or in an <mjx-utext>).
_TYPED_MACROS_JS = r"""
  const typedMacros = root => {
  const typed = [];
  for (const text of root.querySelectorAll('mjx-mtext, mjx-utext')) {
    const chars = text.tagName === 'MJX-UTEXT' ? text.textContent : [...text.querySelectorAll('mjx-c')].map(c => {
      const code = (c.className.match(/mjx-c([0-9A-F]+)/) || [])[1];
      return code ? String.fromCodePoint(parseInt(code, 16)) : '';
    }).join('');
    if (chars.includes('\\')) typed.push(chars);
  }
  return typed;
  };
"""

# Runs in the page: collects everything the Python side asserts on.
_INSPECT_JS = r"""
async () => {""" + _TYPED_MACROS_JS + r"""
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const article = document.querySelector('article') || document.body;
  const text = article.innerText;
  const raw = [];
  for (const pattern of ['\\(', '\\)', '\\[', '$$', '\\begin{']) {
    const at = text.indexOf(pattern);
    if (at >= 0) raw.push(text.slice(Math.max(0, at - 30), at + 40).replace(/\s+/g, ' '));
  }
  raw.push(...typedMacros(article));
  const images = [...article.querySelectorAll('img')].map(img => ({
    src: img.getAttribute('src'), loaded: img.complete && img.naturalWidth > 0,
    alt: (img.getAttribute('alt') || '').trim(),
    caption: !!(img.closest('figure') && img.closest('figure').querySelector('figcaption')),
  }));
  const errors = [...article.querySelectorAll('.output.traceback, .output.error, .output.stderr')]
    .filter(node => {
      const cell = node.closest('.cell');
      if (cell && cell.classList.contains('tag_raises-exception')) return false;
      if (node.classList.contains('stderr')) return /Traceback|Error|Warning/.test(node.innerText);
      return true;
    })
    .map(node => node.innerText.slice(0, 160));
  const headings = [...article.querySelectorAll('h1, h2, h3, h4, h5, h6')]
    .filter(h => !h.closest('.admonition'))
    .map(h => Number(h.tagName[1]));
  const links = [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'));
  const colab = !!document.querySelector('a[href*="colab.research.google.com/github/"]');
  const exercises = article.querySelectorAll('.exercise').length;
  const solutions = [...article.querySelectorAll('.solution')].map(s => {
    const body = s.querySelector('section, .admonition-title ~ *');
    return {visible: !!(body && body.offsetParent !== null && body.getBoundingClientRect().height > 0)};
  });
  const mathNodes = article.querySelectorAll('.math, mjx-container').length;
  const rendered = article.querySelectorAll('mjx-container').length;
  return {raw, images, errors, headings, links, colab, exercises, solutions, mathNodes, rendered};
}
"""


# Runs in the page in dark mode: the theme in force and, per image, its corners' opacity and its widths.
_DARK_JS = r"""
async () => {
  const article = document.querySelector('article') || document.body;
  const images = [];
  for (const img of article.querySelectorAll('img')) {
    if (!img.complete || img.naturalWidth === 0) continue;
    const w = img.naturalWidth, h = img.naturalHeight;
    const canvas = document.createElement('canvas');
    canvas.width = w;
    canvas.height = h;
    const context = canvas.getContext('2d');
    context.drawImage(img, 0, 0);
    let opaque = true;
    for (const [x, y] of [[0, 0], [w - 1, 0], [0, h - 1], [w - 1, h - 1], [w >> 1, 0], [0, h >> 1]]) {
      if (context.getImageData(x, y, 1, 1).data[3] < 255) opaque = false;
    }
    images.push({src: img.getAttribute('src'), opaque, natural: w,
                 shown: img.getBoundingClientRect().width, declared: parseFloat(img.style.width) || null});
  }
  return {theme: document.documentElement.dataset.theme, images};
}
"""
MIN_SHOWN = 0.8  # a diagram drawn for its declared width may be shown no smaller than this fraction of it


def check_dark_page(page: str, info: dict) -> list[str]:
    problems = []
    if info["theme"] != "dark":
        problems.append(f"{page}: the dark theme was not applied (data-theme={info['theme']!r})")
    for image in info["images"]:
        if not image["opaque"]:
            problems.append(f"{page}: image {image['src']} has a transparent background (unreadable in the "
                            "dark theme: draw it on an opaque background)")
        if image["declared"] and image["shown"] < MIN_SHOWN * image["declared"]:
            problems.append(f"{page}: image {image['src']} is shown {image['shown']:.0f} px wide for a declared "
                            f"{image['declared']:.0f} px: its text falls under 10 px")
    return problems


def _check_links(page: str, html_dir: Path, links: list[str]) -> list[str]:
    problems = []
    base = f"http://site/{page}"
    for href in links:
        if not href or href.startswith(("mailto:", "javascript:")):
            continue
        url = urljoin(base, href)
        parsed = urlparse(url)
        if parsed.netloc != "site":
            continue  # external link (GitHub, Colab, doi): not followed, the site must work offline
        path, anchor = urldefrag(unquote(parsed.path))
        target = html_dir / path.lstrip("/")
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"{page}: link {href!r} points to a missing file")
            continue
        anchor = unquote(urlparse(url).fragment)
        if anchor and target.suffix == ".html" and anchor not in _ids_of(target):
            problems.append(f"{page}: link {href!r}: no element with id {anchor!r} in {target.name}")
    return problems


def check_page(page: str, info: dict, html_dir: Path) -> list[str]:
    problems = []
    for snippet in info["raw"]:
        problems.append(f"{page}: raw TeX left unrendered: ...{snippet}...")
    if info["mathNodes"] and not info["rendered"]:
        problems.append(f"{page}: has maths but MathJax rendered none of it")
    for image in info["images"]:
        if not image["loaded"]:
            problems.append(f"{page}: image {image['src']} did not load")
        if not image["alt"] and not image["caption"]:
            problems.append(f"{page}: image {image['src']} has neither alt text nor a caption")
    for text in info["errors"]:
        problems.append(f"{page}: error output shown to readers: {text!r}")
    levels = info["headings"]
    if levels.count(1) != 1:
        problems.append(f"{page}: expected exactly one H1, found {levels.count(1)}")
    for before, after in itertools.pairwise(levels):
        if after > before + 1:
            problems.append(f"{page}: heading level jumps from H{before} to H{after}")
            break
    if CHAPTER_PAGE.match(page):
        if not info["colab"]:
            problems.append(f"{page}: no 'open in Colab' launch link")
        if page.startswith("book/0") and info["exercises"] == 0:
            problems.append(f"{page}: a chapter page without exercise boxes")
        if info["exercises"] and not info["solutions"]:
            problems.append(f"{page}: exercises without solutions")
        if any(s["visible"] for s in info["solutions"]):
            problems.append(f"{page}: a solution is shown expanded (solutions must start collapsed)")
    problems += _check_links(page, html_dir, info["links"])
    return list(dict.fromkeys(problems))  # one line per distinct problem


def contact_sheet(shots: list[Path], out: Path, thumb_width: int = 320, columns: int = 5) -> Path:
    """One image holding a thumbnail of the top of every page, labelled, so a reviewer sees the whole site."""
    from PIL import Image, ImageDraw

    thumbs = []
    for shot in shots:
        with Image.open(shot) as image:
            image = image.crop((0, 0, image.width, min(image.height, int(image.width * 1.3))))
            image.thumbnail((thumb_width, int(thumb_width * 1.3)))
            thumbs.append((shot.stem, image.copy()))
    rows = (len(thumbs) + columns - 1) // columns
    cell_h = int(thumb_width * 1.3) + 22
    sheet = Image.new("RGB", (columns * (thumb_width + 10) + 10, rows * (cell_h + 10) + 10), "white")
    draw = ImageDraw.Draw(sheet)
    for index, (name, image) in enumerate(thumbs):
        x = 10 + (index % columns) * (thumb_width + 10)
        y = 10 + (index // columns) * (cell_h + 10)
        draw.text((x, y), name[:48], fill="black")
        sheet.paste(image, (x, y + 18))
        draw.rectangle((x - 1, y + 17, x + image.width, y + 18 + image.height), outline="#999999")
    sheet.save(out)
    return out


def check_site(html_dir: Path, out_dir: Path, screenshots: bool = True,
               pages: list[str] | None = None) -> tuple[list[str], list[str]]:
    """Open every page (or only `pages`); return (problems, report lines). RuntimeError if no Chromium."""
    from playwright.sync_api import sync_playwright

    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("Chromium not found: install Debian's `chromium` (apt-get install -y chromium) "
                           "or set TC_CHROMIUM to a Chromium binary")
    html_dir = Path(html_dir).resolve()
    out_dir = Path(out_dir)
    (out_dir / "screenshots").mkdir(parents=True, exist_ok=True)
    (out_dir / "screenshots-dark").mkdir(parents=True, exist_ok=True)
    problems: list[str] = check_redirects(html_dir)
    report = [f"{'page':<44s} {'requests':>8s} {'weight (kB)':>12s} {'maths':>6s} {'images':>6s}"]
    shots: list[Path] = []
    with_images: list[str] = []
    with serve(html_dir) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        for page_name in pages or site_pages(html_dir):
            page = context.new_page()
            weights: list[int] = []
            outside: list[str] = []

            def on_request(request, _outside=outside):
                if not request.url.startswith(base) and not request.url.startswith("data:"):
                    _outside.append(request.url)

            def on_response(response, _weights=weights):
                with contextlib.suppress(Exception):  # redirects and aborted requests have no body
                    _weights.append(len(response.body()))

            page.on("request", on_request)
            page.on("response", on_response)
            page.goto(base + page_name, wait_until="load")
            info = page.evaluate(_INSPECT_JS)
            problems += check_page(page_name, info, html_dir)
            if info["images"]:
                with_images.append(page_name)
            for url in outside:
                problems.append(f"{page_name}: requested a resource outside the site (needs network): {url}")
            report.append(f"{page_name:<44s} {len(weights):>8d} {sum(weights) / 1024:>12.0f} "
                          f"{info['rendered']:>6d} {len(info['images']):>6d}")
            if screenshots:
                shot = out_dir / "screenshots" / (page_name.replace("/", "__").removesuffix(".html") + ".png")
                page.screenshot(path=str(shot), full_page=True)
                shots.append(shot)
            page.close()
        problems += _dark_pass(browser, base, with_images, out_dir if screenshots else None, report)
        # Search: the static index must find the course's central word.
        page = context.new_page()
        page.goto(base + "search.html?q=attention", wait_until="load")
        try:
            page.wait_for_selector("#search-results li", timeout=15000)
            hits = page.locator("#search-results li").count()
        except Exception:
            hits = 0
        if hits == 0:
            problems.append("search.html?q=attention: no results")
        report.append(f"search for 'attention': {hits} results")
        page.close()
        browser.close()
    total = sum(p.stat().st_size for p in html_dir.rglob("*") if p.is_file())
    report.append(f"site size on disk: {total / 1e6:.1f} MB in {sum(1 for _ in html_dir.rglob('*'))} files")
    if screenshots and shots:
        contact_sheet(shots, out_dir / "contact_sheet.png")
        report.append(f"screenshots: {out_dir / 'screenshots'}; contact sheet: {out_dir / 'contact_sheet.png'}")
    (out_dir / "report.txt").write_text("\n".join(report + ["", "problems:"] + (problems or ["none"])) + "\n")
    return problems, report


def _dark_pass(browser, base: str, pages: list[str], out_dir: Path | None, report: list[str]) -> list[str]:
    """Open `pages` in the theme's dark mode (the reader's choice is kept in localStorage, as the theme's
    switch does); return the problems, append each image's widths to `report`, screenshot into out_dir."""
    problems: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark")
    context.add_init_script("localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');")
    report.append("")
    report.append(f"dark theme: {'page':<44s} {'image':<28s} {'natural':>7s} {'declared':>8s} {'shown':>6s}")
    for page_name in pages:
        page = context.new_page()
        page.goto(base + page_name, wait_until="load")
        info = page.evaluate(_DARK_JS)
        problems += check_dark_page(page_name, info)
        for image in info["images"]:
            declared = f"{image['declared']:.0f}" if image["declared"] else "-"
            src = "(data URI)" if image["src"].startswith("data:") else Path(image["src"]).name[:24]
            report.append(f"dark theme: {page_name:<44s} {src:<28s} "
                          f"{image['natural']:>7d} {declared:>8s} {image['shown']:>6.0f}")
        if out_dir is not None:
            shot = out_dir / "screenshots-dark" / (page_name.replace("/", "__").removesuffix(".html") + ".png")
            page.screenshot(path=str(shot), full_page=True)
        page.close()
    context.close()
    return problems


_DECK_JS = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const text = document.querySelector('.reveal .slides').textContent;   // hidden slides too
  const images = [...document.querySelectorAll('.reveal img')].map(i => ({alt: i.alt, width: i.naturalWidth}));
  const figures = [...document.querySelectorAll('.reveal svg.figure')].map(f => ({
      label: f.getAttribute('aria-label') || '', texts: f.querySelectorAll('text').length}));
  return {slides: document.querySelectorAll('.reveal .slides > section').length,
          ready: !!document.querySelector('.reveal.ready'),
          maths: document.querySelectorAll('mjx-container').length,
          errors: (text.match(/Traceback|Error:/g) || []).length, images, figures};
}
"""

# One slide, shown: its words outside maths and printouts, raw TeX or Markdown left in its text, sentences that
# point into a notebook, and every element that reaches outside reveal.js's scaled canvas (cut on the screen).
_SLIDE_JS = r"""
async (index) => {""" + _TYPED_MACROS_JS + r"""
  Reveal.slide(index);
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const slide = Reveal.getCurrentSlide();
  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT, {acceptNode: node =>
      node.parentElement.closest('mjx-container, pre, script, style, svg') ? NodeFilter.FILTER_REJECT
                                                                     : NodeFilter.FILTER_ACCEPT});
  let text = '';
  while (walker.nextNode()) { text += walker.currentNode.textContent + ' '; }
  const canvas = document.querySelector('.reveal .slides').getBoundingClientRect();
  const cut = [...slide.querySelectorAll('*')].filter(element => {
    if (element.closest('mjx-assistive-mml')) return false;     // MathJax's copy for screen readers, clipped
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && (box.top < canvas.top - 2 || box.bottom > canvas.bottom + 2 ||
                                               box.left < canvas.left - 2 || box.right > canvas.right + 2);
  }).map(element => element.tagName.toLowerCase());
  // the smallest label inside the slide's figures, in screen pixels: a font size times the scale from its SVG's
  // units to the screen (the SVG's viewBox and reveal.js's scaling of the canvas both count). A label typeset as
  // maths is a <text> of <tspan>s: its size is that of its largest glyphs, as sub- and superscripts are set
  // smaller by design; the smallest of those is reported too.
  const px = element => {
    const ctm = element.getScreenCTM();
    return parseFloat(getComputedStyle(element).fontSize) * Math.hypot(ctm.a, ctm.b);
  };
  let smallest = null, script = null;
  for (const label of slide.querySelectorAll('svg.figure text')) {
    if (label.getBoundingClientRect().width === 0 || !label.textContent.trim()) continue;
    const spans = [...label.querySelectorAll('tspan')].filter(span => span.textContent.trim());
    const sizes = spans.length ? spans.map(px) : [px(label)];
    const size = Math.max(...sizes), text = label.textContent.trim().replace(/\s+/g, ' ').slice(0, 30);
    if (smallest === null || size < smallest.px) smallest = {px: size, text};
    if (script === null || Math.min(...sizes) < script) script = Math.min(...sizes);
  }
  if (smallest) smallest.script = script;
  return {words: (text.match(/[A-Za-z0-9][\w'’.-]*/g) || []).length, smallest,
          raw: typedMacros(slide).concat(text.match(/\$|\\[a-zA-Z]+|\*\*|`/g) || []),
          references: text.match(new RegExp('\\b(cells?|listing|code|printout|output|assertion|exercises)\\b' +
                                            '[^.]{0,40}\\b(below|above)\\b|\\b(below|above)\\s*[.:]|' +
                                            '\\b(below|above) the (figure|cell|listing|table)', 'gi')) || [],
          cut: [...new Set(cut)], text: text.replace(/\s+/g, ' ').trim().slice(0, 80)};
}
"""

SLIDE_SIZES = ((1280, 800), (1920, 1080))   # a laptop's window and a 1080p projector
SLIDE_WORD_LIMIT = 60
SLIDE_LABEL_PX = 18     # the smallest text in a slide's figure, in screen pixels, at every size


def check_slides(slides_dir: Path, out_dir: Path) -> tuple[list[str], list[str]]:
    """Open every deck of tools/slides.py (served from slides_dir, no network) at each of SLIDE_SIZES: reveal.js
    started, every formula typeset by the bundled MathJax, every figure an SVG with its text kept as text and a
    label for screen readers (no raster image), no error output; then every slide shown in turn, with a
    screenshot each (`DECK_WIDTHxHEIGHT_sNN.jpg`, NN from 0): at most SLIDE_WORD_LIMIT words outside maths, no
    raw TeX or Markdown, no "the cell below", nothing cut at the canvas's edges, no text in a figure under
    SLIDE_LABEL_PX screen pixels (a label typeset as maths counts its largest glyphs: sub- and superscripts are
    smaller by design). Returns (problems, report lines; at the first size, each deck's smallest figure label
    and smallest sub- or superscript, in screen pixels)."""
    from playwright.sync_api import sync_playwright

    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("Chromium not found: install Debian's `chromium` (apt-get install -y chromium)")
    slides_dir, out_dir = Path(slides_dir).resolve(), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    decks = sorted(p.name for p in slides_dir.glob("*.html") if p.name != "index.html")
    problems = [] if decks else [f"{slides_dir}: no decks"]
    report = [f"{'deck':<36s} {'slides':>6s} {'maths':>6s} {'figures':>7s} {'words':>6s} {'label px':>8s} "
              f"{'script px':>9s}"]
    with serve(slides_dir) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for width, height in SLIDE_SIZES:
            context = browser.new_context(viewport={"width": width, "height": height})
            for deck in decks:
                page = context.new_page()
                outside: list[str] = []
                page.on("request", lambda request, _outside=outside: None if request.url.startswith((base, "data:"))
                        else _outside.append(request.url))
                page.goto(f"{base}{deck}", wait_until="load")
                info = page.evaluate(_DECK_JS)
                where = f"{deck} at {width}x{height}"
                if not info["ready"]:
                    problems.append(f"{where}: reveal.js did not start")
                if info["errors"]:
                    problems.append(f"{where}: error output on a slide")
                if info["images"]:
                    problems.append(f"{where}: {len(info['images'])} raster images; slide figures are SVG")
                for figure in info["figures"]:
                    if not figure["texts"] or not figure["label"]:
                        problems.append(f"{where}: a figure without text kept as text or without a label "
                                        f"({figure['label'][:40]!r})")
                problems += [f"{where}: requested a resource outside the deck's folder: {url}" for url in outside]
                most, smallest, script = 0, None, None
                for index in range(info["slides"]):
                    slide = page.evaluate(_SLIDE_JS, index)
                    page.screenshot(path=str(out_dir / f"{deck[:-5]}_{width}x{height}_s{index:02d}.jpg"), quality=80)
                    most = max(most, slide["words"])
                    at = f"{where}, slide {index} ({slide['text'][:40]!r})"
                    label = slide["smallest"]
                    if label is not None:
                        smallest = label["px"] if smallest is None else min(smallest, label["px"])
                        script = label["script"] if script is None else min(script, label["script"])
                        if label["px"] < SLIDE_LABEL_PX - 0.05:
                            problems.append(f"{at}: a figure's text {label['text']!r} is {label['px']:.1f} px "
                                            f"(at least {SLIDE_LABEL_PX})")
                    if slide["words"] > SLIDE_WORD_LIMIT:
                        problems.append(f"{at}: {slide['words']} words (at most {SLIDE_WORD_LIMIT})")
                    if slide["raw"]:
                        problems.append(f"{at}: raw TeX or Markdown {slide['raw'][:3]}")
                    if slide["references"]:
                        problems.append(f"{at}: points into the notebook: {slide['references'][:2]}")
                    if slide["cut"]:
                        problems.append(f"{at}: cut at the edge of the screen: {slide['cut'][:4]}")
                if (width, height) == SLIDE_SIZES[0]:
                    report.append(f"{deck:<36s} {info['slides']:>6d} {info['maths']:>6d} {len(info['figures']):>7d} "
                                  f"{most:>6d} {'-' if smallest is None else f'{smallest:.1f}':>8s} "
                                  f"{'-' if script is None else f'{script:.1f}':>9s}")
                page.close()
            context.close()
        browser.close()
    return problems, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", default=str(ROOT / "_build" / "html"))
    parser.add_argument("--slides", type=Path, help="check these decks instead (tools/slides.py), every slide")
    parser.add_argument("--out", help="where screenshots go (default _build/site-check or _build/slides-check)")
    args = parser.parse_args(argv)
    if args.slides:
        problems, report = check_slides(args.slides, Path(args.out or ROOT / "_build" / "slides-check"))
    else:
        problems, report = check_site(Path(args.html), Path(args.out or ROOT / "_build" / "site-check"))
    print("\n".join(report))
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
