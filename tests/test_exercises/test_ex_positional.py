"""Chapter 6's checks accept the reference answers and give the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError
from transformer_course.exercises.positional import check_shift_matrix, check_sinusoidal_encoding


def good_encoding(max_len, d_model):
    pos = np.arange(max_len)[:, None]
    angle = pos / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe


def doubled_loop_encoding(max_len, d_model):  # a loop whose i is already even, with 2 * i in the exponent
    pe = np.zeros((max_len, d_model))
    for pos in range(max_len):
        for i in range(0, d_model, 2):
            pe[pos, i] = np.sin(pos / 10000 ** (2 * i / d_model))
            if i + 1 < d_model:
                pe[pos, i + 1] = np.cos(pos / 10000 ** (2 * i / d_model))
    return pe


def swapped(max_len, d_model):
    pe = good_encoding(max_len, d_model)
    angle = np.arange(max_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe[:, 0::2] = np.cos(angle)
    pe[:, 1::2] = np.sin(angle[:, : d_model // 2])
    return pe


def halves(max_len, d_model):
    angle = np.arange(max_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    return np.concatenate([np.sin(angle), np.cos(angle)[:, : d_model // 2]], axis=1)


def halved_exponent(max_len, d_model):
    angle = np.arange(max_len)[:, None] / 10000 ** (np.arange(0, (d_model + 1) // 2) / d_model)
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe


def from_one(max_len, d_model):
    return good_encoding(max_len + 1, d_model)[1:]


def even_only(max_len, d_model):  # crashes for odd d_model
    angle = np.arange(max_len)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((max_len, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe


def test_reference_encoding_passes(capsys):
    assert check_sinusoidal_encoding(good_encoding) is True
    assert "✔ Correct" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (doubled_loop_encoding, "exponent is doubled"),
    (halved_exponent, "exponent is halved"),
    (swapped, "sine and cosine are swapped"),
    (from_one, "positions start at 1"),
    (lambda m, d: good_encoding(m, d).T, "transpose"),
    (even_only, "odd d_model"),
])
def test_each_mistake_gets_its_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_sinusoidal_encoding(fn)


def test_concatenated_layout_passes_with_a_note(capsys):
    """All sines then all cosines (tensor2tensor's and fairseq's layout) is a column permutation: accepted."""
    assert check_sinusoidal_encoding(halves) is True
    out = capsys.readouterr().out
    assert "✔ Correct" in out and "interleaves" in out


def test_any_fixed_column_permutation_of_the_concatenated_layout_is_the_same_information():
    """The two layouts hold the same numbers: a permutation of the columns maps one onto the other."""
    max_len, d_model = 20, 8
    order = np.concatenate([np.arange(0, d_model, 2), np.arange(1, d_model, 2)])   # interleaved -> halves
    assert np.allclose(good_encoding(max_len, d_model)[:, order], halves(max_len, d_model))


def test_mixing_layouts_between_sizes_is_refused():
    def mixed(max_len, d_model):
        return halves(max_len, d_model) if d_model == 16 else good_encoding(max_len, d_model)
    with pytest.raises(ExerciseError, match="pick one layout"):
        check_sinusoidal_encoding(mixed)


def test_unattempted_is_reported(capsys):
    def stub(max_len, d_model):
        raise NotImplementedError
    assert check_sinusoidal_encoding(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def good_shift(delta, d_model):
    R = np.zeros((d_model, d_model))
    for j in range(0, d_model, 2):
        a = delta / 10000 ** (j / d_model)
        R[j:j + 2, j:j + 2] = [[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]
    return R


def test_reference_shift_passes_and_really_shifts(capsys):
    assert check_shift_matrix(good_shift) is True
    pe = good_encoding(30, 8)
    assert np.allclose(pe[:-4] @ good_shift(4, 8), pe[4:])
    assert "✔ Correct" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (lambda delta, d: good_shift(delta, d).T, "column vectors"),
    (lambda delta, d: good_shift(-delta, d), "PE\\[pos - delta\\]"),
    (lambda delta, d: np.kron(np.eye(d // 2), [[np.cos(delta), -np.sin(delta)], [np.sin(delta), np.cos(delta)]]),
     "same angle"),
    (lambda delta, d: np.eye(d), "values differ"),
])
def test_shift_mistakes_get_their_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_shift_matrix(fn)


def test_a_shift_by_the_absolute_offset_fails_with_its_own_hint():
    """|delta| passes every positive offset; the negative one must catch it, with a hint about the sign."""
    def signless(delta, d_model):
        return good_shift(abs(delta), d_model)
    with pytest.raises(ExerciseError, match="sign was dropped") as caught:
        check_shift_matrix(signless)
    assert "fn(-7, 8)" in str(caught.value) and "column vectors" not in str(caught.value)
