#!/usr/bin/env python3
"""Static hygiene of the book's notebooks (run by tests/test_book.py; usable by hand).

Checks, per notebook:
- the first cell is the Colab install cell: a code cell tagged `remove-cell` whose source is exactly
  `colab_cell_source(url)` with the repository URL of `_config.yml` (the URL lives in one place);
- every code cell was executed, in order, top to bottom (execution counts 1, 2, 3, ...);
- seeds are set (`set_seed(` appears in a code cell before any other computation cell);
- no absolute paths of this machine in sources or outputs; no error outputs except in cells tagged
  `raises-exception`;
- file size under 2 MB;
- widget outputs come with saved widget state and a static figure in the same or the next code cell.

    python -m tools.check_notebooks                   # every notebook in book/
    python -m tools.check_notebooks --fix-colab-cell book/NAME.ipynb   # insert/refresh the install cell
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from .book import ROOT, cell_source, repository_url

MAX_BYTES = 2 * 1024 * 1024
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])(/work/|/home/|/root/|/tmp/|/Users/|[A-Z]:\\\\Users)")


def colab_cell_source(url: str) -> str:
    """The first cell of every chapter: install the package in Colab, do nothing elsewhere.

    TC_PACKAGE_URL lets a test simulate a Colab start by installing from a local checkout instead.
    """
    return (
        "# Runs only in Google Colab (or a simulated Colab start): installs the course package.\n"
        "import os\n"
        "import sys\n"
        "\n"
        f'PACKAGE_URL = os.environ.get("TC_PACKAGE_URL", "git+{url}")\n'
        'if "google.colab" in sys.modules or "TC_PACKAGE_URL" in os.environ:\n'
        "    %pip install -q {PACKAGE_URL}"
    )


DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")


def _output_texts(cell):
    """A cell's printed and displayed text; embedded images (base64 data URIs in HTML) left out, since their
    digits are not figures."""
    for out in cell.get("outputs", []):
        if "text" in out:
            yield "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
        for mime, value in out.get("data", {}).items():
            if mime.startswith("text/"):
                yield DATA_URI.sub("", "".join(value) if isinstance(value, list) else value)
        if out.get("output_type") == "error":
            yield "\n".join(out.get("traceback", []))


def check_notebook(path: Path, url: str | None = None) -> list[str]:
    """Problems found in one notebook, as readable sentences (empty list: all good)."""
    url = url or repository_url()
    problems: list[str] = []
    name = path.name
    size = path.stat().st_size
    if size > MAX_BYTES:
        problems.append(f"{name}: {size / 1e6:.1f} MB, over the 2 MB limit (smaller figures, fewer outputs)")
    nb = json.loads(path.read_text())
    cells = nb.get("cells", [])
    code = [c for c in cells if c["cell_type"] == "code"]
    if not cells or cells[0]["cell_type"] != "code":
        problems.append(f"{name}: the first cell must be the Colab install code cell")
    else:
        first = cells[0]
        if "remove-cell" not in first.get("metadata", {}).get("tags", []):
            problems.append(f"{name}: the Colab install cell must be tagged `remove-cell`")
        if cell_source(first) != colab_cell_source(url):
            problems.append(f"{name}: the first cell is not the Colab install cell for {url} "
                            "(run tools/check_notebooks.py --fix-colab-cell)")
    counts = [c.get("execution_count") for c in code]
    if any(n is None for n in counts):
        missing = [i for i, n in enumerate(counts) if n is None]
        problems.append(f"{name}: code cells {missing} were never executed (run python3 tools/run.py notebooks)")
    elif counts != list(range(1, len(counts) + 1)):
        problems.append(f"{name}: execution counts {counts} are not 1..{len(counts)}: not executed top to "
                        "bottom in a fresh kernel (run python3 tools/run.py notebooks)")
    if not any("set_seed(" in cell_source(c) for c in code[:3]):
        problems.append(f"{name}: seeds are not set: call set_seed(...) in one of the first code cells")
    has_widget = False
    for index, cell in enumerate(code):
        tags = cell.get("metadata", {}).get("tags", [])
        for text in [cell_source(cell), *_output_texts(cell)]:
            hit = _ABSOLUTE_PATH.search(text)
            if hit:
                problems.append(f"{name}: code cell {index} contains an absolute path ({hit.group(0)}...)")
                break
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and "raises-exception" not in tags:
                problems.append(f"{name}: code cell {index} stored an error ({out.get('ename')}) without the "
                                "`raises-exception` tag")
            if WIDGET_MIME in out.get("data", {}):
                has_widget = True
                neighbours = code[index:index + 2]
                if not any("image/png" in o.get("data", {}) for c in neighbours for o in c.get("outputs", [])):
                    problems.append(f"{name}: widget in code cell {index} has no static figure in the same "
                                    "or the next code cell (the website shows no live widgets)")
    if has_widget and "application/vnd.jupyter.widget-state+json" not in nb.get("metadata", {}).get("widgets", {}):
        problems.append(f"{name}: widgets are shown but no widget state is saved (execute with "
                        "python3 tools/run.py notebooks)")
    return problems


def fix_colab_cell(path: Path, url: str) -> None:
    """Insert the Colab install cell at the top, or refresh it if the first cell is an older version."""
    nb = json.loads(path.read_text())
    cell = {"cell_type": "code", "execution_count": None, "id": "colab-install",
            "metadata": {"tags": ["remove-cell"]}, "outputs": [], "source": colab_cell_source(url)}
    cells = nb.setdefault("cells", [])
    if cells and cells[0]["cell_type"] == "code" and "PACKAGE_URL" in cell_source(cells[0]):
        cells[0] = cell
    else:
        cells.insert(0, cell)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="notebooks (default: book/*.ipynb)")
    parser.add_argument("--fix-colab-cell", action="store_true", help="insert or refresh the install cell")
    args = parser.parse_args(argv)
    url = repository_url()
    paths = [Path(p) for p in args.paths] or sorted((ROOT / "book").glob("*.ipynb"))
    failed = 0
    for path in paths:
        if args.fix_colab_cell:
            fix_colab_cell(path, url)
        problems = check_notebook(path, url)
        for problem in problems:
            print(problem)
        failed += bool(problems)
    print(f"{len(paths) - failed} notebooks clean, {failed} with problems")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
