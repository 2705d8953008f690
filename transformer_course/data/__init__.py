"""Data: tokenisers (BPE included) and vocabularies, offline tasks, corpus loaders (the Ding dictionary's
sentences, Tatoeba/Anki files, Multi30k), batching; `spec`: a task as the dict a checkpoint saves (`task_spec`,
`load_task`).

`bpe`, `vocab`, `tasks`, `corpora`, `ding` and `batching` need only NumPy (`bpe.learn_bpe_fast` needs
Hugging Face `tokenizers`); `loader` (the torch `DataLoader`) imports torch,
so its names are loaded on first use.
"""
from .batching import Seq2SeqDataset, bucket_batches, make_numpy_batch, numpy_batches, pad_sequences
from .bpe import BPE, learn_bpe, learn_bpe_fast
from .corpora import CorpusError, download, load_multi30k, load_tsv_corpus, read_tsv_pairs
from .ding import load_ding, read_ding_pairs
from .spec import load_task, task_spec
from .tasks import ParallelData, copy_task, make_task, number_translation, reverse_task, sort_task
from .vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID, CharTokenizer, Vocab, WordTokenizer, get_tokenizer

_LAZY = {"Batch", "BucketBatchSampler", "collate", "make_dataloader"}

__all__ = ["Seq2SeqDataset", "bucket_batches", "make_numpy_batch", "numpy_batches", "pad_sequences",
           "BPE", "learn_bpe", "learn_bpe_fast", "load_ding", "read_ding_pairs",
           "CorpusError", "download", "load_multi30k", "load_tsv_corpus", "read_tsv_pairs",
           "load_task", "task_spec",
           "ParallelData", "copy_task", "make_task", "number_translation", "reverse_task", "sort_task",
           "BOS_ID", "EOS_ID", "PAD_ID", "UNK_ID", "CharTokenizer", "Vocab", "WordTokenizer", "get_tokenizer",
           *sorted(_LAZY)]


def __getattr__(name):
    if name in _LAZY:
        from . import loader
        return getattr(loader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
