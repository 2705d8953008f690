"""The two causal_mask twins accept the same sizes: a Python int or a NumPy integer (what `len`, `.shape` and
`np.arange` hand back), and refuse the same others with the same message."""
from __future__ import annotations

import numpy as np
import pytest

from transformer_course.numpy import masks as numpy_masks
from transformer_course.torch import masks as torch_masks


@pytest.mark.twins("masks.causal_mask")
@pytest.mark.parametrize("T", [1, 4, np.int64(4), np.int32(3), np.uint8(2), np.arange(5)[-1]])
def test_both_twins_take_python_and_numpy_ints(T):
    expected = np.tril(np.ones((int(T), int(T)), dtype=bool))[None]          # (1, T, T)
    np.testing.assert_array_equal(numpy_masks.causal_mask(T), expected)
    np.testing.assert_array_equal(torch_masks.causal_mask(T).numpy(), expected)


@pytest.mark.parametrize("T", [0, -2, np.int64(0), 3.0, np.float64(3), "3", True, None])
def test_both_twins_refuse_the_same_sizes_with_the_same_words(T):
    messages = []
    for causal_mask in (numpy_masks.causal_mask, torch_masks.causal_mask):
        with pytest.raises(ValueError, match=r"T: expected a positive int, got ") as caught:
            causal_mask(T)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
