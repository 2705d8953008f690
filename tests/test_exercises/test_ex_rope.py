"""Chapter 6's RoPE check accepts a right answer and gives the right hint for each common mistake."""
import numpy as np
import pytest

from transformer_course.exercises import ExerciseError, check_rope
from transformer_course.exercises.rope import package_rope, rope_reference
from transformer_course.numpy.positional import rotary_positions_forward


def good_rope(x, positions, base):
    omega = base ** (-np.arange(0, x.shape[1], 2) / x.shape[1])              # (D_h/2,)
    angle = np.asarray(positions)[:, None] * omega                           # (T, D_h/2)
    out = np.empty_like(x, dtype=np.float64)
    out[:, 0::2] = x[:, 0::2] * np.cos(angle) - x[:, 1::2] * np.sin(angle)
    out[:, 1::2] = x[:, 0::2] * np.sin(angle) + x[:, 1::2] * np.cos(angle)
    return out


def rotate_half(x, positions, base):  # GPT-NeoX pairing: (i, i + D_h/2)
    half = x.shape[1] // 2
    angle = np.asarray(positions)[:, None] * base ** (-np.arange(0, x.shape[1], 2) / x.shape[1])
    first, second = x[:, :half], x[:, half:]
    return np.concatenate([first * np.cos(angle) - second * np.sin(angle),
                           first * np.sin(angle) + second * np.cos(angle)], axis=1)


def row_times_column_matrix(x, positions, base):  # x @ M for M = [[cos, -sin], [sin, cos]]: the transpose forgotten
    out = np.empty_like(x, dtype=np.float64)
    for t, pos in enumerate(positions):
        for col in range(0, x.shape[1], 2):
            a = pos * base ** (-col / x.shape[1])
            M = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
            out[t, col:col + 2] = x[t, col:col + 2] @ M
    return out


def pair_index_exponent(x, positions, base):  # base^(-i / D_h) with i the pair index
    i = np.arange(x.shape[1] // 2)
    return _turn_all(x, np.asarray(positions)[:, None] * base ** (-i / x.shape[1]))


def doubled_loop_exponent(x, positions, base):  # a loop over even columns with 2 * col in the exponent
    col = np.arange(0, x.shape[1], 2)
    return _turn_all(x, np.asarray(positions)[:, None] * base ** (-2 * col / x.shape[1]))


def one_angle(x, positions, base):
    return _turn_all(x, np.asarray(positions, dtype=float)[:, None] * np.ones(x.shape[1] // 2))


def _turn_all(x, angle):
    out = np.empty_like(x, dtype=np.float64)
    out[:, 0::2] = x[:, 0::2] * np.cos(angle) - x[:, 1::2] * np.sin(angle)
    out[:, 1::2] = x[:, 0::2] * np.sin(angle) + x[:, 1::2] * np.cos(angle)
    return out


def test_reference_matches_the_package_and_turns_pairs_as_complex_numbers():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 12))
    positions = np.arange(3, 10)
    package, _ = rotary_positions_forward(x[None, None], offset=3)          # (1, 1, T, D_h)
    assert np.allclose(rope_reference(x, positions), package[0, 0], atol=1e-12)
    assert np.allclose(package_rope(x, positions), package[0, 0], atol=1e-12)
    omega = 10000.0 ** (-np.arange(0, 12, 2) / 12)
    complex_turn = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * positions[:, None] * omega)
    assert np.allclose(rope_reference(x, positions)[:, 0::2], complex_turn.real)
    assert np.allclose(rope_reference(x, positions)[:, 1::2], complex_turn.imag)


def test_a_right_answer_passes(capsys):
    assert check_rope(good_rope) is True
    assert "✔ Correct" in capsys.readouterr().out


@pytest.mark.parametrize("fn, hint", [
    (rotate_half, "rotate half"),
    (row_times_column_matrix, "wrong way"),
    (lambda x, p, b: good_rope(x, -np.asarray(p), b), "wrong way"),
    (pair_index_exponent, "exponent is halved"),
    (doubled_loop_exponent, "exponent is doubled"),
    (one_angle, "same angle"),
    (lambda x, p, b: good_rope(x, np.arange(len(x)), b), "given `positions`"),
    (lambda x, p, b: good_rope(x, p, 10000.0), "base is fixed"),
    (lambda x, p, b: x, "values differ"),
])
def test_each_mistake_gets_its_hint(fn, hint):
    with pytest.raises(ExerciseError, match=hint):
        check_rope(fn)


def test_torch_answers_and_unattempted_stubs(capsys):
    torch = pytest.importorskip("torch")

    def torch_rope(x, positions, base):
        return torch.from_numpy(good_rope(np.asarray(x), positions, base))
    assert check_rope(torch_rope) is True

    def stub(x, positions, base):
        raise NotImplementedError
    assert check_rope(stub) is False
    assert "not attempted yet" in capsys.readouterr().out


def test_the_package_takes_another_base_in_both_twins():
    """base^(-2i / D_h) for another base than 10000: the package's NumPy forward is the complex turn written out
    here, its PyTorch twin agrees, and a base that is not above 1 is refused by name."""
    torch = pytest.importorskip("torch")   # the NumPy half runs without PyTorch (the floors leg)
    from transformer_course.torch.positional import RotaryPositions

    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 8))
    positions = np.arange(2, 7)
    package, _ = rotary_positions_forward(x[None, None], offset=2, base=500.0)      # (1, 1, T, D_h)
    omega = 500.0 ** (-np.arange(0, 8, 2) / 8)
    complex_turn = (x[:, 0::2] + 1j * x[:, 1::2]) * np.exp(1j * positions[:, None] * omega)
    assert np.allclose(package[0, 0, :, 0::2], complex_turn.real, atol=1e-12)
    assert np.allclose(package[0, 0, :, 1::2], complex_turn.imag, atol=1e-12)
    twin = RotaryPositions(8, max_len=16, base=500.0)(torch.from_numpy(x)[None, None], offset=2)
    assert np.allclose(twin[0, 0].numpy(), package[0, 0], atol=1e-12)
    assert np.allclose(package_rope(x, positions, base=500.0), package[0, 0], atol=1e-12)
    for bad in (1.0, 0, -5.0, "10000", True):
        with pytest.raises(ValueError, match="base: expected a number greater than 1"):
            rotary_positions_forward(x[None, None], base=bad)
        with pytest.raises(ValueError, match="base: expected a number greater than 1"):
            RotaryPositions(8, max_len=16, base=bad)
