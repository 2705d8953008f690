"""Small helpers shared by chapters, tests and scripts: seeding, file hashing and atomic file writes.

Only the standard library and NumPy are imported here, so every layer of the package (data, training, the
command line) can use these helpers without pulling in torch.
"""
from __future__ import annotations

import hashlib
import os
import random
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["set_seed", "sha256_file", "atomic_write", "atomic_write_text"]


def set_seed(seed: int) -> np.random.Generator:
    """Seed Python's `random`, NumPy's global state and torch (if installed); return a fresh NumPy Generator.

    Chapters call this once at the top so every run prints the same numbers. Torch is imported lazily so
    that the NumPy half of the course works without it.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed: expected a non-negative int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)  # inherited by subprocesses (DataLoader workers)
    try:
        import torch
    except ImportError:  # the NumPy chapters run without torch
        pass
    else:
        torch.manual_seed(seed)  # seeds CPU and every CUDA device
    return np.random.default_rng(seed)


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """Hex SHA-256 of a file, read in chunks (checkpoints and corpora can be large)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Call `write(tmp_path)`, then atomically rename the temporary file to `path`.

    The temporary file sits in the same folder (a rename is atomic only within one file system), is flushed
    to disk, then `os.replace`d over `path` (atomic on POSIX and Windows). If `write` raises, `path` keeps its
    previous content and the temporary file is removed; after a hard kill an obviously named `.tmp` file may
    be left behind, never a half-written `path`.
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
        os.chmod(tmp, 0o666 & ~umask)                # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write `text` to `path` as UTF-8, atomically (see `atomic_write`)."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
