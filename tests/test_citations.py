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


BIB = r"""
@article{one, author = {Ada Lovelace}, title = {Notes}, year = {1843}}
@article{two, author = {Sepp Hochreiter and J{\"u}rgen Schmidhuber}, title = {Long Short-Term Memory}, year = {1997}}
@article{von, author = {Bart van Merri{\"e}nboer and A. B and C. D}, title = {Blocks}, year = {2015}}
@article{first, author = {Kyunghyun Cho and A. B and C. D}, title = {Alpha}, year = {2014}}
@article{second, author = {Kyunghyun Cho and E. F and G. H}, title = {Beta}, year = {2014}}
@misc{nobody, title = {Tensor {Processing}}, year = {2020}}
"""


def test_labels_are_author_year_and_tell_apart_two_works_of_one_first_author_and_year():
    from pybtex.database import parse_string

    from tools.course_bibliography import AuthorYearLabelStyle, label_for

    entries = parse_string(BIB, "bibtex").entries
    assert [label_for(entries[key]) for key in ("one", "two", "von", "nobody")] == [
        "Lovelace, 1843", "Hochreiter and Schmidhuber, 1997", "van Merriënboer et al., 2015",
        "Tensor Processing, 2020"]
    # in list order: the first listed of two equal labels gets "a"
    labels = list(AuthorYearLabelStyle().format_labels([entries["first"], entries["one"], entries["second"]]))
    assert labels == ["Cho et al., 2014a", "Lovelace, 1843", "Cho et al., 2014b"]


def test_the_list_sorts_by_first_author_then_year_so_labels_read_in_order():
    from pybtex.database import parse_string

    from tools.course_bibliography import FirstAuthorYearSortingStyle

    bib = BIB + r"""
@article{team, author = {Sepp Hochreiter and Y. Bengio and P. Frasconi}, title = {Gradient Flow}, year = {2001}}
@misc{org, author = {{NVIDIA}}, title = {{H100}}, year = {2022}}
"""
    entries = parse_string(bib, "bibtex").entries
    order = [e.key for e in FirstAuthorYearSortingStyle().sort(entries.values())]
    assert order.index("two") < order.index("team")            # Hochreiter 1997 before Hochreiter et al. 2001
    assert order.index("first") < order.index("second")        # one first author and year: by title
    assert order.index("org") < order.index("nobody")          # a braced organisation sorts by its name
