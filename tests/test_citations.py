"""The references page's index by page (tools/citations.py) lists what the pages cite now."""
import pytest

pytest.importorskip("pybtex")   # the book's extra (sphinxcontrib-bibtex's parser): absent from the matrix's legs
from tools import citations


def test_keys_are_read_from_every_cite_role_once_in_order():
    text = "see {cite}`b, a` and {cite:t}`c`, then {cite:p}`a`; not `{cite}` code or {doc}`x`"
    assert citations.cited_keys(text) == ["b", "a", "c"]


def test_the_index_is_up_to_date_and_included():
    assert citations.OUT.read_text(encoding="utf-8") == citations.render(), "stale: run python -m tools.citations"
    assert "{include} generated/citations_by_page.md" in (citations.ROOT / "book" / "references.md").read_text()


def test_every_page_that_cites_is_listed():
    text = citations.render()
    for docname in citations.toc_docnames(citations.ROOT):
        if docname not in citations.SKIP and citations.cited_keys(citations.page_text(docname)):
            assert f"{{doc}}`{docname.removeprefix('book/')}`" in text, docname
