"""Sphinx extension: `course_hide_solutions = True` leaves every exercise solution out of the built site.

For workshop sessions where learners should try the exercises first (`python3 tools/run.py book
--hide-solutions`). sphinx-exercise's own `hide_solutions` option crashes on gated solutions
(`solution-start`/`solution-end` around code cells: "unknown node type: solution_end_node", sphinx-exercise
1.2.1), so solutions are removed here instead, after sphinx-exercise has merged gated solutions into
ordinary solution nodes.
"""
from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_node


class RemoveSolutions(SphinxTransform):
    default_priority = 11  # sphinx-exercise's MergeGatedSolutions runs at 10

    def apply(self):
        if not self.config.course_hide_solutions:
            return
        for node in list(self.document.findall(solution_node)):
            node.parent.remove(node)


def setup(app):
    app.add_config_value("course_hide_solutions", False, "env")
    app.add_transform(RemoveSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
