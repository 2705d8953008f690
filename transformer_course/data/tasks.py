"""Tasks that need no network: copy, reverse, sort, and translating numbers written in words.

Every task returns a `ParallelData`: train/val/test lists of (source, target) strings, plus the tokeniser
that suits it. Held-out examples never occur in training: the toy tasks draw distinct strings, and number
translation splits the *numbers* (so "ninety-seven" is either in training or in the test set, never both).
Number translation also keeps the everyday numbers (0-100, the round hundreds and thousands) in training,
holds out numbers of every magnitude, and labels each held-out pair with its magnitude (its stratum).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .vocab import Vocab

__all__ = ["ParallelData", "TASKS", "make_task", "copy_task", "reverse_task", "sort_task",
           "number_translation", "number_to_words", "number_stratum", "NUMBER_LANGUAGES", "EVERYDAY_NUMBERS",
           "SPLIT_VERSIONS", "default_split_sizes"]

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
    strata: dict = field(default_factory=dict)  # split name -> one group label per pair ("3 digits"), if any
    coverage: Pairs = field(default_factory=list)  # pairs that must always be right (all in train), if any
    vocab_size: int | None = None  # "bpe": the tokens to learn; word/char: the most to keep (None: all)

    def build_vocabs(self, min_freq: int = 1, vocab_size: int | None = None) -> tuple[Vocab, Vocab]:
        """Source and target vocabularies built from the *training* split only (`vocab_size`: the data's own
        when not given). With the "bpe" tokeniser on both sides, one BPE of `vocab_size` tokens is learned from
        both sides together (joint BPE, as Sennrich et al. (2016) did for related languages: a name or number is
        split the same way in both), and both vocabularies are that one."""
        vocab_size = self.vocab_size if vocab_size is None else vocab_size
        if self.src_tokenizer == "bpe" or self.tgt_tokenizer == "bpe":
            if self.src_tokenizer != self.tgt_tokenizer:
                raise ValueError(f"tokenizer: BPE is learned for both sides together; got source "
                                 f"{self.src_tokenizer!r} and target {self.tgt_tokenizer!r}")
            joint = Vocab.build([text for pair in self.train for text in pair], "bpe", max_size=vocab_size)
            return joint, joint
        return (Vocab.build((s for s, _ in self.train), self.src_tokenizer, min_freq, vocab_size),
                Vocab.build((t for _, t in self.train), self.tgt_tokenizer, min_freq, vocab_size))

    def split(self, name: str) -> Pairs:
        if name not in ("train", "val", "test"):
            raise ValueError(f"split: expected 'train', 'val' or 'test', got {name!r}")
        return getattr(self, name)

    def split_strata(self, name: str) -> list[str] | None:
        """The group label of every pair of split `name` (None when the task has no strata)."""
        self.split(name)
        return self.strata.get(name)


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


# Numbers whose words occur in no other number ("zéro", "cent", "mille" alone, "quatre-vingts" ...): a model
# can only learn them by seeing them, so they are always trained on, and checked as "coverage".
EVERYDAY_NUMBERS = (*range(101), *range(200, 1000, 100), *range(1000, 10_000, 1000), 1100)
SPLIT_VERSIONS = (1, 2)


def number_stratum(n: int) -> str:
    """The magnitude group of `n`: "1 digit", "2 digits", ... (the strata of the held-out numbers)."""
    digits = len(str(n))
    return f"{digits} digit" + ("s" if digits > 1 else "")


def _allocate(total: int, sizes: list[int], cap: float) -> list[int]:
    """Split `total` held-out items equally over groups of `sizes`, none taking more than `cap` of its group;
    what a small group cannot take goes to the others (water-filling)."""
    limits = [int(cap * n) for n in sizes]
    share = [0] * len(sizes)
    left = min(total, sum(limits))
    open_groups = [i for i, limit in enumerate(limits) if limit > 0]
    while left > 0 and open_groups:
        each = max(1, left // len(open_groups))
        for i in list(open_groups):
            take = min(each, limits[i] - share[i], left)
            share[i] += take
            left -= take
            if share[i] == limits[i]:
                open_groups.remove(i)
            if left == 0:
                break
    return share


def number_translation(src_lang: str = "en", tgt_lang: str = "fr", max_number: int = 9999,
                       min_number: int = 0, n_val: int | None = None, n_test: int | None = None,
                       n_train: int | None = None, seed: int = 0, split: int = 2,
                       min_group_share: float = 0.1) -> ParallelData:
    """Numbers in words, translated: ("ninety-seven" -> "quatre-vingt-dix-sept"), split by number.

    `max_number` is the size knob: 999 is a quick task, 9999 a real one (French "quatre-vingts" vs
    "quatre-vingt-un", "deux cents" vs "deux cent un", German unit-before-ten). Words are the tokens, except
    for German, which writes a number as one word and is tokenised by character.

    Split version 2 (the default):
    * the everyday numbers in range (`EVERYDAY_NUMBERS`: 0-100, the hundreds 200-900, the thousands
      1,000-9,000 and 1,100) are always in training, and returned as `coverage`: their words occur in no
      other number, so a model cannot produce them unless it saw them;
    * held-out numbers (`n_test`, then `n_val`; by default as many as 10% and 5% of the other numbers allow,
      at most 1000 and 500) are drawn from every magnitude (3-, 4-, 5-digit numbers: every 1- and 2-digit
      number is an everyday one) in equal shares, none taking more than 10% (test) or 5% (val) of its
      magnitude, so short numbers are measured as well as long ones; `strata` labels each held-out pair with
      its magnitude;
    * the training list repeats the pairs of small groups (the everyday set, each magnitude) until each
      group is at least `min_group_share` of it (a random split of 0..9999 is 90% four-digit numbers), then
      is shuffled; `n_train` caps the number of distinct training numbers (everyday ones included).
    Split version 1: one shuffle of the range, test and validation first. Chapter 9 trains on it to show what
    version 2 fixes; a checkpoint records its split version, and one that records none was made with version 1.
    """
    for name, lang in (("src_lang", src_lang), ("tgt_lang", tgt_lang)):
        if lang not in NUMBER_LANGUAGES:
            raise ValueError(f"{name}: expected one of {NUMBER_LANGUAGES}, got {lang!r}")
    if src_lang == tgt_lang:
        raise ValueError(f"src_lang/tgt_lang: expected two different languages, got {src_lang!r} twice")
    if split not in SPLIT_VERSIONS:
        raise ValueError(f"split: expected a split version in {SPLIT_VERSIONS}, got {split!r}")
    _check_sizes(min_number=min_number, max_number=max_number)
    if not 0.0 <= min_group_share < 0.5:
        raise ValueError(f"min_group_share: expected a value in [0, 0.5), got {min_group_share!r}")
    rng = np.random.default_rng(seed)
    if split == 1:
        test, val, train, everyday = _split_v1(min_number, max_number, n_val, n_test, n_train, rng)
    else:
        test, val, train, everyday = _split_v2(min_number, max_number, n_val, n_test, n_train, rng)

    words: dict[int, tuple[str, str]] = {}               # num2words is slow: each number once

    def pairs(ns) -> Pairs:
        out = []
        for n in ns:
            if n not in words:
                words[n] = (number_to_words(int(n), src_lang), number_to_words(int(n), tgt_lang))
            out.append(words[n])
        return out

    if split == 2:
        train = _balance(train, everyday, min_group_share, rng)
    info = dict(src_lang=src_lang, tgt_lang=tgt_lang, max_number=max_number, min_number=min_number,
                n_val=len(val), n_test=len(test), n_train=n_train, seed=seed, split=split,
                min_group_share=min_group_share)
    # German writes numbers as one word ("siebenundneunzig"): characters are its natural tokens
    tokenizers = ["char" if lang == "de" else "word" for lang in (src_lang, tgt_lang)]
    strata = {name: [number_stratum(int(n)) for n in ns] for name, ns in (("val", val), ("test", test))}
    return ParallelData(train=pairs(train), val=pairs(val), test=pairs(test), src_tokenizer=tokenizers[0],
                        tgt_tokenizer=tokenizers[1], name=f"numbers-{src_lang}-{tgt_lang}", info=info,
                        strata=strata if split == 2 else {}, coverage=pairs(everyday))


def _split_v1(min_number, max_number, n_val, n_test, n_train, rng):
    total = max_number - min_number + 1
    default_val, default_test = default_split_sizes(total)
    n_val = default_val if n_val is None else n_val
    n_test = default_test if n_test is None else n_test
    _check_sizes(n_val=n_val, n_test=n_test)
    if total < 1 or n_val + n_test >= total:
        raise ValueError(f"max_number: the range {min_number}..{max_number} holds {max(total, 0)} numbers, "
                         f"not enough for n_val={n_val} + n_test={n_test} + a training set")
    numbers = rng.permutation(np.arange(min_number, max_number + 1))
    test, val, train = numbers[:n_test], numbers[n_test:n_test + n_val], numbers[n_test + n_val:]
    if n_train is not None:
        _check_sizes(n_train=n_train)
        if n_train > len(train):
            raise ValueError(f"n_train: expected at most {len(train)} (the numbers left after val/test), got {n_train}")
        train = train[:n_train]
    return list(test), list(val), list(train), []


def _split_v2(min_number, max_number, n_val, n_test, n_train, rng):
    everyday = [n for n in EVERYDAY_NUMBERS if min_number <= n <= max_number]
    fixed = set(everyday)
    groups: dict[str, list[int]] = {}
    for n in range(min_number, max_number + 1):
        if n not in fixed:
            groups.setdefault(number_stratum(n), []).append(n)
    eligible = sum(len(g) for g in groups.values())
    if eligible < 2:
        raise ValueError(f"max_number: {min_number}..{max_number} holds {eligible} number(s) besides the everyday "
                         "ones (always trained on): too few to hold any out; use max_number >= 199")
    names = sorted(groups, key=lambda g: int(g.split()[0]))
    sizes = [len(groups[g]) for g in names]
    most_test = sum(_allocate(eligible, sizes, 0.10))          # 10% of each magnitude
    n_test = min(1000, most_test) if n_test is None else n_test
    _check_sizes(n_test=n_test)
    if not 1 <= n_test <= most_test:
        raise ValueError(f"n_test: the range {min_number}..{max_number} can hold out between 1 and {most_test} "
                         f"test numbers (10% of each magnitude), got {n_test}")
    test_share = _allocate(n_test, sizes, 0.10)
    left = [n - t for n, t in zip(sizes, test_share)]
    most_val = sum(_allocate(eligible, left, 0.05))            # 5% of what each magnitude has left
    n_val = min(500, most_val) if n_val is None else n_val
    _check_sizes(n_val=n_val)
    if not 1 <= n_val <= most_val:
        raise ValueError(f"n_val: the range {min_number}..{max_number} can hold out between 1 and {most_val} "
                         f"validation numbers (5% of each magnitude), got {n_val}")
    val_share = _allocate(n_val, left, 0.05)
    test, val, rest = [], [], []
    for name, t, v in zip(names, test_share, val_share):
        shuffled = [int(n) for n in rng.permutation(groups[name])]
        test += shuffled[:t]
        val += shuffled[t:t + v]
        rest += shuffled[t + v:]
    rest = [int(n) for n in rng.permutation(rest)]
    if n_train is not None:
        _check_sizes(n_train=n_train)
        if not len(everyday) <= n_train <= len(everyday) + len(rest):
            raise ValueError(f"n_train: expected between {len(everyday)} (the everyday numbers) and "
                             f"{len(everyday) + len(rest)} (every number not held out), got {n_train}")
        rest = rest[: n_train - len(everyday)]
    return test, val, everyday + rest, everyday


def _balance(train: list[int], everyday: list[int], min_share: float, rng) -> list[int]:
    """Repeat the numbers of small groups (the everyday set, each magnitude of the others) until each group
    is at least `min_share` of the list, then shuffle: short numbers are a sliver of a random range."""
    fixed = set(everyday)
    groups: dict[str, list[int]] = {"everyday": list(everyday)}
    for n in train:
        if n not in fixed:
            groups.setdefault(number_stratum(n), []).append(n)
    total = len(train)
    out: list[int] = []
    for members in groups.values():
        if members:
            repeats = max(1, math.ceil(min_share * total / len(members)))
            out += members * repeats
    return [int(n) for n in rng.permutation(out)]


TASKS = {"copy": copy_task, "reverse": reverse_task, "sort": sort_task, "numbers": number_translation}


def make_task(name: str, **kwargs) -> ParallelData:
    """The task called `name` ("copy", "reverse", "sort", "numbers"), built with `kwargs`."""
    if name not in TASKS:
        raise ValueError(f"task: expected one of {sorted(TASKS)}, got {name!r}")
    return TASKS[name](**kwargs)
