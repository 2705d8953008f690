"""Chapter 4's checks accept the reference answers and give the right hint for each common mistake."""
import math

import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.self_attention import (
    check_causal_head,
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


# ----------------------------------------------------------------------------------------------------------
# the causal head as a torch module
# ----------------------------------------------------------------------------------------------------------
torch = pytest.importorskip("torch")
nn = torch.nn


class Head(nn.Module):
    """A right answer, with switches that make the usual wrong ones."""

    def __init__(self, d_model, d_k, d_v, max_len, bias=False, raw=False, mask_as="buffer", fill="-inf",
                 transposed=False, after=False, scale=True, cut=True, pair=True, swap_out=False):
        super().__init__()
        if raw:
            self.W_q = nn.Parameter(torch.randn(d_model, d_k))
            self.W_k = nn.Parameter(torch.randn(d_model, d_k))
            self.W_v = nn.Parameter(torch.randn(d_model, d_v))
        else:
            self.W_q = nn.Linear(d_model, d_k, bias=bias)
            self.W_k = nn.Linear(d_model, d_k, bias=bias)
            self.W_v = nn.Linear(d_model, d_v, bias=bias)
        mask = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
        if transposed:
            mask = mask.T
        if mask_as == "buffer":
            self.register_buffer("mask", mask)
        elif mask_as == "attribute":
            self.mask = mask
        else:
            self.mask = nn.Parameter(mask.float())
        self.raw, self.fill, self.after, self.scale, self.cut = raw, fill, after, scale, cut
        self.pair, self.swap_out = pair, swap_out

    def forward(self, x):                               # x (B, T, D)
        T = x.shape[1]
        if self.raw:
            q, k, v = x @ self.W_q, x @ self.W_k, x @ self.W_v      # (B, T, d_k), (B, T, d_k), (B, T, d_v)
        else:
            q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)
        scores = q @ k.transpose(-2, -1)                # (B, T, T)
        if self.scale:
            scores = scores / math.sqrt(q.shape[-1])
        mask = (self.mask[:T, :T] if self.cut else self.mask).bool()   # (T, T)
        if self.fill is None:
            weights = scores.softmax(dim=-1)
        elif self.after:
            weights = scores.softmax(dim=-1) * mask     # masked after the softmax: rows no longer sum to 1
        else:
            weights = scores.masked_fill(~mask, float(self.fill)).softmax(dim=-1)   # (B, T, T)
        out = (scores.softmax(dim=-1) if self.swap_out else weights) @ v            # (B, T, d_v)
        return (out, weights) if self.pair else out


def _head(**switches):
    def make(d_model, d_k, d_v, max_len):
        return Head(d_model, d_k, d_v, max_len, **switches)
    return make


@pytest.mark.parametrize("switches", [{}, {"raw": True}, {"fill": "-1e9"}])
def test_causal_head_reference_passes(switches, capsys):
    assert check_causal_head(_head(**switches)) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_causal_head_stub_is_not_attempted(capsys):
    class Stub(nn.Module):
        def __init__(self, d_model, d_k, d_v, max_len):
            super().__init__()
            raise NotImplementedError

    assert check_causal_head(Stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("switches, hint", [
    ({"bias": True}, "with a bias"),
    ({"mask_as": "attribute"}, "register_buffer"),
    ({"mask_as": "parameter"}, "nn.Parameter"),
    ({"cut": False}, r"mask\[:T, :T\]"),
    ({"pair": False}, "pair"),
    ({"fill": None}, "leaks the future"),
    ({"fill": "0"}, "leaks the future"),
    ({"transposed": True}, "transposed"),
    ({"swap_out": True}, "weights look causal"),
    ({"after": True}, "do not sum to 1"),
    ({"scale": False}, "not scaled"),
])
def test_causal_head_hints(switches, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_causal_head(_head(**switches))


def test_causal_head_wrong_shapes_are_named():
    class Transposed(Head):
        def forward(self, x):
            out, weights = super().forward(x)
            return out.transpose(1, 2), weights         # (B, d_v, T)

    with pytest.raises(ExerciseError, match=r"out for x of shape .* has shape"):
        check_causal_head(lambda *sizes: Transposed(*sizes))
