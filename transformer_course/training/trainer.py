"""Training a PyTorch model with the paper's recipe.

Adam (beta1 0.9, beta2 0.98, eps 1e-9) with the warm-up schedule of `schedule.py`, label smoothing (0.1),
dropout (in the model), plus what the paper leaves implicit or did not have: gradient clipping, mixed
precision (bf16, or fp16 with a gradient scaler), optional `torch.compile`, DistributedDataParallel, a
tqdm progress bar, evaluation during training, early stopping, NaN/inf detection, checkpoints that resume
exactly, and averaging of the last k checkpoints (the paper averaged the last 5 or 20).

The pieces, each short enough to read whole:

* `TrainState`: exactly what a checkpoint saves and a resume restores;
* `train_step`: one optimiser step on one batch;
* `evaluate_and_checkpoint`: evaluate, keep a snapshot to average, save `last.pt` / `best.pt`, early stopping;
* `train`: the loop around them.

The trainer knows neither the model nor the loss: `forward(model, batch)` turns a batch into logits (by
default the Transformer's `model(src, tgt_in, src_mask=...)`; the Bahdanau model passes its own) and
`loss_fn(logits, targets)` is the mean loss over the real target tokens (by default the fused
`fast_cross_entropy` with the config's label smoothing).

Deviations from the paper: steps are counted in sentences (`batch_size`), not in ~25k-token batches; the
loss is the mean over the batch's real target tokens.
"""
from __future__ import annotations

import collections
import functools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm.auto import tqdm

from .._optional import torch  # without PyTorch: an ImportError that names the extra to install
from ..config import TrainConfig
from ..data.loader import Batch, BucketBatchSampler
from ..data.vocab import Vocab
from ..special_tokens import PAD_ID
from ..torch.device import autocast, pick_device
from ..torch.loss import fast_cross_entropy
from ..utils import set_seed
from .checkpoint import average_state_dicts, check_vocabs, load_checkpoint, save_checkpoint, set_rng_state, unwrap_model
from .evaluate import evaluate
from .schedule import make_scheduler

# (imported by `import torch`; bare `import torch.distributed` would bypass _optional's message)
dist, nn = torch.distributed, torch.nn

__all__ = ["train", "TrainState", "train_step", "evaluate_and_checkpoint", "transformer_logits",
           "TrainingDiverged", "distributed_info"]

MONITORS = {"loss", "perplexity", "token_accuracy", "exact_match", "bleu"}
_HIGHER_IS_BETTER = {"token_accuracy", "exact_match", "bleu"}


class TrainingDiverged(FloatingPointError):
    """The loss or the gradient norm became NaN or infinite."""


def distributed_info() -> tuple[int, int]:
    """(rank, world_size): (0, 1) unless torch.distributed is initialised (e.g. under torchrun)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def transformer_logits(model: nn.Module, batch: Batch) -> torch.Tensor:
    """The default `forward`: the Transformer's teacher-forced logits (B, T, V)."""
    return model(batch.src, batch.tgt_in, src_mask=batch.src_mask)


def _new_history() -> dict:
    return {"step": [], "loss": [], "lr": [], "grad_norm": [], "eval": [], "best": None, "stop_reason": None,
            "averaged": None}


@dataclass
class TrainState:
    """Everything a checkpoint saves and a resume restores (with the random number generators' states, which
    `save_checkpoint` records and `set_rng_state` puts back)."""

    model: nn.Module                                     # the plain model, not its DDP / compiled wrapper
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    step: int = 0                                        # optimiser steps taken
    epoch: int = 0                                       # passes over the data begun
    batches_in_epoch: int = 0                            # batches of this epoch consumed
    history: dict = field(default_factory=_new_history)
    snapshots: collections.deque = field(default_factory=collections.deque)  # parameters to average
    patience_left: int = 0                               # evaluations without improvement still allowed

    @classmethod
    def create(cls, model: nn.Module, config: TrainConfig, device: torch.device, d_model: int) -> TrainState:
        """Adam (its lr is 1: the schedule gives the absolute rate), the paper's schedule for width d_model, a
        gradient scaler (active for fp16 only)."""
        optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(config.adam_beta1, config.adam_beta2),
                                     eps=config.adam_eps, weight_decay=config.weight_decay)
        return cls(model, optimizer, make_scheduler(optimizer, d_model, config.warmup_steps, config.lr_factor),
                   torch.amp.GradScaler(device.type, enabled=config.precision == "fp16"),
                   snapshots=collections.deque(maxlen=config.average_last), patience_left=config.patience)

    def save(self, path: Path, config: TrainConfig, src_vocab: Vocab | None, tgt_vocab: Vocab | None) -> None:
        """An atomic checkpoint (see `checkpoint.save_checkpoint`) that `restore` reads back."""
        save_checkpoint(path, self.model, optimizer=self.optimizer, scheduler=self.scheduler, scaler=self.scaler,
                        step=self.step, epoch=self.epoch, batches_in_epoch=self.batches_in_epoch,
                        train_config=config, src_vocab=src_vocab, tgt_vocab=tgt_vocab, history=self.history,
                        extra={"snapshots": list(self.snapshots) if config.average_last > 1 else [],
                               "patience_left": self.patience_left})

    def restore(self, checkpoint: dict) -> None:
        """Continue exactly where `save` stopped: same parameters, moments, learning rate, batches, RNG."""
        self.model.load_state_dict(checkpoint["model"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.scheduler.load_state_dict(checkpoint["scheduler"])
        if checkpoint["scaler"] is not None:
            self.scaler.load_state_dict(checkpoint["scaler"])
        self.step, self.epoch = checkpoint["step"], checkpoint["epoch"]
        self.batches_in_epoch = checkpoint["batches_in_epoch"]
        self.history = {**_new_history(), **checkpoint["history"]}
        self.snapshots.extend(checkpoint["extra"].get("snapshots", []))
        self.patience_left = checkpoint["extra"].get("patience_left", self.patience_left)
        set_rng_state(checkpoint["rng"])


def train_step(state: TrainState, model: nn.Module, batch: Batch, config: TrainConfig, forward: Callable,
               loss_fn: Callable, world_size: int = 1) -> dict:
    """One optimiser step on one batch (already on the device): forward under autocast, loss, backward,
    clipping, Adam, schedule. `model` is what runs the forward pass (state.model or its DDP / compiled
    wrapper). Returns {"step", "loss", "lr", "grad_norm"} and records them in state.history."""
    with autocast(batch.src.device, config.precision):
        logits = forward(model, batch)                   # (B, T, V)
    loss = loss_fn(logits, batch.tgt_out)
    if world_size > 1:
        # one all-reduce gives the global token count and the global mean loss; scaling each process's loss
        # by n_local * world / n_global makes DDP's gradient *average* the gradient of the global token mean
        # (exactly what one process with the whole batch does)
        n_tokens = (batch.tgt_out != PAD_ID).sum()
        totals = torch.stack([loss.detach() * n_tokens, n_tokens.to(loss.dtype)])
        dist.all_reduce(totals)
        global_loss = (totals[0] / totals[1]).item()
        loss = loss * (n_tokens * world_size / totals[1])
    else:
        global_loss = loss.item()
    if not math.isfinite(global_loss):
        raise TrainingDiverged(f"loss became {global_loss} at step {state.step + 1} (lr "
                               f"{state.scheduler.get_last_lr()[0]:.3g}); lower TrainConfig.lr_factor, keep "
                               "clip_grad_norm > 0, or train in fp32/bf16 instead of fp16")
    state.optimizer.zero_grad(set_to_none=True)
    state.scaler.scale(loss).backward()
    grad_norm = float("nan")
    if config.clip_grad_norm > 0:
        state.scaler.unscale_(state.optimizer)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(state.model.parameters(), config.clip_grad_norm))
        if not math.isfinite(grad_norm) and config.precision != "fp16":
            raise TrainingDiverged(f"gradient norm became {grad_norm} at step {state.step + 1}; lower "
                                   "TrainConfig.lr_factor or check the data for empty targets")
    lr = state.scheduler.get_last_lr()[0]
    state.scaler.step(state.optimizer)                   # with fp16, skipped when the scaled gradients overflowed
    state.scaler.update()
    state.scheduler.step()
    state.step += 1
    record = {"step": state.step, "loss": global_loss, "lr": lr, "grad_norm": grad_norm}
    for key, value in record.items():
        state.history[key].append(value)
    return record


def evaluate_and_checkpoint(state: TrainState, config: TrainConfig, evaluate_fn: Callable[[nn.Module], dict] | None,
                            monitor: str, save: Callable[[str], None], emit: Callable[[dict], None]) -> bool:
    """Keep a snapshot to average, evaluate (when there is a validation set), save best.pt when `monitor`
    improved and last.pt always (`save(name)`), count down the patience. True when training should stop."""
    if config.average_last > 1:
        state.snapshots.append({k: v.detach().to("cpu", copy=True) for k, v in state.model.state_dict().items()})
    stop = False
    if evaluate_fn is not None:
        metrics = {"step": state.step, **evaluate_fn(state.model)}
        if monitor not in metrics:
            raise ValueError(f"monitor: expected one of the evaluation's metrics {sorted(metrics)}, got {monitor!r}")
        state.history["eval"].append(metrics)
        emit({"event": "eval", **metrics})
        best = state.history["best"]
        if best is None or (metrics[monitor] > best[monitor] if monitor in _HIGHER_IS_BETTER
                            else metrics[monitor] < best[monitor]):
            state.history["best"], state.patience_left = metrics, config.patience
            save("best.pt")
        elif config.patience > 0:
            state.patience_left -= 1
            stop = state.patience_left <= 0
    save("last.pt")
    return stop


def _epoch_batches(loader: Iterable, state: TrainState) -> Iterator[Batch]:
    """The batches of the current epoch from where `state` left it; at the epoch's end the state moves on to
    the next one. A `BucketBatchSampler` replays the same batches in the same order, so a resumed run sees
    exactly the batches an uninterrupted one would."""
    sampler = getattr(loader, "batch_sampler", None)
    if isinstance(sampler, BucketBatchSampler):
        sampler.set_epoch(state.epoch)
        sampler.skip = state.batches_in_epoch
    seen = 0
    for batch in loader:
        seen += 1
        state.batches_in_epoch += 1
        yield batch
    if seen == 0 and state.batches_in_epoch == 0:
        raise ValueError("train_loader: an epoch yielded no batch (an exhausted iterator?); pass a DataLoader or "
                         "another re-iterable")
    state.epoch, state.batches_in_epoch = state.epoch + 1, 0


def _check_arguments(model, train_loader, config, d_model, src_vocab, tgt_vocab, monitor, eval_generate) -> int:
    """Refuse bad arguments before anything runs; returns the schedule's d_model."""
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
    model_config = getattr(model, "config", None)
    if d_model is None and model_config is None:
        raise ValueError(f"d_model: expected the width that scales the learning-rate schedule (lr ~ d_model^-0.5) "
                         f"for a model without a .config ({type(model).__name__}), got None")
    if model_config is not None:
        if model_config.pad_id != PAD_ID:
            raise ValueError(f"model: expected config.pad_id={PAD_ID} (the data's padding id), got "
                             f"{model_config.pad_id}")
        for side, vocab, size in (("src_vocab", src_vocab, model_config.src_vocab_size),
                                  ("tgt_vocab", tgt_vocab, model_config.tgt_vocab_size)):
            if vocab is not None and len(vocab) != size:
                raise ValueError(f"{side}: expected {size} tokens (the model's {side}_size), got {len(vocab)}")
    if monitor not in MONITORS:
        raise ValueError(f"monitor: expected one of {sorted(MONITORS)}, got {monitor!r}")
    if monitor in ("exact_match", "bleu") and not eval_generate:
        raise ValueError(f"monitor={monitor!r} needs eval_generate=True (it is measured on generated output)")
    try:
        n_batches = len(train_loader)
    except TypeError:                                    # a generator or an iterable dataset: no length
        n_batches = None
    if n_batches == 0:
        raise ValueError("train_loader: expected at least one batch, got an empty loader")
    return d_model if d_model is not None else model_config.d_model


def _resume_checkpoint(path, model: nn.Module, src_vocab, tgt_vocab, device: torch.device) -> dict:
    checkpoint = load_checkpoint(path, map_location=device)
    check_vocabs(checkpoint, src_vocab, tgt_vocab, where=f"checkpoint {path}")
    if hasattr(model, "config") and checkpoint["model_config"] != model.config.to_dict():
        raise ValueError(f"resume_from: {path} holds a model with config {checkpoint['model_config']}, but the "
                         f"model given has {model.config.to_dict()}")
    return checkpoint


def train(model: nn.Module, train_loader: Iterable, val_loader: Iterable | None = None,
          config: TrainConfig = TrainConfig(), *,
          forward: Callable[[nn.Module, Batch], torch.Tensor] = transformer_logits,
          loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
          evaluate_fn: Callable[[nn.Module], dict] | None = None, d_model: int | None = None,
          src_vocab: Vocab | None = None,
          tgt_vocab: Vocab | None = None, out_dir: str | Path | None = None, resume_from: str | Path | None = None,
          device: str | torch.device | None = None, progress: bool | None = None,
          callbacks: Sequence[Callable[[dict], None]] = (), monitor: str = "loss", eval_generate: bool = False,
          eval_max_len: int | None = None) -> dict:
    """Train `model` on `train_loader` (an iterable of `data.loader.Batch`) for `config.max_steps` steps.

    Training stops after `config.max_steps` steps, or earlier once `config.max_minutes` of training have passed
    (a time budget for workshops: then the run depends on the machine's speed). Every `config.eval_every` steps
    (and at the end) the model is evaluated with `evaluate_fn(model) -> metrics`
    (default, given `val_loader`: `evaluate` with teacher-forced loss, perplexity, token accuracy; with
    `eval_generate` also greedy exact match and, given `tgt_vocab`, BLEU), `out_dir/last.pt` is written (and
    `best.pt` when `monitor` improved), and early stopping is checked (`config.patience`). With `resume_from`
    (a checkpoint path) training continues exactly where it stopped: same batches, same dropout masks, same
    learning rate. With `config.average_last = k > 1` the model ends with the mean of the parameters at the
    last k evaluation points.

    `forward(model, batch) -> logits` and `loss_fn(logits, targets) -> loss` make any sequence-to-sequence
    model trainable (see the module's docstring); `d_model` sets the schedule's width when the model has no
    `.config`.

    Under torchrun (torch.distributed initialised) the model is wrapped in DistributedDataParallel; each
    process's loader yields its slice of the global batch (`make_dataloader(rank=..., world_size=...)`),
    and the loss is normalised by the global number of target tokens, so N processes compute the same
    update as one process with the whole batch. Only rank 0 writes files and shows progress.

    `callbacks` receive dicts: {"event": "step", "step", "loss", "lr", "grad_norm"},
    {"event": "eval", "step", **metrics} and {"event": "end", "stop_reason", ...}.
    Returns the history: lists "step", "loss", "lr", "grad_norm", a list "eval" of metric dicts, "best",
    "stop_reason", "averaged" (the averaged model's metrics) and "time_s".
    """
    d_model = _check_arguments(unwrap_model(model), train_loader, config, d_model, src_vocab, tgt_vocab, monitor,
                               eval_generate)
    rank, world_size = distributed_info()
    device = pick_device(device if device is not None else config.device)
    set_seed(config.seed)
    state = TrainState.create(unwrap_model(model).to(device), config, device, d_model)
    if resume_from is not None:
        state.restore(_resume_checkpoint(resume_from, state.model, src_vocab, tgt_vocab, device))
    running = _wrap(state.model, world_size, device, config.compile)
    loss_fn = loss_fn or functools.partial(fast_cross_entropy, pad_id=PAD_ID, label_smoothing=config.label_smoothing)
    if evaluate_fn is None and val_loader is not None:
        evaluate_fn = functools.partial(_evaluate, loader=val_loader, tgt_vocab=tgt_vocab, generate=eval_generate,
                                        max_len=eval_max_len, device=device, precision=config.precision)
    out_dir = Path(out_dir) if out_dir is not None and rank == 0 else None

    def save(name: str) -> None:
        if out_dir is not None:
            state.save(out_dir / name, config, src_vocab, tgt_vocab)

    def emit(event: dict) -> None:
        for callback in callbacks:
            callback(event)

    stop_reason, started = "max_steps", time.perf_counter()
    state.model.train()
    # tqdm's disable=None means "off when stderr is not a terminal" (logs, CI, nbval)
    with tqdm(total=config.max_steps, initial=state.step, desc="train", unit="step", dynamic_ncols=True,
              disable=True if rank != 0 else (None if progress is None else not progress)) as bar:
        while state.step < config.max_steps and stop_reason == "max_steps":
            for batch in _epoch_batches(train_loader, state):
                record = train_step(state, running, batch.to(device, non_blocking=True), config, forward, loss_fn,
                                    world_size)
                bar.update(1)
                bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}", refresh=False)
                emit({"event": "step", **record})
                if _out_of_time(config, started, world_size, device):
                    stop_reason = "time_budget"
                at_end = state.step >= config.max_steps or stop_reason == "time_budget"
                if (state.step % config.eval_every == 0 or at_end) \
                        and evaluate_and_checkpoint(state, config, evaluate_fn, monitor, save, emit):
                    stop_reason = "early_stopping"
                if at_end or stop_reason != "max_steps":
                    break
    state.history["stop_reason"] = stop_reason
    state.history["time_s"] = state.history.get("time_s", 0.0) + time.perf_counter() - started
    _average(state, config, evaluate_fn, save)
    state.model.eval()
    emit({"event": "end", "stop_reason": stop_reason, "step": state.step, "best": state.history["best"],
          "averaged": state.history["averaged"]})
    return state.history


def _out_of_time(config: TrainConfig, started: float, world_size: int, device: torch.device) -> bool:
    """Whether `config.max_minutes` of training have passed; under DDP rank 0's clock decides for every process
    (they must stop at the same step)."""
    if config.max_minutes <= 0:
        return False
    over = time.perf_counter() - started >= 60.0 * config.max_minutes
    if world_size > 1:
        flag = torch.tensor([float(over)], device=device)   # NCCL broadcasts CUDA tensors only
        dist.broadcast(flag, src=0)
        over = bool(flag.item())
    return over


def _wrap(model: nn.Module, world_size: int, device: torch.device, compile: bool) -> nn.Module:
    """What runs the forward pass: the model, in DistributedDataParallel under torchrun, compiled if asked
    (both wrappers share the model's parameters)."""
    if world_size > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda"
                                                    else None)
    return torch.compile(model) if compile else model


def _average(state: TrainState, config: TrainConfig, evaluate_fn: Callable | None, save: Callable[[str], None]) -> None:
    """With config.average_last = k > 1: load the mean of the last k snapshots, evaluate it, save averaged.pt."""
    if config.average_last > 1 and len(state.snapshots) > 1:
        state.model.load_state_dict(average_state_dicts(list(state.snapshots)))
        if evaluate_fn is not None:
            state.history["averaged"] = evaluate_fn(state.model)
        save("averaged.pt")


def _evaluate(model: nn.Module, loader: Iterable, **kwargs) -> dict:
    """`evaluate` without the generated hypotheses (the history keeps numbers only)."""
    metrics = evaluate(model, loader, **kwargs)
    metrics.pop("hypotheses", None)
    return metrics
