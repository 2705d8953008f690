#!/usr/bin/env python3
"""Prose against evidence: every measured figure a page of the book quotes must come from code.

A figure is a decimal number ("0.933", "8.3e-11", "7.0 \\times 10^{-4}") or a percentage ("98%", "24.2 %")
in the prose of a page: the markdown cells and figure captions of a chapter notebook, or a page `book/*.md`.
It passes when it is

- shown in the same notebook's stored outputs at the precision the prose uses: "0.99" matches a printed
  "0.9900" or "0.9903" (the output rounds to the prose's last digit), "88%" matches a printed "0.8808";
- a literal of the notebook's own code (a setting such as a dropout of 0.1 or a threshold of 0.98, which
  the code states and the prose repeats); or
- a constant cited from the literature, listed in CITED below with its source.

Glued values (`{glue:text}` roles, filled in from the outputs when the site is built) contain no digits in
the source, so they always pass. Inline code, citations, cross-references, links, section numbers ("§11.4",
"Section 3.4") and version numbers ("2.13.0", "Python 3.10") are not figures and are skipped.

    python -m tools.check_prose                       # every chapter notebook and page in book/
    python -m tools.check_prose book/09_training.ipynb
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .book import book_pages, cell_source
from .check_notebooks import _output_texts  # the same reading of a cell's outputs

ROOT = Path(__file__).resolve().parent.parent

# Figures quoted from publications, each with where it comes from. Keep this list short: a figure measured by
# the course belongs in a cell's output, not here.
CITED: dict[str, str] = {
    # Vaswani et al. (2017), Table 2 and section 6.1: BLEU on newstest2014, training time on 8 P100 GPUs
    "27.3": "Vaswani et al. 2017, Table 2: Transformer (base), EN-DE BLEU",
    "38.1": "Vaswani et al. 2017, Table 2: Transformer (base), EN-FR BLEU",
    "28.4": "Vaswani et al. 2017, Table 2: Transformer (big), EN-DE BLEU",
    "41.8": "Vaswani et al. 2017, Table 2: Transformer (big), EN-FR BLEU",
    "3.5": "Vaswani et al. 2017, section 5.2: the big model trained for 3.5 days",
    "0.4": "Vaswani et al. 2017, section 5.2: 0.4 s per step (base)",
    "1.0": "Vaswani et al. 2017, section 5.2: 1.0 s per step (big)",
    "4.5": "Vaswani et al. 2017, section 5.1: WMT 2014 EN-DE, about 4.5 million sentence pairs",
    "25.16": "Vaswani et al. 2017, Table 2: ConvS2S (Gehring et al. 2017), EN-DE BLEU",
    "23.75": "Vaswani et al. 2017, Table 2: ByteNet (Kalchbrenner et al. 2016), EN-DE BLEU",
    # Vaswani et al. (2017), section 5.3-5.4: the training recipe
    "0.9": "Vaswani et al. 2017: Adam beta_1 = 0.9 (section 5.3); h = 1 costs 0.9 BLEU (Table 3, row A)",
    "0.98": "Vaswani et al. 2017, section 5.3: Adam beta_2 = 0.98",
    "0.1": "Vaswani et al. 2017, section 5.4: P_drop = 0.1 and label smoothing eps_ls = 0.1",
    "0.6": "Wu et al. 2016 / Vaswani et al. 2017, section 6.1: length penalty exponent 0.6",
    # Vaswani et al. (2017), Table 3: newstest2013 development set, BLEU and perplexity per word-piece
    "25.8": "Vaswani et al. 2017, Table 3: base BLEU",
    "3.35": "NVIDIA's H100 page (book/references.bib, nvidia2022h100): H100 SXM memory bandwidth, TB/s",
    # Bahdanau et al. (2015), Table 1: BLEU on the WMT'14 English-French test set, all sentences / no unknown words
    "17.82": "Bahdanau et al. 2015, Table 1: RNNencdec-50, all sentences",
    "26.75": "Bahdanau et al. 2015, Table 1: RNNsearch-50, all sentences",
    "26.71": "Bahdanau et al. 2015, Table 1: RNNencdec-50, sentences without unknown words",
    "34.16": "Bahdanau et al. 2015, Table 1: RNNsearch-50, sentences without unknown words",
    "4.92": "Vaswani et al. 2017, Table 3: base PPL (also row (E), learned positions)",
    "24.9": "Vaswani et al. 2017, Table 3, row (A): h = 1, BLEU",
    "5.29": "Vaswani et al. 2017, Table 3, row (A): h = 1, PPL",
    "4.67": "Vaswani et al. 2017, Table 3, row (D): eps_ls = 0, PPL",
    "5.47": "Vaswani et al. 2017, Table 3, row (D): eps_ls = 0.2, PPL",
    "25.7": "Vaswani et al. 2017, Table 3, rows (D) eps_ls = 0.2 and (E) learned positions: BLEU",
    # Rothman (2022), ch. 2: figures of the worked examples that the book reproduces and corrects
    "1.75": "Rothman 2022, ch. 2: the value written for sqrt(d_k) with d_k = 3",
}

# Figures a page derives by hand (an exercise's arithmetic, a unit conversion), per page, with the Python
# expression that computes them: the check evaluates it and requires the quoted figure to be its rounding.
ARITHMETIC: dict[str, dict[str, str]] = {
    "02_bahdanau_attention": {"2.5": "50 * 50 * 1000 / 10**6"},        # S T d_a scores, in millions
    "06_positional_encoding": {"22.6": "math.sqrt(512)"},
    "a1_backprop_by_hand": {"1.1": "2.0 ** -53"},                     # float64's machine epsilon
    "a2_performance": {"2.3": "2457600 / 2**20", "0.7": "737280 / 2**20"},   # KV cache sizes in MiB
    "08_decoder": {"2.5": "15 / 6", "1.733": "2.5 ** 0.6", "2.31": "4 / 2.5 ** 0.6",   # exercise ex-08-lp
                   "0.099": "math.exp(-4 / 2.5 ** 0.6)", "0.018": "math.exp(-4)"},
}

_FIGURE = re.compile(
    r"(?<![\w.])(?P<num>\d+\.\d+)(?!\.\d)(?![\w])"                        # 0.933 (not 2.13.0, not 1.x)
    # 8.3e-11, 7.0 \times 10^{-4}
    r"(?:\s*[eE](?P<exp>[-+\u2212]?\d+)|\s*\\times\s*10\^\{?(?P<texexp>[-+\u2212]?\d+)\}?)?"
    r"(?P<pct>\s*(?:\\%|%|per ?cent))?"
    r"|(?<![\w.])(?P<intpct>\d+)\s*(?:\\%|%|per ?cent)")                 # 98%
# MyST roles ({cite}`x`, {doc}`x`, {glue:text}`x:.3f`), inline code, link targets and URLs: never figures.
_SKIP = re.compile(r"\{[\w:-]+\}`[^`]*`|`[^`\n]*`|\]\([^)]*\)|https?://\S+|^:[\w-]+:.*$", re.MULTILINE)
# A number right after one of these words is a reference or a version (a licence's too: "CC BY 4.0"), not a figure.
_STRUCTURAL = re.compile(r"(\u00a7|\bsections?|\bsec\.|\bpython|\bversions?|\bequations?|\beq\.|\bchapters?|"
                         r"\bappendix|\btables?|\bfigures?|\bnumpy|\bpytorch|\btorch|\bbook|\bcc by)\s*$",
                         re.IGNORECASE)
_OUTPUT_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?|\.\d+)(?:[eE]([-+]?\d+))?")
_CODE_NUMBER = re.compile(r"(?<![\w.])(\d+\.\d*|\.\d+|\d+)(?:[eE]([-+]?\d+))?(?![\w.])")


@dataclass(frozen=True)
class Figure:
    """A figure quoted in prose: its digits, value, the size of its last digit, and whether it is a percentage."""
    digits: str
    value: float
    unit: float
    percent: bool
    where: str


def figures_in(text: str, where: str) -> list[Figure]:
    """Every decimal number and percentage of a piece of prose (code, roles, links and references removed)."""
    text = _SKIP.sub(lambda m: " " * len(m.group(0)), text)
    found = []
    for match in _FIGURE.finditer(text):
        before = text[max(0, match.start() - 14):match.start()]
        if _STRUCTURAL.search(before) or re.search(r"\^\{?[-\u2212]?$", before):  # a reference; an exponent
            continue
        if match.group("intpct"):
            digits, decimals, exponent, percent = match.group("intpct"), 0, 0, True
        else:
            digits = match.group("num")
            decimals = len(digits.split(".")[1])
            exponent = int((match.group("exp") or match.group("texexp") or "0").replace("\u2212", "-"))
            percent = bool(match.group("pct"))
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        context = " ".join(text[line_start:line_end if line_end >= 0 else None].split())
        found.append(Figure(digits, float(digits) * 10.0 ** exponent, 10.0 ** (exponent - decimals), percent,
                            f"{where}: {context[:120]}"))
    return found


def supported(figure: Figure, printed: list[float], literals: list[float], derived: dict[str, str]) -> bool:
    """A printed number rounds to the figure at its last digit (for a percentage, as a fraction too), or a code
    literal equals it exactly, or it is a cited constant, or the page's listed arithmetic computes it."""
    if figure.digits in CITED:
        return True
    if figure.digits in derived:
        printed = [*printed, abs(eval(derived[figure.digits], {"math": math}))]  # our own table of expressions
    values = [figure.value, figure.value / 100] if figure.percent else [figure.value]
    if any(math.isclose(v, literal, rel_tol=1e-12) for v in values for literal in literals):
        return True
    tolerance = 0.5 * figure.unit * (1 + 1e-9)
    return any(abs(number - figure.value) <= tolerance
               or (figure.percent and abs(100 * number - figure.value) <= tolerance) for number in printed)


def _numbers(texts, pattern=_OUTPUT_NUMBER) -> list[float]:
    values = []
    for text in texts:
        for match in pattern.finditer(text):
            try:
                values.append(abs(float(match.group(1)) * 10.0 ** int(match.group(2) or 0)))
            except (ValueError, OverflowError):
                continue
    return values


def _caption_texts(cell) -> list[str]:
    mystnb = cell.get("metadata", {}).get("mystnb", {})
    return [str(mystnb.get("figure", {}).get("caption", "")), str(mystnb.get("image", {}).get("alt", ""))]


def check_page(path: Path) -> list[str]:
    """Problems of one page: every quoted figure that no output, code literal or citation supports."""
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    if path.suffix == ".md":
        prose = [(f"{name}", path.read_text())]
        printed, literals = [], []
    else:
        cells = json.loads(path.read_text())["cells"]
        prose = []
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "markdown":
                prose.append((f"{name}, cell {index}", cell_source(cell)))
            elif cell["cell_type"] == "code":
                prose += [(f"{name}, caption of cell {index}", text) for text in _caption_texts(cell) if text]
        code = [c for c in cells if c["cell_type"] == "code"]
        printed = _numbers(text for c in code for text in _output_texts(c))
        literals = _numbers((cell_source(c) for c in code), _CODE_NUMBER)
    problems = []
    for where, text in prose:
        for figure in figures_in(text, where):
            if supported(figure, printed, literals, ARITHMETIC.get(path.stem, {})):
                continue
            quoted = f"{figure.digits}{'%' if figure.percent else ''}"
            problems.append(f"{figure.where}\n    '{quoted}' is not in this page's outputs (at the precision quoted), "
                            "not a literal of its code, not glued and not a cited constant")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="pages (default: every notebook and .md page in book/)")
    args = parser.parse_args(argv)
    paths = [Path(p).resolve() for p in args.paths] or book_pages(ROOT)
    total = 0
    for path in paths:
        problems = check_page(path)
        total += len(problems)
        for problem in problems:
            print(problem)
    print(f"{len(paths)} pages checked, {total} unsupported figures")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
