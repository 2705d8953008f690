#!/usr/bin/env python3
"""Slides for a workshop: one short reveal.js deck per chapter, made from the cells the chapter tags `slide`.

A chapter marks what belongs on its slides with the cell tag `slide`:
- a Markdown cell gives its headings, display equations and lists (its key equations and summaries); a cell
  with none of these gives its first paragraph;
- a code cell gives its figures, each with the figure's caption (or, without figures, its printed output).
Each deck opens with the chapter's title and learning objectives and ends with the first sentence of each
of the chapter's exercises. The
MyST of the chapters (citations, cross-references, roles) is turned into plain Markdown as for the Colab
notebooks (tools/colab.py), then into HTML with markdown-it-py; maths is typeset by MathJax in the browser.

reveal.js (from the npm registry, fetched by `tools/run.py setup` into .venv/share) and MathJax (the copy the
website serves, from sphinx-mathjax-offline) are copied next to the decks, and figures are embedded in the
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

ROOT = Path(__file__).resolve().parent.parent
SHARE = ROOT / ".venv" / "share"   # where `tools/run.py setup` puts reveal.js's tarball (its version is set there)
SLIDE_TAG = "slide"



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
        if line.strip().startswith("$$") and not (line.strip().endswith("$$") and len(line.strip()) > 2):
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


def excerpt(markdown: str) -> tuple[str | None, str]:
    """(title, body Markdown) of a Markdown cell for a slide: its first heading as the title; its display
    equations, lists and tables as the body (its first paragraph when it has none)."""
    blocks = _blocks(markdown)
    title = next((b.lstrip("# ").strip() for b in blocks if _kind(b) == "heading"), None)
    kept = [b for b in blocks if _kind(b) in ("maths", "list", "table")]
    if not kept:
        kept = [b for b in blocks if _kind(b) == "paragraph"][:1]
    return title, "\n\n".join(kept)


def _objectives(cells: list[dict]) -> str:
    """The learning objectives' list of the chapter's opening cell ('' when it has none)."""
    for cell in cells[:3]:
        text = cell_source(cell)
        if "Learning objectives" in text:
            after = text.split("Learning objectives", 1)[1]
            items = [line for line in after.splitlines() if re.match(r"\s*[-*]\s|\s{2,}\S", line)]
            return "\n".join(items)
    return ""


# an exercise's opening fence, its options (:label: ...), the closing fence of an exercise-start, its first line
EXERCISE = re.compile(r"\{exercise(?:-start)?\}[^\n]*\n((?::[^\n]*\n)*)(?:`{3,}\n)?\s*([^\n]+(?:\n(?!`{3})[^\n]+)*)")


def _exercises(cells: list[dict]) -> list[str]:
    """The first sentence of every exercise of the chapter (the exercises have no titles)."""
    firsts = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for match in EXERCISE.finditer(cell_source(cell)):
                paragraph = " ".join(match.group(2).split())
                sentence = re.split(r"(?<=[.?!:])\s", paragraph, maxsplit=1)[0]
                firsts.append(sentence if len(sentence) <= 140 else sentence[:137].rsplit(" ", 1)[0] + " ...")
    return firsts


def _figures(cell: dict) -> list[str]:
    return [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]


def _printed(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def _section(title: str | None, body_html: str, *, small: bool = False) -> str:
    heading = f"<h3>{html.escape(title)}</h3>\n" if title else ""
    opening = '<section class="small">' if small else "<section>"
    return f"{opening}\n{heading}{body_html}\n</section>"


def deck(notebook: Path, site: Site) -> tuple[str, str, int]:
    """(title, the deck's HTML, number of slides) of one chapter."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    cells = nb["cells"]
    context = Context(site, str(notebook.resolve().relative_to(ROOT).with_suffix("")))

    def convert(markdown: str) -> str:
        return convert_markdown(markdown, context)
    opening = next(c for c in cells if c["cell_type"] == "markdown")
    chapter_title = cell_source(opening).splitlines()[0].lstrip("# ").strip()
    slides = [_section(None, f"<h2>{html.escape(chapter_title)}</h2>\n<p class=\"subtitle\">The Transformer, "
                       "from first principles</p>")]
    objectives = _objectives(cells)
    if objectives:
        slides.append(_section("Learning objectives", MARKDOWN.render(convert(objectives)), small=True))
    section_title = chapter_title
    for cell in cells:
        source = cell_source(cell)
        if cell["cell_type"] == "markdown":
            heading = next((line.lstrip("# ").strip() for line in source.splitlines() if line.startswith("#")), None)
            section_title = heading or section_title
        if SLIDE_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        if cell["cell_type"] == "markdown":
            title, body = excerpt(source)
            slides.append(_section(title or section_title, MARKDOWN.render(convert(body))))
            continue
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", figure.get("caption", ""))
        images = _figures(cell)
        if images:
            for png in images:
                caption = f"<p class=\"caption\">{html.escape(figure['caption'])}</p>" if figure.get("caption") else ""
                slides.append(_section(section_title, f"<img src=\"data:image/png;base64,{png.strip()}\" "
                                                      f"alt=\"{html.escape(alt, quote=True)}\">\n{caption}"))
        elif _printed(cell):
            slides.append(_section(section_title, f"<pre>{html.escape(_printed(cell).rstrip())}</pre>"))
        else:
            raise ValueError(f"{notebook.name}: a code cell tagged {SLIDE_TAG!r} has no figure or printed output "
                             f"(stored outputs missing? first line: {source.splitlines()[0]!r})")
    exercises = _exercises(cells)
    if exercises:
        prefix = exercise_prefix(context.docname, site.titles[context.docname])   # "Exercise 3.6", as everywhere
        items = "\n".join(f"- **Exercise {prefix}.{k}.** {first}" for k, first in enumerate(exercises, start=1))
        slides.append(_section("Exercises", MARKDOWN.render(convert(items)), small=True))
    page = PAGE.format(title=html.escape(chapter_title), slides="\n".join(slides))
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
  .reveal section.small {{ font-size: 0.58em; }}
  .reveal h2 {{ font-size: 1.9em; }}
  .reveal h3 {{ font-size: 1.2em; text-transform: none; }}
  .reveal img {{ max-height: 62vh; max-width: 92%; background: white; }}
  .reveal .caption {{ font-size: 0.6em; color: #444; margin: 0.3em 5%; }}
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
<script>Reveal.initialize({{ hash: true, slideNumber: true, width: 1280, height: 800 }});</script>
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
