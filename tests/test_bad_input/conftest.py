"""Fixtures of the bad-input battery: one small trained run, copies of it, and the hypothesis profile."""
import importlib.util

import pytest

# The battery drives the command line and the PyTorch half: a leg of the matrix without PyTorch collects none
# of it (pytest.importorskip here would be a collection error, not a skip).
if importlib.util.find_spec("torch") is None:
    collect_ignore_glob = ["test_*.py"]

from bad_input_helpers import TRAIN
from hypothesis import settings

# derandomized, no example database written into the repository, few examples: fast and repeatable
settings.register_profile("course", max_examples=50, derandomize=True, database=None, deadline=None)
settings.load_profile("course")


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """A finished 4-step run of the tiny model on the reverse task (never modified by the tests)."""
    from transformer_course.__main__ import main
    out = tmp_path_factory.mktemp("run") / "reverse"
    assert main(TRAIN + ["--out", str(out)]) == 0
    return out


@pytest.fixture
def run_copy(trained_run, tmp_path):
    """A private copy of the trained run, for tests that try to damage it."""
    import shutil
    copy = tmp_path / "run"
    shutil.copytree(trained_run, copy)
    return copy
