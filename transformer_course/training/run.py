"""A training run assembled from its parts: what `transformer-course train` does around `train`, as two
functions a notebook or a benchmark calls to train exactly what the command line trains.

    src_vocab, tgt_vocab = data.build_vocabs()
    model, train_loader, evaluate_fn = prepare_run(data, (src_vocab, tgt_vocab), model_config, train_config)
    history = train(model, train_loader, train_config, evaluate_fn=evaluate_fn, vocabs=(src_vocab, tgt_vocab))
    test = finish_run("runs/numbers", model, history, data, (src_vocab, tgt_vocab), train_config)

Chapter 9 assembles the same pieces in the open, one line each.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .._optional import torch  # without PyTorch: an ImportError that names the extra to install
from ..config import ModelConfig, TrainConfig
from ..data.loader import make_dataloader
from ..data.vocab import Vocab
from ..torch.transformer import Transformer
from ..utils import atomic_write_text, set_seed
from .checkpoint import save_checkpoint
from .evaluate import evaluate_task, make_evaluator

__all__ = ["VAL_BATCH_SIZE", "cpu_settings", "finish_run", "prepare_run"]

VAL_BATCH_SIZE = 256                 # evaluation only: no gradients, so larger batches than training's fit


@contextmanager
def cpu_settings(threads: int | None = None) -> Iterator[None]:
    """The process settings of a training run, as `transformer-course train` makes them, restored on exit:
    `threads` intra-op CPU threads (None keeps PyTorch's choice) and denormal floats flushed to zero (Adam's
    tiny second moments are many times slower as denormals on CPUs). PyTorch has no getter for the flush
    flag, so on exit it is set back to False, PyTorch's default."""
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads: expected a positive int or None, got {threads!r}")
    threads_before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads_before)


def prepare_run(data, vocabs: tuple[Vocab, Vocab], model_config: ModelConfig, train_config: TrainConfig, *,
                rank: int = 0, world_size: int = 1) -> tuple[torch.nn.Module, Iterable, Callable | None]:
    """(model, train_loader, evaluate_fn) for a task's data: the model initialised from `train_config.seed`, the
    training batches of this process (`rank` of `world_size` under DDP) and the evaluation `train` runs at each
    evaluation point (None when the task has no validation pairs)."""
    src_vocab, tgt_vocab = vocabs
    set_seed(train_config.seed)
    model = Transformer(model_config)
    train_loader = make_dataloader(data.train, src_vocab, tgt_vocab, batch_size=train_config.batch_size,
                                   seed=train_config.seed, max_len=model_config.max_len,
                                   num_workers=train_config.num_workers, rank=rank, world_size=world_size)
    if not data.val:
        return model, train_loader, None
    val_loader = make_dataloader(data.val, src_vocab, tgt_vocab, batch_size=VAL_BATCH_SIZE, shuffle=False,
                                 max_len=model_config.max_len)
    return model, train_loader, make_evaluator(val_loader, train_config, vocabs, data.coverage)


def finish_run(out: str | os.PathLike, model: torch.nn.Module, history: dict, data, vocabs: tuple[Vocab, Vocab],
               train_config: TrainConfig, *, extra: dict | None = None) -> dict:
    """Score the trained model on the task's test pairs (greedy), then save it as `out/model.pt` (with the test
    scores and `extra`) and the history as `out/history.json`, each written atomically. Returns the test scores
    ({} when the task has no test pairs)."""
    src_vocab, tgt_vocab = vocabs
    device = next(model.parameters()).device
    metrics = evaluate_task(model, data, src_vocab, tgt_vocab, "test", device=device) if data.test else {}
    summary = {k: v for k, v in metrics.items() if not k.startswith("hypotheses")}
    out = Path(out)
    steps = history["step"][-1] if history["step"] else 0
    save_checkpoint(out / "model.pt", model, train_config=train_config, src_vocab=src_vocab, tgt_vocab=tgt_vocab,
                    step=steps, extra={**(extra or {}), "test": summary})
    atomic_write_text(out / "history.json", json.dumps(history, indent=1) + "\n")
    return summary
