"""Small helpers shared by the whole package, its chapters, tests and scripts: the one home of each.

* `set_seed`: seed every random number generator a chapter uses.
* `sha256sum`, `atomic_write`, `atomic_write_text`: hash a file; replace a file so that a crash never leaves
  half of it.
* `to_numpy`: a torch tensor (or anything array-like) as a NumPy array, without importing torch.
* `eval_mode`: run a block with a model in evaluation mode, restoring its mode even after an error.

Nothing here imports torch: the NumPy half of the course works without it.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

__all__ = ["set_seed", "sha256sum", "atomic_write", "atomic_write_text", "to_numpy", "eval_mode"]


def set_seed(seed: int) -> np.random.Generator:
    """Seed Python's `random`, NumPy's global state and torch (if installed); return a fresh NumPy Generator.
    Also sets the environment variable PYTHONHASHSEED, which only subprocesses started afterwards read (string
    hashing of the running process was fixed when it started).

    Chapters call this once at the top so every run prints the same numbers. Torch is imported lazily so
    that the NumPy half of the course works without it.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 (the legacy global generator too: older code and libraries draw from it)
    os.environ["PYTHONHASHSEED"] = str(seed)  # inherited by subprocesses (DataLoader workers)
    try:
        import torch
    except ImportError:  # the NumPy chapters run without torch
        pass
    else:
        torch.manual_seed(seed)  # seeds CPU and every CUDA device
    return np.random.default_rng(seed)


def sha256sum(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks (a large corpus never sits in memory whole)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call `write(tmp_path)`, then atomically rename the temporary file to `path`.

    The temporary file lives in the same folder (a rename within one file system is atomic on POSIX and
    Windows) and is flushed to disk before the rename. If `write` raises (a failed checksum, a full disk) or
    the process dies, `path` keeps its previous content and the temporary file is removed (or, after a hard
    kill, left as an obviously named `.tmp` file, never as `path`).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)                    # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` as UTF-8, atomically (see `atomic_write`)."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def to_numpy(value) -> np.ndarray:
    """A torch tensor as a NumPy array (detached, on the CPU); arrays, lists and numbers via `np.asarray`.

    Duck-typed on `.detach()`, so it needs no torch import.
    """
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


@contextlib.contextmanager
def eval_mode(model) -> Iterator:
    """`with eval_mode(model):` runs the block with dropout off (`model.eval()`), then puts the model back
    in the mode it was in, even when the block raises. Switching walks every submodule, so it is done only
    when the model is training."""
    was_training = model.training
    if was_training:
        model.eval()
    try:
        yield model
    finally:
        if was_training:
            model.train()
