"""What both trainers tell their callbacks, and the default callback: a progress bar. Plain Python (the NumPy
trainer imports it without torch).

A callback is any function of one dict, called at each event of a run:

* {"event": "start", "step", "max_steps", "rank"}: before the first step ("step" > 0 when a run resumes; "rank"
  is the process's rank under DDP, else 0);
* {"event": "step", "step", "loss", "lr", "grad_norm"}: after each optimiser step;
* {"event": "eval", "step", <the validation metrics>}: after each evaluation (the PyTorch trainer evaluates);
* {"event": "end", "step", "stop_reason", "best", "averaged"}: when training has stopped.

Callbacks watch; they do not steer. When to stop is the recipe's job (`history.stop_reason`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from tqdm.auto import tqdm

__all__ = ["ProgressBar", "emit"]


class ProgressBar:
    """The default callback: a tqdm bar on rank 0. enabled=None shows it only when stderr is a terminal
    (not in logs, CI or nbval)."""

    def __init__(self, enabled: bool | None = None, desc: str = "train"):
        self.enabled = enabled
        self.desc = desc
        self.bar = None

    def __call__(self, event: dict) -> None:
        if event["event"] == "start":
            hidden = True if event.get("rank", 0) != 0 else (None if self.enabled is None else not self.enabled)
            self.bar = tqdm(total=event["max_steps"], initial=event["step"], desc=self.desc, unit="step",
                            dynamic_ncols=True, disable=hidden)
        elif event["event"] == "step":
            self.bar.update(1)
            self.bar.set_postfix(loss=f"{event['loss']:.3f}", lr=f"{event['lr']:.2e}", refresh=False)
        elif event["event"] == "end":
            self.bar.close()


def emit(callbacks: Sequence[Callable[[dict], None]], **event) -> None:
    """Call every callback with the event."""
    for callback in callbacks:
        callback(event)
