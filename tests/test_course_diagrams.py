"""The `course-diagram` directive (tools/course_diagrams.py) puts a package diagram on a static page."""
import base64
import re
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
from sphinx.application import Sphinx

ROOT = Path(__file__).resolve().parent.parent


def build(tmp_path, body):
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text("extensions = ['tools.course_diagrams']\n")   # tests/conftest.py loads tools
    (src / "index.rst").write_text("Page\n====\n\n" + body)
    warnings = tmp_path / "warnings.txt"
    with open(warnings, "w") as stream:
        app = Sphinx(str(src), str(src), str(tmp_path / "html"), str(tmp_path / "doctrees"), "html",
                     status=None, warning=stream, freshenv=True)
        app.build()
    return (tmp_path / "html" / "index.html").read_text(), warnings.read_text()


def test_the_diagram_is_embedded_at_twice_its_display_width(tmp_path):
    html, warnings = build(tmp_path, ".. course-diagram:: transformer_diagram\n   :preset: course\n"
                                     "   :norm-first: true\n   :alt: the whole model\n   :name: fig-x\n\n"
                                     "   The caption.\n")
    assert warnings == ""
    image = re.search(r'<img alt="the whole model" class="no-scaled-link" '
                      r'src="data:image/png;base64,([^"]+)" style="width: (\d+)px;"', html)
    assert image, html
    png = base64.b64decode(image.group(1))
    assert int.from_bytes(png[16:20], "big") == 2 * int(image.group(2))      # PNG width = 2x the CSS width
    assert 'id="fig-x"' in html and "The caption." in html
    assert "_images/" not in html                                          # no image file written


@pytest.mark.parametrize("body, message", [
    (".. course-diagram:: plot_attention\n   :alt: x\n", "expected one of the \\*_diagram functions"),
    (".. course-diagram:: transformer_diagram\n", "the :alt: option is required"),
    (".. course-diagram:: transformer_diagram\n   :alt: x\n   :norm-first: maybe\n", "norm-first"),
])
def test_bad_uses_are_reported(tmp_path, body, message):
    _, warnings = build(tmp_path, body)
    assert re.search(message, warnings), warnings
