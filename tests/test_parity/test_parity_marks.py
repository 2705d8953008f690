"""The `@pytest.mark.twins` check of this folder's conftest, on planted tests that run one twin of a pair, or
run both and compare nothing."""
from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

PLANTED = '''
import numpy as np
import pytest
from transformer_course.numpy import masks as numpy_masks
from transformer_course.torch import masks as torch_masks


@pytest.mark.twins("masks.causal_mask")
def test_runs_and_compares_both():
    np.testing.assert_array_equal(numpy_masks.causal_mask(3), torch_masks.causal_mask(3).numpy())


@pytest.mark.twins("masks.causal_mask", "masks.padding_mask")
def test_runs_one_pair_of_two():
    np.testing.assert_array_equal(numpy_masks.causal_mask(3), torch_masks.causal_mask(3).numpy())


@pytest.mark.twins("masks.causal_mask")
def test_runs_both_but_compares_nothing():
    numpy_masks.causal_mask(3)
    torch_masks.causal_mask(5)
'''


def test_a_mark_naming_a_pair_the_test_never_runs_or_compares_fails_it(pytester):
    here = Path(__file__).parent
    pytester.makeconftest((here / "conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(parity_helpers=(here / "parity_helpers.py").read_text(encoding="utf-8"),
                        test_planted=PLANTED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "addopts=")
    result.assert_outcomes(passed=3, errors=2)   # an error at teardown: the two planted faults
    output = result.stdout.str()
    assert "never compared): masks.padding_mask (numpy), masks.padding_mask (torch)" in output
    assert "never compared): their results (compared)" in output
