#!/usr/bin/env python3
"""Write the Colab copy of every chapter: `colab/NAME.ipynb` from `book/NAME.ipynb` (never edit them by hand).

    python3 tools/run.py colab            # every notebook of _toc.yml (runs this script in .venv)
    python -m tools.colab --out DIR       # the same, into another folder (the staleness test uses it)

Each chapter has two copies: `colab/NAME.ipynb` with every solution collapsed, and `colab/student/NAME.ipynb`
with none (for workshops; the website built without solutions opens these).

Colab renders CommonMark with MathJax, not MyST, so each chapter's Markdown is rewritten:
- citations become "(Vaswani et al., 2017)" linked to the website's references page (book/references.bib);
- cross-references ({numref}, {ref}, {eq}, {doc}) become links into the website (`html.baseurl` of
  _config.yml); a figure is "the figure above/below", since its number is given by the whole book;
- exercises become headings numbered per page as on the website ("Exercise 6.2", "Exercise D.2"),
  admonitions block quotes with a bold title, dropdowns (a page's detours) collapsed `<details>` blocks,
  figures and images Markdown images with their caption; maths
  stays `$...$` / `$$...$$`;
- glued values ({glue:text} and friends) are pasted from the chapter's stored outputs;
- the caption of a figure made by a code cell (cell metadata `mystnb.figure.caption`) becomes a Markdown cell
  under it.
Solutions never run on *Run all*: the code cells between `solution-start` and `solution-end` become a
Markdown cell holding a collapsed `<details>` block with the code (and its printed output); conceptual
solutions are collapsed the same way. The learner's stub and its `check_*` call stay code cells.
Cells tagged `remove-cell` are dropped, except the cells Colab must run: the install cell and any other cell
that opens with "# Runs only in Google Colab" (chapter 10's apt-get install of its corpus). Outputs are kept.
The install cell installs the release this copy was written for: its URL names the tag `v{version}` of
pyproject.toml's version (`git+https://github.com/OWNER/NAME@v0.1.0`), so a notebook never meets a package
newer than itself; `python3 tools/run.py release` creates that tag.
"""
from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from myst_nb.core.variables import format_plain_text
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser
from pybtex.database import parse_string
from pybtex.richtext import Text

from .book import ROOT, cell_source, exercise_prefix, load_config, site_baseurl, toc_docnames
from .course_colab import COLAB_DIR, STUDENT_DIR, colab_path, package_url, pin_install_cell, project_version

GLUE_PREFIX_KEY = "mime_prefix"
_SOLUTION_START = "\x00solution-start {}\x00"
_SOLUTION_END = "\x00solution-end\x00"
_SENTINEL = re.compile(r"\x00solution-(start|end) ?([^\x00]*)\x00")
_ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error",
                "seealso", "admonition"}


# ---------------------------------------------------------------------------------------------- parsing MyST

@functools.cache
def _parser(extensions: frozenset[str]):
    return create_md_parser(MdParserConfig(enable_extensions=set(extensions)), RendererHTML)


@functools.cache
def _book_extensions() -> frozenset[str]:
    return frozenset((load_config().get("parse") or {}).get("myst_enable_extensions") or [])


def parse_myst(text: str) -> list:
    """markdown-it-py's token stream of MyST text, with the MyST extensions _config.yml enables (the parser
    the website's build uses)."""
    return _parser(_book_extensions()).parse(text)


def _is_directive(token) -> bool:
    return token.type in ("fence", "colon_fence") and token.info.strip().startswith("{")


def directive_parts(token) -> tuple[str, str, dict, str]:
    """(name, argument, options, body) of a directive's fence token: ```{name} argument, then `:key: value`
    lines, then the body."""
    name, _, argument = token.info.strip()[1:].partition("}")
    lines = token.content.split("\n")
    options = {}
    while lines and lines[0].startswith(":"):
        _, key, value = (lines[0].split(":", 2) + ["", ""])[:3]
        if not key or not key.replace("-", "").replace("_", "").isalnum():
            break
        options[key] = value.strip()
        lines.pop(0)
    return name, argument.strip(), options, "\n".join(lines)


def walk_myst(text: str):
    """Every token of MyST text, the tokens of each directive's body following the directive's own."""
    for token in parse_myst(text):
        yield token
        if _is_directive(token):
            yield from walk_myst(directive_parts(token)[3])


# ---------------------------------------------------------------------------------------------- configuration

@dataclass
class Site:
    """What the conversion needs to know about the book: addresses, bibliography, labels, glued values."""
    baseurl: str
    raw_url: str                                  # where Colab can fetch a file of the repository
    docnames: list[str]
    package_url: str = ""                         # what the install cell installs (empty: left as written)
    bib: dict[str, tuple[str, str]] = field(default_factory=dict)   # key -> (authors, year)
    labels: dict[str, dict] = field(default_factory=dict)           # label -> {"doc", "kind", "text", ...}
    titles: dict[str, str] = field(default_factory=dict)            # docname -> first heading
    glue: dict[str, dict[str, dict]] = field(default_factory=dict)  # docname -> name -> mime bundle
    substitutions: dict[str, str] = field(default_factory=dict)

    def page(self, docname: str, anchor: str = "") -> str:
        return f"{self.baseurl}{docname}.html" + (f"#{anchor}" if anchor else "")


# ------------------------------------------------------------------------------------------------ bibliography

def parse_bib(text: str) -> dict[str, tuple[str, str]]:
    """key -> ("Vaswani et al.", "2017"): last names as cited in author-year style (1, 2 or 3+ authors), read by
    pybtex (the parser sphinxcontrib-bibtex uses for the website), LaTeX accents rendered as Unicode."""
    def plain(latex: str) -> str:
        return Text.from_latex(latex).render_as("text")

    entries = {}
    for key, entry in parse_string(text, "bibtex").entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        last = [plain(" ".join(person.prelast_names + person.last_names)) for person in people]
        if not last:
            authors = key
        elif len(last) == 1:
            authors = last[0]
        elif len(last) == 2 and last[1] != "others":
            authors = f"{last[0]} and {last[1]}"
        else:
            authors = f"{last[0]} et al."
        entries[key] = (authors, plain(entry.fields.get("year", "n.d.")))
    return entries


# ------------------------------------------------------------------------------------------------ the index

def _figure_meta(cell) -> dict:
    return (cell.get("metadata", {}).get("mystnb") or {}).get("figure") or {}


def index_notebook(site: Site, docname: str, nb: dict) -> None:
    """Record the notebook's title, labels (exercises, figures, targets) and glued values."""
    exercise = 0
    glue = site.glue.setdefault(docname, {})
    for position, cell in enumerate(nb["cells"]):
        source = cell_source(cell)
        if cell["cell_type"] == "markdown":
            tokens = list(walk_myst(source))
            for i, token in enumerate(tokens):
                if token.type == "heading_open" and token.tag == "h1" and docname not in site.titles:
                    site.titles[docname] = tokens[i + 1].content.strip()
                elif _is_directive(token):
                    name, _, options, _ = directive_parts(token)
                    if "name" in options:
                        site.labels.setdefault(options["name"], {"doc": docname, "kind": "figure", "cell": position})
                    if name in ("exercise", "exercise-start"):
                        exercise += 1
                        prefix = exercise_prefix(docname, site.titles[docname])
                        if "label" in options:
                            site.labels[options["label"]] = {"doc": docname, "kind": "exercise", "cell": position,
                                                             "text": f"Exercise {prefix}.{exercise}"}
                elif token.type == "myst_target":
                    after = next((t.content.split("\n")[0] for t in tokens[i + 1:] if t.type == "inline"), "")
                    site.labels[token.content] = {"doc": docname, "kind": "target", "cell": position,
                                                  "text": after.strip() or token.content}
        else:
            name = _figure_meta(cell).get("name")
            if name:
                site.labels[name] = {"doc": docname, "kind": "figure", "cell": position}
            for output in cell.get("outputs", []):
                record = output.get("metadata", {}).get("scrapbook")
                if record:
                    prefix = record.get(GLUE_PREFIX_KEY, "")
                    glue[record["name"]] = {mime[len(prefix):]: "".join(value) if isinstance(value, list) else value
                                            for mime, value in output.get("data", {}).items()}


def build_site(root: Path = ROOT) -> Site:
    config = load_config(root)
    repo = config["repository"]["url"].rstrip("/").removeprefix("https://github.com/")
    site = Site(baseurl=site_baseurl(config),
                raw_url=f"https://raw.githubusercontent.com/{repo}/{config['repository'].get('branch', 'main')}/",
                docnames=toc_docnames(root),
                package_url=package_url(config["repository"]["url"], project_version(root)))
    site.substitutions = dict((config.get("parse") or {}).get("myst_substitutions") or {})
    for bibfile in config.get("bibtex_bibfiles", []):
        site.bib.update(parse_bib((root / bibfile).read_text()))
    for docname in site.docnames:
        path = root / f"{docname}.ipynb"
        if path.exists():
            index_notebook(site, docname, json.loads(path.read_text()))
        elif (root / f"{docname}.md").exists():
            tokens = parse_myst((root / f"{docname}.md").read_text())
            site.titles[docname] = next((tokens[i + 1].content.strip() for i, t in enumerate(tokens)
                                         if t.type == "heading_open" and t.tag == "h1"), docname)
    return site


# ------------------------------------------------------------------------------------------------ inline roles

@dataclass
class Context:
    """Where in which notebook the text being converted stands."""
    site: Site
    docname: str
    cell: int = 0
    exercises: int = 0
    solutions: bool = True                        # False: the workshop's student edition, without solutions

    def error(self, message: str) -> ValueError:
        return ValueError(f"{self.docname}.ipynb, cell {self.cell}: {message}")


def _split_title(content: str) -> tuple[str | None, str]:
    """`text <label>` -> ("text", "label"); `label` -> (None, "label")."""
    match = re.fullmatch(r"\s*(.*?)\s*<([^<>]+)>\s*", content, flags=re.DOTALL)
    return (match.group(1), match.group(2)) if match else (None, content.strip())


def _cite(ctx: Context, role: str, content: str) -> str:
    parts = []
    for key in (k.strip() for k in content.split(",")):
        if key not in ctx.site.bib:
            raise ctx.error(f"{{cite}} of {key!r}, which book/references.bib does not hold")
        authors, year = ctx.site.bib[key]
        parts.append(f"{authors} ({year})" if role == "cite:t" else f"{authors}, {year}")
    link = ctx.site.page("book/references")
    if role == "cite:t":
        return "; ".join(f"[{part}]({link})" for part in parts)
    return f"([{'; '.join(parts)}]({link}))"


def _ref(ctx: Context, role: str, content: str, before: str) -> str:
    title, label = _split_title(content)
    if role == "doc":
        docname = str((Path(ctx.docname).parent / label).as_posix()) if not label.startswith("/") else label[1:]
        if docname not in ctx.site.titles:
            raise ctx.error(f"{{doc}} of {label!r}, which is no page of _toc.yml")
        return f"[{title or ctx.site.titles[docname]}]({ctx.site.page(docname)})"
    if role == "eq":
        return f"[{title or 'this equation'}]({ctx.site.page(ctx.docname, 'equation-' + label)})"
    if label not in ctx.site.labels:
        raise ctx.error(f"{{{role}}} of {label!r}, a label that no chapter defines")
    target = ctx.site.labels[label]
    url = ctx.site.page(target["doc"], label)
    if title:
        text = title.replace("%s", "").strip() if "%s" in title else title
    elif target["kind"] == "figure":
        if target["doc"] != ctx.docname:
            text = f"a figure of {ctx.site.titles.get(target['doc'], target['doc'])}"
        else:
            text = "the figure " + ("above" if target["cell"] < ctx.cell else "below")
    elif target["kind"] == "exercise":
        # "exercise {ref}`x`" in the prose: the word is already there, keep only the number
        text = target["text"].split()[-1] if re.search(r"exercises?\s*$", before, re.IGNORECASE) else target["text"]
    else:
        text = target["text"]
    starts_sentence = not before.strip() or re.search(r"(^|[.!?:]\s+|\n\s*\n|^\s*[-*+]\s+|\n\s*[-*+]\s+)$", before)
    if starts_sentence and text[:1].islower():
        text = text[0].upper() + text[1:]
    return f"[{text}]({url})"


def _glue(ctx: Context, role: str, content: str) -> str:
    key, spec = (content.rsplit(":", 1) + ["s"])[:2] if role == "glue:text" else (content, "")
    docname = ctx.docname
    if "::" in key:
        path, key = key.split("::", 1)
        docname = str((Path(ctx.docname).parent / Path(path).with_suffix("")).as_posix())
    bundle = ctx.site.glue.get(docname, {}).get(key.strip())
    if bundle is None:
        raise ctx.error(f"{{{role}}} of {key!r}, which the chapter's stored outputs do not glue "
                        "(execute it with tools/run.py notebooks)")
    if role == "glue:md" and "text/markdown" in bundle:
        return bundle["text/markdown"]
    if "text/plain" not in bundle:
        raise ctx.error(f"{{{role}}} of {key!r}: the glued value has no text/plain form")
    return format_plain_text(bundle["text/plain"], spec)   # myst-nb's own formatting, as on the website


def _inline_role(ctx: Context, role: str, content: str, before: str) -> str:
    if role in ("cite", "cite:p", "cite:t"):
        return _cite(ctx, role, content)
    if role in ("numref", "ref", "eq", "doc"):
        return _ref(ctx, role, content, before)
    if role in ("glue", "glue:", "glue:any", "glue:text", "glue:md"):
        return _glue(ctx, role, content)
    if role in ("math",):
        return f"${content}$"
    if role in ("sub", "sup", "kbd", "abbr", "code", "literal", "samp", "file", "command"):
        return f"`{content}`" if role in ("code", "literal", "samp", "file", "command", "kbd") else content
    raise ctx.error(f"the role {{{role}}} has no Colab form yet (add one to tools/colab.py)")


def _span(text: str, start: int, opening: str, closing: str) -> tuple[int, int]:
    """(start, end) of the first `opening ... closing` at or after `start` (end is past `closing`)."""
    begin = text.index(opening, start)
    return begin, text.index(closing, begin + len(opening)) + len(closing)


def convert_inline(text: str, ctx: Context) -> str:
    """Roles and substitutions of one stretch of prose (no directives in it) as CommonMark.

    The parser finds them (so a role inside a code span or maths is left alone); each one is then located in
    the text, in order, to be replaced there: everything else stays exactly as written."""
    replacements, cursor = [], 0
    for block in parse_myst(text):
        for token in block.children or []:
            if token.type == "code_inline":
                cursor = _span(text, cursor, token.markup, token.markup)[1]
            elif token.type in ("math_inline", "math_inline_double"):
                cursor = _span(text, cursor, token.markup, token.markup)[1]  # (its content may be re-indented)
            elif token.type == "substitution_inline":
                start, cursor = _span(text, cursor, "{{", "}}")
                name = token.content.strip()
                if name not in ctx.site.substitutions:
                    raise ctx.error(f"substitution {{{{ {name} }}}} is not defined in _config.yml")
                replacements.append((start, cursor, str(ctx.site.substitutions[name])))
            elif token.type == "myst_role":
                role = token.meta["name"]
                start = text.index(f"{{{role}}}`", cursor)
                ticks = len(text[start + len(role) + 2:]) - len(text[start + len(role) + 2:].lstrip("`"))
                cursor = _span(text, start + len(role) + 2 + ticks, "", "`" * ticks)[1]
                replacements.append((start, cursor, _inline_role(ctx, role, token.content, text[:start])))
    for start, end, new in reversed(replacements):
        text = text[:start] + new + text[end:]
    return text


def _blockquote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.strip("\n").split("\n"))


_COMMONMARK = MarkdownIt("commonmark")


def _summary_html(markdown: str) -> str:
    """A dropdown's title as HTML for `<summary>`, where Colab renders no Markdown: emphasis, code and links become
    tags; maths (`$...$`) is left as it is, for MathJax, and never read as emphasis."""
    parts = re.split(r"(\$[^$]+\$)", markdown)
    return "".join(part if part.startswith("$") else _COMMONMARK.renderInline(part) for part in parts).strip()


def _details(summary: str, body: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{body.strip()}\n\n</details>"


def _directive(ctx: Context, name: str, arg: str, options: dict, body: str) -> str:
    if name in ("exercise", "exercise-start"):
        ctx.exercises += 1
        title = f": {convert_inline(arg, ctx)}" if arg else ""
        prefix = exercise_prefix(ctx.docname, ctx.site.titles[ctx.docname])
        heading = f"#### Exercise {prefix}.{ctx.exercises}{title}"
        return heading + ("\n\n" + body if body.strip() else "")
    if name == "exercise-end":
        return ""
    if name in ("solution", "solution-start"):
        label = arg.strip()
        summary = f"Solution to {ctx.site.labels[label]['text']}" if label in ctx.site.labels else "Solution"
        if name == "solution-start":
            return _SOLUTION_START.format(summary)
        return _details(summary, body) if ctx.solutions else ""
    if name == "solution-end":
        return _SOLUTION_END
    if name == "dropdown":
        # a detour of the main line (a derivation, a check, a second experiment): folded, as on the website
        return _details(_summary_html(convert_inline(arg, ctx)) if arg else "More", body)
    if name in _ADMONITIONS:
        title = convert_inline(arg, ctx) if arg else name.capitalize().replace("Seealso", "See also")
        return _blockquote(f"**{title}**\n\n{body.strip()}")
    if name in ("figure", "image"):
        path = arg.strip()
        url = path if re.match(r"\w+://", path) else ctx.site.raw_url + (Path(ctx.docname).parent / path).as_posix()
        image = f"![{options.get('alt', '')}]({url})"
        return image + (f"\n\n*Figure:* {body.strip()}" if body.strip() else "")
    if name in ("math",):
        return f"$$\n{body.strip()}\n$$"
    if name in ("code-block", "code", "code-cell"):
        return f"```{arg.strip()}\n{body}\n```"
    if name in ("margin", "sidebar", "epigraph", "topic"):
        return _blockquote(body)
    raise ctx.error(f"the directive {{{name}}} has no Colab form yet (add one to tools/colab.py)")


def convert_markdown(text: str, ctx: Context) -> str:
    """One Markdown cell's MyST as CommonMark (solution-start/-end are left as sentinels for the caller).

    The parser's top-level blocks decide what is what: a directive is converted (its body recursively), a
    code block is copied as it is, a label target is dropped (links point at the website instead), and the
    prose between them keeps its lines, roles replaced."""
    lines = text.split("\n")
    out: list[str] = []
    prose_from = 0                                   # the first line of prose not yet converted

    def flush(until: int) -> None:
        prose = "\n".join(lines[prose_from:until])
        if prose.strip():
            out.append(_wrap_bare_environments(convert_inline(prose, ctx)))

    for token in parse_myst(text):
        if token.level != 0 or token.map is None or token.type not in ("fence", "colon_fence", "myst_target"):
            continue
        start, end = token.map
        flush(start)
        if _is_directive(token):
            name, argument, options, body = directive_parts(token)
            out.append(_directive(ctx, name, argument, options, convert_markdown(body, ctx)))
        elif token.type == "fence":
            out.append("\n".join(lines[start:end]))  # a code block is copied as it is
        prose_from = end
    flush(len(lines))
    # blocks are separated by one blank line; code inside them is left exactly as written
    return "\n\n".join(block.strip("\n") for block in out if block.strip())


def _wrap_bare_environments(text: str) -> str:
    r"""amsmath's bare `\begin{align}...\end{align}` (outside $$) inside $$, which Colab's MathJax renders."""
    pieces = re.split(r"(\$\$.*?\$\$)", text, flags=re.DOTALL)
    for k in range(0, len(pieces), 2):
        pieces[k] = re.sub(r"^(\\begin\{(\w+\*?)\}.*?\\end\{\2\})", r"$$\n\1\n$$", pieces[k],
                           flags=re.DOTALL | re.MULTILINE)
    return "".join(pieces)


# ------------------------------------------------------------------------------------------------ notebooks

def _markdown_cell(source: str, cell_id: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source}


def _is_install_cell(cell) -> bool:
    return cell["cell_type"] == "code" and "PACKAGE_URL" in cell_source(cell)


def _is_colab_only_cell(cell) -> bool:
    """A cell hidden on the website that Colab must run: the install cell, or one marked by its first line."""
    return _is_install_cell(cell) or (cell["cell_type"] == "code"
                                      and cell_source(cell).startswith("# Runs only in Google Colab"))


def _printed_output(cell) -> str:
    """What a solution cell printed (stream and plain-text results), to show under its code."""
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            texts.append("".join(output["text"]) if isinstance(output["text"], list) else output["text"])
        elif "text/plain" in output.get("data", {}) and "image/png" not in output["data"] \
                and "text/html" not in output["data"]:
            value = output["data"]["text/plain"]
            texts.append("".join(value) if isinstance(value, list) else value)
    return "".join(texts).rstrip("\n")


def convert_notebook(nb: dict, docname: str, site: Site, solutions: bool = True) -> dict:
    """The Colab copy of one chapter (a new notebook; `nb` is left unchanged); with solutions=False the
    workshop's student edition, whose exercises keep their stubs and checks but have no solutions."""
    ctx = Context(site, docname, solutions=solutions)
    title = f"[{site.titles.get(docname, docname)}]({site.page(docname)})"
    if solutions:
        header = (f"> The Colab copy of {title} (on the website), generated from `{docname}.ipynb` by "
                  "`python3 tools/run.py colab`: edit the chapter, not this file. Solutions are collapsed under "
                  "*Solution*: *Runtime → Run all* leaves your answers in place.")
    else:
        header = (f"> The student copy of {title}, generated from `{docname}.ipynb` by `python3 tools/run.py "
                  "colab`: every exercise has its check but no solution (ask your instructor, or read them "
                  "later in the Colab copy with solutions). *Runtime → Run all* leaves your answers in place.")
    cells: list[dict] = [_markdown_cell(header, "colab-header")]
    solution: list[str] | None = None      # the solution being collected, while between start and end
    summary = ""

    def emit_markdown(text: str, cell_id: str):
        nonlocal solution, summary
        pieces = _SENTINEL.split(text)   # text, kind, argument, text, kind, argument, ..., text
        kept = []
        for k in range(0, len(pieces), 3):
            if solution is None:
                kept.append(pieces[k])
            else:
                solution.append(pieces[k])
            if k + 1 < len(pieces):
                kind, argument = pieces[k + 1], pieces[k + 2]
                if kind == "start":
                    solution, summary = [], argument
                else:
                    if solutions:
                        kept.append(_details(summary, "\n\n".join(p.strip("\n") for p in solution if p.strip())))
                    solution = None
        joined = "\n\n".join(piece.strip("\n") for piece in kept if piece.strip())
        if joined:
            cells.append(_markdown_cell(joined, cell_id))

    for position, cell in enumerate(nb["cells"]):
        ctx.cell = position
        cell_id = cell.get("id", f"cell-{position}")
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "markdown":
            emit_markdown(convert_markdown(cell_source(cell), ctx), cell_id)
        elif cell["cell_type"] == "code":
            if solution is not None:
                block = f"```python\n{cell_source(cell).strip()}\n```"
                printed = _printed_output(cell)
                solution.append(block + (f"\n\nIt prints:\n\n```text\n{printed}\n```" if printed else ""))
                continue
            if "remove-cell" in tags and not _is_colab_only_cell(cell):
                continue
            if _is_install_cell(cell) and site.package_url:
                try:
                    pinned = pin_install_cell(cell_source(cell), site.package_url)
                except ValueError as err:
                    raise ctx.error(str(err)) from None
                # stored as the chapter stores it (nbformat writes a list of lines)
                cell = {**cell, "source": pinned.splitlines(keepends=True) if isinstance(cell["source"], list)
                        else pinned}
            cells.append(cell)
            caption = _figure_meta(cell).get("caption")
            if caption:
                text = convert_markdown(caption, ctx)
                cells.append(_markdown_cell(f"*Figure:* {text}", f"{cell_id}-caption"))
        else:
            cells.append(cell)
    if solution is not None:
        raise ctx.error("a solution-start has no solution-end")
    return {**nb, "cells": cells}


def write_colab_notebooks(out_dir: Path, root: Path = ROOT, solutions: bool = True,
                          docnames: list[str] | None = None) -> list[Path]:
    """Convert every notebook page of _toc.yml (or only `docnames`) into `out_dir`; return the files written."""
    site = build_site(root)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for docname in docnames or site.docnames:
        source = root / f"{docname}.ipynb"
        if not source.exists():
            continue
        nb = convert_notebook(json.loads(source.read_text()), docname, site, solutions)
        target = out_dir / Path(colab_path(docname)).name
        target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        written.append(target)
    return written


def write_colab_copies(out_dir: Path, root: Path = ROOT) -> list[Path]:
    """Both Colab editions: `out_dir/NAME.ipynb` with the solutions collapsed, `out_dir/student/NAME.ipynb`
    without them (the website without solutions opens those)."""
    return (write_colab_notebooks(out_dir, root)
            + write_colab_notebooks(out_dir / STUDENT_DIR, root, solutions=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / COLAB_DIR, help=f"folder to write (default {COLAB_DIR}/)")
    args = parser.parse_args(argv)
    written = write_colab_copies(args.out)
    print(f"wrote {len(written)} Colab notebooks to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
