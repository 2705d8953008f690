"""Settings for the whole suite, so that `pytest tests/` runs in any supported environment:

- Without PyTorch (the NumPy half alone), the folders whose every test needs it are skipped, each as one
  skip with the reason; test modules elsewhere that need it skip themselves (`pytest.importorskip`).
- Without nbval, the `--nbval ...` options of pytest's configuration (pyproject.toml) are accepted and
  ignored. With nbval installed this does nothing.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TORCH_FOLDERS = ("test_torch", "test_parity", "test_training")
HAVE_TORCH = importlib.util.find_spec("torch") is not None


class _SkippedFolder(pytest.Directory):
    def collect(self):
        pytest.skip(f"{self.path.name}/: every test here needs PyTorch, which is not installed "
                    '(pip install "transformer-course[torch]")')


def pytest_collect_directory(path, parent):
    if not HAVE_TORCH and path.parent == HERE and path.name in TORCH_FOLDERS:
        return _SkippedFolder.from_parent(parent, path=path)
    return None


def pytest_addoption(parser, pluginmanager):
    if pluginmanager.hasplugin("nbval"):
        return
    group = parser.getgroup("nbval (not installed: these options are ignored)")
    group.addoption("--nbval", action="store_true")
    group.addoption("--nbval-current-env", action="store_true")
    group.addoption("--nbval-sanitize-with")
