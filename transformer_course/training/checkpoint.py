"""Checkpoints: atomic, complete enough to resume exactly, and loaded without executing code.

* Training checkpoints are `torch.save` dicts of tensors and plain Python values (model, optimiser,
  scheduler, grad scaler, step, epoch and position in the epoch, every RNG state, both configs, both
  vocabularies, the history). They are read back with `torch.load(weights_only=True)`, which refuses to
  unpickle anything but tensors and containers, so a checkpoint cannot run code.
* Writes are atomic: the file is written under a temporary name in the same folder, flushed to disk, then
  renamed over the target with `os.replace` (atomic on POSIX and Windows); a run killed mid-write leaves the
  previous checkpoint intact.
* Shipped (pretrained) models are a `safetensors` file (weights only) and a JSON file (config and
  vocabularies), loaded by `load_pretrained`.
"""
from __future__ import annotations

import json
import os
import pickle
import random
import zipfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .._optional import require, torch  # without PyTorch: an ImportError that names the extra to install
from ..config import ModelConfig, TrainConfig
from ..data.vocab import Vocab
from ..torch.transformer import Transformer
from ..utils import atomic_write, atomic_write_text, sha256sum

__all__ = ["FORMAT", "PRETRAINED_FORMAT", "CheckpointError", "unwrap_model", "atomic_save", "get_rng_state",
           "set_rng_state", "save_checkpoint", "load_checkpoint", "check_vocabs",
           "model_from_checkpoint", "average_state_dicts", "average_checkpoints", "export_pretrained",
           "load_pretrained", "pretrained_dir", "pretrained_info", "pretrained_names"]

FORMAT = "transformer-course-checkpoint/1"
PRETRAINED_FORMAT = "transformer-course-pretrained/1"
# what a training checkpoint must hold for a model to be rebuilt from it
_REQUIRED = ("model", "model_config", "src_vocab", "tgt_vocab")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, empty, truncated, not ours, of an unknown format version,
    or not matching the model or data it is used with. The message names the file and the problem."""


def unwrap_model(model: torch.nn.Module) -> torch.nn.Module:
    """The plain model inside DistributedDataParallel and/or torch.compile wrappers."""
    while True:
        if hasattr(model, "_orig_mod"):          # torch.compile
            model = model._orig_mod
        elif isinstance(model, torch.nn.parallel.DistributedDataParallel):
            model = model.module
        else:
            return model


def atomic_save(obj: Any, path: str | os.PathLike) -> Path:
    """`torch.save(obj, path)`, atomically."""
    return atomic_write(path, lambda tmp: torch.save(obj, tmp))


def get_rng_state() -> dict:
    """Python, NumPy and torch (CPU and every CUDA device) random states, in weights_only-safe types."""
    version, mt, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()  # noqa: NPY002 (set_seed seeds it too)
    state = {"python": [version, list(mt), gauss],
             "numpy": [name, torch.from_numpy(keys.astype(np.int64)), pos, has_gauss, cached],
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what `get_rng_state` captured. The states are byte tensors that torch wants on the CPU, also when
    the checkpoint was loaded onto a GPU (map_location="cuda")."""
    version, mt, gauss = state["python"]
    random.setstate((version, tuple(mt), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.cpu().numpy().astype(np.uint32), pos, has_gauss, cached))  # noqa: NPY002
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def save_checkpoint(path: str | os.PathLike, model: torch.nn.Module, *, optimizer=None, scheduler=None,
                    scaler=None, step: int = 0, epoch: int = 0, batches_in_epoch: int = 0,
                    train_config: TrainConfig | None = None, src_vocab: Vocab | None = None,
                    tgt_vocab: Vocab | None = None, history: dict | None = None,
                    extra: dict | None = None) -> Path:
    """Write everything needed to resume training (or just to use the model), atomically."""
    model = unwrap_model(model)
    checkpoint = {
        "format": FORMAT,
        "model": model.state_dict(),
        "model_config": model.config.to_dict() if hasattr(model, "config") else None,
        "train_config": train_config.to_dict() if train_config is not None else None,
        "src_vocab": src_vocab.to_dict() if src_vocab is not None else None,
        "tgt_vocab": tgt_vocab.to_dict() if tgt_vocab is not None else None,
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "scaler": scaler.state_dict() if scaler is not None and scaler.is_enabled() else None,
        "step": step, "epoch": epoch, "batches_in_epoch": batches_in_epoch,
        "rng": get_rng_state(),
        "history": history or {},
        "extra": extra or {},
    }
    return atomic_save(checkpoint, path)


def _check_format(path: Path, found, expected: str) -> None:
    """CheckpointError unless `found` (the file's "format" entry) is `expected` ("name/version")."""
    name, _, version = expected.rpartition("/")
    if isinstance(found, str) and found.startswith(name + "/") and found != expected:
        raise CheckpointError(f"{path}: format version {found.rpartition('/')[2]!r}, but this transformer-course "
                              f"reads version {version!r}; use the version of the package that wrote it")
    if found != expected:
        raise CheckpointError(f"{path}: not a transformer-course checkpoint (expected format {expected!r}, "
                              f"got {found!r})")


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict:
    """A checkpoint written by `save_checkpoint`, read with `weights_only=True` (no code can run).

    Every way a file can be unusable raises `CheckpointError` naming it: missing, empty, truncated or not a
    torch file, holding objects other than tensors and plain containers, or of another format (version).
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no checkpoint there" + (" (it is a folder)" if path.is_dir() else ""))
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path}: the file is empty (0 bytes); was its write interrupted?")
    try:
        checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        # a pickle naming a class or function is refused; anything else is not a pickle torch wrote
        lines = [line.strip() for line in str(err).splitlines() if "Unsupported global" in line]
        if not lines:
            raise CheckpointError(f"{path}: truncated or not a torch checkpoint (not a pickle torch wrote)") from None
        raise CheckpointError(f"{path}: refused to load it: it holds objects other than tensors and plain "
                              f"containers, and loading never runs code ({lines[0][:160]})") from None
    except (RuntimeError, OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile) as err:
        raise CheckpointError(f"{path}: truncated or not a torch checkpoint ({type(err).__name__}: "
                              f"{str(err).splitlines()[0][:120] if str(err) else 'no detail'})") from None
    found = checkpoint.get("format") if isinstance(checkpoint, dict) else type(checkpoint).__name__
    _check_format(path, found, FORMAT)
    return checkpoint


def check_vocabs(checkpoint: dict, src_vocab: Vocab | None, tgt_vocab: Vocab | None,
                 where: str = "checkpoint") -> None:
    """Raise CheckpointError when the data's vocabularies differ from those the checkpoint was trained on."""
    for side, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if vocab is None or checkpoint.get(side) is None:
            continue
        saved = Vocab.from_dict(checkpoint[side])
        difference = saved.diff(vocab)
        if difference is not None:
            raise CheckpointError(f"{side}: the {where} was trained with a different vocabulary than the data's "
                                  f"({difference}); token ids would mean different words. Build the data with the "
                                  "checkpoint's vocabularies (Vocab.from_dict(checkpoint['src_vocab'])) or start "
                                  "a new run")


def _rebuild(path: Path, model_config, load_weights) -> torch.nn.Module:
    """A model built from a stored config, its weights loaded; any mismatch is a CheckpointError naming `path`."""
    try:
        model = Transformer(ModelConfig.from_dict(model_config))
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"{path}: its model config cannot be used ({err})") from None
    try:
        load_weights(model)
    except CheckpointError:
        raise
    except (RuntimeError, KeyError, ValueError, OSError) as err:
        detail = " ".join(str(err).split())[:240]
        raise CheckpointError(f"{path}: its weights do not match its model config ({detail})") from None
    return model


def model_from_checkpoint(path: str | os.PathLike, device: str | torch.device = "cpu"):
    """(model in eval mode, src_vocab, tgt_vocab, checkpoint dict) from a training checkpoint."""
    path = Path(path)
    checkpoint = load_checkpoint(path)
    missing = [key for key in _REQUIRED if checkpoint.get(key) is None]
    if missing:
        raise CheckpointError(f"{path}: the checkpoint lacks {', '.join(missing)}; it cannot rebuild a model")
    model = _rebuild(path, checkpoint["model_config"], lambda m: m.load_state_dict(checkpoint["model"]))
    model.to(device).eval()
    try:
        vocabs = Vocab.from_dict(checkpoint["src_vocab"]), Vocab.from_dict(checkpoint["tgt_vocab"])
    except ValueError as err:
        raise CheckpointError(f"{path}: {err}") from None
    return model, *vocabs, checkpoint


def average_state_dicts(state_dicts: Sequence[dict]) -> dict:
    """Element-wise mean of parameters (the paper averages the last 5 or 20 checkpoints).

    Floating tensors are averaged in float64 and cast back; integer buffers are taken from the last one.
    """
    if not state_dicts:
        raise ValueError("state_dicts: expected at least one state dict, got none")
    keys = list(state_dicts[-1])
    for i, sd in enumerate(state_dicts):
        if list(sd) != keys:
            raise ValueError(f"state_dicts[{i}]: expected the same parameter names as the last one")
    out = {}
    for key in keys:
        last = state_dicts[-1][key]
        if torch.is_floating_point(last):
            total = sum(sd[key].double() for sd in state_dicts)
            out[key] = (total / len(state_dicts)).to(last.dtype)
        else:
            out[key] = last.clone()
    return out


def average_checkpoints(paths: Sequence[str | os.PathLike]) -> dict:
    """Average the model parameters stored in several checkpoints; returns a state dict."""
    return average_state_dicts([load_checkpoint(p)["model"] for p in paths])


# -- shipped, pretrained models ---------------------------------------------------------------------------

def pretrained_dir() -> Path:
    """The folder of the package's shipped checkpoints."""
    return Path(str(resources.files("transformer_course") / "checkpoints"))


def export_pretrained(model: torch.nn.Module, src_vocab: Vocab, tgt_vocab: Vocab, directory: str | os.PathLike,
                      name: str, metadata: dict | None = None) -> dict:
    """Write `name.safetensors` (weights) and `name.json` (config, vocabularies, metadata, weight hash)."""
    require("safetensors")                               # without it: an ImportError naming the extra
    from safetensors.torch import save_model
    model = unwrap_model(model)
    directory = Path(directory)
    weights = directory / f"{name}.safetensors"
    atomic_write(weights, lambda tmp: save_model(model, tmp))      # save_model handles tied weights
    info = {"format": PRETRAINED_FORMAT, "name": name,
            "model_config": model.config.to_dict(), "src_vocab": src_vocab.to_dict(),
            "tgt_vocab": tgt_vocab.to_dict(), "weights": weights.name,
            "weights_sha256": sha256sum(weights), "weights_bytes": weights.stat().st_size,
            "metadata": metadata or {}}
    atomic_write_text(directory / f"{name}.json", json.dumps(info, ensure_ascii=False, indent=1) + "\n")
    return info


def pretrained_names(directory: str | os.PathLike | None = None) -> list[str]:
    """Names of the shipped models (the `.json` files of `directory`, by default the package's)."""
    directory = Path(directory) if directory is not None else pretrained_dir()
    return sorted(p.stem for p in directory.glob("*.json")) if directory.is_dir() else []


def pretrained_info(name: str = "numbers-en-fr", directory: str | os.PathLike | None = None) -> dict:
    """The description of a shipped model (`name.json`): its model config, vocabularies, weights file and hash,
    and `metadata` (its training recipe; `metadata["data"]` the spec of its task, for `data.spec.load_task`)."""
    directory = Path(directory) if directory is not None else pretrained_dir()
    meta_path = directory / f"{name}.json"
    if not meta_path.is_file():
        raise CheckpointError(f"name: expected one of {pretrained_names(directory)}, got {name!r} "
                              f"(no {meta_path})")
    try:
        info = json.loads(meta_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{meta_path}: not valid JSON ({err})") from None
    _check_format(meta_path, info.get("format") if isinstance(info, dict) else type(info).__name__,
                  PRETRAINED_FORMAT)
    return info


def load_pretrained(name: str = "numbers-en-fr", directory: str | os.PathLike | None = None,
                    device: str | torch.device = "cpu", check_hash: bool = True):
    """(model in eval mode, src_vocab, tgt_vocab) of a shipped checkpoint; no training, no network.

    `numbers-en-fr` translates English number words into French ("ninety-seven" -> "quatre-vingt-dix-sept");
    see transformer_course/checkpoints/README.md for how it was trained and its held-out score.
    Every problem (unknown name, missing or corrupt file, mismatched weights) raises `CheckpointError`.
    """
    SafetensorError = require("safetensors").SafetensorError
    from safetensors.torch import load_model
    directory = Path(directory) if directory is not None else pretrained_dir()
    info = pretrained_info(name, directory)
    weights = directory / str(info.get("weights"))
    if not weights.is_file():
        raise CheckpointError(f"{weights}: the weights named by {name}.json are missing")
    if check_hash and sha256sum(weights) != info.get("weights_sha256"):
        raise CheckpointError(f"{weights}: sha256 differs from the one recorded in {name}.json; "
                              "the file is corrupt or was replaced")

    def load_weights(model):
        try:
            load_model(model, str(weights), device="cpu")
        except SafetensorError as err:
            raise CheckpointError(f"{weights}: truncated or not a safetensors file ({err})") from None

    model = _rebuild(weights, info.get("model_config"), load_weights)
    model.to(device).eval()
    try:
        return model, Vocab.from_dict(info["src_vocab"]), Vocab.from_dict(info["tgt_vocab"])
    except (KeyError, ValueError) as err:
        raise CheckpointError(f"{directory / name}.json: its vocabularies cannot be read ({err})") from None
