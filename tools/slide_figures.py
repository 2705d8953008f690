"""Slide figures: the figures of cells tagged `slide`, as SVG with their text kept as text, sized for a projector.

While tools/execute_notebooks.py executes a chapter for storage, every figure that a cell tagged `slide` shows
is also saved as SVG into book/generated/slides/CHAPTER/ (CELL-ID-K.svg), with a manifest (figures.json) that
ties each file to the PNG that the notebook stores for the same figure (its SHA-256): the decks
(tools/slides.py) use a figure's SVG only while it belongs to the stored run, and a test checks that it does.

On a slide the figure fills FIGURE_BOX_PX of reveal.js's 1280x800 canvas as far as its shape allows; the SVG's
text is enlarged (each piece of text to at least the size needed, larger text left as it is) until its
smallest text is MIN_LABEL_PX tall there (a label typeset as maths by its main glyphs: matplotlib sets sub- and
superscripts at 70%). 19 canvas pixels are 18 screen pixels at 1280x800, where reveal.js scales the canvas by
0.96 (its margin). A tall figure gets room through its cell's metadata `slide_figsize` (inches): the copy saved
for the slide is drawn at that size. The text is kept as text in DejaVu Sans, matplotlib's font, which a browser
without it replaces by its own sans-serif.

The capture half of this file runs inside the notebook's kernel (execute_notebooks sends its source), so
everything above the line "host side" imports only what a chapter's kernel has: matplotlib and IPython.
"""
from __future__ import annotations

import hashlib
import html
import io
import json
import re
from pathlib import Path

FIGURE_BOX_PX = (1180, 540)   # width, height in the 1280x800 canvas (tools/slides.py's CSS gives the rest)
MIN_LABEL_PX = 19             # canvas pixels: 18 screen pixels at 1280x800
TIGHT_PAD_IN = 0.1            # savefig's pad around a tight bounding box (matplotlib's default)


def slide_scale(width_pt: float, height_pt: float) -> float:
    """CSS pixels per point where a deck shows a figure of this size: as large as FIGURE_BOX_PX allows."""
    box_width, box_height = FIGURE_BOX_PX
    return min(box_width / width_pt, box_height / height_pt)


def _enlarge_text(fig, floor: float) -> bool:
    """Raise every visible piece of text under `floor` points (or within 1% above it: the saved file's tight box
    differs from the one measured here by a fraction of a point) to 3% above it; False when none was that small.
    Tick labels through their axes' tick parameters: matplotlib makes new ticks from those when it draws."""
    floor *= 1.01
    from matplotlib.text import Text

    fig.draw_without_rendering()                         # tick labels get their text when drawn
    enlarged, tick_labels = False, set()
    for ax in fig.axes:
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = [t for t in axis.get_ticklabels(which="both") if t.get_visible() and t.get_text().strip()]
            tick_labels.update(map(id, axis.get_ticklabels(which="both")))
            if labels and min(t.get_fontsize() for t in labels) < floor:
                ax.tick_params(axis=name, which="both", labelsize=floor * 1.02)   # 3% above the floor
                enlarged = True
    for text in fig.findobj(Text):
        if (id(text) not in tick_labels and text.get_visible() and text.get_text().strip()
                and text.get_fontsize() < floor):
            text.set_fontsize(floor * 1.02)
            enlarged = True
    return enlarged


def _fit_boxes(fig) -> None:
    """Widen and heighten each box of a diagram (a FancyBboxPatch of an axes) around the text centred in it,
    once that text is enlarged: a diagram draws its boxes for the page's text size."""
    from matplotlib.patches import FancyBboxPatch

    renderer = fig._get_renderer()
    for ax in fig.axes:
        boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
        for text in ax.texts:
            x, y = text.get_position()
            for box in boxes:
                left, bottom, width, height = box.get_x(), box.get_y(), box.get_width(), box.get_height()
                if not (left <= x <= left + width and bottom <= y <= bottom + height):
                    continue
                extent = text.get_window_extent(renderer).transformed(ax.transData.inverted())  # data units
                pad = 0.15 * abs(extent.height)
                need_w, need_h = abs(extent.width) + 2 * pad, abs(extent.height) + pad
                if need_w > width or need_h > height:
                    width, height = max(width, need_w), max(height, need_h)
                    box.set_bounds(left + box.get_width() / 2 - width / 2, bottom + box.get_height() / 2 - height / 2,
                                   width, height)
                    box.set_clip_on(False)               # a box grown past the axes' edge is not cut there


def slide_svg(fig, figsize: tuple[float, float] | None = None) -> str:
    """The figure as SVG (text as text, stable ids), its small text enlarged for a slide. A copy is enlarged, so
    the figure (and the PNG the notebook stores) stays as it was. Enlarging text widens the tight box, which
    shrinks the figure on the slide: a few rounds settle it. A figure whose text would not fit that way (a tall
    page of text) is redrawn at `figsize` (inches, the cell's metadata `slide_figsize`), nearer the slide's
    shape, first."""
    import pickle

    fig = pickle.loads(pickle.dumps(fig))
    if figsize is not None:
        fig.set_size_inches(*figsize)
    for _ in range(8):
        svg = _render_svg(fig)                           # measured as written: the SVG renderer's own text extents
        if not _enlarge_text(fig, MIN_LABEL_PX / slide_scale(*svg_size_pt(svg))):
            return svg
        _fit_boxes(fig)
    raise ValueError(f"its text cannot reach {MIN_LABEL_PX} px on a slide at {fig.get_size_inches().round(1)} "
                     "inches: each enlargement widens the figure as much (text placed beside data, too long for a "
                     "slide?); give the cell a `slide_figsize` (inches, nearer the slide's shape) in its metadata, "
                     "or shorten the text")


def _render_svg(fig) -> str:
    import matplotlib as mpl

    buffer = io.StringIO()
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "transformer-course"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", pad_inches=TIGHT_PAD_IN,
                    metadata={"Date": None}, facecolor="white")
    return _round_numbers(_number_ids(buffer.getvalue()))


def svg_size_pt(svg: str) -> tuple[float, float]:
    """The width and height, in points, that an SVG of matplotlib's declares on its root element."""
    root = re.search(r"<svg\b[^>]*>", svg)
    size = root and re.search(r'\swidth="([\d.]+)pt"\s+height="([\d.]+)pt"', root.group(0))
    if size is None:
        raise ValueError("expected an SVG whose width and height are in points")
    return float(size.group(1)), float(size.group(2))


def _round_numbers(svg: str) -> str:
    """Coordinates and sizes to 0.01 pt (a hundredth of what a screen shows): the layout's last digits differ
    from copy to copy of the same figure. Only inside attributes: the text a figure shows keeps its digits."""
    def in_attribute(match):
        return re.sub(r"-?\d+\.\d{3,}", lambda n: f"{float(n.group(0)):.2f}", match.group(0))
    return re.sub(r'="[^"]*"', in_attribute, svg)


def _number_ids(svg: str) -> str:
    """matplotlib names clip paths and images by a hash that includes object addresses, which change from run to
    run: rename them in order of appearance, so that the same figure gives the same file."""
    hashed = dict.fromkeys(re.findall(r'\bid="([a-z]+[0-9a-f]{10})"', svg))
    names = {old: f"{old.rstrip('0123456789abcdef') or 'x'}{k}" for k, old in enumerate(hashed)}
    if not names:
        return svg
    return re.sub("|".join(map(re.escape, names)), lambda m: names[m.group(0)], svg)


class Recorder:
    """Saves, as SVG, each figure displayed while a cell is named (`cell`); IPython asks it for the SVG of every
    figure, image or flip book it displays, and it answers None, so the notebook's outputs do not change.
    A course figure shown as an image (viz.diagrams.retina, viz.flipbook.FlipBook) carries its matplotlib
    figure as `.figure`."""

    def __init__(self, directory: str):
        self.directory = Path(directory)
        self.cell_name: str | None = None
        self.figsize: tuple[float, float] | None = None
        self.saved: dict[str, list[str]] = {}

    def cell(self, name: str | None, figsize: tuple[float, float] | None = None) -> None:
        """Name the cell about to run (None: save nothing). Registers again each time: matplotlib's inline
        backend, when its module is first imported (at the chapter's first figure), removes every other formatter
        of figures, so it is imported here first."""
        import matplotlib_inline.backend_inline  # noqa: F401 (imported for what importing it does)
        from IPython import get_ipython
        from IPython.display import Image
        from matplotlib.figure import Figure

        from transformer_course.viz.flipbook import FlipBook

        self.cell_name, self.figsize = name, figsize
        if name is not None:
            svg = get_ipython().display_formatter.formatters["image/svg+xml"]
            for kind in (Figure, Image, FlipBook):
                svg.for_type(kind, self)

    def __call__(self, obj) -> None:
        from matplotlib.figure import Figure

        fig = obj if isinstance(obj, Figure) else getattr(obj, "figure", None)
        if self.cell_name is None or not isinstance(fig, Figure):
            return None
        files = self.saved.setdefault(self.cell_name, [])
        name = f"{self.cell_name}-{len(files)}"
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            (self.directory / f"{name}.svg").write_text(slide_svg(fig, self.figsize), encoding="utf-8")
        except Exception as error:   # IPython would print it into the cell's output: the host reports it instead
            (self.directory / f"{name}.error").write_text(f"{type(error).__name__}: {error}", encoding="utf-8")
        files.append(name)
        return None


# ------------------------------------------------------------------------------------------------ host side
GENERATED = Path(__file__).resolve().parent.parent / "book" / "generated" / "slides"
MANIFEST = "figures.json"
SLIDE_TAG = "slide"            # the cell tag that puts a cell on the slides (tools/slides.py)


def figure_dir(notebook: Path) -> Path:
    return GENERATED / Path(notebook).stem


def png_digest(png_base64: str) -> str:
    return hashlib.sha256("".join(png_base64.split()).encode("ascii")).hexdigest()


def stored_pngs(cell: dict) -> list[str]:
    """The PNGs (base64) that a cell's stored outputs show, in order."""
    return [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]


def slide_cells(cells: list[dict]) -> list[dict]:
    """The code cells tagged `slide` that show figures."""
    return [c for c in cells if c.get("cell_type") == "code" and SLIDE_TAG in c.get("metadata", {}).get("tags", [])
            and stored_pngs(c)]


def write_manifest(notebook: Path, cells: list[dict]) -> None:
    """Tie the SVGs saved while `notebook` ran (by Recorder, into figure_dir) to its stored PNGs, one per figure
    of every slide cell; an error while saving one, or a figure without its SVG, stops with the reason."""
    folder = figure_dir(notebook)
    errors = sorted(folder.glob("*.error"))
    if errors:
        reasons = "; ".join(f"{e.stem}: {e.read_text(encoding='utf-8')}" for e in errors)
        for error in errors:
            error.unlink()
        raise RuntimeError(f"{Path(notebook).name}: a slide figure could not be saved as SVG ({reasons})")
    manifest = {}
    for cell in slide_cells(cells):
        pngs = stored_pngs(cell)
        files = [f"{cell['id']}-{k}.svg" for k in range(len(pngs))]
        missing = [f for f in files if not (folder / f).exists()]
        if missing or (folder / f"{cell['id']}-{len(pngs)}.svg").exists():
            raise RuntimeError(f"{Path(notebook).name}: cell {cell['id']} stores {len(pngs)} figures, but its SVGs "
                               f"are not one per figure (missing: {missing})")
        manifest[cell["id"]] = [{"svg": file, "png_sha256": png_digest(png)} for file, png in zip(files, pngs)]
    kept = {entry["svg"] for entries in manifest.values() for entry in entries}
    for stale in folder.glob("*.svg"):
        if stale.name not in kept:
            stale.unlink()
    if manifest:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    elif (folder / MANIFEST).exists():
        (folder / MANIFEST).unlink()


def slide_svgs(notebook: Path, cell: dict) -> list[str] | None:
    """The slide SVGs of one stored cell, in order, or None when they are missing or from another run."""
    manifest_file = figure_dir(notebook) / MANIFEST
    if not manifest_file.exists():
        return None
    entries = json.loads(manifest_file.read_text(encoding="utf-8")).get(cell.get("id"))
    pngs = stored_pngs(cell)
    if not entries or len(entries) != len(pngs) or any(e["png_sha256"] != png_digest(p)
                                                        for e, p in zip(entries, pngs)):
        return None
    return [(figure_dir(notebook) / e["svg"]).read_text(encoding="utf-8") for e in entries]


def inline_svg(svg: str, prefix: str, alt: str) -> str:
    """An SVG file of slide_svg as an element of an HTML page: sized in CSS pixels as slide_svg planned
    (FIGURE_BOX_PX), its ids prefixed (several figures share a deck), labelled for screen readers."""
    width_pt, height_pt = svg_size_pt(svg)
    scale = slide_scale(width_pt, height_pt)
    root = re.search(r"<svg\b[^>]*>", svg)
    opening = re.sub(r'\swidth="[\d.]+pt"\s+height="[\d.]+pt"',
                     f' width="{width_pt * scale:.0f}" height="{height_pt * scale:.0f}" class="figure" role="img" '
                     f'aria-label="{html.escape(alt, quote=True)}"', root.group(0), count=1)
    body = re.sub(r"\s*<metadata>.*?</metadata>", "", opening + svg[root.end():], flags=re.S)  # RDF for files
    body = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', body)
    body = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", body)
    return re.sub(r'href="#([^"]+)"', rf'href="#{prefix}-\1"', body)
