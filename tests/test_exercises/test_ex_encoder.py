"""Chapter 7's checks accept the reference answers and give the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.encoder import check_feed_forward, check_layer_norm


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
