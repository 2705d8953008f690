"""Tokenisers and vocabularies: special ids, round trips, save/load, bad input."""
import pytest

from transformer_course.data.vocab import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIALS,
    UNK_ID,
    CharTokenizer,
    Vocab,
    WordTokenizer,
    get_tokenizer,
)


def test_special_ids_are_fixed():
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    vocab = Vocab.build(["b a", "a"])
    assert vocab.itos[:4] == list(SPECIALS)
    assert vocab.itos[4:] == ["a", "b"]          # most frequent first, ties alphabetical


@pytest.mark.parametrize("text", ["quatre-vingt-dix-sept", "one thousand, two hundred and one",
                                  "l'eau est froide.", "Où est la gare?", "a"])
def test_word_tokenizer_round_trip(text):
    tok = WordTokenizer()
    assert tok.detokenize(tok.tokenize(text)) == text


def test_word_tokenizer_splits_hyphens_and_punctuation():
    assert WordTokenizer().tokenize("ninety-seven, ok.") == ["ninety", "-", "seven", ",", "ok", "."]


@pytest.mark.parametrize("text", ["siebenundneunzig", "a b  c", "", "äöü ß"])
def test_char_tokenizer_round_trip(text):
    tok = CharTokenizer()
    assert tok.detokenize(tok.tokenize(text)) == text


@pytest.mark.parametrize("level,texts", [("word", ["twenty-one", "deux cent un", "vingt et un"]),
                                         ("char", ["abc", "cab", "siebenundneunzig"])])
def test_encode_decode_round_trip(level, texts):
    vocab = Vocab.build(texts, tokenizer=level)
    for text in texts:
        ids = vocab.encode(text, add_bos=True, add_eos=True)
        assert ids[0] == BOS_ID and ids[-1] == EOS_ID
        assert vocab.decode(ids) == text
        assert vocab.decode(ids + [PAD_ID, PAD_ID]) == text


def test_unknown_tokens_map_to_unk():
    vocab = Vocab.build(["a b"])
    assert vocab.encode("a z", add_eos=False) == [vocab.token_to_id("a"), UNK_ID]
    assert vocab.decode([vocab.token_to_id("a"), UNK_ID]) == "a <unk>"


def test_save_load_round_trip(tmp_path):
    vocab = Vocab.build(["quatre-vingt-dix-sept", "zéro"], tokenizer="word")
    vocab.save(tmp_path / "v.json")
    loaded = Vocab.load(tmp_path / "v.json")
    assert loaded == vocab and loaded.tokenizer.name == "word"
    assert Vocab.from_dict(vocab.to_dict()) == vocab


def test_bad_input():
    with pytest.raises(ValueError, match="tokenizer"):
        get_tokenizer("bpe")
    with pytest.raises(ValueError, match="duplicates"):
        Vocab(list(SPECIALS) + ["a", "a"])
    with pytest.raises(ValueError, match="first four tokens"):
        Vocab.from_dict({"tokenizer": "word", "tokens": ["a", "b"]})
    with pytest.raises(ValueError, match="index"):
        Vocab.build(["a"]).decode([99])


def test_diff_describes_first_difference():
    a, b = Vocab.build(["a b"]), Vocab.build(["a c"])
    assert a.diff(a) is None
    assert "id 5" in a.diff(b)
