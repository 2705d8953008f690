"""Sphinx extension: one label per work, the same in the text and in the list of works cited.

sphinxcontrib-bibtex's default list style labels each work with pybtex's alpha label ("[BCB15]"), while its
author-year citations in the text read "[Bahdanau et al., 2015]": a reader who looks up a citation cannot match
the two. Worse, two works of the same first author and year ("Cho et al., 2014" twice) cite identically.

This extension registers
- a pybtex label style, `course_author_year`: "Surname, 2015", "Surname and Other, 2015" or "Surname et al., 2015"
  from the authors (else the editors, else the title), with "a", "b", ... after the year where two works would
  get one label;
- a pybtex sorting style, `course_first_author_year`: by the first author's surname, then the year, then the
  title, so that the list reads in label order ("Hochreiter and Schmidhuber, 1997" before "Hochreiter et al.,
  2001") and "2014a" is the earlier title in the alphabet;
- a pybtex formatting style, `course` (pybtex's `unsrt` entries, sorted and labelled as above), which
  `bibtex_default_style: course` selects for the list;
- a referencing style, `course_label`, which cites a work in the text by that same label, several works in one
  citation separated by semicolons ("[Bahdanau et al., 2015; Luong et al., 2015]"), selected by
  `bibtex_reference_style: course_label`.
The labels only need pybtex (`label_for` is tested without Sphinx).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from pybtex.plugin import register_plugin as register_pybtex_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle

LABEL_STYLE, SORTING_STYLE = "course_author_year", "course_first_author_year"
FORMATTING_STYLE, REFERENCE_STYLE = "course", "course_label"


def _surname(person) -> str:
    """"van Merriënboer", "Vaswani": the von part and last names as plain text (TeX braces and accents resolved)."""
    return " ".join(part.render_as("text") for part in [*person.rich_prelast_names, *person.rich_last_names])


def label_for(entry) -> str:
    """A work's label without the a/b suffix: who (one, two, or the first et al.), a comma, the year."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    surnames = [_surname(person) for person in persons]
    if not surnames:
        who = Text.from_latex(entry.fields["title"]).render_as("text") if "title" in entry.fields else entry.key
    elif len(surnames) == 1:
        who = surnames[0]
    elif len(surnames) == 2:
        who = f"{surnames[0]} and {surnames[1]}"
    else:
        who = f"{surnames[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


def sort_key(entry) -> tuple[str, str, str]:
    """(first author's surname, year, title), lower case and without TeX braces: the order of the labels."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    title = Text.from_latex(entry.fields.get("title", "")).render_as("text")
    first = _surname(persons[0]) if persons else title
    return first.lower(), entry.fields.get("year", ""), title.lower()


class FirstAuthorYearSortingStyle(BaseSortingStyle):
    def sorting_key(self, entry):
        return sort_key(entry)


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        labels = [label_for(entry) for entry in sorted_entries]
        total, seen = Counter(labels), Counter()
        for label in labels:   # in list order, so "2014a" comes before "2014b" in the list
            if total[label] == 1:
                yield label
            else:
                yield label + "abcdefghijklmnopqrstuvwxyz"[seen[label]]
                seen[label] += 1


class CourseStyle(UnsrtStyle):
    default_label_style = LABEL_STYLE
    default_sorting_style = SORTING_STYLE


def _reference_style():
    """The label referencing style with "; " between works (a label holds commas itself)."""
    from sphinxcontrib.bibtex.style.referencing import BracketStyle
    from sphinxcontrib.bibtex.style.referencing.label import LabelReferenceStyle

    def brackets():
        return BracketStyle(sep="; ")

    @dataclass
    class CourseLabelReferenceStyle(LabelReferenceStyle):
        bracket_textual: BracketStyle = field(default_factory=brackets)
        bracket_parenthetical: BracketStyle = field(default_factory=brackets)
        bracket_label: BracketStyle = field(default_factory=brackets)

    return CourseLabelReferenceStyle


def setup(app):
    from sphinxcontrib.bibtex.plugin import register_plugin as register_bibtex_plugin

    register_pybtex_plugin("pybtex.style.labels", LABEL_STYLE, AuthorYearLabelStyle)
    register_pybtex_plugin("pybtex.style.sorting", SORTING_STYLE, FirstAuthorYearSortingStyle)
    register_pybtex_plugin("pybtex.style.formatting", FORMATTING_STYLE, CourseStyle)
    register_bibtex_plugin("sphinxcontrib.bibtex.style.referencing", REFERENCE_STYLE, _reference_style())
    return {"parallel_read_safe": True, "parallel_write_safe": True}
