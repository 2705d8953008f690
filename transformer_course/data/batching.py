"""Encoding, bucketing by length and padding — in NumPy, so the NumPy trainer and the torch `DataLoader`
(see `loader.py`) share exactly the same batches.

Conventions: a source is its tokens followed by eos; a target is bos, tokens, eos, and the decoder reads
`tgt_in = target[:-1]` to predict `tgt_out = target[1:]` (teacher forcing). Padding uses pad_id = 0 and
`src_mask` is True where a key is a real token, shape (B, 1, S), as in the model's attention.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .vocab import PAD_ID, Vocab

__all__ = ["Seq2SeqDataset", "encode_pairs", "bucket_batches", "pad_sequences", "make_numpy_batch",
           "numpy_batches"]


def encode_pairs(pairs: Sequence[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab,
                 max_len: int | None = None) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """Ids of every pair: (sources, targets, kept indices); pairs longer than `max_len` ids are dropped."""
    sources, targets, kept = [], [], []
    for i, (src, tgt) in enumerate(pairs):
        s = src_vocab.encode(src, add_bos=False, add_eos=True)
        t = tgt_vocab.encode(tgt, add_bos=True, add_eos=True)
        if max_len is not None and (len(s) > max_len or len(t) - 1 > max_len):
            continue
        sources.append(s)
        targets.append(t)
        kept.append(i)
    return sources, targets, kept


def _check_pairs(pairs: Sequence[tuple[str, str]]) -> None:
    """Every item must be a (source, target) pair of strings. Plain sentences would otherwise be unpacked
    letter by letter: a 2-letter sentence silently becomes the pair (letter, letter), a longer one a
    "too many values to unpack" that names nothing."""
    if len(pairs) == 0:
        raise ValueError("pairs: expected at least one (source, target) pair, got none")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
            raise TypeError(f"pairs[{i}]: expected a (source, target) pair of strings, got "
                            f"{type(pair).__name__} {pair!r:.80}")


class Seq2SeqDataset:
    """Pairs encoded once; item i is (i, source ids, target ids). Works as a torch map-style dataset."""

    def __init__(self, pairs: Sequence[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab,
                 max_len: int | None = None):
        _check_pairs(pairs)
        self.pairs = list(pairs)
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.sources, self.targets, self.kept = encode_pairs(pairs, src_vocab, tgt_vocab, max_len)
        if not self.sources:
            raise ValueError(f"max_len: every pair is longer than max_len={max_len} tokens")
        self.n_dropped = len(pairs) - len(self.sources)     # pairs longer than max_len

    def __len__(self) -> int:
        return len(self.sources)

    def __getitem__(self, i: int) -> tuple[int, list[int], list[int]]:
        return i, self.sources[i], self.targets[i]

    @property
    def lengths(self) -> np.ndarray:
        """max(source, target) length per item: the key for bucketing."""
        return np.array([max(len(s), len(t)) for s, t in zip(self.sources, self.targets)], dtype=np.int64)


def bucket_batches(lengths: Sequence[int], batch_size: int, shuffle: bool = True, seed: int = 0,
                   epoch: int = 0, pool: int = 50, drop_last: bool = False) -> list[list[int]]:
    """Indices grouped into batches of similar length (less padding, faster steps).

    With `shuffle`, the order is a function of (seed, epoch) only: indices are shuffled, cut into pools of
    `pool` batches, each pool sorted by length and cut into batches, and the batches shuffled. Without
    `shuffle`, all indices are sorted by length (stable), which is what evaluation wants.
    """
    if not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"batch_size: expected a positive int, got {batch_size!r}")
    lengths = np.asarray(lengths)
    if shuffle:
        rng = np.random.default_rng([seed, epoch])
        order = rng.permutation(len(lengths))
        chunk = batch_size * pool
        order = np.concatenate([c[np.argsort(lengths[c], kind="stable")]
                                for c in np.split(order, range(chunk, len(order), chunk))])
    else:
        order = np.argsort(lengths, kind="stable")
    batches = [order[i:i + batch_size].tolist() for i in range(0, len(order), batch_size)]
    if drop_last and batches and len(batches[-1]) < batch_size:
        batches.pop()
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def pad_sequences(seqs: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> np.ndarray:
    """(B, L) int64 array, each row a sequence followed by `pad_id` up to the longest one."""
    out = np.full((len(seqs), max(len(s) for s in seqs)), pad_id, dtype=np.int64)   # (B, L)
    for row, s in enumerate(seqs):
        out[row, :len(s)] = s
    return out


def make_numpy_batch(sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]],
                     pad_id: int = PAD_ID) -> dict[str, np.ndarray]:
    """A padded batch: src (B, S), tgt_in (B, T), tgt_out (B, T), src_mask (B, 1, S) bool."""
    src = pad_sequences(sources, pad_id)                  # (B, S)
    tgt = pad_sequences(targets, pad_id)                  # (B, T + 1)
    src_mask = (src != pad_id)[:, None, :]                # (B, 1, S)
    return {"src": src, "tgt_in": tgt[:, :-1], "tgt_out": tgt[:, 1:], "src_mask": src_mask}


def numpy_batches(pairs: Sequence[tuple[str, str]] | Seq2SeqDataset, src_vocab: Vocab | None = None,
                  tgt_vocab: Vocab | None = None, batch_size: int = 32, shuffle: bool = True, seed: int = 0,
                  epoch: int = 0, max_len: int | None = None, epochs: int | None = 1,
                  as_tuples: bool = False) -> Iterator:
    """NumPy batches for the NumPy trainer: dicts as `make_numpy_batch` plus "index", or with `as_tuples`
    (src, tgt_in, tgt_out) tuples (what `numpy_trainer.train_numpy` reads).

    Runs `epochs` epochs starting at `epoch` (None: forever), reshuffled each epoch exactly as the torch
    loader with the same seed.
    """
    data = pairs if isinstance(pairs, Seq2SeqDataset) else Seq2SeqDataset(pairs, src_vocab, tgt_vocab, max_len)
    current = epoch
    while epochs is None or current < epoch + epochs:
        for batch in bucket_batches(data.lengths, batch_size, shuffle, seed, current):
            out = make_numpy_batch([data.sources[i] for i in batch], [data.targets[i] for i in batch])
            if as_tuples:
                yield out["src"], out["tgt_in"], out["tgt_out"]
            else:
                out["index"] = np.asarray(batch, dtype=np.int64)
                yield out
        current += 1
