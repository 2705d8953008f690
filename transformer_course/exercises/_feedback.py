"""Shared machinery for the `check_*` functions: compare a learner's answer with a reference and say kindly,
and specifically, what is wrong (which axis has the wrong size, where the values differ, a likely cause).

A check prints one line starting with a tick when the answer is right and raises `ExerciseError` (an
AssertionError, so it shows as a failure in the notebook) with the hint when it is not.
"""
from __future__ import annotations

import functools

import numpy as np

from ..utils import to_numpy

__all__ = ["ExerciseError", "as_numpy", "call_learner", "compare_arrays", "passed", "exercise_check"]


class ExerciseError(AssertionError):
    """A learner's answer is not right yet; the message says what to look at."""


def as_numpy(value, name: str) -> np.ndarray:
    """Accept NumPy arrays, torch tensors (detached to CPU) and nested lists; refuse anything else clearly."""
    if value is None:
        raise ExerciseError(f"{name} is None: did your function forget to `return` its result?")
    try:
        return to_numpy(value).astype(np.float64)
    except (TypeError, ValueError) as err:
        raise ExerciseError(f"{name} should be an array of numbers, got {type(value).__name__}") from err


def _hint_for(err: Exception, n_args: int, kwargs: dict) -> str:
    """The likeliest cause of a crash inside a learner's function, in one sentence."""
    text = str(err)
    if isinstance(err, TypeError) and "not callable" in text:
        return "Something that holds an array or a number is called like a function: a variable named like a function?"
    if isinstance(err, TypeError) and ("argument" in text or "parameter" in text):
        extra = f" and the keyword argument(s) {', '.join(kwargs)}" if kwargs else ""
        return (f"The check calls your function with {n_args} positional argument(s){extra}: compare with your "
                "function's parameters (the check's docstring gives the expected signature).")
    if isinstance(err, AttributeError) and ("'list'" in text or "'tuple'" in text):
        return "A Python list or tuple is used where a NumPy array is needed: wrap it with np.asarray(...)."
    if isinstance(err, (ValueError, TypeError)) and any(w in text for w in ("shape", "broadcast", "matmul", "align")):
        return ("The shapes of two arrays do not fit together: print the .shape of each array in your function "
                "and compare with the shapes in the check's docstring.")
    if isinstance(err, IndexError) or type(err).__name__ == "AxisError":
        return "An axis or an index is out of range: which axis holds what? (the docstring gives the shapes)."
    return "The traceback above points to the line in your function."


def split_arrays(result, names: tuple[str, ...], what: str, meaning: str) -> tuple[np.ndarray, ...]:
    """A learner's tuple of arrays, named `names`, or one error saying what it returned instead."""
    if not isinstance(result, (tuple, list)) or len(result) != len(names):
        count = "a pair" if len(names) == 2 else f"{len(names)} arrays"
        raise ExerciseError(f"{what} returned a {type(result).__name__}; it should return {count} "
                            f"`({', '.join(names)})`: {meaning}.")
    return tuple(as_numpy(value, name) for value, name in zip(result, names))


def split_out_weights(result, what: str) -> tuple[np.ndarray, np.ndarray]:
    """An attention function's `(out, weights)` pair as arrays, or one error saying what it returned instead."""
    return split_arrays(result, ("out", "weights"), what, "the attention output and the attention weights")


def call_learner(fn, *args, **kwargs):
    """Call the learner's function on copies of the array inputs (an in-place edit cannot spoil the reference).

    Any crash inside it becomes an ExerciseError that names the error and its likeliest cause; the original
    traceback stays attached, so the notebook still shows the line that failed. NotImplementedError (the
    stub of an exercise not attempted yet) passes through to `exercise_check`.
    """
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kw_copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    try:
        return fn(*copies, **kw_copies)
    except (NotImplementedError, ExerciseError):
        raise
    except Exception as err:
        name = getattr(fn, "__name__", "your function")
        raise ExerciseError(f"{name}(...) raised {type(err).__name__}: {err}. "
                            f"{_hint_for(err, len(args), kwargs)}") from err


def compare_arrays(got, expected, name: str = "your answer", atol: float = 1e-6, rtol: float = 1e-5,
                   hints: list[tuple[object, str]] | None = None) -> None:
    """Raise ExerciseError with a specific message unless `got` matches `expected`.

    `hints` lists (wrong_answer, explanation) pairs: the answers a common mistake produces; if the learner's
    answer matches one, its explanation is the feedback (e.g. "you forgot to divide by sqrt(d_k)").
    """
    got = as_numpy(got, name)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        if got.ndim != expected.ndim:
            raise ExerciseError(f"{name} has {got.ndim} axes {got.shape}; expected {expected.ndim} axes "
                                f"{expected.shape}.")
        axes = [i for i, (a, b) in enumerate(zip(got.shape, expected.shape)) if a != b]
        detail = ", ".join(f"axis {i} has size {got.shape[i]} instead of {expected.shape[i]}" for i in axes)
        transposed = sorted(got.shape) == sorted(expected.shape)
        extra = " (the sizes are all there: a transpose or a swapped axis?)" if transposed else ""
        raise ExerciseError(f"{name} has shape {got.shape}, expected {expected.shape}: {detail}{extra}.")
    if np.isnan(got).any():
        where = tuple(int(i) for i in np.argwhere(np.isnan(got))[0])
        raise ExerciseError(f"{name} contains NaN (first at index {where}): a softmax over a fully masked "
                            "row, a log of 0, or a division by zero?")
    if np.allclose(got, expected, atol=atol, rtol=rtol):
        return
    for wrong, explanation in hints or []:
        wrong = np.asarray(wrong, dtype=np.float64)
        if wrong.shape == got.shape and np.allclose(got, wrong, atol=atol, rtol=rtol):
            raise ExerciseError(f"{name} is not right yet: {explanation}")
    error = np.abs(got - expected)
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(error)), error.shape))
    n_wrong = int((error > atol + rtol * np.abs(expected)).sum())
    raise ExerciseError(f"{name} has the right shape {got.shape} but {n_wrong} of {got.size} values differ; "
                        f"the largest difference is at index {where}: got {got[where]:.6g}, expected "
                        f"{expected[where]:.6g}.")


def passed(message: str) -> str:
    """The line printed when an answer is right (returned too, so tests can check it)."""
    line = f"✔ Correct: {message}"
    print(line)
    return line


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """The checks' own softmax, kept apart from transformer_course.numpy (whose functions some exercises rebuild,
    so a reference must not come from the code under test). A wrong answer's scores may overflow or hold NaN:
    the warnings stay silent, the comparison reports the difference."""
    with np.errstate(all="ignore"):
        shifted = x - x.max(axis=axis, keepdims=True)
        e = np.exp(shifted)
        return e / e.sum(axis=axis, keepdims=True)


def exercise_check(check):
    """Decorate a `check_*` function so that an exercise not attempted yet is reported, not crashed.

    Exercise cells ship with a stub that raises NotImplementedError; running the chapter top to bottom
    then prints a reminder instead of failing, and the learner's own attempt gets the full check.
    Returns True when the answer is right, False when it was not attempted; raises ExerciseError otherwise.
    """
    @functools.wraps(check)
    def wrapper(fn=None, *args, **kwargs):
        if not callable(fn):
            what = type(fn).__name__
            result = " (its result?)" if fn is not None and not isinstance(fn, str) else ""
            raise ExerciseError(f"{check.__name__} expects your function itself, as in {check.__name__}(my_function); "
                                f"got a {what}{result}. Pass the function's name, without calling it.")
        try:
            check(fn, *args, **kwargs)
        except NotImplementedError:
            print(f"… {check.__name__}: not attempted yet. Replace `raise NotImplementedError` with your "
                  "code and run this cell again.")
            return False
        return True
    return wrapper
