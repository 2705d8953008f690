"""Chapter 4's checks accept the reference answers and give the right hint for each common mistake."""
import math

import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.self_attention import (
    check_causal_mask,
    check_self_attention,
)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def good_self_attention(x, W_q, W_k, W_v, mask=None, scale=True, axis=-1, keys=None, project=True,
                        empty_rows_nan=False):
    q, k = x @ W_q, x @ (W_k if keys is None else keys)
    v = x @ W_v if project else x
    scores = q @ np.swapaxes(k, -1, -2)
    if scale:
        scores = scores / math.sqrt(W_q.shape[1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
        if empty_rows_nan:
            with np.errstate(invalid="ignore"):
                weights = _softmax(scores, axis=axis)    # a row of -inf gives 0 / 0 = NaN
        else:
            top = np.max(scores, axis=axis, keepdims=True)
            e = np.exp(scores - np.where(np.isinf(top), 0.0, top))
            total = e.sum(axis=axis, keepdims=True)
            weights = e / np.where(total == 0.0, 1.0, total)   # a row with no allowed key: zeros
    else:
        weights = _softmax(scores, axis=axis)
    return weights @ v, weights


def good_causal_mask(T):
    return np.tril(np.ones((T, T), dtype=bool))


def test_self_attention_reference_passes(capsys):
    assert check_self_attention(good_self_attention) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_stubs_are_not_attempted(capsys):
    def stub(*args, **kwargs):
        raise NotImplementedError

    assert check_self_attention(stub) is False
    assert check_causal_mask(stub) is False
    assert capsys.readouterr().out.count("not attempted yet") == 2


@pytest.mark.parametrize("fn, hint", [
    (lambda x, q, k, v, mask=None: good_self_attention(x, q, k, v, mask, scale=False), "not scaled"),
    (lambda x, q, k, v, mask=None: good_self_attention(x, q * math.sqrt(q.shape[1] / x.shape[-1]), k, v, mask),
     "sqrt(d_model)"),
    (lambda x, q, k, v, mask=None: good_self_attention(x, q, k, v, mask, axis=-2), "over the queries"),
    (lambda x, q, k, v, mask=None: good_self_attention(x, q, k, v, mask, keys=q), "made with W_q"),
    (lambda x, q, k, v, mask=None: good_self_attention(x, q, k, v, mask, project=False), "x @ W_v"),
    (lambda x, q, k, v, mask=None: good_self_attention(x, q, k, v), "mask was ignored"),
    (lambda x, q, k, v, mask=None: good_self_attention(x, q, k, v, mask)[0], "pair"),
    (lambda x, q, k, v, mask=None: good_self_attention(x, q, k, v, mask, empty_rows_nan=True), "all-zero weights"),
])
def test_self_attention_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint.replace("(", r"\(").replace(")", r"\)")):
        check_self_attention(fn)


def test_causal_mask_reference_passes(capsys):
    assert check_causal_mask(good_causal_mask) is True
    assert check_causal_mask(lambda T: good_causal_mask(T)[None]) is True  # the package's (1, T, T) layout
    assert "✔ Correct" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (lambda T: np.triu(np.ones((T, T), dtype=bool)), "transposed"),
    (lambda T: ~good_causal_mask(T), "inverted"),
    (lambda T: np.tril(np.ones((T, T), dtype=bool), k=-1), "diagonal is missing"),
    (lambda T: np.tril(np.ones((T, T))), "dtype float64"),
    (lambda T: np.ones((T, T), dtype=bool), "differ"),
])
def test_causal_mask_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_causal_mask(fn)
