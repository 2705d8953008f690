"""Appendix A's checks accept the reference answers and give the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.backprop import (
    check_attention_backward,
    check_layernorm_backward,
    check_softmax_backward,
)


# ---------------------------------------------------------------------------------------- softmax backward
def good_softmax_backward(dout, y):
    return y * (dout - (dout * y).sum(axis=-1, keepdims=True))


def test_softmax_reference_passes(capsys):
    assert check_softmax_backward(good_softmax_backward) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_softmax_stub_is_not_attempted(capsys):
    def stub(dout, y):
        raise NotImplementedError

    assert check_softmax_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (lambda d, y: y * d, "diagonal of the Jacobian"),
    (lambda d, y: -good_softmax_backward(d, y), "sign is flipped"),
    (lambda d, y: y * (d - (d * y).sum(axis=-2, keepdims=True)), "axis -2"),
    (lambda d, y: y * (d - (d * y).sum(axis=0, keepdims=True)), "axis 0"),
    (lambda d, y: d - (d * y).sum(axis=-1, keepdims=True), "leading factor y"),
    (lambda d, y: y * (d - d.sum(axis=-1, keepdims=True)), "weight dout by y"),
    (lambda d, y: y * (d * y).sum(axis=-1, keepdims=True), "y y^T part"),
    (lambda d, y: y * (d - (d * y).sum(axis=-1, keepdims=True)) + 0.01, "should sum to 0"),
    (lambda d, y: good_softmax_backward(d, y)[..., :-1], "axis 2 has size 4 instead of 5"),
    (lambda d, y: None, "forget to `return`"),
])
def test_softmax_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint.replace("^", r"\^").replace("`", ".")):
        check_softmax_backward(fn)


# ---------------------------------------------------------------------------------------- LayerNorm backward
def good_layernorm_backward(dout, x, gamma, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * rstd
    g = dout * gamma
    return rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))


def _variant(mean_term=True, var_term=True, sign=1.0, axis=-1, use_gamma=True, use_rstd=True, scale=1.0):
    def fn(dout, x, gamma, eps=1e-5):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        rstd = 1.0 / np.sqrt(var + eps)
        xhat = (x - mean) * rstd
        g = dout * gamma if use_gamma else dout
        out = g.copy()
        if mean_term:
            out -= sign * g.mean(axis, keepdims=True)
        if var_term:
            out -= sign * xhat * (g * xhat).mean(axis, keepdims=True)
        return scale * (out * rstd if use_rstd else out)
    return fn


def _variance_term(dout, x, gamma, eps):
    """rstd * xhat * mean(g * xhat): keeping a wrong multiple of it leaves the row sums at 0."""
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    return rstd * xhat * (dout * gamma * xhat).mean(-1, keepdims=True)


def test_layernorm_reference_passes(capsys):
    assert check_layernorm_backward(good_layernorm_backward) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_layernorm_package_backward_passes(capsys):
    from transformer_course.numpy import layernorm_backward, layernorm_forward

    def package(dout, x, gamma, eps=1e-5):
        _, cache = layernorm_forward(x, {"gamma": gamma, "beta": np.zeros_like(gamma)}, eps)
        return layernorm_backward(dout, cache)[0]

    assert check_layernorm_backward(package) is True


def test_layernorm_stub_is_not_attempted(capsys):
    def stub(dout, x, gamma, eps=1e-5):
        raise NotImplementedError

    assert check_layernorm_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (_variant(mean_term=False, var_term=False), "as constants"),
    (_variant(mean_term=False), "mean correction is missing"),
    (_variant(var_term=False), "variance correction is missing"),
    (_variant(sign=-1.0), "sign error"),
    (_variant(axis=-2), "axis -2"),
    (_variant(axis=0), "batch norm"),
    (_variant(use_gamma=False), "gamma is missing"),
    (_variant(use_rstd=False), "1 / sqrt"),
    (_variant(scale=6.0), "MEANS over the D features"),
    (lambda d, x, g, eps=1e-5: good_layernorm_backward(d, x, g, eps) + 0.3 * _variance_term(d, x, g, eps),
     "should be orthogonal"),
    (lambda d, x, g, eps=1e-5: good_layernorm_backward(d, x, g, eps) + 0.01, "should sum to 0"),
    (lambda d, x, g, eps=1e-5: good_layernorm_backward(d, x, g, eps)[0], "has 2 axes"),
])
def test_layernorm_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_layernorm_backward(fn)


def test_learner_cannot_spoil_inputs():
    def in_place(dout, x, gamma, eps=1e-5):
        result = good_layernorm_backward(dout, x, gamma, eps)
        x[...] = 0.0
        dout[...] = 0.0
        return result

    assert check_layernorm_backward(in_place) is True


# ---------------------------------------------------------------------------------- attention backward
def good_attention_backward(dout, q, k, v, mask):
    scale = 1.0 / np.sqrt(q.shape[-1])
    scores = np.where(mask, q @ k.swapaxes(-1, -2) * scale, -np.inf)      # (B, T, T)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)                              # (B, T, T)
    dv = weights.swapaxes(-1, -2) @ dout                                   # (B, T, Dh)
    dweights = dout @ v.swapaxes(-1, -2)                                   # (B, T, T)
    dscores = weights * (dweights - (dweights * weights).sum(-1, keepdims=True))
    return dscores @ k * scale, dscores.swapaxes(-1, -2) @ q * scale, dv


def _attention_variant(scale_power=-0.5, use_mask=True, dk_transposed=True, dv_transposed=True,
                       dq_transposed=False, correction=True):
    def fn(dout, q, k, v, mask):
        Dh = q.shape[-1]
        scores = q @ k.swapaxes(-1, -2) / np.sqrt(Dh)
        if use_mask:
            scores = np.where(mask, scores, -1e9)                          # a large negative fill works too
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        dv = (weights.swapaxes(-1, -2) if dv_transposed else weights) @ dout
        dweights = dout @ v.swapaxes(-1, -2)
        inner = (dweights * weights).sum(-1, keepdims=True) if correction else 0.0
        dscores = weights * (dweights - inner) * Dh ** scale_power
        dq = (dscores.swapaxes(-1, -2) if dq_transposed else dscores) @ k
        dk = (dscores.swapaxes(-1, -2) if dk_transposed else dscores) @ q
        return dq, dk, dv
    return fn


def test_attention_reference_passes(capsys):
    assert check_attention_backward(good_attention_backward) is True
    assert "✔ Correct" in capsys.readouterr().out
    assert check_attention_backward(_attention_variant()) is True          # -1e9 instead of -inf


def test_attention_package_backward_passes():
    from transformer_course.numpy import scaled_dot_product_attention_backward, scaled_dot_product_attention_forward

    def package(dout, q, k, v, mask):
        _, cache = scaled_dot_product_attention_forward(q, k, v, mask)
        return scaled_dot_product_attention_backward(dout, cache)

    assert check_attention_backward(package) is True


def test_attention_stub_is_not_attempted(capsys):
    def stub(dout, q, k, v, mask):
        raise NotImplementedError

    assert check_attention_backward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def _leaky_dk(dout, q, k, v, mask):
    dq, dk, dv = good_attention_backward(dout, q, k, v, mask)
    dk = dk + (~mask.any(axis=1))[..., None] * 0.1                         # gradient at the padded keys
    return dq, dk, dv


def _unbalanced_dk(dout, q, k, v, mask):
    dq, dk, dv = good_attention_backward(dout, q, k, v, mask)
    dk = dk.copy()
    dk[:, 0] += 0.1                                                        # key 0, allowed for every query
    return dq, dk, dv


@pytest.mark.parametrize("fn, hint", [
    (_attention_variant(scale_power=0.0), "1 / sqrt.Dh. is missing"),
    (_attention_variant(scale_power=0.5), "multiplied by sqrt"),
    (_attention_variant(scale_power=-1.0), "SQUARE ROOT"),
    (_attention_variant(use_mask=False), "dv is not right yet: gradient leaks to masked keys"),
    (_attention_variant(dk_transposed=False), "dk = dscores.T @ q"),
    (_attention_variant(dq_transposed=True), "dq is not right yet: a product is transposed"),
    (_attention_variant(dv_transposed=False), "dv = weights.T @ dout"),
    (_attention_variant(correction=False), "diagonal of its Jacobian"),
    (_leaky_dk, "dk is not right yet: gradient leaks to masked keys"),
    (_unbalanced_dk, "summed over the keys it should be 0"),
    (lambda d, q, k, v, m: good_attention_backward(d, q, k, v, m)[:2], "three gradients"),
    (lambda d, q, k, v, m: (d @ v.swapaxes(-1, -2), *good_attention_backward(d, q, k, v, m)[1:]),
     "dq has shape .2, 5, 5., expected .2, 5, 4."),
])
def test_attention_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_attention_backward(fn)


def test_attention_learner_cannot_spoil_inputs():
    def in_place(dout, q, k, v, mask):
        result = good_attention_backward(dout, q, k, v, mask)
        for a in (dout, q, k, v):
            a[...] = 0.0
        mask[...] = True
        return result

    assert check_attention_backward(in_place) is True

