"""Chapter 3's checks accept the reference answers and give the right hint for each common mistake."""
import math

import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.general_attention import check_masked_softmax, check_scaled_dot_product_attention

# the deliberately wrong answers below overflow or divide 0 by 0: that is the point, not a problem
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


# ---------------------------------------------------------------------------------------- masked softmax
def good_masked_softmax(scores, mask):
    mask = np.broadcast_to(mask, scores.shape)
    filled = np.where(mask, scores, -np.inf)
    row_max = filled.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    e = np.exp(filled - row_max)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def naive_inf_softmax(scores, mask):  # the classic: NaN on a fully masked row
    filled = np.where(mask, scores, -np.inf)
    e = np.exp(filled - filled.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def large_negative_softmax(scores, mask):  # uniform weights on a fully masked row
    filled = np.where(mask, scores, -1e9)
    e = np.exp(filled - filled.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def no_max_softmax(scores, mask):  # overflows on large scores
    e = np.where(mask, np.exp(scores), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def test_masked_softmax_reference_passes(capsys):
    assert check_masked_softmax(good_masked_softmax) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_masked_softmax_stub_is_not_attempted(capsys):
    def stub(scores, mask):
        raise NotImplementedError

    assert check_masked_softmax(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (lambda s, m: good_masked_softmax(s, np.ones_like(m)), "mask was ignored"),
    (lambda s, m: good_masked_softmax(s, ~m), "inverted"),
    (naive_inf_softmax, "ALL masked"),
    (large_negative_softmax, "uniform"),
    (no_max_softmax, "overflow"),
    (lambda s, m: good_masked_softmax(s, m)[..., :-1], "axis 2 has size 4 instead of 5"),
])
def test_masked_softmax_mistakes_get_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_masked_softmax(fn)


# ---------------------------------------------------------------------------------------- attention
def make_attention(scale="sqrt", axis=-1, softmax=good_masked_softmax, use_mask=True, pair=True, invert=False):
    def attention(q, k, v, mask=None):
        d_k = q.shape[-1]
        factor = {"sqrt": 1 / math.sqrt(d_k), "none": 1.0, "d": 1 / d_k}[scale]
        scores = q @ k.swapaxes(-1, -2) * factor
        if mask is None or not use_mask:
            mask = np.ones(scores.shape, dtype=bool)
        elif invert:
            mask = ~mask
        if axis == -1:
            weights = softmax(scores, mask)
        else:
            weights = good_masked_softmax(scores.swapaxes(-1, -2), np.broadcast_to(mask, scores.shape)
                                          .swapaxes(-1, -2)).swapaxes(-1, -2)
        out = weights @ v
        return (out, weights) if pair else out
    return attention


def test_attention_reference_passes(capsys):
    assert check_scaled_dot_product_attention(make_attention()) is True
    assert "✔ Correct" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (make_attention(scale="none"), "not scaled"),
    (make_attention(scale="d"), "SQUARE ROOT"),
    (make_attention(axis=-2), "over the queries"),
    (make_attention(use_mask=False), "mask was ignored"),
    (make_attention(invert=True), "inverted"),
    (make_attention(softmax=naive_inf_softmax), "ALL masked"),
    (make_attention(softmax=large_negative_softmax), "uniformly"),
    (make_attention(pair=False), r"pair `\(out, weights\)`"),
])
def test_attention_mistakes_get_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_scaled_dot_product_attention(fn)
