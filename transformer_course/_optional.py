"""Optional dependencies: the NumPy half of the course installs and runs without PyTorch.

`pip install transformer-course` installs the NumPy half (chapters on attention, the NumPy Transformer, the
plots and exercise checks); `pip install "transformer-course[torch]"` adds the PyTorch half. A module that
needs PyTorch imports it from here instead of directly,

    from .._optional import torch

which gives the real `torch` module, or, when PyTorch is not installed, an ImportError that says which
extra to install (a bare `import torch` would only say "No module named 'torch'").
"""
from __future__ import annotations

import importlib

# module name -> the extra of pyproject.toml that installs it
EXTRA_OF = {"torch": "torch", "safetensors": "torch"}


def install_hint(extra: str) -> str:
    return f'pip install "transformer-course[{extra}]"'


def require(module: str):
    """Import an optional dependency, or raise an ImportError that names the extra installing it."""
    if module not in EXTRA_OF:
        raise ValueError(f"module: expected one of {sorted(EXTRA_OF)}, got {module!r}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name != module:  # installed, but one of its own dependencies is missing: that error says more
            raise
        extra = EXTRA_OF[module]
        raise ModuleNotFoundError(f"this part of transformer_course needs {module}, which is not installed here. "
                                  f"The NumPy half of the course runs without it; for the rest: "
                                  f"{install_hint(extra)}", name=module) from err


def __getattr__(name: str):
    # `from transformer_course._optional import torch` lands here (PEP 562): import it, or explain.
    if name in EXTRA_OF:
        return require(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
