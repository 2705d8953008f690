"""Checks for chapter 6 (positional encoding): the sinusoidal table and the rotation that shifts it.

Each check calls the learner's function on small fixed sizes, compares with a reference written out here
(on purpose independent of `transformer_course.numpy.positional`, which the chapter teaches), and recognises
the usual mistakes: the exponent doubled (2i where i already steps by two), sine and cosine swapped,
positions counted from 1, an odd d_model that crashes, and (for the rotation) the matrix written for column
vectors (which shifts by -delta), one angle for all, or the offset's sign dropped (|delta| shifts a negative
offset the wrong way, so one offset of the check is negative). All the sines followed by all the cosines is not a
mistake: with the paper's frequencies it is a fixed permutation of the columns, which changes nothing a model
can learn, so it is accepted (with a note that the paper interleaves them). tensor2tensor and fairseq store
that layout, with slightly different frequencies, 10000^(-i / (d/2 - 1)).
"""
from __future__ import annotations

import numpy as np

from ._feedback import ExerciseError, as_numpy, call_learner, compare_arrays, exercise_check, passed

__all__ = ["check_sinusoidal_encoding", "check_shift_matrix"]


# ----------------------------------------------------------------------------------------------------------
# references (float64) and the wrong answers that common mistakes produce
# ----------------------------------------------------------------------------------------------------------
def _angles(max_len, d_model, exponent_factor=1.0, first_pos=0):
    pos = np.arange(first_pos, first_pos + max_len, dtype=np.float64)[:, None]   # (max_len, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)                           # (ceil(D / 2),)
    return pos / 10000.0 ** (exponent_factor * two_i / d_model)                  # (max_len, ceil(D / 2))


def _interleave(first, second, d_model):
    pe = np.zeros((first.shape[0], d_model))
    pe[:, 0::2] = first
    pe[:, 1::2] = second[:, : d_model // 2]
    return pe


def _reference(max_len, d_model, exponent_factor=1.0, first_pos=0, swap=False):
    angle = _angles(max_len, d_model, exponent_factor, first_pos)
    if swap:
        return _interleave(np.cos(angle), np.sin(angle), d_model)
    return _interleave(np.sin(angle), np.cos(angle), d_model)


def _halves(max_len, d_model):
    angle = _angles(max_len, d_model)
    return np.concatenate([np.sin(angle), np.cos(angle)[:, : d_model // 2]], axis=1)


def _pair_index_exponent(max_len, d_model):
    """10000^(i / d_model) with i the pair number 0, 1, 2, ...: the exponent halved."""
    angle = _angles(max_len, d_model, exponent_factor=0.5)
    return _interleave(np.sin(angle), np.cos(angle), d_model)


def sinusoidal_hints(max_len, d_model):
    """(wrong answer, explanation) pairs for `check_sinusoidal_encoding` (also used by the tests)."""
    return [
        (_reference(max_len, d_model, exponent_factor=2.0),
         "the exponent is doubled. With `for i in range(0, d_model, 2)` the loop variable is already the even "
         "index 2i, so the exponent is i / d_model, not 2 * i / d_model (a slip found in published worked "
         "examples)."),
        (_pair_index_exponent(max_len, d_model),
         "the exponent is halved: if i counts pairs (0, 1, 2, ...), the even column is 2i and the exponent is "
         "2 * i / d_model, not i / d_model."),
        (_reference(max_len, d_model, swap=True),
         "sine and cosine are swapped: even columns 2i hold the sine, odd columns 2i + 1 the cosine."),
        (_reference(max_len, d_model, first_pos=1),
         "positions start at 1; they start at 0 (row 0 is sin(0) = 0, cos(0) = 1)."),
        (_reference(max_len, d_model).T,
         "the table is transposed: rows are positions, columns are dimensions."),
    ]


def _shift_reference(delta, d_model, column_vectors=False, frequencies=True):
    R = np.zeros((d_model, d_model))                     # even d_model only: every sine has its cosine
    for two_i in range(0, d_model, 2):                   # the sine column 2i of pair i
        omega = 1.0 / 10000.0 ** (two_i / d_model) if frequencies else 1.0
        c, s = np.cos(omega * delta), np.sin(omega * delta)
        block = np.array([[c, -s], [s, c]])              # row-vector convention: [sin, cos] @ block
        R[two_i:two_i + 2, two_i:two_i + 2] = block.T if column_vectors else block
    return R


# ----------------------------------------------------------------------------------------------------------
# the checks
# ----------------------------------------------------------------------------------------------------------
def _call_table(fn, max_len, d_model):
    try:
        return call_learner(fn, max_len, d_model)
    except ExerciseError as err:  # a learner's bug: say which sizes triggered it
        hint = ""
        if d_model % 2:
            hint = (" With an odd d_model there are ceil(d_model / 2) sine columns but only d_model // 2 "
                    "cosine columns: compute the angles for np.arange(0, d_model, 2) and give the cosine "
                    "columns only the first d_model // 2 of them.")
        raise ExerciseError(f"{err} (max_len={max_len}, d_model={d_model}).{hint}") from err.__cause__


@exercise_check
def check_sinusoidal_encoding(fn) -> None:
    """Check `fn(max_len, d_model) -> (max_len, d_model)` against the paper's formula, even and odd d_model.

    Both column layouts pass: interleaved (the paper: column 2i sin, 2i + 1 cos) and concatenated (all sines,
    then all cosines, the layout of tensor2tensor and fairseq), provided one layout is used for every size.
    """
    layouts = set()
    for max_len, d_model in ((12, 8), (50, 16), (7, 5)):
        name = f"fn({max_len}, {d_model})"
        got = as_numpy(_call_table(fn, max_len, d_model), name)
        if got.shape == (max_len, d_model) and np.allclose(got, _halves(max_len, d_model), atol=1e-6, rtol=1e-5):
            layouts.add("concatenated")
            continue
        compare_arrays(got, _reference(max_len, d_model), name, hints=sinusoidal_hints(max_len, d_model))
        layouts.add("interleaved")
    if len(layouts) > 1:
        raise ExerciseError("your table interleaves sines and cosines for some sizes and stores them as two "
                            "halves for others: pick one layout for every d_model.")
    if layouts == {"concatenated"}:
        passed("the right values, with all the sines first and then all the cosines (the layout of "
               "tensor2tensor and fairseq, whose frequencies also differ slightly). That is a fixed permutation "
               "of the columns, so a model learns the same things from it; the paper interleaves them, column "
               "2i sin and 2i+1 cos.")
        return
    passed("PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(...), for even and odd d_model.")


def shift_hints(delta, d_model):
    """(wrong answer, explanation) pairs for `check_shift_matrix`."""
    signless = []
    if delta < 0:   # first: for delta < 0, R(|delta|) is also the column-vector matrix, a mistake already ruled out
        signless = [(_shift_reference(abs(delta), d_model),
                     f"this matrix shifts by |delta| = {abs(delta)}, not by delta = {delta}: the offset's sign "
                     "was dropped (abs, or a distance). A negative offset moves back along the sequence, so "
                     "the angle omega_i * delta is negative too.")]
    return signless + [
        (_shift_reference(delta, d_model, column_vectors=True),
         "this matrix maps PE[pos] to PE[pos - delta]: the signs of the sines are flipped, or the blocks are "
         "written for column vectors (R @ pe). The course writes vectors as rows, PE[pos + delta] = PE[pos] @ R, "
         "so the 2x2 block of pair i is [[cos, -sin], [sin, cos]] of the angle omega_i * delta."),
        (_shift_reference(delta, d_model, frequencies=False),
         "every block uses the same angle delta; the block of pair i must rotate by omega_i * delta with "
         "omega_i = 1 / 10000^(2i / d_model)."),
    ]


@exercise_check
def check_shift_matrix(fn) -> None:
    """Check `fn(delta, d_model) -> R (d_model, d_model)` with PE[pos + delta] = PE[pos] @ R for every pos."""
    # positive offsets first, then a negative one: only a signed offset maps PE[pos] to PE[pos - 7]
    for delta, d_model in ((1, 4), (3, 8), (10, 16), (-7, 8)):
        got = as_numpy(call_learner(fn, delta, d_model), f"fn({delta}, {d_model})")
        compare_arrays(got, _shift_reference(delta, d_model), f"fn({delta}, {d_model})",
                       hints=shift_hints(delta, d_model))
    pe = _reference(40, 16)
    R = as_numpy(call_learner(fn, 5, 16), "fn(5, 16)")
    if not np.allclose(pe[:-5] @ R, pe[5:], atol=1e-9):
        raise ExerciseError("fn(5, 16) does not map PE[pos] to PE[pos + 5].")
    passed("PE[pos + delta] = PE[pos] @ R_delta: one fixed 2x2 rotation per frequency, the same for every pos.")
