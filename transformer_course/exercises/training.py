"""Checks for chapter 9 (training): the paper's learning-rate schedule and label-smoothed target distributions.

Each check calls the learner's function on small fixed inputs, compares with a reference written out here
(on purpose independent of `transformer_course.training` and `transformer_course.torch.loss`, which the
chapter teaches), and recognises the usual mistakes: for the schedule, a wrong exponent on the warm-up or on
d_model, `max` for `min`, and steps counted from 0; for label smoothing, the eps / (V - 1) convention instead
of eps / V, padding rows left in, the target's own probability not lowered, and the Annotated Transformer's
variant (pad column zeroed, eps / (V - 2)).
"""
from __future__ import annotations

import numpy as np

from ._feedback import ExerciseError, as_numpy, call_learner, compare_arrays, exercise_check, passed

__all__ = ["check_noam_lr", "check_label_smoothing_targets", "noam_hints", "label_smoothing_hints"]

# (d_model, warmup) pairs and steps the schedule is checked on: both sides of the peak, and the peak itself
_SCHEDULE_CASES = ((512, 4000), (128, 200))
_STEPS = (1, 2, 3, 10, 100, 199, 200, 201, 1000, 3999, 4000, 4001, 10_000, 100_000)


# ----------------------------------------------------------------------------------------------------------
# the learning-rate schedule
# ----------------------------------------------------------------------------------------------------------
def _noam(step, d_model, warmup, d_exp=-0.5, w_exp=-1.5, pick=min):
    """d_model^d_exp * pick(step^-0.5, step * warmup^w_exp); step 0 gives 0 (the rising branch), like torch."""
    if step <= 0:
        return 0.0
    return d_model ** d_exp * pick(step ** -0.5, step * warmup ** w_exp)


def _table(fn) -> np.ndarray:
    """fn evaluated on every (d_model, warmup) case and step: shape (cases, steps)."""
    return np.array([[fn(s, d, w) for s in _STEPS] for d, w in _SCHEDULE_CASES], dtype=np.float64)


def noam_hints() -> list[tuple[np.ndarray, str]]:
    """(wrong answer table, explanation) pairs for `check_noam_lr` (also used by the tests)."""
    return [
        (_table(lambda s, d, w: _noam(s, d, w, w_exp=-0.5)),
         "the warm-up branch uses warmup^-0.5; it is step * warmup^-1.5, so that the two branches meet at "
         "step = warmup (step^-0.5 = step * warmup^-1.5 exactly there)."),
        (_table(lambda s, d, w: _noam(s, d, w, w_exp=-1.0)),
         "the warm-up branch is step / warmup; it is step * warmup^-1.5 (the extra warmup^-0.5 makes the two "
         "branches meet at step = warmup)."),
        (_table(lambda s, d, w: _noam(s, d, w, w_exp=1.5)),
         "the warm-up exponent has the wrong sign: step * warmup^-1.5, i.e. step / warmup**1.5."),
        (_table(lambda s, d, w: _noam(s, d, w, d_exp=0.5)),
         "d_model has the wrong exponent's sign: the rate is *divided* by sqrt(d_model) (d_model^-0.5), so "
         "wider models take smaller steps."),
        (_table(lambda s, d, w: _noam(s, d, w, d_exp=-1.0)),
         "d_model's exponent is -1; it is -0.5 (divide by sqrt(d_model), not by d_model)."),
        (_table(lambda s, d, w: _noam(s, d, w, d_exp=0.0)),
         "the d_model^-0.5 factor is missing: the whole min(...) is multiplied by 1 / sqrt(d_model)."),
        (_table(lambda s, d, w: _noam(s, d, w, pick=max)),
         "you took the max of the two branches; it is the min (rise linearly, then decay as 1 / sqrt(step))."),
        (_table(lambda s, d, w: _noam(s + 1, d, w)),
         "off by one step: your value at step s is the paper's value at step s + 1. The formula takes the step "
         "number as it is (steps count from 1); do not add 1 inside the function."),
        (_table(lambda s, d, w: _noam(s - 1, d, w)),
         "off by one step: your value at step s is the paper's value at step s - 1. Steps count from 1, and "
         "the rate at step 1 is d_model^-0.5 * warmup^-1.5, not 0."),
    ]


@exercise_check
def check_noam_lr(fn) -> None:
    """fn(step, d_model, warmup) -> the paper's learning rate, checked on two settings and 14 steps."""
    try:
        got = _table(lambda s, d, w: call_learner(fn, s, d, w))
    except ExerciseError as err:
        if isinstance(err.__cause__, ZeroDivisionError):
            raise ExerciseError(f"your function divided by zero ({err.__cause__}). Steps count from 1, so "
                                "step^-0.5 is defined; did you subtract 1 from the step, or use warmup - step?"
                                ) from err.__cause__
        raise
    except (TypeError, ValueError) as err:           # it returned something that is not one number
        raise ExerciseError(f"fn(step, d_model, warmup) should return one number (a float); converting its "
                            f"results to an array failed: {err}") from err
    got = as_numpy(got, "your learning rates")
    expected = _table(_noam)
    compare_arrays(got, expected, "your learning rates (rows: (d_model, warmup) = (512, 4000), (128, 200); "
                   f"columns: steps {_STEPS})", rtol=1e-6, atol=0.0, hints=noam_hints())
    peak = float(call_learner(fn, 4000, 512, 4000))
    passed(f"the schedule rises to {peak:.3g} at step 4000 for d_model = 512 and then decays as 1/sqrt(step).")


# ----------------------------------------------------------------------------------------------------------
# label-smoothed targets
# ----------------------------------------------------------------------------------------------------------
_LS_TARGETS = np.array([[5, 2, 7, 0, 0],
                        [3, 4, 1, 6, 2]])        # (B, T) with pad_id 0 at the end of row 0
_LS_V, _LS_EPS, _LS_PAD = 8, 0.1, 0


def _smoothed(targets, V, eps, pad_id, off=None, target_mass=None, zero_pad_rows=True, zero_pad_col=False):
    """q (B, T, V): target gets `target_mass` (default 1 - eps + eps / V), the rest `off` (default eps / V)."""
    off = eps / V if off is None else off
    target_mass = 1.0 - eps + eps / V if target_mass is None else target_mass
    B, T = targets.shape
    q = np.full((B, T, V), off, dtype=np.float64)                     # (B, T, V)
    np.put_along_axis(q, targets[..., None], target_mass, axis=-1)    # (B, T, V)
    if zero_pad_col:
        q[..., pad_id] = 0.0
    if zero_pad_rows:
        q[targets == pad_id] = 0.0
    return q


def label_smoothing_hints(targets=_LS_TARGETS, V=_LS_V, eps=_LS_EPS, pad_id=_LS_PAD) -> list:
    """(wrong answer, explanation) pairs for `check_label_smoothing_targets` (also used by the tests)."""
    return [
        (_smoothed(targets, V, eps, pad_id, off=eps / (V - 1), target_mass=1 - eps),
         "you spread eps over the V - 1 *other* classes (target 1 - eps, others eps / (V - 1)). That is a "
         "valid convention (Szegedy et al. describe both), but the course and torch's cross_entropy spread "
         "eps over all V classes: every class gets eps / V and the target 1 - eps + eps / V."),
        (_smoothed(targets, V, eps, pad_id, zero_pad_rows=False),
         "the rows where the target is padding should be all zeros: padding positions are not predictions, "
         "and the loss must ignore them (set q[targets == pad_id] = 0)."),
        (_smoothed(targets, V, eps, pad_id, off=eps / (V - 1), target_mass=1 - eps, zero_pad_rows=False),
         "two things: the padding rows should be all zeros, and eps is spread over all V classes "
         "(eps / V each, the target 1 - eps + eps / V), not over the V - 1 others."),
        (_smoothed(targets, V, eps, pad_id, target_mass=1.0 + eps / V),
         "the target class still has 1 (+ eps / V): take eps away from it first, so each row sums to 1 "
         "(target 1 - eps + eps / V)."),
        (_smoothed(targets, V, eps, pad_id, off=eps / (V - 2), target_mass=1 - eps, zero_pad_col=True),
         "you zeroed the pad column and spread eps over V - 2 classes (the Annotated Transformer's variant). "
         "Here eps is spread over all V classes, as in torch: eps / V each, the target 1 - eps + eps / V."),
        (_smoothed(targets, V, eps, pad_id, off=eps, target_mass=1 - eps),
         "every wrong class got eps; the smoothing mass eps is *shared*: eps / V for each class."),
    ]


@exercise_check
def check_label_smoothing_targets(fn) -> None:
    """fn(targets (B, T) ints, vocab_size V, eps, pad_id) -> q (B, T, V), the smoothed target distribution."""
    targets = _LS_TARGETS.copy()
    got = call_learner(fn, targets, _LS_V, _LS_EPS, _LS_PAD)
    got = as_numpy(got, "q")
    expected = _smoothed(_LS_TARGETS, _LS_V, _LS_EPS, _LS_PAD)
    compare_arrays(got, expected, "q (B, T, V)", hints=label_smoothing_hints())
    sums = expected.sum(-1)
    passed(f"real positions sum to {sums[1, 0]:.1f} with {1 - _LS_EPS + _LS_EPS / _LS_V:.4f} on the target and "
           f"{_LS_EPS / _LS_V:.4f} on each other class; padding rows are zero.")
