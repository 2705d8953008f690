"""Chapter 4's causal head as a PyTorch module: a right answer passes, each typical mistake gets its message
(a module of its own, so that chapter 4's NumPy checks run without PyTorch)."""
import math

import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.self_attention import check_causal_head

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
