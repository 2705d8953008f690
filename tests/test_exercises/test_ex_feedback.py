"""The shared feedback machinery of the exercise checks gives specific hints."""
import numpy as np
import pytest

from transformer_course.exercises._feedback import ExerciseError, compare_arrays, exercise_check, passed


def test_wrong_shape_names_the_axis_and_suspects_a_transpose():
    with pytest.raises(ExerciseError, match=r"axis 0 has size 2 instead of 3.*transpose"):
        compare_arrays(np.zeros((2, 3)), np.zeros((3, 2)), "weights")


def test_wrong_rank_says_how_many_axes():
    with pytest.raises(ExerciseError, match="has 1 axes"):
        compare_arrays(np.zeros(3), np.zeros((1, 3)))


def test_wrong_values_point_at_the_largest_difference():
    expected = np.arange(6.0).reshape(2, 3)
    got = expected.copy()
    got[1, 2] += 5
    with pytest.raises(ExerciseError, match=r"1 of 6 values differ.*index \(1, 2\)"):
        compare_arrays(got, expected)


def test_a_known_mistake_gets_its_own_hint():
    with pytest.raises(ExerciseError, match="forgot to scale"):
        compare_arrays([2.0, 4.0], [1.0, 2.0], hints=[([2.0, 4.0], "you forgot to scale")])


def test_nan_and_none_are_explained():
    with pytest.raises(ExerciseError, match="NaN"):
        compare_arrays([np.nan, 1.0], [0.0, 1.0])
    with pytest.raises(ExerciseError, match="forget to `return`"):
        compare_arrays(None, [0.0])


def test_unattempted_exercise_is_reported_not_raised(capsys):
    @exercise_check
    def check_double(fn):
        compare_arrays(fn(1.0), 2.0, "double(1.0)")
        passed("double works")

    def stub(x):
        raise NotImplementedError

    assert check_double(stub) is False
    assert "not attempted yet" in capsys.readouterr().out
    assert check_double(lambda x: 2 * x) is True
    assert "✔ Correct: double works" in capsys.readouterr().out
    with pytest.raises(ExerciseError):
        check_double(lambda x: 3 * x)
