"""Sphinx extension: the `course-diagram` directive draws a diagram of `transformer_course.viz.diagrams` at build
time, so a static page (book/intro.md) shows the same figure as the chapters without a committed image file.

    ```{course-diagram} transformer_diagram
    :preset: paper-base
    :norm-first: false
    :alt: what the figure shows, for readers who cannot see it
    :name: fig-intro-transformer

    The caption.
    ```

The figure is embedded in the page as a PNG data URI with twice the pixels of its display width (as `retina`
makes it in the notebooks): no file is written, and the page needs no network.
"""
from __future__ import annotations

import base64
from typing import ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

_FLAGS = {"true": True, "false": False}


def _flag(argument: str) -> bool:
    return _FLAGS[directives.choice(argument.strip().lower(), tuple(_FLAGS))]


class CourseDiagram(SphinxDirective):
    required_arguments = 1                         # the name of a function of transformer_course.viz.diagrams
    has_content = True                             # the caption
    option_spec: ClassVar[dict] = {"preset": directives.unchanged_required, "norm-first": _flag,
                                   "alt": directives.unchanged_required, "name": directives.unchanged_required}

    def run(self):
        import matplotlib

        matplotlib.use("Agg")
        from transformer_course.config import get_preset
        from transformer_course.viz import diagrams

        name = self.arguments[0]
        if name not in diagrams.__all__ or not name.endswith("_diagram"):
            raise self.error(f"course-diagram: expected one of the *_diagram functions of "
                             f"transformer_course.viz.diagrams, got {name!r}")
        if "alt" not in self.options:
            raise self.error("course-diagram: the :alt: option is required (what the diagram shows, in words)")
        kwargs = {}
        if "preset" in self.options:
            kwargs["config"] = get_preset(self.options["preset"])
        if "norm-first" in self.options:
            kwargs["norm_first"] = self.options["norm-first"]
        image = diagrams.retina(getattr(diagrams, name)(**kwargs))
        uri = "data:image/png;base64," + base64.b64encode(image.data).decode("ascii")
        figure = nodes.figure()
        # no-scaled-link: Sphinx would otherwise wrap the image in a link to itself, a second copy of the data
        figure += nodes.image(uri=uri, alt=self.options["alt"], width=f"{image.width}px", classes=["no-scaled-link"])
        if self.content:
            caption_parent = nodes.Element()
            self.state.nested_parse(self.content, self.content_offset, caption_parent)
            paragraph = caption_parent[0]
            caption = nodes.caption(paragraph.rawsource, "", *paragraph.children)
            caption.source, caption.line = paragraph.source, paragraph.line
            figure += caption
        self.add_name(figure)                      # the :name: option, a target for {numref}
        return [figure]


def setup(app):
    app.add_directive("course-diagram", CourseDiagram)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
