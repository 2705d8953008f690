"""Training the PyTorch Transformer with the paper's recipe.

Adam (beta1 0.9, beta2 0.98, eps 1e-9) with the warm-up schedule of `schedule.py`, label smoothing (0.1),
dropout (in the model), plus what the paper leaves implicit or did not have: gradient clipping, mixed
precision (bf16, or fp16 with a gradient scaler), optional `torch.compile`, DistributedDataParallel, a
tqdm progress bar, evaluation during training, early stopping, NaN/inf detection, checkpoints that resume
exactly, and averaging of the last k checkpoints (the paper averaged the last 5 or 20).

Deviations from the paper: steps are counted in sentences (`batch_size`), not in ~25k-token batches; the
loss is the mean over the batch's real target tokens.
"""
from __future__ import annotations

import collections
import math
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

from .._optional import torch  # without PyTorch: an ImportError that names the extra to install
import torch.distributed as dist
from tqdm.auto import tqdm

from ..config import ModelConfig, TrainConfig
from ..data.loader import BucketBatchSampler
from ..data.vocab import Vocab
from ..torch.loss import cross_entropy
from ..utils import set_seed
from .checkpoint import (check_vocabs, load_checkpoint, save_checkpoint, set_rng_state, unwrap_model,
                         average_state_dicts)
from .evaluate import evaluate
from .schedule import make_scheduler

__all__ = ["train", "TrainingDiverged", "resolve_device", "autocast_context", "distributed_info"]

_HIGHER_IS_BETTER = {"exact_match", "token_accuracy", "bleu"}


class TrainingDiverged(FloatingPointError):
    """The loss or the gradient norm became NaN or infinite."""


def resolve_device(name: str | torch.device = "auto") -> torch.device:
    """`pick_device` from the model package ("auto": cuda > mps > cpu)."""
    if isinstance(name, torch.device):
        return name
    from ..torch.device import pick_device
    return pick_device(name)


def distributed_info() -> tuple[int, int]:
    """(rank, world_size): (0, 1) unless torch.distributed is initialised (e.g. under torchrun)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def autocast_context(device: torch.device, precision: str):
    """Mixed precision for the forward pass: bf16 or fp16 autocast, or nothing for fp32."""
    if precision == "fp32":
        return torch.autocast(device_type=device.type, enabled=False)
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16)


def _new_history() -> dict:
    return {"step": [], "loss": [], "lr": [], "grad_norm": [], "eval": [], "best": None, "stop_reason": None,
            "averaged": None}


def _improved(metrics: dict, best: dict | None, monitor: str) -> bool:
    if best is None:
        return True
    if monitor in _HIGHER_IS_BETTER:
        return metrics[monitor] > best[monitor]
    return metrics[monitor] < best[monitor]


def train(model: torch.nn.Module, train_loader: Iterable, val_loader: Iterable | None = None,
          config: TrainConfig = TrainConfig(), *, src_vocab: Vocab | None = None, tgt_vocab: Vocab | None = None,
          out_dir: str | Path | None = None, resume_from: str | Path | None = None,
          device: str | torch.device | None = None, progress: bool | None = None,
          callbacks: Sequence[Callable[[dict], None]] = (), monitor: str = "loss", eval_generate: bool = False,
          eval_max_len: int | None = None) -> dict:
    """Train `model` on `train_loader` (an iterable of `data.loader.Batch`) for `config.max_steps` steps.

    Every `config.eval_every` steps (and at the end) the model is evaluated on `val_loader` (teacher-forced
    loss, perplexity, token accuracy; with `eval_generate` also greedy exact match and, given `tgt_vocab`,
    BLEU), `out_dir/last.pt` is written (and `best.pt` when `monitor` improved), and early stopping is
    checked (`config.patience`). With `resume_from` (a checkpoint path) training continues exactly where it
    stopped: same batches, same dropout masks, same learning rate. With `config.average_last = k > 1` the
    model ends with the mean of the parameters at the last k evaluation points.

    Under torchrun (torch.distributed initialised) the model is wrapped in DistributedDataParallel; each
    process's loader yields its slice of the global batch (`make_dataloader(rank=..., world_size=...)`),
    and the loss is normalised by the global number of target tokens, so N processes compute the same
    update as one process with the whole batch. Only rank 0 writes files and shows progress.

    `callbacks` receive dicts: {"event": "step", "step", "loss", "lr", "grad_norm"},
    {"event": "eval", "step", **metrics} and {"event": "end", "stop_reason", ...}.
    Returns the history: lists "step", "loss", "lr", "grad_norm", a list "eval" of metric dicts, "best",
    "stop_reason" and "averaged" (the averaged model's metrics).
    """
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config: expected a TrainConfig, got {type(config).__name__}")
    base = unwrap_model(model)
    model_config: ModelConfig = base.config
    pad_id = model_config.pad_id
    for side, vocab, size in (("src_vocab", src_vocab, model_config.src_vocab_size),
                              ("tgt_vocab", tgt_vocab, model_config.tgt_vocab_size)):
        if vocab is not None and len(vocab) != size:
            raise ValueError(f"{side}: expected {size} tokens (the model's {side}_size), got {len(vocab)}")
    if monitor not in {"loss", "perplexity", "exact_match", "token_accuracy", "bleu"}:
        raise ValueError(f"monitor: expected 'loss', 'perplexity', 'token_accuracy', 'exact_match' or 'bleu', "
                         f"got {monitor!r}")
    if monitor in ("exact_match", "bleu") and not eval_generate:
        raise ValueError(f"monitor={monitor!r} needs eval_generate=True (it is measured on generated output)")
    try:
        n_batches = len(train_loader)
    except TypeError:
        n_batches = None
    if n_batches == 0:
        raise ValueError("train_loader: expected at least one batch, got an empty loader")

    rank, world_size = distributed_info()
    device = resolve_device(device if device is not None else config.device)
    set_seed(config.seed)
    base.to(device)
    optimizer = torch.optim.Adam(base.parameters(), lr=1.0, betas=(config.adam_beta1, config.adam_beta2),
                                 eps=config.adam_eps, weight_decay=config.weight_decay)
    scheduler = make_scheduler(optimizer, model_config.d_model, config.warmup_steps, config.lr_factor)
    scaler = torch.amp.GradScaler(device.type, enabled=config.precision == "fp16")
    step, epoch, batches_in_epoch = 0, 0, 0
    history = _new_history()
    snapshots: collections.deque = collections.deque(maxlen=config.average_last)
    patience_left = config.patience

    if resume_from is not None:
        checkpoint = load_checkpoint(resume_from, map_location=device)
        check_vocabs(checkpoint, src_vocab, tgt_vocab, where=f"checkpoint {resume_from}")
        if checkpoint["model_config"] != model_config.to_dict():
            raise ValueError(f"resume_from: {resume_from} holds a model with config {checkpoint['model_config']}, "
                             f"but the model given has {model_config.to_dict()}")
        base.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        if checkpoint["scaler"] is not None:
            scaler.load_state_dict(checkpoint["scaler"])
        step, epoch, batches_in_epoch = checkpoint["step"], checkpoint["epoch"], checkpoint["batches_in_epoch"]
        history = {**_new_history(), **checkpoint["history"]}
        for state in checkpoint["extra"].get("snapshots", []):
            snapshots.append(state)
        patience_left = checkpoint["extra"].get("patience_left", config.patience)
        set_rng_state(checkpoint["rng"])

    train_model: torch.nn.Module = base
    if world_size > 1:
        train_model = torch.nn.parallel.DistributedDataParallel(
            base, device_ids=[device.index] if device.type == "cuda" else None)
    if config.compile:
        train_model = torch.compile(train_model)

    out_dir = Path(out_dir) if out_dir is not None and rank == 0 else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)

    def save(path: Path) -> None:
        save_checkpoint(path, base, optimizer=optimizer, scheduler=scheduler, scaler=scaler, step=step,
                        epoch=epoch, batches_in_epoch=batches_in_epoch, train_config=config,
                        src_vocab=src_vocab, tgt_vocab=tgt_vocab, history=history,
                        extra={"snapshots": list(snapshots) if config.average_last > 1 else [],
                               "patience_left": patience_left})

    def emit(event: dict) -> None:
        for callback in callbacks:
            callback(event)

    def run_eval() -> dict:
        metrics = evaluate(base, val_loader, tgt_vocab=tgt_vocab, generate=eval_generate, max_len=eval_max_len,
                           device=device, precision=config.precision)
        metrics.pop("hypotheses", None)
        return {"step": step, **metrics}

    def checkpoint_point() -> bool:
        """Evaluate, snapshot, save, early-stop check; True when training should stop."""
        nonlocal patience_left
        if config.average_last > 1:
            snapshots.append({k: v.detach().to("cpu", copy=True) for k, v in base.state_dict().items()})
        stop = False
        if val_loader is not None:
            metrics = run_eval()
            history["eval"].append(metrics)
            emit({"event": "eval", **metrics})
            if _improved(metrics, history["best"], monitor):
                history["best"] = metrics
                patience_left = config.patience
                if out_dir is not None:
                    save(out_dir / "best.pt")
            elif config.patience > 0:
                patience_left -= 1
                stop = patience_left <= 0
        if out_dir is not None:
            save(out_dir / "last.pt")
        return stop

    sampler = getattr(train_loader, "batch_sampler", None)
    resumable = isinstance(sampler, BucketBatchSampler)
    # tqdm's disable=None means "off when stderr is not a terminal" (logs, CI, nbval)
    bar = tqdm(total=config.max_steps, initial=step, desc="train", unit="step", dynamic_ncols=True,
               disable=True if rank != 0 else (None if progress is None else not progress))
    started = time.perf_counter()
    stop_reason = "max_steps"
    base.train()
    try:
        while step < config.max_steps:
            if resumable:
                sampler.set_epoch(epoch)
                sampler.skip = batches_in_epoch
            seen = 0
            for batch in train_loader:
                seen += 1
                batches_in_epoch += 1
                batch = batch.to(device, non_blocking=True)
                with autocast_context(device, config.precision):
                    logits = train_model(batch.src, batch.tgt_in, src_mask=batch.src_mask)  # (B, T, V)
                loss = cross_entropy(logits.float(), batch.tgt_out, pad_id, config.label_smoothing)
                n_tokens = (batch.tgt_out != pad_id).sum()
                if world_size > 1:
                    # one all-reduce gives the global token count and the global mean loss; scaling each
                    # process's loss by n_local * world / n_global makes DDP's gradient *average* the
                    # gradient of the global token mean (exactly what one process with the whole batch does)
                    totals = torch.stack([loss.detach() * n_tokens, n_tokens.to(loss.dtype)])
                    dist.all_reduce(totals)
                    global_loss = (totals[0] / totals[1]).item()
                    loss = loss * (n_tokens * world_size / totals[1])
                else:
                    global_loss = loss.item()
                if not math.isfinite(global_loss):
                    raise TrainingDiverged(
                        f"loss became {global_loss} at step {step + 1} (lr {scheduler.get_last_lr()[0]:.3g}); "
                        "lower TrainConfig.lr_factor, keep clip_grad_norm > 0, or train in fp32/bf16 instead of "
                        "fp16")
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                grad_norm = float("nan")
                if config.clip_grad_norm > 0:
                    scaler.unscale_(optimizer)
                    grad_norm = float(torch.nn.utils.clip_grad_norm_(base.parameters(), config.clip_grad_norm))
                    if not math.isfinite(grad_norm) and config.precision != "fp16":
                        raise TrainingDiverged(f"gradient norm became {grad_norm} at step {step + 1}; lower "
                                               "TrainConfig.lr_factor or check the data for empty targets")
                lr = scheduler.get_last_lr()[0]
                scaler.step(optimizer)              # with fp16, skipped when the scaled gradients overflowed
                scaler.update()
                scheduler.step()
                step += 1
                history["step"].append(step)
                history["loss"].append(global_loss)
                history["lr"].append(lr)
                history["grad_norm"].append(grad_norm)
                bar.update(1)
                bar.set_postfix(loss=f"{global_loss:.3f}", lr=f"{lr:.2e}", refresh=False)
                emit({"event": "step", "step": step, "loss": global_loss, "lr": lr, "grad_norm": grad_norm})
                at_end = step >= config.max_steps
                if step % config.eval_every == 0 or at_end:
                    if checkpoint_point():
                        stop_reason = "early_stopping"
                        at_end = True
                    base.train()
                if at_end:
                    break
            else:                                   # the epoch ran out: next epoch, from its first batch
                if seen == 0 and batches_in_epoch == 0:
                    raise ValueError("train_loader: an epoch yielded no batch (an exhausted iterator?); pass a "
                                     "DataLoader or another re-iterable")
                epoch, batches_in_epoch = epoch + 1, 0
                continue
            break
    finally:
        bar.close()
    history["stop_reason"] = stop_reason
    history["time_s"] = history.get("time_s", 0.0) + time.perf_counter() - started

    if config.average_last > 1 and len(snapshots) > 1:
        base.load_state_dict(average_state_dicts(list(snapshots)))
        if val_loader is not None:
            history["averaged"] = run_eval()
        if out_dir is not None:
            save(out_dir / "averaged.pt")
    base.eval()
    emit({"event": "end", "stop_reason": stop_reason, "step": step, "best": history["best"],
          "averaged": history["averaged"]})
    return history
