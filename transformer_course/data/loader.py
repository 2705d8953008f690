"""The torch side of batching: a resumable length-bucketing sampler, a `Batch`, and `make_dataloader`.

The sampler is a pure function of (seed, epoch), so a run that is stopped and resumed sees exactly the
batches an uninterrupted run would (the trainer records the epoch and how many batches it consumed).
Under DistributedDataParallel every process computes the same *global* batches and takes its own slice:
the union over processes is the batch one process would have seen.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np

from .._optional import torch  # without PyTorch: an ImportError that names the extra to install
from .batching import Seq2SeqDataset, bucket_batches, make_numpy_batch
from .vocab import PAD_ID, Vocab

# (imported by `import torch`; a bare `from torch.utils.data import ...` would bypass _optional's message)
DataLoader, Sampler = torch.utils.data.DataLoader, torch.utils.data.Sampler

__all__ = ["Batch", "BucketBatchSampler", "collate", "make_dataloader"]


@dataclass
class Batch:
    """Padded tensors of one batch; `index` gives each row's position in the dataset."""

    src: torch.Tensor        # (B, S) source ids, eos-terminated, padded
    tgt_in: torch.Tensor     # (B, T) decoder input: bos + target
    tgt_out: torch.Tensor    # (B, T) what the decoder must predict: target + eos
    src_mask: torch.Tensor   # (B, 1, S) bool, True where the source token is real
    index: torch.Tensor      # (B,) dataset indices

    def to(self, device, non_blocking: bool = False) -> Batch:
        return Batch(**{f.name: getattr(self, f.name).to(device, non_blocking=non_blocking) for f in fields(self)})

    def pin_memory(self) -> Batch:
        return Batch(**{f.name: getattr(self, f.name).pin_memory() for f in fields(self)})

    def __len__(self) -> int:
        return self.src.shape[0]

    @property
    def n_tokens(self) -> int:
        """Number of target tokens the loss counts (non-pad)."""
        return int((self.tgt_out != PAD_ID).sum())


def collate(items: Sequence[tuple[int, list[int], list[int]]]) -> Batch:
    """Items of a `Seq2SeqDataset` -> one padded `Batch`."""
    index = [i for i, _, _ in items]
    arrays = make_numpy_batch([s for _, s, _ in items], [t for _, _, t in items])
    return Batch(src=torch.from_numpy(arrays["src"]), tgt_in=torch.from_numpy(arrays["tgt_in"]),
                 tgt_out=torch.from_numpy(arrays["tgt_out"]), src_mask=torch.from_numpy(arrays["src_mask"]),
                 index=torch.tensor(index, dtype=torch.int64))


class BucketBatchSampler(Sampler):
    """Batches of similar length (see `bucket_batches`), reproducible from (seed, epoch), resumable.

    `batch_size` is per process; with `num_replicas` processes the global batch has
    batch_size * num_replicas sequences and process `rank` yields its contiguous slice of each.
    `set_epoch(e, skip=n)` picks the epoch's order; its next iteration starts after the first n batches (how a
    resumed run continues mid-epoch).
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False, num_replicas: int = 1, rank: int = 0, pool: int = 50):
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank: expected 0 <= rank < num_replicas={num_replicas}, got {rank}")
        self.lengths = np.asarray(lengths)
        self.batch_size, self.shuffle, self.seed, self.drop_last = batch_size, shuffle, seed, drop_last
        self.num_replicas, self.rank, self.pool = num_replicas, rank, pool
        self.epoch = 0
        self.skip = 0

    def set_epoch(self, epoch: int, skip: int = 0) -> None:
        self.epoch, self.skip = epoch, skip

    def _global_batches(self) -> list[list[int]]:
        batches = bucket_batches(self.lengths, self.batch_size * self.num_replicas, self.shuffle, self.seed,
                                 self.epoch, self.pool, self.drop_last)
        # every process needs at least one sequence of every global batch
        return [b for b in batches if len(b) >= self.num_replicas]

    def __iter__(self):
        skip, self.skip = self.skip, 0
        for batch in self._global_batches()[skip:]:
            yield [int(i) for i in np.array_split(np.asarray(batch), self.num_replicas)[self.rank]]

    def __len__(self) -> int:
        return len(self._global_batches())


def make_dataloader(pairs: Sequence[tuple[str, str]] | Seq2SeqDataset, src_vocab: Vocab | None = None,
                    tgt_vocab: Vocab | None = None, batch_size: int = 64, shuffle: bool = True, seed: int = 0,
                    max_len: int | None = None, num_workers: int = 0, drop_last: bool = False,
                    rank: int = 0, world_size: int = 1, pin_memory: bool = False) -> DataLoader:
    """A `DataLoader` of `Batch`es bucketed by length (see `BucketBatchSampler`).

    Pass raw string pairs with both vocabularies, or an already encoded `Seq2SeqDataset`. Training loaders
    shuffle (reproducibly from `seed` and the epoch); evaluation loaders should pass `shuffle=False`.
    """
    if isinstance(pairs, Seq2SeqDataset):
        dataset = pairs
    else:
        if src_vocab is None or tgt_vocab is None:
            raise ValueError("src_vocab/tgt_vocab: expected two Vocab objects when `pairs` are strings, got None")
        dataset = Seq2SeqDataset(pairs, src_vocab, tgt_vocab, max_len)
    sampler = BucketBatchSampler(dataset.lengths, batch_size, shuffle, seed, drop_last, world_size, rank)
    # a private generator: starting an epoch's iterator then draws its worker seed from it, not from torch's
    # global RNG, so the dropout masks of a resumed run do not depend on when the iterator was created
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, num_workers=num_workers,
                      pin_memory=pin_memory, generator=torch.Generator().manual_seed(seed))
