"""Input checks the NumPy and PyTorch twins share, so that both say the same thing in the same words.

Checks of plain Python values (ids, lengths, sizes) live here whole; checks of arrays and tensors compute
their numbers on their own side (NumPy or torch) and take their words from the `*_message` functions.
Every message names the argument first, then what was expected, then what was received.
"""
from __future__ import annotations

import numbers

__all__ = ["check_int", "check_id", "check_max_len", "ids_message", "empty_batch_message"]


def check_int(name: str, value, low: int, high: int, what: str = "") -> int:
    """`value` must be an int (not a bool) in [low, high]; `what` says where the bounds come from."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: expected an int in [{low}, {high}]{what}, got {type(value).__name__} {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name}: expected an int in [{low}, {high}]{what}, got {value!r}")
    return int(value)


def check_id(name: str, value, vocab_size: int) -> int:
    """A token id such as bos_id or eos_id must lie inside the vocabulary: [0, vocab_size)."""
    return check_int(name, value, 0, vocab_size - 1, f" (an id of the vocabulary of size {vocab_size})")


def check_max_len(max_len, source_length: int, limit: int) -> int:
    """How many tokens decoding may generate: the paper's source length + 50 by default (section 6.1), never
    more than the model's position table (`limit`, config.max_len) holds."""
    if max_len is None:
        return min(source_length + 50, limit)
    return check_int("max_len", max_len, 1, limit, " (at most config.max_len)")


def ids_message(name: str, vocab_size: int, low: int, high: int) -> str:
    """Token ids or loss targets outside [0, vocab_size)."""
    return f"{name}: expected ids in [0, {vocab_size}), got values in [{low}, {high}]"


def empty_batch_message(name: str, layout: str, shape: tuple) -> str:
    """A batch with a zero-length axis: nothing to compute, and in torch a reshape that fails far away."""
    return f"{name}: expected a non-empty batch of shape {layout} (every axis >= 1), got shape {tuple(shape)}"
