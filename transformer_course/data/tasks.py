"""Tasks that need no network: copy, reverse, sort, and translating numbers written in words.

Every task returns a `ParallelData`: train/val/test lists of (source, target) strings, plus the tokeniser
that suits it. Held-out examples never occur in training: the toy tasks draw distinct strings, and number
translation splits the *numbers* (so "ninety-seven" is either in training or in the test set, never both).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .vocab import Vocab

__all__ = ["ParallelData", "TASKS", "make_task", "copy_task", "reverse_task", "sort_task",
           "number_translation", "number_to_words", "NUMBER_LANGUAGES", "default_split_sizes"]

Pairs = list[tuple[str, str]]
NUMBER_LANGUAGES = ("en", "fr", "de", "es", "digits")


@dataclass(frozen=True)
class ParallelData:
    """(source, target) string pairs split three ways, and the tokeniser ("char" or "word") each side needs."""

    train: Pairs
    val: Pairs
    test: Pairs
    src_tokenizer: str = "word"
    tgt_tokenizer: str = "word"
    name: str = ""
    info: dict = field(default_factory=dict)   # how it was made (arguments), for checkpoints and reports

    def build_vocabs(self, min_freq: int = 1) -> tuple[Vocab, Vocab]:
        """Source and target vocabularies built from the *training* split only."""
        return (Vocab.build((s for s, _ in self.train), self.src_tokenizer, min_freq),
                Vocab.build((t for _, t in self.train), self.tgt_tokenizer, min_freq))

    def split(self, name: str) -> Pairs:
        if name not in ("train", "val", "test"):
            raise ValueError(f"split: expected 'train', 'val' or 'test', got {name!r}")
        return getattr(self, name)


def default_split_sizes(total: int) -> tuple[int, int]:
    """(n_val, n_test) for `total` distinct items: 5% (at most 500) and 10% (at most 1000), each at least 1."""
    return min(500, max(1, total // 20)), min(1000, max(1, total // 10))


def _check_sizes(**sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name}: expected an int >= 0, got {value!r}")


def _distinct_strings(n: int, min_len: int, max_len: int, alphabet: str, rng: np.random.Generator) -> list[str]:
    """`n` distinct random strings with lengths uniform in [min_len, max_len]."""
    if not 1 <= min_len <= max_len:
        raise ValueError(f"min_len/max_len: expected 1 <= min_len <= max_len, got {min_len}, {max_len}")
    if len(alphabet) < 2 or len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet: expected at least 2 distinct characters, got {alphabet!r}")
    possible = sum(len(alphabet) ** k for k in range(min_len, max_len + 1))
    if n > possible // 2:
        raise ValueError(f"n_train + n_val + n_test = {n} is too many distinct strings of length "
                         f"{min_len}..{max_len} over {len(alphabet)} symbols (at most {possible // 2}); "
                         "raise max_len or enlarge the alphabet")
    symbols = np.array(list(alphabet))
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < n:
        length = int(rng.integers(min_len, max_len + 1))
        s = "".join(symbols[rng.integers(0, len(symbols), size=length)])
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def _toy_task(name: str, transform, n_train: int, n_val: int, n_test: int, min_len: int, max_len: int,
              alphabet: str, seed: int) -> ParallelData:
    _check_sizes(n_train=n_train, n_val=n_val, n_test=n_test)
    rng = np.random.default_rng(seed)
    strings = _distinct_strings(n_train + n_val + n_test, min_len, max_len, alphabet, rng)
    pairs = [(s, transform(s)) for s in strings]
    info = dict(n_train=n_train, n_val=n_val, n_test=n_test, min_len=min_len, max_len=max_len,
                alphabet=alphabet, seed=seed)
    return ParallelData(train=pairs[:n_train], val=pairs[n_train:n_train + n_val],
                        test=pairs[n_train + n_val:], src_tokenizer="char", tgt_tokenizer="char", name=name,
                        info=info)


def copy_task(n_train: int = 10_000, n_val: int = 500, n_test: int = 500, min_len: int = 1, max_len: int = 10,
              alphabet: str = "abcdefghij", seed: int = 0) -> ParallelData:
    """Output = input ("abc" -> "abc"): the smallest task that needs attention to positions."""
    return _toy_task("copy", lambda s: s, n_train, n_val, n_test, min_len, max_len, alphabet, seed)


def reverse_task(n_train: int = 10_000, n_val: int = 500, n_test: int = 500, min_len: int = 1,
                 max_len: int = 10, alphabet: str = "abcdefghij", seed: int = 0) -> ParallelData:
    """Output = input reversed ("abc" -> "cba"): attention must look at the mirrored position."""
    return _toy_task("reverse", lambda s: s[::-1], n_train, n_val, n_test, min_len, max_len, alphabet, seed)


def sort_task(n_train: int = 10_000, n_val: int = 500, n_test: int = 500, min_len: int = 1, max_len: int = 10,
              alphabet: str = "abcdefghij", seed: int = 0) -> ParallelData:
    """Output = input's symbols sorted by their rank in `alphabet` ("cab" -> "abc")."""
    rank = {c: i for i, c in enumerate(alphabet)}
    return _toy_task("sort", lambda s: "".join(sorted(s, key=rank.__getitem__)), n_train, n_val, n_test,
                     min_len, max_len, alphabet, seed)


def number_to_words(n: int, lang: str) -> str:
    """`n` written out in `lang` ("en", "fr", "de", "es" via num2words; "digits": "1 9 9 9")."""
    if lang not in NUMBER_LANGUAGES:
        raise ValueError(f"lang: expected one of {NUMBER_LANGUAGES}, got {lang!r}")
    if lang == "digits":
        return " ".join(str(n))
    from num2words import num2words  # imported here: only this task needs it
    return num2words(n, lang=lang)


def number_translation(src_lang: str = "en", tgt_lang: str = "fr", max_number: int = 9999,
                       min_number: int = 0, n_val: int | None = None, n_test: int | None = None,
                       n_train: int | None = None, seed: int = 0) -> ParallelData:
    """Numbers in words, translated: ("ninety-seven" -> "quatre-vingt-dix-sept"), split by number.

    The numbers min_number..max_number are shuffled once with `seed`; the first `n_test` are the test set,
    the next `n_val` the validation set and the rest (or `n_train` of them) the training set, so no test
    number is ever trained on (defaults: 10% of the range, at most 1000, for test and 5%, at most 500, for
    validation). `max_number` is the size knob: 99 is a quick toy, 9999 is a real task
    (French "quatre-vingts" vs "quatre-vingt-un", "deux cents" vs "deux cent un", German unit-before-ten).
    Words are the tokens, except for German, which writes a number as one word and is tokenised by character.
    """
    for name, lang in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        if lang not in NUMBER_LANGUAGES:
            raise ValueError(f"{name}: expected one of {NUMBER_LANGUAGES}, got {lang!r}")
    if src_lang == tgt_lang:
        raise ValueError(f"src_lang/tgt_lang: expected two different languages, got {src_lang!r} twice")
    _check_sizes(min_number=min_number, max_number=max_number)
    total = max_number - min_number + 1
    default_val, default_test = default_split_sizes(total)
    n_val = default_val if n_val is None else n_val
    n_test = default_test if n_test is None else n_test
    _check_sizes(n_val=n_val, n_test=n_test)
    if total < 1 or n_val + n_test >= total:
        raise ValueError(f"max_number: the range {min_number}..{max_number} holds {max(total, 0)} numbers, "
                         f"not enough for n_val={n_val} + n_test={n_test} + a training set")
    numbers = np.random.default_rng(seed).permutation(np.arange(min_number, max_number + 1))
    test, val, train = numbers[:n_test], numbers[n_test:n_test + n_val], numbers[n_test + n_val:]
    if n_train is not None:
        _check_sizes(n_train=n_train)
        if n_train > len(train):
            raise ValueError(f"n_train: expected at most {len(train)} (the numbers left after val/test), got {n_train}")
        train = train[:n_train]

    def pairs(ns) -> Pairs:
        return [(number_to_words(int(n), src_lang), number_to_words(int(n), tgt_lang)) for n in ns]

    info = dict(src_lang=src_lang, tgt_lang=tgt_lang, max_number=max_number, min_number=min_number,
                n_val=n_val, n_test=n_test, n_train=n_train, seed=seed)
    # German writes numbers as one word ("siebenundneunzig"): characters are its natural tokens
    tokenizers = ["char" if lang == "de" else "word" for lang in (src_lang, tgt_lang)]
    return ParallelData(train=pairs(train), val=pairs(val), test=pairs(test), src_tokenizer=tokenizers[0],
                        tgt_tokenizer=tokenizers[1],
                        name=f"numbers-{src_lang}-{tgt_lang}", info=info)


TASKS = {"copy": copy_task, "reverse": reverse_task, "sort": sort_task, "numbers": number_translation}


def make_task(name: str, **kwargs) -> ParallelData:
    """The task called `name` ("copy", "reverse", "sort", "numbers"), built with `kwargs`."""
    if name not in TASKS:
        raise ValueError(f"task: expected one of {sorted(TASKS)}, got {name!r}")
    return TASKS[name](**kwargs)
