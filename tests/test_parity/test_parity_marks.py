"""The `@pytest.mark.twins` check of this folder's conftest, on a planted test that runs only one twin."""
from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

PLANTED = '''
import pytest
from transformer_course.numpy import masks as numpy_masks
from transformer_course.torch import masks as torch_masks


@pytest.mark.twins("masks.causal_mask")
def test_runs_both():
    numpy_masks.causal_mask(3)
    torch_masks.causal_mask(3)


@pytest.mark.twins("masks.causal_mask", "masks.padding_mask")
def test_runs_one_pair_of_two():
    numpy_masks.causal_mask(3)
    torch_masks.causal_mask(3)
'''


def test_a_mark_naming_a_pair_the_test_never_runs_fails_it(pytester):
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_planted=PLANTED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "addopts=")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*never ran: masks.padding_mask (numpy), masks.padding_mask (torch)*"])
