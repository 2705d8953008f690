"""Which page cites which work: the references page's index by page, generated from the pages themselves.

    python -m tools.citations            # write book/generated/citations_by_page.md (references.md includes it)
    python -m tools.citations --check    # exit 1 when that file is not what the pages cite now (a test runs it)

Every page of _toc.yml is read in order (markdown cells of notebooks, markdown pages); each {cite}, {cite:p} or
{cite:t} key is listed under its page, one per line, in the order of first use, as {cite:p} (its label, the same as
in the text and the list, linking to its entry) with the work's title from book/references.bib. The list's
entries link back to these lines, so an entry leads to the pages that cite it.
"""
from __future__ import annotations

import argparse
import json
import re
import sys

from pybtex.database import parse_string
from pybtex.richtext import Text

from .book import ROOT, cell_source, load_config, toc_docnames, write_or_check

OUT = ROOT / "book" / "generated" / "citations_by_page.md"
CITE = re.compile(r"\{cite(?::[pt])?\}`([\w.:-]+(?:\s*,\s*[\w.:-]+)*)`")   # keys only, comma-separated
SKIP = {"book/references"}       # the page that includes the index


def page_text(docname: str) -> str:
    """The prose of one page: a notebook's markdown cells, or a markdown page."""
    notebook = ROOT / f"{docname}.ipynb"
    if notebook.exists():
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        return "\n".join(cell_source(c) for c in cells if c["cell_type"] == "markdown")
    return (ROOT / f"{docname}.md").read_text(encoding="utf-8")


def cited_keys(text: str) -> list[str]:
    """The keys a text cites, each once, in the order of first use."""
    keys = [key.strip() for match in CITE.finditer(text) for key in match.group(1).split(",")]
    return list(dict.fromkeys(keys))


def titles() -> dict[str, str]:
    """key -> the work's title, as plain text (braces and LaTeX accents rendered), from the book's .bib files."""
    out = {}
    for bibfile in load_config(ROOT).get("bibtex_bibfiles", []):
        for key, entry in parse_string((ROOT / bibfile).read_text(encoding="utf-8"), "bibtex").entries.items():
            out[key] = Text.from_latex(entry.fields.get("title", key)).render_as("text")
    return out


def render() -> str:
    title = titles()
    lines = ["<!-- Written by `python -m tools.citations` from the pages of _toc.yml; do not edit by hand. -->", ""]
    for docname in toc_docnames(ROOT):
        keys = cited_keys(page_text(docname))
        if docname in SKIP or not keys:
            continue
        page = docname.removeprefix("book/")
        # one work per line, so a page's list reads down and each entry's back-link lands on its own line
        lines.append(f"- {{doc}}`{page}` ({len(keys)} {'work' if len(keys) == 1 else 'works'})")
        lines += [f"  - {{cite:p}}`{key}` *{title[key]}*" for key in keys]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help=f"exit 1 when {OUT.relative_to(ROOT)} is stale")
    args = parser.parse_args(argv)
    return write_or_check(OUT, render(), "python -m tools.citations", args.check)


if __name__ == "__main__":
    sys.exit(main())
