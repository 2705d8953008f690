"""What both trainers return, and when the PyTorch trainer stops; plain Python (the NumPy trainer imports it
without torch).

A history is a dict:

* "step", "loss", "lr", "grad_norm": one entry per optimiser step (the loss of that step's batch; the norm of
  the gradients before clipping, measured also when clipping is off);
* "eval": one dict of validation metrics per evaluation, with the "step" it was taken at;
* "best": the evaluation where `TrainConfig.monitor` was best; "averaged": the metrics of the averaged model;
* "stop_reason": one of STOP_REASONS; "time_s": seconds spent in the training loop (up to the last evaluation
  point while a run goes on, so that a checkpoint carries it).

The stop rules read the recipe, the evaluations kept in the history, the step and whether the time budget ran
out (which counts the history's time_s): all of it restored with a checkpoint, so a resumed run decides exactly
as an uninterrupted one would.
"""
from __future__ import annotations

from ..config import HIGHER_IS_BETTER, TrainConfig

__all__ = ["STOP_REASONS", "TrainingDiverged", "new_history", "best_index", "is_perfect", "stop_reason",
           "describe_stop_rule"]

STOP_REASONS = {
    "max_steps": "reached TrainConfig.max_steps, the ceiling",
    "perfect": "exact match (and coverage) were 1.0 at TrainConfig.stop_when_perfect successive evaluations",
    "patience": "TrainConfig.monitor did not improve at TrainConfig.patience successive evaluations",
    "time_budget": "TrainConfig.max_minutes of training passed",
    "data_exhausted": "the batches ran out (NumPy trainer)",
}


class TrainingDiverged(FloatingPointError):
    """The loss or the gradient norm became NaN or infinite (raised by both trainers)."""


def new_history() -> dict:
    return {"step": [], "loss": [], "lr": [], "grad_norm": [], "eval": [], "best": None, "averaged": None,
            "stop_reason": None, "time_s": 0.0}


def best_index(evals: list[dict], monitor: str) -> int:
    """The index of the best evaluation by `monitor` (the first one on ties)."""
    if monitor not in evals[-1]:
        raise ValueError(f"TrainConfig.monitor: expected one of the evaluation's metrics "
                         f"{sorted(k for k in evals[-1] if k != 'step')}, got {monitor!r}")
    sign = -1.0 if monitor in HIGHER_IS_BETTER else 1.0
    return min(range(len(evals)), key=lambda i: (sign * evals[i][monitor], i))


def is_perfect(metrics: dict) -> bool:
    """Every generated validation output right, and every must-know pair too when coverage was measured."""
    if "exact_match" not in metrics:
        raise ValueError("TrainConfig.stop_when_perfect: needs the evaluation's exact match; evaluate with "
                         "generation (make_evaluator does when stop_when_perfect > 0)")
    return metrics["exact_match"] == 1.0 and metrics.get("coverage", 1.0) == 1.0


def stop_reason(history: dict, config: TrainConfig, step: int, out_of_time: bool = False) -> str | None:
    """Why training stops after `step`, or None to go on; checked at each evaluation point."""
    evals = history["eval"]
    k = config.stop_when_perfect
    if k and len(evals) >= k and all(is_perfect(e) for e in evals[-k:]):
        return "perfect"
    if config.patience and evals and len(evals) - 1 - best_index(evals, config.monitor) >= config.patience:
        return "patience"
    if out_of_time:
        return "time_budget"
    if step >= config.max_steps:
        return "max_steps"
    return None


def describe_stop_rule(config: TrainConfig) -> str:
    """The rules `stop_reason` applies, in words (what `transformer-course train` prints before training)."""
    rules = [f"after {config.max_steps} steps at the latest"]
    if config.stop_when_perfect:
        rules.append(f"once exact match and coverage were 1.0 at {config.stop_when_perfect} successive evaluations")
    if config.patience:
        rules.append(f"once {config.monitor} did not improve at {config.patience} successive evaluations")
    if config.max_minutes:
        rules.append(f"after {config.max_minutes:g} minutes")
    return f"evaluate every {config.eval_every} steps; stop " + ", or ".join(rules)
