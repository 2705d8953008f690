"""The workshop guide's block notes quote the chapters' section headings and the exercise checks' messages: each
quote must still be there, so that a renamed heading or a reworded hint cannot leave the guide pointing at nothing."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _headings() -> set[str]:
    found = set()
    for notebook in (ROOT / "book").glob("*.ipynb"):
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                found |= {re.sub(r"\s+", " ", line.lstrip("#").strip())
                          for line in "".join(cell["source"]).splitlines() if line.startswith("#")}
    return found


def _check_messages() -> str:
    """The text of the package's sources, whitespace and string-literal breaks folded away."""
    sources = " ".join(p.read_text(encoding="utf-8") for p in (ROOT / "transformer_course").rglob("*.py"))
    return re.sub(r"\s+", " ", re.sub(r'"\s*\n\s*f?"', "", sources))


def missing_quotes(guide: str) -> tuple[list[str], int]:
    """(quotes of the guide's block notes found in no chapter heading and no check message, quotes in all)."""
    notes = re.sub(r"\s+", " ", guide[guide.index("### Notes for each block"):guide.index("## When a learner")])
    # a quote is text between two double quotes; the text between two quotes ('", "', '". Scroll: "') is not
    quotes = [q for q in re.findall(r'"([^"]{4,160})"', notes) if not q.startswith((". ", ", ", " "))]
    headings, messages = _headings(), _check_messages()
    return [q for q in quotes if q not in headings and not any(h.startswith(q) for h in headings)
            and q not in messages], len(quotes)


def test_the_block_notes_quote_headings_and_check_messages_that_exist():
    guide = (ROOT / "book" / "workshop_guide.md").read_text(encoding="utf-8")
    missing, quoted = missing_quotes(guide)
    assert quoted >= 40                                        # the notes name sections and hints throughout
    assert not missing, f"quoted in the guide's block notes, found in no heading or check: {missing}"
    # the control: a renamed heading and a reworded hint are both found
    planted = guide.replace('"Attention as a soft look-up"', '"Attention as a soft lookup"', 1)
    planted = planted.replace('"a query row whose keys are ALL masked"', '"a row whose keys are all masked"', 1)
    assert missing_quotes(planted)[0] == ["Attention as a soft lookup", "a row whose keys are all masked"]
