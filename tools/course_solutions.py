"""Sphinx extension for the book's exercises: one name per exercise, and a switch that leaves solutions out.

Numbering. sphinx-exercise numbers exercises across the whole book ("Exercise 16"), while the notebooks, the
Colab copies, the slides and the workshop guide number them per chapter ("Exercise 3.6", "Exercise D.2" in
appendix D). After Sphinx has assigned its numbers, each page's exercises are renumbered in their order on the
page under the page's prefix (tools/book.py `exercise_prefix`), so titles and `{numref}` links read the same.

Solutions. `course_hide_solutions = True` leaves every exercise solution out of the built site, for the
workshop's student website (`python3 tools/run.py workshop`) and `python3 tools/run.py book --hide-solutions`.
Such a site also serves nothing that holds a solution: no page sources (`_sources/`, which would hold the whole
chapter notebooks), no download button, no link to the repository, and its Colab buttons open the student
copies (tools/course_colab.py).
sphinx-exercise's own `hide_solutions` option crashes on gated solutions (`solution-start`/`solution-end` around
code cells: "unknown node type: solution_end_node", sphinx-exercise 1.2.1), so solutions are removed here
instead, after sphinx-exercise has merged gated solutions into ordinary solution nodes.
"""
from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_node

from tools.book import exercise_prefix


class RemoveSolutions(SphinxTransform):
    default_priority = 11  # sphinx-exercise's MergeGatedSolutions runs at 10

    def apply(self):
        if not self.config.course_hide_solutions:
            return
        for node in list(self.document.findall(solution_node)):
            node.parent.remove(node)


def number_exercises_per_page(app, env) -> list[str]:
    """Replace the book-wide exercise numbers (16,) by (prefix, k): k counts the page's exercises in order.

    Sphinx numbers figures in its own `env-get-updated` handler (priority 500), which compares the new numbers
    with the previous build's and rewrites the pages whose numbers changed; this one runs after it."""
    for docname, numbers in env.toc_fignumbers.items():
        exercises = numbers.get("exercise")
        if not exercises:
            continue
        prefix = exercise_prefix(docname, env.titles[docname].astext())
        ordered = sorted(exercises, key=lambda node_id: exercises[node_id])   # book-wide order = page order
        numbers["exercise"] = {node_id: (prefix, k) for k, node_id in enumerate(ordered, start=1)}
    return []


def student_site_settings(app, config) -> None:
    """On a site without solutions, leave out every route to the chapters' full notebooks."""
    if not config.course_hide_solutions:
        return
    config.html_copy_source = False
    config.html_theme_options = {**config.html_theme_options, "use_download_button": False,
                                 "use_repository_button": False, "use_edit_page_button": False}


def setup(app):
    app.add_config_value("course_hide_solutions", False, "env")
    app.add_transform(RemoveSolutions)
    app.connect("config-inited", student_site_settings)
    app.connect("env-get-updated", number_exercises_per_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
