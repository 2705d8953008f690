"""Slide figures (tools/slide_figures.py): SVG with text kept as text, labels large enough for a projector, from the
same run as the PNGs the chapters store."""
from __future__ import annotations

import io
import json
import re

import matplotlib.pyplot as plt
import pytest

from tools import slide_figures
from tools.book import ROOT


def _font_px(svg: str) -> list[float]:
    """Every label's size in CSS pixels where a deck shows this SVG: a <text>'s font size, or for one typeset as
    maths (<tspan>s) that of its largest glyphs (sub- and superscripts are smaller by design)."""
    width, height = map(float, re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())
    scale = slide_figures.slide_scale(width, height)
    return [max(map(float, re.findall(r"font(?:-size)?: ([\d.]+)px", label))) * scale
            for label in re.findall(r"<text\b.*?</text>", svg, flags=re.S)]


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


@pytest.mark.parametrize("figsize", [(6.4, 3.6), (10, 3.6), (4.2, 4.2)])
def test_small_labels_are_enlarged_on_a_copy(figsize):
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, layout="constrained")
    left.plot([0, 1, 2], [2, 0, 1], label="a line")
    left.legend(fontsize=7)
    left.set_xlabel("step", fontsize=8)
    right.imshow([[0, 1], [1, 0]])
    right.text(0, 0, "0.50", fontsize=6, ha="center")
    right.set_title("a title", fontsize=16)
    before = _png(fig)
    svg = slide_figures.slide_svg(fig)
    sizes = _font_px(svg)
    assert len(sizes) >= 10                                         # tick labels, legend, labels: text as text
    assert min(sizes) >= slide_figures.MIN_LABEL_PX
    assert max(sizes) == pytest.approx(16 * slide_figures.slide_scale(
        *map(float, re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups())))  # larger text kept
    assert _png(fig) == before                                      # the figure itself is untouched
    assert slide_figures.slide_svg(fig) == svg                      # the same file every time
    plt.close(fig)


def test_inline_svg_is_sized_and_its_ids_prefixed():
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot([0, 1], [0, 1])
    svg = slide_figures.slide_svg(fig)
    plt.close(fig)
    html = slide_figures.inline_svg(svg, "f7", 'a "diagonal" line')
    opening = re.match(r"<svg\b[^>]*>", html).group(0)
    width, height = (int(re.search(rf' {side}="(\d+)"', opening).group(1)) for side in ("width", "height"))
    box_width, box_height = slide_figures.FIGURE_BOX_PX
    assert (width == box_width and height <= box_height) or (height == box_height and width <= box_width)
    assert 'aria-label="a &quot;diagonal&quot; line"' in opening and 'class="figure"' in opening
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert ids and all(i.startswith("f7-") for i in ids)
    assert all(ref.startswith("f7-") for ref in re.findall(r"url\(#([^)]+)\)", html))


def test_every_slide_figure_of_the_book_has_its_svg_from_the_stored_run():
    """Each figure of a cell tagged `slide` has an SVG written by the run whose PNG the chapter stores (the
    manifest's SHA-256 of that PNG), with its text as text and every label at least MIN_LABEL_PX on the slide."""
    checked = 0
    for notebook in sorted((ROOT / "book").glob("*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for cell in slide_figures.slide_cells(cells):
            svgs = slide_figures.slide_svgs(notebook, cell)
            assert svgs is not None, (f"{notebook.name}, cell {cell['id']}: no slide SVG from the stored run; "
                                      f"run `python -m tools.execute_notebooks book/{notebook.name}`")
            for svg in svgs:
                sizes = _font_px(svg)
                assert sizes and min(sizes) >= slide_figures.MIN_LABEL_PX - 0.01, (notebook.name, cell["id"])
                checked += 1
    assert checked >= 60


def test_an_svg_from_another_run_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(slide_figures, "GENERATED", tmp_path)
    notebook = tmp_path / "chapter.ipynb"
    cell = {"cell_type": "code", "id": "abc", "metadata": {"tags": ["slide"]},
            "outputs": [{"output_type": "display_data", "data": {"image/png": "AAAA"}}]}
    folder = slide_figures.figure_dir(notebook)
    folder.mkdir()
    (folder / "abc-0.svg").write_text("<svg/>")
    slide_figures.write_manifest(notebook, [cell])
    assert slide_figures.slide_svgs(notebook, cell) == ["<svg/>"]
    cell["outputs"][0]["data"]["image/png"] = "BBBB"                 # the chapter was run again, the SVG was not
    assert slide_figures.slide_svgs(notebook, cell) is None
    (folder / "abc-0.svg").unlink()
    with pytest.raises(RuntimeError, match="its SVGs are not one per figure"):
        slide_figures.write_manifest(notebook, [cell])
