#!/usr/bin/env python3
"""Slides for a workshop: one short reveal.js deck per chapter, made from the cells the chapter tags `slide`.

A chapter marks what belongs on its slides with the cell tag `slide`:
- a Markdown cell gives its headings, display equations and lists (its key equations and summaries); a cell
  with none of these gives its first paragraph;
- a code cell gives its figures, each with the figure's caption (or, without figures, its printed output). A
  figure is the SVG that tools/slide_figures.py saved when the chapter was executed: its text kept as text
  and enlarged so that the smallest label is 18 pixels on a 1280x800 screen.
Each deck opens with the chapter's title and learning objectives and ends with its exercises, by number and
title ("Exercise 3.6 Masked softmax"). The MyST of the chapters (citations, cross-references, roles) is turned
into plain Markdown as for the Colab notebooks (tools/colab.py), then into HTML with markdown-it-py; maths, in
headings and captions too, is typeset by MathJax in the browser.

A slide is something to project, not a page to read: at most WORD_LIMIT visible words (maths excluded, the
title included). A paragraph or a caption keeps its leading sentences that fit, a list goes on over as many
slides as it needs, and a sentence that points into the notebook ("the cell above", "we check this below") is
left out. Figures are sized in reveal.js's 1280x800 canvas (FIGURE_BOX_PX), so a slide that fits there fits any
screen.

reveal.js (from the npm registry, fetched by `tools/run.py setup` into .venv/share) and MathJax (the copy the
website serves, from sphinx-mathjax-offline) are copied next to the decks, and figures are inline SVG in the
HTML, so a deck works offline from a folder or a zip.

    python -m tools.slides --out _build/workshop/slides [book/NAME.ipynb ...]   # default: the chapters of _toc.yml
"""
from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import sys
import tarfile
from pathlib import Path

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from .book import cell_source, exercise_prefix
from .colab import Context, Site, build_site, convert_markdown
from .slide_figures import FIGURE_BOX_PX, SLIDE_TAG, inline_svg, slide_svgs, stored_pngs

ROOT = Path(__file__).resolve().parent.parent
SHARE = ROOT / ".venv" / "share"   # where `tools/run.py setup` puts reveal.js's tarball (its version is set there)


def _markdown_renderer() -> MarkdownIt:
    """CommonMark + tables, with $...$ and $$...$$ kept for MathJax as \\( \\) and \\[ \\]."""
    md = MarkdownIt("commonmark").use(dollarmath_plugin, double_inline=True).enable("table")
    md.add_render_rule("math_inline", lambda self, tokens, i, options, env:
                       f"\\({html.escape(tokens[i].content)}\\)")
    md.add_render_rule("math_inline_double", lambda self, tokens, i, options, env:
                       f"\\[{html.escape(tokens[i].content)}\\]")
    md.add_render_rule("math_block", lambda self, tokens, i, options, env:
                       f"<div class=\"equation\">\\[{html.escape(tokens[i].content)}\\]</div>\n")
    md.add_render_rule("math_block_label", lambda self, tokens, i, options, env:
                       f"<div class=\"equation\">\\[{html.escape(tokens[i].content)}\\]</div>\n")
    return md


MARKDOWN = _markdown_renderer()


def _blocks(markdown: str) -> list[str]:
    """Split Markdown into blocks: paragraphs, lists, display maths ($$ ... $$ may hold blank lines)."""
    blocks, current, in_maths = [], [], False
    for line in markdown.splitlines():
        if line.count("$$") % 2:             # a display equation opens or closes on this line
            in_maths = not in_maths
        if not line.strip() and not in_maths:
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _kind(block: str) -> str:
    first = block.lstrip()
    if first.startswith("#"):
        return "heading"
    if first.startswith(("$$", "\\begin")):
        return "maths"
    if re.match(r"([-*+]|\d+\.)\s", first):
        return "list"
    if first.startswith("|"):
        return "table"
    return "paragraph"


def excerpt(markdown: str) -> tuple[str | None, list[str]]:
    """(title, body blocks) of a Markdown cell for a slide: its first heading as the title; its display
    equations, lists and tables as the body (its first paragraph when it has none)."""
    blocks = _blocks(markdown)
    title = next((b.lstrip("# ").strip() for b in blocks if _kind(b) == "heading"), None)
    kept = [b for b in blocks if _kind(b) in ("maths", "list", "table")]
    if not kept:
        kept = [b for b in blocks if _kind(b) == "paragraph"][:1]
    return title, kept


# ------------------------------------------------------------------------------------------------ slide text

WORD_LIMIT = 60         # visible words on one slide, its title included and maths excluded
_MATHS = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)
# A sentence that points into the notebook ("the cell above", "we check this below") means nothing on a slide;
# "above the diagonal" or "below zero" are about the maths and stay.
_PAGE_REFERENCE = re.compile(r"\b(?:below|above)\b(?! (?:the |its |a )?(?:diagonal|zero|one|uniform|\$))",
                             re.IGNORECASE)


def visible_words(markdown: str) -> int:
    """The words a slide shows for this Markdown: maths, link targets and markup left out."""
    text = _MATHS.sub(" ", markdown)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return len(re.findall(r"[A-Za-z0-9][\w'’.-]*", text))


def _sentences(text: str) -> list[str]:
    """Sentences of a paragraph; maths is never split."""
    spans = []

    def hide(match):
        spans.append(match.group(0))
        return f"\x01{len(spans) - 1}\x01"
    hidden = _MATHS.sub(hide, " ".join(text.split()))
    pieces = re.split(r"(?<=[.!?])\s+(?=[A-Z(*`\x01\[])", hidden)
    return [re.sub(r"\x01(\d+)\x01", lambda m: spans[int(m.group(1))], piece) for piece in pieces if piece.strip()]


def _on_a_slide(text: str, budget: int) -> str:
    """A paragraph's leading sentences that fit in `budget` words, without those that point into the page."""
    kept, used = [], 0
    for sentence in _sentences(text):
        if _PAGE_REFERENCE.search(_MATHS.sub(" ", sentence)):
            continue
        words = visible_words(sentence)
        if used + words > budget:
            break
        kept.append(sentence)
        used += words
    return " ".join(kept)


def _list_items(block: str) -> list[str]:
    items: list[str] = []
    for line in block.splitlines():
        if re.match(r"\s{0,3}([-*+]|\d+\.)\s", line) or not items:
            items.append(line.strip())
        else:
            items[-1] += " " + line.strip()
    return [re.sub(r"^([-*+]|\d+\.)\s+", "", item) for item in items]


def _units(blocks: list[str], budget: int) -> list[tuple[str, str]]:
    """The blocks as (kind, Markdown) pieces that each fit in `budget` words: list items one by one, a
    paragraph and a table cut to what fits, equations whole."""
    units = []
    for block in blocks:
        kind = _kind(block)
        if kind == "list":
            units += [("item", text) for item in _list_items(block) if (text := _on_a_slide(item, budget))]
        elif kind == "paragraph":
            text = _on_a_slide(block, budget)
            units += [("paragraph", text)] if text else []
        elif kind == "table":
            rows = block.splitlines()
            kept = rows[:2]
            for row in rows[2:]:
                if visible_words("\n".join(kept + [row])) > budget:
                    break
                kept.append(row)
            units.append(("table", "\n".join(kept)))
        else:
            units.append((kind, block))
    return units


def pack(title: str, blocks: list[str]) -> list[str]:
    """The body Markdown of each slide that `blocks` need under `title`: at most WORD_LIMIT visible words each
    (title included), a list continued on the next slide when it does not fit, at most three equations."""
    budget = WORD_LIMIT - visible_words(title)
    slides: list[list[tuple[str, str]]] = [[]]
    for kind, text in _units(blocks, budget):
        current = slides[-1]
        words = sum(visible_words(t) for _, t in current) + visible_words(text)
        equations = sum(k == "maths" for k, _ in current) + (kind == "maths")
        if current and (words > budget or equations > 3):
            slides.append([])
        slides[-1].append((kind, text))
    bodies = []
    for units in slides:
        parts: list[str] = []
        for kind, text in units:
            if kind == "item" and parts and parts[-1].startswith("- "):
                parts[-1] += "\n- " + text
            else:
                parts.append(("- " + text) if kind == "item" else text)
        bodies.append("\n\n".join(parts))
    return [body for body in bodies if body.strip()]


def _objectives(cells: list[dict]) -> str:
    """The learning objectives' list of the chapter's opening cell ('' when it has none)."""
    for cell in cells[:3]:
        text = cell_source(cell)
        if "Learning objectives" in text:
            after = text.split("Learning objectives", 1)[1]
            items = [line for line in after.splitlines() if re.match(r"\s*[-*]\s|\s{2,}\S", line)]
            return "\n".join(items)
    return ""


# an exercise's opening fence and its title (the directive's argument)
EXERCISE = re.compile(r"\{exercise(?:-start)?\}([^\n]*)\n")


def _exercise_titles(cells: list[dict], notebook: Path) -> list[str]:
    """The title of every exercise of the chapter, in order; an exercise without one is an error (the slide
    lists exercises by number and title)."""
    titles = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for match in EXERCISE.finditer(cell_source(cell)):
                if not match.group(1).strip():
                    raise ValueError(f"{notebook.name}: an exercise without a title ({{exercise}} Title)")
                titles.append(match.group(1).strip())
    return titles


def _printed(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _section(title_html: str | None, body_html: str) -> str:
    heading = f"<h3>{title_html}</h3>\n" if title_html else ""
    return f"<section>\n{heading}{body_html}\n</section>"


def _inline(markdown: str) -> str:
    """One line of Markdown as HTML, its maths left for MathJax."""
    return MARKDOWN.renderInline(markdown.strip())


PRINTED_LINES = 14      # a printed output on a slide: its first lines


def deck(notebook: Path, site: Site) -> tuple[str, str, int]:
    """(title, the deck's HTML, number of slides) of one chapter."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cells = nb["cells"]
    context = Context(site, str(notebook.resolve().relative_to(ROOT).with_suffix("")))

    def convert(markdown: str) -> str:
        return convert_markdown(markdown, context)

    def text_slides(title: str, blocks: list[str]) -> list[str]:
        return [_section(_inline(title), MARKDOWN.render(body)) for body in pack(title, blocks)]

    opening = next(c for c in cells if c["cell_type"] == "markdown")
    chapter_title = cell_source(opening).splitlines()[0].lstrip("# ").strip()
    slides = [_section(None, f"<h2>{_inline(chapter_title)}</h2>\n<p class=\"subtitle\">The Transformer, "
                       "from first principles</p>")]
    objectives = _objectives(cells)
    if objectives:
        slides += text_slides("Learning objectives", [convert(objectives)])
    section_title = chapter_title
    figure_count = 0
    for cell in cells:
        source = cell_source(cell)
        if cell["cell_type"] == "markdown":
            heading = next((line.lstrip("# ").strip() for line in source.splitlines() if line.startswith("#")), None)
            section_title = convert(heading) if heading else section_title
        if SLIDE_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        if cell["cell_type"] == "markdown":
            title, blocks = excerpt(convert(source))
            slides += text_slides(title or section_title, blocks)
            continue
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", figure.get("caption", ""))
        caption = _on_a_slide(convert(figure.get("caption", "")), WORD_LIMIT - visible_words(section_title))
        caption_html = f"<p class=\"caption\">{_inline(caption)}</p>" if caption else ""
        if stored_pngs(cell):
            svgs = slide_svgs(notebook, cell)
            if svgs is None:
                raise ValueError(f"{notebook.name}: the slide figures of cell {cell.get('id')} are missing or come "
                                 f"from another run than its stored outputs; execute the chapter again "
                                 f"(python -m tools.execute_notebooks {notebook.relative_to(ROOT)})")
            for svg in svgs:
                figure_count += 1
                image = inline_svg(svg, f"f{figure_count}", alt)
                slides.append(_section(_inline(section_title), f"{image}\n{caption_html}"))
        elif _printed(cell):
            printed = "\n".join(_printed(cell).rstrip().splitlines()[:PRINTED_LINES])
            slides.append(_section(_inline(section_title), f"<pre>{html.escape(printed)}</pre>"))
        else:
            raise ValueError(f"{notebook.name}: a code cell tagged {SLIDE_TAG!r} has no figure or printed output "
                             f"(stored outputs missing? first line: {source.splitlines()[0]!r})")
    titles = _exercise_titles(cells, notebook)
    if titles:
        prefix = exercise_prefix(context.docname, site.titles[context.docname])   # "Exercise 3.6", as everywhere
        items = "\n".join(f"- **Exercise {prefix}.{k}** {title}" for k, title in enumerate(titles, start=1))
        slides += text_slides("Exercises", [items])
    page = PAGE.format(title=html.escape(chapter_title), slides="\n".join(slides), box_width=FIGURE_BOX_PX[0],
                       box_height=FIGURE_BOX_PX[1])
    return chapter_title, page, len(slides)


PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="reveal/reveal.css">
<link rel="stylesheet" href="reveal/theme/white.css">
<style>
  .reveal section {{ font-size: 0.72em; }}
  .reveal h2 {{ font-size: 1.9em; }}
  .reveal h3 {{ font-size: 1.2em; text-transform: none; }}
  /* sizes in the 1280x800 canvas that reveal.js scales to the screen: a slide fits any screen it fits here */
  /* figures: inline SVG, sized by tools/slide_figures.py to fit FIGURE_BOX_PX of this canvas */
  .reveal svg.figure {{ display: block; margin: 0.2em auto; max-width: {box_width}px; max-height: {box_height}px;
                       background: white; }}
  .reveal .caption {{ font-size: 0.75em; color: #333; margin: 0.2em 4%; }}
  .reveal .subtitle {{ color: #555; }}
  .reveal pre {{ font-size: 0.5em; box-shadow: none; }}
  .reveal ul, .reveal ol {{ display: block; text-align: left; }}
  .reveal .equation {{ font-size: 0.9em; }}
</style>
<script>
  window.MathJax = {{ tex: {{ inlineMath: [["\\\\(", "\\\\)"]], displayMath: [["\\\\[", "\\\\]"]] }} }};
</script>
<script src="mathjax/tex-chtml.js"></script>
</head>
<body>
<div class="reveal"><div class="slides">
{slides}
</div></div>
<script src="reveal/reveal.js"></script>
<script>
  // A display equation wider than its slide is typeset smaller until it fits (MathJax does not break lines).
  function fitEquations(slide) {{
    if (!slide) return;
    const room = slide.getBoundingClientRect().width;
    for (const equation of slide.querySelectorAll('mjx-container[display="true"]')) {{
      equation.style.fontSize = '';
      const need = equation.firstElementChild.getBoundingClientRect().width;
      if (need > 0.97 * room) equation.style.fontSize = `${{Math.floor(9500 * room / need) / 100}}%`;
    }}
  }}
  Reveal.initialize({{ hash: true, slideNumber: true, width: 1280, height: 800, transition: 'none' }}).then(() =>
    MathJax.startup.promise.then(() => {{
      Reveal.on('slidechanged', event => fitEquations(event.currentSlide));
      fitEquations(Reveal.getCurrentSlide());
    }}));
</script>
</body>
</html>
"""


def _mathjax_dir() -> Path:
    """The MathJax build that sphinx-mathjax-offline installs (it serves the website's maths too)."""
    import sysconfig
    folder = Path(sysconfig.get_paths()["purelib"]) / "sphinx-mathjax-offline" / "static" / "mathjax"
    if not (folder / "tex-chtml.js").exists():
        raise FileNotFoundError(f"MathJax: {folder} is missing; run this with the course's environment "
                                "(.venv/bin/python, set up by `python3 tools/run.py setup`)")
    return folder


def copy_assets(out: Path) -> None:
    """reveal.js's script, style sheets and fonts, and MathJax's TeX-to-HTML build with its fonts, into out/."""
    tarballs = sorted(SHARE.glob("reveal.js-*.tgz"))
    if not tarballs:
        raise FileNotFoundError(f"reveal.js: no reveal.js-*.tgz in {SHARE}; `python3 tools/run.py setup` fetches it "
                                "from the npm registry (needs npm)")
    tarball = tarballs[-1]
    reveal = out / "reveal"
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            name = member.name.removeprefix("package/")
            if member.isfile() and (name in ("dist/reveal.js", "dist/reveal.css", "dist/theme/white.css", "LICENSE")
                                    or name.startswith("dist/theme/fonts/")):
                target = reveal / name.removeprefix("dist/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.extractfile(member).read())
    source = _mathjax_dir()
    mathjax = out / "mathjax"
    mathjax.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "tex-chtml.js", mathjax / "tex-chtml.js")
    shutil.copytree(source / "output" / "chtml" / "fonts", mathjax / "output" / "chtml" / "fonts", dirs_exist_ok=True)


def chapter_notebooks(site: Site) -> list[Path]:
    """The notebook pages of _toc.yml, in order."""
    return [ROOT / f"{name}.ipynb" for name in site.docnames if (ROOT / f"{name}.ipynb").exists()]


def build(out: Path, notebooks: list[Path] | None = None) -> list[tuple[str, str, int]]:
    """Write one deck per notebook (default: every chapter) and an index into `out`; return (file name, title,
    slides) per deck."""
    site = build_site(ROOT)
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    decks = []
    for notebook in notebooks or chapter_notebooks(site):
        title, page, count = deck(notebook, site)
        name = notebook.with_suffix(".html").name
        (out / name).write_text(page, encoding="utf-8")
        decks.append((name, title, count))
    links = "\n".join(f"<li><a href=\"{name}\">{html.escape(title)}</a> ({count} slides)</li>"
                      for name, title, count in decks)
    (out / "index.html").write_text(f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Slides"
                                    f"</title></head><body><h1>Slides</h1><ul>\n{links}\n</ul></body></html>\n",
                                    encoding="utf-8")
    return decks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "workshop" / "slides")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every chapter of _toc.yml")
    args = parser.parse_args(argv)
    try:
        decks = build(args.out, args.notebooks)
    except (FileNotFoundError, ValueError) as err:
        print(f"slides: error: {err}", file=sys.stderr)
        return 2
    for name, title, count in decks:
        print(f"{name:40s} {count:3d} slides  {title}")
    print(f"wrote {len(decks)} decks into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
