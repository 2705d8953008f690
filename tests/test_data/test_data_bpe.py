"""Byte-pair encoding: the course's learner against hand-worked merges and against Hugging Face `tokenizers`."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transformer_course.data.bpe import BPE, WORD_START, learn_bpe, learn_bpe_fast, merge_pair, pretokenize
from transformer_course.data.tasks import number_to_words
from transformer_course.data.vocab import UNK_ID, Vocab, get_tokenizer

W = WORD_START

# A text the project writes for these tests: number words in four languages (many shared pieces, many ties
# between equally frequent pairs) and a few sentences of its own.
SENTENCES = [
    "The cat sat on the mat, and the dog sat on the log.",
    "Die Katze sitzt auf der Matte, und der Hund sitzt auf dem Baumstamm.",
    "Lower the lowest lower branch; the newest and widest boats are slower.",
    "Wir lernen, wie ein Transformer Sätze übersetzt: Wort für Wort, Stück für Stück.",
    "Ninety-nine bottles stand on the wall; quatre-vingt-dix-neuf bouteilles sont là.",
]
CORPUS = SENTENCES + [number_to_words(n, lang) for n in range(0, 400, 3) for lang in ("en", "fr", "de", "es")]
TEST_TEXT = ["The newest cat sits on the lowest wall.", "Der Hund übersetzt neunundneunzig Wörter.",
             "cinq cent quatre-vingt-dix-sept", "zweihundertelf", "a  double space", "Unknown: ¿ ☃ !"]


def test_pretokenize_marks_each_word_with_the_space_before_it():
    assert pretokenize("Dogs bark.") == [f"{W}Dogs", f"{W}bark."]
    assert pretokenize("a  b") == [f"{W}a", W, f"{W}b"]            # two spaces leave a word of its own
    assert pretokenize(" lead") == [f"{W}lead"]                      # a leading space is not doubled
    assert pretokenize("") == []
    with pytest.raises(TypeError, match="text: expected a string"):
        pretokenize(None)


@given(st.text(alphabet=st.sampled_from("ab .,é\t"), max_size=30))
def test_pieces_put_back_together_give_the_text(text):
    bpe = learn_bpe(["ab ba. é,a", "b a"], vocab_size=12)
    expected = text[1:] if text.startswith(" ") else text           # only a leading space is not kept
    assert bpe.detokenize(bpe.tokenize(text)) == expected


def test_merge_pair_merges_left_to_right_without_overlap():
    assert merge_pair(list("aaa"), ("a", "a")) == ["aa", "a"]
    assert merge_pair(list("aaaa"), ("a", "a")) == ["aa", "aa"]
    assert merge_pair(["x", "ab", "c"], ("ab", "c")) == ["x", "abc"]


def test_learn_bpe_makes_the_merges_worked_out_by_hand():
    # "low" x5, "lower" x2, "newest" x6, "widest" x3 (the example of Sennrich et al. 2016), each word as ▁word.
    # By hand: e+s and s+t occur 9 times; e comes before s in the vocabulary's order, so (e, s) first, then
    # (es, t) with 9. Then (▁, l), (l, o) and (o, w) occur 7 times: l comes first among the left symbols (▁ sorts
    # after every letter); then (▁, lo) and (lo, w), 7 each: ▁ is a character, lo a merge, so ▁ comes first.
    text = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
    bpe = learn_bpe(text, vocab_size=4 + 11 + 5)       # specials, 11 characters (d e i l n o r s t w ▁), 5 merges
    assert bpe.merges == [("e", "s"), ("es", "t"), ("l", "o"), (W, "lo"), (f"{W}lo", "w")]
    assert bpe.vocabulary()[4:] == [*"deilnorstw", W, "es", "est", "lo", f"{W}lo", f"{W}low"]
    assert bpe.tokenize("lowest") == [f"{W}low", "est"]


def test_learning_stops_when_no_pair_is_left():
    bpe = learn_bpe(["ab ab"], vocab_size=100)
    assert bpe.vocabulary()[-1] == f"{W}ab" and len(bpe.merges) == 2


def _library_tokenizer(bpe: BPE):
    """A Hugging Face tokenizer that applies `bpe`'s merges (its own BPE model, not the course's code)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocabulary = bpe.vocabulary()
    tokenizer = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(vocabulary)}, merges=bpe.merges,
                                     unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=W, prepend_scheme="always", split=True)
    return tokenizer


@pytest.mark.parametrize("vocab_size", [60, 150, 400])
def test_the_course_bpe_and_the_library_learn_the_same_merges_and_encode_alike(vocab_size):
    pytest.importorskip("tokenizers")
    ours, library = learn_bpe(CORPUS, vocab_size), learn_bpe_fast(CORPUS, vocab_size)
    assert len(ours.vocabulary()) == vocab_size
    assert ours.merges == library.merges                               # the same merges, in the same order
    assert ours.vocabulary() == library.vocabulary()
    vocab, tokenizer = Vocab.from_bpe(ours), _library_tokenizer(ours)
    for text in TEST_TEXT:
        encoded = tokenizer.encode(text)
        assert vocab.encode(text, add_eos=False) == encoded.ids
        assert [t if t in vocab else "<unk>" for t in vocab.tokenize(text)] == encoded.tokens
    assert UNK_ID in vocab.encode("☃")                                 # an unseen character is <unk> in both


def test_a_bpe_vocabulary_saves_and_loads_with_its_merges(tmp_path):
    vocab = Vocab.from_bpe(learn_bpe(CORPUS, 120))
    vocab.save(tmp_path / "v.json")
    loaded = Vocab.load(tmp_path / "v.json")
    assert loaded == vocab and loaded.tokenizer == vocab.tokenizer
    assert loaded.encode("quatre-vingt-dix-sept") == vocab.encode("quatre-vingt-dix-sept")
    other = Vocab.from_bpe(learn_bpe(CORPUS, 121))
    assert vocab.diff(other) is not None


def test_bad_bpe_arguments_are_named():
    with pytest.raises(ValueError, match="vocab_size: expected an integer of at least 5"):
        learn_bpe(["ab"], vocab_size=3)
    with pytest.raises(ValueError, match="max_size: a BPE vocabulary needs its size"):
        Vocab.build(["ab"], "bpe")
    with pytest.raises(ValueError, match="tokenizer: 'bpe' is learned from text"):
        get_tokenizer("bpe")
    with pytest.raises(ValueError, match="merges: expected pairs of two non-empty strings"):
        BPE([("a", "")], alphabet=["a"])
    bpe = learn_bpe(["ab"], 10)
    with pytest.raises(ValueError, match="tokens: a BPE vocabulary's tokens are its BPE's vocabulary"):
        Vocab(bpe.vocabulary()[:-1], tokenizer=bpe)
