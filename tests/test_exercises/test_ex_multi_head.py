"""Chapter 5's checks accept the reference answers and give the right hint for each common mistake."""
import math

import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.multi_head import (
    check_merge_heads,
    check_multi_head_attention,
    check_multi_head_loop,
    check_split_heads,
)


def good_split(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads).transpose(0, 2, 1, 3)


def good_merge(x):
    B, H, T, Dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)


def good_mha(x, params, n_heads, split=good_split, scale=None, use_W_o=True):
    q = split(x @ params["W_q"] + params["b_q"], n_heads)
    k = split(x @ params["W_k"] + params["b_k"], n_heads)
    v = split(x @ params["W_v"] + params["b_v"], n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1] if scale is None else scale)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    heads = good_merge(e / e.sum(-1, keepdims=True) @ v)
    return heads @ params["W_o"] + params["b_o"] if use_W_o else heads


def test_references_pass(capsys):
    assert check_split_heads(good_split) is True
    assert check_merge_heads(good_merge) is True
    assert check_multi_head_attention(good_mha) is True
    assert capsys.readouterr().out.count("✔ Correct") == 3


def test_stubs_are_not_attempted(capsys):
    def stub(*args):
        raise NotImplementedError

    for check in (check_split_heads, check_merge_heads, check_multi_head_attention):
        assert check(stub) is False
    assert capsys.readouterr().out.count("not attempted yet") == 3


@pytest.mark.parametrize("fn, hint", [
    (lambda x, H: x.reshape(x.shape[0], x.shape[1], H, -1), "head axis must come before"),
    (lambda x, H: x.reshape(x.shape[0], H, x.shape[1], -1), "reshape straight to"),
    (lambda x, H: x.reshape(x.shape[0], x.shape[1], -1, H).transpose(0, 3, 1, 2), "interleaved"),
    (lambda x, H: good_split(x, H).transpose(0, 1, 3, 2), "last two axes are swapped"),
    (lambda x, H: good_split(x, H) if x.shape[0] == 2 else 0 * good_split(x, H), "fn\\(x2, 3\\)"),
])
def test_split_heads_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_split_heads(fn)


@pytest.mark.parametrize("fn, hint", [
    (lambda x: x.reshape(x.shape[0], x.shape[2], -1), "reshape alone"),
    (lambda x: x.transpose(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1), "interleaved"),
    (lambda x: good_merge(x) if x.shape[0] == 2 else 0 * good_merge(x), "fn\\(x2\\)"),   # right at one size only
])
def test_merge_heads_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_merge_heads(fn)


@pytest.mark.parametrize("fn, hint", [
    (lambda x, p, H: good_mha(x, p, H, use_W_o=False), "W_o"),
    (lambda x, p, H: good_mha(x, p, H, scale=x.shape[-1]), "sqrt\\(d_model\\)"),
    (lambda x, p, H: good_mha(x, p, H, scale=1), "not scaled"),
    (lambda x, p, H: good_mha(x, p, H, split=lambda a, h: a.reshape(a.shape[0], h, a.shape[1], -1)),
     "reshape straight to"),
    (lambda x, p, H: good_mha(x, p, 1), "single-head"),
    (lambda x, p, H: good_mha(x, p, 2), "fn\\(x2, params2, 3\\)"),   # n_heads hard-coded to the first call's 2
])
def test_multi_head_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_multi_head_attention(fn)


def good_loop(x, params, n_heads, order=None, scale=None, use_W_o=True):
    """Multi-head attention as a loop over heads, each one call of the single-head attention."""
    from transformer_course.numpy.attention import scaled_dot_product_attention_forward

    D = x.shape[-1]
    Dh = D // n_heads
    heads = []
    for m in range(n_heads):
        cols = slice(m * Dh, (m + 1) * Dh)
        q, k, v = (x @ params[f"W_{n}"][:, cols] + params[f"b_{n}"][cols] for n in "qkv")   # (B, T, Dh)
        if scale is None:
            heads.append(scaled_dot_product_attention_forward(q, k, v)[0])                  # (B, T, Dh)
        else:
            scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(scale)
            e = np.exp(scores - scores.max(-1, keepdims=True))
            heads.append(e / e.sum(-1, keepdims=True) @ v)
    concat = np.concatenate([heads[m] for m in (order or range(n_heads))], axis=-1)        # (B, T, D)
    return concat @ params["W_o"] + params["b_o"] if use_W_o else concat


def test_loop_reference_passes(capsys):
    assert check_multi_head_loop(good_loop) is True
    assert check_multi_head_loop(good_mha) is True          # the vectorised layer is the same function
    assert capsys.readouterr().out.count("✔ Correct") == 2


@pytest.mark.parametrize("fn, hint", [
    (lambda x, p, H: good_loop(x, p, H, order=range(H - 1, -1, -1)), "reverse order"),
    (lambda x, p, H: good_loop(x, p, H, use_W_o=False), "W_o"),
    (lambda x, p, H: good_loop(x, p, H, scale=x.shape[-1]), "sqrt\\(D\\)"),
    (lambda x, p, H: good_loop(x, p, H, scale=1), "not scaled"),
    (lambda x, p, H: good_loop(x, p, 1), "single-head"),
    (lambda x, p, H: good_loop(x, p, H) if x.shape[0] == 2 else 0 * good_loop(x, p, H),
     "fn\\(x2, params2, 3\\)"),                                    # right at one size only
])
def test_multi_head_loop_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_multi_head_loop(fn)
