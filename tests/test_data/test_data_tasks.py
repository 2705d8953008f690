"""Offline tasks: toy tasks and number translation split by number."""
from collections import Counter

import pytest

from transformer_course.data.tasks import (
    EVERYDAY_NUMBERS,
    copy_task,
    make_task,
    number_to_words,
    number_translation,
    reverse_task,
    sort_task,
)


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
    data = number_translation("en", "fr", max_number=999, n_val=40, n_test=80, seed=0)
    assert len(data.test) == 80 and len(data.val) == 40
    train_src = {s for s, _ in data.train}
    for src, _ in data.test + data.val:
        assert src not in train_src                  # no held-out number was trained on
    numbers = {number_to_words(n, "en"): n for n in range(1000)}
    assert sorted({numbers[s] for s, _ in data.train + data.val + data.test}) == list(range(1000))
    assert data.src_tokenizer == "word" and data.tgt_tokenizer == "word"
    assert data.info["split"] == 2


def test_everyday_numbers_are_always_trained_on_and_reported_as_coverage():
    assert len(EVERYDAY_NUMBERS) == 119 and len(set(EVERYDAY_NUMBERS)) == 119
    for seed in (0, 1, 2):
        data = number_translation("en", "fr", max_number=9999, seed=seed)
        train_src = {s for s, _ in data.train}
        assert {s for s, _ in data.coverage} <= train_src
        assert ("zero", "zéro") in data.coverage and ("one hundred", "cent") in data.coverage
        assert ("four thousand", "quatre mille") in data.coverage and len(data.coverage) == 119


def test_held_out_numbers_cover_every_magnitude():
    data = number_translation("en", "digits", max_number=19_999, seed=0)
    counts = Counter(data.strata["test"])
    assert sorted(counts) == ["3 digits", "4 digits", "5 digits"]
    assert min(counts.values()) >= 80 and sum(counts.values()) == len(data.test) == 1000
    assert len(data.strata["val"]) == len(data.val)
    # a random split of 0..19999 would hold out about 45 three-digit numbers out of 1000
    assert counts["3 digits"] == 89                  # 10% of the 891 that are not everyday numbers


def test_small_groups_are_repeated_in_training():
    data = number_translation("en", "fr", max_number=9999, seed=0)
    everyday = set(data.coverage)
    share = sum(pair in everyday for pair in data.train) / len(data.train)
    assert 0.09 <= share <= 0.12                     # 119 of ~8,500 numbers would be 1.4%


def test_split_version_1_is_still_built_for_old_checkpoints():
    old = number_translation("en", "fr", max_number=999, split=1, seed=0)
    assert len(old.train) == 850 and len(old.test) == 100 and old.coverage == [] and old.strata == {}
    with pytest.raises(ValueError, match="split: expected a split version in"):
        number_translation(split=3)


def test_number_translation_size_knob_and_german_chars():
    data = number_translation("en", "de", max_number=999, n_val=5, n_test=10, n_train=200)
    assert len({s for s, _ in data.train}) == 200
    assert data.tgt_tokenizer == "char"              # German numbers are single words


def test_vocabs_built_from_train_split():
    data = number_translation("en", "fr", max_number=199)
    src_vocab, tgt_vocab = data.build_vocabs()
    assert "hundred" in src_vocab and "cent" in tgt_vocab


def test_bad_input():
    with pytest.raises(ValueError, match="task"):
        make_task("translate-everything")
    with pytest.raises(ValueError, match="src_lang"):
        number_translation("xx", "fr")
    with pytest.raises(ValueError, match=r"max_number: 0..99 holds 0 number"):
        number_translation(max_number=99)
    with pytest.raises(ValueError, match=r"n_test: the range 0..999 can hold out between 1 and 89"):
        number_translation(max_number=999, n_test=100)
    with pytest.raises(ValueError, match="n_train: expected between 109"):
        number_translation(max_number=999, n_train=50)
    with pytest.raises(ValueError, match="too many"):
        copy_task(n_train=100, n_val=0, n_test=0, min_len=1, max_len=2, alphabet="ab")
    with pytest.raises(ValueError, match="min_len"):
        reverse_task(min_len=5, max_len=2)
    with pytest.raises(ValueError, match="n_train"):
        copy_task(n_train=-1)
