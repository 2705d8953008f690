"""Greedy decoding with the NumPy Transformer: generate the most probable token at each step.

The PyTorch twin (`transformer_course.torch.decoding`) has the same `greedy_decode`, plus a key/value cache
and beam search. Here every step re-decodes the whole prefix: simple, and fast enough for the short
sequences of the NumPy chapters. Returned tokens exclude BOS; a sequence ends with its EOS and is followed
by pad_id.
"""
from __future__ import annotations

import numpy as np

from ..checks import check_id, check_max_len
from ..config import ModelConfig
from ..special_tokens import BOS_ID, EOS_ID
from .embedding import check_tokens
from .transformer import decode_forward, encode_forward, make_src_mask

__all__ = ["greedy_decode"]


def greedy_decode(src: np.ndarray, params: dict, config: ModelConfig, max_len: int | None = None,
                  bos_id: int = BOS_ID, eos_id: int = EOS_ID, src_mask: np.ndarray | None = None) -> np.ndarray:
    """Pick the most probable token at every step: src (B, S) -> tokens (B, L), L <= max_len (default S + 50)."""
    check_tokens(src, config.src_vocab_size, "src")
    max_len = check_max_len(max_len, src.shape[1], config.max_len)
    check_id("bos_id", bos_id, config.tgt_vocab_size)
    check_id("eos_id", eos_id, config.tgt_vocab_size)
    if src_mask is None:
        src_mask = make_src_mask(src, config)            # (B, 1, S)
    B = src.shape[0]
    pad_id = config.pad_id
    memory, _ = encode_forward(src, params, config, src_mask)    # (B, S, D)
    ys = np.full((B, 1), bos_id, dtype=np.int64)         # (B, 1)
    finished = np.zeros(B, dtype=bool)                   # (B,)
    for _ in range(max_len):
        logits, _ = decode_forward(ys, memory, params, config, src_mask)  # (B, t, V): every position again
        next_token = logits[:, -1].argmax(-1)            # (B,)
        next_token = np.where(finished, pad_id, next_token)  # (B,): finished rows only pad
        ys = np.concatenate([ys, next_token[:, None]], axis=1)  # (B, t + 1)
        finished |= next_token == eos_id
        if finished.all():
            break
    return ys[:, 1:]                                     # (B, L): without BOS
