"""More of the library under bad input: a corpus that is not UTF-8, sentences where pairs are expected,
vocabularies that do not fit the model, a batch where the greedy exercise expects one sequence, and encoder
memory of another dtype than the model's.

Each case asserts one clear exception that names the argument (or the file and line) and what was expected.
"""
import gzip

import numpy as np
import pytest
import torch

from transformer_course.config import get_preset
from transformer_course.data.corpora import CorpusError, load_tsv_corpus, read_parallel_files, read_tsv_pairs
from transformer_course.data.loader import make_dataloader
from transformer_course.exercises import ExerciseError
from transformer_course.exercises.decoder import check_greedy_decode
from transformer_course.torch.transformer import Transformer
from transformer_course.training.evaluate import evaluate, evaluate_pairs, translate


@pytest.fixture(scope="module")
def reverse():
    """A small reverse task, its vocabularies and a model built for them."""
    from transformer_course.data.tasks import reverse_task
    data = reverse_task(n_train=20, n_val=4, n_test=4, max_len=4, seed=0)
    sv, tv = data.build_vocabs()
    torch.manual_seed(0)
    model = Transformer(get_preset("tiny").replace(src_vocab_size=len(sv), tgt_vocab_size=len(tv)))
    return data, sv, tv, model.eval()


# -- a corpus file that is not UTF-8: the file, the line and the byte, as the command line says it for stdin --

@pytest.mark.parametrize("name, opener", [("corpus.tsv", open), ("corpus.tsv.gz", gzip.open)])
def test_a_corpus_that_is_not_utf8_names_file_line_and_byte(tmp_path, name, opener):
    path = tmp_path / name
    with opener(path, "wb") as f:
        f.write(b"Go.\tVa !\nHi.\tSalut !\n" + b"Caf\xe9.\tCaf\xe9 !\n")   # Latin-1, line 3
    for read in (read_tsv_pairs, load_tsv_corpus):
        with pytest.raises(CorpusError, match=rf"{name}:3: byte 3 \(0xe9\) is not valid UTF-8; save the file as "
                                              r"UTF-8$") as caught:
            read(path)
        assert isinstance(caught.value, ValueError) and caught.value.__cause__ is None


def test_parallel_files_that_are_not_utf8(tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\n", encoding="utf-8")
    (tmp_path / "a.fr").write_bytes(b"un\n" + b"\xff deux\n")
    with pytest.raises(CorpusError, match=r"a\.fr:2: byte 0 \(0xff\) is not valid UTF-8"):
        read_parallel_files(tmp_path / "a.en", tmp_path / "a.fr")


# -- make_dataloader: sentences where (source, target) pairs are expected -------------------------------------

@pytest.mark.parametrize("pairs, culprit", [
    (["abc", "cab"], r"pairs\[0\]: expected a \(source, target\) pair of strings, got str 'abc'"),
    (["ab", "ba"], r"pairs\[0\]: .* got str 'ab'"),                 # would unpack to the pair ('a', 'b')
    ([("abc", "cba"), "bca"], r"pairs\[1\]: .* got str 'bca'"),
    ([("abc", "cba", "x")], r"pairs\[0\]: .* got tuple \('abc', 'cba', 'x'\)"),
    ([("abc", 7)], r"pairs\[0\]: .* got tuple \('abc', 7\)"),
])
def test_make_dataloader_refuses_plain_sentences(reverse, pairs, culprit):
    _, sv, tv, _ = reverse
    with pytest.raises(TypeError, match=culprit):
        make_dataloader(pairs, sv, tv)


# -- vocabularies that do not fit the model ---------------------------------------------------------------------

@pytest.mark.parametrize("side", ["src_vocab", "tgt_vocab"])
def test_vocabularies_of_another_size_than_the_model(reverse, side):
    from transformer_course.data.vocab import Vocab
    data, sv, tv, model = reverse
    bigger = Vocab.build(["abcdefghijklmnopqrstuvwxyz"], "char")
    assert len(bigger) > max(len(sv), len(tv))
    vocabs = {"src_vocab": sv, "tgt_vocab": tv, side: bigger}
    size = model.config.src_vocab_size if side == "src_vocab" else model.config.tgt_vocab_size
    message = (rf"{side}: expected the model's vocabulary of {size} tokens \(config\.{side}_size\), got a "
               rf"vocabulary of {len(bigger)} tokens")
    with pytest.raises(ValueError, match=message):
        translate(model, ["abc"], vocabs["src_vocab"], vocabs["tgt_vocab"])
    with pytest.raises(ValueError, match=message):
        evaluate_pairs(model, data.val, vocabs["src_vocab"], vocabs["tgt_vocab"])
    if side == "tgt_vocab":
        with pytest.raises(ValueError, match=message):
            evaluate(model, make_dataloader(data.val, sv, tv, shuffle=False), bigger)


# -- the greedy-decoding exercise given a batch instead of one sequence ----------------------------------------

def greedy_tokens(next_logits, bos_id, eos_id, max_len):
    """The right answer, a list of ids; the cases below return it in the wrong form."""
    prefix = [bos_id]
    for _ in range(max_len):
        prefix.append(int(np.argmax(next_logits(prefix))))
        if prefix[-1] == eos_id:
            break
    return prefix[1:]


@pytest.mark.parametrize("answer, what", [
    (lambda tokens: np.array([tokens]), r"a ndarray of shape \(1, \d+\)"),      # a batch of one row
    (lambda tokens: torch.tensor([tokens]), r"a Tensor of shape \(1, \d+\)"),
    (lambda tokens: [tokens], r"\[\[\d"),
    (lambda tokens: [t + 0.5 for t in tokens], r"\[\d\.5"),
])
def test_greedy_check_given_a_batch_says_what_it_expects(answer, what):
    def greedy(next_logits, bos_id, eos_id, max_len):
        return answer(greedy_tokens(next_logits, bos_id, eos_id, max_len))
    with pytest.raises(ExerciseError, match=rf"greedy\(\.\.\.\) returned {what}.*; expected a flat list of token "
                                            r"ids such as \[5, 3, 2\]") as caught:
        check_greedy_decode(greedy)
    assert caught.value.__cause__ is None                      # feedback, not a crash inside the check


# -- Transformer.decode: memory of another dtype than the model's ----------------------------------------------

def test_decode_refuses_memory_of_another_dtype(reverse):
    _, _, _, model = reverse
    src = torch.tensor([[4, 5, 6, 2]])
    bos = torch.tensor([[1]])
    with torch.no_grad():
        memory = model.encode(src)                             # (1, 4, D) float32
        message = (r"^memory: expected a tensor of the model's dtype torch\.float32 \(or float16/bfloat16 under "
                   r"autocast\), got torch\.float64; convert it with memory\.to\(torch\.float32\)$")
        with pytest.raises(TypeError, match=message):
            model.decode(bos, memory.double())
        with pytest.raises(TypeError, match=message):
            model.decode(bos, memory.double(), cache=model.new_cache())
        assert model.decode(bos, memory).dtype == torch.float32  # the model's own memory still decodes
