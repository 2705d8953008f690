"""Checks for chapter 6's rotary position embeddings (RoPE): turn each pair of a query or key by its angle.

The check calls the learner's `fn(x, positions, base)` on a (T, D_h) array and compares with the package's
`rotary_positions_forward` (one row at a time, so the positions need not be consecutive), at the paper's base
10000 and at another base; the formula written out here builds the hints (the tests check it against the
package). It
recognises the usual mistakes: pairs taken as the two halves of the head (the GPT-NeoX "rotate half" layout,
not the package's), the turn in the wrong direction, the exponent halved or doubled, every pair turned by the
same angle, the given positions or the given base ignored.
"""
from __future__ import annotations

import numpy as np

from ..numpy.positional import rotary_positions_forward
from ._feedback import as_numpy, call_learner, compare_arrays, exercise_check, passed

__all__ = ["check_rope"]


def _turn(x, angles, halves=False):
    """Turn pair i of every row of x (T, D_h) by angles[:, i] (T, D_h/2): (2i, 2i+1), or (i, i + D_h/2)."""
    first, second = (x[:, : x.shape[1] // 2], x[:, x.shape[1] // 2:]) if halves else (x[:, 0::2], x[:, 1::2])
    cos, sin = np.cos(angles), np.sin(angles)
    turned_first, turned_second = first * cos - second * sin, first * sin + second * cos   # (T, D_h/2) each
    if halves:
        return np.concatenate([turned_first, turned_second], axis=1)
    return np.stack([turned_first, turned_second], axis=-1).reshape(x.shape)            # interleaved: (T, D_h)


def _angles(positions, d_head, base, exponent_factor=1.0):
    two_i = np.arange(0, d_head, 2, dtype=np.float64)                                  # (D_h/2,): 2i
    return np.asarray(positions, dtype=np.float64)[:, None] * base ** (-exponent_factor * two_i / d_head)


def rope_reference(x, positions, base=10000.0):
    """Pair (x[t, 2i], x[t, 2i+1]) turned by positions[t] * base^(-2i / D_h), counter-clockwise: (T, D_h)."""
    return _turn(np.asarray(x, dtype=np.float64), _angles(positions, x.shape[1], base))


def package_rope(x, positions, base=10000.0):
    """The package's `rotary_positions_forward`, row t at position positions[t]: (T, D_h)."""
    x = np.asarray(x, dtype=np.float64)
    return np.concatenate([rotary_positions_forward(x[None, None, t:t + 1], offset=int(p), base=base)[0][0, 0]
                           for t, p in enumerate(positions)])


def rope_hints(x, positions, base):
    """(wrong answer, explanation) pairs for `check_rope` (also used by the tests)."""
    T, d_head = x.shape
    angles = _angles(positions, d_head, base)
    return [
        (_turn(x, angles, halves=True),
         "your pairs are the two halves of the head, (x[:, i], x[:, i + D_h/2]): the GPT-NeoX \"rotate half\" "
         "layout. The package, like the formula on the page, turns neighbours: pair i is (x[:, 2i], x[:, 2i + 1])."),
        (_turn(x, -angles),
         "each pair is turned the wrong way, by -pos * omega_i. Pair i read as x_2i + j x_2i+1 is multiplied by "
         "e^(+j pos omega_i): the new x_2i is x_2i cos - x_2i+1 sin, the new x_2i+1 is x_2i sin + x_2i+1 cos. "
         "With rows, that is x @ M.T for the column-vector matrix M = [[cos, -sin], [sin, cos]], not x @ M."),
        (_turn(x, _angles(positions, d_head, base, exponent_factor=0.5)),
         "the exponent is halved: with i the pair index (0, 1, 2, ...), omega_i = base^(-2i / D_h), not "
         "base^(-i / D_h)."),
        (_turn(x, _angles(positions, d_head, base, exponent_factor=2.0)),
         "the exponent is doubled: if your loop runs over the even columns 0, 2, 4, ..., that index already is 2i, "
         "so omega = base^(-col / D_h), not base^(-2 * col / D_h)."),
        (_turn(x, np.asarray(positions, dtype=np.float64)[:, None] * np.ones(d_head // 2)),
         "every pair turns by the same angle pos; pair i turns by pos * omega_i with omega_i = base^(-2i / D_h)."),
        (_turn(x, _angles(np.arange(T), d_head, base)),
         "row t is turned as if it were at position t: use the given `positions` (they need not be 0, 1, 2, ..., "
         "e.g. with a key/value cache the new token sits at the end)."),
        (_turn(x, _angles(positions, d_head, 10000.0)),
         "the base is fixed at 10000: use the `base` argument (schemes for longer inputs change it)."),
    ]


@exercise_check
def check_rope(fn) -> None:
    """Check `fn(x, positions, base) -> (T, D_h)` for x (T, D_h), positions (T,) integers, base a float."""
    rng = np.random.default_rng(60)
    cases = [  # (x, positions, base): consecutive positions, then others, then another base
        (rng.standard_normal((6, 8)), np.arange(6), 10000.0),
        (rng.standard_normal((5, 16)), np.array([3, 0, 12, 12, 40]), 10000.0),
        (rng.standard_normal((4, 8)), np.array([1, 2, 5, 9]), 500.0),
    ]
    for x, positions, base in cases:
        name = f"fn(x of shape {x.shape}, positions={positions.tolist()}, base={base:g})"
        got = as_numpy(call_learner(fn, x, positions, base), name)
        expected = package_rope(x, positions, base)
        compare_arrays(got, expected, name, atol=1e-8, rtol=1e-6, hints=rope_hints(x, positions, base))
    passed("pair (x[t, 2i], x[t, 2i+1]) turned by positions[t] * base^(-2i / D_h), as the package's "
           "rotary_positions_forward does.")
