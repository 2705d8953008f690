"""Checks for chapter 1 (attention history): a plain RNN encoder, and the rows of Vaswani et al.'s Table 1.

`check_rnn_encoder(fn)` runs the learner's encoder h_i = tanh(x_i W_xh + h_{i-1} W_hh + b_h) on the chapter's
three-token example and on a random one, and recognises the usual mistakes (no tanh, no recurrence, a
transposed W_hh, the states shifted by one step, only the final state returned).
`check_layer_complexity(fn)` compares the learner's Table 1 (operations per layer, sequential operations,
maximum path length) for self-attention, recurrent and convolutional layers with the paper's.
The references are written out here on purpose, independent of the package code the chapter shows.
"""
from __future__ import annotations

import math

import numpy as np

from ._feedback import ExerciseError, as_numpy, call_learner, compare_arrays, exercise_check, passed

__all__ = ["check_rnn_encoder", "check_layer_complexity", "LAYER_KINDS"]

LAYER_KINDS = ("self-attention", "recurrent", "convolutional")


# ----------------------------------------------------------------------------------------------------------
# RNN encoder
# ----------------------------------------------------------------------------------------------------------
def _rnn_states(x, W_xh, W_hh, b_h, activation=np.tanh, recurrent=True, transpose_hh=False):
    """All hidden states (S, D) of a plain RNN started from h_0 = 0, and variants that common mistakes give."""
    S = x.shape[0]
    D = W_hh.shape[0]
    W = W_hh.T if transpose_hh else W_hh
    h = np.zeros(D)                                      # (D,)
    states = []
    for t in range(S):
        a = x[t] @ W_xh + b_h + (h @ W if recurrent else 0.0)  # (D,)
        h = activation(a)                                # (D,)
        states.append(h)
    return np.stack(states)                              # (S, D)


def _example_inputs():
    """The chapter's hand-checkable example, and a random one (non-symmetric W_hh, so transposes show)."""
    worked = (np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),          # x: (S=3, E=2)
              np.array([[1.0, -1.0], [0.0, 2.0]]),                     # W_xh: (E, D)
              np.array([[1.0, 0.0], [1.0, 1.0]]),                      # W_hh: (D, D)
              np.zeros(2))                                             # b_h: (D,)
    rng = np.random.default_rng(1)
    S, E, D = 5, 3, 4
    random = (rng.normal(size=(S, E)), rng.normal(size=(E, D)), rng.normal(size=(D, D)),
              rng.normal(size=D) * 0.1)
    return [("the chapter's three-token example", worked), ("a random example (S=5, E=3, D=4)", random)]


@exercise_check
def check_rnn_encoder(fn) -> None:
    """fn(x (S, E), W_xh (E, D), W_hh (D, D), b_h (D,)) must return every hidden state, shape (S, D)."""
    for label, (x, W_xh, W_hh, b_h) in _example_inputs():
        S, D = x.shape[0], W_hh.shape[0]
        got = call_learner(fn, x, W_xh, W_hh, b_h)
        got = as_numpy(got, "the states")
        expected = _rnn_states(x, W_xh, W_hh, b_h)
        if got.shape == (D,):
            raise ExerciseError(f"On {label} your encoder returned one vector of shape {got.shape}: that is the "
                                f"context c = h_S alone. Return every state, stacked into shape ({S}, {D}).")
        if got.shape == (S + 1, D):
            raise ExerciseError(f"On {label} your encoder returned {S + 1} states: leave out the initial state "
                                "h_0 = 0 and return h_1 ... h_S.")
        hints = [
            (_rnn_states(x, W_xh, W_hh, b_h, activation=lambda a: a),
             "the states are the pre-activations: apply tanh to x_i W_xh + h_{i-1} W_hh + b_h."),
            (_rnn_states(x, W_xh, W_hh, b_h, recurrent=False),
             "each state ignores the previous one: add h_{i-1} W_hh inside the tanh (the recurrence)."),
            (_rnn_states(x, W_xh, W_hh, b_h, transpose_hh=True),
             "W_hh is used transposed: vectors are rows here, so the recurrent term is h_{i-1} @ W_hh."),
            (_rnn_states(x, W_xh, W_hh, np.zeros_like(b_h)),
             "the bias b_h is missing inside the tanh."),
            (np.vstack([np.zeros((1, D)), expected[:-1]]),
             "the states are shifted by one step: you stored h_{i-1} instead of the new h_i."),
        ]
        compare_arrays(got, expected, f"the states on {label}", hints=hints)
    passed("your RNN encoder returns h_1 ... h_S, and its last state is the context vector c.")


# ----------------------------------------------------------------------------------------------------------
# Table 1 of Vaswani et al. (2017)
# ----------------------------------------------------------------------------------------------------------
def _table1(kind: str, n: int, d: int, kernel: int) -> tuple[float, float, float]:
    """(operations per layer, sequential operations, maximum path length), leading terms, no constants."""
    if kind == "self-attention":
        return n * n * d, 1, 1
    if kind == "recurrent":
        return n * d * d, n, n
    if kind == "convolutional":
        return kernel * n * d * d, 1, math.log(n) / math.log(kernel)
    raise ValueError(f"kind: expected one of {LAYER_KINDS}, got {kind!r}")


_COLUMNS = ("operations per layer", "sequential operations", "maximum path length")

_HINTS = {
    ("self-attention", 0): [(lambda n, d, kernel: n * d * d,
                             "that is n·d²: the scores Q Kᵀ compare every position with every other one, "
                             "n² dot products of length d, so n²·d.")],
    ("recurrent", 0): [(lambda n, d, kernel: n * n * d,
                        "that is n²·d: each of the n steps multiplies a d-vector by a d×d matrix, so n·d².")],
    ("convolutional", 0): [(lambda n, d, kernel: n * d * d,
                            "the kernel width κ is missing: each output mixes κ input positions, each through "
                            "a d×d matrix, so κ·n·d²."),
                           (lambda n, d, kernel: kernel * n * d,
                            "each of the κ taps is a d×d matrix (d inputs to d outputs): κ·n·d², not κ·n·d.")],
    ("recurrent", 1): [(lambda n, d, kernel: 1,
                        "h_i needs h_{i-1}: the n steps of a recurrent layer cannot run at the same time.")],
    ("self-attention", 1): [(lambda n, d, kernel: n,
                             "every position's output can be computed at the same time: a constant number "
                             "of sequential operations.")],
    ("convolutional", 1): [(lambda n, d, kernel: n,
                            "all positions of a convolution are computed at the same time: a constant number "
                            "of sequential operations.")],
    ("convolutional", 2): [(lambda n, d, kernel: n / kernel,
                            "n/κ is the path length of a stack of contiguous kernels; Table 1 assumes dilated "
                            "convolutions, whose reach multiplies by κ per layer: log_κ(n) = math.log(n, kernel)."),
                           (lambda n, d, kernel: math.ceil(math.log(n) / math.log(kernel)),
                            "Table 1 states the order log_κ(n) itself: return math.log(n, kernel), not its ceiling.")],
    ("recurrent", 2): [(lambda n, d, kernel: 1,
                        "information from the first position reaches the last through n recurrent steps.")],
    ("self-attention", 2): [(lambda n, d, kernel: n,
                             "in self-attention every position attends to every other one directly: one step.")],
}


@exercise_check
def check_layer_complexity(fn) -> None:
    """fn(kind, n, d, kernel) -> (operations per layer, sequential operations, maximum path length), as in Table 1."""
    cases = [(10, 64, 3), (100, 512, 3), (256, 32, 4)]
    for kind in LAYER_KINDS:
        for n, d, kernel in cases:
            result = call_learner(fn, kind, n, d, kernel)
            if not isinstance(result, (tuple, list)) or len(result) != 3:
                raise ExerciseError(f"fn({kind!r}, n={n}, d={d}, kernel={kernel}) returned {result!r}; it should "
                                    "return three numbers: (operations per layer, sequential operations, maximum path "
                                    "length).")
            expected = _table1(kind, n, d, kernel)
            for column, (got, want) in enumerate(zip(result, expected)):
                name = f"the {_COLUMNS[column]} of a {kind} layer (n={n}, d={d}, kernel={kernel})"
                hints = [(wrong(n, d, kernel), text) for wrong, text in _HINTS.get((kind, column), [])]
                compare_arrays(got, want, name, rtol=1e-9, atol=1e-9, hints=hints)
    passed("your table matches Vaswani et al.'s Table 1 for all three layers.")
