"""Training a PyTorch model with the paper's recipe.

Adam (beta1 0.9, beta2 0.98, eps 1e-9) with the warm-up schedule of `schedule.py`, label smoothing (0.1),
dropout (in the model), plus what the paper leaves implicit or did not have: gradient clipping, mixed
precision (bf16, or fp16 with a gradient scaler), optional `torch.compile`, DistributedDataParallel, a
tqdm progress bar, evaluation during training, stop rules, NaN/inf detection, checkpoints that resume
exactly, and averaging of the last k checkpoints (the paper averaged the last 5 or 20).

`train` is the loop, one screen long; each piece around it does one thing and is named for it:

* `start_run` -> `RunState`: checks, device, seed, Adam, schedule, grad scaler; a resume restores them all;
* `wrap_model`: DistributedDataParallel under torchrun, `torch.compile` if asked;
* `epoch_batches`: the batches of the current epoch from where the state left it;
* `train_step`: one optimiser step on one batch (`global_token_mean` makes N processes equal one);
* `keep_checkpoints`: the snapshot to average, best.pt and last.pt;
* `stop_reason` (`history.py`): the stop rules, read from the history alone;
* `average_snapshots`: the mean of the last k snapshots, at the end.

Any model trains that returns logits (B, T, V) from `model(src, tgt_in, src_mask=...)` and has a
`config.d_model` (or a `d_model`) for the schedule's width. Deviations from the paper: steps are counted in
sentences (`batch_size`), not in ~25k-token batches; the loss is the mean over the batch's real target tokens.
"""
from __future__ import annotations

import collections
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._optional import torch  # without PyTorch: an ImportError that names the extra to install
from ..config import TrainConfig
from ..data.loader import Batch, BucketBatchSampler
from ..data.vocab import Vocab
from ..special_tokens import PAD_ID
from ..torch.device import autocast, maybe_compile, needs_grad_scaler, pick_device
from ..torch.loss import fast_cross_entropy
from ..utils import set_seed
from .callbacks import ProgressBar, emit
from .checkpoint import average_state_dicts, check_vocabs, load_checkpoint, save_checkpoint, set_rng_state, unwrap_model
from .history import TrainingDiverged, best_index, new_history, stop_reason
from .schedule import make_scheduler

# (imported by `import torch`; bare `import torch.distributed` would bypass _optional's message)
dist, nn = torch.distributed, torch.nn

__all__ = ["train", "RunState", "start_run", "wrap_model", "epoch_batches", "train_step", "global_token_mean",
           "keep_checkpoints", "average_snapshots", "TrainingDiverged", "distributed_info"]

Vocabs = tuple[Vocab, Vocab]


def train(model: nn.Module, train_loader: Iterable[Batch], config: TrainConfig = TrainConfig(), *,
          evaluate_fn: Callable[[nn.Module], dict] | None = None, vocabs: Vocabs | None = None,
          out_dir: str | Path | None = None, resume_from: str | Path | None = None,
          callbacks: Sequence[Callable[[dict], None]] | None = None) -> dict:
    """Train `model` on `train_loader` with `config`'s recipe until a stop rule says so; return the history.

    Every `config.eval_every` steps, and when training stops: `evaluate_fn(model) -> metrics` (see
    `evaluate.make_evaluator`), a snapshot for averaging, `out_dir/best.pt` when `config.monitor` improved and
    `out_dir/last.pt`, then the stop rules (`history.stop_reason`). `vocabs` (source, target) are saved in the
    checkpoints; `resume_from` continues a run exactly (the same batches in the same order when the loader's
    batch sampler is a `BucketBatchSampler`, as `make_dataloader` builds; another loader starts its epoch over;
    under DDP a checkpoint holds rank 0's random generators, so the other processes draw new dropout masks).
    `callbacks` receive one dict per event, as `callbacks.py` lists them (default: a progress bar). The
    history's keys are listed in `history.py`.
    """
    state = start_run(model, train_loader, config, vocabs, out_dir, resume_from)
    runner = wrap_model(state.model, state.device, config.compile)
    callbacks = [ProgressBar()] if callbacks is None else list(callbacks)
    emit(callbacks, event="start", step=state.step, max_steps=config.max_steps, rank=distributed_info()[0])
    started = time.perf_counter() - state.history["time_s"]   # a resumed run's time budget counts its past too
    while state.history["stop_reason"] is None:
        for batch in epoch_batches(train_loader, state):
            record = train_step(state, runner, batch.to(state.device, non_blocking=True), config)
            emit(callbacks, event="step", **record)
            out_of_time = _over_time_budget(config, started, state.device)
            if state.step % config.eval_every == 0 or state.step >= config.max_steps or out_of_time:
                if evaluate_fn is not None:
                    metrics = {"step": state.step, **evaluate_fn(state.model)}
                    state.history["eval"].append(metrics)
                    emit(callbacks, event="eval", **metrics)
                state.history["time_s"] = time.perf_counter() - started   # saved with the checkpoints
                keep_checkpoints(state, config)
                state.history["stop_reason"] = stop_reason(state.history, config, state.step, out_of_time)
                if state.history["stop_reason"] is not None:
                    break
    state.history["time_s"] = time.perf_counter() - started
    average_snapshots(state, config, evaluate_fn)
    state.model.eval()
    emit(callbacks, event="end", step=state.step,
          **{key: state.history[key] for key in ("stop_reason", "best", "averaged")})
    return state.history


def distributed_info() -> tuple[int, int]:
    """(rank, world_size): (0, 1) unless torch.distributed is initialised (e.g. under torchrun)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@dataclass
class RunState:
    """Everything a checkpoint saves and a resume restores (with the random number generators' states, which
    `save_checkpoint` records and `set_rng_state` puts back), and where the run writes."""

    model: nn.Module                                     # the plain model, not its DDP / compiled wrapper
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    device: torch.device
    world_size: int = 1                                  # processes under torchrun
    out_dir: Path | None = None                          # None: no files (and on every rank but 0)
    vocabs: Vocabs | None = None                         # saved with every checkpoint
    step: int = 0                                        # optimiser steps taken
    epoch: int = 0                                       # passes over the data begun
    batches_in_epoch: int = 0                            # batches of this epoch consumed
    history: dict = field(default_factory=new_history)
    snapshots: collections.deque = field(default_factory=collections.deque)  # parameters to average

    def save(self, name: str, config: TrainConfig) -> None:
        """An atomic checkpoint out_dir/name (see `checkpoint.save_checkpoint`) that `restore` reads back."""
        if self.out_dir is None:
            return
        src_vocab, tgt_vocab = self.vocabs or (None, None)
        save_checkpoint(self.out_dir / name, self.model, optimizer=self.optimizer, scheduler=self.scheduler,
                        scaler=self.scaler, step=self.step, epoch=self.epoch, batches_in_epoch=self.batches_in_epoch,
                        train_config=config, src_vocab=src_vocab, tgt_vocab=tgt_vocab, history=self.history,
                        extra={"snapshots": list(self.snapshots)})

    def restore(self, checkpoint: dict) -> None:
        """Continue exactly where `save` stopped: same parameters, moments, learning rate, batches, RNG."""
        self.model.load_state_dict(checkpoint["model"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.scheduler.load_state_dict(checkpoint["scheduler"])
        if checkpoint["scaler"] is not None:
            self.scaler.load_state_dict(checkpoint["scaler"])
        self.step, self.epoch = checkpoint["step"], checkpoint["epoch"]
        self.batches_in_epoch = checkpoint["batches_in_epoch"]
        self.history = {**new_history(), **checkpoint["history"]}
        self.snapshots.extend(checkpoint["extra"].get("snapshots", []))
        set_rng_state(checkpoint["rng"])


def start_run(model: nn.Module, train_loader: Iterable, config: TrainConfig, vocabs: Vocabs | None,
              out_dir: str | Path | None, resume_from: str | Path | None) -> RunState:
    """Check the arguments, pick the device, seed everything, build Adam (lr 1: the schedule gives the rate),
    the paper's schedule for the model's width and a gradient scaler (active for fp16 only); resume if asked."""
    model = unwrap_model(model)
    width = _check_arguments(model, train_loader, config, vocabs)
    rank, world_size = distributed_info()
    device = pick_device(config.device)
    # Each process its own dropout masks (rank 0 draws what a single process draws); the batches come from the
    # sampler's own (seed, epoch) generator, so every process still reads its shard of the same order.
    set_seed(config.seed + rank)
    model.to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(config.adam_beta1, config.adam_beta2),
                                 eps=config.adam_eps, weight_decay=config.weight_decay)
    state = RunState(model, optimizer, make_scheduler(optimizer, width, config.warmup_steps, config.lr_factor),
                     torch.amp.GradScaler(device.type, enabled=needs_grad_scaler(config.precision)), device, world_size,
                     Path(out_dir) if out_dir is not None and rank == 0 else None, vocabs,
                     snapshots=collections.deque(maxlen=config.average_last))
    if resume_from is not None:
        state.restore(_resume_checkpoint(resume_from, model, vocabs, device))
        if rank > 0:   # the checkpoint holds rank 0's generators: every other process draws its own masks again
            set_seed(int(np.random.SeedSequence([config.seed, rank, state.step]).generate_state(1)[0]))
    # a finished run stays finished; one given more steps (or other rules) goes on
    state.history["stop_reason"] = stop_reason(state.history, config, state.step) if state.step else None
    model.train()
    return state


def wrap_model(model: nn.Module, device: torch.device, compile_model: bool) -> nn.Module:
    """What runs the forward pass: the model, in DistributedDataParallel under torchrun, compiled if asked
    (both wrappers share the model's parameters)."""
    if distributed_info()[1] > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda"
                                                    else None)
    return maybe_compile(model, compile_model)


def epoch_batches(loader: Iterable[Batch], state: RunState) -> Iterator[Batch]:
    """The batches of the current epoch from where `state` left it; at the epoch's end the state moves on to
    the next one. A `BucketBatchSampler` replays the same batches in the same order, so a resumed run sees
    exactly the batches an uninterrupted one would."""
    sampler = getattr(loader, "batch_sampler", None)
    if isinstance(sampler, BucketBatchSampler):
        sampler.set_epoch(state.epoch, skip=state.batches_in_epoch)
    seen = 0
    for batch in loader:
        seen += 1
        state.batches_in_epoch += 1
        yield batch
    if seen == 0 and state.batches_in_epoch == 0:
        raise ValueError("train_loader: an epoch yielded no batch (an exhausted iterator?); pass a DataLoader or "
                         "another re-iterable")
    state.epoch, state.batches_in_epoch = state.epoch + 1, 0


def train_step(state: RunState, runner: nn.Module, batch: Batch, config: TrainConfig) -> dict:
    """One optimiser step on one batch (already on the device): forward under autocast, loss, backward,
    clipping, Adam, schedule. `runner` is state.model or its DDP / compiled wrapper. Returns
    {"step", "loss", "lr", "grad_norm"} and records them in state.history."""
    with autocast(batch.src.device, config.precision):
        logits = runner(batch.src, batch.tgt_in, src_mask=batch.src_mask)   # (B, T, V)
    loss = fast_cross_entropy(logits, batch.tgt_out, PAD_ID, config.label_smoothing)
    loss, global_loss = global_token_mean(loss, batch.tgt_out, state.world_size)
    if not math.isfinite(global_loss):
        raise TrainingDiverged(f"loss became {global_loss} at step {state.step + 1} (lr "
                               f"{state.scheduler.get_last_lr()[0]:.3g}); lower TrainConfig.lr_factor, keep "
                               "clip_grad_norm > 0, or train in fp32/bf16 instead of fp16")
    state.optimizer.zero_grad(set_to_none=True)
    state.scaler.scale(loss).backward()
    state.scaler.unscale_(state.optimizer)               # the norm of the true gradients, clipped or not
    max_norm = config.clip_grad_norm if config.clip_grad_norm > 0 else math.inf   # inf: measure, do not clip
    grad_norm = float(torch.nn.utils.clip_grad_norm_(state.model.parameters(), max_norm))
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


def global_token_mean(loss: torch.Tensor, targets: torch.Tensor, world_size: int) -> tuple[torch.Tensor, float]:
    """(the loss to backpropagate, the mean loss per target token over every process's batch).

    Under DDP one all-reduce gives the global token count and the global mean loss; scaling each process's
    loss by n_local * world_size / n_global makes DDP's gradient *average* the gradient of the global token
    mean (exactly what one process with the whole batch computes)."""
    if world_size == 1:
        return loss, loss.item()
    n_tokens = (targets != PAD_ID).sum()
    totals = torch.stack([loss.detach() * n_tokens, n_tokens.to(loss.dtype)])
    dist.all_reduce(totals)
    return loss * (n_tokens * world_size / totals[1]), (totals[0] / totals[1]).item()


def keep_checkpoints(state: RunState, config: TrainConfig) -> None:
    """At an evaluation point: keep a snapshot of the parameters to average (average_last > 1), save best.pt
    when the latest evaluation is the best so far by `config.monitor`, and last.pt always."""
    if config.average_last > 1:
        state.snapshots.append({k: v.detach().to("cpu", copy=True) for k, v in state.model.state_dict().items()})
    evals = state.history["eval"]
    if evals and best_index(evals, config.monitor) == len(evals) - 1:
        state.history["best"] = evals[-1]
        state.save("best.pt", config)
    state.save("last.pt", config)


def average_snapshots(state: RunState, config: TrainConfig, evaluate_fn: Callable | None) -> None:
    """With config.average_last = k > 1: load the mean of the last k snapshots, evaluate it, save averaged.pt."""
    if config.average_last > 1 and len(state.snapshots) > 1:
        state.model.load_state_dict(average_state_dicts(list(state.snapshots)))
        if evaluate_fn is not None:
            state.history["averaged"] = evaluate_fn(state.model)
        state.save("averaged.pt", config)


def _over_time_budget(config: TrainConfig, started: float, device: torch.device) -> bool:
    """Whether `config.max_minutes` of training have passed; under DDP rank 0's clock decides for every process
    (they must stop at the same step)."""
    if config.max_minutes <= 0:
        return False
    over = time.perf_counter() - started >= 60.0 * config.max_minutes
    if distributed_info()[1] > 1:
        flag = torch.tensor([float(over)], device=device)   # NCCL broadcasts CUDA tensors only
        dist.broadcast(flag, src=0)
        over = bool(flag.item())
    return over


def _check_arguments(model: nn.Module, train_loader, config, vocabs) -> int:
    """Refuse bad arguments before anything runs; returns the schedule's width d_model."""
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
    model_config = getattr(model, "config", None)
    width = model_config.d_model if model_config is not None else getattr(model, "d_model", None)
    if not isinstance(width, int):
        raise ValueError(f"model: expected a .config.d_model or a .d_model, the width that scales the learning-rate "
                         f"schedule (lr ~ d_model^-0.5); {type(model).__name__} has neither")
    if vocabs is not None and (not isinstance(vocabs, tuple) or len(vocabs) != 2):
        raise ValueError(f"vocabs: expected a (source, target) pair of Vocab, got {type(vocabs).__name__}")
    if model_config is not None:
        if model_config.pad_id != PAD_ID:
            raise ValueError(f"model: expected config.pad_id={PAD_ID} (the data's padding id), got "
                             f"{model_config.pad_id}")
        for side, vocab, size in zip(("source", "target"), vocabs or (None, None),
                                     (model_config.src_vocab_size, model_config.tgt_vocab_size)):
            if vocab is not None and len(vocab) != size:
                raise ValueError(f"vocabs: expected a {side} vocabulary of {size} tokens (the model's), got "
                                 f"{len(vocab)}")
    try:
        n_batches = len(train_loader)
    except TypeError:                                    # a generator or an iterable dataset: no length
        n_batches = None
    if n_batches == 0:
        raise ValueError("train_loader: expected at least one batch, got an empty loader")
    return width


def _resume_checkpoint(path, model: nn.Module, vocabs: Vocabs | None, device: torch.device) -> dict:
    checkpoint = load_checkpoint(path, map_location=device)
    check_vocabs(checkpoint, *(vocabs or (None, None)), where=f"checkpoint {path}")
    if hasattr(model, "config") and model.config.differences(checkpoint["model_config"]):
        raise ValueError(f"resume_from: {path} holds a model with config {checkpoint['model_config']}, but the "
                         f"model given has {model.config.to_dict()}")
    return checkpoint
