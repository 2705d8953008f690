"""Chapter 7's checks accept the reference answers and give the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.encoder import (
    check_encoder_layer,
    check_feed_forward,
    check_layer_norm,
    check_residual,
)


# ---------------------------------------------------------------------------------------- layer norm
def good_layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


def test_layer_norm_reference_passes(capsys):
    assert check_layer_norm(good_layer_norm) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_layer_norm_torch_tensor_answer_is_accepted():
    torch = pytest.importorskip("torch")

    def torch_layer_norm(x, gamma, beta, eps=1e-5):
        return torch.nn.functional.layer_norm(torch.tensor(x), (x.shape[-1],), torch.tensor(gamma),
                                              torch.tensor(beta), eps)

    assert check_layer_norm(torch_layer_norm) is True


def test_layer_norm_stub_is_not_attempted(capsys):
    def stub(x, gamma, beta, eps=1e-5):
        raise NotImplementedError

    assert check_layer_norm(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def _ln(axis=-1, ddof=0, eps_on=True, eps_outside=False):
    def fn(x, gamma, beta, eps=1e-5):
        mean = x.mean(axis, keepdims=True)
        std = x.std(axis, keepdims=True, ddof=ddof)
        if eps_outside:
            return gamma * (x - mean) / (std + eps) + beta
        return gamma * (x - mean) / np.sqrt(std ** 2 + (eps if eps_on else 0.0)) + beta
    return fn


@pytest.mark.parametrize("fn, hint", [
    (_ln(axis=0), "axis 0"),
    (_ln(axis=1), "axis 1"),
    (_ln(axis=(0, 1)), "BatchNorm"),
    (_ln(ddof=1), "UNBIASED"),
    (_ln(eps_on=False), "eps is missing"),
    (_ln(eps_outside=True), "VARIANCE"),
    (lambda x, g, b, eps=1e-5: good_layer_norm(x, np.ones_like(g), np.zeros_like(b), eps), "not applied"),
    (lambda x, g, b, eps=1e-5: good_layer_norm(x, g, np.zeros_like(b), eps), "beta is missing"),
    (lambda x, g, b, eps=1e-5: good_layer_norm(x, np.ones_like(g), b, eps), "gamma is missing"),
    (lambda x, g, b, eps=1e-5: good_layer_norm(x, g, b, eps)[..., :-1], "axis 2 has size 5"),
    (lambda x, g, b, eps=1e-5: None, "return"),
])
def test_layer_norm_mistakes_get_specific_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_layer_norm(fn)


def test_layer_norm_does_not_modify_inputs_in_the_reference():
    def in_place(x, gamma, beta, eps=1e-5):
        x -= x.mean(-1, keepdims=True)
        x /= np.sqrt((x ** 2).mean(-1, keepdims=True) + eps)
        return x * gamma + beta

    assert check_layer_norm(in_place) is True


# ---------------------------------------------------------------------------------------- feed-forward
def good_ffn(x, W_1, b_1, W_2, b_2):
    return np.maximum(0.0, x @ W_1 + b_1) @ W_2 + b_2


def test_feed_forward_reference_passes(capsys):
    assert check_feed_forward(good_ffn) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_feed_forward_stub_is_not_attempted(capsys):
    def stub(x, W_1, b_1, W_2, b_2):
        raise NotImplementedError

    assert check_feed_forward(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (lambda x, W_1, b_1, W_2, b_2: (x @ W_1 + b_1) @ W_2 + b_2, "no ReLU"),
    (lambda x, W_1, b_1, W_2, b_2: np.maximum(0.0, good_ffn(x, W_1, b_1, W_2, b_2)), "OUTPUT too"),
    (lambda x, W_1, b_1, W_2, b_2: np.maximum(0.0, (x @ W_1 + b_1) @ W_2 + b_2), "wrong place"),
    (lambda x, W_1, b_1, W_2, b_2: np.maximum(0.0, x @ W_1) @ W_2, "biases b_1 and b_2 are missing"),
    (lambda x, W_1, b_1, W_2, b_2: (np.maximum(0.0, x @ W_1) + b_1) @ W_2 + b_2, "after the ReLU"),
    (lambda x, W_1, b_1, W_2, b_2: np.maximum(0.0, x @ W_1 + b_1) @ W_2, "b_2 is missing"),
    (lambda x, W_1, b_1, W_2, b_2: np.maximum(0.0, x @ W_1) @ W_2 + b_2, "b_1 is missing"),
    (lambda x, W_1, b_1, W_2, b_2: np.maximum(0.0, W_1.T @ x) @ W_2 + b_2, "ValueError"),
    (lambda x, W_1, b_1, W_2, b_2: good_ffn(x, W_1, b_1, W_2, b_2)[:, :2], "shape"),
])
def test_feed_forward_mistakes_get_specific_hints(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_feed_forward(fn)


# ---------------------------------------------------------------------------------------- residual wrapper
def _residual(layout="right", drop="output"):
    """A residual wrapper with one slip: layout in {"right", "post", "pre", "no residual", "adds norm x",
    "norm after", "no norm"}; drop in {"output", "after add", "after norm", "input", "always", "never"}."""
    F = pytest.importorskip("torch.nn.functional")

    def fn(x, sublayer, norm, norm_first=False, dropout=0.0, training=False):
        def d(t):
            if drop == "never":
                return t
            return F.dropout(t, dropout, training=True if drop == "always" else training)

        pre = {"post": False, "pre": True}.get(layout, norm_first)     # the two layouts' slips: the other one
        h = d(x) if drop == "input" else x
        if pre:
            sub = sublayer(norm(h)) if layout != "no norm" else sublayer(h)
            sub = d(sub) if drop in ("output", "always", "never") else sub
            base = {"no residual": 0.0, "adds norm x": norm(x)}.get(layout, x)
            out = base + sub
            out = d(out) if drop == "after add" else out
            return norm(out) if layout == "norm after" else out
        sub = sublayer(h)
        sub = d(sub) if drop in ("output", "always", "never") else sub
        out = sub if layout == "no residual" else x + sub
        out = d(out) if drop == "after add" else out
        out = out if layout == "no norm" else norm(out)
        return d(out) if drop == "after norm" else out
    return fn


def test_residual_reference_passes(capsys):
    pytest.importorskip("torch")
    from transformer_course.torch.sublayer import residual
    assert check_residual(_residual()) is True
    assert check_residual(residual) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_residual_stub_is_not_attempted(capsys):
    pytest.importorskip("torch")   # the check builds its inputs with PyTorch

    def stub(x, sublayer, norm, norm_first=False, dropout=0.0, training=False):
        raise NotImplementedError

    assert check_residual(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("layout, drop, hint", [
    ("post", "output", "other layout: pre-LN"),
    ("pre", "output", "other layout: post-LN"),
    ("no residual", "output", "residual is missing"),
    ("adds norm x", "output", "NORMALISED x"),
    ("norm after", "output", "no norm after the addition"),
    ("no norm", "output", "norm is missing"),
    ("right", "after add", "after the addition"),
    ("right", "after norm", "after the norm"),
    ("right", "input", "sublayer's input"),
    ("right", "always", "training=False"),
    ("right", "never", "no dropout was applied"),
])
def test_residual_mistakes_get_specific_hints(layout, drop, hint):
    pytest.importorskip("torch")
    with pytest.raises(ExerciseError, match=hint):
        check_residual(_residual(layout, drop))


def test_residual_keeps_the_callers_random_state():
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    before = torch.rand(3)
    torch.manual_seed(3)
    check_residual(_residual())
    assert torch.equal(torch.rand(3), before)


# ---------------------------------------------------------------------------------------- a whole encoder layer
def _encoder_layer(slip=None):
    """An encoder layer written with the submodules of the package's layer, with one slip: slip in {None,
    "swapped norms", "always post-LN", "no attention residual", "no ffn residual", "ffn first", "norm1 twice",
    "no mask", "tuple", "shape"}."""
    def fn(x, layer, mask=None):
        norm_first = not layer.norm_first if slip == "swapped norms" else layer.norm_first
        norm_first = False if slip == "always post-LN" else norm_first
        mask = None if slip == "no mask" else mask
        sublayers = [("attention", lambda h: layer.self_attn(h, h, mask)[0], layer.norm1),
                     ("ffn", layer.ffn, layer.norm2 if slip != "norm1 twice" else layer.norm1)]
        if slip == "ffn first":
            sublayers = sublayers[::-1]
        for name, sublayer, norm in sublayers:
            keep = slip != f"no {name} residual"
            if norm_first:
                sub = sublayer(norm(x))
                x = x + sub if keep else sub
            else:
                sub = sublayer(x)
                x = norm(x + sub) if keep else norm(sub)
        if slip == "tuple":
            return x, None
        return x[:, :-1] if slip == "shape" else x
    return fn


def test_encoder_layer_reference_passes(capsys):
    pytest.importorskip("torch")
    from transformer_course.torch.sublayer import residual

    def with_residual(x, layer, mask=None):
        def attention(h):
            return layer.self_attn(h, h, mask, need_weights=False)[0]

        x = residual(x, attention, layer.norm1, layer.norm_first)
        return residual(x, layer.ffn, layer.norm2, layer.norm_first)

    assert check_encoder_layer(_encoder_layer()) is True
    assert check_encoder_layer(with_residual) is True
    assert check_encoder_layer(lambda x, layer, mask=None: layer(x, mask)[0]) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_encoder_layer_stub_is_not_attempted(capsys):
    pytest.importorskip("torch")

    def stub(x, layer, mask=None):
        raise NotImplementedError

    assert check_encoder_layer(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("slip, hint", [
    ("swapped norms", "other layout's place"),
    ("always post-LN", "other layout's place; this layer is pre-LN"),
    ("no attention residual", "self-attention sublayer has no residual"),
    ("no ffn residual", "feed-forward sublayer has no residual"),
    ("ffn first", "runs before the self-attention"),
    ("norm1 twice", "same LayerNorm"),
    ("no mask", "padding mask is ignored"),
    ("tuple", "return only the layer's output"),
    ("shape", "shape"),
])
def test_encoder_layer_mistakes_get_specific_hints(slip, hint):
    pytest.importorskip("torch")
    with pytest.raises(ExerciseError, match=hint):
        check_encoder_layer(_encoder_layer(slip))


def test_encoder_layer_keeps_the_callers_random_state():
    torch = pytest.importorskip("torch")
    torch.manual_seed(3)
    before = torch.rand(3)
    torch.manual_seed(3)
    check_encoder_layer(_encoder_layer())
    assert torch.equal(torch.rand(3), before)
