"""The project stands on its own: no page, module, test, tool or benchmark refers to planning material.

Every notebook cell's source and every page under book/, and every text file under transformer_course/, tests/,
tools/ and benchmarks/, plus _config.yml and README.md, is searched case-insensitively. Stored notebook outputs
are not searched ("seed 0" is a fine thing for a table of runs to print).
The phrases are assembled from pieces so that this file does not contain them itself.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEARCHED_DIRS = ("book", "transformer_course", "tests", "tools", "benchmarks")
SEARCHED_FILES = ("_config.yml", "README.md")
TEXT_SUFFIXES = {".py", ".md", ".ipynb", ".txt", ".cfg", ".toml", ".yml", ".yaml", ".json", ".bib", ".tsv",
                 ".csv", ".html", ".rst", ".sh", ".ini"}

_PIECES = [
    ("sour", "ce notes"), ("se", "ed notes"), ("source b", "ook"), ("lecture n", "otes"), ("lecture s", "lides"),
    ("tutorial n", "ote"), ("the no", "tes'"), ("DES", "IGN.md"), ("CURRIC", "ULUM.md"), ("TOOL", "ING.md"),
]
PATTERN = re.compile("|".join([re.escape(a + b) for a, b in _PIECES] + ["se" + r"ed 00\d"]), re.IGNORECASE)


def searched_files() -> list[Path]:
    files = [ROOT / name for name in SEARCHED_FILES if (ROOT / name).is_file()]
    for folder in SEARCHED_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            skipped = {"__pycache__", ".ipynb_checkpoints"} & set(path.relative_to(ROOT).parts)
            if path.is_file() and path.suffix in TEXT_SUFFIXES and not skipped:
                files.append(path)
    return files


def searched_text(path: Path) -> str:
    """A file's text; for a notebook, its cells' sources only (outputs are what code printed)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix != ".ipynb":
        return text
    cells = json.loads(text).get("cells", [])
    return "\n".join("".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells)


def traces(text: str) -> list[str]:
    """The offending phrases in a text, each with a little context."""
    return [text[max(0, m.start() - 40):m.end() + 40].replace("\n", " ") for m in PATTERN.finditer(text)]


@pytest.mark.parametrize("path", searched_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_trace_of_drafts(path):
    found = traces(searched_text(path))
    assert not found, f"{path.relative_to(ROOT)} refers to planning material: {found}"


def test_the_search_finds_every_phrase():
    """Each phrase, in any case, is caught; ordinary words near them are not."""
    for a, b in _PIECES:
        assert traces(f"as {(a + b).upper()} say") and traces(f"as {a + b} say")
    assert traces("in " + "seed" + " 002 we read") and not traces("seed 0 and seed 1 agree")
    assert not traces("the notes of a scale; lecture halls; a source of noise; seeded runs")


def test_notebook_outputs_are_not_searched(tmp_path):
    cell = {"cell_type": "code", "source": "print(seeds)", "metadata": {}, "execution_count": 1,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "se" + "ed 003 done"}]}
    notebook = tmp_path / "n.ipynb"
    notebook.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert traces(searched_text(notebook)) == []
    cell["source"] = "# from the " + "sour" + "ce notes"
    notebook.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert traces(searched_text(notebook))
