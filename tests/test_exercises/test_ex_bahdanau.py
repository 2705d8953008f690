"""Chapter 2's check accepts the reference answer and gives the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.bahdanau import check_additive_attention

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def make(score="good", weights="good", context="good"):
    """A learner's function with one deliberate mistake in one of the three stages."""
    def fn(s_prev, H, W_a, U_a, v_a):
        q, k = s_prev @ W_a, H @ U_a                       # (T, A), (S, A)
        pre = q[:, None, :] + k[None, :, :]                # (T, S, A)
        e = {"good": np.tanh(pre) @ v_a,
             "no_tanh": pre @ v_a,
             "v_inside": np.tanh(pre @ v_a),
             "no_query": np.tanh(pre - q[:, None, :]) @ v_a,
             "no_keys": np.tanh(pre - k[None, :, :]) @ v_a}[score]
        alpha = {"good": softmax(e, -1), "axis0": softmax(e, 0), "none": e,
                 "no_exp": e / e.sum(-1, keepdims=True), "no_norm": np.exp(e)}[weights]
        c = {"good": alpha @ H, "raw": e @ H, "mean": np.tile(H.mean(0), (len(e), 1))}[context]
        return e, alpha, c
    return fn


def test_reference_passes(capsys):
    assert check_additive_attention(make()) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_torch_tensors_are_accepted(capsys):
    torch = pytest.importorskip("torch")
    good = make()
    assert check_additive_attention(lambda *a: tuple(torch.from_numpy(x) for x in good(*a))) is True


def test_stub_is_not_attempted(capsys):
    def stub(s_prev, H, W_a, U_a, v_a):
        raise NotImplementedError
    assert check_additive_attention(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("mistake, message", [
    (dict(score="no_tanh"), "tanh is missing"),
    (dict(score="v_inside"), "tanh was applied after v_a"),
    (dict(score="no_query"), "decoder-state term"),
    (dict(score="no_keys"), "annotation term"),
    (dict(weights="axis0"), "COLUMNS sum to 1"),
    (dict(weights="none"), "softmax is missing"),
    (dict(weights="no_exp"), "without exponentiating"),
    (dict(weights="no_norm"), "not normalised"),
    (dict(context="raw"), "raw scores"),
    (dict(context="mean"), "plain average"),
])
def test_common_mistakes_get_their_hint(mistake, message):
    with pytest.raises(ExerciseError, match=message):
        check_additive_attention(make(**mistake))


def test_wrong_return_and_wrong_shape_are_explained():
    with pytest.raises(ExerciseError, match=r"return three arrays"):
        check_additive_attention(lambda *a: make()(*a)[:2])
    with pytest.raises(ExerciseError, match=r"shape \(5, 3\), expected \(3, 5\)"):
        check_additive_attention(lambda *a: tuple(x.T if i < 2 else x for i, x in enumerate(make()(*a))))
