"""What the linter cannot see: a signature's continuation lines stay under its opening parenthesis.

Ruff has no rule for visual indentation (pycodestyle's E128), and renaming a function leaves its continuation
lines where the old name put them (`def encode(` renamed `def encode_forward(`).
"""
from __future__ import annotations

import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("transformer_course", "tools", "tests", "benchmarks")


def misaligned_signature_lines(source: str) -> list[int]:
    """Line numbers of a `def` signature's continuation lines that do not start one column after its `(`.
    A signature that breaks right after `(` (a hanging indent) is left alone."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    bad = []
    for i, token in enumerate(tokens):
        if not (token.type == tokenize.NAME and token.string == "def"):
            continue
        opening = tokens[i + 2]                          # def NAME (
        if opening.string != "(" or tokens[i + 3].type == tokenize.NL:
            continue
        depth, column, line = 0, opening.start[1] + 1, opening.start[0]
        for later in tokens[i + 2:]:
            if later.type in (tokenize.NL, tokenize.COMMENT):
                continue
            if later.start[0] != line:               # the first token of a continuation line
                line = later.start[0]
                if depth == 1 and later.string != ")" and later.start[1] != column:
                    bad.append(line)
            if later.string in "([{":
                depth += 1
            elif later.string in ")]}":
                depth -= 1
                if depth == 0:
                    break
    return bad


def test_a_misaligned_signature_is_found():
    source = ("def encode_forward(src, params,\n"
              "           rng=None):\n"
              "    pass\n\n\n"
              "def decode(tgt, memory,\n"
              "           rng=None, *, out: dict[str, int] | None = None):\n"
              "    pass\n\n\n"
              "def hanging(\n"
              "    a, b,\n"
              "):\n"
              "    pass\n")
    assert misaligned_signature_lines(source) == [2]


def test_every_signature_is_aligned_under_its_parenthesis():
    problems = []
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            problems += [f"{path.relative_to(ROOT)}:{line}" for line in misaligned_signature_lines(path.read_text())]
    assert not problems, "continuation lines not under the signature's opening parenthesis:\n" + "\n".join(problems)
