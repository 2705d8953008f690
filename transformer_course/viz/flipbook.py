"""Flip books: kernel-free twins of the workshop widgets, for the static website.

A live widget needs a Python kernel to redraw, so on the website it is dead. A flip book draws the widget's
figure in advance for a few values of each control and puts every drawing into one self-contained HTML block:
a slider, drop-down or tick box per control, and a few lines of JavaScript that show the drawing for the values
chosen. Everything is inline (the drawings are data URIs), so the page needs no kernel and no network.

A flip book shows as HTML in the built book and in Jupyter; it also carries a PNG of its default drawing, which
the workshop slides and any front end without HTML use.

    book = FlipBook(softmax_scaling_figure, [Control("d_k", "d_k", (1, 16, 64), default=64)])
    book          # in a notebook cell: the block, with a PNG of d_k = 64 beside it

A figure whose parts depend on different controls can be cut into panels (`Panel`), each drawn for the values of
its own controls only: two panels of 16 drawings each instead of one of 256.
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt

__all__ = ["Control", "Panel", "FlipBook", "figure_bytes"]

KINDS = ("range", "select", "checkbox")


@dataclass(frozen=True)
class Control:
    """One control of a flip book: the keyword it sets, the values drawn in advance, and how it looks.

    kind "range" is a slider over `values` in their order, "select" a drop-down, "checkbox" a tick box whose
    values are (off, on). `label` is HTML written by the course (it may use <sub>); `shown` writes each value
    for the reader (str(value) by default).
    """
    name: str
    label: str
    values: tuple
    default: object
    kind: str = "range"
    shown: tuple | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {KINDS}, got {self.kind!r}")
        if len(self.values) < 2:
            raise ValueError(f"{self.name}: expected at least two values to choose from, got {self.values!r}")
        if self.kind == "checkbox" and len(self.values) != 2:
            raise ValueError(f"{self.name}: a checkbox takes exactly two values (off, on), got {self.values!r}")
        if self.default not in self.values:
            raise ValueError(f"{self.name}: the default {self.default!r} is not one of {self.values!r}")
        if self.shown is not None and len(self.shown) != len(self.values):
            raise ValueError(f"{self.name}: expected {len(self.values)} texts in shown, got {len(self.shown)}")

    @property
    def texts(self) -> list[str]:
        return [str(text) for text in (self.shown or [_plain(v) for v in self.values])]

    @property
    def start(self) -> int:
        return self.values.index(self.default)


@dataclass(frozen=True)
class Panel:
    """A drawing that depends on some of the controls only: `draw(**values of uses)` returns a figure."""
    draw: Callable
    uses: tuple[str, ...]
    alt: str


def _plain(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _text(label: str) -> str:
    """A control's label without its HTML tags, for alt texts ("k<sub>top</sub>" -> "k_top")."""
    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"<sub>(.*?)</sub>", r"_\1", label)))


def figure_bytes(fig, dpi: int, colours: int | None, fmt: str = "png") -> bytes:
    """The figure as an image file, then closed. colours: quantise to that many (smaller files: the figures
    are flat colours and their anti-aliased edges); fmt "png" or "webp" (lossless, about a quarter smaller)."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image  # matplotlib's own dependency

    plt.close(fig)                         # pyplot forgets it: a notebook does not show it again
    # Drawn once on an Agg canvas (whatever the notebook's backend) and read back as pixels: savefig would add
    # a PNG round trip per drawing.
    fig.set_dpi(dpi)
    fig.patch.set_facecolor("white")       # opaque: the dark theme must not show through
    fig.patch.set_alpha(1.0)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy())   # (height, width, 3)
    if colours is not None:
        # method 2, the fast octree, keeps the few pixels of a thin red line red (median cut merges them into a
        # brown); dither 0, none: dithering would sprinkle noise over flat areas and make the files larger. Plain
        # numbers: the named constants are missing from older Pillow releases.
        image = image.quantize(colors=colours, method=2, dither=0)
    out = io.BytesIO()
    if fmt == "webp":   # lossless; method 4 packs as tightly as 6 here, many times faster
        image.convert("RGB").save(out, format="WEBP", lossless=True, quality=50, method=4)
    else:
        image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _webp_available() -> bool:
    from PIL import features

    return bool(features.check("webp"))


class FlipBook:
    """A figure drawn for every combination of a few control values, shown by a self-contained HTML block.

    draw: the figure function (keywords: the controls' names); used when `panels` is None, as one panel that
    uses every control. figure: draws the PNG of the default values (default: `draw`). alt: what the drawing
    shows, for readers who cannot see it; the chosen values are appended. dpi and colours: the drawings' size.
    """

    def __init__(self, draw: Callable | None, controls: Sequence[Control], *, alt: str,
                 panels: Sequence[Panel] | None = None, figure: Callable | None = None, dpi: int = 78,
                 colours: int = 16, figure_dpi: int = 100, name: str = "figure"):
        self.controls = list(controls)
        names = [c.name for c in self.controls]
        if len(set(names)) != len(names):
            raise ValueError(f"controls: expected distinct names, got {names}")
        if panels is None:
            if draw is None:
                raise ValueError("draw: expected a figure function when no panels are given")
            panels = [Panel(draw, tuple(names), alt)]
        for panel in panels:
            unknown = [u for u in panel.uses if u not in names]
            if unknown:
                raise ValueError(f"panel uses {unknown}, which no control sets (controls: {names})")
        unused = [n for n in names if not any(n in p.uses for p in panels)]
        if unused:
            raise ValueError(f"controls {unused} change no panel: moving them would change nothing")
        self.panels = list(panels)
        self.name = name
        self.alt = alt
        fmt = "webp" if _webp_available() else "png"
        self.mime = f"image/{fmt}"
        self.defaults = {c.name: c.default for c in self.controls}
        self.frames: list[str] = []          # distinct drawings as data URIs
        self.index: list[dict[str, int]] = []  # per panel: "i|j|..." (value indices of its controls) -> frame
        seen: dict[str, int] = {}
        for panel in self.panels:
            used = [self.controls[names.index(u)] for u in panel.uses]
            table = {}
            for choice in itertools.product(*(range(len(c.values)) for c in used)):
                values = {c.name: c.values[i] for c, i in zip(used, choice)}
                uri = f"data:{self.mime};base64," + base64.b64encode(
                    figure_bytes(panel.draw(**values), dpi, colours, fmt)).decode("ascii")
                if uri not in seen:           # equal drawings are stored once
                    seen[uri] = len(self.frames)
                    self.frames.append(uri)
                table["|".join(map(str, choice))] = seen[uri]
            self.index.append(table)
        draw_default = figure or (lambda: self.panels[0].draw(**{u: self.defaults[u] for u in self.panels[0].uses}))
        self.figure = draw_default()   # the default drawing, kept for slides as SVG (tools/slide_figures.py)
        self.png = figure_bytes(self.figure, figure_dpi, 64, "png")
        self.html = self._html()

    @property
    def n_settings(self) -> int:
        """How many combinations of control values the reader can choose."""
        n = 1
        for control in self.controls:
            n *= len(control.values)
        return n

    def frame(self, panel: int = 0, **values) -> str:
        """The data URI shown in `panel` for these control values (the defaults for those not given)."""
        chosen = {**self.defaults, **values}
        names = [c.name for c in self.controls]
        key = "|".join(str(self.controls[names.index(u)].values.index(chosen[u])) for u in self.panels[panel].uses)
        return self.frames[self.index[panel][key]]

    def _html(self) -> str:
        digest = hashlib.sha256("".join(self.frames).encode()).hexdigest()[:12]
        ident = f"tc-flipbook-{digest}"    # the same drawings give the same id: outputs stay reproducible
        names = [c.name for c in self.controls]
        rows = []
        for i, control in enumerate(self.controls):
            texts = control.texts
            if control.kind == "range":
                widget = (f'<input type="range" min="0" max="{len(control.values) - 1}" step="1" '
                          f'value="{control.start}" data-control="{i}" '
                          f'aria-label="{html.escape(_text(control.label))}">'
                          f' <output data-for="{i}">{html.escape(texts[control.start])}</output>')
                rows.append(f"<label><span>{control.label}</span> {widget}</label>")
            elif control.kind == "select":
                options = "".join(f'<option value="{j}"{" selected" if j == control.start else ""}>'
                                  f"{html.escape(text)}</option>" for j, text in enumerate(texts))
                rows.append(f'<label><span>{control.label}</span> <select data-control="{i}">{options}</select>'
                            "</label>")
            else:
                checked = " checked" if control.start == 1 else ""
                rows.append(f'<label><input type="checkbox" data-control="{i}"{checked}> <span>{control.label}</span>'
                            "</label>")
        said = ", ".join(f"{_text(c.label)} = {c.texts[c.start]}" for c in self.controls)
        images = "".join(
            f'<img data-panel="{p}" src="{self.frames[self.index[p][self._start_key(panel)]]}" '
            f'alt="{html.escape(panel.alt + " (" + said + ")")}">' for p, panel in enumerate(self.panels))
        data = {"controls": [{"label": _text(c.label), "shown": c.texts} for c in self.controls],
                "panels": [{"uses": [names.index(u) for u in panel.uses], "index": self.index[p], "alt": panel.alt}
                           for p, panel in enumerate(self.panels)],
                "frames": self.frames}
        # inside <script> a "</" would end the element early: JSON may write "<" as \u003c
        payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
        return (f'<div class="tc-flipbook" id="{ident}">'
                f"<style>{_CSS}</style>"
                f'<div class="tc-flipbook-controls">{"".join(rows)}</div>'
                f'<div class="tc-flipbook-panels">{images}</div>'
                f'<script type="application/json" class="tc-flipbook-data">{payload}</script>'
                f"<script>{_JS.replace('IDENT', ident)}</script></div>")

    def _start_key(self, panel: Panel) -> str:
        names = [c.name for c in self.controls]
        return "|".join(str(self.controls[names.index(u)].start) for u in panel.uses)

    def _repr_mimebundle_(self, include=None, exclude=None):
        """HTML for the book and Jupyter; a PNG of the default drawing for slides and plain front ends."""
        summary = "; ".join(f"{c.name}: {', '.join(c.texts)}" for c in self.controls)
        return {"text/html": self.html, "image/png": base64.b64encode(self.png).decode("ascii"),
                "text/plain": f"flip book of {self.name}: {len(self.frames)} drawings for {self.n_settings} "
                              f"settings ({summary})"}


# Scoped to the block: the page's own styles are left alone. Each label's text sits in a <span>, so that the
# flex gap falls between the text and its control, not inside "d<sub>k</sub>".
_CSS = (".tc-flipbook{border:1px solid rgba(127,127,127,.45);border-radius:6px;padding:.5em .7em;margin:.4em 0}"
        ".tc-flipbook-controls{display:flex;flex-wrap:wrap;gap:.3em 1.6em;align-items:center;font-size:.92em;"
        "margin-bottom:.4em}"
        ".tc-flipbook-controls label{display:inline-flex;align-items:center;gap:.4em;margin:0}"
        ".tc-flipbook-controls output{min-width:3.5em;font-variant-numeric:tabular-nums}"
        ".tc-flipbook-panels img{display:block;max-width:100%;height:auto}")

# Reads the controls, looks up the drawing of each panel for their values, and shows it. It runs once at load
# too, so that values a browser restores after a reload match the drawing.
_JS = """(function () {
  var root = document.getElementById("IDENT");
  if (!root || root.getAttribute("data-ready")) { return; }
  root.setAttribute("data-ready", "1");
  var data = JSON.parse(root.querySelector("script.tc-flipbook-data").textContent);
  var inputs = root.querySelectorAll("[data-control]");
  function chosen(i) {
    var input = inputs[i];
    return input.type === "checkbox" ? (input.checked ? 1 : 0) : Number(input.value);
  }
  function update() {
    var at = data.controls.map(function (c, i) { return chosen(i); });
    var said = data.controls.map(function (c, i) { return c.label + " = " + c.shown[at[i]]; }).join(", ");
    data.controls.forEach(function (c, i) {
      var output = root.querySelector('output[data-for="' + i + '"]');
      if (output) { output.textContent = c.shown[at[i]]; }
    });
    data.panels.forEach(function (panel, p) {
      var img = root.querySelector('img[data-panel="' + p + '"]');
      var frame = data.frames[panel.index[panel.uses.map(function (i) { return at[i]; }).join("|")]];
      if (img.getAttribute("src") !== frame) { img.setAttribute("src", frame); }
      img.setAttribute("alt", panel.alt + " (" + said + ")");
    });
  }
  root.addEventListener("input", update);
  root.addEventListener("change", update);
  update();
})();"""
