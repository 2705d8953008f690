"""Cells that check, in a running kernel, that every widget of the course redraws when one of its controls moves.

A kernel alone never fills an Output widget: the front end (JupyterLab, Colab) routes what a callback displays
into it. nbclient mimics that front end (its OutputWidget syncs the captured outputs back to the kernel), so a
notebook executed with nbclient can read, in a later cell, what each widget's output area shows. The cells:

1. build every widget (and the attention explorer of the shipped model where PyTorch is installed) and keep
   what each output area shows: one figure, no error;
2. in round k (k = 0, 1, ...), move the k-th control of every widget one step (a slider one step, a
   checkbox toggled, the next dropdown option, a new source sentence);
3. in the next cell, check that each moved widget's output area shows one figure again, a different one, and
   no error (an exception in a callback lands in the output area, not in the cell).

Used by tests/test_widgets.py (the test environment: ipywidgets 8) and tests/test_colab_start.py (Colab's
preinstalled versions: ipywidgets 7.7.1). The last cell prints `WIDGETS {...}`: per widget, the controls moved.
Standard library only at import: the cells run in the kernel, this module does not import the widgets.
"""
from __future__ import annotations

import inspect
import json


def step(control):
    """A value one step away from the control's (None: a slider whose range is one value)."""
    import ipywidgets

    if isinstance(control, ipywidgets.Checkbox):
        return not control.value
    if isinstance(control, ipywidgets.Dropdown):
        return control.options[(control.index + 1) % len(control.options)]
    if isinstance(control, ipywidgets.Text):
        return "forty-two" if control.value != "forty-two" else "seven"
    if isinstance(control, ipywidgets.FloatLogSlider):
        return control.value * control.base ** 0.5 if control.value < control.base ** control.max else 1.0
    if control.min == control.max:
        return None
    up = control.value + control.step
    return up if up <= control.max else control.value - control.step


SETUP = inspect.getsource(step) + '''
import hashlib as _hashlib
import importlib.util as _util
import json as _json

import ipywidgets as _ipywidgets

from transformer_course.viz import widgets as _course_widgets

_boxes = {"softmax_scaling": _course_widgets.softmax_scaling_widget(), "mask": _course_widgets.mask_widget(),
          "positional": _course_widgets.positional_widget(), "warmup": _course_widgets.warmup_widget()}
if _util.find_spec("torch") is not None:
    _boxes["attention_explorer"] = _course_widgets.attention_explorer()   # the shipped numbers-en-fr model
_moved = {name: [] for name in _boxes}


def _shown(name):
    """A digest of the figure that widget `name`'s output area shows (after checking it shows one, no error)."""
    controls, output = _boxes[name].children
    outputs = list(output.outputs)
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert not errors, f"{name}: the callback raised: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    figures = [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]
    assert len(figures) == 1, f"{name}: the output area shows {len(figures)} figures, not 1: {outputs!r:.500}"
    return _hashlib.sha256(figures[0].encode()).hexdigest()


_before = {}
'''

# round k: record what every output area shows now, then move the k-th control of every widget
MOVE = """\
_moved_now = []
for _name, _box in _boxes.items():
    _before[_name] = _shown(_name)
    _controls = _box.children[0].children
    if {k} < len(_controls) and step(_controls[{k}]) is not None:
        _controls[{k}].value = step(_controls[{k}])                        # the callback redraws now
        _moved[_name].append(_controls[{k}].description)
        _moved_now.append(_name)
"""

# after round k (a later cell: the front end syncs the output areas back once a cell is done)
CHECK = """\
for _name in _moved_now:
    assert _shown(_name) != _before[_name], f"{_name}: moving {_moved[_name][-1]!r} left the figure as it was"
"""

ROUNDS = 4   # the most controls a widget has (the attention explorer)

REPORT = f"""\
_unmoved = {{_name: [c.description for c in _box.children[0].children if c.description not in _moved[_name]]
            for _name, _box in _boxes.items()}}
assert max(len(_box.children[0].children) for _box in _boxes.values()) <= {ROUNDS}, "widget_probe.ROUNDS: too few"
print("WIDGETS", _json.dumps({{"ipywidgets": _ipywidgets.__version__, "moved": _moved, "unmoved": _unmoved}}))
"""


def cells(rounds: int = ROUNDS) -> list[str]:
    """The probe's cells, in order (append them to a notebook, or run them alone); `rounds` < ROUNDS moves only
    the first controls of each widget (each redraw takes about a second)."""
    sources = [SETUP]
    for k in range(rounds):
        sources.append(MOVE.format(k=k))
        sources.append(CHECK)
    return sources + [REPORT]


def report(text: str) -> dict:
    """The `WIDGETS {...}` line of the last cell's output, as a dict."""
    line = next(line for line in text.splitlines() if line.startswith("WIDGETS "))
    return json.loads(line.split(" ", 1)[1])
