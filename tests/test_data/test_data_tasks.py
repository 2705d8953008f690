"""Offline tasks: toy tasks and number translation split by number."""
import pytest

from transformer_course.data.tasks import (copy_task, make_task, number_to_words, number_translation,
                                           reverse_task, sort_task)


def test_toy_tasks_transform_and_lengths():
    for task, fn in ((copy_task, lambda s: s), (reverse_task, lambda s: s[::-1]),
                     (sort_task, lambda s: "".join(sorted(s)))):
        data = task(n_train=50, n_val=10, n_test=10, min_len=2, max_len=6, alphabet="abcdef", seed=1)
        assert (len(data.train), len(data.val), len(data.test)) == (50, 10, 10)
        for src, tgt in data.train + data.val + data.test:
            assert 2 <= len(src) <= 6 and set(src) <= set("abcdef")
            assert tgt == fn(src)
        train_sources = {s for s, _ in data.train}
        assert not train_sources & {s for s, _ in data.test + data.val}   # held-out strings are unseen
        assert data.src_tokenizer == data.tgt_tokenizer == "char"


def test_sort_follows_alphabet_order():
    data = sort_task(n_train=20, n_val=0, n_test=0, alphabet="zyx", max_len=4)
    assert all(t == "".join(sorted(s, key="zyx".index)) for s, t in data.train)


def test_tasks_are_reproducible():
    assert copy_task(n_train=20, seed=3).train == copy_task(n_train=20, seed=3).train
    assert copy_task(n_train=20, seed=3).train != copy_task(n_train=20, seed=4).train


def test_number_translation_examples():
    assert number_to_words(97, "fr") == "quatre-vingt-dix-sept"
    assert number_to_words(97, "de") == "siebenundneunzig"
    assert number_to_words(97, "en") == "ninety-seven"
    assert number_to_words(1999, "digits") == "1 9 9 9"


def test_number_translation_split_by_number():
    data = number_translation("en", "fr", max_number=999, n_val=50, n_test=100, seed=0)
    assert len(data.train) == 1000 - 150 and len(data.test) == 100 and len(data.val) == 50
    train_src = {s for s, _ in data.train}
    for src, _ in data.test + data.val:
        assert src not in train_src                  # no held-out number was trained on
    numbers = {number_to_words(n, "en"): n for n in range(1000)}
    assert sorted(numbers[s] for s, _ in data.train + data.val + data.test) == list(range(1000))
    assert data.src_tokenizer == "word" and data.tgt_tokenizer == "word"


def test_number_translation_size_knob_and_german_chars():
    data = number_translation("en", "de", max_number=99, n_val=5, n_test=10, n_train=40)
    assert len(data.train) == 40
    assert data.tgt_tokenizer == "char"              # German numbers are single words


def test_vocabs_built_from_train_split():
    data = number_translation("en", "fr", max_number=199, n_val=10, n_test=10)
    src_vocab, tgt_vocab = data.build_vocabs()
    assert "hundred" in src_vocab and "cent" in tgt_vocab


def test_bad_input():
    with pytest.raises(ValueError, match="task"):
        make_task("translate-everything")
    with pytest.raises(ValueError, match="src_lang"):
        number_translation("xx", "fr")
    with pytest.raises(ValueError, match="max_number"):
        number_translation(max_number=10, n_val=5, n_test=6)
    with pytest.raises(ValueError, match="too many"):
        copy_task(n_train=100, n_val=0, n_test=0, min_len=1, max_len=2, alphabet="ab")
    with pytest.raises(ValueError, match="min_len"):
        reverse_task(min_len=5, max_len=2)
    with pytest.raises(ValueError, match="n_train"):
        copy_task(n_train=-1)
