"""Settings for the whole suite, so that `pytest tests/` runs in any supported environment:

- Without PyTorch (the NumPy half alone), the folders whose every test needs it are skipped, each as one
  skip with the reason; test modules elsewhere that need it skip themselves (`pytest.importorskip`).
- Without nbval, the `--nbval ...` options of pytest's configuration (pyproject.toml) are accepted and
  ignored. With nbval installed this does nothing.
- The files that take longest start first, so that two workers end together.
- A chapter whose corpus is not installed (the Ding dictionary: `apt-get install trans-de-en`) is skipped with
  the reason, except where CI is set: there it runs, and fails with the chapter's own message.
- The repository's tools/ package is importable as `tools`, loaded from its path: the tests never put the
  checkout on sys.path (a leg of the matrix tests the installed wheel, which the checkout's transformer_course/
  would shadow).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
TORCH_FOLDERS = ("test_torch", "test_parity", "test_training")
HAVE_TORCH = importlib.util.find_spec("torch") is not None

if "tools" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("tools", HERE.parent / "tools" / "__init__.py",
                                                   submodule_search_locations=[str(HERE.parent / "tools")])
    sys.modules["tools"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules["tools"])


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


# The files that take longest on one worker (measured: `pytest --durations`), started first: with
# `--dist loadfile` a file stays on one worker, and a long file handed out last leaves the other worker idle.
LONGEST_FIRST = ("tests/test_colab_start.py", "tests/test_site.py", "tests/test_doctor.py",
                 "book/09_training.ipynb", "book/02_bahdanau_attention.ipynb", "book/07_encoder.ipynb",
                 "book/08_decoder.ipynb", "tests/test_workshop.py")


def pytest_collection_modifyitems(config, items):
    root = Path(str(config.rootpath))
    from tools.execute_notebooks import missing_corpus
    for item in items:
        reason = missing_corpus(item.path) if item.path.suffix == ".ipynb" else None
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))

    def rank(item) -> int:
        try:
            where = Path(str(item.path)).resolve().relative_to(root).as_posix()
        except ValueError:
            return len(LONGEST_FIRST)
        return LONGEST_FIRST.index(where) if where in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order within a file, and of the other files, is kept
