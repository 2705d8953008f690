"""Chapter 1's checks accept the reference solutions and give the right hint for each common mistake."""
import math

import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.attention_history import check_layer_complexity, check_rnn_encoder


def rnn_encoder(x, W_xh, W_hh, b_h, activation=np.tanh, recurrent=True, transpose=False, shift=False,
                bias=True, final_only=False, keep_h0=False):
    """The reference solution, with switches that reproduce the usual mistakes."""
    D = W_hh.shape[0]
    h = np.zeros(D)
    states = [h] if keep_h0 else []
    for x_t in x:
        previous = h
        a = x_t @ W_xh + (b_h if bias else 0.0)
        if recurrent:
            a = a + h @ (W_hh.T if transpose else W_hh)
        h = activation(a)
        states.append(previous if shift else h)
    return h if final_only else np.stack(states)


def test_reference_rnn_encoder_passes(capsys):
    assert check_rnn_encoder(rnn_encoder) is True
    assert "✔ Correct" in capsys.readouterr().out


def test_unattempted_rnn_encoder_is_reported(capsys):
    def stub(x, W_xh, W_hh, b_h):
        raise NotImplementedError

    assert check_rnn_encoder(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


@pytest.mark.parametrize("mistake, message", [
    (dict(activation=lambda a: a), "apply tanh"),
    (dict(recurrent=False), "add h_{i-1} W_hh"),
    (dict(transpose=True), "transposed"),
    (dict(bias=False), "bias b_h is missing"),
    (dict(shift=True), "shifted by one step"),
    (dict(final_only=True), "context c = h_S alone"),
    (dict(keep_h0=True), "leave out the initial state"),
])
def test_rnn_encoder_mistakes_get_their_hint(mistake, message):
    with pytest.raises(ExerciseError, match=message.replace("{", r"\{").replace("}", r"\}")):
        check_rnn_encoder(lambda x, W_xh, W_hh, b_h: rnn_encoder(x, W_xh, W_hh, b_h, **mistake))


def table1(kind, n, d, k):
    if kind == "self-attention":
        return n * n * d, 1, 1
    if kind == "recurrent":
        return n * d * d, n, n
    return k * n * d * d, 1, math.log(n, k)


def test_reference_table_passes(capsys):
    assert check_layer_complexity(table1) is True
    assert "Table 1" in capsys.readouterr().out


@pytest.mark.parametrize("kind, column, wrong, message", [
    ("self-attention", 0, lambda n, d, k: n * d * d, "n² dot products"),
    ("convolutional", 0, lambda n, d, k: n * d * d, "kernel width κ is missing"),
    ("recurrent", 1, lambda n, d, k: 1, "cannot run at the same time"),
    ("convolutional", 2, lambda n, d, k: n / k, "dilated"),
    ("convolutional", 2, lambda n, d, k: math.ceil(math.log(n, k)), "not its ceiling"),
])
def test_table_mistakes_get_their_hint(kind, column, wrong, message):
    def learner(kind_, n, d, k):
        row = list(table1(kind_, n, d, k))
        if kind_ == kind:
            row[column] = wrong(n, d, k)
        return tuple(row)

    with pytest.raises(ExerciseError, match=message):
        check_layer_complexity(learner)


def test_table_with_wrong_return_type_is_explained():
    with pytest.raises(ExerciseError, match="three numbers"):
        check_layer_complexity(lambda kind, n, d, k: n * d)
