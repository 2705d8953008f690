"""Bucketing, padding masks, DataLoader reproducibility, NumPy batches for the NumPy trainer."""
import numpy as np
import pytest

from transformer_course.data.batching import (
    Seq2SeqDataset,
    bucket_batches,
    make_numpy_batch,
    numpy_batches,
    pad_sequences,
)
from transformer_course.data.tasks import reverse_task
from transformer_course.data.vocab import BOS_ID, EOS_ID, PAD_ID

try:  # the torch DataLoader; the NumPy batching tests run without PyTorch
    import torch

    from transformer_course.data.loader import Batch, BucketBatchSampler, make_dataloader
except ModuleNotFoundError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason='needs PyTorch: pip install "transformer-course[torch]"')


@pytest.fixture(scope="module")
def data():
    d = reverse_task(n_train=300, n_val=20, n_test=20, max_len=12, seed=0)
    return d, *d.build_vocabs()


def test_pad_and_masks():
    arrays = make_numpy_batch([[5, 6, EOS_ID], [7, EOS_ID]], [[BOS_ID, 8, EOS_ID], [BOS_ID, EOS_ID]])
    assert arrays["src"].tolist() == [[5, 6, EOS_ID], [7, EOS_ID, PAD_ID]]
    assert arrays["src_mask"].shape == (2, 1, 3)
    assert arrays["src_mask"][1, 0].tolist() == [True, True, False]
    assert arrays["tgt_in"].tolist() == [[BOS_ID, 8], [BOS_ID, EOS_ID]]
    assert arrays["tgt_out"].tolist() == [[8, EOS_ID], [EOS_ID, PAD_ID]]
    assert pad_sequences([[1], [1, 2, 3]]).dtype == np.int64


def test_bucketing_covers_everything_once_and_groups_lengths():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 50, size=1000)
    batches = bucket_batches(lengths, 32, shuffle=True, seed=0, epoch=0)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(1000))
    spread = np.mean([np.ptp(lengths[b]) for b in batches])
    random_spread = np.mean([np.ptp(lengths[rng.permutation(1000)[:32]]) for _ in range(20)])
    assert spread < random_spread / 4                     # buckets pad far less than random batches


def test_bucketing_reproducible_by_seed_and_epoch():
    lengths = np.arange(200) % 17
    assert bucket_batches(lengths, 8, seed=1, epoch=2) == bucket_batches(lengths, 8, seed=1, epoch=2)
    assert bucket_batches(lengths, 8, seed=1, epoch=2) != bucket_batches(lengths, 8, seed=1, epoch=3)
    assert bucket_batches(lengths, 8, seed=1, epoch=2) != bucket_batches(lengths, 8, seed=2, epoch=2)


@needs_torch
def test_dataloader_reproducible(data):
    d, sv, tv = data
    def first_epoch():
        return [b.src.tolist() for b in make_dataloader(d.train, sv, tv, batch_size=16, seed=5)]
    assert first_epoch() == first_epoch()
    batch = next(iter(make_dataloader(d.train, sv, tv, batch_size=16, seed=5)))
    assert isinstance(batch, Batch) and batch.src.dtype == torch.int64
    assert torch.equal(batch.src_mask, (batch.src != PAD_ID)[:, None, :])
    assert batch.n_tokens == int((batch.tgt_out != PAD_ID).sum())


@needs_torch
def test_sampler_skip_resumes_mid_epoch(data):
    d, sv, tv = data
    loader = make_dataloader(d.train, sv, tv, batch_size=16, seed=5)
    loader.batch_sampler.set_epoch(1)
    full = [b.index.tolist() for b in loader]
    loader.batch_sampler.set_epoch(1, skip=4)
    assert [b.index.tolist() for b in loader] == full[4:]
    assert [b.index.tolist() for b in loader] == full     # skip applies once


@needs_torch
def test_replicas_partition_the_global_batch():
    lengths = np.arange(100) % 9
    single = list(BucketBatchSampler(lengths, 8, seed=0))
    ranks = [list(BucketBatchSampler(lengths, 4, seed=0, num_replicas=2, rank=r)) for r in (0, 1)]
    assert [a + b for a, b in zip(*ranks)] == single


@needs_torch
def test_numpy_batches_match_torch_batches(data):
    d, sv, tv = data
    ds = Seq2SeqDataset(d.train, sv, tv)
    np_batches = list(numpy_batches(ds, batch_size=16, seed=3))
    torch_batches = list(make_dataloader(ds, batch_size=16, seed=3))
    assert len(np_batches) == len(torch_batches)
    for a, b in zip(np_batches, torch_batches):
        assert np.array_equal(a["src"], b.src.numpy()) and np.array_equal(a["tgt_out"], b.tgt_out.numpy())


def test_numpy_batches_tuples_and_epochs(data):
    d, sv, tv = data
    ds = Seq2SeqDataset(d.train, sv, tv)
    per_epoch = len(bucket_batches(ds.lengths, 16))
    batches = list(numpy_batches(ds, batch_size=16, epochs=2, as_tuples=True))
    assert len(batches) == 2 * per_epoch
    src, tgt_in, tgt_out = batches[0]
    assert src.dtype == np.int64 and tgt_in.shape == tgt_out.shape
    forever = numpy_batches(ds, batch_size=16, epochs=None)
    assert len([next(forever) for _ in range(3 * per_epoch)]) == 3 * per_epoch


def test_max_len_filter_and_errors(data):
    d, sv, tv = data
    ds = Seq2SeqDataset(d.train, sv, tv, max_len=6)
    assert ds.n_dropped > 0 and max(len(s) for s in ds.sources) <= 6
    with pytest.raises(ValueError, match="pairs"):
        Seq2SeqDataset([], sv, tv)
    with pytest.raises(ValueError, match="batch_size"):
        bucket_batches([1, 2], 0)


@needs_torch
def test_dataloader_without_vocabularies_is_a_clear_error(data):
    with pytest.raises(ValueError, match="src_vocab"):
        make_dataloader(data[0].train)
