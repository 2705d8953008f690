"""Settings for the parity tests.

- One intra-op thread: these tests use tiny tensors, and on a shared 2-core machine OpenMP threads that wait
  for each other make tiny ops 10-20x slower.
- A test marked `@pytest.mark.twins("module.name", ...)` must run both twins of every pair it names: the NumPy
  function and the PyTorch function or module (its `forward`, or the method of the same name). A mark that
  names a pair the test never runs, or a test that never compares results (`parity_helpers`' assertions or
  NumPy's `assert_array_equal` / `assert_allclose`), fails, so
  tests/test_twins.py's "every pair is compared" counts only comparisons that happen.
"""
from __future__ import annotations

import importlib
import inspect
import sys

import pytest

try:
    import torch
except ModuleNotFoundError:  # without PyTorch, tests/conftest.py skips this folder
    torch = None
else:
    torch.set_num_threads(1)


def _key(name: str) -> str:
    """The name both twins share (as tests/test_twins.py reads it): multi_head_attention_forward, MultiHeadAttention
    -> multiheadattention."""
    return name.removesuffix("_forward").replace("_", "").lower()


def _code(obj):
    return inspect.unwrap(obj).__code__


def twin_code(pair: str) -> dict[str, set]:
    """{"numpy": code objects, "torch": code objects}: what runs when each twin of `pair` ("module.name") is called."""
    module, name = pair.split(".")
    found: dict[str, set] = {"numpy": set(), "torch": set()}
    for side in found:
        package = importlib.import_module(f"transformer_course.{side}.{module}")
        for attr, obj in vars(package).items():
            if getattr(obj, "__module__", None) != package.__name__ or attr.startswith("_"):
                continue
            if inspect.isfunction(obj) and _key(attr) == _key(name):
                found[side].add(_code(obj))
            elif inspect.isclass(obj) and side == "torch":
                for method_name, method in vars(obj).items():
                    if not inspect.isfunction(method):
                        continue
                    if (method_name == "forward" and _key(attr) == _key(name)) or \
                            (not method_name.startswith("_") and _key(method_name) == _key(name)):
                        found[side].add(_code(method))
                if _key(attr) == _key(name) and "__init__" in vars(obj) and not found[side]:
                    found[side].add(_code(obj.__init__))
    return found


def _comparison_code() -> set:
    """What counts as comparing the twins' results: the parity helpers and NumPy's array assertions."""
    import numpy as np
    from parity_helpers import assert_same_verdict, assert_trees_close
    return {_code(fn) for fn in (assert_trees_close, assert_same_verdict, np.testing.assert_array_equal,
                                 np.testing.assert_allclose)}


@pytest.fixture(autouse=True)
def _twins_mark_is_honest(request):
    marks = list(request.node.iter_markers("twins"))
    if not marks:
        yield
        return
    pairs = [pair for mark in marks for pair in mark.args]
    targets = {(pair, side): codes for pair in pairs for side, codes in twin_code(pair).items()}
    for (pair, side), codes in targets.items():
        assert codes, f"@pytest.mark.twins({pair!r}): no {side} twin found by that name"
    watched = {code: key for key, codes in targets.items() for code in codes}
    # and a comparison: running both twins proves nothing unless their results meet
    compared = ("their results", "compared")
    watched.update(dict.fromkeys(_comparison_code(), compared))
    called: set = set()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code in watched:
            called.add(watched[frame.f_code])

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
    missing = sorted((set(targets) | {compared}) - called)
    assert not missing, ("the test's @pytest.mark.twins names pairs whose twins it never ran (or never compared): "
                         + ", ".join(f"{pair} ({side})" for pair, side in missing))
